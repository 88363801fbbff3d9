/* The decode scores of attention_rows.c with AVX2 (machines without AVX-512), picked at
 * run time by cpu_attn_scores / cpu_attn_scores_heads for head sizes that are multiples of
 * 8 up to 256.
 *
 * A key's score is fixed whatever keys or heads share its pass: a product of the first
 * 8 floats, fused multiply-adds over the others in order, then the lanes summed as
 * ((x0 + x1) + (x2 + x3)) + ((x4 + x5) + (x6 + x7)) (three horizontal adds over four keys
 * at once, keys past n being zero vectors), times the scale. Two query heads share each
 * key row's loads. */
#include "backends/native/kernels/attention/attention.h"

#include <immintrin.h>
#include <stdbool.h>

/* The lane sums of four keys' accumulators, key j in lane j. */
static inline __m128 sum4_keys(__m256 a0, __m256 a1, __m256 a2, __m256 a3) {
    __m256 h = _mm256_hadd_ps(_mm256_hadd_ps(a0, a1), _mm256_hadd_ps(a2, a3));
    return _mm_add_ps(_mm256_castps256_ps128(h), _mm256_extractf128_ps(h, 1));
}

static inline __attribute__((always_inline)) void scores_h(const float *q, int64_t q_ld, int H,
                                                          const float *k, int64_t n, int64_t C,
                                                          float scale, float *s, int64_t s_ld) {
    const __m128 sc = _mm_set1_ps(scale);
    const int64_t D = 8 * C;
    for (int64_t t = 0; t < n; t += 4) {
        int64_t m = n - t < 4 ? n - t : 4;
        __m256 a[2][4];
#pragma GCC unroll 4
        for (int j = 0; j < 4; j++) {
#pragma GCC unroll 2
            for (int h = 0; h < H; h++) a[h][j] = _mm256_setzero_ps();
            if (j >= m) continue;
            const float *kr = k + (t + j) * D;
            __m256 k0 = _mm256_loadu_ps(kr);
#pragma GCC unroll 2
            for (int h = 0; h < H; h++) a[h][j] = _mm256_mul_ps(_mm256_loadu_ps(q + h * q_ld), k0);
            for (int64_t c = 1; c < C; c++) {
                __m256 kc = _mm256_loadu_ps(kr + 8 * c);
#pragma GCC unroll 2
                for (int h = 0; h < H; h++)
                    a[h][j] = _mm256_fmadd_ps(_mm256_loadu_ps(q + h * q_ld + 8 * c), kc, a[h][j]);
            }
        }
#pragma GCC unroll 2
        for (int h = 0; h < H; h++) {
            __m128 r = _mm_mul_ps(sc, sum4_keys(a[h][0], a[h][1], a[h][2], a[h][3]));
            if (m == 4) {
                _mm_storeu_ps(s + h * s_ld + t, r);
            } else {
                float tmp[4];
                _mm_storeu_ps(tmp, r);
                for (int64_t j = 0; j < m; j++) s[h * s_ld + t + j] = tmp[j];
            }
        }
    }
}

void cpu_attn_scores_heads_avx2(const float *q, int64_t q_ld, int64_t nh, const float *k,
                                int64_t n, int64_t D, float scale, float *s, int64_t s_ld) {
    int64_t h = 0, C = D / 8;
    for (; h + 2 <= nh; h += 2) scores_h(q + h * q_ld, q_ld, 2, k, n, C, scale, s + h * s_ld, s_ld);
    if (h < nh) scores_h(q + h * q_ld, q_ld, 1, k, n, C, scale, s + h * s_ld, s_ld);
}

/* o[h][0..D) += sum over x < n of w[h][x] * v[x][0..D) for the nh heads of a kv group, on
 * AVX2 (attention_tiles.c's weighted sum on builds without AVX-512; D a multiple of 8 up
 * to 256). A head's sum is fixed whatever heads share its pass: per 8-float column, keys
 * in order into two accumulators by parity (fused multiply-adds), their sum added to o.
 * Taken a block of keys at a time (x0 .. x1 of the run, rows v[x - x0]), the two
 * accumulators of each column wait in am ([H][C][2] vectors) between blocks: the first
 * block starts from zero, the last adds an odd key left and then to o; blocks before the
 * last hold an even number of keys, so the sums are the whole run's, bit for bit. */
static inline __attribute__((always_inline)) void weighted_h(float *am, float *const *o,
                                                            const float *const *w,
                                                            const float *const *v, int64_t x0,
                                                            int64_t x1, bool first, bool last,
                                                            int64_t C, int H) {
    for (int64_t c = 0; c < C; c++) {
        __m256 a[6][2];
#pragma GCC unroll 6
        for (int h = 0; h < H; h++)
            for (int e = 0; e < 2; e++)
                a[h][e] = first ? _mm256_setzero_ps() : _mm256_loadu_ps(am + ((h * C + c) * 2 + e) * 8);
        int64_t x = x0;
        for (; x + 2 <= x1; x += 2) {
            __m256 v0 = _mm256_loadu_ps(v[x - x0] + 8 * c), v1 = _mm256_loadu_ps(v[x + 1 - x0] + 8 * c);
#pragma GCC unroll 6
            for (int h = 0; h < H; h++) {
                a[h][0] = _mm256_fmadd_ps(_mm256_broadcast_ss(w[h] + x), v0, a[h][0]);
                a[h][1] = _mm256_fmadd_ps(_mm256_broadcast_ss(w[h] + x + 1), v1, a[h][1]);
            }
        }
        if (!last) {
#pragma GCC unroll 6
            for (int h = 0; h < H; h++)
                for (int e = 0; e < 2; e++) _mm256_storeu_ps(am + ((h * C + c) * 2 + e) * 8, a[h][e]);
            continue;
        }
        if (x < x1) {
            __m256 v0 = _mm256_loadu_ps(v[x - x0] + 8 * c);
#pragma GCC unroll 6
            for (int h = 0; h < H; h++)
                a[h][0] = _mm256_fmadd_ps(_mm256_broadcast_ss(w[h] + x), v0, a[h][0]);
        }
#pragma GCC unroll 6
        for (int h = 0; h < H; h++)
            _mm256_storeu_ps(o[h] + 8 * c, _mm256_add_ps(_mm256_loadu_ps(o[h] + 8 * c),
                                                         _mm256_add_ps(a[h][0], a[h][1])));
    }
}

#define WEIGHTED(H)                                                                           \
    static void weighted_##H(float *am, float *const *o, const float *const *w,             \
                             const float *const *v, int64_t x0, int64_t x1, bool first,     \
                             bool last, int64_t C) {                                         \
        weighted_h(am, o, w, v, x0, x1, first, last, C, H);                                  \
    }
WEIGHTED(1) WEIGHTED(2) WEIGHTED(3) WEIGHTED(4) WEIGHTED(5) WEIGHTED(6)
#undef WEIGHTED

void cpu_attn_weighted_heads_avx2_block(float *am, float *const *o, const float *const *w,
                                        const float *const *v, int64_t x0, int64_t x1, bool first,
                                        bool last, int64_t D, int64_t nh) {
    static void (*const by_heads[6])(float *, float *const *, const float *const *,
                                     const float *const *, int64_t, int64_t, bool, bool,
                                     int64_t) = {weighted_1, weighted_2, weighted_3,
                                                 weighted_4, weighted_5, weighted_6};
    for (int64_t h = 0; h < nh; h += 6) {
        int64_t k = nh - h < 6 ? nh - h : 6;
        by_heads[k - 1](am ? am + h * 2 * D : NULL, o + h, w + h, v, x0, x1, first, last, D / 8);
    }
}

void cpu_attn_weighted_heads_avx2(float *const *o, const float *const *w, const float *const *v,
                                  int64_t n, int64_t D, int64_t nh) {
    cpu_attn_weighted_heads_avx2_block(NULL, o, w, v, 0, n, true, true, D, nh);
}
