/* The loop-carried buffers of a generator: KV caches that grow along a sequence axis and
 * fixed-size ones (conv / recurrent states, window-sized KV caches), with their row
 * layouts, beam reordering, rewinding and snapshots.
 *
 * KV: allocated once at max_length columns. A shared buffer (GroupQueryAttention with
 * past_present_share_buffer, or on the native backend whatever the config says; one
 * beam: gen_shares_kv) is [rows, heads, max_length, head_size] and the kernel writes the
 * new entries in place. Otherwise each entry has two buffers holding
 * [rows, heads, kv_len, head_size] (or gpt2's [2, rows, ...]) contiguously: past is read
 * from one, present written into the other, then they swap.
 *
 * Fixed-size entries: [rows, ...] zero-initialized, two buffers (present written into
 * the other, or over the past when the op that writes it allows it). A state, and a
 * window-sized KV cache ([rows, heads, C, head_size]: GroupQueryAttention keeps the last
 * C positions in order, evicting the oldest itself), cannot be cut back by a rewind, so
 * snapshots of all of them are kept at chosen lengths. */
#include "genai/generator.h"

#include "base/bigalloc.h"
#include "base/tensor.h"
#include "genai/config.h"
#include "genai/step.h"

#include <stdlib.h>
#include <string.h>

static bool is_pair(const gen_cache *c) { return c->kind == GEN_CACHE_KV && !strcmp(c->what, "kv"); }

static size_t kv_row_bytes(const og_generator *g, int i, int seq) {
    const gen_cache *c = &g->m->cache[i];
    return (size_t)c->heads * (size_t)seq * (size_t)c->head_size * dtype_size(c->dtype);
}

static int kv_dims(const og_generator *g, int i, int nr, int seq, int64_t *dims) {
    const gen_cache *c = &g->m->cache[i];
    int r = 0;
    if (is_pair(c)) dims[r++] = 2;
    dims[r++] = nr;
    dims[r++] = c->heads;
    dims[r++] = seq;
    dims[r++] = c->head_size;
    return r;
}

static size_t entry_bytes(const og_generator *g, int i, int cols) {
    const gen_cache *c = &g->m->cache[i];
    if (c->fixed) return c->row_bytes * (size_t)g->rows;
    return kv_row_bytes(g, i, cols) * (size_t)g->rows * (is_pair(c) ? 2 : 1);
}

/* Whether entry i grows with the columns (a KV cache along its sequence axis). */
static bool grows(const og_generator *g, int i) {
    return g->m->cache[i].kind == GEN_CACHE_KV && !g->m->cache[i].fixed;
}

/* A KV entry written in place has one buffer (past and present); others have two. */
static bool single_buffer(const og_generator *g, int i) { return grows(g, i) && g->inplace[i]; }

static size_t round64(size_t n) { return (n + 63) & ~(size_t)63; }

/* All buffers of the cache are one allocation of zero pages (big_alloc_lazy), carved in
 * entry order at 64-byte boundaries: an entry that grows gets its bytes at `cols`
 * columns, the others theirs at max_length, and what an entry's buffers held (bytes[i])
 * is copied to their start. KV buffers are sized for max_length, which a package's
 * config often sets to the whole context (131072 positions: 8.6 GB for a 1B Llama); only
 * the rows written are ever backed by memory. */
static og_status *cache_block_make(og_generator *g, int cols) {
    int n = g->m->n_cache;
    size_t total = 0;
    for (int i = 0; i < n; i++)
        total += round64(entry_bytes(g, i, grows(g, i) ? cols : g->max_len)) *
                 (single_buffer(g, i) ? 1 : 2);
    if (total == 0) total = 64;
    char *block = big_alloc_lazy(total);
    if (!block) return og_oom();
    size_t at = 0;
    for (int i = 0; i < n; i++) {
        size_t want = entry_bytes(g, i, grows(g, i) ? cols : g->max_len);
        for (int b = 0; b < (single_buffer(g, i) ? 1 : 2); b++) {
            char *p = block + at;
            at += round64(want);
            if (g->buf[b][i]) memcpy(p, g->buf[b][i], g->bytes[i]);
            g->buf[b][i] = p;
        }
        if (single_buffer(g, i)) g->buf[1][i] = g->buf[0][i]; /* never swapped, never reordered */
        g->bytes[i] = want;
    }
    big_free_lazy(g->cache_block, g->cache_block_bytes);
    g->cache_block = block;
    g->cache_block_bytes = total;
    return NULL;
}

og_status *gen_cache_alloc(og_generator *g) {
    const og_model *m = g->m;
    int n = m->n_cache;
    g->bytes = calloc((size_t)n + 1, sizeof *g->bytes);
    g->cur = calloc((size_t)n + 1, sizeof *g->cur);
    g->inplace = calloc((size_t)n + 1, sizeof *g->inplace);
    g->buf[0] = calloc((size_t)n + 1, sizeof(void *));
    g->buf[1] = calloc((size_t)n + 1, sizeof(void *));
    if (!g->bytes || !g->cur || !g->inplace || !g->buf[0] || !g->buf[1]) return og_oom();
    g->col_cap = g->max_len;
    for (int i = 0; i < n; i++)
        g->inplace[i] = grows(g, i) ? (g->share_kv && m->cache[i].shareable) : m->cache[i].shareable;
    return cache_block_make(g, g->max_len);
}

static void snapshot_free(og_generator *g, gen_snapshot *s) {
    for (int i = 0; s->data && i < g->m->n_cache; i++) free(s->data[i]);
    free(s->data);
    s->data = NULL;
}

void gen_cache_free(og_generator *g) {
    big_free_lazy(g->cache_block, g->cache_block_bytes);
    g->cache_block = NULL;
    free(g->buf[0]);
    free(g->buf[1]);
    free(g->bytes);
    free(g->cur);
    free(g->inplace);
    for (int s = 0; s < g->n_snaps; s++) snapshot_free(g, &g->snaps[s]);
    g->n_snaps = 0;
}

void gen_cache_reset(og_generator *g) {
    for (int i = 0; i < g->m->n_cache; i++) {
        /* KV beyond the fed length is never read; states must start at zero */
        if (g->m->cache[i].fixed) {
            memset(g->buf[0][i], 0, g->bytes[i]);
            if (g->buf[1][i] != g->buf[0][i]) memset(g->buf[1][i], 0, g->bytes[i]);
        }
        g->cur[i] = 0;
    }
    for (int s = 0; s < g->n_snaps; s++) snapshot_free(g, &g->snaps[s]);
    g->n_snaps = 0;
    g->kv_len = 0;
    if (g->cmask) memset(g->cmask, 0, (size_t)g->rows * (size_t)g->col_cap);
}

/* Writes a row's present ([1, H, n, D] or [2, 1, H, n, D]) into KV entry i's current
 * buffer at row r, columns [col, col + n), with kv_len columns per row. */
static void kv_place_row(og_generator *g, int i, int r, const void *src, int n, int col) {
    const gen_cache *c = &g->m->cache[i];
    size_t pos = (size_t)c->head_size * dtype_size(c->dtype);
    int S = g->share_kv && g->inplace[i] ? g->max_len : g->kv_len;
    int halves = is_pair(c) ? 2 : 1;
    char *dst = g->buf[g->cur[i]][i];
    const char *s = src;
    for (int h = 0; h < halves; h++)
        for (int k = 0; k < c->heads; k++) {
            char *row = dst + (((size_t)h * g->rows + r) * c->heads + k) * S * pos;
            memset(row, 0, (size_t)S * pos);
            memcpy(row + (size_t)col * pos, s, (size_t)n * pos);
            s += (size_t)n * pos;
        }
}

/* The view in slot of `nr` rows of entry i's buffer `b` from row r0, holding `cols`
 * columns (a KV entry) or its fixed shape. */
static og_status *view(const og_generator *g, int i, int b, int r0, int nr, int cols,
                       og_tensor *slot, og_tensor **out) {
    const gen_cache *c = &g->m->cache[i];
    int64_t d[OG_MAX_RANK];
    int rank;
    size_t row_bytes;
    if (c->fixed) {
        memcpy(d, c->dims, sizeof d);
        d[0] = nr;
        rank = c->rank;
        row_bytes = c->row_bytes;
    } else {
        rank = kv_dims(g, i, nr, cols, d);
        row_bytes = kv_row_bytes(g, i, cols); /* r0 is 0 but in a shared buffer's rows */
    }
    return gen_step_view(c->dtype, d, rank, (char *)g->buf[b][i] + (size_t)r0 * row_bytes, slot,
                         out);
}

og_status *gen_cache_past(const og_generator *g, int i, int r0, int nr, bool alone,
                          og_tensor *slot, og_tensor **out) {
    const gen_cache *c = &g->m->cache[i];
    if (c->fixed) return view(g, i, g->cur[i], r0, nr, 0, slot, out);
    if (g->share_kv && g->inplace[i]) return view(g, i, g->cur[i], r0, nr, g->max_len, slot, out);
    return view(g, i, g->cur[i], 0, nr, alone ? 0 : g->kv_len, slot, out);
}

og_status *gen_cache_present(const og_generator *g, int i, int r0, int nr, int cols, bool alone,
                             og_tensor *slot, og_tensor **out) {
    const gen_cache *c = &g->m->cache[i];
    *out = NULL;
    if (c->fixed)
        return view(g, i, g->inplace[i] ? g->cur[i] : 1 - g->cur[i], r0, nr, 0, slot, out);
    if (g->share_kv && g->inplace[i]) return view(g, i, 0, r0, nr, g->max_len, slot, out);
    if (alone) return NULL; /* placed into the shared layout afterwards (gen_cache_place) */
    return view(g, i, 1 - g->cur[i], 0, nr, cols, slot, out);
}

void gen_cache_place(og_generator *g, int i, int r, const og_tensor *t) {
    const gen_cache *c = &g->m->cache[i];
    if (c->kind != GEN_CACHE_KV || c->fixed || (g->share_kv && g->inplace[i])) return;
    int pos = (int)t->dims[t->rank - 2];
    kv_place_row(g, i, r, t->data, pos, g->m->compact ? 0 : g->kv_len - pos);
}

og_status *gen_cache_output(const og_generator *g, int i, og_tensor **out) {
    bool shared = g->share_kv && g->inplace[i];
    og_tensor slot, *v;
    /* a buffer shared where the config does not share (gen_shares_kv) is returned as the
     * config's present, kv_len columns, as onnxruntime-genai returns it */
    bool gather = shared && grows(g, i) && !g->m->cfg->search.past_present_share_buffer;
    OG_TRY(view(g, i, g->cur[i], 0, g->rows, shared && !gather ? g->max_len : g->kv_len, &slot, &v));
    OG_TRY(og_tensor_create(v->dtype, v->dims, v->rank, out));
    if (!gather) {
        memcpy(og_tensor_data(*out), v->data, v->nbytes);
        return NULL;
    }
    const gen_cache *c = &g->m->cache[i];
    size_t blk = (size_t)g->kv_len * (size_t)c->head_size * dtype_size(c->dtype);
    size_t stride = (size_t)g->max_len * (size_t)c->head_size * dtype_size(c->dtype);
    for (size_t b = 0; b < (size_t)g->rows * (size_t)c->heads; b++)
        memcpy((char *)og_tensor_data(*out) + b * blk, (const char *)g->buf[0][i] + b * stride, blk);
    return NULL;
}

og_status *gen_kv_reserve(og_generator *g, int cols) {
    if (cols <= g->col_cap) return NULL;
    /* the data is laid out by kv_len, not by capacity: it moves as is */
    OG_TRY(cache_block_make(g, cols));
    uint8_t *cm = calloc((size_t)g->rows * (size_t)cols, 1);
    if (!cm) return og_oom();
    for (int r = 0; r < g->rows && g->cmask; r++)
        memcpy(cm + (size_t)r * cols, g->cmask + (size_t)r * g->col_cap, (size_t)g->col_cap);
    free(g->cmask);
    g->cmask = cm;
    g->col_cap = cols;
    return NULL;
}

og_status *gen_cache_reorder(og_generator *g, const int32_t *parents) {
    for (int i = 0; i < g->m->n_cache; i++) {
        const gen_cache *c = &g->m->cache[i];
        if (g->buf[0][i] == g->buf[1][i])
            return og_errorf(OG_ERR_UNSUPPORTED, "generator: a shared KV buffer cannot follow "
                             "beams");
        size_t row = c->fixed ? c->row_bytes : kv_row_bytes(g, i, g->kv_len);
        int halves = is_pair(c) ? 2 : 1;
        const char *src = g->buf[g->cur[i]][i];
        char *dst = g->buf[1 - g->cur[i]][i];
        for (int h = 0; h < halves; h++)
            for (int r = 0; r < g->rows; r++)
                memcpy(dst + ((size_t)h * g->rows + r) * row,
                       src + ((size_t)h * g->rows + parents[r]) * row, row);
        g->cur[i] = 1 - g->cur[i];
    }
    return NULL;
}

void gen_kv_truncate(og_generator *g, int keep) {
    if (keep >= g->kv_len) return;
    for (int i = 0; i < g->m->n_cache; i++) {
        const gen_cache *c = &g->m->cache[i];
        if (c->kind != GEN_CACHE_KV || c->fixed || (g->share_kv && g->inplace[i])) continue;
        /* every (half, row, head) block goes from stride kv_len to stride keep */
        size_t blk = (size_t)c->head_size * dtype_size(c->dtype);
        int n_blocks = (is_pair(c) ? 2 : 1) * g->rows * c->heads;
        char *p = g->buf[g->cur[i]][i];
        for (int b = 0; b < n_blocks; b++)
            memmove(p + (size_t)b * keep * blk, p + (size_t)b * g->kv_len * blk,
                    (size_t)keep * blk);
    }
    g->kv_len = keep;
}

og_status *gen_fixed_save(const og_generator *g, void **data) {
    for (int i = 0; i < g->m->n_cache; i++) {
        if (!g->m->cache[i].fixed) continue;
        if (!data[i] && !(data[i] = malloc(g->bytes[i]))) return og_oom();
        memcpy(data[i], g->buf[g->cur[i]][i], g->bytes[i]);
    }
    return NULL;
}

void gen_fixed_load(og_generator *g, void *const *data) {
    for (int i = 0; i < g->m->n_cache; i++) {
        if (!g->m->cache[i].fixed) continue;
        void *dst = g->buf[g->cur[i]][i];
        if (data) memcpy(dst, data[i], g->bytes[i]);
        else memset(dst, 0, g->bytes[i]);
    }
}

og_status *gen_snapshot_take(og_generator *g) {
    const og_model *m = g->m;
    if (g->n_snaps == GEN_MAX_SNAPSHOTS) { /* the oldest goes */
        snapshot_free(g, &g->snaps[0]);
        memmove(&g->snaps[0], &g->snaps[1], sizeof g->snaps[0] * (GEN_MAX_SNAPSHOTS - 1));
        g->n_snaps--;
    }
    gen_snapshot *s = &g->snaps[g->n_snaps];
    s->fed = g->fed[0];
    s->data = calloc((size_t)m->n_cache, sizeof(void *));
    if (!s->data) return og_oom();
    g->n_snaps++;
    return gen_fixed_save(g, s->data);
}

int gen_snapshot_restore(og_generator *g, int keep) {
    int best = -1;
    for (int s = 0; s < g->n_snaps; s++)
        if (g->snaps[s].fed <= keep && (best < 0 || g->snaps[s].fed > g->snaps[best].fed)) best = s;
    /* snapshots past the new length describe tokens that are gone */
    int w = 0;
    for (int s = 0; s < g->n_snaps; s++) {
        if (g->snaps[s].fed > keep) {
            snapshot_free(g, &g->snaps[s]);
            continue;
        }
        if (s == best) best = w;
        g->snaps[w++] = g->snaps[s];
    }
    g->n_snaps = w;
    gen_fixed_load(g, best >= 0 ? g->snaps[best].data : NULL);
    return best >= 0 ? g->snaps[best].fed : 0;
}
