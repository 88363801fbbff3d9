/* A paged KV cache lent to GroupQueryAttention for one run (the serving engine's).
 *
 * The model stays the builder's graph: each layer's GroupQueryAttention takes
 * past_key / past_value inputs and returns present_key / present_value. When a run
 * carries a paged_kv (kernel_ctx.paged_kv, set through backend_ops.set_paged_kv), a GQA node
 * whose past_key input is one of its layers' names reads and writes that layer's blocks
 * instead: the past inputs are ignored (the engine feeds empty ones), the present
 * outputs come out empty ([B, kv_heads, 0, head_size]), and seqlens_k /
 * total_sequence_length are not read. Each such node adds one to layer_runs[layer]
 * (when given), so that the engine can tell that every layer read the pool.
 *
 * Cache. Every layer has one key pool and one value pool of n_blocks blocks, each block
 * [kv_heads][block_size][head_size] in the storage dtype (the query's, or a narrower one:
 * head_size is then the stored width of kv_format.h, which for
 * int8 and float8e4m3fn rows counts their scale's bytes). With codes set the pool holds
 * the builder's quantized cache (kv_format.h's third format: the node's k_quant_type and
 * k_scale / v_scale): int8 rows of head_size codes, or uint8 rows of head_size bytes
 * holding two int4 codes each; every node over it must quantize so. Position p of a
 * sequence lives in block blocks[p / block_size], row p % block_size.
 *
 * Tokens. The query is [B, S, ...]; sequence i owns tokens (row, q_off + t) for
 * t < n, which are its positions past + t; their keys and values are written to the
 * blocks and each attends causally to positions [0, past + t] of its own sequence (and
 * to the local window, softcap, sink as the node says). Tokens no sequence owns are
 * padding: their output is zero. A sequence may share blocks with others (a prefix
 * cache) only where neither writes: the engine gives every written position a block
 * the sequence owns alone.
 *
 * Batch invariance. The output of a token depends only on its query and its sequence's
 * keys and values, never on the other sequences, on how many tokens run together or on
 * the thread count: keys are taken in fixed tiles of absolute positions and the tiles
 * are merged in order, whichever thread computed them. */
#ifndef OG_BACKENDS_PAGED_KV_H
#define OG_BACKENDS_PAGED_KV_H

#include "onnx_genai.h"

#include <stdbool.h>
#include <stdint.h>

typedef struct paged_kv_seq {
    int32_t row;           /* batch row of its tokens */
    int32_t q_off;         /* first of its tokens in the row */
    int32_t n;             /* new tokens (>= 1) */
    int32_t past;          /* positions already cached: the new ones are [past, past + n) */
    const int32_t *blocks; /* block ids for positions [0, past + n) */
} paged_kv_seq;

typedef struct paged_kv {
    og_dtype dtype;       /* storage: float32, float16, bfloat16, int8, float8e4m3fn; with
                             codes int8 (8-bit codes) or uint8 (two 4-bit codes a byte) */
    bool codes;           /* rows are the codes of the nodes' own scales */
    int kv_heads, head_size;
    int block_size;
    int64_t n_blocks;
    int n_layers;
    const char *const *layer_names; /* [n_layers] each layer's past_key input name */
    void *const *k, *const *v;      /* [n_layers] pools: [n_blocks][kv_heads][block_size][head_size] */
    int n_seqs;
    const paged_kv_seq *seqs;
    int32_t *layer_runs;            /* [n_layers] or NULL: nodes run per layer */
    /* [n_layers] or NULL: the capacity of the window-sized cache the generator keeps for
     * the layer (0: one that grows), so that attention counts as it does there */
    const int32_t *layer_swc_caps;
} paged_kv;

#endif
