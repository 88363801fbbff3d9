/* The quantization table (see registry.h); the com.microsoft domain is at version 1. */
#include "backends/native/kernels/quant/quant.h"
#include "backends/native/kernels/registry.h"

const kernel_def cpu_quant_kernels[] = {
    {"", "QuantizeLinear", 10, 28, cpu_quantize_linear},
    {"", "DequantizeLinear", 10, 28, cpu_dequantize_linear},
    {"", "MatMulInteger", 10, 28, cpu_matmul_integer},
    {"", "ConvInteger", 10, 28, cpu_conv_integer},
    /* QLinearMatMul 21 and QLinearConv keep 10's semantics (21 adds float8 and float16
     * scales, which the float-scale path reads). */
    {"", "QLinearMatMul", 10, 28, cpu_qlinear_matmul},
    {"", "QLinearConv", 10, 28, cpu_qlinear_conv},
    {"com.microsoft", "GatherBlockQuantized", 1, 1, cpu_gather_block_quantized},
    {0},
};
