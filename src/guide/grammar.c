/* Compiled guidance (guide.h): the kinds' names, compilation through the front ends,
 * and the grammar's lifetime. */
#include "guide/front.h"
#include "guide/grammar.h"

#include <stdlib.h>
#include <string.h>

static const char *const kind_names[] = {
    [GUIDE_JSON_SCHEMA] = "json_schema",
    [GUIDE_JSON_OBJECT] = "json_object",
    [GUIDE_REGEX] = "regex",
    [GUIDE_LARK] = "lark_grammar",
};
#define N_KINDS (sizeof kind_names / sizeof *kind_names)

og_status *guide_kind_parse(const char *name, guide_kind *out) {
    for (size_t i = 0; i < N_KINDS; i++)
        if (name && !strcmp(name, kind_names[i])) {
            *out = (guide_kind)i;
            return NULL;
        }
    return og_errorf(OG_ERR_INVALID_ARGUMENT,
                     "unknown guidance type '%s' (known: json_schema, json_object, regex, "
                     "lark_grammar)", name ? name : "(null)");
}

const char *guide_kind_name(guide_kind kind) {
    return (unsigned)kind < N_KINDS ? kind_names[kind] : "?";
}

/* Where the per-state mask caches stop growing (then they are dropped and rebuilt). */
#define GUIDE_CACHE_LIMIT ((size_t)128 << 20)

static og_status *front_end(guide_kind kind, const char *text, size_t len,
                            const guide_vocab *vocab, glex *lex, gcfg *cfg) {
    static const char object_schema[] = "{\"type\":\"object\"}";
    switch (kind) {
    case GUIDE_JSON_SCHEMA: return guide_front_json_schema(text, len, lex, cfg);
    case GUIDE_JSON_OBJECT:
        return guide_front_json_schema(object_schema, sizeof object_schema - 1, lex, cfg);
    case GUIDE_REGEX: return guide_front_regex(text, len, lex, cfg);
    case GUIDE_LARK: return guide_front_lark(text, len, vocab, lex, cfg);
    }
    return og_errorf(OG_ERR_INVALID_ARGUMENT, "guide: unknown guidance kind %d", (int)kind);
}

/* The masks of the grammar's token-set lexemes (grammar.h's tok_lex, tok_mask). */
static og_status *token_sets(guide_grammar *g) {
    int n_lex = glex_count(g->lex);
    size_t words = guide_mask_words(g->vocab->n), lw = gearley_words(g->tab);
    for (int id = 0; id < n_lex; id++) {
        size_t pairs = glex_token_pairs(g->lex, id);
        if (!pairs) continue;
        if (!g->tok_mask) {
            g->tok_mask = calloc((size_t)n_lex, sizeof *g->tok_mask);
            g->tok_lex = calloc(lw ? lw : 1, sizeof *g->tok_lex);
            g->tok_any = calloc(words ? words : 1, sizeof *g->tok_any);
            if (!g->tok_mask || !g->tok_lex || !g->tok_any) return og_oom();
        }
        uint32_t *mask = g->tok_mask[id] = calloc(words ? words : 1, sizeof *mask);
        if (!mask) return og_oom();
        g->tok_lex[id / 64] |= 1ull << (id % 64);
        g->n_tok++;
        for (size_t i = 0; i < pairs; i++) {
            uint32_t lo = glex_token_range_at(g->lex, id, i, false);
            uint32_t hi = glex_token_range_at(g->lex, id, i, true);
            for (uint64_t t = lo; t <= hi && t < g->vocab->n; t++) {
                mask[t >> 5] |= 1u << (t & 31);
                g->tok_any[t >> 5] |= 1u << (t & 31);
            }
        }
    }
    return NULL;
}

og_status *guide_grammar_from(glex *lex, gcfg *cfg, const guide_vocab *vocab,
                              guide_grammar **out) {
    guide_grammar *g = calloc(1, sizeof *g);
    if (!g || pthread_mutex_init(&g->lock, NULL)) {
        free(g);
        glex_free(lex);
        gcfg_free(cfg);
        return og_errorf(OG_ERR_OUT_OF_MEMORY, "guide: cannot create a grammar");
    }
    g->refs = 1;
    g->lex = lex;
    g->cfg = cfg;
    g->vocab = vocab;
    g->cache_limit = GUIDE_CACHE_LIMIT;
    og_status *st = gcfg_freeze(cfg, glex_count(lex));
    if (!st) st = gearley_tab_new(cfg, glex_count(lex), &g->tab);
    if (!st) st = token_sets(g);
    for (int k = 0; k < GUIDE_N_SLICES && !st; k++) {
        int id;
        st = glex_new(&g->slice[k]);
        if (!st)
            st = glex_add_regex(g->slice[k], guide_slice_re[k], strlen(guide_slice_re[k]),
                                "slice", &id);
    }
    if (st) {
        guide_grammar_unref(g);
        return st;
    }
    *out = g;
    return NULL;
}

og_status *guide_grammar_compile(guide_kind kind, const char *text, size_t len,
                                 const guide_vocab *vocab, guide_grammar **out) {
    if (!vocab) return og_errorf(OG_ERR_INVALID_ARGUMENT, "guide: no vocabulary");
    if (!text && kind != GUIDE_JSON_OBJECT)
        return og_errorf(OG_ERR_INVALID_ARGUMENT, "guide: no %s text", guide_kind_name(kind));
    glex *lex = NULL;
    gcfg *cfg = NULL;
    og_status *st = glex_new(&lex);
    if (!st) st = gcfg_new(&cfg);
    if (!st) st = front_end(kind, text, len, vocab, lex, cfg);
    if (st) {
        glex_free(lex);
        gcfg_free(cfg);
    } else {
        st = guide_grammar_from(lex, cfg, vocab, out);
    }
    return st ? og_status_wrap(st, "%s", guide_kind_name(kind)) : NULL;
}

guide_grammar *guide_grammar_ref(guide_grammar *g) {
    if (g) __atomic_add_fetch(&g->refs, 1, __ATOMIC_RELAXED);
    return g;
}

void guide_grammar_unref(guide_grammar *g) {
    if (!g || __atomic_sub_fetch(&g->refs, 1, __ATOMIC_ACQ_REL) > 0) return;
    guide_cache_drop(g);
    free(g->cache);
    for (int id = 0; g->tok_mask && id < glex_count(g->lex); id++) free(g->tok_mask[id]);
    free(g->tok_mask);
    free(g->tok_lex);
    free(g->tok_any);
    gearley_tab_free(g->tab);
    gcfg_free(g->cfg);
    glex_free(g->lex);
    for (int k = 0; k < GUIDE_N_SLICES; k++) {
        glex_free(g->slice[k]);
        free(g->cut[k]);
        free(g->cut_next[k]);
    }
    pthread_mutex_destroy(&g->lock);
    free(g);
}
