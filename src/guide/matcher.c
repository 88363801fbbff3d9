/* The matcher (guide.h): one sequence's place in the language — the Earley stack, the
 * lexer state of the lexeme being read — and the token masks.
 *
 * Lexing is greedy and contextual, as llguidance's: a lexeme starts in the lexer state
 * that allows what the parser can scan next plus, between lexemes, the ignored lexemes;
 * it ends only when the next byte cannot extend it, and then the parser scans the
 * lexemes the state accepts (an ignored one leaves the parser as it was) and the byte
 * starts the next lexeme (after empty lexemes, when it can start none).
 *
 * Where the grammar forces the next bytes and the vocabulary has the tokenizer's
 * encoding (guide_vocab_set_tokenize), the mask is the first token of their encoding, as
 * llguidance's; consuming still takes any token the language allows.
 *
 * A mask is a walk of the token trie, one lexer step per edge, the parser moved only
 * where a lexeme ends (sets pushed and popped, never copied). Which tokens stay inside
 * the current lexeme from lexer state s does not depend on the parser, so that part of
 * the walk is done once per state and cached (the tokens as a bitset and the trie places
 * where a lexeme ends mid-token); a mask copies the bitset and walks on only from those
 * places, each group of places that end the same way sharing one parser scan. */
#include "guide/grammar.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* llguidance's bookkeeping of the Earley row being read, for max_tokens: its start byte
 * as llguidance records it (one past the true start when a byte before it exists, less the
 * previous row's start past a byte that ended the previous lexeme) and the token its
 * count starts from (reset at the end of each token whose first byte is at or before
 * that start); bytes consumed before it. Followed byte for byte, as the counts it gives
 * are what the masks show. */
typedef struct grow_info {
    size_t start_byte, tok_start, nbytes;
} grow_info;

typedef struct gcheck {
    size_t depth; /* Earley sets */
    uint32_t lex;
    bool pending, stopped;
    grow_info row;
} gcheck;

struct guide_matcher {
    guide_grammar *g;
    gearley *p;
    uint32_t lex;  /* the lexer state of the lexeme being read */
    bool pending;  /* some byte of it has been read */
    bool stopped;  /* a stop id was consumed */
    grow_info row; /* llguidance's row of the lexeme being read (max_tokens) */
    int32_t *stops;
    size_t n_stop;
    gcheck *checks; /* the state before each consumed token */
    size_t n_checks, cap_checks;
    uint64_t *allowed;  /* scratch: a lexeme set */
    uint64_t *one;      /* scratch: a lexeme set of one token-set lexeme */
    uint64_t *poss;     /* scratch: a lexeme set (glex_possible) */
    uint32_t *lv_lex;   /* the walk's lexer state per trie depth */
    size_t *lv_depth;   /* and Earley depth */
    size_t *lv_ended;   /* and Earley depth once its lexeme was ended there (0: not yet),
                         * so that siblings share one scan */
    uint32_t *scratch;  /* a mask, for guide_matcher_stopped */
};

/* ---- lexing ------------------------------------------------------------------------ */

static og_status *lex_failed(const guide_matcher *m) {
    og_status *st = glex_error(m->g->lex);
    return st ? st : og_errorf(OG_ERR_RUNTIME, "guide: the lexer failed");
}

/* The lexer state where a lexeme begins after the top Earley set (kept with the set). */
static og_status *start_state(guide_matcher *m, uint32_t *out) {
    uint32_t *slot = gearley_slot(m->p);
    if (*slot == UINT32_MAX) {
        size_t w = gearley_words(m->g->tab);
        /* Ignored lexemes only between lexemes, as llguidance: not before the first, and
         * not where the parser expects nothing more. */
        const uint64_t *ex = gearley_expected(m->p);
        bool more = false;
        for (size_t i = 0; i < w; i++) more |= ex[i] != 0;
        const uint64_t *ign =
            more && gearley_depth(m->p) > 1 ? gcfg_ignore_set(m->g->cfg) : NULL;
        for (size_t i = 0; i < w; i++) m->allowed[i] = ex[i] | (ign ? ign[i] : 0);
        uint32_t s = glex_start(m->g->lex, m->allowed);
        if (s == GLEX_FAILED) return lex_failed(m);
        *slot = s;
    }
    *out = *slot;
    return NULL;
}

/* The lexeme read so far ends in `state` (which accepts): the parser scans what it
 * accepts, or stays as it is when only ignored lexemes accept. */
static og_status *end_lexeme(guide_matcher *m, uint32_t state) {
    bool pushed;
    return gearley_scan(m->p, glex_accepts(m->g->lex, state), &pushed);
}

/* Empty lexemes in a row that one byte may end (a lexeme that matches the empty string
 * ends before a byte it cannot take, as any other; this bounds the chain). */
#define GUIDE_EMPTY_LEXEMES_MAX 8

/* The first byte of a lexeme after a lexeme end. Where the byte cannot start one but the
 * start state accepts (a lexeme that may be empty), that empty lexeme is scanned and the
 * byte tried after it. */
static og_status *restart_next(guide_matcher *m, uint8_t byte, uint32_t *out) {
    for (int k = 0;; k++) {
        uint32_t s0;
        OG_TRY(start_state(m, &s0));
        uint32_t nx = glex_next(m->g->lex, s0, byte);
        if (nx == GLEX_FAILED) return lex_failed(m);
        if (nx != GLEX_DEAD || !glex_accepts(m->g->lex, s0) || k == GUIDE_EMPTY_LEXEMES_MAX) {
            *out = nx;
            return NULL;
        }
        size_t d = gearley_depth(m->p);
        OG_TRY(end_lexeme(m, s0));
        if (gearley_depth(m->p) == d) { /* an empty ignored lexeme: nothing changes */
            *out = GLEX_DEAD;
            return NULL;
        }
    }
}

/* After a lexeme with hidden bytes (Lark's stop=, lexeme h) ended, the parser past it:
 * where every lexeme that may start next begins with those bytes (llguidance's rule),
 * *fed and *s is the lexer state after them; else not *fed (they end the token, and the
 * grammar goes on from the start state as if they were not there). */
static og_status *hidden_restart(guide_matcher *m, int h, uint32_t *s, bool *fed) {
    glex *lex = m->g->lex;
    size_t n = 0;
    const uint8_t *hb = glex_hidden(lex, h, &n);
    uint32_t s0;
    *fed = false;
    OG_TRY(start_state(m, &s0));
    *s = s0;
    if (!glex_possible(lex, s0, m->poss)) return og_oom();
    bool all = true, any = false;
    size_t w = glex_words(lex);
    for (size_t i = 0; i < w && all; i++)
        for (uint64_t bits = m->poss[i]; bits && all; bits &= bits - 1) {
            int id = (int)(i * 64) + __builtin_ctzll(bits);
            if (!glex_forced_prefix(lex, id, hb, n, &all)) return lex_failed(m);
            any = true;
        }
    if (!any || !all) return NULL;
    for (size_t i = 0; i < n && s0 != GLEX_DEAD; i++) {
        s0 = glex_next(lex, s0, hb[i]);
        if (s0 == GLEX_FAILED) return lex_failed(m);
    }
    *fed = s0 != GLEX_DEAD;
    if (*fed) *s = s0;
    return NULL;
}

/* The first byte after the lexeme read to lexer state `ended` ended, the parser past it,
 * inside a token: restart_next, but after a lexeme with hidden bytes only where they
 * start what follows. */
static og_status *restart_after(guide_matcher *m, uint32_t ended, uint8_t byte, uint32_t *out) {
    int h = glex_hidden_lexeme(m->g->lex, ended);
    if (h < 0) return restart_next(m, byte, out);
    uint32_t s;
    bool fed;
    OG_TRY(hidden_restart(m, h, &s, &fed));
    *out = fed ? glex_next(m->g->lex, s, byte) : GLEX_DEAD;
    return *out == GLEX_FAILED ? lex_failed(m) : NULL;
}

/* One byte from lexer state `cur` with the parser at its top: *out is the new lexer
 * state, GLEX_DEAD when the byte is refused (the parser may then hold a pushed set that
 * the caller pops). */
static og_status *step(guide_matcher *m, uint32_t cur, uint8_t byte, uint32_t *out) {
    uint32_t nx = glex_next(m->g->lex, cur, byte);
    if (nx == GLEX_FAILED) return lex_failed(m);
    if (nx != GLEX_DEAD || !glex_accepts(m->g->lex, cur)) {
        *out = nx;
        return NULL;
    }
    OG_TRY(end_lexeme(m, cur));
    return restart_after(m, cur, byte, out);
}

/* The output is complete: the lexeme being read can end here and leave the start
 * symbol complete (or, with nothing read since the start, the parser is complete). */
static og_status *is_accepting(guide_matcher *m, bool *out) {
    *out = false;
    if (m->stopped || (!m->pending && gearley_complete(m->p))) {
        *out = true;
        return NULL;
    }
    if (!glex_accepts(m->g->lex, m->lex)) return NULL;
    size_t d = gearley_depth(m->p);
    og_status *st = end_lexeme(m, m->lex);
    *out = !st && gearley_complete(m->p);
    gearley_pop_to(m->p, d);
    return st;
}

/* ---- special tokens ------------------------------------------------------------------ */

/* The token-set lexemes (Lark's <|name|>, <[ids]>) the parser can take next, as
 * llguidance takes them: the lexeme being read is ended first where it can end (and none
 * can follow where it cannot), then the top set's expected token-set lexemes count, and
 * again after each empty lexeme that may end there. With token >= 0 the first of them
 * (lowest id, at the first level that has one) holding it is scanned: *taken, and the
 * parser is left after it; otherwise the union of their tokens is ORed into `mask` (if
 * not NULL), *any says whether there was one, and the parser is as before. */
static og_status *specials(guide_matcher *m, int32_t token, uint32_t *mask, bool *any,
                           bool *taken) {
    guide_grammar *g = m->g;
    size_t depth0 = gearley_depth(m->p), lw = gearley_words(g->tab);
    size_t words = guide_mask_words(g->vocab->n);
    og_status *st = NULL;
    if (any) *any = false;
    if (taken) *taken = false;
    if (m->pending) {
        if (!glex_accepts(g->lex, m->lex)) return NULL;
        st = end_lexeme(m, m->lex);
    }
    for (int k = 0; !st; k++) {
        const uint64_t *ex = gearley_expected(m->p);
        for (size_t w = 0; w < lw && !st; w++)
            for (uint64_t bits = ex[w] & g->tok_lex[w]; bits; bits &= bits - 1) {
                int id = (int)(w * 64) + __builtin_ctzll(bits);
                const uint32_t *tm = g->tok_mask[id];
                if (token < 0) {
                    if (any) *any = true;
                    for (size_t i = 0; mask && i < words; i++) mask[i] |= tm[i];
                    continue;
                }
                if (!(tm[token >> 5] >> (token & 31) & 1)) continue;
                memset(m->one, 0, lw * sizeof *m->one);
                m->one[id / 64] |= 1ull << (id % 64);
                bool pushed = false;
                st = gearley_scan(m->p, m->one, &pushed);
                if (!st && pushed) {
                    *taken = true;
                    return NULL;
                }
                break;
            }
        if (st || k == GUIDE_EMPTY_LEXEMES_MAX) break;
        uint32_t s0;
        st = start_state(m, &s0);
        if (st || !glex_accepts(g->lex, s0)) break;
        size_t d = gearley_depth(m->p);
        st = end_lexeme(m, s0);
        if (!st && gearley_depth(m->p) == d) break;
    }
    gearley_pop_to(m->p, depth0);
    return st;
}

/* ---- the per-state cache ------------------------------------------------------------ */

void guide_cache_drop(guide_grammar *g) {
    for (size_t i = 0; i < g->cache_cap; i++)
        if (g->cache[i]) {
            free(g->cache[i]->bits);
            free(g->cache[i]->ends);
            free(g->cache[i]);
            g->cache[i] = NULL;
        }
    g->cache_bytes = 0;
}

static int cmp_end(const void *x, const void *y) {
    const gend *a = x, *b = y;
    if (a->state != b->state) return a->state < b->state ? -1 : 1;
    return a->node < b->node ? -1 : a->node > b->node;
}

static inline void mark_node(const guide_vocab *v, uint32_t i, uint32_t *mask) {
    for (uint32_t k = v->nodes[i].tok; k < v->nodes[i + 1].tok; k++)
        mask[v->toks[k] >> 5] |= 1u << (v->toks[k] & 31);
}

/* How far slice k stays inside the lexeme from state s: the longest L such that every
 * string of the slice's language of at most L bytes (and so every prefix of one) keeps
 * the lexer alive; UINT32_MAX when all do. A breadth-first search over the pairs (slice
 * state, lexer state) reachable together, each met first at its shortest depth, so the
 * first dead lexer state is met at the shortest string that kills. Bounded: past
 * SLICE_PAIRS pairs L is the depth reached. */
#define SLICE_PAIRS 512
#define SLICE_SLOTS 1024 /* the seen set's slots: twice the pairs, a power of two */
#define SLICE_NEW_STATES 128 /* most lexer states one search may build */
#define SLICE_WORK 1000000    /* most NFA states its closures may visit (glex_work) */

/* The slot of pair key k (pair + 1) in the seen set, or the empty slot where it goes. */
static size_t pair_slot(const uint64_t *seen, uint64_t k) {
    size_t h = (size_t)((k * 0x9E3779B97F4A7C15ull) >> 54) & (SLICE_SLOTS - 1);
    while (seen[h] && seen[h] != k) h = (h + 1) & (SLICE_SLOTS - 1);
    return h;
}

static uint32_t slice_reach(guide_grammar *g, int slice, uint32_t s) {
    glex *sl = g->slice[slice];
    uint32_t pr[SLICE_PAIRS], pq[SLICE_PAIRS], pd[SLICE_PAIRS];
    uint64_t seen[SLICE_SLOTS] = {0}; /* pairs (slice << 32 | lexer) + 1; 0: empty */
    uint64_t one = 1;
    pr[0] = glex_start(sl, &one);
    pq[0] = s;
    pd[0] = 0;
    if (pr[0] == GLEX_FAILED || pr[0] == GLEX_DEAD) return 0;
    uint64_t k0 = ((uint64_t)pr[0] << 32 | s) + 1;
    seen[pair_slot(seen, k0)] = k0;
    size_t n = 1, states0 = glex_states(g->lex), work0 = glex_work(g->lex);
    for (size_t k = 0; k < n; k++) {
        /* breadth first: every string of pd[k] bytes is inside; no token is longer */
        if (pd[k] >= g->vocab->max_len) return pd[k];
        /* a search that builds many lexer states (Unicode classes) stops: what it has
         * shown holds, and the walk covers the rest */
        if (glex_states(g->lex) - states0 > SLICE_NEW_STATES ||
            glex_work(g->lex) - work0 > SLICE_WORK)
            return pd[k];
        /* past the lengths the slices keep sets for, only reaching the longest token
         * pays; at the pairs a level this search has met, the rest would not fit */
        if (pd[k] > GUIDE_SLICE_LENS &&
            n + (size_t)(g->vocab->max_len - pd[k]) * (n / pd[k]) > SLICE_PAIRS)
            return pd[k];
        for (unsigned b = 0; b < 256; b++) {
            uint32_t r = glex_next(sl, pr[k], (uint8_t)b);
            if (r == GLEX_DEAD) continue;
            if (r == GLEX_FAILED) return pd[k];
            uint32_t q = glex_next(g->lex, pq[k], (uint8_t)b);
            /* a lexer past its limits: the walk meets it again and says why */
            if (q == GLEX_FAILED || q == GLEX_DEAD) return pd[k];
            uint64_t key = ((uint64_t)r << 32 | q) + 1;
            size_t h = pair_slot(seen, key);
            if (seen[h]) continue;
            if (n == SLICE_PAIRS) return pd[k];
            seen[h] = key;
            pr[n] = r;
            pq[n] = q;
            pd[n++] = pd[k] + 1;
        }
    }
    return UINT32_MAX;
}

/* One character of slice k from lexer state q (at a character boundary): 1 when every
 * character of the slice keeps the lexer alive through all its bytes and all lead to one
 * state (*next), 0 when every one dies at its first byte and q accepts nothing (no
 * lexeme can end there), -1 otherwise (mixed, a death mid-character, or past the pairs
 * it may visit), -2 when the lexer failed. A depth-first search over the pairs (slice
 * state, lexer state) inside one character. */
#define CUT_PAIRS 256
static int slice_char_step(guide_grammar *g, int k, uint32_t q, uint32_t *next) {
    glex *sl = g->slice[k];
    uint64_t one = 1;
    uint32_t p0 = glex_start(sl, &one);
    if (p0 == GLEX_FAILED || p0 == GLEX_DEAD) return -1;
    uint32_t pr[CUT_PAIRS], pq[CUT_PAIRS];
    size_t n = 1, kills = 0, alive_first = 0;
    pr[0] = p0;
    pq[0] = q;
    uint32_t succ = GLEX_DEAD;
    for (size_t i = 0; i < n; i++) {
        for (unsigned b = 0; b < 256; b++) {
            uint32_t r = glex_next(sl, pr[i], (uint8_t)b);
            if (r == GLEX_DEAD) continue;
            if (r == GLEX_FAILED) return -1;
            uint32_t x = glex_next(g->lex, pq[i], (uint8_t)b);
            if (x == GLEX_FAILED) return -2;
            if (x == GLEX_DEAD) {
                if (i) return -1; /* dies inside a character */
                kills++;
                continue;
            }
            if (!i) alive_first++;
            if (kills && alive_first) return -1;
            if (glex_accepts(sl, r)) { /* a whole character: where the next one begins */
                if (succ != GLEX_DEAD && succ != x) return -1;
                succ = x;
                continue;
            }
            size_t j = 0;
            while (j < n && (pr[j] != r || pq[j] != x)) j++;
            if (j < n) continue;
            if (n == CUT_PAIRS) return -1;
            pr[n] = r;
            pq[n++] = x;
        }
    }
    if (!alive_first) return kills && !glex_accepts(g->lex, q) ? 0 : -1;
    if (kills || succ == GLEX_DEAD) return -1; /* mixed, or no character completes */
    *next = succ;
    return 1;
}

/* Room in g->cut for lexer state x; false when there is none (out of memory). */
static bool ensure_cut(guide_grammar *g, uint32_t x) {
    if (x < g->cut_cap && g->cut[0]) return true;
    size_t c = g->cut_cap ? g->cut_cap : 256;
    while (c <= x) c *= 2;
    for (int j = 0; j < 2 * GUIDE_N_SLICES; j++) {
        uint32_t **arr = j < GUIDE_N_SLICES ? &g->cut[j] : &g->cut_next[j - GUIDE_N_SLICES];
        uint32_t *a = realloc(*arr, c * sizeof *a);
        if (!a) return false;
        size_t old = *arr ? g->cut_cap : 0;
        memset(a + old, 0, (c - old) * sizeof *a);
        *arr = a;
    }
    g->cut_cap = c;
    return true;
}

/* Whether lexer state q's fate along slice k's strings is a count of characters, as in a
 * string with a maximum length: then every string of the slice of at most *cut
 * characters stays inside the lexeme from q, and every longer one dies with no lexeme
 * complete on the way (so no walk needs to read them), *cut = max_chars meaning all
 * stay. Follows q's chain of one-character successors (slice_char_step) until a state
 * known, a state where every character dies, a cycle, or max_chars steps; remembered
 * per state (g->cut). -1: it is not; -2: the lexer failed. */
static int slice_cut(guide_grammar *g, int k, uint32_t q, uint32_t *cut) {
    const guide_vocab *v = g->vocab;
    uint32_t cap = v->max_chars[k];
    if (!cap || !ensure_cut(g, q)) return -1;
    if (g->cut[k][q]) {
        if (g->cut[k][q] == 1) return -1;
        *cut = g->cut[k][q] - 2;
        return 0;
    }
    /* the chain q = chain[0] -> chain[1] -> ..., one character each */
    uint32_t *chain = malloc(((size_t)cap + 2) * sizeof *chain);
    if (!chain) return -1;
    size_t len = 0;
    uint32_t x = q, tail = 1; /* tail: what follows the chain's end, 2 + R or 1 */
    for (;;) {
        if (!ensure_cut(g, x)) {
            tail = 1;
            break;
        }
        if (g->cut[k][x]) {
            tail = g->cut[k][x];
            break;
        }
        bool cycle = false;
        for (size_t i = 0; i < len && !cycle; i++) cycle = chain[i] == x;
        if (cycle) { /* every string of the slice stays inside, from every state here */
            tail = 2 + cap;
            break;
        }
        if (len > cap) { /* the same, but shown for q alone (the others took fewer steps) */
            g->cut[k][q] = 2 + cap;
            len = 0;
            break;
        }
        chain[len++] = x;
        uint32_t *step = &g->cut_next[k][x];
        if (!*step) {
            uint32_t nx = GLEX_DEAD;
            int r = slice_char_step(g, k, x, &nx);
            if (r == -2) {
                free(chain);
                return -2;
            }
            *step = r < 0 ? 1 : r == 0 ? 2 : 3 + nx;
        }
        if (*step == 1) {
            tail = 1;
            break;
        }
        if (*step == 2) { /* every character dies here */
            len--;
            tail = 2;
            g->cut[k][x] = tail;
            break;
        }
        x = *step - 3;
    }
    /* back along the chain: one more character each, none past max_chars */
    for (size_t i = len; i-- > 0;) {
        if (tail != 1 && tail - 2 < cap) tail++;
        g->cut[k][chain[i]] = tail;
    }
    free(chain);
    if (g->cut[k][q] <= 1) return -1;
    *cut = g->cut[k][q] - 2;
    return 0;
}

/* Slice k's tokens of at most c characters into bits (c < max_chars). */
static void add_chars_upto(const guide_vocab *v, int k, uint32_t c, uint32_t *bits) {
    size_t words = guide_mask_words(v->n);
    if (c) {
        const uint32_t *b = v->slice_chars[k][c < GUIDE_SLICE_LENS ? c : GUIDE_SLICE_LENS];
        for (size_t w = 0; w < words; w++) bits[w] |= b[w];
    }
    for (size_t i = 0; i < v->n_long[k] && v->slice_long_chars[k][i] <= c; i++)
        bits[v->slice_long[k][i] >> 5] |= 1u << (v->slice_long[k][i] & 31);
}

/* The walk from lexer state s over the whole trie with the lexer alone. The slices'
 * tokens short enough to stay inside the lexeme from s (slice_reach) are allowed at once
 * and the subtrees that hold only such tokens are not walked. */
static og_status *cache_build(guide_matcher *m, uint32_t s, gcache **out) {
    guide_grammar *g = m->g;
    const guide_vocab *v = g->vocab;
    size_t words = guide_mask_words(v->n);
    gcache *c = calloc(1, sizeof *c);
    if (!c || !(c->bits = calloc(words ? words : 1, sizeof *c->bits))) {
        free(c);
        return og_oom_for(words * 4, "a token mask cache entry");
    }
    size_t cap_ends = 0;
    /* slice k's tokens of at most cover[k] bytes are inside: allowed at once, their
     * subtrees not walked */
    uint32_t cover[GUIDE_N_SLICES];
    uint8_t decided = 0; /* bit k: every token of slice k is decided (slice_cut) */
    for (int k = 0; k < GUIDE_N_SLICES; k++) {
        uint32_t cut = 0;
        int r = slice_cut(g, k, s, &cut);
        if (r == -2) {
            free(c->bits);
            free(c);
            return lex_failed(m);
        }
        if (!r && cut < v->max_chars[k]) {
            add_chars_upto(v, k, cut, c->bits);
            decided |= (uint8_t)(1u << k);
            cover[k] = 0;
            continue;
        }
        uint32_t reach = !r ? UINT32_MAX : slice_reach(g, k, s);
        const uint32_t *bits = NULL;
        if (reach >= v->max_len) {
            cover[k] = v->max_len;
            bits = v->slice_bits[k];
        } else {
            cover[k] = reach < GUIDE_SLICE_LENS ? reach : GUIDE_SLICE_LENS;
            if (cover[k]) bits = v->slice_upto[k][cover[k]];
        }
        for (size_t w = 0; bits && w < words; w++) c->bits[w] |= bits[w];
    }
    og_status *st = NULL;
    m->lv_lex[0] = s;
    /* with slice 0 decided (the others are inside it) only the nodes outside its
     * subtrees are read: the skeleton, in preorder, its own skips (vocab.h) */
    bool skel = decided & 1;
    uint32_t end = skel ? (uint32_t)v->n_skel : (uint32_t)v->n_nodes;
    for (uint32_t j = skel ? 0 : 1; j < end;) {
        uint32_t i = skel ? v->skel_node[j] : j;
        const gtrie_node *nd = &v->nodes[i];
        uint32_t past = skel ? v->skel_skip[j] : nd->skip; /* past i's subtree */
        bool covered = !skel && (nd->in_slice & decided) != 0;
        for (int k = 0; k < GUIDE_N_SLICES && !covered && !skel; k++)
            covered = (nd->in_slice >> k & 1) && nd->below <= cover[k];
        if (covered) {
            j = past;
            continue;
        }
        uint32_t cur = m->lv_lex[nd->depth - 1];
        uint32_t nx = glex_next(g->lex, cur, nd->byte);
        if (nx == GLEX_FAILED) {
            st = lex_failed(m);
            break;
        }
        if (nx == GLEX_DEAD) {
            if (glex_accepts(g->lex, cur)) {
                if (c->n_ends == cap_ends) {
                    cap_ends = cap_ends ? cap_ends * 2 : 64;
                    gend *e = realloc(c->ends, cap_ends * sizeof *e);
                    if (!e) {
                        st = og_oom();
                        break;
                    }
                    c->ends = e;
                }
                c->ends[c->n_ends++] = (gend){i, cur};
            }
            j = past;
            continue;
        }
        m->lv_lex[nd->depth] = nx;
        mark_node(v, i, c->bits);
        j++;
    }
    if (st) {
        free(c->bits);
        free(c->ends);
        free(c);
        return st;
    }
    if (c->n_ends) qsort(c->ends, c->n_ends, sizeof *c->ends, cmp_end);
    c->bytes = sizeof *c + words * sizeof *c->bits + cap_ends * sizeof *c->ends;
    *out = c;
    return NULL;
}

static og_status *cache_get(guide_matcher *m, uint32_t s, const gcache **out) {
    guide_grammar *g = m->g;
    if (s < g->cache_cap && g->cache[s]) {
        *out = g->cache[s];
        return NULL;
    }
    if (s >= g->cache_cap) {
        size_t cap = g->cache_cap ? g->cache_cap : 256;
        while (cap <= s) cap *= 2;
        gcache **q = realloc(g->cache, cap * sizeof *q);
        if (!q) return og_oom();
        memset(q + g->cache_cap, 0, (cap - g->cache_cap) * sizeof *q);
        g->cache = q;
        g->cache_cap = cap;
    }
    gcache *c = NULL;
    OG_TRY(cache_build(m, s, &c));
    if (g->cache_bytes + c->bytes > g->cache_limit) {
        guide_cache_drop(g);
        g->cache_flushes++;
    }
    g->cache[s] = c;
    g->cache_bytes += c->bytes;
    *out = c;
    return NULL;
}

/* ---- masks -------------------------------------------------------------------------- */

/* Walks the subtree of trie node `first`: its byte taken from lexer state `from` (or,
 * with from == GLEX_DEAD, as the first byte after a lexeme end, which may not end
 * another), every byte below with the full rule. The tokens reached are marked in mask,
 * or with mask NULL counted in *found (the walk stops at the first). The parser is back
 * at its depth after. */
static og_status *walk_subtree(guide_matcher *m, uint32_t first, uint32_t from, uint32_t ended,
                               uint32_t *mask, size_t *found) {
    const guide_vocab *v = m->g->vocab;
    const gtrie_node *nodes = v->nodes;
    unsigned d0 = nodes[first].depth;
    size_t depth0 = gearley_depth(m->p);
    uint32_t nx = GLEX_DEAD;
    og_status *st = from == GLEX_DEAD ? restart_after(m, ended, nodes[first].byte, &nx)
                                      : step(m, from, nodes[first].byte, &nx);
    if (st || nx == GLEX_DEAD) {
        gearley_pop_to(m->p, depth0);
        return st;
    }
    m->lv_lex[d0] = nx;
    m->lv_depth[d0] = gearley_depth(m->p);
    m->lv_ended[d0] = 0;
    for (uint32_t i = first, end = nodes[first].skip; i < end;) {
        const gtrie_node *nd = &nodes[i];
        unsigned d = nd->depth;
        if (i != first) {
            /* step(), with the lexeme end scanned once for all children of a node. */
            uint32_t cur = m->lv_lex[d - 1];
            nx = glex_next(m->g->lex, cur, nd->byte);
            if (nx == GLEX_FAILED) {
                st = lex_failed(m);
                break;
            }
            if (nx != GLEX_DEAD) {
                /* What this child's subtree pushes overwrites the shared scan. */
                gearley_pop_to(m->p, m->lv_depth[d - 1]);
                m->lv_ended[d - 1] = 0;
            } else if (glex_accepts(m->g->lex, cur)) {
                if (m->lv_ended[d - 1]) {
                    gearley_pop_to(m->p, m->lv_ended[d - 1]);
                } else {
                    gearley_pop_to(m->p, m->lv_depth[d - 1]);
                    if ((st = end_lexeme(m, cur))) break;
                    m->lv_ended[d - 1] = gearley_depth(m->p);
                }
                if ((st = restart_after(m, cur, nd->byte, &nx))) break;
            }
            if (nx == GLEX_DEAD) {
                i = nd->skip;
                continue;
            }
            m->lv_lex[d] = nx;
            m->lv_depth[d] = gearley_depth(m->p);
            m->lv_ended[d] = 0;
        }
        if (mask) {
            mark_node(v, i, mask);
        } else if (nodes[i + 1].tok > nd->tok) {
            ++*found;
            break;
        }
        i++;
    }
    gearley_pop_to(m->p, depth0);
    return st;
}

/* Node `node`'s child by `byte`, or 0 (children are in byte order). */
static uint32_t trie_child(const guide_vocab *v, uint32_t node, uint8_t byte) {
    for (uint32_t i = node + 1; i < v->nodes[node].skip; i = v->nodes[i].skip) {
        if (v->nodes[i].byte == byte) return i;
        if (v->nodes[i].byte > byte) break;
    }
    return 0;
}

/* Where forced bytes buf[0..len) could merge into a longer token: the first p such that
 * some token allowed at p is buf[p..len) and more (its rest allowed where the forced
 * bytes end, the state the caller is in); len when none. */
static og_status *merge_point(guide_matcher *m, const uint8_t *buf, size_t len, uint32_t cur,
                              size_t *out) {
    const guide_vocab *v = m->g->vocab;
    *out = len;
    for (size_t p = 0; p < len; p++) {
        uint32_t node = 0;
        for (size_t i = p; i < len && (node || i == p); i++) node = trie_child(v, node, buf[i]);
        if (!node) continue;
        size_t found = 0;
        for (uint32_t c = node + 1; c < v->nodes[node].skip && !found; c = v->nodes[c].skip)
            OG_TRY(walk_subtree(m, c, cur, GLEX_DEAD, NULL, &found));
        if (found) {
            *out = p;
            return NULL;
        }
    }
    return NULL;
}

/* The bytes every continuation begins with (at most GUIDE_FORCED_MAX), found one byte
 * at a time while exactly one byte can follow and the output cannot end; *ends: after
 * them the output is complete and nothing can follow; *keep: the bytes before
 * merge_point (all when the output ends). The state is as before after. */
#define GUIDE_FORCED_MAX 64
static og_status *forced_bytes(guide_matcher *m, uint8_t *buf, size_t *len, bool *ends,
                               size_t *keep) {
    glex *lex = m->g->lex;
    size_t depth0 = gearley_depth(m->p);
    uint32_t cur = m->lex;
    bool pending = m->pending;
    og_status *st = NULL;
    *len = 0;
    *ends = false;
    while (!st && *len < GUIDE_FORCED_MAX) {
        int count = 0, only = -1;
        if (m->g->n_tok) { /* a special token may come here: nothing more is forced */
            uint32_t lex0 = m->lex;
            bool pending0 = m->pending, any = false;
            m->lex = cur;
            m->pending = pending;
            st = specials(m, -1, NULL, &any, NULL);
            m->lex = lex0;
            m->pending = pending0;
            if (st || any) break;
        }
        for (int b = 0; b < 256 && count < 2; b++) {
            uint32_t nx = glex_next(lex, cur, (uint8_t)b);
            if (nx == GLEX_FAILED) st = lex_failed(m);
            if (nx != GLEX_DEAD) count++, only = b;
        }
        if (st) break;
        bool complete = !pending && gearley_complete(m->p);
        if (count < 2 && glex_accepts(lex, cur)) {
            size_t d = gearley_depth(m->p);
            st = end_lexeme(m, cur);
            if (!st) complete = complete || gearley_complete(m->p);
            size_t d2 = gearley_depth(m->p);
            for (int b = 0; !st && b < 256 && count < 2; b++) {
                if (glex_next(lex, cur, (uint8_t)b) != GLEX_DEAD) continue;
                uint32_t nx;
                st = restart_after(m, cur, (uint8_t)b, &nx);
                gearley_pop_to(m->p, d2);
                if (!st && nx != GLEX_DEAD) count++, only = b;
            }
            gearley_pop_to(m->p, d);
            if (st) break;
        }
        if (!count) *ends = complete;
        if (count != 1 || complete) break;
        st = step(m, cur, (uint8_t)only, &cur);
        pending = true;
        buf[(*len)++] = (uint8_t)only;
    }
    *keep = *len;
    if (!st && *len && !*ends) st = merge_point(m, buf, *len, cur, keep);
    gearley_pop_to(m->p, depth0);
    return st;
}

/* Whether tokens ids[0..n) spell exactly the bytes b[0..len). */
static bool spells(const guide_vocab *v, const int32_t *ids, size_t n, const uint8_t *b,
                   size_t len) {
    size_t at = 0;
    for (size_t i = 0; i < n; i++) {
        if (ids[i] < 0 || (size_t)ids[i] >= v->n) return false;
        size_t l = v->off[ids[i] + 1] - v->off[ids[i]];
        if (l > len - at || memcmp(v->blob + v->off[ids[i]], b + at, l)) return false;
        at += l;
    }
    return at == len;
}

/* The tokenizer's encoding of bytes as they stand mid-text: its plain encoding where
 * that spells them; else (a tokenizer that adds a space at the start of a text, as
 * SentencePiece's) the encoding after a marker byte, less the marker's own tokens.
 * *n = 0 when neither spells them. */
static og_status *encode_mid(const guide_vocab *v, const uint8_t *b, size_t len, int32_t **ids,
                             size_t *n) {
    *ids = NULL;
    *n = 0;
    OG_TRY(v->tokenize(v->tokenize_ctx, b, len, ids, n));
    if (spells(v, *ids, *n, b, len)) return NULL;
    free(*ids);
    *ids = NULL;
    *n = 0;
    uint8_t marked[GUIDE_FORCED_MAX + 1] = {2};
    memcpy(marked + 1, b, len);
    int32_t *pre = NULL, *all = NULL;
    size_t n_pre = 0, n_all = 0;
    og_status *st = v->tokenize(v->tokenize_ctx, marked, 1, &pre, &n_pre);
    if (!st) st = v->tokenize(v->tokenize_ctx, marked, len + 1, &all, &n_all);
    if (!st && n_all >= n_pre && !memcmp(all, pre, n_pre * sizeof *pre) &&
        spells(v, all + n_pre, n_all - n_pre, b, len)) {
        memmove(all, all + n_pre, (n_all - n_pre) * sizeof *all);
        *ids = all;
        *n = n_all - n_pre;
        all = NULL;
    }
    free(pre);
    free(all);
    return st;
}

/* llguidance's rule where bytes are forced (guide_vocab_set_tokenize): the tokenizer's
 * encoding of them, less the tokens that reach the merge point (they could still become
 * part of a longer token), and if any remains, the mask is its first token alone
 * (*forced). */
static og_status *forced_mask(guide_matcher *m, uint32_t *mask, bool *forced) {
    const guide_vocab *v = m->g->vocab;
    *forced = false;
    if (!v->tokenize) return NULL;
    uint8_t buf[GUIDE_FORCED_MAX];
    size_t len, keep;
    bool ends;
    OG_TRY(forced_bytes(m, buf, &len, &ends, &keep));
    if (!keep) return NULL;
    int32_t *ids = NULL;
    size_t n = 0;
    og_status *st = encode_mid(v, buf, len, &ids, &n);
    if (st) { /* bytes the tokenizer cannot encode alone: no forcing */
        og_status_free(st);
        return NULL;
    }
    /* The first token, if it ends before the merge point. */
    if (n && v->off[ids[0] + 1] - v->off[ids[0]] <= keep) {
        memset(mask, 0, guide_mask_words(v->n) * sizeof *mask);
        mask[ids[0] >> 5] |= 1u << (ids[0] & 31);
        *forced = true;
    }
    free(ids);
    return NULL;
}

/* Whether the mask here is exactly `token`, forced: how a special token the grammar
 * spells out (a tool-call marker) is chosen and consumed, though no walk allows it. */
static og_status *forced_is(guide_matcher *m, int32_t token, bool *yes) {
    const guide_vocab *v = m->g->vocab;
    *yes = false;
    if (m->stopped || !v->tokenize) return NULL;
    uint32_t *mask = malloc(guide_mask_words(v->n) * sizeof *mask);
    if (!mask) return og_oom();
    bool forced;
    og_status *st = forced_mask(m, mask, &forced);
    *yes = !st && forced && (mask[token >> 5] >> (token & 31) & 1);
    free(mask);
    return st;
}

static og_status *compute_mask(guide_matcher *m, uint32_t *mask) {
    const guide_vocab *v = m->g->vocab;
    size_t words = guide_mask_words(v->n);
    bool accepting = m->stopped;
    if (!m->stopped) {
        bool forced = false, special = false;
        if (m->g->n_tok) OG_TRY(specials(m, -1, NULL, &special, NULL));
        if (!special) OG_TRY(forced_mask(m, mask, &forced));
        if (forced) return NULL;
        const gcache *c = NULL;
        OG_TRY(cache_get(m, m->lex, &c));
        memcpy(mask, c->bits, words * sizeof *mask);
        if (special) OG_TRY(specials(m, -1, mask, NULL, NULL));
        size_t depth0 = gearley_depth(m->p);
        for (size_t i = 0; i < c->n_ends;) {
            uint32_t state = c->ends[i].state;
            og_status *st = end_lexeme(m, state);
            for (; !st && i < c->n_ends && c->ends[i].state == state; i++)
                st = walk_subtree(m, c->ends[i].node, GLEX_DEAD, state, mask, NULL);
            gearley_pop_to(m->p, depth0);
            if (st) return st;
        }
        OG_TRY(is_accepting(m, &accepting));
        /* a stop="" lexeme complete here: a stop id may end it (llguidance) */
        accepting = accepting || (m->pending && glex_eos_ends(m->g->lex, m->lex));
    } else {
        memset(mask, 0, words * sizeof *mask);
    }
    if (accepting)
        for (size_t i = 0; i < m->n_stop; i++)
            mask[m->stops[i] >> 5] |= 1u << (m->stops[i] & 31);
    return NULL;
}

/* ---- the public side ---------------------------------------------------------------- */

og_status *guide_matcher_new(guide_grammar *g, const int32_t *stop_ids, size_t n_stop,
                             guide_matcher **out) {
    size_t n = g->vocab->n;
    for (size_t i = 0; i < n_stop; i++)
        if (stop_ids[i] < 0 || (size_t)stop_ids[i] >= n)
            return og_errorf(OG_ERR_INVALID_ARGUMENT,
                             "guide: stop id %d is outside the vocabulary (%zu tokens)",
                             (int)stop_ids[i], n);
    guide_matcher *m = calloc(1, sizeof *m);
    if (!m) return og_oom();
    m->g = guide_grammar_ref(g);
    size_t depth = (size_t)g->vocab->max_len + 1;
    m->stops = malloc((n_stop ? n_stop : 1) * sizeof *m->stops);
    m->allowed = calloc(gearley_words(g->tab), sizeof *m->allowed);
    m->one = calloc(gearley_words(g->tab), sizeof *m->one);
    m->poss = calloc(glex_words(g->lex) ? glex_words(g->lex) : 1, sizeof *m->poss);
    m->lv_lex = malloc(depth * sizeof *m->lv_lex);
    m->lv_depth = malloc(depth * sizeof *m->lv_depth);
    m->lv_ended = malloc(depth * sizeof *m->lv_ended);
    m->scratch = malloc((guide_mask_words(n) ? guide_mask_words(n) : 1) * sizeof *m->scratch);
    og_status *st = NULL;
    if (!m->stops || !m->allowed || !m->one || !m->poss || !m->lv_lex || !m->lv_depth || !m->lv_ended || !m->scratch)
        st = og_oom();
    if (!st) {
        if (n_stop) memcpy(m->stops, stop_ids, n_stop * sizeof *stop_ids);
        m->n_stop = n_stop;
        st = gearley_new(g->tab, &m->p);
    }
    if (!st) {
        pthread_mutex_lock(&g->lock);
        st = start_state(m, &m->lex);
        pthread_mutex_unlock(&g->lock);
    }
    if (st) {
        guide_matcher_free(m);
        return st;
    }
    *out = m;
    return NULL;
}

void guide_matcher_free(guide_matcher *m) {
    if (!m) return;
    gearley_free(m->p);
    free(m->stops);
    free(m->checks);
    free(m->allowed);
    free(m->one);
    free(m->poss);
    free(m->lv_lex);
    free(m->lv_depth);
    free(m->lv_ended);
    free(m->scratch);
    guide_grammar_unref(m->g);
    free(m);
}

size_t guide_mask_apply(const uint32_t *mask, float *row, size_t n) {
    size_t allowed = 0;
    for (size_t w = 0; w * 32 < n; w++) {
        size_t base = w * 32, k = n - base < 32 ? n - base : 32;
        uint32_t bits = k < 32 ? mask[w] & ((1u << k) - 1) : mask[w];
        allowed += (size_t)__builtin_popcount(bits);
        if (bits == UINT32_MAX) continue;
        for (size_t b = 0; b < k; b++)
            if (!(bits >> b & 1u)) row[base + b] = -INFINITY;
    }
    return allowed;
}

og_status *guide_matcher_mask(guide_matcher *m, uint32_t *mask) {
    pthread_mutex_lock(&m->g->lock);
    og_status *st = compute_mask(m, mask);
    pthread_mutex_unlock(&m->g->lock);
    return st;
}

static bool is_stop(const guide_matcher *m, int32_t token) {
    for (size_t i = 0; i < m->n_stop; i++)
        if (m->stops[i] == token) return true;
    return false;
}

/* The token's bytes for a message, printable and short. */
static void describe_token(const guide_vocab *v, int32_t token, char *buf, size_t cap) {
    size_t o = 0;
    const uint8_t *b = v->blob + v->off[token];
    size_t len = v->off[token + 1] - v->off[token];
    for (size_t i = 0; i < len && o + 8 < cap; i++) {
        if (b[i] >= 0x20 && b[i] < 0x7f && b[i] != '\\' && b[i] != '\'')
            buf[o++] = (char)b[i];
        else
            o += (size_t)snprintf(buf + o, cap - o, "\\x%02x", b[i]);
    }
    buf[o] = 0;
}

/* Where llguidance's lexer ends the lexeme at the byte that brought it to `state`
 * (complete, and no byte can extend it) rather than at the next. */
static bool ends_there(guide_matcher *m, uint32_t state) {
    return state != GLEX_DEAD && glex_accepts(m->g->lex, state) && !glex_can_extend(m->g->lex, state);
}

/* What llguidance does at the end of a consumed token (the lexeme being read in m->lex,
 * its tokens counted from m->row.tok_start; this token is number m->n_checks): a lexeme cut
 * by hidden bytes ends here (hidden_restart); otherwise the lexemes that have now spanned
 * their max_tokens tokens are dropped from the lexer state (not where a row began at the
 * token's last byte: llguidance's check), and where none is left the
 * lexeme ends here: llguidance's forced end scans the first lexeme the state could still
 * match, complete or not. */
static og_status *after_token(guide_matcher *m, bool new_row_last) {
    glex *lex = m->g->lex;
    int h = glex_hidden_lexeme(lex, m->lex);
    if (h >= 0) {
        OG_TRY(end_lexeme(m, m->lex));
        bool fed;
        OG_TRY(hidden_restart(m, h, &m->lex, &fed));
        m->pending = fed;
        return NULL;
    }
    if (!glex_any_max_tokens(lex) || !m->pending || new_row_last) return NULL;
    size_t count = m->n_checks + 1 - m->row.tok_start;
    if (!glex_possible(lex, m->lex, m->poss)) return og_oom();
    bool cut = false;
    size_t w = glex_words(lex);
    for (size_t i = 0; i < w; i++)
        for (uint64_t bits = m->poss[i]; bits; bits &= bits - 1) {
            int id = (int)(i * 64) + __builtin_ctzll(bits);
            uint32_t mt = glex_max_tokens(lex, id);
            if (mt && count >= mt) {
                m->poss[i] &= ~(1ull << (id % 64));
                cut = true;
            }
        }
    if (!cut) return NULL;
    uint32_t s = glex_limit(lex, m->lex, m->poss);
    if (s == GLEX_FAILED) return lex_failed(m);
    if (s != GLEX_DEAD) {
        m->lex = s;
        return NULL;
    }
    if (!glex_possible(lex, m->lex, m->poss)) return og_oom();
    int first = -1;
    for (size_t i = 0; i < w && first < 0; i++)
        if (m->poss[i]) first = (int)(i * 64) + __builtin_ctzll(m->poss[i]);
    if (first < 0) return NULL;
    size_t lw = gearley_words(m->g->tab);
    memset(m->one, 0, lw * sizeof *m->one);
    m->one[first / 64] |= 1ull << (first % 64);
    bool pushed = false;
    OG_TRY(gearley_scan(m->p, m->one, &pushed));
    if (!pushed) return NULL;
    OG_TRY(start_state(m, &m->lex));
    m->pending = false;
    m->row.start_byte = m->row.nbytes + (m->row.nbytes > 0);
    m->row.tok_start = m->n_checks;
    return NULL;
}

static og_status *consume_locked(guide_matcher *m, int32_t token) {
    const guide_vocab *v = m->g->vocab;
    if (m->stopped)
        return og_errorf(OG_ERR_INVALID_ARGUMENT,
                         "guide: token %d after the output ended (a stop id was consumed)", token);
    if (token < 0 || (size_t)token >= v->n)
        return og_errorf(OG_ERR_INVALID_ARGUMENT, "guide: token %d is outside the vocabulary",
                         token);
    if (m->n_checks == m->cap_checks) {
        size_t c = m->cap_checks ? m->cap_checks * 2 : 64;
        gcheck *q = realloc(m->checks, c * sizeof *q);
        if (!q) return og_oom();
        m->checks = q;
        m->cap_checks = c;
    }
    gcheck before = {gearley_depth(m->p), m->lex, m->pending, m->stopped, m->row};
    if (m->g->n_tok && (m->g->tok_any[token >> 5] >> (token & 31) & 1)) {
        bool taken = false;
        OG_TRY(specials(m, token, NULL, NULL, &taken));
        if (taken) { /* read as the special token it is here, not as bytes */
            og_status *st = start_state(m, &m->lex);
            if (st) {
                gearley_pop_to(m->p, before.depth);
                return st;
            }
            m->pending = false;
            m->row = (grow_info){0, m->n_checks, m->row.nbytes + v->off[token + 1] - v->off[token]};
            m->checks[m->n_checks++] = before;
            return NULL;
        }
    }
    if (is_stop(m, token) && m->pending && glex_eos_ends(m->g->lex, m->lex)) {
        /* a stop="" lexeme ends here and the output goes on after it (llguidance's
         * matcher: the stop id ends the lexeme, as guidance's gen() ends at EOS) */
        og_status *st = end_lexeme(m, m->lex);
        if (!st) st = start_state(m, &m->lex);
        if (st) {
            gearley_pop_to(m->p, before.depth);
            m->lex = before.lex;
            return st;
        }
        m->pending = false;
        m->row.start_byte = m->row.nbytes + (m->row.nbytes > 0);
        m->row.tok_start = m->n_checks;
        m->checks[m->n_checks++] = before;
        return NULL;
    }
    if (is_stop(m, token)) {
        bool acc;
        OG_TRY(is_accepting(m, &acc));
        if (!acc)
            return og_errorf(OG_ERR_INVALID_ARGUMENT,
                             "guide: stop id %d where the output is not complete", token);
        m->stopped = true;
        m->checks[m->n_checks++] = before;
        return NULL;
    }
    size_t len = v->off[token + 1] - v->off[token];
    bool ok = len && !v->excluded[token];
    if (len && !ok) OG_TRY(forced_is(m, token, &ok));
    if (!ok)
        return og_errorf(OG_ERR_INVALID_ARGUMENT,
                         "guide: token %d is never allowed under guidance (%s)", token,
                         len ? "a special token the grammar does not force here"
                             : "it has no bytes");
    const uint8_t *b = v->blob + v->off[token];
    uint32_t cur = m->lex;
    grow_info row = m->row;
    size_t k = m->n_checks, applied0 = row.nbytes;
    bool new_row_last = false; /* llguidance began a row at the token's last byte */
    for (size_t i = 0; i < len; i++) {
        uint32_t nx = GLEX_DEAD;
        size_t p = applied0 + i, s = p + (p > 0);
        new_row_last = false;
        /* The byte ends the lexeme (a row begins here in llguidance, unless it ended the
         * lexeme at its last byte already: complete and unable to go on) */
        if (glex_next(m->g->lex, cur, b[i]) == GLEX_DEAD && !ends_there(m, cur)) {
            size_t back = row.start_byte ? row.start_byte - 1 : 0;
            row.start_byte = s - back;
            row.tok_start = k;
            new_row_last = true;
        }
        og_status *st = step(m, cur, b[i], &nx);
        if (st || nx == GLEX_DEAD) {
            gearley_pop_to(m->p, before.depth);
            if (st) return st;
            char desc[96];
            describe_token(v, token, desc, sizeof desc);
            return og_errorf(OG_ERR_INVALID_ARGUMENT,
                             "guide: token %d ('%s') is not allowed here: its byte %zu cannot "
                             "follow", token, desc, i);
        }
        cur = nx;
        if (ends_there(m, cur)) { /* llguidance ends it at this byte: the next row */
            row.start_byte = s;
            row.tok_start = k;
            new_row_last = true;
        }
    }
    m->lex = cur;
    m->pending = true;
    if (row.start_byte >= applied0) row.tok_start = k;
    row.nbytes = applied0 + len;
    m->row = row;
    og_status *st = after_token(m, new_row_last);
    if (st) {
        gearley_pop_to(m->p, before.depth);
        m->lex = before.lex;
        m->pending = before.pending;
        m->row = before.row;
        return st;
    }
    m->checks[m->n_checks++] = before;
    return NULL;
}

og_status *guide_matcher_consume(guide_matcher *m, int32_t token) {
    pthread_mutex_lock(&m->g->lock);
    og_status *st = consume_locked(m, token);
    pthread_mutex_unlock(&m->g->lock);
    return st;
}

og_status *guide_matcher_rollback(guide_matcher *m, size_t n) {
    if (n > m->n_checks)
        return og_errorf(OG_ERR_INVALID_ARGUMENT,
                         "guide: rollback of %zu tokens, but only %zu were consumed", n,
                         m->n_checks);
    if (!n) return NULL;
    pthread_mutex_lock(&m->g->lock);
    const gcheck *c = &m->checks[m->n_checks - n];
    gearley_pop_to(m->p, c->depth);
    m->lex = c->lex;
    m->pending = c->pending;
    m->stopped = c->stopped;
    m->row = c->row;
    m->n_checks -= n;
    pthread_mutex_unlock(&m->g->lock);
    return NULL;
}

size_t guide_matcher_consumed(const guide_matcher *m) { return m->n_checks; }

void guide_matcher_parser_limits(guide_matcher *m, size_t max_items_per_set, size_t max_bytes) {
    gearley_set_limits(m->p, max_items_per_set, max_bytes);
}

bool guide_matcher_accepting(guide_matcher *m) {
    pthread_mutex_lock(&m->g->lock);
    bool acc;
    og_status *st = is_accepting(m, &acc);
    pthread_mutex_unlock(&m->g->lock);
    bool ok = !st;
    og_status_free(st);
    return ok && acc;
}

bool guide_matcher_stopped(guide_matcher *m) {
    if (m->stopped) return true;
    pthread_mutex_lock(&m->g->lock);
    bool acc = false;
    og_status *st = is_accepting(m, &acc);
    if (!st && acc) st = compute_mask(m, m->scratch);
    bool only_stops = !st && acc;
    if (only_stops) {
        for (size_t i = 0; i < m->n_stop; i++)
            m->scratch[m->stops[i] >> 5] &= ~(1u << (m->stops[i] & 31));
        size_t words = guide_mask_words(m->g->vocab->n);
        for (size_t i = 0; i < words && only_stops; i++) only_stops = !m->scratch[i];
    }
    pthread_mutex_unlock(&m->g->lock);
    og_status_free(st);
    return only_stops;
}
