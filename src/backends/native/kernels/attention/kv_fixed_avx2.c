/* kv_fixed_load with AVX2 (see kv_fixed.h): the codes of a row widened to float32 eight at
 * a time, each times its scale, the one product the portable loop computes, so the same
 * bits. int4: sixteen codes from eight bytes, the low nibbles and the high ones
 * interleaved back into element order. */
#include "backends/native/kernels/attention/kv_fixed.h"

#include <immintrin.h>

/* Eight codes c (int32) times the scales of elements d..d+7. */
static inline __attribute__((always_inline)) void put8(float *dst, __m256i c, const float *s,
                                                       bool pc, __m256 s0) {
    __m256 v = _mm256_cvtepi32_ps(c);
    _mm256_storeu_ps(dst, _mm256_mul_ps(v, pc ? _mm256_loadu_ps(s) : s0));
}

/* n rows of 8- or 4-bit codes, per channel or not (constants where it is inlined). */
static inline __attribute__((always_inline)) void load_rows(int bits, bool pc, const float *s,
                                                            const uint8_t *p, size_t row,
                                                            int64_t n, int64_t D, float *dst) {
    __m256 s0 = _mm256_set1_ps(s[0]);
    const __m256i eight = _mm256_set1_epi32(8);
    const __m128i nib = _mm_set1_epi8(15);
    for (int64_t r = 0; r < n; r++, p += row, dst += D) {
        int64_t d = 0;
        if (bits == 8) {
            for (; d + 8 <= D; d += 8)
                put8(dst + d, _mm256_cvtepi8_epi32(_mm_loadl_epi64((const __m128i *)(p + d))),
                     s + d, pc, s0);
            for (; d < D; d++) dst[d] = (float)(int8_t)p[d] * s[pc ? d : 0];
            continue;
        }
        for (; d + 16 <= D; d += 16) {
            __m128i b = _mm_loadl_epi64((const __m128i *)(p + d / 2));
            __m128i lo = _mm_and_si128(b, nib), hi = _mm_and_si128(_mm_srli_epi16(b, 4), nib);
            __m128i c = _mm_unpacklo_epi8(lo, hi); /* the 16 nibbles in element order */
            put8(dst + d, _mm256_sub_epi32(_mm256_cvtepu8_epi32(c), eight), s + d, pc, s0);
            put8(dst + d + 8, _mm256_sub_epi32(_mm256_cvtepu8_epi32(_mm_srli_si128(c, 8)), eight),
                 s + d + 8, pc, s0);
        }
        for (; d < D; d++)
            dst[d] = (float)((p[d / 2] >> (d % 2 * 4) & 15) - 8) * s[pc ? d : 0];
    }
}

void kv_fixed_load_avx2(const kv_fixed *f, const float *s, const void *src, int64_t n,
                        int64_t D, float *dst) {
    size_t row = kv_fixed_row_bytes(f, D);
    if (f->bits == 8) {
        if (f->per_channel) load_rows(8, true, s, src, row, n, D, dst);
        else load_rows(8, false, s, src, row, n, D, dst);
    } else {
        if (f->per_channel) load_rows(4, true, s, src, row, n, D, dst);
        else load_rows(4, false, s, src, row, n, D, dst);
    }
}
