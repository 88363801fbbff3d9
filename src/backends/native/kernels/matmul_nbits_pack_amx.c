/* Packed MatMulNBits on AMX tiles (this file is compiled with AMX-TILE/INT8 and AVX-512
 * flags and only called when the CPU has them and Linux granted the tile data state;
 * see base/cpu.h).
 *
 * One call takes 16-row strips of A against a panel pair. Tiles (palette 1):
 *   tmm0  A: 16 rows x ks bytes of quantized A (ks = min(block, 64) values of K)
 *   tmm1  B: ks/4 rows x 64 bytes, panel p    (row r: 16 columns x values 4r..4r+3)
 *   tmm2  B: the same for panel p + 1
 *   tmm4, tmm5  C: 16 rows x 16 int32, the block's dot products for the two panels
 * TDPBSUD multiplies signed bytes of its first source (A) with unsigned bytes of its
 * second (the 0..15 weights) in groups of four and adds them to C: per block the tiles
 * give exactly the integer dots the other kernels form, which are then scaled into
 * float accumulators with AVX-512 (the header's arithmetic, so results are identical
 * bit for bit). The unpacked pair (mnbp_unpack_pair) is already the B tile layout. */
#if defined(__x86_64__)
#include "backends/native/kernels/matmul_nbits_pack_x512.h"

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

void mnb_pack_tile_amx(const mnb_pack *pk, const mnb_qa *qa, int64_t m0, int64_t m1,
                       int64_t p, uint8_t *u8, const mnb_out *o) {
    const int64_t bs = pk->block_size, kb = pk->k_blocks, qs = qa->q_stride;
    const int ks = bs < 64 ? (int)bs : 64;
    tile_config cfg __attribute__((aligned(64)));
    memset(&cfg, 0, sizeof cfg);
    cfg.palette_id = 1;
    cfg.rows[0] = 16;
    cfg.colsb[0] = (uint16_t)ks;
    cfg.rows[1] = cfg.rows[2] = (uint8_t)(ks / 4);
    cfg.colsb[1] = cfg.colsb[2] = 64;
    cfg.rows[4] = cfg.rows[5] = 16;
    cfg.colsb[4] = cfg.colsb[5] = 64;
    _tile_loadconfig(&cfg);
    mnbp_unpack_pair(pk, p, u8);
    int32_t c[2][16][16] __attribute__((aligned(64)));
    __m512 acc[16][2];
    /* strips start at multiples of 16 and A has zero rows up to a multiple of 16, so
     * each 16-row tile load stays inside A; rows past m1 are not stored */
    for (int64_t m = m0; m < m1; m += 16) {
        const int rows = m1 - m < 16 ? (int)(m1 - m) : 16;
        for (int r = 0; r < rows; r++) acc[r][0] = acc[r][1] = _mm512_setzero_ps();
        for (int64_t b = 0; b < kb; b++) {
            _tile_zero(4);
            _tile_zero(5);
            for (int64_t kk = 0; kk < bs; kk += ks) {
                const uint8_t *w = u8 + (b * bs + kk) / 4 * 128;
                _tile_loadd(0, qa->q + m * qs + b * bs + kk, qs);
                _tile_loadd(1, w, 128);
                _tile_loadd(2, w + 64, 128);
                _tile_dpbsud(4, 0, 1);
                _tile_dpbsud(5, 0, 2);
            }
            _tile_stored(4, c[0], 64);
            _tile_stored(5, c[1], 64);
            for (int r = 0; r < rows; r++)
                for (int j = 0; j < 2; j++) {
                    __m512i dot = _mm512_add_epi32(_mm512_load_si512(c[j][r]),
                                                   mnbp_zero_init(pk, qa, m + r, p + j, b));
                    acc[r][j] = mnbp_scale_add(pk, qa, m + r, p + j, b, dot, acc[r][j]);
                }
        }
        for (int r = 0; r < rows; r++) {
            mnbp_store(pk, o, m + r, p, acc[r][0]);
            mnbp_store(pk, o, m + r, p + 1, acc[r][1]);
        }
    }
    _tile_release();
}

#endif
