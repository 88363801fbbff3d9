/* One model run: the pending tokens of every row through the pipeline of stages.
 *
 * Rows of a batch never see each other's padding. When every row has the same number of
 * pending tokens (a batch of equal prompts, and every decode step) the rows run together.
 * Prompts of different lengths instead run row by row from the empty cache, each exactly
 * as it would alone; their caches are then laid out for the batched steps that follow:
 *   - compact layout (GroupQueryAttention reads each row's length from the attention
 *     mask): row r's KV entries are [0, its length); the mask is ones up to it. A row
 *     that has stopped is fed its last token again at its last position (its cache entry
 *     is rewritten with the same values), so it never grows;
 *   - shared-column layout (attention that masks columns, e.g. gpt2's Attention): rows
 *     share kv_len columns, a shorter prompt's columns come after masked ones, and a
 *     stopped row gets masked columns.
 * States (conv / recurrent) and window-sized KV caches never see a pad token either way:
 * a stopped row's state changes, but it is never read again (a batch cannot be
 * continued or rewound but to 0).
 *
 * Positions are each row's own token positions, on every axis of rank-3 (mRoPE)
 * position_ids. */
#include "genai/generator.h"

#include "base/half.h"
#include "base/tensor.h"
#include "genai/config.h"

#include <stdlib.h>
#include <string.h>

typedef struct run_spec {
    int r0, nr;   /* rows */
    int n;        /* new tokens per row */
    bool alone;   /* a row run alone from the empty cache (prompts of different lengths) */
} run_spec;

/* *out = slot, made a view of `data` (the generator's staging or cache buffers). */
static og_status *wrap(og_dtype dt, const int64_t *dims, int rank, void *data, og_tensor *slot,
                       og_tensor **out) {
    memset(slot, 0, sizeof *slot);
    OG_TRY(tensor_set_shape(slot, dt, rank, dims));
    slot->data = data ? data : tensor_empty_data();
    slot->owns_data = false;
    *out = slot;
    return NULL;
}

static void *as_dtype(const int64_t *v, int32_t *v32, size_t n, og_dtype dt) {
    if (dt != OG_INT32) return (void *)v;
    for (size_t i = 0; i < n; i++) v32[i] = (int32_t)v[i];
    return v32;
}

/* A row that has stopped takes part in a batched step without changing what it keeps. */
static bool stopped(const og_generator *g, int r) { return g->done[r] && g->fed[r] >= g->len[r]; }

/* Copies the last position of rows of a [nr, n, vocab] logits tensor to float32. */
static void take_last_logits(og_generator *g, const og_tensor *lt, int r0) {
    int V = g->m->vocab_size;
    int64_t nr = lt->dims[0], n = lt->dims[1];
    for (int64_t k = 0; k < nr; k++) {
        size_t off = ((size_t)k * (size_t)n + (size_t)(n - 1)) * (size_t)V;
        float *dst = g->logits + (size_t)(r0 + k) * V;
        if (lt->dtype == OG_FLOAT32) {
            memcpy(dst, (const float *)lt->data + off, sizeof(float) * (size_t)V);
        } else {
            const uint16_t *src = (const uint16_t *)lt->data + off;
            for (int v = 0; v < V; v++)
                dst[v] = lt->dtype == OG_FLOAT16 ? f16_to_f32(src[v]) : bf16_to_f32(src[v]);
        }
    }
}

/* Fills the ids, mask and positions of a run; returns the mask width. */
static int stage_inputs(og_generator *g, const run_spec *rs) {
    const og_model *m = g->m;
    int n = rs->n, W = 0;
    int *start = g->start; /* first position fed per row */
    for (int k = 0; k < rs->nr; k++) {
        int r = rs->r0 + k;
        start[k] = g->fed[r];
        if (stopped(g, r) && m->compact) start[k] = g->fed[r] - 1;
        if (m->compact && start[k] + n > W) W = start[k] + n;
    }
    if (!m->compact) W = (rs->alone ? 0 : g->kv_len) + n;
    for (int k = 0; k < rs->nr; k++) {
        int r = rs->r0 + k;
        const int32_t *s = g->seq + (size_t)r * g->max_len;
        bool dummy = stopped(g, r);
        for (int i = 0; i < n; i++) {
            int p = start[k] + i;
            int64_t tok = dummy && !m->compact ? m->pad_id : s[p];
            g->feed_ids[(size_t)k * n + i] = tok;
            for (int a = 0; a < (m->position_rank == 3 ? 3 : 1); a++)
                g->feed_pos[(size_t)a * rs->nr * n + (size_t)k * n + i] = p;
        }
        int64_t *mk = g->feed_mask + (size_t)k * W;
        if (m->compact) {
            for (int c = 0; c < W; c++) mk[c] = c < start[k] + n;
        } else {
            int old = W - n;
            const uint8_t *cm = g->cmask + (size_t)r * g->col_cap;
            for (int c = 0; c < old; c++) mk[c] = cm[c];
            for (int c = old; c < W; c++) mk[c] = !dummy;
        }
    }
    return W;
}

/* The tensor a feed gets: a view in `slot`, or (*owned) a tensor made for this run. */
static og_status *feed_tensor(og_generator *g, const run_spec *rs, int W, const gen_feed *f,
                              og_tensor *const *vals, og_tensor *slot, og_tensor **out,
                              bool *owned) {
    const og_model *m = g->m;
    int nr = rs->nr, n = rs->n;
    *owned = false;
    switch (f->src) {
    case GEN_SRC_IDS: {
        int64_t d[2] = {nr, n};
        void *p = as_dtype(g->feed_ids, g->feed_ids32, (size_t)nr * n, f->dtype);
        return wrap(f->dtype, d, 2, p, slot, out);
    }
    case GEN_SRC_MASK: {
        int64_t d[2] = {nr, W};
        void *p = as_dtype(g->feed_mask, g->feed_mask32, (size_t)nr * W, f->dtype);
        return wrap(f->dtype, d, 2, p, slot, out);
    }
    case GEN_SRC_POS: {
        int rank = m->position_rank;
        int64_t d3[3] = {3, nr, n}, d2[2] = {nr, n};
        size_t cnt = (size_t)nr * n * (rank == 3 ? 3 : 1);
        void *p = as_dtype(g->feed_pos, g->feed_pos32, cnt, f->dtype);
        return wrap(f->dtype, rank == 3 ? d3 : d2, rank, p, slot, out);
    }
    case GEN_SRC_IMAGE:
        *owned = true;
        return og_tensor_create(m->image_feature_dtype, m->image_feature_dims,
                                m->image_feature_rank, out);
    case GEN_SRC_PAST: {
        int i = f->index;
        const gen_cache *c = &m->cache[i];
        char *base = g->buf[g->cur[i]][i];
        if (c->fixed) {
            int64_t d[OG_MAX_RANK];
            memcpy(d, c->dims, sizeof d);
            d[0] = nr;
            return wrap(c->dtype, d, c->rank, base + (size_t)rs->r0 * c->row_bytes, slot, out);
        }
        int64_t d[5];
        if (g->share_kv && g->inplace[i]) {
            int rank = gen_kv_dims(g, i, nr, g->max_len, d);
            return wrap(c->dtype, d, rank, base + (size_t)rs->r0 * gen_kv_row_bytes(g, i, g->max_len),
                        slot, out);
        }
        int seq = rs->alone ? 0 : g->kv_len;
        int rank = gen_kv_dims(g, i, nr, seq, d);
        return wrap(c->dtype, d, rank, base, slot, out);
    }
    case GEN_SRC_VALUE: {
        const og_tensor *v = vals[f->index * 64 + f->out];
        if (!v)
            return og_errorf(OG_ERR_INVALID_MODEL, "generator: '%s' is needed, but the stage "
                             "that makes it did not run in this step", f->name);
        return wrap(v->dtype, v->dims, v->rank, v->data, slot, out);
    }
    }
    return og_errorf(OG_ERR_RUNTIME, "generator: feed '%s' has no source", f->name);
}

/* The caller tensor a present output is written into (a view in `slot`), or NULL to
 * receive a new one. */
static og_status *present_tensor(og_generator *g, const run_spec *rs, int W, int i,
                                 og_tensor *slot, og_tensor **out) {
    const gen_cache *c = &g->m->cache[i];
    *out = NULL;
    if (c->fixed) {
        int64_t d[OG_MAX_RANK];
        memcpy(d, c->dims, sizeof d);
        d[0] = rs->nr;
        char *base = g->buf[g->inplace[i] ? g->cur[i] : 1 - g->cur[i]][i];
        return wrap(c->dtype, d, c->rank, base + (size_t)rs->r0 * c->row_bytes, slot, out);
    }
    int64_t d[5];
    if (g->share_kv && g->inplace[i]) {
        int rank = gen_kv_dims(g, i, rs->nr, g->max_len, d);
        return wrap(c->dtype, d, rank,
                    (char *)g->buf[0][i] + (size_t)rs->r0 * gen_kv_row_bytes(g, i, g->max_len),
                    slot, out);
    }
    if (rs->alone) return NULL; /* placed into the shared layout afterwards */
    int seq = g->m->compact ? (W > g->kv_len ? W : g->kv_len) : g->kv_len + rs->n;
    int rank = gen_kv_dims(g, i, rs->nr, seq, d);
    return wrap(c->dtype, d, rank, g->buf[1 - g->cur[i]][i], slot, out);
}

/* Frees what a run made (stage values, new outputs, made inputs), not the views. */
static void drop(og_generator *g, og_tensor **t, int n, const og_tensor *views) {
    for (int k = 0; k < n; k++) {
        if (t[k] && (!views || t[k] != &views[k])) og_tensor_free(t[k]);
        t[k] = NULL;
    }
}

/* Runs rows [r0, r0 + nr) through every stage. Nothing is allocated for inputs (views
 * of the staging and cache buffers) or for present outputs and a step's logits (written
 * into the generator's buffers). */
static og_status *run_rows(og_generator *g, const run_spec *rs) {
    og_model *m = g->m;
    if (m->n_stages > 64) return og_errorf(OG_ERR_UNSUPPORTED, "generator: more than 64 stages");
    int W = stage_inputs(g, rs);
    og_status *st = NULL;
    og_tensor **vals = g->vals, **ins = g->ins, **outs = g->outs; /* vals: [stage][out] */
    og_tensor *logits = NULL;
    int ni = 0, no = 0;
    /* a prompt whose other positions' logits nobody asked for computes the last only */
    bool last_only = !g->p.all_logits && rs->n > 1;
    for (int s = 0; s < m->n_stages && !st; s++) {
        const gen_stage *sg = &m->stages[s];
        if ((rs->n > 1 && !sg->on_prompt) || (rs->n == 1 && !sg->on_token)) continue;
        if (sg->n_outs > 64) {
            st = og_errorf(OG_ERR_UNSUPPORTED, "generator: %s has too many outputs", sg->file);
            break;
        }
        ni = no = 0;
        for (int k = 0; k < sg->n_feeds && !st; k++) {
            st = feed_tensor(g, rs, W, &sg->feeds[k], vals, &g->io_in[ni], &ins[ni],
                             &g->in_owned[ni]);
            g->in_names[ni++] = sg->feeds[k].name;
        }
        for (int k = 0; k < sg->n_outs && !st; k++) {
            const gen_out *o = &sg->outs[k];
            outs[no] = NULL;
            if (o->sink == GEN_SINK_PRESENT) {
                st = present_tensor(g, rs, W, o->index, &g->io_out[no], &outs[no]);
            } else if (o->sink == GEN_SINK_LOGITS && rs->n == 1 && rs->nr == g->rows) {
                int64_t ld[3] = {rs->nr, 1, m->vocab_size};
                st = wrap(m->logits.dtype, ld, 3, g->step_logits, &g->io_out[no], &outs[no]);
            }
            g->out_names[no++] = o->name;
        }
        og_output_rows last = {NULL, NULL, 0};
        for (int k = 0; k < sg->n_outs; k++)
            if (sg->outs[k].sink == GEN_SINK_LOGITS) last.output = sg->outs[k].name;
        if (!st)
            st = og_session_run_rows(sg->s, g->in_names, ins, (size_t)ni, g->out_names, outs,
                                     (size_t)no, last_only && last.output ? &last : NULL);
        for (int k = 0; k < ni; k++) {
            if (ins[k] && g->in_owned[k]) og_tensor_free(ins[k]);
            ins[k] = NULL;
        }
        if (st) break;
        for (int k = 0; k < no; k++) {
            const gen_out *o = &sg->outs[k];
            og_tensor *t = outs[k];
            bool view = t == &g->io_out[k];
            outs[k] = NULL;
            if (o->sink == GEN_SINK_VALUE) {
                vals[s * 64 + k] = t;
            } else if (o->sink == GEN_SINK_LOGITS) {
                if (logits != &g->step_logits_t) og_tensor_free(logits);
                if (view) { /* the step's logits: keep the view where it stays valid */
                    g->step_logits_t = *t;
                    t = &g->step_logits_t;
                }
                logits = t;
            } else if (rs->alone && !(g->share_kv && g->inplace[o->index]) &&
                       m->cache[o->index].kind == GEN_CACHE_KV && !m->cache[o->index].fixed) {
                int pos = (int)t->dims[t->rank - 2];
                int col = m->compact ? 0 : g->kv_len - pos;
                gen_kv_place_row(g, o->index, rs->r0, t->data, pos, col);
                if (!view) og_tensor_free(t);
            } else if (!view) {
                og_tensor_free(t);
            }
        }
    }
    if (st) goto done;
    int n_out = last_only ? 1 : rs->n;
    if (!logits || logits->rank != 3 || logits->dims[0] != rs->nr || logits->dims[1] != n_out ||
        logits->dims[2] != m->vocab_size) {
        st = og_errorf(OG_ERR_INVALID_MODEL, "%s: output '%s' has %s shape, expected [%d,%d,%d]",
                       m->dir, m->logits.name, logits ? "another" : "no", rs->nr, n_out,
                       m->vocab_size);
        goto done;
    }
    take_last_logits(g, logits, rs->r0);
    if (g->last_logits != &g->step_logits_t && g->last_logits != logits)
        og_tensor_free(g->last_logits);
    g->last_logits = logits;
    logits = NULL;
done:
    drop(g, vals, m->n_stages * 64, NULL);
    for (int k = 0; k < g->max_io; k++) {
        if (ins[k] && g->in_owned[k]) og_tensor_free(ins[k]);
        ins[k] = NULL;
    }
    drop(g, outs, g->max_io, g->io_out);
    if (logits != &g->step_logits_t) og_tensor_free(logits);
    return st;
}

/* After a batched run of n tokens: lengths, columns, buffers. */
static void advance(og_generator *g, int n) {
    const og_model *m = g->m;
    if (!m->compact) {
        for (int r = 0; r < g->rows; r++)
            memset(g->cmask + (size_t)r * g->col_cap + g->kv_len, !stopped(g, r), (size_t)n);
        g->kv_len += n;
    }
    for (int r = 0; r < g->rows; r++)
        if (!stopped(g, r)) g->fed[r] += n;
    if (m->compact) {
        int mx = 0;
        for (int r = 0; r < g->rows; r++) mx = g->fed[r] > mx ? g->fed[r] : mx;
        if (!(g->share_kv)) mx = mx > g->kv_len ? mx : g->kv_len;
        g->kv_len = mx;
    }
    for (int i = 0; i < m->n_cache; i++)
        if (!g->inplace[i]) g->cur[i] = 1 - g->cur[i];
}

static og_status *ensure_staging(og_generator *g, size_t mask_entries) {
    if (mask_entries <= g->mask_cap) return NULL;
    int64_t *a = realloc(g->feed_mask, mask_entries * sizeof *a);
    if (!a) return og_oom();
    g->feed_mask = a;
    int32_t *b = realloc(g->feed_mask32, mask_entries * sizeof *b);
    if (!b) return og_oom();
    g->feed_mask32 = b;
    g->mask_cap = mask_entries;
    return NULL;
}

/* Prompts of different lengths, from the empty cache: one row at a time. */
static og_status *run_alone(og_generator *g) {
    const og_model *m = g->m;
    int longest = 0, shortest = g->max_len;
    for (int r = 0; r < g->rows; r++) {
        longest = g->len[r] > longest ? g->len[r] : longest;
        shortest = g->len[r] < shortest ? g->len[r] : shortest;
    }
    if (!m->compact) {
        /* stopped rows keep taking columns while the longest-running row goes on */
        OG_TRY(gen_kv_reserve(g, g->max_len + (longest - shortest)));
        OG_TRY(ensure_staging(g, (size_t)g->rows * (size_t)g->col_cap + 1));
    }
    g->kv_len = longest;
    for (int r = 0; r < g->rows; r++) {
        run_spec rs = {r, 1, g->len[r], true};
        OG_TRY(run_rows(g, &rs));
        if (!m->compact) {
            uint8_t *cm = g->cmask + (size_t)r * g->col_cap;
            memset(cm, 0, (size_t)g->col_cap);
            memset(cm + longest - g->len[r], 1, (size_t)g->len[r]);
        }
        g->fed[r] = g->len[r];
    }
    for (int i = 0; i < m->n_cache; i++)
        if (!g->inplace[i] && m->cache[i].fixed) g->cur[i] = 1 - g->cur[i];
    return NULL;
}

og_status *gen_compute_logits(og_generator *g) {
    const og_model *m = g->m;
    int n = -1;
    bool same = true, any = false;
    for (int r = 0; r < g->rows; r++) {
        if (stopped(g, r)) continue;
        int p = g->len[r] - g->fed[r];
        any |= p > 0;
        if (n < 0) n = p;
        else if (p != n) same = false;
    }
    if (!any)
        return og_errorf(OG_ERR_INVALID_ARGUMENT, "generator: no tokens to run (append tokens "
                         "first)");
    bool has_stopped = false;
    for (int r = 0; r < g->rows; r++) has_stopped |= stopped(g, r);
    if (!same || (has_stopped && n != 1)) {
        bool empty = true;
        for (int r = 0; r < g->rows; r++) empty &= g->fed[r] == 0 && !stopped(g, r);
        if (!empty)
            return og_errorf(OG_ERR_UNSUPPORTED, "generator: rows with different numbers of "
                             "pending tokens can only start from an empty cache");
        OG_TRY(run_alone(g));
        g->has_logits = true;
        return NULL;
    }
    OG_TRY(ensure_staging(g, (size_t)g->rows * ((size_t)g->kv_len + (size_t)n + 1)));
    /* A prompt chunk of a model with state runs in two parts, keeping a snapshot before
     * its last token so that rewinding to the end of the prompt costs one token. */
    if (m->snapshots && g->rows == 1 && n > 1) {
        run_spec a = {0, 1, n - 1, false};
        OG_TRY(run_rows(g, &a));
        advance(g, n - 1);
        OG_TRY(gen_snapshot_take(g));
        n = 1;
    }
    run_spec rs = {0, g->rows, n, false};
    OG_TRY(run_rows(g, &rs));
    advance(g, n);
    g->has_logits = true;
    return NULL;
}
