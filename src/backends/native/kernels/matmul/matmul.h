/* The matmul family: MatMul and Gemm (over gemm_f32.h), com.microsoft MatMulNBits (over
 * matmul_nbits.h and its prepacked int8 panels, matmul_nbits_pack.h), Einsum (products
 * over gemm_f32), and Det, the family's one other matrix op. */
#ifndef OG_NATIVE_KERNELS_MATMUL_H
#define OG_NATIVE_KERNELS_MATMUL_H

#include "backends/native/kernels/kernel.h"

/* numpy matmul: 1-D operands promoted and squeezed, batch dimensions broadcast. */
og_status *cpu_matmul(kernel_ctx *ctx);
/* A constant float32 B of MatMul or Gemm is packed once for the sgemm (gemm_f32_pack_b). */
og_status *cpu_matmul_prepare(kernel_prep *prep);
og_status *cpu_gemm_prepare(kernel_prep *prep);
void cpu_gemm_release(void *state);

/* One MatMul after numpy's 1-D promotion: `batch` products of [M,K] x [K,N], with the
 * batch dimensions broadcast. a_str / b_str count whole matrices. */
typedef struct cpu_mm_shape {
    int64_t M, N, K;
    int brank;
    int64_t bdims[OG_MAX_RANK];
    int64_t a_str[OG_MAX_RANK], b_str[OG_MAX_RANK];
    int64_t batch;
    int out_rank;
    int64_t out_dims[OG_MAX_RANK];
} cpu_mm_shape;
/* Plans a (numpy) MatMul of a and b; errors name both shapes. Shared with the integer
 * matmuls (MatMulInteger, QLinearMatMul). */
og_status *cpu_matmul_plan(const kernel_ctx *ctx, const tensor *a, const tensor *b,
                           cpu_mm_shape *s);
/* Element offsets of batch `t`'s A and B matrices. */
void cpu_matmul_offsets(const cpu_mm_shape *s, int64_t t, int64_t *ao, int64_t *bo);
/* Y = alpha * op(A) op(B) + beta * C, C broadcast to [M, N] (opset 7 and later). */
og_status *cpu_gemm(kernel_ctx *ctx);
og_status *cpu_einsum(kernel_ctx *ctx);
/* 4-bit (and 2/8-bit) weights in blocks with scales and optional zero points; the
 * weights are prepacked when constant (matmul_nbits.c). */
og_status *cpu_matmul_nbits(kernel_ctx *ctx);
og_status *cpu_matmul_nbits_prepare(kernel_prep *prep);
void cpu_matmul_nbits_release(void *state);
/* The determinant of each matrix of a [*, M, M] input. */
og_status *cpu_det(kernel_ctx *ctx);

#endif
