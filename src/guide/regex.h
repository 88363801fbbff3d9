/* Internal to the lexer: the byte-level NFA that holds every lexeme, and the regular
 * expression compiler that adds one expression to it (regex.c). Thompson's construction,
 * built backwards: a fragment is compiled towards the state that follows it, so every
 * state is written once and never patched, except the loop state of `*`. */
#ifndef OG_GUIDE_REGEX_H
#define OG_GUIDE_REGEX_H

#include "base/status.h"

#include <stddef.h>
#include <stdint.h>

#define GN_NONE UINT32_MAX

enum {
    GN_RANGE,  /* one byte in [lo, hi], then `out` */
    GN_SPLIT,  /* epsilon to `out` and `out2` (either may be GN_NONE) */
    GN_ACCEPT, /* lexeme `out` is complete */
    GN_VETO,   /* lexeme `out` is not complete here (an excluded string ended) */
};

typedef struct gnfa_state {
    uint8_t kind;
    uint8_t lo, hi;
    uint8_t veto; /* bit 0: part of an exclusion's branch (does not keep a DFA state
                   * alive); bit 1 (GN_REP_END): a repeat's end (gnfa_rep) */
    uint32_t out, out2;
} gnfa_state;

#define GN_REP_END 2

/* A counted repetition x{min,max} with a large max kept as one copy of x (the template:
 * states [first, first + size), entry `entry`, its exit the SPLIT `end` flagged
 * GN_REP_END), the other copies virtual: copy c >= 1 of template state s is id
 * vbase + (c - 1) * size + (s - first), above every real state. The end of copy c goes on
 * to copy c + 1 while c + 1 < max and to `after` once c + 1 >= min; as stored, `end`
 * leads to `after` only (what the checks that read stored edges need). */
typedef struct gnfa_rep {
    uint32_t first, size, entry, end, after, min, max, vbase;
} gnfa_rep;

typedef struct gnfa {
    gnfa_state *st;
    uint32_t n, cap;
    uint32_t max; /* states in all, past which adding fails */
    gnfa_rep *reps; /* by increasing vbase */
    uint32_t n_reps, cap_reps;
    uint32_t vnext; /* the next virtual id */
    uint8_t plain;  /* no repeats (scratch NFAs whose edges are read as stored) */
} gnfa;

/* The first virtual id: real states stay below it. */
#define GNFA_VBASE (1u << 26)

/* State x as matching sees it: a real state as stored, a repeat's end or a virtual copy's
 * state as computed into *tmp. */
const gnfa_state *gnfa_virtual(const gnfa *nfa, uint32_t x, gnfa_state *tmp);
static inline const gnfa_state *gnfa_get(const gnfa *nfa, uint32_t x, gnfa_state *tmp)
{
    if (x < nfa->n && !(nfa->st[x].veto & GN_REP_END)) return &nfa->st[x];
    return gnfa_virtual(nfa, x, tmp);
}
/* The real (template) state a virtual id copies; x itself when real. */
uint32_t gnfa_template(const gnfa *nfa, uint32_t x);
/* Drops the states from n0 on and the repeats among them (a lexeme that failed). */
void gnfa_truncate(gnfa *nfa, uint32_t n0);

/* Appends a state; GN_NONE when out of memory or past nfa->max. */
uint32_t gnfa_add(gnfa *nfa, uint8_t kind, uint8_t lo, uint8_t hi, uint32_t out, uint32_t out2);

/* Compiles `re` (Rust regex syntax, see lexer.h) into states that lead to `next`, and sets
 * *entry to the first of them. Errors: "<what> at column N: <reason>". On error the
 * states added stay in the NFA unused (the caller truncates nfa->n back). */
og_status *gre_compile(gnfa *nfa, const char *re, size_t len, const char *what,
                       uint32_t next, uint32_t *entry);

/* One part of an intersection: a regular expression (re, len), or, with re NULL, the
 * decimal numbers that llguidance's multipleOf takes for coef * 10^-exp: an optional
 * '-', digits, and with exp > 0 a '.' and fraction digits, no exponent (regex_and.c). */
typedef struct gre_part {
    const char *re;
    size_t len;
    uint32_t coef, exp;
} gre_part;

/* Compiles the intersection of the parts' languages (strings every part matches) into
 * states that lead to `next`, as gre_compile does. The product automaton holds only
 * the pairs of states reachable together; past GRE_MAX_STATES it is refused. */
og_status *gre_compile_and(gnfa *nfa, const gre_part *parts, size_t n, const char *what,
                           uint32_t next, uint32_t *entry);

/* Inside the regex compiler (regex_and.c): the product of the fragments ent[i] .. end[i]
 * (markers: GN_ACCEPT states of sc), folded pairwise (the intermediate ones in sc) into
 * states of dst that lead to next; and the complement of one fragment (every byte string
 * it does not match) as a complete DFA written as states of dst. GN_NONE past `limit`
 * (dst->n may not pass it) or the complement's 4096 DFA states. */
uint32_t gre_fold(gnfa *sc, const uint32_t *ent, const uint32_t *end, size_t n, gnfa *dst,
                  uint32_t next, uint32_t limit);
uint32_t gre_complement(const gnfa *src, uint32_t entry, uint32_t end, gnfa *dst, uint32_t next,
                        uint32_t limit);

/* Compiles as gre_compile, with llguidance's Lark terminal operators as groups:
 * (?&A&&B..) the strings every part matches, (?~A) the byte strings A does not match,
 * (?*A&&B..) the concatenations of consecutive parts (%regex substring). */
og_status *gre_compile_ext(gnfa *nfa, const char *re, size_t len, const char *what,
                           uint32_t next, uint32_t *entry);

/* Most repetitions `{n,m}` may count, and most NFA states one expression may become. */
#define GRE_MAX_REPEAT 1000000u
#define GRE_MAX_STATES (1u << 21)
/* Most NFA states one intersection (product automaton) may become. */
#define GRE_MAX_PRODUCT (1u << 19)
/* Most NFA states of all lexemes together (16 bytes each). */
#define GNFA_MAX_STATES (1u << 24)

#endif
