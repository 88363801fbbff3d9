/* The quantization table (see tables.h); the com.microsoft domain is at version 1. */
#include "backends/native/kernels/quant.h"
#include "backends/native/kernels/tables.h"

const kernel_def cpu_quant_kernels[] = {
    {"", "QuantizeLinear", 10, 28, cpu_quantize_linear},
    {"", "DequantizeLinear", 10, 28, cpu_dequantize_linear},
    {"com.microsoft", "MatMulNBits", 1, 1, cpu_matmul_nbits},
    {"com.microsoft", "GatherBlockQuantized", 1, 1, cpu_gather_block_quantized},
    {0},
};
