/* Guidance in the generator (og_generator_params_set_guidance): the grammar compiled when
 * the generator is made, one matcher per row, each step's mask applied to the row's logits
 * before the processors and the choice, the chosen token consumed, and the matchers
 * following rewinds and appends. The decode loop (generator.c) calls in here. */
#include "genai/generator.h"

#include "genai/guidance.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

og_status *og_generator_params_set_guidance(og_generator_params *p, const char *type,
                                            const char *data) {
    if (!p) return og_errorf(OG_ERR_INVALID_ARGUMENT, "og_generator_params_set_guidance: NULL params");
    if (p->struct_size < offsetof(og_generator_params, guidance_data) + sizeof p->guidance_data)
        return og_errorf(OG_ERR_INVALID_ARGUMENT, "og_generator_params.struct_size is %zu, too "
                         "small for guidance; fill params from og_generator_params_default()",
                         p->struct_size);
    if (!type) {
        p->guidance_type = p->guidance_data = NULL;
        return NULL;
    }
    guide_kind kind;
    OG_TRY(guide_kind_parse(type, &kind));
    if (kind != GUIDE_JSON_OBJECT && !data)
        return og_errorf(OG_ERR_INVALID_ARGUMENT, "guidance type '%s' needs its text (data is "
                         "NULL)", type);
    p->guidance_type = type;
    p->guidance_data = data;
    return NULL;
}

og_status *gen_guide_init(og_generator *g) {
    const og_generator_params *p = &g->p;
    if (!p->guidance_type) return NULL;
    guide_kind kind;
    OG_TRY(guide_kind_parse(p->guidance_type, &kind));
    if (p->num_beams > 1)
        return og_errorf(OG_ERR_UNSUPPORTED, "generator: guidance ('%s') with beam search "
                         "(num_beams %d) is not supported; use num_beams 1 (greedy or "
                         "sampling)", p->guidance_type, p->num_beams);
    OG_TRY(gen_guidance_grammar(g->m, kind, p->guidance_data, &g->grammar));
    /* the params' strings were borrowed until now */
    g->p.guidance_type = guide_kind_name(kind);
    g->p.guidance_data = NULL;
    size_t V = (size_t)g->m->vocab_size;
    g->matchers = calloc((size_t)g->rows, sizeof *g->matchers);
    g->gstart = calloc((size_t)g->rows, sizeof *g->gstart);
    g->gmask = calloc(guide_mask_words(V), sizeof *g->gmask);
    if (!g->matchers || !g->gstart || !g->gmask) return og_oom();
    /* the stop ids the model can produce (a config may name one past its logits) */
    int32_t *stops = malloc(sizeof *stops * (size_t)(g->m->n_eos + 1));
    if (!stops) return og_oom();
    size_t n_stop = 0;
    for (int i = 0; i < g->m->n_eos; i++)
        if (g->m->eos_ids[i] >= 0 && (size_t)g->m->eos_ids[i] < V) stops[n_stop++] = g->m->eos_ids[i];
    g->guide_can_stop = n_stop > 0;
    og_status *st = NULL;
    for (int r = 0; r < g->rows && !st; r++)
        st = guide_matcher_new(g->grammar, stops, n_stop, &g->matchers[r]);
    free(stops);
    return st;
}

bool gen_guide_closed(const og_generator *g, int r) {
    return !g->guide_can_stop && guide_matcher_stopped(g->matchers[r]);
}

void gen_guide_free(og_generator *g) {
    for (int r = 0; g->matchers && r < g->rows; r++) guide_matcher_free(g->matchers[r]);
    free(g->matchers);
    free(g->gstart);
    free(g->gmask);
    guide_grammar_unref(g->grammar);
}

static bool allowed(const og_generator *g, int32_t t) {
    return t >= 0 && (g->gmask[t / 32] >> (t % 32)) & 1u;
}

og_status *gen_guide_mask(og_generator *g, int r, float *row) {
    const og_model *m = g->m;
    int V = m->vocab_size;
    OG_TRY(guide_matcher_mask(g->matchers[r], g->gmask));
    size_t n_allowed = guide_mask_apply(g->gmask, row, (size_t)V);
    if (n_allowed == 0)
        return og_errorf(OG_ERR_RUNTIME, "guidance: no token is allowed after %zu tokens of "
                         "guided output (row %d)", guide_matcher_consumed(g->matchers[r]), r);
    int n_stop = 0;
    for (int i = 0; i < m->n_eos; i++) {
        int32_t e = m->eos_ids[i];
        bool again = false; /* a config may list an id twice */
        for (int k = 0; k < i; k++) again |= m->eos_ids[k] == e;
        n_stop += !again && e < V && allowed(g, e);
    }
    g->guide_content = n_allowed > (size_t)n_stop;
    return NULL;
}

bool gen_guide_any_allowed(const og_generator *g, const float *row) {
    for (int t = 0; t < g->m->vocab_size; t++)
        if (allowed(g, t) && row[t] > -INFINITY) return true;
    return false;
}

og_status *gen_guide_take(og_generator *g, int r, const float *row, int32_t *t) {
    if (!allowed(g, *t)) {
        /* every allowed logit is -inf or NaN (the model's own numbers), or sampling's
         * last resort fell on a token of probability 0: the first allowed token of largest
         * logit keeps the output valid (gen_guide_mask made sure there is one) */
        int32_t best = -1;
        for (int i = 0; i < g->m->vocab_size; i++)
            if (allowed(g, i) && (best < 0 || row[i] > row[best])) best = i;
        *t = best;
    }
    return guide_matcher_consume(g->matchers[r], *t);
}

og_status *gen_guide_restart(og_generator *g) {
    for (int r = 0; g->matchers && r < g->rows; r++) {
        guide_matcher *m = g->matchers[r];
        OG_TRY(guide_matcher_rollback(m, guide_matcher_consumed(m)));
        g->gstart[r] = g->len[r];
    }
    return NULL;
}

og_status *gen_guide_rewind(og_generator *g, int new_length) {
    for (int r = 0; g->matchers && r < g->rows; r++) {
        guide_matcher *m = g->matchers[r];
        size_t consumed = guide_matcher_consumed(m);
        if (new_length < g->gstart[r]) {
            /* back into what came before the guided output: it starts again there */
            OG_TRY(guide_matcher_rollback(m, consumed));
            g->gstart[r] = new_length;
            continue;
        }
        size_t keep = (size_t)(new_length - g->gstart[r]);
        if (consumed > keep) OG_TRY(guide_matcher_rollback(m, consumed - keep));
    }
    return NULL;
}
