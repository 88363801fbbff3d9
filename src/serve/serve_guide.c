/* Constrained decoding in a request: `response_format` (a JSON object, a JSON Schema) and
 * a forced tool call (`tool_choice` "required" or a named function) become guidance text
 * (serve_internal.h: srv_params.guide_*), compiled once per request against the model's
 * vocabulary through genai's cache before anything is submitted, so that an invalid
 * schema is a 400 naming its place.
 *
 * A forced call is written in the format the model's chat template teaches (the one the
 * tool-call parser reads back), as a Lark grammar: the markers and the call's envelope
 * (the function's name, compact, in the template's key order) are literals, the
 * arguments a %json of the function's `parameters`. The markers are written as text: a marker that is one special token in the vocabulary
 * (Mistral's [TOOL_CALLS]) is excluded from guidance, so the model writes its bytes with
 * ordinary tokens, which decode to the same text the parser reads. */
#include "serve/serve_internal.h"

#include "genai/guidance.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- response_format ----------------------------------------------------------------- */

static bool set_guide(srv_params *p, int kind, char *text, const char *param, srv_error *err) {
    if (text && p->guide_kind >= 0) {
        free(text);
        srv_fail(err, 400, "response_format", "'response_format' other than text cannot be "
                 "combined with a forced tool call ('tool_choice')");
        return false;
    }
    if (!text) {
        srv_fail(err, 500, "", "out of memory");
        return false;
    }
    p->guide_kind = kind;
    p->guide_text = text;
    snprintf(p->guide_param, sizeof p->guide_param, "%s", param);
    return true;
}

/* Keys of o outside keys (NULL-terminated): 400 naming the first as where.key. */
static bool only_keys(const cJSON *o, const char *where, const char *const *keys, srv_error *err) {
    const cJSON *f;
    cJSON_ArrayForEach(f, o) {
        bool ok = false;
        for (int i = 0; keys[i] && !ok; i++) ok = !strcmp(f->string, keys[i]);
        if (!ok) {
            char param[64];
            snprintf(param, sizeof param, "%s.%.40s", where, f->string);
            srv_fail(err, 400, param, "Unrecognized field '%s' in '%s'", f->string, where);
            return false;
        }
    }
    return true;
}

/* OpenAI's json_schema.name: 1 to 64 letters, digits, '_' and '-'. */
static bool schema_name_ok(const char *s) {
    size_t n = strlen(s);
    if (n < 1 || n > 64) return false;
    for (size_t i = 0; i < n; i++)
        if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z') ||
              (s[i] >= '0' && s[i] <= '9') || s[i] == '_' || s[i] == '-'))
            return false;
    return true;
}

bool srv_read_response_format(const cJSON *body, srv_params *p, srv_error *err) {
    const cJSON *rf = cJSON_GetObjectItemCaseSensitive(body, "response_format");
    if (!rf || cJSON_IsNull(rf)) return true;
    const cJSON *t = cJSON_IsObject(rf) ? cJSON_GetObjectItemCaseSensitive(rf, "type") : NULL;
    if (!cJSON_IsString(t)) {
        srv_fail(err, 400, "response_format", "'response_format' must be an object with a string "
                 "'type': \"text\", \"json_object\" or \"json_schema\"");
        return false;
    }
    if (!strcmp(t->valuestring, "text") || !strcmp(t->valuestring, "json_object")) {
        static const char *const keys[] = {"type", NULL};
        if (!only_keys(rf, "response_format", keys, err)) return false;
        return !strcmp(t->valuestring, "text") ||
               set_guide(p, GUIDE_JSON_OBJECT, strdup(""), "response_format", err);
    }
    if (strcmp(t->valuestring, "json_schema") != 0) {
        srv_fail(err, 400, "response_format.type", "'response_format.type' is \"%.64s\": it must "
                 "be \"text\", \"json_object\" or \"json_schema\"", t->valuestring);
        return false;
    }
    static const char *const keys[] = {"type", "json_schema", NULL};
    static const char *const js_keys[] = {"name", "schema", "strict", "description", NULL};
    if (!only_keys(rf, "response_format", keys, err)) return false;
    const cJSON *js = cJSON_GetObjectItemCaseSensitive(rf, "json_schema");
    if (!cJSON_IsObject(js)) {
        srv_fail(err, 400, "response_format.json_schema", "'response_format.json_schema' must be "
                 "an object with 'name' and 'schema'");
        return false;
    }
    if (!only_keys(js, "response_format.json_schema", js_keys, err)) return false;
    const cJSON *name = cJSON_GetObjectItemCaseSensitive(js, "name");
    if (!cJSON_IsString(name) || !schema_name_ok(name->valuestring)) {
        srv_fail(err, 400, "response_format.json_schema.name", "'response_format.json_schema.name' "
                 "must be a string of 1 to 64 letters, digits, '_' or '-'");
        return false;
    }
    const cJSON *strict = cJSON_GetObjectItemCaseSensitive(js, "strict");
    if (strict && !cJSON_IsNull(strict) && !cJSON_IsBool(strict)) {
        srv_fail(err, 400, "response_format.json_schema.strict",
                 "'response_format.json_schema.strict' must be true or false");
        return false;
    }
    const cJSON *desc = cJSON_GetObjectItemCaseSensitive(js, "description");
    if (desc && !cJSON_IsNull(desc) && !cJSON_IsString(desc)) {
        srv_fail(err, 400, "response_format.json_schema.description",
                 "'response_format.json_schema.description' must be a string");
        return false;
    }
    /* the output always follows the schema (strict or not); without one, any JSON value */
    const cJSON *schema = cJSON_GetObjectItemCaseSensitive(js, "schema");
    if (schema && !cJSON_IsNull(schema) && !cJSON_IsObject(schema) && !cJSON_IsBool(schema)) {
        srv_fail(err, 400, "response_format.json_schema.schema",
                 "'response_format.json_schema.schema' must be a JSON Schema (an object)");
        return false;
    }
    char *text = schema && !cJSON_IsNull(schema) ? cJSON_PrintUnformatted(schema) : strdup("{}");
    snprintf(p->guide_name, sizeof p->guide_name, "%s", name->valuestring);
    return set_guide(p, GUIDE_JSON_SCHEMA, text, "response_format.json_schema.schema", err);
}

/* ---- forced tool calls ---------------------------------------------------------------- */

/* A Lark string literal of s. */
static void lark_string(srv_buf *b, const char *s) {
    srv_buf_add(b, "\"", 1);
    for (; *s; s++) {
        if (*s == '"' || *s == '\\') srv_buf_printf(b, "\\%c", *s);
        else if (*s == '\n') srv_buf_str(b, "\\n");
        else srv_buf_add(b, s, 1);
    }
    srv_buf_add(b, "\"", 1);
}

/* The schema of function f's arguments: its parameters, always an object (a call's
 * arguments are one: a schema without a type, `{}` or none at all, gets "type": "object"),
 * written as the templates write arguments (`tojson`: ", " and ": ", no other white
 * space) unless the schema asks otherwise (its own "x-guidance"): JSON's free white space
 * would let a model spend its budget on it. */
static cJSON *args_schema(const cJSON *f) {
    const cJSON *params = cJSON_GetObjectItemCaseSensitive(f, "parameters");
    cJSON *args = cJSON_IsObject(params) ? cJSON_Duplicate(params, 1) : cJSON_CreateObject();
    if (args && !cJSON_HasObjectItem(args, "type")) cJSON_AddStringToObject(args, "type", "object");
    cJSON *xg = args && !cJSON_HasObjectItem(args, "x-guidance") ? cJSON_AddObjectToObject(args, "x-guidance") : NULL;
    if (xg) {
        cJSON_AddFalseToObject(xg, "whitespace_flexible");
        cJSON_AddStringToObject(xg, "item_separator", ", ");
        cJSON_AddStringToObject(xg, "key_separator", ": ");
    }
    return args;
}

/* Appends `%json SCHEMA` (takes the schema). */
static void lark_json(srv_buf *b, cJSON *schema) {
    char *t = schema ? cJSON_PrintUnformatted(schema) : NULL;
    cJSON_Delete(schema);
    if (!t) {
        b->oom = true;
        return;
    }
    srv_buf_printf(b, "%%json %s", t);
    cJSON_free(t);
}

/* The text of a call of f in format fmt before its arguments, and after them: the
 * envelope is written here, compact and in the template's key order, so that only the
 * arguments are free JSON. */
static void call_text(srv_buf *before, srv_buf *after, tc_format fmt, const cJSON *f) {
    const char *name = cJSON_GetObjectItemCaseSensitive(f, "name")->valuestring;
    if (fmt == TC_DEEPSEEK) {
        srv_buf_printf(before, "<｜tool▁call▁begin｜>function<｜tool▁sep｜>%s\n```json\n", name);
        srv_buf_str(after, "\n```<｜tool▁call▁end｜>");
        return;
    }
    cJSON *js = cJSON_CreateString(name); /* the name as a JSON string */
    char *q = js ? cJSON_PrintUnformatted(js) : NULL;
    cJSON_Delete(js);
    if (!q) {
        before->oom = true;
        return;
    }
    srv_buf_printf(before, "%s{\"%s\": %s, \"%s\": ", fmt == TC_HERMES ? "<tool_call>\n" : "",
                   fmt == TC_COMMAND_R ? "tool_name" : "name", q,
                   fmt == TC_LLAMA3 || fmt == TC_COMMAND_R ? "parameters" : "arguments");
    cJSON_free(q);
    srv_buf_str(after, fmt == TC_HERMES ? "}\n</tool_call>" : "}");
}

/* The grammar of the forced calls: fns[0..n) the functions that may be called, one call
 * or (parallel) one or more, separated and enclosed as the format writes them. */
static void tools_grammar(srv_buf *b, tc_format fmt, const cJSON *const *fns, int n, bool parallel) {
    const char *open = "", *sep = "\n", *close = "";
    switch (fmt) {
    case TC_LLAMA3: sep = "; "; break;
    case TC_MISTRAL: open = "[TOOL_CALLS][", sep = ", ", close = "]"; break;
    case TC_GRANITE: open = "<|tool_call|>[", sep = ", ", close = "]"; break;
    case TC_COMMAND_R: open = "Action:\n```json\n[", sep = ", ", close = "]\n```"; break;
    case TC_DEEPSEEK: open = "<｜tool▁calls▁begin｜>", close = "<｜tool▁calls▁end｜>"; break;
    default: break;
    }
    srv_buf_str(b, "start: ");
    if (*open) {
        lark_string(b, open);
        srv_buf_str(b, " ");
    }
    srv_buf_str(b, "call");
    if (parallel) {
        srv_buf_str(b, " (");
        lark_string(b, sep);
        srv_buf_str(b, " call)*");
    }
    if (*close) {
        srv_buf_str(b, " ");
        lark_string(b, close);
    }
    srv_buf_str(b, "\ncall: ");
    for (int i = 0; i < n; i++) srv_buf_printf(b, "%sf%d", i ? " | " : "", i);
    srv_buf_str(b, "\n");
    srv_buf before = {0}, after = {0};
    for (int i = 0; i < n && !b->oom; i++) {
        srv_buf_clear(&before);
        srv_buf_clear(&after);
        call_text(&before, &after, fmt, fns[i]);
        if (before.oom || after.oom) {
            b->oom = true;
            break;
        }
        srv_buf_printf(b, "f%d: ", i);
        lark_string(b, before.p);
        srv_buf_printf(b, " a%d ", i);
        lark_string(b, after.p);
        srv_buf_printf(b, "\na%d: ", i);
        lark_json(b, args_schema(fns[i]));
        srv_buf_str(b, "\n");
    }
    srv_buf_free(&before);
    srv_buf_free(&after);
}

bool srv_forced_tools(const srv_model *m, const cJSON *tools, const cJSON *choice, srv_params *p,
                      srv_error *err) {
    if (!cJSON_IsArray(tools) || !tools->child) {
        srv_fail(err, 400, "tool_choice", "'tool_choice' other than \"none\" and \"auto\" needs "
                 "'tools', a non-empty array");
        return false;
    }
    if (m->tools_fmt == TC_NONE || m->tools_fmt == TC_PYTHONIC) {
        srv_fail(err, 400, "tool_choice", m->tools_fmt == TC_NONE
                 ? "'tool_choice' forces a tool call, but this model's chat template teaches no "
                   "tool-call format"
                 : "'tool_choice' forces a tool call, which this server cannot constrain in this "
                   "model's tool-call format (pythonic: Python calls, not JSON)");
        return false;
    }
    /* a named function: {"type": "function", "function": {"name": ...}} */
    const char *want = NULL;
    if (cJSON_IsObject(choice)) {
        const cJSON *ty = cJSON_GetObjectItemCaseSensitive(choice, "type");
        const cJSON *fn = cJSON_GetObjectItemCaseSensitive(choice, "function");
        const cJSON *nm = cJSON_IsObject(fn) ? cJSON_GetObjectItemCaseSensitive(fn, "name") : NULL;
        if (!cJSON_IsString(ty) || strcmp(ty->valuestring, "function") != 0 || !cJSON_IsString(nm)) {
            srv_fail(err, 400, "tool_choice", "'tool_choice' naming a function must be "
                     "{\"type\": \"function\", \"function\": {\"name\": ...}}");
            return false;
        }
        want = nm->valuestring;
    }
    int n_tools = cJSON_GetArraySize(tools), n = 0, k = 0;
    const cJSON **fns = calloc((size_t)n_tools, sizeof *fns);
    if (!fns) {
        srv_fail(err, 500, "", "out of memory");
        return false;
    }
    const cJSON *t;
    cJSON_ArrayForEach(t, tools) {
        const cJSON *f = cJSON_IsObject(t) ? cJSON_GetObjectItemCaseSensitive(t, "function") : NULL;
        const cJSON *nm = cJSON_IsObject(f) ? cJSON_GetObjectItemCaseSensitive(f, "name") : NULL;
        const cJSON *pa = cJSON_IsObject(f) ? cJSON_GetObjectItemCaseSensitive(f, "parameters") : NULL;
        char param[48];
        snprintf(param, sizeof param, "tools[%d].function", k++);
        if (!cJSON_IsString(nm) || !*nm->valuestring || (pa && !cJSON_IsNull(pa) && !cJSON_IsObject(pa))) {
            srv_fail(err, 400, param, "'%s' must be an object with a non-empty string 'name' and "
                     "an object 'parameters' (a JSON Schema)", param);
            free(fns);
            return false;
        }
        if (!want || !strcmp(want, nm->valuestring)) fns[n++] = f;
    }
    if (n == 0) {
        srv_fail(err, 400, "tool_choice", "'tool_choice' names the function '%.100s', which is not "
                 "among 'tools'", want);
        free(fns);
        return false;
    }
    srv_buf b = {0};
    tools_grammar(&b, m->tools_fmt, fns, n, p->parallel_tool_calls);
    free(fns);
    if (b.oom) {
        srv_buf_free(&b);
        srv_fail(err, 500, "", "out of memory");
        return false;
    }
    return set_guide(p, GUIDE_LARK, srv_buf_take(&b, NULL), "tools", err);
}

/* ---- compiling ----------------------------------------------------------------------- */

/* A forced call's grammar did not compile: the function whose parameters are at fault,
 * found by compiling each one's alone (a message about its own schema and a param
 * naming it, rather than a line of the grammar the server wrote). False when none is. */
static bool blame_function(srv_model *m, const srv_params *p, srv_error *err) {
    cJSON *tools = p->tools_json ? cJSON_Parse(p->tools_json) : NULL;
    bool found = false;
    int i = 0;
    const cJSON *t;
    cJSON_ArrayForEach(t, tools) {
        if (found) break;
        cJSON *args = args_schema(cJSON_GetObjectItemCaseSensitive(t, "function"));
        char *text = args ? cJSON_PrintUnformatted(args) : NULL;
        cJSON_Delete(args);
        guide_grammar *g = NULL;
        og_status *st = text ? gen_guidance_grammar(m->model, GUIDE_JSON_SCHEMA, text, &g) : NULL;
        free(text);
        guide_grammar_unref(g);
        if (st && og_status_code(st) != OG_ERR_OUT_OF_MEMORY) {
            char param[64];
            snprintf(param, sizeof param, "tools[%d].function.parameters", i);
            srv_fail(err, 400, param, "'%s': %s", param, og_status_message(st));
            found = true;
        }
        og_status_free(st);
        i++;
    }
    cJSON_Delete(tools);
    return found;
}

bool srv_guide_compile(srv_model *m, const srv_params *p, guide_grammar **g, size_t *n_tokens,
                       srv_error *err) {
    *g = NULL;
    *n_tokens = 0;
    if (p->guide_kind < 0) return true;
    const guide_vocab *v = NULL;
    og_status *st = gen_guidance_vocab(m->model, &v);
    if (!st) st = gen_guidance_grammar(m->model, (guide_kind)p->guide_kind, p->guide_text, g);
    if (st && p->guide_kind == GUIDE_LARK && og_status_code(st) == OG_ERR_INVALID_ARGUMENT &&
        blame_function(m, p, err)) {
        og_status_free(st);
        return false;
    }
    if (st) {
        og_code code = og_status_code(st);
        bool ours = code == OG_ERR_OUT_OF_MEMORY || code == OG_ERR_RUNTIME;
        srv_fail(err, ours ? 500 : 400, ours ? "" : p->guide_param, "%s: %s",
                 p->guide_kind == GUIDE_LARK ? "the forced tool call's grammar (from 'tools')"
                                             : "'response_format'",
                 og_status_message(st));
        og_status_free(st);
        return false;
    }
    *n_tokens = guide_vocab_size(v);
    return true;
}
