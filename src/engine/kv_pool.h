/* The paged KV cache of the serving engine: one pool of fixed-size blocks for all
 * sequences, and the prefix cache over it.
 *
 * Memory. Every layer has a key pool and a value pool of n_blocks blocks, each
 * [kv_heads][block_size][head_size] in the model's KV dtype (the layout the paged
 * GroupQueryAttention reads, backends/paged_kv.h; the builder's quantized caches as their
 * codes, int8 or uint8); all of it is allocated once.
 *
 * Ownership. A block is free, in use (ref > 0: sequences hold it in their block tables),
 * or cached (ref 0 but registered: its positions are a known prefix). A sequence owns the
 * blocks it writes alone; blocks are shared only through the prefix cache, and only full
 * blocks that nobody writes again.
 *
 * Prefix cache. A full block is registered under the hash of its tokens chained with the
 * hash of every block before it, so a hit means the whole prefix up to and including that
 * block matched; each entry also keeps its tokens and its parent block, which a hit must
 * match too. Cached blocks with no user wait in a least-recently-used list and are taken
 * back when the free list runs dry; a sequence gives its blocks back last-first, so the
 * tail of a conversation is evicted before the system prompt it shares with others. */
#ifndef OG_ENGINE_KV_POOL_H
#define OG_ENGINE_KV_POOL_H

#include "base/status.h"
#include "onnx_genai.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct kv_pool {
    int n_layers, kv_heads, head_size, block_size;
    og_dtype dtype;
    int32_t n_blocks;
    size_t block_bytes;  /* one block of one layer's key (or value) pool */
    void **k, **v;       /* [n_layers] pools */
    void *mem;           /* all pools, one allocation (big_alloc) */
    size_t mem_bytes;
    /* per block */
    int32_t *ref;
    uint64_t *hash;      /* 0: not registered */
    int32_t *parent;     /* the block before it in its prefix (-1: the first) */
    int32_t *tokens;     /* [n_blocks][block_size] the tokens of a registered block */
    int32_t *lru_prev, *lru_next; /* cached blocks, least recently used first */
    int32_t lru_head, lru_tail;
    int32_t *free_list;
    int32_t n_free, n_cached;
    /* hash -> block, chained */
    int32_t *bucket, *chain;
    uint32_t n_buckets;  /* a power of two */
    /* counters */
    uint64_t evictions;
} kv_pool;

/* Bytes of one position of all layers' keys and values. */
size_t kv_pool_position_bytes(int n_layers, int kv_heads, int head_size, og_dtype dtype);

og_status *kv_pool_create(int n_layers, int kv_heads, int head_size, og_dtype dtype,
                          int block_size, int32_t n_blocks, kv_pool **out);
void kv_pool_free(kv_pool *p);

/* A block for a sequence to write (ref 1): a free one, else the least recently used
 * cached one (leaving the prefix cache). -1 when every block is in use. */
int32_t kv_pool_alloc(kv_pool *p);
/* Blocks a sequence could get now: free plus cached. */
int32_t kv_pool_available(const kv_pool *p);
/* Blocks in use by sequences. */
int32_t kv_pool_in_use(const kv_pool *p);
/* Gives back one reference; a block nobody uses goes to the cached list when registered,
 * else to the free list. */
void kv_pool_release(kv_pool *p, int32_t block);

/* The chained hash of a block of tokens after a prefix whose hash is `parent_hash` (0 for
 * the first block). Never 0. */
uint64_t kv_pool_hash(uint64_t parent_hash, const int32_t *tokens, int n);
/* Looks up the longest prefix of tokens[0..n) held in full cached blocks, at most
 * max_blocks of them; takes a reference on each and writes their ids to blocks[].
 * Returns their count; *last_hash gets the chained hash of the last one (0 if none). */
int kv_pool_match(kv_pool *p, const int32_t *tokens, int n, int max_blocks, int32_t *blocks,
                  uint64_t *last_hash);
/* Registers a full block the sequence has written (its tokens, the block before it or
 * -1, and their chained hash). A block whose prefix is already registered stays
 * unregistered (another sequence computed the same positions at the same time). */
void kv_pool_register(kv_pool *p, int32_t block, int32_t parent, uint64_t hash,
                      const int32_t *tokens);
/* Takes a cached block (registered, no user) out of the prefix cache onto the free list;
 * a block in use or not registered is left as it is. */
void kv_pool_forget(kv_pool *p, int32_t block);

#endif
