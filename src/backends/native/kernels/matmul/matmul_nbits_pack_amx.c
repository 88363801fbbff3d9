/* Packed MatMulNBits on AMX tiles (this file is compiled with AMX-TILE/INT8 and AVX-512
 * flags and only called when the CPU has them and Linux granted the tile data state;
 * see base/isa.h).
 *
 * One call takes the rows [m0, m1) against a panel pair, 32 rows (two strips of 16) at a
 * time. Tiles (palette 1):
 *   tmm0, tmm1  A: 16 rows x ks bytes of quantized A, one per strip (ks = min(block, 64)
 *               values of K)
 *   tmm2, tmm3  B: ks/4 rows x 64 bytes, panel p and panel p + 1 (row r: 16 columns x
 *               values 4r..4r+3)
 *   tmm4..tmm7  C: 16 rows x 16 int32, the block's dot products, strip x panel
 * The weights are unpacked as signed bytes with the column's zero point already
 * subtracted (8 when the model has none), so TDPBSSD gives exactly the integer dot the
 * other kernels form as dot(q_a, q_w) plus the zero-point term, and no correction is
 * added. Each block's dots are then scaled into float accumulators with AVX-512 in the
 * header's arithmetic (acc = fma(dot, scale_a * scale_b, acc), block order), so results
 * are identical bit for bit to the other kernels.
 *
 * Why it is shaped so: a block of K (32 values in the builder's packages) is too short to
 * keep the dots in the tiles across blocks: every 16 x 16 x 32 product leaves the tile
 * unit through a 1 KiB store and is scaled with three vector operations per 16 outputs.
 * Measured on a 2-vCPU Xeon with AMX (bench-amx-tiles; docs/PERFORMANCE.md, "MatMulNBits
 * on AMX tiles"): a TDPBSSD takes ~4.7 ns at K = 32 as at K = 64 (half the tile unit idles
 * on a block of 32), a 16-row TILESTORED ~4.3 ns and a TILELOADD ~1.7 ns, run one after
 * another; the scaling of a 32 x 32 block takes ~45-50 ns and overlaps the tile
 * instructions little. Two strips x two panels share each A and B tile load between two
 * products. The scaling of block b - 1 is issued after block b's tile instructions, from
 * the other dot buffer, so that a core that can overlap the two does. */
#if defined(__x86_64__)
#include "backends/native/kernels/matmul/matmul_nbits_pack_x512.h"

#include <string.h>

/* ldtilecfg's 64-byte operand (Intel SDM, "TILECFG"). */
typedef struct tile_config {
    uint8_t palette_id;
    uint8_t start_row;
    uint8_t reserved[14];
    uint16_t colsb[16];
    uint8_t rows[16];
} tile_config;

_Static_assert(sizeof(tile_config) == 64, "tile configuration is 64 bytes");

/* 16 zero points (one per column) spread to the 64 bytes of a B tile row: byte 4c + i is
 * column c's. */
MNBP_INLINE __m512i spread_zero_points(const uint8_t *zp) {
    __m512i z = _mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i *)zp));
    return _mm512_mullo_epi32(z, _mm512_set1_epi32(0x01010101));
}

/* The panel pair (p, p + 1) as signed bytes in the B tile layout (row r, 4 values of K,
 * at u8 + 128 r: panel p's 16 columns x 4 bytes first), each value minus its column's
 * zero point for its block. */
static void unpack_pair_signed(const mnb_pack *pk, int64_t p, int8_t *u8) {
    const int64_t kb = pk->k_blocks, groups = pk->block_size / 8;
    const uint8_t *s0 = pk->B + p * pk->panel_bytes, *s1 = s0 + pk->panel_bytes;
    const __m512i low4 = _mm512_set1_epi8(0x0f);
    __m512i z0 = _mm512_set1_epi8(8), z1 = z0;
    for (int64_t b = 0; b < kb; b++) {
        if (pk->zp) {
            z0 = spread_zero_points(pk->zp + (p * kb + b) * MNB_PANEL);
            z1 = spread_zero_points(pk->zp + ((p + 1) * kb + b) * MNB_PANEL);
        }
        for (int64_t g = b * groups; g < (b + 1) * groups; g++) {
            __m512i x0 = _mm512_loadu_si512(s0 + g * 64), x1 = _mm512_loadu_si512(s1 + g * 64);
            int8_t *d = u8 + g * 256;
            _mm512_storeu_si512(d, _mm512_sub_epi8(_mm512_and_si512(x0, low4), z0));
            _mm512_storeu_si512(d + 64, _mm512_sub_epi8(_mm512_and_si512(x1, low4), z1));
            _mm512_storeu_si512(d + 128, _mm512_sub_epi8(
                                             _mm512_and_si512(_mm512_srli_epi16(x0, 4), low4), z0));
            _mm512_storeu_si512(d + 192, _mm512_sub_epi8(
                                             _mm512_and_si512(_mm512_srli_epi16(x1, 4), low4), z1));
        }
    }
}

typedef struct strip_dots {
    int32_t c[4][16][16]; /* [strip * 2 + panel][row][column] */
} strip_dots;

/* Block b's dots of the two strips at row m into d (tiles 0-7). */
MNBP_INLINE void dots_two_strips(const mnb_qa *qa, const int8_t *u8, int64_t m, int64_t k0,
                                 int bs, int ks, strip_dots *d) {
    const int64_t qs = qa->q_stride;
    const int8_t *a = qa->q + m * qs + k0;
    _tile_zero(4);
    _tile_zero(5);
    _tile_zero(6);
    _tile_zero(7);
    for (int kk = 0; kk < bs; kk += ks) {
        const int8_t *w = u8 + (k0 + kk) / 4 * 128;
        _tile_loadd(0, a + kk, qs);
        _tile_loadd(1, a + 16 * qs + kk, qs);
        _tile_loadd(2, w, 128);
        _tile_loadd(3, w + 64, 128);
        _tile_dpbssd(4, 0, 2);
        _tile_dpbssd(5, 0, 3);
        _tile_dpbssd(6, 1, 2);
        _tile_dpbssd(7, 1, 3);
    }
    _tile_stored(4, d->c[0], 64);
    _tile_stored(5, d->c[1], 64);
    _tile_stored(6, d->c[2], 64);
    _tile_stored(7, d->c[3], 64);
}

/* The same for one strip (tiles 0, 2-5). */
MNBP_INLINE void dots_one_strip(const mnb_qa *qa, const int8_t *u8, int64_t m, int64_t k0,
                                int bs, int ks, strip_dots *d) {
    const int64_t qs = qa->q_stride;
    const int8_t *a = qa->q + m * qs + k0;
    _tile_zero(4);
    _tile_zero(5);
    for (int kk = 0; kk < bs; kk += ks) {
        const int8_t *w = u8 + (k0 + kk) / 4 * 128;
        _tile_loadd(0, a + kk, qs);
        _tile_loadd(2, w, 128);
        _tile_loadd(3, w + 64, 128);
        _tile_dpbssd(4, 0, 2);
        _tile_dpbssd(5, 0, 3);
    }
    _tile_stored(4, d->c[0], 64);
    _tile_stored(5, d->c[1], 64);
}

/* acc[s][r][16 j + c] += dot * (scale_a * scale_b) for block b of `strips` strips at row m. */
MNBP_INLINE void scale_block(const mnb_pack *pk, const mnb_qa *qa, int64_t m, int64_t p,
                             int64_t b, int strips, const strip_dots *d, float (*acc)[16][32]) {
    const int64_t kb = pk->k_blocks, ss = qa->s_stride;
    const __m512 sb0 = _mm512_load_ps(pk->scales + (p * kb + b) * MNB_PANEL);
    const __m512 sb1 = _mm512_load_ps(pk->scales + ((p + 1) * kb + b) * MNB_PANEL);
    for (int s = 0; s < strips; s++) {
        const float *sa = qa->scale + (m + 16 * s) * ss + b;
        for (int r = 0; r < 16; r++) {
            const __m512 a = _mm512_set1_ps(sa[r * ss]);
            float *ac = acc[s][r];
            __m512 x0 = _mm512_cvtepi32_ps(_mm512_load_si512(d->c[2 * s][r]));
            __m512 x1 = _mm512_cvtepi32_ps(_mm512_load_si512(d->c[2 * s + 1][r]));
            _mm512_store_ps(ac, _mm512_fmadd_ps(x0, _mm512_mul_ps(a, sb0), _mm512_load_ps(ac)));
            _mm512_store_ps(ac + 16,
                            _mm512_fmadd_ps(x1, _mm512_mul_ps(a, sb1), _mm512_load_ps(ac + 16)));
        }
    }
}

void mnb_pack_tile_amx(const mnb_pack *pk, const mnb_qa *qa, int64_t m0, int64_t m1,
                       int64_t p, uint8_t *u8, const mnb_out *o) {
    if (mnb_ort_order(pk)) { /* onnxruntime's order: MLAS's AVX-512 lanes, not tiles */
        mnb_pack_rows_avx512(pk, qa, m0, (int)(m1 - m0), p, p + 2, o);
        return;
    }
    const int bs = pk->block_size;
    const int64_t kb = pk->k_blocks;
    const int ks = bs < 64 ? bs : 64;
    tile_config cfg __attribute__((aligned(64)));
    memset(&cfg, 0, sizeof cfg);
    cfg.palette_id = 1;
    for (int t = 0; t < 2; t++) {
        cfg.rows[t] = 16;
        cfg.colsb[t] = (uint16_t)ks;
    }
    for (int t = 2; t < 4; t++) {
        cfg.rows[t] = (uint8_t)(ks / 4);
        cfg.colsb[t] = 64;
    }
    for (int t = 4; t < 8; t++) {
        cfg.rows[t] = 16;
        cfg.colsb[t] = 64;
    }
    /* gcc 12's _tile_loadconfig declares a read of only 8 bytes of its operand, so
     * stores to the rest could be dropped as dead: make them happen first */
    __asm__ volatile("" : : "r"(&cfg) : "memory");
    _tile_loadconfig(&cfg);
    const int8_t *w = (const int8_t *)u8;
    unpack_pair_signed(pk, p, (int8_t *)u8);
    strip_dots dots[2] __attribute__((aligned(64)));
    float acc[2][16][32] __attribute__((aligned(64)));
    /* strips start at multiples of 16 and A has zero rows (zero scales) up to a multiple
     * of 16, so each 16-row tile load stays inside A and a ragged strip's extra rows add
     * zeros; rows past m1 are not stored */
    for (int64_t m = m0; m < m1; m += 32) {
        const int strips = m + 16 < m1 ? 2 : 1;
        memset(acc, 0, sizeof(float) * 16 * 32 * (size_t)strips);
        /* block b's tiles, then block b - 1's scaling from the other buffer */
        for (int64_t b = 0; b <= kb; b++) {
            if (b < kb) {
                if (strips == 2)
                    dots_two_strips(qa, w, m, b * bs, bs, ks, &dots[b & 1]);
                else
                    dots_one_strip(qa, w, m, b * bs, bs, ks, &dots[b & 1]);
            }
            if (b > 0) scale_block(pk, qa, m, p, b - 1, strips, &dots[(b - 1) & 1], acc);
        }
        for (int s = 0; s < strips; s++)
            for (int r = 0; r < 16 && m + 16 * s + r < m1; r++) {
                mnbp_store(pk, o, m + 16 * s + r, p, _mm512_load_ps(acc[s][r]));
                mnbp_store(pk, o, m + 16 * s + r, p + 1, _mm512_load_ps(acc[s][r] + 16));
            }
    }
    _tile_release();
}

#endif
