/* The constraint engine's grammar: a context-free grammar whose terminals are the
 * lexer's lexemes. Front ends (JSON Schema, regex, Lark) build one; the Earley parser
 * runs it. Symbols are int32: a nonterminal is its index (>= 0), a terminal is
 * GSYM_LEX(lexeme id) (< 0). */
#ifndef OG_GUIDE_CFG_H
#define OG_GUIDE_CFG_H

#include "base/status.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef int32_t gsym;
#define GSYM_LEX(id) ((gsym)(-(int32_t)(id) - 1))
#define GSYM_IS_LEX(s) ((s) < 0)
#define GSYM_LEX_ID(s) ((int)(-(s) - 1))

typedef struct gcfg_rule {
    gsym lhs;
    uint32_t len;      /* symbols on the right-hand side (0: the empty rule) */
    const gsym *rhs;
} gcfg_rule;

typedef struct gcfg gcfg;

og_status *gcfg_new(gcfg **out);
void gcfg_free(gcfg *cfg);

/* A new nonterminal; `name` is for messages and need not be unique. */
og_status *gcfg_nonterminal(gcfg *cfg, const char *name, gsym *out);
/* lhs -> rhs[0] .. rhs[n-1] (n may be 0). */
og_status *gcfg_add_rule(gcfg *cfg, gsym lhs, const gsym *rhs, size_t n);
og_status *gcfg_set_start(gcfg *cfg, gsym start);
/* Lexeme `id` may appear between any two lexemes (and is then dropped), as Lark's
 * %ignore. Several calls add several. */
og_status *gcfg_add_ignore(gcfg *cfg, int lexeme);

/* Checks and freezes the grammar: a start symbol is set, every nonterminal has a rule
 * and derives some string, sizes are within limits; computes what the parser needs
 * (nullable nonterminals, rules by left-hand side). Errors name the nonterminal.
 * `n_lexemes` is the lexer's count (terminal ids must be below it). */
og_status *gcfg_freeze(gcfg *cfg, int n_lexemes);

/* Read access once frozen. */
gsym gcfg_start(const gcfg *cfg);
size_t gcfg_n_nonterminals(const gcfg *cfg);
size_t gcfg_n_rules(const gcfg *cfg);
const gcfg_rule *gcfg_rule_at(const gcfg *cfg, size_t i);
/* The rules of nonterminal `nt`: indices [*first, *first + *count) in rule order. */
void gcfg_rules_of(const gcfg *cfg, gsym nt, size_t *first, size_t *count);
bool gcfg_nullable(const gcfg *cfg, gsym nt);
const char *gcfg_name(const gcfg *cfg, gsym nt);
/* The ignored lexemes as a lexeme set of `words` words (NULL when none). */
const uint64_t *gcfg_ignore_set(const gcfg *cfg);
size_t gcfg_n_ignore(const gcfg *cfg);

#endif
