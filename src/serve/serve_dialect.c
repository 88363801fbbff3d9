/* Other APIs' generation routes on the chat path: Anthropic's /v1/messages
 * (serve_messages.c) and OpenAI's Responses API (serve_responses.c) turn their request
 * into an OpenAI chat request, which goes through the same checks, template, engine and
 * tool-call parser as /v1/chat/completions; only the answer's shape differs. Here: the
 * request run as one answer or as a stream whose events the dialect writes. */
#include "serve/serve_internal.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void srv_sse_event(srv_buf *b, const char *event, cJSON *data) {
    char *t = data ? cJSON_PrintUnformatted(data) : NULL;
    cJSON_Delete(data);
    if (!t) {
        b->oom = true;
        return;
    }
    srv_buf_printf(b, "event: %s\ndata: ", event);
    srv_buf_str(b, t);
    srv_buf_str(b, "\n\n");
    free(t);
}

ssize_t srv_sse_read(srv_server *s, srv_job *j, srv_buf *out, size_t *sent, const bool *done,
                     char *buf, size_t max, void (*more)(void *), void *ctx) {
    for (;;) {
        if (out->oom) return MHD_CONTENT_READER_END_WITH_ERROR;
        if (*sent < out->n) {
            size_t k = out->n - *sent < max ? out->n - *sent : max;
            memcpy(buf, out->p + *sent, k);
            *sent += k;
            return (ssize_t)k;
        }
        if (*done) return MHD_CONTENT_READER_END_OF_STREAM;
        if (srv_client_gone(j)) {
            pthread_mutex_lock(&s->mu);
            s->stream_disconnects++;
            pthread_mutex_unlock(&s->mu);
            return MHD_CONTENT_READER_END_WITH_ERROR; /* the free callback cancels */
        }
        srv_buf_clear(out);
        *sent = 0;
        more(ctx);
    }
}

static void dstream_more(void *cls) {
    srv_dstream *st = cls;
    st->done = st->events(st, srv_job_pump(&st->job, 0.05));
}

static ssize_t dstream_read(void *cls, uint64_t pos, char *buf, size_t max) {
    (void)pos;
    srv_dstream *st = cls;
    return srv_sse_read(st->srv, &st->job, &st->out, &st->sent, &st->done, buf, max, dstream_more, st);
}

static void dstream_free(void *cls) {
    srv_dstream *st = cls;
    srv_log_job(st->log, &st->job);
    srv_log_end(st->log);
    srv_job_free(&st->job); /* cancels what still runs */
    srv_params_free(&st->p);
    if (st->m) srv_release(st->srv, st->m);
    srv_buf_free(&st->out);
    srv_buf_free(&st->text);
    srv_buf_free(&st->args);
    free(st->call_name);
    cJSON_Delete(st->items);
    atomic_fetch_sub(&st->srv->in_flight, 1);
    free(st);
}

/* Runs chat as one answer or a stream of d's events into r; false with err set when it
 * fails (r untouched). */
static bool run_chat(srv_server *s, const cJSON *chat, bool stream, int fd, const srv_dialect *d,
                     srv_reply *r, srv_error *err) {
    srv_dstream *st = calloc(1, sizeof *st);
    if (!st) {
        srv_fail(err, 500, "", "out of memory");
        return false;
    }
    st->srv = s;
    st->events = d->events;
    st->m = srv_acquire(s, chat, err);
    if (!st->m || !srv_parse_params(s, st->m, chat, true, &st->p, err) ||
        !srv_job_start(&st->job, s, st->m, &st->p, fd, err)) {
        srv_params_free(&st->p);
        if (st->m) srv_release(s, st->m);
        free(st);
        return false;
    }
    atomic_fetch_add(&s->in_flight, 1);
    srv_job *j = &st->job;
    j->p = &st->p;
    st->log = srv_log_hold(r->log);
    /* the dialect's own id prefix over the job's random number */
    const char *num = strchr(j->id, '-');
    snprintf(st->id, sizeof st->id, "%s%s", d->id_prefix, num ? num + 1 : j->id);
    if (stream) {
        struct MHD_Response *resp =
            MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 16 * 1024, dstream_read, st, dstream_free);
        if (!resp) {
            dstream_free(st);
            srv_fail(err, 500, "", "out of memory");
            return false;
        }
        r->status = 200;
        r->type = "text/event-stream";
        r->stream = resp;
        return true;
    }
    bool gone = false;
    while (!srv_job_pump(j, 0.05))
        if ((gone = srv_client_gone(j))) break;
    bool ok = !gone && !j->failed;
    if (gone) srv_fail(err, 499, "", "the client closed the connection");
    else if (j->failed) *err = j->err;
    else srv_reply_json(r, 200, d->whole(st));
    dstream_free(st);
    return ok;
}

/* s (capacity cap) with chat's field names as d's (d->renamed): a name replaced where it
 * starts a field path (not inside a longer name). */
static void rename_in(const srv_dialect *d, char *s, size_t cap) {
    char out[sizeof ((srv_error *)0)->msg];
    size_t o = 0;
    for (size_t i = 0; s[i] && o + 1 < sizeof out;) {
        bool done = false;
        bool at_start = i == 0 || !(isalnum((unsigned char)s[i - 1]) || s[i - 1] == '_' || s[i - 1] == '.');
        for (int k = 0; at_start && !done && d->renamed[k][0]; k++) {
            size_t n = strlen(d->renamed[k][0]);
            char next = s[i + n];
            if (strncmp(s + i, d->renamed[k][0], n) || isalnum((unsigned char)next) || next == '_') continue;
            o += (size_t)snprintf(out + o, sizeof out - o, "%s", d->renamed[k][1]);
            if (o >= sizeof out) o = sizeof out - 1;
            i += n;
            done = true;
        }
        if (!done) out[o++] = s[i++];
    }
    out[o] = 0;
    snprintf(s, cap, "%s", out);
}

void srv_handle_dialect(srv_server *s, const srv_dialect *d, const char *body, size_t len, int fd,
                        srv_reply *r) {
    srv_error err = {0};
    bool stream = false;
    cJSON *j = srv_parse_object(body, len, &err);
    cJSON *chat = j ? d->request(j, &stream, &err) : NULL;
    cJSON_Delete(j);
    bool ok = chat && run_chat(s, chat, stream, fd, d, r, &err);
    cJSON_Delete(chat);
    if (!ok && d->renamed) {
        rename_in(d, err.param, sizeof err.param);
        rename_in(d, err.msg, sizeof err.msg);
    }
    /* OpenAI's error shape; serve_http.c reshapes it for an API that has its own */
    if (!ok) srv_reply_error(r, &err);
}

/* ---- pieces both dialects write ------------------------------------------------------ */

bool srv_dialect_put(cJSON *to, const char *key, cJSON *v, srv_error *err) {
    if (v && (key ? cJSON_AddItemToObject(to, key, v) : cJSON_AddItemToArray(to, v))) return true;
    cJSON_Delete(v);
    srv_fail(err, 500, "", "out of memory");
    return false;
}

cJSON *srv_dialect_chat(const cJSON *body, const char *const *same, const char *const (*renamed)[2],
                        bool *stream, srv_error *err) {
    const cJSON *st = cJSON_GetObjectItemCaseSensitive(body, "stream");
    if (st && !cJSON_IsBool(st) && !cJSON_IsNull(st)) {
        srv_fail(err, 400, "stream", "'stream' must be true or false");
        return NULL;
    }
    *stream = cJSON_IsTrue(st);
    cJSON *chat = cJSON_CreateObject();
    if (!chat) {
        srv_fail(err, 500, "", "out of memory");
        return NULL;
    }
    for (int i = 0; same[i]; i++) {
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(body, same[i]);
        if (v && !srv_dialect_put(chat, same[i], cJSON_Duplicate(v, 1), err)) goto fail;
    }
    for (int i = 0; renamed[i][0]; i++) {
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(body, renamed[i][0]);
        if (v && !cJSON_IsNull(v) && !srv_dialect_put(chat, renamed[i][1], cJSON_Duplicate(v, 1), err))
            goto fail;
    }
    return chat;
fail:
    cJSON_Delete(chat);
    return NULL;
}

bool srv_dialect_tools(const cJSON *body, const char *type, const char *params_key, cJSON *chat,
                       srv_error *err) {
    const cJSON *tools = cJSON_GetObjectItemCaseSensitive(body, "tools");
    if (!tools || cJSON_IsNull(tools)) return true;
    if (!cJSON_IsArray(tools)) {
        srv_fail(err, 400, "tools", "'tools' must be an array of tools");
        return false;
    }
    cJSON *out = cJSON_CreateArray();
    if (!srv_dialect_put(chat, "tools", out, err)) return false;
    int i = 0;
    const cJSON *t;
    cJSON_ArrayForEach(t, tools) {
        const cJSON *ty = cJSON_GetObjectItemCaseSensitive(t, "type");
        const cJSON *name = cJSON_GetObjectItemCaseSensitive(t, "name");
        const cJSON *desc = cJSON_GetObjectItemCaseSensitive(t, "description");
        const cJSON *params = cJSON_GetObjectItemCaseSensitive(t, params_key);
        char p[32];
        snprintf(p, sizeof p, "tools[%d]", i++);
        bool typed = ty ? cJSON_IsString(ty) && !strcmp(ty->valuestring, type) : strcmp(type, "function");
        if (!typed || !cJSON_IsString(name) || (desc && !cJSON_IsNull(desc) && !cJSON_IsString(desc)) ||
            (params && !cJSON_IsNull(params) && !cJSON_IsObject(params))) {
            srv_fail(err, 400, p, "'%s' must be a tool of type \"%s\" with a string 'name', an optional "
                     "'description' and '%s' (a JSON schema): this server runs no built-in tools", p,
                     type, params_key);
            return false;
        }
        cJSON *o = cJSON_CreateObject(), *f;
        if (!srv_dialect_put(out, NULL, o, err)) return false;
        cJSON_AddStringToObject(o, "type", "function");
        f = cJSON_AddObjectToObject(o, "function");
        cJSON_AddStringToObject(f, "name", name->valuestring);
        if (cJSON_IsString(desc)) cJSON_AddStringToObject(f, "description", desc->valuestring);
        if (cJSON_IsObject(params) && !srv_dialect_put(f, "parameters", cJSON_Duplicate(params, 1), err))
            return false;
    }
    return true;
}

/* A request's text content: a string, or an array of {"type": TYPE, "text"} parts (of
 * one of the types in `types`, NULL-terminated) joined, as the text the template gets. NULL
 * with err naming `name` when it is neither. */
cJSON *srv_dialect_text(const cJSON *content, const char *const *types, const char *name,
                        srv_error *err) {
    if (cJSON_IsString(content)) return cJSON_CreateString(content->valuestring);
    if (!cJSON_IsArray(content)) {
        srv_fail(err, 400, name, "%s must be a string or an array of text blocks", name);
        return NULL;
    }
    srv_buf b = {0};
    const cJSON *part;
    int i = 0;
    cJSON_ArrayForEach(part, content) {
        const cJSON *type = cJSON_GetObjectItemCaseSensitive(part, "type");
        const cJSON *text = cJSON_GetObjectItemCaseSensitive(part, "text");
        bool known = false;
        for (int k = 0; cJSON_IsString(type) && types[k] && !known; k++)
            known = !strcmp(type->valuestring, types[k]);
        if (!known || !cJSON_IsString(text)) {
            srv_fail(err, 400, name, "%s[%d] must be a text block ({\"type\": \"%s\", \"text\": ...}): "
                     "this server reads text only", name, i, types[0]);
            srv_buf_free(&b);
            return NULL;
        }
        srv_buf_str(&b, text->valuestring);
        i++;
    }
    cJSON *o = cJSON_CreateString(b.p ? b.p : "");
    srv_buf_free(&b);
    return o;
}
