/* The tool-call parser of the server (src/serve/tool_calls.c) on many answers of every
 * format: one and several calls, text before them, malformed calls (which must come back
 * as the content, untouched), unicode, nested JSON in the arguments; each answer fed
 * whole, one byte at a time and in pseudo-random pieces must give the same content and
 * calls. Then the format each real chat template of ../shared/chat-templates teaches.
 * The cases of each format are written as its chat template writes a call (DeepSeek's,
 * Command-R's, Mistral's) or as the model card documents it (LFM2's and Llama 3.2's
 * Python lists, Mistral's [TOOL_CALLS]NAME[ARGS] form).
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
    int named_early;  /* calls named (tc_partial) before the last piece was fed */
    bool args_early;  /* some call's arguments were read in part before they were whole */
} out;

/* What the held text showed after the previous piece (tc_partial), to check that each read
 * only adds: names stay, arguments grow at their end. */
typedef struct read_so_far {
    int n;
    char *name[16];
    char *args[16];
} read_so_far_t;

static void seen_free(read_so_far_t *s) {
    for (int i = 0; i < s->n; i++) free(s->name[i]), free(s->args[i]);
    s->n = 0;
}

static void seen_check(read_so_far_t *s, const tc_parser *p, const char *text) {
    CHECK(p->n_partial >= s->n, "%s %.60s: the calls read went from %d to %d", tc_format_name(p->fmt), text, s->n,
          p->n_partial);
    for (int i = 0; i < s->n && i < p->n_partial; i++) {
        const tc_partial *c = &p->partial[i];
        CHECK(!s->name[i] || (c->name && !strcmp(c->name, s->name[i])), "%s %.60s: call %d's name changed",
              tc_format_name(p->fmt), text, i);
        const char *a = c->args.p ? c->args.p : "";
        CHECK(!strncmp(a, s->args[i], strlen(s->args[i])), "%s %.60s: call %d's arguments '%s' do not extend '%s'",
              tc_format_name(p->fmt), text, i, a, s->args[i]);
    }
    seen_free(s);
    for (int i = 0; i < p->n_partial && i < 16; i++, s->n++) {
        s->name[i] = p->partial[i].name ? strdup(p->partial[i].name) : NULL;
        s->args[i] = strdup(p->partial[i].args.p ? p->partial[i].args.p : "");
    }
}

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
    read_so_far_t s = {0};
    while (at < n) {
        size_t k = step == 0 ? n : step > 0 ? (size_t)step : 1 + (seed = seed * 1103515245u + 12345u) % 7;
        if (k > n - at) k = n - at;
        tc_feed(p, text + at, k);
        at += k;
        seen_check(&s, p, text);
        for (int i = 0; at < n && i < p->n_partial; i++) {
            if (p->partial[i].name && i + 1 > o->named_early) o->named_early = i + 1;
            if (p->partial[i].args.n && !p->partial[i].args_whole) o->args_early = true;
        }
    }
    tc_finish(p);
    /* what a stream sent is a prefix of the calls' end: names equal, arguments extended */
    for (int i = 0; i < p->n_calls && i < s.n; i++) {
        CHECK(!s.name[i] || !strcmp(s.name[i], p->calls[i].name), "%s %.60s: call %d was read as '%s', is '%s'",
              tc_format_name(f), text, i, s.name[i], p->calls[i].name);
        CHECK(!strncmp(p->calls[i].arguments, s.args[i], strlen(s.args[i])),
              "%s %.60s: call %d's arguments '%s' do not extend what was read, '%s'", tc_format_name(f), text, i,
              p->calls[i].arguments, s.args[i]);
    }
    seen_free(&s);
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
        /* byte by byte, every call is named before the answer ends (a stream sends its name
         * first); arguments of a JSON object longer than {} arrive in parts */
        if (mode == 1 && want)
            CHECK(o.named_early >= want, "%s %.60s: %d of %d calls named before the end", tc_format_name(f), text,
                  o.named_early, want);
        if (mode == 1 && want && f != TC_PYTHONIC && !(f == TC_LLAMA3 && strstr(text, "(")) &&
            strlen(whole.calls[0].arguments) > 2 && !strstr(text, "\"{"))
            CHECK(o.args_early, "%s %.60s: no arguments read before they were whole", tc_format_name(f), text);
        tc_free(&p);
    }
    tc_free(&whole);
}

static const char *const none[] = {NULL};

/* Each of texts[0, n) parsed as format f is no call: it comes back as content, unchanged. */
static void unchanged(tc_format f, const char *const *texts, size_t n) {
    for (size_t i = 0; i < n; i++) expect(f, texts[i], texts[i], none);
}

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
    /* a call longer than the parser reads again as it streams (16 KiB): the rest of its
     * arguments at the end, still extending what was read */
    static char big_text[24000], big_args[24000];
    char fill[20001];
    memset(fill, 'z', 20000);
    fill[20000] = 0;
    snprintf(big_args, sizeof big_args, "{\"text\": \"%s\", \"n\": 1}", fill);
    snprintf(big_text, sizeof big_text, "<tool_call>\n{\"name\": \"long\", \"arguments\": %s}\n</tool_call>", big_args);
    expect(TC_HERMES, big_text, "", (const char *[]){"long", big_args, NULL});
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
    unchanged(TC_HERMES, bad, sizeof bad / sizeof *bad);
    /* plain answers, some with what looks like the start of a tag */
    const char *plain[] = {"Hello there!", "I like <tools> a lot <tool", "a < b and c <tool_cal",
                           "  spaces around  \n\n", "", "<tool_call", "x\n<tool_cal\n"};
    unchanged(TC_HERMES, plain, sizeof plain / sizeof *plain);
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
    unchanged(TC_LLAMA3, bad, sizeof bad / sizeof *bad);
    /* a brace later in the answer is not a call */
    const char *plain[] = {"Sure: {\"name\": \"f\", \"parameters\": {}}", "The set {1, 2}.", "   ", "ok"};
    unchanged(TC_LLAMA3, plain, sizeof plain / sizeof *plain);
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
    unchanged(TC_MISTRAL, bad, sizeof bad / sizeof *bad);
    expect(TC_MISTRAL, "No calls [TOOL_CALL here", "No calls [TOOL_CALL here", none);
    /* TC_NONE passes everything through as it comes */
    expect(TC_NONE, "<tool_call>{\"name\": \"f\"}</tool_call>", "<tool_call>{\"name\": \"f\"}</tool_call>", none);
}

#define DS_CALLS "<｜tool▁calls▁begin｜>"
#define DS_CALL "<｜tool▁call▁begin｜>"
#define DS_SEP "<｜tool▁sep｜>"
#define DS_END "<｜tool▁call▁end｜>"
#define DS_CALLS_END "<｜tool▁calls▁end｜>"

static void deepseek(void) {
    /* as deepseek-v3.jinja writes two calls (its first lacks the closing marker there) */
    const char *two[] = {"get_weather", "{\"city\": \"Paris\"}", "get_time", "{\"tz\": \"UTC\", \"n\": [1, 2]}", NULL};
    expect(TC_DEEPSEEK,
           DS_CALLS DS_CALL "function" DS_SEP "get_weather\n```json\n{\"city\": \"Paris\"}\n```" DS_END
           "\n" DS_CALL "function" DS_SEP "get_time\n```json\n{\"tz\": \"UTC\", \"n\": [1, 2]}\n```" DS_END DS_CALLS_END,
           "", two);
    expect(TC_DEEPSEEK,
           "Let me check.\n\n" DS_CALLS DS_CALL "function" DS_SEP "get_weather\n```json\n{\"city\": \"Paris\"}\n```" DS_END DS_CALLS_END,
           "Let me check.", (const char *[]){"get_weather", "{\"city\": \"Paris\"}", NULL});
    /* the answer ended before the closing markers; no calls-begin marker; no fence */
    expect(TC_DEEPSEEK, DS_CALLS DS_CALL "function" DS_SEP "f\n```json\n{\"a\": \"ü```\"}\n```", "",
           (const char *[]){"f", "{\"a\": \"ü```\"}", NULL});
    expect(TC_DEEPSEEK, DS_CALL "function" DS_SEP "f\n{\"a\": 1}" DS_END, "", (const char *[]){"f", "{\"a\": 1}", NULL});
    const char *bad[] = {
        DS_CALLS DS_CALL "function" DS_SEP "f\n```json\n{\"a\": }\n```" DS_END DS_CALLS_END,
        DS_CALLS DS_CALL "function f\n```json\n{}\n```" DS_END,                          /* no separator */
        DS_CALLS DS_CALL "code" DS_SEP "f\n```json\n{}\n```" DS_END,                     /* not a function */
        DS_CALLS DS_CALL "function" DS_SEP "two words\n```json\n{}\n```" DS_END,         /* not a name */
        DS_CALLS DS_CALL "function" DS_SEP "\n```json\n{}\n```" DS_END,                  /* no name */
        DS_CALLS DS_CALL "function" DS_SEP "f\n```json\n[1]\n```" DS_END,                /* not an object */
        DS_CALLS DS_CALL "function" DS_SEP "f\n```json\n{}\n```" DS_END DS_CALLS_END " and text",
        DS_CALLS DS_CALL "function" DS_SEP "f\n```json\n{}\n``` junk" DS_END,
        DS_CALLS, DS_CALLS DS_CALLS_END, DS_CALLS DS_CALL "function" DS_SEP "f\n```json\n{\"a\": 1",
    };
    unchanged(TC_DEEPSEEK, bad, sizeof bad / sizeof *bad);
    const char *plain[] = {"Hello <｜tool", "a <｜tool▁calls▁beg", "<｜User｜> is a token", ""};
    unchanged(TC_DEEPSEEK, plain, sizeof plain / sizeof *plain);
}

static void command_r(void) {
    /* as command-r-plus-tool_use.jinja writes an assistant turn with calls */
    expect(TC_COMMAND_R,
           "I will look it up.\nAction:\n```json\n[\n    {\n        \"tool_name\": \"internet_search\",\n"
           "        \"parameters\": {\n            \"query\": \"onnx\"\n        }\n    },\n    {\n"
           "        \"tool_name\": \"directly_answer\",\n        \"parameters\": {}\n    }\n]```\n",
           "I will look it up.",
           (const char *[]){"internet_search", "{\"query\": \"onnx\"}", "directly_answer", "{}", NULL});
    expect(TC_COMMAND_R, "Action: [{\"tool_name\": \"f\", \"parameters\": {\"x\": [1, \"]```\"]}}]", "",
           (const char *[]){"f", "{\"x\": [1, \"]```\"]}", NULL});
    expect(TC_COMMAND_R, "Action: ```json\n{\"tool_name\": \"f\"}\n```", "", (const char *[]){"f", "{}", NULL});
    const char *bad[] = {
        "Action: ```json\n[{\"name\": \"f\", \"parameters\": {}}]\n```",       /* no tool_name */
        "Action: ```json\n[{\"tool_name\": \"f\", \"parameters\": {}}]\n``` and more",
        "Action: ```json\n[{\"tool_name\": \"f\", \"parameters\": {\"a\": ",
        "Action: ```json\n[]\n```",
        "Action: I will search the web.",
        "Action:",
    };
    unchanged(TC_COMMAND_R, bad, sizeof bad / sizeof *bad);
    const char *plain[] = {"Actions speak louder.", "Take action: now", "Act", "Action"};
    unchanged(TC_COMMAND_R, plain, sizeof plain / sizeof *plain);
}

#define PS "<|tool_call_start|>"
#define PE "<|tool_call_end|>"

static void pythonic(void) {
    expect(TC_PYTHONIC, PS "[get_weather(city=\"Paris\", days=3)]" PE, "",
           (const char *[]){"get_weather", "{\"city\": \"Paris\", \"days\": 3}", NULL});
    /* every kind of literal, escapes (an unknown one, \d, stays), three calls, text before */
    expect(TC_PYTHONIC,
           "Sure, two calls." PS "[f(s='it\\'s \"q\"\\n\\u00e9\\x41\\101\\\\\\d', n=-1.5e3, t=True, fa=False, "
           "no=None, l=[1, 'a', [True], ], d={'k': {\"x\": None}, \"y\": [], 'k': 2,}), g( ), h.i(e='')]" PE "\n",
           "Sure, two calls.",
           (const char *[]){"f",
                            "{\"s\": \"it's \\\"q\\\"\\néAA\\\\\\\\d\", \"n\": -1.5e3, \"t\": true, \"fa\": false, "
                            "\"no\": null, \"l\": [1, \"a\", [true]], \"d\": {\"k\": 2, \"y\": []}}",
                            "g", "{}", "h.i", "{\"e\": \"\"}", NULL});
    /* two blocks, the last end marker missing; a list of JSON calls inside the markers */
    expect(TC_PYTHONIC, PS "[a(x=1)]" PE PS "[b(y=[{'z': 'ü'}])]", "",
           (const char *[]){"a", "{\"x\": 1}", "b", "{\"y\": [{\"z\": \"ü\"}]}", NULL});
    expect(TC_PYTHONIC, PS "[{\"name\": \"a\", \"arguments\": {\"x\": 1}}]" PE, "", (const char *[]){"a", "{\"x\": 1}", NULL});
    /* Python's float spellings JSON lacks: 1. and .5 are completed, + dropped */
    expect(TC_PYTHONIC, PS "[f(a=1., b=.5, c=-.5e2, d=+2, e=0.25, g=-0., h=12345678901234567890)]" PE, "",
           (const char *[]){"f", "{\"a\": 1.0, \"b\": 0.5, \"c\": -0.5e2, \"d\": 2, \"e\": 0.25, \"g\": -0.0, "
                                 "\"h\": 12345678901234567890}", NULL});
    /* the bare list as the whole answer (Llama 3.2 writes its calls so, too) */
    expect(TC_PYTHONIC, "  [get_weather(city='Paris')]\n", "", (const char *[]){"get_weather", "{\"city\": \"Paris\"}", NULL});
    expect(TC_LLAMA3, "[get_weather(city='Paris'), get_time(tz=\"UTC\")]", "",
           (const char *[]){"get_weather", "{\"city\": \"Paris\"}", "get_time", "{\"tz\": \"UTC\"}", NULL});
    const char *bad[] = {
        PS "[f(1)]" PE,                 /* a positional argument */
        PS "[f(x=1, x=2)]" PE,          /* a keyword twice */
        PS "[f(x=foo)]" PE,             /* a name, not a literal */
        PS "[f(x=1+2)]" PE, PS "[f(x=(1, 2))]" PE, PS "[f(x=1.5j)]" PE, PS "[f(x=0x1f)]" PE,
        PS "[f(x=1_000)]" PE, PS "[f(x=inf)]" PE, PS "[f(x=.)]" PE, PS "[f(x=-.)]" PE, PS "[f(x=1..2)]" PE, PS "[f(x={1: 2})]" PE, PS "[f(x={'a'})]" PE,
        PS "[f(x='a\\x00b')]" PE,       /* a NUL character */
        PS "[f(x='\\ud800')]" PE,       /* a lone surrogate */
        PS "[f(x=\'\'\'a\'\'\')]" PE, PS "[f(x=b'a')]" PE, PS "[f(x='a\nb')]" PE,
        PS "[f(x='abc)]" PE, PS "[f(x=1)" PE, PS "[f(x=1)]" PE " and then text", PS "[]" PE,
        PS "f(x=1)" PE, PS, PS "[f(x=[1, 2)]" PE,
        "[f(x=1)] trailing",
    };
    unchanged(TC_PYTHONIC, bad, sizeof bad / sizeof *bad);
    const char *plain[] = {"[1] See the notes.", "[citation needed]", "[a](http://x) link", "Use f(x=1).",
                           "<|tool_call", "[", "  ["};
    unchanged(TC_PYTHONIC, plain, sizeof plain / sizeof *plain);
    unchanged(TC_LLAMA3, plain, sizeof plain / sizeof *plain);
    /* a large integer keeps its digits */
    tc_parser p;
    out o;
    run(TC_PYTHONIC, "[f(i=12345678901234567890123, j=+7)]", 0, 0, &p, &o);
    CHECK(p.n_calls == 1 && !strcmp(p.calls[0].arguments, "{\"i\":12345678901234567890123,\"j\":7}"),
          "integer digits kept: %s", p.n_calls ? p.calls[0].arguments : "(no call)");
    tc_free(&p);
}

static void mistral_args(void) {
    expect(TC_MISTRAL, "[TOOL_CALLS]get_weather[ARGS]{\"city\": \"Paris\"}", "",
           (const char *[]){"get_weather", "{\"city\": \"Paris\"}", NULL});
    expect(TC_MISTRAL, "Sure![TOOL_CALLS]a[ARGS]{}[TOOL_CALLS]b[ARGS]{\"x\": [1, {\"y\": \"[ARGS]\"}]}", "Sure!",
           (const char *[]){"a", "{}", "b", "{\"x\": [1, {\"y\": \"[ARGS]\"}]}", NULL});
    expect(TC_MISTRAL, "[TOOL_CALLS]a[CALL_ID]abc123XYZ[ARGS]{\"q\": 1}", "", (const char *[]){"a", "{\"q\": 1}", NULL});
    const char *bad[] = {"[TOOL_CALLS]a[ARGS]{\"x\": }", "[TOOL_CALLS]a b[ARGS]{}", "[TOOL_CALLS][ARGS]{}",
                         "[TOOL_CALLS]a[ARGS]{} then", "[TOOL_CALLS]a", "[TOOL_CALLS]a[ARGS][1]",
                         "[TOOL_CALLS]a[ARGS]{}[TOOL_CALLS]"};
    unchanged(TC_MISTRAL, bad, sizeof bad / sizeof *bad);
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
    CHECK(tc_format_in_text("x" DS_CALLS DS_CALL "function") == TC_DEEPSEEK, "deepseek marker");
    CHECK(tc_format_in_text("Action:\n```json\n[{\"tool_name\": \"f\"}]") == TC_COMMAND_R, "command-r action");
    CHECK(tc_format_in_text("Action: go") == TC_NONE, "an action without a tool_name is no format");
    CHECK(tc_format_in_text("<|tool_call_start|>[f()]") == TC_PYTHONIC, "pythonic marker");
    CHECK(tc_format_in_text("[og_probe_fn(og_probe_arg=\"x\")]") == TC_PYTHONIC, "a python call");
    CHECK(tc_format_in_text("a list [x, y(1)]") == TC_NONE, "a positional call is no format");
    CHECK(tc_format_in_text("plain") == TC_NONE && tc_format_in_text(NULL) == TC_NONE, "none");
}

/* LFM2's tokenizer has these tool tokens among its added tokens (LiquidAI's model card:
 * tool lists, calls and responses each between a start and an end token). */
static bool lfm2_has(void *ctx, const char *text) {
    (void)ctx;
    static const char *const added[] = {"<|tool_list_start|>", "<|tool_list_end|>", "<|tool_call_start|>",
                                        "<|tool_call_end|>", "<|tool_response_start|>", "<|tool_response_end|>",
                                        "<|im_start|>", "<|im_end|>", NULL};
    for (int i = 0; added[i]; i++)
        if (!strcmp(added[i], text)) return true;
    return false;
}

/* The real templates: the format each teaches, and whether it takes arguments as objects. */
static int templates(const char *dir) {
    static const struct {
        const char *file;
        tc_format f;
        int args_object; /* -1: not checked */
        bool lfm2_vocab; /* with LFM2's tool-call tokens in the vocabulary */
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
        {"deepseek-v3", TC_DEEPSEEK, 0},
        {"deepseek-r1-distill-qwen-32b", TC_DEEPSEEK, 0},
        {"command-r-plus-tool_use", TC_COMMAND_R, 1},
        {"lfm2.5-instruct", TC_NONE, -1}, /* the template alone shows no format */
        {"lfm2.5-instruct", TC_PYTHONIC, -1, true},
        {"qwen2.5-7b-instruct", TC_HERMES, 1, true}, /* the template's own format first */
        {"zephyr-7b-beta", TC_NONE, -1, true},       /* lists no tools: the vocabulary says nothing */
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
        tc_format f = tc_detect(t, want[i].lfm2_vocab ? lfm2_has : NULL, NULL, &obj);
        CHECK(f == want[i].f, "%s: format %s, expected %s", want[i].file, tc_format_name(f),
              tc_format_name(want[i].f));
        if (want[i].args_object >= 0)
            CHECK(obj == (want[i].args_object == 1), "%s: arguments as object %d", want[i].file, obj);
        printf("     %-36s %s%s%s\n", want[i].file, tc_format_name(f), obj ? " (arguments as objects)" : "",
               want[i].lfm2_vocab ? " (LFM2's vocabulary)" : "");
        og_chat_template_free(t);
        seen++;
    }
    return seen;
}

int main(int argc, char **argv) {
    hermes();
    llama3();
    lists();
    deepseek();
    command_r();
    pythonic();
    mistral_args();
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
