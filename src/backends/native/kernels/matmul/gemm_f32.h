/* Single-precision matrix multiply: C[M,N] = alpha * op(A)[M,K] * op(B)[K,N] + beta * C.
 *
 * op(X) is X or its transpose; matrices are row-major with leading dimensions (element
 * strides between rows) lda, ldb, ldc. beta == 0 means C is only written, never read, so
 * an uninitialized output (NaN garbage) is fine. The fast path packs panels and runs a
 * register-blocked micro-kernel chosen at run time (AVX-512, AVX2+FMA or portable C; see
 * base/isa.h, OG_ISA); a few rows against an untransposed B, or N == 1, take a
 * matrix-vector path that streams the matrix once. B may also be prepacked once (a
 * constant weight) or produced panel by panel by a callback (weights dequantized on the
 * fly).
 *
 * Batch invariance: with one B (as given, prepacked or from panels) an element of C
 * depends only on its row of op(A), op(B), K and the scalars, never on M, on which path
 * ran or on the thread count (every path sums it in the blocked path's order), so a
 * token's row of a batch has the bits it has alone (tests/unit/test_batch_invariance.c). */
#ifndef OG_NATIVE_KERNELS_GEMM_F32_H
#define OG_NATIVE_KERNELS_GEMM_F32_H

#include "base/isa.h"
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

/* Name of the micro-kernel in use ("avx512", "avx2", "scalar"). */
const char *gemm_f32_isa(void);

/* ---- a constant B, packed once ---------------------------------------------------- */

typedef struct gemm_f32_packed {
    int64_t K, N;
    int nr;         /* panel width of the kernels it was packed for */
    isa_level isa;    /* ... and their instruction set */
    float *panels;  /* [ceil(N / nr)][K][nr], columns past N zero */
    size_t bytes;
} gemm_f32_packed;

/* Packs op(B) (K x N; B[k * ldb + n], or B[n * ldb + k] when trans_b) for the kernels
 * of the active instruction set. */
og_status *gemm_f32_pack_b(const float *B, int64_t ldb, bool trans_b, int64_t K, int64_t N,
                           gemm_f32_packed **out);
void gemm_f32_packed_free(gemm_f32_packed *pb);
/* Whether pb suits the kernels in use now (OG_ISA or a test may have changed them). */
bool gemm_f32_packed_usable(const gemm_f32_packed *pb);
/* gemm_f32 with op(B) = pb (g->B, ldb and trans_b are not read; g->K, g->N must be pb's).
 * pb must be usable. `work`: gemm_f32_packed_work_size() bytes, or NULL (allocated). */
size_t gemm_f32_packed_work_size(const gemm_f32_args *g);
og_status *gemm_f32_packed_run(threadpool *pool, const gemm_f32_args *g,
                               const gemm_f32_packed *pb, void *work);

/* ---- B panel by panel ----------------------------------------------------------------
 * fn writes dst[k * nr + j] = op(B)[p0 + k, j0 + j] for k < kc and j < n (n <= nr
 * columns exist; the rest of each row must be zero). Called from the pool's threads. */
typedef void (*gemm_f32_panel_fn)(void *arg, int64_t j0, int64_t n, int64_t p0, int64_t kc,
                                  int nr, float *dst);
size_t gemm_f32_panels_work_size(const gemm_f32_args *g);
og_status *gemm_f32_panels_run(threadpool *pool, const gemm_f32_args *g, gemm_f32_panel_fn fn,
                               void *arg, void *work);

/* ---- between gemm_f32.c and the per-ISA files (gemm_f32_impl.h) --------------------- */
typedef struct gemm_f32_bsrc {
    gemm_f32_panel_fn panel; /* B from a callback, or */
    void *arg;
    const float *packed;     /* B prepacked whole */
} gemm_f32_bsrc;
#define GEMM_F32_VARIANT(n)                                                              \
    int gemm_f32_##n##_nr(void);                                                         \
    size_t gemm_f32_##n##_work_floats(const gemm_f32_args *g, const gemm_f32_bsrc *src);  \
    void gemm_f32_##n##_run(threadpool *pool, const gemm_f32_args *g,                    \
                            const gemm_f32_bsrc *src, float *work);                      \
    void gemm_f32_##n##_pack_all(const gemm_f32_args *g, float *dst);
GEMM_F32_VARIANT(avx512)
GEMM_F32_VARIANT(avx2)
GEMM_F32_VARIANT(generic)

#endif
