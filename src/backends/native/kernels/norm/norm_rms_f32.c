/* RMS normalization of one float32 row with onnxruntime's (1.31) float32 arithmetic, bit
 * for bit, measured against onnxruntime's CPU kernels (tests/unit/test_norm_rms_f32.c and
 * tests/quant/norm_rms_cases.py):
 *
 * SimplifiedLayerNormalization, rows of 16 or more (onnxruntime's AVX2+FMA kernel, which
 * it runs on every x86-64 CPU with AVX2 and FMA, AVX-512 ones included):
 *   - the sum of squares in eight float lanes, lane e taking elements 8j + e by fused
 *     multiply-add over the whole groups of eight; the lanes combined as
 *     ((l0 + l4) + (l2 + l6)) + ((l1 + l5) + (l3 + l7));
 *   - the rest (n % 8 elements) added in order: the first four of them (when there are
 *     four or more) as a rounded square added, the others by fused multiply-add;
 *   - inv = 1 / sqrtf(sum / n + epsilon), all in float; y = (x * inv) * scale.
 * SimplifiedLayerNormalization, rows under 16, and SkipSimplifiedLayerNormalization
 * (any length): the sum of rounded squares in order in float, d = sqrtf(sum / n +
 * epsilon), y = (x / d) * scale; inv = 1 / d.
 *
 * Why bits matter here: MatMulNBits at accuracy_level 4 quantizes its input to int8 per
 * block (round half to even of x * 127 / amax), and a normalized row of an int4-quantized
 * embedding (GatherBlockQuantized: a tied embedding of onnxruntime-genai's builder) holds
 * exact ratios of small integers, so many values fall exactly on a half: one ulp of the
 * norm decides the rounding, and the product moves by a whole quantization step.
 *
 * This file and its AVX2 sums (norm_rms_f32_avx2.c, the same values) are compiled with
 * -ffp-contract=off (CMakeLists.txt): every fused multiply-add here is an explicit fmaf,
 * and every other product is rounded. */
#include "backends/native/kernels/norm/norm.h"

#include "base/isa.h"

#include <math.h>

#if defined(__x86_64__)
#define HAVE_AVX2_SUMS 1
#else
#define HAVE_AVX2_SUMS 0
#endif

float cpu_rms_f32_sumsq_lanes(const float *x, int64_t n) {
#if HAVE_AVX2_SUMS
    if (isa_active() >= ISA_AVX2) return cpu_rms_f32_sumsq_lanes_avx2(x, n);
#endif
    float l[8] = {0};
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
        for (int e = 0; e < 8; e++) l[e] = fmaf(x[i + e], x[i + e], l[e]);
    float h0 = l[0] + l[4], h1 = l[1] + l[5], h2 = l[2] + l[6], h3 = l[3] + l[7];
    float s = (h0 + h2) + (h1 + h3);
    if (n - i >= 4)
        for (int64_t e = i + 4; i < e; i++) {
            float p = x[i] * x[i];
            s = s + p;
        }
    for (; i < n; i++) s = fmaf(x[i], x[i], s);
    return s;
}

float cpu_rms_f32_sumsq_ordered(const float *x, int64_t n) {
    float s = 0.0f;
    for (int64_t i = 0; i < n; i++) {
        float p = x[i] * x[i];
        s = s + p;
    }
    return s;
}

void cpu_rms_f32_sumsq_lanes_rows(const float *x, int64_t ld, int rows, int64_t n,
                                  float *sums) {
    int r = 0;
#if HAVE_AVX2_SUMS
    if (isa_active() >= ISA_AVX2)
        for (; r + 4 <= rows; r += 4) cpu_rms_f32_sumsq_lanes_rows4_avx2(x + r * ld, ld, n, sums + r);
#endif
    for (; r < rows; r++) sums[r] = cpu_rms_f32_sumsq_lanes(x + r * ld, n);
}

/* Each sum is one chain of dependent additions; eight rows at once keep eight chains in
 * flight instead of waiting on one. */
void cpu_rms_f32_sumsq_ordered_rows(const float *x, int64_t ld, int rows, int64_t n,
                                    float *sums) {
    if (rows != 8) {
        for (int r = 0; r < rows; r++) sums[r] = cpu_rms_f32_sumsq_ordered(x + r * ld, n);
        return;
    }
#if HAVE_AVX2_SUMS
    if (isa_active() >= ISA_AVX2) {
        cpu_rms_f32_sumsq_ordered_rows8_avx2(x, ld, n, sums);
        return;
    }
#endif
    float s[8] = {0};
    for (int64_t i = 0; i < n; i++)
        for (int r = 0; r < 8; r++) {
            float v = x[r * ld + i], p = v * v;
            s[r] = s[r] + p;
        }
    for (int r = 0; r < 8; r++) sums[r] = s[r];
}

bool cpu_rms_f32_lanes(int64_t n, bool skip) { return !skip && n >= 16; }

float cpu_rms_f32_apply(const float *x, int64_t n, const float *scale, float eps, bool lanes,
                        float sumsq, float *y) {
    if (n == 0) return 1.0f / sqrtf(eps);
    float mean = sumsq / (float)n;
    /* in blocks of eight, each read whole before it is written (y may be x), so that
     * they vectorize at -O2 */
    int64_t i = 0;
    if (lanes) {
        float inv = 1.0f / sqrtf(mean + eps);
        for (; i + 8 <= n; i += 8) {
            float t[8];
            for (int e = 0; e < 8; e++) t[e] = (x[i + e] * inv) * scale[i + e];
            for (int e = 0; e < 8; e++) y[i + e] = t[e];
        }
        for (; i < n; i++) {
            float t = x[i] * inv;
            y[i] = t * scale[i];
        }
        return inv;
    }
    float d = sqrtf(mean + eps);
    for (; i + 8 <= n; i += 8) {
        float t[8];
        for (int e = 0; e < 8; e++) t[e] = (x[i + e] / d) * scale[i + e];
        for (int e = 0; e < 8; e++) y[i + e] = t[e];
    }
    for (; i < n; i++) {
        float t = x[i] / d;
        y[i] = t * scale[i];
    }
    return 1.0f / d;
}

float cpu_rms_f32_row(const float *x, int64_t n, const float *scale, float eps, bool skip,
                      float *y) {
    bool lanes = cpu_rms_f32_lanes(n, skip);
    float sumsq = lanes ? cpu_rms_f32_sumsq_lanes(x, n) : cpu_rms_f32_sumsq_ordered(x, n);
    return cpu_rms_f32_apply(x, n, scale, eps, lanes, sumsq, y);
}
