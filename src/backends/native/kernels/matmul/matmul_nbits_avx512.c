/* MatMulNBits column kernels for AVX-512 with VNNI (this file is compiled with those
 * flags and only called when the CPU has them; see base/isa.h).
 *
 * int8 arithmetic streams each column's bytes in 64-byte chunks: vpdpbusd multiplies
 * the unsigned weights (0..15 nibbles, or 0..255 bytes) with the signed quantized A and
 * sums groups of four into 16 int32 lanes; every lane lies inside one block (blocks
 * are >= 16 values, lanes cover 4 or 8), so it is scaled by its block's
 * scale_a * scale_b through a lane->block permute. The zero points come out of the
 * dot product as sum_b scale_b * zp_b * (scale_a * sum q_a)_b, one vector pass over
 * the blocks at the end.
 *
 * For 4 bits a chunk holds 128 values: the low nibbles of its 64 bytes are the even
 * positions and the high nibbles the odd ones, so A is prepared with each 128-value
 * chunk's even elements first (mnb_a_pos). Float arithmetic uses 16-byte groups: the
 * bytes widen to 32-bit lanes and a 16-entry table lookup (vpermps reads the low 4
 * bits of each index) turns a nibble straight into a float, (q - 8) for the default
 * zero point. */
#include "backends/native/kernels/matmul/matmul_nbits.h"

#if defined(__x86_64__)
#include <immintrin.h>

#define INLINE static inline __attribute__((always_inline))
#define MNB_TILE_NC 2


static inline __mmask16 mask16(int64_t count) {
    return count >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << count) - 1);
}

/* 16 zero points of column n from block fb on (count of them valid). */
INLINE __m512 zero_points16(const mnb_problem *p, int64_t n, int64_t fb, int64_t count) {
    if (p->zp_float) return _mm512_maskz_loadu_ps(mask16(count), p->zp_float + n * p->k_blocks + fb);
    if (!p->zp_packed) return _mm512_set1_ps((float)(1 << (p->bits - 1)));
    float z[16] = {0};
    for (int64_t i = 0; i < count && i < 16; i++) z[i] = mnb_zero_point(p, n, fb + i);
    return _mm512_loadu_ps(z);
}

/* sum over blocks of scale_b * zp_b * a_corr_b for each of mr rows. */
INLINE void zero_point_terms(const mnb_job *j, int64_t m0, const int mr, int64_t n,
                             float *out) {
    const mnb_problem *p = j->p;
    const float *sc = p->scales + n * p->k_blocks;
    __m512 acc[4];
    for (int r = 0; r < mr; r++) acc[r] = _mm512_setzero_ps();
    for (int64_t b = 0; b < p->k_blocks; b += 16) {
        int64_t cnt = p->k_blocks - b;
        __m512 sz = _mm512_mul_ps(_mm512_maskz_loadu_ps(mask16(cnt), sc + b),
                                  zero_points16(p, n, b, cnt));
        for (int r = 0; r < mr; r++)
            acc[r] = _mm512_fmadd_ps(sz, _mm512_loadu_ps(j->a_corr + (m0 + r) * j->s_stride + b),
                                     acc[r]);
    }
    for (int r = 0; r < mr; r++) out[r] = _mm512_reduce_add_ps(acc[r]);
}

/* Sums of four vectors, as one 4-float vector. */
INLINE __m128 reduce4(__m512 a0, __m512 a1, __m512 a2, __m512 a3) {
    __m512 s01 = _mm512_add_ps(_mm512_unpacklo_ps(a0, a1), _mm512_unpackhi_ps(a0, a1));
    __m512 s23 = _mm512_add_ps(_mm512_unpacklo_ps(a2, a3), _mm512_unpackhi_ps(a2, a3));
    __m512 z = _mm512_add_ps(_mm512_shuffle_ps(s01, s23, _MM_SHUFFLE(1, 0, 1, 0)),
                             _mm512_shuffle_ps(s01, s23, _MM_SHUFFLE(3, 2, 3, 2)));
    __m256 h = _mm256_add_ps(_mm512_castps512_ps256(z),
                             _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(z), 1)));
    return _mm_add_ps(_mm256_castps256_ps128(h), _mm256_extractf128_ps(h, 1));
}

/* The sum of one vector by reduce4's tree: every kernel reduces an output element this
 * way, so that a row of Y has the same bits whichever kernel (one row against four
 * columns, row tiles, single columns) computed it: the result of a token never depends
 * on how many rows ran with it. */
INLINE float hsum(__m512 v) {
    __m512 z = _mm512_setzero_ps();
    return _mm_cvtss_f32(reduce4(v, z, z, z));
}

/* Lane l of a chunk starting at block fb belongs to block fb + idx[l]. */
static __m512i lane_blocks(int64_t values_per_lane, int64_t block_size) {
    int32_t v[16];
    for (int l = 0; l < 16; l++) v[l] = (int32_t)(l * values_per_lane / block_size);
    return _mm512_loadu_si512(v);
}

INLINE void int8_column(const mnb_job *j, int64_t m0, const int mr, int64_t n, __m512i idx) {
    const mnb_problem *p = j->p;
    const int four = p->bits == 4;
    const int64_t per_chunk = four ? 128 : 64, bs = p->block_size;
    const uint8_t *col = p->B + n * p->k_blocks * p->blob;
    const float *sc = p->scales + n * p->k_blocks;
    const int64_t bytes = p->k_blocks * p->blob;
    const __m512i low4 = _mm512_set1_epi8(0x0f);
    const bool default_zp = !p->zp_packed;
    const int64_t lanes = j->a_stride / j->lane_values;
    __m512 acc[4];
    for (int r = 0; r < mr; r++) acc[r] = _mm512_setzero_ps();
    for (int64_t c = 0; c * 64 < bytes; c++) {
        int64_t left = bytes - c * 64;
        __m512i x = left >= 64 ? _mm512_loadu_si512(col + c * 64)
                               : _mm512_maskz_loadu_epi8((1ull << left) - 1, col + c * 64);
        int64_t fb = c * per_chunk / bs;
        __m512 sb = _mm512_maskz_loadu_ps(mask16(p->k_blocks - fb), sc + fb);
        __m512i lo = x, hi = x;
        if (four) {
            lo = _mm512_and_si512(x, low4);
            hi = _mm512_and_si512(_mm512_srli_epi16(x, 4), low4);
        }
        for (int r = 0; r < mr; r++) {
            const int8_t *a = j->aq + (m0 + r) * j->a_stride + c * per_chunk;
            __m512i d0 = default_zp ? _mm512_loadu_si512(j->a_lane + (m0 + r) * lanes + c * 16)
                                    : _mm512_setzero_si512();
            __m512i d = _mm512_dpbusd_epi32(d0, lo, _mm512_loadu_si512(a));
            if (four) d = _mm512_dpbusd_epi32(d, hi, _mm512_loadu_si512(a + 64));
            __m512 s = _mm512_mul_ps(sb, _mm512_loadu_ps(j->a_scale + (m0 + r) * j->s_stride + fb));
            acc[r] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(d), _mm512_permutexvar_ps(idx, s), acc[r]);
        }
    }
    float zt[4] = {0};
    if (!default_zp) zero_point_terms(j, m0, mr, n, zt);
    float bias = p->bias ? p->bias[n] : 0.0f;
    for (int r = 0; r < mr; r++)
        p->Y[(m0 + r) * p->N + n] = hsum(acc[r]) - zt[r] + bias;
}

INLINE void float4_column(const mnb_job *j, int64_t m0, const int mr, int64_t n) {
    const mnb_problem *p = j->p;
    const bool has_zp = p->zp_float || p->zp_packed;
    const int64_t bs = p->block_size;
    const uint8_t *col = p->B + n * p->k_blocks * p->blob;
    const float *sc = p->scales + n * p->k_blocks;
    const int64_t bytes = p->k_blocks * p->blob;
    const __m512 lut = _mm512_sub_ps(
        _mm512_setr_ps(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
        _mm512_set1_ps(has_zp ? 0.0f : 8.0f));
    __m512 acc[4];
    for (int r = 0; r < mr; r++) acc[r] = _mm512_setzero_ps();
    for (int64_t g = 0; g * 16 < bytes; g++) {
        int64_t left = bytes - g * 16;
        __m128i x8 = left >= 16 ? _mm_loadu_si128((const __m128i *)(col + g * 16))
                                : _mm_maskz_loadu_epi8((__mmask16)((1u << left) - 1), col + g * 16);
        __m512i x = _mm512_cvtepu8_epi32(x8);
        __m512 wl = _mm512_permutexvar_ps(x, lut);
        __m512 wh = _mm512_permutexvar_ps(_mm512_srli_epi32(x, 4), lut);
        __m512 s;
        if (bs >= 32) {
            s = _mm512_set1_ps(sc[g * 32 / bs]);
        } else { /* 16: lanes 0-7 are one block, 8-15 the next */
            int64_t b = 2 * g;
            s = _mm512_mask_blend_ps(0xff00, _mm512_set1_ps(sc[b]),
                                     _mm512_set1_ps(b + 1 < p->k_blocks ? sc[b + 1] : 0.0f));
        }
        for (int r = 0; r < mr; r++) {
            const float *a = j->af + (m0 + r) * j->a_stride + g * 32;
            __m512 d = _mm512_mul_ps(wl, _mm512_loadu_ps(a));
            d = _mm512_fmadd_ps(wh, _mm512_loadu_ps(a + 16), d);
            acc[r] = _mm512_fmadd_ps(d, s, acc[r]);
        }
    }
    float zt[4] = {0};
    if (has_zp) zero_point_terms(j, m0, mr, n, zt);
    float bias = p->bias ? p->bias[n] : 0.0f;
    for (int r = 0; r < mr; r++)
        p->Y[(m0 + r) * p->N + n] = hsum(acc[r]) - zt[r] + bias;
}

/* 8 bits in float arithmetic: (q - zero point) is exact in float, so it is taken per
 * weight (subtracting zp * sum(a) at the end instead cancels badly for zp near 128). */
INLINE void float8_column(const mnb_job *j, int64_t m0, const int mr, int64_t n) {
    const mnb_problem *p = j->p;
    const int64_t bs = p->block_size;
    const uint8_t *col = p->B + n * p->k_blocks * p->blob;
    const float *sc = p->scales + n * p->k_blocks;
    __m512 acc[4];
    for (int r = 0; r < mr; r++) acc[r] = _mm512_setzero_ps();
    for (int64_t b = 0; b < p->k_blocks; b++) {
        __m512 d[4];
        __m512 z = _mm512_set1_ps(mnb_zero_point(p, n, b));
        for (int r = 0; r < mr; r++) d[r] = _mm512_setzero_ps();
        for (int64_t g = 0; g < bs; g += 16) {
            __m512 w = _mm512_sub_ps(_mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(
                                         _mm_loadu_si128((const __m128i *)(col + b * bs + g)))), z);
            for (int r = 0; r < mr; r++)
                d[r] = _mm512_fmadd_ps(w, _mm512_loadu_ps(j->af + (m0 + r) * j->a_stride + b * bs + g),
                                       d[r]);
        }
        __m512 s = _mm512_set1_ps(sc[b]);
        for (int r = 0; r < mr; r++) acc[r] = _mm512_fmadd_ps(d[r], s, acc[r]);
    }
    float bias = p->bias ? p->bias[n] : 0.0f;
    for (int r = 0; r < mr; r++) p->Y[(m0 + r) * p->N + n] = hsum(acc[r]) + bias;
}

INLINE void store4(const mnb_job *j, int64_t m, int64_t n, __m128 sums, bool zero_points) {
    const mnb_problem *p = j->p;
    float out[4];
    _mm_storeu_ps(out, sums);
    for (int i = 0; i < 4; i++) {
        float zt = 0.0f;
        if (zero_points) zero_point_terms(j, m, 1, n + i, &zt);
        p->Y[m * p->N + n + i] = out[i] - zt + (p->bias ? p->bias[n + i] : 0.0f);
    }
}

/* Decode streams every weight byte once from DRAM, and one core's hardware prefetch
 * keeps too few lines in flight to reach the bandwidth the chip has (measured: about
 * half of a plain streaming read). So the 4-column kernels ask for the bytes and scales
 * the same step of a later group will read, far enough ahead to cover DRAM latency. A
 * group of four columns is one contiguous run of B (4 * colbytes) and of the scales
 * (4 * k_blocks floats); every step consumes at most 256 bytes of the first and 128 of
 * the second, so four and two lines per step keep pace. Prefetches past the end of a
 * buffer are harmless (they never fault). */
enum { PF_B = 8192, PF_S = 2048 };

INLINE void prefetch_group(const uint8_t *col, const float *sc, int64_t step) {
    const char *b = (const char *)col + PF_B + step * 256;
    const char *s = (const char *)sc + PF_S + step * 128;
    _mm_prefetch(b, _MM_HINT_T0);
    _mm_prefetch(b + 64, _MM_HINT_T0);
    _mm_prefetch(b + 128, _MM_HINT_T0);
    _mm_prefetch(b + 192, _MM_HINT_T0);
    _mm_prefetch(s, _MM_HINT_T0);
    _mm_prefetch(s + 64, _MM_HINT_T0);
}

/* One row of A against four columns at a time (decode): the A chunk, its lane sums and
 * scales are loaded once for the four, and the four sums reduce together. */
INLINE void int8_row_4cols(const mnb_job *j, int64_t m, int64_t n, const int four, __m512i idx) {
    const mnb_problem *p = j->p;
    const int64_t per_chunk = four ? 128 : 64, kb = p->k_blocks;
    const int64_t colbytes = kb * p->blob, bytes = colbytes;
    const int lbs = __builtin_ctz((unsigned)p->block_size);
    const uint8_t *col = p->B + n * colbytes;
    const float *sc = p->scales + n * kb;
    const int8_t *aq = j->aq + m * j->a_stride;
    const float *as = j->a_scale + m * j->s_stride;
    const bool default_zp = !p->zp_packed;
    const int32_t *lane = j->a_lane + m * (j->a_stride / j->lane_values);
    const __m512i low4 = _mm512_set1_epi8(0x0f);
    /* A chunk spans bpc whole blocks when blocks are no longer than a chunk; then the
     * products scale_b * scale_a of 16 blocks serve 16 / bpc chunks in a row, each
     * picking its blocks with the lane map shifted by its offset in the run. */
    const int64_t bpc = per_chunk >> lbs, run = bpc ? 16 / bpc : 1;
    __m512 s0 = _mm512_setzero_ps(), s1 = s0, s2 = s0, s3 = s0;
    __m512 acc0 = _mm512_setzero_ps(), acc1 = acc0, acc2 = acc0, acc3 = acc0;
    for (int64_t c = 0, off = 0; off < bytes; c++, off += 64) {
        int64_t left = bytes - off;
        __mmask64 bm = left >= 64 ? ~0ull : (1ull << left) - 1;
        int64_t in_run = c % run;
        if (in_run == 0) {
            int64_t fb = (c * per_chunk) >> lbs;
            __mmask16 sm = mask16(kb - fb);
            __m512 a_s = _mm512_loadu_ps(as + fb);
            s0 = _mm512_mul_ps(_mm512_maskz_loadu_ps(sm, sc + fb), a_s);
            s1 = _mm512_mul_ps(_mm512_maskz_loadu_ps(sm, sc + kb + fb), a_s);
            s2 = _mm512_mul_ps(_mm512_maskz_loadu_ps(sm, sc + 2 * kb + fb), a_s);
            s3 = _mm512_mul_ps(_mm512_maskz_loadu_ps(sm, sc + 3 * kb + fb), a_s);
        }
        const __m512i idc = _mm512_add_epi32(idx, _mm512_set1_epi32((int)(in_run * bpc)));
        __m512i alo = _mm512_loadu_si512(aq + c * per_chunk), ahi = alo;
        if (four) ahi = _mm512_loadu_si512(aq + c * per_chunk + 64);
        __m512i d0 = default_zp ? _mm512_loadu_si512(lane + c * 16) : _mm512_setzero_si512();
        prefetch_group(col, sc, c);
#define MNB_COL(I, ACC)                                                                  \
    do {                                                                                 \
        __m512i x = _mm512_maskz_loadu_epi8(bm, col + (I) * colbytes + off);             \
        __m512i d;                                                                       \
        if (four) {                                                                      \
            d = _mm512_dpbusd_epi32(d0, _mm512_and_si512(x, low4), alo);                 \
            d = _mm512_dpbusd_epi32(d, _mm512_and_si512(_mm512_srli_epi16(x, 4), low4), ahi); \
        } else {                                                                         \
            d = _mm512_dpbusd_epi32(d0, x, alo);                                         \
        }                                                                                \
        ACC = _mm512_fmadd_ps(_mm512_cvtepi32_ps(d), _mm512_permutexvar_ps(idc, s##I), ACC); \
    } while (0)
        MNB_COL(0, acc0);
        MNB_COL(1, acc1);
        MNB_COL(2, acc2);
        MNB_COL(3, acc3);
#undef MNB_COL
    }
    store4(j, m, n, reduce4(acc0, acc1, acc2, acc3), !default_zp);
}

INLINE void float4_row_4cols(const mnb_job *j, int64_t m, int64_t n) {
    const mnb_problem *p = j->p;
    const bool has_zp = p->zp_float || p->zp_packed;
    const int64_t bs = p->block_size, kb = p->k_blocks, bytes = kb * p->blob;
    const int lbs = __builtin_ctz((unsigned)bs);
    const uint8_t *col = p->B + n * bytes;
    const float *sc = p->scales + n * kb;
    const float *af = j->af + m * j->a_stride;
    const __m512 lut = _mm512_sub_ps(
        _mm512_setr_ps(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
        _mm512_set1_ps(has_zp ? 0.0f : 8.0f));
    __m512 acc0 = _mm512_setzero_ps(), acc1 = acc0, acc2 = acc0, acc3 = acc0;
    for (int64_t g = 0, off = 0; off < bytes; g++, off += 16) {
        int64_t left = bytes - off;
        __mmask16 bm = left >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << left) - 1);
        __m512 a_e = _mm512_loadu_ps(af + g * 32), a_o = _mm512_loadu_ps(af + g * 32 + 16);
        int64_t b = (g * 32) >> lbs;
        if ((g & 3) == 0) prefetch_group(col, sc, g >> 2);
#define MNB_COL(I, ACC)                                                                  \
    do {                                                                                 \
        __m512i x = _mm512_cvtepu8_epi32(_mm_maskz_loadu_epi8(bm, col + (I) * bytes + off)); \
        __m512 d = _mm512_mul_ps(_mm512_permutexvar_ps(x, lut), a_e);                    \
        d = _mm512_fmadd_ps(_mm512_permutexvar_ps(_mm512_srli_epi32(x, 4), lut), a_o, d);  \
        __m512 s = _mm512_set1_ps(sc[(I) * kb + b]);                                     \
        if (bs == 16)                                                                    \
            s = _mm512_mask_blend_ps(0xff00, s,                                          \
                                     _mm512_set1_ps(b + 1 < kb ? sc[(I) * kb + b + 1] : 0.0f)); \
        ACC = _mm512_fmadd_ps(d, s, ACC);                                                \
    } while (0)
        MNB_COL(0, acc0);
        MNB_COL(1, acc1);
        MNB_COL(2, acc2);
        MNB_COL(3, acc3);
#undef MNB_COL
    }
    store4(j, m, n, reduce4(acc0, acc1, acc2, acc3), has_zp);
}

/* mr rows of A against nc columns (prefill in int8 arithmetic): each chunk of each column
 * is unpacked once for the mr rows, each chunk of A loaded once for the nc columns. */
INLINE void int8_tile(const mnb_job *j, int64_t m0, const int mr, int64_t n, const int nc,
                      const int four, __m512i idx) {
    const mnb_problem *p = j->p;
    const int64_t per_chunk = four ? 128 : 64, kb = p->k_blocks;
    const int64_t bytes = kb * p->blob;
    const int lbs = __builtin_ctz((unsigned)p->block_size);
    const bool default_zp = !p->zp_packed;
    const int64_t lanes = j->a_stride / j->lane_values;
    const __m512i low4 = _mm512_set1_epi8(0x0f);
    __m512 acc[4][4];
    for (int r = 0; r < mr; r++)
        for (int i = 0; i < nc; i++) acc[r][i] = _mm512_setzero_ps();
    for (int64_t c = 0, off = 0; off < bytes; c++, off += 64) {
        int64_t left = bytes - off;
        __mmask64 bm = left >= 64 ? ~0ull : (1ull << left) - 1;
        int64_t fb = (c * per_chunk) >> lbs;
        __mmask16 sm = mask16(kb - fb);
        __m512i lo[4], hi[4];
        __m512 sb[4];
        for (int i = 0; i < nc; i++) {
            __m512i x = _mm512_maskz_loadu_epi8(bm, p->B + (n + i) * bytes + off);
            lo[i] = four ? _mm512_and_si512(x, low4) : x;
            hi[i] = four ? _mm512_and_si512(_mm512_srli_epi16(x, 4), low4) : x;
            sb[i] = _mm512_permutexvar_ps(idx, _mm512_maskz_loadu_ps(sm, p->scales + (n + i) * kb + fb));
        }
        for (int r = 0; r < mr; r++) {
            const int8_t *a = j->aq + (m0 + r) * j->a_stride + c * per_chunk;
            __m512i alo = _mm512_loadu_si512(a), ahi = four ? _mm512_loadu_si512(a + 64) : alo;
            __m512i d0 = default_zp ? _mm512_loadu_si512(j->a_lane + (m0 + r) * lanes + c * 16)
                                    : _mm512_setzero_si512();
            __m512 as = _mm512_permutexvar_ps(idx, _mm512_loadu_ps(j->a_scale + (m0 + r) * j->s_stride + fb));
            for (int i = 0; i < nc; i++) {
                __m512i d = _mm512_dpbusd_epi32(d0, lo[i], alo);
                if (four) d = _mm512_dpbusd_epi32(d, hi[i], ahi);
                /* scale_b * scale_a first, as the other kernels multiply them */
                acc[r][i] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(d), _mm512_mul_ps(sb[i], as), acc[r][i]);
            }
        }
    }
    for (int r = 0; r < mr; r++)
        for (int i = 0; i < nc; i++) {
            float zt = 0.0f;
            if (!default_zp) zero_point_terms(j, m0 + r, 1, n + i, &zt);
            p->Y[(m0 + r) * p->N + n + i] = hsum(acc[r][i]) - zt +
                                            (p->bias ? p->bias[n + i] : 0.0f);
        }
}

static void int8_tiles4(const mnb_job *j, int64_t m0, int64_t n0, int64_t n1, __m512i idx) {
    if (j->p->bits == 4)
        for (int64_t n = n0; n < n1; n += MNB_TILE_NC) int8_tile(j, m0, 4, n, MNB_TILE_NC, 1, idx);
    else
        for (int64_t n = n0; n < n1; n += MNB_TILE_NC) int8_tile(j, m0, 4, n, MNB_TILE_NC, 0, idx);
}

#define MNB_COLUMNS(NAME, CALL)                                                          \
    static void NAME(const mnb_job *j, int64_t m0, const int mr, int64_t n0, int64_t n1, \
                     __m512i idx) {                                                      \
        (void)idx;                                                                       \
        for (int64_t n = n0; n < n1; n++) CALL;                                          \
    }
MNB_COLUMNS(int8_cols1, int8_column(j, m0, 1, n, idx))
MNB_COLUMNS(int8_cols2, int8_column(j, m0, 2, n, idx))
MNB_COLUMNS(int8_cols3, int8_column(j, m0, 3, n, idx))
MNB_COLUMNS(int8_cols4, int8_column(j, m0, 4, n, idx))
MNB_COLUMNS(float4_cols1, float4_column(j, m0, 1, n))
MNB_COLUMNS(float4_cols2, float4_column(j, m0, 2, n))
MNB_COLUMNS(float4_cols3, float4_column(j, m0, 3, n))
MNB_COLUMNS(float4_cols4, float4_column(j, m0, 4, n))
MNB_COLUMNS(float8_cols1, float8_column(j, m0, 1, n))
MNB_COLUMNS(float8_cols2, float8_column(j, m0, 2, n))
MNB_COLUMNS(float8_cols3, float8_column(j, m0, 3, n))
MNB_COLUMNS(float8_cols4, float8_column(j, m0, 4, n))

typedef void (*cols_fn)(const mnb_job *, int64_t, int, int64_t, int64_t, __m512i);

void mnb_x512_columns(const mnb_job *j, int64_t m0, int mr, int64_t n0, int64_t n1) {
    static const cols_fn int8_fns[4] = {int8_cols1, int8_cols2, int8_cols3, int8_cols4};
    static const cols_fn float4_fns[4] = {float4_cols1, float4_cols2, float4_cols3, float4_cols4};
    static const cols_fn float8_fns[4] = {float8_cols1, float8_cols2, float8_cols3, float8_cols4};
    const mnb_problem *p = j->p;
    const cols_fn *fns = p->int8 ? int8_fns : p->bits == 4 ? float4_fns : float8_fns;
    __m512i idx = lane_blocks(p->bits == 4 ? 8 : 4, p->block_size);
    if (mr == 1 && (p->int8 || p->bits == 4)) {
        for (; n0 + 4 <= n1; n0 += 4) {
            if (!p->int8)
                float4_row_4cols(j, m0, n0);
            else if (p->bits == 4)
                int8_row_4cols(j, m0, n0, 1, idx);
            else
                int8_row_4cols(j, m0, n0, 0, idx);
        }
    }
    if (mr == 4 && p->int8) {
        int64_t full = n0 + (n1 - n0) / MNB_TILE_NC * MNB_TILE_NC;
        int8_tiles4(j, m0, n0, full, idx);
        n0 = full;
    }
    if (n0 < n1) fns[mr - 1](j, m0, mr, n0, n1, idx);
}

/* The zero points of columns n .. n + count - 1 in block b, one a lane. */
static __m512 zero_point_lanes(const mnb_problem *p, int64_t n, int64_t b, int64_t count) {
    if (!p->zp_packed) return _mm512_set1_ps((float)(1 << (p->bits - 1)));
    float z[16] = {0};
    for (int64_t c = 0; c < count; c++) z[c] = mnb_zero_point(p, n + c, b);
    return _mm512_loadu_ps(z);
}

/* One value of a panel the scalar way (the vector loop's arithmetic). */
static inline float panel_value(const mnb_problem *p, int64_t col, int64_t k) {
    int64_t b = k / p->block_size;
    return ((float)mnb_weight(p, col, k) - mnb_zero_point(p, col, b)) *
           p->scales[col * p->k_blocks + b];
}

void mnb_x512_dequant_panel(const mnb_problem *p, int64_t j0, int64_t n, int64_t p0,
                            int64_t kc, int nr, float *dst) {
    const int64_t kb = p->k_blocks, colbytes = kb * p->blob, end = p0 + kc;
    const __m512i iota = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
    const __m512i col_off = _mm512_mullo_epi32(iota, _mm512_set1_epi32((int)colbytes));
    const __m512i scale_off = _mm512_mullo_epi32(iota, _mm512_set1_epi32((int)kb));
    const __m512i low4 = _mm512_set1_epi32(15);
    for (int c0 = 0; c0 < nr; c0 += 16) {
        int64_t cn = n - c0 < 0 ? 0 : n - c0 > 16 ? 16 : n - c0;
        const __mmask16 m = mask16(cn);
        const int64_t first = j0 + c0;
        int64_t k = p0;
        /* to a multiple of 8 (4 bytes of each column) the scalar way */
        for (; k < end && (k & 7); k++)
            for (int c = 0; c < 16; c++)
                dst[(k - p0) * nr + c0 + c] = c < cn ? panel_value(p, first + c, k) : 0.0f;
        int64_t blk = -1;
        __m512 sv = _mm512_setzero_ps(), zv = sv;
        for (; k + 8 <= end; k += 8) {
            if (k / p->block_size != blk) { /* the 16 columns' scales and zero points */
                blk = k / p->block_size;
                sv = _mm512_mask_i32gather_ps(_mm512_setzero_ps(), m, scale_off,
                                              p->scales + first * kb + blk, 4);
                if (p->zp_float)
                    zv = _mm512_mask_i32gather_ps(_mm512_setzero_ps(), m, scale_off,
                                                  p->zp_float + first * kb + blk, 4);
                else
                    zv = zero_point_lanes(p, first, blk, cn);
            }
            /* values k..k+7 of each column: 4 bytes, value k+t in bits 4t..4t+3 */
            __m512i g = _mm512_mask_i32gather_epi32(_mm512_setzero_si512(), m, col_off,
                                                    p->B + first * colbytes + k / 2, 1);
            for (int t = 0; t < 8; t++) {
                __m512i q = _mm512_and_si512(_mm512_srli_epi32(g, 4 * t), low4);
                __m512 w = _mm512_mul_ps(_mm512_sub_ps(_mm512_cvtepi32_ps(q), zv), sv);
                _mm512_storeu_ps(dst + (k - p0 + t) * nr + c0, _mm512_maskz_mov_ps(m, w));
            }
        }
        for (; k < end; k++)
            for (int c = 0; c < 16; c++)
                dst[(k - p0) * nr + c0 + c] = c < cn ? panel_value(p, first + c, k) : 0.0f;
    }
}

void mnb_x512_finish_row4(int8_t *row, int64_t a_stride, int32_t zdef, int32_t *lane) {
    const __m512i bias = _mm512_set1_epi8(-128), zero = _mm512_setzero_si512();
    const __m256i neg_z = _mm256_set1_epi32(-zdef);
    for (int64_t s = 0; s < a_stride; s += 128) {
        __m512i w0 = _mm512_loadu_si512(row + s), w1 = _mm512_loadu_si512(row + s + 64);
        /* q + 128 is unsigned, so one sum of absolute differences adds eight of them */
        __m512i t0 = _mm512_sad_epu8(_mm512_xor_si512(w0, bias), zero);
        __m512i t1 = _mm512_sad_epu8(_mm512_xor_si512(w1, bias), zero);
        t0 = _mm512_sub_epi64(t0, _mm512_set1_epi64(8 * 128));
        t1 = _mm512_sub_epi64(t1, _mm512_set1_epi64(8 * 128));
        _mm256_storeu_si256((__m256i *)(lane + s / 8),
                            _mm256_mullo_epi32(_mm512_cvtepi64_epi32(t0), neg_z));
        _mm256_storeu_si256((__m256i *)(lane + s / 8 + 8),
                            _mm256_mullo_epi32(_mm512_cvtepi64_epi32(t1), neg_z));
        /* byte pairs as 16-bit words: the low bytes are the even positions */
        _mm256_storeu_si256((__m256i *)(row + s), _mm512_cvtepi16_epi8(w0));
        _mm256_storeu_si256((__m256i *)(row + s + 32), _mm512_cvtepi16_epi8(w1));
        _mm256_storeu_si256((__m256i *)(row + s + 64), _mm512_cvtepi16_epi8(_mm512_srli_epi16(w0, 8)));
        _mm256_storeu_si256((__m256i *)(row + s + 96), _mm512_cvtepi16_epi8(_mm512_srli_epi16(w1, 8)));
    }
}

void mnb_x512_quantize_block(const float *a, int64_t len, int8_t *q, float *scale, int32_t *sum) {
    const __m512 sign = _mm512_set1_ps(-0.0f);
    __m512 mx = _mm512_setzero_ps();
    for (int64_t i = 0; i < len; i += 16)
        mx = _mm512_max_ps(mx, _mm512_andnot_ps(sign, _mm512_maskz_loadu_ps(mask16(len - i), a + i)));
    float amax = _mm512_reduce_max_ps(mx);
    float mul = amax != 0.0f ? 127.0f / amax : 0.0f;
    __m512 vm = _mm512_set1_ps(mul);
    __m512i acc = _mm512_setzero_si512();
    for (int64_t i = 0; i < len; i += 16) {
        __mmask16 k = mask16(len - i);
        /* the default rounding mode (nearest, ties to even) is nearbyintf's */
        __m512i v = _mm512_cvtps_epi32(_mm512_mul_ps(_mm512_maskz_loadu_ps(k, a + i), vm));
        acc = _mm512_add_epi32(acc, v);
        _mm512_mask_cvtepi32_storeu_epi8(q + i, k, v);
    }
    *scale = amax / 127.0f;
    *sum = _mm512_reduce_add_epi32(acc);
}

void mnb_x512_digits_block(const float *a, int64_t len, int8_t *d, int64_t d_stride,
                           float *scale, int32_t *sums) {
    const __m512 sign = _mm512_set1_ps(-0.0f), s65536 = _mm512_set1_ps(65536.0f);
    const __m512i half = _mm512_set1_epi32(128), byte = _mm512_set1_epi32(255);
    __m512 mx = _mm512_setzero_ps();
    for (int64_t i = 0; i < len; i += 16)
        mx = _mm512_max_ps(mx, _mm512_andnot_ps(sign, _mm512_maskz_loadu_ps(mask16(len - i), a + i)));
    float amax = _mm512_reduce_max_ps(mx);
    __m512 vm = _mm512_set1_ps(amax != 0.0f ? 127.0f / amax : 0.0f);
    __m512i c1 = _mm512_setzero_si512(), c2 = c1, c3 = c1;
    for (int64_t i = 0; i < len; i += 16) {
        __mmask16 k = mask16(len - i);
        /* cvtps rounds to nearest even, as nearbyintf does in the default mode */
        __m512 u = _mm512_mul_ps(_mm512_maskz_loadu_ps(k, a + i), vm);
        __m512i U = _mm512_cvtps_epi32(_mm512_mul_ps(u, s65536));
        __m512i d3 = _mm512_sub_epi32(_mm512_and_si512(_mm512_add_epi32(U, half), byte), half);
        __m512i V = _mm512_srai_epi32(_mm512_sub_epi32(U, d3), 8);
        __m512i d2 = _mm512_sub_epi32(_mm512_and_si512(_mm512_add_epi32(V, half), byte), half);
        __m512i d1 = _mm512_srai_epi32(_mm512_sub_epi32(V, d2), 8);
        c1 = _mm512_add_epi32(c1, d1);
        c2 = _mm512_add_epi32(c2, d2);
        c3 = _mm512_add_epi32(c3, d3);
        _mm512_mask_cvtepi32_storeu_epi8(d + i, k, d1);
        _mm512_mask_cvtepi32_storeu_epi8(d + d_stride + i, k, d2);
        _mm512_mask_cvtepi32_storeu_epi8(d + 2 * d_stride + i, k, d3);
    }
    *scale = amax / 127.0f;
    sums[0] = _mm512_reduce_add_epi32(c1);
    sums[1] = _mm512_reduce_add_epi32(c2);
    sums[2] = _mm512_reduce_add_epi32(c3);
}


#else
void mnb_x512_finish_row4(int8_t *row, int64_t a_stride, int32_t zdef, int32_t *lane) {
    (void)row, (void)a_stride, (void)zdef, (void)lane;
}
void mnb_x512_quantize_block(const float *a, int64_t len, int8_t *q, float *scale, int32_t *sum) {
    mnb_quantize_block(a, len, q, scale, sum);
}
void mnb_x512_digits_block(const float *a, int64_t len, int8_t *d, int64_t d_stride,
                           float *scale, int32_t *sums) {
    mnb_digits_block(a, len, d, d_stride, scale, sums);
}
void mnb_x512_columns(const mnb_job *j, int64_t m0, int mr, int64_t n0, int64_t n1) {
    (void)j, (void)m0, (void)mr, (void)n0, (void)n1;
}
void mnb_x512_dequant_panel(const mnb_problem *p, int64_t j0, int64_t n, int64_t p0,
                            int64_t kc, int nr, float *dst) {
    (void)p, (void)j0, (void)n, (void)p0, (void)kc, (void)nr, (void)dst;
}

#endif
