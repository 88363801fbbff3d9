/* Choosing a request's next token from its logits: greedy or sampling (temperature,
 * top-k, top-p, the request's own seeded generator) with the search module's functions,
 * and the log-probabilities a request asked for (of the model's distribution, before
 * temperature and truncation, as OpenAI reports them). */
#include "engine/engine_internal.h"

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

void eng_choose(eng_engine *e, eng_seq *s, const float *logits, eng_token *t) {
    const eng_sampling *sp = &s->req->s;
    int V = e->vocab;
    memset(t, 0, sizeof *t);
    if (sp->sample && sp->temperature > 0 && sp->top_k != 1)
        t->id = gen_sample(logits, V, sp->top_k, sp->top_p, sp->temperature, &s->rng, e->work);
    else
        t->id = gen_argmax(logits, V);
    if (sp->logprobs < 0) return;
    memcpy(e->lp, logits, sizeof(float) * (size_t)V);
    gen_log_softmax(e->lp, V);
    t->logprob = e->lp[t->id];
    eng_choose_top(e, s, t);
}

void eng_choose_top(eng_engine *e, const eng_seq *s, eng_token *t) {
    int k = s->req->s.logprobs < ENG_MAX_LOGPROBS ? s->req->s.logprobs : ENG_MAX_LOGPROBS;
    t->n_top = k > 0 ? top_entries(e->lp, e->vocab, k, t->top_ids, t->top_logprobs) : 0;
}
