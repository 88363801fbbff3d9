/* Reading key/value cache rows straight into vector registers, 16 values a step: the
 * keys a prompt's task lays across the lanes (cpu_attn_keys_t_q) and the L1 blocks of a
 * decode step (attention_tiles.c) are dequantized this way, with no float copy of the
 * cache's rows.
 *
 * A lane's value is the single product kv_rows_load and kv_fixed_load compute (the code's
 * exact float times its scale; a float8 row whose scale times 2^120 overflows, in two
 * steps), so a kernel reading rows this way gets the bits it gets over the loaded float32
 * rows, and a cache is read the same way whichever path reads it.
 *
 * Formats: float32 rows; kv_format.h's int8 and float8e4m3fn rows (D codes, then the
 * row's float32 scale); and kv_fixed.h's codes with the node's scales (int8, or int4 two
 * a byte, the even element in the low nibble), whose D channel scales of the kv head the
 * caller passes (a per-tensor scale repeated D times). Head sizes a multiple of 16. */
#ifndef OG_NATIVE_KERNELS_ATTENTION_KV_LANES_H
#define OG_NATIVE_KERNELS_ATTENTION_KV_LANES_H

#include <math.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

typedef enum kvl_fmt { KVL_F32, KVL_I8, KVL_F8, KVL_FIX8, KVL_FIX4 } kvl_fmt;

/* A cache's rows as the register paths read them. */
typedef struct kvl_src {
    kvl_fmt fmt;
    int64_t D;
    size_t row_bytes;
    const float *ch; /* KVL_FIX8 / KVL_FIX4: the kv head's D channel scales */
} kvl_src;

#if defined(__AVX512F__)
#include <immintrin.h>

/* A row's multipliers: value = (code's float * a) * b, b exactly 1 but for float8 rows
 * whose scale is above 2^8 (kv_rows.c's two-step product). */
typedef struct kvl_row {
    __m512 a, b;
} kvl_row;

static inline __attribute__((always_inline)) kvl_row kvl_row_of(kvl_fmt fmt, const char *r,
                                                                 int64_t D) {
    kvl_row s = {_mm512_setzero_ps(), _mm512_setzero_ps()};
    if (fmt == KVL_I8 || fmt == KVL_F8) {
        float sc;
        memcpy(&sc, r + D, 4);
        if (fmt == KVL_I8) {
            s.a = _mm512_set1_ps(sc);
        } else {
            float su = sc * 0x1p120f;
            bool one = isfinite(su);
            s.a = _mm512_set1_ps(one ? su : 0x1p120f);
            s.b = _mm512_set1_ps(one ? 1.0f : sc);
        }
    }
    return s;
}

/* Values 16c .. 16c + 15 of row r. */
static inline __attribute__((always_inline)) __m512 kvl_load(kvl_fmt fmt, const char *r,
                                                             kvl_row s, const float *ch,
                                                             int64_t c) {
    switch (fmt) {
    case KVL_I8:
        return _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(
                                 _mm_loadu_si128((const __m128i *)(r + 16 * c)))),
                             s.a);
    case KVL_F8: { /* s eeee mmm into a float32 whose value is the code's * 2^-120: the
                    * code sign-extended and shifted up by 20 puts eeee mmm at bits 20-26
                    * and copies of s from bit 27 up, of which bit 31 is kept */
        __m512i x = _mm512_cvtepi8_epi32(_mm_loadu_si128((const __m128i *)(r + 16 * c)));
        __m512i b = _mm512_and_si512(_mm512_slli_epi32(x, 20), _mm512_set1_epi32((int)0x87f00000u));
        return _mm512_mul_ps(_mm512_mul_ps(_mm512_castsi512_ps(b), s.a), s.b);
    }
    case KVL_FIX8:
        return _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(
                                 _mm_loadu_si128((const __m128i *)(r + 16 * c)))),
                             _mm512_loadu_ps(ch + 16 * c));
    case KVL_FIX4: { /* 8 bytes: element 2i the low nibble of byte i, 2i + 1 the high */
        __m128i w = _mm_cvtepu8_epi16(_mm_loadl_epi64((const __m128i *)(r + 8 * c)));
        __m128i lo = _mm_and_si128(w, _mm_set1_epi16(15)), hi = _mm_srli_epi16(w, 4);
        __m256i e = _mm256_inserti128_si256(_mm256_castsi128_si256(_mm_unpacklo_epi16(lo, hi)),
                                            _mm_unpackhi_epi16(lo, hi), 1);
        __m512i x = _mm512_sub_epi32(_mm512_cvtepu16_epi32(e), _mm512_set1_epi32(8));
        return _mm512_mul_ps(_mm512_cvtepi32_ps(x), _mm512_loadu_ps(ch + 16 * c));
    }
    default:
        return _mm512_loadu_ps((const float *)r + 16 * c);
    }
}
#endif

#endif
