/* com.microsoft MatMulNBits: Y[M,N] = A[M,K] . dequant(B)^T + bias, with B quantized
 * block-wise along K to `bits` bits, stored one output column per row:
 * B[N][k_blocks][blob], blob = block_size * bits / 8 bytes, values packed from the low
 * bits of each byte up. dequant(q) = (q - zero_point) * scale per (column, block).
 *
 * Two kinds of arithmetic, chosen as onnxruntime 1.31 chooses them (measured, see
 * tests/quant/make_cases.py):
 *   float: A and the dequantized weights in float32 (accuracy_level 0-3, and level 4
 *          when zero points are given as floats).
 *   int8:  accuracy_level 4 with no or packed zero points (for 2 bits only with
 *          block sizes 32-128; otherwise onnxruntime stays in float). Each row of A is quantized
 *          per block of block_size along K, symmetrically: amax = max|a| over the block,
 *          scale_a = amax / 127, q_a = round_half_even(a * (127 / amax)) (0 when
 *          amax == 0; the multiplier is 127/amax, not 1/scale_a, which differs in the
 *          last bit at ties). Then Y = sum over blocks of scale_a * scale_b *
 *          (sum of q_a * (q_b - zero_point)) in exact integer arithmetic per block.
 *
 * Everything here works on float32 views: float16/bfloat16 A, scales, zero points and
 * bias are converted by the kernel before (and Y after). */
#ifndef OG_NATIVE_KERNELS_MATMUL_NBITS_H
#define OG_NATIVE_KERNELS_MATMUL_NBITS_H

#include "base/isa.h"
#include "base/status.h"
#include "base/threadpool.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct mnb_problem {
    int64_t M, N, K;
    int bits, block_size;
    int64_t k_blocks, blob;   /* blocks per column, bytes per block */
    const uint8_t *B;         /* [N][k_blocks][blob] */
    const float *scales;      /* [N][k_blocks] */
    const uint8_t *zp_packed; /* [N][zp_stride] packed like B, or NULL */
    int64_t zp_stride;        /* bytes per column of zp_packed: ceil(k_blocks*bits/8) */
    const float *zp_float;    /* [N][k_blocks], or NULL (at most one of the two) */
    const float *bias;        /* [N] or NULL */
    bool int8;                /* the accuracy_level 4 arithmetic above */
    const float *A;           /* [M][K] */
    float *Y;                 /* [M][N] */
} mnb_problem;

/* Zero point of (column n, block b) as a float (2^(bits-1) when none are given). */
static inline float mnb_zero_point(const mnb_problem *p, int64_t n, int64_t b) {
    if (p->zp_float) return p->zp_float[n * p->k_blocks + b];
    if (p->zp_packed) {
        int per = 8 / p->bits;
        uint8_t byte = p->zp_packed[n * p->zp_stride + b / per];
        return (float)((byte >> (p->bits * (int)(b % per))) & ((1 << p->bits) - 1));
    }
    return (float)(1 << (p->bits - 1));
}

/* Quantized value j of column n (j indexes K within the padded k_blocks*block_size). */
static inline int mnb_weight(const mnb_problem *p, int64_t n, int64_t j) {
    const uint8_t *col = p->B + n * p->k_blocks * p->blob;
    int per = 8 / p->bits;
    return (col[j / per] >> (p->bits * (int)(j % per))) & ((1 << p->bits) - 1);
}

/* The int8 quantization of one block of A (len values, len <= block size): q gets len
 * values, *scale the block scale, *sum the sum of q. Shared by every path so that all
 * agree bit for bit. */
void mnb_quantize_block(const float *a, int64_t len, int8_t *q, float *scale, int32_t *sum);

/* Float arithmetic on the int8 kernels (the prepacked path, matmul_nbits_pack.h): a
 * block of A becomes three rows of int8 digits with scales s, s/256 and s/65536, s =
 * amax/127: with u = a * (127/amax) and the integer U = round(65536 u) (the scaling is
 * exact), d1, d2, d3 are U's signed base-256 digits (d2, d3 in [-128, 127], U = 65536 d1
 * + 256 d2 + d3), so s (d1 + d2/256 + d3/65536) is u's float value to 2^-17 of s: the
 * three integer dot products are float32's product to about its own rounding, at a
 * third of the int8 kernels' speed instead of the float kernels' sixth. Digit i of
 * element k goes to d[i * d_stride + k]; sums[i] gets the sum of digit i. */
void mnb_digits_block(const float *a, int64_t len, int8_t *d, int64_t d_stride, float *scale,
                      int32_t *sums);
/* The same, vectorized (identical results); compiled for AVX-512, called when the CPU
 * has it. */
void mnb_x512_digits_block(const float *a, int64_t len, int8_t *d, int64_t d_stride,
                           float *scale, int32_t *sums);

/* The plain reference: loops over m, n, blocks on the calling thread, accumulating in
 * double. The fast path is tested against it. */
void mnb_ref(const mnb_problem *p);

/* From this many rows on, mnb_run in float arithmetic on weights as stored runs the sgemm
 * over dequantized panels, which sums in another order than the column kernels below it:
 * a caller that needs each row's bits independent of M (batch invariance) runs at most
 * MNB_GEMM_MIN_M - 1 rows per call. */
enum { MNB_GEMM_MIN_M = 16 };

/* Bytes of working memory mnb_run needs. */
size_t mnb_work_size(const mnb_problem *p);
/* The fast path over `pool`; `work` holds mnb_work_size() bytes, 64-byte aligned.
 * Errors only from the float32 GEMM used for long A in float arithmetic. */
og_status *mnb_run(threadpool *pool, const mnb_problem *p, void *work);

/* Which kernels mnb_run uses now ("avx512-vnni" or "generic"; see base/isa.h). */
const char *mnb_isa(void);

/* ---- between matmul_nbits.c and the ISA file ---------------------------------------
 * A is prepared once per call: quantized (int8) or copied (float), zero-padded to
 * a_stride values per row, in the order the column kernels read it (mnb_a_pos), with
 * per-block arrays of s_stride floats per row (zero-padded by 16 past k_blocks):
 * a_scale (int8: the block scales of A) and a_corr (int8: scale * sum of q; float: the
 * plain block sums), used to apply the zero points after the dot products. In int8
 * arithmetic without zero points, a_lane holds -2^(bits-1) times the sum of q over each
 * run of a_stride/lanes_per_row values (the lanes of the integer dot products), so that
 * the default zero point is applied by starting each lane's sum there. */
typedef struct mnb_job {
    const mnb_problem *p;
    const int8_t *aq;
    const float *af;
    int64_t a_stride;
    const float *a_scale, *a_corr;
    int64_t s_stride;
    const int32_t *a_lane;
    int64_t lane_values; /* values of A per lane; a_stride / lane_values lanes per row */
    bool x512;           /* the AVX-512 column kernels run (mnb_x512_handles) */
} mnb_job;

/* Whether the AVX-512 column kernels (matmul_nbits_avx512.c) take this problem now: the
 * CPU has AVX-512 VNNI, OG_ISA allows it, and the bits are 4 or 8. */
static inline bool mnb_x512_handles(const mnb_problem *p) {
#if defined(__x86_64__)
    return isa_active() >= ISA_AVX512 && (p->bits == 4 || p->bits == 8);
#else
    (void)p;
    return false;
#endif
}

/* Position of element k of a row of A in the prepared row: for 4 bits the ISA kernels
 * want each span (128 values for int8, 32 for float) as its even elements, then its odd
 * ones (the low and high nibbles of the span's bytes). */
static inline int64_t mnb_a_pos(const mnb_problem *p, int64_t k, bool x512) {
    if (!x512 || p->bits != 4) return k;
    int64_t span = p->int8 ? 128 : 32, r = k & (span - 1);
    return k - r + (r & 1) * (span / 2) + (r >> 1);
}
/* mnb_quantize_block, vectorized (the same results bit for bit). */
void mnb_x512_quantize_block(const float *a, int64_t len, int8_t *q, float *scale, int32_t *sum);
/* For 4 bits in int8 arithmetic: a prepared row of a_stride quantized values, written
 * in K order, put into the mnb_a_pos order in place, and its lane sums (8 values a
 * lane) times -zdef into lane[a_stride / 8]. */
void mnb_x512_finish_row4(int8_t *row, int64_t a_stride, int32_t zdef, int32_t *lane);
/* Y[m0..m0+mr) x [n0, n1) for mr <= 4, bias included. */
void mnb_x512_columns(const mnb_job *j, int64_t m0, int mr, int64_t n0, int64_t n1);
/* For 4 bits: the sgemm's B panel (gemm_f32_panel_fn) of columns [j0, j0 + n), values
 * [p0, p0 + kc) of K, dequantized: dst[k * nr + j], zero for j >= n; nr % 16 == 0. */
void mnb_x512_dequant_panel(const mnb_problem *p, int64_t j0, int64_t n, int64_t p0,
                            int64_t kc, int nr, float *dst);

#endif
