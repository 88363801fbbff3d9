/* Key/value cache rows: storing and loading (see kv_rows.h). */
#include "backends/native/kernels/attention/kv_rows.h"

#include "backends/native/kernels/kernel_util.h"
#include "base/isa.h"

#include <math.h>
#include <string.h>

/* float8e4m3fn: code bits s eeee mmm (bias 7), no infinities, 0x7f / 0xff NaN, largest
 * finite 448 (0x7e). Shifting the seven low bits up by 20 gives a float32 whose value is
 * the code's times 2^-120 for normal and subnormal codes alike. */
static inline float f8_unscaled(uint8_t c) {
    uint32_t b = (uint32_t)(c & 0x7f) << 20 | (uint32_t)(c & 0x80) << 24;
    float f;
    memcpy(&f, &b, 4);
    return f;
}

static const float F8_UNIT = 0x1p120f; /* f8_unscaled(c) * F8_UNIT is the code's value */

static uint8_t f8_encode(float y) { /* |y| <= 448 after scaling, or NaN */
    uint32_t b;
    memcpy(&b, &y, 4);
    uint8_t sign = (uint8_t)(b >> 24 & 0x80);
    b &= 0x7fffffffu;
    if (b > 0x7f800000u) return 0x7f | sign; /* NaN stays NaN */
    float a;
    memcpy(&a, &b, 4);
    if (a >= 448.0f) return 0x7e | sign;
    if (a < 0x1p-6f) /* subnormal codes: multiples of 2^-9 (8 * 2^-9 is the first normal) */
        return (uint8_t)lrintf(a * 512.0f) | sign;
    uint32_t r = b + 0x7ffffu + (b >> 20 & 1); /* mantissa to 3 bits, ties to even */
    uint32_t code = ((r >> 23) - 120) << 3 | (r >> 20 & 7);
    return (uint8_t)(code > 0x7e ? 0x7e : code) | sign;
}

void kv_row_store(og_dtype dt, void *dst, const float *src, int64_t D) {
    if (!kv_quantized(dt)) {
        cpu_store_f32(dt, dst, D, src);
        return;
    }
    float amax = 0.0f;
    for (int64_t d = 0; d < D; d++) {
        float a = fabsf(src[d]);
        amax = a > amax ? a : amax; /* a NaN never wins */
    }
    float top = dt == OG_INT8 ? 127.0f : 448.0f;
    float scale = amax / top, inv = amax > 0.0f ? top / amax : 0.0f;
    uint8_t *q = dst;
    if (dt == OG_INT8) {
        for (int64_t d = 0; d < D; d++) {
            float y = src[d] * inv;
            long v = isnan(y) ? 0 : lrintf(y);
            q[d] = (uint8_t)(int8_t)(v > 127 ? 127 : v < -127 ? -127 : v);
        }
    } else {
        for (int64_t d = 0; d < D; d++) q[d] = f8_encode(src[d] * inv);
    }
    memcpy(q + D, &scale, 4);
}

static void rows_load_q_generic(og_dtype dt, const uint8_t *src, int64_t n, int64_t D,
                                float *dst) {
    size_t row = kv_row_bytes(dt, D);
    for (int64_t r = 0; r < n; r++, src += row, dst += D) {
        float s;
        memcpy(&s, src + D, 4);
        if (dt == OG_INT8) {
            for (int64_t d = 0; d < D; d++) dst[d] = (float)(int8_t)src[d] * s;
        } else {
            float su = s * F8_UNIT;
            if (isfinite(su))
                for (int64_t d = 0; d < D; d++) dst[d] = f8_unscaled(src[d]) * su;
            else /* a scale above 2^8: the two factors apart */
                for (int64_t d = 0; d < D; d++) dst[d] = f8_unscaled(src[d]) * F8_UNIT * s;
        }
    }
}

void kv_rows_load(og_dtype dt, const void *src, int64_t n, int64_t D, float *dst) {
    if (!kv_quantized(dt)) {
        cpu_load_f32(dt, src, n * D, dst);
        return;
    }
#if defined(__x86_64__)
    if (isa_active() >= ISA_AVX2) {
        kv_rows_load_q_avx2(dt, src, n, D, dst);
        return;
    }
#endif
    rows_load_q_generic(dt, src, n, D, dst);
}

void kv_row_round(og_dtype dt, float *x, int64_t D) {
    if (dt == OG_FLOAT32) return;
    if (!kv_quantized(dt)) {
        for (int64_t d = 0; d < D; d++) x[d] = cpu_round_to(dt, x[d]);
        return;
    }
    uint8_t row[KV_MAX_HEAD + KV_SCALE_BYTES];
    kv_row_store(dt, row, x, D);
    rows_load_q_generic(dt, row, 1, D, x);
}
