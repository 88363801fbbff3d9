/* MatMulNBits on prepacked 4-bit weights (see matmul_nbits_pack.h): packing, the
 * per-call quantization of A, the thread split, the portable kernels and the choice of
 * ISA kernels at run time. */
#include "backends/native/kernels/matmul/matmul_nbits_pack.h"

#include "base/bigalloc.h"
#include "base/pack_cache.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <math.h>

enum {
    SMALL_M = 4,      /* up to this many rows: the streaming row kernels */
    TILE_MIN_M = 16,  /* from this many rows on: unpacked panel pairs and register tiles */
    /* from this many on with AVX-512 but no AMX: the vector tiles' unpacking of each panel pair pays
     * off only over more rows; below it the row kernels, which read the packed nibbles
     * directly, take less CPU time (AVX-512 VNNI, Qwen2.5-0.5B shapes, level 4 and the
     * three digit rows of level 0: 10-25 % less at 16-32 rows, even at 48) */
    TILE_MIN_M_VEC = 48,
    /* with AMX: at 16 rows the tiles are slower than the row kernels, from 32 on faster
     * (bench-matmulnbits at Qwen2.5-0.5B shapes, level 4, tiles vs row kernels: 16 rows
     * 0.22 vs 0.18 ms, 32 rows 0.31-0.36 vs 0.37, 48 rows 0.44-0.48 vs 0.53-0.57) */
    TILE_MIN_M_AMX = 32,
    ROW_BLOCK_BYTES = 160 * 1024, /* quantized A per tile item, kept in L2 */
    SUB_BYTES = 64 * 1024, /* more rows than a rows call takes: all row groups per this many weights */
    PACK_RUN = 64,  /* groups of 8 values per column that packing regroups at once (4 KiB) */
};

static int64_t round_up(int64_t v, int64_t to) { return (v + to - 1) / to * to; }
static int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }

bool mnb_pack_handles(const mnb_problem *p) {
    return p->bits == 4 && !p->zp_float && p->block_size % 8 == 0;
}

static size_t pack_b_bytes(const mnb_pack *pk) { return (size_t)(pk->panels * pk->panel_bytes); }
static size_t pack_s_count(const mnb_pack *pk) {
    return (size_t)(pk->panels * pk->k_blocks * MNB_PANEL);
}

void mnb_pack_free(mnb_pack *pk) {
    if (!pk) return;
    if (!pk->mapped) {
        big_free(pk->B, pack_b_bytes(pk));
        big_free(pk->scales, pack_s_count(pk) * sizeof(float));
        big_free(pk->zp, pack_s_count(pk));
    }
    free(pk);
}

/* Four original bytes (values 8g..8g+7 of a column, two per byte, low nibble first)
 * as the packed group's four bytes: value i in the low nibble, value i + 4 in the high. */
static inline uint32_t regroup(uint32_t o) {
    uint32_t b0 = (o & 0x0f) | ((o >> 12) & 0xf0);
    uint32_t b1 = ((o >> 4) & 0x0f) | ((o >> 16) & 0xf0);
    uint32_t b2 = ((o >> 8) & 0x0f) | ((o >> 20) & 0xf0);
    uint32_t b3 = ((o >> 12) & 0x0f) | ((o >> 24) & 0xf0);
    return b0 | b1 << 8 | b2 << 16 | b3 << 24;
}

/* The pack's shape (no memory yet). */
static mnb_pack *pack_shape(const mnb_problem *p) {
    mnb_pack *pk = calloc(1, sizeof *pk);
    if (!pk) return NULL;
    pk->N = p->N;
    pk->K = p->K;
    pk->k_blocks = p->k_blocks;
    pk->block_size = p->block_size;
    pk->panels = round_up((p->N + MNB_PANEL - 1) / MNB_PANEL, 2);
    pk->panel_bytes = p->k_blocks * p->block_size * 8;
    pk->digits = p->int8 ? 1 : 3;
    size_t ns = pack_s_count(pk);
    pk->bytes = pack_b_bytes(pk) + ns * sizeof(float) + (p->zp_packed ? ns : 0);
    return pk;
}

/* Panel pn's weights into dst (panel_bytes). */
static void pack_panel(const mnb_problem *p, int64_t pn, uint32_t *dst) {
    int64_t groups = p->k_blocks * p->block_size / 8;
    const int64_t colbytes = p->k_blocks * p->blob;
    int64_t n0 = pn * MNB_PANEL, cols = p->N - n0 < MNB_PANEL ? p->N - n0 : MNB_PANEL;
    if (cols < 0) cols = 0;
    const uint8_t *src = p->B + n0 * colbytes;
    /* PACK_RUN groups of the 16 columns at a time: each column's run regrouped in
     * place (one vector loop), then transposed into 64-byte groups */
    for (int64_t g0 = 0; g0 < groups; g0 += PACK_RUN) {
        int64_t gn = min64(PACK_RUN, groups - g0);
        uint32_t t[MNB_PANEL][PACK_RUN];
        if (cols < MNB_PANEL || gn < PACK_RUN) memset(t, 0, sizeof t);
        for (int c = 0; c < cols; c++) {
            memcpy(t[c], src + c * colbytes + g0 * 4, (size_t)gn * 4);
            for (int j = 0; j < PACK_RUN; j++) t[c][j] = regroup(t[c][j]); /* a vector loop */
        }
        for (int64_t j = 0; j < gn; j++)
            for (int c = 0; c < MNB_PANEL; c++) dst[(g0 + j) * MNB_PANEL + c] = t[c][j];
    }
}

/* Panel pn's scales ([k_blocks][16]) and, when zp, zero points. */
static void pack_panel_scales(const mnb_problem *p, int64_t pn, float *scales, uint8_t *zp) {
    int64_t kb = p->k_blocks, n0 = pn * MNB_PANEL;
    for (int c = 0; c < MNB_PANEL; c++) {
        int64_t n = n0 + c;
        for (int64_t b = 0; b < kb; b++) {
            size_t at = (size_t)(b * MNB_PANEL + c);
            if (scales) scales[at] = n < p->N ? p->scales[n * kb + b] : 0.0f;
            if (zp) zp[at] = n < p->N ? (uint8_t)mnb_zero_point(p, n, b) : 0;
        }
    }
}

og_status *mnb_pack_create(const mnb_problem *p, mnb_pack **out) {
    *out = NULL;
    mnb_pack *pk = pack_shape(p);
    if (!pk) return og_oom();
    size_t nb = pack_b_bytes(pk), ns = pack_s_count(pk);
    pk->B = big_alloc(nb);
    pk->scales = big_alloc(ns * sizeof(float));
    if (p->zp_packed) pk->zp = big_alloc(ns);
    if (!pk->B || !pk->scales || (p->zp_packed && !pk->zp)) {
        mnb_pack_free(pk);
        return og_oom_for(nb + ns * 5, "prepacked MatMulNBits weights");
    }
    size_t per = (size_t)(pk->k_blocks * MNB_PANEL);
    for (int64_t pn = 0; pn < pk->panels; pn++) {
        pack_panel(p, pn, (uint32_t *)(pk->B + pn * pk->panel_bytes));
        pack_panel_scales(p, pn, pk->scales + pn * per, pk->zp ? pk->zp + pn * per : NULL);
    }
    *out = pk;
    return NULL;
}

/* The pack as one run of bytes (a pack cache entry): B, then the scales and the zero
 * points, each at a 64-byte boundary. */
static size_t file_scales_at(const mnb_pack *pk) { return (size_t)round_up((int64_t)pack_b_bytes(pk), 64); }
static size_t file_zp_at(const mnb_pack *pk) {
    return (size_t)round_up((int64_t)(file_scales_at(pk) + pack_s_count(pk) * sizeof(float)), 64);
}

size_t mnb_pack_file_size(const mnb_problem *p) {
    mnb_pack *pk = pack_shape(p);
    if (!pk) return 0;
    size_t n = p->zp_packed ? file_zp_at(pk) + pack_s_count(pk) : file_zp_at(pk);
    free(pk);
    return n;
}

bool mnb_pack_write(const mnb_problem *p, pack_writer *w) {
    mnb_pack *pk = pack_shape(p);
    if (!pk || pk->panel_bytes > PACK_WRITER_MAX_RESERVE) {
        free(pk);
        return false;
    }
    size_t per = (size_t)(pk->k_blocks * MNB_PANEL), at = 0;
    bool ok = true;
    uint8_t *d;
    for (int64_t pn = 0; ok && pn < pk->panels; pn++, at += (size_t)pk->panel_bytes)
        if ((ok = (d = pack_writer_reserve(w, (size_t)pk->panel_bytes)) != NULL))
            pack_panel(p, pn, (uint32_t *)d);
    if (ok && file_scales_at(pk) > at) ok = pack_writer_reserve(w, file_scales_at(pk) - at) != NULL;
    at = file_scales_at(pk);
    for (int64_t pn = 0; ok && pn < pk->panels; pn++, at += per * sizeof(float))
        if ((ok = (d = pack_writer_reserve(w, per * sizeof(float))) != NULL))
            pack_panel_scales(p, pn, (float *)d, NULL);
    if (ok && p->zp_packed) {
        if (file_zp_at(pk) > at) ok = pack_writer_reserve(w, file_zp_at(pk) - at) != NULL;
        for (int64_t pn = 0; ok && pn < pk->panels; pn++)
            if ((ok = (d = pack_writer_reserve(w, per)) != NULL)) pack_panel_scales(p, pn, NULL, d);
    } else if (ok && file_zp_at(pk) > at) {
        ok = pack_writer_reserve(w, file_zp_at(pk) - at) != NULL;
    }
    free(pk);
    return ok;
}

og_status *mnb_pack_from_file(const mnb_problem *p, const void *mem, mnb_pack **out) {
    *out = NULL;
    mnb_pack *pk = pack_shape(p);
    if (!pk) return og_oom();
    const uint8_t *m = mem;
    pk->mapped = true;
    pk->B = (uint8_t *)m;
    pk->scales = (float *)(m + file_scales_at(pk));
    if (p->zp_packed) pk->zp = (uint8_t *)(m + file_zp_at(pk));
    *out = pk;
    return NULL;
}

/* ---- the portable kernels (the arithmetic of the header, written out) ------------- */

static inline int packed_weight(const mnb_pack *pk, int64_t p, int64_t b, int64_t k, int c) {
    const uint8_t *g = pk->B + p * pk->panel_bytes + b * pk->block_size * 8 + (k / 8) * 64;
    uint8_t byte = g[c * 4 + (k & 3)];
    return (k & 4) ? byte >> 4 : byte & 15;
}

static inline int32_t zero_init(const mnb_pack *pk, const mnb_qa *qa, int64_t m, int64_t p,
                                int64_t b, int c) {
    int32_t z = qa->zsum[m * qa->s_stride + b];
    return pk->zp ? z * (int32_t)pk->zp[(p * pk->k_blocks + b) * MNB_PANEL + c] : z;
}

static inline float block_scale(const mnb_pack *pk, const mnb_qa *qa, int64_t m, int64_t p,
                                int64_t b, int c) {
    return qa->scale[m * qa->s_stride + b] * pk->scales[(p * pk->k_blocks + b) * MNB_PANEL + c];
}

/* onnxruntime's order (matmul_nbits_pack.h), one output at a time. */

/* sum over k in [k0, k0 + len) of block b of q * (weight - zp) */
static int32_t ort_dot(const mnb_pack *pk, const int8_t *q, int64_t p, int64_t b, int k0,
                       int len, int c, int zp) {
    int32_t d = 0;
    for (int k = k0; k < k0 + len; k++) d += q[b * 32 + k] * (packed_weight(pk, p, b, k, c) - zp);
    return d;
}

static int block_zp(const mnb_pack *pk, int64_t p, int64_t b, int c) {
    return pk->zp ? pk->zp[(p * pk->k_blocks + b) * MNB_PANEL + c] : 8;
}

/* The lanes' sum for output column n, plus the bias (the header's reductions). */
static float ort_lane_sum(const mnb_pack *pk, const mnb_out *o, int64_t n, const float *L) {
    float r;
    if (n < pk->N - pk->N % 4)
        r = (((L[0] + L[1]) + L[2]) + L[3]) + (((L[4] + L[5]) + L[6]) + L[7]);
    else
        r = ((L[0] + L[4]) + (L[2] + L[6])) + ((L[1] + L[5]) + (L[3] + L[7]));
    return o->bias ? r + o->bias[n] : r;
}

/* The rows form's zero-point product Z of column c of panel p for row m. */
static float ort_zero_product(const mnb_pack *pk, const mnb_qa *qa, int64_t m, int64_t p, int c) {
    const int64_t kb = pk->k_blocks;
    const float *sa = qa->scale + m * qa->s_stride;
    float z = 0.0f;
    for (int64_t b = 0; b < kb; b++) {
        float zsb = (float)-block_zp(pk, p, b, c) * pk->scales[(p * kb + b) * MNB_PANEL + c];
        z = fmaf(sa[b] * (float)mnb_qa_block_sum(pk, qa, m, b), zsb, z);
    }
    return z;
}

/* Block b's 4-value groups into lanes L0..L7, weights minus zp. */
static void ort_block_fours(const mnb_pack *pk, const mnb_qa *qa, int64_t m, int64_t p,
                            int64_t b, int c, int zp, float *L) {
    const int8_t *q = qa->q + m * qa->q_stride;
    float sc = block_scale(pk, qa, m, p, b, c);
    for (int j = 0; j < 8; j++) L[j] = fmaf((float)ort_dot(pk, q, p, b, 4 * j, 4, c, zp), sc, L[j]);
}

/* The AVX-512 class (matmul_nbits_pack.h). */
static float ort_output_512(const mnb_pack *pk, const mnb_qa *qa, const mnb_out *o, int64_t m,
                            int64_t p, int c) {
    const int64_t kb = pk->k_blocks;
    const int8_t *q = qa->q + m * qa->q_stride;
    float W[16] = {0}, L[8];
    int64_t b = 0;
    for (; kb - b >= 4; b += 4)
        for (int j = 0; j < 4; j++) {
            float sc = block_scale(pk, qa, m, p, b + j, c);
            for (int s = 0; s < 2; s++)
                for (int h = 0; h < 2; h++) {
                    int k0 = 16 * s + 4 * h, w = 4 * (s + 2 * (j & 1)) + h + 2 * (j >> 1);
                    int32_t d = ort_dot(pk, q, p, b + j, k0, 4, c, 0) +
                                ort_dot(pk, q, p, b + j, k0 + 8, 4, c, 0);
                    W[w] = fmaf((float)d, sc, W[w]);
                }
        }
    for (int i = 0; i < 8; i++) L[i] = W[i] + W[i + 8];
    for (; b < kb; b++) ort_block_fours(pk, qa, m, p, b, c, 0, L);
    return ort_lane_sum(pk, o, p * MNB_PANEL + c, L) + ort_zero_product(pk, qa, m, p, c);
}

/* The AVX2 class (matmul_nbits_pack.h). */
static float ort_output_avx2(const mnb_pack *pk, const mnb_qa *qa, const mnb_out *o, int64_t m,
                             int64_t p, int c) {
    static const int pair_lane[2][4] = {{0, 1, 4, 5}, {2, 3, 6, 7}};
    const int64_t kb = pk->k_blocks;
    const int8_t *q = qa->q + m * qa->q_stride;
    const bool one_row = mnb_one_row(qa, m);
    float L[8] = {0};
    int64_t b = 0;
    for (; kb - b > 1; b += 2)
        for (int s = 0; s < 2; s++) {
            if (one_row && pk->zp) {
                ort_block_fours(pk, qa, m, p, b + s, c, block_zp(pk, p, b + s, c), L);
                continue;
            }
            float sc = block_scale(pk, qa, m, p, b + s, c);
            int zp = one_row ? 8 : 0;
            for (int g = 0; g < 4; g++) {
                int l = pair_lane[s][g];
                L[l] = fmaf((float)ort_dot(pk, q, p, b + s, 8 * g, 8, c, zp), sc, L[l]);
            }
        }
    if (b < kb) ort_block_fours(pk, qa, m, p, b, c, one_row ? block_zp(pk, p, b, c) : 0, L);
    float r = ort_lane_sum(pk, o, p * MNB_PANEL + c, L);
    return one_row ? r : r + ort_zero_product(pk, qa, m, p, c);
}

static void ort_panel_row(const mnb_pack *pk, const mnb_qa *qa, int64_t m, int64_t p,
                          const mnb_out *o) {
    int64_t n0 = p * MNB_PANEL;
    for (int c = 0; c < MNB_PANEL && n0 + c < pk->N; c++)
        o->Y[m * o->ldy + n0 + c] = qa->mlas512 ? ort_output_512(pk, qa, o, m, p, c)
                                                   : ort_output_avx2(pk, qa, o, m, p, c);
}

void mnb_pack_rows_generic(const mnb_pack *pk, const mnb_qa *qa, int64_t m0, int mr,
                           int64_t p0, int64_t p1, const mnb_out *o) {
    const int64_t bs = pk->block_size;
    for (int64_t p = p0; p < p1; p++)
        for (int64_t m = m0; m < m0 + mr; m++) {
            if (mnb_ort_order(pk)) {
                ort_panel_row(pk, qa, m, p, o);
                continue;
            }
            const int8_t *q = qa->q + m * qa->q_stride;
            float acc[MNB_PANEL];
            for (int c = 0; c < MNB_PANEL; c++) {
                float a = 0.0f;
                for (int64_t b = 0; b < pk->k_blocks; b++) {
                    int32_t dot = zero_init(pk, qa, m, p, b, c);
                    for (int64_t k = 0; k < bs; k++)
                        dot += q[b * bs + k] * packed_weight(pk, p, b, k, c);
                    a = fmaf((float)dot, block_scale(pk, qa, m, p, b, c), a);
                }
                acc[c] = a;
            }
            mnb_pack_store(pk, o, m, p, acc);
        }
}

void mnb_pack_tile_generic(const mnb_pack *pk, const mnb_qa *qa, int64_t m0, int64_t m1,
                           int64_t p, uint8_t *u8, const mnb_out *o) {
    const int64_t bs = pk->block_size, groups = pk->k_blocks * bs / 8;
    if (mnb_ort_order(pk)) {
        for (int64_t m = m0; m < m1; m++)
            for (int j = 0; j < 2; j++) ort_panel_row(pk, qa, m, p + j, o);
        return;
    }
    for (int64_t g = 0; g < groups; g++)
        for (int j = 0; j < 2; j++) {
            const uint8_t *x = pk->B + (p + j) * pk->panel_bytes + g * 64;
            for (int t = 0; t < 64; t++) {
                u8[(2 * g) * 128 + j * 64 + t] = x[t] & 15;
                u8[(2 * g + 1) * 128 + j * 64 + t] = x[t] >> 4;
            }
        }
    for (int64_t m = m0; m < m1; m++) {
        const int8_t *q = qa->q + m * qa->q_stride;
        for (int j = 0; j < 2; j++) {
            float acc[MNB_PANEL];
            for (int c = 0; c < MNB_PANEL; c++) {
                float a = 0.0f;
                for (int64_t b = 0; b < pk->k_blocks; b++) {
                    int32_t dot = zero_init(pk, qa, m, p + j, b, c);
                    for (int64_t k = b * bs; k < (b + 1) * bs; k++)
                        dot += q[k] * u8[(k / 4) * 128 + j * 64 + c * 4 + (k & 3)];
                    a = fmaf((float)dot, block_scale(pk, qa, m, p + j, b, c), a);
                }
                acc[c] = a;
            }
            mnb_pack_store(pk, o, m, p + j, acc);
        }
    }
}

/* ---- the ISA kernels in use --------------------------------------------------------- */

typedef struct isa_fns {
    mnb_rows_fn rows;
    mnb_tile_fn tile;
    void (*quantize)(const float *a, int64_t len, int8_t *q, float *scale, int32_t *sum);
    const char *rows_name, *tile_name;
    void (*digits)(const float *a, int64_t len, int8_t *d, int64_t d_stride, float *scale,
                   int32_t *sums);
    int64_t tile_min_m; /* kernel rows from which the tile kernel runs */
    int rows_max;       /* most rows one call of `rows` takes */
} isa_fns;

static isa_fns active_fns(void) {
    switch (isa_active()) {
#if defined(__x86_64__)
#ifndef OG_NO_AMX
    case ISA_AMX:
        return (isa_fns){mnb_pack_rows_avx512, mnb_pack_tile_amx, mnb_x512_quantize_block,
                         "avx512-vnni", "amx-int8", mnb_x512_digits_block, TILE_MIN_M_AMX,
                         TILE_MIN_M_AMX};
#endif
    case ISA_AVX512:
        return (isa_fns){mnb_pack_rows_avx512, mnb_pack_tile_avx512, mnb_x512_quantize_block,
                         "avx512-vnni", "avx512-vnni", mnb_x512_digits_block, TILE_MIN_M_VEC,
                         TILE_MIN_M_VEC};
    case ISA_AVX2:
        return (isa_fns){mnb_pack_rows_avx2, mnb_pack_tile_avx2, mnb_quantize_block, "avx2",
                         "avx2", mnb_digits_block, TILE_MIN_M, SMALL_M};
#endif
    default:
        return (isa_fns){mnb_pack_rows_generic, mnb_pack_tile_generic, mnb_quantize_block,
                         "generic", "generic", mnb_digits_block, TILE_MIN_M, SMALL_M};
    }
}

const char *mnb_pack_kernel_name(int64_t M) {
    isa_fns f = active_fns();
    return M >= f.tile_min_m ? f.tile_name : f.rows_name;
}

/* Rows of the int8 problem the kernels run for M rows of A. */
static int64_t kernel_rows(const mnb_pack *pk, int64_t M) { return M * pk->digits; }

/* ---- working memory ----------------------------------------------------------------
 * Two parts: the quantized A (q, scales, zero-point terms), which other products with
 * the same A and geometry may share (mnb_pack_qa_key), then the kernels' own (unpacked
 * panel pairs per thread, the digit rows' Y'). */

typedef struct layout {
    int64_t rows, q_stride, s_stride, u8_bytes;
    size_t q_off, s_off, z_off, g_off, qa_bytes; /* within the quantized A */
    size_t u8_off, y_off, rest_bytes;     /* within the rest */
} layout;

/* M is the kernels' rows (kernel_rows); float arithmetic adds the digit rows' Y'. */
static layout work_layout(const mnb_pack *pk, int64_t M, int threads) {
    layout l;
    l.rows = round_up(M, 16);
    l.q_stride = round_up(pk->k_blocks * pk->block_size, 64);
    l.s_stride = round_up(pk->k_blocks, 16);
    l.u8_bytes = M >= active_fns().tile_min_m ? pk->k_blocks * pk->block_size / 4 * 128 : 0;
    l.q_off = 0;
    l.s_off = (size_t)round_up(l.rows * l.q_stride, 64);
    l.z_off = l.s_off + (size_t)round_up(l.rows * l.s_stride * 4, 64);
    l.g_off = l.z_off + (size_t)round_up(l.rows * l.s_stride * 4, 64);
    l.qa_bytes = l.g_off + (mnb_ort_order(pk) ? (size_t)round_up(l.rows * l.q_stride, 64) : 0);
    l.u8_off = 0;
    l.y_off = (size_t)round_up(l.u8_bytes * (threads > 0 ? threads : 1), 64);
    l.rest_bytes = l.y_off + (pk->digits > 1 ? (size_t)(M * pk->N) * sizeof(float) : 0);
    return l;
}

size_t mnb_pack_work_size(const mnb_pack *pk, int64_t M, int threads) {
    layout l = work_layout(pk, kernel_rows(pk, M), threads);
    return l.qa_bytes + l.rest_bytes;
}

size_t mnb_pack_qa_size(const mnb_pack *pk, int64_t M) {
    return work_layout(pk, kernel_rows(pk, M), 1).qa_bytes;
}

int mnb_pack_qa_key(const mnb_pack *pk, int64_t M, int64_t *key) {
    /* 'MNBq': kernels of other kinds never make a key that starts so */
    key[0] = 0x4d4e4271;
    key[1] = M;
    key[2] = pk->K;
    key[3] = pk->block_size;
    key[4] = pk->digits;
    key[5] = pk->zp != NULL; /* the zero-point terms are -8 * sum(q) or -sum(q) */
    return MNB_QA_KEY;
}

/* ---- A ------------------------------------------------------------------------------ */

typedef struct quant_job {
    const mnb_pack *pk;
    const float *A;
    int64_t M;      /* kernel rows (M digit rows per row of A in float arithmetic) */
    mnb_qa qa;
    isa_fns f;
} quant_job;

/* Float arithmetic: rows [r0, r1) of A, each as its three digit rows. */
static void digit_rows(void *arg, int64_t r0, int64_t r1) {
    const quant_job *J = arg;
    const mnb_pack *pk = J->pk;
    const int64_t bs = pk->block_size, qs = J->qa.q_stride, ss = J->qa.s_stride;
    const int32_t mul = pk->zp ? -1 : -8;
    for (int64_t m = r0; m < r1; m++) {
        int8_t *q = (int8_t *)J->qa.q + 3 * m * qs;
        float *sc = (float *)J->qa.scale + 3 * m * ss;
        int32_t *zs = (int32_t *)J->qa.zsum + 3 * m * ss;
        memset(q, 0, (size_t)(3 * qs));
        memset(sc, 0, sizeof(float) * (size_t)(3 * ss));
        memset(zs, 0, sizeof(int32_t) * (size_t)(3 * ss));
        const float *a = J->A + m * pk->K;
        for (int64_t b = 0; b < pk->k_blocks; b++) {
            int64_t k0 = b * bs, len = min64(bs, pk->K - k0);
            int32_t sums[3];
            float s;
            J->f.digits(a + k0, len, q + k0, qs, &s, sums);
            for (int i = 0; i < 3; i++) {
                sc[i * ss + b] = i == 0 ? s : i == 1 ? s * (1.0f / 256) : s * (1.0f / 65536);
                zs[i * ss + b] = mul * sums[i];
            }
        }
    }
}

/* The padding rows past the digit rows: zero. */
static void zero_rows(const mnb_qa *qa, int64_t r0, int64_t r1) {
    for (int64_t m = r0; m < r1; m++) {
        memset((int8_t *)qa->q + m * qa->q_stride, 0, (size_t)qa->q_stride);
        memset((float *)qa->scale + m * qa->s_stride, 0, sizeof(float) * (size_t)qa->s_stride);
        memset((int32_t *)qa->zsum + m * qa->s_stride, 0, sizeof(int32_t) * (size_t)qa->s_stride);
    }
}

/* Y[m][n0..n1) = (Y'[3m] + Y'[3m+1]) + Y'[3m+2] + bias: the digit rows' products summed. */
static void sum_digits(const mnb_pack *pk, const float *Yd, float *Y, const float *bias,
                       int64_t m0, int64_t m1, int64_t n0, int64_t n1) {
    const int64_t N = pk->N;
    for (int64_t m = m0; m < m1; m++) {
        const float *y0 = Yd + 3 * m * N, *y1 = y0 + N, *y2 = y1 + N;
        float *y = Y + m * N;
        if (bias)
            for (int64_t n = n0; n < n1; n++) y[n] = ((y0[n] + y1[n]) + y2[n]) + bias[n];
        else
            for (int64_t n = n0; n < n1; n++) y[n] = (y0[n] + y1[n]) + y2[n];
    }
}

typedef struct sum_job {
    const mnb_pack *pk;
    const float *Yd, *bias;
    float *Y;
} sum_job;

static void sum_rows(void *arg, int64_t r0, int64_t r1) {
    const sum_job *S = arg;
    sum_digits(S->pk, S->Yd, S->Y, S->bias, r0, r1, 0, S->pk->N);
}

static void quantize_rows(void *arg, int64_t r0, int64_t r1) {
    const quant_job *J = arg;
    const mnb_pack *pk = J->pk;
    const int64_t bs = pk->block_size;
    const int32_t mul = pk->zp ? -1 : -8;
    for (int64_t m = r0; m < r1; m++) {
        int8_t *q = (int8_t *)J->qa.q + m * J->qa.q_stride;
        float *sc = (float *)J->qa.scale + m * J->qa.s_stride;
        int32_t *zs = (int32_t *)J->qa.zsum + m * J->qa.s_stride;
        memset(q, 0, (size_t)J->qa.q_stride);
        memset(sc, 0, sizeof(float) * (size_t)J->qa.s_stride);
        memset(zs, 0, sizeof(int32_t) * (size_t)J->qa.s_stride);
        int32_t *gs = J->qa.gsum4 ? (int32_t *)J->qa.gsum4 + m * (J->qa.q_stride / 4) : NULL;
        if (m >= J->M) { /* padding rows: zero */
            if (gs) memset(gs, 0, sizeof(int32_t) * (size_t)(J->qa.q_stride / 4));
            continue;
        }
        const float *a = J->A + m * pk->K;
        for (int64_t b = 0; b < pk->k_blocks; b++) {
            int64_t k0 = b * bs, len = min64(bs, pk->K - k0);
            int32_t sum;
            J->f.quantize(a + k0, len, q + k0, &sc[b], &sum);
            zs[b] = mul * sum;
        }
        if (gs)
            for (int64_t k = 0; k < J->qa.q_stride; k += 4)
                gs[k / 4] = (int32_t)q[k] + q[k + 1] + q[k + 2] + q[k + 3];
    }
}

/* ---- the thread split ---------------------------------------------------------------- */

typedef struct run_job {
    const mnb_pack *pk;
    const mnb_qa *qa;
    const mnb_out *o;
    isa_fns f;
    int64_t M;
    /* small M: pieces of panels, guided (each claim a share of what is left) */
    int64_t piece_min, parts, sub_panels;
    /* large M: items (row block, panel pair) */
    int64_t row_block, n_row_blocks, items;
    uint8_t *u8;
    int64_t u8_bytes;
    atomic_llong next;
    /* float arithmetic: the kernels write digit rows into Yd; pieces are summed into Y */
    int64_t rows_a;
    const float *Yd, *bias;
    float *Y;
} run_job;

static void small_worker(void *arg, int64_t t0, int64_t t1) {
    run_job *J = arg;
    (void)t0, (void)t1;
    const int64_t n = J->pk->panels;
    for (;;) {
        long long cur = atomic_load_explicit(&J->next, memory_order_relaxed);
        int64_t end;
        do {
            if (cur >= n) return;
            int64_t take = round_up((n - cur) / J->parts, 4);
            take = take < J->piece_min ? J->piece_min : take;
            end = min64(n, cur + take);
        } while (!atomic_compare_exchange_weak_explicit(&J->next, &cur, (long long)end,
                                                        memory_order_relaxed,
                                                        memory_order_relaxed));
        /* with more rows than one call of the kernel takes (a decode batch, digit rows
         * on AVX2 and the portable kernels) every group of rows runs over a few panels
         * before the next ones stream in, so that the weights come from memory once
         * per step whatever the batch */
        const int64_t rmax = J->f.rows_max;
        int64_t sub = J->M > rmax ? J->sub_panels : end - cur;
        for (int64_t s0 = cur; s0 < end; s0 += sub)
            for (int64_t m = 0; m < J->M; m += rmax)
                J->f.rows(J->pk, J->qa, m, (int)min64(rmax, J->M - m), s0,
                          min64(end, s0 + sub), J->o);
        if (J->Yd) /* the piece's columns, while they are in cache */
            sum_digits(J->pk, J->Yd, J->Y, J->bias, 0, J->rows_a, cur * MNB_PANEL,
                       min64(J->pk->N, end * MNB_PANEL));
    }
}

/* One call per thread (t0 is unique among concurrent calls: its unpacking buffer). */
static void tile_worker(void *arg, int64_t t0, int64_t t1) {
    run_job *J = arg;
    (void)t1;
    uint8_t *u8 = J->u8 + t0 * J->u8_bytes;
    for (long long it; (it = atomic_fetch_add_explicit(&J->next, 1, memory_order_relaxed)) <
                       J->items;) {
        int64_t pair = it / J->n_row_blocks, rb = it % J->n_row_blocks;
        int64_t m0 = rb * J->row_block, m1 = min64(J->M, m0 + J->row_block);
        J->f.tile(J->pk, J->qa, m0, m1, 2 * pair, u8, J->o);
    }
}

void mnb_pack_run(threadpool *pool, const mnb_pack *pk, const float *A, int64_t M_a,
                  const uint8_t *forms, const float *bias, float *Y, void *work) {
    size_t qa = mnb_pack_qa_size(pk, M_a);
    mnb_pack_run_qa(pool, pk, A, M_a, forms, bias, Y, work, false, (char *)work + qa);
}

void mnb_pack_run_qa(threadpool *pool, const mnb_pack *pk, const float *A, int64_t M_a,
                     const uint8_t *forms, const float *bias, float *Y, void *qa_mem,
                     bool qa_ready, void *work) {
    if (M_a <= 0) return;
    int threads = threadpool_size(pool);
    const int64_t M = kernel_rows(pk, M_a);
    layout l = work_layout(pk, M, threads);
    char *qw = qa_mem, *w = work;
    quant_job qj = {.pk = pk, .A = A, .M = M, .f = active_fns()};
    qj.qa = (mnb_qa){.q = (int8_t *)(qw + l.q_off), .q_stride = l.q_stride,
                     .scale = (float *)(qw + l.s_off), .zsum = (int32_t *)(qw + l.z_off),
                     .s_stride = l.s_stride, .mlas512 = isa_cpu_avx512_core()};
    /* the 4-value group sums: only the AVX2 class's one-row form reads them */
    qj.qa.gsum4 = mnb_ort_order(pk) && !qj.qa.mlas512 ? (int32_t *)(qw + l.g_off) : NULL;
    /* onnxruntime's one-row tiles: a product of one row, or with more than one thread
     * the last row of 128k + 1 */
    qj.qa.m1_from = M == 1 ? 0 : (threads > 1 && M % 128 == 1) ? M - 1 : M;
    qj.qa.forms = pk->digits == 1 ? forms : NULL;
    qj.qa.many_threads = threads > 1;
    mnb_out o = {.Y = Y, .ldy = pk->N, .bias = bias};
    run_job J = {.pk = pk, .qa = &qj.qa, .o = &o, .f = qj.f, .M = M, .rows_a = M_a};
    /* quantizing takes about a quarter of a nanosecond per value of A on an AVX-512 core
     * (512 x 896 in 0.11 ms), more on AVX2 and portable C: counted as half, so a decode
     * step's row is quantized on the caller instead of waking the pool for it */
    const double row_ns = 0.5 * (double)pk->K;
    if (pk->digits > 1) {
        if (!qa_ready) {
            threadpool_parallel_for_cost(pool, M_a, 3 * row_ns, digit_rows, &qj);
            zero_rows(&qj.qa, M, l.rows);
        }
        J.Yd = (float *)(w + l.y_off);
        J.Y = Y;
        J.bias = bias;
        o = (mnb_out){.Y = (float *)J.Yd, .ldy = pk->N, .bias = NULL};
    } else if (!qa_ready) {
        threadpool_parallel_for_cost(pool, l.rows, row_ns * (double)M / (double)l.rows,
                                     quantize_rows, &qj);
    }
    atomic_init(&J.next, 0);
    if (M < J.f.tile_min_m) {
        /* about 4 KiB of weights at least per piece, in steps of 4 panels */
        int64_t panel_bytes = pk->panel_bytes + pk->k_blocks * MNB_PANEL * 4;
        J.piece_min = round_up(4096 / panel_bytes + 1, 4);
        J.parts = 2 * (int64_t)threads;
        J.sub_panels = round_up(SUB_BYTES / panel_bytes + 1, 2);
        int64_t items = (pk->panels + J.piece_min - 1) / J.piece_min;
        items = threads < items ? threads : items;
        /* the weights and scales streamed once, two operations per weight and row: a
         * product too small to pay for waking a worker runs on the caller */
        double ns = threadpool_work_ns((double)pk->panels * (double)panel_bytes,
                                       2.0 * (double)M * (double)pk->N * (double)pk->K);
        threadpool_parallel_for_cost(pool, items, ns / (double)items, small_worker, &J);
        return;
    }
    J.row_block = round_up(ROW_BLOCK_BYTES / l.q_stride, 16);
    if (J.row_block < 48) J.row_block = 48;
    if (J.row_block > M) J.row_block = round_up(M, 16);
    J.n_row_blocks = (M + J.row_block - 1) / J.row_block;
    J.items = J.n_row_blocks * (pk->panels / 2);
    J.u8 = (uint8_t *)(w + l.u8_off);
    J.u8_bytes = l.u8_bytes;
    threadpool_parallel_for(pool, threads < J.items ? threads : J.items, 1, tile_worker, &J);
    if (J.Yd) {
        sum_job S = {pk, J.Yd, bias, Y};
        threadpool_parallel_for(pool, M_a, 1 + 65536 / (pk->N + 1), sum_rows, &S);
    }
}
