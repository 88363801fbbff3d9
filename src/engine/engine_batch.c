/* Batched steps over the paged KV cache (see engine.h).
 *
 * A step is one run of the model's pipeline over a flat batch: every scheduled token of
 * every sequence in one row, input_ids [1, T], each token with its own position, and a
 * paged_kv binding that tells GroupQueryAttention which tokens belong to which sequence
 * and where each sequence's blocks are. Everything else in a decoder works token by
 * token, so the row mixes decode tokens and prefill chunks freely and the weights are
 * read once for all of them. The past_key/past_value inputs get empty tensors, the
 * present outputs are not requested, and the attention mask is ones (its sum and width
 * feed only seqlens_k and total_sequence_length, which the paged path does not read;
 * batchable() refuses a model that reads the mask elsewhere, but for LongRoPE's width
 * test, for which a step runs the sequences on either side of the test apart).
 *
 * Scheduling, once per step, within a token budget:
 *   1. every running sequence that has one token to run (decode) gets it;
 *   2. running sequences still prefilling get chunks, oldest first;
 *   3. waiting requests are admitted in arrival order while the batch has room, the
 *      budget lasts and the pool can give their first chunk its blocks (a preempted
 *      sequence waits at the front). Admission first looks the prompt up in the prefix
 *      cache and starts after the blocks it finds;
 *   4. each scheduled sequence gets the blocks its new positions need; when the pool is
 *      dry the most recently admitted sequence is preempted (its blocks are given back
 *      and it waits at the front to be recomputed), never one that is older.
 * After the run, full blocks are registered in the prefix cache and every sequence whose
 * tokens have all been run chooses its next one. */
#include "engine/engine_internal.h"
#include "backends/kv_format.h"

#include "graph/graph.h"
#include "runtime/og_session.h"
#include "base/tensor.h"
#include "genai/adapters.h"
#include "genai/budget.h"
#include "genai/mask_width.h"
#include "genai/mtp.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static size_t esize(og_dtype dt) { return dt == OG_FLOAT32 ? 4 : 2; }

/* ---- one run of the pipeline -------------------------------------------------------- */

/* The paged pool as the model's stages see it in one run (gen_step_cache): the past
 * inputs are empty, the presents are not asked for, each stage's session reads and
 * writes the pool through the paged_kv it is lent for its run. */
typedef struct flat_cache {
    eng_engine *e;
    const paged_kv *pk;
    gen_adapter *adapter; /* the step's group's LoRA adapter, or NULL */
    int rows, slot0;      /* the run's batch rows; hybrid: the state slot of row 0 */
} flat_cache;

static og_status *empty_past(void *ctx, int i, og_tensor *slot, og_tensor **out) {
    const flat_cache *fc = ctx;
    if (fc->e->hybrid && fc->e->state_of[i] >= 0) /* a state: the rows' slots */
        return eng_state_past(fc->e, i, fc->slot0, fc->rows, slot, out);
    const gen_cache *c = &fc->e->m->cache[i];
    int64_t d[4] = {fc->rows, c->heads, 0, c->head_size};
    return gen_step_view(c->dtype, d, 4, NULL, slot, out);
}

static og_status *no_present(void *ctx, int i, og_tensor *slot, og_tensor **out, bool *skip) {
    const flat_cache *fc = ctx;
    *skip = false;
    if (fc->e->hybrid && fc->e->state_of[i] >= 0)
        return eng_state_present(fc->e, i, fc->slot0, fc->rows, slot, out);
    *out = NULL;
    *skip = true; /* the cache lives in the pool */
    return NULL;
}

static const og_tensor *adapter_param(void *ctx, const char *name) {
    gen_adapter *a = ((const flat_cache *)ctx)->adapter;
    return gen_adapters_param(&a, 1, name);
}

static og_status *lend_pool(void *ctx, const gen_stage *sg) {
    return runtime_session_set_paged_kv(sg->s, ((const flat_cache *)ctx)->pk);
}

static void take_pool_back(void *ctx, const gen_stage *sg) {
    (void)ctx;
    og_status_free(runtime_session_set_paged_kv(sg->s, NULL)); /* never fails */
}

/* With an MTP head: each sequence of a run keeps the hidden rows of its tokens (by
 * position) for its head to read when it drafts (its drafter made at its first run; out
 * of memory, it drafts nothing). */
static void keep_hidden(eng_engine *e, const og_tensor *h, int N, int n_seqs) {
    for (int k = 0; k < n_seqs; k++) {
        eng_seq *s = e->pseq_of[k];
        const paged_kv_seq *q = &e->pseqs[k];
        if (!s) continue;
        og_status *st = s->mtp ? NULL : gen_mtp_new(e->m, &s->mtp);
        if (st) {
            og_status_free(st);
            continue;
        }
        gen_mtp_keep_rows(s->mtp, h, (int64_t)q->row * N + q->q_off, q->n, q->past);
    }
}

/* Runs the staged tokens ids/pos [0, R * N), R rows of N tokens (the flat step: one row
 * of every sequence's tokens; a hybrid model's runs: R decoding sequences of one token,
 * or one sequence's prompt chunk), with e->pseqs' sequences and a mask of ones W wide;
 * a hybrid's rows read and write the state slots [slot0, slot0 + R). The logits of the
 * n_rows tokens `rows` (flat indices; the only ones sampled from) land in e->logits from
 * row row0 on, as [n_rows][vocab]: the lm_head and everything after the last attention
 * run on those rows only (og_session_run_rows). */
static og_status *run_rows(eng_engine *e, int R, int N, int W, int n_seqs, const int64_t *rows,
                           int n_rows, int row0, int slot0) {
    int T = R * N;
    og_model *m = e->m;
    paged_kv pk = {.dtype = e->pool->dtype, .codes = e->kv_codes, .kv_heads = e->pool->kv_heads,
                   .head_size = e->pool->head_size, .block_size = e->pool->block_size,
                   .n_blocks = e->pool->n_blocks, .n_layers = e->pool->n_layers,
                   .layer_names = e->layer_names, .k = e->pool->k, .v = e->pool->v,
                   .n_seqs = n_seqs, .seqs = e->pseqs, .layer_runs = e->layer_runs,
                   .layer_swc_caps = e->layer_swc_caps};
    memset(e->layer_runs, 0, sizeof *e->layer_runs * (size_t)pk.n_layers);
    for (int i = 0; i < R * W; i++) e->mask[i] = 1;
    if (m->position_rank == 3) /* text tokens: the same position on every mRoPE axis */
        for (int a = 1; a < 3; a++) memcpy(e->pos + (size_t)a * T, e->pos, sizeof *e->pos * (size_t)T);
    gen_step_tokens tk = {.rows = R, .n = N, .mask_cols = W, .ids = e->ids, .mask = e->mask,
                          .pos = e->pos, .ids32 = e->ids32, .mask32 = e->mask32,
                          .pos32 = e->pos32, .forms = e->forms};
    const eng_sampling *g = e->step_group;
    flat_cache fc = {e, &pk, g && g->adapter ? gen_adapters_find(g->adapters, g->adapter) : NULL,
                     R, slot0};
    if (g && g->adapter && !fc.adapter)
        return og_errorf(OG_ERR_INVALID_ARGUMENT, "engine: adapter '%s' was unloaded while "
                         "requests used it", g->adapter);
    gen_step_cache cache = {.ctx = &fc, .past = empty_past, .present = no_present,
                            .stage_begin = lend_pool, .stage_end = take_pool_back,
                            .param = fc.adapter ? adapter_param : NULL};
    og_tensor into, *v;
    int64_t d[2] = {n_rows, e->vocab};
    char *at = (char *)e->logits + (size_t)row0 * (size_t)e->vocab * esize(m->logits.dtype);
    OG_TRY(gen_step_view(m->logits.dtype, d, 2, at, &into, &v));
    gen_step_logits lg = {.into = &into, .select = true, .rows = rows, .n_rows = (size_t)n_rows};
    lg.want_hidden = e->o.spec_mtp && m->hidden_out; /* the rows an MTP head reads */
    OG_TRY(gen_step_run(m, &e->io, &tk, &cache, &lg));
    if (lg.hidden) {
        keep_hidden(e, lg.hidden, N, n_seqs);
        og_tensor_free(lg.hidden);
    }
    if (lg.out != &into) {
        og_tensor_free(lg.out);
        return og_errorf(OG_ERR_INVALID_MODEL, "engine: the model returned no logits '%s'",
                         m->logits.name);
    }
    if (e->hybrid) eng_state_settle(e, slot0, R);
    for (int l = 0; l < pk.n_layers; l++)
        if (e->layer_runs[l] != 1)
            return og_errorf(OG_ERR_UNSUPPORTED, "engine: layer %d ('%s') was read by %d "
                             "GroupQueryAttention nodes over the paged cache, expected 1 (its "
                             "attention does not take the cache as a graph input)", l,
                             e->layer_names[l], e->layer_runs[l]);
    return NULL;
}

/* Logits row of token t as float32 (in e->row unless they are float32 already), the
 * step's own: choosing may change it. */
static float *logits_row(eng_engine *e, int t) {
    og_dtype dt = e->m->logits.dtype;
    size_t V = (size_t)e->vocab;
    if (dt == OG_FLOAT32) return (float *)e->logits + (size_t)t * V;
    gen_logits_to_f32(dt, (const uint16_t *)e->logits + (size_t)t * V, V, e->row);
    return e->row;
}

/* ---- set-up -------------------------------------------------------------------------- */

/* The flat step feeds an attention mask of ones, which is right only where the mask's
 * values and width reach nothing but GroupQueryAttention's seqlens_k and
 * total_sequence_length (inputs 5 and 6): those the paged binding replaces with each
 * sequence's own lengths. The one other reader allowed is the builder's LongRoPE choice
 * (Phi-3 128k, Phi-3.5, Phi-4-mini): an If on Greater(width, original_max) between short-
 * and long-factor cos/sin caches; *threshold gets original_max (else -1), and the engine
 * runs the sequences on either side of it apart, each run with a mask as wide as its
 * longest sequence (eng_batch_step), as a run alone would choose. A graph that reads the
 * mask anywhere else (positions derived from it, ...) would see the step's width, not the
 * sequence's: refused, naming the place. Follows the mask forward through the stage's
 * graph in topological order; a node fed by the mask, or by a subgraph's read of it,
 * passes it on through all its outputs. */
static og_status *mask_readers(const gen_stage *sg, const char *mask, int64_t *threshold) {
    const graph *g = runtime_session_graph(sg->s);
    int v0 = g ? graph_find_value(g, mask) : -1;
    if (v0 < 0) return NULL;
    bool *from = calloc((size_t)g->n_values, sizeof *from);
    int *order = malloc(sizeof *order * (size_t)(g->n_nodes + 1));
    int *start = NULL, *vals = NULL;
    og_status *st = !from || !order ? og_oom() : NULL;
    if (!st) st = graph_topo_order(g, sg->path, order);
    if (!st) st = graph_implicit_inputs(g, &start, &vals);
    if (!st) from[v0] = true;
    char label[160];
    for (int k = 0; !st && k < g->n_nodes; k++) {
        const graph_node *n = &g->nodes[order[k]];
        bool fed = false, gqa = !strcmp(n->op_type, "GroupQueryAttention");
        int64_t c;
        if (!strcmp(n->op_type, "If") && n->n_inputs == 1 && from[n->inputs[0]] &&
            gen_mask_width_test(g, n->inputs[0], v0, &c)) {
            if (*threshold >= 0 && *threshold != c)
                st = og_errorf(OG_ERR_UNSUPPORTED, "the attention mask's width is tested against "
                               "%lld and %lld", (long long)*threshold, (long long)c);
            *threshold = c;
            continue;
        }
        for (int i = 0; !st && i < n->n_inputs; i++) {
            if (n->inputs[i] < 0 || !from[n->inputs[i]] || (gqa && (i == 5 || i == 6))) continue;
            if (gqa)
                st = og_errorf(OG_ERR_UNSUPPORTED, "the attention mask reaches input %d of %s, "
                               "not only its lengths", i, graph_node_label(n, label, sizeof label));
            fed = true;
        }
        for (int j = start ? start[order[k]] : 0; !st && start && j < start[order[k] + 1]; j++)
            fed |= from[vals[j]];
        if (st || !fed) continue;
        for (int o = 0; o < n->n_outputs; o++) {
            if (n->outputs[o] < 0) continue;
            from[n->outputs[o]] = true;
            if (g->values[n->outputs[o]].is_output)
                st = og_errorf(OG_ERR_UNSUPPORTED, "the attention mask reaches the output '%s'",
                               g->values[n->outputs[o]].name);
        }
    }
    free(from);
    free(order);
    free(start);
    free(vals);
    return st;
}

/* Whether cache c holds the codes of its attention node's own scales (the builder's
 * kv_cache_quant_scheme, backends/kv_format.h): the node writing its present decides. */
static bool cache_scaled(const og_model *m, const gen_cache *c) {
    const graph *g = runtime_session_graph(m->stages[c->stage].s);
    return g && kv_node_scaled(graph_producer(g, graph_find_value(g, c->present)));
}

/* Why the model cannot be batched over the paged cache, or NULL. */
static og_status *batchable(const og_model *m, int64_t *threshold) {
    *threshold = -1;
    if (m->kv != GEN_KV_SEPARATE || !m->compact)
        return og_errorf(OG_ERR_UNSUPPORTED, "its attention is not GroupQueryAttention over "
                         "separate key/value caches");
    for (int s = 0; s < m->n_stages; s++)
        if (!m->stages[s].on_prompt || !m->stages[s].on_token)
            return og_errorf(OG_ERR_UNSUPPORTED, "stage '%s' runs only on prompts or only on "
                             "generated tokens", m->stages[s].name);
    for (int s = 0; s < m->n_stages; s++)
        if (!runtime_session_ops(m->stages[s].s)->set_paged_kv)
            return og_errorf(OG_ERR_UNSUPPORTED, "stage '%s' runs on %s, which cannot read the "
                             "paged KV cache", m->stages[s].name,
                             runtime_session_ops(m->stages[s].s)->name);
    if (m->logits.dtype != OG_FLOAT32 && m->logits.dtype != OG_FLOAT16 && m->logits.dtype != OG_BFLOAT16)
        return og_errorf(OG_ERR_UNSUPPORTED, "its logits are %s", og_dtype_name(m->logits.dtype));
    for (int s = 0; m->attention_mask && s < m->n_stages; s++) {
        og_status *st = mask_readers(&m->stages[s], m->attention_mask, threshold);
        if (st) {
            og_status *why = og_errorf(og_status_code(st), "stage '%s': %s", m->stages[s].name,
                                       og_status_message(st));
            og_status_free(st);
            return why;
        }
    }
    /* a state is advanced by every token of a run, whichever side of the test it is on */
    if (m->has_state && *threshold >= 0)
        return og_errorf(OG_ERR_UNSUPPORTED, "the model carries a recurrent/conv state and tests "
                         "the attention mask's width (LongRoPE)");
    return NULL;
}

/* The probe: one token through the paged path, every layer must read the pool. */
static og_status *probe(eng_engine *e) {
    int32_t b = kv_pool_alloc(e->pool);
    if (b < 0) return og_errorf(OG_ERR_RUNTIME, "engine: the KV pool has no block");
    e->ids[0] = e->m->bos_id >= 0 && e->m->bos_id < e->vocab ? e->m->bos_id : 0;
    e->pos[0] = 0;
    e->forms[0] = gen_step_form_at(0, 1);
    e->pseqs[0] = (paged_kv_seq){0, 0, 1, 0, &b};
    e->pseq_of[0] = NULL;
    int64_t row = 0;
    og_status *st = run_rows(e, 1, 1, 1, 1, &row, 1, 0, 0); /* a hybrid's slot 0, unowned */
    kv_pool_release(e->pool, b);
    return st;
}

og_status *eng_batch_init(eng_engine *e) {
    og_model *m = e->m;
    OG_TRY(batchable(m, &e->width_threshold));
    /* a cached block's keys depend on the side of the width test its prompt took, which
     * the cache's key (the tokens) does not say */
    if (e->width_threshold >= 0) e->o.prefix_cache = false;
    int n_layers = 0;
    for (int i = 0; i < m->n_cache; i++)
        n_layers += m->cache[i].kind == GEN_CACHE_KV && !strcmp(m->cache[i].what, "key");
    if (n_layers == 0) return og_errorf(OG_ERR_UNSUPPORTED, "the model has no KV cache");
    const gen_cache *c0 = NULL;
    bool scaled = false;
    for (int i = 0; i < m->n_cache; i++) {
        const gen_cache *c = &m->cache[i];
        if (c->kind == GEN_CACHE_STATE) continue; /* a hybrid's state: a slot (engine_state.c) */
        if (!c0) c0 = c, scaled = cache_scaled(m, c);
        if (c->kind != GEN_CACHE_KV || c->heads != c0->heads || c->head_size != c0->head_size ||
            c->dtype != c0->dtype || cache_scaled(m, c) != scaled)
            return og_errorf(OG_ERR_UNSUPPORTED, "its KV caches differ in shape or type between "
                             "layers ('%s')", c->past);
    }
    /* the paged kernel reads what the generator's does: kv_format.h's rows, or the codes of
     * the nodes' own scales (the builder's kv_cache_quant_scheme) */
    if (!kv_storable(c0->dtype) && !scaled)
        return og_errorf(OG_ERR_UNSUPPORTED, "its KV cache is %s", og_dtype_name(c0->dtype));
    e->kv_codes = scaled;
    e->max_rows = e->o.max_batch;
    int bs = e->o.block_size;
    size_t pos_bytes = kv_pool_position_bytes(n_layers, c0->heads, c0->head_size, c0->dtype);
    /* a hybrid's state slots and snapshots: within --kv-memory, leaving the blocks of one
     * whole context or half of it, whichever is less (fewer snapshots, then fewer slots,
     * where it cannot hold them all); by default beside the KV, at most a quarter of the
     * memory available */
    double keep = ((double)e->context + bs) * (double)pos_bytes;
    if (keep > (double)e->o.kv_memory / 2) keep = (double)e->o.kv_memory / 2;
    double limit = e->o.kv_memory ? (double)e->o.kv_memory - keep : gen_available_memory() / 4;
    e->state_reserve = eng_state_plan(m, &e->o, limit, &e->n_slots, &e->n_snaps);
    OG_TRY(eng_state_init(e));
    /* drafted tokens are verified in the step's flat row (a hybrid's in a run over its
     * slot; with a LongRoPE width test on one side of it: eng_spec_plan's drafts stop
     * before the switch); an MTP head drafts from the hidden rows the runs return */
    if (e->o.spec_ngram > 0 || e->o.spec_mtp || e->o.spec_drafter || e->o.spec_draft_model) {
        e->spec = true;
        e->spec_rows = eng_spec_rows(e);
        if (e->hybrid) { /* copies of the verifying sequences' slots: at most 64 MiB */
            double most = 64.0 * 1024 * 1024 / (double)e->slot_bytes;
            e->spec_baks = most < 1 ? 1 : most > e->o.max_batch ? e->o.max_batch : (int)most;
            if (!(e->spec_bak = malloc((size_t)e->spec_baks * e->slot_bytes)))
                return og_errorf(OG_ERR_OUT_OF_MEMORY, "engine: out of memory for %d state "
                                 "copies of %zu bytes", e->spec_baks, e->slot_bytes);
        }
    }
    double want = (double)e->o.kv_memory;
    if (want <= 0) {
        want = (double)e->o.max_batch * (double)e->context * (double)pos_bytes;
        double cap = gen_available_memory() / 4;
        double one = ((double)e->context + bs) * (double)pos_bytes;
        if (want > cap) want = cap > one ? cap : one;
    } else {
        want -= (double)e->state_reserve; /* the states' slots and snapshots come first */
    }
    double blocks = want / ((double)pos_bytes * bs);
    if (blocks < 1)
        return og_errorf(OG_ERR_OUT_OF_MEMORY, "engine: --kv-memory %.0f bytes holds no block "
                         "of %d positions (%zu bytes each)%s", want, bs, pos_bytes * (size_t)bs,
                         e->state_reserve ? " beside the state slots and snapshots" : "");
    if (blocks > 1 << 30) blocks = 1 << 30;
    OG_TRY(kv_pool_create(n_layers, c0->heads, c0->head_size, c0->dtype, bs, (int32_t)blocks, &e->pool));
    e->layer_names = calloc((size_t)n_layers, sizeof *e->layer_names);
    e->layer_runs = calloc((size_t)n_layers, sizeof *e->layer_runs);
    e->layer_swc_caps = calloc((size_t)n_layers, sizeof *e->layer_swc_caps);
    e->pseqs = calloc((size_t)e->o.max_batch + 1, sizeof *e->pseqs);
    e->pseq_of = calloc((size_t)e->o.max_batch + 1, sizeof *e->pseq_of);
    int T = e->step_tokens;
    e->tok_cap = T;
    e->ids = malloc(sizeof(int64_t) * (size_t)T * 3 + 64);
    e->pos = malloc(sizeof(int64_t) * (size_t)T * 3 + 64);
    /* the mask is as wide as the step, or with a width test as its longest sequence */
    size_t W = (size_t)(e->width_threshold >= 0 && e->context > T ? e->context : T);
    e->mask = malloc(sizeof(int64_t) * W + 64);
    e->ids32 = malloc(sizeof(int32_t) * (size_t)T * 3 + 64);
    e->forms = malloc((size_t)T + 64);
    e->pos32 = malloc(sizeof(int32_t) * (size_t)T * 3 + 64);
    e->mask32 = malloc(sizeof(int32_t) * W + 64);
    /* a step samples at most one token per sequence, and a verification's drafted ones */
    size_t lrows = (size_t)e->o.max_batch + 1 + (size_t)e->spec_rows + (e->spec ? 1 : 0);
    e->spec_scratch = (int)lrows - 1;
    e->logit_rows = malloc(sizeof *e->logit_rows * lrows);
    e->groups = malloc(sizeof *e->groups * ((size_t)e->o.max_batch + 1));
    e->logits = malloc(esize(m->logits.dtype) * lrows * (size_t)e->vocab + 64);
    e->spec_seen = e->spec ? calloc((size_t)T + 1, 1) : NULL;
    if (!e->layer_names || !e->layer_runs || !e->layer_swc_caps || !e->pseqs || !e->ids || !e->pos || !e->mask ||
        !e->ids32 || !e->forms || !e->pos32 || !e->mask32 || !e->logits || !e->logit_rows ||
        !e->groups || (e->spec && !e->spec_seen))
        return og_errorf(OG_ERR_OUT_OF_MEMORY, "engine: out of memory for a step of %d tokens", T);
    if (!e->pseq_of) return og_oom();
    OG_TRY(gen_step_io_init(&e->io, m));
    int l = 0;
    for (int i = 0; i < m->n_cache; i++)
        if (m->cache[i].kind == GEN_CACHE_KV && !strcmp(m->cache[i].what, "key")) {
            e->layer_swc_caps[l] = m->cache[i].window;
            e->layer_names[l++] = m->cache[i].past;
        }
    e->batched = true;
    og_status *st = probe(e);
    if (st) e->batched = false;
    return st;
}

void eng_batch_free(eng_engine *e) {
    kv_pool_free(e->pool);
    e->pool = NULL;
    free(e->layer_names);
    free(e->layer_runs);
    free(e->layer_swc_caps);
    free(e->pseqs);
    free(e->pseq_of);
    e->pseq_of = NULL;
    free(e->ids);
    free(e->pos);
    free(e->mask);
    free(e->ids32);
    free(e->forms);
    free(e->pos32);
    free(e->mask32);
    free(e->logits);
    free(e->logit_rows);
    free(e->groups);
    free(e->spec_seen);
    free(e->spec_bak);
    e->spec_seen = NULL;
    e->spec_bak = NULL;
    e->spec_baks = 0;
    e->spec = false;
    e->spec_rows = 0;
    gen_step_io_free(&e->io);
    eng_state_free(e);
    e->logit_rows = NULL;
    e->groups = NULL;
    e->layer_names = NULL, e->layer_runs = NULL, e->layer_swc_caps = NULL, e->pseqs = NULL, e->ids = e->pos = e->mask = NULL;
    e->ids32 = e->pos32 = e->mask32 = NULL, e->logits = NULL;
    e->forms = NULL;
    e->batched = false;
}

/* ---- blocks ---------------------------------------------------------------------------- */

void eng_batch_drop_blocks(eng_engine *e, eng_seq *s) {
    if (e->hybrid) eng_state_drop(e, s);
    s->cut = 0;
    for (int i = s->n_blocks - 1; i >= 0; i--) kv_pool_release(e->pool, s->blocks[i]);
    s->n_blocks = 0;
    s->n_cached = 0;
    s->n_reg = 0;
    s->reg_hash = 0;
    s->matched = false;
}

static int blocks_for(const eng_engine *e, int positions) {
    return (positions + e->pool->block_size - 1) / e->pool->block_size;
}

static bool table_room(eng_seq *s, int n) {
    if (n <= s->cap_blocks) return true;
    int cap = s->cap_blocks ? s->cap_blocks : 8;
    while (cap < n) cap *= 2;
    int32_t *b = realloc(s->blocks, sizeof *b * (size_t)cap);
    if (!b) return false;
    s->blocks = b;
    s->cap_blocks = cap;
    return true;
}

/* Blocks for positions [0, n_cached + step_n); false when the pool is dry. */
static bool grow_blocks(eng_engine *e, eng_seq *s) {
    int need = blocks_for(e, s->n_cached + s->step_n);
    if (!table_room(s, need)) return false;
    while (s->n_blocks < need) {
        int32_t b = kv_pool_alloc(e->pool);
        if (b < 0) return false;
        s->blocks[s->n_blocks++] = b;
    }
    return true;
}

/* Looks the prompt up in the prefix cache (at admission). At least the last token is
 * always run: its logits are needed, and the block it lands in must be the sequence's
 * own. */
static void match_prefix(eng_engine *e, eng_seq *s) {
    s->matched = true;
    /* a block's keys and values depend on the adapter too, which the cache's key (the
     * tokens) does not say: requests with an adapter neither find nor leave blocks */
    if (!e->o.prefix_cache || s->n_blocks > 0 || s->req->s.adapter || s->req->s.no_cache) return;
    int bs = e->pool->block_size, max_blocks = (s->n_tokens - 1) / bs;
    if (max_blocks <= 0 || !table_room(s, max_blocks)) return;
    uint64_t h;
    int got = kv_pool_match(e->pool, s->tokens, s->n_tokens, max_blocks, s->blocks, &h);
    if (e->hybrid) { /* usable only up to a boundary whose state was kept */
        int keep = eng_state_match(e, s->blocks, got, &s->snap);
        s->cut = got * bs / e->snap_stride * e->snap_stride;
        if (s->cut <= keep * bs) s->cut = 0;
        for (int i = got - 1; i >= keep; i--) kv_pool_release(e->pool, s->blocks[i]);
        got = keep;
        h = got ? e->pool->hash[s->blocks[got - 1]] : 0;
    }
    s->n_blocks = got;
    s->n_reg = got;
    s->reg_hash = h;
    s->n_cached = got * bs;
}

/* Counts the prefix-cache lookup and hit of an admitted sequence. */
static void count_hit(eng_engine *e, eng_seq *s) {
    if (!e->o.prefix_cache || s->req->s.no_cache) return; /* not looked up */
    pthread_mutex_lock(&e->stats_mu);
    e->st.prefix_lookups++;
    e->st.prefix_hits += s->n_cached > 0;
    pthread_mutex_unlock(&e->stats_mu);
    if (s->n_cached == 0) return;
    pthread_mutex_lock(&s->req->mu);
    if (s->n_gen == 0) s->req->cached_tokens = s->n_cached;
    pthread_mutex_unlock(&s->req->mu);
    pthread_mutex_lock(&e->stats_mu);
    e->st.cached_prompt_tokens += (uint64_t)s->n_cached;
    pthread_mutex_unlock(&e->stats_mu);
}

static void register_blocks(eng_engine *e, eng_seq *s) {
    if (!e->o.prefix_cache || s->req->s.adapter) return;
    int bs = e->pool->block_size;
    while (s->n_reg < s->n_cached / bs) {
        int b = s->n_reg;
        const int32_t *t = s->tokens + (size_t)b * bs;
        uint64_t h = kv_pool_hash(s->reg_hash, t, bs);
        kv_pool_register(e->pool, s->blocks[b], b > 0 ? s->blocks[b - 1] : -1, h, t);
        s->reg_hash = h;
        s->n_reg++;
    }
}

/* ---- the step -------------------------------------------------------------------------- */

static void remove_running(eng_engine *e, int i) {
    memmove(e->running + i, e->running + i + 1, sizeof *e->running * (size_t)(e->n_running - i - 1));
    e->n_running--;
}

/* Back to the front of the queue, its blocks given back. */
static void preempt(eng_engine *e, int i) {
    eng_seq *s = e->running[i];
    remove_running(e, i);
    eng_unadmit(e, s);
    eng_batch_drop_blocks(e, s);
    s->step_n = 0;
    s->n_draft = 0;
    pthread_mutex_lock(&e->mu);
    bool room = true;
    if (e->n_waiting == e->cap_waiting) {
        int cap = e->cap_waiting ? 2 * e->cap_waiting : 64;
        eng_seq **w = realloc(e->waiting, sizeof *w * (size_t)cap);
        if (w) e->waiting = w, e->cap_waiting = cap;
        else room = false;
    }
    if (room) {
        memmove(e->waiting + 1, e->waiting, sizeof *e->waiting * (size_t)e->n_waiting);
        e->waiting[0] = s;
        e->n_waiting++;
        e->n_queued++;
    }
    pthread_mutex_unlock(&e->mu);
    if (!room) {
        eng_finish_seq(e, s, ENG_FINISH_ERROR, "out of memory while preempting");
        return;
    }
    pthread_mutex_lock(&e->stats_mu);
    e->st.preempted++;
    pthread_mutex_unlock(&e->stats_mu);
}

/* Sequences of the batch that will need a block they do not have yet. */
static int new_blocks_needed(const eng_engine *e) {
    int n = 0;
    for (int i = 0; i < e->n_running; i++) {
        const eng_seq *s = e->running[i];
        int need = blocks_for(e, s->n_cached + (s->step_n ? s->step_n : 1)) - s->n_blocks;
        n += need > 0 ? need : 0;
    }
    return n;
}

/* Sequences that may run at once: max_batch, or a hybrid's slots (eng_state_plan). */
static int max_running(const eng_engine *e) { return e->hybrid ? e->n_slots : e->o.max_batch; }

/* Whether request s runs with the LoRA adapter of request g (both with none included). */
static bool same_group(const eng_sampling *s, const eng_sampling *g) {
    return g && (s->adapter == g->adapter ||
                 (s->adapter && g->adapter && !strcmp(s->adapter, g->adapter)));
}

/* The group (a request of it) whose sequences this step runs: an adapter's weights are
 * inputs of the whole run, so a step runs one adapter (or none). The groups with work
 * (running sequences, and the next waiting one while there is room) take turns, one step
 * each, in the order they appear; with one group (no adapters) that is every step. */
static const eng_sampling *step_group(eng_engine *e) {
    int n = 0;
    for (int i = 0; i <= e->n_running; i++) {
        const eng_sampling *s = i < e->n_running ? &e->running[i]->req->s
                                : e->n_waiting && e->n_running < max_running(e)
                                    ? &e->waiting[0]->req->s : NULL;
        int k = 0;
        while (s && k < n && !same_group(s, e->groups[k])) k++;
        if (s && k == n) e->groups[n++] = s;
    }
    return n ? e->groups[e->group_turn++ % (unsigned)n] : NULL;
}

/* Whether s runs one token a step now. A hybrid's state advances through its tokens in
 * the pieces its run alone takes: the prompt but its last token, then one token at a time
 * (the prompt's last, the generated ones; a recomputation after preemption too). */
static bool one_by_one(const eng_engine *e, const eng_seq *s) {
    if (!e->hybrid) return s->n_tokens - s->n_cached == 1;
    return s->n_cached >= s->n_tokens - s->n_gen - 1;
}

/* The tokens s runs this step with `budget` left (> 0): its pending ones up to the budget.
 * A hybrid's prompt chunk stops short of the prompt's last token; with the prefix cache,
 * at the snapshot boundaries worth a snapshot (the end of cached blocks its match found
 * without one, so that the next request with that prefix finds it; the last boundary of
 * the prompt, which the next turn of a conversation starts with); and where the budget
 * cuts it, at a snapshot boundary or else a multiple of ENG_SNAP_ALIGN, so that every run
 * of a prompt starts at a multiple of 64 as LinearAttention's pieces in the run alone do.
 * When the budget left does not reach the next multiple, but a later step's would (the
 * step budget less a token for every running sequence), it waits: 0. */
static int chunk_of(const eng_engine *e, const eng_seq *s, int budget) {
    int pending = s->n_tokens - s->n_cached;
    if (one_by_one(e, s)) return 1;
    if (!e->hybrid) return pending < budget ? pending : budget;
    int from = s->n_cached, end = s->n_tokens - s->n_gen - 1;
    int to = end - from < budget ? end : from + budget;
    if (e->n_snaps > 0 && !s->req->s.adapter) {
        int last = end / e->snap_stride * e->snap_stride;
        if (s->cut > from && s->cut < to) to = s->cut;
        if (last > from && last < to) to = last;
    }
    if (to < end) {
        int a = to / e->snap_stride * e->snap_stride;
        if (a <= from) a = to / ENG_SNAP_ALIGN * ENG_SNAP_ALIGN;
        if (a > from) to = a;
        else if (e->step_tokens - e->n_running >= (from / ENG_SNAP_ALIGN + 1) * ENG_SNAP_ALIGN - from)
            return 0; /* a later step's budget reaches the next multiple: wait for it */
    }
    return to - from;
}

static int schedule(eng_engine *e) {
    int budget = e->step_tokens;
    const eng_sampling *g = e->step_group = step_group(e);
    for (int i = 0; i < e->n_running; i++) e->running[i]->step_n = 0, e->running[i]->n_draft = 0;
    for (int i = 0; i < e->n_running && budget > 0; i++) {
        eng_seq *s = e->running[i];
        if (one_by_one(e, s) && same_group(&s->req->s, g)) s->step_n = 1, budget--;
    }
    budget -= eng_spec_plan(e, budget); /* drafts verified beside the decode rows */
    for (int i = 0; i < e->n_running && budget > 0; i++) {
        eng_seq *s = e->running[i];
        if (!one_by_one(e, s) && same_group(&s->req->s, g)) {
            s->step_n = chunk_of(e, s, budget);
            budget -= s->step_n;
        }
    }
    while (budget > 0 && e->n_running < max_running(e) && e->n_waiting > 0 &&
           same_group(&e->waiting[0]->req->s, g)) {
        eng_seq *s = e->waiting[0];
        if (!s->matched) match_prefix(e, s);
        int chunk = chunk_of(e, s, budget);
        int need = blocks_for(e, s->n_cached + chunk) - s->n_blocks;
        if (chunk == 0 || need + new_blocks_needed(e) > kv_pool_available(e->pool)) {
            /* it waits, holding nothing: the blocks it found stay cached (evictable), so
             * that a sequence preempted to the front is never blocked by them */
            eng_batch_drop_blocks(e, s);
            break;
        }
        memmove(e->waiting, e->waiting + 1, sizeof *e->waiting * (size_t)(e->n_waiting - 1));
        e->n_waiting--;
        pthread_mutex_lock(&e->mu);
        e->n_queued--;
        pthread_mutex_unlock(&e->mu);
        e->running[e->n_running++] = s;
        if (e->hybrid) eng_state_take(e, s); /* a slot is free: max_batch of them */
        eng_admit(e, s);
        count_hit(e, s);
        s->step_n = chunk;
        budget -= chunk;
    }
    /* blocks, preempting the youngest when the pool is dry */
    for (int i = 0; i < e->n_running; i++) {
        eng_seq *s = e->running[i];
        if (!s->step_n) continue;
        while (!grow_blocks(e, s)) {
            if (s->n_draft > 0) { /* its drafts go before anyone is preempted */
                s->step_n -= s->n_draft;
                s->n_draft = 0;
                continue;
            }
            int victim = e->n_running - 1;
            preempt(e, victim);
            if (victim == i) break;
        }
    }
    int n = 0;
    for (int i = 0; i < e->n_running; i++) n += e->running[i]->step_n > 0;
    return n;
}

/* After a verification: s ran its pending token and n_draft drafted ones. It chooses its
 * tokens from their logits one by one as plain steps would (eng_choose: guidance, greedy
 * or one draw of its generator), keeping drafted tokens while they equal the choice; the
 * first that differs (or the bonus token after a wholly kept draft, an EOS, max_tokens,
 * the context, a complete constrained output) ends the block. Its cache then ends after
 * the kept tokens: the positions past them are written over by its next step, and blocks
 * wholly past that go back to the pool. True when it ended (taken out of running). */
static bool verify(eng_engine *e, int i) {
    eng_seq *s = e->running[i];
    int K = s->n_draft, kept = 0, emitted = 0, from = s->n_cached;
    s->n_draft = 0;
    s->n_cached++; /* the pending token's keys and values */
    register_blocks(e, s);
    if (atomic_load(&s->req->cancel)) {
        remove_running(e, i);
        eng_finish_seq(e, s, ENG_FINISH_CANCELLED, NULL);
        return true;
    }
    eng_finish why = ENG_RUNNING;
    og_status *st = NULL;
    for (int j = 0; j <= K; j++) {
        eng_token t;
        bool done = false;
        st = eng_choose(e, s, logits_row(e, s->logit_row + j), &t);
        if (!st && eng_is_eos(e, s, t.id)) {
            why = ENG_FINISH_STOP;
            break;
        }
        if (!st) st = eng_guide_advance(s, t.id, &done);
        if (st) {
            why = ENG_FINISH_ERROR;
            break;
        }
        s->tokens[s->n_tokens++] = t.id;
        if ((st = eng_deliver(e, s, &t))) {
            why = ENG_FINISH_ERROR;
            break;
        }
        emitted++;
        if (done || s->n_gen >= s->req->s.max_tokens || s->n_tokens >= e->context) {
            why = done ? ENG_FINISH_STOP : ENG_FINISH_LENGTH;
            break;
        }
        if (j == K || t.id != s->draft[j]) break;
        kept++;
        s->n_cached++; /* the drafted token is the chosen one: its keys and values stand */
    }
    eng_spec_verified(e, s, K, kept, emitted);
    if (why == ENG_RUNNING && e->hybrid && kept < K) {
        /* the states ran past the kept tokens: back to before the run, and the kept ones
         * (with the pending one) again as one run, as the generator does (spec_cut) */
        eng_state_copy(e, s->slot, e->spec_bak + (size_t)s->spec_bak * e->slot_bytes, true);
        int L = 1 + kept, P = s->n_tokens - s->n_gen;
        for (int t = 0; t < L; t++) {
            e->ids[t] = s->tokens[from + t];
            e->pos[t] = from + t;
            e->forms[t] = gen_step_form_at(from + t, P);
        }
        e->pseqs[0] = (paged_kv_seq){0, 0, L, from, s->blocks};
        e->pseq_of[0] = s;
        int64_t last = L - 1;
        /* the step's group by this sequence's own request: the request step_group named
         * may have finished earlier in this advance, and freed its sampling */
        e->step_group = &s->req->s;
        double t0 = eng_now();
        st = run_rows(e, 1, L, L, 1, &last, 1, e->spec_scratch, s->slot);
        if (!st) eng_spec_timed(e, L, eng_now() - t0);
        else why = ENG_FINISH_ERROR;
    }
    if (why != ENG_RUNNING) {
        remove_running(e, i);
        eng_finish_seq(e, s, why, st ? og_status_message(st) : NULL);
        og_status_free(st);
        return true;
    }
    register_blocks(e, s);
    for (int need = blocks_for(e, s->n_cached + 1); s->n_blocks > need;)
        kv_pool_release(e->pool, s->blocks[--s->n_blocks]);
    return false;
}

/* After a run: the cache grew; sequences at the end of their tokens choose the next. */
static void advance(eng_engine *e) {
    for (int i = 0; i < e->n_running;) {
        eng_seq *s = e->running[i];
        if (!s->step_n) {
            i++;
            continue;
        }
        if (s->n_draft > 0) {
            if (!verify(e, i)) i++;
            continue;
        }
        s->n_cached += s->step_n;
        register_blocks(e, s);
        if (e->hybrid && e->o.prefix_cache && !s->req->s.adapter) eng_state_snapshot(e, s);
        if (atomic_load(&s->req->cancel)) { /* cancelled during the run: ends now, its
                                               blocks freed (the full ones stay cached) */
            remove_running(e, i);
            eng_finish_seq(e, s, ENG_FINISH_CANCELLED, NULL);
            continue;
        }
        if (s->n_cached < s->n_tokens) {
            i++;
            continue;
        }
        eng_token t;
        bool done = false;
        og_status *st = eng_choose(e, s, logits_row(e, s->logit_row), &t);
        if (!st && eng_is_eos(e, s, t.id)) {
            remove_running(e, i);
            eng_finish_seq(e, s, ENG_FINISH_STOP, NULL);
            continue;
        }
        if (!st) st = eng_guide_advance(s, t.id, &done);
        if (!st) {
            s->tokens[s->n_tokens++] = t.id;
            st = eng_deliver(e, s, &t);
        }
        if (st) {
            remove_running(e, i);
            eng_finish_seq(e, s, ENG_FINISH_ERROR, og_status_message(st));
            og_status_free(st);
            continue;
        }
        if (s->spec_on) gen_spec_plain_step(&s->spec, t.id, 0); /* scores its shadow */
        /* a complete constrained output ends here, also at max_tokens: nothing was cut */
        if (done || s->n_gen >= s->req->s.max_tokens || s->n_tokens >= e->context) {
            remove_running(e, i);
            eng_finish_seq(e, s, done ? ENG_FINISH_STOP : ENG_FINISH_LENGTH, NULL);
            continue;
        }
        i++;
    }
}

/* A hybrid model's step: the sequences running one token at a time as one run of a row
 * each (their slots first made [0, n), rows in slot order), then each prompt chunk as a run
 * of its own over its sequence's slot. A state op consumes a row's tokens in order as
 * one sequence, so a flat row of many sequences cannot carry states; these runs are the
 * ones the generator makes for the sequence alone (its prompt but the last token, then
 * one token a step), which keeps every row's arithmetic its own. *T gets the tokens run. */
static og_status *hybrid_runs(eng_engine *e, int *T) {
    int nd = 0, P;
    for (int i = 0; i < e->n_running; i++) {
        eng_seq *s = e->running[i];
        if (s->step_n && one_by_one(e, s) && !s->n_draft) e->state_rows[nd++] = s;
    }
    if (nd > 0) eng_state_gather(e, e->state_rows, nd);
    for (int r0 = 0; r0 < nd; r0 += e->max_rows) { /* rows [r0, r0 + n): slots and logits rows */
        int n = nd - r0 < e->max_rows ? nd - r0 : e->max_rows;
        for (int r = 0; r < n; r++) {
            eng_seq *s = e->state_rows[r0 + r];
            int p = s->n_cached;
            P = s->n_tokens - s->n_gen;
            e->ids[r] = s->tokens[p];
            e->pos[r] = p;
            e->forms[r] = gen_step_form_at(p, P);
            e->pseqs[r] = (paged_kv_seq){r, 0, 1, p, s->blocks};
            e->pseq_of[r] = s;
            e->logit_rows[r] = r;
            s->logit_row = p + 1 == s->n_tokens ? r0 + r : -1;
        }
        double t0 = eng_now();
        OG_TRY(run_rows(e, n, 1, 1, n, e->logit_rows, n, r0, r0));
        eng_spec_timed(e, n, eng_now() - t0);
        *T += n;
    }
    for (int i = 0; i < e->n_running; i++) {
        eng_seq *s = e->running[i];
        if (!s->step_n || one_by_one(e, s)) continue;
        int L = s->step_n, from = s->n_cached;
        P = s->n_tokens - s->n_gen;
        for (int t = 0; t < L; t++) {
            e->ids[t] = s->tokens[from + t];
            e->pos[t] = from + t;
            e->forms[t] = gen_step_form_at(from + t, P);
        }
        e->pseqs[0] = (paged_kv_seq){0, 0, L, from, s->blocks};
        e->pseq_of[0] = s;
        s->logit_row = -1; /* a chunk never ends the prompt: its logits are not used */
        int64_t last = L - 1;
        OG_TRY(run_rows(e, 1, L, L, 1, &last, 1, e->o.max_batch, s->slot));
        *T += L;
    }
    /* verifications last (their logits rows follow the decode rows' and may cover the
     * chunks' unused one): each a run over its sequence's slot, whose states are copied
     * first (verify goes back to them when fewer drafts are kept than ran) */
    for (int i = 0, row0 = nd, b = 0; i < e->n_running; i++) {
        eng_seq *s = e->running[i];
        if (!s->step_n || !s->n_draft) continue;
        int L = s->step_n, from = s->n_cached;
        P = s->n_tokens - s->n_gen;
        for (int t = 0; t < L; t++) {
            int p = from + t;
            e->ids[t] = p < s->n_tokens ? s->tokens[p] : s->draft[p - s->n_tokens];
            e->pos[t] = p;
            e->forms[t] = gen_step_form_at(p, P);
            e->logit_rows[row0 + t] = t;
        }
        s->spec_bak = b++;
        eng_state_copy(e, s->slot, e->spec_bak + (size_t)s->spec_bak * e->slot_bytes, false);
        e->pseqs[0] = (paged_kv_seq){0, 0, L, from, s->blocks};
        e->pseq_of[0] = s;
        s->logit_row = row0;
        double t0 = eng_now();
        OG_TRY(run_rows(e, 1, L, L, 1, e->logit_rows + row0, L, row0, s->slot));
        eng_spec_timed(e, L, eng_now() - t0);
        row0 += L;
        *T += L;
    }
    return NULL;
}

void eng_batch_step(eng_engine *e) {
    for (int i = 0; i < e->n_running;) {
        eng_seq *s = e->running[i];
        if (atomic_load(&s->req->cancel)) {
            remove_running(e, i);
            eng_finish_seq(e, s, ENG_FINISH_CANCELLED, NULL);
        } else {
            i++;
        }
    }
    int n_seqs = schedule(e), T = 0, n_rows = 0;
    og_status *st = NULL;
    /* With a width test (LongRoPE) the tokens on either side of it run apart, short
     * factors first, each run with a mask on its side of the test; otherwise one run. A
     * token's side is the one its run alone took: a prompt's tokens are rotated all with
     * the short factors or all with the long ones, as the prompt's length decides (a run
     * alone takes a whole prompt at once), and a generated token at position p as the
     * width p + 1 decides. So a prompt chunk, or a recomputation after preemption, that
     * straddles the switch is cut in two. */
    int64_t C = e->width_threshold;
    if (e->hybrid) st = hybrid_runs(e, &T);
    for (int side = 0; side < (C >= 0 ? 2 : 1) && !st && !e->hybrid; side++) {
        int T0 = T, k = 0, rows0 = n_rows, W = 1;
        for (int i = 0; i < e->n_running; i++) {
            eng_seq *s = e->running[i];
            if (!s->step_n) continue;
            int from = s->n_cached, to = s->n_cached + s->step_n;
            if (C >= 0) {
                int prompt = s->n_tokens - s->n_gen;
                int64_t a = prompt > C ? 0 : C; /* the first position of the long side */
                if (side == 0 && to > a) to = (int)a;
                if (side == 1 && from < a) from = (int)(a < to ? a : to);
                int64_t w = side ? (prompt > to ? prompt : to) : to;
                if (w > W) W = (int)w;
            }
            if (from >= to) continue;
            if (from == s->n_cached) s->logit_row = -1;
            if (s->n_draft > 0) { /* a verification: every token's logits */
                s->logit_row = n_rows;
                for (int j = 0; j <= s->n_draft; j++) e->logit_rows[n_rows++] = T - T0 + j;
            } else if (to == s->n_tokens) { /* it chooses a token after the step */
                s->logit_row = n_rows;
                e->logit_rows[n_rows++] = T - T0 + (to - from) - 1;
            }
            e->pseq_of[k] = s;
            e->pseqs[k++] = (paged_kv_seq){0, T - T0, to - from, from, s->blocks};
            /* each token in the form of its sequence's run alone: the whole prompt at
             * once, then one token per step */
            int prompt_len = s->n_tokens - s->n_gen;
            for (int p = from; p < to; p++) { /* a verification's drafts after its tokens */
                e->ids[T - T0 + p - from] =
                    p < s->n_tokens ? s->tokens[p] : s->draft[p - s->n_tokens];
                e->pos[T - T0 + p - from] = p;
                e->forms[T - T0 + p - from] = gen_step_form_at(p, prompt_len);
            }
            T += to - from;
        }
        if (T == T0) continue;
        if (n_rows == rows0) e->logit_rows[n_rows++] = T - T0 - 1; /* only prompt chunks */
        double t0 = eng_now();
        st = run_rows(e, 1, T - T0, C >= 0 ? W : T - T0, k, e->logit_rows + rows0, n_rows - rows0,
                      rows0, 0);
        if (!st) eng_spec_timed(e, T - T0, eng_now() - t0);
    }
    if (st) { /* every sequence of the step ends with the error */
        for (int i = 0; i < e->n_running;) {
            eng_seq *s = e->running[i];
            if (!s->step_n) {
                i++;
                continue;
            }
            remove_running(e, i);
            eng_finish_seq(e, s, ENG_FINISH_ERROR, og_status_message(st));
        }
        og_status_free(st);
    } else if (T > 0) {
        advance(e);
    }
    pthread_mutex_lock(&e->stats_mu);
    e->st.last_batch = n_seqs;
    e->st.last_step_tokens = T;
    e->st.kv_blocks_used = kv_pool_in_use(e->pool);
    e->st.kv_blocks_cached = e->pool->n_cached;
    e->st.state_slots_used = e->n_slots_used;
    e->st.state_snapshots = e->n_snaps_held;
    e->st.state_snapshots_taken = e->snaps_taken;
    pthread_mutex_unlock(&e->stats_mu);
}
