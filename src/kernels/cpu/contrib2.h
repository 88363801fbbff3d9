/* Private helpers of the second group of com.microsoft kernels (GroupQueryAttention,
 * MultiHeadAttention, RotaryEmbedding, the simplified (RMS) layer norms, QuickGelu,
 * BiasGelu, BiasAdd). Like the first group (contrib.h) they compute in float32 whatever
 * the storage type is; these helpers move rows between storage and float32. */
#ifndef OG_KERNELS_CPU_CONTRIB2_H
#define OG_KERNELS_CPU_CONTRIB2_H

#include "base/half.h"
#include "kernels/cpu/contrib.h"

#ifdef __F16C__
#include <immintrin.h>
#endif

/* Converts n elements of storage type dt (f32, f16, bf16) at src into float32. */
static inline void c2_load(og_dtype dt, const void *src, int64_t n, float *dst) {
    if (dt == OG_FLOAT32) {
        memcpy(dst, src, sizeof(float) * (size_t)n);
        return;
    }
    const uint16_t *s = src;
    int64_t i = 0;
    if (dt == OG_FLOAT16) {
#ifdef __F16C__
        for (; i + 8 <= n; i += 8)
            _mm256_storeu_ps(dst + i, _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(s + i))));
#endif
        for (; i < n; i++) dst[i] = f16_to_f32(s[i]);
    } else {
        for (; i < n; i++) dst[i] = bf16_to_f32(s[i]);
    }
}

/* Converts n float32 values into storage type dt at dst. */
static inline void c2_store(og_dtype dt, void *dst, int64_t n, const float *src) {
    if (dt == OG_FLOAT32) {
        memcpy(dst, src, sizeof(float) * (size_t)n);
        return;
    }
    uint16_t *d = dst;
    int64_t i = 0;
    if (dt == OG_FLOAT16) {
#ifdef __F16C__
        for (; i + 8 <= n; i += 8)
            _mm_storeu_si128((__m128i *)(d + i),
                             _mm256_cvtps_ph(_mm256_loadu_ps(src + i), _MM_FROUND_TO_NEAREST_INT));
#endif
        for (; i < n; i++) d[i] = f32_to_f16(src[i]);
    } else {
        for (; i < n; i++) d[i] = f32_to_bf16(src[i]);
    }
}

/* x rounded to storage type dt and back (identity for float32). */
static inline float c2_round(og_dtype dt, float x) {
    if (dt == OG_FLOAT16) return f16_to_f32(f32_to_f16(x));
    if (dt == OG_BFLOAT16) return bf16_to_f32(f32_to_bf16(x));
    return x;
}

/* Rotates the first 2*half elements of x in place by the angles whose cosines and sines
 * are c[0..half) and s[0..half): pairs (x[j], x[j + half]), or (x[2j], x[2j + 1]) when
 * interleaved. */
static inline void c2_rope(float *x, const float *c, const float *s, int64_t half,
                           bool interleaved) {
    if (interleaved) {
        for (int64_t j = 0; j < half; j++) {
            float a = x[2 * j], b = x[2 * j + 1];
            x[2 * j] = a * c[j] - b * s[j];
            x[2 * j + 1] = a * s[j] + b * c[j];
        }
    } else {
        for (int64_t j = 0; j < half; j++) {
            float a = x[j], b = x[j + half];
            x[j] = a * c[j] - b * s[j];
            x[j + half] = a * s[j] + b * c[j];
        }
    }
}

/* Dot product with eight independent partial sums, so that it vectorizes without
 * reassociation flags. */
static inline float c2_dot(const float *a, const float *b, int64_t n) {
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
static inline void c2_weighted_rows(float *restrict y, const float *restrict p,
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

og_status *cpu_contrib_gqa(kernel_ctx *ctx);
og_status *cpu_contrib_mha(kernel_ctx *ctx);
og_status *cpu_contrib_rotary(kernel_ctx *ctx);
og_status *cpu_simplified_layer_norm(kernel_ctx *ctx);
og_status *cpu_contrib_skip_simplified_layer_norm(kernel_ctx *ctx);
og_status *cpu_contrib_quick_gelu(kernel_ctx *ctx);
og_status *cpu_contrib_bias_gelu(kernel_ctx *ctx);
og_status *cpu_contrib_bias_add(kernel_ctx *ctx);

#endif
