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
 * count hold it unchanged.
 *
 * A third format is the builder's (onnxruntime-genai's kv_cache_quant_scheme): the
 * attention node quantizes with scales of its own (GroupQueryAttention's k_quant_type /
 * v_quant_type with its k_scale / v_scale inputs), so a row is codes only: D int8, or
 * (D + 1) / 2 bytes of two int4 codes in a uint8 cache (kernels/attention/kv_fixed.h). */
#ifndef OG_BACKENDS_KV_FORMAT_H
#define OG_BACKENDS_KV_FORMAT_H

#include "base/tensor.h"
#include "graph/graph.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

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

/* Whether node n is a GroupQueryAttention that quantizes its cache with its own scales
 * (k_quant_type or v_quant_type other than NONE, or a k_scale / v_scale input): its cache
 * rows are the codes of the builder's format above, not kv_row_bytes' rows. */
static inline bool kv_node_scaled(const graph_node *n) {
    if (!n || strcmp(n->op_type, "GroupQueryAttention") != 0) return false;
    for (int i = 12; n->inputs && i < 14 && i < n->n_inputs; i++)
        if (n->inputs[i] >= 0) return true;
    return strcmp(graph_attr_string(n, "k_quant_type", "NONE"), "NONE") != 0 ||
           strcmp(graph_attr_string(n, "v_quant_type", "NONE"), "NONE") != 0;
}

#endif
