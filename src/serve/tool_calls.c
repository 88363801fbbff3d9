/* Tool calls in a model's answer (see tool_calls.h). The call text is parsed with cJSON;
 * the arguments come out as compact JSON text (a string of JSON the model gave instead of
 * an object is kept as it was, once it is known to hold an object). */
#include "serve/tool_calls.h"

#include "onnx_genai.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define HERMES_OPEN "<tool_call>"
#define HERMES_CLOSE "</tool_call>"
#define PYTHON_TAG "<|python_tag|>"
#define MISTRAL_OPEN "[TOOL_CALLS]"
#define GRANITE_OPEN "<|tool_call|>"

const char *tc_format_name(tc_format f) {
    switch (f) {
    case TC_HERMES: return "hermes";
    case TC_LLAMA3: return "llama3_json";
    case TC_MISTRAL: return "mistral";
    case TC_GRANITE: return "granite";
    default: return "none";
    }
}

/* {"name": "IDENT", "parameters": : a Llama 3.1 call as its template writes it. */
static bool llama_call_in(const char *text) {
    static const char head[] = "{\"name\": \"", tail[] = "\", \"parameters\": ";
    for (const char *p = strstr(text, head); p; p = strstr(p + 1, head)) {
        const char *b = p;
        while (b > text && (b[-1] == ' ' || b[-1] == '\n')) b--;
        if (b - text >= 11 && !strncmp(b - 11, "\"function\":", 11)) continue; /* a tool schema */
        const char *q = p + sizeof head - 1;
        while (*q && *q != '"' && *q != '\\' && *q != '\n') q++;
        if (!strncmp(q, tail, sizeof tail - 1)) return true;
    }
    return false;
}

tc_format tc_format_in_text(const char *text) {
    if (!text) return TC_NONE;
    if (strstr(text, MISTRAL_OPEN)) return TC_MISTRAL;
    if (strstr(text, GRANITE_OPEN)) return TC_GRANITE;
    if (strstr(text, HERMES_OPEN)) return TC_HERMES;
    if (strstr(text, PYTHON_TAG) || llama_call_in(text)) return TC_LLAMA3;
    return TC_NONE;
}

const char *const *tc_format_markers(tc_format f) {
    static const char *const hermes[] = {HERMES_OPEN, HERMES_CLOSE, NULL};
    static const char *const llama[] = {PYTHON_TAG, NULL};
    static const char *const mistral[] = {MISTRAL_OPEN, NULL};
    static const char *const granite[] = {GRANITE_OPEN, NULL};
    static const char *const none[] = {NULL};
    switch (f) {
    case TC_HERMES: return hermes;
    case TC_LLAMA3: return llama;
    case TC_MISTRAL: return mistral;
    case TC_GRANITE: return granite;
    default: return none;
    }
}

/* The strings that start a call anywhere in the answer (Llama's bare '{' is apart). */
static const char *const *openers(tc_format f) {
    static const char *const hermes[] = {HERMES_OPEN, NULL};
    return f == TC_HERMES ? hermes : tc_format_markers(f);
}

void tc_init(tc_parser *p, tc_format fmt, tc_content_fn emit, void *ctx) {
    memset(p, 0, sizeof *p);
    p->fmt = fmt;
    p->emit = emit;
    p->ctx = ctx;
}

static bool is_ws(char c) { return c == ' ' || c == '\n' || c == '\r' || c == '\t'; }

static void emit_to(tc_parser *p, size_t end) {
    if (end > p->emitted) {
        p->emit(p->ctx, p->text + p->emitted, end - p->emitted);
        p->emitted = end;
    }
}

/* Where the first call opener in text[from, n) begins, or SIZE_MAX. */
static size_t find_opener(const tc_parser *p, size_t from) {
    size_t best = SIZE_MAX;
    for (const char *const *o = openers(p->fmt); *o; o++) {
        size_t k = strlen(*o);
        for (size_t i = from; i + k <= p->n && i < best; i++)
            if (!memcmp(p->text + i, *o, k)) best = i;
    }
    if (p->fmt == TC_LLAMA3) { /* '{' as the answer's first non-space character */
        size_t i = 0;
        while (i < p->n && is_ws(p->text[i])) i++;
        if (i < p->n && p->text[i] == '{' && i >= from && i < best) best = i;
    }
    return best;
}

/* Bytes at the end of text[emitted, n) that could still become (white space before) an
 * opener, so are not content yet. */
static size_t holdback(const tc_parser *p) {
    size_t r = p->n - p->emitted, best = 0;
    const char *t = p->text + p->emitted;
    if (p->fmt == TC_LLAMA3) { /* nothing but white space yet: the answer may be a call */
        size_t i = 0;
        while (i < p->n && is_ws(p->text[i])) i++;
        if (i == p->n) return r;
    }
    for (const char *const *o = openers(p->fmt); *o; o++) {
        size_t k = strlen(*o);
        for (size_t l = 0; l < k && l <= r; l++) {
            if (l && memcmp(t + r - l, *o, l)) continue;
            size_t h = l;
            while (h < r && is_ws(t[r - h - 1])) h++;
            if (h > best) best = h;
        }
    }
    return best;
}

void tc_feed(tc_parser *p, const char *s, size_t len) {
    if (p->finished || p->oom || !len) return;
    if (p->fmt == TC_NONE) {
        p->emit(p->ctx, s, len);
        return;
    }
    srv_buf_add(&p->buf, s, len);
    p->text = p->buf.p;
    p->n = p->buf.n;
    if ((p->oom = p->buf.oom) || p->in_call) return;
    size_t at = find_opener(p, p->emitted);
    if (at != SIZE_MAX) {
        size_t end = at;
        while (end > p->emitted && is_ws(p->text[end - 1])) end--;
        emit_to(p, end);
        p->start = at;
        p->in_call = true;
        return;
    }
    emit_to(p, p->n - holdback(p));
}

/* ---- parsing the held text ----------------------------------------------------------- */

static const char *skip_ws(const char *s, const char *end) {
    while (s < end && is_ws(*s)) s++;
    return s;
}

static bool starts(const char *s, const char *end, const char *w) {
    size_t k = strlen(w);
    return (size_t)(end - s) >= k && !memcmp(s, w, k);
}

/* One JSON value at s (before end); *next is where it ends. */
static cJSON *value_at(const char *s, const char *end, const char **next) {
    const char *e = NULL;
    cJSON *v = cJSON_ParseWithLengthOpts(s, (size_t)(end - s), &e, 0);
    if (v) *next = e;
    return v;
}

/* A call object {"name": string, "arguments" | "parameters": object or JSON text of one}. */
static bool add_call(tc_parser *p, const cJSON *o) {
    if (!cJSON_IsObject(o)) return false;
    const cJSON *name = cJSON_GetObjectItemCaseSensitive(o, "name");
    if (!cJSON_IsString(name) || !*name->valuestring) return false;
    const cJSON *args = cJSON_GetObjectItemCaseSensitive(o, "arguments");
    if (!args) args = cJSON_GetObjectItemCaseSensitive(o, "parameters");
    char *text = NULL;
    if (!args || cJSON_IsNull(args)) {
        text = strdup("{}");
    } else if (cJSON_IsObject(args)) {
        char *t = cJSON_PrintUnformatted(args);
        text = t ? strdup(t) : NULL;
        cJSON_free(t);
    } else if (cJSON_IsString(args)) {
        cJSON *inner = cJSON_Parse(args->valuestring);
        bool ok = cJSON_IsObject(inner);
        cJSON_Delete(inner);
        if (!ok) return false;
        text = strdup(args->valuestring);
    } else {
        return false;
    }
    tc_call *c = realloc(p->calls, sizeof *c * (size_t)(p->n_calls + 1));
    char *nm = strdup(name->valuestring);
    if (!c || !text || !nm) {
        if (c) p->calls = c;
        free(text);
        free(nm);
        p->oom = true;
        return false;
    }
    p->calls = c;
    c[p->n_calls].name = nm;
    c[p->n_calls].arguments = text;
    p->n_calls++;
    return true;
}

/* <tool_call> JSON </tool_call>, repeated, white space between; the last may lack its
 * closing tag (the answer ended). The JSON value ends where cJSON says (a closing tag
 * inside one of its strings is text). */
static bool parse_hermes(tc_parser *p, const char *s, const char *end) {
    for (;;) {
        s = skip_ws(s, end);
        if (s == end) return p->n_calls > 0;
        if (!starts(s, end, HERMES_OPEN)) return false;
        s = skip_ws(s + strlen(HERMES_OPEN), end);
        const char *next = NULL;
        cJSON *v = s < end ? value_at(s, end, &next) : NULL;
        bool ok = v && add_call(p, v);
        cJSON_Delete(v);
        if (!ok) return false;
        s = skip_ws(next, end);
        if (starts(s, end, HERMES_CLOSE)) s += strlen(HERMES_CLOSE);
        else if (s != end) return false;
    }
}

/* [<|python_tag|>] {call} [; {call}]... */
static bool parse_llama(tc_parser *p, const char *s, const char *end) {
    s = skip_ws(s, end);
    if (starts(s, end, PYTHON_TAG)) s += strlen(PYTHON_TAG);
    for (;;) {
        s = skip_ws(s, end);
        const char *next = NULL;
        cJSON *v = s < end && *s == '{' ? value_at(s, end, &next) : NULL;
        bool ok = v && add_call(p, v);
        cJSON_Delete(v);
        if (!ok) return false;
        s = skip_ws(next, end);
        if (s == end) return true;
        if (*s == ';') s++;
    }
}

/* MARKER [{call}, ...] (or one call object). */
static bool parse_list(tc_parser *p, const char *s, const char *end, const char *marker) {
    s = skip_ws(s, end);
    if (!starts(s, end, marker)) return false;
    s = skip_ws(s + strlen(marker), end);
    const char *next = NULL;
    cJSON *v = s < end ? value_at(s, end, &next) : NULL;
    bool ok = v && skip_ws(next, end) == end;
    if (ok && cJSON_IsArray(v)) {
        const cJSON *e;
        ok = v->child != NULL;
        cJSON_ArrayForEach(e, v) ok = ok && add_call(p, e);
    } else if (ok) {
        ok = add_call(p, v);
    }
    cJSON_Delete(v);
    return ok;
}

static void free_calls(tc_parser *p) {
    for (int i = 0; i < p->n_calls; i++) {
        free(p->calls[i].name);
        free(p->calls[i].arguments);
    }
    free(p->calls);
    p->calls = NULL;
    p->n_calls = 0;
}

/* Whether text[s, end) holds a NUL character: a NUL byte, or the escape \u0000 (not
 * after an escaping backslash). cJSON would give its strings ending there, and a call's
 * name or arguments would lose the rest, so such text is not taken as a call: it stays
 * content, whole. */
static bool has_nul(const char *s, const char *end) {
    if (memchr(s, 0, (size_t)(end - s))) return true;
    for (const char *q = s; q < end; q++)
        if (*q == '\\') {
            if ((size_t)(end - q) >= 6 && !memcmp(q + 1, "u0000", 5)) return true;
            q++; /* the escaped character */
        }
    return false;
}

int tc_finish(tc_parser *p) {
    if (p->finished) return p->n_calls;
    p->finished = true;
    if (p->fmt == TC_NONE || p->oom) return 0;
    if (p->in_call && !has_nul(p->text + p->start, p->text + p->n)) {
        const char *s = p->text + p->start, *end = p->text + p->n;
        bool ok = p->fmt == TC_HERMES    ? parse_hermes(p, s, end)
                  : p->fmt == TC_LLAMA3  ? parse_llama(p, s, end)
                  : p->fmt == TC_MISTRAL ? parse_list(p, s, end, MISTRAL_OPEN)
                                         : parse_list(p, s, end, GRANITE_OPEN);
        if (ok && !p->oom) return p->n_calls;
        free_calls(p);
    }
    emit_to(p, p->n);
    return 0;
}

void tc_free(tc_parser *p) {
    free_calls(p);
    srv_buf_free(&p->buf);
    memset(p, 0, sizeof *p);
}

/* ---- which format a template teaches ---------------------------------------------------- */

static const char probe_tools[] =
    "[{\"type\": \"function\", \"function\": {\"name\": \"og_probe_fn\", \"description\": "
    "\"A probe.\", \"parameters\": {\"type\": \"object\", \"properties\": {\"og_probe_arg\": "
    "{\"type\": \"string\", \"description\": \"A value.\"}}, \"required\": [\"og_probe_arg\"]}}}]";

static char *probe(const og_chat_template *t, bool with_call, bool args_object) {
    char msgs[1024];
    snprintf(msgs, sizeof msgs,
             "[{\"role\": \"user\", \"content\": \"What is the probe?\"}%s%s%s]",
             with_call ? ", {\"role\": \"assistant\", \"content\": \"\", \"tool_calls\": [{\"id\": "
                         "\"ogprobe01\", \"type\": \"function\", \"function\": {\"name\": "
                         "\"og_probe_fn\", \"arguments\": " : "",
             with_call ? (args_object ? "{\"og_probe_arg\": \"x\"}" : "\"{\\\"og_probe_arg\\\": \\\"x\\\"}\"") : "",
             with_call ? "}}]}, {\"role\": \"tool\", \"tool_call_id\": \"ogprobe01\", \"name\": "
                         "\"og_probe_fn\", \"content\": \"42\"}" : "");
    og_chat_options o = og_chat_options_default();
    o.tools_json = probe_tools;
    o.add_generation_prompt = 1;
    char *text = NULL;
    og_status *st = og_chat_template_apply(t, msgs, &o, &text);
    if (st) {
        og_status_free(st);
        return NULL;
    }
    return text;
}

tc_format tc_detect(const og_chat_template *t, bool *args_object) {
    *args_object = false;
    char *text = probe(t, true, true);
    if (text) *args_object = true;
    else text = probe(t, true, false);
    tc_format f = tc_format_in_text(text);
    og_free(text);
    if (f == TC_NONE) { /* the instructions alone (a template that never renders calls) */
        text = probe(t, false, false);
        f = tc_format_in_text(text);
        og_free(text);
    }
    return f;
}
