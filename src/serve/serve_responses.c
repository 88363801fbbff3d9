/* POST /v1/responses, OpenAI's Responses API (text and function tools), on the chat path
 * (serve_dialect.c): instructions and the input (a string, or message items with string
 * or input_text content, function_call and function_call_output items) become an OpenAI
 * chat conversation; the answer is a response object whose output is a message item
 * (output_text) and a function_call item per call, or the API's stream of events.
 * Nothing is stored: previous_response_id is refused. Errors keep OpenAI's shape. */
#include "serve/serve_internal.h"

#include "genai/guidance.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ---- the request ----------------------------------------------------------------------- */

static const char *const text_types[] = {"input_text", "output_text", "text", NULL};

static cJSON *chat_message(cJSON *msgs, const char *role, srv_error *err) {
    cJSON *m = cJSON_CreateObject();
    if (!srv_dialect_put(msgs, NULL, m, err)) return NULL;
    cJSON_AddStringToObject(m, "role", role);
    return m;
}

/* A function_call item: a tool call of the assistant message just before it (its text and
 * calls are one turn), else of a new assistant message. */
static bool function_call(cJSON *msgs, const cJSON *item, const char *name, srv_error *err) {
    const cJSON *id = cJSON_GetObjectItemCaseSensitive(item, "call_id");
    const cJSON *fn = cJSON_GetObjectItemCaseSensitive(item, "name");
    const cJSON *args = cJSON_GetObjectItemCaseSensitive(item, "arguments");
    if (!cJSON_IsString(id) || !cJSON_IsString(fn) || !cJSON_IsString(args)) {
        srv_fail(err, 400, name, "'%s' must be a function_call item with string 'call_id', 'name' and "
                 "'arguments'", name);
        return false;
    }
    cJSON *last = cJSON_GetArrayItem(msgs, cJSON_GetArraySize(msgs) - 1);
    const cJSON *role = cJSON_GetObjectItemCaseSensitive(last, "role");
    if (!cJSON_IsString(role) || strcmp(role->valuestring, "assistant")) {
        if (!(last = chat_message(msgs, "assistant", err))) return false;
        cJSON_AddNullToObject(last, "content");
    }
    cJSON *calls = cJSON_GetObjectItemCaseSensitive(last, "tool_calls");
    if (!calls && !srv_dialect_put(last, "tool_calls", calls = cJSON_CreateArray(), err)) return false;
    cJSON *c = cJSON_CreateObject();
    if (!srv_dialect_put(calls, NULL, c, err)) return false;
    cJSON_AddStringToObject(c, "id", id->valuestring);
    cJSON_AddStringToObject(c, "type", "function");
    cJSON *f = cJSON_AddObjectToObject(c, "function");
    cJSON_AddStringToObject(f, "name", fn->valuestring);
    cJSON_AddStringToObject(f, "arguments", args->valuestring);
    return true;
}

static bool input_item(cJSON *msgs, const cJSON *item, int i, srv_error *err) {
    char name[48];
    snprintf(name, sizeof name, "input[%d]", i);
    const cJSON *type = cJSON_GetObjectItemCaseSensitive(item, "type");
    const char *t = cJSON_IsString(type) ? type->valuestring : "message";
    if (!cJSON_IsObject(item)) {
        srv_fail(err, 400, name, "'%s' must be an object (an input item)", name);
        return false;
    }
    if (!strcmp(t, "function_call")) return function_call(msgs, item, name, err);
    if (!strcmp(t, "function_call_output")) {
        const cJSON *id = cJSON_GetObjectItemCaseSensitive(item, "call_id");
        const cJSON *out = cJSON_GetObjectItemCaseSensitive(item, "output");
        if (!cJSON_IsString(id) || !out) {
            srv_fail(err, 400, name, "'%s' must be a function_call_output item with string 'call_id' "
                     "and 'output'", name);
            return false;
        }
        char oname[64];
        snprintf(oname, sizeof oname, "%s.output", name);
        cJSON *text = srv_dialect_text(out, text_types, oname, err), *m;
        if (!text || !(m = chat_message(msgs, "tool", err))) {
            cJSON_Delete(text);
            return false;
        }
        cJSON_AddStringToObject(m, "tool_call_id", id->valuestring);
        cJSON_AddItemToObject(m, "content", text);
        return true;
    }
    const cJSON *role = cJSON_GetObjectItemCaseSensitive(item, "role");
    static const char *const roles[] = {"user", "assistant", "system", "developer", NULL};
    int r = -1;
    for (int k = 0; cJSON_IsString(role) && roles[k] && r < 0; k++)
        if (!strcmp(role->valuestring, roles[k])) r = k;
    if (strcmp(t, "message") || r < 0) {
        srv_fail(err, 400, name, "'%s' must be a message item (role user, assistant, system or "
                 "developer), a function_call or a function_call_output item", name);
        return false;
    }
    char cname[64];
    snprintf(cname, sizeof cname, "%s.content", name);
    cJSON *text = srv_dialect_text(cJSON_GetObjectItemCaseSensitive(item, "content"), text_types, cname, err), *m;
    /* developer instructions are what chat templates call the system message */
    if (!text || !(m = chat_message(msgs, r == 3 ? "system" : roles[r], err))) {
        cJSON_Delete(text);
        return false;
    }
    cJSON_AddItemToObject(m, "content", text);
    return true;
}

static bool read_input(const cJSON *body, cJSON *chat, srv_error *err) {
    cJSON *msgs = cJSON_CreateArray();
    if (!srv_dialect_put(chat, "messages", msgs, err)) return false;
    const cJSON *ins = cJSON_GetObjectItemCaseSensitive(body, "instructions");
    if (ins && !cJSON_IsNull(ins)) {
        cJSON *m;
        if (!cJSON_IsString(ins)) {
            srv_fail(err, 400, "instructions", "'instructions' must be a string");
            return false;
        }
        if (!(m = chat_message(msgs, "system", err))) return false;
        cJSON_AddStringToObject(m, "content", ins->valuestring);
    }
    const cJSON *in = cJSON_GetObjectItemCaseSensitive(body, "input");
    if (cJSON_IsString(in)) {
        cJSON *m = chat_message(msgs, "user", err);
        if (m) cJSON_AddStringToObject(m, "content", in->valuestring);
        return m != NULL;
    }
    if (!cJSON_IsArray(in) || !in->child) {
        srv_fail(err, 400, "input", "'input' must be a string or a non-empty array of input items");
        return false;
    }
    int i = 0;
    const cJSON *item;
    cJSON_ArrayForEach(item, in) if (!input_item(msgs, item, i++, err)) return false;
    return true;
}

/* tools: function tools {"type": "function", "name", "description"?, "parameters"?,
 * "strict"?} as chat's; tool_choice "auto" | "none" | "required" | {"type": "function",
 * "name"}. */
static bool read_tools(const cJSON *body, cJSON *chat, srv_error *err) {
    if (!srv_dialect_tools(body, "function", "parameters", chat, err)) return false;
    const cJSON *tc = cJSON_GetObjectItemCaseSensitive(body, "tool_choice");
    if (!tc || cJSON_IsNull(tc) || cJSON_IsString(tc))
        return !tc || cJSON_IsNull(tc) || srv_dialect_put(chat, "tool_choice", cJSON_Duplicate(tc, 1), err);
    const cJSON *type = cJSON_GetObjectItemCaseSensitive(tc, "type");
    const cJSON *name = cJSON_GetObjectItemCaseSensitive(tc, "name");
    if (!cJSON_IsString(type) || strcmp(type->valuestring, "function") || !cJSON_IsString(name)) {
        srv_fail(err, 400, "tool_choice", "'tool_choice' must be \"auto\", \"none\", \"required\" or "
                 "{\"type\": \"function\", \"name\": ...}");
        return false;
    }
    cJSON *c = cJSON_CreateObject();
    if (!srv_dialect_put(chat, "tool_choice", c, err)) return false;
    cJSON_AddStringToObject(c, "type", "function");
    cJSON_AddStringToObject(cJSON_AddObjectToObject(c, "function"), "name", name->valuestring);
    return true;
}

/* Fields that hold their default are accepted; anything else asks for what this server
 * does not do. */
static bool refused(const cJSON *body, srv_error *err) {
    static const char *const nulls[] = {"previous_response_id", "reasoning", "include", "conversation",
                                        "prompt", NULL};
    for (int i = 0; nulls[i]; i++) {
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(body, nulls[i]);
        if (v && !cJSON_IsNull(v) && !(cJSON_IsArray(v) && !v->child)) {
            srv_fail(err, 400, nulls[i], "'%s' is not supported by this server (it stores no responses "
                     "and reads text only)", nulls[i]);
            return true;
        }
    }
    return false;
}

/* text: {"format": {"type": "text"} | {"type": "json_object"} | {"type": "json_schema",
 * "name", "schema", "description"?, "strict"?}} as chat's response_format (json_schema's
 * fields nested under "json_schema"); the chat parser checks them, and its errors name
 * text.format's fields (srv_responses_api.renamed). */
static bool read_format(const cJSON *body, cJSON *chat, srv_error *err) {
    const cJSON *text = cJSON_GetObjectItemCaseSensitive(body, "text");
    if (!text || cJSON_IsNull(text)) return true;
    if (!cJSON_IsObject(text)) {
        srv_fail(err, 400, "text", "'text' must be an object ({\"format\": {...}})");
        return false;
    }
    const cJSON *f;
    cJSON_ArrayForEach(f, text) if (strcmp(f->string, "format") != 0) {
        char param[64];
        snprintf(param, sizeof param, "text.%.40s", f->string);
        srv_fail(err, 400, param, "Unrecognized field '%s' in 'text'", f->string);
        return false;
    }
    const cJSON *fmt = cJSON_GetObjectItemCaseSensitive(text, "format");
    if (!fmt || cJSON_IsNull(fmt)) return true;
    if (!cJSON_IsObject(fmt)) {
        srv_fail(err, 400, "text.format", "'text.format' must be an object with a string 'type': "
                 "\"text\", \"json_object\" or \"json_schema\"");
        return false;
    }
    const cJSON *type = cJSON_GetObjectItemCaseSensitive(fmt, "type");
    if (!cJSON_IsString(type) || strcmp(type->valuestring, "json_schema") != 0)
        return srv_dialect_put(chat, "response_format", cJSON_Duplicate(fmt, 1), err);
    cJSON *rf = cJSON_CreateObject(), *js = cJSON_CreateObject();
    if (!srv_dialect_put(chat, "response_format", rf, err)) {
        cJSON_Delete(js);
        return false;
    }
    if (!cJSON_AddStringToObject(rf, "type", "json_schema") || !srv_dialect_put(rf, "json_schema", js, err))
        return false;
    cJSON_ArrayForEach(f, fmt) if (strcmp(f->string, "type") != 0 &&
                                   !srv_dialect_put(js, f->string, cJSON_Duplicate(f, 1), err)) return false;
    return true;
}

/* The response's text.format: what the request asked (a forced tool call is no format). */
static void put_format(cJSON *o, const srv_params *p) {
    cJSON *fmt = cJSON_AddObjectToObject(cJSON_AddObjectToObject(o, "text"), "format");
    bool asked = p->guide_kind >= 0 && !strncmp(p->guide_param, "response_format", 15);
    if (!asked) {
        cJSON_AddStringToObject(fmt, "type", "text");
    } else if (p->guide_kind == GUIDE_JSON_OBJECT) {
        cJSON_AddStringToObject(fmt, "type", "json_object");
    } else {
        cJSON_AddStringToObject(fmt, "type", "json_schema");
        cJSON_AddStringToObject(fmt, "name", p->guide_name);
        cJSON *schema = p->guide_text ? cJSON_Parse(p->guide_text) : NULL;
        cJSON_AddItemToObject(fmt, "schema", schema ? schema : cJSON_CreateObject());
        cJSON_AddTrueToObject(fmt, "strict"); /* the output always follows the schema */
    }
}

static cJSON *chat_request(const cJSON *body, bool *stream, srv_error *err) {
    static const char *const keys[] = {
        "model", "input", "instructions", "max_output_tokens", "temperature", "top_p", "stream",
        "tools", "tool_choice", "parallel_tool_calls", "store", "metadata", "user", "text",
        "previous_response_id", "reasoning", "include", "conversation", "prompt", "truncation",
        "ignore_eos", NULL};
    if (!srv_known_keys(body, keys, err) || refused(body, err)) return NULL;
    const cJSON *trunc = cJSON_GetObjectItemCaseSensitive(body, "truncation");
    if (trunc && !cJSON_IsNull(trunc) && !(cJSON_IsString(trunc) && !strcmp(trunc->valuestring, "disabled"))) {
        srv_fail(err, 400, "truncation", "'truncation' must be \"disabled\": this server does not cut "
                 "the input");
        return NULL;
    }
    /* same names and meanings in chat: checked by the chat parser */
    static const char *const same[] = {"model", "temperature", "top_p", "parallel_tool_calls", "user",
                                       "metadata", "store", "ignore_eos", NULL};
    static const char *const renamed[][2] = {{"max_output_tokens", "max_tokens"}, {NULL, NULL}};
    cJSON *chat = srv_dialect_chat(body, same, renamed, stream, err);
    if (!chat) return NULL;
    if (!read_input(body, chat, err) || !read_tools(body, chat, err) || !read_format(body, chat, err))
        goto fail;
    return chat;
fail:
    cJSON_Delete(chat);
    return NULL;
}

/* ---- the answer ------------------------------------------------------------------------ */

/* Item ids: the response's number after the item's prefix, and which item it is. */
static void item_id(const srv_dstream *st, const char *prefix, int k, char out[96]) {
    snprintf(out, 96, "%s%s_%d", prefix, st->id + strlen("resp_"), k);
}

static cJSON *output_text(const char *s, size_t n) {
    cJSON *p = cJSON_CreateObject();
    cJSON_AddStringToObject(p, "type", "output_text");
    cJSON_AddItemToObject(p, "text", srv_json_text(s ? s : "", s ? n : 0));
    cJSON_AddArrayToObject(p, "annotations");
    return p;
}

/* A message item k holding text (done: completed, with its text; else in progress, empty). */
static cJSON *message_item(const srv_dstream *st, int k, const srv_buf *text, bool done) {
    char id[96];
    item_id(st, "msg_", k, id);
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "type", "message");
    cJSON_AddStringToObject(o, "id", id);
    cJSON_AddStringToObject(o, "status", done ? "completed" : "in_progress");
    cJSON_AddStringToObject(o, "role", "assistant");
    cJSON *content = cJSON_AddArrayToObject(o, "content");
    if (done) cJSON_AddItemToArray(content, output_text(text->p, text->n));
    return o;
}

/* Call k's function_call item, its arguments args[0, n). */
static cJSON *call_item(const srv_dstream *st, const srv_choice *c, int k, const char *name, const char *args,
                        size_t n, const char *status) {
    char id[96];
    item_id(st, "fc_", k, id);
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "type", "function_call");
    cJSON_AddStringToObject(o, "id", id);
    cJSON_AddStringToObject(o, "call_id", c->call_ids[k]);
    cJSON_AddStringToObject(o, "name", name);
    cJSON_AddItemToObject(o, "arguments", srv_json_text(args ? args : "", args ? n : 0));
    cJSON_AddStringToObject(o, "status", status);
    return o;
}

/* The response object: in progress (no output yet) or finished, with its output items and
 * usage: a stream's items as it sent them (st->items), else the message when it has text
 * or nothing else came, then the calls. */
static cJSON *response(const srv_dstream *st, bool done) {
    const srv_job *j = &st->job;
    const srv_choice *c = &j->c[0];
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "id", st->id);
    cJSON_AddStringToObject(o, "object", "response");
    cJSON_AddNumberToObject(o, "created_at", (double)j->created);
    bool cut = done && c->finish && !strcmp(c->finish, "length");
    cJSON_AddStringToObject(o, "status", !done ? "in_progress" : cut ? "incomplete" : "completed");
    cJSON_AddStringToObject(o, "model", st->m->name);
    cJSON_AddNullToObject(o, "error");
    if (cut) cJSON_AddStringToObject(cJSON_AddObjectToObject(o, "incomplete_details"), "reason", "max_output_tokens");
    else cJSON_AddNullToObject(o, "incomplete_details");
    if (done && st->items) {
        cJSON_AddItemToObject(o, "output", cJSON_Duplicate(st->items, 1));
    } else {
        cJSON *out = cJSON_AddArrayToObject(o, "output");
        const srv_buf *text = &c->delta[0];
        if (done && (text->n || !c->n_calls)) cJSON_AddItemToArray(out, message_item(st, 0, text, true));
        for (int k = 0; done && k < c->n_calls; k++) {
            const char *a = c->tc.calls[k].arguments;
            cJSON_AddItemToArray(out, call_item(st, c, k, c->tc.calls[k].name, a, strlen(a), "completed"));
        }
    }
    cJSON_AddBoolToObject(o, "parallel_tool_calls", st->p.parallel_tool_calls);
    cJSON_AddNumberToObject(o, "temperature", st->p.s.temperature);
    cJSON_AddNumberToObject(o, "top_p", st->p.s.top_p);
    if (st->p.max_tokens >= 0) cJSON_AddNumberToObject(o, "max_output_tokens", st->p.max_tokens);
    else cJSON_AddNullToObject(o, "max_output_tokens");
    cJSON_AddStringToObject(o, "tool_choice", st->p.tools_json ? "auto" : "none");
    cJSON *tools = st->p.tools_json ? cJSON_Parse(st->p.tools_json) : NULL;
    cJSON_AddItemToObject(o, "tools", tools ? tools : cJSON_CreateArray());
    put_format(o, &st->p);
    if (done) {
        cJSON *u = cJSON_AddObjectToObject(o, "usage");
        cJSON_AddNumberToObject(u, "input_tokens", j->prompt_tokens);
        cJSON_AddNumberToObject(cJSON_AddObjectToObject(u, "input_tokens_details"), "cached_tokens",
                                j->cached_tokens);
        cJSON_AddNumberToObject(u, "output_tokens", j->completion_tokens);
        cJSON_AddNumberToObject(cJSON_AddObjectToObject(u, "output_tokens_details"), "reasoning_tokens", 0);
        cJSON_AddNumberToObject(u, "total_tokens", j->prompt_tokens + j->completion_tokens);
    } else {
        cJSON_AddNullToObject(o, "usage");
    }
    return o;
}

static cJSON *whole(srv_dstream *st) {
    return response(st, true);
}

static void emit(srv_dstream *st, const char *type, cJSON *e) {
    cJSON_AddStringToObject(e, "type", type);
    cJSON_AddNumberToObject(e, "sequence_number", st->seq++);
    srv_sse_event(&st->out, type, e);
}

static cJSON *at(int output_index, const char *item) {
    cJSON *e = cJSON_CreateObject();
    if (item) cJSON_AddStringToObject(e, "item_id", item);
    cJSON_AddNumberToObject(e, "output_index", output_index);
    return e;
}

/* An item is done: its output_item.done, a copy kept for the final response, the next
 * output index. */
static void item_done(srv_dstream *st, cJSON *item) {
    if (!st->items) st->items = cJSON_CreateArray();
    if (!st->items) st->out.oom = true;
    else cJSON_AddItemToArray(st->items, cJSON_Duplicate(item, 1));
    cJSON *e = at(st->blocks++, NULL);
    cJSON_AddItemToObject(e, "item", item);
    emit(st, "response.output_item.done", e);
}

/* The open message item: output_text.done, content_part.done, output_item.done. Its text
 * is st->text, emptied for the next one. */
static void text_close(srv_dstream *st) {
    if (!st->text_open) return;
    st->text_open = false;
    char id[96];
    item_id(st, "msg_", st->blocks, id);
    srv_buf *all = &st->text;
    cJSON *e = at(st->blocks, id);
    cJSON_AddNumberToObject(e, "content_index", 0);
    cJSON_AddItemToObject(e, "text", srv_json_text(all->p ? all->p : "", all->n));
    cJSON_AddArrayToObject(e, "logprobs");
    emit(st, "response.output_text.done", e);
    e = at(st->blocks, id);
    cJSON_AddNumberToObject(e, "content_index", 0);
    cJSON_AddItemToObject(e, "part", output_text(all->p, all->n));
    emit(st, "response.content_part.done", e);
    item_done(st, message_item(st, st->blocks, all, true));
    srv_buf_clear(all);
}

/* A message item opens (output_item.added, content_part.added) at the next output index. */
static void text_open(srv_dstream *st) {
    if (st->text_open) return;
    st->text_open = true;
    char id[96];
    item_id(st, "msg_", st->blocks, id);
    cJSON *e = at(st->blocks, NULL);
    cJSON_AddItemToObject(e, "item", message_item(st, st->blocks, &st->text, false));
    emit(st, "response.output_item.added", e);
    e = at(st->blocks, id);
    cJSON_AddNumberToObject(e, "content_index", 0);
    cJSON_AddItemToObject(e, "part", output_text("", 0));
    emit(st, "response.content_part.added", e);
}

/* The call being streamed ends: function_call_arguments.done and output_item.done, its
 * status "completed", or "incomplete" when its text turned out not to be a call. */
static void call_close(srv_dstream *st, srv_choice *c, int k, const char *status) {
    char id[96];
    item_id(st, "fc_", k, id);
    cJSON *e = at(st->blocks, id);
    cJSON_AddItemToObject(e, "arguments", srv_json_text(st->args.p ? st->args.p : "", st->args.n));
    emit(st, "response.function_call_arguments.done", e);
    item_done(st, call_item(st, c, k, st->call_name ? st->call_name : "", st->args.p, st->args.n, status));
    free(st->call_name);
    st->call_name = NULL;
    srv_buf_clear(&st->args);
}

/* Tool calls as they stream (srv_call_deltas): a function_call item per call, added once
 * its name is whole (the message before it done), its arguments a delta at a time. */
static void call_event(void *ctx, srv_choice *c, int k, int what, const char *s, size_t n) {
    srv_dstream *st = ctx;
    char id[96];
    item_id(st, "fc_", k, id);
    if (what == SRV_CALL_BEGIN) {
        text_close(st);
        free(st->call_name);
        if (!(st->call_name = strndup(s, n))) st->out.oom = true;
        cJSON *e = at(st->blocks, NULL);
        cJSON_AddItemToObject(e, "item", call_item(st, c, k, st->call_name ? st->call_name : "", "", 0,
                                                   "in_progress"));
        emit(st, "response.output_item.added", e);
    } else if (what == SRV_CALL_ARGS) {
        cJSON *e = at(st->blocks, id);
        cJSON_AddItemToObject(e, "delta", srv_json_text(s, n));
        emit(st, "response.function_call_arguments.delta", e);
        srv_buf_add(&st->args, s, n);
    } else {
        call_close(st, c, k, "completed");
    }
}

/* response.created and response.in_progress; a message item's events as text comes; a
 * function_call item per call as it streams; at the end the open item done (an empty
 * message when nothing came; a call whose text turned out malformed "incomplete", its
 * text then in a message after it), then response.completed (or response.incomplete when
 * cut by max_output_tokens) with the items and usage. */
static bool events(srv_dstream *st, bool finished) {
    srv_job *j = &st->job;
    srv_choice *c = &j->c[0];
    if (!st->started) {
        st->started = true;
        cJSON *e = cJSON_CreateObject();
        cJSON_AddItemToObject(e, "response", response(st, false));
        emit(st, "response.created", e);
        e = cJSON_CreateObject();
        cJSON_AddItemToObject(e, "response", response(st, false));
        emit(st, "response.in_progress", e);
    }
    srv_buf_clear(&c->delta[1]); /* reasoning is not part of the text output */
    if (j->failed) {
        cJSON *e = cJSON_CreateObject();
        cJSON_AddStringToObject(e, "code", j->err.code ? j->err.code : j->err.status >= 500 ? "server_error"
                                                                                        : "invalid_request");
        cJSON_AddStringToObject(e, "message", j->err.msg);
        cJSON_AddNullToObject(e, "param");
        emit(st, "error", e);
        return true;
    }
    if (c->delta[0].n) {
        if (c->calls_ended < c->calls_begun) call_close(st, c, c->calls_ended++, "incomplete");
        text_open(st);
        char id[96];
        item_id(st, "msg_", st->blocks, id);
        cJSON *e = at(st->blocks, id);
        cJSON_AddNumberToObject(e, "content_index", 0);
        cJSON_AddItemToObject(e, "delta", srv_json_text(c->delta[0].p, c->delta[0].n));
        cJSON_AddArrayToObject(e, "logprobs");
        emit(st, "response.output_text.delta", e);
        srv_buf_add(&st->text, c->delta[0].p, c->delta[0].n);
        srv_buf_clear(&c->delta[0]);
    }
    if (c->tc_live && !srv_call_deltas(j, c, call_event, st)) st->out.oom = true;
    if (!finished) return false;
    if (c->calls_ended < c->calls_begun) call_close(st, c, c->calls_ended++, "incomplete");
    if (!st->blocks) text_open(st); /* nothing came: an empty message */
    text_close(st);
    cJSON *e = cJSON_CreateObject(), *resp = response(st, true);
    const cJSON *status = cJSON_GetObjectItemCaseSensitive(resp, "status");
    bool cut = cJSON_IsString(status) && !strcmp(status->valuestring, "incomplete");
    cJSON_AddItemToObject(e, "response", resp);
    emit(st, cut ? "response.incomplete" : "response.completed", e);
    return true;
}

static const char *const renamed_fields[][2] = {{"response_format.json_schema", "text.format"},
                                                 {"response_format", "text.format"},
                                                 {NULL, NULL}};
const srv_dialect srv_responses_api = {"resp_", chat_request, events, whole, renamed_fields};
