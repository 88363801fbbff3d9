/* Packed MatMulNBits kernels for AVX-512 with VNNI (this file is compiled with those
 * flags and only called when the CPU has them; see base/cpu.h).
 *
 * vpdpbusd multiplies 64 unsigned weight bytes (16 columns x 4 values of K) with one
 * row's 4 signed A bytes broadcast to every lane and adds the four products into the
 * column's int32 lane, so a row of the register tile is one vector of 16 columns with
 * no horizontal sums anywhere. Short A (decode) masks the nibbles as they stream from
 * memory, one or two rows against four panels or three or four rows against two; long
 * A first unpacks a panel pair to bytes once (see mnbp_unpack_pair), then runs 4 rows x
 * 32 columns register tiles over it, the pair staying in L1/L2 for every row (int32 and
 * float accumulators take 16 registers; 5 or 6 rows spilled and measured slower). */
#if defined(__x86_64__)
#include "backends/native/kernels/matmul_nbits_pack_x512.h"

#include <string.h>

/* Decode streams each panel once from DRAM: ask for the line the same panel will read
 * this far ahead (hardware prefetch alone keeps too few lines in flight on one core). */
enum { PF_AHEAD = 2048, TILE_MR = 4 };

/* The register tiles' loops over rows and panels must unroll completely so that their
 * accumulators stay in registers. */
#define UNROLL _Pragma("GCC unroll 8")

static inline __m512i bcast4(const int8_t *p) {
    int32_t v;
    memcpy(&v, p, 4);
    return _mm512_set1_epi32(v);
}

MNBP_INLINE void rows_tile(const mnb_pack *pk, const mnb_qa *qa, int64_t m0, const int mr,
                           int64_t p, const int np, const mnb_out *o) {
    const int64_t bs = pk->block_size, kb = pk->k_blocks, gpb = bs / 8, qs = qa->q_stride;
    const __m512i low4 = _mm512_set1_epi8(0x0f);
    __m512 acc[4][4];
    const uint8_t *src[4];
    UNROLL for (int j = 0; j < np; j++) src[j] = pk->B + (p + j) * pk->panel_bytes;
    UNROLL for (int r = 0; r < mr; r++)
        UNROLL for (int j = 0; j < np; j++) acc[r][j] = _mm512_setzero_ps();
    for (int64_t b = 0; b < kb; b++) {
        __m512i dot[4][4];
        UNROLL for (int r = 0; r < mr; r++)
            UNROLL for (int j = 0; j < np; j++) dot[r][j] = mnbp_zero_init(pk, qa, m0 + r, p + j, b);
        const int8_t *q = qa->q + m0 * qs + b * bs;
        for (int64_t g = 0; g < gpb; g++) {
            __m512i alo[4], ahi[4];
            UNROLL for (int r = 0; r < mr; r++) {
                alo[r] = bcast4(q + r * qs + 8 * g);
                ahi[r] = bcast4(q + r * qs + 8 * g + 4);
            }
            UNROLL for (int j = 0; j < np; j++) {
                const uint8_t *x = src[j] + (b * gpb + g) * 64;
                _mm_prefetch((const char *)x + PF_AHEAD, _MM_HINT_T0);
                __m512i v = _mm512_loadu_si512(x);
                __m512i lo = _mm512_and_si512(v, low4);
                __m512i hi = _mm512_and_si512(_mm512_srli_epi16(v, 4), low4);
                UNROLL for (int r = 0; r < mr; r++) {
                    dot[r][j] = _mm512_dpbusd_epi32(dot[r][j], lo, alo[r]);
                    dot[r][j] = _mm512_dpbusd_epi32(dot[r][j], hi, ahi[r]);
                }
            }
        }
        UNROLL for (int r = 0; r < mr; r++)
            UNROLL for (int j = 0; j < np; j++)
                acc[r][j] = mnbp_scale_add(pk, qa, m0 + r, p + j, b, dot[r][j], acc[r][j]);
    }
    UNROLL for (int r = 0; r < mr; r++)
        UNROLL for (int j = 0; j < np; j++) mnbp_store(pk, o, m0 + r, p + j, acc[r][j]);
}

#define ROWS_FN(MR, NP)                                                                  \
    static void rows_##MR##_##NP(const mnb_pack *pk, const mnb_qa *qa, int64_t m0,       \
                                 int64_t p, const mnb_out *o) {                          \
        rows_tile(pk, qa, m0, MR, p, NP, o);                                             \
    }
ROWS_FN(1, 1) ROWS_FN(1, 2) ROWS_FN(1, 3) ROWS_FN(1, 4)
ROWS_FN(2, 1) ROWS_FN(2, 2) ROWS_FN(2, 3) ROWS_FN(2, 4)
ROWS_FN(3, 1) ROWS_FN(3, 2)
ROWS_FN(4, 1) ROWS_FN(4, 2)

typedef void (*rows_fn)(const mnb_pack *, const mnb_qa *, int64_t, int64_t, const mnb_out *);

void mnb_pack_rows_avx512(const mnb_pack *pk, const mnb_qa *qa, int64_t m0, int mr,
                          int64_t p0, int64_t p1, const mnb_out *o) {
    static const rows_fn fns[4][4] = {{rows_1_1, rows_1_2, rows_1_3, rows_1_4},
                                      {rows_2_1, rows_2_2, rows_2_3, rows_2_4},
                                      {rows_3_1, rows_3_2, NULL, NULL},
                                      {rows_4_1, rows_4_2, NULL, NULL}};
    const int np_max = mr <= 2 ? 4 : 2;
    for (int64_t p = p0; p < p1;) {
        int np = p1 - p < np_max ? (int)(p1 - p) : np_max;
        fns[mr - 1][np - 1](pk, qa, m0, p, o);
        p += np;
    }
}

/* mr rows of A against the unpacked pair: per 4 values of K two weight loads, mr
 * broadcasts and 2 mr dot products. */
MNBP_INLINE void tile_rows(const mnb_pack *pk, const mnb_qa *qa, int64_t m0, const int mr,
                           int64_t p, const uint8_t *u8, const mnb_out *o) {
    const int64_t bs = pk->block_size, kb = pk->k_blocks, qs = qa->q_stride;
    __m512 acc[TILE_MR][2];
    UNROLL for (int r = 0; r < mr; r++) acc[r][0] = acc[r][1] = _mm512_setzero_ps();
    for (int64_t b = 0; b < kb; b++) {
        __m512i dot[TILE_MR][2];
        UNROLL for (int r = 0; r < mr; r++) {
            dot[r][0] = mnbp_zero_init(pk, qa, m0 + r, p, b);
            dot[r][1] = mnbp_zero_init(pk, qa, m0 + r, p + 1, b);
        }
        const uint8_t *w = u8 + b * bs / 4 * 128;
        const int8_t *q = qa->q + m0 * qs + b * bs;
        for (int64_t j = 0; j < bs / 4; j++) {
            __m512i w0 = _mm512_loadu_si512(w + j * 128), w1 = _mm512_loadu_si512(w + j * 128 + 64);
            UNROLL for (int r = 0; r < mr; r++) {
                __m512i a = bcast4(q + r * qs + 4 * j);
                dot[r][0] = _mm512_dpbusd_epi32(dot[r][0], w0, a);
                dot[r][1] = _mm512_dpbusd_epi32(dot[r][1], w1, a);
            }
        }
        UNROLL for (int r = 0; r < mr; r++) {
            acc[r][0] = mnbp_scale_add(pk, qa, m0 + r, p, b, dot[r][0], acc[r][0]);
            acc[r][1] = mnbp_scale_add(pk, qa, m0 + r, p + 1, b, dot[r][1], acc[r][1]);
        }
    }
    UNROLL for (int r = 0; r < mr; r++) {
        mnbp_store(pk, o, m0 + r, p, acc[r][0]);
        mnbp_store(pk, o, m0 + r, p + 1, acc[r][1]);
    }
}

#define TILE_FN(MR)                                                                      \
    static void tile_##MR(const mnb_pack *pk, const mnb_qa *qa, int64_t m0, int64_t p,    \
                          const uint8_t *u8, const mnb_out *o) {                         \
        tile_rows(pk, qa, m0, MR, p, u8, o);                                             \
    }
TILE_FN(1) TILE_FN(2) TILE_FN(3) TILE_FN(4)

void mnb_pack_tile_avx512(const mnb_pack *pk, const mnb_qa *qa, int64_t m0, int64_t m1,
                          int64_t p, uint8_t *u8, const mnb_out *o) {
    typedef void (*tile_fn)(const mnb_pack *, const mnb_qa *, int64_t, int64_t,
                            const uint8_t *, const mnb_out *);
    static const tile_fn fns[TILE_MR] = {tile_1, tile_2, tile_3, tile_4};
    mnbp_unpack_pair(pk, p, u8);
    for (int64_t m = m0; m < m1; m += TILE_MR) {
        int64_t mr = m1 - m < TILE_MR ? m1 - m : TILE_MR;
        fns[mr - 1](pk, qa, m, p, u8, o);
    }
}

#endif
