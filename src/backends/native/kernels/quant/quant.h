/* The quantization family: QuantizeLinear, DequantizeLinear, com.microsoft
 * GatherBlockQuantized, and the integer products MatMulInteger, ConvInteger,
 * QLinearMatMul, QLinearConv. MatMulNBits is the matmul family's. */
#ifndef OG_NATIVE_KERNELS_QUANT_H
#define OG_NATIVE_KERNELS_QUANT_H

#include "backends/native/kernels/kernel.h"

og_status *cpu_quantize_linear(kernel_ctx *ctx);
og_status *cpu_dequantize_linear(kernel_ctx *ctx);
og_status *cpu_gather_block_quantized(kernel_ctx *ctx);
/* Integer products of 8-bit tensors (quant_integer.c). */
og_status *cpu_matmul_integer(kernel_ctx *ctx);
og_status *cpu_conv_integer(kernel_ctx *ctx);
og_status *cpu_qlinear_matmul(kernel_ctx *ctx);
og_status *cpu_qlinear_conv(kernel_ctx *ctx);

#endif
