/* chat-cases CASES.json: renders many small templates in one process, for the unit tests
 * that compare the engine with jinja2 (unit_test.py writes the cases and the expected
 * results). Each case is {"template": "...", "vars": {"name": "JSON text"}, "limits":
 * {...}?}; each variable is read from its JSON text, and "messages" goes through
 * transformers' message normalisation. Prints a JSON array: {"ok": true, "text": "..."}
 * or {"ok": false, "code": "...", "error": "..."} per case. */
#include "chat/chat.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char *read_all(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = malloc((size_t)n + 1);
    if (buf && fread(buf, 1, (size_t)n, f) != (size_t)n) {
        free(buf);
        buf = NULL;
    }
    if (buf) buf[n] = 0;
    fclose(f);
    return buf;
}

static og_status *run_case(const cJSON *c, char **out, size_t *len) {
    const cJSON *src = cJSON_GetObjectItemCaseSensitive(c, "template");
    const cJSON *vars = cJSON_GetObjectItemCaseSensitive(c, "vars");
    const cJSON *lim = cJSON_GetObjectItemCaseSensitive(c, "limits");
    if (!cJSON_IsString(src)) return og_errorf(OG_ERR_INVALID_ARGUMENT, "case without a template");
    chat_template *t = NULL;
    chat_vars *v = NULL;
    og_status *st = chat_template_parse(src->valuestring, strlen(src->valuestring), "case", &t);
    if (!st) st = chat_vars_new(&v);
    const cJSON *e;
    cJSON_ArrayForEach(e, vars) {
        if (st) break;
        if (!cJSON_IsString(e)) {
            st = og_errorf(OG_ERR_INVALID_ARGUMENT, "variable '%s' is not JSON text", e->string);
            break;
        }
        const char *json = e->valuestring;
        if (!strcmp(e->string, "messages")) st = chat_vars_set_messages_json(v, json, strlen(json));
        else st = chat_vars_set_json(v, e->string, json, strlen(json));
    }
    chat_limits l = chat_limits_default();
    if (cJSON_IsObject(lim)) {
        const cJSON *x;
        if (cJSON_IsNumber(x = cJSON_GetObjectItemCaseSensitive(lim, "max_output"))) l.max_output = (size_t)x->valuedouble;
        if (cJSON_IsNumber(x = cJSON_GetObjectItemCaseSensitive(lim, "max_memory"))) l.max_memory = (size_t)x->valuedouble;
        if (cJSON_IsNumber(x = cJSON_GetObjectItemCaseSensitive(lim, "max_depth"))) l.max_depth = x->valueint;
        if (cJSON_IsNumber(x = cJSON_GetObjectItemCaseSensitive(lim, "max_iterations"))) l.max_iterations = (uint64_t)x->valuedouble;
    }
    if (!st) st = chat_render(t, v, &l, out, len);
    chat_vars_free(v);
    chat_template_free(t);
    return st;
}

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: chat-cases CASES.json\n");
        return 2;
    }
    char *text = read_all(argv[1]);
    cJSON *cases = text ? cJSON_Parse(text) : NULL;
    free(text);
    if (!cJSON_IsArray(cases)) {
        fprintf(stderr, "chat-cases: %s: not a JSON array\n", argv[1]);
        cJSON_Delete(cases);
        return 2;
    }
    cJSON *results = cJSON_CreateArray();
    const cJSON *c;
    cJSON_ArrayForEach(c, cases) {
        char *out = NULL;
        size_t len = 0;
        og_status *st = run_case(c, &out, &len);
        cJSON *r = cJSON_CreateObject();
        cJSON_AddBoolToObject(r, "ok", st == NULL);
        if (st) {
            cJSON_AddStringToObject(r, "code", og_code_name(og_status_code(st)));
            cJSON_AddStringToObject(r, "error", og_status_message(st));
        } else {
            cJSON_AddStringToObject(r, "text", out);
        }
        cJSON_AddItemToArray(results, r);
        og_status_free(st);
        free(out);
    }
    char *json = cJSON_PrintUnformatted(results);
    if (json) puts(json);
    free(json);
    cJSON_Delete(results);
    cJSON_Delete(cases);
    return 0;
}
