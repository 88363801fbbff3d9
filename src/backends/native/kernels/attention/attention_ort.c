/* GroupQueryAttention in onnxruntime's CPU arithmetic (attention_ort.h).
 *
 * onnxruntime 1.31 computes a float32 GroupQueryAttention in one of two ways, and each
 * rounds differently; at accuracy_level 4 an MatMulNBits after the attention quantizes
 * its input to int8, so a last-bit difference here can move a whole quantization step and
 * part the greedy tokens at a near tie. Both ways are reproduced here bit for bit (checked
 * against onnxruntime on this file's test cases, tests/contrib_llm/make_ort_order_cases.py):
 *
 * A run of one token (a decode step) - per query head and row, over the visible keys
 * [lo, hi]:
 *   score  = (q . k in eight lanes, lane l holding d = l mod 8, each product rounded then
 *            added; the lanes summed as ((l0 + l1) + (l2 + l3)) + ((l4 + l5) + (l6 + l7)))
 *            times scale;
 *   e      = exp(score - max) by MLAS's exponential (below); their sum in sixteen lanes
 *            (the key in the cache's row r in lane r mod 16: row r is position r, or with
 *            a window-sized cache the r-th oldest it holds), the lanes folded as MLAS
 *            folds them;
 *   out    = (sum over the keys in order of e * v, each product rounded) * (1 / sum).
 *
 * A run of several tokens - MLAS's flash attention: keys in blocks of
 * B = L2 / (32 D) positions from row 0 of the cache (L2 the core's level-2 cache in
 * bytes, as onnxruntime reads it), each block of a row:
 *   scores = a GEMM: per score a fused multiply-add chain over d, in pieces of MLAS's
 *            K stride (the first piece's sum times scale, later ones fused onto it);
 *   m      = max(m, the block's maximum); e = exp(score - m) with the sum as above, the
 *            lanes counted from the block's start;
 *   l, o   = l e^(m_old - m) + sum, o e^(m_old - m) (expf, each product rounded), then
 *            o += the GEMM e . V of the block (fused chains over keys in pieces of MLAS's
 *            K stride, each piece's sum added to o);
 *   out    = o * (1 / l).
 * Keys outside a row's window weigh zero in both (they change no sum).
 *
 * Which way a row takes follows kernel_ctx.row_forms: a token onnxruntime would compute
 * alone (a decode step, a generated token in a speculative check or a recomputation)
 * takes the first, a prompt token the second; without forms, a sequence of one row takes
 * the first. A token's bits then depend on its own run as onnxruntime would make it, not
 * on what the serving engine batches it with. Two things do follow the call, as in
 * onnxruntime: the block size B follows the machine's L2, and with a head size above 128
 * the last, partial block of a prompt run sets the K stride of its scores (MLAS widens it
 * for a product of at most 64 columns), so an engine that cuts a prompt elsewhere than
 * the generator can differ there in the last bit. */
#include "backends/native/kernels/attention/attention_ort.h"

#include "backends/backend.h"

#include <math.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#if defined(__AVX2__)
#include <immintrin.h>
#endif

enum { OQB = 16 }; /* query rows per task */

/* MLAS's exponential: its constants (the lower clamp, the rounding bias, ln 2 in two
 * parts and the polynomial's coefficients) and its steps, all float32 fused operations. */
static const float X_LOWER = -103.9720840454f, X_BIAS = 12582912.0f,
                   X_LOG2E = 1.44269504088896341f, X_LN2_HI = -6.93145752e-1f,
                   X_LN2_LO = -1.42860677e-6f, X_P0 = 0x1.694000p-10f, X_P1 = 0x1.125edcp-7f,
                   X_P2 = 0x1.555b5ap-5f, X_P3 = 0x1.555450p-3f, X_P4 = 0x1.fffff6p-2f;

float gqa_ort_exp(float x) {
    x = x < X_LOWER ? X_LOWER : x; /* a NaN stays NaN, as vmaxps keeps its second operand */
    float m = fmaf(x, X_LOG2E, X_BIAS) - X_BIAS;
    float r = fmaf(m, X_LN2_HI, x);
    r = fmaf(m, X_LN2_LO, r);
    float p = fmaf(X_P0, r, X_P1);
    p = fmaf(p, r, X_P2);
    p = fmaf(p, r, X_P3);
    p = fmaf(p, r, X_P4);
    p = fmaf(p, r, 1.0f);
    p = fmaf(p, r, 1.0f);
    return ldexpf(p, (int)m); /* vscalefps: one rounding, also into the subnormals */
}

/* e[i] = exp(s[i] - mx) for n values. */
static void exp_shift(const float *s, float *e, int64_t n, float mx) {
    int64_t i = 0;
#if defined(__AVX512F__)
    const __m512 lower = _mm512_set1_ps(X_LOWER), bias = _mm512_set1_ps(X_BIAS),
                 l2e = _mm512_set1_ps(X_LOG2E), hi = _mm512_set1_ps(X_LN2_HI),
                 lo = _mm512_set1_ps(X_LN2_LO), one = _mm512_set1_ps(1.0f),
                 nmx = _mm512_set1_ps(-mx);
    for (; i + 16 <= n; i += 16) {
        __m512 x = _mm512_max_ps(lower, _mm512_add_ps(nmx, _mm512_loadu_ps(s + i)));
        __m512 m = _mm512_sub_ps(_mm512_fmadd_ps(x, l2e, bias), bias);
        __m512 r = _mm512_fmadd_ps(m, lo, _mm512_fmadd_ps(m, hi, x));
        __m512 p = _mm512_fmadd_ps(_mm512_set1_ps(X_P0), r, _mm512_set1_ps(X_P1));
        p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(X_P2));
        p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(X_P3));
        p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(X_P4));
        p = _mm512_fmadd_ps(p, r, one);
        p = _mm512_fmadd_ps(p, r, one);
        _mm512_storeu_ps(e + i, _mm512_scalef_ps(p, m));
    }
#endif
    for (; i < n; i++) e[i] = gqa_ort_exp(s[i] + -mx);
}

/* The sum of n values as MLAS's AVX-512 kernel adds them: value i into lane
 * (i + shift) mod 16 in order, the upper eight lanes onto the lower, then pairs. */
static float lane_sum(const float *e, int64_t n, int64_t shift) {
    float ln[16] = {0};
    int64_t i = 0;
    for (; i < n && ((i + shift) & 15); i++) ln[(i + shift) & 15] += e[i];
#if defined(__AVX512F__)
    __m512 acc = _mm512_loadu_ps(ln);
    for (; i + 16 <= n; i += 16) acc = _mm512_add_ps(acc, _mm512_loadu_ps(e + i));
    _mm512_storeu_ps(ln, acc);
#endif
    for (; i < n; i++) ln[(i + shift) & 15] += e[i];
    float y[8];
    for (int l = 0; l < 8; l++) y[l] = ln[l] + ln[l + 8];
    return ((y[0] + y[1]) + (y[2] + y[3])) + ((y[4] + y[5]) + (y[6] + y[7]));
}

/* q . k in eight lanes, products rounded (a decode step's score before the scale). */
static inline float dot8(const float *q, const float *k, int64_t D) {
    float ln[8] = {0};
    int64_t d = 0;
    for (; d + 8 <= D; d += 8)
        for (int l = 0; l < 8; l++) ln[l] = ln[l] + q[d + l] * k[d + l];
    if (d < D) /* masked loads: the missing lanes add a zero product */
        for (int l = 0; l < 8; l++) ln[l] = ln[l] + (d + l < D ? q[d + l] * k[d + l] : 0.0f);
    return ((ln[0] + ln[1]) + (ln[2] + ln[3])) + ((ln[4] + ln[5]) + (ln[6] + ln[7]));
}

/* MLAS's K stride for an N-column product over K: 128 by 128 to start, traded so that a
 * short K widens N or a narrow N lengthens K. */
static int64_t mlas_stride_k(int64_t N, int64_t K) {
    int64_t sn = 128, sk = 128;
    if (N >= K) {
        while (sk / 2 >= K) sn *= 2, sk /= 2;
    } else {
        while (sn > 16 && sn / 2 >= N) sk *= 2, sn /= 2;
    }
    return sk;
}

/* The L2 size onnxruntime's flash attention divides (bytes of one core's level-2 cache). */
static int64_t l2_bytes(void) {
    static atomic_long cached;
    long v = atomic_load(&cached);
    if (v > 0) return v;
    long s = sysconf(_SC_LEVEL2_CACHE_SIZE);
    v = s > 0 ? s : 1L << 20;
    atomic_store(&cached, v);
    return v;
}

typedef struct or_task {
    int32_t seq, g, i0, i1;
} or_task;

typedef struct or_job {
    const gqa_tiles *t;
    const uint8_t *forms; /* per flat token, or NULL */
    int64_t R, kvb, span;
    size_t row_bytes;
    /* per sequence with prompt rows, its keys laid across per kv head (kt + kt_base[seq]:
     * KV x D x T floats, T its keys held), read by every row block of its prompt */
    float *kt;
    int64_t *kt_base;
    or_task *tasks;
    int64_t ntasks;
    float *wbuf;
    int64_t per_worker;
    atomic_long next;
} or_job;

static inline const float *key_row(const or_job *j, const gqa_tiles_seq *s, const char *base,
                                   int64_t g, int64_t p) {
    int64_t r = p - s->key0, bs = s->block_size;
    int64_t blk = s->blocks ? s->blocks[r / bs] : 0;
    return (const float *)(base + (size_t)blk * s->block_bytes +
                           ((size_t)g * (size_t)bs + (size_t)(r % bs)) * j->row_bytes);
}

/* Row pointers of positions [p0, p0 + n) of kv head g, keys into kp and values into vp,
 * walked block by block (no division per row). */
static void row_ptrs(const or_job *j, const gqa_tiles_seq *s, int64_t g, int64_t p0, int64_t n,
                     const float **kp, const float **vp) {
    for (int64_t x = 0; x < n;) {
        int64_t r = p0 + x - s->key0, run = s->block_size - r % s->block_size;
        if (run > n - x) run = n - x;
        const float *k = key_row(j, s, s->kbase, g, p0 + x), *v = key_row(j, s, s->vbase, g, p0 + x);
        size_t step = j->row_bytes / sizeof(float);
        for (int64_t y = 0; y < run; y++, x++) {
            kp[x] = k + (size_t)y * step;
            vp[x] = v + (size_t)y * step;
        }
    }
}

#if defined(__AVX2__)
/* The pair tree of eight keys' lane sums at once (horizontal adds pair lanes 2i and
 * 2i + 1, as the fold wants), times the scale, into out[0..8). */
static inline __attribute__((always_inline)) void fold8(const __m256 *a, float scale,
                                                        float *out) {
    __m256 h01 = _mm256_hadd_ps(a[0], a[1]), h23 = _mm256_hadd_ps(a[2], a[3]);
    __m256 h45 = _mm256_hadd_ps(a[4], a[5]), h67 = _mm256_hadd_ps(a[6], a[7]);
    __m256 g0 = _mm256_hadd_ps(h01, h23), g1 = _mm256_hadd_ps(h45, h67);
    /* per 128-bit half: keys x, x+1 lanes paired, then the pairs of pairs */
    __m256 lo = _mm256_permute2f128_ps(g0, g1, 0x20), hi = _mm256_permute2f128_ps(g0, g1, 0x31);
    _mm256_storeu_ps(out, _mm256_mul_ps(_mm256_add_ps(lo, hi), _mm256_set1_ps(scale)));
}

/* Decode scores (dot8 each, see there) of q against keys k[0..n), n a multiple of 8, D =
 * 8 NC: q held in NC registers across all keys, each key's lanes summed with one key
 * pointer live at a time (eight pointers at once spill), eight keys folded together. */
static inline __attribute__((always_inline)) void scores_q_held(const float *q,
                                                                const float *const *k,
                                                                int64_t n, float scale,
                                                                float *out, const int NC) {
    __m256 qv[16];
#pragma GCC unroll 16
    for (int c = 0; c < NC; c++) qv[c] = _mm256_loadu_ps(q + 8 * c);
    for (int64_t x = 0; x < n; x += 8) {
        __m256 a[8];
#pragma GCC unroll 8
        for (int y = 0; y < 8; y++) {
            const float *ky = k[x + y];
            __m256 acc = _mm256_mul_ps(qv[0], _mm256_loadu_ps(ky));
#pragma GCC unroll 16
            for (int c = 1; c < NC; c++)
                acc = _mm256_add_ps(acc, _mm256_mul_ps(qv[c], _mm256_loadu_ps(ky + 8 * c)));
            a[y] = acc;
        }
        fold8(a, scale, out + x);
    }
}
#endif

/* Decode scores sr[x] = dot8(q, k[x]) * scale for x < n. */
static void scores_alone(const float *q, const float *const *k, int64_t n, int64_t D,
                         float scale, float *sr) {
    int64_t x = 0;
#if defined(__AVX2__)
    int64_t n8 = n & ~(int64_t)7;
    if (D == 64) {
        scores_q_held(q, k, n8, scale, sr, 8);
        x = n8;
    } else if (D == 128) {
        scores_q_held(q, k, n8, scale, sr, 16);
        x = n8;
    } else if (D % 8 == 0) {
        for (; x < n8; x += 8) {
            __m256 a[8];
            for (int y = 0; y < 8; y++) {
                const float *ky = k[x + y];
                __m256 acc = _mm256_setzero_ps();
                for (int64_t d = 0; d < D; d += 8)
                    acc = _mm256_add_ps(acc, _mm256_mul_ps(_mm256_loadu_ps(q + d),
                                                           _mm256_loadu_ps(ky + d)));
                a[y] = acc;
            }
            fold8(a, scale, sr + x);
        }
    }
#endif
    for (; x < n; x++) sr[x] = dot8(q, k[x], D) * scale;
}

/* The largest of n scores (exact in any order). */
static float max_of(const float *s, int64_t n) {
    float mx = s[0];
    int64_t i = 1;
#if defined(__AVX512F__)
    if (n >= 16) {
        __m512 m = _mm512_loadu_ps(s);
        for (i = 16; i + 16 <= n; i += 16) m = _mm512_max_ps(m, _mm512_loadu_ps(s + i));
        mx = _mm512_reduce_max_ps(m);
    }
#endif
    for (; i < n; i++) mx = s[i] > mx ? s[i] : mx;
    return mx;
}

/* The sum over x < n in order of w[x] * v[x][.]: each product rounded then added (fused
 * false: a decode step's, continued from acc, so that keys can come in blocks) or fused
 * chains (a piece of MLAS's GEMM with beta 1: acc += the chain from zero). Inlined with
 * constant flags, one loop per use. */
static inline __attribute__((always_inline)) void weighted(const float *w, const float *const *v,
                                                           int64_t n, int64_t D, float *acc,
                                                           bool fused) {
    int64_t d0 = 0;
#if defined(__AVX512F__)
#define OR_STEP(a, x, p) (fused ? _mm512_fmadd_ps(x, _mm512_loadu_ps(p), a) \
                                : _mm512_add_ps(a, _mm512_mul_ps(x, _mm512_loadu_ps(p))))
#define OR_OUT(p, a) _mm512_storeu_ps(p, fused ? _mm512_add_ps(a, _mm512_loadu_ps(p)) : (a))
#define OR_IN(p) (fused ? _mm512_setzero_ps() : _mm512_loadu_ps(p))
    for (; d0 + 64 <= D; d0 += 64) {
        __m512 a0 = OR_IN(acc + d0), a1 = OR_IN(acc + d0 + 16), a2 = OR_IN(acc + d0 + 32),
               a3 = OR_IN(acc + d0 + 48);
        for (int64_t x = 0; x < n; x++) {
            __m512 wx = _mm512_set1_ps(w[x]);
            const float *vx = v[x] + d0;
            a0 = OR_STEP(a0, wx, vx);
            a1 = OR_STEP(a1, wx, vx + 16);
            a2 = OR_STEP(a2, wx, vx + 32);
            a3 = OR_STEP(a3, wx, vx + 48);
        }
        OR_OUT(acc + d0, a0);
        OR_OUT(acc + d0 + 16, a1);
        OR_OUT(acc + d0 + 32, a2);
        OR_OUT(acc + d0 + 48, a3);
    }
    for (; d0 + 16 <= D; d0 += 16) {
        __m512 a0 = OR_IN(acc + d0);
        for (int64_t x = 0; x < n; x++) a0 = OR_STEP(a0, _mm512_set1_ps(w[x]), v[x] + d0);
        OR_OUT(acc + d0, a0);
    }
#undef OR_STEP
#undef OR_OUT
#undef OR_IN
#endif
    for (int64_t d = d0; d < D; d++) {
        float c = fused ? 0.0f : acc[d];
        for (int64_t x = 0; x < n; x++) c = fused ? fmaf(w[x], v[x][d], c) : c + w[x] * v[x][d];
        acc[d] = fused ? c + acc[d] : c;
    }
}

static void weighted_alone(const float *w, const float *const *v, int64_t n, int64_t D,
                           float *acc) {
    weighted(w, v, n, D, acc, false);
}

static void weighted_piece(const float *w, const float *const *v, int64_t n, int64_t D,
                           float *acc) {
    weighted(w, v, n, D, acc, true);
}

/* weighted_piece for nh <= OR_HEADS heads over the same values (loaded once for all):
 * the same bits as nh calls. */
static void weighted_pieces(const float *const *w, int nh, const float *const *v, int64_t n,
                            int64_t D, float *const *acc) {
#if defined(__AVX512F__)
    if (D % 32 == 0) {
        for (int64_t d0 = 0; d0 < D; d0 += 32) {
            __m512 a[4][2];
            for (int h = 0; h < 4; h++) a[h][0] = a[h][1] = _mm512_setzero_ps();
            for (int64_t x = 0; x < n; x++) {
                __m512 v0 = _mm512_loadu_ps(v[x] + d0), v1 = _mm512_loadu_ps(v[x] + d0 + 16);
#pragma GCC unroll 4
                for (int h = 0; h < 4; h++) {
                    if (h >= nh) break;
                    __m512 wx = _mm512_set1_ps(w[h][x]);
                    a[h][0] = _mm512_fmadd_ps(wx, v0, a[h][0]);
                    a[h][1] = _mm512_fmadd_ps(wx, v1, a[h][1]);
                }
            }
            for (int h = 0; h < nh; h++) {
                float *o = acc[h] + d0;
                _mm512_storeu_ps(o, _mm512_add_ps(a[h][0], _mm512_loadu_ps(o)));
                _mm512_storeu_ps(o + 16, _mm512_add_ps(a[h][1], _mm512_loadu_ps(o + 16)));
            }
        }
        return;
    }
#endif
    for (int h = 0; h < nh; h++) weighted_piece(w[h], v, n, D, acc[h]);
}

/* weighted_alone for two heads at once (twice the independent sums in flight): the same
 * bits as two calls; continued from acc0 and acc1. */
static void weighted_alone2(const float *w0, const float *w1, const float *const *v, int64_t n,
                            int64_t D, float *acc0, float *acc1) {
#if defined(__AVX512F__)
    if (D % 32 == 0) {
        for (int64_t d0 = 0; d0 < D; d0 += 32) {
            __m512 a0 = _mm512_loadu_ps(acc0 + d0), a1 = _mm512_loadu_ps(acc0 + d0 + 16),
                   b0 = _mm512_loadu_ps(acc1 + d0), b1 = _mm512_loadu_ps(acc1 + d0 + 16);
            for (int64_t x = 0; x < n; x++) {
                __m512 u = _mm512_set1_ps(w0[x]), t = _mm512_set1_ps(w1[x]);
                __m512 v0 = _mm512_loadu_ps(v[x] + d0), v1 = _mm512_loadu_ps(v[x] + d0 + 16);
                a0 = _mm512_add_ps(a0, _mm512_mul_ps(u, v0));
                a1 = _mm512_add_ps(a1, _mm512_mul_ps(u, v1));
                b0 = _mm512_add_ps(b0, _mm512_mul_ps(t, v0));
                b1 = _mm512_add_ps(b1, _mm512_mul_ps(t, v1));
            }
            _mm512_storeu_ps(acc0 + d0, a0);
            _mm512_storeu_ps(acc0 + d0 + 16, a1);
            _mm512_storeu_ps(acc1 + d0, b0);
            _mm512_storeu_ps(acc1 + d0 + 16, b1);
        }
        return;
    }
#endif
    weighted_alone(w0, v, n, D, acc0);
    weighted_alone(w1, v, n, D, acc1);
}

/* Heads of one row scored together (the keys laid across are loaded once for all). */
enum { OR_HEADS = 4 };

/* acc[h][x] = the fused chain over d < nd of q[h][d] * kt[d * ld + x], from zero, for
 * x < n and h < NH: a prompt row's scores before the scale for NH heads, the keys laid
 * across (kt), 64 keys (32 for four heads) in registers at a time. */
static inline __attribute__((always_inline)) void chains_heads(const float *const *q,
                                                               const float *kt, int64_t ld,
                                                               int64_t nd, int64_t n,
                                                               float *const *acc, const int NH) {
    int64_t x = 0;
#if defined(__AVX512F__)
    const int W = NH > 2 ? 2 : 4; /* vectors of 16 keys per head */
    for (; x + 16 * W <= n; x += 16 * W) {
        __m512 a[OR_HEADS][4];
#pragma GCC unroll 4
        for (int h = 0; h < NH; h++)
#pragma GCC unroll 4
            for (int v = 0; v < W; v++) a[h][v] = _mm512_setzero_ps();
        for (int64_t d = 0; d < nd; d++) {
            const float *r = kt + d * ld + x;
            __m512 kv[4];
#pragma GCC unroll 4
            for (int v = 0; v < W; v++) kv[v] = _mm512_loadu_ps(r + 16 * v);
#pragma GCC unroll 4
            for (int h = 0; h < NH; h++) {
                __m512 qd = _mm512_set1_ps(q[h][d]);
#pragma GCC unroll 4
                for (int v = 0; v < W; v++) a[h][v] = _mm512_fmadd_ps(qd, kv[v], a[h][v]);
            }
        }
#pragma GCC unroll 4
        for (int h = 0; h < NH; h++)
#pragma GCC unroll 4
            for (int v = 0; v < W; v++) _mm512_storeu_ps(acc[h] + x + 16 * v, a[h][v]);
    }
    /* the last keys in 16 lanes, those past n masked off (each lane is its own chain) */
    for (; x < n; x += 16) {
        __mmask16 mk = n - x >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << (n - x)) - 1);
        __m512 a[OR_HEADS];
#pragma GCC unroll 4
        for (int h = 0; h < NH; h++) a[h] = _mm512_setzero_ps();
        for (int64_t d = 0; d < nd; d++) {
            __m512 kv = _mm512_maskz_loadu_ps(mk, kt + d * ld + x);
#pragma GCC unroll 4
            for (int h = 0; h < NH; h++) a[h] = _mm512_fmadd_ps(_mm512_set1_ps(q[h][d]), kv, a[h]);
        }
#pragma GCC unroll 4
        for (int h = 0; h < NH; h++) _mm512_mask_storeu_ps(acc[h] + x, mk, a[h]);
    }
#endif
    for (; x < n; x++)
        for (int h = 0; h < NH; h++) {
            float c = 0.0f;
            for (int64_t d = 0; d < nd; d++) c = fmaf(q[h][d], kt[d * ld + x], c);
            acc[h][x] = c;
        }
}

/* A prompt row's scores c[h][x] of nh <= OR_HEADS heads q[h] against n keys laid across
 * from kt (row stride ld), as MLAS's SGEMM gives them: fused chains over the head size in
 * pieces of skq, the first piece times the scale, each later one fma(piece, scale, c).
 * tmp[h]: n floats each. */
static void scores_gemm(const float *const *q, int nh, const float *kt, int64_t ld, int64_t D,
                        int64_t skq, int64_t n, float scale, float *const *c,
                        float *const *tmp) {
    for (int64_t d0 = 0; d0 < D; d0 += skq) {
        int64_t nd = (d0 + skq < D ? d0 + skq : D) - d0;
        const float *qd[OR_HEADS];
        for (int h = 0; h < nh; h++) qd[h] = q[h] + d0;
        float *const *acc = d0 == 0 ? c : tmp;
        const float *k = kt + d0 * ld;
        switch (nh) {
        case 4: chains_heads(qd, k, ld, nd, n, acc, 4); break;
        case 3: chains_heads(qd, k, ld, nd, n, acc, 3); break;
        case 2: chains_heads(qd, k, ld, nd, n, acc, 2); break;
        default: chains_heads(qd, k, ld, nd, n, acc, 1); break;
        }
        for (int h = 0; h < nh; h++) {
            float *ch = c[h], *th = tmp[h];
            if (d0 == 0)
                for (int64_t x = 0; x < n; x++) ch[x] = ch[x] * scale;
            else
                for (int64_t x = 0; x < n; x++) ch[x] = fmaf(th[x], scale, ch[x]);
        }
    }
}

static bool row_alone(const or_job *j, const gqa_tiles_seq *s, int64_t i) {
    if (j->forms) return j->forms[s->tok0 + i] == BACKEND_ROW_ALONE;
    return s->n == 1;
}

/* The visible keys of row i as positions [*lo, *hi], clamped to those held. */
static bool row_range(const or_job *j, int seq, int64_t i, int64_t *lo, int64_t *hi) {
    const gqa_tiles_seq *s = &j->t->seqs[seq];
    j->t->range(j->t->arg, seq, i, lo, hi);
    if (*lo < s->key0) *lo = s->key0;
    if (*hi > s->keys - 1) *hi = s->keys - 1;
    return *lo <= *hi;
}

/* Keys (or values) of a decode row per block: a block of D-float rows that stays in the
 * first-level cache while every head of the group reads it (a multiple of 8). */
static int64_t alone_block(int64_t D) {
    int64_t xb = (16384 / (int64_t)sizeof(float) / D) & ~(int64_t)7;
    return xb < 8 ? 8 : xb;
}

/* A decode-step row: all heads of the group (the first way, see the top), keys and values
 * in blocks read by every head in turn. Worker memory: the keys' and values' row pointers
 * (2 n), each head's scores (R n), output sums (R D) and 1 / sum (R). */
static void run_alone(const or_job *j, const gqa_tiles_seq *s, int64_t g, int64_t i,
                      int64_t lo, int64_t hi, float *w) {
    const gqa_tiles *t = j->t;
    int64_t D = t->D, R = j->R, n = hi - lo + 1, xb = alone_block(D);
    const float **kp = (const float **)w, **vp = kp + n;
    float *sc = (float *)(vp + n), *acc = sc + R * n, *inv = acc + R * D;
    row_ptrs(j, s, g, lo, n, kp, vp);
    const float *q = t->q + (s->tok0 + i) * t->q_ld + g * R * D;
    for (int64_t x0 = 0; x0 < n; x0 += xb) {
        int64_t nb = n - x0 < xb ? n - x0 : xb;
        for (int64_t r = 0; r < R; r++) scores_alone(q + r * D, kp + x0, nb, D, t->scale,
                                                     sc + r * n + x0);
    }
    /* the sum's lanes count from the cache's row 0: position 0, or with a window-sized cache
     * the oldest position it holds once this token is written */
    int64_t lane0 =
        s->swc_cap > 0 ? hi + 1 - gqa_swc_resident(hi + 1, s->swc_cap, s->swc_window) : 0;
    for (int64_t r = 0; r < R; r++) {
        float *sr = sc + r * n;
        exp_shift(sr, sr, n, max_of(sr, n));
        inv[r] = 1.0f / lane_sum(sr, n, (lo - lane0) & 15);
    }
    memset(acc, 0, sizeof(float) * (size_t)(R * D));
    for (int64_t x0 = 0; x0 < n; x0 += xb) {
        int64_t nb = n - x0 < xb ? n - x0 : xb;
        for (int64_t r = 0; r < R; r += 2) {
            if (r + 1 < R)
                weighted_alone2(sc + r * n + x0, sc + (r + 1) * n + x0, vp + x0, nb, D,
                                acc + r * D, acc + (r + 1) * D);
            else
                weighted_alone(sc + r * n + x0, vp + x0, nb, D, acc + r * D);
        }
    }
    float *out = t->out + (s->tok0 + i) * t->N * D + g * R * D;
    for (int64_t r = 0; r < R; r++)
        for (int64_t d = 0; d < D; d++) out[r * D + d] = acc[r * D + d] * inv[r];
}

/* Prompt rows [i0, i1) of kv head g (the second way, see the top). Worker memory: the
 * block's row pointers (2 kvb), scores and a piece's score sums (2 kvb), and per (row,
 * head) m, l and o (D + 2). */
static void run_block_rows(const or_job *j, const gqa_tiles_seq *s, int64_t g, int64_t i0,
                           int64_t i1, float *w) {
    const gqa_tiles *t = j->t;
    /* Blocks, pieces and lanes count from position 0 of the sequence (the first row of
     * onnxruntime's cache in a prompt's run), whatever rows a window-sized cache still
     * holds: a prompt cut into pieces gets the bits of its run whole. */
    int64_t D = t->D, R = j->R, kvb = j->kvb, T = s->keys, K0 = s->key0, TR = T - K0;
    const float **kp = (const float **)w, **vp = kp + kvb;
    float *sc = (float *)(vp + kvb), *tmp = sc + OR_HEADS * kvb, *st = tmp + OR_HEADS * kvb;
    int64_t nrow = i1 - i0;
    int64_t lo[OQB], hi[OQB];
    bool any = false, alone[OQB];
    int64_t hmax = -1, lmin = T;
    for (int64_t i = i0; i < i1; i++) {
        alone[i - i0] = row_alone(j, s, i);
        bool vis = row_range(j, (int)(s - t->seqs), i, &lo[i - i0], &hi[i - i0]);
        if (!vis) {
            lo[i - i0] = 1, hi[i - i0] = 0;
            continue;
        }
        if (alone[i - i0]) continue;
        any = true;
        hmax = hi[i - i0] > hmax ? hi[i - i0] : hmax;
        lmin = lo[i - i0] < lmin ? lo[i - i0] : lmin;
    }
    if (!any) return;
    /* the sequence's held keys of head g laid across (see or_job.kt): kt[d * TR + p - K0]
     * (made only for sequences with prompt rows) */
    const float *kt = j->kt + j->kt_base[s - t->seqs] + g * D * TR;
    /* per (row, head): [0] m, [1] l, then o */
    int64_t sst = D + 2;
    for (int64_t k = 0; k < nrow * R; k++) st[k * sst + 1] = -1.0f; /* no block yet */
    for (int64_t a = lmin / kvb * kvb; a <= hmax; a += kvb) {
        int64_t b = a + kvb < T ? a + kvb : T, need = b < hmax + 1 ? b : hmax + 1;
        int64_t a0 = a > lmin ? a : lmin; /* the first key any row sees */
        row_ptrs(j, s, g, a0, need - a0, kp + (a0 - a), vp + (a0 - a));
        int64_t skq = mlas_stride_k(b - a, D), skv = mlas_stride_k(D, b - a);
        for (int64_t i = i0; i < i1; i++) {
            int64_t li = i - i0;
            if (alone[li] || lo[li] > hi[li]) continue;
            int64_t v0 = lo[li], v1 = hi[li] + 1;
            if (v0 < a) v0 = a;
            if (v1 > b) v1 = b;
            if (v0 >= v1) continue; /* a block the row does not see changes nothing */
            int64_t n = v1 - v0;
            const float *qrow = t->q + (s->tok0 + i) * t->q_ld + g * R * D;
            for (int64_t r0 = 0; r0 < R; r0 += OR_HEADS) {
                int nh = R - r0 < OR_HEADS ? (int)(R - r0) : OR_HEADS;
                const float *qh[OR_HEADS], *eh[OR_HEADS];
                float *ch[OR_HEADS], *th[OR_HEADS], *oh[OR_HEADS];
                for (int h = 0; h < nh; h++) {
                    qh[h] = qrow + (r0 + h) * D;
                    ch[h] = sc + h * kvb + (v0 - a);
                    th[h] = tmp + h * kvb;
                }
                scores_gemm(qh, nh, kt + (v0 - K0), TR, D, skq, n, t->scale, ch, th);
                for (int h = 0; h < nh; h++) {
                    float *c = ch[h];
                    float *sr = st + (li * R + r0 + h) * sst, *o = sr + 2;
                    float mx = max_of(c, n);
                    bool first = sr[1] < 0.0f;
                    float m = first || mx > sr[0] ? mx : sr[0];
                    exp_shift(c, c, n, m);
                    float rs = lane_sum(c, n, v0 - a);
                    if (first) {
                        sr[1] = rs;
                        for (int64_t d = 0; d < D; d++) o[d] = 0.0f;
                    } else {
                        float ed = expf(sr[0] - m);
                        sr[1] = ed * sr[1] + rs;
                        for (int64_t d = 0; d < D; d++) o[d] = ed * o[d];
                    }
                    sr[0] = m;
                    oh[h] = o;
                }
                /* o += e . V over the block, in pieces of skv keys from the block's start */
                for (int64_t p0 = a; p0 < b; p0 += skv) {
                    int64_t x0 = p0 > v0 ? p0 : v0, x1 = p0 + skv < v1 ? p0 + skv : v1;
                    if (x0 >= x1) continue;
                    for (int h = 0; h < nh; h++) eh[h] = sc + h * kvb + (x0 - a);
                    weighted_pieces(eh, nh, vp + (x0 - a), x1 - x0, D, oh);
                }
            }
        }
    }
    for (int64_t i = i0; i < i1; i++) {
        int64_t li = i - i0;
        if (alone[li] || lo[li] > hi[li]) continue;
        for (int64_t r = 0; r < R; r++) {
            float *sr = st + (li * R + r) * sst;
            float *out = t->out + (s->tok0 + i) * t->N * D + (g * R + r) * D;
            float inv = 1.0f / sr[1];
            for (int64_t d = 0; d < D; d++) out[d] = sr[2 + d] * inv;
        }
    }
}

/* The values of keys [x0, x1] weighed by p (zero elsewhere) as MLAS's one-row kernel sums
 * a decode step's product over all T keys: groups of four keys from key 0 (each product
 * rounded, the group summed in order, then added onto the sum), then a pair and a single
 * key for T mod 4. acc = the sum. */
static void weighted_m1(const float *p, const float *const *v, int64_t x0, int64_t x1,
                        int64_t T, int64_t D, float *restrict acc, float *restrict grp) {
    for (int64_t d = 0; d < D; d++) acc[d] = 0.0f;
    int64_t T4 = T - T % 4;
    for (int64_t a = 0; a < T; ) {
        int64_t len = a < T4 ? 4 : (T - a >= 2 && ((T - T4) & 2) && a == T4 ? 2 : 1);
        if (a + len - 1 >= x0 && a <= x1) {
            for (int64_t d = 0; d < D; d++) grp[d] = 0.0f;
            for (int64_t x = a; x < a + len; x++) {
                if (x < x0 || x > x1) continue; /* a zero weight adds a zero product */
                const float *vx = v[x - x0];
                float w = p[x - x0];
                if (x == a)
                    for (int64_t d = 0; d < D; d++) grp[d] = w * vx[d];
                else
                    for (int64_t d = 0; d < D; d++) grp[d] = grp[d] + w * vx[d];
            }
            for (int64_t d = 0; d < D; d++) acc[d] = grp[d] + acc[d];
        }
        a += len;
    }
}

/* Rows [i0, i1) of kv head g when the node has a softcap: onnxruntime's plain path (no
 * flash, no decode kernel): the scores a GEMM as a prompt block's (fused chains over d in
 * K-stride pieces, times scale) over all T keys, then on the row's window
 * cap * tanhf(x / cap) (libm's tanhf, as onnxruntime calls it), the softmax (MLAS's
 * exponential and sum, lanes from the window's first key) and p = e * (1 / sum); then
 * p . V as MLAS's one-row kernel sums it for a decode step, as its GEMM (chains over keys
 * in K-stride pieces) for a prompt row. Worker memory: row pointers (4 T), scores (T),
 * two D sums. */
static void run_plain_rows(const or_job *j, const gqa_tiles_seq *s, int64_t g, int64_t i0,
                           int64_t i1, float *w) {
    const gqa_tiles *t = j->t;
    int64_t D = t->D, R = j->R, T = s->keys, K0 = s->key0, TR = T - K0;
    const float *kt = j->kt + j->kt_base[s - t->seqs] + g * D * TR;
    const float **kp = (const float **)w, **vp = kp + TR;
    float *sc = (float *)(vp + TR), *tmp = sc + TR, *acc = tmp + TR, *grp = acc + D;
    int64_t skq = mlas_stride_k(T, D), skv = mlas_stride_k(D, T);
    float cap = t->softcap;
    for (int64_t i = i0; i < i1; i++) {
        int64_t lo, hi;
        if (!row_range(j, (int)(s - t->seqs), i, &lo, &hi)) continue;
        int64_t n = hi - lo + 1;
        bool alone = row_alone(j, s, i);
        row_ptrs(j, s, g, lo, n, kp, vp);
        for (int64_t r = 0; r < R; r++) {
            const float *q = t->q + (s->tok0 + i) * t->q_ld + (g * R + r) * D;
            scores_gemm(&q, 1, kt + (lo - K0), TR, D, skq, n, t->scale, &sc, &tmp);
            for (int64_t x = 0; x < n; x++) sc[x] = tanhf(sc[x] / cap) * cap;
            exp_shift(sc, sc, n, max_of(sc, n));
            float inv = 1.0f / lane_sum(sc, n, 0);
            for (int64_t x = 0; x < n; x++) sc[x] = sc[x] * inv;
            float *out = t->out + (s->tok0 + i) * t->N * D + (g * R + r) * D;
            if (alone) {
                weighted_m1(sc, vp, lo, hi, T, D, acc, grp);
            } else {
                for (int64_t d = 0; d < D; d++) acc[d] = 0.0f;
                for (int64_t p0 = 0; p0 <= hi; p0 += skv) {
                    int64_t x0 = p0 > lo ? p0 : lo, x1 = p0 + skv - 1 < hi ? p0 + skv - 1 : hi;
                    if (x0 <= x1) weighted_piece(sc + (x0 - lo), vp + (x0 - lo), x1 - x0 + 1, D, acc);
                }
            }
            memcpy(out, acc, sizeof(float) * (size_t)D);
        }
    }
}

static void run_task(const or_job *j, const or_task *tk, float *w) {
    const gqa_tiles *t = j->t;
    const gqa_tiles_seq *s = &t->seqs[tk->seq];
    int64_t D = t->D;
    bool plain = t->softcap > 0.0f;
    if (plain)
        run_plain_rows(j, s, tk->g, tk->i0, tk->i1, w);
    else
        run_block_rows(j, s, tk->g, tk->i0, tk->i1, w);
    for (int64_t i = tk->i0; i < tk->i1; i++) {
        int64_t lo, hi;
        bool vis = row_range(j, tk->seq, i, &lo, &hi);
        if (vis && (plain || !row_alone(j, s, i))) continue;
        if (!vis) { /* no key: zero, as the tiles give */
            for (int64_t r = 0; r < j->R; r++)
                memset(t->out + (s->tok0 + i) * t->N * D + (tk->g * j->R + r) * D, 0,
                       sizeof(float) * (size_t)D);
            continue;
        }
        run_alone(j, s, tk->g, i, lo, hi, w);
    }
}

/* Lays the keys of (sequence, kv head) k across: item k = seq * KV + g. */
static void kt_fill(void *arg, int64_t begin, int64_t end) {
    const or_job *j = arg;
    const gqa_tiles *t = j->t;
    int64_t D = t->D;
    for (int64_t k = begin; k < end; k++) {
        int seq = (int)(k / t->KV);
        int64_t g = k % t->KV;
        if (j->kt_base[seq] < 0) continue;
        const gqa_tiles_seq *s = &t->seqs[seq];
        int64_t T = s->keys - s->key0;
        float *kt = j->kt + j->kt_base[seq] + g * D * T;
        for (int64_t x = 0; x < T;) {
            int64_t r = x, run = s->block_size - r % s->block_size;
            if (run > T - x) run = T - x;
            const float *k0 = key_row(j, s, s->kbase, g, s->key0 + x);
            for (int64_t y = 0; y < run; y++)
                for (int64_t d = 0; d < D; d++) kt[d * T + x + y] = k0[y * D + d];
            x += run;
        }
    }
}

static void or_worker(void *arg, int64_t begin, int64_t end) {
    or_job *j = arg;
    (void)end;
    float *w = j->wbuf + begin * j->per_worker;
    for (;;) {
        long k = atomic_fetch_add(&j->next, 1);
        if (k >= j->ntasks) break;
        run_task(j, &j->tasks[k], w);
    }
}

/* OG_ATTENTION=tiles keeps every node on the tile arithmetic of attention_tiles.h (faster
 * on long contexts, not onnxruntime's bits): for measuring what the order costs. */
static bool tiles_forced(void) {
    static atomic_int forced = -1;
    int f = atomic_load(&forced);
    if (f < 0) {
        const char *e = getenv("OG_ATTENTION");
        f = e && strcmp(e, "tiles") == 0;
        atomic_store(&forced, f);
    }
    return f;
}

bool gqa_ort_applies(const gqa_tiles *t) {
    /* with a softcap and a scale of exactly 1 onnxruntime's decode scores take MLAS's
     * one-row kernel for a transposed B, whose order is not reproduced: the tiles */
    if (t->softcap > 0.0f && t->scale == 1.0f) return false;
    return !tiles_forced() && t->dt == OG_FLOAT32 && !t->fixed && !t->smooth && !t->sink && !t->bias;
}

og_status *gqa_ort_run(kernel_ctx *ctx, const gqa_tiles *t) {
    or_job j = {.t = t, .R = t->N / t->KV, .row_bytes = sizeof(float) * (size_t)t->D};
    int ns = t->n_seqs;
    if (ns == 0) return NULL;
    if (ctx->row_forms && ctx->n_row_forms == t->n_tokens) j.forms = ctx->row_forms;
    int64_t D = t->D;
    j.kvb = l2_bytes() / (int64_t)(sizeof(float) * 4 * (size_t)(2 * D));
    if (j.kvb < 1) j.kvb = 1;
    int64_t ntasks = 0, span = 1, kmax = 1;
    double work_ns = 0;
    for (int i = 0; i < ns; i++) {
        const gqa_tiles_seq *s = &t->seqs[i];
        ntasks += t->KV * ((s->n + OQB - 1) / OQB);
        span = s->keys - s->key0 > span ? s->keys - s->key0 : span;
        kmax = s->keys > kmax ? s->keys : kmax;
        work_ns += (double)(s->n * t->N) * (double)(s->keys - s->key0) * ((double)D * 0.5 + 2.0);
    }
    j.span = span;
    /* no block reaches past the last key (blocks count from position 0, so this changes
     * no boundary; it bounds the worker's memory) */
    if (j.kvb > kmax) j.kvb = kmax;
    OG_TRY(kernel_scratch(ctx, sizeof(or_task) * (size_t)ntasks + 1, (void **)&j.tasks));
    ntasks = 0;
    for (int i = 0; i < ns; i++) {
        const gqa_tiles_seq *s = &t->seqs[i];
        for (int64_t i0 = 0; i0 < s->n; i0 += OQB)
            for (int64_t g = 0; g < t->KV; g++)
                j.tasks[ntasks++] = (or_task){i, (int32_t)g, (int32_t)i0,
                                              (int32_t)(i0 + OQB < s->n ? i0 + OQB : s->n)};
    }
    j.ntasks = ntasks;
    OG_TRY(kernel_scratch(ctx, sizeof(int64_t) * (size_t)ns + 1, (void **)&j.kt_base));
    int64_t kt_floats = 0;
    for (int i = 0; i < ns; i++) {
        const gqa_tiles_seq *s = &t->seqs[i];
        bool prompt_rows = false;
        for (int64_t r = 0; r < s->n && !prompt_rows; r++) prompt_rows = !row_alone(&j, s, r);
        prompt_rows |= t->softcap > 0.0f; /* the softcap path scores every row so */
        j.kt_base[i] = prompt_rows ? kt_floats : -1;
        if (prompt_rows) kt_floats += t->KV * D * (s->keys - s->key0);
    }
    if (kt_floats > 0) {
        OG_TRY(kernel_scratch(ctx, sizeof(float) * (size_t)kt_floats, (void **)&j.kt));
        threadpool_parallel_for_cost(ctx->pool, (int64_t)ns * t->KV,
                                     (double)(kt_floats / ((int64_t)ns * t->KV)) * 0.5,
                                     kt_fill, &j);
    }
    /* a prompt block's panel, scores and piece sums, the rows' states; or a decode row's
     * scores and output sums */
    int64_t prompt = 4 * j.kvb + 2 * OR_HEADS * j.kvb + OQB * j.R * (D + 2),
            alone = 4 * span + j.R * span + j.R * D + j.R, plain = 6 * span + 2 * D;
    if (alone < plain) alone = plain;
    if (kt_floats == 0) prompt = 0; /* decode rows only */
    /* whole 64-byte lines per worker: its memory starts with row pointers */
    j.per_worker = ((prompt > alone ? prompt : alone) + 16 + 15) / 16 * 16;
    int64_t workers = threadpool_size(ctx->pool);
    if (workers > ntasks) workers = ntasks;
    OG_TRY(kernel_scratch(ctx, sizeof(float) * (size_t)(workers * j.per_worker), (void **)&j.wbuf));
    atomic_init(&j.next, 0);
    threadpool_parallel_for_cost(ctx->pool, workers, work_ns / (double)workers, or_worker, &j);
    return NULL;
}
