/* How a key/value cache row is stored (one position of one kv head, D values): the
 * contract between the layers that size and move caches (the generator, the serving
 * engine's pool, a session's --kv-dtype rewrite) and the kernels that write and read
 * them (native/kernels/attention/kv_rows.h).
 *
 * float32, float16 and bfloat16 rows are the D values. int8 and float8e4m3fn rows are
 * quantized per row (per token and head, no calibration): the D codes, then the row's
 * scale as a float32 (little-endian, unaligned), D + 4 bytes in all. The scale is the
 * row's largest magnitude over the code range's largest (127 for int8, 448 for
 * float8e4m3fn); a value is code * scale. In a tensor such a cache is int8 / float8 with
 * a last dimension of D + 4 (kv_stored_width), so that buffers sized by their element
 * count hold it unchanged. */
#ifndef OG_BACKENDS_KV_FORMAT_H
#define OG_BACKENDS_KV_FORMAT_H

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

static inline size_t kv_row_bytes(og_dtype dt, int64_t D) {
    return kv_quantized(dt) ? (size_t)D + KV_SCALE_BYTES
                            : (size_t)D * (dt == OG_FLOAT32 ? 4 : 2);
}

#endif
