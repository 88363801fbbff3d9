/* Single-precision matrix multiply: C[M,N] = alpha * op(A)[M,K] * op(B)[K,N] + beta * C.
 *
 * op(X) is X or its transpose; matrices are row-major with leading dimensions (element
 * strides between rows) lda, ldb, ldc. beta == 0 means C is only written, never read, so
 * an uninitialized output (NaN garbage) is fine. The fast path packs panels and runs a
 * register-blocked micro-kernel chosen at compile time (AVX-512, AVX2+FMA or portable C);
 * M == 1 or N == 1 take a matrix-vector path that streams the matrix once. */
#ifndef OG_NATIVE_KERNELS_GEMM_F32_H
#define OG_NATIVE_KERNELS_GEMM_F32_H

#include "base/status.h"
#include "base/threadpool.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct gemm_f32_args {
    bool trans_a, trans_b;
    int64_t M, N, K;
    float alpha, beta;
    const float *A;
    int64_t lda;
    const float *B;
    int64_t ldb;
    float *C;
    int64_t ldc;
} gemm_f32_args;

/* Bytes of working memory gemm_f32 needs for this shape (64-byte aligned by the caller). */
size_t gemm_f32_work_size(const gemm_f32_args *g);

/* Runs the multiply over `pool` (NULL: on the caller). `work` may be NULL, in which case
 * the memory is allocated here; otherwise it must hold gemm_f32_work_size() bytes and be
 * 64-byte aligned. Errors only on out-of-memory or bad dimensions. */
og_status *gemm_f32(threadpool *pool, const gemm_f32_args *g, void *work);

/* The plain triple loop (double accumulation) that the fast path is tested against. */
void gemm_f32_ref(const gemm_f32_args *g);

/* Name of the micro-kernel compiled in ("avx512", "avx2", "scalar"). */
const char *gemm_f32_isa(void);

#endif
