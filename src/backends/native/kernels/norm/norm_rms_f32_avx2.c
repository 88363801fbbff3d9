/* The sums of squares of norm_rms_f32.c with AVX2/FMA (this file is compiled with AVX2/FMA
 * flags, without AVX-512 and with -ffp-contract=off, and only called when the CPU has
 * AVX2; see base/isa.h): the same values as the portable code, bit for bit. */
#if defined(__x86_64__)
#include "backends/native/kernels/norm/norm.h"

#include <immintrin.h>
#include <math.h>

/* The lanes combined, then the tail (i: where the groups of eight end). */
static float lanes_finish(__m256 acc, const float *x, int64_t i, int64_t n) {
    /* lanes (0 + 4, 1 + 5, 2 + 6, 3 + 7), then (h0 + h2, h1 + h3), then their sum */
    __m128 h = _mm_add_ps(_mm256_castps256_ps128(acc), _mm256_extractf128_ps(acc, 1));
    h = _mm_add_ps(h, _mm_movehl_ps(h, h));
    h = _mm_add_ss(h, _mm_movehdup_ps(h));
    float s = _mm_cvtss_f32(h);
    if (n - i >= 4)
        for (int64_t e = i + 4; i < e; i++) {
            float p = x[i] * x[i];
            s = s + p;
        }
    for (; i < n; i++) s = fmaf(x[i], x[i], s);
    return s;
}

float cpu_rms_f32_sumsq_lanes_avx2(const float *x, int64_t n) {
    __m256 acc = _mm256_setzero_ps();
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        __m256 v = _mm256_loadu_ps(x + i);
        acc = _mm256_fmadd_ps(v, v, acc);
    }
    return lanes_finish(acc, x, i, n);
}

/* Four rows at once (four chains of fused multiply-adds in flight), each as above. */
void cpu_rms_f32_sumsq_lanes_rows4_avx2(const float *x, int64_t ld, int64_t n, float *sums) {
    __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        __m256 v0 = _mm256_loadu_ps(x + i), v1 = _mm256_loadu_ps(x + ld + i);
        __m256 v2 = _mm256_loadu_ps(x + 2 * ld + i), v3 = _mm256_loadu_ps(x + 3 * ld + i);
        a0 = _mm256_fmadd_ps(v0, v0, a0);
        a1 = _mm256_fmadd_ps(v1, v1, a1);
        a2 = _mm256_fmadd_ps(v2, v2, a2);
        a3 = _mm256_fmadd_ps(v3, v3, a3);
    }
    sums[0] = lanes_finish(a0, x, i, n);
    sums[1] = lanes_finish(a1, x + ld, i, n);
    sums[2] = lanes_finish(a2, x + 2 * ld, i, n);
    sums[3] = lanes_finish(a3, x + 3 * ld, i, n);
}

/* Eight rows at once: each block of 8 x 8 values is transposed so that one vector holds
 * element i of the eight rows, and the sums advance in element order, one lane a row. */
void cpu_rms_f32_sumsq_ordered_rows8_avx2(const float *x, int64_t ld, int64_t n, float *sums) {
    __m256 s = _mm256_setzero_ps();
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        __m256 r0 = _mm256_loadu_ps(x + 0 * ld + i), r1 = _mm256_loadu_ps(x + 1 * ld + i);
        __m256 r2 = _mm256_loadu_ps(x + 2 * ld + i), r3 = _mm256_loadu_ps(x + 3 * ld + i);
        __m256 r4 = _mm256_loadu_ps(x + 4 * ld + i), r5 = _mm256_loadu_ps(x + 5 * ld + i);
        __m256 r6 = _mm256_loadu_ps(x + 6 * ld + i), r7 = _mm256_loadu_ps(x + 7 * ld + i);
        __m256 t0 = _mm256_unpacklo_ps(r0, r1), t1 = _mm256_unpackhi_ps(r0, r1);
        __m256 t2 = _mm256_unpacklo_ps(r2, r3), t3 = _mm256_unpackhi_ps(r2, r3);
        __m256 t4 = _mm256_unpacklo_ps(r4, r5), t5 = _mm256_unpackhi_ps(r4, r5);
        __m256 t6 = _mm256_unpacklo_ps(r6, r7), t7 = _mm256_unpackhi_ps(r6, r7);
        __m256 u0 = _mm256_shuffle_ps(t0, t2, 0x44), u1 = _mm256_shuffle_ps(t0, t2, 0xee);
        __m256 u2 = _mm256_shuffle_ps(t1, t3, 0x44), u3 = _mm256_shuffle_ps(t1, t3, 0xee);
        __m256 u4 = _mm256_shuffle_ps(t4, t6, 0x44), u5 = _mm256_shuffle_ps(t4, t6, 0xee);
        __m256 u6 = _mm256_shuffle_ps(t5, t7, 0x44), u7 = _mm256_shuffle_ps(t5, t7, 0xee);
        __m256 c[8] = {_mm256_permute2f128_ps(u0, u4, 0x20), _mm256_permute2f128_ps(u1, u5, 0x20),
                       _mm256_permute2f128_ps(u2, u6, 0x20), _mm256_permute2f128_ps(u3, u7, 0x20),
                       _mm256_permute2f128_ps(u0, u4, 0x31), _mm256_permute2f128_ps(u1, u5, 0x31),
                       _mm256_permute2f128_ps(u2, u6, 0x31), _mm256_permute2f128_ps(u3, u7, 0x31)};
        for (int e = 0; e < 8; e++) s = _mm256_add_ps(s, _mm256_mul_ps(c[e], c[e]));
    }
    float t[8];
    _mm256_storeu_ps(t, s);
    for (; i < n; i++)
        for (int r = 0; r < 8; r++) {
            float v = x[r * ld + i], p = v * v;
            t[r] = t[r] + p;
        }
    for (int r = 0; r < 8; r++) sums[r] = t[r];
}
#endif
