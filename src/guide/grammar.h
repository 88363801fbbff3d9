/* The compiled grammar's insides (guide.h's guide_grammar), shared by grammar.c, which
 * compiles and owns it, and matcher.c, which walks it. */
#ifndef OG_GUIDE_GRAMMAR_H
#define OG_GUIDE_GRAMMAR_H

#include "guide/cfg.h"
#include "guide/earley.h"
#include "guide/guide.h"
#include "guide/lexer.h"
#include "guide/vocab.h"

#include <pthread.h>

/* A place in the token trie where, walking from some lexer state, a lexeme ends inside a
 * token: the byte into `node` cannot extend it, and `state` (the lexer state before that
 * byte) accepts lexemes. */
typedef struct gend {
    uint32_t node, state;
} gend;

/* What the trie walk from lexer state s gives without the parser: the tokens whose bytes
 * all stay inside the lexeme (guide_mask_words words), and the places where a lexeme ends
 * mid-token, grouped by `state`. */
typedef struct gcache {
    uint32_t *bits;
    gend *ends;
    size_t n_ends;
    size_t bytes;
} gcache;

struct guide_grammar {
    glex *lex;
    gcfg *cfg;
    gearley_tab *tab;
    const guide_vocab *vocab;
    glex *slice[GUIDE_N_SLICES]; /* the vocabulary's slices (vocab.h), a DFA each */
    pthread_mutex_t lock; /* taken once per matcher call: the lexer and caches grow lazily */
    int refs;
    /* Per lexer state (indexed by state id), built on first use. When the entries would
     * pass `cache_limit` bytes they are all dropped and rebuilt as needed: states in use
     * come back within one mask each. */
    gcache **cache;
    size_t cache_cap, cache_bytes, cache_limit;
    size_t cache_flushes;
    /* Per lexer state and slice, whether the state's fate along the slice's strings is a
     * count of characters (matcher.c, slice_cut): 0 not known yet, 1 it is not, 2 + R
     * every string of at most R characters stays inside the lexeme and every longer one
     * dies, R = max_chars meaning all stay. */
    uint32_t *cut[GUIDE_N_SLICES];
    /* and one character on from it (slice_char_step): 0 not known yet, 1 mixed, 2 every
     * character dies, 3 + s every one leads to state s */
    uint32_t *cut_next[GUIDE_N_SLICES];
    size_t cut_cap;
    /* Token-set lexemes (Lark's special tokens, glex_add_tokens): which lexemes they are
     * (a lexeme set), each one's tokens as a mask (NULL for other lexemes), and the union
     * of those masks; n_tok of them. */
    uint64_t *tok_lex;
    uint32_t **tok_mask;
    uint32_t *tok_any;
    size_t n_tok;
};

/* A grammar from a lexer and a grammar built by hand (tests, benchmarks): takes both
 * (frees them on failure too), freezes the grammar. */
og_status *guide_grammar_from(glex *lex, gcfg *cfg, const guide_vocab *vocab,
                              guide_grammar **out);

/* The limits of a matcher's parser (gearley_set_limits; tests). */
void guide_matcher_parser_limits(guide_matcher *m, size_t max_items_per_set, size_t max_bytes);

/* Drops every per-state cache entry (matcher.c). */
void guide_cache_drop(guide_grammar *g);

#endif
