/* JSON Schema (guide_front_json_schema): the errors it gives, with their JSON pointers,
 * and — through the whole engine on a vocabulary of single bytes — where each text is
 * refused, against llguidance's verdicts (tests/guide/json_cases.inc, written by
 * tests/guide/json_cases.py). */
#include "testing.h"

#include "guide/front.h"
#include "guide/guide.h"

#include <stdlib.h>
#include <string.h>

static og_status *build(const char *src, glex **lex, gcfg **cfg) {
    *lex = NULL;
    *cfg = NULL;
    og_status *st = glex_new(lex);
    if (!st) st = gcfg_new(cfg);
    if (!st) st = guide_front_json_schema(src, strlen(src), *lex, *cfg);
    if (!st) st = gcfg_freeze(*cfg, glex_count(*lex));
    return st;
}

/* The message of compiling `schema`, or "" when it compiles. */
static const char *error_of(const char *schema, char *buf, size_t cap) {
    glex *lex;
    gcfg *cfg;
    og_status *st = build(schema, &lex, &cfg);
    snprintf(buf, cap, "%s", st ? og_status_message(st) : "");
    og_status_free(st);
    glex_free(lex);
    gcfg_free(cfg);
    return buf;
}

#define CHECK_ERROR_HAS(schema, want)                                                    \
    do {                                                                                 \
        char msg_[512];                                                                  \
        error_of(schema, msg_, sizeof msg_);                                             \
        if (!strstr(msg_, want)) {                                                       \
            test_fail(__FILE__, __LINE__, "%s: got '%s', want '%s'", schema, msg_, want); \
            return;                                                                      \
        }                                                                                \
    } while (0)

TEST(guide_json_errors_name_the_place) {
    char msg[512];
    CHECK_ERROR_HAS("{\"type\":\"object\",\"properties\":{\"a\":{\"if\":{}}}}",
                    "JSON schema at /properties/a: unsupported keyword 'if'");
    CHECK_ERROR_HAS("{\"items\":{\"not\":{}}}", "at /items: unsupported keyword 'not'");
    CHECK_ERROR_HAS("{\"anyOf\":[{\"type\":\"integer\"},{\"uniqueItems\":false}]}",
                    "at /anyOf/1: unsupported keyword 'uniqueItems'");
    CHECK_ERROR_HAS("{\"properties\":{\"a~b/c\":{\"type\":\"nope\"}}}",
                    "at /properties/a~0b~1c: invalid type 'nope'");
    CHECK_ERROR_HAS("{\"$ref\":\"#/$defs/y\"}", "reference '#/$defs/y' names nothing");
    CHECK_ERROR_HAS("{\"$ref\":\"http://x/y\"}", "not local");
    CHECK_ERROR_HAS("false", "schema is false");
    CHECK_ERROR_HAS("{\"anyOf\":[]}", "anyOf is empty");
    CHECK_ERROR_HAS("{\"type\":\"integer\",\"minimum\":5,\"maximum\":1}", "unsatisfiable");
    CHECK_ERROR_HAS("{\"oneOf\":[{\"type\":\"integer\"},{\"type\":\"number\"}]}", "oneOf");
    CHECK_ERROR_HAS("{\"type\":\"string\",\"pattern\":\"a(b\"}", "/pattern");
    CHECK_ERROR_HAS("{\"type\":", "invalid JSON");
    CHECK_ERROR_HAS("{\"required\":\"a\"}", "'required' is not a list");
    /* a name required twice, and not among the properties */
    CHECK(!strcmp(error_of("{\"required\":[\"z\",\"z\"]}", msg, sizeof msg), ""));
    /* what compiles gives no message */
    CHECK(!strcmp(error_of("{\"type\":\"object\",\"properties\":{\"a\":{\"title\":\"t\"}}}", msg,
                           sizeof msg), ""));
}

/* llguidance reads schemas nested up to 124 arrays and objects deep (its limit). */
TEST(guide_json_nesting_limit) {
    char text[2048], msg[512];
    for (int depth = 123; depth <= 125; depth++) {
        size_t n = 0;
        /* {"items": ... {"type":"integer"} ...}: depth objects */
        for (int i = 1; i < depth; i++) n += (size_t)snprintf(text + n, sizeof text - n, "{\"items\":");
        n += (size_t)snprintf(text + n, sizeof text - n, "{\"type\":\"integer\"}");
        for (int i = 1; i < depth; i++) text[n++] = '}';
        text[n] = 0;
        error_of(text, msg, sizeof msg);
        if (depth <= 124) CHECK(!strcmp(msg, ""));
        else CHECK(strstr(msg, "nested more than 124 deep") != NULL);
    }
}

TEST(guide_json_grammar_is_linear) {
    /* a recursive schema: the reference is one nonterminal, made once */
    glex *lex;
    gcfg *cfg;
    CHECK_OK(build("{\"$defs\":{\"t\":{\"type\":\"array\",\"items\":{\"$ref\":\"#/$defs/t\"}}},"
                   "\"$ref\":\"#/$defs/t\"}", &lex, &cfg));
    size_t rules_small = gcfg_n_rules(cfg);
    glex_free(lex);
    gcfg_free(cfg);
    /* 200 properties: rules grow by a constant per property */
    char big[16384];
    size_t n = (size_t)snprintf(big, sizeof big, "{\"type\":\"object\",\"properties\":{");
    for (int i = 0; i < 200; i++)
        n += (size_t)snprintf(big + n, sizeof big - n, "%s\"p%d\":{\"type\":\"integer\"}",
                              i ? "," : "", i);
    snprintf(big + n, sizeof big - n, "}}");
    CHECK_OK(build(big, &lex, &cfg));
    CHECK(gcfg_n_rules(cfg) < 200 * 8 + 64);
    CHECK(rules_small < 40);
    glex_free(lex);
    gcfg_free(cfg);
}

typedef struct json_case {
    const char *schema, *text;
    int verdict;  /* first byte refused; -1 accepted; -2 a proper prefix; -3 refused */
    int we_refuse; /* a schema we refuse on purpose (json_cases.py says why) */
} json_case;

static const json_case k_cases[] = {
#include "guide/json_cases.inc"
};

/* Feeds `text` byte by byte; the verdict as json_cases.py writes it. */
static og_status *run(guide_grammar *g, const char *text, int *verdict) {
    guide_matcher *m;
    OG_TRY(guide_matcher_new(g, NULL, 0, &m));
    uint32_t mask[8];
    og_status *st = NULL;
    *verdict = -2;
    size_t n = strlen(text);
    for (size_t i = 0; i < n && !st; i++) {
        uint8_t byte = (uint8_t)text[i];
        st = guide_matcher_mask(m, mask);
        if (st) break;
        if (!(mask[byte / 32] >> (byte % 32) & 1)) {
            *verdict = (int)i;
            break;
        }
        st = guide_matcher_consume(m, byte);
    }
    if (!st && *verdict == -2 && guide_matcher_accepting(m)) *verdict = -1;
    guide_matcher_free(m);
    return st;
}

TEST(guide_json_languages_match_llguidance) {
    uint8_t bytes[256];
    const uint8_t *ptrs[256];
    uint32_t lens[256];
    for (int i = 0; i < 256; i++) {
        bytes[i] = (uint8_t)i;
        ptrs[i] = &bytes[i];
        lens[i] = 1;
    }
    guide_vocab *v;
    CHECK_OK(guide_vocab_new(256, ptrs, lens, NULL, &v));
    size_t n = sizeof k_cases / sizeof k_cases[0], bad = 0;
    const char *last = NULL;
    guide_grammar *g = NULL;
    og_status *gst = NULL;
    for (size_t i = 0; i < n; i++) {
        const json_case *c = &k_cases[i];
        if (!last || strcmp(last, c->schema)) {
            guide_grammar_unref(g);
            og_status_free(gst);
            g = NULL;
            gst = guide_grammar_compile(GUIDE_JSON_SCHEMA, c->schema, strlen(c->schema), v, &g);
            last = c->schema;
        }
        int got;
        if (gst) {
            got = -3;
        } else {
            og_status *st = run(g, c->text, &got);
            if (st) {
                test_fail(__FILE__, __LINE__, "matcher error on %s / '%s': %s", c->schema,
                          c->text, og_status_message(st));
                og_status_free(st);
                bad++;
                continue;
            }
        }
        if (c->we_refuse) {
            /* our rule: refused, where llguidance compiles it */
            if (got != -3 || c->verdict == -3) {
                bad++;
                test_fail(__FILE__, __LINE__, "%s: we should refuse it (llguidance %d, ours %d)",
                          c->schema, c->verdict, got);
            }
            continue;
        }
        if (got != c->verdict) {
            bad++;
            test_fail(__FILE__, __LINE__, "%s / '%s': verdict %d, llguidance %d%s%s", c->schema,
                      c->text, got, c->verdict, gst ? ": " : "",
                      gst ? og_status_message(gst) : "");
        }
    }
    guide_grammar_unref(g);
    og_status_free(gst);
    guide_vocab_free(v);
    printf("  %zu JSON cases, %zu differ from llguidance\n", n, bad);
}
