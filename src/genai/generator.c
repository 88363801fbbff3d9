/* The decode loop: sequences, search and the public og_generator_* functions.
 *
 * Tokens of a row are either fed (the model has seen them: they are in the KV cache and
 * the state) or pending (appended or generated, not yet run). Computing logits runs the
 * pending tokens (generator_run.c), so prefill, one-token decode, continuous decoding and
 * re-feeding after a rewind are the same operation.
 *
 * Rows keep their own lengths: a batch of prompts of different lengths is never padded
 * inside the model, and a row that stops (EOS or max_length) takes no further tokens
 * while the others go on. The EOS a row stops on is not appended to it: onnxruntime-genai
 * leaves it out of a lone sequence (the step that ends the generation is not appended),
 * and leaving it out of every row keeps a row's tokens independent of its batch-mates. */
#include "genai/generator.h"

#include "base/tensor.h"
#include "genai/budget.h"
#include "genai/config.h"
#include "genai/guidance.h"
#include "genai/mtp.h"
#include "genai/search.h"
#include "genai/vision.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

og_status *gen_generator_alloc(og_generator *g) {
    const og_model *m = g->m;
    size_t rows = (size_t)g->rows, L = (size_t)g->max_len;
    g->seq = calloc(rows * L, sizeof *g->seq);
    g->len = calloc(rows, sizeof *g->len);
    g->fed = calloc(rows, sizeof *g->fed);
    g->start = calloc(rows, sizeof *g->start);
    g->done = calloc(rows, sizeof *g->done);
    g->logits = calloc(rows * (size_t)m->vocab_size, sizeof *g->logits);
    g->work = calloc(2 * (size_t)m->vocab_size + 16, sizeof *g->work);
    g->feed_ids = calloc(rows * L, sizeof(int64_t));
    g->feed_ids32 = calloc(rows * L, sizeof(int32_t));
    g->feed_forms = calloc(rows * L, 1);
    g->pos_form = calloc(rows * L, 1);
    g->form_len = calloc(rows, sizeof *g->form_len);
    g->feed_pos = calloc(3 * rows * L, sizeof(int64_t));
    g->feed_pos32 = calloc(3 * rows * L, sizeof(int32_t));
    g->mask_cap = rows * (L + 1);
    g->feed_mask = calloc(g->mask_cap, sizeof(int64_t));
    g->feed_mask32 = calloc(g->mask_cap, sizeof(int32_t));
    g->step_logits = malloc(rows * (size_t)m->vocab_size * sizeof(float) + 64);
    g->next = calloc(rows, sizeof *g->next);
    g->pads = calloc(rows, sizeof *g->pads);
    g->prompt_len = calloc(rows, sizeof *g->prompt_len);
    g->eos_tok = malloc(rows * sizeof *g->eos_tok);
    g->view = calloc(L, sizeof *g->view);
    if (!g->seq || !g->len || !g->fed || !g->start || !g->done || !g->logits || !g->work ||
        !g->feed_ids || !g->feed_ids32 || !g->feed_forms || !g->pos_form || !g->form_len ||
        !g->feed_pos || !g->feed_pos32 || !g->feed_mask ||
        !g->feed_mask32 || !g->step_logits || !g->next || !g->pads || !g->prompt_len ||
        !g->eos_tok || !g->view)
        return og_oom();
    OG_TRY(gen_step_io_init(&g->io, m));
    for (size_t r = 0; r < rows; r++) g->eos_tok[r] = -1;
    OG_TRY(gen_cache_alloc(g));
    if (!m->compact) {
        g->cmask = calloc(rows * (size_t)g->col_cap, 1);
        if (!g->cmask) return og_oom();
    }
    return NULL;
}

void gen_generator_free(og_generator *g) {
    if (!g) return;
    gen_cache_free(g);
    if (g->last_logits != &g->step_logits_t) og_tensor_free(g->last_logits);
    gen_step_io_free(&g->io);
    free(g->seq);
    free(g->len);
    free(g->fed);
    free(g->start);
    free(g->done);
    free(g->cmask);
    free(g->logits);
    free(g->work);
    free(g->feed_ids);
    free(g->feed_ids32);
    free(g->feed_forms);
    free(g->pos_form);
    free(g->form_len);
    free(g->feed_mask);
    free(g->feed_mask32);
    free(g->feed_pos);
    free(g->feed_pos32);
    free(g->step_logits);
    free(g->final_seqs);
    free(g->final_lens);
    free(g->next);
    free(g->pads);
    free(g->prompt_len);
    free(g->eos_tok);
    free(g->view);
    free(g->spec);
    free(g->spec_logits);
    for (int i = 0; g->spec_state && i < g->m->n_cache; i++) free(g->spec_state[i]);
    free(g->spec_state);
    og_tensor_free(g->img_features);
    free(g->mpos);
    free(g->mids);
    free(g->steps_raw);
    og_generator_destroy(g->spec_gen);
    gen_mtp_free(g);
    gen_beam_free(g->beam);
    gen_guide_free(g);
    gen_encoder_free(g);
    for (int i = 0; i < g->n_active; i++) gen_adapter_release(g->adapters, g->active[i]);
    free(g);
}

/* A draft model must share the target's vocabulary: the same logits width and, token by
 * token, the same bytes (the guidance vocabulary, built once per model). */
static og_status *check_draft_model(og_model *m, const og_generator_params *p) {
    og_model *d = p->speculative_draft_model;
    if (p->speculative_ngram_size)
        return og_errorf(OG_ERR_INVALID_ARGUMENT, "generator: speculative ngram_size and a "
                         "draft model cannot be combined (choose one drafter%s)",
                         d == m->draft ? "; the package's model.draft drafts by default: set "
                                         "the draft model to none for n-gram drafts" : "");
    if (p->num_beams > 1)
        return og_errorf(OG_ERR_UNSUPPORTED, "generator: speculative decoding with beam "
                         "search (num_beams %d) is not supported", p->num_beams);
    if (d == m->draft) return NULL; /* the package's own: its tokenizer is the package's */
    if (d->vocab_size != m->vocab_size)
        return og_errorf(OG_ERR_INVALID_ARGUMENT, "generator: the draft model %s has %d logits, "
                         "the model %s %d: a draft model must share the tokenizer", d->dir,
                         d->vocab_size, m->dir, m->vocab_size);
    const guide_vocab *vm, *vd;
    og_status *st = gen_guidance_vocab(m, &vm);
    if (!st) st = gen_guidance_vocab(d, &vd);
    if (st)
        return og_status_wrap(st, "generator: checking that the draft model %s shares the "
                                "tokenizer of %s", d->dir, m->dir);
    long diff = guide_vocab_first_difference(vm, vd);
    if (diff >= 0)
        return og_errorf(OG_ERR_INVALID_ARGUMENT, "generator: the draft model %s has another "
                         "tokenizer than %s (token %ld differs): a draft model must share the "
                         "tokenizer", d->dir, m->dir, diff);
    return NULL;
}

og_status *og_generator_create(og_model *m, const og_generator_params *params,
                               og_generator **out) {
    if (!m || !out) return og_errorf(OG_ERR_INVALID_ARGUMENT, "og_generator_create: NULL argument");
    og_generator_params p = og_generator_params_default(m);
    /* a caller built before the guidance fields has none; anything shorter is a mistake */
    if (params && params->struct_size < offsetof(og_generator_params, guidance_type))
        return og_errorf(OG_ERR_INVALID_ARGUMENT, "og_generator_params.struct_size is %zu; fill "
                         "params from og_generator_params_default()", params->struct_size);
    if (params) memcpy(&p, params, params->struct_size < sizeof p ? params->struct_size : sizeof p);
    p.struct_size = sizeof p;
    if (p.max_length <= 0) p.max_length = m->context_length;
    if (p.batch_size < 1 || p.num_beams < 1 || p.max_length < 1)
        return og_errorf(OG_ERR_INVALID_ARGUMENT, "generator: batch_size %d, num_beams %d and "
                         "max_length %d must be >= 1", p.batch_size, p.num_beams, p.max_length);
    if (m->context_length > 0 && p.max_length > m->context_length)
        return og_errorf(OG_ERR_INVALID_ARGUMENT, "generator: max_length %d exceeds the model's "
                         "context_length %d", p.max_length, m->context_length);
    /* the search numbers, then what the generation will cost (genai/budget.c), before
     * anything is allocated and before batch_size * num_beams is formed */
    OG_TRY(gen_check_search_options(&p));
    bool share_kv = gen_shares_kv(m, &p);
    OG_TRY(gen_budget_check(m, &p, share_kv));
    int rows = p.batch_size * p.num_beams;
    for (int i = 0; i < m->n_cache; i++)
        if (m->cache[i].kind == GEN_CACHE_STATE && m->cache[i].dims[0] > 0 &&
            m->cache[i].dims[0] != rows)
            return og_errorf(OG_ERR_INVALID_ARGUMENT, "generator: state input '%s' has a fixed "
                             "batch of %lld, but batch_size x num_beams is %d", m->cache[i].past,
                             (long long)m->cache[i].dims[0], rows);
    og_generator *g = calloc(1, sizeof *g);
    if (!g) return og_oom();
    g->m = m;
    g->p = p;
    if (g->p.top_p <= 0) g->p.top_p = 1.0f; /* 0 means no top-p filtering */
    if (p.num_beams == 1) g->p.num_return_sequences = 1;
    g->rows = rows;
    g->max_len = p.max_length;
    g->share_kv = share_kv;
    /* guidance first: a bad grammar is refused before the caches are allocated */
    og_status *st = gen_guide_init(g);
    if (!st)
        st = og_oom_context(gen_generator_alloc(g), "generator: batch_size %d x num_beams %d x "
                            "max_length %d: the sequences and the caches", p.batch_size,
                            p.num_beams, p.max_length);
    if (!st && p.num_beams > 1) {
        g->beam_opts = (gen_beam_options){
            .batch = p.batch_size, .num_beams = p.num_beams, .vocab = m->vocab_size,
            .max_length = p.max_length, .num_return_sequences = p.num_return_sequences,
            .length_penalty = p.length_penalty, .early_stopping = p.early_stopping != 0,
            .eos_ids = m->eos_ids, .n_eos = m->n_eos, .pad_id = m->pad_id};
        st = gen_beam_create(&g->beam_opts, &g->beam);
    }
    if (st) {
        gen_generator_free(g);
        return st;
    }
    /* the package's draft (a default) does not apply where speculation does not */
    if (p.speculative_draft_model == m->draft && (p.num_beams > 1 || p.batch_size > 1))
        p.speculative_draft_model = g->p.speculative_draft_model = NULL;
    if (p.speculative_mtp && p.speculative_draft_model == m->draft) /* the head drafts */
        p.speculative_draft_model = g->p.speculative_draft_model = NULL;
    st = p.speculative_mtp ? gen_mtp_check(m, &p)
         : p.speculative_draft_model ? check_draft_model(m, &p) : NULL;
    if (st) {
        gen_generator_free(g);
        return st;
    }
    if (p.speculative_ngram_size > 0 || p.speculative_draft_model || p.speculative_mtp) {
        gen_spec_options so = {.ngram = p.speculative_ngram_size - 1,
                               .draft_model = p.speculative_draft_model || p.speculative_mtp,
                               .max_draft = p.speculative_max_draft_tokens,
                               .chained = p.speculative_ngram_chained_lookup != 0,
                               .min_k = p.speculative_min_adaptive_k,
                               .adaptive = !p.speculative_fixed_k};
        if (!(g->spec = malloc(sizeof *g->spec))) {
            gen_generator_free(g);
            return og_oom();
        }
        gen_spec_init(g->spec, &so);
        if (p.speculative_mtp && (st = gen_mtp_init(g))) {
            gen_generator_free(g);
            return st;
        }
    }
    uint64_t seed = p.random_seed >= 0 ? (uint64_t)p.random_seed
                                       : (uint64_t)time(NULL) ^ (uint64_t)(uintptr_t)g;
    gen_rng_seed(&g->rng, seed);
    *out = g;
    return NULL;
}

void og_generator_destroy(og_generator *g) { gen_generator_free(g); }

/* The padded layout matters only for a batch: one row has no padding and its EOS ends the
 * generation, so its sequence is the same in both layouts. */
static bool padded(const og_generator *g) { return g->p.padded_batch && g->p.batch_size > 1; }

int gen_row_limit(const og_generator *g, int r) {
    return padded(g) ? g->max_len - g->pads[r] : g->max_len;
}

static bool is_eos(const og_model *m, int32_t t) {
    for (int i = 0; i < m->n_eos; i++)
        if (m->eos_ids[i] == t) return true;
    return false;
}

/* Applies min_length, repetition penalty and n-gram blocking to row r of the logits. Under
 * guidance (its mask already applied, as onnxruntime-genai applies it first) the grammar
 * wins: min_length does not block EOS where the grammar allows nothing else, and n-gram
 * blocking that would leave no allowed token is not applied (g->work holds the row
 * meanwhile; sampling overwrites it later). */
static void process_row(og_generator *g, int r, float *row) {
    const og_model *m = g->m;
    const int32_t *s = g->seq + (size_t)r * g->max_len;
    int len = g->len[r], V = m->vocab_size;
    bool guided = g->matchers != NULL;
    if (len < g->p.min_length && (!guided || g->guide_content))
        gen_block_tokens(row, V, m->eos_ids, m->n_eos);
    gen_repetition_penalty(row, V, s, len, g->p.repetition_penalty);
    if (guided && g->p.no_repeat_ngram_size > 0) {
        memcpy(g->work, row, sizeof *row * (size_t)V);
        gen_block_repeated_ngrams(row, V, s, len, g->p.no_repeat_ngram_size);
        if (!gen_guide_any_allowed(g, row)) memcpy(row, g->work, sizeof *row * (size_t)V);
        return;
    }
    gen_block_repeated_ngrams(row, V, s, len, g->p.no_repeat_ngram_size);
}

/* Sequences follow the beams, then the cache does. */
static og_status *reorder_rows(og_generator *g, const int32_t *parents) {
    int rows = g->rows;
    size_t L = (size_t)g->max_len;
    int32_t *seq2 = malloc(sizeof(int32_t) * rows * L);
    if (!seq2) return og_oom();
    for (int r = 0; r < rows; r++)
        memcpy(seq2 + r * L, g->seq + (size_t)parents[r] * L, sizeof(int32_t) * L);
    memcpy(g->seq, seq2, sizeof(int32_t) * rows * L);
    free(seq2);
    return gen_cache_reorder(g, parents);
}

static og_status *finalize_beams(og_generator *g) {
    int R = g->p.num_return_sequences, B = g->p.batch_size;
    g->final_seqs = calloc((size_t)B * R * g->max_len, sizeof *g->final_seqs);
    g->final_lens = calloc((size_t)B * R, sizeof *g->final_lens);
    const int32_t **rows = calloc((size_t)g->rows, sizeof *rows);
    if (!g->final_seqs || !g->final_lens || !rows) {
        free(rows);
        return og_oom();
    }
    for (int r = 0; r < g->rows; r++) rows[r] = g->seq + (size_t)r * g->max_len;
    og_status *st = gen_beam_finalize(g->beam, rows, g->len[0], g->final_seqs, g->final_lens);
    free(rows);
    g->finalized = true;
    return st;
}

static og_status *beam_step(og_generator *g) {
    const og_model *m = g->m;
    int V = m->vocab_size, rows = g->rows;
    int32_t *tokens = malloc(sizeof(int32_t) * rows), *parents = malloc(sizeof(int32_t) * rows);
    const int32_t **rowp = malloc(sizeof *rowp * rows);
    og_status *st = NULL;
    if (!tokens || !parents || !rowp) {
        st = og_oom();
        goto done;
    }
    for (int r = 0; r < rows; r++) {
        float *row = g->logits + (size_t)r * V;
        process_row(g, r, row);
        gen_log_softmax(row, V);
        rowp[r] = g->seq + (size_t)r * g->max_len;
    }
    if ((st = gen_beam_step(g->beam, g->logits, rowp, g->len[0], parents, tokens))) goto done;
    if ((st = reorder_rows(g, parents))) goto done;
    for (int r = 0; r < rows; r++) {
        g->seq[(size_t)r * g->max_len + g->len[r]] = tokens[r];
        g->len[r]++;
    }
    memcpy(g->next, tokens, sizeof(int32_t) * rows);
    g->has_next = true;
    if (g->len[0] >= gen_row_limit(g, 0) || gen_beam_done(g->beam)) st = finalize_beams(g);
done:
    free(tokens);
    free(parents);
    free(rowp);
    return st;
}

/* Chooses row r's next token from its logits as a step does: the guidance mask, the
 * processors, then argmax or one draw from the seeded generator; the choice advances
 * the row's matcher. */
static og_status *choose_token(og_generator *g, int r, float *row, bool sample, int32_t *out) {
    const og_model *m = g->m;
    int V = m->vocab_size;
    if (g->matchers) OG_TRY(gen_guide_mask(g, r, row));
    process_row(g, r, row);
    int32_t t = sample ? gen_sample(row, V, g->p.top_k, g->p.top_p, g->p.temperature, &g->rng,
                                    g->work)
                       : gen_argmax(row, V);
    if (g->matchers) OG_TRY(gen_guide_take(g, r, row, &t));
    *out = t;
    return NULL;
}

/* Row r takes token t: an EOS stops it (not appended), anything else is appended and may
 * reach the row's limit or close its grammar. Returns whether t was an EOS. */
static bool take_token(og_generator *g, int r, int32_t t) {
    g->next[r] = t;
    if (is_eos(g->m, t)) {
        g->done[r] = true;
        return true;
    }
    g->seq[(size_t)r * g->max_len + g->len[r]] = t;
    if (++g->len[r] >= gen_row_limit(g, r) || (g->matchers && gen_guide_closed(g, r)))
        g->done[r] = true;
    return false;
}

static bool sampling(const og_generator *g) {
    return g->p.do_sample && g->p.top_k != 1 && g->p.temperature != 0;
}

/* ---- speculative decoding (speculative.h) ---------------------------------------------- */

/* Whether speculation applies to this generator at all: a lone row without beams, on the
 * compact KV layout (states and windows are saved and restored around verifications). */
static bool spec_possible(const og_generator *g) {
    return g->spec && g->rows == 1 && !g->beam && g->m->compact;
}

/* Whether the next step may verify a draft: speculation applies and the row's only
 * pending token is the one it last took. */
static bool spec_applies(const og_generator *g) {
    return spec_possible(g) && !g->done[0] && g->len[0] - g->fed[0] == 1;
}

/* The cache and state back to `keep` fed positions after a verification ran past it: KV
 * entries are cut; states (and window caches), which cannot be, go back to before the
 * verification and run the kept tokens again. */
static og_status *spec_cut(og_generator *g, int keep) {
    if (g->fed[0] <= keep) return NULL;
    if (g->m->snapshots) {
        gen_fixed_load(g, g->spec_state);
        gen_kv_truncate(g, g->spec_fed);
        g->fed[0] = g->spec_fed;
        int len = g->len[0];
        g->len[0] = keep;
        og_status *st = gen_compute_steps(g, NULL);
        g->len[0] = len;
        OG_TRY(st);
    } else {
        gen_kv_truncate(g, keep);
        g->fed[0] = keep;
    }
    if (g->form_len[0] > keep) g->form_len[0] = keep;
    return NULL;
}

/* Hands out the next token the last verification decided; the logits after it, when the
 * verification computed them, become the current ones. */
static og_status *spec_hand_out(og_generator *g) {
    int j = g->spec_next++;
    take_token(g, 0, g->spec_out[j]);
    g->has_next = true;
    g->has_logits = g->spec_next < g->spec_n_out;
    if (g->has_logits) {
        size_t V = (size_t)g->m->vocab_size;
        memcpy(g->logits, g->spec_logits + (size_t)g->spec_next * V, V * sizeof *g->logits);
    }
    return NULL;
}

/* Verifies the k drafted tokens in spec_draft: one run of the pending token and the
 * draft, then each next token chosen as a plain step would choose it, while the draft
 * agrees. The cache keeps the positions whose tokens were kept. */
static og_status *spec_verify(og_generator *g, int k) {
    size_t V = (size_t)g->m->vocab_size;
    if (!g->spec_logits &&
        !(g->spec_logits = malloc((size_t)(GEN_SPEC_MAX_DRAFT + 1) * V * sizeof(float))))
        return og_oom();
    int L = g->len[0], limit = gen_row_limit(g, 0);
    if (g->m->snapshots) { /* the state before the run, for spec_cut */
        if (!g->spec_state && !(g->spec_state = calloc((size_t)g->m->n_cache, sizeof(void *))))
            return og_oom();
        OG_TRY(gen_fixed_save(g, g->spec_state));
        g->spec_fed = g->fed[0];
    }
    memcpy(g->seq + L, g->spec_draft, sizeof(int32_t) * (size_t)k);
    g->len[0] = L + k;
    double t0 = gen_spec_now();
    og_status *st = gen_compute_steps(g, g->spec_logits);
    double seconds = gen_spec_now() - t0;
    g->len[0] = L;
    OG_TRY(st);
    bool sample = sampling(g);
    int n = 0, accepted = 0;
    for (int i = 0; i <= k; i++) {
        /* the sequence as a plain step would see it: the tokens kept so far */
        g->len[0] = L + i;
        float *row = g->logits;
        memcpy(row, g->spec_logits + (size_t)i * V, V * sizeof *row);
        int32_t t;
        if ((st = choose_token(g, 0, row, sample, &t))) break;
        g->spec_out[n++] = t;
        bool kept = i < k && t == g->spec_draft[i];
        accepted += kept;
        bool closed = g->matchers && gen_guide_closed(g, 0);
        if (!kept || is_eos(g->m, t) || L + i + 1 >= limit || closed) break;
    }
    g->len[0] = L;
    if (st) return st;
    /* positions L - 1 .. L + n - 2 ran the kept tokens; the rest go (the time of the runs
     * counts, not that of choosing, which plain steps spend too) */
    double t1 = gen_spec_now();
    OG_TRY(spec_cut(g, L + n - 1));
    seconds += gen_spec_now() - t1;
    gen_spec_verified(g->spec, k, accepted, n, seconds);
    g->spec_n_out = n;
    g->spec_next = 0;
    return spec_hand_out(g);
}

/* Up to k tokens from the draft model into spec_draft (*got of them): its generator is
 * brought to the target's sequence (rewound to the common prefix, the rest appended: after
 * a verification that is the kept tokens' cut and one new token), then steps greedily. */
static og_status *draft_tokens(og_generator *g, int k, int *got) {
    *got = 0;
    og_generator *d = g->spec_gen;
    if (!d) {
        og_generator_params dp = og_generator_params_default(g->p.speculative_draft_model);
        dp.max_length = g->max_len;
        dp.all_logits = 0;
        dp.min_length = 0;
        dp.speculative_ngram_size = 0; /* the draft drafts plainly */
        dp.speculative_draft_model = NULL;
        OG_TRY(og_status_wrap(og_generator_create(g->p.speculative_draft_model, &dp, &d),
                              "the draft model"));
        g->spec_gen = d;
    }
    int L = g->len[0], c = 0;
    while (c < d->len[0] && c < L && d->seq[c] == g->seq[c]) c++;
    if (c < d->len[0] || d->done[0]) OG_TRY(og_generator_rewind_to(d, (size_t)c));
    if (c < L) OG_TRY(og_generator_append_tokens(d, g->seq + c, (size_t)(L - c)));
    for (int i = 0; i < k && !og_generator_is_done(d); i++) {
        OG_TRY(og_generator_generate_next_token(d));
        g->spec_draft[(*got)++] = d->next[0];
    }
    return NULL;
}

/* Tokens a verification decided but did not hand out yet are dropped (an append or a
 * rewind comes): the cache and the matchers go back to the sequence as it stands. */
static og_status *spec_settle(og_generator *g) {
    if (g->spec_next >= g->spec_n_out) return NULL;
    g->spec_n_out = g->spec_next = 0;
    OG_TRY(spec_cut(g, g->len[0]));
    return gen_guide_rewind(g, g->len[0]);
}

og_status *og_generator_get_speculative_stats(const og_generator *g, og_speculative_stats *out) {
    if (!g || !out)
        return og_errorf(OG_ERR_INVALID_ARGUMENT, "og_generator_get_speculative_stats: NULL");
    memset(out, 0, sizeof *out);
    out->struct_size = sizeof *out;
    if (!g->spec) return NULL;
    const gen_spec_stats *s = &g->spec->stats;
    out->enabled = spec_possible(g);
    out->verifications = s->passes;
    out->drafted = s->drafted;
    out->accepted = s->accepted;
    out->emitted = s->emitted;
    out->plain_steps = s->plain_steps;
    out->acceptance = g->spec->alpha;
    return NULL;
}

og_status *og_generator_generate_next_token(og_generator *g) {
    if (!g) return og_errorf(OG_ERR_INVALID_ARGUMENT, "og_generator_generate_next_token: NULL");
    if (og_generator_is_done(g))
        return og_errorf(OG_ERR_INVALID_ARGUMENT, "generator: generation is done (length %d of "
                         "max_length %d)", g->len[0], g->max_len);
    if (g->len[0] == 0)
        return og_errorf(OG_ERR_INVALID_ARGUMENT, "generator: append prompt tokens before "
                         "generating");
    if (g->spec_next < g->spec_n_out) return spec_hand_out(g);
    double t0 = 0;
    bool timed = false;
    if (!g->has_logits) {
        if (spec_applies(g)) {
            /* (an MTP head drafts up to the last position, as onnxruntime-genai's does) */
            int room = gen_row_limit(g, 0) - g->len[0] - (g->mtp ? 0 : 1), k = 0;
            /* a LongRoPE width test: a verification's run takes the side of its last
             * position for all its tokens, a plain step the side of its own; so drafts stop
             * before the switch (the step at the switch is plain) */
            int64_t C = g->m->width_threshold;
            if (C >= 0 && g->len[0] <= C && room > C - g->len[0]) room = (int)(C - g->len[0]);
            if (room > 0 && g->spec->o.draft_model) {
                int want = gen_spec_choose(g->spec, room);
                double t = gen_spec_now();
                if (want > 0)
                    OG_TRY(g->mtp ? gen_mtp_draft(g, want, &k) : draft_tokens(g, want, &k));
                gen_spec_drafted(g->spec, k, gen_spec_now() - t);
            } else if (room > 0) {
                k = gen_spec_plan(g->spec, g->seq, g->len[0], room, g->spec_draft);
            }
            if (k > 0) return spec_verify(g, k);
            timed = true;
            t0 = gen_spec_now();
        }
        OG_TRY(gen_compute_logits(g));
    }
    double seconds = timed ? gen_spec_now() - t0 : 0;
    g->has_logits = false;
    if (g->beam) return beam_step(g);
    const og_model *m = g->m;
    int V = m->vocab_size;
    bool sample = sampling(g);
    int active = 0, eos_now = 0;
    for (int r = 0; r < g->rows; r++) {
        if (g->done[r]) {
            g->next[r] = m->pad_id;
            continue;
        }
        active++;
        int32_t t;
        OG_TRY(choose_token(g, r, g->logits + (size_t)r * V, sample, &t));
        eos_now += take_token(g, r, t);
    }
    g->has_next = true;
    if (timed) gen_spec_plain_step(g->spec, g->next[0], seconds);
    /* The padded layout appends a step to every row unless it ended the generation with
     * every remaining row's EOS (onnxruntime-genai appends nothing then); a row that
     * stopped on EOS in an appended step keeps it. */
    if (padded(g) && eos_now < active) {
        g->steps++;
        for (int r = 0; r < g->rows; r++)
            if (g->done[r] && g->eos_tok[r] < 0 && is_eos(m, g->next[r])) g->eos_tok[r] = g->next[r];
    }
    return NULL;
}

int og_generator_is_done(const og_generator *g) {
    if (!g) return 1;
    if (g->beam) return g->finalized;
    for (int r = 0; r < g->rows; r++) {
        if (g->len[r] == 0) return 0;
        if (!g->done[r] && g->len[r] < gen_row_limit(g, r)) return 0;
    }
    return 1;
}

/* Appends row b's tokens (to each of its beams). */
static og_status *append_rows(og_generator *g, const int32_t *const *rows, const size_t *lens,
                              const size_t *pads) {
    const og_model *m = g->m;
    int B = g->p.batch_size, K = g->beam ? g->p.num_beams : 1;
    OG_TRY(spec_settle(g));
    for (int b = 0; b < B; b++) {
        if (lens[b] == 0)
            return og_errorf(OG_ERR_INVALID_ARGUMENT, "generator: prompt %d has no tokens", b);
        if ((size_t)g->len[b * K] + lens[b] > (size_t)g->max_len ||
            (B > 1 && g->p.padded_batch && pads && (size_t)pads[b] + lens[b] > (size_t)g->max_len))
            return og_errorf(OG_ERR_INVALID_ARGUMENT, "generator: %zu prompt tokens + %d already "
                             "in the sequence exceed max_length %d", lens[b], g->len[b * K],
                             g->max_len);
        for (size_t i = 0; i < lens[b]; i++)
            if (rows[b][i] < 0 || rows[b][i] >= m->vocab_size)
                return og_errorf(OG_ERR_INVALID_ARGUMENT, "generator: token %d at position %zu "
                                 "is outside the vocabulary [0, %d) (prompt %d)", rows[b][i], i,
                                 m->vocab_size, b);
        if (g->beam && lens[b] != lens[0])
            return og_errorf(OG_ERR_UNSUPPORTED, "generator: beam search over prompts of "
                             "different lengths (%zu and %zu tokens) is not supported", lens[0],
                             lens[b]);
    }
    for (int b = 0; b < B; b++)
        for (int k = 0; k < K; k++) {
            int r = b * K + k;
            memcpy(g->seq + (size_t)r * g->max_len + g->len[r], rows[b], sizeof(int32_t) * lens[b]);
            g->len[r] += (int)lens[b];
            if (B > 1) {
                g->prompt_len[r] = (int)lens[b];
                g->pads[r] = pads ? (int)pads[b] : 0;
            }
            g->done[r] = g->len[r] >= gen_row_limit(g, r);
        }
    g->has_logits = false;
    g->has_next = false;
    OG_TRY(gen_guide_restart(g));
    return gen_compute_logits(g);
}

static og_status *check_append(og_generator *g) {
    int B = g->p.batch_size;
    if (B > 1 && g->len[0] != 0)
        return og_errorf(OG_ERR_INVALID_ARGUMENT, "generator: with batch_size %d tokens can be "
                         "appended only once (rewind to 0 first)", B);
    if (g->beam && g->len[0] != 0)
        return og_errorf(OG_ERR_UNSUPPORTED, "generator: beam search takes one prompt; rewind to "
                         "0 to start again");
    return NULL;
}

og_status *og_generator_append_tokens(og_generator *g, const int32_t *ids, size_t n) {
    if (!g || (!ids && n)) return og_errorf(OG_ERR_INVALID_ARGUMENT, "og_generator_append_tokens: NULL");
    if (n == 0) return og_errorf(OG_ERR_INVALID_ARGUMENT, "generator: no tokens to append");
    OG_TRY(check_append(g));
    int B = g->p.batch_size;
    if (n % (size_t)B)
        return og_errorf(OG_ERR_INVALID_ARGUMENT, "generator: %zu tokens do not split into %d "
                         "rows of equal length", n, B);
    size_t per = n / (size_t)B;
    const int32_t **rows = malloc(sizeof *rows * (size_t)B);
    size_t *lens = malloc(sizeof *lens * (size_t)B);
    if (!rows || !lens) {
        free(rows);
        free(lens);
        return og_oom();
    }
    for (int b = 0; b < B; b++) {
        rows[b] = ids + (size_t)b * per;
        lens[b] = per;
        /* trailing pad tokens of a batch row are padding */
        while (B > 1 && lens[b] > 0 && rows[b][lens[b] - 1] == g->m->pad_id) lens[b]--;
    }
    og_status *st = NULL;
    for (int b = 0; b < B && !st; b++)
        if (lens[b] == 0)
            st = og_errorf(OG_ERR_INVALID_ARGUMENT, "generator: prompt %d is all padding (pad "
                           "token %d)", b, g->m->pad_id);
    size_t *pads = NULL;
    if (!st && !(pads = malloc(sizeof *pads * (size_t)B))) st = og_oom();
    for (int b = 0; !st && b < B; b++) pads[b] = per - lens[b];
    if (!st) st = append_rows(g, rows, lens, pads);
    free(rows);
    free(lens);
    free(pads);
    return st;
}

/* The tensor named `name` among the caller's, or NULL. */
static const og_tensor *named(const char *const *names, const og_tensor *const *t, size_t n,
                              const char *name) {
    for (size_t i = 0; i < n; i++)
        if (names[i] && strcmp(names[i], name) == 0) return t[i];
    return NULL;
}

/* The prompt's ids ([1, n], int32 or int64) as int32 into *out (malloc'd), checked for a
 * set_inputs into an empty one-row generator. */
static og_status *prompt_ids(og_generator *g, const og_tensor *ids_t, int32_t **out, int64_t *len) {
    if (!ids_t)
        return og_errorf(OG_ERR_INVALID_ARGUMENT, "generator: set_inputs needs input_ids");
    og_dtype dt = og_tensor_dtype(ids_t);
    int64_t n = og_tensor_element_count(ids_t);
    if ((dt != OG_INT32 && dt != OG_INT64) || og_tensor_rank(ids_t) < 1 ||
        og_tensor_dims(ids_t)[0] != 1 || n < 1 || n > g->max_len)
        return og_errorf(OG_ERR_INVALID_ARGUMENT, "generator: input_ids must be int32 or int64 "
                         "[1, n] with 1 <= n <= max_length %d", g->max_len);
    if (g->p.batch_size != 1 || g->len[0] != 0)
        return og_errorf(OG_ERR_UNSUPPORTED, "generator: set_inputs takes one prompt "
                         "(batch_size 1) into an empty generator");
    int32_t *ids = malloc((size_t)n * sizeof *ids);
    if (!ids) return og_oom();
    const void *src = og_tensor_data((og_tensor *)ids_t);
    for (int64_t i = 0; i < n; i++)
        ids[i] = dt == OG_INT32 ? ((const int32_t *)src)[i] : (int32_t)((const int64_t *)src)[i];
    *out = ids;
    *len = n;
    return NULL;
}

/* Phi-3-vision: image k's tokens are the prompt's ids -k, as many as its features; the
 * sequence holds a stand-in id there (the pad id) and the runs feed the negative ids to
 * the embedding, which puts the features in their place. Gemma 3: the image tokens are
 * image_token_id (<image_soft_token>). Positions are plain. */
static og_status *set_inputs_plain(og_generator *g, const og_tensor *ids_t, const og_tensor *pv,
                                   const og_tensor *sizes) {
    og_model *m = g->m;
    bool phi3 = m->vision_phi3;
    if (phi3 && !pv != !sizes)
        return og_errorf(OG_ERR_INVALID_ARGUMENT, "generator: pixel_values and image_sizes "
                         "come together");
    if (pv && g->rows != 1)
        return og_errorf(OG_ERR_UNSUPPORTED, "generator: images with beam search are not "
                         "supported");
    int32_t *ids = NULL, *neg = NULL;
    int64_t n = 0, image_tokens = 0;
    OG_TRY(prompt_ids(g, ids_t, &ids, &n));
    int64_t n_images = pv ? og_tensor_dims(pv)[0] : 0;
    og_status *st = NULL;
    for (int64_t i = 0; i < n && !phi3; i++) image_tokens += ids[i] == m->image_token_id;
    for (int64_t i = 0; i < n && !st && phi3; i++)
        if (ids[i] < 0) {
            image_tokens++;
            if (-(int64_t)ids[i] > n_images)
                st = og_errorf(OG_ERR_INVALID_ARGUMENT, "generator: token %lld is image %d's, "
                               "and %lld images were given", (long long)i, -ids[i],
                               (long long)n_images);
        }
    og_tensor *feats = NULL;
    if (!st && pv) st = gen_vision_encode_plain(m, pv, sizes, &feats);
    if (!st && pv && og_tensor_dims(feats)[0] != image_tokens)
        st = og_errorf(OG_ERR_INVALID_ARGUMENT, "generator: the prompt has %lld image tokens, "
                       "its images %lld (expand each image's placeholder as the processor "
                       "does)",
                       (long long)image_tokens, (long long)og_tensor_dims(feats)[0]);
    if (!st && pv && (og_tensor_dtype(feats) != m->image_feature_dtype ||
                      og_tensor_dims(feats)[1] != m->image_feature_dims[1]))
        st = og_errorf(OG_ERR_INVALID_MODEL, "%s: the vision encoder's features do not fit "
                       "the embedding's '%s' (dtype or width)", m->dir, m->image_features);
    if (!st && phi3 && image_tokens && !(neg = malloc((size_t)n * sizeof *neg))) st = og_oom();
    if (!st && neg) {
        int32_t stand_in = m->pad_id >= 0 && m->pad_id < m->vocab_size ? m->pad_id : 0;
        memcpy(neg, ids, (size_t)n * sizeof *ids);
        for (int64_t i = 0; i < n; i++)
            if (ids[i] < 0) ids[i] = stand_in;
    }
    if (!st) {
        og_tensor_free(g->img_features);
        free(g->mids);
        g->img_features = feats;
        g->mids = neg;
        g->mids_len = neg ? n : 0;
        feats = NULL;
        neg = NULL;
        st = og_generator_append_tokens(g, ids, (size_t)n);
    }
    og_tensor_free(feats);
    free(neg);
    free(ids);
    return st;
}

og_status *og_generator_set_inputs(og_generator *g, const char *const *names,
                                   const og_tensor *const *tensors, size_t count) {
    if (!g || (count && (!names || !tensors)))
        return og_errorf(OG_ERR_INVALID_ARGUMENT, "og_generator_set_inputs: NULL argument");
    if (g->m->encoder) return gen_encoder_set_inputs(g, names, tensors, count);
    og_model *m = g->m;
    for (size_t i = 0; i < count; i++) {
        static const char *const known[] = {"input_ids", "pixel_values", "image_grid_thw",
                                            "image_sizes", "num_image_tokens", NULL};
        /* Gemma 3's processor gives token_type_ids (1 at image tokens): not an input here */
        if (names[i] && !strcmp(names[i], "token_type_ids") && m->vision_gemma3 && tensors[i])
            continue;
        bool ok = false;
        for (int k = 0; names[i] && known[k] && !ok; k++) ok = !strcmp(names[i], known[k]);
        if (!ok || !tensors[i])
            return og_errorf(OG_ERR_UNSUPPORTED, "generator: input '%s' is not taken (inputs: "
                             "input_ids, and pixel_values with image_grid_thw for a Qwen "
                             "vision-language package, with image_sizes for Phi-3-vision)",
                             names[i] ? names[i] : "(null)");
    }
    const og_tensor *ids_t = named(names, tensors, count, "input_ids");
    const og_tensor *pv = named(names, tensors, count, "pixel_values");
    const og_tensor *grid = named(names, tensors, count, "image_grid_thw");
    const og_tensor *sizes = named(names, tensors, count, "image_sizes");
    if ((m->vision_phi3 || m->vision_gemma3) && grid)
        return og_errorf(OG_ERR_UNSUPPORTED, "generator: image_grid_thw is Qwen's input; %s "
                         "does not take it", m->dir);
    if (m->vision_gemma3 && sizes)
        return og_errorf(OG_ERR_UNSUPPORTED, "generator: image_sizes is Phi-3-vision's input; %s "
                         "does not take it", m->dir);
    if (m->vision_phi3 || m->vision_gemma3) return set_inputs_plain(g, ids_t, pv, sizes);
    if (sizes)
        return og_errorf(OG_ERR_UNSUPPORTED, "generator: image_sizes is Phi-3-vision's input; "
                         "%s is not such a package", m->dir);
    if (!pv != !grid)
        return og_errorf(OG_ERR_INVALID_ARGUMENT, "generator: pixel_values and image_grid_thw "
                         "come together");
    if (pv && g->rows != 1)
        return og_errorf(OG_ERR_UNSUPPORTED, "generator: images with beam search are not "
                         "supported");
    int32_t *ids = NULL;
    int64_t n = 0;
    OG_TRY(prompt_ids(g, ids_t, &ids, &n));
    og_status *st = NULL;
    og_tensor *feats = NULL;
    int64_t *pos = NULL, delta = 0;
    const int64_t *gd = grid ? og_tensor_data((og_tensor *)grid) : NULL;
    int64_t n_images = grid ? og_tensor_dims(grid)[0] : 0;
    if (pv) {
        int64_t image_tokens = 0;
        for (int64_t i = 0; i < n; i++) image_tokens += ids[i] == m->image_token_id;
        st = gen_vision_encode(m, pv, grid, &feats);
        if (!st && og_tensor_dims(feats)[0] != image_tokens)
            st = og_errorf(OG_ERR_INVALID_ARGUMENT, "generator: the prompt has %lld image tokens, "
                           "its images %lld (expand each image's placeholder as the processor "
                           "does)", (long long)image_tokens, (long long)og_tensor_dims(feats)[0]);
        if (!st && (og_tensor_dtype(feats) != m->image_feature_dtype ||
                    og_tensor_dims(feats)[1] != m->image_feature_dims[1]))
            st = og_errorf(OG_ERR_INVALID_MODEL, "%s: the vision encoder's features do not fit "
                           "the embedding's '%s' (dtype or width)", m->dir, m->image_features);
    }
    if (!st && m->vision.s) { /* a Qwen vision-language package: 3-D positions */
        pos = malloc(3 * (size_t)n * sizeof *pos);
        st = pos ? gen_vision_rope_index(m, ids, n, gd, n_images, pos, &delta) : og_oom();
    } else if (!st && pv) {
        st = og_errorf(OG_ERR_UNSUPPORTED, "%s: the package takes no images", m->dir);
    }
    if (!st) {
        og_tensor_free(g->img_features);
        free(g->mpos);
        g->img_features = feats;
        g->mpos = pos;
        g->media_len = pos ? n : 0;
        g->rope_delta = delta;
        feats = NULL;
        pos = NULL;
        st = og_generator_append_tokens(g, ids, (size_t)n);
    }
    og_tensor_free(feats);
    free(pos);
    free(ids);
    return st;
}

og_status *og_generator_append_token_rows(og_generator *g, const int32_t *const *rows,
                                          const size_t *lens) {
    if (!g || !rows || !lens)
        return og_errorf(OG_ERR_INVALID_ARGUMENT, "og_generator_append_token_rows: NULL");
    for (int b = 0; b < g->p.batch_size; b++)
        if (!rows[b] && lens[b])
            return og_errorf(OG_ERR_INVALID_ARGUMENT, "og_generator_append_token_rows: row %d is "
                             "NULL", b);
    OG_TRY(check_append(g));
    /* rows of any lengths: in the padded layout the shorter ones count as right-padded to
     * the longest */
    size_t longest = 0;
    for (int b = 0; b < g->p.batch_size; b++)
        if (lens[b] > longest) longest = lens[b];
    size_t *pads = malloc(sizeof *pads * (size_t)g->p.batch_size);
    if (!pads) return og_oom();
    for (int b = 0; b < g->p.batch_size; b++) pads[b] = longest - lens[b];
    og_status *st = append_rows(g, rows, lens, pads);
    free(pads);
    return st;
}

og_status *og_generator_rewind_to(og_generator *g, size_t new_length) {
    if (!g) return og_errorf(OG_ERR_INVALID_ARGUMENT, "og_generator_rewind_to: NULL");
    if (new_length != 0 && (g->p.batch_size > 1 || g->beam))
        return og_errorf(OG_ERR_UNSUPPORTED, "generator: with batch_size > 1 or beam search, "
                         "rewind only to 0");
    if (new_length > (size_t)g->len[0])
        return og_errorf(OG_ERR_INVALID_ARGUMENT, "generator: cannot rewind to %zu, the sequence "
                         "has %d tokens", new_length, g->len[0]);
    OG_TRY(spec_settle(g));
    if (new_length == 0) {
        for (int r = 0; r < g->rows; r++) {
            g->len[r] = g->fed[r] = g->pads[r] = g->prompt_len[r] = g->form_len[r] = 0;
            g->eos_tok[r] = -1;
        }
        g->steps = 0;
        gen_cache_reset(g);
        og_tensor_free(g->img_features); /* the request's images go with its prompt */
        free(g->mpos);
        free(g->mids);
        g->img_features = NULL;
        g->mpos = NULL;
        g->mids = NULL;
        g->mids_len = 0;
    } else if ((int)new_length != g->len[0] || g->done[0]) {
        int keep = (int)new_length - 1; /* the last token is fed again for its logits */
        if (g->fed[0] > keep) {
            if (g->m->snapshots) keep = gen_snapshot_restore(g, keep);
            gen_kv_truncate(g, keep);
            g->fed[0] = keep;
        }
        g->len[0] = (int)new_length;
        if (g->form_len[0] > (int)new_length) g->form_len[0] = (int)new_length;
    } else {
        return NULL;
    }
    OG_TRY(gen_guide_rewind(g, (int)new_length));
    for (int r = 0; r < g->rows; r++) g->done[r] = false;
    g->has_logits = false;
    g->has_next = false;
    if (g->beam) {
        gen_beam *nb;
        OG_TRY(gen_beam_create(&g->beam_opts, &nb));
        gen_beam_free(g->beam);
        g->beam = nb;
        g->finalized = false;
        free(g->final_seqs);
        free(g->final_lens);
        g->final_seqs = NULL;
        g->final_lens = NULL;
    }
    return NULL;
}

og_status *og_generator_get_sequence(const og_generator *g, size_t index, const int32_t **ids,
                                     size_t *len) {
    if (!g || !ids || !len) return og_errorf(OG_ERR_INVALID_ARGUMENT, "og_generator_get_sequence: NULL");
    if (g->beam && g->finalized) {
        size_t n = (size_t)g->p.batch_size * g->p.num_return_sequences;
        if (index >= n)
            return og_errorf(OG_ERR_INVALID_ARGUMENT, "generator: sequence %zu of %zu", index, n);
        *ids = g->final_seqs + index * g->max_len;
        *len = (size_t)g->final_lens[index];
        return NULL;
    }
    size_t rows = g->beam ? (size_t)g->rows : (size_t)g->p.batch_size;
    if (index >= rows)
        return og_errorf(OG_ERR_INVALID_ARGUMENT, "generator: sequence %zu of %zu", index, rows);
    const int32_t *s = g->seq + index * g->max_len;
    int r = (int)index, n = g->len[r], P = g->prompt_len[r];
    if (!padded(g) || n == 0) {
        *ids = s;
        *len = (size_t)n;
        return NULL;
    }
    /* the padded layout: prompt, its padding, generated tokens, the EOS kept, a pad token
     * per later step; view is scratch memory, not state, hence written through const g */
    int32_t *v = g->view, pad = g->m->pad_id;
    int k = 0, generated = n - P, kept = g->eos_tok[r] >= 0;
    memcpy(v, s, sizeof(int32_t) * (size_t)P);
    k = P;
    for (int i = 0; i < g->pads[r]; i++) v[k++] = pad;
    memcpy(v + k, s + P, sizeof(int32_t) * (size_t)generated);
    k += generated;
    if (kept) v[k++] = g->eos_tok[r];
    for (int i = generated + kept; !g->beam && i < g->steps; i++) v[k++] = pad;
    *ids = v;
    *len = (size_t)k;
    return NULL;
}

og_status *og_generator_get_next_tokens(const og_generator *g, const int32_t **ids, size_t *n) {
    if (!g || !ids || !n)
        return og_errorf(OG_ERR_INVALID_ARGUMENT, "og_generator_get_next_tokens: NULL argument");
    if (!g->has_next)
        return og_errorf(OG_ERR_INVALID_ARGUMENT, "generator: no next tokens: none has been "
                         "generated since the last append or rewind");
    *ids = g->next;
    *n = (size_t)g->rows;
    return NULL;
}

og_status *og_generator_get_logits(og_generator *g, og_tensor **out) {
    if (!g || !out) return og_errorf(OG_ERR_INVALID_ARGUMENT, "og_generator_get_logits: NULL");
    if (!g->has_logits) OG_TRY(gen_compute_logits(g));
    int64_t dims[2] = {g->rows, g->m->vocab_size};
    og_tensor *t;
    OG_TRY(og_tensor_create(OG_FLOAT32, dims, 2, &t));
    memcpy(og_tensor_data(t), g->logits, og_tensor_size_bytes(t));
    *out = t;
    return NULL;
}

og_status *og_generator_get_output(og_generator *g, const char *name, og_tensor **out) {
    if (!g || !name || !out) return og_errorf(OG_ERR_INVALID_ARGUMENT, "og_generator_get_output: NULL");
    const og_model *m = g->m;
    const og_tensor *src = NULL;
    if (g->last_logits && !strcmp(m->logits.name, name)) src = g->last_logits;
    /* present outputs live in the cache: the current buffer holds the last run's */
    for (int i = 0; !src && i < m->n_cache; i++)
        if (!strcmp(m->cache[i].present, name)) return gen_cache_output(g, i, out);
    if (!src)
        return og_errorf(OG_ERR_NOT_FOUND, "generator: the last run has no output named '%s' "
                         "(the logits are '%s')", name, m->logits.name);
    og_tensor *t;
    og_status *st = og_tensor_create(src->dtype, src->dims, src->rank, &t);
    if (!st) {
        memcpy(og_tensor_data(t), src->data, src->nbytes);
        *out = t;
    }
    return st;
}
