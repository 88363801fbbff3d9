/* The attention arithmetic GroupQueryAttention shares between its contiguous caches and
 * the serving engine's paged cache: softmax(scale q.k [softcap, bias]) . v over key
 * tiles of fixed absolute positions, merged in order. gqa_tiles_run hands float32 caches
 * without softcap, bias or sinks to onnxruntime's own order (attention_ort.h), which
 * keeps the invariance below through the row forms; the tiles compute the rest.
 *
 * Batch invariance. A query's output depends only on its own (rotated) query, the keys
 * and values of its sequence, and the key range it sees, never on how many queries,
 * sequences or threads take part, nor on how the prompt was cut into chunks or whether
 * its cache is contiguous or paged:
 *   - keys are cut into tiles [c TK, (c + 1) TK) of absolute positions; each (query,
 *     head, tile) gets its partial maximum m, sum of exponentials l and weighted value
 *     sum o, merged over the tiles in order: out = sum_c e^(m_c - M) o_c / (sum_c
 *     e^(m_c - M) l_c [+ e^(sink - M)]);
 *   - the products run on gemm_f32, whose elements do not depend on the number of rows;
 *     a tile is at least two keys wide (a one-column product takes another path), and
 *     keys outside a query's range weigh exactly zero, so a tile's width does not matter.
 * So a token prefilled in a chunk of a long prompt, decoded alone, or decoded in a batch
 * of 64 gets the same bits, and `generate` (contiguous cache) and the server (paged
 * cache) give the same tokens. */
#ifndef OG_NATIVE_KERNELS_ATTENTION_TILES_H
#define OG_NATIVE_KERNELS_ATTENTION_TILES_H

#include "backends/native/kernels/attention/kv_fixed.h"
#include "backends/native/kernels/kernel.h"

enum { GQA_TILE = 256 };

/* One sequence: its query rows and where its keys and values are. */
typedef struct gqa_tiles_seq {
    int64_t tok0, n;      /* query rows tok0 .. tok0 + n of the flat [tokens] order */
    int64_t key0, keys;   /* key positions [key0, keys) are held */
    /* A window-sized cache as onnxruntime keeps it (sliding_window_cache=1): its capacity C
     * and window W (0, 0: a cache that grows). Its row 0 after position p is written holds
     * position p + 1 - gqa_swc_resident(p + 1, C, W); a decode step's sum counts its lanes
     * from that row (attention_ort.c). */
    int64_t swc_cap, swc_window;
    /* Position p of kv head g: base + blocks[(p - key0) / block_size] * block_bytes +
     * (g * block_size + (p - key0) % block_size) * head_size elements (blocks NULL: block
     * 0), in rows of the storage dtype (kv_row_bytes each). */
    const char *kbase, *vbase;
    const int32_t *blocks;
    int64_t block_size;
    size_t block_bytes;
} gqa_tiles_seq;

typedef struct gqa_tiles {
    og_dtype dt;            /* storage of the keys and values (kv_rows.h: f32, f16, bf16, or
                               quantized rows with their scales) */
    const kv_fixed *fixed;  /* [2]: keys and values quantized with the node's fixed scales
                               (kv_fixed.h; dt is then the codes' int8 / uint8), or NULL */
    int64_t N, KV, D;       /* query heads, kv heads, head size */
    float scale, softcap;
    bool smooth;            /* a zero sink in the softmax's denominator */
    const float *sink;      /* [N] or NULL */
    const float *q;         /* rotated queries: token t, head h at q + t * q_ld + h * D */
    int64_t q_ld;
    float *out;             /* token t, head h at out + t * N * D + h * D */
    int64_t n_tokens;       /* query rows of the whole run ([batch, sequence] flattened) */
    int n_seqs;
    const gqa_tiles_seq *seqs;
    /* The key positions [*lo, *hi] query row i (0-based in its sequence) sees; lo > hi:
     * none (its output is zero). */
    void (*range)(const void *arg, int seq, int64_t i, int64_t *lo, int64_t *hi);
    /* Additive bias of (row i, head h) indexed by key position, or NULL (may be NULL). */
    const float *(*bias)(const void *arg, int seq, int64_t i, int64_t h);
    const void *arg;
} gqa_tiles;

/* Rows a window-sized cache of capacity C keeps after T positions: all while T <= C, then
 * it drops the oldest G = C - W + 1 at once whenever it is full (onnxruntime's contract). */
static inline int64_t gqa_swc_resident(int64_t T, int64_t C, int64_t W) {
    if (T <= C) return T;
    int64_t G = C - W + 1;
    return T - G * ((T - C + G - 1) / G);
}

/* Quantized rows (int8 / float8 rows, the node's fixed-scale codes) are read without
 * float32 tiles where a path exists (attention_tiles.c's top); true makes them take the
 * float32 tiles, the same bits (tests compare the two). Not thread-safe against running
 * kernels. */
extern bool gqa_tiles_float_tiles;

/* The most bytes of partial results a run holds at once (16 MiB): its rows go in slices
 * of whole 16-row blocks, the same bits whatever the bound (tests lower it to slice every
 * block). Not thread-safe against running kernels. */
extern size_t gqa_tiles_part_bytes;

/* Runs the tiles and the merge on ctx->pool, scratch from ctx. */
og_status *gqa_tiles_run(kernel_ctx *ctx, const gqa_tiles *t);

#endif
