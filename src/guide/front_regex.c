/* The regex front end (front.h): the whole output is one lexeme, the expression. */
#include "guide/front.h"

og_status *guide_front_regex(const char *re, size_t len, glex *lex, gcfg *cfg) {
    int id;
    OG_TRY(glex_add_regex(lex, re, len, "regex", &id));
    gsym start, rhs = GSYM_LEX(id);
    OG_TRY(gcfg_nonterminal(cfg, "regex", &start));
    OG_TRY(gcfg_add_rule(cfg, start, &rhs, 1));
    return gcfg_set_start(cfg, start);
}
