/* The engine's thread, its queue, requests and statistics (see engine.h). */
#include "engine/engine_internal.h"

#include "genai/adapters.h"
#include "genai/budget.h"
#include "genai/mtp.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

const double eng_hist_bounds[ENG_HIST_BUCKETS] = {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1,
                                                  0.25,  0.5,    1,     2.5,  5,     10,  30};

double eng_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

void eng_hist_add(eng_hist *h, double v) {
    int b = 0;
    while (b < ENG_HIST_BUCKETS && v > eng_hist_bounds[b]) b++;
    h->count[b]++;
    h->sum += v;
    h->n++;
}

eng_options eng_options_default(void) {
    return (eng_options){.block_size = 16, .max_batch = 32, .max_queue = 256,
                         .prefix_cache = true};
}

/* ---- requests --------------------------------------------------------------------- */

static void request_free(eng_request *r) {
    guide_grammar_unref(r->s.guide);
    pthread_mutex_destroy(&r->mu);
    pthread_cond_destroy(&r->cv);
    free(r->prompt);
    for (int i = 0; i < r->n_inputs; i++) {
        free(r->input_names[i]);
        og_tensor_free(r->inputs[i]);
    }
    free(r->out);
    free(r->error);
    free(r);
}

void eng_request_release(eng_request *r) {
    if (r && atomic_fetch_sub(&r->refs, 1) == 1) request_free(r);
}

void eng_request_cancel(eng_request *r) {
    if (!r) return;
    atomic_store(&r->cancel, true);
}

int eng_request_wait(eng_request *r, int have, double timeout_s) {
    pthread_mutex_lock(&r->mu);
    if (r->n_out <= have && r->finish == ENG_RUNNING && timeout_s > 0) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        double end = (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9 + timeout_s;
        ts.tv_sec = (time_t)end;
        ts.tv_nsec = (long)((end - (double)ts.tv_sec) * 1e9);
        while (r->n_out <= have && r->finish == ENG_RUNNING)
            if (pthread_cond_timedwait(&r->cv, &r->mu, &ts) != 0) break;
    }
    int n = r->n_out;
    pthread_mutex_unlock(&r->mu);
    return n;
}

void eng_request_tokens(eng_request *r, int from, int n, eng_token *out) {
    pthread_mutex_lock(&r->mu);
    if (from >= 0 && n > 0 && from + n <= r->n_out) memcpy(out, r->out + from, sizeof *out * (size_t)n);
    pthread_mutex_unlock(&r->mu);
}

eng_finish eng_request_finish(eng_request *r, const char **error) {
    pthread_mutex_lock(&r->mu);
    eng_finish f = r->finish;
    if (error) *error = r->error ? r->error : "";
    pthread_mutex_unlock(&r->mu);
    return f;
}

int eng_request_cached_tokens(eng_request *r) {
    pthread_mutex_lock(&r->mu);
    int n = r->cached_tokens;
    pthread_mutex_unlock(&r->mu);
    return n;
}

/* ---- delivering (engine thread) --------------------------------------------------- */

og_status *eng_deliver(eng_engine *e, eng_seq *s, const eng_token *t) {
    eng_request *r = s->req;
    double now = eng_now();
    pthread_mutex_lock(&r->mu);
    if (r->n_out == r->cap_out) {
        int cap = r->cap_out ? 2 * r->cap_out : 16;
        eng_token *o = realloc(r->out, sizeof *o * (size_t)cap);
        if (!o) {
            pthread_mutex_unlock(&r->mu);
            return og_errorf(OG_ERR_OUT_OF_MEMORY, "out of memory for the generated tokens");
        }
        r->out = o;
        r->cap_out = cap;
    }
    r->out[r->n_out++] = *t;
    pthread_cond_broadcast(&r->cv);
    pthread_mutex_unlock(&r->mu);
    pthread_mutex_lock(&e->stats_mu);
    if (s->n_gen == 0) eng_hist_add(&e->st.ttft, now - r->t_submit);
    else eng_hist_add(&e->st.inter_token, now - r->t_last);
    e->st.generated_tokens++;
    pthread_mutex_unlock(&e->stats_mu);
    r->t_last = now;
    s->n_gen++;
    return NULL;
}

static void seq_free(eng_engine *e, eng_seq *s) {
    if (e->batched) eng_batch_drop_blocks(e, s);
    og_generator_destroy(s->gen);
    og_generator_destroy(s->dgen);
    gen_mtp_delete(s->mtp);
    guide_matcher_free(s->matcher);
    free(s->tokens);
    free(s->blocks);
    free(s);
}

/* Ends a sequence: the engine forgets it, then the request learns how. The caller has
 * taken it out of the waiting and running lists. Its KV blocks go back to the pool and
 * the counters and KV gauges move before the request is told, so that whoever waits on
 * it (a client that cancelled, a test) sees the engine without it. */
void eng_admit(eng_engine *e, eng_seq *s) {
    pthread_mutex_lock(&e->stats_mu);
    s->admitted = true;
    e->st.running++;
    pthread_mutex_unlock(&e->stats_mu);
}

/* Under stats_mu. */
static void unadmit_locked(eng_engine *e, eng_seq *s) {
    if (s->admitted) {
        s->admitted = false;
        e->st.running--;
    }
}

void eng_unadmit(eng_engine *e, eng_seq *s) {
    pthread_mutex_lock(&e->stats_mu);
    unadmit_locked(e, s);
    pthread_mutex_unlock(&e->stats_mu);
}

void eng_finish_seq(eng_engine *e, eng_seq *s, eng_finish why, const char *error) {
    eng_request *r = s->req;
    if (e->batched) eng_batch_drop_blocks(e, s);
    /* per-sequence mode: its generator's verifications count when it ends */
    og_speculative_stats ss = {.struct_size = sizeof ss};
    og_status *sst = s->gen ? og_generator_get_speculative_stats(s->gen, &ss) : NULL;
    if (sst || !s->gen) ss.verifications = 0;
    og_status_free(sst);
    pthread_mutex_lock(&e->stats_mu);
    if (ss.verifications > 0) {
        e->st.spec_verifications += (uint64_t)ss.verifications;
        e->st.spec_drafted += (uint64_t)ss.drafted;
        e->st.spec_accepted += (uint64_t)ss.accepted;
    }
    unadmit_locked(e, s); /* the gauge must not count it once its end is told */
    if (s->mem) { /* per-sequence mode: its generator goes below */
        e->seq_used -= s->mem;
        s->mem = 0;
        e->st.kv_bytes_used = e->seq_used;
    }
    if (why == ENG_FINISH_CANCELLED) e->st.cancelled++;
    else if (why == ENG_FINISH_ERROR) e->st.failed++;
    else e->st.finished++;
    if (e->batched) {
        e->st.kv_blocks_used = kv_pool_in_use(e->pool);
        e->st.kv_blocks_cached = e->pool->n_cached;
        e->st.state_slots_used = e->n_slots_used;
    }
    pthread_mutex_unlock(&e->stats_mu);
    r->seq = NULL;
    seq_free(e, s);
    pthread_mutex_lock(&r->mu);
    r->finish = why;
    if (error && !r->error) r->error = strdup(error);
    pthread_cond_broadcast(&r->cv);
    pthread_mutex_unlock(&r->mu);
    eng_request_release(r);
}

/* ---- the thread --------------------------------------------------------------------- */

static void take_incoming(eng_engine *e) {
    for (int i = 0; i < e->n_incoming; i++) {
        if (e->n_waiting == e->cap_waiting) {
            int cap = e->cap_waiting ? 2 * e->cap_waiting : 64;
            eng_seq **w = realloc(e->waiting, sizeof *w * (size_t)cap);
            if (!w) { /* cannot queue it: it ends here */
                e->n_queued--;
                pthread_mutex_unlock(&e->mu);
                eng_finish_seq(e, e->incoming[i], ENG_FINISH_ERROR, "out of memory for the queue");
                pthread_mutex_lock(&e->mu);
                continue;
            }
            e->waiting = w;
            e->cap_waiting = cap;
        }
        e->waiting[e->n_waiting++] = e->incoming[i];
    }
    e->n_incoming = 0;
}

/* Waiting requests whose submitter gave up end before they ever run. */
static void drop_cancelled_waiting(eng_engine *e) {
    int k = 0;
    for (int i = 0; i < e->n_waiting; i++) {
        eng_seq *s = e->waiting[i];
        if (atomic_load(&s->req->cancel)) {
            pthread_mutex_lock(&e->mu);
            e->n_queued--;
            pthread_mutex_unlock(&e->mu);
            eng_finish_seq(e, s, ENG_FINISH_CANCELLED, NULL);
        } else {
            e->waiting[k++] = s;
        }
    }
    e->n_waiting = k;
}

struct eng_ctl {
    void (*fn)(eng_engine *, void *);
    void *arg;
    bool done, ran;
};

bool eng_on_thread(eng_engine *e, void (*fn)(eng_engine *, void *), void *arg) {
    struct eng_ctl job = {fn, arg, false, false};
    pthread_mutex_lock(&e->mu);
    while (e->ctl && !e->stopping) pthread_cond_wait(&e->ctl_cv, &e->mu); /* one at a time */
    if (!e->stopping && e->thread_started) {
        e->ctl = &job;
        pthread_cond_broadcast(&e->cv);
        while (!job.done) pthread_cond_wait(&e->ctl_cv, &e->mu);
    }
    pthread_mutex_unlock(&e->mu);
    return job.ran;
}

/* The job waiting for the thread (under mu, which it leaves held): run, or when the
 * engine stops, ended without running. */
static void run_ctl(eng_engine *e, bool run) {
    struct eng_ctl *job = e->ctl;
    if (!job) return;
    if (run) {
        pthread_mutex_unlock(&e->mu);
        job->fn(e, job->arg);
        pthread_mutex_lock(&e->mu);
    }
    job->ran = run;
    job->done = true;
    e->ctl = NULL;
    pthread_cond_broadcast(&e->ctl_cv);
}

static void *engine_main(void *arg) {
    eng_engine *e = arg;
    for (;;) {
        pthread_mutex_lock(&e->mu);
        while (!e->stopping && !e->ctl && e->n_incoming == 0 && e->n_waiting == 0 &&
               e->n_running == 0)
            pthread_cond_wait(&e->cv, &e->mu);
        if (e->stopping) {
            run_ctl(e, false);
            pthread_mutex_unlock(&e->mu);
            break;
        }
        if (e->ctl) {
            run_ctl(e, true);
            pthread_mutex_unlock(&e->mu);
            continue;
        }
        take_incoming(e);
        pthread_mutex_unlock(&e->mu);
        drop_cancelled_waiting(e);
        double t0 = eng_now();
        if (e->batched) eng_batch_step(e);
        else eng_single_step(e);
        double t1 = eng_now();
        gen_plan_mem pm; /* read here: this thread is the one that runs the sessions */
        gen_model_plan_mem(e->m, &pm);
        pthread_mutex_lock(&e->stats_mu);
        eng_hist_add(&e->st.step_time, t1 - t0);
        e->st.steps++;
        e->st.plan_bytes = pm.bytes;
        e->st.plan_bytes_peak = pm.peak;
        e->st.plans_evicted = pm.evicted;
        pthread_mutex_unlock(&e->stats_mu);
    }
    /* shutting down: everything still here is cancelled */
    pthread_mutex_lock(&e->mu);
    take_incoming(e);
    pthread_mutex_unlock(&e->mu);
    for (int i = 0; i < e->n_running; i++) eng_finish_seq(e, e->running[i], ENG_FINISH_CANCELLED, NULL);
    e->n_running = 0;
    for (int i = 0; i < e->n_waiting; i++) eng_finish_seq(e, e->waiting[i], ENG_FINISH_CANCELLED, NULL);
    e->n_waiting = 0;
    return NULL;
}

/* ---- the engine ----------------------------------------------------------------------- */

og_status *eng_create(og_model *model, const eng_options *o, eng_engine **out) {
    eng_options opt = o ? *o : eng_options_default();
    if (opt.spec_mtp && !model->mtp)
        return og_errorf(OG_ERR_INVALID_ARGUMENT, "engine: speculative mtp: the package %s has "
                         "no MTP head (genai_config.json model.mtp)", model->dir);
    if (opt.spec_draft_model) { /* the generator's checks: the same tokenizer, one drafter */
        og_generator_params p = og_generator_params_default(model);
        p.speculative_draft_model = opt.spec_draft_model;
        p.speculative_mtp = opt.spec_mtp;
        p.speculative_ngram_size = opt.spec_ngram;
        og_generator *g = NULL;
        OG_TRY(og_status_wrap(og_generator_create(model, &p, &g), "engine"));
        og_generator_destroy(g);
    }
    if (opt.block_size < 1 || opt.block_size > 1024 || opt.max_batch < 1 || opt.max_queue < 0 ||
        opt.step_tokens < 0 || opt.threads < 0)
        return og_errorf(OG_ERR_INVALID_ARGUMENT, "engine: block size %d (1 to 1024), max batch %d "
                         "(>= 1), queue %d, step tokens %d, threads %d: out of range",
                         opt.block_size, opt.max_batch, opt.max_queue, opt.step_tokens, opt.threads);
    eng_engine *e = calloc(1, sizeof *e);
    if (!e) return og_oom();
    e->m = model;
    e->o = opt;
    e->vocab = model->vocab_size;
    og_generator_params gp = og_generator_params_default(model);
    e->context = model->context_length > 0 ? model->context_length : gp.max_length;
    if (e->context < 2) e->context = 2;
    /* The step's token budget bounds how long a running decode waits for its next token
     * while prompts are prefilled: a step runs its decode tokens and then prefill chunks
     * up to the budget, and its time grows with the tokens it runs. It once came from the
     * vocabulary (64 MiB of float32 logits rows), because the step kept logits for every
     * token; since the step asks for the sampled rows only, nothing in it scales with the
     * vocabulary times the tokens, so the default is a fixed ENG_STEP_TOKENS_DEFAULT. What
     * still grows with it is linear: the activations (a few hidden- and MLP-width rows a
     * token: measured ~63 KB a token on Qwen2.5-0.5B, ~190 KB estimated for an 8B Llama)
     * and the attention's per-token partial sums, in each plan the session caches for a
     * step shape (together bounded by og_model_options.plan_memory: docs/PERFORMANCE.md,
     * "Bounded plan memory").
     * A step always has room for one token of every running sequence (at least
     * max_batch). */
    int budget = opt.step_tokens ? opt.step_tokens : ENG_STEP_TOKENS_DEFAULT;
    e->step_tokens = budget < opt.max_batch ? opt.max_batch : budget;
    pthread_mutex_init(&e->mu, NULL);
    pthread_cond_init(&e->cv, NULL);
    pthread_cond_init(&e->ctl_cv, NULL);
    pthread_mutex_init(&e->stats_mu, NULL);
    og_status *st = NULL;
    e->running = calloc((size_t)opt.max_batch, sizeof *e->running);
    e->row = malloc(sizeof(float) * (size_t)e->vocab + 64);
    e->work = malloc(sizeof(float) * 2 * (size_t)e->vocab + 64);
    e->lp = malloc(sizeof(float) * (size_t)e->vocab + 64);
    if (!e->running || !e->row || !e->work || !e->lp) {
        st = og_oom();
        goto fail;
    }
    if (opt.per_sequence) {
        snprintf(e->note, sizeof e->note, "per-sequence mode was asked for");
    } else {
        og_status *why = eng_batch_init(e);
        if (why) {
            if (og_status_code(why) == OG_ERR_OUT_OF_MEMORY) {
                st = why;
                goto fail;
            }
            snprintf(e->note, sizeof e->note, "%s", og_status_message(why));
            og_status_free(why);
            eng_batch_free(e);
        }
    }
    if (e->batched) {
        e->st.kv_blocks_total = e->pool->n_blocks;
        e->st.block_size = e->pool->block_size;
        e->st.kv_bytes_total = (uint64_t)e->pool->n_blocks * 2u * (uint64_t)e->pool->n_layers *
                               e->pool->block_bytes + e->state_reserve;
        e->st.state_slots_total = e->n_slots;
    } else {
        eng_single_init(e);
        e->st.kv_bytes_total = e->seq_budget;
    }
    if (pthread_create(&e->thread, NULL, engine_main, e) != 0) {
        st = og_errorf(OG_ERR_RUNTIME, "engine: cannot start its thread");
        goto fail;
    }
    e->thread_started = true;
    *out = e;
    return NULL;
fail:
    eng_destroy(e);
    return st;
}

void eng_destroy(eng_engine *e) {
    if (!e) return;
    if (e->thread_started) {
        pthread_mutex_lock(&e->mu);
        e->stopping = true;
        pthread_cond_broadcast(&e->cv);
        pthread_cond_broadcast(&e->ctl_cv);
        pthread_mutex_unlock(&e->mu);
        pthread_join(e->thread, NULL);
    }
    if (e->batched) eng_batch_free(e);
    free(e->incoming);
    free(e->waiting);
    free(e->running);
    free(e->row);
    free(e->work);
    free(e->lp);
    free(e->gmask);
    pthread_mutex_destroy(&e->mu);
    pthread_cond_destroy(&e->cv);
    pthread_cond_destroy(&e->ctl_cv);
    pthread_mutex_destroy(&e->stats_mu);
    free(e);
}

const char *eng_mode_note(const eng_engine *e) { return e->batched ? "" : e->note; }
bool eng_batched(const eng_engine *e) { return e->batched; }
int eng_context_length(const eng_engine *e) { return e->context; }

size_t eng_request_bytes(const eng_engine *e, int n_prompt, const eng_sampling *s) {
    if (!e->batched) return eng_single_bytes(e, n_prompt, s);
    int64_t total = (int64_t)n_prompt + s->max_tokens;
    if (total > e->context) total = e->context;
    int64_t blocks = (total + e->pool->block_size - 1) / e->pool->block_size;
    return (size_t)blocks * 2u * (size_t)e->pool->n_layers * e->pool->block_bytes + e->slot_bytes;
}

/* Copies of the request's encoder inputs in r; false when memory runs out. */
static bool copy_inputs(eng_request *r, const char *const *names, const og_tensor *const *ts,
                        int count) {
    for (int i = 0; i < count; i++) {
        og_tensor *t = (og_tensor *)ts[i];
        r->n_inputs = i + 1; /* freed up to here on failure (r is calloc'd) */
        r->input_names[i] = strdup(names[i]);
        og_status *st = og_tensor_create(og_tensor_dtype(t), og_tensor_dims(t), og_tensor_rank(t),
                                         &r->inputs[i]);
        if (st || !r->input_names[i]) {
            og_status_free(st);
            return false;
        }
        if (og_tensor_size_bytes(t))
            memcpy(og_tensor_data(r->inputs[i]), og_tensor_data(t), og_tensor_size_bytes(t));
    }
    return true;
}

eng_submit_code eng_submit(eng_engine *e, const int32_t *prompt, int n, const eng_sampling *s,
                           eng_request **out, char *msg, size_t size) {
    return eng_submit_inputs(e, prompt, n, NULL, NULL, 0, s, out, msg, size);
}

eng_submit_code eng_submit_inputs(eng_engine *e, const int32_t *prompt, int n,
                                  const char *const *names, const og_tensor *const *tensors,
                                  int count, const eng_sampling *s, eng_request **out,
                                  char *msg, size_t size) {
    if (count < 0 || count > ENG_MAX_INPUTS) {
        snprintf(msg, size, "%d encoder inputs (at most %d)", count, ENG_MAX_INPUTS);
        return ENG_SUBMIT_INVALID;
    }
    for (int i = 0; i < count; i++)
        if (!names[i] || !tensors[i] || og_tensor_dtype(tensors[i]) == OG_STRING) {
            snprintf(msg, size, "encoder input %d has no name or tensor, or holds strings", i);
            return ENG_SUBMIT_INVALID;
        }
    if (count && e->batched) {
        snprintf(msg, size, "images and audio run one generator per request, and this engine "
                 "batches (its steps have no encoder outputs or image positions to feed)");
        return ENG_SUBMIT_INVALID;
    }
    if (n < 1) {
        snprintf(msg, size, "the prompt is empty");
        return ENG_SUBMIT_INVALID;
    }
    for (int i = 0; i < n; i++)
        if (prompt[i] < 0 || prompt[i] >= e->vocab) {
            snprintf(msg, size, "token id %d (at %d) is outside the vocabulary [0, %d)", prompt[i],
                     i, e->vocab);
            return ENG_SUBMIT_INVALID;
        }
    if (n >= e->context) {
        snprintf(msg, size, "the prompt has %d tokens; the model's context is %d, which leaves "
                 "no room for a new token", n, e->context);
        return ENG_SUBMIT_INVALID;
    }
    if (s->max_tokens < 1 || (s->logprobs > ENG_MAX_LOGPROBS) ||
        (s->sample && !(s->temperature >= 0)) || s->top_k < 0 || !(s->top_p > 0 && s->top_p <= 1)) {
        snprintf(msg, size, "sampling options out of range");
        return ENG_SUBMIT_INVALID;
    }
    if (s->adapter && !gen_adapters_find(s->adapters, s->adapter)) {
        snprintf(msg, size, "adapter '%s' is not loaded over the model", s->adapter);
        return ENG_SUBMIT_INVALID;
    }
    if (!e->batched) {
        size_t need = eng_single_bytes(e, n, s);
        if (need > e->seq_budget) {
            char a[32], b[32];
            snprintf(msg, size, "the prompt (%d tokens) and max_tokens (%d) need an estimated %s "
                     "for a generator of their own (KV cache, states, buffers); the memory "
                     "budget holds %s (raise --kv-memory)", n, s->max_tokens,
                     gen_human_bytes((double)need, a, sizeof a),
                     gen_human_bytes((double)e->seq_budget, b, sizeof b));
            return ENG_SUBMIT_INVALID;
        }
    }
    if (e->batched) {
        int64_t total = (int64_t)n + s->max_tokens;
        if (total > e->context) total = e->context;
        int64_t need = (total + e->pool->block_size - 1) / e->pool->block_size;
        if (need > e->pool->n_blocks) {
            snprintf(msg, size, "the prompt (%d tokens) and max_tokens (%d) need %lld KV blocks "
                     "of %d positions; the pool holds %d (raise --kv-memory)", n, s->max_tokens,
                     (long long)need, e->pool->block_size, e->pool->n_blocks);
            return ENG_SUBMIT_INVALID;
        }
    }
    /* the request's matcher, made here so that a grammar it cannot start on is the
     * submitter's error before anything runs */
    guide_matcher *matcher = NULL;
    if (s->guide) {
        /* the stop ids the model can choose (a config may name one past its logits); a
         * closed grammar with none of them ends the request on its last token */
        int32_t *stops = malloc(sizeof *stops * (size_t)(e->m->n_eos + 1));
        size_t n_stop = 0;
        for (int i = 0; stops && i < e->m->n_eos; i++)
            if (e->m->eos_ids[i] >= 0 && e->m->eos_ids[i] < e->vocab &&
                (size_t)e->m->eos_ids[i] < s->guide_tokens)
                stops[n_stop++] = e->m->eos_ids[i];
        og_status *gs = stops ? guide_matcher_new(s->guide, stops, n_stop, &matcher) : og_oom();
        free(stops);
        if (gs) {
            snprintf(msg, size, "constrained decoding: %s", og_status_message(gs));
            bool oom = og_status_code(gs) == OG_ERR_OUT_OF_MEMORY;
            og_status_free(gs);
            return oom ? ENG_SUBMIT_NO_MEMORY : ENG_SUBMIT_INVALID;
        }
    }
    eng_request *r = calloc(1, sizeof *r);
    eng_seq *q = calloc(1, sizeof *q);
    int cap = n + (s->max_tokens < e->context ? s->max_tokens : e->context) + 1;
    if (r) r->prompt = malloc(sizeof *r->prompt * (size_t)n);
    if (q) q->tokens = malloc(sizeof *q->tokens * (size_t)cap);
    if (!r || !q || !r->prompt || !q->tokens || !copy_inputs(r, names, tensors, count)) {
        if (r) free(r->prompt);
        if (q) free(q->tokens);
        for (int i = 0; r && i < r->n_inputs; i++) {
            free(r->input_names[i]);
            og_tensor_free(r->inputs[i]);
        }
        free(r);
        free(q);
        guide_matcher_free(matcher);
        snprintf(msg, size, "out of memory for the request");
        return ENG_SUBMIT_NO_MEMORY;
    }
    pthread_mutex_init(&r->mu, NULL);
    pthread_cond_init(&r->cv, NULL);
    atomic_init(&r->refs, 2);
    atomic_init(&r->cancel, false);
    r->s = *s;
    if (s->guide) r->s.guide = guide_grammar_ref(s->guide); /* released with the request */
    q->matcher = matcher;
    q->think = !s->think ? THINK_DONE : s->think_in ? THINK_IN : THINK_MAY;
    memcpy(r->prompt, prompt, sizeof *prompt * (size_t)n);
    r->n_prompt = n;
    r->seq = q;
    r->t_submit = r->t_last = eng_now();
    q->req = r;
    q->slot = q->snap = -1;
    memcpy(q->tokens, prompt, sizeof *prompt * (size_t)n);
    q->n_tokens = n;
    q->cap_tokens = cap;
    gen_rng_seed(&q->rng, s->seed);
    pthread_mutex_lock(&e->mu);
    eng_submit_code code = ENG_SUBMIT_OK;
    if (e->stopping) {
        code = ENG_SUBMIT_STOPPED;
        snprintf(msg, size, "the engine is shutting down");
    } else if (e->n_queued >= e->o.max_queue) {
        code = ENG_SUBMIT_QUEUE_FULL;
        snprintf(msg, size, "%d requests are waiting, the most the queue takes", e->n_queued);
    } else if (e->n_incoming == e->cap_incoming) {
        int c = e->cap_incoming ? 2 * e->cap_incoming : 64;
        eng_seq **w = realloc(e->incoming, sizeof *w * (size_t)c);
        if (w) {
            e->incoming = w;
            e->cap_incoming = c;
        } else {
            code = ENG_SUBMIT_NO_MEMORY;
            snprintf(msg, size, "out of memory for the queue");
        }
    }
    if (code == ENG_SUBMIT_OK) {
        e->incoming[e->n_incoming++] = q;
        e->n_queued++;
        pthread_cond_signal(&e->cv);
    }
    pthread_mutex_unlock(&e->mu);
    if (code != ENG_SUBMIT_OK) {
        guide_matcher_free(q->matcher);
        free(q->tokens);
        free(q);
        request_free(r);
        return code;
    }
    pthread_mutex_lock(&e->stats_mu);
    e->st.requests++;
    e->st.prompt_tokens += (uint64_t)n;
    pthread_mutex_unlock(&e->stats_mu);
    *out = r;
    return ENG_SUBMIT_OK;
}

void eng_get_stats(eng_engine *e, eng_stats *out) {
    pthread_mutex_lock(&e->mu);
    int queued = e->n_queued;
    pthread_mutex_unlock(&e->mu);
    pthread_mutex_lock(&e->stats_mu);
    *out = e->st;
    pthread_mutex_unlock(&e->stats_mu);
    out->queue_depth = queued;
    if (e->batched) { /* a block holds every layer's keys and values; a slot every state */
        uint64_t slots = (uint64_t)out->state_slots_used;
        out->kv_bytes_used = (uint64_t)out->kv_blocks_used * 2u * (uint64_t)e->pool->n_layers *
                             e->pool->block_bytes + slots * e->slot_bytes;
    }
}
