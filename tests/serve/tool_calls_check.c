/* The tool-call parser of the server (src/serve/tool_calls.c) on many answers of every
 * format: one and several calls, text before them, malformed calls (which must come back
 * as the content, untouched), unicode, nested JSON in the arguments; each answer fed
 * whole, one byte at a time and in pseudo-random pieces must give the same content and
 * calls. Then the format each real chat template of ../shared/chat-templates teaches.
 *
 * Usage: tool-calls-check [TEMPLATES_DIR]   (without it, or when it is missing, the
 * template part is skipped, and the exit status is 77 after the parser's checks pass). */
#include "serve/tool_calls.h"

#include "onnx_genai.h"

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

typedef struct out {
    char buf[4096];
    size_t n;
    int pieces;
} out;

static void on_content(void *ctx, const char *t, size_t len) {
    out *o = ctx;
    if (o->n + len < sizeof o->buf) memcpy(o->buf + o->n, t, len);
    o->n += len;
    o->buf[o->n < sizeof o->buf ? o->n : sizeof o->buf - 1] = 0;
    o->pieces++;
}

/* Feeds text in pieces of the sizes `step` gives (0: whole), returns the parser finished. */
static void run(tc_format f, const char *text, int step, unsigned seed, tc_parser *p, out *o) {
    memset(o, 0, sizeof *o);
    tc_init(p, f, on_content, o);
    size_t n = strlen(text), at = 0;
    while (at < n) {
        size_t k = step == 0 ? n : step > 0 ? (size_t)step : 1 + (seed = seed * 1103515245u + 12345u) % 7;
        if (k > n - at) k = n - at;
        tc_feed(p, text + at, k);
        at += k;
    }
    tc_finish(p);
}

static bool same_json(const char *a, const char *b) {
    cJSON *x = cJSON_Parse(a), *y = cJSON_Parse(b);
    bool same = x && y && cJSON_Compare(x, y, 1);
    cJSON_Delete(x);
    cJSON_Delete(y);
    return same;
}

/* text parsed as format f gives content `content` and the calls name0/args0, name1/args1,
 * ... (NULL-terminated pairs); the same in every way of feeding it. */
static void expect(tc_format f, const char *text, const char *content, const char *const *calls) {
    int want = 0;
    while (calls && calls[2 * want]) want++;
    tc_parser whole;
    out ow;
    run(f, text, 0, 0, &whole, &ow);
    CHECK(whole.n_calls == want, "%s %.60s: %d calls, expected %d", tc_format_name(f), text,
          whole.n_calls, want);
    CHECK(!strcmp(ow.buf, content), "%s %.60s: content '%s', expected '%s'", tc_format_name(f),
          text, ow.buf, content);
    for (int i = 0; i < want && i < whole.n_calls; i++) {
        CHECK(!strcmp(whole.calls[i].name, calls[2 * i]), "call %d name '%s', expected '%s'", i,
              whole.calls[i].name, calls[2 * i]);
        CHECK(same_json(whole.calls[i].arguments, calls[2 * i + 1]),
              "call %d arguments '%s', expected '%s'", i, whole.calls[i].arguments, calls[2 * i + 1]);
        cJSON *a = cJSON_Parse(whole.calls[i].arguments);
        CHECK(cJSON_IsObject(a), "call %d arguments are an object: %s", i, whole.calls[i].arguments);
        cJSON_Delete(a);
    }
    for (int mode = 1; mode <= 3; mode++) {
        tc_parser p;
        out o;
        run(f, text, mode == 1 ? 1 : mode == 2 ? 3 : -1, 7u * (unsigned)mode, &p, &o);
        bool same = p.n_calls == whole.n_calls && !strcmp(o.buf, ow.buf);
        for (int i = 0; same && i < p.n_calls; i++)
            same = !strcmp(p.calls[i].name, whole.calls[i].name) &&
                   !strcmp(p.calls[i].arguments, whole.calls[i].arguments);
        CHECK(same, "%s %.60s: fed in pieces (mode %d) differs from whole: '%s' %d calls",
              tc_format_name(f), text, mode, o.buf, p.n_calls);
        tc_free(&p);
    }
    tc_free(&whole);
}

static const char *const none[] = {NULL};

static void hermes(void) {
    const char *one[] = {"get_weather", "{\"city\": \"Paris\", \"unit\": \"celsius\"}", NULL};
    expect(TC_HERMES,
           "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\", \"unit\": "
           "\"celsius\"}}\n</tool_call>",
           "", one);
    /* text before, two calls */
    const char *two[] = {"get_weather", "{\"city\": \"Paris\"}", "get_time", "{\"tz\": \"UTC\"}", NULL};
    expect(TC_HERMES,
           "Let me look that up.\n\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": "
           "{\"city\": \"Paris\"}}\n</tool_call>\n<tool_call>\n{\"name\": \"get_time\", "
           "\"arguments\": {\"tz\": \"UTC\"}}\n</tool_call>\n",
           "Let me look that up.", two);
    /* the answer ended before the closing tag */
    expect(TC_HERMES, "<tool_call>\n{\"name\": \"f\", \"arguments\": {}}", "", (const char *[]){"f", "{}", NULL});
    /* no arguments at all: {} */
    expect(TC_HERMES, "<tool_call>{\"name\": \"ping\"}</tool_call>", "", (const char *[]){"ping", "{}", NULL});
    /* unicode in names' arguments and in the text before */
    const char *uni[] = {"translate", "{\"text\": \"Zürich 東京 🎉\", \"to\": \"ελληνικά\"}", NULL};
    expect(TC_HERMES,
           "Voilà — 好的:\n<tool_call>\n{\"name\": \"translate\", \"arguments\": {\"text\": "
           "\"Zürich 東京 🎉\", \"to\": \"ελληνικά\"}}\n</tool_call>",
           "Voilà — 好的:", uni);
    /* nested JSON with braces and tags inside strings */
    const char *nested[] = {"query",
                            "{\"filter\": {\"and\": [{\"x\": [1, 2.5, {\"y\": null}]}, \"s}{\"], "
                            "\"tag\": \"</tool_call> inside\"}, \"deep\": [[[[true]]]]}",
                            NULL};
    expect(TC_HERMES,
           "<tool_call>\n{\"name\": \"query\", \"arguments\": {\"filter\": {\"and\": [{\"x\": [1, "
           "2.5, {\"y\": null}]}, \"s}{\"], \"tag\": \"</tool_call> inside\"}, \"deep\": "
           "[[[[true]]]]}}\n</tool_call>",
           "", nested);
    /* arguments given as a string of JSON: kept as that text */
    expect(TC_HERMES, "<tool_call>{\"name\": \"f\", \"arguments\": \"{\\\"a\\\": 1}\"}</tool_call>", "",
           (const char *[]){"f", "{\"a\": 1}", NULL});
    /* malformed: the whole answer is content, unchanged */
    const char *bad[] = {
        "<tool_call>\n{\"name\": \"f\", \"arguments\": {\"a\": }\n</tool_call>",
        "Sure.\n<tool_call>\n{\"name\": \"f\", \"arguments\": {\"a\": 1}\n</tool_call>",
        "<tool_call>\n{\"arguments\": {\"a\": 1}}\n</tool_call>",          /* no name */
        "<tool_call>\n{\"name\": 3, \"arguments\": {}}\n</tool_call>",       /* name not a string */
        "<tool_call>\n{\"name\": \"f\", \"arguments\": [1]}\n</tool_call>", /* arguments not an object */
        "<tool_call>\n{\"name\": \"f\", \"arguments\": \"not json\"}\n</tool_call>",
        "<tool_call>\n{\"name\": \"f\"} trailing\n</tool_call>",
        "<tool_call>{\"name\": \"f\"}</tool_call> and then some text",
        "<tool_call>\n",
        "<tool_call>",
        "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Par",
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) expect(TC_HERMES, bad[i], bad[i], none);
    /* plain answers, some with what looks like the start of a tag */
    const char *plain[] = {"Hello there!", "I like <tools> a lot <tool", "a < b and c <tool_cal",
                           "  spaces around  \n\n", "", "<tool_call", "x\n<tool_cal\n"};
    for (size_t i = 0; i < sizeof plain / sizeof *plain; i++) expect(TC_HERMES, plain[i], plain[i], none);
}

static void llama3(void) {
    expect(TC_LLAMA3, "{\"name\": \"get_weather\", \"parameters\": {\"city\": \"Paris\"}}", "",
           (const char *[]){"get_weather", "{\"city\": \"Paris\"}", NULL});
    expect(TC_LLAMA3, "\n  {\"name\": \"f\", \"parameters\": {\"n\": [1, {\"m\": \"}\"}]}}  \n", "",
           (const char *[]){"f", "{\"n\": [1, {\"m\": \"}\"}]}", NULL});
    expect(TC_LLAMA3,
           "<|python_tag|>{\"name\": \"a\", \"parameters\": {}}; {\"name\": \"b\", \"arguments\": "
           "{\"x\": \"é\"}}",
           "", (const char *[]){"a", "{}", "b", "{\"x\": \"é\"}", NULL});
    expect(TC_LLAMA3, "Checking.<|python_tag|>{\"name\": \"a\", \"parameters\": {\"k\": 1}}", "Checking.",
           (const char *[]){"a", "{\"k\": 1}", NULL});
    const char *bad[] = {
        "{\"answer\": 42}",                                     /* JSON, but not a call */
        "{\"name\": \"f\", \"parameters\": {\"a\": 1}",          /* unterminated */
        "{\"name\": \"f\", \"parameters\": {}} and more words",  /* text after */
        "{not json at all}",
        "<|python_tag|>print(1)",
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) expect(TC_LLAMA3, bad[i], bad[i], none);
    /* a brace later in the answer is not a call */
    const char *plain[] = {"Sure: {\"name\": \"f\", \"parameters\": {}}", "The set {1, 2}.", "   ", "ok"};
    for (size_t i = 0; i < sizeof plain / sizeof *plain; i++) expect(TC_LLAMA3, plain[i], plain[i], none);
}

static void lists(void) {
    expect(TC_MISTRAL,
           "[TOOL_CALLS] [{\"name\": \"a\", \"arguments\": {}}, {\"name\": \"b\", \"arguments\": "
           "{\"x\": 1, \"y\": {\"z\": [true, false]}}}]",
           "", (const char *[]){"a", "{}", "b", "{\"x\": 1, \"y\": {\"z\": [true, false]}}", NULL});
    expect(TC_MISTRAL, "[TOOL_CALLS][{\"name\": \"a\", \"arguments\": {\"q\": \"ß\"}, \"id\": \"abcdefghi\"}]", "",
           (const char *[]){"a", "{\"q\": \"ß\"}", NULL});
    expect(TC_GRANITE, "<|tool_call|>[{\"name\": \"search\", \"arguments\": {\"q\": \"onnx\"}}]", "",
           (const char *[]){"search", "{\"q\": \"onnx\"}", NULL});
    expect(TC_GRANITE, "Let me search.\n<|tool_call|>[{\"name\": \"search\", \"arguments\": {}}]",
           "Let me search.", (const char *[]){"search", "{}", NULL});
    const char *bad[] = {"[TOOL_CALLS] [{\"name\": \"a\"", "[TOOL_CALLS] []", "[TOOL_CALLS] [1]",
                         "[TOOL_CALLS]", "[TOOL_CALLS] [{\"name\": \"a\", \"arguments\": {}}] extra"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) expect(TC_MISTRAL, bad[i], bad[i], none);
    expect(TC_MISTRAL, "No calls [TOOL_CALL here", "No calls [TOOL_CALL here", none);
    /* TC_NONE passes everything through as it comes */
    expect(TC_NONE, "<tool_call>{\"name\": \"f\"}</tool_call>", "<tool_call>{\"name\": \"f\"}</tool_call>", none);
}

static void streaming_holds_back(void) {
    /* the opener never reaches the content, whatever the pieces */
    tc_parser p;
    out o;
    memset(&o, 0, sizeof o);
    tc_init(&p, TC_HERMES, on_content, &o);
    tc_feed(&p, "Hi ", 3);
    CHECK(!strcmp(o.buf, "Hi"), "content before a space is passed on at once: '%s'", o.buf);
    tc_feed(&p, "<tool", 5);
    CHECK(!strcmp(o.buf, "Hi"), "a possible opener is held: '%s'", o.buf);
    tc_feed(&p, "_call>{\"name\": \"f\"}", strlen("_call>{\"name\": \"f\"}"));
    CHECK(!strcmp(o.buf, "Hi"), "the call is held: '%s'", o.buf);
    CHECK(tc_finish(&p) == 1 && !strcmp(o.buf, "Hi"), "one call, content 'Hi': '%s'", o.buf);
    tc_free(&p);
    memset(&o, 0, sizeof o);
    tc_init(&p, TC_HERMES, on_content, &o);
    tc_feed(&p, "a <tool", 7);
    tc_feed(&p, "s>", 2);
    CHECK(!strcmp(o.buf, "a <tools>"), "not an opener after all: passed on: '%s'", o.buf);
    tc_finish(&p);
    tc_free(&p);
}

/* A NUL character in a call (the escape \u0000 in its JSON, or a NUL byte the model's
 * byte token wrote): cJSON's strings would end there and the call lose the rest, so the
 * answer stays content, whole; an escaped backslash before "u0000" is no NUL. */
static void nul_characters(void) {
    const char *esc = "<tool_call>\n{\"name\": \"f\", \"arguments\": {\"a\": \"x\\u0000y\"}}\n</tool_call>";
    expect(TC_HERMES, esc, esc, none);
    expect(TC_LLAMA3, "{\"name\": \"f\\u0000g\", \"parameters\": {}}",
           "{\"name\": \"f\\u0000g\", \"parameters\": {}}", none);
    expect(TC_HERMES, "<tool_call>{\"name\": \"f\", \"arguments\": {\"a\": \"x\\\\u0000y\"}}</tool_call>", "",
           (const char *[]){"f", "{\"a\": \"x\\\\u0000y\"}", NULL});
    static const char raw[] = "Hi\0 <tool_call>{\"name\": \"f\", \"arguments\": {\"a\": \"x\0y\"}}</tool_call>";
    for (size_t step = 0; step < 4; step++) {
        tc_parser p;
        out o;
        memset(&o, 0, sizeof o);
        tc_init(&p, TC_HERMES, on_content, &o);
        size_t n = sizeof raw - 1;
        for (size_t at = 0; at < n; at += step ? step : n)
            tc_feed(&p, raw + at, step && n - at > step ? step : n - at);
        int calls = tc_finish(&p);
        CHECK(calls == 0 && o.n == n && !memcmp(o.buf, raw, n),
              "a NUL byte in a call (pieces of %zu): %d calls, %zu content bytes of %zu", step, calls, o.n, n);
        tc_free(&p);
    }
}

static void formats_in_text(void) {
    CHECK(tc_format_in_text("x<tool_call>\n{") == TC_HERMES, "hermes marker");
    CHECK(tc_format_in_text("[TOOL_CALLS][{") == TC_MISTRAL, "mistral marker");
    CHECK(tc_format_in_text("respond with <|tool_call|> and a list") == TC_GRANITE, "granite marker");
    CHECK(tc_format_in_text("{\"name\": \"og_probe_fn\", \"parameters\": {}}") == TC_LLAMA3, "llama call");
    CHECK(tc_format_in_text("{\"name\": function name, \"parameters\": dictionary}") == TC_NONE,
          "llama's instructions alone are not a call");
    CHECK(tc_format_in_text("{\"type\": \"function\", \"function\": {\"name\": \"f\", \"parameters\": {}}}") == TC_NONE,
          "a tool schema is not a call");
    CHECK(tc_format_in_text("plain") == TC_NONE && tc_format_in_text(NULL) == TC_NONE, "none");
}

/* The real templates: the format each teaches, and whether it takes arguments as objects. */
static int templates(const char *dir) {
    static const struct {
        const char *file;
        tc_format f;
        int args_object; /* -1: not checked */
    } want[] = {
        {"qwen2.5-7b-instruct", TC_HERMES, 1},
        {"qwen2-instruct", TC_NONE, -1},
        {"qwen3-0.6b", TC_HERMES, 1},
        {"qwq-32b", TC_HERMES, 1},
        {"hermes-2-pro-llama-3-8b-tool_use", TC_HERMES, 1},
        {"llama-3.1-8b-instruct", TC_LLAMA3, 1},
        {"llama-3-8b-instruct", TC_NONE, -1},
        {"mistral-nemo-instruct-2407", TC_MISTRAL, 1},
        {"granite-3.3-2b-instruct", TC_GRANITE, -1},
        {"phi-3.5-mini-instruct", TC_NONE, -1},
        {"gemma-2-2b-it", TC_NONE, -1},
        {"smollm2-135m-instruct", TC_NONE, -1},
        {"zephyr-7b-beta", TC_NONE, -1},
        {"deepseek-v3", TC_NONE, -1},
    };
    int seen = 0;
    for (size_t i = 0; i < sizeof want / sizeof *want; i++) {
        char path[4096];
        snprintf(path, sizeof path, "%s/%s.jinja", dir, want[i].file);
        og_chat_template *t = NULL;
        og_status *st = og_chat_template_open(path, &t);
        if (st) {
            printf("FAIL %s: %s\n", path, og_status_message(st));
            og_status_free(st);
            fails++;
            continue;
        }
        /* as render.py passes them (its default tokens) */
        og_status_free(og_chat_template_set_token(t, "bos_token", "<s>"));
        og_status_free(og_chat_template_set_token(t, "eos_token", "</s>"));
        bool obj = false;
        tc_format f = tc_detect(t, &obj);
        CHECK(f == want[i].f, "%s: format %s, expected %s", want[i].file, tc_format_name(f),
              tc_format_name(want[i].f));
        if (want[i].args_object >= 0)
            CHECK(obj == (want[i].args_object == 1), "%s: arguments as object %d", want[i].file, obj);
        printf("     %-36s %s%s\n", want[i].file, tc_format_name(f), obj ? " (arguments as objects)" : "");
        og_chat_template_free(t);
        seen++;
    }
    return seen;
}

int main(int argc, char **argv) {
    hermes();
    llama3();
    lists();
    streaming_holds_back();
    nul_characters();
    formats_in_text();
    int seen = 0;
    FILE *f = argc > 1 ? fopen(argv[1], "r") : NULL;
    if (f) {
        fclose(f);
        seen = templates(argv[1]);
    }
    printf("%d checks, %d failed\n", checks, fails);
    if (fails) return 1;
    if (!seen) {
        printf("SKIP: the chat-template corpus (%s) is missing: the formats of real templates "
               "were not checked\n", argc > 1 ? argv[1] : "no directory given");
        return 77;
    }
    return 0;
}
