/* Packed MatMulNBits kernels for AVX-512 with VNNI (this file is compiled with those
 * flags and only called when the CPU has them; see base/isa.h).
 *
 * vpdpbusd multiplies 64 unsigned weight bytes (16 columns x 4 values of K) with one
 * row's 4 signed A bytes broadcast to every lane and adds the four products into the
 * column's int32 lane, so a row of the register tile is one vector of 16 columns with
 * no horizontal sums anywhere. Short A (decode) masks the nibbles as they stream from
 * memory, one or two rows against four panels or three or four rows against two; a
 * decode batch (5 to 47 rows) goes panel pair by panel pair, groups of up to 8 rows
 * over each pair while it is in L1 (see batch_tile); long
 * A first unpacks a panel pair to bytes once (see mnbp_unpack_pair), then runs 4 rows x
 * 32 columns register tiles over it, the pair staying in L1/L2 for every row (int32 and
 * float accumulators take 16 registers; 5 or 6 rows spilled and measured slower).
 * onnxruntime's order (block 32, int8 arithmetic: see ort512_row_panel) runs one row
 * streaming the panels, or several in groups of four over each panel (ort512_group). */
#if defined(__x86_64__)
#include "backends/native/kernels/matmul/matmul_nbits_pack_x512.h"

#include <string.h>

/* Decode streams each panel once from DRAM: ask for the line the same panel will read
 * this far ahead (hardware prefetch alone keeps too few lines in flight on one core).
 * A batch spends 2-8 times longer on each line, so it asks further ahead (PF_BATCH:
 * 8 KiB measured best of 2, 4 and 8 KiB, lm_head shape at 8 and 16 rows). */
enum { PF_AHEAD = 2048, TILE_MR = 4, BATCH_MR = 8, PF_BATCH = 8192 };

/* The register tiles' loops over rows and panels must unroll completely so that their
 * accumulators stay in registers. */
#define UNROLL _Pragma("GCC unroll 8")

static inline __m512i bcast4(const int8_t *p) {
    int32_t v;
    memcpy(&v, p, 4);
    return _mm512_set1_epi32(v);
}

/* vpdpbusd with its accumulator tied in the asm: gcc 12 allocates the intrinsic's result
 * to a fresh register and copies it back, two extra moves per product and spilled dots
 * once a tile holds more than a few of them. */
MNBP_INLINE __m512i dpbusd(__m512i acc, __m512i w, __m512i a) {
    __asm__("vpdpbusd %2, %1, %0" : "+v"(acc) : "v"(w), "v"(a));
    return acc;
}

/* Rows m0..m0+mr against the panel pair (p, p + 1), block b: the dots' starting values,
 * the block's scaled sums into acc, and the rows' outputs. */
MNBP_INLINE void pair_zero_init(const mnb_pack *pk, const mnb_qa *qa, int64_t m0, const int mr,
                                int64_t p, int64_t b, __m512i (*dot)[2]) {
    UNROLL for (int r = 0; r < mr; r++) {
        dot[r][0] = mnbp_zero_init(pk, qa, m0 + r, p, b);
        dot[r][1] = mnbp_zero_init(pk, qa, m0 + r, p + 1, b);
    }
}

MNBP_INLINE void pair_scale_add(const mnb_pack *pk, const mnb_qa *qa, int64_t m0, const int mr,
                                int64_t p, int64_t b, __m512i (*dot)[2], __m512 (*acc)[2]) {
    UNROLL for (int r = 0; r < mr; r++) {
        acc[r][0] = mnbp_scale_add(pk, qa, m0 + r, p, b, dot[r][0], acc[r][0]);
        acc[r][1] = mnbp_scale_add(pk, qa, m0 + r, p + 1, b, dot[r][1], acc[r][1]);
    }
}

MNBP_INLINE void pair_store(const mnb_pack *pk, const mnb_out *o, int64_t m0, const int mr,
                            int64_t p, __m512 (*acc)[2]) {
    UNROLL for (int r = 0; r < mr; r++) {
        mnbp_store(pk, o, m0 + r, p, acc[r][0]);
        mnbp_store(pk, o, m0 + r, p + 1, acc[r][1]);
    }
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
                    dot[r][j] = dpbusd(dot[r][j], lo, alo[r]);
                    dot[r][j] = dpbusd(dot[r][j], hi, ahi[r]);
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

/* A decode batch of 5 to 8 rows against a panel pair: every weight vector, masked once,
 * feeds all the rows, so the per-row work is the dot products and the block scaling.
 * The 16 int32 dots take 16 registers; the float sums live in `acc` (L1), touched once
 * per block, and each row's A bytes are broadcast once for both panels. */
MNBP_INLINE void batch_tile(const mnb_pack *pk, const mnb_qa *qa, int64_t m0, const int mr,
                            int64_t p, const mnb_out *o, __m512 (*acc)[2]) {
    const int64_t bs = pk->block_size, kb = pk->k_blocks, gpb = bs / 8, qs = qa->q_stride;
    const __m512i low4 = _mm512_set1_epi8(0x0f);
    const uint8_t *src0 = pk->B + p * pk->panel_bytes, *src1 = src0 + pk->panel_bytes;
    const float *sc0 = pk->scales + p * kb * MNB_PANEL, *sc1 = sc0 + kb * MNB_PANEL;
    const int64_t pf_blocks = PF_BATCH / (bs * 8); /* as far ahead as the weights */
    UNROLL for (int r = 0; r < mr; r++) acc[r][0] = acc[r][1] = _mm512_setzero_ps();
    for (int64_t b = 0; b < kb; b++) {
        __m512i dot[BATCH_MR][2];
        pair_zero_init(pk, qa, m0, mr, p, b, dot);
        const int8_t *q = qa->q + m0 * qs + b * bs;
        /* the scales stream too: a line per panel and block */
        _mm_prefetch((const char *)(sc0 + (b + pf_blocks) * MNB_PANEL), _MM_HINT_T0);
        _mm_prefetch((const char *)(sc1 + (b + pf_blocks) * MNB_PANEL), _MM_HINT_T0);
        for (int64_t g = 0; g < gpb; g++) {
            const uint8_t *x0 = src0 + (b * gpb + g) * 64, *x1 = src1 + (b * gpb + g) * 64;
            _mm_prefetch((const char *)x0 + PF_BATCH, _MM_HINT_T0);
            _mm_prefetch((const char *)x1 + PF_BATCH, _MM_HINT_T0);
            __m512i v0 = _mm512_loadu_si512(x0), v1 = _mm512_loadu_si512(x1);
            __m512i lo0 = _mm512_and_si512(v0, low4), lo1 = _mm512_and_si512(v1, low4);
            __m512i hi0 = _mm512_and_si512(_mm512_srli_epi16(v0, 4), low4);
            __m512i hi1 = _mm512_and_si512(_mm512_srli_epi16(v1, 4), low4);
            UNROLL for (int r = 0; r < mr; r++) {
                __m512i alo = bcast4(q + r * qs + 8 * g), ahi = bcast4(q + r * qs + 8 * g + 4);
                dot[r][0] = dpbusd(dot[r][0], lo0, alo);
                dot[r][1] = dpbusd(dot[r][1], lo1, alo);
                dot[r][0] = dpbusd(dot[r][0], hi0, ahi);
                dot[r][1] = dpbusd(dot[r][1], hi1, ahi);
            }
        }
        pair_scale_add(pk, qa, m0, mr, p, b, dot, acc);
        /* keeps the sums in memory: in registers beside the dots they spill the dots */
        __asm__ volatile("" : : "r"(acc) : "memory");
    }
    pair_store(pk, o, m0, mr, p, acc);
}

#define BATCH_FN(MR)                                                                     \
    static void batch_##MR(const mnb_pack *pk, const mnb_qa *qa, int64_t m0, int64_t p,  \
                           const mnb_out *o, __m512 (*acc)[2]) {                         \
        batch_tile(pk, qa, m0, MR, p, o, acc);                                           \
    }
BATCH_FN(5) BATCH_FN(6) BATCH_FN(7) BATCH_FN(8)

/* ---- onnxruntime's order, AVX-512 class (matmul_nbits_pack.h) ------------------------
 * Row m against panel p: the sixteen lanes W of the header are sixteen vectors over the
 * panel's 16 columns. Per block, the four partial dots (values {16 s + 4 h + i, 16 s + 8 +
 * 4 h + i}) are the low (h = 0) or high (h = 1) nibbles of 8-value groups 2 s and 2 s + 1
 * against A's matching 4 bytes: two vpdpbusd each from zero, exact integers. */
MNBP_INLINE __m512 ort512_scale(const mnb_pack *pk, const mnb_qa *qa, int64_t m, int64_t p,
                                int64_t b) {
    return _mm512_mul_ps(_mm512_set1_ps(qa->scale[m * qa->s_stride + b]),
                         _mm512_load_ps(pk->scales + (p * pk->k_blocks + b) * MNB_PANEL));
}

/* vpdpbusd with row A's 4 bytes at `a` broadcast from memory ({1to16}): no register
 * holds them, so a row group's accumulators and the block's weights all fit. */
MNBP_INLINE __m512i dpbusd_b(__m512i acc, __m512i w, const int8_t *a) {
    __asm__("vpdpbusd %2%{1to16%}, %1, %0" : "+v"(acc) : "v"(w), "m"(*(const int32_t *)a));
    return acc;
}

/* A zero register by the zeroing idiom (renamed, never executed): the intrinsic's zero
 * is a copy of one register, which gcc emits as a move per dot chain. */
MNBP_INLINE __m512i zero_idiom(void) {
    __m512i z;
    __asm__("vpxord %0, %0, %0" : "=v"(z));
    return z;
}

/* The sixteen lanes W of row m done: folded to eight, the blocks after the last four
 * (kb4 on), the lane sums, the zero points' product, the bias, stored. */
MNBP_INLINE void ort512_finish(const mnb_pack *pk, const mnb_qa *qa, int64_t m, int64_t p,
                               const mnb_out *o, const __m512 *W) {
    const int64_t kb = pk->k_blocks;
    const __m512i low4 = _mm512_set1_epi8(0x0f), zero = _mm512_setzero_si512();
    const uint8_t *src = pk->B + p * pk->panel_bytes;
    const int8_t *q = qa->q + m * qa->q_stride;
    __m512 L[8];
    UNROLL for (int i = 0; i < 8; i++) L[i] = _mm512_add_ps(W[i], W[i + 8]);
    for (int64_t b = kb - kb % 4; b < kb; b++) { /* 4-value groups into lanes */
        const uint8_t *x = src + b * 256;
        const int8_t *qb = q + b * 32;
        __m512 sc = ort512_scale(pk, qa, m, p, b);
        UNROLL for (int g = 0; g < 4; g++) {
            __m512i v = _mm512_loadu_si512(x + 64 * g);
            __m512i dl = dpbusd(zero, _mm512_and_si512(v, low4), bcast4(qb + 8 * g));
            __m512i dh = dpbusd(zero, _mm512_and_si512(_mm512_srli_epi16(v, 4), low4), bcast4(qb + 8 * g + 4));
            L[2 * g] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(dl), sc, L[2 * g]);
            L[2 * g + 1] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(dh), sc, L[2 * g + 1]);
        }
    }
    __m512 fold = _mm512_add_ps(
        _mm512_add_ps(_mm512_add_ps(_mm512_add_ps(L[0], L[1]), L[2]), L[3]),
        _mm512_add_ps(_mm512_add_ps(_mm512_add_ps(L[4], L[5]), L[6]), L[7]));
    __m512 hs = _mm512_add_ps(_mm512_add_ps(_mm512_add_ps(L[0], L[4]), _mm512_add_ps(L[2], L[6])),
                              _mm512_add_ps(_mm512_add_ps(L[1], L[5]), _mm512_add_ps(L[3], L[7])));
    /* the zero points' product, in block order */
    const float *sa = qa->scale + m * qa->s_stride;
    const float *sbp = pk->scales + p * kb * MNB_PANEL;
    const uint8_t *zpp = pk->zp ? pk->zp + p * kb * MNB_PANEL : NULL;
    const __m512 minus8 = _mm512_set1_ps(-8.0f);
    __m512 Z = _mm512_setzero_ps();
    for (int64_t b = 0; b < kb; b++) {
        __m512 nzp = zpp ? _mm512_sub_ps(_mm512_setzero_ps(), _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(
                               _mm_loadu_si128((const __m128i *)(zpp + b * MNB_PANEL)))))
                         : minus8;
        __m512 a = _mm512_set1_ps(sa[b] * (float)mnb_qa_block_sum(pk, qa, m, b));
        Z = _mm512_fmadd_ps(a, _mm512_mul_ps(nzp, _mm512_load_ps(sbp + b * MNB_PANEL)), Z);
    }
    int64_t n0 = p * MNB_PANEL, left = pk->N - n0, n4 = pk->N - pk->N % 4 - n0;
    if (left <= 0) return;
    __mmask16 k = left >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << left) - 1);
    __mmask16 kf = n4 >= 16 ? (__mmask16)0xffff : n4 <= 0 ? 0 : (__mmask16)((1u << n4) - 1);
    __m512 r = _mm512_mask_blend_ps(kf, hs, fold);
    if (o->bias) r = _mm512_add_ps(r, _mm512_maskz_loadu_ps(k, o->bias + n0));
    _mm512_mask_storeu_ps(o->Y + m * o->ldy + n0, k, _mm512_add_ps(r, Z));
}

/* One row streaming the panel from memory in order (a decode step of one sequence). */
static void ort512_row_panel(const mnb_pack *pk, const mnb_qa *qa, int64_t m, int64_t p,
                             const mnb_out *o) {
    const int64_t kb = pk->k_blocks;
    const __m512i low4 = _mm512_set1_epi8(0x0f), zero = _mm512_setzero_si512();
    const uint8_t *src = pk->B + p * pk->panel_bytes;
    const int8_t *q = qa->q + m * qa->q_stride;
    __m512 W[16];
    UNROLL for (int l = 0; l < 16; l++) W[l] = _mm512_setzero_ps();
    for (int64_t b = 0; kb - b >= 4; b += 4) {
        _Pragma("GCC unroll 4") for (int j = 0; j < 4; j++) {
            const uint8_t *x = src + (b + j) * 256;
            const int8_t *qb = q + (b + j) * 32;
            _mm_prefetch((const char *)x + PF_AHEAD, _MM_HINT_T0);
            _mm_prefetch((const char *)x + PF_AHEAD + 64, _MM_HINT_T0);
            _mm_prefetch((const char *)x + PF_AHEAD + 128, _MM_HINT_T0);
            _mm_prefetch((const char *)x + PF_AHEAD + 192, _MM_HINT_T0);
            __m512 sc = ort512_scale(pk, qa, m, p, b + j);
            UNROLL for (int s = 0; s < 2; s++) {
                __m512i v0 = _mm512_loadu_si512(x + 128 * s), v1 = _mm512_loadu_si512(x + 128 * s + 64);
                const int8_t *qs = qb + 16 * s;
                __m512i dl = dpbusd(dpbusd(zero, _mm512_and_si512(v0, low4), bcast4(qs)),
                                    _mm512_and_si512(v1, low4), bcast4(qs + 8));
                __m512i dh = dpbusd(dpbusd(zero, _mm512_and_si512(_mm512_srli_epi16(v0, 4), low4), bcast4(qs + 4)),
                                    _mm512_and_si512(_mm512_srli_epi16(v1, 4), low4), bcast4(qs + 12));
                const int w = 4 * (s + 2 * (j & 1)) + 2 * (j >> 1);
                W[w] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(dl), sc, W[w]);
                W[w + 1] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(dh), sc, W[w + 1]);
            }
        }
    }
    ort512_finish(pk, qa, m, p, o, W);
}

/* Rows m0..m0+R (R <= ORT_GROUP) against panel p with each block's weights masked once
 * for the group: the same arithmetic as ort512_row_panel for every row. A lane W[w] takes
 * the blocks b = j (mod 4) of one j only, so the blocks go in four passes, j = 0..3,
 * each over every fourth block with the group's 4 lanes of that j in registers (4 R
 * accumulators, the block's 8 masked weight vectors, A broadcast from memory): every
 * lane still sums its blocks in ascending order. `pf`: the first group over the panel
 * asks for the panel ORT_PF_PANELS on, a block's lines and scales per block it takes,
 * into L2 (the later groups find the panel in L1/L2). Measured at 8 rows on the
 * lm_head's 68 MB, one thread: 16.6-17.2 ms a call without, 13.3-14.6 into L1 at 1, 2
 * or 4 panels on (three panels and the rows' A overflow L1), 11.6-12.3 into L2. */
enum { ORT_GROUP = 4, ORT_PF_PANELS = 2 };
MNBP_INLINE void ort512_group(const mnb_pack *pk, const mnb_qa *qa, int64_t m0, const int R,
                              int64_t p, const mnb_out *o, bool pf) {
    const int64_t kb = pk->k_blocks, kb4 = kb - kb % 4, qs = qa->q_stride, ss = qa->s_stride;
    const __m512i low4 = _mm512_set1_epi8(0x0f);
    const uint8_t *src = pk->B + p * pk->panel_bytes;
    const float *sbp = pk->scales + p * kb * MNB_PANEL;
    __m512 W[ORT_GROUP][16];
    /* the panel ORT_PF_PANELS on, block t at the group's t-th block (all passes) */
    const char *pf_src = (const char *)(src + ORT_PF_PANELS * pk->panel_bytes);
    const char *pf_sc = (const char *)(sbp + ORT_PF_PANELS * kb * MNB_PANEL);
    for (int j = 0; j < 4; j++) {
        __m512 acc[ORT_GROUP][4];
        UNROLL for (int r = 0; r < R; r++)
            UNROLL for (int l = 0; l < 4; l++) acc[r][l] = _mm512_setzero_ps();
        for (int64_t b = j; b < kb4; b += 4) {
            const uint8_t *x = src + b * 256;
            if (pf) {
                int64_t t = j * (kb4 / 4) + b / 4;
                UNROLL for (int l = 0; l < 4; l++)
                    _mm_prefetch(pf_src + t * 256 + 64 * l, _MM_HINT_T1);
                _mm_prefetch(pf_sc + t * 64, _MM_HINT_T1);
            }
            __m512i w[8];
            UNROLL for (int s = 0; s < 2; s++) {
                __m512i v0 = _mm512_loadu_si512(x + 128 * s), v1 = _mm512_loadu_si512(x + 128 * s + 64);
                w[4 * s] = _mm512_and_si512(v0, low4);
                w[4 * s + 1] = _mm512_and_si512(v1, low4);
                w[4 * s + 2] = _mm512_and_si512(_mm512_srli_epi16(v0, 4), low4);
                w[4 * s + 3] = _mm512_and_si512(_mm512_srli_epi16(v1, 4), low4);
            }
            const __m512 sb = _mm512_load_ps(sbp + b * MNB_PANEL);
            UNROLL for (int r = 0; r < R; r++) {
                const int8_t *qb = qa->q + (m0 + r) * qs + b * 32;
                __m512 sc = _mm512_mul_ps(_mm512_set1_ps(qa->scale[(m0 + r) * ss + b]), sb);
                UNROLL for (int s = 0; s < 2; s++) {
                    const int8_t *qv = qb + 16 * s;
                    __m512i dl = dpbusd_b(dpbusd_b(zero_idiom(), w[4 * s], qv), w[4 * s + 1], qv + 8);
                    __m512i dh = dpbusd_b(dpbusd_b(zero_idiom(), w[4 * s + 2], qv + 4), w[4 * s + 3], qv + 12);
                    acc[r][2 * s] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(dl), sc, acc[r][2 * s]);
                    acc[r][2 * s + 1] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(dh), sc, acc[r][2 * s + 1]);
                }
            }
        }
        UNROLL for (int r = 0; r < R; r++)
            UNROLL for (int s = 0; s < 2; s++) {
                const int w = 4 * (s + 2 * (j & 1)) + 2 * (j >> 1);
                W[r][w] = acc[r][2 * s];
                W[r][w + 1] = acc[r][2 * s + 1];
            }
    }
    for (int r = 0; r < R; r++) ort512_finish(pk, qa, m0 + r, p, o, W[r]);
}

#define ORT_GROUP_FN(R)                                                                  \
    static void ort512_group_##R(const mnb_pack *pk, const mnb_qa *qa, int64_t m0,        \
                                 int64_t p, const mnb_out *o, bool pf) {                  \
        ort512_group(pk, qa, m0, R, p, o, pf);                                            \
    }
ORT_GROUP_FN(1) ORT_GROUP_FN(2) ORT_GROUP_FN(3) ORT_GROUP_FN(4)

/* Rows [m0, m1) against panels [p0, p1): one row streams each panel in order; more go
 * panel by panel, in groups of up to ORT_GROUP rows over the panel while it is in cache. */
static void ort512_rows(const mnb_pack *pk, const mnb_qa *qa, int64_t m0, int64_t m1,
                        int64_t p0, int64_t p1, const mnb_out *o) {
    typedef void (*group_fn)(const mnb_pack *, const mnb_qa *, int64_t, int64_t,
                             const mnb_out *, bool);
    static const group_fn group_fns[ORT_GROUP] = {ort512_group_1, ort512_group_2,
                                                  ort512_group_3, ort512_group_4};
    if (m1 - m0 == 1) {
        for (int64_t p = p0; p < p1; p++) ort512_row_panel(pk, qa, m0, p, o);
        return;
    }
    for (int64_t p = p0; p < p1; p++)
        for (int64_t m = m0; m < m1; m += ORT_GROUP) {
            int r = m1 - m < ORT_GROUP ? (int)(m1 - m) : ORT_GROUP;
            group_fns[r - 1](pk, qa, m, p, o, m == m0);
        }
}

typedef void (*rows_fn)(const mnb_pack *, const mnb_qa *, int64_t, int64_t, const mnb_out *);
static const rows_fn row_fns[4][4] = {{rows_1_1, rows_1_2, rows_1_3, rows_1_4},
                                      {rows_2_1, rows_2_2, rows_2_3, rows_2_4},
                                      {rows_3_1, rows_3_2, NULL, NULL},
                                      {rows_4_1, rows_4_2, NULL, NULL}};

/* Rows m0.. (mr <= 4) against panels [p0, p1). */
static void few_rows(const mnb_pack *pk, const mnb_qa *qa, int64_t m0, int mr, int64_t p0,
                     int64_t p1, const mnb_out *o) {
    const int np_max = mr <= 2 ? 4 : 2;
    for (int64_t p = p0; p < p1;) {
        int np = p1 - p < np_max ? (int)(p1 - p) : np_max;
        row_fns[mr - 1][np - 1](pk, qa, m0, p, o);
        p += np;
    }
}

/* Any number of rows: up to 4 stream each panel once; more go panel pair by panel pair,
 * all the row groups (8 rows, the last 1 to 8) over a pair while it is in L1. */
void mnb_pack_rows_avx512(const mnb_pack *pk, const mnb_qa *qa, int64_t m0, int mr,
                          int64_t p0, int64_t p1, const mnb_out *o) {
    typedef void (*batch_fn)(const mnb_pack *, const mnb_qa *, int64_t, int64_t,
                             const mnb_out *, __m512 (*)[2]);
    static const batch_fn batch_fns[BATCH_MR - 4] = {batch_5, batch_6, batch_7, batch_8};
    if (mnb_ort_order(pk)) {
        ort512_rows(pk, qa, m0, m0 + mr, p0, p1, o);
        return;
    }
    if (mr <= 4) {
        few_rows(pk, qa, m0, mr, p0, p1, o);
        return;
    }
    __m512 acc[BATCH_MR][2];
    int64_t p = p0;
    for (; p + 2 <= p1; p += 2)
        for (int64_t m = m0; m < m0 + mr; m += BATCH_MR) {
            int r = m0 + mr - m < BATCH_MR ? (int)(m0 + mr - m) : BATCH_MR;
            if (r > 4)
                batch_fns[r - 5](pk, qa, m, p, o, acc);
            else
                row_fns[r - 1][1](pk, qa, m, p, o);
        }
    for (int64_t m = m0; p < p1 && m < m0 + mr; m += 4) /* an odd last panel */
        few_rows(pk, qa, m, m0 + mr - m < 4 ? (int)(m0 + mr - m) : 4, p, p1, o);
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
        pair_zero_init(pk, qa, m0, mr, p, b, dot);
        const uint8_t *w = u8 + b * bs / 4 * 128;
        const int8_t *q = qa->q + m0 * qs + b * bs;
        for (int64_t j = 0; j < bs / 4; j++) {
            __m512i w0 = _mm512_loadu_si512(w + j * 128), w1 = _mm512_loadu_si512(w + j * 128 + 64);
            UNROLL for (int r = 0; r < mr; r++) {
                __m512i a = bcast4(q + r * qs + 4 * j);
                dot[r][0] = dpbusd(dot[r][0], w0, a);
                dot[r][1] = dpbusd(dot[r][1], w1, a);
            }
        }
        pair_scale_add(pk, qa, m0, mr, p, b, dot, acc);
    }
    pair_store(pk, o, m0, mr, p, acc);
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
    if (mnb_ort_order(pk)) {
        ort512_rows(pk, qa, m0, m1, p, p + 2, o);
        return;
    }
    mnbp_unpack_pair(pk, p, u8);
    for (int64_t m = m0; m < m1; m += TILE_MR) {
        int64_t mr = m1 - m < TILE_MR ? m1 - m : TILE_MR;
        fns[mr - 1](pk, qa, m, p, u8, o);
    }
}

#endif
