/* gen_argmax for AVX-512 (see argmax.h): four accumulators of 16 lanes, so that the
 * compare-and-blend chains of consecutive vectors do not wait for each other, and a
 * masked last vector for the tail. */
#include "genai/argmax.h"

#if defined(__x86_64__)
#include <immintrin.h>

/* Keeps in (*best, *bidx) the lanes of v that are larger than the lane so far, limited
 * to the lanes in `valid`. */
static inline void take(__m512 v, __m512i idx, __mmask16 valid, __m512 *best, __m512i *bidx) {
    __mmask16 gt = _mm512_mask_cmp_ps_mask(valid, v, *best, _CMP_GT_OQ);
    *best = _mm512_mask_mov_ps(*best, gt, v);
    *bidx = _mm512_mask_mov_epi32(*bidx, gt, idx);
}

int32_t gen_argmax_avx512(const float *x, int n) {
    const __m512i lane = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
    /* every lane starts at (x[0], 0): the scalar loop's starting point */
    __m512 b0 = _mm512_set1_ps(x[0]), b1 = b0, b2 = b0, b3 = b0;
    __m512i i0 = _mm512_setzero_si512(), i1 = i0, i2 = i0, i3 = i0;
    int i = 0;
    for (; i + 64 <= n; i += 64) {
        __m512i base = _mm512_add_epi32(_mm512_set1_epi32(i), lane);
        take(_mm512_loadu_ps(x + i), base, 0xffff, &b0, &i0);
        take(_mm512_loadu_ps(x + i + 16), _mm512_add_epi32(base, _mm512_set1_epi32(16)), 0xffff,
             &b1, &i1);
        take(_mm512_loadu_ps(x + i + 32), _mm512_add_epi32(base, _mm512_set1_epi32(32)), 0xffff,
             &b2, &i2);
        take(_mm512_loadu_ps(x + i + 48), _mm512_add_epi32(base, _mm512_set1_epi32(48)), 0xffff,
             &b3, &i3);
    }
    for (; i < n; i += 16) {
        int left = n - i;
        __mmask16 valid = left >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << left) - 1);
        __m512 v = _mm512_maskz_loadu_ps(valid, x + i);
        take(v, _mm512_add_epi32(_mm512_set1_epi32(i), lane), valid, &b0, &i0);
    }
    /* No lane holds a NaN (it starts at x[0], never NaN, and takes only larger values). */
    __m512 m = _mm512_max_ps(_mm512_max_ps(b0, b1), _mm512_max_ps(b2, b3));
    __m512 top = _mm512_set1_ps(_mm512_reduce_max_ps(m));
    const __m512i none = _mm512_set1_epi32(INT32_MAX);
    __m512i c = _mm512_mask_mov_epi32(none, _mm512_cmp_ps_mask(b0, top, _CMP_EQ_OQ), i0);
    c = _mm512_min_epi32(c, _mm512_mask_mov_epi32(none, _mm512_cmp_ps_mask(b1, top, _CMP_EQ_OQ), i1));
    c = _mm512_min_epi32(c, _mm512_mask_mov_epi32(none, _mm512_cmp_ps_mask(b2, top, _CMP_EQ_OQ), i2));
    c = _mm512_min_epi32(c, _mm512_mask_mov_epi32(none, _mm512_cmp_ps_mask(b3, top, _CMP_EQ_OQ), i3));
    return _mm512_reduce_min_epi32(c);
}
#endif
