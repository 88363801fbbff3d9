/* The constraint engine's grammar, Earley parser, token trie and matcher (src/guide):
 * the parser on hand-built grammars (ambiguous, nullable, left- and right-recursive),
 * and matcher masks on hand vocabularies whose tokens cross lexeme ends, each checked
 * against the slow definition (every token tried byte by byte on the state, then rolled
 * back), along random walks with rollbacks. */
#include "testing.h"

#include "guide/earley.h"
#include "guide/grammar.h"

#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>

/* ---- the Earley parser on hand grammars (lexemes are plain ids here) ---------------- */

enum { LN, LPLUS, LA, LB, LC, LX };

static gsym nt(gcfg *c, const char *name) {
    gsym s = -1;
    og_status *st = gcfg_nonterminal(c, name, &s);
    og_status_free(st);
    return s;
}

#define RULE(c, lhs, ...)                                                                \
    do {                                                                                 \
        const gsym rhs_[] = {__VA_ARGS__};                                               \
        CHECK_OK(gcfg_add_rule((c), (lhs), rhs_, sizeof rhs_ / sizeof *rhs_));           \
    } while (0)
#define EMPTY(c, lhs) CHECK_OK(gcfg_add_rule((c), (lhs), NULL, 0))
#define L(id) GSYM_LEX(id)

/* Scans one lexeme; returns whether the parser took it. */
static bool scan1(gearley *p, int id) {
    uint64_t set = 1ull << id;
    bool pushed = false;
    og_status *st = gearley_scan(p, &set, &pushed);
    if (st) {
        fprintf(stderr, "scan: %s\n", og_status_message(st));
        og_status_free(st);
        return false;
    }
    return pushed;
}

static uint64_t expected(const gearley *p) { return gearley_expected(p)[0]; }

typedef struct parser_fixture {
    gcfg *cfg;
    gearley_tab *tab;
    gearley *p;
} parser_fixture;

static og_status *fixture_open(parser_fixture *f, int n_lexemes) {
    OG_TRY(gcfg_freeze(f->cfg, n_lexemes));
    OG_TRY(gearley_tab_new(f->cfg, n_lexemes, &f->tab));
    return gearley_new(f->tab, &f->p);
}

static void fixture_close(parser_fixture *f) {
    gearley_free(f->p);
    gearley_tab_free(f->tab);
    gcfg_free(f->cfg);
}

TEST(guide_earley_ambiguous) {
    /* E -> E + E | n: every n ends a complete sentence, and the many parses of n+n+n+n
     * stay deduplicated. */
    parser_fixture f = {0};
    CHECK_OK(gcfg_new(&f.cfg));
    gsym e = nt(f.cfg, "E");
    RULE(f.cfg, e, e, L(LPLUS), e);
    RULE(f.cfg, e, L(LN));
    CHECK_OK(gcfg_set_start(f.cfg, e));
    CHECK_OK(fixture_open(&f, 2));
    CHECK_EQ_INT(expected(f.p), 1u << LN);
    CHECK(!gearley_complete(f.p));
    CHECK(!scan1(f.p, LPLUS));
    CHECK_EQ_INT(gearley_depth(f.p), 1);
    for (int i = 0; i < 4; i++) {
        if (i) {
            CHECK(scan1(f.p, LPLUS));
            CHECK(!gearley_complete(f.p));
            CHECK_EQ_INT(expected(f.p), 1u << LN);
        }
        CHECK(scan1(f.p, LN));
        CHECK(gearley_complete(f.p));
        CHECK_EQ_INT(expected(f.p), 1u << LPLUS);
        CHECK(!scan1(f.p, LN));
    }
    CHECK_EQ_INT(gearley_depth(f.p), 8);
    /* Popping back to "n +" and going on another way. */
    gearley_pop_to(f.p, 3);
    CHECK(!gearley_complete(f.p));
    CHECK(scan1(f.p, LN));
    CHECK(gearley_complete(f.p));
    fixture_close(&f);
}

TEST(guide_earley_nullable) {
    /* S -> A B c | A A A x,  A -> ε | a,  B -> ε | b: nullable prefixes of any length. */
    parser_fixture f = {0};
    CHECK_OK(gcfg_new(&f.cfg));
    gsym s = nt(f.cfg, "S"), a = nt(f.cfg, "A"), b = nt(f.cfg, "B");
    RULE(f.cfg, s, a, b, L(LC));
    RULE(f.cfg, s, a, a, a, L(LX));
    EMPTY(f.cfg, a);
    RULE(f.cfg, a, L(LA));
    EMPTY(f.cfg, b);
    RULE(f.cfg, b, L(LB));
    CHECK_OK(gcfg_set_start(f.cfg, s));
    CHECK_OK(fixture_open(&f, 6));
    CHECK(gcfg_nullable(f.cfg, a) && gcfg_nullable(f.cfg, b) && !gcfg_nullable(f.cfg, s));
    CHECK_EQ_INT(expected(f.p), (1u << LA) | (1u << LB) | (1u << LC) | (1u << LX));
    CHECK(scan1(f.p, LA));
    CHECK_EQ_INT(expected(f.p), (1u << LA) | (1u << LB) | (1u << LC) | (1u << LX));
    CHECK(scan1(f.p, LA));
    CHECK_EQ_INT(expected(f.p), (1u << LA) | (1u << LX));
    CHECK(scan1(f.p, LA));
    CHECK_EQ_INT(expected(f.p), 1u << LX);
    CHECK(!scan1(f.p, LA));
    CHECK(scan1(f.p, LX));
    CHECK(gearley_complete(f.p));
    CHECK_EQ_INT(expected(f.p), 0);
    gearley_pop_to(f.p, 1);
    CHECK(scan1(f.p, LB));
    CHECK_EQ_INT(expected(f.p), 1u << LC);
    CHECK(scan1(f.p, LC));
    CHECK(gearley_complete(f.p));
    fixture_close(&f);

    /* A nullable start is complete before any lexeme. */
    parser_fixture g = {0};
    CHECK_OK(gcfg_new(&g.cfg));
    gsym t = nt(g.cfg, "T"), u = nt(g.cfg, "U");
    RULE(g.cfg, t, u, u);
    EMPTY(g.cfg, u);
    RULE(g.cfg, u, L(LA));
    CHECK_OK(gcfg_set_start(g.cfg, t));
    CHECK_OK(fixture_open(&g, 3));
    CHECK(gearley_complete(g.p));
    CHECK(scan1(g.p, LA));
    CHECK(gearley_complete(g.p));
    CHECK(scan1(g.p, LA));
    CHECK(gearley_complete(g.p));
    CHECK(!scan1(g.p, LA));
    fixture_close(&g);
}

TEST(guide_earley_recursion) {
    /* S -> Lft c | Rgt b,  Lft -> Lft x | x,  Rgt -> x Rgt | x. */
    parser_fixture f = {0};
    CHECK_OK(gcfg_new(&f.cfg));
    gsym s = nt(f.cfg, "S"), l = nt(f.cfg, "Lft"), r = nt(f.cfg, "Rgt");
    RULE(f.cfg, s, l, L(LC));
    RULE(f.cfg, s, r, L(LB));
    RULE(f.cfg, l, l, L(LX));
    RULE(f.cfg, l, L(LX));
    RULE(f.cfg, r, L(LX), r);
    RULE(f.cfg, r, L(LX));
    CHECK_OK(gcfg_set_start(f.cfg, s));
    CHECK_OK(fixture_open(&f, 6));
    CHECK_EQ_INT(expected(f.p), 1u << LX);
    for (int i = 0; i < 50; i++) {
        CHECK(scan1(f.p, LX));
        CHECK_EQ_INT(expected(f.p), (1u << LX) | (1u << LB) | (1u << LC));
        CHECK(!gearley_complete(f.p));
    }
    CHECK(scan1(f.p, LB));
    CHECK(gearley_complete(f.p));
    gearley_pop_to(f.p, 51);
    CHECK(scan1(f.p, LC));
    CHECK(gearley_complete(f.p));
    fixture_close(&f);
}

TEST(guide_cfg_refusals) {
    gcfg *c;
    CHECK_OK(gcfg_new(&c));
    gsym s = nt(c, "start"), loop = nt(c, "loop");
    CHECK_ERR(gcfg_freeze(c, 1), OG_ERR_INVALID_ARGUMENT, "no start");
    CHECK_OK(gcfg_set_start(c, s));
    RULE(c, s, L(0));
    CHECK_ERR(gcfg_freeze(c, 1), OG_ERR_INVALID_ARGUMENT, "'loop' has no rule");
    gcfg_free(c);

    CHECK_OK(gcfg_new(&c));
    s = nt(c, "start");
    loop = nt(c, "loop");
    RULE(c, s, loop);
    RULE(c, loop, L(0), loop);
    CHECK_OK(gcfg_set_start(c, s));
    CHECK_ERR(gcfg_freeze(c, 1), OG_ERR_INVALID_ARGUMENT, "'start' derives no string");
    gcfg_free(c);

    CHECK_OK(gcfg_new(&c));
    s = nt(c, "start");
    RULE(c, s, L(3));
    CHECK_OK(gcfg_set_start(c, s));
    CHECK_ERR(gcfg_freeze(c, 2), OG_ERR_INVALID_ARGUMENT, "lexeme 3");
    gcfg_free(c);
}

TEST(guide_earley_limits) {
    /* S -> A*, A -> one of 30 lexemes via its own nonterminal: 60 items in a set. */
    parser_fixture f = {0};
    CHECK_OK(gcfg_new(&f.cfg));
    gsym s = nt(f.cfg, "S");
    for (int i = 0; i < 30; i++) {
        gsym a = nt(f.cfg, "A");
        RULE(f.cfg, s, a, s);
        RULE(f.cfg, a, L(i));
    }
    EMPTY(f.cfg, s);
    CHECK_OK(gcfg_set_start(f.cfg, s));
    CHECK_OK(fixture_open(&f, 30));
    gearley_set_limits(f.p, 40, (size_t)1 << 30);
    uint64_t one = 1;
    bool pushed;
    CHECK_ERR(gearley_scan(f.p, &one, &pushed), OG_ERR_RUNTIME, "limit on items per set");
    CHECK_EQ_INT(gearley_depth(f.p), 1);
    gearley_set_limits(f.p, 1000, (size_t)1 << 30);
    CHECK(scan1(f.p, 0));
    gearley_set_limits(f.p, 1000, 4096);
    og_status *st = NULL;
    for (int i = 0; i < 1000 && !st; i++) st = gearley_scan(f.p, &one, &pushed);
    CHECK(st != NULL);
    CHECK(strstr(og_status_message(st), "limit on parser memory") != NULL);
    og_status_free(st);
    fixture_close(&f);
}

/* ---- the matcher on hand vocabularies ----------------------------------------------- */

typedef struct hand_vocab {
    guide_vocab *v;
    size_t n;
    int32_t stop;
} hand_vocab;

/* Tokens from NUL-terminated strings; "" is a token with no bytes, and `excluded` names
 * one excluded token (the stop id is the last, excluded too). */
static og_status *vocab_of(const char *const *toks, size_t n, int excluded, hand_vocab *out) {
    const uint8_t *bytes[64];
    uint32_t lens[64];
    bool ex[64] = {0};
    for (size_t i = 0; i < n; i++) {
        bytes[i] = (const uint8_t *)toks[i];
        lens[i] = (uint32_t)strlen(toks[i]);
    }
    bytes[n] = (const uint8_t *)"</s>";
    lens[n] = 4;
    ex[n] = true;
    if (excluded >= 0) ex[excluded] = true;
    out->n = n + 1;
    out->stop = (int32_t)n;
    return guide_vocab_new(n + 1, bytes, lens, ex, &out->v);
}

static bool bit(const uint32_t *mask, size_t t) { return mask[t / 32] >> (t % 32) & 1; }

/* The slow definition of the mask: every token tried on the state, then undone. */
static og_status *reference_mask(guide_matcher *m, const hand_vocab *hv, uint32_t *mask) {
    memset(mask, 0, guide_mask_words(hv->n) * sizeof *mask);
    bool acc = guide_matcher_accepting(m);
    for (size_t t = 0; t < hv->n; t++) {
        if ((int32_t)t == hv->stop) {
            if (acc) mask[t / 32] |= 1u << (t % 32);
            continue;
        }
        og_status *st = guide_matcher_consume(m, (int32_t)t);
        if (st) {
            og_status_free(st);
            continue;
        }
        mask[t / 32] |= 1u << (t % 32);
        OG_TRY(guide_matcher_rollback(m, 1));
    }
    return NULL;
}

static uint64_t rng_next(uint64_t *s) {
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

/* Random walks: at every step the mask equals the reference; every few steps a rollback
 * of 1-3 tokens gives back the mask seen there. Returns the steps walked. */
static int walk_against_reference(guide_grammar *g, const hand_vocab *hv, int walks, int steps,
                                  uint64_t seed, const char *const *toks) {
    size_t words = guide_mask_words(hv->n);
    uint32_t *mask = calloc(words, 4), *ref = calloc(words, 4);
    uint32_t *seen = calloc(words * (size_t)(steps + 1), 4);
    int total = 0;
    for (int w = 0; w < walks; w++) {
        guide_matcher *m = NULL;
        og_status *st = guide_matcher_new(g, &hv->stop, 1, &m);
        for (int k = 0; !st && k < steps; k++) {
            st = guide_matcher_mask(m, mask);
            if (!st) st = reference_mask(m, hv, ref);
            if (st) break;
            total++;
            for (size_t i = 0; i < hv->n; i++)
                if (bit(mask, i) != bit(ref, i)) {
                    test_fail(__FILE__, __LINE__,
                              "walk %d step %d: token %zu ('%s') mask %d, reference %d", w, k, i,
                              i < hv->n - 1 ? toks[i] : "</s>", bit(mask, i), bit(ref, i));
                    goto done;
                }
            if (bit(mask, (size_t)hv->stop) != guide_matcher_accepting(m)) {
                test_fail(__FILE__, __LINE__, "walk %d step %d: stop id against accepting", w, k);
                goto done;
            }
            size_t depth = guide_matcher_consumed(m);
            memcpy(seen + depth * words, mask, words * 4);
            if (depth >= 3 && rng_next(&seed) % 5 == 0) {
                size_t back = 1 + rng_next(&seed) % 3;
                st = guide_matcher_rollback(m, back);
                if (!st) st = guide_matcher_mask(m, mask);
                if (st) break;
                if (memcmp(mask, seen + (depth - back) * words, words * 4)) {
                    test_fail(__FILE__, __LINE__, "walk %d step %d: rollback %zu changed the mask",
                              w, k, back);
                    goto done;
                }
            }
            size_t n_allowed = 0;
            for (size_t i = 0; i < hv->n; i++) n_allowed += bit(mask, i);
            if (!n_allowed) break;
            size_t pick = rng_next(&seed) % n_allowed;
            for (size_t i = 0; i < hv->n; i++)
                if (bit(mask, i) && !pick--) {
                    st = guide_matcher_consume(m, (int32_t)i);
                    break;
                }
            if (!st && guide_matcher_stopped(m)) break;
        }
        if (st) {
            test_fail(__FILE__, __LINE__, "walk %d: %s", w, og_status_message(st));
            og_status_free(st);
        }
    done:
        guide_matcher_free(m);
    }
    free(mask);
    free(ref);
    free(seen);
    printf("    %d masks equal to the reference over %d walks\n", total, walks);
    return total;
}

/* Skips (true) when the lexer is not built in this tree. */
static bool no_lexer(glex **lex) {
    og_status *st = glex_new(lex);
    if (!st) return false;
    test_skip("the lexer is not available: %s", og_status_message(st));
    og_status_free(st);
    return true;
}

static int lit(glex *lex, const char *s) {
    int id = -1;
    og_status *st = glex_add_literal(lex, (const uint8_t *)s, strlen(s), &id);
    og_status_free(st);
    return id;
}

static int rx(glex *lex, const char *re) {
    int id = -1;
    og_status *st = glex_add_regex(lex, re, strlen(re), "test", &id);
    if (st) fprintf(stderr, "regex %s: %s\n", re, og_status_message(st));
    og_status_free(st);
    return id;
}

/* A small JSON: values are arrays (left-recursive elements), objects (right-recursive
 * members), numbers, strings and true; blanks between lexemes are ignored. */
static og_status *json_like(glex *lex, gcfg *c) {
    int lb = lit(lex, "["), rb = lit(lex, "]"), lc = lit(lex, "{"), rc = lit(lex, "}");
    int comma = lit(lex, ","), colon = lit(lex, ":"), tru = lit(lex, "true");
    int num = rx(lex, "-?[0-9]+(\\.[0-9]+)?"), str = rx(lex, "\"[^\"\\\\]*\"");
    int ws = rx(lex, "[ \\n]+");
    if (num < 0 || str < 0 || ws < 0)
        return og_errorf(OG_ERR_RUNTIME, "the test's regexes did not compile");
    gsym value, arr, elems, obj, members, pair;
    OG_TRY(gcfg_nonterminal(c, "value", &value));
    OG_TRY(gcfg_nonterminal(c, "array", &arr));
    OG_TRY(gcfg_nonterminal(c, "elements", &elems));
    OG_TRY(gcfg_nonterminal(c, "object", &obj));
    OG_TRY(gcfg_nonterminal(c, "members", &members));
    OG_TRY(gcfg_nonterminal(c, "pair", &pair));
    const gsym r[][4] = {
        {value, arr},           {value, obj},        {value, L(num)},
        {value, L(str)},        {value, L(tru)},     {arr, L(lb), L(rb)},
        {arr, L(lb), elems, L(rb)},                  {elems, value},
        {elems, elems, L(comma), value},             {obj, L(lc), L(rc)},
        {obj, L(lc), members, L(rc)},                {members, pair},
        {members, pair, L(comma), members},          {pair, L(str), L(colon), value},
    };
    const int len[] = {1, 1, 1, 1, 1, 2, 3, 1, 3, 2, 3, 1, 3, 3};
    for (size_t i = 0; i < sizeof len / sizeof *len; i++)
        OG_TRY(gcfg_add_rule(c, r[i][0], &r[i][1], (size_t)len[i]));
    OG_TRY(gcfg_add_ignore(c, ws));
    return gcfg_set_start(c, value);
}

static const char *const json_toks[] = {
    "[", "]", "{", "}", ",", ":", " ", "\n", "1", "2", "-", ".", "\"", "a", "t", "r", "u",
    "e", "true", "tr", "ue", "12", "1,", "[1", "1]", "],", "]]", "[[", "\":", "\": ", "{\"",
    "\"a\"", "a\"", "\",", "\"}", "1.", ".5", "5", " [", "\n]", ", ", "}]", "]}", "[]", "{}",
    "1 ", " 1", "true]", "e,", "", "\"\"", "x", "-1", "1}",
};
#define N_JSON_TOKS (sizeof json_toks / sizeof *json_toks)
static int tok_id(const char *s) {
    for (size_t i = 0; i < N_JSON_TOKS; i++)
        if (!strcmp(json_toks[i], s)) return (int)i;
    return -1;
}

TEST(guide_matcher_json_like) {
    glex *lex;
    if (no_lexer(&lex)) return;
    gcfg *c;
    CHECK_OK(gcfg_new(&c));
    CHECK_OK(json_like(lex, c));
    hand_vocab hv;
    CHECK_OK(vocab_of(json_toks, N_JSON_TOKS, tok_id("x"), &hv));
    guide_grammar *g;
    CHECK_OK(guide_grammar_from(lex, c, hv.v, &g));
    guide_matcher *m;
    CHECK_OK(guide_matcher_new(g, &hv.stop, 1, &m));
    uint32_t mask[4];
    CHECK_OK(guide_matcher_mask(m, mask));
    /* At the start: a value's first lexeme (blanks too), never the excluded "x" or the
     * empty token, no stop. */
    const char *yes0[] = {"[", "{", "1", "-", "\"", "t", "true", "tr", "12", "[1", "[[", "[]",
                          "{}", "{\"", "\"a\"", "1.", "-1", "\"\""};
    /* A number or true ends the top value: no "," "]" "}" after it, nor blanks, which
     * come only between lexemes (as llguidance: not first, not where nothing follows). */
    const char *no0[] = {"]", "}", ",", ":", "x", "", "ue", "a", ".5", "e,", "],", "1,", "1]",
                         "true]", "1}", " ", "\n", " [", " 1", "1 "};
    for (size_t i = 0; i < sizeof yes0 / sizeof *yes0; i++) {
        if (!bit(mask, (size_t)tok_id(yes0[i]))) test_fail(__FILE__, __LINE__, "'%s' refused", yes0[i]);
    }
    for (size_t i = 0; i < sizeof no0 / sizeof *no0; i++) {
        if (bit(mask, (size_t)tok_id(no0[i]))) test_fail(__FILE__, __LINE__, "'%s' allowed", no0[i]);
    }
    CHECK(!bit(mask, (size_t)hv.stop));
    /* "[1" then "2": the number goes on; after "[12", "]," is refused (it closes the
     * array, and nothing may follow the top value but blanks). */
    CHECK_OK(guide_matcher_consume(m, tok_id("[1")));
    CHECK_OK(guide_matcher_consume(m, tok_id("2")));
    CHECK(!guide_matcher_accepting(m));
    CHECK_OK(guide_matcher_mask(m, mask));
    CHECK(bit(mask, (size_t)tok_id("]")) && bit(mask, (size_t)tok_id("1,")) &&
          bit(mask, (size_t)tok_id("]]")) == false && bit(mask, (size_t)tok_id("],")) == false);
    CHECK(bit(mask, (size_t)tok_id("1]")) && bit(mask, (size_t)tok_id(", ")) &&
          bit(mask, (size_t)tok_id(".5")) && !bit(mask, (size_t)tok_id(":")));
    CHECK_ERR(guide_matcher_consume(m, tok_id("]]")), OG_ERR_INVALID_ARGUMENT, "byte 1");
    CHECK_EQ_INT(guide_matcher_consumed(m), 2);
    CHECK_ERR(guide_matcher_consume(m, hv.stop), OG_ERR_INVALID_ARGUMENT, "not complete");
    CHECK_ERR(guide_matcher_consume(m, tok_id("x")), OG_ERR_INVALID_ARGUMENT, "special");
    CHECK_ERR(guide_matcher_consume(m, tok_id("")), OG_ERR_INVALID_ARGUMENT, "no bytes");
    CHECK_OK(guide_matcher_consume(m, tok_id("1 ")));
    CHECK_OK(guide_matcher_mask(m, mask));
    CHECK(bit(mask, (size_t)tok_id(" ")) && bit(mask, (size_t)tok_id("\n]")) &&
          !bit(mask, (size_t)tok_id("1")) && !bit(mask, (size_t)hv.stop));
    CHECK_OK(guide_matcher_consume(m, tok_id("]")));
    /* "[121 ]": complete, and nothing may follow: only the stop id. */
    CHECK(guide_matcher_accepting(m));
    CHECK(guide_matcher_stopped(m));
    CHECK_OK(guide_matcher_mask(m, mask));
    for (size_t i = 0; i < hv.n; i++) CHECK_EQ_INT(bit(mask, i), (int32_t)i == hv.stop);
    CHECK_OK(guide_matcher_consume(m, hv.stop));
    CHECK(guide_matcher_stopped(m));
    CHECK_ERR(guide_matcher_consume(m, tok_id("1")), OG_ERR_INVALID_ARGUMENT, "ended");
    CHECK_OK(guide_matcher_mask(m, mask));
    for (size_t i = 0; i < hv.n; i++) CHECK_EQ_INT(bit(mask, i), (int32_t)i == hv.stop);
    CHECK_OK(guide_matcher_rollback(m, 3));
    CHECK_EQ_INT(guide_matcher_consumed(m), 2);
    CHECK(!guide_matcher_accepting(m));
    CHECK_ERR(guide_matcher_rollback(m, 4), OG_ERR_INVALID_ARGUMENT, "only 2");
    guide_matcher_free(m);

    int steps = walk_against_reference(g, &hv, 100, 40, 0x9e3779b97f4a7c15ull, json_toks);
    CHECK(steps > 300);
    guide_grammar_unref(g);
    guide_vocab_free(hv.v);
}

/* Greedy lexing with lexemes that overlap: A = /a+/, B = /a*b/, C = "ab" (B and C both
 * end "ab": scanned as one), S -> S X | ε (nullable, left-recursive), X -> A | B | C | D
 * with D = "ba" needing the parser to tell it from B then A. */
static const char *const ab_toks[] = {"a", "b", "aa", "ab", "ba", "bb", "aab", "abab",
                                      "c", "bab", "aaa", "b a", " "};
#define N_AB_TOKS (sizeof ab_toks / sizeof *ab_toks)

TEST(guide_matcher_greedy_overlap) {
    glex *lex;
    if (no_lexer(&lex)) return;
    gcfg *c;
    CHECK_OK(gcfg_new(&c));
    int a = rx(lex, "a+"), b = rx(lex, "a*b"), cc = lit(lex, "ab"), d = lit(lex, "ba");
    int ws = rx(lex, " ");
    CHECK(a >= 0 && b >= 0 && cc >= 0 && d >= 0 && ws >= 0);
    gsym s = nt(c, "S"), x = nt(c, "X"), y = nt(c, "Y");
    RULE(c, s, s, x);
    EMPTY(c, s);
    RULE(c, x, L(a));
    RULE(c, x, L(b));
    RULE(c, x, y);
    RULE(c, y, L(cc));
    RULE(c, y, L(d));
    CHECK_OK(gcfg_add_ignore(c, ws));
    CHECK_OK(gcfg_set_start(c, s));
    hand_vocab hv;
    CHECK_OK(vocab_of(ab_toks, N_AB_TOKS, -1, &hv));
    guide_grammar *g;
    CHECK_OK(guide_grammar_from(lex, c, hv.v, &g));
    guide_matcher *m;
    CHECK_OK(guide_matcher_new(g, &hv.stop, 1, &m));
    CHECK(guide_matcher_accepting(m)); /* S is nullable */
    CHECK_OK(guide_matcher_consume(m, 0)); /* "a" */
    CHECK(guide_matcher_accepting(m));
    CHECK_ERR(guide_matcher_consume(m, 8), OG_ERR_INVALID_ARGUMENT, "not allowed");
    guide_matcher_free(m);
    int steps = walk_against_reference(g, &hv, 40, 25, 12345, ab_toks);
    CHECK(steps > 300);
    guide_grammar_unref(g);
    guide_vocab_free(hv.v);
}

static const char *const re_toks[] = {"a", "b", "c", "d", "e", "ab", "cd", "abcd", "de",
                                      "1", "12", "123", "e1", "d1", "b12", "5", "9", "1234",
                                      "ba", "ee"};
#define N_RE_TOKS (sizeof re_toks / sizeof *re_toks)

TEST(guide_matcher_regex) {
    glex *lex;
    if (no_lexer(&lex)) return;
    glex_free(lex);
    hand_vocab hv;
    CHECK_OK(vocab_of(re_toks, N_RE_TOKS, -1, &hv));
    const char re[] = "(ab|cd)*e?[0-9]{2,3}";
    guide_grammar *g;
    CHECK_OK(guide_grammar_compile(GUIDE_REGEX, re, strlen(re), hv.v, &g));
    guide_matcher *m;
    CHECK_OK(guide_matcher_new(g, &hv.stop, 1, &m));
    const int32_t seq[] = {7, 5, 12, 9}; /* abcd ab e1 1 */
    for (size_t i = 0; i < 4; i++) {
        CHECK(!guide_matcher_accepting(m));
        CHECK_OK(guide_matcher_consume(m, seq[i]));
    }
    CHECK(guide_matcher_accepting(m));
    CHECK(!guide_matcher_stopped(m)); /* one more digit may follow */
    CHECK_OK(guide_matcher_consume(m, 16));
    CHECK(guide_matcher_accepting(m));
    CHECK(guide_matcher_stopped(m)); /* three digits: only the stop id */
    uint32_t mask[1];
    CHECK_OK(guide_matcher_mask(m, mask));
    CHECK_EQ_INT(mask[0], 1u << hv.stop);
    guide_matcher_free(m);
    int steps = walk_against_reference(g, &hv, 40, 12, 777, re_toks);
    CHECK(steps > 100);
    guide_grammar_unref(g);
    CHECK_ERR(guide_grammar_compile(GUIDE_REGEX, "(ab", 3, hv.v, &g), OG_ERR_INVALID_ARGUMENT,
              "regex");
    guide_vocab_free(hv.v);
}

TEST(guide_kind_names) {
    guide_kind k;
    CHECK_OK(guide_kind_parse("lark_grammar", &k));
    CHECK_EQ_INT(k, GUIDE_LARK);
    CHECK_OK(guide_kind_parse("json_object", &k));
    CHECK_EQ_INT(k, GUIDE_JSON_OBJECT);
    CHECK(!strcmp(guide_kind_name(GUIDE_REGEX), "regex"));
    CHECK_ERR(guide_kind_parse("grammar", &k), OG_ERR_INVALID_ARGUMENT, "json_schema, json_object");
}

/* A longest-match tokenizer over a hand vocabulary (ctx: the tokens, NULL-terminated). */
static og_status *longest_match(void *ctx, const uint8_t *bytes, size_t len, int32_t **ids,
                                size_t *n) {
    const char *const *toks = ctx;
    *ids = malloc((len ? len : 1) * sizeof **ids);
    if (!*ids) return og_oom();
    *n = 0;
    for (size_t at = 0; at < len;) {
        int best = -1;
        size_t best_len = 0;
        for (int t = 0; toks[t]; t++) {
            size_t l = strlen(toks[t]);
            if (l > best_len && l <= len - at && !memcmp(toks[t], bytes + at, l)) best = t, best_len = l;
        }
        if (best < 0) {
            free(*ids);
            return og_errorf(OG_ERR_INVALID_ARGUMENT, "no token for byte %zu", at);
        }
        (*ids)[(*n)++] = best;
        at += best_len;
    }
    return NULL;
}

/* The same with a space token before the text, as SentencePiece encodes a text's start:
 * the matcher then encodes forced bytes after a marker byte. */
static og_status *space_first(void *ctx, const uint8_t *bytes, size_t len, int32_t **ids,
                              size_t *n) {
    uint8_t buf[128] = {' '};
    if (len + 1 > sizeof buf) return og_errorf(OG_ERR_INVALID_ARGUMENT, "too long");
    memcpy(buf + 1, bytes, len);
    return longest_match(ctx, buf, len + 1, ids, n);
}

static const char *const forced_toks[] = {"a",  "b",   "c",  "d",  "e",  "f",  "g",
                                          "h",  "x",   "y",  "ab", "abc", "def", "gh",
                                          "cd", "bc",  "hx", " ",  "\x02", NULL};
#define N_FORCED_TOKS 19

static void forced_walk(guide_tokenize_fn fn) {
    hand_vocab hv;
    CHECK_OK(vocab_of(forced_toks, N_FORCED_TOKS, -1, &hv));
    guide_vocab_set_tokenize(hv.v, fn, (void *)forced_toks);
    guide_grammar *g;
    const char re[] = "abcdefgh(x|y)|abcdefghy";
    CHECK_OK(guide_grammar_compile(GUIDE_REGEX, re, strlen(re), hv.v, &g));
    guide_matcher *m;
    CHECK_OK(guide_matcher_new(g, &hv.stop, 1, &m));
    uint32_t mask[1];
    CHECK_OK(guide_matcher_mask(m, mask));
    CHECK_EQ_INT(mask[0], 1u << 11); /* abc */
    /* The language still takes other tokens (as llguidance's consume does). */
    CHECK_OK(guide_matcher_consume(m, 0)); /* a */
    CHECK_OK(guide_matcher_mask(m, mask));
    CHECK_EQ_INT(mask[0], 1u << 15); /* bc (def gh follow) */
    CHECK_OK(guide_matcher_consume(m, 15));
    CHECK_OK(guide_matcher_consume(m, 12)); /* def */
    CHECK_OK(guide_matcher_mask(m, mask));
    /* "gh" then x or y: "gh" is the last token of the encoding, so nothing is forced. */
    CHECK_EQ_INT(mask[0], (1u << 6) | (1u << 13));
    CHECK_OK(guide_matcher_consume(m, 13)); /* gh */
    CHECK_OK(guide_matcher_mask(m, mask));
    CHECK_EQ_INT(mask[0], (1u << 8) | (1u << 9));
    CHECK_OK(guide_matcher_consume(m, 8)); /* x: complete, nothing can follow */
    CHECK(guide_matcher_stopped(m));
    guide_matcher_free(m);
    guide_grammar_unref(g);

    /* A forced end keeps the last token: "ab" then the end is the token "ab". */
    CHECK_OK(guide_grammar_compile(GUIDE_REGEX, "ab", 2, hv.v, &g));
    CHECK_OK(guide_matcher_new(g, &hv.stop, 1, &m));
    CHECK_OK(guide_matcher_mask(m, mask));
    CHECK_EQ_INT(mask[0], 1u << 10);
    guide_matcher_free(m);
    guide_grammar_unref(g);
    guide_vocab_free(hv.v);
}

TEST(guide_matcher_forced_bytes) {
    /* With the tokenizer set, forced bytes allow only the first token of their encoding:
     * "abcdefgh" then x or y forces "abcdefgh" = abc def gh (gh dropped: it could merge
     * with what follows, as "hx" does), so only "abc". */
    glex *lex;
    if (no_lexer(&lex)) return;
    glex_free(lex);
    forced_walk(longest_match);
    forced_walk(space_first);
}

/* The slices (vocab.h): where a string's body takes a slice's tokens up to some length,
 * they are allowed without a walk. Bodies bounded by a count of characters (only the
 * shorter slice tokens fit), an unbounded body, a body narrower than both slices, quotes,
 * backslashes and a two-byte character: masks equal the token-by-token reference. */
static const char *const slice_toks[] = {"\"", "a", "b", "ab", "abc", "abcd", "abcde", "a_b",
                                         "b\"", "\\", "\\\"", "\xc3\xa9", "a\xc3\xa9",
                                         "\xc3", "\xa9", " a", "a\"", "_", NULL};
#define N_SLICE_TOKS 18

/* Each regex of res on the vocabulary toks (n of them), walked against the reference. */
static void regexes_against_reference(const char *const *toks, size_t n, const char *const *res,
                                      size_t n_res, int steps, uint64_t seed) {
    glex *lex;
    if (no_lexer(&lex)) return;
    glex_free(lex);
    hand_vocab hv;
    CHECK_OK(vocab_of(toks, n, -1, &hv));
    for (size_t r = 0; r < n_res; r++) {
        guide_grammar *g;
        CHECK_OK(guide_grammar_compile(GUIDE_REGEX, res[r], strlen(res[r]), hv.v, &g));
        CHECK(walk_against_reference(g, &hv, 30, steps, seed + r, toks) > 30);
        guide_grammar_unref(g);
    }
    guide_vocab_free(hv.v);
}

TEST(guide_matcher_slices) {
    static const char *const res[] = {"\"[a-z_\\xe9]{0,3}\"", "\"([^\"\\\\]|\\\\.)*\"",
                                      "\"[ab]{1,5}\"", "[a-z_]{2,4}"};
    regexes_against_reference(slice_toks, N_SLICE_TOKS, res, sizeof res / sizeof *res, 10, 4242);
}

/* Bodies whose fate is a count of characters (matcher.c's slice_cut: a string with a
 * maximum length) take the slice's tokens by their count, longer than the per-count sets
 * kept (GUIDE_SLICE_LENS) too: tokens of up to 40 characters, two-byte ones among them,
 * and bounds below, at and above those lengths; masks equal the token-by-token
 * reference. */
static const char *const count_toks[] = {
    "\"", "a", "aa", "aaaa", "aaaaaaaaaaaaaaaaa" /* 17 */, "aaaaaaaaaaaaaaaaaaaaaaaaa" /* 25 */,
    "\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9"
    "\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9" /* 18 */,
    "\xc3\xa9", "a\xc3\xa9", "a\"", "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa" /* 40 */, "b", "_",
    "\xc3", NULL};
#define N_COUNT_TOKS 14

TEST(guide_matcher_slice_counts) {
    static const char *const res[] = {"\"[a\\xe9]{0,18}\"", "\"[a\\xe9_]{3,30}\"",
                                      "\"[^\"]{0,50}\"", "\"a{0,16}\"", "\"a{17,17}\"",
                                      "[a_]{0,20}b"};
    regexes_against_reference(count_toks, N_COUNT_TOKS, res, sizeof res / sizeof *res, 12, 99);
}

/* A special token the grammar spells out (a tool-call marker such as Qwen's <tool_call>):
 * excluded from every walk, yet where the grammar forces its bytes and the tokenizer
 * encodes them as that token, the mask is that token alone and consuming it is allowed,
 * as llguidance allows it; elsewhere it stays refused. */
TEST(guide_matcher_forced_special_token) {
    glex *lex;
    if (no_lexer(&lex)) return;
    glex_free(lex);
    static const char *const toks[] = {"<", "t", "c", ">", "x", "<tc>", NULL};
    hand_vocab hv;
    CHECK_OK(vocab_of(toks, 6, 5, &hv)); /* "<tc>" (id 5) excluded, as a special token */
    guide_vocab_set_tokenize(hv.v, longest_match, (void *)toks);
    guide_grammar *g;
    const char lark[] = "start: \"<tc>\" \"x\"+";
    CHECK_OK(guide_grammar_compile(GUIDE_LARK, lark, strlen(lark), hv.v, &g));
    guide_matcher *m;
    CHECK_OK(guide_matcher_new(g, &hv.stop, 1, &m));
    uint32_t mask[1];
    CHECK_OK(guide_matcher_mask(m, mask));
    CHECK_EQ_INT(mask[0], 1u << 5);
    CHECK_OK(guide_matcher_consume(m, 5));
    CHECK_OK(guide_matcher_mask(m, mask));
    CHECK_EQ_INT(mask[0], 1u << 4); /* x */
    CHECK_OK(guide_matcher_consume(m, 4));
    CHECK_ERR(guide_matcher_consume(m, 5), OG_ERR_INVALID_ARGUMENT, "special token");
    CHECK_OK(guide_matcher_rollback(m, 2));
    CHECK_OK(guide_matcher_consume(m, 0)); /* "<" spelled byte by byte is still the language */
    guide_matcher_free(m);
    guide_grammar_unref(g);
    guide_vocab_free(hv.v);
}

/* The mask as a word (hand vocabularies of at most 32 tokens). */
static uint32_t mask_word(guide_matcher *m) {
    uint32_t mask[1] = {0};
    og_status *st = guide_matcher_mask(m, mask);
    if (st) {
        test_fail(__FILE__, __LINE__, "%s", og_status_message(st));
        og_status_free(st);
    }
    return mask[0];
}

/* A matcher of the Lark grammar (NULL, the test failed, when it does not compile). */
static guide_matcher *lark_matcher(const hand_vocab *hv, const char *lark, guide_grammar **g) {
    guide_matcher *m = NULL;
    *g = NULL;
    og_status *st = guide_grammar_compile(GUIDE_LARK, lark, strlen(lark), hv->v, g);
    if (!st) st = guide_matcher_new(*g, &hv->stop, 1, &m);
    if (st) {
        test_fail(__FILE__, __LINE__, "%s: %s", lark, og_status_message(st));
        og_status_free(st);
    }
    return m;
}

/* Lark's special tokens as llguidance reads them (the differential test, check_masks.py's
 * lark/special_* cases, holds them to llguidance on real vocabularies): <name> is the
 * excluded token of that text, <[ids]> a set of ids; where the parser can take one (the
 * lexeme being read ended, empty lexemes skipped) its tokens join the mask and are read
 * as that lexeme, before any reading as bytes or as the stop id; a rollback undoes one. */
TEST(guide_matcher_special_tokens) {
    glex *lex;
    if (no_lexer(&lex)) return;
    glex_free(lex);
    static const char *const toks[] = {"a", "b", "<t>", NULL};
    hand_vocab hv;
    CHECK_OK(vocab_of(toks, 3, 2, &hv)); /* <t> (2) excluded; </s> (3) the stop id */
    const uint32_t A = 1u << 0, B = 1u << 1, T = 1u << 2, S = 1u << 3;
    guide_grammar *g = NULL;
    guide_matcher *m = lark_matcher(&hv, "start: \"a\" <t> \"b\"", &g);
    if (!m) return;
    CHECK_EQ_INT(mask_word(m), A);
    CHECK_ERR(guide_matcher_consume(m, 2), OG_ERR_INVALID_ARGUMENT, "special token");
    CHECK_OK(guide_matcher_consume(m, 0));
    CHECK_EQ_INT(mask_word(m), T);
    CHECK_OK(guide_matcher_consume(m, 2));
    CHECK_EQ_INT(mask_word(m), B);
    CHECK_OK(guide_matcher_rollback(m, 1));
    CHECK_EQ_INT(mask_word(m), T);
    CHECK_OK(guide_matcher_consume(m, 2));
    CHECK_OK(guide_matcher_consume(m, 1));
    CHECK_EQ_INT(mask_word(m), S);
    guide_matcher_free(m);
    guide_grammar_unref(g);

    /* after an empty lexeme, and after a lexeme that can go on */
    m = lark_matcher(&hv, "start: /a*/ <t>", &g);
    if (!m) return;
    CHECK_EQ_INT(mask_word(m), A | T);
    CHECK_OK(guide_matcher_consume(m, 0));
    CHECK_EQ_INT(mask_word(m), A | T);
    CHECK_OK(guide_matcher_consume(m, 2));
    CHECK(guide_matcher_accepting(m));
    CHECK_EQ_INT(mask_word(m), S);
    guide_matcher_free(m);
    guide_grammar_unref(g);

    /* the stop id named: read as that token where the grammar takes one */
    m = lark_matcher(&hv, "start: \"a\" </s> \"b\"", &g);
    if (!m) return;
    CHECK_OK(guide_matcher_consume(m, 0));
    CHECK_EQ_INT(mask_word(m), S);
    CHECK_OK(guide_matcher_consume(m, 3));
    CHECK(!guide_matcher_stopped(m));
    CHECK_EQ_INT(mask_word(m), B);
    guide_matcher_free(m);
    guide_grammar_unref(g);

    /* ids: a plain token in the set is read as the special token there */
    m = lark_matcher(&hv, "start: \"a\" <[0,1]> \"b\" | \"aab\"", &g);
    if (!m) return;
    CHECK_OK(guide_matcher_consume(m, 0));
    CHECK_EQ_INT(mask_word(m), A | B);
    CHECK_OK(guide_matcher_consume(m, 0));
    CHECK_EQ_INT(mask_word(m), B);
    CHECK_OK(guide_matcher_consume(m, 1));
    CHECK(guide_matcher_accepting(m));
    guide_matcher_free(m);
    guide_grammar_unref(g);

    /* refusals, as llguidance words them */
    static const char *const bad[][2] = {
        {"start: <|nope|>", "unknown special token: \"<|nope|>\""},
        {"start: <[^*]>", "negated wildcard token <[^*]> is not supported"},
        {"start: <[1-2-3]>", "invalid token range: \"1-2-3\""},
        {"start: <[*,1]>", "must not contain additional tokens"},
        {"T: <t>\nstart: T", "cannot be used in terminals"},
        {"start: <[9-12]>", "names no token of the vocabulary"}};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
        CHECK_ERR(guide_grammar_compile(GUIDE_LARK, bad[i][0], strlen(bad[i][0]), hv.v, &g),
                  OG_ERR_INVALID_ARGUMENT, bad[i][1]);
    guide_vocab_free(hv.v);
}

/* A grammar of the JSON-like language on the hand vocabulary (NULL after a loud skip). */
static guide_grammar *json_like_grammar(hand_vocab *hv) {
    glex *lex;
    if (no_lexer(&lex)) return NULL;
    gcfg *c = NULL;
    guide_grammar *g = NULL;
    og_status *st = gcfg_new(&c);
    if (!st) st = json_like(lex, c);
    if (!st) st = vocab_of(json_toks, N_JSON_TOKS, tok_id("x"), hv);
    if (!st) {
        st = guide_grammar_from(lex, c, hv->v, &g);
        lex = NULL;
        c = NULL;
    }
    glex_free(lex);
    gcfg_free(c);
    if (st) {
        test_fail(__FILE__, __LINE__, "%s", og_status_message(st));
        og_status_free(st);
    }
    return g;
}

TEST(guide_matcher_cache_flush) {
    /* A cache limit below one entry: every new lexer state drops all the others, and the
     * masks stay those of the reference. */
    hand_vocab hv;
    guide_grammar *g = json_like_grammar(&hv);
    if (!g) return;
    g->cache_limit = 1;
    int steps = walk_against_reference(g, &hv, 30, 30, 99, json_toks);
    CHECK(steps > 200);
    CHECK(g->cache_flushes > 10);
    guide_grammar_unref(g);
    guide_vocab_free(hv.v);
}

typedef struct walk_job {
    guide_grammar *g;
    const hand_vocab *hv;
    uint64_t seed;
    uint32_t masks[40][2]; /* the mask at each step */
    int32_t picks[40];
    int n;
    bool failed;
} walk_job;

/* A random walk of 40 tokens that records its masks and picks. */
static void *walk_thread(void *arg) {
    walk_job *j = arg;
    guide_matcher *m = NULL;
    og_status *st = guide_matcher_new(j->g, &j->hv->stop, 1, &m);
    for (j->n = 0; !st && j->n < 40; j->n++) {
        st = guide_matcher_mask(m, j->masks[j->n]);
        if (st) break;
        int32_t pick = -1;
        size_t count = 0;
        for (size_t i = 0; i < j->hv->n; i++) count += bit(j->masks[j->n], i);
        size_t k = count ? rng_next(&j->seed) % count : 0;
        for (size_t i = 0; i < j->hv->n && count; i++)
            if (bit(j->masks[j->n], i) && !k--) pick = (int32_t)i;
        j->picks[j->n] = pick;
        if (pick < 0 || pick == j->hv->stop) {
            j->n++;
            break;
        }
        st = guide_matcher_consume(m, pick);
    }
    j->failed = st != NULL;
    og_status_free(st);
    guide_matcher_free(m);
    return NULL;
}

TEST(guide_matcher_threads) {
    /* Four matchers of one grammar on four threads (the lexer and the caches grow under
     * the grammar's lock): each walk's masks equal the same walk run alone afterwards on a
     * fresh grammar. */
    hand_vocab hv;
    guide_grammar *g = json_like_grammar(&hv);
    if (!g) return;
    walk_job jobs[4], alone[4];
    pthread_t th[4];
    for (int i = 0; i < 4; i++) {
        jobs[i] = (walk_job){.g = g, .hv = &hv, .seed = 1000u + (uint64_t)i};
        CHECK(pthread_create(&th[i], NULL, walk_thread, &jobs[i]) == 0);
    }
    for (int i = 0; i < 4; i++) pthread_join(th[i], NULL);
    guide_grammar_unref(g);
    guide_vocab_free(hv.v);
    g = json_like_grammar(&hv);
    CHECK(g != NULL);
    for (int i = 0; i < 4; i++) {
        alone[i] = (walk_job){.g = g, .hv = &hv, .seed = 1000u + (uint64_t)i};
        walk_thread(&alone[i]);
        CHECK(!jobs[i].failed && !alone[i].failed);
        CHECK_EQ_INT(jobs[i].n, alone[i].n);
        CHECK(jobs[i].n > 3);
        CHECK(!memcmp(jobs[i].masks, alone[i].masks, sizeof jobs[i].masks[0] * (size_t)jobs[i].n));
    }
    guide_grammar_unref(g);
    guide_vocab_free(hv.v);
}

TEST(guide_matcher_parser_limit) {
    /* The parser's limit reached while a mask is computed is an error naming it, and the
     * matcher is where it was. */
    hand_vocab hv;
    guide_grammar *g = json_like_grammar(&hv);
    if (!g) return;
    guide_matcher *m;
    CHECK_OK(guide_matcher_new(g, &hv.stop, 1, &m));
    for (int i = 0; i < 30; i++) CHECK_OK(guide_matcher_consume(m, tok_id("[[")));
    guide_matcher_parser_limits(m, 20000, 4096);
    uint32_t mask[2];
    CHECK_ERR(guide_matcher_mask(m, mask), OG_ERR_RUNTIME, "limit on parser memory");
    guide_matcher_parser_limits(m, 20000, (size_t)1 << 30);
    CHECK_OK(guide_matcher_mask(m, mask));
    CHECK(bit(mask, (size_t)tok_id("]")) && bit(mask, (size_t)tok_id("1")));
    guide_matcher_free(m);
    guide_grammar_unref(g);
    guide_vocab_free(hv.v);
}
