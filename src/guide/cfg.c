/* The constraint engine's grammar (cfg.h): rules as added by a front end, then frozen —
 * checked (a start, a rule for every nonterminal, every nonterminal productive, within
 * the limits) and laid out for the Earley parser (rules grouped by left-hand side,
 * nullable nonterminals, the ignored lexemes as a set). */
#include "guide/cfg.h"

#include <stdlib.h>
#include <string.h>

/* Bounds that keep a pathological grammar from costing unbounded time or memory; the
 * front ends' own limits (schema depth, repetition counts) come first. */
#define GCFG_MAX_NONTERMINALS (1u << 20)
#define GCFG_MAX_RULES (1u << 21)
#define GCFG_MAX_SYMBOLS (1u << 23) /* right-hand side symbols over all rules */

typedef struct raw_rule {
    gsym lhs;
    uint32_t len;
    size_t off; /* into syms */
} raw_rule;

struct gcfg {
    char **names;
    size_t n_nt, cap_nt;
    raw_rule *raw;
    size_t n_rules, cap_rules;
    gsym *syms;
    size_t n_syms, cap_syms;
    int *ignore;
    size_t n_ignore, cap_ignore;
    gsym start;
    bool has_start, frozen;
    /* Frozen: */
    gcfg_rule *rules;      /* grouped by lhs, in the order added within a group */
    size_t *first;         /* per nonterminal: its first rule; first[n_nt] = n_rules */
    bool *nullable;
    uint64_t *ignore_set;  /* NULL when no ignore lexeme */
};

static bool grow(void **p, size_t *cap, size_t need, size_t elem) {
    if (need <= *cap) return true;
    size_t c = *cap ? *cap * 2 : 16;
    while (c < need) c *= 2;
    void *q = realloc(*p, c * elem);
    if (!q) return false;
    *p = q;
    *cap = c;
    return true;
}

og_status *gcfg_new(gcfg **out) {
    gcfg *c = calloc(1, sizeof *c);
    if (!c) return og_oom();
    *out = c;
    return NULL;
}

void gcfg_free(gcfg *cfg) {
    if (!cfg) return;
    for (size_t i = 0; i < cfg->n_nt; i++) free(cfg->names[i]);
    free(cfg->names);
    free(cfg->raw);
    free(cfg->syms);
    free(cfg->ignore);
    free(cfg->rules);
    free(cfg->first);
    free(cfg->nullable);
    free(cfg->ignore_set);
    free(cfg);
}

static og_status *not_frozen(const gcfg *cfg, const char *what) {
    if (cfg->frozen)
        return og_errorf(OG_ERR_INVALID_ARGUMENT, "grammar: %s after the grammar was frozen", what);
    return NULL;
}

og_status *gcfg_nonterminal(gcfg *cfg, const char *name, gsym *out) {
    OG_TRY(not_frozen(cfg, "a new nonterminal"));
    if (cfg->n_nt >= GCFG_MAX_NONTERMINALS)
        return og_errorf(OG_ERR_INVALID_ARGUMENT,
                         "grammar: more than %u nonterminals (the limit) at '%s'",
                         GCFG_MAX_NONTERMINALS, name ? name : "?");
    if (!grow((void **)&cfg->names, &cfg->cap_nt, cfg->n_nt + 1, sizeof *cfg->names))
        return og_oom();
    char *copy = strdup(name ? name : "");
    if (!copy) return og_oom();
    cfg->names[cfg->n_nt] = copy;
    *out = (gsym)cfg->n_nt++;
    return NULL;
}

static og_status *check_sym(const gcfg *cfg, gsym s, const char *where) {
    if (!GSYM_IS_LEX(s) && (size_t)s >= cfg->n_nt)
        return og_errorf(OG_ERR_INVALID_ARGUMENT, "grammar: %s: unknown nonterminal %d", where,
                         (int)s);
    return NULL;
}

og_status *gcfg_add_rule(gcfg *cfg, gsym lhs, const gsym *rhs, size_t n) {
    OG_TRY(not_frozen(cfg, "a new rule"));
    if (GSYM_IS_LEX(lhs) || (size_t)lhs >= cfg->n_nt)
        return og_errorf(OG_ERR_INVALID_ARGUMENT, "grammar: a rule's left side %d is not a nonterminal",
                         (int)lhs);
    for (size_t i = 0; i < n; i++) OG_TRY(check_sym(cfg, rhs[i], cfg->names[lhs]));
    if (cfg->n_rules >= GCFG_MAX_RULES)
        return og_errorf(OG_ERR_INVALID_ARGUMENT, "grammar: more than %u rules (the limit) at '%s'",
                         GCFG_MAX_RULES, cfg->names[lhs]);
    if (n > GCFG_MAX_SYMBOLS - cfg->n_syms)
        return og_errorf(OG_ERR_INVALID_ARGUMENT,
                         "grammar: more than %u symbols in rules (the limit) at '%s'",
                         GCFG_MAX_SYMBOLS, cfg->names[lhs]);
    if (!grow((void **)&cfg->raw, &cfg->cap_rules, cfg->n_rules + 1, sizeof *cfg->raw) ||
        !grow((void **)&cfg->syms, &cfg->cap_syms, cfg->n_syms + n, sizeof *cfg->syms))
        return og_oom();
    if (n) memcpy(cfg->syms + cfg->n_syms, rhs, n * sizeof *rhs);
    cfg->raw[cfg->n_rules++] = (raw_rule){lhs, (uint32_t)n, cfg->n_syms};
    cfg->n_syms += n;
    return NULL;
}

og_status *gcfg_set_start(gcfg *cfg, gsym start) {
    OG_TRY(not_frozen(cfg, "setting the start"));
    if (GSYM_IS_LEX(start) || (size_t)start >= cfg->n_nt)
        return og_errorf(OG_ERR_INVALID_ARGUMENT, "grammar: the start %d is not a nonterminal",
                         (int)start);
    cfg->start = start;
    cfg->has_start = true;
    return NULL;
}

og_status *gcfg_add_ignore(gcfg *cfg, int lexeme) {
    OG_TRY(not_frozen(cfg, "an ignored lexeme"));
    if (lexeme < 0) return og_errorf(OG_ERR_INVALID_ARGUMENT, "grammar: ignored lexeme %d", lexeme);
    for (size_t i = 0; i < cfg->n_ignore; i++)
        if (cfg->ignore[i] == lexeme) return NULL;
    if (!grow((void **)&cfg->ignore, &cfg->cap_ignore, cfg->n_ignore + 1, sizeof *cfg->ignore))
        return og_oom();
    cfg->ignore[cfg->n_ignore++] = lexeme;
    return NULL;
}

/* A fixpoint over the rules: `flag[A]` becomes true when some rule of A has every
 * right-hand symbol satisfying it (terminals count as `terminals_ok`). Nullable: no
 * terminal allowed; productive: terminals allowed. Rounds are bounded by the number of
 * nonterminals, each round linear in the grammar. */
static void fixpoint(gcfg *cfg, bool *flag, bool terminals_ok) {
    bool changed = true;
    while (changed) {
        changed = false;
        for (size_t r = 0; r < cfg->n_rules; r++) {
            const gcfg_rule *ru = &cfg->rules[r];
            if (flag[ru->lhs]) continue;
            bool all = true;
            for (uint32_t i = 0; i < ru->len && all; i++) {
                gsym s = ru->rhs[i];
                all = GSYM_IS_LEX(s) ? terminals_ok : flag[s];
            }
            if (all) {
                flag[ru->lhs] = true;
                changed = true;
            }
        }
    }
}

og_status *gcfg_freeze(gcfg *cfg, int n_lexemes) {
    if (cfg->frozen) return NULL;
    if (!cfg->has_start) return og_errorf(OG_ERR_INVALID_ARGUMENT, "grammar: no start symbol");
    for (size_t i = 0; i < cfg->n_syms; i++)
        if (GSYM_IS_LEX(cfg->syms[i]) && GSYM_LEX_ID(cfg->syms[i]) >= n_lexemes)
            return og_errorf(OG_ERR_INVALID_ARGUMENT, "grammar: lexeme %d is not in the lexer (%d lexemes)",
                             GSYM_LEX_ID(cfg->syms[i]), n_lexemes);
    for (size_t i = 0; i < cfg->n_ignore; i++)
        if (cfg->ignore[i] >= n_lexemes)
            return og_errorf(OG_ERR_INVALID_ARGUMENT, "grammar: ignored lexeme %d is not in the lexer",
                             cfg->ignore[i]);
    size_t n = cfg->n_nt;
    cfg->first = calloc(n + 1, sizeof *cfg->first);
    cfg->rules = malloc((cfg->n_rules ? cfg->n_rules : 1) * sizeof *cfg->rules);
    cfg->nullable = calloc(n ? n : 1, sizeof *cfg->nullable);
    bool *productive = calloc(n ? n : 1, sizeof *productive);
    if (!cfg->first || !cfg->rules || !cfg->nullable || !productive) {
        free(productive);
        return og_oom();
    }
    /* Counting sort by left side keeps each group in the order its rules were added. */
    for (size_t r = 0; r < cfg->n_rules; r++) cfg->first[cfg->raw[r].lhs + 1]++;
    for (size_t i = 0; i < n; i++) cfg->first[i + 1] += cfg->first[i];
    size_t *fill = calloc(n ? n : 1, sizeof *fill);
    if (!fill) {
        free(productive);
        return og_oom();
    }
    for (size_t r = 0; r < cfg->n_rules; r++) {
        const raw_rule *rr = &cfg->raw[r];
        cfg->rules[cfg->first[rr->lhs] + fill[rr->lhs]++] =
            (gcfg_rule){rr->lhs, rr->len, rr->len ? cfg->syms + rr->off : NULL};
    }
    free(fill);
    og_status *st = NULL;
    for (size_t i = 0; i < n && !st; i++)
        if (cfg->first[i] == cfg->first[i + 1])
            st = og_errorf(OG_ERR_INVALID_ARGUMENT, "grammar: nonterminal '%s' has no rule",
                           cfg->names[i]);
    if (!st) {
        fixpoint(cfg, cfg->nullable, false);
        fixpoint(cfg, productive, true);
        for (size_t i = 0; i < n && !st; i++)
            if (!productive[i])
                st = og_errorf(OG_ERR_INVALID_ARGUMENT,
                               "grammar: nonterminal '%s' derives no string (every rule recurses "
                               "without end)", cfg->names[i]);
    }
    free(productive);
    if (!st && cfg->n_ignore) {
        size_t words = ((size_t)n_lexemes + 63) / 64;
        cfg->ignore_set = calloc(words ? words : 1, sizeof *cfg->ignore_set);
        if (!cfg->ignore_set) st = og_oom();
        for (size_t i = 0; !st && i < cfg->n_ignore; i++)
            cfg->ignore_set[cfg->ignore[i] / 64] |= 1ull << (cfg->ignore[i] % 64);
    }
    if (st) {
        free(cfg->first);
        free(cfg->rules);
        free(cfg->nullable);
        cfg->first = NULL;
        cfg->rules = NULL;
        cfg->nullable = NULL;
        return st;
    }
    cfg->frozen = true;
    return NULL;
}

gsym gcfg_start(const gcfg *cfg) { return cfg->start; }
size_t gcfg_n_nonterminals(const gcfg *cfg) { return cfg->n_nt; }
size_t gcfg_n_rules(const gcfg *cfg) { return cfg->n_rules; }
const gcfg_rule *gcfg_rule_at(const gcfg *cfg, size_t i) { return &cfg->rules[i]; }

void gcfg_rules_of(const gcfg *cfg, gsym nt, size_t *first, size_t *count) {
    *first = cfg->first[nt];
    *count = cfg->first[nt + 1] - cfg->first[nt];
}

bool gcfg_nullable(const gcfg *cfg, gsym nt) { return cfg->nullable[nt]; }
const char *gcfg_name(const gcfg *cfg, gsym nt) {
    return nt >= 0 && (size_t)nt < cfg->n_nt ? cfg->names[nt] : "?";
}
const uint64_t *gcfg_ignore_set(const gcfg *cfg) { return cfg->ignore_set; }
size_t gcfg_n_ignore(const gcfg *cfg) { return cfg->n_ignore; }
