/* The quantization family: QuantizeLinear, DequantizeLinear and the com.microsoft
 * quantized-weight kernels MatMulNBits and GatherBlockQuantized. */
#ifndef OG_NATIVE_KERNELS_QUANT_H
#define OG_NATIVE_KERNELS_QUANT_H

#include "backends/native/kernels/kernel.h"

og_status *cpu_quantize_linear(kernel_ctx *ctx);
og_status *cpu_dequantize_linear(kernel_ctx *ctx);
og_status *cpu_matmul_nbits(kernel_ctx *ctx);
og_status *cpu_gather_block_quantized(kernel_ctx *ctx);

#endif
