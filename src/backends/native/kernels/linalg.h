/* The linear-algebra family: MatMul, Gemm (over gemm_f32), Einsum, Conv. */
#ifndef OG_NATIVE_KERNELS_LINALG_H
#define OG_NATIVE_KERNELS_LINALG_H

#include "backends/native/kernels/kernel.h"

/* numpy matmul: 1-D operands promoted and squeezed, batch dimensions broadcast. */
og_status *cpu_matmul(kernel_ctx *ctx);
/* Y = alpha * op(A) op(B) + beta * C, C broadcast to [M, N] (opset 7 and later). */
og_status *cpu_gemm(kernel_ctx *ctx);
og_status *cpu_einsum(kernel_ctx *ctx);
og_status *cpu_conv(kernel_ctx *ctx);

#endif
