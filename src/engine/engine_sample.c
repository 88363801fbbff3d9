/* Choosing a request's next token from its logits: greedy or sampling (temperature,
 * top-k, top-p, the request's own seeded generator) with the search module's functions,
 * and the log-probabilities a request asked for (of the model's distribution, before
 * temperature and truncation, as OpenAI reports them). Under guidance the matcher's
 * mask comes first: the tokens it does not allow are set to -inf before greedy or
 * sampling see the row, so top-k and top-p choose among allowed tokens only. */
#include "engine/engine_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

bool eng_is_eos(const eng_engine *e, const eng_seq *s, int32_t id) {
    if (s->req->s.ignore_eos) return false;
    for (int i = 0; i < e->m->n_eos; i++)
        if (e->m->eos_ids[i] == id) return true;
    return false;
}

/* The k largest of row[0..n) into ids/vals, largest first (ties: lower id first). */
static int top_entries(const float *row, int n, int k, int32_t *ids, float *vals) {
    int got = 0;
    for (int i = 0; i < n; i++) {
        float v = row[i];
        if (got == k && !(v > vals[k - 1])) continue;
        int at = got < k ? got++ : k - 1;
        while (at > 0 && v > vals[at - 1]) {
            vals[at] = vals[at - 1];
            ids[at] = ids[at - 1];
            at--;
        }
        vals[at] = v;
        ids[at] = i;
    }
    return got;
}

/* Sets the logits of the tokens s's matcher does not allow to -inf, in place, a mask word
 * (32 tokens) at a time. */
static og_status *apply_mask(eng_engine *e, eng_seq *s, float *row) {
    size_t V = (size_t)e->vocab, G = s->req->s.guide_tokens;
    size_t words = guide_mask_words(G > V ? G : V);
    if (words > e->gmask_words) {
        uint32_t *m = realloc(e->gmask, sizeof *m * words);
        if (!m) return og_oom();
        e->gmask = m;
        e->gmask_words = words;
    }
    memset(e->gmask, 0, sizeof *e->gmask * words); /* the model's ids past the grammar's
                                                      vocabulary stay disallowed */
    OG_TRY(guide_matcher_mask(s->matcher, e->gmask));
    if (!guide_mask_apply(e->gmask, row, V))
        return og_errorf(OG_ERR_RUNTIME, "constrained decoding: no token of the model's "
                         "vocabulary continues the output after %zu tokens",
                         guide_matcher_consumed(s->matcher));
    return NULL;
}

og_status *eng_choose(eng_engine *e, eng_seq *s, float *logits, eng_token *t) {
    const eng_sampling *sp = &s->req->s;
    int V = e->vocab;
    memset(t, 0, sizeof *t);
    if (sp->logprobs >= 0) { /* of the model's distribution: before the mask */
        memcpy(e->lp, logits, sizeof(float) * (size_t)V);
        gen_log_softmax(e->lp, V);
    }
    if (s->matcher && s->think == THINK_IN) { /* reasoning: free text, but it must end */
        for (int i = 0; i < e->m->n_eos; i++)
            if (e->m->eos_ids[i] >= 0 && e->m->eos_ids[i] < V) logits[e->m->eos_ids[i]] = -INFINITY;
    } else if (s->matcher) {
        int32_t open = s->think == THINK_MAY && sp->think_open >= 0 && sp->think_open < V
                           ? sp->think_open : -1;
        float keep = open >= 0 ? logits[open] : 0;
        OG_TRY(apply_mask(e, s, logits));
        if (open >= 0) logits[open] = keep; /* the reasoning block may open instead */
    }
    if (sp->sample && sp->temperature > 0 && sp->top_k != 1)
        t->id = gen_sample(logits, V, sp->top_k, sp->top_p, sp->temperature, &s->rng, e->work);
    else
        t->id = gen_argmax(logits, V);
    /* sampling's last resort (rounding past the cumulative sum) is its least likely
     * candidate, which may be a disallowed one */
    if (s->matcher && isinf(logits[t->id]) && logits[t->id] < 0) t->id = gen_argmax(logits, V);
    if (sp->logprobs < 0) return NULL;
    t->logprob = e->lp[t->id];
    eng_choose_top(e, s, t);
    return NULL;
}

og_status *eng_guide_advance(eng_seq *s, int32_t id, bool *done) {
    *done = false;
    if (!s->matcher) return NULL;
    const eng_sampling *sp = &s->req->s;
    if (s->think == THINK_MAY) {
        s->think = id == sp->think_open ? THINK_IN : THINK_DONE;
        if (s->think == THINK_IN) return NULL;
    } else if (s->think == THINK_IN) {
        if (id == sp->think_close) s->think = THINK_DONE;
        return NULL;
    }
    OG_TRY(guide_matcher_consume(s->matcher, id));
    *done = guide_matcher_stopped(s->matcher);
    return NULL;
}

void eng_choose_top(eng_engine *e, const eng_seq *s, eng_token *t) {
    int k = s->req->s.logprobs < ENG_MAX_LOGPROBS ? s->req->s.logprobs : ENG_MAX_LOGPROBS;
    t->n_top = k > 0 ? top_entries(e->lp, e->vocab, k, t->top_ids, t->top_logprobs) : 0;
}
