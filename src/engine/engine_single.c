/* Per-sequence mode: one og_generator per running request, each stepped one token per
 * engine step (its prompt runs whole when it is admitted). For models the paged path
 * cannot take (see engine.h); the scheduling promises hold (a maximum batch, a queue,
 * arrival order, cancellation between steps), the shared batch does not. EOS ends a
 * sequence unless the request ignores it: then, as in the batched mode, the EOS token is
 * delivered like any other and fed back (the generator stopped on it; appending it runs
 * the step the generator would have run). */
#include "engine/engine_internal.h"

#include "genai/budget.h"

#include <stdio.h>
#include <string.h>

/* The generator of a request: one row, greedy or sampling as asked, long enough for the
 * prompt and max_tokens within the context. */
static og_generator_params seq_params(const eng_engine *e, int n_tokens, const eng_sampling *sp) {
    og_generator_params p = og_generator_params_default(e->m);
    p.batch_size = 1;
    p.all_logits = 0; /* the engine samples from the last position only */
    p.num_beams = 1;
    p.num_return_sequences = 1;
    p.min_length = 0;
    p.repetition_penalty = 1.0f;
    p.no_repeat_ngram_size = 0;
    int64_t total = (int64_t)n_tokens + sp->max_tokens;
    p.max_length = total < e->context ? (int)total : e->context;
    p.do_sample = sp->sample && sp->temperature > 0 && sp->top_k != 1;
    p.temperature = sp->temperature > 0 ? sp->temperature : 1.0f;
    p.top_k = sp->top_k;
    p.top_p = sp->top_p;
    p.random_seed = (int64_t)(sp->seed & INT64_MAX);
    p.speculative_ngram_size = e->o.spec_ngram;
    p.speculative_max_draft_tokens = e->o.spec_max_draft > 0 ? e->o.spec_max_draft : 4;
    p.speculative_ngram_chained_lookup = e->o.spec_ngram > 0 && e->o.spec_chained;
    p.speculative_fixed_k = e->o.spec_fixed;
    p.speculative_mtp = e->o.spec_mtp;
    if (e->o.spec_draft_model) /* else the package's own model.draft, as the generator has it */
        p.speculative_draft_model = e->o.spec_draft_model;
    return p;
}

size_t eng_single_bytes(const eng_engine *e, int n_tokens, const eng_sampling *sp) {
    og_generator_params p = seq_params(e, n_tokens, sp);
    double b = gen_generator_bytes(e->m, &p, 1); /* the prompt runs as one chunk */
    return b < (double)SIZE_MAX / 2 ? (size_t)b : SIZE_MAX / 2;
}

void eng_single_init(eng_engine *e) {
    if (e->o.kv_memory > 0) {
        e->seq_budget = e->o.kv_memory;
        return;
    }
    /* as the batched pool: max_batch full contexts, at most a quarter of the memory
     * available, at least one full context */
    eng_sampling full = {.max_tokens = e->context, .top_p = 1, .logprobs = -1};
    double one = (double)eng_single_bytes(e, 1, &full);
    double want = (double)e->o.max_batch * one, cap = gen_available_memory() / 4;
    if (want > cap) want = cap > one ? cap : one;
    e->seq_budget = want < (double)SIZE_MAX / 2 ? (size_t)want : SIZE_MAX / 2;
}

static og_status *start(eng_engine *e, eng_seq *s) {
    og_generator_params p = seq_params(e, s->n_tokens, &s->req->s);
    OG_TRY(og_generator_create(e->m, &p, &s->gen));
    if (s->req->s.adapter)
        OG_TRY(og_generator_set_active_adapter(s->gen, s->req->s.adapters, s->req->s.adapter));
    eng_request *r = s->req;
    if (!r->n_inputs) return og_generator_append_tokens(s->gen, s->tokens, (size_t)s->n_tokens);
    /* a prompt with images or audio: the prompt is input_ids beside the encoder inputs */
    og_tensor *ids = NULL;
    int64_t d[2] = {1, s->n_tokens};
    OG_TRY(og_tensor_wrap(OG_INT32, d, 2, s->tokens, sizeof *s->tokens * (size_t)s->n_tokens,
                          &ids));
    const char *names[ENG_MAX_INPUTS + 1] = {"input_ids"};
    const og_tensor *ts[ENG_MAX_INPUTS + 1] = {ids};
    for (int i = 0; i < r->n_inputs; i++) {
        names[i + 1] = r->input_names[i];
        ts[i + 1] = r->inputs[i];
    }
    og_status *st = og_generator_set_inputs(s->gen, names, ts, (size_t)r->n_inputs + 1);
    og_tensor_free(ids);
    return st;
}

/* Ends s with st's message (frees st); false. */
static bool fail(eng_engine *e, eng_seq *s, og_status *st) {
    eng_finish_seq(e, s, ENG_FINISH_ERROR, og_status_message(st));
    og_status_free(st);
    return false;
}

/* One token of a guided sequence: the engine chooses it from the generator's logits
 * (eng_choose applies the matcher's mask, which the generator's own choice cannot), and
 * appending it runs the step that gives the next logits. False when it ended. */
static bool step_guided(eng_engine *e, eng_seq *s) {
    og_tensor *lg = NULL;
    og_status *st = og_generator_get_logits(s->gen, &lg);
    if (st) return fail(e, s, st);
    eng_token t;
    bool done = false;
    st = eng_choose(e, s, og_tensor_data(lg), &t);
    og_tensor_free(lg);
    if (!st && eng_is_eos(e, s, t.id)) {
        eng_finish_seq(e, s, ENG_FINISH_STOP, NULL);
        return false;
    }
    if (!st) st = eng_guide_advance(s, t.id, &done);
    if (st) return fail(e, s, st);
    s->tokens[s->n_tokens++] = t.id;
    if ((st = eng_deliver(e, s, &t))) return fail(e, s, st);
    if (done || s->n_gen >= s->req->s.max_tokens || s->n_tokens >= e->context) {
        eng_finish_seq(e, s, done ? ENG_FINISH_STOP : ENG_FINISH_LENGTH, NULL);
        return false;
    }
    if ((st = og_generator_append_tokens(s->gen, &t.id, 1))) return fail(e, s, st);
    return true;
}

/* One token of a running sequence; false when it ended. */
static bool step_one(eng_engine *e, eng_seq *s) {
    if (s->matcher) return step_guided(e, s);
    eng_token t = {0};
    og_status *st = NULL;
    bool logprobs = s->req->s.logprobs >= 0;
    og_tensor *lg = NULL;
    if (logprobs) st = og_generator_get_logits(s->gen, &lg);
    if (!st) st = og_generator_generate_next_token(s->gen);
    const int32_t *ids = NULL;
    size_t len = 0;
    if (!st) st = og_generator_get_sequence(s->gen, 0, &ids, &len);
    /* the generator stopped on an EOS id: its sequence did not grow, the id is its next */
    bool eos = !st && (int)len == s->n_tokens;
    if (eos && !s->req->s.ignore_eos) {
        og_tensor_free(lg);
        eng_finish_seq(e, s, ENG_FINISH_STOP, NULL);
        return false;
    }
    size_t n_next = 0;
    if (eos) st = og_generator_get_next_tokens(s->gen, &ids, &n_next);
    if (st) {
        og_tensor_free(lg);
        eng_finish_seq(e, s, ENG_FINISH_ERROR, og_status_message(st));
        og_status_free(st);
        return false;
    }
    t.id = eos ? ids[0] : ids[len - 1];
    if (logprobs) {
        memcpy(e->lp, og_tensor_data(lg), sizeof(float) * (size_t)e->vocab);
        gen_log_softmax(e->lp, e->vocab);
        t.logprob = e->lp[t.id];
        /* alternatives: the same selection the batched mode makes */
        eng_choose_top(e, s, &t);
    }
    og_tensor_free(lg);
    s->tokens[s->n_tokens++] = t.id;
    if ((st = eng_deliver(e, s, &t))) return fail(e, s, st);
    if (s->n_gen >= s->req->s.max_tokens || s->n_tokens >= e->context) {
        eng_finish_seq(e, s, ENG_FINISH_LENGTH, NULL);
        return false;
    }
    if (eos && (st = og_generator_append_tokens(s->gen, &t.id, 1))) {
        eng_finish_seq(e, s, ENG_FINISH_ERROR, og_status_message(st));
        og_status_free(st);
        return false;
    }
    if (og_generator_is_done(s->gen)) {
        eng_finish_seq(e, s, ENG_FINISH_LENGTH, NULL);
        return false;
    }
    return true;
}

void eng_single_step(eng_engine *e) {
    while (e->n_running < e->o.max_batch && e->n_waiting > 0) {
        eng_seq *s = e->waiting[0];
        /* in arrival order, while the generators' bytes fit the budget (a request that
         * exceeds it alone was refused at submission; one always runs) */
        size_t need = eng_single_bytes(e, s->n_tokens, &s->req->s);
        if (e->n_running > 0 && e->seq_used + need > e->seq_budget) break;
        memmove(e->waiting, e->waiting + 1, sizeof *e->waiting * (size_t)(e->n_waiting - 1));
        e->n_waiting--;
        pthread_mutex_lock(&e->mu);
        e->n_queued--;
        pthread_mutex_unlock(&e->mu);
        og_status *st = start(e, s); /* on failure it ends uncharged */
        if (st) {
            eng_finish_seq(e, s, ENG_FINISH_ERROR, og_status_message(st));
            og_status_free(st);
            continue;
        }
        s->mem = need;
        e->seq_used += need;
        e->running[e->n_running++] = s;
        eng_admit(e, s);
        pthread_mutex_lock(&e->stats_mu);
        e->st.kv_bytes_used = e->seq_used;
        pthread_mutex_unlock(&e->stats_mu);
    }
    int k = 0;
    for (int i = 0; i < e->n_running; i++) {
        eng_seq *s = e->running[i];
        if (atomic_load(&s->req->cancel)) {
            eng_finish_seq(e, s, ENG_FINISH_CANCELLED, NULL);
            continue;
        }
        if (step_one(e, s)) e->running[k++] = s;
    }
    e->n_running = k;
    pthread_mutex_lock(&e->stats_mu);
    e->st.last_batch = e->n_running;
    e->st.last_step_tokens = e->n_running;
    pthread_mutex_unlock(&e->stats_mu);
}
