/* Packed MatMulNBits kernels for AVX2 (this file is compiled with AVX2/FMA flags and
 * without AVX-512, and only called when the CPU has AVX2; see base/isa.h).
 *
 * Without vpdpbusd, a dot of 4 bytes per int32 lane takes vpmaddubsw (unsigned weight
 * bytes times signed A bytes, adjacent pairs summed to int16: at most 2 * 15 * 127, so
 * it never saturates) and vpmaddwd with ones (pairs of int16 summed to int32): exact
 * integers like the other kernels. A panel's 16 columns are two 8-lane halves. */
#if defined(__x86_64__)
#include "backends/native/kernels/matmul/matmul_nbits_pack.h"

#include <immintrin.h>
#include <string.h>

#define INLINE static inline __attribute__((always_inline))

static inline __m256i bcast4(const int8_t *p) {
    int32_t v;
    memcpy(&v, p, 4);
    return _mm256_set1_epi32(v);
}

INLINE __m256i dot4(__m256i acc, __m256i w, __m256i a, __m256i ones) {
    return _mm256_add_epi32(acc, _mm256_madd_epi16(_mm256_maddubs_epi16(w, a), ones));
}

/* Zero-point start of the dot for 8 columns (half h of panel p). */
INLINE __m256i zero_init(const mnb_pack *pk, const mnb_qa *qa, int64_t m, int64_t p, int64_t b,
                         int h) {
    __m256i z = _mm256_set1_epi32(qa->zsum[m * qa->s_stride + b]);
    if (!pk->zp) return z;
    __m128i zb = _mm_loadl_epi64((const __m128i *)(pk->zp + (p * pk->k_blocks + b) * MNB_PANEL + 8 * h));
    return _mm256_mullo_epi32(z, _mm256_cvtepu8_epi32(zb));
}

INLINE __m256 scale_add(const mnb_pack *pk, const mnb_qa *qa, int64_t m, int64_t p, int64_t b,
                        int h, __m256i dot, __m256 acc) {
    __m256 sb = _mm256_loadu_ps(pk->scales + (p * pk->k_blocks + b) * MNB_PANEL + 8 * h);
    __m256 s = _mm256_mul_ps(_mm256_set1_ps(qa->scale[m * qa->s_stride + b]), sb);
    return _mm256_fmadd_ps(_mm256_cvtepi32_ps(dot), s, acc);
}

INLINE void store_panel(const mnb_pack *pk, const mnb_out *o, int64_t m, int64_t p, __m256 lo,
                        __m256 hi) {
    float acc[16];
    _mm256_storeu_ps(acc, lo);
    _mm256_storeu_ps(acc + 8, hi);
    mnb_pack_store(pk, o, m, p, acc);
}

/* One row against one panel, nibbles masked as they stream. */
static void row_panel(const mnb_pack *pk, const mnb_qa *qa, int64_t m, int64_t p,
                      const mnb_out *o) {
    const int64_t bs = pk->block_size, kb = pk->k_blocks, gpb = bs / 8;
    const __m256i low4 = _mm256_set1_epi8(0x0f), ones = _mm256_set1_epi16(1);
    const uint8_t *src = pk->B + p * pk->panel_bytes;
    const int8_t *q = qa->q + m * qa->q_stride;
    __m256 acc0 = _mm256_setzero_ps(), acc1 = acc0;
    for (int64_t b = 0; b < kb; b++) {
        __m256i d0 = zero_init(pk, qa, m, p, b, 0), d1 = zero_init(pk, qa, m, p, b, 1);
        for (int64_t g = 0; g < gpb; g++) {
            const uint8_t *x = src + (b * gpb + g) * 64;
            __m256i alo = bcast4(q + b * bs + 8 * g), ahi = bcast4(q + b * bs + 8 * g + 4);
            __m256i v0 = _mm256_loadu_si256((const __m256i *)x);
            __m256i v1 = _mm256_loadu_si256((const __m256i *)(x + 32));
            d0 = dot4(d0, _mm256_and_si256(v0, low4), alo, ones);
            d0 = dot4(d0, _mm256_and_si256(_mm256_srli_epi16(v0, 4), low4), ahi, ones);
            d1 = dot4(d1, _mm256_and_si256(v1, low4), alo, ones);
            d1 = dot4(d1, _mm256_and_si256(_mm256_srli_epi16(v1, 4), low4), ahi, ones);
        }
        acc0 = scale_add(pk, qa, m, p, b, 0, d0, acc0);
        acc1 = scale_add(pk, qa, m, p, b, 1, d1, acc1);
    }
    store_panel(pk, o, m, p, acc0, acc1);
}

void mnb_pack_rows_avx2(const mnb_pack *pk, const mnb_qa *qa, int64_t m0, int mr,
                        int64_t p0, int64_t p1, const mnb_out *o) {
    for (int64_t p = p0; p < p1; p++)
        for (int r = 0; r < mr; r++) row_panel(pk, qa, m0 + r, p, o);
}

/* mr (1 or 2) rows against panel p + j of the unpacked pair. */
INLINE void tile_rows(const mnb_pack *pk, const mnb_qa *qa, int64_t m0, const int mr, int64_t p,
                      int j, const uint8_t *u8, const mnb_out *o) {
    const int64_t bs = pk->block_size, kb = pk->k_blocks, qs = qa->q_stride;
    const __m256i ones = _mm256_set1_epi16(1);
    __m256 acc[2][2];
    for (int r = 0; r < mr; r++) acc[r][0] = acc[r][1] = _mm256_setzero_ps();
    for (int64_t b = 0; b < kb; b++) {
        __m256i d[2][2];
        for (int r = 0; r < mr; r++) {
            d[r][0] = zero_init(pk, qa, m0 + r, p + j, b, 0);
            d[r][1] = zero_init(pk, qa, m0 + r, p + j, b, 1);
        }
        const uint8_t *w = u8 + b * bs / 4 * 128 + j * 64;
        const int8_t *q = qa->q + m0 * qs + b * bs;
        for (int64_t i = 0; i < bs / 4; i++) {
            __m256i w0 = _mm256_loadu_si256((const __m256i *)(w + i * 128));
            __m256i w1 = _mm256_loadu_si256((const __m256i *)(w + i * 128 + 32));
            for (int r = 0; r < mr; r++) {
                __m256i a = bcast4(q + r * qs + 4 * i);
                d[r][0] = dot4(d[r][0], w0, a, ones);
                d[r][1] = dot4(d[r][1], w1, a, ones);
            }
        }
        for (int r = 0; r < mr; r++) {
            acc[r][0] = scale_add(pk, qa, m0 + r, p + j, b, 0, d[r][0], acc[r][0]);
            acc[r][1] = scale_add(pk, qa, m0 + r, p + j, b, 1, d[r][1], acc[r][1]);
        }
    }
    for (int r = 0; r < mr; r++) store_panel(pk, o, m0 + r, p + j, acc[r][0], acc[r][1]);
}

void mnb_pack_tile_avx2(const mnb_pack *pk, const mnb_qa *qa, int64_t m0, int64_t m1,
                        int64_t p, uint8_t *u8, const mnb_out *o) {
    const int64_t groups = pk->k_blocks * pk->block_size / 8;
    const __m256i low4 = _mm256_set1_epi8(0x0f);
    for (int64_t g = 0; g < groups; g++)
        for (int j = 0; j < 2; j++)
            for (int h = 0; h < 2; h++) {
                __m256i x = _mm256_loadu_si256(
                    (const __m256i *)(pk->B + (p + j) * pk->panel_bytes + g * 64 + h * 32));
                uint8_t *d = u8 + g * 256 + j * 64 + h * 32;
                _mm256_storeu_si256((__m256i *)d, _mm256_and_si256(x, low4));
                _mm256_storeu_si256((__m256i *)(d + 128),
                                    _mm256_and_si256(_mm256_srli_epi16(x, 4), low4));
            }
    for (int j = 0; j < 2; j++) {
        int64_t m = m0;
        for (; m + 2 <= m1; m += 2) tile_rows(pk, qa, m, 2, p, j, u8, o);
        if (m < m1) tile_rows(pk, qa, m, 1, p, j, u8, o);
    }
}

#endif
