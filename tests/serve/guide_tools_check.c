/* The grammars of forced tool calls (src/serve/serve_guide.c: tool_choice "required" or a
 * named function) in every format they are made for (hermes, llama3 JSON, mistral,
 * granite, deepseek, command-r), compiled by the constraint engine over a vocabulary of
 * the 256 bytes (token b is byte b; token 256 the EOS): calls written as each format
 * writes them are accepted byte by byte and then end (EOS allowed), with the tool-call
 * parser (tool_calls.c, the independent oracle) reading back exactly those calls; two
 * calls are refused without parallel_tool_calls, a call of another function under a
 * named tool_choice, arguments outside the function's parameters, and text before a call.
 * The pythonic format and a model without a format are refused with a 400.
 *
 * Usage: guide-tools-check */
#include "serve/serve_internal.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int fails, checks;

#define CHECK(cond, ...)                                                                   \
    do {                                                                                   \
        checks++;                                                                          \
        if (!(cond)) {                                                                     \
            fails++;                                                                       \
            printf("FAIL %s:%d: ", __FILE__, __LINE__);                                    \
            printf(__VA_ARGS__);                                                           \
            printf("\n");                                                                  \
        }                                                                                  \
    } while (0)

enum { EOS = 256 };

static const char TOOLS[] =
    "[{\"type\": \"function\", \"function\": {\"name\": \"get_weather\", \"parameters\": "
    "{\"type\": \"object\", \"properties\": {\"city\": {\"enum\": [\"Paris\", \"Rome\"]}, "
    "\"days\": {\"type\": \"integer\", \"minimum\": 1, \"maximum\": 7}}, "
    "\"required\": [\"city\", \"days\"], \"additionalProperties\": false}}},"
    " {\"type\": \"function\", \"function\": {\"name\": \"get_time\", \"parameters\": "
    "{\"type\": \"object\", \"properties\": {\"tz\": {\"enum\": [\"UTC\", \"CET\"]}}, "
    "\"required\": [\"tz\"], \"additionalProperties\": false}}},"
    " {\"type\": \"function\", \"function\": {\"name\": \"ping\", \"parameters\": {}}}]";

typedef struct call {
    const char *name, *args;
} call;

static const call WEATHER = {"get_weather", "{\"city\": \"Paris\", \"days\": 3}"};
static const call TIME = {"get_time", "{\"tz\": \"UTC\"}"};
static const call BAD_ARGS = {"get_weather", "{\"city\": \"Berlin\", \"days\": 3}"};

/* Calls as format f writes them. */
static void render(srv_buf *b, tc_format f, const call *calls, int n) {
    static const char *const open[] = {[TC_MISTRAL] = "[TOOL_CALLS][", [TC_GRANITE] = "<|tool_call|>[",
                                       [TC_COMMAND_R] = "Action:\n```json\n[",
                                       [TC_DEEPSEEK] = "<｜tool▁calls▁begin｜>"};
    static const char *const close[] = {[TC_MISTRAL] = "]", [TC_GRANITE] = "]",
                                        [TC_COMMAND_R] = "]\n```", [TC_DEEPSEEK] = "<｜tool▁calls▁end｜>"};
    const char *sep = f == TC_LLAMA3 ? "; " : f == TC_HERMES || f == TC_DEEPSEEK ? "\n" : ", ";
    if (f < (int)(sizeof open / sizeof *open) && open[f]) srv_buf_str(b, open[f]);
    for (int i = 0; i < n; i++) {
        if (i) srv_buf_str(b, sep);
        if (f == TC_DEEPSEEK)
            srv_buf_printf(b, "<｜tool▁call▁begin｜>function<｜tool▁sep｜>%s\n```json\n%s\n```"
                           "<｜tool▁call▁end｜>", calls[i].name, calls[i].args);
        else
            srv_buf_printf(b, "%s{\"%s\": \"%s\", \"%s\": %s}%s", f == TC_HERMES ? "<tool_call>\n" : "",
                           f == TC_COMMAND_R ? "tool_name" : "name", calls[i].name,
                           f == TC_LLAMA3 || f == TC_COMMAND_R ? "parameters" : "arguments",
                           calls[i].args, f == TC_HERMES ? "\n</tool_call>" : "");
    }
    if (f < (int)(sizeof close / sizeof *close) && close[f]) srv_buf_str(b, close[f]);
}

/* Whether the grammar takes text whole (byte by byte, then EOS allowed and consumed). */
static bool accepts(guide_grammar *g, const char *text, size_t *refused_at) {
    int32_t eos = EOS;
    guide_matcher *m;
    og_status *st = guide_matcher_new(g, &eos, 1, &m);
    if (st) {
        printf("     matcher: %s\n", og_status_message(st));
        og_status_free(st);
        return false;
    }
    uint32_t mask[guide_mask_words(EOS + 1)];
    size_t n = strlen(text), i = 0;
    bool ok = true;
    for (; ok && i <= n; i++) {
        int32_t t = i < n ? (uint8_t)text[i] : EOS;
        st = guide_matcher_mask(m, mask);
        ok = !st && ((mask[t / 32] >> (t % 32)) & 1u);
        if (ok) st = guide_matcher_consume(m, t);
        ok = ok && !st;
        og_status_free(st);
    }
    ok = ok && guide_matcher_stopped(m);
    *refused_at = ok ? 0 : i - 1;
    guide_matcher_free(m);
    return ok;
}

static void on_content(void *ctx, const char *t, size_t len) {
    *(size_t *)ctx += len;
}

/* The calls the parser reads back from text: equal to calls[0..n), with no content? */
static bool parses_as(tc_format f, const char *text, const call *calls, int n) {
    size_t content = 0;
    tc_parser p;
    tc_init(&p, f, on_content, &content);
    tc_feed(&p, text, strlen(text));
    int got = tc_finish(&p);
    bool ok = got == n && content == 0;
    for (int i = 0; ok && i < n; i++) {
        cJSON *a = cJSON_Parse(p.calls[i].arguments), *b = cJSON_Parse(calls[i].args);
        ok = !strcmp(p.calls[i].name, calls[i].name) && a && b && cJSON_Compare(a, b, 1);
        cJSON_Delete(a);
        cJSON_Delete(b);
    }
    tc_free(&p);
    return ok;
}

/* The grammar of one tool_choice in format f, compiled. */
static guide_grammar *forced(tc_format f, const cJSON *tools, const char *choice, bool parallel,
                             const guide_vocab *v) {
    srv_model m = {.tools_fmt = f};
    srv_params p = {.guide_kind = -1, .parallel_tool_calls = parallel};
    srv_error err = {0};
    cJSON *c = choice[0] == '{' ? cJSON_Parse(choice) : cJSON_CreateString(choice);
    bool ok = srv_forced_tools(&m, tools, c, &p, &err);
    cJSON_Delete(c);
    CHECK(ok, "%s %s: %s", tc_format_name(f), choice, err.msg);
    if (!ok) return NULL;
    guide_grammar *g = NULL;
    og_status *st = guide_grammar_compile(GUIDE_LARK, p.guide_text, strlen(p.guide_text), v, &g);
    CHECK(!st, "%s %s: the grammar does not compile: %s\n%s", tc_format_name(f), choice,
          st ? og_status_message(st) : "", p.guide_text);
    og_status_free(st);
    free(p.guide_text);
    return g;
}

static void check_format(tc_format f, const cJSON *tools, const guide_vocab *v) {
    const char *fn = tc_format_name(f);
    const call two[] = {WEATHER, TIME};
    srv_buf one_text = {0}, two_text = {0}, bad = {0}, other = {0};
    render(&one_text, f, &WEATHER, 1);
    render(&two_text, f, two, 2);
    render(&bad, f, &BAD_ARGS, 1);
    render(&other, f, &TIME, 1);
    CHECK(parses_as(f, one_text.p, &WEATHER, 1) && parses_as(f, two_text.p, two, 2),
          "%s: the parser reads the rendered calls back", fn);
    size_t at = 0;
    guide_grammar *g = forced(f, tools, "required", true, v);
    if (g) {
        CHECK(accepts(g, one_text.p, &at), "%s required, parallel: one call refused at byte %zu of %s",
              fn, at, one_text.p);
        CHECK(accepts(g, two_text.p, &at), "%s required, parallel: two calls refused at byte %zu of %s",
              fn, at, two_text.p);
        CHECK(!accepts(g, bad.p, &at), "%s required: arguments outside the schema accepted", fn);
        srv_buf pre = {0};
        srv_buf_str(&pre, "Sure. ");
        srv_buf_str(&pre, one_text.p);
        CHECK(!accepts(g, pre.p, &at) && at == 0, "%s required: text before the call accepted", fn);
        srv_buf_free(&pre);
        guide_grammar_unref(g);
    }
    if ((g = forced(f, tools, "required", false, v))) {
        CHECK(accepts(g, one_text.p, &at), "%s required, not parallel: one call refused at byte %zu",
              fn, at);
        CHECK(!accepts(g, two_text.p, &at), "%s required, not parallel: two calls accepted", fn);
        guide_grammar_unref(g);
    }
    if ((g = forced(f, tools, "{\"type\": \"function\", \"function\": {\"name\": \"get_time\"}}", false, v))) {
        CHECK(accepts(g, other.p, &at), "%s named get_time: its call refused at byte %zu", fn, at);
        CHECK(!accepts(g, one_text.p, &at), "%s named get_time: a get_weather call accepted", fn);
        guide_grammar_unref(g);
    }
    srv_buf_free(&one_text);
    srv_buf_free(&two_text);
    srv_buf_free(&bad);
    srv_buf_free(&other);
}

int main(void) {
    static uint8_t bytes[EOS + 1];
    const uint8_t *ptr[EOS + 1];
    uint32_t lens[EOS + 1];
    bool excluded[EOS + 1];
    for (int i = 0; i <= EOS; i++) {
        bytes[i] = (uint8_t)i;
        ptr[i] = &bytes[i];
        lens[i] = i < EOS;
        excluded[i] = i == EOS;
    }
    guide_vocab *v;
    og_status *st = guide_vocab_new(EOS + 1, ptr, lens, excluded, &v);
    if (st) {
        printf("FAIL: the byte vocabulary: %s\n", og_status_message(st));
        og_status_free(st);
        return 1;
    }
    cJSON *tools = cJSON_Parse(TOOLS);
    const tc_format formats[] = {TC_HERMES, TC_LLAMA3, TC_MISTRAL, TC_GRANITE, TC_DEEPSEEK, TC_COMMAND_R};
    for (size_t i = 0; i < sizeof formats / sizeof *formats; i++) check_format(formats[i], tools, v);
    /* a function whose parameters are {} still takes an object, not any JSON value */
    guide_grammar *g = forced(TC_HERMES, tools, "{\"type\": \"function\", \"function\": {\"name\": \"ping\"}}",
                              false, v);
    if (g) {
        size_t at;
        const call obj = {"ping", "{\"n\": [1]}"}, str = {"ping", "\"x\""};
        srv_buf a = {0}, b = {0};
        render(&a, TC_HERMES, &obj, 1);
        render(&b, TC_HERMES, &str, 1);
        CHECK(accepts(g, a.p, &at) && !accepts(g, b.p, &at),
              "parameters {}: an object accepted, a string refused");
        srv_buf_free(&a);
        srv_buf_free(&b);
        guide_grammar_unref(g);
    }
    /* refused before any grammar: no format, the pythonic one, a function not among tools */
    const struct { tc_format f; const char *choice; } refused[] = {
        {TC_NONE, "required"}, {TC_PYTHONIC, "required"},
        {TC_HERMES, "{\"type\": \"function\", \"function\": {\"name\": \"nope\"}}"}};
    for (size_t i = 0; i < sizeof refused / sizeof *refused; i++) {
        srv_model m = {.tools_fmt = refused[i].f};
        srv_params p = {.guide_kind = -1};
        srv_error err = {0};
        cJSON *c = refused[i].choice[0] == '{' ? cJSON_Parse(refused[i].choice) : cJSON_CreateString(refused[i].choice);
        bool ok = srv_forced_tools(&m, tools, c, &p, &err);
        CHECK(!ok && err.status == 400 && !strcmp(err.param, "tool_choice"),
              "%s %s: not refused with a 400 naming tool_choice", tc_format_name(refused[i].f),
              refused[i].choice);
        cJSON_Delete(c);
        free(p.guide_text);
    }
    cJSON_Delete(tools);
    guide_vocab_free(v);
    printf("%s: %d of %d checks failed\n", fails ? "FAIL" : "ok", fails, checks);
    return fails ? 1 : 0;
}
