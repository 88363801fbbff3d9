/* POST /v1/messages, Anthropic's Messages API, on the chat path (serve_dialect.c): the
 * request becomes an OpenAI chat request (system first, text blocks joined, tool_use
 * blocks as an assistant's tool_calls, tool_result blocks as tool messages, tools and
 * tool_choice mapped onto the template's tool-call format), and the answer comes back as
 * a message (text and tool_use content blocks, stop_reason, usage) or as Anthropic's event
 * sequence. Errors on this route are in Anthropic's shape. */
#include "serve/serve_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Anthropic's error type for an HTTP status. */
static const char *error_type(int status) {
    switch (status) {
    case 401: return "authentication_error";
    case 403: return "permission_error";
    case 404: return "not_found_error";
    case 413: return "request_too_large";
    case 429: return "rate_limit_error";
    case 503: return "overloaded_error";
    default: return status >= 500 ? "api_error" : "invalid_request_error";
    }
}

static cJSON *error_object(int status, const char *message) {
    cJSON *o = cJSON_CreateObject(), *e = cJSON_AddObjectToObject(o, "error");
    cJSON_AddStringToObject(o, "type", "error");
    cJSON_AddStringToObject(e, "type", error_type(status));
    cJSON_AddStringToObject(e, "message", message);
    return o;
}

/* Every answer on the route passes here (serve_http.c's send_reply), wherever its error
 * was made (the access checks, the chat parser): OpenAI's {"error": {"message", ...}}
 * becomes {"type": "error", "error": {"type", "message"}}. */
void srv_messages_error_shape(srv_reply *r) {
    if (r->status < 400 || r->stream || !r->body) return;
    cJSON *j = cJSON_ParseWithLength(r->body, r->len);
    const cJSON *e = cJSON_GetObjectItemCaseSensitive(j, "error");
    const cJSON *msg = cJSON_GetObjectItemCaseSensitive(e, "message");
    if (cJSON_IsString(msg)) {
        int status = r->status;
        int retry = r->retry_after;
        free(r->body);
        r->body = NULL;
        srv_reply_json(r, status, error_object(status, msg->valuestring));
        r->retry_after = retry;
    }
    cJSON_Delete(j);
}

/* ---- the request ----------------------------------------------------------------------- */

static const char *const text_types[] = {"text", NULL};

/* A text block's text added to text: false when b is not a text block. */
static bool text_of_block(const cJSON *b, srv_buf *text) {
    const cJSON *type = cJSON_GetObjectItemCaseSensitive(b, "type");
    const cJSON *t = cJSON_GetObjectItemCaseSensitive(b, "text");
    if (!cJSON_IsString(type) || strcmp(type->valuestring, "text") || !cJSON_IsString(t)) return false;
    srv_buf_str(text, t->valuestring);
    return true;
}

/* An assistant message's blocks: text joined as content, tool_use blocks as tool_calls. */
static bool assistant_blocks(cJSON *out, const cJSON *content, int i, srv_error *err) {
    srv_buf text = {0};
    cJSON *calls = NULL;
    const cJSON *b;
    int k = 0;
    char name[64];
    cJSON_ArrayForEach(b, content) {
        snprintf(name, sizeof name, "messages[%d].content[%d]", i, k++);
        if (text_of_block(b, &text)) continue;
        const cJSON *type = cJSON_GetObjectItemCaseSensitive(b, "type");
        const char *t = cJSON_IsString(type) ? type->valuestring : "";
        const cJSON *id = cJSON_GetObjectItemCaseSensitive(b, "id");
        const cJSON *fn = cJSON_GetObjectItemCaseSensitive(b, "name");
        const cJSON *input = cJSON_GetObjectItemCaseSensitive(b, "input");
        if (strcmp(t, "tool_use") || !cJSON_IsString(id) || !cJSON_IsString(fn) || !cJSON_IsObject(input)) {
            srv_fail(err, 400, name, "%s: an assistant's blocks must be text or tool_use ({\"type\": "
                     "\"tool_use\", \"id\", \"name\", \"input\": {...}})", name);
            goto fail;
        }
        if (!calls && !(calls = cJSON_CreateArray())) goto oom;
        cJSON *c = cJSON_CreateObject();
        if (!srv_dialect_put(calls, NULL, c, err)) goto fail;
        cJSON_AddStringToObject(c, "id", id->valuestring);
        cJSON_AddStringToObject(c, "type", "function");
        cJSON *f = cJSON_AddObjectToObject(c, "function");
        char *args = cJSON_PrintUnformatted(input);
        if (!f || !args) {
            free(args);
            goto oom;
        }
        cJSON_AddStringToObject(f, "name", fn->valuestring);
        cJSON_AddStringToObject(f, "arguments", args);
        free(args);
    }
    if (text.oom) goto oom;
    if (!calls || text.n) cJSON_AddStringToObject(out, "content", text.p ? text.p : "");
    else cJSON_AddNullToObject(out, "content");
    srv_buf_free(&text);
    return !calls || srv_dialect_put(out, "tool_calls", calls, err);
oom:
    srv_fail(err, 500, "", "out of memory");
fail:
    cJSON_Delete(calls);
    srv_buf_free(&text);
    return false;
}

/* A user message's blocks: each tool_result a tool message (first: they answer the turn
 * before), the text blocks one user message after them. */
static bool user_blocks(cJSON *msgs, const cJSON *content, int i, srv_error *err) {
    srv_buf text = {0};
    int n_text = 0, k = 0;
    const cJSON *b;
    char name[64];
    cJSON_ArrayForEach(b, content) {
        snprintf(name, sizeof name, "messages[%d].content[%d]", i, k++);
        if (text_of_block(b, &text)) {
            n_text++;
            continue;
        }
        const cJSON *type = cJSON_GetObjectItemCaseSensitive(b, "type");
        const char *t = cJSON_IsString(type) ? type->valuestring : "";
        const cJSON *id = cJSON_GetObjectItemCaseSensitive(b, "tool_use_id");
        if (strcmp(t, "tool_result") || !cJSON_IsString(id)) {
            srv_fail(err, 400, name, "%s: a user's blocks must be text or tool_result ({\"type\": "
                     "\"tool_result\", \"tool_use_id\", \"content\"}); this server reads text only", name);
            srv_buf_free(&text);
            return false;
        }
        const cJSON *rc = cJSON_GetObjectItemCaseSensitive(b, "content");
        char cname[80];
        snprintf(cname, sizeof cname, "%s.content", name);
        cJSON *rt = rc ? srv_dialect_text(rc, text_types, cname, err) : cJSON_CreateString("");
        cJSON *m = cJSON_CreateObject();
        if (!rt || !srv_dialect_put(msgs, NULL, m, err)) {
            cJSON_Delete(rt);
            srv_buf_free(&text);
            return false;
        }
        cJSON_AddStringToObject(m, "role", "tool");
        cJSON_AddStringToObject(m, "tool_call_id", id->valuestring);
        cJSON_AddItemToObject(m, "content", rt);
    }
    bool ok = !text.oom;
    if (ok && n_text) {
        cJSON *m = cJSON_CreateObject();
        ok = srv_dialect_put(msgs, NULL, m, err);
        if (ok) {
            cJSON_AddStringToObject(m, "role", "user");
            cJSON_AddStringToObject(m, "content", text.p ? text.p : "");
        }
    } else if (!ok) {
        srv_fail(err, 500, "", "out of memory");
    }
    srv_buf_free(&text);
    return ok;
}

static bool read_messages(const cJSON *body, cJSON *chat, srv_error *err) {
    cJSON *msgs = cJSON_CreateArray();
    if (!srv_dialect_put(chat, "messages", msgs, err)) return false;
    const cJSON *sys = cJSON_GetObjectItemCaseSensitive(body, "system");
    if (sys && !cJSON_IsNull(sys)) {
        cJSON *t = srv_dialect_text(sys, text_types, "system", err), *m = cJSON_CreateObject();
        if (!t || !srv_dialect_put(msgs, NULL, m, err)) {
            cJSON_Delete(t);
            return false;
        }
        cJSON_AddStringToObject(m, "role", "system");
        cJSON_AddItemToObject(m, "content", t);
    }
    const cJSON *in = cJSON_GetObjectItemCaseSensitive(body, "messages");
    if (!cJSON_IsArray(in) || !in->child) {
        srv_fail(err, 400, "messages", "messages: a non-empty array of messages is required");
        return false;
    }
    int i = 0;
    const cJSON *msg;
    cJSON_ArrayForEach(msg, in) {
        char name[48];
        snprintf(name, sizeof name, "messages[%d]", i);
        const cJSON *role = cJSON_GetObjectItemCaseSensitive(msg, "role");
        const cJSON *content = cJSON_GetObjectItemCaseSensitive(msg, "content");
        bool user = cJSON_IsString(role) && !strcmp(role->valuestring, "user");
        if (!user && !(cJSON_IsString(role) && !strcmp(role->valuestring, "assistant"))) {
            srv_fail(err, 400, name, "%s.role must be \"user\" or \"assistant\"", name);
            return false;
        }
        if (cJSON_IsString(content)) {
            cJSON *m = cJSON_CreateObject();
            if (!srv_dialect_put(msgs, NULL, m, err)) return false;
            cJSON_AddStringToObject(m, "role", role->valuestring);
            cJSON_AddStringToObject(m, "content", content->valuestring);
        } else if (cJSON_IsArray(content)) {
            cJSON *m = user ? NULL : cJSON_CreateObject();
            if (!user && !srv_dialect_put(msgs, NULL, m, err)) return false;
            if (m) cJSON_AddStringToObject(m, "role", "assistant");
            if (user ? !user_blocks(msgs, content, i, err) : !assistant_blocks(m, content, i, err))
                return false;
        } else {
            srv_fail(err, 400, name, "%s.content must be a string or an array of content blocks", name);
            return false;
        }
        i++;
    }
    return true;
}

/* tools [{name, description, input_schema}] as OpenAI's function tools; tool_choice
 * {"type": auto | any | tool (with name) | none, "disable_parallel_tool_use"}. */
static bool read_tools(const cJSON *body, cJSON *chat, srv_error *err) {
    /* client tools ("type" absent or "custom"); server tools are not run here */
    if (!srv_dialect_tools(body, "custom", "input_schema", chat, err)) return false;
    const cJSON *tc = cJSON_GetObjectItemCaseSensitive(body, "tool_choice");
    if (!tc || cJSON_IsNull(tc)) return true;
    const cJSON *type = cJSON_GetObjectItemCaseSensitive(tc, "type");
    const cJSON *name = cJSON_GetObjectItemCaseSensitive(tc, "name");
    const cJSON *dp = cJSON_GetObjectItemCaseSensitive(tc, "disable_parallel_tool_use");
    const char *t = cJSON_IsString(type) ? type->valuestring : "";
    cJSON *choice = NULL;
    if (!strcmp(t, "auto") || !strcmp(t, "none")) {
        choice = cJSON_CreateString(t);
    } else if (!strcmp(t, "any")) {
        choice = cJSON_CreateString("required");
    } else if (!strcmp(t, "tool") && cJSON_IsString(name)) {
        choice = cJSON_CreateObject();
        cJSON_AddStringToObject(choice, "type", "function");
        cJSON_AddStringToObject(cJSON_AddObjectToObject(choice, "function"), "name", name->valuestring);
    } else {
        srv_fail(err, 400, "tool_choice", "tool_choice must be {\"type\": \"auto\"}, {\"type\": \"any\"}, "
                 "{\"type\": \"tool\", \"name\": ...} or {\"type\": \"none\"}");
        return false;
    }
    if (dp && !cJSON_IsBool(dp)) {
        cJSON_Delete(choice);
        srv_fail(err, 400, "tool_choice", "tool_choice.disable_parallel_tool_use must be true or false");
        return false;
    }
    if (!srv_dialect_put(chat, "tool_choice", choice, err)) return false;
    if (cJSON_IsTrue(dp)) cJSON_AddFalseToObject(chat, "parallel_tool_calls");
    return true;
}

/* The Messages request as an OpenAI chat request; *stream from its "stream". */
static cJSON *chat_request(const cJSON *body, bool *stream, srv_error *err) {
    static const char *const keys[] = {"model", "messages", "system", "max_tokens", "stop_sequences",
                                       "temperature", "top_p", "top_k", "stream", "tools",
                                       "tool_choice", "metadata", "ignore_eos", NULL};
    if (!srv_known_keys(body, keys, err)) return NULL;
    const cJSON *max = cJSON_GetObjectItemCaseSensitive(body, "max_tokens");
    if (!max || cJSON_IsNull(max)) {
        srv_fail(err, 400, "max_tokens", "max_tokens: Field required");
        return NULL;
    }
    /* the sampling fields have the same names and meanings (ignore_eos: the server's
     * extension, as on chat) */
    static const char *const same[] = {"model", "max_tokens", "temperature", "top_p", "top_k",
                                       "ignore_eos", NULL};
    static const char *const renamed[][2] = {{"stop_sequences", "stop"}, {NULL, NULL}};
    cJSON *chat = srv_dialect_chat(body, same, renamed, stream, err);
    if (!chat) return NULL;
    if (!read_messages(body, chat, err) || !read_tools(body, chat, err)) goto fail;
    return chat;
fail:
    cJSON_Delete(chat);
    return NULL;
}

/* ---- the answer --------------------------------------------------------------------------- */

static const char *stop_reason(const srv_choice *c) {
    if (!strcmp(c->finish, "tool_calls")) return "tool_use";
    if (!strcmp(c->finish, "length")) return "max_tokens";
    return c->cs.stopped ? "stop_sequence" : "end_turn";
}

static void add_stop_sequence(cJSON *o, const srv_dstream *st, const srv_choice *c) {
    if (!strcmp(stop_reason(c), "stop_sequence") && c->cs.stop >= 0 && c->cs.stop < st->p.n_stops)
        cJSON_AddStringToObject(o, "stop_sequence", st->p.stops[c->cs.stop]);
    else
        cJSON_AddNullToObject(o, "stop_sequence");
}

/* Call k's tool_use block, its input the JSON object args (NULL: {}, as a stream's
 * content_block_start has it). */
static cJSON *tool_use(const srv_choice *c, int k, const char *name, const char *args) {
    cJSON *b = cJSON_CreateObject();
    cJSON_AddStringToObject(b, "type", "tool_use");
    cJSON_AddStringToObject(b, "id", c->call_ids[k]);
    cJSON_AddStringToObject(b, "name", name);
    cJSON *in = args ? cJSON_Parse(args) : NULL;
    cJSON_AddItemToObject(b, "input", in ? in : cJSON_CreateObject());
    return b;
}

static cJSON *text_block(const char *s, size_t n) {
    cJSON *b = cJSON_CreateObject();
    cJSON_AddStringToObject(b, "type", "text");
    cJSON_AddItemToObject(b, "text", srv_json_text(s ? s : "", s ? n : 0));
    return b;
}

/* The message object: in message_start (start: no content, output tokens so far) and as
 * the whole answer. */
static cJSON *message(const srv_dstream *st, bool start) {
    const srv_job *j = &st->job;
    const srv_choice *c = &j->c[0];
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "id", st->id);
    cJSON_AddStringToObject(o, "type", "message");
    cJSON_AddStringToObject(o, "role", "assistant");
    cJSON_AddStringToObject(o, "model", st->m->name);
    cJSON *content = cJSON_AddArrayToObject(o, "content");
    if (start) {
        cJSON_AddNullToObject(o, "stop_reason");
        cJSON_AddNullToObject(o, "stop_sequence");
    } else {
        if (c->delta[0].n || !c->n_calls) cJSON_AddItemToArray(content, text_block(c->delta[0].p, c->delta[0].n));
        for (int k = 0; k < c->n_calls; k++)
            cJSON_AddItemToArray(content, tool_use(c, k, c->tc.calls[k].name, c->tc.calls[k].arguments));
        cJSON_AddStringToObject(o, "stop_reason", stop_reason(c));
        add_stop_sequence(o, st, c);
    }
    cJSON *u = cJSON_AddObjectToObject(o, "usage");
    cJSON_AddNumberToObject(u, "input_tokens", j->prompt_tokens);
    cJSON_AddNumberToObject(u, "output_tokens", start ? 0 : j->completion_tokens);
    return o;
}

static cJSON *whole(srv_dstream *st) {
    return message(st, false);
}

static cJSON *event(const char *type) {
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "type", type);
    return o;
}

static void block_start(srv_dstream *st, cJSON *block) {
    cJSON *e = event("content_block_start");
    cJSON_AddNumberToObject(e, "index", st->blocks);
    cJSON_AddItemToObject(e, "content_block", block);
    srv_sse_event(&st->out, "content_block_start", e);
}

static void block_delta(srv_dstream *st, const char *type, const char *key, cJSON *value) {
    cJSON *e = event("content_block_delta"), *d = cJSON_CreateObject();
    cJSON_AddNumberToObject(e, "index", st->blocks);
    cJSON_AddStringToObject(d, "type", type);
    cJSON_AddItemToObject(d, key, value);
    cJSON_AddItemToObject(e, "delta", d);
    srv_sse_event(&st->out, "content_block_delta", e);
}

static void block_stop(srv_dstream *st) {
    cJSON *e = event("content_block_stop");
    cJSON_AddNumberToObject(e, "index", st->blocks++);
    srv_sse_event(&st->out, "content_block_stop", e);
}

/* Tool calls as they stream (srv_call_deltas): a tool_use block per call, started once its
 * name is whole (the text block before it stopped), its input an input_json_delta at a
 * time, stopped when the next call begins or the answer ends. */
static void call_event(void *ctx, srv_choice *c, int k, int what, const char *s, size_t n) {
    srv_dstream *st = ctx;
    if (what == SRV_CALL_BEGIN) {
        if (st->text_open) {
            st->text_open = false;
            block_stop(st);
        }
        char *name = strndup(s, n);
        if (!name) {
            st->out.oom = true;
            return;
        }
        block_start(st, tool_use(c, k, name, NULL));
        free(name);
    } else if (what == SRV_CALL_ARGS) {
        block_delta(st, "input_json_delta", "partial_json", srv_json_text(s, n));
    } else {
        block_stop(st);
    }
}

/* message_start; text as content_block_deltas of a text block (started at its first
 * text); each tool call as a tool_use block as it streams; at the end the open block
 * stopped (an empty text block when the answer has neither text nor calls; a call whose
 * text turned out malformed stopped as it stands, its text in a text block after it),
 * message_delta (stop_reason, usage) and message_stop. */
static bool events(srv_dstream *st, bool finished) {
    srv_job *j = &st->job;
    srv_choice *c = &j->c[0];
    if (!st->started) {
        st->started = true;
        cJSON *e = event("message_start");
        cJSON_AddItemToObject(e, "message", message(st, true));
        srv_sse_event(&st->out, "message_start", e);
    }
    if (c->delta[0].n && !j->failed) {
        if (c->calls_ended < c->calls_begun) { /* the call was not one: its text follows */
            c->calls_ended++;
            block_stop(st);
        }
        if (!st->text_open) {
            st->text_open = true;
            block_start(st, text_block("", 0));
        }
        block_delta(st, "text_delta", "text", srv_json_text(c->delta[0].p, c->delta[0].n));
        srv_buf_clear(&c->delta[0]);
    }
    srv_buf_clear(&c->delta[1]); /* reasoning is not an Anthropic text block */
    if (!j->failed && c->tc_live && !srv_call_deltas(j, c, call_event, st)) st->out.oom = true;
    if (!finished) return false;
    if (j->failed) {
        srv_sse_event(&st->out, "error", error_object(j->err.status, j->err.msg));
        return true;
    }
    if (c->calls_ended < c->calls_begun) {
        c->calls_ended++;
        block_stop(st);
    }
    if (!st->blocks && !st->text_open) {
        st->text_open = true;
        block_start(st, text_block("", 0));
    }
    if (st->text_open) block_stop(st);
    st->text_open = false;
    cJSON *e = event("message_delta"), *d = cJSON_AddObjectToObject(e, "delta");
    cJSON_AddStringToObject(d, "stop_reason", stop_reason(c));
    add_stop_sequence(d, st, c);
    cJSON *u = cJSON_AddObjectToObject(e, "usage");
    cJSON_AddNumberToObject(u, "input_tokens", j->prompt_tokens);
    cJSON_AddNumberToObject(u, "output_tokens", j->completion_tokens);
    srv_sse_event(&st->out, "message_delta", e);
    srv_sse_event(&st->out, "message_stop", event("message_stop"));
    return true;
}

const srv_dialect srv_messages_api = {"msg_", chat_request, events, whole};
