/* gen_argmax for AVX2 (see argmax.h): four accumulators of 8 lanes, then the scalar loop
 * over the last n % 8 elements, continuing from the vector part's answer. */
#include "genai/argmax.h"

#if defined(__x86_64__)
#include <immintrin.h>

static inline void take(__m256 v, __m256i idx, __m256 *best, __m256i *bidx) {
    __m256 gt = _mm256_cmp_ps(v, *best, _CMP_GT_OQ);
    *best = _mm256_blendv_ps(*best, v, gt);
    *bidx = _mm256_castps_si256(
        _mm256_blendv_ps(_mm256_castsi256_ps(*bidx), _mm256_castsi256_ps(idx), gt));
}

/* The candidates' indices where b equals top, INT32_MAX elsewhere, min-merged into c. */
static inline __m256i keep_top(__m256i c, __m256 b, __m256i idx, __m256 top) {
    __m256 eq = _mm256_cmp_ps(b, top, _CMP_EQ_OQ);
    __m256i cand = _mm256_castps_si256(_mm256_blendv_ps(
        _mm256_castsi256_ps(_mm256_set1_epi32(INT32_MAX)), _mm256_castsi256_ps(idx), eq));
    return _mm256_min_epi32(c, cand);
}

int32_t gen_argmax_avx2(const float *x, int n) {
    const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    __m256 b0 = _mm256_set1_ps(x[0]), b1 = b0, b2 = b0, b3 = b0;
    __m256i i0 = _mm256_setzero_si256(), i1 = i0, i2 = i0, i3 = i0;
    int i = 0;
    for (; i + 32 <= n; i += 32) {
        __m256i base = _mm256_add_epi32(_mm256_set1_epi32(i), lane);
        take(_mm256_loadu_ps(x + i), base, &b0, &i0);
        take(_mm256_loadu_ps(x + i + 8), _mm256_add_epi32(base, _mm256_set1_epi32(8)), &b1, &i1);
        take(_mm256_loadu_ps(x + i + 16), _mm256_add_epi32(base, _mm256_set1_epi32(16)), &b2, &i2);
        take(_mm256_loadu_ps(x + i + 24), _mm256_add_epi32(base, _mm256_set1_epi32(24)), &b3, &i3);
    }
    for (; i + 8 <= n; i += 8)
        take(_mm256_loadu_ps(x + i), _mm256_add_epi32(_mm256_set1_epi32(i), lane), &b0, &i0);
    /* No lane holds a NaN (it starts at x[0], never NaN, and takes only larger values), so
     * max_ps is exact here. */
    __m256 m = _mm256_max_ps(_mm256_max_ps(b0, b1), _mm256_max_ps(b2, b3));
    __m128 h = _mm_max_ps(_mm256_castps256_ps128(m), _mm256_extractf128_ps(m, 1));
    h = _mm_max_ps(h, _mm_movehl_ps(h, h));
    h = _mm_max_ss(h, _mm_shuffle_ps(h, h, 1));
    float top_value = _mm_cvtss_f32(h);
    __m256 top = _mm256_set1_ps(top_value);
    __m256i c = _mm256_set1_epi32(INT32_MAX);
    c = keep_top(c, b0, i0, top);
    c = keep_top(c, b1, i1, top);
    c = keep_top(c, b2, i2, top);
    c = keep_top(c, b3, i3, top);
    __m128i q = _mm_min_epi32(_mm256_castsi256_si128(c), _mm256_extracti128_si256(c, 1));
    q = _mm_min_epi32(q, _mm_shuffle_epi32(q, _MM_SHUFFLE(1, 0, 3, 2)));
    q = _mm_min_epi32(q, _mm_shuffle_epi32(q, _MM_SHUFFLE(2, 3, 0, 1)));
    int32_t best = _mm_cvtsi128_si32(q);
    /* the tail: the scalar loop from where the vectors stopped */
    for (; i < n; i++)
        if (x[i] > x[best]) best = i;
    return best;
}
#endif
