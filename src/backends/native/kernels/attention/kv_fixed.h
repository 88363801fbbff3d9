/* Key/value caches quantized with fixed scales: GroupQueryAttention's k_quant_type /
 * v_quant_type (PER_TENSOR or PER_CHANNEL) with the k_scale / v_scale inputs (inputs 12
 * and 13) and kv_cache_bit_width, the caches onnxruntime-genai's model builder writes
 * for kv_cache_quant_scheme int8_* / int4_*. The rows hold codes only (no scale beside
 * them, unlike backends/kv_format.h's per-row layout); the scales are the node's.
 *
 * onnxruntime's CPU kernel is the definition (checked against it, tests/contrib_llm/
 * make_kvquant_cases.py): a value x of channel c (c = kv head * D + d per channel, 0 per
 * tensor) is stored as clamp(rint(x * (1 / scale[c])), lo, hi), the reciprocal taken
 * in float32 and ties to even; lo..hi is -128..127 for 8 bits, and -8..7 for 4 bits,
 * stored plus 8 as a nibble, two a byte with the even element in the low nibble (a row
 * is (D + 1) / 2 bytes). A code reads back as (float)code * scale[c]; attention runs on
 * those values, the new rows included. */
#ifndef OG_NATIVE_KERNELS_ATTENTION_KV_FIXED_H
#define OG_NATIVE_KERNELS_ATTENTION_KV_FIXED_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum { KV_FIXED_MAX_HEAD = 1024 };

typedef struct kv_fixed {
    int bits;             /* 8 or 4 */
    bool per_channel;     /* scale has kv_heads * D values, else one */
    const float *scale;
} kv_fixed;

static inline size_t kv_fixed_row_bytes(const kv_fixed *f, int64_t D) {
    return f->bits == 4 ? (size_t)(D + 1) / 2 : (size_t)D;
}

/* D values of kv head g as one row of codes at dst. */
void kv_fixed_store(const kv_fixed *f, int64_t g, void *dst, const float *src, int64_t D);
/* n consecutive rows of kv head g at src as float32, D values each, packed at dst. */
void kv_fixed_load(const kv_fixed *f, int64_t g, const void *src, int64_t n, int64_t D,
                   float *dst);
/* kv_fixed_load with AVX2 (kv_fixed_avx2.c); s: kv head g's scales. */
void kv_fixed_load_avx2(const kv_fixed *f, const float *s, const void *src, int64_t n,
                        int64_t D, float *dst);
/* x stored and read back in place (what attention reads of it); D <= KV_FIXED_MAX_HEAD. */
void kv_fixed_round(const kv_fixed *f, int64_t g, float *x, int64_t D);

#endif
