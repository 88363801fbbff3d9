/* AVX-512 pieces shared by the AVX-512 VNNI and AMX kernels of the packed MatMulNBits
 * (included only by files compiled with AVX-512 enabled). */
#ifndef OG_NATIVE_KERNELS_MATMUL_NBITS_PACK_X512_H
#define OG_NATIVE_KERNELS_MATMUL_NBITS_PACK_X512_H

#include "backends/native/kernels/matmul/matmul_nbits_pack.h"

#include <immintrin.h>

#define MNBP_INLINE static inline __attribute__((always_inline))

/* The panel pair (p, p + 1) as bytes: row r (4 values of K) at u8 + 128 r, panel p's
 * 16 columns x 4 bytes first. */
MNBP_INLINE void mnbp_unpack_pair(const mnb_pack *pk, int64_t p, uint8_t *u8) {
    const int64_t groups = pk->k_blocks * pk->block_size / 8;
    const uint8_t *s0 = pk->B + p * pk->panel_bytes, *s1 = s0 + pk->panel_bytes;
    const __m512i low4 = _mm512_set1_epi8(0x0f);
    for (int64_t g = 0; g < groups; g++) {
        __m512i x0 = _mm512_loadu_si512(s0 + g * 64), x1 = _mm512_loadu_si512(s1 + g * 64);
        uint8_t *d = u8 + g * 256;
        _mm512_storeu_si512(d, _mm512_and_si512(x0, low4));
        _mm512_storeu_si512(d + 64, _mm512_and_si512(x1, low4));
        _mm512_storeu_si512(d + 128, _mm512_and_si512(_mm512_srli_epi16(x0, 4), low4));
        _mm512_storeu_si512(d + 192, _mm512_and_si512(_mm512_srli_epi16(x1, 4), low4));
    }
}

/* The starting value of a (row, panel, block) dot: the row's zero-point term, times the
 * 16 columns' zero points when the model has them. */
MNBP_INLINE __m512i mnbp_zero_init(const mnb_pack *pk, const mnb_qa *qa, int64_t m, int64_t p,
                                   int64_t b) {
    __m512i z = _mm512_set1_epi32(qa->zsum[m * qa->s_stride + b]);
    if (!pk->zp) return z;
    __m128i zb = _mm_loadu_si128((const __m128i *)(pk->zp + (p * pk->k_blocks + b) * MNB_PANEL));
    return _mm512_mullo_epi32(z, _mm512_cvtepu8_epi32(zb));
}

/* acc + dot * (scale_a * scale_b), the header's arithmetic. */
MNBP_INLINE __m512 mnbp_scale_add(const mnb_pack *pk, const mnb_qa *qa, int64_t m, int64_t p,
                                  int64_t b, __m512i dot, __m512 acc) {
    __m512 sb = _mm512_load_ps(pk->scales + (p * pk->k_blocks + b) * MNB_PANEL);
    __m512 s = _mm512_mul_ps(_mm512_set1_ps(qa->scale[m * qa->s_stride + b]), sb);
    return _mm512_fmadd_ps(_mm512_cvtepi32_ps(dot), s, acc);
}

/* Row m of panel p into Y, bias added, columns past N masked off. */
MNBP_INLINE void mnbp_store(const mnb_pack *pk, const mnb_out *o, int64_t m, int64_t p,
                            __m512 acc) {
    int64_t n0 = p * MNB_PANEL, left = pk->N - n0;
    if (left <= 0) return;
    __mmask16 k = left >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << left) - 1);
    if (o->bias) acc = _mm512_add_ps(acc, _mm512_maskz_loadu_ps(k, o->bias + n0));
    _mm512_mask_storeu_ps(o->Y + m * o->ldy + n0, k, acc);
}

#endif
