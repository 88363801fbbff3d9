/* Lark grammars (guide_front_lark): the lexemes and rules a grammar becomes, the errors
 * it gets, and — through the whole engine on a vocabulary of single bytes — which strings
 * it accepts, against llguidance's verdicts (tests/guide/lark_cases.inc, written by
 * tests/guide/lark_cases.py). */
#include "testing.h"

#include "guide/front.h"
#include "guide/guide.h"

#include <stdlib.h>
#include <string.h>

typedef struct built {
    glex *lex;
    gcfg *cfg;
} built;

static og_status *build(const char *src, built *b) {
    memset(b, 0, sizeof *b);
    og_status *st = glex_new(&b->lex);
    if (!st) st = gcfg_new(&b->cfg);
    if (!st) st = guide_front_lark(src, strlen(src), NULL, b->lex, b->cfg);
    if (!st) st = gcfg_freeze(b->cfg, glex_count(b->lex));
    return st;
}

static void unbuild(built *b) {
    glex_free(b->lex);
    gcfg_free(b->cfg);
}

/* The rule's right-hand side as text: lexemes by their description, nonterminals by
 * name. */
static void rhs_text(const gcfg *cfg, const glex *lex, const gcfg_rule *r, char *buf, size_t cap) {
    size_t n = 0;
    buf[0] = 0;
    for (uint32_t i = 0; i < r->len && n < cap; i++) {
        gsym s = r->rhs[i];
        n += (size_t)snprintf(buf + n, cap - n, "%s%s", i ? " " : "",
                              GSYM_IS_LEX(s) ? glex_describe(lex, GSYM_LEX_ID(s)) : gcfg_name(cfg, s));
    }
}

TEST(guide_lark_terminal_is_one_lexeme) {
    built b;
    CHECK_OK(build("start: NUM \",\" NUM\nNUM: SIGN? DIGITS (\".\" DIGITS)?\n"
                   "SIGN: \"-\" | \"+\"\nDIGITS: /[0-9]+/\n",
                   &b));
    /* NUM (its terminals inlined) and the literal "," */
    CHECK_EQ_INT(glex_count(b.lex), 2);
    size_t first, count;
    gcfg_rules_of(b.cfg, gcfg_start(b.cfg), &first, &count);
    CHECK_EQ_INT(count, 1);
    const gcfg_rule *r = gcfg_rule_at(b.cfg, first);
    CHECK_EQ_INT(r->len, 3);
    CHECK(GSYM_IS_LEX(r->rhs[0]) && GSYM_IS_LEX(r->rhs[1]));
    CHECK_EQ_INT(r->rhs[0], r->rhs[2]);
    CHECK(r->rhs[0] != r->rhs[1]);
    CHECK(!strcmp(gcfg_name(b.cfg, gcfg_start(b.cfg)), "start"));
    unbuild(&b);
}

TEST(guide_lark_rules_and_literals) {
    built b;
    CHECK_OK(build("start: \"a\" item \"a\" | \"b\"\nitem: \"b\" | \"a\" item\n", &b));
    /* "a" and "b" once each, shared by every place that writes them */
    CHECK_EQ_INT(glex_count(b.lex), 2);
    CHECK_EQ_INT(gcfg_n_nonterminals(b.cfg), 2);
    CHECK_EQ_INT(gcfg_n_rules(b.cfg), 4);
    size_t first, count;
    gcfg_rules_of(b.cfg, gcfg_start(b.cfg), &first, &count);
    CHECK_EQ_INT(count, 2);
    char text[256];
    rhs_text(b.cfg, b.lex, gcfg_rule_at(b.cfg, first), text, sizeof text);
    CHECK(strstr(text, "item") != NULL);
    CHECK_EQ_INT(gcfg_rule_at(b.cfg, first)->len, 3);
    CHECK_EQ_INT(gcfg_rule_at(b.cfg, first + 1)->len, 1);
    unbuild(&b);
}

/* Repetition stays linear in its count: x~2..5 is two x then three nested optionals. */
TEST(guide_lark_repetition_is_linear) {
    built b;
    CHECK_OK(build("start: \"x\"~2..5\n", &b));
    /* start, the repetition, and 3 optional tails */
    CHECK_EQ_INT(gcfg_n_nonterminals(b.cfg), 5);
    /* start -> H; H -> x x T3; each T: empty | x T' (the last: empty | x) */
    CHECK_EQ_INT(gcfg_n_rules(b.cfg), 1 + 1 + 3 * 2);
    unbuild(&b);

    CHECK_OK(build("start: \"x\"{1000}\n", &b));
    CHECK_EQ_INT(gcfg_n_nonterminals(b.cfg), 2);
    CHECK_EQ_INT(gcfg_n_rules(b.cfg), 2);
    unbuild(&b);

    /* x* -> H: H -> empty | H x (left-recursive) */
    CHECK_OK(build("start: \"x\"* \"y\"\n", &b));
    CHECK_EQ_INT(gcfg_n_nonterminals(b.cfg), 2);
    CHECK(gcfg_nullable(b.cfg, 1));
    CHECK(!gcfg_nullable(b.cfg, gcfg_start(b.cfg)));
    unbuild(&b);
}

/* The matcher reads a lexeme as one byte or more: a regex or terminal that also matches
 * the empty string becomes optional in rules; one that matches only it, nothing. */
TEST(guide_lark_empty_lexemes) {
    built b;
    CHECK_OK(build("start: \"a\" /b*/ \"c\" E\nE: \"\"\n", &b));
    CHECK_EQ_INT(gcfg_n_nonterminals(b.cfg), 2);
    size_t first, count;
    gcfg_rules_of(b.cfg, gcfg_start(b.cfg), &first, &count);
    const gcfg_rule *r = gcfg_rule_at(b.cfg, first);
    CHECK_EQ_INT(r->len, 3);
    CHECK(!GSYM_IS_LEX(r->rhs[1]));
    CHECK(gcfg_nullable(b.cfg, r->rhs[1]));
    gcfg_rules_of(b.cfg, r->rhs[1], &first, &count);
    CHECK_EQ_INT(count, 2);
    CHECK_EQ_INT(gcfg_rule_at(b.cfg, first)->len, 0);
    CHECK_EQ_INT(gcfg_rule_at(b.cfg, first + 1)->len, 1);
    CHECK(GSYM_IS_LEX(gcfg_rule_at(b.cfg, first + 1)->rhs[0]));
    unbuild(&b);
}

/* What start does not reach is never compiled (as llguidance: an unused rule may name
 * something undefined). */
TEST(guide_lark_unreachable_not_compiled) {
    built b;
    CHECK_OK(build("start: \"a\"\nunused: missing \"zzz\"\nUNUSED: \"q\"\n", &b));
    CHECK_EQ_INT(glex_count(b.lex), 1);
    CHECK_EQ_INT(gcfg_n_nonterminals(b.cfg), 1);
    unbuild(&b);
}

TEST(guide_lark_ignore_and_import) {
    built b;
    CHECK_OK(build("start: WORD+\n%import common.WORD\n%import common (WS, SH_COMMENT)\n"
                   "%ignore WS\n%ignore SH_COMMENT\n",
                   &b));
    CHECK_EQ_INT(gcfg_n_ignore(b.cfg), 2);
    CHECK_EQ_INT(glex_count(b.lex), 3);
    unbuild(&b);
}

#define check_error(src, want) check_error_at(__LINE__, src, want)
static void check_error_at(int line, const char *src, const char *want) {
    built b;
    og_status *st = build(src, &b);
    unbuild(&b);
    if (!st) {
        test_fail(__FILE__, line, "grammar accepted, wanted an error with '%s': %s", want, src);
        return;
    }
    const char *msg = og_status_message(st);
    if (og_status_code(st) != OG_ERR_INVALID_ARGUMENT || !strstr(msg, want))
        test_fail(__FILE__, line, "error '%s' lacks '%s' (grammar %s)", msg, want, src);
    og_status_free(st);
}

TEST(guide_lark_errors_name_the_place) {
    check_error("start: foo\n", "line 1, column 8: unknown rule 'foo'");
    check_error("start: \"a\"\n  | FOO\n", "line 2, column 5: unknown terminal 'FOO'");
    check_error("foo: \"a\"\n", "no rule 'start'");
    check_error("start: \"a\"\nstart: \"b\"\n", "line 2, column 1: rule 'start' is defined twice (first at line 1)");
    check_error("start: A\nA: \"a\" A?\n", "line 2, column 1: terminal 'A' refers to itself");
    check_error("start: A\nA: x\nx: \"b\"\n", "line 2, column 4: terminal 'A' cannot use rule 'x'");
    check_error("start: \"a\"~3..2\n", "column 11: repetition's upper bound 2 is below its lower bound 3");
    check_error("start: \"ab\"..\"z\"\n", "column 8: a range's start must be one character");
    check_error("start: \"z\"..\"a\"\n", "a range's end is before its start");
    check_error("start: \"a\"..\"z\"i\n", "a range takes no flags");
    check_error("start: \"\\q\"\n", "column 9: unknown escape '\\q'");
    check_error("start: \"abc\n", "column 8: unterminated string");
    check_error("start: /abc\n", "column 8: unterminated regex");
    check_error("start: /abc/l\n", "column 13: regex flag 'l' is not supported (i, m, s, u, x)");
    check_error("start: (\"a\" \"b\"\n", "expected ')' closing the '(' at line 1, column 8, found the end of the line");
    check_error("start: \"a\"\n\"b\"\n", "line 2, column 1: expected a rule, a terminal or a directive, found '\"'");
    check_error("start: \"a\"*?\n", "column 12: expected a string, a regex, a name, '(' or '[', found '?'");
    check_error("start: Abc\n", "name 'Abc' mixes upper and lower case");
    check_error("%import common.FOO\nstart: \"a\"\n", "line 1, column 16: common has no terminal 'FOO' (it has DIGIT, HEXDIGIT,");
    check_error("%import other.WS\nstart: WS\n", "only %import common is supported, not 'other.WS'");
    check_error("%declare FOO\nstart: \"a\"\n", "line 1, column 1: %declare is not supported");
    check_error("%override start: \"a\"\n", "%override is not supported");
    check_error("%extend start: \"b\"\n", "%extend is not supported");
    check_error("%foo\nstart: \"a\"\n", "unknown directive '%foo'");
    check_error("start{x}: x\n", "templates (rules with parameters) are not supported");
    check_error("start.2: \"a\"\n", "priorities are not supported");
    check_error("start: x\nx[temperature=0.5]: /a+/\n", "line 2, column 3: rule attribute 'temperature' is not supported");
    check_error("start: x\nx[capture, lazy=1]: /a+/\n", "line 2, column 16: lazy takes no value");
    check_error("start: x\nx[stop=/a+/]: /[0-9]+/\n", "line 2, column 8: rule 'x' (one lexeme: lazy, "
                "stop=, suffix= or max_tokens=): stop= with a regex is supported where it matches at "
                "most 256 strings of at most 64 bytes (stop=: has strings too long (or endless))");
    check_error("start: x\nx[stop=/b|abc/]: /[a-z]+/\n", "line 2, column 8: rule 'x' (one lexeme: "
                "lazy, stop=, suffix= or max_tokens=): stop= with a regex is supported where its "
                "strings all have one length, none empty (this one has strings of 3 and 1 bytes)");
    check_error("start: x\nx[stop=/a?/]: /[0-9]+/\n", "none empty");
    check_error("start: x\nx[stop=/[^\\n]/]: /[0-9]+/\n", "has too many strings");
    check_error("start: x\nx[stop=\"\", lazy]: /a+/\n", "line 2, column 12: a rule takes one of lazy, stop= and suffix=");
    check_error("start: x\nx[lazy, stop=\"a\"]: /a+/\n", "line 2, column 9: a rule takes one of lazy, stop= and suffix=");
    check_error("start: x\nx[max_tokens=a]: /a+/\n", "line 2, column 14: expected a number, found 'a'");
    check_error("start: x\nx[capture=1]: /a+/\n", "column 11: capture= takes a string, found '1'");
    check_error("start: A\nA[capture]: /a+/\n", "line 2, column 2: a terminal takes no attributes");
    /* special tokens are looked up in a vocabulary (test_guide_matcher.c has them) */
    check_error("start: <|endoftext|>\n", "column 8: special tokens need a vocabulary");
    check_error("TOK: <[128010]>\nstart: TOK\n", "cannot be used in terminals");
    check_error("start: @sub\n", "references to other grammars (@name) are not supported");
    check_error("start: a\na: /a+/ & ~/aa/\n", "line 2, column 4: & is only supported for tokens, not rules");
    check_error("start: A\nA: %json {}\n", "line 2, column 4: %json cannot be used in terminal 'A'");
    check_error("start: %json {\"type\": \n", "column 14: unterminated JSON object after %json");
    check_error("start: %regex {\"substring_words\": \"a b\", \"x\": 1}\n", "column 8: %regex: unknown field 'x'");
    check_error("%llguidance {\"skip_repetition\": \"once\"}\nstart: \"a\"\n", "%llguidance option 'skip_repetition' is not supported");
    check_error("start: \"a\"\n%ignore x\nx: \"b\"\n", "line 2, column 9: %ignore cannot use rule 'x'");
    check_error("start: \"a\"~100000\n", "repetition count over 10000");
    check_error("start: \"a\"{0}\n", "column 11: a repetition {..} cannot end at 0");
    check_error("start: \"a\" -> B\n", "column 15: an alias is a rule name (lowercase), not 'B'");
    check_error("?!start: \"a\"\n", "column 2: expected a rule, a terminal or a directive, found '!'");
    check_error("%llguidance [1]\nstart: \"a\"\n", "line 1, column 13: %json needs a JSON object");
}

/* ---- languages, against llguidance ------------------------------------------------- */

typedef struct lark_case {
    const char *grammar;
    const char *input; /* NULL: llguidance refuses the grammar */
    int accepted;
    const char *known; /* why we answer otherwise, or NULL */
} lark_case;

static const lark_case cases[] = {
#include "guide/lark_cases.inc"
};

/* Feeds `s` byte by byte (each byte a token of the vocabulary), each checked against the
 * mask first; accepted when every byte was allowed and the output is then complete. */
static og_status *run_string(guide_grammar *g, const char *s, bool *accepted) {
    guide_matcher *m;
    OG_TRY(guide_matcher_new(g, NULL, 0, &m));
    uint32_t mask[guide_mask_words(256)];
    og_status *st = NULL;
    *accepted = true;
    for (const char *c = s; *c && !st; c++) {
        uint8_t byte = (uint8_t)*c;
        st = guide_matcher_mask(m, mask);
        if (st) break;
        if (!(mask[byte / 32] >> (byte % 32) & 1)) {
            *accepted = false;
            break;
        }
        st = guide_matcher_consume(m, byte);
    }
    if (!st && *accepted) *accepted = guide_matcher_accepting(m);
    guide_matcher_free(m);
    return st;
}

TEST(guide_lark_languages_match_llguidance) {
    uint8_t bytes[256];
    const uint8_t *ptrs[256];
    uint32_t lens[256];
    for (int i = 0; i < 256; i++) bytes[i] = (uint8_t)i, ptrs[i] = &bytes[i], lens[i] = 1;
    guide_vocab *v;
    CHECK_OK(guide_vocab_new(256, ptrs, lens, NULL, &v));
    size_t n = sizeof cases / sizeof cases[0], wrong = 0, strings = 0;
    const char *compiled_for = NULL;
    guide_grammar *g = NULL;
    og_status *gst = NULL;
    for (size_t i = 0; i < n; i++) {
        const lark_case *c = &cases[i];
        if (c->grammar != compiled_for && (!compiled_for || strcmp(c->grammar, compiled_for))) {
            guide_grammar_unref(g);
            og_status_free(gst);
            g = NULL;
            gst = guide_grammar_compile(GUIDE_LARK, c->grammar, strlen(c->grammar), v, &g);
            compiled_for = c->grammar;
        }
        if (!c->input) {
            if (!gst) {
                test_fail(__FILE__, __LINE__, "llguidance refuses, we accept: %s", c->grammar);
                wrong++;
            }
            continue;
        }
        if (gst) {
            test_fail(__FILE__, __LINE__, "llguidance accepts, we refuse: %s: %s", c->grammar,
                      og_status_message(gst));
            wrong++;
            continue;
        }
        bool acc;
        og_status *st = run_string(g, c->input, &acc);
        strings++;
        if (st) {
            test_fail(__FILE__, __LINE__, "matcher error on %s / '%s': %s", c->grammar, c->input,
                      og_status_message(st));
            og_status_free(st);
            wrong++;
        } else if (c->known) {
            if (acc == (c->accepted != 0)) {
                test_fail(__FILE__, __LINE__, "grammar %s, string '%s': we now agree with "
                          "llguidance: drop it from lark_cases.py's KNOWN", c->grammar, c->input);
                wrong++;
            } else {
                printf("    known difference (grammar %s, string '%s'): %s\n", c->grammar,
                       c->input, c->known);
            }
        } else if (acc != (c->accepted != 0)) {
            test_fail(__FILE__, __LINE__, "grammar %s, string '%s': llguidance %s, we %s",
                      c->grammar, c->input, c->accepted ? "accepts" : "refuses",
                      acc ? "accept" : "refuse");
            wrong++;
        }
    }
    guide_grammar_unref(g);
    og_status_free(gst);
    guide_vocab_free(v);
    CHECK(strings > 1000);
    CHECK_EQ_INT(wrong, 0);
}
