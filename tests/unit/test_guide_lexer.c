/* The lexer (src/guide/lexer.h): regular expressions against llguidance's answers
 * (the table is tests/guide/regex_cases.py's output), errors with their columns,
 * exclusions, several lexemes at once, dead states and the DFA's limits. */
#include "guide/lexer.h"

#include "testing.h"

#include <stdint.h>
#include <stdlib.h>

typedef struct match_case {
    const char *re, *s;
    int accepts;
} match_case;


static void one_set(uint64_t *set, size_t words, int id)
{
    memset(set, 0, words * sizeof *set);
    set[id / 64] |= 1ull << (id % 64);
}

/* The state after `s` from the start where only the lexemes in `allowed` may begin. */
static uint32_t run(glex *lex, const uint64_t *allowed, const char *s, size_t n)
{
    uint32_t st = glex_start(lex, allowed);
    for (size_t i = 0; i < n && st != GLEX_DEAD && st != GLEX_FAILED; i++)
        st = glex_next(lex, st, (uint8_t)s[i]);
    return st;
}

static bool has(const uint64_t *set, int id) { return set && (set[id / 64] >> (id % 64) & 1); }

/* Whether lexeme `id`, alone allowed, matches all of s. */
static int matches(glex *lex, int id, const char *s)
{
    uint64_t allowed[8];
    one_set(allowed, glex_words(lex), id);
    uint32_t st = run(lex, allowed, s, strlen(s));
    if (st == GLEX_FAILED) return -1;
    return has(glex_accepts(lex, st), id);
}

TEST(guide_lexer_matches_llguidance)
{
    glex *lex;
    CHECK_OK(glex_new(&lex));
    static const match_case cases[] = {
        /* BEGIN CASES (python3 tests/guide/regex_cases.py; --check compares with llguidance) */
        {"abc", "abc", 1},
        {"abc", "ab", 0},
        {"abc", "abcd", 0},
        {"abc", "", 0},
        {"[a-z]+[0-9]\077", "abc", 1},
        {"[a-z]+[0-9]\077", "abc1", 1},
        {"[a-z]+[0-9]\077", "abc12", 0},
        {"[a-z]+[0-9]\077", "", 0},
        {"[a-z]+[0-9]\077", "1", 0},
        {"a|bc|", "a", 1},
        {"a|bc|", "bc", 1},
        {"a|bc|", "", 1},
        {"a|bc|", "b", 0},
        {"(ab|c)*", "", 1},
        {"(ab|c)*", "abab", 1},
        {"(ab|c)*", "abcab", 1},
        {"(ab|c)*", "aba", 0},
        {"a{3}", "aaa", 1},
        {"a{3}", "aa", 0},
        {"a{3}", "aaaa", 0},
        {"a{2,4}", "a", 0},
        {"a{2,4}", "aa", 1},
        {"a{2,4}", "aaaa", 1},
        {"a{2,4}", "aaaaa", 0},
        {"a{2,}", "a", 0},
        {"a{2,}", "aa", 1},
        {"a{2,}", "aaaaaaa", 1},
        {"a{ 2 }", "aa", 1},
        {"a{ 2 }", "a", 0},
        {"(\077:ab){2}\077c+\077", "ababc", 1},
        {"(\077:ab){2}\077c+\077", "abcc", 0},
        {"(\077:ab){2}\077c+\077", "ababccc", 1},
        {"x*\077y\077\077z+\077", "z", 1},
        {"x*\077y\077\077z+\077", "xxyz", 1},
        {"x*\077y\077\077z+\077", "yy z", 0},
        {"a**", "", 1},
        {"a**", "aaa", 1},
        {".", "a", 1},
        {".", "\012", 0},
        {".", "\303\251", 1},
        {".", "\344\270\255", 1},
        {".", "\360\237\230\200", 1},
        {".", "ab", 0},
        {"(\077s).", "\012", 1},
        {"(\077s).", "a", 1},
        {"(\077s:.)\\.", "\012.", 1},
        {"(\077s:.)\\.", "aa", 0},
        {"[^a]", "b", 1},
        {"[^a]", "a", 0},
        {"[^a]", "\012", 1},
        {"[^a]", "\303\251", 1},
        {"[]a]", "]", 1},
        {"[]a]", "a", 1},
        {"[]a]", "b", 0},
        {"[a-]", "-", 1},
        {"[a-]", "a", 1},
        {"[a-]", "b", 0},
        {"[-a-c]", "-", 1},
        {"[-a-c]", "b", 1},
        {"[-a-c]", "d", 0},
        {"[\\d]+", "123", 1},
        {"[\\d]+", "\331\241\331\242", 1},
        {"[\\d]+", "a", 0},
        {"\\d", "5", 1},
        {"\\d", "\331\243", 1},
        {"\\d", "\340\245\246", 1},
        {"\\d", "a", 0},
        {"\\d", "\302\262", 0},
        {"\\d{3}", "\331\241\331\242\331\243", 1},
        {"\\d{3}", "12a", 0},
        {"\\D", "a", 1},
        {"\\D", "5", 0},
        {"\\D", "\331\243", 0},
        {"\\w+", "abc_1", 1},
        {"\\w+", "\303\251", 1},
        {"\\w+", "\331\243", 1},
        {"\\w+", "\342\222\266", 1},
        {"\\w+", "a-b", 0},
        {"\\w+", "\316\261", 1},
        {"\\W", " ", 1},
        {"\\W", "-", 1},
        {"\\W", "a", 0},
        {"\\W", "\012", 1},
        {"\\s", " ", 1},
        {"\\s", "\011", 1},
        {"\\s", "\012", 1},
        {"\\s", "\343\200\200", 1},
        {"\\s", "\302\205", 1},
        {"\\s", "\302\240", 1},
        {"\\s", "a", 0},
        {"\\S", "a", 1},
        {"\\S", " ", 0},
        {"\\p{L}+", "\316\261\316\262\316\263", 1},
        {"\\p{L}+", "abc", 1},
        {"\\p{L}+", "a1", 0},
        {"\\p{L}+", "\344\270\255\346\226\207", 1},
        {"\\pL", "a", 1},
        {"\\pL", "1", 0},
        {"\\p{Lu}", "A", 1},
        {"\\p{Lu}", "a", 0},
        {"\\p{Lu}", "\316\243", 1},
        {"\\p{lu}", "A", 1},
        {"\\p{lu}", "a", 0},
        {"\\p{Letter}", "a", 1},
        {"\\p{Letter}", "1", 0},
        {"\\p{Uppercase_Letter}", "Q", 1},
        {"\\p{Uppercase_Letter}", "q", 0},
        {"\\p{gc=Nd}", "\331\243", 1},
        {"\\p{gc=Nd}", "x", 0},
        {"\\p{N}", "5", 1},
        {"\\p{N}", "\302\275", 1},
        {"\\p{N}", "\342\205\253", 1},
        {"\\p{N}", "a", 0},
        {"\\P{L}", "5", 1},
        {"\\P{L}", "a", 0},
        {"\\p{Any}", "a", 1},
        {"\\p{Any}", "\012", 1},
        {"\\p{Any}", "\344\270\255", 1},
        {"\\p{P}+", "!\077", 1},
        {"\\p{P}+", ",", 1},
        {"\\p{P}+", "a", 0},
        {"\\p{Sc}", "$", 1},
        {"\\p{Sc}", "\342\202\254", 1},
        {"\\p{Sc}", "a", 0},
        {"\\p{Zs}", " ", 1},
        {"\\p{Zs}", "\343\200\200", 1},
        {"\\p{Zs}", "\011", 0},
        {"[\316\261-\317\211]+", "\316\261\316\262\317\211", 1},
        {"[\316\261-\317\211]+", "\316\221", 0},
        {"[\316\261-\317\211]+", "a", 0},
        {"[^\316\261-\317\211]", "a", 1},
        {"[^\316\261-\317\211]", "\316\262", 0},
        {"[\\p{L}&&\\p{Lu}]", "A", 1},
        {"[\\p{L}&&\\p{Lu}]", "a", 0},
        {"[a-z&&[^m]]", "a", 1},
        {"[a-z&&[^m]]", "m", 0},
        {"[a-z--[aeiou]]", "b", 1},
        {"[a-z--[aeiou]]", "e", 0},
        {"[a-c~~b-d]", "a", 1},
        {"[a-c~~b-d]", "d", 1},
        {"[a-c~~b-d]", "b", 0},
        {"[[:alpha:]]+", "abC", 1},
        {"[[:alpha:]]+", "a1", 0},
        {"[[:^digit:]]", "a", 1},
        {"[[:^digit:]]", "1", 0},
        {"[[:xdigit:]]{2}", "fF", 1},
        {"[[:xdigit:]]{2}", "fg", 0},
        {"(\077i)k", "k", 1},
        {"(\077i)k", "K", 1},
        {"(\077i)k", "\342\204\252", 1},
        {"(\077i)k", "x", 0},
        {"(\077i)\303\237", "\303\237", 1},
        {"(\077i)\303\237", "\341\272\236", 1},
        {"(\077i)\303\237", "ss", 0},
        {"(\077i)hello", "HeLLo", 1},
        {"(\077i)hello", "hello", 1},
        {"(\077i)hello", "help", 0},
        {"(\077i:a)b", "Ab", 1},
        {"(\077i:a)b", "AB", 0},
        {"(\077i)a(\077-i)b", "Ab", 1},
        {"(\077i)a(\077-i)b", "AB", 0},
        {"(\077i)[a-c]+", "AbC", 1},
        {"(\077i)[a-c]+", "d", 0},
        {"(\077i)[^a]", "A", 0},
        {"(\077i)[^a]", "b", 1},
        {"(\077i)\317\203", "\316\243", 1},
        {"(\077i)\317\203", "\317\202", 1},
        {"(\077i)\317\203", "\317\203", 1},
        {"(\077i)\303\251", "\303\211", 1},
        {"(\077i)\303\251", "e", 0},
        {"(\077i)i", "I", 1},
        {"(\077i)i", "i", 1},
        {"(\077i)i", "\304\261", 0},
        {"(\077i)i", "\304\260", 0},
        {"(\077i)s", "S", 1},
        {"(\077i)s", "\305\277", 1},
        {"(\077i)s", "x", 0},
        {"(\077i)[k-l]", "\342\204\252", 1},
        {"(\077i)[k-l]", "L", 1},
        {"(\077i)\\u{1C5}", "\307\204", 1},
        {"(\077i)\\u{1C5}", "\307\206", 1},
        {"(\077i)\\u{1C5}", "D", 0},
        {"", "", 1},
        {"", "a", 0},
        {"(\077x) a b # comment", "ab", 1},
        {"(\077x) a b # comment", "a b", 0},
        {"(\077x)a\\ b", "a b", 1},
        {"(\077x)a\\ b", "ab", 0},
        {"\\x41\\x{42}\\u0043\\u{44}\\U00000045", "ABCDE", 1},
        {"\\x{1F600}", "\360\237\230\200", 1},
        {"\\x{1F600}", "a", 0},
        {"\\n\\t\\r\\f\\v\\a", "\012\011\015\014\013\007", 1},
        {"\\.\\+\\*\\\077\\(\\)\\|\\[\\]\\{\\}\\^\\$\\#\\&\\-\\~\\\\", ".+*\077()|[]{}^$#&-~\\", 1},
        {"\\%\\ \\/", "% /", 1},
        {"(\077P<year>\\d{4})-(\077<m>\\d\\d)", "2024-01", 1},
        {"(\077P<year>\\d{4})-(\077<m>\\d\\d)", "2024-1", 0},
        {"^abc$", "abc", 1},
        {"^abc$", "xabc", 0},
        {"^a|^b", "a", 1},
        {"^a|^b", "b", 1},
        {"(^a)", "a", 1},
        {"a$|b", "a", 1},
        {"a$|b", "b", 1},
        {"\\Aa\\z", "a", 1},
        {"()", "", 1},
        {"()", "a", 0},
        {"[0-9]{1,3}(\\.[0-9]{1,3}){3}", "192.168.0.1", 1},
        {"[0-9]{1,3}(\\.[0-9]{1,3}){3}", "1.2.3", 0},
        {"[0-9]{1,3}(\\.[0-9]{1,3}){3}", "1234.1.1.1", 0},
        {"\"([^\"\\\\]|\\\\.)*\"", "\"a\\\"b\"", 1},
        {"\"([^\"\\\\]|\\\\.)*\"", "\"a\"b\"", 0},
        {"\"([^\"\\\\]|\\\\.)*\"", "\"\"", 1},
        {"-\077(0|[1-9][0-9]*)(\\.[0-9]+)\077([eE][+-]\077[0-9]+)\077", "-0.5e10", 1},
        {"-\077(0|[1-9][0-9]*)(\\.[0-9]+)\077([eE][+-]\077[0-9]+)\077", "01", 0},
        {"-\077(0|[1-9][0-9]*)(\\.[0-9]+)\077([eE][+-]\077[0-9]+)\077", "1.", 0},
        {"-\077(0|[1-9][0-9]*)(\\.[0-9]+)\077([eE][+-]\077[0-9]+)\077", "12", 1},
        {"\"(\\\\[\"\\\\/bfnrt]|\\\\u[0-9a-fA-F]{4}|[^\"\\\\\\x00-\\x1f])*\"", "\"a\\n\\u00e9\303\251\"", 1},
        {"\"(\\\\[\"\\\\/bfnrt]|\\\\u[0-9a-fA-F]{4}|[^\"\\\\\\x00-\\x1f])*\"", "\"a\012b\"", 0},
        {"\"(\\\\[\"\\\\/bfnrt]|\\\\u[0-9a-fA-F]{4}|[^\"\\\\\\x00-\\x1f])*\"", "\"\\x\"", 0},
        {"\"(\\\\[\"\\\\/bfnrt]|\\\\u[0-9a-fA-F]{4}|[^\"\\\\\\x00-\\x1f])*\"", "\"\\\"", 0},
        {"[^\"\\\\\\x00-\\x1F\\x7F]{2,5}", "ab", 1},
        {"[^\"\\\\\\x00-\\x1F\\x7F]{2,5}", "a\177", 0},
        {"[^\"\\\\\\x00-\\x1F\\x7F]{2,5}", "abcdef", 0},
        {"[^\"\\\\\\x00-\\x1F\\x7F]{2,5}", "\316\261\316\262\316\263", 1},
        {"\\d{4}-\\d{2}-\\d{2}T\\d{2}:\\d{2}:\\d{2}(\\.\\d+)\077(Z|[+-]\\d{2}:\\d{2})", "2024-01-02T03:04:05Z", 1},
        {"\\d{4}-\\d{2}-\\d{2}T\\d{2}:\\d{2}:\\d{2}(\\.\\d+)\077(Z|[+-]\\d{2}:\\d{2})", "2024-01-02T03:04:05.123+01:00", 1},
        {"\\d{4}-\\d{2}-\\d{2}T\\d{2}:\\d{2}:\\d{2}(\\.\\d+)\077(Z|[+-]\\d{2}:\\d{2})", "2024-01-02 03:04:05Z", 0},
        {"[\\u0000-\\u007F]+", "abc", 1},
        {"[\\u0000-\\u007F]+", "\303\251", 0},
        {"[\\x{80}-\\x{10FFFF}]", "\303\251", 1},
        {"[\\x{80}-\\x{10FFFF}]", "\364\217\277\277", 1},
        {"[\\x{80}-\\x{10FFFF}]", "a", 0},
        {"[\\x{7FF}-\\x{800}]", "\337\277", 1},
        {"[\\x{7FF}-\\x{800}]", "\340\240\200", 1},
        {"[\\x{7FF}-\\x{800}]", "\340\240\201", 0},
        {"[\\x{FFFF}-\\x{10000}]", "\357\277\277", 1},
        {"[\\x{FFFF}-\\x{10000}]", "\360\220\200\200", 1},
        {"[\\x{FFFF}-\\x{10000}]", "\357\277\276", 0},
        {"[\\x{D7FF}-\\x{E000}]", "\355\237\277", 1},
        {"[\\x{D7FF}-\\x{E000}]", "\356\200\200", 1},
        {"[\\x{D7FF}-\\x{E000}]", "\356\200\201", 0},
        /* END CASES */
    };
    int bad = 0;
    size_t n = sizeof cases / sizeof *cases;
    for (size_t i = 0; i < n; i++) {
        int id;
        og_status *st = glex_add_regex(lex, cases[i].re, strlen(cases[i].re), "regex", &id);
        if (st) {
            test_fail(__FILE__, __LINE__, "/%s/: %s", cases[i].re, og_status_message(st));
            og_status_free(st);
            bad++;
            continue;
        }
        int got = matches(lex, id, cases[i].s);
        if (got != cases[i].accepts) {
            test_fail(__FILE__, __LINE__, "/%s/ on \"%s\": %d, llguidance %d", cases[i].re,
                      cases[i].s, got, cases[i].accepts);
            bad++;
        }
    }
    CHECK_EQ_INT(bad, 0);
    CHECK(n > 200);
    glex_free(lex);
}

typedef struct error_case {
    const char *re, *needle;
} error_case;

/* Every pattern llguidance refuses (regex_cases.py's ERRORS) and ours beyond its limits,
 * with the column and the reason. */
TEST(guide_lexer_errors)
{
    static const error_case cases[] = {
        {"a{", "column 2: unclosed counted repetition"},
        {"a{2", "column 2: unclosed counted repetition"},
        {"a{,3}", "column 3: repetition quantifier expects a valid decimal"},
        {"x{2,1}", "column 2: invalid repetition count range"},
        {"*a", "column 1: repetition operator missing expression"},
        {"(a", "column 1: unclosed group"},
        {"a)", "column 2: unopened group"},
        {"[a", "column 1: unclosed character class"},
        {"[z-a]", "column 2: invalid character class range"},
        {"\\0", "column 1: backreferences are not supported"},
        {"(a)\\1", "column 4: backreferences are not supported"},
        {"(?=a)a", "column 1: look-around"},
        {"(?!a)", "column 1: look-around"},
        {"(?<=a)b", "column 1: look-around"},
        {"\\b", "column 1: word-boundary assertions (\\b) are not supported"},
        {"a^b", "column 2: ^ is only supported at the start"},
        {"a$b", "column 3: $ is only supported at the end"},
        {"ab|c$d", "column 6: $ is only supported at the end"},
        {"(?z)a", "column 3: unrecognized flag"},
        {"\\e", "column 1: unrecognized escape sequence"},
        {"\\cA", "column 1: unrecognized escape sequence"},
        {"\\p{XX}", "column 1: Unicode class 'XX' is not supported"},
        {"\\x{110000}", "column 1: hexadecimal literal is not a Unicode scalar value"},
        {"\\u{D800}", "column 1: hexadecimal literal is not a Unicode scalar value"},
        {"(?m)^a$", "column 5: line anchors"},
        {"\\x4", "column 1: expected 2 hexadecimal digits"},
        {"[[:foo:]]", "column 2: unknown ASCII class"},
        {"ab\xff", "column 3: invalid UTF-8"},
        {"a\xc3", "column 2: invalid UTF-8"},
        {"a{0,2000000}", "regex at column 2: repetition {0,2000000} is too large (limit 1000000)"},
        {"x(a{1000001})", "column 4: repetition {1000001} is too large"},
        {"((a{300}){300}){300}", "column 16: repetition is too large (about 81270901 NFA states"},
    };
    glex *lex;
    CHECK_OK(glex_new(&lex));
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        int id = -1;
        og_status *st = glex_add_regex(lex, cases[i].re, strlen(cases[i].re), "regex", &id);
        if (!st || og_status_code(st) != OG_ERR_INVALID_ARGUMENT ||
            !strstr(og_status_message(st), cases[i].needle))
            test_fail(__FILE__, __LINE__, "/%s/: got '%s', expected '%s'", cases[i].re,
                      st ? og_status_message(st) : "success", cases[i].needle);
        og_status_free(st);
    }
    CHECK_EQ_INT(glex_count(lex), 0);
    /* `what` names the expression; a failed one leaves the lexer usable */
    CHECK_ERR(glex_add_regex(lex, "a(", 2, "terminal NUMBER", &(int){0}),
              OG_ERR_INVALID_ARGUMENT, "terminal NUMBER at column 2: unclosed group");
    int id;
    CHECK_OK(glex_add_regex(lex, "(a{100}){100}", 13, "regex", &id));
    char big[10002];
    memset(big, 'a', 10001);
    big[10001] = 0;
    CHECK_EQ_INT(matches(lex, id, big), 0);
    big[10000] = 0;
    CHECK_EQ_INT(matches(lex, id, big), 1);
    big[9999] = 0;
    CHECK_EQ_INT(matches(lex, id, big), 0);
    glex_free(lex);
}

TEST(guide_lexer_dedup_and_describe)
{
    glex *lex;
    CHECK_OK(glex_new(&lex));
    int a, b, c, d, e;
    CHECK_OK(glex_add_regex(lex, "[0-9]+", 6, "regex", &a));
    CHECK_OK(glex_add_literal(lex, (const uint8_t *)"[0-9]+", 6, &b));
    CHECK_OK(glex_add_regex(lex, "[0-9]+", 6, "regex", &c));
    CHECK_OK(glex_add_literal(lex, (const uint8_t *)"[0-9]+", 6, &d));
    CHECK_OK(glex_add_literal(lex, (const uint8_t *)"a\"b\n\\", 5, &e));
    CHECK_EQ_INT(a, 0);
    CHECK_EQ_INT(b, 1);
    CHECK_EQ_INT(c, a);
    CHECK_EQ_INT(d, b);
    CHECK_EQ_INT(glex_count(lex), 3);
    CHECK_EQ_INT(glex_words(lex), 1);
    CHECK(!strcmp(glex_describe(lex, a), "/[0-9]+/"));
    CHECK(!strcmp(glex_describe(lex, b), "\"[0-9]+\""));
    CHECK(!strcmp(glex_describe(lex, e), "\"a\\\"b\\n\\\\\""));
    CHECK(!strcmp(glex_describe(lex, 7), "?"));
    /* the literal matches its bytes only, the regex its language */
    CHECK_EQ_INT(matches(lex, b, "[0-9]+"), 1);
    CHECK_EQ_INT(matches(lex, b, "12"), 0);
    CHECK_EQ_INT(matches(lex, a, "12"), 1);
    CHECK_EQ_INT(matches(lex, e, "a\"b\n\\"), 1);
    /* long ones are cut, not inside a UTF-8 sequence */
    char longre[200];
    for (int i = 0; i < 100; i++) memcpy(longre + 2 * i, "\xce\xb1", 2); /* α x100 */
    CHECK_OK(glex_add_regex(lex, longre, 200, "regex", &a));
    const char *dsc = glex_describe(lex, a);
    CHECK(strlen(dsc) < 80);
    CHECK(!strcmp(dsc + strlen(dsc) - 4, ".../"));
    CHECK_EQ_INT(dsc[strlen(dsc) - 5], (char)0xb1);
    /* 65 lexemes: two words */
    for (int i = 0; i < 62; i++) {
        char lit[8];
        int n = snprintf(lit, sizeof lit, "k%d", i);
        CHECK_OK(glex_add_literal(lex, (const uint8_t *)lit, (size_t)n, &c));
    }
    CHECK_EQ_INT(glex_count(lex), 66);
    CHECK_EQ_INT(glex_words(lex), 2);
    CHECK_EQ_INT(matches(lex, c, "k61"), 1);
    CHECK_EQ_INT(matches(lex, c, "k6"), 0);
    glex_free(lex);
}

TEST(guide_lexer_escape)
{
    const char *in = "a.b*c\n(x)|[y]{z}^$\\-~#&?+\x01\x7f\xce\xb1";
    char buf[128];
    size_t n = glex_escape((const uint8_t *)in, strlen(in), buf, sizeof buf);
    CHECK_EQ_INT(n, strlen(buf));
    CHECK(!strcmp(buf, "a\\.b\\*c\\x0A\\(x\\)\\|\\[y\\]\\{z\\}\\^\\$\\\\\\-\\~\\#\\&\\?\\+\\x01\\x7F"
                       "\xce\xb1"));
    /* the escaped text, as a regex, matches exactly the input */
    glex *lex;
    CHECK_OK(glex_new(&lex));
    int id;
    CHECK_OK(glex_add_regex(lex, buf, n, "regex", &id));
    CHECK_EQ_INT(matches(lex, id, in), 1);
    CHECK_EQ_INT(matches(lex, id, "a.b*c"), 0);
    /* too small a buffer: cut and terminated, the length still the whole */
    char small[6];
    CHECK_EQ_INT(glex_escape((const uint8_t *)in, strlen(in), small, sizeof small), n);
    CHECK(!strcmp(small, "a\\.b\\"));
    glex_free(lex);
}

/* JSON's extra keys: a string lexeme that must not be exactly one of the named keys. */
TEST(guide_lexer_exclusions)
{
    glex *lex;
    CHECK_OK(glex_new(&lex));
    int str, name;
    const char *re = "\"[a-z]*\"";
    CHECK_OK(glex_add_regex(lex, re, strlen(re), "regex", &str));
    CHECK_OK(glex_exclude(lex, str, (const uint8_t *)"\"name\"", 6));
    CHECK_OK(glex_exclude(lex, str, (const uint8_t *)"\"age\"", 5));
    CHECK_OK(glex_exclude(lex, str, (const uint8_t *)"\"x1\"", 4)); /* not in its language */
    CHECK_ERR(glex_exclude(lex, 5, (const uint8_t *)"a", 1), OG_ERR_INVALID_ARGUMENT,
              "no lexeme 5");
    CHECK_EQ_INT(matches(lex, str, "\"name\""), 0);
    CHECK_EQ_INT(matches(lex, str, "\"age\""), 0);
    CHECK_EQ_INT(matches(lex, str, "\"nam\""), 1);
    CHECK_EQ_INT(matches(lex, str, "\"names\""), 1);
    CHECK_EQ_INT(matches(lex, str, "\"ag\""), 1);
    CHECK_EQ_INT(matches(lex, str, "\"\""), 1);
    /* the excluded key read whole accepts nothing and cannot go on: dead, so that the
     * matcher refuses its closing quote (not a byte later); its prefixes live on */
    uint64_t allowed[1];
    one_set(allowed, 1, str);
    CHECK_EQ_INT(run(lex, allowed, "\"name\"", 6), GLEX_DEAD);
    uint32_t s = run(lex, allowed, "\"name", 5);
    CHECK(s != GLEX_DEAD && s != GLEX_FAILED);
    CHECK(glex_accepts(lex, s) == NULL);
    CHECK(glex_can_extend(lex, s));
    /* a veto branch alone keeps nothing alive */
    CHECK_EQ_INT(run(lex, allowed, "\"x1", 3), GLEX_DEAD);

    /* a literal equal to an excluded key still matches when allowed with the string */
    CHECK_OK(glex_add_literal(lex, (const uint8_t *)"\"name\"", 6, &name));
    uint64_t both[1] = {(1ull << str) | (1ull << name)};
    s = run(lex, both, "\"name\"", 6);
    const uint64_t *acc = glex_accepts(lex, s);
    CHECK(has(acc, name) && !has(acc, str));
    s = run(lex, both, "\"nam\"", 5);
    acc = glex_accepts(lex, s);
    CHECK(has(acc, str) && !has(acc, name));
    glex_free(lex);
}

/* Several lexemes at once: the start set decides who may begin; a state's accept set can
 * hold two lexemes whose languages overlap. */
TEST(guide_lexer_several_lexemes)
{
    glex *lex;
    CHECK_OK(glex_new(&lex));
    int kw, ident, num, ws;
    CHECK_OK(glex_add_literal(lex, (const uint8_t *)"if", 2, &kw));
    CHECK_OK(glex_add_regex(lex, "[a-z_][a-z0-9_]*", 16, "terminal IDENT", &ident));
    CHECK_OK(glex_add_regex(lex, "[0-9]+", 6, "terminal NUM", &num));
    CHECK_OK(glex_add_regex(lex, "\\s+", 3, "terminal WS", &ws));
    uint64_t all[1] = {(1ull << kw) | (1ull << ident) | (1ull << num) | (1ull << ws)};
    uint32_t s0 = glex_start(lex, all);
    CHECK(s0 != GLEX_DEAD && s0 != GLEX_FAILED);
    CHECK(glex_accepts(lex, s0) == NULL);
    CHECK(glex_can_extend(lex, s0));
    uint32_t s = glex_next(lex, s0, 'i');
    const uint64_t *acc = glex_accepts(lex, s);
    CHECK(has(acc, ident) && !has(acc, kw) && !has(acc, num));
    s = glex_next(lex, s, 'f');
    acc = glex_accepts(lex, s);
    CHECK(has(acc, ident) && has(acc, kw));
    CHECK(glex_can_extend(lex, s));
    /* an accept set stays valid while the DFA grows */
    const uint64_t *kept = acc;
    for (int c = 'a'; c <= 'z'; c++)
        for (int d = '0'; d <= '9'; d++) glex_next(lex, glex_next(lex, s0, (uint8_t)c), (uint8_t)d);
    CHECK(glex_accepts(lex, s) == kept && has(kept, kw) && has(kept, ident));
    uint32_t s2 = glex_next(lex, s, 'x');
    acc = glex_accepts(lex, s2);
    CHECK(has(acc, ident) && !has(acc, kw));
    CHECK_EQ_INT(glex_next(lex, s, '-'), GLEX_DEAD);
    CHECK(glex_accepts(lex, GLEX_DEAD) == NULL);
    CHECK(!glex_can_extend(lex, GLEX_DEAD));
    CHECK_EQ_INT(glex_next(lex, GLEX_DEAD, 'a'), GLEX_DEAD);
    /* known transitions are the same state again, and build nothing */
    size_t built = glex_states(lex);
    CHECK_EQ_INT(glex_next(lex, s0, 'i'), glex_next(lex, s0, 'i'));
    CHECK_EQ_INT(glex_start(lex, all), s0);
    CHECK_EQ_INT(glex_states(lex), built);
    /* only the keyword allowed: "if" then nothing */
    uint64_t only_kw[1] = {1ull << kw};
    s = run(lex, only_kw, "if", 2);
    CHECK(has(glex_accepts(lex, s), kw));
    CHECK(!glex_can_extend(lex, s));
    CHECK_EQ_INT(glex_next(lex, s, 'x'), GLEX_DEAD);
    CHECK_EQ_INT(run(lex, only_kw, "1", 1), GLEX_DEAD);
    /* a branch through an empty class leads nowhere: it neither extends nor lives */
    int empty_branch, empty;
    const char *re1 = "xa[^\\x00-\\x{10FFFF}]|xb", *re2 = "[^\\x00-\\x{10FFFF}]";
    CHECK_OK(glex_add_regex(lex, re1, strlen(re1), "regex", &empty_branch));
    CHECK_OK(glex_add_regex(lex, re2, strlen(re2), "regex", &empty));
    uint64_t eb[1] = {1ull << empty_branch};
    s = run(lex, eb, "x", 1);
    CHECK(glex_can_extend(lex, s));
    s = run(lex, eb, "xa", 2);
    CHECK_EQ_INT(s, GLEX_DEAD);
    CHECK_EQ_INT(matches(lex, empty_branch, "xb"), 1);
    int dead_end;
    const char *re3 = "ya[^\\x00-\\x{10FFFF}]";
    CHECK_OK(glex_add_regex(lex, re3, strlen(re3), "regex", &dead_end));
    uint64_t de[1] = {1ull << dead_end};
    CHECK_EQ_INT(glex_start(lex, de), GLEX_DEAD); /* its language is empty */
    uint64_t e1[1] = {1ull << empty};
    CHECK_EQ_INT(glex_start(lex, e1), GLEX_DEAD);
    /* the empty set starts dead */
    uint64_t none[1] = {0};
    CHECK_EQ_INT(glex_start(lex, none), GLEX_DEAD);
    /* digits: NUM, not IDENT */
    s = run(lex, all, "42", 2);
    acc = glex_accepts(lex, s);
    CHECK(has(acc, num) && !has(acc, ident));
    s = run(lex, all, " \t\n", 3);
    CHECK(has(glex_accepts(lex, s), ws));
    /* a lexeme added after states were built: the DFA starts over and knows it */
    int arrow;
    CHECK_OK(glex_add_literal(lex, (const uint8_t *)"->", 2, &arrow));
    uint64_t with_arrow[1] = {all[0] | (1ull << arrow)};
    s = run(lex, with_arrow, "->", 2);
    CHECK(has(glex_accepts(lex, s), arrow));
    glex_free(lex);
}

/* The lazily built DFA stays within its limits and says so. */
TEST(guide_lexer_limits)
{
    glex *lex;
    CHECK_OK(glex_new(&lex));
    CHECK(glex_error(lex) == NULL);
    int id;
    /* (a|b)*a(a|b){12}: a DFA of 2^13 states, reached by walking all strings */
    const char *re = "[ab]*a[ab]{12}";
    CHECK_OK(glex_add_regex(lex, re, strlen(re), "regex", &id));
    glex_set_limits(lex, 500, (size_t)64 << 20);
    uint64_t allowed[1] = {1ull << id};
    uint32_t s = glex_start(lex, allowed);
    unsigned x = 12345;
    for (int i = 0; i < 5000 && s != GLEX_FAILED; i++) {
        x = x * 1103515245u + 12345u;
        s = glex_next(lex, s, (x >> 16) & 1 ? 'a' : 'b');
    }
    CHECK_EQ_INT(s, GLEX_FAILED);
    CHECK(glex_states(lex) <= 500);
    og_status *st = glex_error(lex);
    CHECK(st != NULL);
    CHECK(strstr(og_status_message(st), "limit of 500 states") != NULL);
    og_status_free(st);

    /* the byte limit likewise */
    glex_set_limits(lex, 1000000, 300 * 1024);
    int id2;
    CHECK_OK(glex_add_regex(lex, "[cd]*c[cd]{12}", 14, "regex", &id2));
    uint64_t allowed2[1] = {1ull << id2};
    s = glex_start(lex, allowed2);
    for (int i = 0; i < 5000 && s != GLEX_FAILED; i++) {
        x = x * 1103515245u + 12345u;
        s = glex_next(lex, s, (x >> 16) & 1 ? 'c' : 'd');
    }
    CHECK_EQ_INT(s, GLEX_FAILED);
    st = glex_error(lex);
    CHECK(st && strstr(og_status_message(st), "limit of 307200 bytes"));
    og_status_free(st);
    glex_free(lex);
}

/* A counted repetition with a large count is one copy of its body and virtual copies
 * (regex.h's repeats): it compiles at once whatever the count, counts exactly at both
 * ends, and a body that may be empty (its copies all alive at once) is copied the plain
 * way. */
TEST(guide_lexer_large_repeats)
{
    glex *lex;
    CHECK_OK(glex_new(&lex));
    int big, exact, open, nullable;
    CHECK_OK(glex_add_regex(lex, "x[ab]{0,1000000}c", 17, "regex", &big));
    CHECK_OK(glex_add_regex(lex, "(?:ab|c){100,103}d", 18, "regex", &exact));
    CHECK_OK(glex_add_regex(lex, "[0-9]{200,}", 11, "regex", &open));
    CHECK_OK(glex_add_regex(lex, "(?:a?b?){0,300}z", 16, "regex", &nullable));
    uint64_t allowed[1];
    one_set(allowed, glex_words(lex), big);
    uint32_t s = glex_start(lex, allowed);
    s = glex_next(lex, s, 'x');
    unsigned x = 7;
    for (int i = 0; i < 30000 && s != GLEX_DEAD && s != GLEX_FAILED; i++) {
        x = x * 1103515245u + 12345u;
        s = glex_next(lex, s, (x >> 16) & 1 ? 'a' : 'b');
    }
    CHECK(s != GLEX_DEAD && s != GLEX_FAILED);
    CHECK(!has(glex_accepts(lex, s), big));
    s = glex_next(lex, s, 'c');
    CHECK(has(glex_accepts(lex, s), big));
    /* exact bounds: 99, 100, 103 and 104 copies */
    char buf[512];
    for (int n = 99; n <= 104; n++) {
        size_t k = 0;
        for (int i = 0; i < n; i++) {
            if (i % 3) buf[k++] = 'c';
            else buf[k++] = 'a', buf[k++] = 'b';
        }
        buf[k++] = 'd';
        buf[k] = 0;
        CHECK_EQ_INT(matches(lex, exact, buf), n >= 100 && n <= 103);
    }
    memset(buf, '5', 250);
    for (int n = 198; n <= 250; n += 1) {
        buf[n] = 0;
        CHECK_EQ_INT(matches(lex, open, buf), n >= 200);
        buf[n] = '5';
    }
    CHECK_EQ_INT(matches(lex, nullable, "abbaz"), 1);
    CHECK_EQ_INT(matches(lex, nullable, "z"), 1);
    glex_free(lex);
}

/* Unicode classes cross UTF-8 length boundaries; a large class on a long input stays a
 * table walk once its states are known. */
TEST(guide_lexer_unicode_walk)
{
    glex *lex;
    CHECK_OK(glex_new(&lex));
    int id;
    const char *re = "[\\p{L}\\p{N} ]+";
    CHECK_OK(glex_add_regex(lex, re, strlen(re), "regex", &id));
    const char *words[] = {"abc", "αβγ", "中文", "١٢٣", "\xf0\x9d\x90\x80", "Ⅻ", " "};
    char text[4096];
    size_t n = 0;
    for (int i = 0; n + 8 < sizeof text; i++) {
        const char *w = words[i % 7];
        memcpy(text + n, w, strlen(w));
        n += strlen(w);
    }
    text[n] = 0;
    uint64_t allowed[1] = {1ull << id};
    uint32_t s = run(lex, allowed, text, n);
    CHECK(has(glex_accepts(lex, s), id));
    size_t built = glex_states(lex);
    CHECK(built < 40);
    s = run(lex, allowed, text, n);
    CHECK_EQ_INT(glex_states(lex), built);
    /* a lone continuation byte, a cut sequence, a surrogate's encoding: dead */
    CHECK_EQ_INT(run(lex, allowed, "a\x80", 2), GLEX_DEAD);
    CHECK_EQ_INT(run(lex, allowed, "\xce", 1) == GLEX_DEAD, 0);
    CHECK(glex_accepts(lex, run(lex, allowed, "\xce", 1)) == NULL);
    CHECK_EQ_INT(run(lex, allowed, "\xed\xa0\x80", 3), GLEX_DEAD);
    CHECK_EQ_INT(matches(lex, id, "a!"), 0);
    /* `.` never matches a surrogate's bytes or an overlong form */
    CHECK_OK(glex_add_regex(lex, ".", 1, "regex", &id));
    CHECK_EQ_INT(matches(lex, id, "\xed\xa0\x80"), 0);
    CHECK_EQ_INT(matches(lex, id, "\xc0\xaf"), 0);
    CHECK_EQ_INT(matches(lex, id, "\xf4\x90\x80\x80"), 0);
    CHECK_EQ_INT(matches(lex, id, "\xf4\x8f\xbf\xbf"), 1);
    glex_free(lex);
}
