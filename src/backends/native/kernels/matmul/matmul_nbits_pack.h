/* MatMulNBits with 4-bit weights on weights prepacked once when the session opens, in
 * int8 arithmetic (accuracy_level 4, see matmul_nbits.h) or in float arithmetic (the
 * other levels) through three int8 digits per value of A (mnb_digits_block).
 *
 * Layout. Columns go in panels of 16; the panel count is rounded up to even (the pad
 * columns have zero weights and scales) so that kernels can always take two panels at
 * once. Within a panel, per block of K and per group of 8 values of K, 64 bytes:
 *
 *     byte 4c + i = q(column c, k = 8g + i) | q(column c, k = 8g + 4 + i) << 4,  i < 4
 *
 * so the low nibbles of a group are 16 columns x 4 consecutive k and the high nibbles
 * the next 4 k: masked, each half is exactly one row of the operand that vpdpbusd
 * (16 int32 lanes, 4 byte products each) and an AMX B tile (K/4 rows of 16 columns x 4
 * bytes) read. A panel's bytes are contiguous over the whole K, so a decode step streams
 * them once; the block scales follow as [panel][block][16] floats, zero points (when the
 * model has them) as [panel][block][16] bytes. The pack is as large as the original.
 *
 * Arithmetic. Per row of A and block, A is quantized as mnb_quantize_block does (as
 * onnxruntime does). Then, in every kernel of one ISA class alike:
 *
 * Exact order (every block size but 32, and float arithmetic, on every kernel): per (row,
 * column, block) the exact integer dot of q_a with the weights, plus -zero_point *
 * sum(q_a), is converted to float and accumulated as acc = fma(dot, scale_a * scale_b,
 * acc) in block order; Y = acc + bias. In float arithmetic each row of A is three digit
 * rows (scales s, s/256, s/65536, each with its own sums), run by the same kernels into
 * three rows of a scratch Y', and Y = (Y'0 + Y'1) + Y'2 + bias.
 *
 * onnxruntime's order (block size 32, int8 arithmetic): the float operations of the MLAS
 * CompInt8 kernels onnxruntime runs on this CPU, so that accuracy_level 4 gives
 * onnxruntime's bits. MLAS takes its AVX-512 kernels where the CPU has AVX-512 F, BW, DQ
 * and VL (isa_cpu_avx512_core; mnb_qa.mlas512) and its AVX2 ones otherwise; which of
 * OUR kernels run (OG_ISA) does not change the order, only its speed. In both, partial
 * integer dots are converted to float and accumulated per lane as fma(dot, scale_a *
 * scale_b, L) in block order, the lanes are summed, and Y = r + bias (+ Z below).
 *
 * AVX2 class (MLAS's AVX2 kernels; eight lanes L0..L7 per output). Blocks go in pairs
 * (b, b + 1) while two are left, then one alone:
 *   - "one row" form (mnb_qa.m1_from: MLAS's kernel for a single row): weights minus the
 *     zero point (8 without zero points). In a pair without zero points, the 8-value
 *     groups g = 0..3 of block b go to lanes 0, 1, 4, 5 and those of b + 1 to 2, 3, 6, 7;
 *     with zero points, each block of the pair in turn puts its 4-value groups j = 0..7
 *     into lanes j. A lone block: 4-value groups j into lanes j.
 *   - "rows" form (MLAS's kernel for several rows): raw weights 0..15, groups as above
 *     without zero points (8-value groups in pairs, 4-value groups alone), and the zero
 *     point enters afterwards as Z = sum over blocks, in order, of
 *     fma(scale_a * sum(q_a), -zero_point * scale_b, Z).
 *
 * AVX-512 class (MLAS's AVX-512 kernels; one form for every row, so onnxruntime's rows
 * do not depend on their batch there). Raw weights and Z afterwards as in the rows form
 * above. Blocks go in fours (4t .. 4t + 3) while four are left into sixteen lanes
 * W0..W15: block 4t + j, j = 2 jh + jl, puts the sum of its values {16 s + 4 h + i,
 * 16 s + 8 + 4 h + i : i < 4} (s, h in {0, 1}) into lane W(4 (s + 2 jl) + h + 2 jh).
 * Then Li = Wi + W(i + 8), and each remaining block puts its 4-value groups j into
 * lanes Lj.
 *
 * The lanes reduce as ((L0 + L1) + L2) + L3 + (((L4 + L5) + L6) + L7) for the columns
 * below N rounded down to 4, as ((L0 + L4) + (L2 + L6)) + ((L1 + L5) + (L3 + L7)) for
 * the last N % 4; then Y = r + bias, and in the rows form Y = (r + bias) + Z. */
#ifndef OG_NATIVE_KERNELS_MATMUL_NBITS_PACK_H
#define OG_NATIVE_KERNELS_MATMUL_NBITS_PACK_H

#include "backends/native/kernels/kernel.h"
#include "backends/native/kernels/matmul/matmul_nbits.h"
#include "base/isa.h"

enum { MNB_PANEL = 16 };

typedef struct mnb_pack {
    int64_t N, K, k_blocks;
    int block_size;
    int64_t panels;      /* even */
    int64_t panel_bytes; /* k_blocks * block_size * 8 */
    uint8_t *B;          /* [panels][panel_bytes] */
    float *scales;       /* [panels][k_blocks][16] */
    uint8_t *zp;         /* [panels][k_blocks][16], or NULL: 8 everywhere */
    size_t bytes;        /* held by the pack */
    int digits;          /* int8 rows per row of A: 1 (int8 arithmetic) or 3 (float) */
    bool mapped;         /* B, scales, zp point into a pack cache file (not freed here) */
} mnb_pack;

/* Whether a problem (weights, scales, zero points as mnb_run takes them) can be packed:
 * 4 bits without float zero points, in int8 or float arithmetic. */
bool mnb_pack_handles(const mnb_problem *p);
/* Packs p's B, scales and zero points (p->A, Y, bias, M are not used). */
og_status *mnb_pack_create(const mnb_problem *p, mnb_pack **out);
void mnb_pack_free(mnb_pack *pk);

/* The pack as one entry of a pack cache (base/pack_cache.h): its bytes (0: out of
 * memory), writing it (false: not written; a K past 131072 is never written), and a
 * pack over such an entry's memory (which must outlive it). Same bits as
 * mnb_pack_create. */
struct pack_writer;
size_t mnb_pack_file_size(const mnb_problem *p);
bool mnb_pack_write(const mnb_problem *p, struct pack_writer *w);
og_status *mnb_pack_from_file(const mnb_problem *p, const void *mem, mnb_pack **out);

/* Bytes of working memory mnb_pack_run needs for M rows on `threads` threads. */
size_t mnb_pack_work_size(const mnb_pack *pk, int64_t M, int threads);
/* Y[M][N] = A[M][K] . W^T + bias (bias may be NULL), over the pool, each row in its form
 * (forms: M of kernel_ctx.row_forms' values, or NULL: as onnxruntime computes a product
 * of these M rows); `work` holds mnb_pack_work_size() bytes, 64-byte aligned. */
void mnb_pack_run(threadpool *pool, const mnb_pack *pk, const float *A, int64_t M,
                  const uint8_t *forms, const float *bias, float *Y, void *work);
/* mnb_pack_run in two parts: the quantized A (qa_mem, mnb_pack_qa_size() bytes,
 * 64-byte aligned) and the rest of the working memory (work, mnb_pack_work_size() -
 * mnb_pack_qa_size() bytes). With qa_ready, qa_mem already holds what a run with the
 * same A and the same key (mnb_pack_qa_key) wrote there, and A is not read again;
 * otherwise it is written. Products that read one activation with equal keys (a
 * decoder's gate and up projections) so quantize it once: the quantized A is a function
 * of A and the key alone, so the results are the same bits either way. */
void mnb_pack_run_qa(threadpool *pool, const mnb_pack *pk, const float *A, int64_t M,
                     const uint8_t *forms, const float *bias, float *Y, void *qa_mem,
                     bool qa_ready, void *work);
size_t mnb_pack_qa_size(const mnb_pack *pk, int64_t M);
/* What the quantized A of M rows depends on besides A (rows, K, block size, digits, zero
 * points or not): MNB_QA_KEY words into key; returns MNB_QA_KEY. */
enum { MNB_QA_KEY = 6 };
int mnb_pack_qa_key(const mnb_pack *pk, int64_t M, int64_t *key);
/* The kernels mnb_pack_run uses for M rows under the active ISA ("avx512-vnni", ...). */
const char *mnb_pack_kernel_name(int64_t M);

/* ---- between matmul_nbits_pack.c and the ISA files ---------------------------------
 * Quantized A: row m's values in K order at q + m * q_stride (zero past K), its block
 * scales at scale + m * s_stride and its zero-point terms at zsum + m * s_stride:
 * -8 * sum(q) over the block without zero points, -sum(q) with them (the kernel then
 * multiplies by the column's zero point). Rows are padded to a multiple of 16 (zero). */
typedef struct mnb_qa {
    const int8_t *q;
    int64_t q_stride;
    const float *scale;
    const int32_t *zsum;
    int64_t s_stride;
    /* onnxruntime's order only: row m's sums of each 4 consecutive q at
     * gsum4 + m * (q_stride / 4) (the one-row form's zero-point terms) */
    const int32_t *gsum4;
    /* onnxruntime's order: which rows take the one-row form. onnxruntime runs a
     * product of M rows as tiles of 128 rows when it has more than one thread, and a
     * tile of one row (M = 1, or the last of 128k + 1) takes MLAS's one-row kernel. With
     * row forms (kernel_ctx.row_forms) each row takes the form of its token's run alone;
     * without, rows from m1_from on take it, as in onnxruntime's product of these rows. */
    const uint8_t *forms;
    bool many_threads;
    int64_t m1_from;
    /* onnxruntime's order: the AVX-512 class (isa_cpu_avx512_core), else the AVX2 one */
    bool mlas512;
} mnb_qa;

/* sum(q) over block b of row m, from its zero-point term (-8 or -1 times it) */
static inline int32_t mnb_qa_block_sum(const mnb_pack *pk, const mnb_qa *qa, int64_t m,
                                       int64_t b) {
    int32_t z = qa->zsum[m * qa->s_stride + b];
    return pk->zp ? -z : -z / 8;
}

static inline bool mnb_one_row(const mnb_qa *qa, int64_t m) {
    if (qa->mlas512) return false;
    if (qa->forms)
        return qa->forms[m] == BACKEND_ROW_ALONE ||
               (qa->forms[m] == BACKEND_ROW_LAST && qa->many_threads);
    return m >= qa->m1_from;
}

/* Whether the kernels compute in onnxruntime's order (see the arithmetic above). */
static inline bool mnb_ort_order(const mnb_pack *pk) {
    return pk->digits == 1 && pk->block_size == 32;
}

/* The output: Y[m][n] for n < N, row stride ldy, bias[n] added when not NULL. */
typedef struct mnb_out {
    float *Y;
    int64_t ldy;
    const float *bias;
} mnb_out;

/* Rows m0..m0+mr against panels [p0, p1), unpacking nibbles as they stream (decode,
 * decode batches and short prompts); mr is at most 4, or below the tile kernels' rows
 * for the AVX-512 kernel, which runs row groups of a batch over each panel pair. */
typedef void (*mnb_rows_fn)(const mnb_pack *pk, const mnb_qa *qa, int64_t m0, int mr,
                            int64_t p0, int64_t p1, const mnb_out *o);
/* Rows [m0, m1) against the panel pair (p, p + 1), whose weights unpack into `u8`
 * (K/4 rows of 128 bytes: 4 values of K for 16 columns of panel p, then of p + 1). */
typedef void (*mnb_tile_fn)(const mnb_pack *pk, const mnb_qa *qa, int64_t m0, int64_t m1,
                            int64_t p, uint8_t *u8, const mnb_out *o);

void mnb_pack_rows_generic(const mnb_pack *pk, const mnb_qa *qa, int64_t m0, int mr,
                           int64_t p0, int64_t p1, const mnb_out *o);
void mnb_pack_tile_generic(const mnb_pack *pk, const mnb_qa *qa, int64_t m0, int64_t m1,
                           int64_t p, uint8_t *u8, const mnb_out *o);
void mnb_pack_rows_avx2(const mnb_pack *pk, const mnb_qa *qa, int64_t m0, int mr,
                        int64_t p0, int64_t p1, const mnb_out *o);
void mnb_pack_tile_avx2(const mnb_pack *pk, const mnb_qa *qa, int64_t m0, int64_t m1,
                        int64_t p, uint8_t *u8, const mnb_out *o);
void mnb_pack_rows_avx512(const mnb_pack *pk, const mnb_qa *qa, int64_t m0, int mr,
                          int64_t p0, int64_t p1, const mnb_out *o);
void mnb_pack_tile_avx512(const mnb_pack *pk, const mnb_qa *qa, int64_t m0, int64_t m1,
                          int64_t p, uint8_t *u8, const mnb_out *o);
void mnb_pack_tile_amx(const mnb_pack *pk, const mnb_qa *qa, int64_t m0, int64_t m1,
                       int64_t p, uint8_t *u8, const mnb_out *o);

/* Writes the 16 columns of panel p for row m from 16 accumulated sums (bias added,
 * columns past N left alone). */
static inline void mnb_pack_store(const mnb_pack *pk, const mnb_out *o, int64_t m, int64_t p,
                                  const float *acc) {
    int64_t n0 = p * MNB_PANEL, n = pk->N - n0 < MNB_PANEL ? pk->N - n0 : MNB_PANEL;
    float *y = o->Y + m * o->ldy + n0;
    for (int64_t c = 0; c < n; c++) y[c] = o->bias ? acc[c] + o->bias[n0 + c] : acc[c];
}

#endif
