/* The two inner loops of decode attention over a contiguous run of cached rows (see
 * attention.h): one query's scores against n keys, and the probability-weighted sum of
 * n value rows. With AVX-512 and a head size that is a multiple of 16, a key or value
 * row is whole vectors: the scores of 16 keys are formed as 16 vectors of lane products
 * and summed into one vector of 16 scores by a transposing reduction (about 3 operations
 * a key, instead of a horizontal sum each); the value rows accumulate into registers
 * that hold the whole output row, several rows in flight. Other head sizes and builds
 * use the portable loops of attention.h. */
#include "backends/native/kernels/attention.h"

#if defined(__AVX512F__)
#include <immintrin.h>

/* The sums of 16 vectors: lane i of the result is the sum of the lanes of v[i]. */
static inline __m512 sum16(const __m512 *v) {
    __m512 x[4];
    for (int g = 0; g < 4; g++) {
        const __m512 *a = v + 4 * g;
        /* per 128-bit lane: [a0 + a2, a1... ] pairs, then the four vectors' lane sums */
        __m512 s01 = _mm512_add_ps(_mm512_unpacklo_ps(a[0], a[1]), _mm512_unpackhi_ps(a[0], a[1]));
        __m512 s23 = _mm512_add_ps(_mm512_unpacklo_ps(a[2], a[3]), _mm512_unpackhi_ps(a[2], a[3]));
        x[g] = _mm512_add_ps(_mm512_shuffle_ps(s01, s23, _MM_SHUFFLE(1, 0, 1, 0)),
                             _mm512_shuffle_ps(s01, s23, _MM_SHUFFLE(3, 2, 3, 2)));
    }
    /* x[g]'s 128-bit lane L holds lane L's partial sums of v[4g..4g+3]: add the lanes */
    __m512 z01 = _mm512_add_ps(_mm512_shuffle_f32x4(x[0], x[1], _MM_SHUFFLE(1, 0, 1, 0)),
                               _mm512_shuffle_f32x4(x[0], x[1], _MM_SHUFFLE(3, 2, 3, 2)));
    __m512 z23 = _mm512_add_ps(_mm512_shuffle_f32x4(x[2], x[3], _MM_SHUFFLE(1, 0, 1, 0)),
                               _mm512_shuffle_f32x4(x[2], x[3], _MM_SHUFFLE(3, 2, 3, 2)));
    return _mm512_add_ps(_mm512_shuffle_f32x4(z01, z23, _MM_SHUFFLE(2, 0, 2, 0)),
                         _mm512_shuffle_f32x4(z01, z23, _MM_SHUFFLE(3, 1, 3, 1)));
}

void cpu_attn_scores(const float *q, const float *k, int64_t n, int64_t D, float scale,
                     float *s) {
    if (D % 16 || D > 256) {
        for (int64_t t = 0; t < n; t++) s[t] = scale * cpu_dot(q, k + t * D, D);
        return;
    }
    const int64_t C = D / 16;
    __m512 qv[16];
    for (int64_t c = 0; c < C; c++) qv[c] = _mm512_loadu_ps(q + 16 * c);
    const __m512 sc = _mm512_set1_ps(scale);
    int64_t t = 0;
    for (; t + 16 <= n; t += 16) {
        __m512 p[16];
        const float *kb = k + t * D;
        for (int j = 0; j < 16; j++) {
            const float *kr = kb + j * D;
            __m512 a = _mm512_mul_ps(qv[0], _mm512_loadu_ps(kr));
            for (int64_t c = 1; c < C; c++) a = _mm512_fmadd_ps(qv[c], _mm512_loadu_ps(kr + 16 * c), a);
            p[j] = a;
        }
        _mm512_storeu_ps(s + t, _mm512_mul_ps(sc, sum16(p)));
    }
    if (t < n) { /* the last keys: zero rows stand in for the missing ones */
        __m512 p[16];
        for (int j = 0; j < 16; j++) {
            p[j] = _mm512_setzero_ps();
            if (t + j >= n) continue;
            const float *kr = k + (t + j) * D;
            for (int64_t c = 0; c < C; c++) p[j] = _mm512_fmadd_ps(qv[c], _mm512_loadu_ps(kr + 16 * c), p[j]);
        }
        _mm512_mask_storeu_ps(s + t, (__mmask16)((1u << (n - t)) - 1), _mm512_mul_ps(sc, sum16(p)));
    }
}

/* y[0..16C) += sum_t p[t] * v[t * ld ..], U rows in flight (independent accumulators). */
#define WEIGHTED(C, U)                                                                   \
    static void weighted_##C(float *y, const float *p, const float *v, int64_t n,       \
                             int64_t ld) {                                               \
        __m512 acc[U][C];                                                                \
        for (int u = 0; u < U; u++)                                                      \
            for (int c = 0; c < C; c++) acc[u][c] = _mm512_setzero_ps();                 \
        int64_t t = 0;                                                                   \
        for (; t + U <= n; t += U)                                                       \
            for (int u = 0; u < U; u++) {                                                \
                __m512 w = _mm512_set1_ps(p[t + u]);                                     \
                const float *r = v + (t + u) * ld;                                       \
                for (int c = 0; c < C; c++)                                              \
                    acc[u][c] = _mm512_fmadd_ps(w, _mm512_loadu_ps(r + 16 * c), acc[u][c]); \
            }                                                                            \
        for (; t < n; t++) {                                                             \
            __m512 w = _mm512_set1_ps(p[t]);                                             \
            const float *r = v + t * ld;                                                 \
            for (int c = 0; c < C; c++)                                                  \
                acc[0][c] = _mm512_fmadd_ps(w, _mm512_loadu_ps(r + 16 * c), acc[0][c]);  \
        }                                                                                \
        for (int c = 0; c < C; c++) {                                                    \
            __m512 a = acc[0][c];                                                        \
            for (int u = 1; u < U; u++) a = _mm512_add_ps(a, acc[u][c]);                 \
            _mm512_storeu_ps(y + 16 * c, _mm512_add_ps(_mm512_loadu_ps(y + 16 * c), a)); \
        }                                                                                \
    }
WEIGHTED(1, 4)
WEIGHTED(2, 4)
WEIGHTED(4, 4)
WEIGHTED(8, 2)
#undef WEIGHTED

void cpu_attn_weighted(float *y, const float *p, const float *v, int64_t n, int64_t D) {
    switch (D) {
    case 16: weighted_1(y, p, v, n, D); return;
    case 32: weighted_2(y, p, v, n, D); return;
    case 64: weighted_4(y, p, v, n, D); return;
    case 128: weighted_8(y, p, v, n, D); return;
    case 256:
        weighted_8(y, p, v, n, D);
        weighted_8(y + 128, p, v + 128, n, D);
        return;
    default:
        cpu_weighted_rows(y, p, v, D, n, D);
    }
}

#else

void cpu_attn_scores(const float *q, const float *k, int64_t n, int64_t D, float scale,
                     float *s) {
    for (int64_t t = 0; t < n; t++) s[t] = scale * cpu_dot(q, k + t * D, D);
}

void cpu_attn_weighted(float *y, const float *p, const float *v, int64_t n, int64_t D) {
    cpu_weighted_rows(y, p, v, D, n, D);
}

#endif
