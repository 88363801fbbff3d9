/* The two inner loops of decode attention over a contiguous run of cached rows (see
 * attention.h): one query's scores against n keys, and the probability-weighted sum of
 * n value rows. With AVX-512 and a head size that is a multiple of 16, a key or value
 * row is whole vectors: the scores of 16 keys are formed as 16 vectors of lane products
 * and summed into one vector of 16 scores by a transposing reduction (about 3 operations
 * a key, instead of a horizontal sum each); the value rows accumulate into registers
 * that hold the whole output row, several rows in flight. Head sizes that are a multiple
 * of 8 (8, 24, 40, 80, ...) do the same with 8-float vectors, 8 keys at a time. Other
 * head sizes and builds use the portable loops of attention.h. */
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

/* The sums of 8 vectors: lane i of the result is the sum of the lanes of v[i]. */
static inline __m256 sum8(const __m256 *v) {
    __m256 x[2];
    for (int g = 0; g < 2; g++) {
        const __m256 *a = v + 4 * g;
        __m256 s01 = _mm256_add_ps(_mm256_unpacklo_ps(a[0], a[1]), _mm256_unpackhi_ps(a[0], a[1]));
        __m256 s23 = _mm256_add_ps(_mm256_unpacklo_ps(a[2], a[3]), _mm256_unpackhi_ps(a[2], a[3]));
        x[g] = _mm256_add_ps(_mm256_shuffle_ps(s01, s23, _MM_SHUFFLE(1, 0, 1, 0)),
                             _mm256_shuffle_ps(s01, s23, _MM_SHUFFLE(3, 2, 3, 2)));
    }
    /* x[g]'s 128-bit half h holds half h's partial sums of v[4g..4g+3] */
    return _mm256_add_ps(_mm256_permute2f128_ps(x[0], x[1], 0x20),
                         _mm256_permute2f128_ps(x[0], x[1], 0x31));
}

/* D = 8: a key is one vector. */
static void scores8_1(const float *q, const float *k, int64_t n, float scale, float *s) {
    const __m256 qv = _mm256_loadu_ps(q), sc = _mm256_set1_ps(scale);
    int64_t t = 0;
    for (; t + 8 <= n; t += 8) {
        __m256 p[8];
        for (int j = 0; j < 8; j++) p[j] = _mm256_mul_ps(qv, _mm256_loadu_ps(k + 8 * (t + j)));
        _mm256_storeu_ps(s + t, _mm256_mul_ps(sc, sum8(p)));
    }
    if (t < n) {
        __m256 p[8];
        for (int j = 0; j < 8; j++)
            p[j] = t + j < n ? _mm256_mul_ps(qv, _mm256_loadu_ps(k + 8 * (t + j))) : _mm256_setzero_ps();
        float b[8];
        _mm256_storeu_ps(b, _mm256_mul_ps(sc, sum8(p)));
        for (int64_t j = 0; j < n - t; j++) s[t + j] = b[j];
    }
}

static void scores8(const float *q, const float *k, int64_t n, int64_t D, float scale,
                    float *s) {
    if (D == 8) {
        scores8_1(q, k, n, scale, s);
        return;
    }
    const int64_t C = D / 8;
    __m256 qv[32];
    for (int64_t c = 0; c < C; c++) qv[c] = _mm256_loadu_ps(q + 8 * c);
    const __m256 sc = _mm256_set1_ps(scale);
    for (int64_t t = 0; t < n; t += 8) {
        __m256 p[8];
        for (int j = 0; j < 8; j++) {
            p[j] = _mm256_setzero_ps();
            if (t + j >= n) continue; /* zero rows stand in for the missing keys */
            const float *kr = k + (t + j) * D;
            for (int64_t c = 0; c < C; c++) p[j] = _mm256_fmadd_ps(qv[c], _mm256_loadu_ps(kr + 8 * c), p[j]);
        }
        __m256 r = _mm256_mul_ps(sc, sum8(p));
        if (t + 8 <= n) {
            _mm256_storeu_ps(s + t, r);
        } else {
            float b[8];
            _mm256_storeu_ps(b, r);
            for (int64_t j = 0; j < n - t; j++) s[t + j] = b[j];
        }
    }
}

void cpu_attn_scores(const float *q, const float *k, int64_t n, int64_t D, float scale,
                     float *s) {
    if (D % 8 || D > 256) {
        for (int64_t t = 0; t < n; t++) s[t] = scale * cpu_dot(q, k + t * D, D);
        return;
    }
    if (D % 16) {
        scores8(q, k, n, D, scale, s);
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

/* D = 8: one vector a row, four rows in flight in registers. */
static void weighted8_1(float *y, const float *p, const float *v, int64_t n) {
    __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
    int64_t t = 0;
    for (; t + 4 <= n; t += 4) {
        a0 = _mm256_fmadd_ps(_mm256_set1_ps(p[t]), _mm256_loadu_ps(v + 8 * t), a0);
        a1 = _mm256_fmadd_ps(_mm256_set1_ps(p[t + 1]), _mm256_loadu_ps(v + 8 * t + 8), a1);
        a2 = _mm256_fmadd_ps(_mm256_set1_ps(p[t + 2]), _mm256_loadu_ps(v + 8 * t + 16), a2);
        a3 = _mm256_fmadd_ps(_mm256_set1_ps(p[t + 3]), _mm256_loadu_ps(v + 8 * t + 24), a3);
    }
    for (; t < n; t++) a0 = _mm256_fmadd_ps(_mm256_set1_ps(p[t]), _mm256_loadu_ps(v + 8 * t), a0);
    __m256 s = _mm256_add_ps(_mm256_add_ps(a0, a1), _mm256_add_ps(a2, a3));
    _mm256_storeu_ps(y, _mm256_add_ps(_mm256_loadu_ps(y), s));
}

/* y[0..D) += sum_t p[t] * v[t * D ..] for D a multiple of 8 (at most 256), in 8-float
 * vectors, two rows in flight. */
static void weighted8(float *y, const float *p, const float *v, int64_t n, int64_t D) {
    const int64_t C = D / 8;
    __m256 a0[32], a1[32];
    for (int64_t c = 0; c < C; c++) a0[c] = a1[c] = _mm256_setzero_ps();
    int64_t t = 0;
    for (; t + 2 <= n; t += 2) {
        __m256 w0 = _mm256_set1_ps(p[t]), w1 = _mm256_set1_ps(p[t + 1]);
        const float *r0 = v + t * D, *r1 = r0 + D;
        for (int64_t c = 0; c < C; c++) {
            a0[c] = _mm256_fmadd_ps(w0, _mm256_loadu_ps(r0 + 8 * c), a0[c]);
            a1[c] = _mm256_fmadd_ps(w1, _mm256_loadu_ps(r1 + 8 * c), a1[c]);
        }
    }
    if (t < n) {
        __m256 w0 = _mm256_set1_ps(p[t]);
        for (int64_t c = 0; c < C; c++)
            a0[c] = _mm256_fmadd_ps(w0, _mm256_loadu_ps(v + t * D + 8 * c), a0[c]);
    }
    for (int64_t c = 0; c < C; c++)
        _mm256_storeu_ps(y + 8 * c, _mm256_add_ps(_mm256_loadu_ps(y + 8 * c), _mm256_add_ps(a0[c], a1[c])));
}

void cpu_attn_weighted(float *y, const float *p, const float *v, int64_t n, int64_t D) {
    if (D == 8) {
        weighted8_1(y, p, v, n);
        return;
    }
    if (D % 16 && D % 8 == 0 && D <= 256) {
        weighted8(y, p, v, n, D);
        return;
    }
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
