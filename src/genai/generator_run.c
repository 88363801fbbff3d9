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
 * position_ids. The one thing rows share is the mask's width where a LongRoPE graph reads
 * it (stage_inputs). */
#include "genai/generator.h"

#include "base/tensor.h"
#include "genai/config.h"
#include "genai/mtp.h"
#include "genai/step.h"
#include "runtime/og_session.h"

#include <stdlib.h>
#include <string.h>

/* Prompt tokens per run of a long prompt (gen_compute_logits): large enough that the
 * weights' reads are shared by many rows, small enough that a piece's activations stay
 * in tens of MB for 1B-class models. */
enum { GEN_PROMPT_PIECE = 512 };

typedef struct run_spec {
    int run_len, run_off; /* the tokens are [run_off, run_off + n) of a run of run_len (0:
                             n) as onnxruntime would run them (row forms, step.h) */
    int r0, nr;   /* rows */
    int n;        /* new tokens per row */
    bool alone;   /* a row run alone from the empty cache (prompts of different lengths) */
    bool as_steps; /* new positions take the form of one-token steps (a verification of
                      drafted tokens, which must give a plain decode's bits) */
    bool every_logit; /* every position's logits, whatever params.all_logits says */
    bool last_logit;  /* only the last position's logits, whatever params.all_logits says */
    void *logits_into; /* every position's logits go here ([nr, n, vocab] of the logits
                          dtype), not into a tensor of their own */
} run_spec;

/* A row that has stopped takes part in a batched step without changing what it keeps. */
static bool stopped(const og_generator *g, int r) { return g->done[r] && g->fed[r] >= g->len[r]; }

/* Copies the last position of rows of a [nr, n, vocab] logits tensor to float32. */
static void take_last_logits(og_generator *g, const og_tensor *lt, int r0) {
    int V = g->m->vocab_size;
    int64_t nr = lt->dims[0], n = lt->dims[1];
    size_t es = dtype_size(lt->dtype);
    for (int64_t k = 0; k < nr; k++) {
        size_t off = ((size_t)k * (size_t)n + (size_t)(n - 1)) * (size_t)V;
        gen_logits_to_f32(lt->dtype, (const char *)lt->data + off * es, (size_t)V,
                          g->logits + (size_t)(r0 + k) * V);
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
    /* A LongRoPE graph picks its rotary caches by the mask's width for all rows at once:
     * onnxruntime-genai's batch of prompts (right-padded to the longest) takes the side of
     * the longest prompt for every row, as Hugging Face's takes it from the largest
     * position. A row run alone gets a mask as wide as the batch's (run_alone has set
     * kv_len to the longest prompt), zeros past its own tokens: its tokens and its
     * attention are its own, its rotary angles the batch's. */
    if (rs->alone && m->compact && m->width_threshold >= 0 && g->kv_len > W) W = g->kv_len;
    for (int k = 0; k < rs->nr; k++) {
        int r = rs->r0 + k;
        const int32_t *s = g->seq + (size_t)r * g->max_len;
        bool dummy = stopped(g, r);
        for (int i = 0; i < n; i++) {
            int p = start[k] + i;
            int64_t tok = dummy && !m->compact ? m->pad_id : s[p];
            if (g->mids && r == 0 && p < g->mids_len && g->mids[p] < 0) tok = g->mids[p];
            g->feed_ids[(size_t)k * n + i] = tok;
            for (int a = 0; a < (m->position_rank == 3 ? 3 : 1); a++)
                g->feed_pos[(size_t)a * rs->nr * n + (size_t)k * n + i] =
                    !g->mpos ? p : p < g->media_len ? g->mpos[(size_t)a * g->media_len + p]
                                                    : p + g->rope_delta;
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

/* The image features of the image tokens row 0 feeds in this run (the generator takes
 * images for batch 1 only), or NULL when it feeds none. */
static const og_tensor *run_image_features(og_generator *g, const run_spec *rs) {
    if (!g->img_features || rs->r0 != 0) return NULL;
    const int32_t *s = g->seq;
    int64_t before = 0, within = 0;
    for (int p = 0; p < g->start[0] + rs->n; p++)
        if (g->mids ? p < g->mids_len && g->mids[p] < 0 : s[p] == g->m->image_token_id)
            *(p < g->start[0] ? &before : &within) += 1;
    const og_tensor *f = g->img_features;
    if (!within || before + within > f->dims[0]) return NULL;
    og_tensor *v;
    int64_t d[2] = {within, f->dims[1]};
    size_t row = (size_t)f->dims[1] * dtype_size(f->dtype);
    if (gen_step_view(f->dtype, d, 2, (char *)f->data + (size_t)before * row, &g->img_view, &v))
        return NULL; /* a rank-2 shape cannot fail */
    return v;
}

/* The row forms of a run (step.h): a position computed before keeps its form (a rewind
 * feeds it again), a new one takes its place in the run. A stopped row of the
 * shared-column layout is fed a masked pad past its last position, whose form is not
 * kept (it may lie past max_length). */
static void stage_forms(og_generator *g, const run_spec *rs) {
    int L = rs->run_len ? rs->run_len : rs->n;
    for (int k = 0; k < rs->nr; k++) {
        int r = rs->r0 + k;
        uint8_t *pf = g->pos_form + (size_t)r * g->max_len;
        for (int i = 0; i < rs->n; i++) {
            int p = g->start[k] + i;
            uint8_t f = p < g->form_len[r] ? pf[p]
                        : rs->as_steps ? gen_step_form_in_run(0, 1)
                                       : gen_step_form_in_run(rs->run_off + i, L);
            if (p >= g->form_len[r] && p < g->max_len) pf[p] = f;
            g->feed_forms[(size_t)k * rs->n + i] = f;
        }
        int end = g->start[k] + rs->n < g->max_len ? g->start[k] + rs->n : g->max_len;
        if (end > g->form_len[r]) g->form_len[r] = end;
    }
}

/* The generator's cache as a run of rows rs sees it (gen_step_cache). */
typedef struct run_cache {
    og_generator *g;
    const run_spec *rs;
    int W; /* the mask width */
} run_cache;

static og_status *past_of(void *ctx, int i, og_tensor *slot, og_tensor **out) {
    const run_cache *rc = ctx;
    return gen_cache_past(rc->g, i, rc->rs->r0, rc->rs->nr, rc->rs->alone, slot, out);
}

static og_status *present_of(void *ctx, int i, og_tensor *slot, og_tensor **out, bool *skip) {
    const run_cache *rc = ctx;
    const og_generator *g = rc->g;
    const run_spec *rs = rc->rs;
    *skip = false;
    /* a KV present holds the columns after the run: the longest row's in the compact
     * layout, every row's kv_len + n in the shared-column one */
    int cols = g->m->compact ? (rc->W > g->kv_len ? rc->W : g->kv_len) : g->kv_len + rs->n;
    return gen_cache_present(g, i, rs->r0, rs->nr, cols, rs->alone, slot, out);
}

static const og_tensor *param_of(void *ctx, const char *name) {
    const run_cache *rc = ctx;
    return gen_adapters_param(rc->g->active, rc->g->n_active, name);
}

static og_status *cross_of(void *ctx, int i, og_tensor *slot, og_tensor **out) {
    const run_cache *rc = ctx;
    return gen_encoder_cross(rc->g, i, rc->rs->r0, rc->rs->nr, slot, out);
}

static void took_present(void *ctx, int i, const og_tensor *t, bool view) {
    const run_cache *rc = ctx;
    if (rc->rs->alone && !view) gen_cache_place(rc->g, i, rc->rs->r0, t);
}

/* Runs rows [r0, r0 + nr) through every stage (step.h). Nothing is allocated for inputs
 * (views of the staging and cache buffers) or for present outputs and a step's logits
 * (written into the generator's buffers). */
static og_status *run_rows(og_generator *g, const run_spec *rs) {
    og_model *m = g->m;
    int W = stage_inputs(g, rs);
    gen_step_tokens tk = {.rows = rs->nr, .n = rs->n, .mask_cols = W, .ids = g->feed_ids,
                          .mask = g->feed_mask, .pos = g->feed_pos, .ids32 = g->feed_ids32,
                          .mask32 = g->feed_mask32, .pos32 = g->feed_pos32};
    stage_forms(g, rs);
    tk.forms = g->feed_forms;
    tk.image_features = run_image_features(g, rs);
    run_cache rc = {g, rs, W};
    gen_step_cache cache = {.ctx = &rc, .past = past_of, .present = present_of,
                            .took_present = took_present,
                            .param = g->n_active ? param_of : NULL,
                            .cross = g->m->n_cross ? cross_of : NULL};
    /* a one-token step of every row writes its logits into step_logits; a prompt whose
     * other positions' logits nobody asked for computes the last only */
    og_tensor into;
    gen_step_logits lg = {.select = rs->n > 1 && (rs->last_logit ||
                                                  (!g->p.all_logits && !rs->every_logit))};
    void *into_data = rs->logits_into && !lg.select ? rs->logits_into
                      : rs->n == 1 && rs->nr == g->rows ? g->step_logits : NULL;
    if (into_data) {
        int64_t ld[3] = {rs->nr, rs->n, m->vocab_size};
        og_tensor *v;
        OG_TRY(gen_step_view(m->logits.dtype, ld, 3, into_data, &into, &v));
        lg.into = &into;
    }
    og_tensor hslot;
    if (g->mtp) { /* MTP (mtp.h): a head's rows in; the rows a head reads kept */
        tk.hidden = gen_mtp_feed(g, g->start[0], rs->n, &hslot);
        lg.want_hidden = m->hidden_out && rs->r0 == 0 && rs->nr == 1;
    }
    OG_TRY(gen_step_run(m, &g->io, &tk, &cache, &lg));
    if (lg.hidden) {
        gen_mtp_keep(g, lg.hidden, g->start[0]);
        og_tensor_free(lg.hidden);
    }
    og_tensor *logits = lg.out;
    int n_out = lg.select ? 1 : rs->n;
    if (!logits || logits->rank != 3 || logits->dims[0] != rs->nr || logits->dims[1] != n_out ||
        logits->dims[2] != m->vocab_size) {
        og_status *st = og_errorf(OG_ERR_INVALID_MODEL, "%s: output '%s' has %s shape, expected "
                                  "[%d,%d,%d]", m->dir, m->logits.name, logits ? "another" : "no",
                                  rs->nr, n_out, m->vocab_size);
        if (logits != &into) og_tensor_free(logits);
        return st;
    }
    take_last_logits(g, logits, rs->r0);
    if (g->last_logits != &g->step_logits_t) og_tensor_free(g->last_logits);
    if (logits == &into) { /* the step's logits: keep the view where it stays valid */
        g->step_logits_t = into;
        logits = &g->step_logits_t;
    }
    g->last_logits = logits;
    return NULL;
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
        run_spec rs = {.r0 = r, .nr = 1, .n = g->len[r], .alone = true};
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

/* Whether every stage's kernels take row forms, so that a prompt split into runs still
 * computes each token as the whole prompt's run would (a backend without them, such as
 * onnxruntime, computes the tokens of a later run as decode steps). */
static bool stages_take_forms(const og_model *m) {
    for (int s = 0; s < m->n_stages; s++)
        if (!runtime_session_ops(m->stages[s].s)->set_row_forms) return false;
    return true;
}

/* Whether the pending prompt of every row may run in pieces with the bits of one run:
 * GroupQueryAttention's compact cache (a piece continues the rows like appended tokens),
 * backends whose kernels take row forms (their bits do not depend on how a run is cut,
 * the engine's chunked prefill relies on the same), the last position's logits only, no
 * state (its prompt path keeps snapshots) and no LongRoPE width test (a piece's mask
 * width would choose the short caches where the whole prompt chooses the long ones). */
static bool prompt_in_pieces(const og_generator *g) {
    const og_model *m = g->m;
    if (!m->compact || m->snapshots || m->width_threshold >= 0 || g->p.all_logits) return false;
    return stages_take_forms(m);
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
    /* A long prompt runs in pieces of GEN_PROMPT_PIECE tokens, each piece's tokens in
     * their forms of the whole prompt's run, so that the activations and the sessions'
     * scratch (sized by the largest run) stay bounded by the piece, not the prompt. */
    for (int done = 0; n > GEN_PROMPT_PIECE && prompt_in_pieces(g);) {
        int k = n - done > GEN_PROMPT_PIECE ? GEN_PROMPT_PIECE : n - done;
        run_spec piece = {.run_len = n, .run_off = done, .r0 = 0, .nr = g->rows, .n = k};
        OG_TRY(run_rows(g, &piece));
        advance(g, k);
        done += k;
        if (done == n) {
            g->has_logits = true;
            return NULL;
        }
    }
    /* A prompt chunk of a model with state runs in two parts, keeping a snapshot before
     * its last token so that rewinding to the end of the prompt costs one token. Without
     * row forms the prompt runs whole, as onnxruntime-genai runs it (a rewind into it
     * then runs it again from the start). */
    run_spec rs = {.r0 = 0, .nr = g->rows, .n = n};
    if (m->snapshots && g->rows == 1 && n > 1 && stages_take_forms(m)) {
        /* both parts take their tokens' forms in the whole prompt's run */
        run_spec a = {.run_len = n, .r0 = 0, .nr = 1, .n = n - 1};
        OG_TRY(run_rows(g, &a));
        advance(g, n - 1);
        OG_TRY(gen_snapshot_take(g));
        rs = (run_spec){.run_len = n, .run_off = n - 1, .r0 = 0, .nr = 1, .n = 1};
        n = 1;
    }
    OG_TRY(run_rows(g, &rs));
    advance(g, n);
    g->has_logits = true;
    return NULL;
}

og_status *gen_compute_steps(og_generator *g, float *out) {
    int n = g->len[0] - g->fed[0];
    if (g->rows != 1 || n < 1)
        return og_errorf(OG_ERR_RUNTIME, "generator: %d tokens of %d rows cannot run as steps",
                         n, g->rows);
    OG_TRY(ensure_staging(g, (size_t)g->kv_len + (size_t)n + 1));
    /* float32 logits are written straight into out; others are converted from a buffer
     * kept for the purpose (nothing is allocated per run either way) */
    og_dtype dt = g->m->logits.dtype;
    size_t V = (size_t)g->m->vocab_size, bytes = (size_t)n * V * dtype_size(dt);
    if (out && dt != OG_FLOAT32 && bytes > g->steps_raw_bytes) {
        void *b = realloc(g->steps_raw, bytes);
        if (!b) return og_oom();
        g->steps_raw = b;
        g->steps_raw_bytes = bytes;
    }
    run_spec rs = {.r0 = 0, .nr = 1, .n = n, .as_steps = true, .every_logit = out != NULL,
                   .last_logit = out == NULL,
                   .logits_into = !out ? NULL : dt == OG_FLOAT32 ? (void *)out : g->steps_raw};
    OG_TRY(run_rows(g, &rs));
    if (out && dt != OG_FLOAT32)
        gen_logits_to_f32(dt, g->steps_raw, (size_t)n * V, out);
    advance(g, n);
    g->has_logits = true;
    return NULL;
}
