/* MatMul and Gemm kernels (registered in table_compute.c). */
#ifndef OG_KERNELS_CPU_MATMUL_H
#define OG_KERNELS_CPU_MATMUL_H

#include "kernels/kernel.h"

/* numpy matmul: 1-D operands promoted and squeezed, batch dimensions broadcast. */
og_status *cpu_matmul(kernel_ctx *ctx);
/* Y = alpha * op(A) op(B) + beta * C, C broadcast to [M, N] (opset 7 and later). */
og_status *cpu_gemm(kernel_ctx *ctx);

#endif
