/* kv_rows_load for quantized rows with AVX2 (see kv_rows.h): eight codes widened to
 * float32 per step, each times the row's scale, the same single product the portable
 * loop computes. */
#include "backends/native/kernels/attention/kv_rows.h"

#include <immintrin.h>
#include <math.h>
#include <string.h>

void kv_rows_load_q_avx2(og_dtype dt, const uint8_t *src, int64_t n, int64_t D, float *dst) {
    size_t row = kv_row_bytes(dt, D);
    const __m256i low7 = _mm256_set1_epi32(0x7f), sign = _mm256_set1_epi32(0x80);
    for (int64_t r = 0; r < n; r++, src += row, dst += D) {
        float s;
        memcpy(&s, src + D, 4);
        int64_t d = 0;
        if (dt == OG_INT8) {
            __m256 vs = _mm256_set1_ps(s);
            for (; d + 8 <= D; d += 8) {
                __m256i c = _mm256_cvtepi8_epi32(_mm_loadl_epi64((const __m128i *)(src + d)));
                _mm256_storeu_ps(dst + d, _mm256_mul_ps(_mm256_cvtepi32_ps(c), vs));
            }
            for (; d < D; d++) dst[d] = (float)(int8_t)src[d] * s;
            continue;
        }
        float su = s * 0x1p120f;
        bool one = isfinite(su);
        __m256 vs = _mm256_set1_ps(one ? su : s), unit = _mm256_set1_ps(0x1p120f);
        for (; d + 8 <= D; d += 8) {
            __m256i c = _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)(src + d)));
            __m256i b = _mm256_or_si256(_mm256_slli_epi32(_mm256_and_si256(c, low7), 20),
                                        _mm256_slli_epi32(_mm256_and_si256(c, sign), 24));
            __m256 f = _mm256_castsi256_ps(b);
            if (!one) f = _mm256_mul_ps(f, unit);
            _mm256_storeu_ps(dst + d, _mm256_mul_ps(f, vs));
        }
        for (; d < D; d++) {
            uint32_t b = (uint32_t)(src[d] & 0x7f) << 20 | (uint32_t)(src[d] & 0x80) << 24;
            float f;
            memcpy(&f, &b, 4);
            dst[d] = one ? f * su : f * 0x1p120f * s;
        }
    }
}
