/* Speculative decoding in batched mode: prompt-lookup drafts verified inside the step.
 *
 * A decoding sequence whose text so far repeats itself (its last ngram_size - 1 tokens
 * occur earlier in its prompt or output) may run its pending token and K drafted ones in
 * the step, beside the other sequences' decode rows and prefill chunks: the weights are
 * read once for all of them. Each drafted token runs in a decode step's form, so its
 * logits are the bits a one-token step gives (batch invariance), and after the run the
 * sequence chooses its tokens one by one exactly as plain steps would (eng_choose:
 * guidance, greedy or one draw of its generator), keeping drafted tokens while they
 * equal the choice (engine_batch.c, advance). Its KV positions past the kept ones are
 * left as they are: the sequence's length says where its cache ends, the next step
 * writes over them, and blocks wholly past it go back to the pool.
 *
 * The cost model. Each sequence keeps an acceptance estimate (gen_spec: decayed counts,
 * drafts not verified scored against the tokens then chosen, the shadow), and the engine
 * a line fitted to its runs' times against their tokens: t(T) = a + b T. With D decode
 * rows in the step, planned in running order, a sequence gets the K among powers of two
 * and its whole draft that maximises the step's expected tokens per second,
 * (D + E(K) - 1) / t(T + K) with E(K) = 1 + a + ... + a^K, and only when that beats the
 * step without it by 5 % of one row's tokens, (D + 0.05) / t(T); otherwise its draft
 * becomes its shadow (the sequences planned before it count in D and T with their
 * expected tokens). At batch 1 this is the
 * generator's rule (gen_spec_choose). Until a run has been timed nothing is drafted; with
 * too little spread in the timed token counts for a slope, an extra token is taken to
 * cost 0.35 of a one-token step. Fixed K (spec_fixed) drafts whatever lookup finds. */
#include "engine/engine_internal.h"
#include "genai/mtp.h"

#include <stdlib.h>
#include <string.h>

/* as speculative.c's: the factor a plan must beat a plain step by, the prior cost of an
 * extra token relative to a one-token step, the decay of the timing sums */
static const double GAIN_NEEDED = 1.05, PRIOR_EXTRA_PER_TOKEN = 0.35, TIME_DECAY = 0.95;
/* logits rows for drafted tokens: at most this many bytes of them */
static const double SPEC_ROW_BYTES = 64.0 * 1024 * 1024;

int eng_spec_rows(const eng_engine *e) {
    if (e->o.spec_ngram <= 0 && !e->o.spec_drafter && !e->o.spec_draft_model && !e->o.spec_mtp)
        return 0;
    int k = e->o.spec_max_draft > 0 ? e->o.spec_max_draft : 4;
    if (k > GEN_SPEC_MAX_DRAFT) k = GEN_SPEC_MAX_DRAFT;
    double rows = (double)e->o.max_batch * k, most = SPEC_ROW_BYTES / (4.0 * e->vocab);
    if (rows > most) rows = most > k ? most : k;
    return (int)rows;
}

void eng_spec_timed(eng_engine *e, int T, double seconds) {
    if (!e->spec || T < 1 || T > e->tok_cap || seconds <= 0) return;
    if (!e->spec_seen[T]) { /* the first run of a length makes its plan */
        e->spec_seen[T] = 1;
        return;
    }
    double x = T;
    e->spec_w = TIME_DECAY * e->spec_w + 1;
    e->spec_x = TIME_DECAY * e->spec_x + x;
    e->spec_y = TIME_DECAY * e->spec_y + seconds;
    e->spec_xx = TIME_DECAY * e->spec_xx + x * x;
    e->spec_xy = TIME_DECAY * e->spec_xy + x * seconds;
}

/* The fitted line: *a + *b T seconds for a run of T tokens; false before any timed run. */
static bool time_line(const eng_engine *e, double *a, double *b) {
    if (e->spec_w <= 0) return false;
    double mx = e->spec_x / e->spec_w, my = e->spec_y / e->spec_w;
    double var = e->spec_xx / e->spec_w - mx * mx, cov = e->spec_xy / e->spec_w - mx * my;
    /* a slope needs token counts that differ (a variance of a token or more) */
    double slope = var >= 1 ? cov / var : -1;
    if (!(slope > 0)) /* the prior: t(T) = t1 (1 + 0.35 (T - 1)) through the mean */
        slope = PRIOR_EXTRA_PER_TOKEN * my / (1 + PRIOR_EXTRA_PER_TOKEN * (mx - 1));
    *b = slope;
    *a = my - slope * mx;
    if (*a < slope) *a = slope; /* a run of one token costs at least an extra token */
    return true;
}

/* The weight (in draft tokens) of the other sequences' acceptance in a new sequence's
 * estimate, and the decay of the engine's counts per token tried */
static const double SEED_TRIES = 8, SEED_DECAY = 0.98;

void eng_spec_verified(eng_engine *e, eng_seq *s, int k, int kept, int emitted) {
    gen_spec_verified(&s->spec, k, kept, emitted, 0);
    for (int i = 0; i < kept + (kept < k); i++) {
        e->spec_succ = e->spec_succ * SEED_DECAY + (i < kept);
        e->spec_tries = e->spec_tries * SEED_DECAY + 1;
    }
    pthread_mutex_lock(&e->stats_mu);
    e->st.spec_verifications++;
    e->st.spec_drafted += (uint64_t)k;
    e->st.spec_accepted += (uint64_t)kept;
    pthread_mutex_unlock(&e->stats_mu);
}

/* The seconds a verification of c drafts adds to the step (fitted line a + bT per run):
 * in the flat row, c tokens; a hybrid's is a run of its own of c + 1 tokens instead of a
 * decode row (the decode run goes when it was the last of `plain` rows), and when not
 * every draft is kept (1 - alpha^c) a run of the kept ones again. */
static double extra(const eng_engine *e, double a, double b, double alpha, int c, int plain) {
    if (!e->hybrid) return b * c;
    double keep_all = 1;
    for (int i = 0; i < c; i++) keep_all *= alpha;
    double redo = (1 - keep_all) * (a + b * gen_spec_expected(alpha, c) - b);
    return a + b * c + redo - (plain <= 1 ? a : 0);
}

/* s's estimate, made at its first decode step: it starts from what the other sequences'
 * drafts did (where none was kept, a new request does not pay for trying again; its
 * shadow still can lift it) */
static void spec_start(const eng_engine *e, eng_seq *s) {
    if (s->spec_on) return;
    gen_spec_options so = {.ngram = e->o.spec_ngram - 1, .chained = e->o.spec_chained,
                           .max_draft = e->o.spec_max_draft > 0 ? e->o.spec_max_draft : 4,
                           .adaptive = !e->o.spec_fixed,
                           .draft_model = e->o.spec_draft_model || e->o.spec_mtp};
    gen_spec_init(&s->spec, &so);
    if (e->spec_tries >= 1)
        gen_spec_seed(&s->spec, SEED_TRIES * e->spec_succ / e->spec_tries, SEED_TRIES);
    s->spec_on = true;
}

/* Up to k tokens from the draft model: s's generator of it is brought to s's tokens
 * (rewound to the prefix they share, the rest appended: after a verification, the cut
 * and one new token), then steps greedily. Its time counts as drafting time. */
static int draft_model_tokens(const eng_engine *e, eng_seq *s, int k) {
    /* the draft's own context bounds it (it may be shorter than the target's): past it, no
     * drafts */
    const og_model *dm = e->o.spec_draft_model;
    int ctx = dm->context_length > 0 && dm->context_length < e->context ? dm->context_length
                                                                        : e->context;
    if (s->n_tokens + 1 >= ctx) return 0;
    double t0 = gen_spec_now();
    og_status *st = NULL;
    if (!s->dgen) {
        og_generator_params p = og_generator_params_default(e->o.spec_draft_model);
        int64_t most = (int64_t)(s->n_tokens - s->n_gen) + s->req->s.max_tokens + 1;
        p.max_length = most < ctx ? (int)most : ctx;
        p.all_logits = 0;
        p.min_length = 0;
        p.do_sample = 0;
        p.speculative_ngram_size = 0;
        p.speculative_draft_model = NULL;
        st = og_generator_create(e->o.spec_draft_model, &p, &s->dgen);
    }
    const int32_t *seq = NULL;
    size_t len = 0;
    if (!st) st = og_generator_get_sequence(s->dgen, 0, &seq, &len);
    int c = 0;
    while (!st && (size_t)c < len && c < s->n_tokens && seq[c] == s->tokens[c]) c++;
    if (!st && ((size_t)c < len || og_generator_is_done(s->dgen)))
        st = og_generator_rewind_to(s->dgen, (size_t)c);
    if (!st && c < s->n_tokens)
        st = og_generator_append_tokens(s->dgen, s->tokens + c, (size_t)(s->n_tokens - c));
    int got = 0;
    while (!st && got < k && !og_generator_is_done(s->dgen)) {
        const int32_t *next;
        size_t n = 0;
        st = og_generator_generate_next_token(s->dgen);
        if (!st) st = og_generator_get_next_tokens(s->dgen, &next, &n);
        if (!st && n > 0) s->draft[got++] = next[0];
    }
    if (st) { /* the draft's failure costs the drafts, not the request: it starts over */
        og_status_free(st);
        og_generator_destroy(s->dgen);
        s->dgen = NULL;
        return 0;
    }
    gen_spec_drafted(&s->spec, got, gen_spec_now() - t0);
    return got;
}

/* Up to k tokens from the package's MTP head (genai/mtp.h): s's drafter reads the hidden
 * rows the steps kept for s and brings its head's generator to s's tokens, as the
 * generator's does. Its time counts as drafting time; a failure of the head costs the
 * drafts (it starts over). */
static int mtp_tokens(const eng_engine *e, eng_seq *s, int k) {
    if (!s->mtp) return 0; /* no rows kept for it (out of memory) */
    double t0 = gen_spec_now();
    int64_t most = (int64_t)(s->n_tokens - s->n_gen) + s->req->s.max_tokens + 1;
    int got = 0;
    og_status *st = gen_mtp_draft_seq(s->mtp, e->m, s->tokens, s->n_tokens,
                                      most < e->context ? (int)most : e->context, k, s->draft,
                                      &got);
    if (st) {
        og_status_free(st);
        gen_mtp_forget_head(s->mtp);
        return 0;
    }
    gen_spec_drafted(&s->spec, got, gen_spec_now() - t0);
    return got;
}

/* Drafts of up to max_k tokens after s's text (prompt lookup). */
static int draft_for(const eng_engine *e, eng_seq *s, int max_k) {
    gen_spec_options o = {.ngram = e->o.spec_ngram - 1, .max_draft = max_k,
                          .chained = e->o.spec_chained, .adaptive = !e->o.spec_fixed};
    if (e->o.spec_drafter) {
        int k = e->o.spec_drafter(e->o.spec_drafter_ctx, s->tokens, s->n_tokens, max_k, s->draft);
        return k < 0 ? 0 : k > max_k ? max_k : k;
    }
    return gen_spec_draft(&o, s->tokens, s->n_tokens, max_k, s->draft);
}

int eng_spec_plan(eng_engine *e, int budget) {
    if (!e->spec) return 0;
    int rows_left = e->spec_rows, used = 0;
    int max_k = e->o.spec_max_draft > 0 ? e->o.spec_max_draft : 4;
    if (max_k > GEN_SPEC_MAX_DRAFT) max_k = GEN_SPEC_MAX_DRAFT;
    /* the step as scheduled so far: its decode rows */
    int D = 0;
    for (int i = 0; i < e->n_running; i++) D += e->running[i]->step_n == 1;
    double a = 0, b = 0;
    bool timed = time_line(e, &a, &b);
    double tokens = D, secs = timed ? a + b * D : 0;
    /* drafts leave at least half of the budget after the decode rows to prefill; a
     * hybrid's verifications are runs of their own, as many as its slot copies */
    int room = budget / 2, runs_left = e->hybrid ? e->spec_baks : e->n_running, plain = D;
    for (int i = 0; i < e->n_running && room > 0 && rows_left > 0 && runs_left > 0; i++) {
        eng_seq *s = e->running[i];
        s->n_draft = 0;
        /* a decode step of a sequence that has generated: its one pending token is the
         * last it chose */
        if (s->step_n != 1 || s->n_gen < 1 || s->n_tokens - s->n_cached != 1) continue;
        int k = max_k;
        int by_len = s->req->s.max_tokens - s->n_gen - 1, by_ctx = e->context - s->n_tokens - 1;
        if (k > by_len) k = by_len;
        if (k > by_ctx) k = by_ctx;
        /* a LongRoPE width test: drafts stop before the switch, as the generator's do (a
         * verification runs on one side of it; the step at the switch is plain) */
        int64_t C = e->width_threshold;
        if (C >= 0 && s->n_tokens <= C && k > C - s->n_tokens) k = (int)(C - s->n_tokens);
        if (k > room) k = room;
        if (k > rows_left) k = rows_left;
        if (k <= 0) continue;
        spec_start(e, s);
        /* lookup drafts first (they are free; one not verified is the shadow), a draft
         * model's or an MTP head's after K is chosen (they cost their time) */
        bool model = e->o.spec_draft_model || e->o.spec_mtp;
        if (!model && (k = draft_for(e, s, k)) <= 0) continue;
        int best = 0;
        if (e->o.spec_fixed) {
            best = k;
        } else if (timed) {
            /* the margin: 5 % of one row's share of the step */
            double alpha = s->spec.alpha, best_rate = (tokens + GAIN_NEEDED - 1) / secs;
            for (int c = 1; c <= k; c++) {
                if (c != k && (c & (c - 1))) continue;
                double rate = (tokens + gen_spec_expected(alpha, c) - 1) /
                              (secs + extra(e, a, b, alpha, c, plain) + c * s->spec.t_draft);
                if (rate > best_rate) best_rate = rate, best = c;
            }
        }
        if (model && !e->o.spec_fixed) best = gen_spec_probe(&s->spec, best, 1);
        if (model && best > 0 &&
            (best = e->o.spec_mtp ? mtp_tokens(e, s, best) : draft_model_tokens(e, s, best)) <= 0)
            continue;
        if (best == 0) {
            if (!model) gen_spec_shadow(&s->spec, s->draft, k);
            continue;
        }
        s->n_draft = best;
        s->step_n = 1 + best;
        tokens += gen_spec_expected(s->spec.alpha, best) - 1;
        secs += extra(e, a, b, s->spec.alpha, best, plain);
        plain--;
        runs_left--;
        room -= best;
        rows_left -= best;
        used += best;
    }
    return used;
}
