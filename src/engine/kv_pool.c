/* The block pool and the prefix cache (see kv_pool.h). */
#include "engine/kv_pool.h"

#include "base/bigalloc.h"
#include "base/tensor.h"
#include "backends/kv_format.h"

#include <stdlib.h>
#include <string.h>

/* Bytes of one element of the stored width (head_size counts a quantized row's scale). */
static size_t kv_esize(og_dtype dt) { return dtype_size(dt); }

size_t kv_pool_position_bytes(int n_layers, int kv_heads, int head_size, og_dtype dtype) {
    return 2 * (size_t)n_layers * (size_t)kv_heads * (size_t)head_size * kv_esize(dtype);
}

og_status *kv_pool_create(int n_layers, int kv_heads, int head_size, og_dtype dtype,
                          int block_size, int32_t n_blocks, kv_pool **out) {
    /* uint8: the builder's int4 codes, two a byte (kv_format.h) */
    if (n_layers < 1 || kv_heads < 1 || head_size < 1 || block_size < 1 || n_blocks < 1 ||
        !(kv_storable(dtype) || dtype == OG_UINT8))
        return og_errorf(OG_ERR_INVALID_ARGUMENT, "kv pool: %d layers, %d kv heads of %d, "
                         "blocks of %d positions, %d blocks, %s: nothing to build", n_layers,
                         kv_heads, head_size, block_size, n_blocks, og_dtype_name(dtype));
    kv_pool *p = calloc(1, sizeof *p);
    if (!p) return og_oom();
    p->n_layers = n_layers, p->kv_heads = kv_heads, p->head_size = head_size;
    p->block_size = block_size, p->dtype = dtype, p->n_blocks = n_blocks;
    p->block_bytes = (size_t)kv_heads * (size_t)block_size * (size_t)head_size * kv_esize(dtype);
    size_t total = p->block_bytes * (size_t)n_blocks * 2 * (size_t)n_layers;
    p->n_buckets = 1;
    while (p->n_buckets < 2u * (uint32_t)n_blocks) p->n_buckets <<= 1;
    size_t nb = (size_t)n_blocks;
    p->k = calloc((size_t)n_layers, sizeof *p->k);
    p->v = calloc((size_t)n_layers, sizeof *p->v);
    p->ref = calloc(nb, sizeof *p->ref);
    p->hash = calloc(nb, sizeof *p->hash);
    p->parent = malloc(nb * sizeof *p->parent);
    p->tokens = malloc(nb * (size_t)block_size * sizeof *p->tokens);
    p->lru_prev = malloc(nb * sizeof *p->lru_prev);
    p->lru_next = malloc(nb * sizeof *p->lru_next);
    p->free_list = malloc(nb * sizeof *p->free_list);
    p->chain = malloc(nb * sizeof *p->chain);
    p->bucket = malloc(p->n_buckets * sizeof *p->bucket);
    p->mem_bytes = total ? total : 64;
    p->mem = big_alloc(p->mem_bytes); /* huge pages: the blocks are handed out from the first */
    if (!p->k || !p->v || !p->ref || !p->hash || !p->parent || !p->tokens || !p->lru_prev ||
        !p->lru_next || !p->free_list || !p->chain || !p->bucket || !p->mem) {
        kv_pool_free(p);
        return og_errorf(OG_ERR_OUT_OF_MEMORY, "kv pool: out of memory for %d blocks of %d "
                         "positions (%zu bytes of KV)", n_blocks, block_size, total);
    }
    for (int l = 0; l < n_layers; l++) {
        p->k[l] = (char *)p->mem + p->block_bytes * nb * (size_t)(2 * l);
        p->v[l] = (char *)p->mem + p->block_bytes * nb * (size_t)(2 * l + 1);
    }
    for (int32_t b = 0; b < n_blocks; b++) p->free_list[b] = n_blocks - 1 - b; /* 0 first */
    p->n_free = n_blocks;
    p->lru_head = p->lru_tail = -1;
    for (uint32_t i = 0; i < p->n_buckets; i++) p->bucket[i] = -1;
    *out = p;
    return NULL;
}

void kv_pool_free(kv_pool *p) {
    if (!p) return;
    big_free(p->mem, p->mem_bytes);
    free(p->k);
    free(p->v);
    free(p->ref);
    free(p->hash);
    free(p->parent);
    free(p->tokens);
    free(p->lru_prev);
    free(p->lru_next);
    free(p->free_list);
    free(p->chain);
    free(p->bucket);
    free(p);
}

static void lru_unlink(kv_pool *p, int32_t b) {
    int32_t pr = p->lru_prev[b], nx = p->lru_next[b];
    if (pr >= 0) p->lru_next[pr] = nx;
    else p->lru_head = nx;
    if (nx >= 0) p->lru_prev[nx] = pr;
    else p->lru_tail = pr;
    p->n_cached--;
}

static void lru_push(kv_pool *p, int32_t b) {
    p->lru_prev[b] = p->lru_tail;
    p->lru_next[b] = -1;
    if (p->lru_tail >= 0) p->lru_next[p->lru_tail] = b;
    else p->lru_head = b;
    p->lru_tail = b;
    p->n_cached++;
}

static uint32_t bucket_of(const kv_pool *p, uint64_t h) { return (uint32_t)(h ^ (h >> 32)) & (p->n_buckets - 1); }

static void unregister(kv_pool *p, int32_t b) {
    int32_t *link = &p->bucket[bucket_of(p, p->hash[b])];
    while (*link >= 0 && *link != b) link = &p->chain[*link];
    if (*link == b) *link = p->chain[b];
    p->hash[b] = 0;
}

int32_t kv_pool_alloc(kv_pool *p) {
    int32_t b;
    if (p->n_free > 0) {
        b = p->free_list[--p->n_free];
    } else if (p->lru_head >= 0) {
        b = p->lru_head;
        lru_unlink(p, b);
        unregister(p, b);
        p->evictions++;
    } else {
        return -1;
    }
    p->ref[b] = 1;
    return b;
}

int32_t kv_pool_available(const kv_pool *p) { return p->n_free + p->n_cached; }

int32_t kv_pool_in_use(const kv_pool *p) { return p->n_blocks - p->n_free - p->n_cached; }

void kv_pool_release(kv_pool *p, int32_t b) {
    if (b < 0 || b >= p->n_blocks || p->ref[b] <= 0) return;
    if (--p->ref[b] > 0) return;
    if (p->hash[b]) lru_push(p, b);
    else p->free_list[p->n_free++] = b;
}

/* FNV-1a over the bytes, then a 64-bit finalizer (splitmix64's) so that nearby inputs
 * spread over the buckets. */
uint64_t kv_pool_hash(uint64_t parent_hash, const int32_t *tokens, int n) {
    uint64_t h = 0xcbf29ce484222325ull ^ parent_hash;
    const unsigned char *b = (const unsigned char *)tokens;
    for (size_t i = 0; i < (size_t)n * sizeof *tokens; i++) h = (h ^ b[i]) * 0x100000001b3ull;
    h ^= h >> 30;
    h *= 0xbf58476d1ce4e5b9ull;
    h ^= h >> 27;
    h *= 0x94d049bb133111ebull;
    h ^= h >> 31;
    return h ? h : 1;
}

static int32_t find(const kv_pool *p, uint64_t h, int32_t parent, const int32_t *tokens) {
    for (int32_t b = p->bucket[bucket_of(p, h)]; b >= 0; b = p->chain[b])
        if (p->hash[b] == h && p->parent[b] == parent &&
            memcmp(p->tokens + (size_t)b * p->block_size, tokens,
                   sizeof *tokens * (size_t)p->block_size) == 0)
            return b;
    return -1;
}

int kv_pool_match(kv_pool *p, const int32_t *tokens, int n, int max_blocks, int32_t *blocks,
                  uint64_t *last_hash) {
    int bs = p->block_size, got = 0;
    uint64_t h = 0;
    int32_t parent = -1;
    while (got < max_blocks && (got + 1) * bs <= n) {
        const int32_t *t = tokens + (size_t)got * bs;
        uint64_t hh = kv_pool_hash(h, t, bs);
        int32_t b = find(p, hh, parent, t);
        if (b < 0) break;
        if (p->ref[b]++ == 0) lru_unlink(p, b);
        blocks[got++] = b;
        h = hh;
        parent = b;
    }
    *last_hash = h;
    return got;
}

void kv_pool_register(kv_pool *p, int32_t block, int32_t parent, uint64_t hash,
                      const int32_t *tokens) {
    if (block < 0 || block >= p->n_blocks || p->hash[block] || find(p, hash, parent, tokens) >= 0)
        return;
    p->hash[block] = hash;
    p->parent[block] = parent;
    memcpy(p->tokens + (size_t)block * p->block_size, tokens, sizeof *tokens * (size_t)p->block_size);
    uint32_t bk = bucket_of(p, hash);
    p->chain[block] = p->bucket[bk];
    p->bucket[bk] = block;
}

void kv_pool_forget(kv_pool *p, int32_t block) {
    if (block < 0 || block >= p->n_blocks || p->ref[block] != 0 || !p->hash[block]) return;
    lru_unlink(p, block);
    unregister(p, block);
    p->free_list[p->n_free++] = block;
}
