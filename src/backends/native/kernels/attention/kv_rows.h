/* How a key/value cache stores one row (one position of one kv head, D values), for
 * GroupQueryAttention's own cache and the serving engine's paged one.
 *
 * float32, float16 and bfloat16 rows are the D values. int8 and float8e4m3fn rows are
 * quantized per row (per token and head, no calibration): the D codes, then the row's
 * scale as a float32 (little-endian, unaligned), D + 4 bytes in all. The scale is the
 * row's largest magnitude over the code range's largest (127 for int8, 448 for
 * float8e4m3fn); a value is code * scale. In a tensor such a cache is int8 / float8 with
 * a last dimension of D + 4 (kv_stored_width), so that buffers sized by their element
 * count hold it unchanged.
 *
 * Reading (kv_rows_load) is the hot part: a decode step dequantizes every cached row
 * once per layer into a tile-sized scratch (attention_tiles.c), with AVX2 where the CPU
 * has it. The value of a code does not depend on the path: it is one multiply of the
 * code's exact float by the scale. */
#ifndef OG_NATIVE_KERNELS_ATTENTION_KV_ROWS_H
#define OG_NATIVE_KERNELS_ATTENTION_KV_ROWS_H

#include "base/tensor.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum { KV_SCALE_BYTES = 4, KV_MAX_HEAD = 1024 /* the largest head size of a quantized row */ };

static inline bool kv_quantized(og_dtype dt) { return dt == OG_INT8 || dt == OG_FLOAT8E4M3FN; }

/* A dtype a cache may be stored in. */
static inline bool kv_storable(og_dtype dt) {
    return dt == OG_FLOAT32 || dt == OG_FLOAT16 || dt == OG_BFLOAT16 || kv_quantized(dt);
}

/* Elements of the tensor's last dimension for head size D. */
static inline int64_t kv_stored_width(og_dtype dt, int64_t D) {
    return kv_quantized(dt) ? D + KV_SCALE_BYTES : D;
}

/* The head size of a stored width (inverse of kv_stored_width; <= 0 when too narrow). */
static inline int64_t kv_head_size(og_dtype dt, int64_t width) {
    return kv_quantized(dt) ? width - KV_SCALE_BYTES : width;
}

static inline size_t kv_row_bytes(og_dtype dt, int64_t D) {
    return kv_quantized(dt) ? (size_t)D + KV_SCALE_BYTES
                            : (size_t)D * (dt == OG_FLOAT32 ? 4 : 2);
}

/* Stores D float32 values as one row of dt (quantizing: round to nearest, ties to even;
 * float8 saturates at its largest finite value). */
void kv_row_store(og_dtype dt, void *dst, const float *src, int64_t D);
/* n consecutive rows of dt at src (kv_row_bytes apart) as float32, D values each,
 * packed at dst. */
void kv_rows_load(og_dtype dt, const void *src, int64_t n, int64_t D, float *dst);
/* x as a row of dt stores and loads it back, in place: what attention reads of it
 * (D <= KV_MAX_HEAD when dt is quantized). */
void kv_row_round(og_dtype dt, float *x, int64_t D);

/* The AVX2 dequantization (kv_rows_avx2.c), for kv_rows_load. */
void kv_rows_load_q_avx2(og_dtype dt, const uint8_t *src, int64_t n, int64_t D, float *dst);

#endif
