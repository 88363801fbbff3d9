/* The quantization family: QuantizeLinear, DequantizeLinear, com.microsoft
 * GatherBlockQuantized, and the integer products MatMulInteger, ConvInteger,
 * QLinearMatMul, QLinearConv. MatMulNBits is the matmul family's. */
#ifndef OG_NATIVE_KERNELS_QUANT_H
#define OG_NATIVE_KERNELS_QUANT_H

#include "backends/native/kernels/kernel.h"

/* The family's kernels, each og_status *cpu_<name>(kernel_ctx *ctx) (KERNEL_DECLARE). */
#define QUANT_KERNELS(X)                                                                    \
    X(quantize_linear) X(dequantize_linear) X(gather_block_quantized)                       \
    /* Integer products of 8-bit tensors (quant_integer.c). */ X(matmul_integer)            \
    X(conv_integer) X(qlinear_matmul) X(qlinear_conv)
QUANT_KERNELS(KERNEL_DECLARE)

#endif
