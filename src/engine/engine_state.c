/* State slots and snapshots of hybrid models in the batched engine (see engine.h).
 *
 * A hybrid model (Qwen3.5's gated delta-net layers, LFM2's short convolutions) carries a
 * fixed-size state per layer beside the KV of its attention layers: conv states
 * [C, K - 1] and recurrent states [H, d_k, d_v], fed as [batch, ...] graph inputs and
 * returned as presents. The engine keeps one slot per running sequence: entry k of the
 * model's states has all its slots as one [n_slots][row_bytes] array, so that a run
 * over the sequences holding slots [r0, r0 + nr) feeds the views [nr, ...] at row r0 of
 * every array, as past and (where the op writes over its past: a shareable cache, or the
 * native LinearAttention and CausalConvWithState, which read a row's past before writing
 * its present: rows_in_place) as present; otherwise the present is written apart and
 * copied back (eng_state_settle). In place, a decode step reads and writes each row's
 * state once (16 x 128 x 128 floats a layer in Qwen3.5-0.8B) rather than also copying it
 * into the present and back into the slot. A decode run puts its sequences' slots first
 * (eng_state_gather swaps contents, which happens when a sequence starts or stops
 * decoding, not every step).
 *
 * Snapshots. The KV prefix cache hashes full blocks; a hybrid sequence can start after a
 * cached prefix only where its state at that boundary is known. After a run whose
 * sequence's cached positions end at a multiple of snap_stride inside its prompt (short
 * of its last token), the slot is copied into a snapshot kept under the chained hash of
 * the blocks up to there (kv_pool_hash: every token of the prefix). A match uses the
 * longest run of cached blocks (whose tokens the pool compares) that ends where a
 * snapshot's hash is the last block's. Snapshots are few (n_snaps) and reused least
 * recently used first. Only prompt positions short of the last token are snapshotted:
 * those run in the same form (step.h's BACKEND_ROW_MANY) in every sequence's run alone,
 * so a snapshot is what any sequence with that prefix would compute itself. */
#include "engine/engine_internal.h"

#include "backends/backend.h"
#include "graph/graph.h"
#include "runtime/og_session.h"

#include <stdlib.h>
#include <string.h>

/* Snapshots the prefix cache keeps: one per running sequence, at least ENG_SNAPS_MIN (a
 * small batch still keeps a shared prefix's beside each prompt's last boundary). */
enum { ENG_SNAPS_PER_SLOT = 1, ENG_SNAPS_MIN = 8 };

static size_t slot_bytes_of(const og_model *m) {
    size_t b = 0;
    for (int i = 0; i < m->n_cache; i++)
        if (m->cache[i].kind == GEN_CACHE_STATE) b += m->cache[i].row_bytes;
    return b;
}

size_t eng_state_plan(const og_model *m, const eng_options *o, double limit, int *n_slots,
                      int *n_snaps) {
    size_t sb = slot_bytes_of(m);
    int nl = o->max_batch, ns = o->max_batch * ENG_SNAPS_PER_SLOT;
    if (ns < ENG_SNAPS_MIN) ns = ENG_SNAPS_MIN;
    if (!sb || !o->prefix_cache) ns = 0;
    /* snapshots go first, then running slots, down to one */
    while ((double)sb * (nl + ns) > limit && (ns > 0 || nl > 1)) {
        if (ns > 0) ns--;
        else nl--;
    }
    if (n_slots) *n_slots = sb ? nl : 0;
    if (n_snaps) *n_snaps = ns;
    return sb ? sb * ((size_t)nl + (size_t)ns) : 0;
}

size_t eng_state_bytes(const og_model *m, const eng_options *o) {
    return eng_state_plan(m, o, 1e300, NULL, NULL);
}

/* Whether entry c's present comes from a native kernel that reads each batch row's past
 * before it writes that row's present (their files say past and present may be one
 * buffer), so that its slots are fed as both. */
static bool rows_in_place(const og_model *m, const gen_cache *c) {
    og_session *s = m->stages[c->stage].s;
    const graph *g = runtime_session_graph(s);
    const graph_node *n = graph_producer(g, graph_find_value(g, c->present));
    return n && runtime_session_ops(s) == &backend_native &&
           (!strcmp(n->op_type, "LinearAttention") || !strcmp(n->op_type, "CausalConvWithState"));
}

og_status *eng_state_init(eng_engine *e) {
    const og_model *m = e->m;
    int n = 0;
    for (int i = 0; i < m->n_cache; i++) n += m->cache[i].kind == GEN_CACHE_STATE;
    if (n == 0) return NULL;
    size_t B = (size_t)e->n_slots, widest = 0;
    e->hybrid = true;
    e->n_state = n;
    e->state_idx = calloc((size_t)n, sizeof *e->state_idx);
    e->state_of = malloc(sizeof *e->state_of * (size_t)m->n_cache);
    e->slot_mem = calloc((size_t)n, sizeof *e->slot_mem);
    e->pres_mem = calloc((size_t)n, sizeof *e->pres_mem);
    e->slot_owner = calloc(B, sizeof *e->slot_owner);
    if (!e->state_idx || !e->state_of || !e->slot_mem || !e->pres_mem || !e->slot_owner)
        return og_oom();
    int k = 0;
    for (int i = 0; i < m->n_cache; i++) {
        const gen_cache *c = &m->cache[i];
        e->state_of[i] = -1;
        if (c->kind != GEN_CACHE_STATE) continue;
        e->state_of[i] = k;
        e->state_idx[k] = i;
        e->slot_mem[k] = calloc(B, c->row_bytes);
        bool in_place = c->shareable || rows_in_place(m, c);
        if (!in_place) e->pres_mem[k] = malloc(B * c->row_bytes);
        if (!e->slot_mem[k] || (!in_place && !e->pres_mem[k])) return og_oom();
        e->slot_bytes += c->row_bytes;
        if (c->row_bytes > widest) widest = c->row_bytes;
        k++;
    }
    e->state_tmp = malloc(widest + 64);
    e->state_rows = calloc((size_t)e->o.max_batch, sizeof *e->state_rows);
    e->state_tmp_rows = calloc((size_t)e->o.max_batch, sizeof *e->state_tmp_rows);
    e->slot_mark = calloc(B + 1, sizeof *e->slot_mark);
    /* a boundary both a block's end and a multiple of ENG_SNAP_ALIGN tokens: prompt chunks
     * end there (engine_batch.c), so that a kernel that runs a long prompt in fixed
     * pieces of tokens (LinearAttention's chunks of 64) starts them where a run alone does */
    int bs = e->o.block_size, st = bs;
    while (st % ENG_SNAP_ALIGN) st += bs;
    e->snap_stride = st;
    if (!e->state_tmp || !e->state_rows || !e->state_tmp_rows || !e->slot_mark) return og_oom();
    if (e->n_snaps > 0) {
        size_t ns = (size_t)e->n_snaps;
        e->snap_mem = malloc(ns * e->slot_bytes);
        e->snap_hash = calloc(ns, sizeof *e->snap_hash);
        e->snap_used = calloc(ns, sizeof *e->snap_used);
        if (!e->snap_mem || !e->snap_hash || !e->snap_used) return og_oom();
    }
    return NULL;
}

void eng_state_free(eng_engine *e) {
    for (int k = 0; k < e->n_state && e->slot_mem; k++) {
        free(e->slot_mem[k]);
        if (e->pres_mem) free(e->pres_mem[k]);
    }
    free(e->slot_mem);
    free(e->pres_mem);
    free(e->state_idx);
    free(e->state_of);
    free(e->slot_owner);
    free(e->state_tmp);
    free(e->state_rows);
    free(e->state_tmp_rows);
    free(e->slot_mark);
    e->state_rows = e->state_tmp_rows = NULL;
    e->slot_mark = NULL;
    free(e->snap_mem);
    free(e->snap_hash);
    free(e->snap_used);
    e->slot_mem = e->pres_mem = NULL;
    e->state_idx = e->state_of = NULL;
    e->slot_owner = NULL;
    e->state_tmp = e->snap_mem = NULL;
    e->snap_hash = e->snap_used = NULL;
    e->hybrid = false;
    e->n_state = e->n_snaps = e->n_slots = 0;
}

static char *slot_row(const eng_engine *e, int k, int slot) {
    return e->slot_mem[k] + (size_t)slot * e->m->cache[e->state_idx[k]].row_bytes;
}

void eng_state_copy(eng_engine *e, int slot, void *buf, bool into_slot) {
    char *b = buf;
    for (int k = 0; k < e->n_state; k++) {
        size_t rb = e->m->cache[e->state_idx[k]].row_bytes;
        if (into_slot) memcpy(slot_row(e, k, slot), b, rb);
        else memcpy(b, slot_row(e, k, slot), rb);
        b += rb;
    }
}

/* The snapshot kept under hash h (never 0), or -1. */
static int snap_find(const eng_engine *e, uint64_t h) {
    for (int i = 0; i < e->n_snaps; i++)
        if (e->snap_hash[i] == h) return i;
    return -1;
}

bool eng_state_take(eng_engine *e, eng_seq *s) {
    int slot = -1;
    for (int i = 0; i < e->n_slots && slot < 0; i++)
        if (!e->slot_owner[i]) slot = i;
    if (slot < 0) return false;
    e->slot_owner[slot] = s;
    s->slot = slot;
    e->n_slots_used++;
    size_t off = 0;
    bool snap = s->snap >= 0;
    for (int k = 0; k < e->n_state; k++) {
        size_t rb = e->m->cache[e->state_idx[k]].row_bytes;
        char *dst = slot_row(e, k, slot);
        if (snap) memcpy(dst, e->snap_mem + (size_t)s->snap * e->slot_bytes + off, rb);
        else memset(dst, 0, rb);
        off += rb;
    }
    if (snap) e->snap_used[s->snap] = ++e->snap_tick;
    s->snap = -1;
    return true;
}

void eng_state_drop(eng_engine *e, eng_seq *s) {
    s->snap = -1;
    if (s->slot < 0) return;
    e->slot_owner[s->slot] = NULL;
    s->slot = -1;
    e->n_slots_used--;
}

static void swap_slots(eng_engine *e, int a, int b) {
    for (int k = 0; k < e->n_state; k++) {
        size_t rb = e->m->cache[e->state_idx[k]].row_bytes;
        char *pa = slot_row(e, k, a), *pb = slot_row(e, k, b);
        if (e->slot_owner[a]) memcpy(e->state_tmp, pa, rb);
        if (e->slot_owner[b]) memcpy(pa, pb, rb);
        if (e->slot_owner[a]) memcpy(pb, e->state_tmp, rb);
    }
    eng_seq *oa = e->slot_owner[a], *ob = e->slot_owner[b];
    e->slot_owner[a] = ob;
    e->slot_owner[b] = oa;
    if (ob) ob->slot = a;
    if (oa) oa->slot = b;
}

void eng_state_gather(eng_engine *e, eng_seq **seqs, int n) {
    /* only those outside [0, n) move, each into a slot there that no sequence of the
     * set holds: a sequence that ends moves at most one other */
    bool *in = e->slot_mark;
    for (int i = 0; i < n; i++) in[i] = false;
    for (int i = 0; i < n; i++)
        if (seqs[i]->slot < n) in[seqs[i]->slot] = true;
    int hole = 0;
    for (int i = 0; i < n; i++) {
        if (seqs[i]->slot < n) continue;
        while (in[hole]) hole++;
        in[hole] = true;
        swap_slots(e, hole, seqs[i]->slot);
    }
    for (int i = 0; i < n; i++) e->state_tmp_rows[i] = seqs[i];
    for (int i = 0; i < n; i++) seqs[e->state_tmp_rows[i]->slot] = e->state_tmp_rows[i];
}

static og_status *view(const eng_engine *e, int k, char *base, int r0, int nr, og_tensor *slot,
                       og_tensor **out) {
    const gen_cache *c = &e->m->cache[e->state_idx[k]];
    int64_t d[OG_MAX_RANK];
    memcpy(d, c->dims, sizeof(int64_t) * (size_t)c->rank);
    d[0] = nr;
    return gen_step_view(c->dtype, d, c->rank, base + (size_t)r0 * c->row_bytes, slot, out);
}

og_status *eng_state_past(eng_engine *e, int i, int r0, int nr, og_tensor *slot, og_tensor **out) {
    int k = e->state_of[i];
    return view(e, k, e->slot_mem[k], r0, nr, slot, out);
}

og_status *eng_state_present(eng_engine *e, int i, int r0, int nr, og_tensor *slot,
                             og_tensor **out) {
    int k = e->state_of[i];
    return view(e, k, e->pres_mem[k] ? e->pres_mem[k] : e->slot_mem[k], r0, nr, slot, out);
}

void eng_state_settle(eng_engine *e, int r0, int nr) {
    for (int k = 0; k < e->n_state; k++) {
        if (!e->pres_mem[k]) continue;
        size_t rb = e->m->cache[e->state_idx[k]].row_bytes;
        memcpy(slot_row(e, k, r0), e->pres_mem[k] + (size_t)r0 * rb, rb * (size_t)nr);
    }
}

int eng_state_match(eng_engine *e, const int32_t *blocks, int got, int *snap) {
    *snap = -1;
    int bs = e->pool->block_size;
    for (int k = got; k > 0; k--) {
        if ((k * bs) % e->snap_stride) continue;
        int i = snap_find(e, e->pool->hash[blocks[k - 1]]);
        if (i >= 0) {
            *snap = i;
            return k;
        }
    }
    return 0;
}

/* The snapshot to fill for hash h: -1 when one is kept under h already (its use
 * refreshed), else a free one or the least recently used, now under h. */
static int snap_claim(eng_engine *e, uint64_t h) {
    int have = snap_find(e, h);
    if (have >= 0) {
        e->snap_used[have] = ++e->snap_tick;
        return -1;
    }
    int victim = 0;
    for (int i = 0; i < e->n_snaps; i++) {
        if (!e->snap_hash[i]) {
            e->n_snaps_held++;
            victim = i;
            break;
        }
        if (e->snap_used[i] < e->snap_used[victim]) victim = i;
    }
    e->snap_hash[victim] = h;
    e->snap_used[victim] = ++e->snap_tick;
    e->snaps_taken++;
    return victim;
}

void eng_state_snapshot(eng_engine *e, eng_seq *s) {
    int bs = e->pool->block_size, p = s->n_cached, prompt = s->n_tokens - s->n_gen;
    if (e->n_snaps == 0 || s->slot < 0 || p == 0 || p % e->snap_stride || p > prompt - 1 ||
        s->n_reg != p / bs)
        return;
    int victim = snap_claim(e, s->reg_hash); /* of the blocks up to p (registered by s or another) */
    if (victim < 0) return;
    size_t off = 0;
    char *dst = e->snap_mem + (size_t)victim * e->slot_bytes;
    for (int k = 0; k < e->n_state; k++) {
        size_t rb = e->m->cache[e->state_idx[k]].row_bytes;
        memcpy(dst + off, slot_row(e, k, s->slot), rb);
        off += rb;
    }
}

const char *eng_state_kept(const eng_engine *e, uint64_t h) {
    int i = h ? snap_find(e, h) : -1;
    return i >= 0 ? e->snap_mem + (size_t)i * e->slot_bytes : NULL;
}

bool eng_state_keep(eng_engine *e, uint64_t h, const void *state) {
    if (e->n_snaps == 0 || !h) return false;
    int i = snap_claim(e, h);
    if (i >= 0) memcpy(e->snap_mem + (size_t)i * e->slot_bytes, state, e->slot_bytes);
    return true;
}

void eng_state_forget(eng_engine *e, uint64_t h) {
    int i = h ? snap_find(e, h) : -1;
    if (i < 0) return;
    e->snap_hash[i] = 0;
    e->snap_used[i] = 0;
    e->n_snaps_held--;
}
