/* MatMulNBits reference loops and the A quantizer every path shares (see matmul_nbits.h). */
#include "backends/native/kernels/matmul/matmul_nbits.h"

#include <math.h>

void mnb_quantize_block(const float *a, int64_t len, int8_t *q, float *scale, int32_t *sum) {
    float amax = 0.0f;
    for (int64_t i = 0; i < len; i++) {
        float v = fabsf(a[i]);
        amax = v > amax ? v : amax;
    }
    /* onnxruntime multiplies by 127/amax (not by 1/scale), then rounds half to even */
    float mul = amax != 0.0f ? 127.0f / amax : 0.0f;
    int32_t s = 0;
    for (int64_t i = 0; i < len; i++) {
        float v = nearbyintf(a[i] * mul);
        v = v > 127.0f ? 127.0f : v < -127.0f ? -127.0f : v;
        q[i] = (int8_t)v;
        s += q[i];
    }
    *scale = amax / 127.0f;
    *sum = s;
}

void mnb_digits_block(const float *a, int64_t len, int8_t *d, int64_t d_stride, float *scale,
                      int32_t *sums) {
    float amax = 0.0f;
    for (int64_t i = 0; i < len; i++) {
        float v = fabsf(a[i]);
        amax = v > amax ? v : amax;
    }
    float mul = amax != 0.0f ? 127.0f / amax : 0.0f;
    int32_t s1 = 0, s2 = 0, s3 = 0;
    for (int64_t i = 0; i < len; i++) {
        /* u * 65536 is exact (|u| <= 127 + a rounding), its rounding a 24-bit integer */
        int32_t U = (int32_t)nearbyintf(a[i] * mul * 65536.0f);
        int32_t d3 = ((U + 128) & 255) - 128, V = (U - d3) / 256;
        int32_t d2 = ((V + 128) & 255) - 128, d1 = (V - d2) / 256;
        d[i] = (int8_t)d1;
        d[d_stride + i] = (int8_t)d2;
        d[2 * d_stride + i] = (int8_t)d3;
        s1 += d1;
        s2 += d2;
        s3 += d3;
    }
    *scale = amax / 127.0f;
    sums[0] = s1;
    sums[1] = s2;
    sums[2] = s3;
}

static double ref_float(const mnb_problem *p, int64_t m, int64_t n) {
    const float *a = p->A + m * p->K;
    double acc = 0;
    for (int64_t b = 0; b < p->k_blocks; b++) {
        double s = p->scales[n * p->k_blocks + b], z = mnb_zero_point(p, n, b);
        int64_t k0 = b * p->block_size;
        for (int64_t k = k0; k < k0 + p->block_size && k < p->K; k++)
            acc += (double)a[k] * ((mnb_weight(p, n, k) - z) * s);
    }
    return acc;
}

static double ref_int8(const mnb_problem *p, int64_t m, int64_t n) {
    const float *a = p->A + m * p->K;
    int8_t q[256]; /* the largest block onnxruntime (and the kernel) accepts */
    double acc = 0;
    for (int64_t b = 0; b < p->k_blocks; b++) {
        int64_t k0 = b * p->block_size;
        int64_t len = p->K - k0 < p->block_size ? p->K - k0 : p->block_size;
        float sa = 0.0f;
        int32_t qsum;
        if (len > (int64_t)sizeof q) return NAN; /* block_size is capped by the kernel */
        mnb_quantize_block(a + k0, len, q, &sa, &qsum);
        int z = (int)mnb_zero_point(p, n, b);
        int64_t dot = 0;
        for (int64_t i = 0; i < len; i++) dot += (int64_t)q[i] * (mnb_weight(p, n, k0 + i) - z);
        acc += (double)sa * p->scales[n * p->k_blocks + b] * (double)dot;
    }
    return acc;
}

void mnb_ref(const mnb_problem *p) {
    for (int64_t m = 0; m < p->M; m++)
        for (int64_t n = 0; n < p->N; n++) {
            double v = p->int8 ? ref_int8(p, m, n) : ref_float(p, m, n);
            if (p->bias) v += p->bias[n];
            p->Y[m * p->N + n] = (float)v;
        }
}
