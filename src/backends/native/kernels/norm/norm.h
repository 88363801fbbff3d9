/* The normalization family: LayerNormalization, RMSNormalization, LpNormalization and the
 * com.microsoft Simplified/Skip/SkipSimplified/EmbedLayerNormalization and GatedRMSNorm
 * kernels. */
#ifndef OG_NATIVE_KERNELS_NORM_H
#define OG_NATIVE_KERNELS_NORM_H

#include "backends/native/kernels/kernel_util.h"

/* sum over i < n of (x[i] - mu)^2 (mu = 0: of x[i]^2), or of x[i] when !sq, in double:
 * eight partial sums (element i into sum i % 8) combined pairwise at the end, so that the
 * loop vectorizes without reassociation flags. A row's value depends only on the row. */
static inline double cpu_row_sum_f64(const float *x, int64_t n, double mu, bool sq) {
    double acc[8] = {0};
    int64_t i = 0;
    if (sq) {
        for (; i + 8 <= n; i += 8)
            for (int e = 0; e < 8; e++) {
                double d = (double)x[i + e] - mu;
                acc[e] += d * d;
            }
    } else {
        for (; i + 8 <= n; i += 8)
            for (int e = 0; e < 8; e++) acc[e] += (double)x[i + e];
    }
    double r = ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]));
    for (; i < n; i++) {
        double d = (double)x[i] - mu;
        r += sq ? d * d : (double)x[i];
    }
    return r;
}

/* y[i] = a[i] + b[i] (+ c[i] when c), and y[i] = x[i] * inv * s[i]; y may be a or x. In
 * blocks of eight, each block read whole before it is written, so that they vectorize at
 * -O2 whatever the pointers overlap. */
static inline void cpu_row_add(float *y, const float *a, const float *b, const float *c,
                               int64_t n) {
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        float t[8];
        for (int e = 0; e < 8; e++) t[e] = a[i + e] + b[i + e];
        if (c)
            for (int e = 0; e < 8; e++) t[e] += c[i + e];
        for (int e = 0; e < 8; e++) y[i + e] = t[e];
    }
    for (; i < n; i++) y[i] = c ? a[i] + b[i] + c[i] : a[i] + b[i];
}

static inline void cpu_row_scale(float *y, const float *x, float inv, const float *s, int64_t n) {
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        float t[8];
        for (int e = 0; e < 8; e++) t[e] = x[i + e] * inv * s[i + e];
        for (int e = 0; e < 8; e++) y[i + e] = t[e];
    }
    for (; i < n; i++) y[i] = x[i] * inv * s[i];
}

/* RMS normalization of one float32 row as onnxruntime computes it, bit for bit
 * (norm_rms_f32.c): SimplifiedLayerNormalization (skip false) or the normalization of
 * SkipSimplifiedLayerNormalization (skip true, x the sum already formed); y may be x.
 * Returns the inverse RMS as onnxruntime reports it (inv_std_var). The sums of squares
 * it uses are exported for the tests. */
float cpu_rms_f32_row(const float *x, int64_t n, const float *scale, float eps, bool skip,
                      float *y);
/* cpu_rms_f32_row in parts: which sum of squares a row takes (the eight lanes, or the
 * ordered sum), the sums (also of `rows` rows ld apart at once, up to 8 for the ordered
 * one: the same values as row by row), and the normalization from the sum. */
bool cpu_rms_f32_lanes(int64_t n, bool skip);
float cpu_rms_f32_sumsq_lanes(const float *x, int64_t n);
float cpu_rms_f32_sumsq_ordered(const float *x, int64_t n);
void cpu_rms_f32_sumsq_ordered_rows(const float *x, int64_t ld, int rows, int64_t n,
                                    float *sums);
void cpu_rms_f32_sumsq_lanes_rows(const float *x, int64_t ld, int rows, int64_t n,
                                  float *sums);
float cpu_rms_f32_apply(const float *x, int64_t n, const float *scale, float eps, bool lanes,
                        float sumsq, float *y);
/* The two sums with AVX2 (norm_rms_f32_avx2.c; only when the CPU has it): the same bits. */
float cpu_rms_f32_sumsq_lanes_avx2(const float *x, int64_t n);
void cpu_rms_f32_sumsq_lanes_rows4_avx2(const float *x, int64_t ld, int64_t n, float *sums);
void cpu_rms_f32_sumsq_ordered_rows8_avx2(const float *x, int64_t ld, int64_t n, float *sums);

/* The layer normalization shared by the norm kernels: y = (x - mean) * inv * gamma + beta
 * over n elements; returns mean and inv through the pointers. beta may be NULL. */
void cpu_layer_norm_row(const float *x, int64_t n, const float *gamma, const float *beta,
                       float eps, float *y, float *mean, float *inv);

/* The family's kernels, each og_status *cpu_<name>(kernel_ctx *ctx) (KERNEL_DECLARE). */
#define NORM_KERNELS(X)                                                                     \
    X(layer_norm) X(rms_norm) X(simplified_layer_norm)                                      \
    X(contrib_skip_simplified_layer_norm) X(contrib_embed_layer_norm)                       \
    X(contrib_skip_layer_norm) X(contrib_gated_rms_norm) X(lp_normalization)
NORM_KERNELS(KERNEL_DECLARE)

#endif
