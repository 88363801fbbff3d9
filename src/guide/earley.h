/* The constraint engine's parser: an Earley recognizer over lexemes (cfg.h's terminals),
 * its sets kept as a stack so that a token's lexemes are pushed as they end and popped to
 * roll back or to leave a branch of the token trie's walk. Nullable nonterminals are
 * handled as Aycock and Horspool do (a prediction of a nullable nonterminal also steps
 * over it), so each set is complete once built. Items are deduplicated per set. Bounded:
 * items per set and bytes of parser state are limited, and a scan past a limit is an
 * error that names it. */
#ifndef OG_GUIDE_EARLEY_H
#define OG_GUIDE_EARLEY_H

#include "guide/cfg.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The parser's tables for one frozen grammar: immutable, shared by its parsers. */
typedef struct gearley_tab gearley_tab;

og_status *gearley_tab_new(const gcfg *cfg, int n_lexemes, gearley_tab **out);
void gearley_tab_free(gearley_tab *t);

typedef struct gearley gearley;

/* A parser at the start of the input (its one set predicts the start symbol). */
og_status *gearley_new(const gearley_tab *t, gearley **out);
void gearley_free(gearley *p);
/* Defaults: 20000 items per set, 256 MiB of sets. */
void gearley_set_limits(gearley *p, size_t max_items_per_set, size_t max_bytes);

/* Sets on the stack (1 at the start: one more per scanned lexeme). */
size_t gearley_depth(const gearley *p);
/* Drops the sets above `depth` (1 <= depth <= gearley_depth). */
void gearley_pop_to(gearley *p, size_t depth);
/* Scans, from the top set, one lexeme that may be any of `lexemes` (a lexeme set: the
 * lexer could not tell them apart) and pushes the resulting set. *pushed is false, and
 * nothing changes, when no item of the top set expects any of them. */
og_status *gearley_scan(gearley *p, const uint64_t *lexemes, bool *pushed);
/* The lexemes the top set can scan next (a lexeme set). */
const uint64_t *gearley_expected(const gearley *p);
/* True when some lexeme of `lexemes` is expected by the top set. */
bool gearley_expects_any(const gearley *p, const uint64_t *lexemes);
/* The start symbol derives everything scanned so far. */
bool gearley_complete(const gearley *p);
/* A word the caller keeps with the top set (the matcher's lexer start state there);
 * UINT32_MAX in a newly pushed set. */
uint32_t *gearley_slot(gearley *p);
/* Words of the lexeme sets. */
size_t gearley_words(const gearley_tab *t);

#endif
