/* Blocked sgemm (see gemm_f32.h): the reference, and the entry points that pick the
 * kernels of one instruction set at run time (gemm_f32_impl.h, compiled once per set). */
#include "backends/native/kernels/matmul/gemm_f32.h"

#include "base/bigalloc.h"

#include <stdlib.h>
#include <string.h>

typedef struct variant {
    const char *name;
    isa_level isa;
    int (*nr)(void);
    size_t (*work_floats)(const gemm_f32_args *g, const gemm_f32_bsrc *src);
    void (*run)(threadpool *pool, const gemm_f32_args *g, const gemm_f32_bsrc *src, float *work);
    void (*pack_all)(const gemm_f32_args *g, float *dst);
} variant;

#define VARIANT(n, isa)                                                                  \
    {#n, isa, gemm_f32_##n##_nr, gemm_f32_##n##_work_floats, gemm_f32_##n##_run,          \
     gemm_f32_##n##_pack_all}

static variant active(void) {
#if defined(__x86_64__)
    isa_level isa = isa_active();
    if (isa >= ISA_AVX512) return (variant)VARIANT(avx512, ISA_AVX512);
    if (isa >= ISA_AVX2) return (variant)VARIANT(avx2, ISA_AVX2);
#endif
    return (variant){"scalar", ISA_GENERIC, gemm_f32_generic_nr, gemm_f32_generic_work_floats,
                     gemm_f32_generic_run, gemm_f32_generic_pack_all};
}

const char *gemm_f32_isa(void) { return active().name; }

static inline int64_t round_up(int64_t a, int64_t b) { return (a + b - 1) / b * b; }

/* ---- reference --------------------------------------------------------------------- */

void gemm_f32_ref(const gemm_f32_args *g) {
    for (int64_t i = 0; i < g->M; i++)
        for (int64_t j = 0; j < g->N; j++) {
            double acc = 0;
            for (int64_t k = 0; k < g->K; k++) {
                float a = g->trans_a ? g->A[k * g->lda + i] : g->A[i * g->lda + k];
                float b = g->trans_b ? g->B[j * g->ldb + k] : g->B[k * g->ldb + j];
                acc += (double)a * (double)b;
            }
            float *c = &g->C[i * g->ldc + j];
            double v = (double)g->alpha * acc;
            if (g->beta != 0) v += (double)g->beta * (double)*c;
            *c = (float)v;
        }
}

/* ---- entries ----------------------------------------------------------------------- */

static og_status *check_sizes(const gemm_f32_args *g) {
    if (g->M < 0 || g->N < 0 || g->K < 0)
        return og_errorf(OG_ERR_INVALID_ARGUMENT, "gemm_f32: negative size M=%lld N=%lld K=%lld",
                         (long long)g->M, (long long)g->N, (long long)g->K);
    return NULL;
}

/* C = beta * C when K is 0 (the product is empty). */
static void scale_only(const gemm_f32_args *g) {
    for (int64_t i = 0; i < g->M; i++)
        for (int64_t j = 0; j < g->N; j++) {
            float *p = &g->C[i * g->ldc + j];
            *p = g->beta == 0 ? 0.0f : g->beta * *p;
        }
}

static size_t work_bytes(const gemm_f32_args *g, const gemm_f32_bsrc *src) {
    if (g->M <= 0 || g->N <= 0 || g->K <= 0) return 0;
    return active().work_floats(g, src) * sizeof(float) + 64;
}

static og_status *run(threadpool *pool, const gemm_f32_args *g, const gemm_f32_bsrc *src,
                      void *work) {
    OG_TRY(check_sizes(g));
    if (g->M == 0 || g->N == 0) return NULL;
    if (g->K == 0) {
        scale_only(g);
        return NULL;
    }
    variant v = active();
    size_t need = v.work_floats(g, src) * sizeof(float) + 64;
    void *owned = NULL;
    if (!work) {
        owned = aligned_alloc(64, (size_t)round_up((int64_t)need, 64));
        if (!owned) return og_oom();
        work = owned;
    }
    v.run(pool, g, src, work);
    free(owned);
    return NULL;
}

size_t gemm_f32_work_size(const gemm_f32_args *g) { return work_bytes(g, NULL); }

og_status *gemm_f32(threadpool *pool, const gemm_f32_args *g, void *work) {
    return run(pool, g, NULL, work);
}

size_t gemm_f32_panels_work_size(const gemm_f32_args *g) {
    gemm_f32_bsrc src = {.panel = NULL}; /* a source other than g's B: the blocked path */
    return work_bytes(g, &src);
}

og_status *gemm_f32_panels_run(threadpool *pool, const gemm_f32_args *g, gemm_f32_panel_fn fn,
                               void *arg, void *work) {
    gemm_f32_bsrc src = {.panel = fn, .arg = arg};
    return run(pool, g, &src, work);
}

/* ---- a constant B, packed once ------------------------------------------------------ */

og_status *gemm_f32_pack_b(const float *B, int64_t ldb, bool trans_b, int64_t K, int64_t N,
                           gemm_f32_packed **out) {
    *out = NULL;
    variant v = active();
    gemm_f32_packed *pb = calloc(1, sizeof *pb);
    if (!pb) return og_oom();
    pb->K = K;
    pb->N = N;
    pb->nr = v.nr();
    pb->isa = v.isa;
    pb->bytes = (size_t)((N + pb->nr - 1) / pb->nr * pb->nr * K) * sizeof(float);
    pb->panels = big_alloc(pb->bytes);
    if (!pb->panels) {
        size_t bytes = pb->bytes;
        free(pb);
        return og_oom_for(bytes, "a prepacked float32 weight");
    }
    gemm_f32_args g = {.trans_b = trans_b, .N = N, .K = K, .B = B, .ldb = ldb};
    v.pack_all(&g, pb->panels);
    *out = pb;
    return NULL;
}

void gemm_f32_packed_free(gemm_f32_packed *pb) {
    if (!pb) return;
    big_free(pb->panels, pb->bytes);
    free(pb);
}

bool gemm_f32_packed_usable(const gemm_f32_packed *pb) { return pb && pb->isa == active().isa; }

size_t gemm_f32_packed_work_size(const gemm_f32_args *g) {
    gemm_f32_bsrc src = {.packed = (const float *)1}; /* only whether it is set matters */
    return work_bytes(g, &src);
}

og_status *gemm_f32_packed_run(threadpool *pool, const gemm_f32_args *g,
                               const gemm_f32_packed *pb, void *work) {
    if (!gemm_f32_packed_usable(pb) || pb->K != g->K || pb->N != g->N)
        return og_errorf(OG_ERR_RUNTIME, "gemm_f32: a packed B of %lld x %lld for %s kernels "
                         "given to a %lld x %lld product on %s", (long long)pb->K,
                         (long long)pb->N, isa_name(pb->isa), (long long)g->K,
                         (long long)g->N, gemm_f32_isa());
    gemm_f32_bsrc src = {.packed = pb->panels};
    return run(pool, g, &src, work);
}
