/* OpenAI request bodies -> srv_params. Every field is checked for its type and range
 * and a wrong one is a 400 naming it; a field we do not implement is refused (400) when
 * it asks for something other than the default, never silently ignored. Sampling
 * options not given come from the package's search block, as `generate` takes them. */
#include "serve/serve_internal.h"

#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int by_key(const void *a, const void *b) {
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* cJSON keeps every member of an object, and a lookup finds the first of a repeated key,
 * where other parsers take the last: a request that repeats a key is refused (400 naming
 * it by its path, e.g. "messages[0].role") rather than read one way here and another
 * elsewhere. path[0, at) names v; the buffer holds 256 bytes. */
static bool no_duplicate_keys(const cJSON *v, char *path, size_t at, srv_error *err) {
    if (!cJSON_IsObject(v) && !cJSON_IsArray(v)) return true;
    int n = 0;
    const cJSON *c;
    cJSON_ArrayForEach(c, v) n++;
    if (cJSON_IsObject(v) && n > 1) {
        const char **keys = malloc(sizeof *keys * (size_t)n);
        if (!keys) {
            srv_fail(err, 500, "", "out of memory");
            return false;
        }
        int k = 0;
        cJSON_ArrayForEach(c, v) keys[k++] = c->string;
        qsort(keys, (size_t)n, sizeof *keys, by_key);
        const char *dup = NULL;
        for (k = 1; k < n && !dup; k++)
            if (!strcmp(keys[k - 1], keys[k])) dup = keys[k];
        if (dup) {
            snprintf(path + at, 256 - at, "%s%s", at ? "." : "", dup);
            srv_fail(err, 400, path, "the key '%.100s' appears more than once in %s", dup,
                     at ? "an object of the request" : "the request");
        }
        free(keys);
        if (dup) return false;
    }
    int i = 0;
    cJSON_ArrayForEach(c, v) {
        if (cJSON_IsObject(v)) snprintf(path + at, 256 - at, "%s%s", at ? "." : "", c->string);
        else snprintf(path + at, 256 - at, "[%d]", i++);
        size_t len = strlen(path);
        if (!no_duplicate_keys(c, path, len, err)) return false;
        path[at] = 0;
    }
    return true;
}

cJSON *srv_parse_object(const char *body, size_t len, srv_error *err) {
    if (len == 0) {
        srv_fail(err, 400, "", "the request body is empty: a JSON object was expected");
        return NULL;
    }
    /* cJSON's strings end at a NUL, so a request string holding U+0000 (a raw byte or
     * the escape \u0000) would be cut there without a word: refuse it instead. A
     * backslash only occurs inside strings in valid JSON, and each escape is skipped
     * whole, so an escaped backslash before "u0000" is text, not an escape. */
    for (size_t i = 0; i < len; i++) {
        if (body[i] == '\0') {
            srv_fail(err, 400, "", "the request body holds a NUL byte (byte %zu)", i);
            return NULL;
        }
        if (body[i] != '\\' || i + 1 >= len) continue;
        if (body[i + 1] == 'u' && i + 5 < len && !memcmp(body + i + 2, "0000", 4)) {
            srv_fail(err, 400, "", "a string in the request holds U+0000 (\\u0000 at byte %zu),"
                     " which this server does not accept", i);
            return NULL;
        }
        i++; /* the escaped character */
    }
    const char *end = NULL;
    cJSON *j = cJSON_ParseWithLengthOpts(body, len, &end, 0);
    if (!j) {
        size_t at = end && end >= body ? (size_t)(end - body) : 0;
        srv_fail(err, 400, "", "the request body is not valid JSON (error near byte %zu)", at);
        return NULL;
    }
    /* nothing but white space may follow the value */
    for (const char *q = end; q && q < body + len; q++)
        if (*q != ' ' && *q != '\n' && *q != '\r' && *q != '\t') {
            srv_fail(err, 400, "", "the request body has text after its JSON value (byte %zu)",
                     (size_t)(q - body));
            cJSON_Delete(j);
            return NULL;
        }
    if (!cJSON_IsObject(j)) {
        srv_fail(err, 400, "", "the request body must be a JSON object");
        cJSON_Delete(j);
        return NULL;
    }
    char path[256] = "";
    if (!no_duplicate_keys(j, path, 0, err)) {
        cJSON_Delete(j);
        return NULL;
    }
    return j;
}

/* ---- typed fields: 0 absent (or null), 1 read, -1 wrong (err set) ---------------------- */

static int get_num(const cJSON *o, const char *k, double lo, double hi, double *out, srv_error *err) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
    if (!v || cJSON_IsNull(v)) return 0;
    if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble)) {
        srv_fail(err, 400, k, "'%s' must be a number", k);
        return -1;
    }
    if (v->valuedouble < lo || v->valuedouble > hi) {
        srv_fail(err, 400, k, "'%s' is %g: it must be between %g and %g", k, v->valuedouble, lo, hi);
        return -1;
    }
    *out = v->valuedouble;
    return 1;
}

/* An integer field: its value as a double (exact up to 2^53), range not yet checked. */
static int get_whole(const cJSON *o, const char *k, double *out, srv_error *err) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
    if (!v || cJSON_IsNull(v)) return 0;
    if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble) || v->valuedouble != floor(v->valuedouble)) {
        srv_fail(err, 400, k, "'%s' must be an integer", k);
        return -1;
    }
    *out = v->valuedouble;
    return 1;
}

/* An integer in [lo, hi]; both within int's range, so the conversion is always defined. */
static int get_int(const cJSON *o, const char *k, int lo, int hi, int *out, srv_error *err) {
    double x = 0;
    int r = get_whole(o, k, &x, err);
    if (r <= 0) return r;
    if (x < lo || x > hi) {
        srv_fail(err, 400, k, "'%s' is %.17g: it must be between %d and %d", k, x, lo, hi);
        return -1;
    }
    *out = (int)x;
    return 1;
}

/* The seed: any 64-bit integer, signed or not ([-2^63, 2^64); a JSON number beyond is a
 * 400, never an undefined conversion). Negative ones wrap, as a cast of int64 to uint64. */
static int get_seed(const cJSON *o, uint64_t *out, srv_error *err) {
    double x = 0;
    int r = get_whole(o, "seed", &x, err);
    if (r <= 0) return r;
    if (x < -0x1p63 || x >= 0x1p64) {
        srv_fail(err, 400, "seed", "'seed' is %.17g: it must be an integer of 64 bits, from "
                 "-9223372036854775808 up to (not including) 2^64", x);
        return -1;
    }
    *out = x < 0 ? (uint64_t)(int64_t)x : (uint64_t)x;
    return 1;
}

static int get_bool(const cJSON *o, const char *k, bool *out, srv_error *err) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
    if (!v || cJSON_IsNull(v)) return 0;
    if (!cJSON_IsBool(v)) {
        srv_fail(err, 400, k, "'%s' must be true or false", k);
        return -1;
    }
    *out = cJSON_IsTrue(v);
    return 1;
}

/* A field we accept only at its default (a value that changes nothing). */
static bool only_default(const cJSON *o, const char *k, srv_error *err) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
    if (!v || cJSON_IsNull(v)) return true;
    bool is_default = (cJSON_IsNumber(v) && v->valuedouble == 0 && strcmp(k, "best_of") != 0) ||
                      (cJSON_IsNumber(v) && v->valuedouble == 1 && strcmp(k, "best_of") == 0) ||
                      (cJSON_IsFalse(v)) || (cJSON_IsObject(v) && !v->child) ||
                      (cJSON_IsString(v) && !*v->valuestring);
    if (!is_default) {
        srv_fail(err, 400, k, "'%s' is not supported by this server (only its default value is "
                 "accepted)", k);
        return false;
    }
    return true;
}

static const char *const chat_keys[] = {
    "model", "messages", "max_tokens", "max_completion_tokens", "temperature", "top_p", "top_k",
    "seed", "stop", "n", "stream", "stream_options", "logprobs", "top_logprobs",
    "frequency_penalty", "presence_penalty", "logit_bias", "tools", "tool_choice",
    "parallel_tool_calls", "user", "metadata", "store", "response_format",
    "chat_template_kwargs", "ignore_eos", "id_slot", "cache_prompt", NULL};
static const char *const completion_keys[] = {
    "model", "prompt", "max_tokens", "temperature", "top_p", "top_k", "seed", "stop", "n",
    "stream", "stream_options", "logprobs", "echo", "best_of", "suffix", "frequency_penalty",
    "presence_penalty", "logit_bias", "user", "ignore_eos", "response_format", "id_slot",
    "cache_prompt", NULL};

bool srv_known_keys(const cJSON *body, const char *const *keys, srv_error *err) {
    const cJSON *f;
    cJSON_ArrayForEach(f, body) {
        bool ok = false;
        for (int i = 0; keys[i] && !ok; i++) ok = strcmp(f->string, keys[i]) == 0;
        if (!ok) {
            srv_fail(err, 400, f->string, "Unrecognized request argument supplied: %.100s", f->string);
            return false;
        }
    }
    return true;
}

/* An array (or object) field passed on as JSON text to the chat template; absent: NULL. */
static bool json_field(const cJSON *body, const char *k, bool array, char **out, srv_error *err) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(body, k);
    if (!v || cJSON_IsNull(v)) return true;
    if (array ? !cJSON_IsArray(v) : !cJSON_IsObject(v)) {
        srv_fail(err, 400, k, "'%s' must be %s", k, array ? "an array" : "an object");
        return false;
    }
    if (!(*out = cJSON_PrintUnformatted(v))) {
        srv_fail(err, 500, "", "out of memory");
        return false;
    }
    return true;
}

/* An assistant message's tool_calls: [{"id"?, "type"?, "function": {"name", "arguments"}}];
 * arguments given as JSON text become the object when the template takes objects. */
static bool tool_calls_of(const srv_model *m, cJSON *msg, int i, srv_error *err) {
    cJSON *calls = cJSON_GetObjectItemCaseSensitive(msg, "tool_calls");
    if (!calls || cJSON_IsNull(calls)) return true;
    char name[64];
    if (!cJSON_IsArray(calls)) {
        snprintf(name, sizeof name, "messages[%d].tool_calls", i);
        srv_fail(err, 400, name, "'%s' must be an array of tool calls", name);
        return false;
    }
    int k = 0;
    cJSON *c;
    cJSON_ArrayForEach(c, calls) {
        snprintf(name, sizeof name, "messages[%d].tool_calls[%d].function", i, k++);
        cJSON *f = cJSON_IsObject(c) ? cJSON_GetObjectItemCaseSensitive(c, "function") : NULL;
        cJSON *fn = cJSON_IsObject(f) ? cJSON_GetObjectItemCaseSensitive(f, "name") : NULL;
        cJSON *args = cJSON_IsObject(f) ? cJSON_GetObjectItemCaseSensitive(f, "arguments") : NULL;
        if (!cJSON_IsString(fn) || (args && !cJSON_IsString(args) && !cJSON_IsObject(args))) {
            srv_fail(err, 400, name, "'%s' must be an object with a string 'name' and 'arguments' "
                     "(a JSON string or an object)", name);
            return false;
        }
        if (!m->tool_args_object || !cJSON_IsString(args)) continue;
        cJSON *obj = cJSON_Parse(args->valuestring);
        if (cJSON_IsObject(obj)) cJSON_ReplaceItemInObjectCaseSensitive(f, "arguments", obj);
        else cJSON_Delete(obj); /* not an object: the template gets the text as it came */
    }
    return true;
}

/* Content parts: images and audio go to media (serve_media.c), or are refused (400) by a
 * model that takes none, where a template would paste the part's JSON into the prompt. */
static bool media_parts(const srv_model *m, cJSON *content, int i, srv_media *md,
                        srv_error *err) {
    if (!cJSON_IsArray(content)) return true;
    int k = 0;
    cJSON *part;
    cJSON_ArrayForEach(part, content) {
        char name[48];
        snprintf(name, sizeof name, "messages[%d].content[%d]", i, k++);
        if (srv_media_part(m, part, name, md, err) < 0) return false;
    }
    return true;
}

bool srv_messages_json(const srv_model *m, const cJSON *msgs, char **out, srv_media *media,
                       srv_error *err) {
    *out = NULL;
    if (!cJSON_IsArray(msgs) || !msgs->child) {
        srv_fail(err, 400, "messages", "'messages' must be a non-empty array of messages");
        return false;
    }
    cJSON *copy = cJSON_Duplicate(msgs, 1);
    if (!copy) {
        srv_fail(err, 500, "", "out of memory");
        return false;
    }
    int i = 0;
    cJSON *msg;
    bool ok = true;
    cJSON_ArrayForEach(msg, copy) {
        char name[48];
        snprintf(name, sizeof name, "messages[%d]", i);
        if (!cJSON_IsObject(msg)) {
            srv_fail(err, 400, name, "'%s' must be an object", name);
            ok = false;
            break;
        }
        const cJSON *role = cJSON_GetObjectItemCaseSensitive(msg, "role");
        if (!cJSON_IsString(role) || !*role->valuestring) {
            snprintf(name, sizeof name, "messages[%d].role", i);
            srv_fail(err, 400, name, "'%s' must be a non-empty string", name);
            ok = false;
            break;
        }
        cJSON *content = cJSON_GetObjectItemCaseSensitive(msg, "content");
        if (content && !cJSON_IsString(content) && !cJSON_IsNull(content) && !cJSON_IsArray(content)) {
            snprintf(name, sizeof name, "messages[%d].content", i);
            srv_fail(err, 400, name, "'%s' must be a string, an array of content parts or null",
                     name);
            ok = false;
            break;
        }
        if (!(ok = tool_calls_of(m, msg, i, err)) || !(ok = media_parts(m, content, i, media, err)))
            break;
        i++;
    }
    if (ok && !(*out = cJSON_PrintUnformatted(copy))) {
        srv_fail(err, 500, "", "out of memory");
        ok = false;
    }
    cJSON_Delete(copy);
    return ok;
}

/* tool_choice: "auto" (the default), "none" (the template gets no tools and the answer is
 * not parsed), "required" or {"type": "function", "function": {"name"}}: the answer is
 * constrained to a call (of that function) in the template's format (serve_guide.c). */
static bool read_tools(const srv_model *m, const cJSON *body, srv_params *p, srv_error *err) {
    const cJSON *tc = cJSON_GetObjectItemCaseSensitive(body, "tool_choice");
    bool none = false, forced = false;
    if (tc && !cJSON_IsNull(tc)) {
        if (cJSON_IsString(tc) && !strcmp(tc->valuestring, "none")) {
            none = true;
        } else if (cJSON_IsObject(tc) || (cJSON_IsString(tc) && !strcmp(tc->valuestring, "required"))) {
            forced = true;
        } else if (!cJSON_IsString(tc) || strcmp(tc->valuestring, "auto") != 0) {
            srv_fail(err, 400, "tool_choice", "'tool_choice' %s is not valid: \"none\", \"auto\", "
                     "\"required\" or {\"type\": \"function\", ...}",
                     cJSON_IsString(tc) ? tc->valuestring : "of this type");
            return false;
        }
    }
    p->parallel_tool_calls = true;
    const cJSON *par = cJSON_GetObjectItemCaseSensitive(body, "parallel_tool_calls");
    if (par && !cJSON_IsNull(par)) {
        if (!cJSON_IsBool(par)) {
            srv_fail(err, 400, "parallel_tool_calls", "'parallel_tool_calls' must be true or false");
            return false;
        }
        p->parallel_tool_calls = cJSON_IsTrue(par);
    }
    const cJSON *tools = cJSON_GetObjectItemCaseSensitive(body, "tools");
    if (tools && !cJSON_IsNull(tools) && !none) {
        if (!json_field(body, "tools", true, &p->tools_json, err)) return false;
        p->parse_tools = cJSON_GetArraySize(tools) > 0 && m->tools_fmt != TC_NONE;
    } else if (tools && !cJSON_IsNull(tools) && !cJSON_IsArray(tools)) {
        srv_fail(err, 400, "tools", "'tools' must be an array");
        return false;
    }
    return !forced || srv_forced_tools(m, tools, tc, p, err);
}

static bool read_messages(const srv_model *m, const cJSON *body, srv_params *p, srv_error *err) {
    const cJSON *msgs = cJSON_GetObjectItemCaseSensitive(body, "messages");
    if (!msgs) {
        srv_fail(err, 400, "messages", "'messages' is required");
        return false;
    }
    if (!srv_messages_json(m, msgs, &p->messages_json, &p->media, err) || !read_tools(m, body, p, err) ||
        !json_field(body, "chat_template_kwargs", false, &p->extra_json, err))
        return false;
    return true;
}

/* A prompt of token ids: every element an integer id (the engine checks the range). */
static bool id_array(const cJSON *a) {
    if (!cJSON_IsArray(a) || !a->child) return false;
    const cJSON *v;
    cJSON_ArrayForEach(v, a) {
        if (!cJSON_IsNumber(v) || v->valuedouble != floor(v->valuedouble) ||
            fabs(v->valuedouble) > 2147483647.0)
            return false;
    }
    return true;
}

static bool add_prompt(srv_params *p, const cJSON *v, srv_error *err) {
    cJSON *c = cJSON_Duplicate(v, 1);
    if (!c || !cJSON_AddItemToArray(p->prompts, c)) {
        cJSON_Delete(c);
        srv_fail(err, 500, "", "out of memory");
        return false;
    }
    return true;
}

static bool read_prompts(const cJSON *body, srv_params *p, srv_error *err) {
    const cJSON *pr = cJSON_GetObjectItemCaseSensitive(body, "prompt");
    if (!pr || cJSON_IsNull(pr)) {
        srv_fail(err, 400, "prompt", "'prompt' is required");
        return false;
    }
    if (!(p->prompts = cJSON_CreateArray())) {
        srv_fail(err, 500, "", "out of memory");
        return false;
    }
    if (cJSON_IsString(pr) || id_array(pr)) return add_prompt(p, pr, err);
    bool ok = cJSON_IsArray(pr) && pr->child;
    const cJSON *v;
    cJSON_ArrayForEach(v, pr) ok = ok && (cJSON_IsString(v) || id_array(v));
    if (!ok) {
        srv_fail(err, 400, "prompt", "'prompt' must be a string, an array of token ids, or a "
                 "non-empty array of those");
        return false;
    }
    cJSON_ArrayForEach(v, pr) if (!add_prompt(p, v, err)) return false;
    return true;
}

static bool read_stops(const cJSON *body, srv_params *p, srv_error *err) {
    const cJSON *st = cJSON_GetObjectItemCaseSensitive(body, "stop");
    if (!st || cJSON_IsNull(st)) return true;
    if (cJSON_IsString(st)) {
        if (*st->valuestring && !(p->stops[p->n_stops++] = strdup(st->valuestring))) {
            srv_fail(err, 500, "", "out of memory");
            return false;
        }
        return true;
    }
    if (!cJSON_IsArray(st) || cJSON_GetArraySize(st) > SRV_MAX_STOPS) {
        srv_fail(err, 400, "stop", "'stop' must be a string or an array of at most %d strings",
                 SRV_MAX_STOPS);
        return false;
    }
    const cJSON *v;
    cJSON_ArrayForEach(v, st) {
        if (!cJSON_IsString(v)) {
            srv_fail(err, 400, "stop", "'stop' must be a string or an array of at most %d strings",
                     SRV_MAX_STOPS);
            return false;
        }
        if (!*v->valuestring) continue; /* an empty stop string can never end anything */
        if (!(p->stops[p->n_stops++] = strdup(v->valuestring))) {
            srv_fail(err, 500, "", "out of memory");
            return false;
        }
    }
    return true;
}

static bool read_sampling(srv_server *s, srv_model *m, const cJSON *body, srv_params *p,
                          srv_error *err) {
    const og_generator_params *d = &m->defaults;
    p->s.sample = d->do_sample != 0;
    p->s.temperature = d->temperature > 0 ? d->temperature : 1.0f;
    p->s.top_k = d->top_k > 0 ? d->top_k : 0;
    p->s.top_p = d->top_p > 0 && d->top_p <= 1 ? d->top_p : 1.0f;
    p->s.seed = d->random_seed >= 0 ? (uint64_t)d->random_seed : srv_unique64(s);
    double x;
    int k, r;
    if ((r = get_num(body, "temperature", 0, 2, &x, err)) < 0) return false;
    if (r) {
        /* below 1e-5 (vLLM's threshold) the logits over it overflow a float: greedy */
        p->s.sample = x >= 1e-5;
        if (p->s.sample) p->s.temperature = (float)x;
    }
    if ((r = get_num(body, "top_p", 0, 1, &x, err)) < 0) return false;
    if (r) {
        if (x <= 0) {
            srv_fail(err, 400, "top_p", "'top_p' must be greater than 0 (and at most 1)");
            return false;
        }
        /* a top_p below the smallest float keeps the most likely token alone, as FLT_MIN does */
        p->s.top_p = x < FLT_MIN ? FLT_MIN : (float)x;
    }
    if ((r = get_int(body, "top_k", -1, INT_MAX, &k, err)) < 0) return false;
    if (r) p->s.top_k = k < 0 ? 0 : k; /* -1 (vLLM's spelling) and 0: all tokens */
    if (get_seed(body, &p->s.seed, err) < 0) return false;
    bool b = false;
    if ((r = get_bool(body, "ignore_eos", &b, err)) < 0) return false;
    p->s.ignore_eos = b;
    b = true; /* llama-server's cache_prompt: true (its default, and ours) */
    if ((r = get_bool(body, "cache_prompt", &b, err)) < 0) return false;
    p->s.no_cache = !b;
    return true;
}

/* llama-server's id_slot: -1 (any slot, the default) or one of the model's slots, which
 * the request's one choice takes once that slot's request has finished (serve_slots.c). */
static bool read_slot(srv_server *s, const srv_model *m, const cJSON *body, srv_params *p,
                      srv_error *err) {
    int k = -1, n = srv_slot_count(s, m);
    if (get_int(body, "id_slot", INT_MIN, INT_MAX, &k, err) < 0) return false;
    if (k < -1 || k >= n) {
        srv_fail(err, 400, "id_slot", "Invalid slot ID: 'id_slot' is %d: it must be -1 (any "
                 "slot) or a slot of this model, 0 to %d", k, n - 1);
        return false;
    }
    int choices = p->n * (p->chat ? 1 : cJSON_GetArraySize(p->prompts));
    if (k >= 0 && choices > 1) {
        srv_fail(err, 400, "id_slot", "'id_slot' names one slot: the request must have one "
                 "choice (n 1 and one prompt), not %d", choices);
        return false;
    }
    p->id_slot = k;
    return true;
}

bool srv_parse_params(srv_server *s, srv_model *m, const cJSON *j, bool chat, srv_params *p,
                      srv_error *err) {
    memset(p, 0, sizeof *p);
    p->chat = chat;
    p->max_tokens = -1;
    p->logprobs = -1;
    p->n = 1;
    p->guide_kind = -1;
    p->id_slot = -1;
    if (!m->eng) {
        srv_fail(err, 400, "model", "the model '%.100s' is an embeddings-only package (its decoder "
                 "has no logits output): it answers POST /v1/embeddings only", m->name);
        return false;
    }
    bool ok = srv_known_keys(j, chat ? chat_keys : completion_keys, err) &&
              (chat ? read_messages(m, j, p, err) : read_prompts(j, p, err)) &&
              srv_read_response_format(j, p, err) && read_sampling(s, m, j, p, err) &&
              read_stops(j, p, err);
    p->s.adapter = srv_adapter_of(s, j); /* "MODEL:ADAPTER" */
    p->s.adapters = p->s.adapter ? m->adapters : NULL;
    int k, r;
    const char *max_names[2] = {"max_tokens", "max_completion_tokens"};
    for (int i = 0; ok && i < (chat ? 2 : 1); i++) {
        if ((r = get_int(j, max_names[i], 1, INT_MAX, &k, err)) < 0) ok = false;
        else if (r) p->max_tokens = k;
    }
    if (ok && (r = get_int(j, "n", 1, s->o.max_n, &k, err)) != 0) {
        if (r < 0) ok = false;
        else p->n = k;
    }
    if (ok && get_bool(j, "stream", &p->stream, err) < 0) ok = false;
    const cJSON *so = cJSON_GetObjectItemCaseSensitive(j, "stream_options");
    if (ok && so && !cJSON_IsNull(so)) {
        if (!p->stream) {
            srv_fail(err, 400, "stream_options", "'stream_options' is only allowed when 'stream' is true");
            ok = false;
        } else if (!cJSON_IsObject(so)) {
            srv_fail(err, 400, "stream_options", "'stream_options' must be an object");
            ok = false;
        } else {
            const cJSON *f;
            cJSON_ArrayForEach(f, so) if (ok && strcmp(f->string, "include_usage") != 0) {
                srv_fail(err, 400, "stream_options", "Unrecognized stream option: %.100s", f->string);
                ok = false;
            }
            if (ok && get_bool(so, "include_usage", &p->include_usage, err) < 0) {
                snprintf(err->param, sizeof err->param, "stream_options.include_usage");
                ok = false;
            }
        }
    }
    if (ok && chat) {
        bool lp = false;
        if (get_bool(j, "logprobs", &lp, err) < 0) ok = false;
        if (ok && (r = get_int(j, "top_logprobs", 0, ENG_MAX_LOGPROBS, &k, err)) < 0) ok = false;
        if (ok && r && !lp) {
            srv_fail(err, 400, "top_logprobs", "'top_logprobs' needs 'logprobs' set to true");
            ok = false;
        }
        if (ok && lp) p->logprobs = r ? k : 0;
    } else if (ok) {
        if ((r = get_int(j, "logprobs", 0, ENG_MAX_LOGPROBS, &k, err)) < 0) ok = false;
        else if (r) p->logprobs = k;
    }
    const char *defaults_only[] = {"frequency_penalty", "presence_penalty", "logit_bias",
                                   "echo", "best_of", "suffix", NULL};
    for (int i = 0; ok && defaults_only[i]; i++) ok = only_default(j, defaults_only[i], err);
    if (ok && !chat && cJSON_GetArraySize(p->prompts) * p->n > 64) {
        srv_fail(err, 400, "prompt", "at most 64 choices in all (prompts times n)");
        ok = false;
    }
    if (ok) ok = read_slot(s, m, j, p, err);
    p->s.logprobs = p->logprobs;
    if (!ok) srv_params_free(p);
    return ok;
}

void srv_params_free(srv_params *p) {
    cJSON_free(p->messages_json);
    srv_media_free(&p->media);
    cJSON_free(p->tools_json);
    cJSON_free(p->extra_json);
    cJSON_Delete(p->prompts);
    for (int i = 0; i < p->n_stops; i++) free(p->stops[i]);
    free(p->guide_text);
    memset(p, 0, sizeof *p);
    p->guide_kind = -1;
    p->id_slot = -1;
}
