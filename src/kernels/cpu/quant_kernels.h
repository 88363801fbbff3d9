/* com.microsoft quantized-weight kernels: MatMulNBits and GatherBlockQuantized. */
#ifndef OG_KERNELS_CPU_QUANT_KERNELS_H
#define OG_KERNELS_CPU_QUANT_KERNELS_H

#include "kernels/kernel.h"

og_status *cpu_matmul_nbits(kernel_ctx *ctx);
og_status *cpu_gather_block_quantized(kernel_ctx *ctx);

#endif
