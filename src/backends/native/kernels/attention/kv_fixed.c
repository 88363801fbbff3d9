/* Key/value cache rows with fixed scales (see kv_fixed.h). */
#include "backends/native/kernels/attention/kv_fixed.h"

#include "base/isa.h"

#include <math.h>

static inline const float *scales_of(const kv_fixed *f, int64_t g, int64_t D) {
    return f->per_channel ? f->scale + g * D : f->scale;
}

/* rint under the default rounding mode: nearest, ties to even, as onnxruntime rounds */
static inline int code_of(float x, float inv, int lo, int hi) {
    float y = x * inv;
    if (isnan(y)) return 0;
    if (y <= (float)lo) return lo;
    if (y >= (float)hi) return hi;
    return (int)rintf(y);
}

void kv_fixed_store(const kv_fixed *f, int64_t g, void *dst, const float *src, int64_t D) {
    const float *s = scales_of(f, g, D);
    int64_t step = f->per_channel ? 1 : 0;
    if (f->bits == 8) {
        int8_t *q = dst;
        for (int64_t d = 0; d < D; d++) q[d] = (int8_t)code_of(src[d], 1.0f / s[d * step], -128, 127);
        return;
    }
    uint8_t *q = dst;
    for (int64_t d = 0; d < D; d += 2) {
        int lo = code_of(src[d], 1.0f / s[d * step], -8, 7) + 8;
        int hi = d + 1 < D ? code_of(src[d + 1], 1.0f / s[(d + 1) * step], -8, 7) + 8 : 8;
        q[d / 2] = (uint8_t)(lo | hi << 4);
    }
}

void kv_fixed_load(const kv_fixed *f, int64_t g, const void *src, int64_t n, int64_t D,
                   float *dst) {
    const float *s = scales_of(f, g, D);
#if defined(__x86_64__)
    if (isa_active() >= ISA_AVX2) {
        kv_fixed_load_avx2(f, s, src, n, D, dst);
        return;
    }
#endif
    size_t row = kv_fixed_row_bytes(f, D);
    const uint8_t *p = src;
    /* one product per value, the same on every path */
    for (int64_t r = 0; r < n; r++, p += row, dst += D) {
        if (f->bits == 8) {
            const int8_t *q = (const int8_t *)p;
            if (f->per_channel)
                for (int64_t d = 0; d < D; d++) dst[d] = (float)q[d] * s[d];
            else
                for (int64_t d = 0; d < D; d++) dst[d] = (float)q[d] * s[0];
        } else {
            for (int64_t d = 0; d < D; d++) {
                int c = (p[d / 2] >> (d % 2 * 4) & 15) - 8;
                dst[d] = (float)c * s[f->per_channel ? d : 0];
            }
        }
    }
}

void kv_fixed_round(const kv_fixed *f, int64_t g, float *x, int64_t D) {
    uint8_t row[KV_FIXED_MAX_HEAD]; /* the caller keeps D at most this */
    kv_fixed_store(f, g, row, x, D);
    kv_fixed_load(f, g, row, 1, D, x);
}
