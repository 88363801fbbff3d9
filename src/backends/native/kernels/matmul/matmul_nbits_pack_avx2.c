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

/* ---- onnxruntime's order (matmul_nbits_pack.h) ---------------------------------------
 * The eight lanes of the header are eight vectors over 8 columns (half a panel). */

/* The dots of 8-value group g of block b for 8 columns: values 8g..8g+3 (lo) and
 * 8g+4..8g+7 (hi), raw weights. */
INLINE void group_dots(const uint8_t *src, const int8_t *q, int64_t b, int g, __m256i low4,
                       __m256i ones, __m256i *dlo, __m256i *dhi) {
    const int8_t *qg = q + b * 32 + 8 * g;
    __m256i x = _mm256_loadu_si256((const __m256i *)(src + (b * 4 + g) * 64));
    __m256i lo = _mm256_and_si256(x, low4), hi = _mm256_and_si256(_mm256_srli_epi16(x, 4), low4);
    *dlo = _mm256_madd_epi16(_mm256_maddubs_epi16(lo, bcast4(qg)), ones);
    *dhi = _mm256_madd_epi16(_mm256_maddubs_epi16(hi, bcast4(qg + 4)), ones);
}

/* Block b into the lanes as 4-value groups (lane j: values 4j..4j+3), weights minus zp
 * (zp NULL: raw) */
INLINE void block_fours(const uint8_t *src, const int8_t *q, const int32_t *gs, int64_t b,
                        const __m256i *zp, __m256 s, __m256i low4, __m256i ones, __m256 *L) {
    for (int g = 0; g < 4; g++) {
        __m256i dlo, dhi;
        group_dots(src, q, b, g, low4, ones, &dlo, &dhi);
        if (zp) {
            dlo = _mm256_sub_epi32(dlo, _mm256_mullo_epi32(*zp, _mm256_set1_epi32(gs[b * 8 + 2 * g])));
            dhi = _mm256_sub_epi32(dhi, _mm256_mullo_epi32(*zp, _mm256_set1_epi32(gs[b * 8 + 2 * g + 1])));
        }
        L[2 * g] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(dlo), s, L[2 * g]);
        L[2 * g + 1] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(dhi), s, L[2 * g + 1]);
    }
}

/* The lanes' two reductions (matmul_nbits_pack.h): the first N - N % 4 columns' and the
 * last N % 4's. */
INLINE void lane_sums(const __m256 *L, __m256 *fold, __m256 *hs) {
    *fold = _mm256_add_ps(_mm256_add_ps(_mm256_add_ps(_mm256_add_ps(L[0], L[1]), L[2]), L[3]),
                          _mm256_add_ps(_mm256_add_ps(_mm256_add_ps(L[4], L[5]), L[6]), L[7]));
    *hs = _mm256_add_ps(_mm256_add_ps(_mm256_add_ps(L[0], L[4]), _mm256_add_ps(L[2], L[6])),
                        _mm256_add_ps(_mm256_add_ps(L[1], L[5]), _mm256_add_ps(L[3], L[7])));
}

/* Stores 8 columns from n0 of row m: fold below N rounded down to 4, hs after, plus the
 * bias, plus Z in the rows form (not one_row). */
static void ort_store8(const mnb_pack *pk, const mnb_out *o, int64_t m, int64_t n0,
                       __m256 fold, __m256 hs, __m256 Z, bool one_row) {
    const int64_t n4 = pk->N - pk->N % 4;
    float *y = o->Y + m * o->ldy;
    if (n0 + 8 <= n4 && !o->bias && one_row) { /* the common case, as it is */
        _mm256_storeu_ps(y + n0, fold);
        return;
    }
    float f[8], r[8], z[8];
    _mm256_storeu_ps(f, fold);
    _mm256_storeu_ps(r, hs);
    _mm256_storeu_ps(z, Z);
    for (int c = 0; c < 8 && n0 + c < pk->N; c++) {
        int64_t n = n0 + c;
        float v = n < n4 ? f[c] : r[c];
        if (o->bias) v += o->bias[n];
        y[n] = one_row ? v : v + z[c];
    }
}

/* Row m against both halves of panel p at once (the row's values broadcast once per
 * group for 16 columns), in the rows form, or in the one-row form without zero points
 * (`minus8`: a decode step of a symmetric package, the hot case). Writes the lanes'
 * sums (both reductions) and, in the rows form, the zero points' product Z. */
static void ort_row_panel(const mnb_pack *pk, const mnb_qa *qa, int64_t m, int64_t p,
                          bool minus8, __m256 fold[2], __m256 hs[2], __m256 Z[2]) {
    const int64_t kb = pk->k_blocks;
    const __m256i low4 = _mm256_set1_epi8(0x0f), ones = _mm256_set1_epi16(1);
    const uint8_t *src = pk->B + p * pk->panel_bytes;
    const int8_t *q = qa->q + m * qa->q_stride;
    const float *sa = qa->scale + m * qa->s_stride;
    const int32_t *gs = qa->gsum4 + m * (qa->q_stride / 4);
    const float *sbp = pk->scales + p * kb * MNB_PANEL;
    __m256 L[2][8];
    for (int l = 0; l < 8; l++) L[0][l] = L[1][l] = _mm256_setzero_ps();
    static const int lanes[2][4] = {{0, 1, 4, 5}, {2, 3, 6, 7}};
    const int64_t paired = kb - kb % 2; /* blocks in pairs; an odd last one alone */
    int64_t b = 0;
    for (; b < paired; b++) {
        const int *ln = lanes[b & 1];
        __m256 sa8 = _mm256_set1_ps(sa[b]);
        __m256 s0 = _mm256_mul_ps(sa8, _mm256_loadu_ps(sbp + b * MNB_PANEL));
        __m256 s1 = _mm256_mul_ps(sa8, _mm256_loadu_ps(sbp + b * MNB_PANEL + 8));
        for (int g = 0; g < 4; g++) {
            const int8_t *qg = q + b * 32 + 8 * g;
            const uint8_t *x = src + (b * 4 + g) * 64;
            __m256i alo = bcast4(qg), ahi = bcast4(qg + 4);
            __m256i v0 = _mm256_loadu_si256((const __m256i *)x);
            __m256i v1 = _mm256_loadu_si256((const __m256i *)(x + 32));
            __m256i d0 = _mm256_add_epi32(
                _mm256_madd_epi16(_mm256_maddubs_epi16(_mm256_and_si256(v0, low4), alo), ones),
                _mm256_madd_epi16(_mm256_maddubs_epi16(_mm256_and_si256(_mm256_srli_epi16(v0, 4), low4), ahi), ones));
            __m256i d1 = _mm256_add_epi32(
                _mm256_madd_epi16(_mm256_maddubs_epi16(_mm256_and_si256(v1, low4), alo), ones),
                _mm256_madd_epi16(_mm256_maddubs_epi16(_mm256_and_si256(_mm256_srli_epi16(v1, 4), low4), ahi), ones));
            if (minus8) {
                __m256i c8 = _mm256_set1_epi32(8 * (gs[b * 8 + 2 * g] + gs[b * 8 + 2 * g + 1]));
                d0 = _mm256_sub_epi32(d0, c8);
                d1 = _mm256_sub_epi32(d1, c8);
            }
            L[0][ln[g]] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(d0), s0, L[0][ln[g]]);
            L[1][ln[g]] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(d1), s1, L[1][ln[g]]);
        }
    }
    const __m256i eight = _mm256_set1_epi32(8);
    if (b < kb) /* a lone last block: 4-value groups */
        for (int h = 0; h < 2; h++)
            block_fours(src + 32 * h, q, gs, b, minus8 ? &eight : NULL,
                        _mm256_mul_ps(_mm256_set1_ps(sa[b]), _mm256_loadu_ps(sbp + b * MNB_PANEL + 8 * h)),
                        low4, ones, L[h]);
    for (int h = 0; h < 2; h++) {
        lane_sums(L[h], &fold[h], &hs[h]);
        Z[h] = _mm256_setzero_ps();
    }
    if (minus8) return;
    const uint8_t *zpp = pk->zp ? pk->zp + p * kb * MNB_PANEL : NULL;
    for (b = 0; b < kb; b++) { /* the zero points' product: -zp * scale_b by scale_a * sum(q) */
        __m256 a = _mm256_set1_ps(sa[b] * (float)mnb_qa_block_sum(pk, qa, m, b));
        for (int h = 0; h < 2; h++) {
            __m256i zp = zpp ? _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)(zpp + b * MNB_PANEL + 8 * h)))
                             : eight;
            __m256 zsb = _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_sub_epi32(_mm256_setzero_si256(), zp)),
                                       _mm256_loadu_ps(sbp + b * MNB_PANEL + 8 * h));
            Z[h] = _mm256_fmadd_ps(a, zsb, Z[h]);
        }
    }
}

/* The one-row form with zero points, half h of panel p: the zero point inside the dot,
 * each block in 4-value groups. */
static void ort_row_half_zp(const mnb_pack *pk, const mnb_qa *qa, int64_t m, int64_t p, int h,
                            const mnb_out *o) {
    const int64_t kb = pk->k_blocks;
    const __m256i low4 = _mm256_set1_epi8(0x0f), ones = _mm256_set1_epi16(1);
    const uint8_t *src = pk->B + p * pk->panel_bytes + 32 * h;
    const int8_t *q = qa->q + m * qa->q_stride;
    const float *sa = qa->scale + m * qa->s_stride;
    const int32_t *gs = qa->gsum4 + m * (qa->q_stride / 4);
    const float *sbp = pk->scales + p * kb * MNB_PANEL + 8 * h;
    const uint8_t *zpp = pk->zp + p * kb * MNB_PANEL + 8 * h;
    __m256 L[8], fold, hs;
    for (int l = 0; l < 8; l++) L[l] = _mm256_setzero_ps();
    for (int64_t b = 0; b < kb; b++) {
        __m256i zp = _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)(zpp + b * MNB_PANEL)));
        block_fours(src, q, gs, b, &zp,
                    _mm256_mul_ps(_mm256_set1_ps(sa[b]), _mm256_loadu_ps(sbp + b * MNB_PANEL)),
                    low4, ones, L);
    }
    lane_sums(L, &fold, &hs);
    ort_store8(pk, o, m, p * MNB_PANEL + 8 * h, fold, hs, _mm256_setzero_ps(), true);
}

/* Row m against panel p in onnxruntime's order, stored (matmul_nbits_pack.h). */
static void ort_row(const mnb_pack *pk, const mnb_qa *qa, int64_t m, int64_t p,
                    const mnb_out *o) {
    const bool one_row = mnb_one_row(qa, m);
    if (one_row && pk->zp) {
        for (int h = 0; h < 2; h++) ort_row_half_zp(pk, qa, m, p, h, o);
        return;
    }
    __m256 fold[2], hs[2], Z[2];
    ort_row_panel(pk, qa, m, p, one_row, fold, hs, Z);
    for (int h = 0; h < 2; h++)
        ort_store8(pk, o, m, p * MNB_PANEL + 8 * h, fold[h], hs[h], Z[h], one_row);
}

void mnb_pack_rows_avx2(const mnb_pack *pk, const mnb_qa *qa, int64_t m0, int mr,
                        int64_t p0, int64_t p1, const mnb_out *o) {
    if (mnb_ort_order(pk) && qa->mlas512) { /* only under OG_ISA on an AVX-512 CPU */
        mnb_pack_rows_generic(pk, qa, m0, mr, p0, p1, o);
        return;
    }
    if (mnb_ort_order(pk)) {
        for (int64_t p = p0; p < p1; p++)
            for (int r = 0; r < mr; r++) ort_row(pk, qa, m0 + r, p, o);
        return;
    }
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
    if (mnb_ort_order(pk)) { /* row by row from the packed nibbles */
        mnb_pack_rows_avx2(pk, qa, m0, (int)(m1 - m0), p, p + 2, o);
        return;
    }
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
