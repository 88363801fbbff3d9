/* The attention family (com.microsoft Attention, MultiHeadAttention,
 * GroupQueryAttention, RotaryEmbedding, MRotaryEmbedding; Attention and RotaryEmbedding
 * of opset 23):
 * kernels and the float32 row helpers they share. They compute in float32 whatever the
 * storage type is. */
#ifndef OG_NATIVE_KERNELS_ATTENTION_H
#define OG_NATIVE_KERNELS_ATTENTION_H

#include "backends/native/kernels/kernel_util.h"

#include <math.h>

/* Rotates the first 2*half elements of x in place by the angles whose cosines and sines
 * are c[0..half) and s[0..half): pairs (x[j], x[j + half]), or (x[2j], x[2j + 1]) when
 * interleaved. As onnxruntime rotates (MLAS's rope kernel): a c - b s and a s + b c each
 * as one fused multiply-add onto the other product rounded, so that q and k have its bits
 * (they feed the attention whose output MatMulNBits quantizes at accuracy_level 4). */
static inline void cpu_rope(float *x, const float *c, const float *s, int64_t half,
                           bool interleaved) {
    if (interleaved) {
        for (int64_t j = 0; j < half; j++) {
            float a = x[2 * j], b = x[2 * j + 1];
            x[2 * j] = fmaf(a, c[j], -(b * s[j]));
            x[2 * j + 1] = fmaf(a, s[j], b * c[j]);
        }
    } else {
        int64_t j = 0;
        for (; j + 8 <= half; j += 8) { /* read whole before written: vectorizes at -O2 */
            float a[8], b[8], ya[8], yb[8];
            for (int e = 0; e < 8; e++) a[e] = x[j + e], b[e] = x[j + half + e];
            for (int e = 0; e < 8; e++) {
                ya[e] = fmaf(a[e], c[j + e], -(b[e] * s[j + e]));
                yb[e] = fmaf(a[e], s[j + e], b[e] * c[j + e]);
            }
            for (int e = 0; e < 8; e++) x[j + e] = ya[e], x[j + half + e] = yb[e];
        }
        for (; j < half; j++) {
            float a = x[j], b = x[j + half];
            x[j] = fmaf(a, c[j], -(b * s[j]));
            x[j + half] = fmaf(a, s[j], b * c[j]);
        }
    }
}


/* Dot product with eight independent partial sums, so that it vectorizes without
 * reassociation flags. */
static inline float cpu_dot(const float *a, const float *b, int64_t n) {
    float acc[8] = {0};
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
        for (int j = 0; j < 8; j++) acc[j] += a[i + j] * b[i + j];
    float r = ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]));
    for (; i < n; i++) r += a[i] * b[i];
    return r;
}

/* y[0..n) += sum over k < m of p[k] * rows[k * ld + 0..n): the probability-weighted sum
 * of value rows, four rows per pass so that y is loaded and stored once per four. The
 * inner loops are blocks of eight so that they vectorize at -O2 (no epilogue needed). */
static inline void cpu_weighted_rows(float *restrict y, const float *restrict p,
                                    const float *restrict rows, int64_t ld, int64_t m,
                                    int64_t n) {
    int64_t k = 0, n8 = n & ~(int64_t)7;
    for (; k + 4 <= m; k += 4) {
        const float *r0 = rows + k * ld, *r1 = r0 + ld, *r2 = r1 + ld, *r3 = r2 + ld;
        float p0 = p[k], p1 = p[k + 1], p2 = p[k + 2], p3 = p[k + 3];
        for (int64_t d = 0; d < n8; d += 8)
            for (int e = 0; e < 8; e++)
                y[d + e] += p0 * r0[d + e] + p1 * r1[d + e] + p2 * r2[d + e] + p3 * r3[d + e];
        for (int64_t d = n8; d < n; d++) y[d] += p0 * r0[d] + p1 * r1[d] + p2 * r2[d] + p3 * r3[d];
    }
    for (; k < m; k++) {
        const float *r = rows + k * ld;
        float pk = p[k];
        for (int64_t d = 0; d < n8; d += 8)
            for (int e = 0; e < 8; e++) y[d + e] += pk * r[d + e];
        for (int64_t d = n8; d < n; d++) y[d] += pk * r[d];
    }
}

/* Decode attention over n cached rows of D floats, contiguous (attention_rows.c):
 * s[t] = scale * q . k[t], and y[0..D) += sum over t of p[t] * v[t]. Vectorized for D a
 * multiple of 8 up to 256 (AVX-512 builds); the same values as the loops above up to the
 * order of the sums. */
void cpu_attn_scores(const float *q, const float *k, int64_t n, int64_t D, float scale,
                     float *s);
void cpu_attn_weighted(float *y, const float *p, const float *v, int64_t n, int64_t D);
/* cpu_attn_scores for nh queries q + h * q_ld against the same n contiguous keys, query
 * h's scores at s + h * s_ld: the same bits, each key row read once for two queries. */
void cpu_attn_scores_heads(const float *q, int64_t q_ld, int64_t nh, const float *k, int64_t n,
                           int64_t D, float scale, float *s, int64_t s_ld);
/* The AVX2 path of the two above on builds without AVX-512 (D a multiple of 8 up to 256;
 * attention_rows_avx2.c), called where the CPU has AVX2. */
void cpu_attn_scores_heads_avx2(const float *q, int64_t q_ld, int64_t nh, const float *k,
                                int64_t n, int64_t D, float scale, float *s, int64_t s_ld);
/* The tiles' probability-weighted sum of value rows for nh heads on AVX2 (builds without
 * AVX-512; D a multiple of 8 up to 256): o[h] += sum over x < n of w[h][x] * v[x]. */
void cpu_attn_weighted_heads_avx2(float *const *o, const float *const *w, const float *const *v,
                                  int64_t n, int64_t D, int64_t nh);
/* The same a block of keys at a time (x0 .. x1 of the run, rows v[x - x0]), each head's
 * 2 D accumulators waiting in am (nh * 2 * D floats) between blocks; every block but the
 * last an even number of keys: the whole run's bits (attention_tiles.c's decode blocks). */
void cpu_attn_weighted_heads_avx2_block(float *am, float *const *o, const float *const *w,
                                        const float *const *v, int64_t x0, int64_t x1, bool first,
                                        bool last, int64_t D, int64_t nh);

/* The same scores with the keys laid across the lanes, for many queries against the same
 * keys: cpu_attn_keys_t writes keys k[0..n) (rows of D floats) as blocks of 16 keys,
 * kt[(t / 16) * 16 * D + d * 16 + t % 16], zero past n, and returns false where this
 * build or head size has no such path (AVX-512, D a multiple of 8 up to 256); then
 * cpu_attn_scores_t writes the scores of the first 16 * nb keys, each the value
 * cpu_attn_scores gives it (the same bits, but for the sign of a zero score). */
bool cpu_attn_keys_t(const float *const *k, int64_t n, int64_t D, float *kt);
void cpu_attn_scores_t(const float *q, const float *kt, int64_t nb, int64_t D, float scale,
                       float *s);
/* cpu_attn_scores_t for nh queries q + h * q_ld against the same keys, query h's scores
 * at s + h * s_ld (the same bits; each key vector is loaded once for up to four queries). */
void cpu_attn_scores_t_heads(const float *q, int64_t q_ld, int64_t nh, const float *kt,
                             int64_t nb, int64_t D, float scale, float *s, int64_t s_ld);

/* cpu_attn_keys_t over quantized rows (kv_lanes.h: kv_format.h's int8 / float8 rows or
 * the node's fixed-scale codes, f->row_bytes each), dequantized in registers as they are
 * laid across the lanes: the layout cpu_attn_keys_t writes for the rows' float32 values.
 * cpu_attn_q_fast says whether this build, CPU level and head size have it (AVX-512, D a
 * multiple of 16 up to 256). */
typedef struct kvl_src kvl_src;
bool cpu_attn_q_fast(int64_t D);
void cpu_attn_keys_t_q(const kvl_src *f, const char *const *k, int64_t n, float *kt);

/* ---- a GroupQueryAttention node (gqa_node.c) --------------------------------------
 * The attributes and the query, key, value, rotary-cache and head_sink inputs of a
 * com.microsoft GroupQueryAttention node, read and checked once for both of its kernels:
 * over the node's own past/present cache (attention_gqa.c) and over the serving engine's
 * paged cache (attention_paged.c), so that the two bind the same rows the same way. */
typedef struct gqa_node {
    int64_t N, KV;        /* num_heads, kv_num_heads (N a positive multiple of KV) */
    bool causal, rotary, interleaved, smooth;
    int64_t window;       /* local_window_size (-1: none) */
    float softcap, scale; /* scale: the attribute, or 1 / sqrt(D) when it is 0 or absent */
    int64_t B, S, H, D;   /* query (B, S, H): H = N * D, or (N + 2 * KV) * D when packed */
    bool packed;          /* Q, K and V packed in input 0 (key and value omitted) */
    int64_t half, max_pos; /* rotary: cos_cache / sin_cache are (max_pos, half) */
    const float *cos, *sin; /* their float32 views (rotary only) */
    const float *sink;    /* head_sink (N) as float32, or NULL */
} gqa_node;
/* Reads the node's attributes and checks inputs 0-2, 7, 8 and 11 (shapes; every one in
 * the query's dtype, as is attention_bias when given; past_key and past_value are each
 * kernel's to check: a cache may be stored narrower than the query, kv_rows.h). */
og_status *gqa_read_node(kernel_ctx *ctx, gqa_node *g);
/* The new tokens' rows as float32: token t's query heads at q + t * q_ld, its kv heads'
 * keys and values at k + t * k_ld and v + t * v_ld (views into the packed input, or the
 * three inputs). */
typedef struct gqa_rows {
    const float *q, *k, *v;
    int64_t q_ld, k_ld, v_ld;
} gqa_rows;
og_status *gqa_bind_rows(kernel_ctx *ctx, const gqa_node *g, gqa_rows *r);

/* The family's kernels, each og_status *cpu_<name>(kernel_ctx *ctx) (KERNEL_DECLARE). */
#define ATTENTION_KERNELS(X)                                                                \
    X(contrib_attention) X(contrib_gqa) X(contrib_mha) X(contrib_rotary)                    \
    X(contrib_mrotary) X(rotary) X(onnx_attention)
ATTENTION_KERNELS(KERNEL_DECLARE)

#endif
