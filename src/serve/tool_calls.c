/* Tool calls in a model's answer (see tool_calls.h). The call text is parsed with cJSON;
 * the arguments come out as compact JSON text (a string of JSON the model gave instead of
 * an object is kept as it was, once it is known to hold an object). */
#include "serve/tool_calls.h"

#include "onnx_genai.h"
#include "chat/chat.h"

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
#define MISTRAL_ARGS "[ARGS]"
#define MISTRAL_CALL_ID "[CALL_ID]"
#define DS_CALLS_BEGIN "<｜tool▁calls▁begin｜>"
#define DS_CALL_BEGIN "<｜tool▁call▁begin｜>"
#define DS_SEP "<｜tool▁sep｜>"
#define DS_CALL_END "<｜tool▁call▁end｜>"
#define DS_CALLS_END "<｜tool▁calls▁end｜>"
#define CMDR_OPEN "Action:"
#define PY_START "<|tool_call_start|>"
#define PY_END "<|tool_call_end|>"
#define FENCE "```"

const char *tc_format_name(tc_format f) {
    switch (f) {
    case TC_HERMES: return "hermes";
    case TC_LLAMA3: return "llama3_json";
    case TC_MISTRAL: return "mistral";
    case TC_GRANITE: return "granite";
    case TC_DEEPSEEK: return "deepseek";
    case TC_COMMAND_R: return "command_r";
    case TC_PYTHONIC: return "pythonic";
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

static bool ident_start(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
static bool ident_char(char c) { return ident_start(c) || (c >= '0' && c <= '9'); }

/* [NAME(KEY= : a Python call in a list, as a template writes one (or teaches the form). */
static bool pythonic_call_in(const char *text) {
    for (const char *p = strchr(text, '['); p; p = strchr(p + 1, '[')) {
        const char *q = p + 1;
        if (!ident_start(*q)) continue;
        while (ident_char(*q) || *q == '.') q++;
        if (*q++ != '(' || !ident_start(*q)) continue;
        while (ident_char(*q)) q++;
        if (*q == '=') return true;
    }
    return false;
}

tc_format tc_format_in_text(const char *text) {
    if (!text) return TC_NONE;
    if (strstr(text, MISTRAL_OPEN)) return TC_MISTRAL;
    if (strstr(text, GRANITE_OPEN)) return TC_GRANITE;
    if (strstr(text, DS_CALLS_BEGIN) || strstr(text, DS_CALL_BEGIN)) return TC_DEEPSEEK;
    if (strstr(text, HERMES_OPEN)) return TC_HERMES;
    if (strstr(text, PY_START)) return TC_PYTHONIC;
    if (strstr(text, PYTHON_TAG) || llama_call_in(text)) return TC_LLAMA3;
    if (pythonic_call_in(text)) return TC_PYTHONIC;
    if (strstr(text, CMDR_OPEN) && strstr(text, "\"tool_name\":")) return TC_COMMAND_R;
    return TC_NONE;
}

const char *const *tc_format_markers(tc_format f) {
    static const char *const hermes[] = {HERMES_OPEN, HERMES_CLOSE, NULL};
    static const char *const llama[] = {PYTHON_TAG, NULL};
    static const char *const mistral[] = {MISTRAL_OPEN, MISTRAL_ARGS, MISTRAL_CALL_ID, NULL};
    static const char *const granite[] = {GRANITE_OPEN, NULL};
    static const char *const deepseek[] = {DS_CALLS_BEGIN, DS_CALL_BEGIN, DS_SEP, DS_CALL_END,
                                           DS_CALLS_END, NULL};
    static const char *const pythonic[] = {PY_START, PY_END, NULL};
    static const char *const none[] = {NULL};
    switch (f) {
    case TC_HERMES: return hermes;
    case TC_LLAMA3: return llama;
    case TC_MISTRAL: return mistral;
    case TC_GRANITE: return granite;
    case TC_DEEPSEEK: return deepseek;
    case TC_PYTHONIC: return pythonic;
    default: return none;
    }
}

/* The strings that start a call anywhere in the answer (a bare '{' or '[' at the answer's
 * start is apart, see lead). */
static const char *const *openers(tc_format f) {
    static const char *const hermes[] = {HERMES_OPEN, NULL};
    static const char *const mistral[] = {MISTRAL_OPEN, NULL};
    static const char *const deepseek[] = {DS_CALLS_BEGIN, DS_CALL_BEGIN, NULL};
    static const char *const cmdr[] = {CMDR_OPEN, NULL};
    static const char *const pythonic[] = {PY_START, NULL};
    switch (f) {
    case TC_HERMES: return hermes;
    case TC_MISTRAL: return mistral;
    case TC_DEEPSEEK: return deepseek;
    case TC_COMMAND_R: return cmdr;
    case TC_PYTHONIC: return pythonic;
    default: return tc_format_markers(f);
    }
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

/* Whether s[0, n) (what follows a '[') starts a Python call, NAME( with white space
 * around: 1 it does, 0 it may still (too short to tell), -1 it does not. */
static int pythonic_head(const char *s, size_t n) {
    size_t i = 0;
    while (i < n && is_ws(s[i])) i++;
    if (i == n) return 0;
    if (!ident_start(s[i])) return -1;
    while (i < n && (ident_char(s[i]) || s[i] == '.')) i++;
    while (i < n && is_ws(s[i])) i++;
    if (i == n) return 0;
    return s[i] == '(' ? 1 : -1;
}

/* A call that is the whole answer, without an opener: Llama's JSON object, or a Python
 * list of calls (Llama 3.2, pythonic templates). 1: the answer starts one at *at; 0: only
 * white space or the first bytes of one yet; -1: the answer starts otherwise. */
static int lead(const tc_parser *p, size_t *at) {
    if (p->fmt != TC_LLAMA3 && p->fmt != TC_PYTHONIC) return -1;
    size_t i = 0;
    while (i < p->n && is_ws(p->text[i])) i++;
    *at = i;
    if (i == p->n) return 0;
    if (p->fmt == TC_LLAMA3 && p->text[i] == '{') return 1;
    if (p->text[i] == '[') return pythonic_head(p->text + i + 1, p->n - i - 1);
    return -1;
}

/* Where the first call opener in text[from, n) begins, or SIZE_MAX. */
static size_t find_opener(const tc_parser *p, size_t from) {
    size_t best = SIZE_MAX;
    for (const char *const *o = openers(p->fmt); *o; o++) {
        size_t k = strlen(*o);
        for (size_t i = from; i + k <= p->n && i < best; i++)
            if (!memcmp(p->text + i, *o, k)) best = i;
    }
    size_t at;
    if (lead(p, &at) == 1 && at >= from && at < best) best = at;
    return best;
}

/* Bytes at the end of text[emitted, n) that could still become (white space before) an
 * opener, so are not content yet. */
static size_t holdback(const tc_parser *p) {
    size_t r = p->n - p->emitted, best = 0, at;
    const char *t = p->text + p->emitted;
    if (lead(p, &at) == 0) return r; /* the answer may still be a call */
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

static void progress(tc_parser *p);

/* Held call text read again after each piece up to this many bytes (each read costs its
 * length); beyond, what was read stays and the rest of the calls comes at the end. */
#define TC_STREAM_MAX ((size_t)16 << 10)

void tc_feed(tc_parser *p, const char *s, size_t len) {
    if (p->finished || p->oom || !len) return;
    if (p->fmt == TC_NONE) {
        p->emit(p->ctx, s, len);
        return;
    }
    srv_buf_add(&p->buf, s, len);
    p->text = p->buf.p;
    p->n = p->buf.n;
    if ((p->oom = p->buf.oom)) return;
    if (p->in_call) {
        if (p->n - p->start <= TC_STREAM_MAX) progress(p);
        return;
    }
    size_t at = find_opener(p, p->emitted);
    if (at != SIZE_MAX) {
        size_t end = at;
        while (end > p->emitted && is_ws(p->text[end - 1])) end--;
        emit_to(p, end);
        p->start = at;
        p->in_call = true;
        progress(p);
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

/* A call: name[0, name_len) with args, an object, null or absent ({}), or a string of JSON
 * that holds an object (kept as that text). */
static bool add_named(tc_parser *p, const char *name, size_t name_len, const cJSON *args) {
    if (!name_len) return false;
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
    char *nm = strndup(name, name_len);
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

static bool is_args_key(const char *k, size_t n) {
    return (n == 9 && !memcmp(k, "arguments", 9)) || (n == 10 && !memcmp(k, "parameters", 10));
}

/* A call object {NAME_KEY: string, "arguments" | "parameters" (the first): its arguments}. */
static bool add_call_keyed(tc_parser *p, const cJSON *o, const char *name_key) {
    if (!cJSON_IsObject(o)) return false;
    const cJSON *name = cJSON_GetObjectItemCaseSensitive(o, name_key);
    if (!cJSON_IsString(name)) return false;
    const cJSON *args = NULL, *e;
    cJSON_ArrayForEach(e, o) if (!args && e->string && is_args_key(e->string, strlen(e->string))) args = e;
    return add_named(p, name->valuestring, strlen(name->valuestring), args);
}

static bool add_call(tc_parser *p, const cJSON *o) { return add_call_keyed(p, o, "name"); }

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

static bool parse_pythonic(tc_parser *p, const char *s, const char *end);

/* [<|python_tag|>] {call} [; {call}]..., or a Python list of calls (parse_pythonic). */
static bool parse_llama(tc_parser *p, const char *s, const char *end) {
    s = skip_ws(s, end);
    if (s < end && *s == '[') return parse_pythonic(p, s, end); /* Llama 3.2's Python form */
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

/* One JSON value at s: a non-empty list of call objects, or one call object, whose names
 * are under name_key; *next is where it ends. */
static bool json_calls(tc_parser *p, const char *s, const char *end, const char *name_key,
                       const char **next) {
    cJSON *v = s < end ? value_at(s, end, next) : NULL;
    bool ok = v != NULL;
    if (ok && cJSON_IsArray(v)) {
        const cJSON *e;
        ok = v->child != NULL;
        cJSON_ArrayForEach(e, v) ok = ok && add_call_keyed(p, e, name_key);
    } else if (ok) {
        ok = add_call_keyed(p, v, name_key);
    }
    cJSON_Delete(v);
    return ok;
}

/* MARKER [{call}, ...] (or one call object). */
static bool parse_list(tc_parser *p, const char *s, const char *end, const char *marker) {
    s = skip_ws(s, end);
    if (!starts(s, end, marker)) return false;
    s = skip_ws(s + strlen(marker), end);
    const char *next = NULL;
    return json_calls(p, s, end, "name", &next) && skip_ws(next, end) == end;
}

/* Where w first occurs in s[0, end), or NULL. */
static const char *find_in(const char *s, const char *end, const char *w) {
    size_t k = strlen(w);
    for (; (size_t)(end - s) >= k; s++)
        if (!memcmp(s, w, k)) return s;
    return NULL;
}

/* A function name written bare (DeepSeek, Mistral's [ARGS] form): s[0, e) less white space
 * around, not empty, with no white space, quote, bracket or brace inside. */
static bool bare_name(const char **s, const char **e) {
    while (*s < *e && is_ws(**s)) (*s)++;
    while (*e > *s && is_ws((*e)[-1])) (*e)--;
    if (*s == *e) return false;
    for (const char *q = *s; q < *e; q++)
        if (is_ws(*q) || strchr("\"'`[]{}()<>", *q)) return false;
    return true;
}

/* Skips white space and an opening ```json or ``` fence with the white space after it;
 * whether there was a fence. */
static bool fence_open(const char **s, const char *end) {
    *s = skip_ws(*s, end);
    if (!starts(*s, end, FENCE)) return false;
    *s += strlen(FENCE);
    if (starts(*s, end, "json")) *s += 4;
    *s = skip_ws(*s, end);
    return true;
}

/* An object of arguments at s (after white space and an optional ```json / ``` fence),
 * then that fence's end; *next: where the call ends. */
static bool fenced_args(tc_parser *p, const char *name, size_t name_len, const char *s,
                        const char *end, const char **next) {
    bool fenced = fence_open(&s, end);
    const char *e = NULL;
    cJSON *v = s < end && *s == '{' ? value_at(s, end, &e) : NULL;
    bool ok = v && add_named(p, name, name_len, v);
    cJSON_Delete(v);
    if (!ok) return false;
    s = skip_ws(e, end);
    if (fenced && starts(s, end, FENCE)) s += strlen(FENCE);
    *next = s;
    return true;
}

/* DeepSeek V3 / R1:
 *   <｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>NAME\n```json\n{...}\n```<｜tool▁call▁end｜>
 *   (\n<｜tool▁call▁begin｜>...<｜tool▁call▁end｜>)... <｜tool▁calls▁end｜>
 * The first marker may be missing; the closing ones too where the answer ended. */
static bool parse_deepseek(tc_parser *p, const char *s, const char *end) {
    s = skip_ws(s, end);
    if (starts(s, end, DS_CALLS_BEGIN)) s += strlen(DS_CALLS_BEGIN);
    for (;;) {
        s = skip_ws(s, end);
        if (s == end) return p->n_calls > 0;
        if (starts(s, end, DS_CALLS_END)) return p->n_calls > 0 && skip_ws(s + strlen(DS_CALLS_END), end) == end;
        if (!starts(s, end, DS_CALL_BEGIN)) return false;
        s += strlen(DS_CALL_BEGIN);
        const char *sep = find_in(s, end, DS_SEP);
        if (!sep) return false;
        const char *t = skip_ws(s, sep), *te = sep;
        while (te > t && is_ws(te[-1])) te--;
        if (te != t && (te - t != 8 || memcmp(t, "function", 8))) return false;
        s = sep + strlen(DS_SEP);
        const char *ne = s;
        while (ne < end && *ne != '\n' && *ne != '`' && *ne != '{') ne++;
        if (!bare_name(&s, &ne)) return false;
        if (!fenced_args(p, s, (size_t)(ne - s), ne, end, &s)) return false;
        s = skip_ws(s, end);
        if (starts(s, end, DS_CALL_END)) s += strlen(DS_CALL_END);
        else if (s != end) return false;
    }
}

/* Command-R: Action: ```json [{"tool_name": ..., "parameters": {...}}, ...] ``` */
static bool parse_command_r(tc_parser *p, const char *s, const char *end) {
    s = skip_ws(s, end);
    if (!starts(s, end, CMDR_OPEN)) return false;
    s += strlen(CMDR_OPEN);
    bool fenced = fence_open(&s, end);
    const char *next = NULL;
    if (!json_calls(p, s, end, "tool_name", &next)) return false;
    s = skip_ws(next, end);
    if (fenced && starts(s, end, FENCE)) s = skip_ws(s + strlen(FENCE), end);
    return s == end;
}

/* Mistral: [TOOL_CALLS] [{call}, ...] (v3), or [TOOL_CALLS]NAME[ARGS]{...} once per call,
 * with [CALL_ID]ID before [ARGS] in some versions. */
static bool parse_mistral(tc_parser *p, const char *s, const char *end) {
    const char *b = skip_ws(s, end);
    if (!starts(b, end, MISTRAL_OPEN)) return false;
    const char *a = skip_ws(b + strlen(MISTRAL_OPEN), end);
    if (a < end && (*a == '[' || *a == '{')) return parse_list(p, s, end, MISTRAL_OPEN);
    s = b;
    for (;;) {
        if (!starts(s, end, MISTRAL_OPEN)) return false;
        s += strlen(MISTRAL_OPEN);
        const char *args = find_in(s, end, MISTRAL_ARGS);
        if (!args) return false;
        const char *ne = args, *id = find_in(s, args, MISTRAL_CALL_ID);
        if (id) ne = id;
        if (!bare_name(&s, &ne)) return false;
        if (!fenced_args(p, s, (size_t)(ne - s), args + strlen(MISTRAL_ARGS), end, &s)) return false;
        s = skip_ws(s, end);
        if (s == end) return true;
    }
}

/* ---- Python literals --------------------------------------------------------------------- */

#define PY_DEPTH 64

static void put_utf8(srv_buf *b, uint32_t c) {
    char u[4];
    size_t k;
    if (c < 0x80) u[0] = (char)c, k = 1;
    else if (c < 0x800) u[0] = (char)(0xC0 | c >> 6), u[1] = (char)(0x80 | (c & 0x3F)), k = 2;
    else if (c < 0x10000)
        u[0] = (char)(0xE0 | c >> 12), u[1] = (char)(0x80 | ((c >> 6) & 0x3F)), u[2] = (char)(0x80 | (c & 0x3F)), k = 3;
    else
        u[0] = (char)(0xF0 | c >> 18), u[1] = (char)(0x80 | ((c >> 12) & 0x3F)),
        u[2] = (char)(0x80 | ((c >> 6) & 0x3F)), u[3] = (char)(0x80 | (c & 0x3F)), k = 4;
    srv_buf_add(b, u, k);
}

/* k hex digits at s, as a number; false when they are not. */
static bool hex_at(const char *s, const char *end, int k, uint32_t *v) {
    if (end - s < k) return false;
    *v = 0;
    for (int i = 0; i < k; i++) {
        char c = s[i];
        int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
        if (d < 0) return false;
        *v = *v * 16 + (uint32_t)d;
    }
    return true;
}

/* A Python string literal, '...' or "..." (no prefix, not triple-quoted), with its escapes
 * (\\ \' \" \n \t \r \b \f \v \a, \xHH, \uHHHH, \UHHHHHHHH, a backslash-newline); a NUL or
 * a surrogate is not taken (JSON text of the arguments would not keep it). */
static cJSON *py_string(const char **sp, const char *end) {
    const char *s = *sp;
    char q = *s++;
    if (s + 1 < end && s[0] == q && s[1] == q) return NULL; /* triple quotes */
    srv_buf b = {0};
    bool ok = false;
    while (s < end) {
        char c = *s++;
        if (c == q) {
            ok = true;
            break;
        }
        if (c == '\n' || c == '\r') break;
        if (c != '\\') {
            srv_buf_add(&b, &c, 1);
            continue;
        }
        if (s == end) break;
        char e = *s++;
        uint32_t v = 0;
        static const char esc_in[] = "\\'\"ntrbfva", esc_out[] = "\\'\"\n\t\r\b\f\v\a";
        const char *simple = e ? strchr(esc_in, e) : NULL;
        if (simple) {
            srv_buf_add(&b, &esc_out[simple - esc_in], 1);
        } else if (e == '\n') { /* a line continued */
        } else if (e >= '0' && e <= '7') { /* up to three octal digits */
            v = (uint32_t)(e - '0');
            for (int i = 0; i < 2 && s < end && *s >= '0' && *s <= '7'; i++) v = v * 8 + (uint32_t)(*s++ - '0');
            if (v == 0) break;
            put_utf8(&b, v);
        } else if ((e == 'x' && hex_at(s, end, 2, &v)) || (e == 'u' && hex_at(s, end, 4, &v)) ||
                   (e == 'U' && hex_at(s, end, 8, &v))) {
            s += e == 'x' ? 2 : e == 'u' ? 4 : 8;
            if (v == 0 || (v >= 0xD800 && v <= 0xDFFF) || v > 0x10FFFF) break;
            put_utf8(&b, v);
        } else if (e == 'x' || e == 'u' || e == 'U' || e == 'N') { /* too short, or \N{NAME} */
            break;
        } else { /* Python keeps an unknown escape as it is */
            srv_buf_add(&b, s - 2, 2);
        }
    }
    cJSON *r = NULL;
    if (ok && !b.oom && !(b.n && memchr(b.p, 0, b.n))) r = cJSON_CreateString(b.p ? b.p : "");
    srv_buf_free(&b);
    if (r) *sp = s;
    return r;
}

/* A number as JSON writes one (Python's literal of the same text means the same), kept as
 * its text; a '+' sign is dropped. */
/* A Python int or float literal, written as JSON: digits kept as written (big integers
 * keep every digit), "1." and ".5" completed to 1.0 and 0.5, a leading '+' dropped. */
static cJSON *py_number(const char **sp, const char *end) {
    const char *s = *sp;
    if (s < end && *s == '+') s++;
    bool neg = s < end && *s == '-';
    if (neg) s++;
    const char *ip = s;
    if (s < end && *s == '0') s++;
    else while (s < end && *s >= '0' && *s <= '9') s++;
    size_t n_int = (size_t)(s - ip);
    const char *fp = s;
    size_t n_frac = 0;
    bool dot = s < end && *s == '.';
    if (dot) {
        fp = ++s;
        while (s < end && *s >= '0' && *s <= '9') s++;
        n_frac = (size_t)(s - fp);
    }
    if (!n_int && !n_frac) return NULL;
    const char *ep = s;
    if (s < end && (*s == 'e' || *s == 'E')) {
        s++;
        if (s < end && (*s == '+' || *s == '-')) s++;
        const char *d = s;
        while (s < end && *s >= '0' && *s <= '9') s++;
        if (s == d) return NULL;
    }
    if (s < end && (ident_char(*s) || *s == '.')) return NULL; /* 0x1f, 1_000, 1.5j, 01 ... */
    srv_buf t = {0};
    if (neg) srv_buf_add(&t, "-", 1);
    if (n_int) srv_buf_add(&t, ip, n_int);
    else srv_buf_add(&t, "0", 1);
    if (dot) {
        srv_buf_add(&t, ".", 1);
        if (n_frac) srv_buf_add(&t, fp, n_frac);
        else srv_buf_add(&t, "0", 1);
    }
    srv_buf_add(&t, ep, (size_t)(s - ep));
    cJSON *r = t.oom || !t.p ? NULL : cJSON_CreateRaw(t.p);
    srv_buf_free(&t);
    if (r) *sp = s;
    return r;
}

static cJSON *py_value(const char **sp, const char *end, int depth);

/* [v, ...] or {'k': v, ...}, a trailing comma allowed; dict keys are strings. */
static cJSON *py_container(const char **sp, const char *end, int depth) {
    const char *s = *sp;
    bool dict = *s++ == '{';
    char close = dict ? '}' : ']';
    cJSON *r = dict ? cJSON_CreateObject() : cJSON_CreateArray();
    for (;;) {
        s = skip_ws(s, end);
        if (!r || s == end) break;
        if (*s == close) {
            *sp = s + 1;
            return r;
        }
        cJSON *key = NULL;
        if (dict) {
            if (*s != '\'' && *s != '"') break;
            if (!(key = py_string(&s, end))) break;
            s = skip_ws(s, end);
            if (s == end || *s++ != ':') {
                cJSON_Delete(key);
                break;
            }
        }
        cJSON *v = py_value(&s, end, depth + 1);
        if (!v) {
            cJSON_Delete(key);
            break;
        }
        if (dict) { /* a repeated key: the last value in the first place, as in Python */
            if (cJSON_GetObjectItemCaseSensitive(r, key->valuestring))
                cJSON_ReplaceItemInObjectCaseSensitive(r, key->valuestring, v);
            else
                cJSON_AddItemToObject(r, key->valuestring, v);
            cJSON_Delete(key);
        } else {
            cJSON_AddItemToArray(r, v);
        }
        s = skip_ws(s, end);
        if (s < end && *s == ',') s++;
        else if (s == end || *s != close) break;
    }
    cJSON_Delete(r);
    return NULL;
}

/* A Python literal: a string, a number, True / False / None, a list or a dict of them. */
static cJSON *py_value(const char **sp, const char *end, int depth) {
    const char *s = skip_ws(*sp, end);
    if (s == end || depth > PY_DEPTH) return NULL;
    cJSON *r = NULL;
    if (*s == '\'' || *s == '"') {
        r = py_string(&s, end);
    } else if (*s == '[' || *s == '{') {
        r = py_container(&s, end, depth);
    } else if (*s == '-' || *s == '+' || *s == '.' || (*s >= '0' && *s <= '9')) {
        r = py_number(&s, end);
    } else if (ident_start(*s)) {
        const char *e = s;
        while (e < end && ident_char(*e)) e++;
        size_t k = (size_t)(e - s);
        if (k == 4 && !memcmp(s, "True", 4)) r = cJSON_CreateTrue();
        else if (k == 5 && !memcmp(s, "False", 5)) r = cJSON_CreateFalse();
        else if (k == 4 && !memcmp(s, "None", 4)) r = cJSON_CreateNull();
        if (r) s = e;
    }
    if (r) *sp = s;
    return r;
}

/* NAME(key=value, ...): keyword arguments only, each once; *name / *name_len and *out (the
 * arguments as an object, the caller's) when it parses. */
static bool py_call_parse(const char **sp, const char *end, const char **name_out, size_t *name_len_out,
                          cJSON **out) {
    const char *s = skip_ws(*sp, end), *name = s;
    if (s == end || !ident_start(*s)) return false;
    while (s < end && (ident_char(*s) || *s == '.')) s++;
    size_t name_len = (size_t)(s - name);
    s = skip_ws(s, end);
    if (s == end || *s++ != '(') return false;
    cJSON *args = cJSON_CreateObject();
    bool ok = false;
    for (;;) {
        s = skip_ws(s, end);
        if (!args || s == end) break;
        if (*s == ')') {
            s++;
            ok = true;
            break;
        }
        const char *k = s;
        if (!ident_start(*s)) break;
        while (s < end && ident_char(*s)) s++;
        char *key = strndup(k, (size_t)(s - k));
        s = skip_ws(s, end);
        bool dup = key && cJSON_GetObjectItemCaseSensitive(args, key);
        cJSON *v = key && !dup && s < end && *s == '=' ? (s++, py_value(&s, end, 1)) : NULL;
        if (v) cJSON_AddItemToObject(args, key, v);
        free(key);
        if (!v) break;
        s = skip_ws(s, end);
        if (s < end && *s == ',') s++;
        else if (s == end || *s != ')') break;
    }
    if (!ok) {
        cJSON_Delete(args);
        return false;
    }
    *name_out = name;
    *name_len_out = name_len;
    *out = args;
    *sp = s;
    return true;
}

static bool py_call(tc_parser *p, const char **sp, const char *end) {
    const char *name = NULL;
    size_t name_len = 0;
    cJSON *args = NULL;
    bool ok = py_call_parse(sp, end, &name, &name_len, &args) && add_named(p, name, name_len, args);
    cJSON_Delete(args);
    return ok;
}

/* [call, ...] as Python writes a list of calls, at s; *next is where it ends. A list of
 * JSON call objects in the same place is taken too. */
static bool pythonic_list(tc_parser *p, const char *s, const char *end, const char **next) {
    if (s == end || *s != '[') return false;
    const char *in = skip_ws(s + 1, end);
    if (in < end && *in == '{') return json_calls(p, s, end, "name", next);
    s = in;
    for (bool first = true;; first = false) {
        s = skip_ws(s, end);
        if (s == end) return false;
        if (*s == ']' && !first) {
            *next = s + 1;
            return true;
        }
        if (!py_call(p, &s, end)) return false;
        s = skip_ws(s, end);
        if (s < end && *s == ',') s++;
        else if (s == end || *s != ']') return false;
    }
}

/* <|tool_call_start|>[call, ...]<|tool_call_end|>, repeated (the last end marker may be
 * missing where the answer ended), or a bare [call, ...] as the whole answer. */
static bool parse_pythonic(tc_parser *p, const char *s, const char *end) {
    s = skip_ws(s, end);
    if (!starts(s, end, PY_START)) {
        const char *next = NULL;
        return pythonic_list(p, s, end, &next) && skip_ws(next, end) == end;
    }
    while (starts(s, end, PY_START)) {
        const char *next = NULL;
        if (!pythonic_list(p, skip_ws(s + strlen(PY_START), end), end, &next)) return false;
        s = skip_ws(next, end);
        if (starts(s, end, PY_END)) s = skip_ws(s + strlen(PY_END), end);
        else if (s != end) return false;
    }
    return s == end;
}

/* ---- calls as they stream (tc_partial) ----------------------------------------------------
 * The held text is read again from its start after each piece, as far as it goes: a read
 * that stops where the text ends (or where it stops making sense) leaves what it found so
 * far. Names are taken once whole; arguments written as a JSON object are copied without
 * the white space outside strings, which tc_finish then gives as the call's arguments, so
 * that every read is a prefix of the end's. */

static void partial_clear(tc_parser *p) {
    for (int i = 0; i < p->n_partial; i++) {
        free(p->partial[i].name);
        srv_buf_free(&p->partial[i].args);
    }
    p->n_partial = 0;
}

static tc_partial *partial_new(tc_parser *p) {
    if (p->n_partial == p->cap_partial) {
        int cap = p->cap_partial ? 2 * p->cap_partial : 4;
        tc_partial *q = realloc(p->partial, sizeof *q * (size_t)cap);
        if (!q) {
            p->oom = true;
            return NULL;
        }
        p->partial = q;
        p->cap_partial = cap;
    }
    tc_partial *c = &p->partial[p->n_partial++];
    memset(c, 0, sizeof *c);
    return c;
}

static void partial_name(tc_parser *p, tc_partial *c, const char *s, size_t n) {
    if (c->name || !n) return;
    if (!(c->name = strndup(s, n))) p->oom = true;
}

/* Past the JSON string at s (its opening quote), or NULL when it has not ended. */
static const char *string_end(const char *s, const char *end) {
    for (s++; s < end; s++) {
        if (*s == '\\') s++;
        else if (*s == '"') return s + 1;
    }
    return NULL;
}

/* Past the JSON value at s, or NULL when it has not ended (a number or word that reaches
 * the end of the text may go on). Not a check: the end's parse is. */
static const char *value_end(const char *s, const char *end) {
    int depth = 0;
    for (; s < end; s++) {
        char c = *s;
        if (c == '"') {
            if (!(s = string_end(s, end))) return NULL;
            if (!depth) return s;
            s--;
        } else if (c == '{' || c == '[') {
            depth++;
        } else if (c == '}' || c == ']') {
            if (!depth) return s; /* a word before its container's close */
            if (--depth == 0) return s + 1;
        } else if (!depth && (c == ',' || is_ws(c))) {
            return s;
        }
    }
    return NULL;
}

/* s[0, e) (from a value's start, outside strings) without the white space outside strings. */
static void minify(srv_buf *b, const char *s, const char *e) {
    bool in_str = false;
    const char *run = s;
    for (const char *q = s; q < e; q++) {
        if (in_str) {
            if (*q == '\\') q++;
            else if (*q == '"') in_str = false;
        } else if (*q == '"') {
            in_str = true;
        } else if (is_ws(*q)) {
            srv_buf_add(b, run, (size_t)(q - run));
            run = q + 1;
        }
    }
    if (e > run) srv_buf_add(b, run, (size_t)(e - run));
}

/* Arguments at s: an object copied as far as it goes (*whole once it ended); anything
 * else is left to the end. Returns past the value, or NULL. */
static const char *args_progress(tc_partial *c, const char *s, const char *end) {
    const char *ve = value_end(s, end);
    if (s < end && *s == '{') {
        srv_buf_clear(&c->args);
        minify(&c->args, s, ve ? ve : end);
        c->args_whole = ve != NULL;
    }
    return ve;
}

/* A call object at s ('{'): its name under name_key once whole, its arguments (the first
 * of "arguments" and "parameters") as far as they go. Returns past it, or NULL. */
static const char *object_progress(tc_parser *p, const char *s, const char *end, const char *name_key) {
    tc_partial *c = partial_new(p);
    if (!c) return NULL;
    bool args_seen = false;
    for (s++;;) {
        s = skip_ws(s, end);
        if (s == end) return NULL;
        if (*s == '}') return s + 1;
        if (*s == ',') {
            s++;
            continue;
        }
        const char *ke = *s == '"' ? string_end(s, end) : NULL;
        if (!ke) return NULL;
        const char *k = s + 1;
        size_t kl = (size_t)(ke - k - 1);
        s = skip_ws(ke, end);
        if (s == end || *s != ':') return NULL;
        s = skip_ws(s + 1, end);
        if (s == end) return NULL;
        const char *ve;
        if (is_args_key(k, kl) && !args_seen) {
            args_seen = true;
            ve = args_progress(c, s, end);
        } else {
            ve = value_end(s, end);
            if (ve && *s == '"' && kl == strlen(name_key) && !memcmp(k, name_key, kl) && !c->name) {
                const char *after = NULL;
                cJSON *v = value_at(s, ve, &after);
                if (cJSON_IsString(v)) partial_name(p, c, v->valuestring, strlen(v->valuestring));
                cJSON_Delete(v);
            }
        }
        if (!ve) return NULL;
        s = ve;
    }
}

/* [{call}, ...] or one {call} at s. Returns past it, or NULL. */
static const char *list_progress(tc_parser *p, const char *s, const char *end, const char *name_key) {
    if (s < end && *s == '{') return object_progress(p, s, end, name_key);
    if (s == end || *s != '[') return NULL;
    for (s++;;) {
        s = skip_ws(s, end);
        if (s == end) return NULL;
        if (*s == ']') return s + 1;
        if (*s == ',') {
            s++;
            continue;
        }
        if (*s != '{' || !(s = object_progress(p, s, end, name_key))) return NULL;
    }
}

/* [NAME(k=v, ...), ...] (or a list of JSON calls) at s: a name once its '(' is written,
 * its arguments once the call has closed. */
static void pythonic_progress(tc_parser *p, const char *s, const char *end) {
    if (s == end || *s != '[') return;
    const char *in = skip_ws(s + 1, end);
    if (in < end && *in == '{') {
        list_progress(p, s, end, "name");
        return;
    }
    for (s = in;;) {
        s = skip_ws(s, end);
        if (s == end || !ident_start(*s)) return;
        const char *name = s;
        while (s < end && (ident_char(*s) || *s == '.')) s++;
        size_t name_len = (size_t)(s - name);
        s = skip_ws(s, end);
        if (s == end || *s != '(') return;
        tc_partial *c = partial_new(p);
        if (!c) return;
        partial_name(p, c, name, name_len);
        const char *q = name, *cn = NULL;
        size_t cl = 0;
        cJSON *args = NULL;
        if (!py_call_parse(&q, end, &cn, &cl, &args)) return;
        char *t = cJSON_PrintUnformatted(args);
        cJSON_Delete(args);
        if (t) srv_buf_str(&c->args, t);
        cJSON_free(t);
        c->args_whole = t != NULL;
        s = skip_ws(q, end);
        if (s < end && *s == ',') s++;
        else return;
    }
}

/* A name written bare up to a terminator: whole once one of stops follows it. */
static const char *bare_progress(tc_parser *p, tc_partial *c, const char *s, const char *end,
                                 const char *const *stops) {
    const char *best = NULL;
    for (const char *const *t = stops; *t; t++) {
        const char *at = find_in(s, end, *t);
        if (at && (!best || at < best)) best = at;
    }
    if (!best) return NULL;
    const char *ns = s, *ne = best;
    if (bare_name(&ns, &ne)) partial_name(p, c, ns, (size_t)(ne - ns));
    return best;
}

static void progress(tc_parser *p) {
    partial_clear(p);
    const char *s = skip_ws(p->text + p->start, p->text + p->n), *end = p->text + p->n;
    switch (p->fmt) {
    case TC_HERMES:
        while (starts(s, end, HERMES_OPEN)) {
            s = skip_ws(s + strlen(HERMES_OPEN), end);
            if (s == end || *s != '{' || !(s = object_progress(p, s, end, "name"))) return;
            s = skip_ws(s, end);
            if (starts(s, end, HERMES_CLOSE)) s = skip_ws(s + strlen(HERMES_CLOSE), end);
        }
        return;
    case TC_LLAMA3:
        if (s < end && *s == '[') {
            pythonic_progress(p, s, end);
            return;
        }
        if (starts(s, end, PYTHON_TAG)) s += strlen(PYTHON_TAG);
        for (;;) {
            s = skip_ws(s, end);
            if (s == end || *s != '{' || !(s = object_progress(p, s, end, "name"))) return;
            s = skip_ws(s, end);
            if (s < end && *s == ';') s++;
        }
    case TC_GRANITE:
    case TC_MISTRAL: {
        const char *open = p->fmt == TC_GRANITE ? GRANITE_OPEN : MISTRAL_OPEN;
        if (!starts(s, end, open)) return;
        const char *a = skip_ws(s + strlen(open), end);
        if (a == end || *a == '[' || *a == '{' || p->fmt == TC_GRANITE) {
            list_progress(p, a, end, "name");
            return;
        }
        static const char *const stops[] = {MISTRAL_ARGS, MISTRAL_CALL_ID, NULL};
        while (starts(s, end, MISTRAL_OPEN)) { /* NAME[CALL_ID]ID[ARGS]{...} */
            tc_partial *c = partial_new(p);
            if (!c || !bare_progress(p, c, s + strlen(MISTRAL_OPEN), end, stops)) return;
            const char *args = find_in(s, end, MISTRAL_ARGS);
            if (!args) return;
            s = skip_ws(args + strlen(MISTRAL_ARGS), end);
            if (!(s = args_progress(c, s, end))) return;
            s = skip_ws(s, end);
        }
        return;
    }
    case TC_DEEPSEEK:
        if (starts(s, end, DS_CALLS_BEGIN)) s += strlen(DS_CALLS_BEGIN);
        for (;;) {
            s = skip_ws(s, end);
            if (!starts(s, end, DS_CALL_BEGIN)) return;
            const char *sep = find_in(s, end, DS_SEP);
            if (!sep) return;
            tc_partial *c = partial_new(p);
            static const char *const stops[] = {"\n", FENCE, "{", NULL};
            if (!c || !(s = bare_progress(p, c, sep + strlen(DS_SEP), end, stops))) return;
            fence_open(&s, end);
            if (s == end || *s != '{' || !(s = args_progress(c, s, end))) return;
            s = skip_ws(s, end);
            if (starts(s, end, FENCE)) s = skip_ws(s + strlen(FENCE), end);
            if (!starts(s, end, DS_CALL_END)) return;
            s += strlen(DS_CALL_END);
        }
    case TC_COMMAND_R:
        if (!starts(s, end, CMDR_OPEN)) return;
        s += strlen(CMDR_OPEN);
        fence_open(&s, end);
        list_progress(p, s, end, "tool_name");
        return;
    case TC_PYTHONIC:
        if (starts(s, end, PY_START)) {
            while (starts(s, end, PY_START)) { /* each list between the markers */
                const char *ls = skip_ws(s + strlen(PY_START), end);
                const char *le = find_in(ls, end, PY_END);
                pythonic_progress(p, ls, le ? le : end);
                if (!le) return;
                s = skip_ws(le + strlen(PY_END), end);
            }
            return;
        }
        pythonic_progress(p, s, end);
        return;
    default:
        return;
    }
}

/* The calls parsed at the end, each given the arguments the stream read (the object as the
 * model wrote it, less white space), so that what was streamed is a prefix of them. */
static void settle_arguments(tc_parser *p) {
    progress(p);
    for (int i = 0; i < p->n_calls && i < p->n_partial && !p->oom; i++) {
        tc_partial *c = &p->partial[i];
        if (!c->name || strcmp(c->name, p->calls[i].name) || !c->args_whole || !c->args.n || c->args.oom) continue;
        char *a = strdup(c->args.p);
        if (!a) {
            p->oom = true;
            return;
        }
        free(p->calls[i].arguments);
        p->calls[i].arguments = a;
    }
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
        bool ok;
        switch (p->fmt) {
        case TC_HERMES: ok = parse_hermes(p, s, end); break;
        case TC_LLAMA3: ok = parse_llama(p, s, end); break;
        case TC_MISTRAL: ok = parse_mistral(p, s, end); break;
        case TC_DEEPSEEK: ok = parse_deepseek(p, s, end); break;
        case TC_COMMAND_R: ok = parse_command_r(p, s, end); break;
        case TC_PYTHONIC: ok = parse_pythonic(p, s, end); break;
        default: ok = parse_list(p, s, end, GRANITE_OPEN); break;
        }
        if (ok && !p->oom) settle_arguments(p);
        if (ok && !p->oom) return p->n_calls;
        free_calls(p);
    }
    emit_to(p, p->n);
    return 0;
}

void tc_free(tc_parser *p) {
    free_calls(p);
    partial_clear(p);
    free(p->partial);
    srv_buf_free(&p->buf);
    memset(p, 0, sizeof *p);
}

/* ---- which format a template teaches ---------------------------------------------------- */

static const char probe_tools[] =
    "[{\"type\": \"function\", \"function\": {\"name\": \"og_probe_fn\", \"description\": "
    "\"A probe.\", \"parameters\": {\"type\": \"object\", \"properties\": {\"og_probe_arg\": "
    "{\"type\": \"string\", \"description\": \"A value.\"}}, \"required\": [\"og_probe_arg\"]}}}]";

/* The probe conversation rendered: with an assistant turn calling og_probe_fn (its
 * arguments an object or JSON text, its content "" or None: DeepSeek's templates write a
 * call only where the content is None, which transformers never passes, so that probe
 * keeps nulls) and the tool's answer, or the question alone. NULL when it raises. */
static char *probe(const og_chat_template *t, bool with_call, bool args_object, bool content_none) {
    char msgs[1024];
    snprintf(msgs, sizeof msgs,
             "[{\"role\": \"user\", \"content\": \"What is the probe?\"}%s%s%s%s%s]",
             with_call ? ", {\"role\": \"assistant\", \"content\": " : "",
             with_call ? (content_none ? "null" : "\"\"") : "",
             with_call ? ", \"tool_calls\": [{\"id\": \"ogprobe01\", \"type\": \"function\", "
                         "\"function\": {\"name\": \"og_probe_fn\", \"arguments\": " : "",
             with_call ? (args_object ? "{\"og_probe_arg\": \"x\"}" : "\"{\\\"og_probe_arg\\\": \\\"x\\\"}\"") : "",
             with_call ? "}}]}, {\"role\": \"tool\", \"tool_call_id\": \"ogprobe01\", \"name\": "
                         "\"og_probe_fn\", \"content\": \"42\"}" : "");
    og_chat_options o = og_chat_options_default();
    o.tools_json = probe_tools;
    o.add_generation_prompt = 1;
    char *text = NULL;
    og_status *st = content_none ? chat_template_apply_nulls(t, msgs, &o, &text)
                                 : og_chat_template_apply(t, msgs, &o, &text);
    if (st) {
        og_status_free(st);
        return NULL;
    }
    return text;
}

/* Markers a vocabulary may have for a format its template does not show (the template
 * lists the tools, the model was taught the rest: LFM2's pythonic calls). */
static const struct {
    const char *open, *close;
    tc_format f;
} vocab_formats[] = {{PY_START, PY_END, TC_PYTHONIC}};

bool tc_tokenizer_has(void *tok, const char *text) { return og_tokenizer_token_to_id(tok, text) >= 0; }

tc_format tc_detect(const og_chat_template *t, tc_has_token_fn has_token, void *ctx, bool *args_object) {
    *args_object = false;
    tc_format f = TC_NONE;
    for (int none = 0; none < 2 && f == TC_NONE; none++) {
        bool obj = true;
        char *text = probe(t, true, true, none);
        if (!text) {
            obj = false;
            text = probe(t, true, false, none);
        }
        if (text && !none) *args_object = obj;
        f = tc_format_in_text(text);
        if (f != TC_NONE) *args_object = obj;
        og_free(text);
    }
    if (f == TC_NONE) { /* the instructions alone (a template that never renders calls) */
        char *text = probe(t, false, false, false);
        f = tc_format_in_text(text);
        bool lists_tools = text && strstr(text, "og_probe_fn");
        og_free(text);
        for (size_t i = 0; f == TC_NONE && lists_tools && has_token && i < sizeof vocab_formats / sizeof *vocab_formats; i++)
            if (has_token(ctx, vocab_formats[i].open) && has_token(ctx, vocab_formats[i].close)) f = vocab_formats[i].f;
    }
    return f;
}
