/* The sgemm of gemm_f32.h for one instruction set: included by gemm_f32_avx512.c,
 * gemm_f32_avx2.c and gemm_f32_generic.c, each compiled with its own flags, with
 * GEMM_VARIANT set (2, 1, 0) and GEMM_NAME(x) naming its exported functions.
 *
 * Layout of the blocked path: K is cut into blocks of about KC, N into blocks of at most
 * NC columns and M into blocks of at most MB rows. For each block, op(B) is packed into
 * NR-wide column panels and op(A) into MR-tall row panels (zero padded at the edges), so
 * the micro-kernel reads both with unit stride whatever the transposes were. The packed
 * block is then cut into tiles of C that threads take independently; inside a tile a B
 * panel (KC x NR, ~32 KB) stays in L1 while A panels stream from L2. B may instead come
 * from a callback, panel by panel (MatMulNBits dequantizing its weights straight into
 * them), or be prepacked whole (a constant B, packed once when the session opens).
 *
 * AVX-512 gives a 12 x 32 register tile, AVX2+FMA 6 x 16, the portable C a 4 x 4 one. */
#include "backends/native/kernels/matmul/gemm_f32.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define UNROLL _Pragma("GCC unroll 16")

#if GEMM_VARIANT == 2
#include <immintrin.h>
#define VL 16
#define NV 2
#define MR 12
typedef __m512 vf;
static inline vf v_load(const float *p) { return _mm512_loadu_ps(p); }
static inline void v_store(float *p, vf v) { _mm512_storeu_ps(p, v); }
static inline vf v_fma(vf a, vf b, vf c) { return _mm512_fmadd_ps(a, b, c); }
static inline vf v_mul(vf a, vf b) { return _mm512_mul_ps(a, b); }
static inline vf v_set1(float x) { return _mm512_set1_ps(x); }
static inline vf v_zero(void) { return _mm512_setzero_ps(); }
static inline float v_sum(vf v) { return _mm512_reduce_add_ps(v); }
#elif GEMM_VARIANT == 1
#include <immintrin.h>
#define VL 8
#define NV 2
#define MR 6
typedef __m256 vf;
static inline vf v_load(const float *p) { return _mm256_loadu_ps(p); }
static inline void v_store(float *p, vf v) { _mm256_storeu_ps(p, v); }
static inline vf v_fma(vf a, vf b, vf c) { return _mm256_fmadd_ps(a, b, c); }
static inline vf v_mul(vf a, vf b) { return _mm256_mul_ps(a, b); }
static inline vf v_set1(float x) { return _mm256_set1_ps(x); }
static inline vf v_zero(void) { return _mm256_setzero_ps(); }
static inline float v_sum(vf v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}
#else
#define VL 1
#define NV 4
#define MR 4
typedef float vf;
static inline vf v_load(const float *p) { return *p; }
static inline void v_store(float *p, vf v) { *p = v; }
static inline vf v_fma(vf a, vf b, vf c) { return a * b + c; }
static inline vf v_mul(vf a, vf b) { return a * b; }
static inline vf v_set1(float x) { return x; }
static inline vf v_zero(void) { return 0.0f; }
static inline float v_sum(vf v) { return v; }
#endif

#define NR (VL * NV)

enum {
    KC = 256,       /* depth of a packed block */
    MC_PANELS = 8,  /* MR panels per compute tile */
    NC = 4096,      /* columns of a packed B block */
    MB = 1536,      /* rows of a packed A block */
    GEMV_CB = 2048, /* columns a matrix-vector pass accumulates in L1 */
};

static inline int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }
static inline int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }
static inline int64_t round_up(int64_t a, int64_t b) { return ceil_div(a, b) * b; }

/* ---- micro-kernel ------------------------------------------------------------------ */

/* c[MR x NR] = alpha * (a-panel . b-panel) + beta * c; beta == 0 does not read c.
 * a advances MR floats per k; b advances bs floats per k. */
static inline void ukernel(int64_t kc, const float *restrict a, const float *restrict b,
                           int64_t bs, float *restrict c, int64_t ldc, float alpha,
                           float beta) {
    vf acc[MR][NV];
    UNROLL for (int i = 0; i < MR; i++) UNROLL for (int j = 0; j < NV; j++) acc[i][j] =
        v_zero();
    for (int64_t k = 0; k < kc; k++) {
        vf bv[NV];
        UNROLL for (int j = 0; j < NV; j++) bv[j] = v_load(b + j * VL);
        UNROLL for (int i = 0; i < MR; i++) {
            vf av = v_set1(a[i]);
            UNROLL for (int j = 0; j < NV; j++) acc[i][j] = v_fma(av, bv[j], acc[i][j]);
        }
        a += MR;
        b += bs;
    }
    vf va = v_set1(alpha);
    if (beta == 0) {
        UNROLL for (int i = 0; i < MR; i++) UNROLL for (int j = 0; j < NV; j++)
            v_store(c + i * ldc + j * VL, v_mul(acc[i][j], va));
    } else if (beta == 1) {
        UNROLL for (int i = 0; i < MR; i++) UNROLL for (int j = 0; j < NV; j++) {
            float *p = c + i * ldc + j * VL;
            v_store(p, v_fma(acc[i][j], va, v_load(p)));
        }
    } else {
        vf vb = v_set1(beta);
        UNROLL for (int i = 0; i < MR; i++) UNROLL for (int j = 0; j < NV; j++) {
            float *p = c + i * ldc + j * VL;
            v_store(p, v_fma(acc[i][j], va, v_mul(vb, v_load(p))));
        }
    }
}

/* One element of C from its raw sum over a K block, exactly as the vector micro-kernel
 * stores it (fused multiply-adds where it uses them), so that an edge tile, a full tile
 * and the matrix-vector paths give the same bits (batch invariance, gemm_f32.h). */
static inline float s_fma(float a, float b, float c) {
#if VL > 1
    return fmaf(a, b, c);
#else
    return v_fma(a, b, c);
#endif
}

static inline float merge_c(float acc, float alpha, float beta, float c) {
    if (beta == 0) return acc * alpha;
    return s_fma(acc, alpha, beta == 1 ? c : beta * c);
}

/* A partial tile: compute the raw sums of the full padded tile aside, then merge the
 * valid corner. */
static void ukernel_edge(int64_t kc, const float *a, const float *b, float *c, int64_t ldc,
                         int64_t mr, int64_t nr, float alpha, float beta) {
    float tmp[MR * NR];
    ukernel(kc, a, b, NR, tmp, NR, 1.0f, 0.0f);
    for (int64_t i = 0; i < mr; i++)
        for (int64_t j = 0; j < nr; j++) {
            float *p = &c[i * ldc + j];
            *p = merge_c(tmp[i * NR + j], alpha, beta, beta == 0 ? 0.0f : *p);
        }
}

/* ---- packing ----------------------------------------------------------------------- */

/* dst[k * MR + i] = op(A)[i0 + i, p0 + k], rows past mr zero. */
static void pack_a(const gemm_f32_args *g, int64_t i0, int64_t mr, int64_t p0, int64_t kc,
                   float *restrict dst) {
    if (!g->trans_a) {
        for (int64_t i = 0; i < mr; i++) {
            const float *src = g->A + (i0 + i) * g->lda + p0;
            for (int64_t k = 0; k < kc; k++) dst[k * MR + i] = src[k];
        }
    } else {
        for (int64_t k = 0; k < kc; k++) {
            const float *src = g->A + (p0 + k) * g->lda + i0;
            for (int64_t i = 0; i < mr; i++) dst[k * MR + i] = src[i];
        }
    }
    if (mr < MR)
        for (int64_t k = 0; k < kc; k++)
            for (int64_t i = mr; i < MR; i++) dst[k * MR + i] = 0.0f;
}

/* dst[k * NR + j] = op(B)[p0 + k, j0 + j], columns past nr zero. */
static void pack_b(const gemm_f32_args *g, int64_t j0, int64_t nr, int64_t p0, int64_t kc,
                   float *restrict dst) {
    if (!g->trans_b) {
        for (int64_t k = 0; k < kc; k++) {
            const float *src = g->B + (p0 + k) * g->ldb + j0;
            if (nr == NR) {
                UNROLL for (int j = 0; j < NV; j++) v_store(dst + k * NR + j * VL,
                                                           v_load(src + j * VL));
            } else {
                for (int64_t j = 0; j < nr; j++) dst[k * NR + j] = src[j];
                for (int64_t j = nr; j < NR; j++) dst[k * NR + j] = 0.0f;
            }
        }
    } else {
        for (int64_t j = 0; j < nr; j++) {
            const float *src = g->B + (j0 + j) * g->ldb + p0;
            for (int64_t k = 0; k < kc; k++) dst[k * NR + j] = src[k];
        }
        if (nr < NR)
            for (int64_t k = 0; k < kc; k++)
                for (int64_t j = nr; j < NR; j++) dst[k * NR + j] = 0.0f;
    }
}

/* ---- blocked driver ---------------------------------------------------------------- */

typedef struct block_job {
    const gemm_f32_args *g;
    const gemm_f32_bsrc *src;  /* NULL: B from g */
    float *ap, *bp;
    int64_t i0, mb, j0, nc, p0, kc;
    int64_t nap, nbp;       /* packed panels of A and B in this block */
    int64_t m_tiles, mc, nct;
    float beta;             /* g->beta on the first K block, 1 after */
} block_job;

static void pack_items(void *arg, int64_t begin, int64_t end) {
    const block_job *J = arg;
    for (int64_t it = begin; it < end; it++) {
        if (it < J->nbp) {
            int64_t j = it * NR;
            float *dst = J->bp + it * J->kc * NR;
            if (J->src && J->src->panel)
                J->src->panel(J->src->arg, J->j0 + j, min64(NR, J->nc - j), J->p0, J->kc, NR, dst);
            else
                pack_b(J->g, J->j0 + j, min64(NR, J->nc - j), J->p0, J->kc, dst);
        } else {
            int64_t p = it - J->nbp, i = p * MR;
            pack_a(J->g, J->i0 + i, min64(MR, J->mb - i), J->p0, J->kc, J->ap + p * J->kc * MR);
        }
    }
}

static void compute_tiles(void *arg, int64_t begin, int64_t end) {
    const block_job *J = arg;
    const gemm_f32_args *g = J->g;
    for (int64_t t = begin; t < end; t++) {
        int64_t tn = t / J->m_tiles, tm = t % J->m_tiles;
        int64_t ib = tm * J->mc, ie = min64(J->mb, ib + J->mc);
        int64_t jb = tn * J->nct, je = min64(J->nc, jb + J->nct);
        for (int64_t j = jb; j < je; j += NR) {
            int64_t nr = min64(NR, je - j);
            const float *bp = J->bp + (j / NR) * J->kc * NR;
            if (J->src && J->src->packed) /* every panel holds all of K */
                bp = J->src->packed + ((J->j0 + j) / NR * g->K + J->p0) * NR;
            for (int64_t i = ib; i < ie; i += MR) {
                int64_t mr = min64(MR, ie - i);
                const float *ap = J->ap + (i / MR) * J->kc * MR;
                float *c = g->C + (J->i0 + i) * g->ldc + J->j0 + j;
                if (mr == MR && nr == NR)
                    ukernel(J->kc, ap, bp, NR, c, g->ldc, g->alpha, J->beta);
                else
                    ukernel_edge(J->kc, ap, bp, c, g->ldc, mr, nr, g->alpha, J->beta);
            }
        }
    }
}

static int64_t k_block(int64_t K) { return ceil_div(K, ceil_div(K, KC)); }

static size_t blocked_work_floats(const gemm_f32_args *g, bool b_packed) {
    int64_t kc = k_block(g->K);
    return (size_t)((round_up(min64(g->M, MB), MR) + (b_packed ? 0 : round_up(min64(g->N, NC), NR))) * kc);
}

static void gemm_blocked(threadpool *pool, const gemm_f32_args *g, const gemm_f32_bsrc *src,
                         float *work) {
    int threads = threadpool_size(pool);
    int64_t kcb = k_block(g->K);
    block_job J = {.g = g, .src = src};
    J.ap = work;
    J.bp = work + round_up(min64(g->M, MB), MR) * kcb;
    for (J.j0 = 0; J.j0 < g->N; J.j0 += NC) {
        J.nc = min64(NC, g->N - J.j0);
        int64_t b_panels = ceil_div(J.nc, NR);
        J.nbp = src && src->packed ? 0 : b_panels; /* panels to pack */
        for (J.p0 = 0; J.p0 < g->K; J.p0 += kcb) {
            J.kc = min64(kcb, g->K - J.p0);
            J.beta = J.p0 == 0 ? g->beta : 1.0f;
            for (J.i0 = 0; J.i0 < g->M; J.i0 += MB) {
                J.mb = min64(MB, g->M - J.i0);
                J.nap = ceil_div(J.mb, MR);
                /* B is packed again for every A block; with MB rows per A block that
                 * repetition is rare and keeps both buffers bounded. */
                /* a panel is read and written once (NR or MR rows of kc floats) */
                double pack_ns = threadpool_work_ns(8.0 * (double)(J.kc * NR), 0);
                threadpool_parallel_for_cost(pool, J.nbp + J.nap, pack_ns, pack_items, &J);
                J.mc = MC_PANELS * MR;
                J.m_tiles = ceil_div(J.mb, J.mc);
                int64_t want = ceil_div(4 * threads, J.m_tiles);
                int64_t n_tiles = min64(want, b_panels);
                if (n_tiles < 1) n_tiles = 1;
                J.nct = round_up(ceil_div(J.nc, n_tiles), NR);
                n_tiles = ceil_div(J.nc, J.nct);
                /* a tile: its packed A and B read, C read and written, a multiply-add per
                 * element pair */
                int64_t mc = min64(J.mc, J.mb);
                double tile_ns = threadpool_work_ns(4.0 * (double)((mc + J.nct) * J.kc + 2 * mc * J.nct),
                                                    2.0 * (double)(mc * J.nct * J.kc));
                threadpool_parallel_for_cost(pool, J.m_tiles * n_tiles, tile_ns, compute_tiles, &J);
            }
        }
    }
}

/* ---- matrix-vector ----------------------------------------------------------------- */

typedef struct gemv_job {
    int64_t K, N;
    int m;              /* vectors sharing one pass over mat (1..GEMV_MAX_M) */
    const float *x;     /* vector i at x + i * ldx */
    int64_t ldx;
    const float *mat;
    int64_t ld;
    float *y;           /* result i at y + i * ldy */
    int64_t ldy;
    float alpha, beta;
} gemv_job;

enum { GEMV_MAX_M = 4 };

static inline void store_y(float *y, const float *acc, int64_t n, float alpha, float beta) {
    if (beta == 0)
        for (int64_t i = 0; i < n; i++) y[i] = alpha * acc[i];
    else
        for (int64_t i = 0; i < n; i++) y[i] = alpha * acc[i] + beta * y[i];
}

/* y_i[n] = alpha * sum_k x_i[k] mat[k, n] + beta y_i[n] for columns [c0, c1) and the m
 * vectors i: rows of mat are read as contiguous runs, R at a time, into an L1-resident
 * accumulator, so mat streams from memory once whatever m is. Every element is summed
 * exactly as the blocked path sums it (one chain of fused multiply-adds in k order per
 * K block of k_block(K), blocks merged into y as the micro-kernel merges them into C),
 * so a row of C has the same bits whatever M is and whichever path computed it. m is a
 * constant after inlining. */
static inline __attribute__((always_inline)) void gemv_rows_m(const gemv_job *J, int64_t c0,
                                                              int64_t c1, const int m) {
    enum { R = 8 }; /* rows of mat per pass: one dependent chain of R per vector, many
                       independent vectors in flight */
    float acc[GEMV_CB] __attribute__((aligned(64)));
    const int64_t cw = GEMV_CB / m / VL * VL, kcb = k_block(J->K);
    for (int64_t nb = c0; nb < c1; nb += cw) {
        int64_t w = min64(cw, c1 - nb), wv = w / VL * VL;
        for (int64_t k0 = 0; k0 < J->K; k0 += kcb) {
            int64_t k1 = min64(k0 + kcb, J->K), k = k0;
            for (int i = 0; i < m; i++) memset(acc + i * cw, 0, (size_t)w * sizeof(float));
            for (; k + R <= k1; k += R) {
                const float *r[R];
                UNROLL for (int q = 0; q < R; q++) r[q] = J->mat + (k + q) * J->ld + nb;
                for (int64_t n = 0; n < wv; n += VL) {
                    vf bv[R];
                    UNROLL for (int q = 0; q < R; q++) bv[q] = v_load(r[q] + n);
                    UNROLL for (int i = 0; i < m; i++) {
                        const float *xi = J->x + i * J->ldx + k;
                        float *ai = acc + i * cw + n;
                        vf s = v_load(ai);
                        UNROLL for (int q = 0; q < R; q++) s = v_fma(v_set1(xi[q]), bv[q], s);
                        v_store(ai, s);
                    }
                }
                for (int i = 0; i < m; i++) {
                    const float *xi = J->x + i * J->ldx + k;
                    for (int64_t n = wv; n < w; n++) {
                        float v = acc[i * cw + n];
                        for (int q = 0; q < R; q++) v = s_fma(xi[q], r[q][n], v);
                        acc[i * cw + n] = v;
                    }
                }
            }
            for (; k < k1; k++) {
                const float *r0 = J->mat + k * J->ld + nb;
                for (int i = 0; i < m; i++) {
                    float xk = J->x[i * J->ldx + k], *ai = acc + i * cw;
                    vf x0 = v_set1(xk);
                    for (int64_t n = 0; n < wv; n += VL)
                        v_store(ai + n, v_fma(x0, v_load(r0 + n), v_load(ai + n)));
                    for (int64_t n = wv; n < w; n++) ai[n] = s_fma(xk, r0[n], ai[n]);
                }
            }
            float beta = k0 == 0 ? J->beta : 1.0f;
            for (int i = 0; i < m; i++) {
                float *y = J->y + i * J->ldy + nb;
                const float *ai = acc + i * cw;
                for (int64_t n = 0; n < w; n++)
                    y[n] = merge_c(ai[n], J->alpha, beta, beta == 0 ? 0.0f : y[n]);
            }
        }
    }
}

static void gemv_rows_range(const gemv_job *J, int64_t c0, int64_t c1) {
    switch (J->m) {
    case 1: gemv_rows_m(J, c0, c1, 1); break;
    case 2: gemv_rows_m(J, c0, c1, 2); break;
    case 3: gemv_rows_m(J, c0, c1, 3); break;
    default: gemv_rows_m(J, c0, c1, 4); break;
    }
}

/* Work items of gemv_rows are one contiguous column range per thread: long runs keep
 * the hardware prefetchers streaming, and the same thread gets the same columns on every
 * call (the caller takes item 0), so a matrix that fits in L2 stays there. */
typedef struct gemv_split {
    const gemv_job *J;
    int64_t per; /* columns per item, a multiple of VL */
} gemv_split;

static void gemv_rows_items(void *arg, int64_t begin, int64_t end) {
    const gemv_split *S = arg;
    gemv_rows_range(S->J, min64(begin * S->per, S->J->N), min64(end * S->per, S->J->N));
}

/* y[n] = alpha * dot(x, mat[n, :]) + beta y[n] for rows [r0, r1), four rows per pass so
 * that each load of x feeds four FMAs. */
static void gemv_dots_items(void *arg, int64_t r0, int64_t r1) {
    const gemv_job *J = arg;
    int64_t K = J->K, kv = K / VL * VL;
    const float *x = J->x;
    int64_t n = r0;
    for (; n + 4 <= r1; n += 4) {
        const float *m0 = J->mat + n * J->ld, *m1 = m0 + J->ld, *m2 = m1 + J->ld,
                    *m3 = m2 + J->ld;
        vf a0 = v_zero(), a1 = v_zero(), a2 = v_zero(), a3 = v_zero();
        for (int64_t k = 0; k < kv; k += VL) {
            vf xv = v_load(x + k);
            a0 = v_fma(xv, v_load(m0 + k), a0);
            a1 = v_fma(xv, v_load(m1 + k), a1);
            a2 = v_fma(xv, v_load(m2 + k), a2);
            a3 = v_fma(xv, v_load(m3 + k), a3);
        }
        float acc[4] = {v_sum(a0), v_sum(a1), v_sum(a2), v_sum(a3)};
        for (int64_t k = kv; k < K; k++) {
            acc[0] += x[k] * m0[k];
            acc[1] += x[k] * m1[k];
            acc[2] += x[k] * m2[k];
            acc[3] += x[k] * m3[k];
        }
        store_y(J->y + n, acc, 4, J->alpha, J->beta);
    }
    for (; n < r1; n++) {
        const float *m0 = J->mat + n * J->ld;
        vf a0 = v_zero();
        for (int64_t k = 0; k < kv; k += VL) a0 = v_fma(v_load(x + k), v_load(m0 + k), a0);
        float acc = v_sum(a0);
        for (int64_t k = kv; k < K; k++) acc += x[k] * m0[k];
        store_y(J->y + n, &acc, 1, J->alpha, J->beta);
    }
}

/* One matrix-vector product; `rows` selects mat[k, n] (true) or mat[n, k] (false). */
static void gemv(threadpool *pool, const gemv_job *J, bool rows) {
    /* Enough multiply-adds per work item to be worth waking another thread for. */
    if (rows) {
        int64_t items = threadpool_size(pool);
        int64_t macs = J->N * J->K;
        if (macs < 65536 * items) items = macs / 65536 > 1 ? macs / 65536 : 1;
        gemv_split S = {J, round_up(ceil_div(J->N, items), VL)};
        int64_t n = ceil_div(J->N, S.per);
        double ns = threadpool_work_ns(4.0 * (double)macs, 2.0 * (double)macs);
        threadpool_parallel_for_cost(pool, n, ns / (double)n, gemv_rows_items, &S);
    } else {
        int64_t grain = ceil_div(32768, J->K > 0 ? J->K : 1);
        threadpool_parallel_for(pool, J->N, grain, gemv_dots_items, (void *)J);
    }
}

/* A few rows of C against an untransposed B: one streaming pass over B per group of
 * GEMV_MAX_M rows beats packing B when B is big and M tiny (decode, short prompts). */
static bool small_m(const gemm_f32_args *g) {
    return g->M > 1 && g->N > 1 && g->M <= 2 * GEMV_MAX_M && !g->trans_b;
}

/* The matrix-vector passes (see vector_path). Vector operands with a stride are
 * gathered into `work` first; a C column with a stride is computed aside. */
static void gemm_vector(threadpool *pool, const gemm_f32_args *g, float *work) {
    gemv_job J = {.K = g->K, .m = 1, .alpha = g->alpha, .beta = g->beta};
    if (g->N > 1) {
        /* rows of C: x_i = op(A) row i, matrix = B */
        J.N = g->N;
        J.mat = g->B;
        J.ld = g->ldb;
        J.ldy = g->ldc;
        for (int64_t i0 = 0; i0 < g->M; i0 += GEMV_MAX_M) {
            J.m = (int)min64(GEMV_MAX_M, g->M - i0);
            if (!g->trans_a) {
                J.x = g->A + i0 * g->lda;
                J.ldx = g->lda;
            } else {
                for (int i = 0; i < J.m; i++)
                    for (int64_t k = 0; k < g->K; k++) work[i * g->K + k] = g->A[k * g->lda + i0 + i];
                J.x = work;
                J.ldx = g->K;
            }
            J.y = g->C + i0 * g->ldc;
            gemv(pool, &J, true);
        }
        return;
    }
    /* y[M, 1]: x = op(B) column 0, matrix = op(A) */
    J.N = g->M;
    J.mat = g->A;
    J.ld = g->lda;
    J.y = g->ldc == 1 ? g->C : work + g->K;
    int64_t xstride = g->trans_b ? 1 : g->ldb;
    if (xstride == 1) {
        J.x = g->B;
    } else {
        for (int64_t k = 0; k < g->K; k++) work[k] = g->B[k * xstride];
        J.x = work;
    }
    if (J.y != g->C) J.beta = 0;
    gemv(pool, &J, g->trans_a);
    if (J.y != g->C)
        for (int64_t i = 0; i < g->M; i++) {
            float *p = &g->C[i * g->ldc];
            *p = g->beta == 0 ? J.y[i] : J.y[i] + g->beta * *p;
        }
}

/* ---- a prepacked B with few rows of A ---------------------------------------------- */

/* C rows [i0, i0 + m) over the panels [q0, q1) of a prepacked B: each panel (K x NR,
 * contiguous) streams once for up to GEMV_MAX_M rows. */
typedef struct packed_rows_job {
    const gemm_f32_args *g;
    const float *packed;
} packed_rows_job;

static inline __attribute__((always_inline)) void packed_rows_m(const packed_rows_job *J,
                                                                int64_t i0, const int m,
                                                                int64_t q0, int64_t q1) {
    const gemm_f32_args *g = J->g;
    const int64_t kcb = k_block(g->K);
    for (int64_t q = q0; q < q1; q++) {
        int64_t n0 = q * NR, nr = min64(NR, g->N - n0);
        const float *a[GEMV_MAX_M];
        UNROLL for (int i = 0; i < m; i++) a[i] = g->A + (i0 + i) * g->lda;
        /* per K block of the blocked path, merged into C as it merges them */
        for (int64_t k0 = 0; k0 < g->K; k0 += kcb) {
            int64_t k1 = min64(k0 + kcb, g->K);
            const float *b = J->packed + q * g->K * NR;
            vf acc[GEMV_MAX_M][NV];
            UNROLL for (int i = 0; i < m; i++) UNROLL for (int j = 0; j < NV; j++) acc[i][j] = v_zero();
            for (int64_t k = k0; k < k1; k++) {
                vf bv[NV];
                UNROLL for (int j = 0; j < NV; j++) bv[j] = v_load(b + k * NR + j * VL);
                UNROLL for (int i = 0; i < m; i++) {
                    vf av = v_set1(a[i][k]);
                    UNROLL for (int j = 0; j < NV; j++) acc[i][j] = v_fma(av, bv[j], acc[i][j]);
                }
            }
            float beta = k0 == 0 ? g->beta : 1.0f;
            for (int i = 0; i < m; i++) {
                float out[NR];
                UNROLL for (int j = 0; j < NV; j++) v_store(out + j * VL, acc[i][j]);
                float *y = g->C + (i0 + i) * g->ldc + n0;
                for (int64_t j = 0; j < nr; j++)
                    y[j] = merge_c(out[j], g->alpha, beta, beta == 0 ? 0.0f : y[j]);
            }
        }
    }
}

static void packed_rows_items(void *arg, int64_t q0, int64_t q1) {
    const packed_rows_job *J = arg;
    for (int64_t i0 = 0; i0 < J->g->M; i0 += GEMV_MAX_M) {
        switch (min64(GEMV_MAX_M, J->g->M - i0)) {
        case 1: packed_rows_m(J, i0, 1, q0, q1); break;
        case 2: packed_rows_m(J, i0, 2, q0, q1); break;
        case 3: packed_rows_m(J, i0, 3, q0, q1); break;
        default: packed_rows_m(J, i0, 4, q0, q1); break;
        }
    }
}

/* ---- exported ----------------------------------------------------------------------- */

/* Which path computes C. Each element must come out the same whatever M is (rows of C
 * are the tokens of a batch): a few rows against an untransposed B stream through the
 * matrix-vector pass with the blocked path's arithmetic; a transposed B with few rows
 * takes the blocked path too (a dot-product pass would sum in another order); N == 1
 * always takes the column pass, for every M. */
static bool vector_path(const gemm_f32_args *g) {
    return g->N == 1 || ((g->M == 1 || small_m(g)) && !g->trans_b);
}

int GEMM_NAME(nr)(void) { return NR; }

size_t GEMM_NAME(work_floats)(const gemm_f32_args *g, const gemm_f32_bsrc *src) {
    if (src && src->packed)
        return g->M <= 2 * GEMV_MAX_M && !g->trans_a ? 0 : blocked_work_floats(g, true);
    if (src) return blocked_work_floats(g, false);
    return vector_path(g) ? (size_t)(g->K * GEMV_MAX_M + g->M) : blocked_work_floats(g, false);
}

void GEMM_NAME(run)(threadpool *pool, const gemm_f32_args *g, const gemm_f32_bsrc *src,
                    float *work) {
    if (src && src->packed && g->M <= 2 * GEMV_MAX_M && !g->trans_a) {
        packed_rows_job J = {g, src->packed};
        int64_t panels = ceil_div(g->N, NR);
        /* a panel: NR columns of B streamed once against the M rows */
        double ns = threadpool_work_ns(4.0 * (double)(g->K * NR), 2.0 * (double)(g->M * g->K * NR));
        threadpool_parallel_for_cost(pool, panels, ns, packed_rows_items, &J);
        return;
    }
    if (src) {
        gemm_blocked(pool, g, src, work);
        return;
    }
    if (vector_path(g))
        gemm_vector(pool, g, work);
    else
        gemm_blocked(pool, g, NULL, work);
}

/* dst = [ceil(N / NR)][K][NR] panels of op(B), the columns past N zero. */
void GEMM_NAME(pack_all)(const gemm_f32_args *g, float *dst) {
    for (int64_t q = 0; q * NR < g->N; q++)
        pack_b(g, q * NR, min64(NR, g->N - q * NR), 0, g->K, dst + q * g->K * NR);
}
