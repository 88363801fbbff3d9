/* The OpenAI routes: /v1/chat/completions and /v1/completions as one JSON answer or as
 * server-sent events (OpenAI's chunk objects, then "data: [DONE]"), /v1/models, and
 * vLLM-style /tokenize and /detokenize. */
#include "serve/serve_internal.h"

#include "genai/api_tokenizer.h"

#include "base/status.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void srv_reply_json(srv_reply *r, int status, cJSON *j) {
    r->status = status;
    r->type = "application/json";
    r->body = j ? cJSON_PrintUnformatted(j) : NULL;
    cJSON_Delete(j);
    if (!r->body) {
        static const char oom[] = "{\"error\":{\"message\":\"out of memory\",\"type\":\"server_error\","
                                  "\"param\":null,\"code\":null}}";
        r->status = 500;
        r->body = strdup(oom);
    }
    r->len = r->body ? strlen(r->body) : 0;
}

static cJSON *error_object(const srv_error *e) {
    cJSON *o = cJSON_CreateObject(), *in = cJSON_AddObjectToObject(o, "error");
    cJSON_AddStringToObject(in, "message", e->msg);
    cJSON_AddStringToObject(in, "type", e->type ? e->type : "invalid_request_error");
    if (e->param[0]) cJSON_AddStringToObject(in, "param", e->param);
    else cJSON_AddNullToObject(in, "param");
    if (e->code) cJSON_AddStringToObject(in, "code", e->code);
    else cJSON_AddNullToObject(in, "code");
    return o;
}

void srv_reply_error(srv_reply *r, const srv_error *e) {
    srv_reply_json(r, e->status ? e->status : 500, error_object(e));
    r->retry_after = e->retry_after;
}

/* ---- logprobs ------------------------------------------------------------------------ */

/* A token's text in the answer: what it adds to the decode of the ids before it (ctx,
 * through the scratch stream ts), so that a SentencePiece token keeps its leading space
 * (" there", where the token alone decodes as the start of a text, "there"). A token that
 * adds nothing there (part of a character, a special token) is decoded alone. The text
 * comes as valid UTF-8 (a byte-level piece of a longer character becomes U+FFFD; its
 * own bytes are given as numbers beside, as OpenAI's `bytes` has them), *text_len bytes
 * (it may hold NUL bytes). */
static char *token_text(srv_model *m, og_tokenizer_stream *ts, const int32_t *ctx, int n_ctx,
                        int32_t id, cJSON **bytes, size_t *text_len) {
    char *raw = NULL;
    const char *piece = NULL;
    size_t n = 0;
    og_status *st = ts ? og_tokenizer_stream_set_context(ts, ctx, (size_t)n_ctx) : NULL;
    if (ts && !st) st = og_tokenizer_stream_decode_len(ts, id, &piece, &n);
    if (st || !n) {
        og_status_free(st);
        piece = NULL;
        st = og_tokenizer_decode_len(m->tok, &id, 1, 0, &raw, &n);
    }
    if (st) {
        og_status_free(st);
        raw = NULL;
        n = 0;
    }
    const unsigned char *s = (const unsigned char *)(piece ? piece : raw ? raw : "");
    /* decoded alone: the token's own bytes (a part of a character is not U+FFFD there) */
    uint8_t own[64];
    size_t own_n = 0;
    og_status *bs = piece ? NULL : gen_tokenizer_token_bytes(m->tok, id, own, sizeof own, &own_n);
    bool use_own = !piece && !bs && own_n > 0 && own_n <= sizeof own;
    og_status_free(bs);
    if (bytes && (*bytes = cJSON_CreateArray()))
        for (size_t i = 0; i < (use_own ? own_n : n); i++)
            cJSON_AddItemToArray(*bytes, cJSON_CreateNumber(use_own ? own[i] : s[i]));
    char *out = malloc(3 * n + 1);
    size_t k = 0;
    for (size_t i = 0; out && i < n;) {
        size_t len = s[i] < 0x80 ? 1 : (s[i] >> 5) == 6 ? 2 : (s[i] >> 4) == 14 ? 3 : (s[i] >> 3) == 30 ? 4 : 0;
        bool ok = len > 0 && i + len <= n;
        for (size_t q = 1; ok && q < len; q++) ok = (s[i + q] & 0xC0) == 0x80;
        if (ok) {
            memcpy(out + k, s + i, len);
            k += len;
            i += len;
        } else {
            memcpy(out + k, "\xEF\xBF\xBD", 3);
            k += 3;
            i++;
        }
    }
    if (out) out[k] = 0;
    *text_len = out ? k : 0;
    og_free(raw);
    return out;
}

/* Model text s[0, n), NUL bytes included, as o's field `key`. */
static void add_text(cJSON *o, const char *key, const char *s, size_t n) {
    cJSON_AddItemToObject(o, key, srv_json_text(s ? s : "", s ? n : 0));
}

/* The ids before a choice's unreported tokens (its prompt's tail, then its answer): each
 * token's text is decoded after them. */
typedef struct lp_context {
    og_tokenizer_stream *ts; /* scratch (NULL when it could not be made: tokens alone) */
    int32_t ids[SRV_LP_CONTEXT];
    int n;
} lp_context;

static void lp_context_init(lp_context *x, const srv_job *j, const srv_choice *c) {
    og_status *st = og_tokenizer_stream_create(j->m->tok, &x->ts);
    if (st) x->ts = NULL;
    og_status_free(st);
    x->n = c->n_lp_ctx;
    memcpy(x->ids, c->lp_ctx, sizeof *x->ids * (size_t)x->n);
}

/* id follows the context now. */
static void lp_context_push(lp_context *x, int32_t id) {
    if (x->n == SRV_LP_CONTEXT) memmove(x->ids, x->ids + 1, sizeof *x->ids * (size_t)--x->n);
    x->ids[x->n++] = id;
}

/* The context after c's reported tokens becomes the choice's, for its next ones. */
static void lp_context_done(lp_context *x, srv_choice *c) {
    og_tokenizer_stream_free(x->ts);
    c->n_lp_ctx = x->n;
    memcpy(c->lp_ctx, x->ids, sizeof *x->ids * (size_t)x->n);
}

static cJSON *chat_logprob_entry(srv_model *m, const lp_context *x, int32_t id, float lp) {
    cJSON *e = cJSON_CreateObject(), *bytes = NULL;
    size_t n = 0;
    char *t = token_text(m, x->ts, x->ids, x->n, id, &bytes, &n);
    add_text(e, "token", t, n);
    cJSON_AddNumberToObject(e, "logprob", lp);
    if (bytes) cJSON_AddItemToObject(e, "bytes", bytes);
    free(t);
    return e;
}

/* Chat: {"content": [{token, logprob, bytes, top_logprobs: [...]}, ...]} of c's unreported
 * tokens. */
static cJSON *chat_logprobs(srv_job *j, srv_choice *c) {
    cJSON *o = cJSON_CreateObject(), *content = cJSON_AddArrayToObject(o, "content");
    const eng_token *t = c->toks;
    lp_context x;
    lp_context_init(&x, j, c);
    for (int i = 0; i < c->n_toks; i++) {
        cJSON *e = chat_logprob_entry(j->m, &x, t[i].id, t[i].logprob);
        cJSON *top = cJSON_AddArrayToObject(e, "top_logprobs");
        for (int k = 0; k < t[i].n_top && k < j->p->logprobs; k++)
            cJSON_AddItemToArray(top, chat_logprob_entry(j->m, &x, t[i].top_ids[k], t[i].top_logprobs[k]));
        cJSON_AddItemToArray(content, e);
        lp_context_push(&x, t[i].id);
    }
    lp_context_done(&x, c);
    return o;
}

/* Completions: {"tokens", "token_logprobs", "top_logprobs", "text_offset"} of c's
 * unreported tokens; an offset counts the characters of the choice's text before the
 * token (as OpenAI counts them, not bytes). */
static cJSON *completion_logprobs(srv_job *j, srv_choice *c) {
    cJSON *o = cJSON_CreateObject();
    cJSON *toks = cJSON_AddArrayToObject(o, "tokens"), *lps = cJSON_AddArrayToObject(o, "token_logprobs");
    cJSON *tops = cJSON_AddArrayToObject(o, "top_logprobs"), *offs = cJSON_AddArrayToObject(o, "text_offset");
    const eng_token *t = c->toks;
    lp_context x;
    lp_context_init(&x, j, c);
    srv_buf top = {0};
    for (int i = 0; i < c->n_toks; i++) {
        size_t len = 0;
        char *s = token_text(j->m, x.ts, x.ids, x.n, t[i].id, NULL, &len);
        cJSON_AddItemToArray(toks, srv_json_text(s ? s : "", len));
        cJSON_AddItemToArray(lps, cJSON_CreateNumber(t[i].logprob));
        cJSON_AddItemToArray(offs, cJSON_CreateNumber((double)c->tok_chars[i]));
        free(s);
        /* {token text: logprob}, the first of equal texts; written here, as a cJSON key
         * would end at a NUL byte */
        char *seen[ENG_MAX_LOGPROBS];
        size_t seen_n[ENG_MAX_LOGPROBS];
        int n_seen = 0;
        srv_buf_clear(&top);
        srv_buf_add(&top, "{", 1);
        for (int k = 0; k < t[i].n_top && k < j->p->logprobs && k < ENG_MAX_LOGPROBS; k++) {
            size_t al = 0;
            char *a = token_text(j->m, x.ts, x.ids, x.n, t[i].top_ids[k], NULL, &al);
            bool dup = !a;
            for (int q = 0; q < n_seen && !dup; q++) dup = seen_n[q] == al && !memcmp(seen[q], a, al);
            if (dup) {
                free(a);
                continue;
            }
            if (n_seen) srv_buf_add(&top, ",", 1);
            srv_buf_json_string(&top, a, al);
            cJSON *lp = cJSON_CreateNumber(t[i].top_logprobs[k]);
            char *num = lp ? cJSON_PrintUnformatted(lp) : NULL;
            cJSON_Delete(lp);
            srv_buf_printf(&top, ":%s", num ? num : "null");
            cJSON_free(num);
            seen[n_seen] = a;
            seen_n[n_seen++] = al;
        }
        srv_buf_add(&top, "}", 1);
        for (int q = 0; q < n_seen; q++) free(seen[q]);
        cJSON_AddItemToArray(tops, top.oom ? NULL : cJSON_CreateRaw(top.p));
        lp_context_push(&x, t[i].id);
    }
    srv_buf_free(&top);
    lp_context_done(&x, c);
    return o;
}

/* ---- whole answers --------------------------------------------------------------------- */

static cJSON *usage(const srv_job *j) {
    cJSON *u = cJSON_CreateObject();
    cJSON_AddNumberToObject(u, "prompt_tokens", j->prompt_tokens);
    cJSON_AddNumberToObject(u, "completion_tokens", j->completion_tokens);
    cJSON_AddNumberToObject(u, "total_tokens", j->prompt_tokens + j->completion_tokens);
    cJSON *d = cJSON_AddObjectToObject(u, "prompt_tokens_details");
    cJSON_AddNumberToObject(d, "cached_tokens", j->cached_tokens);
    return u;
}

static cJSON *head(const srv_job *j, const char *object) {
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "id", j->id);
    cJSON_AddStringToObject(o, "object", object);
    cJSON_AddNumberToObject(o, "created", (double)j->created);
    if (j->p->s.adapter) { /* the id the request named */
        char id[512];
        snprintf(id, sizeof id, "%s:%s", j->m->name, j->p->s.adapter);
        cJSON_AddStringToObject(o, "model", id);
    } else {
        cJSON_AddStringToObject(o, "model", j->m->name);
    }
    return o;
}

/* Tool call k of choice c as OpenAI writes it: {"id", "type": "function", "function":
 * {"name", "arguments"}}. */
static cJSON *tool_call(const srv_choice *c, int k) {
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "id", c->call_ids[k]);
    cJSON_AddStringToObject(o, "type", "function");
    cJSON *f = cJSON_AddObjectToObject(o, "function");
    cJSON_AddStringToObject(f, "name", c->tc.calls[k].name);
    cJSON_AddStringToObject(f, "arguments", c->tc.calls[k].arguments);
    return o;
}

static cJSON *whole_answer(srv_job *j) {
    cJSON *o = head(j, j->p->chat ? "chat.completion" : "text_completion");
    cJSON *choices = cJSON_AddArrayToObject(o, "choices");
    for (int i = 0; i < j->n_choices; i++) {
        srv_choice *c = &j->c[i];
        cJSON *ch = cJSON_CreateObject();
        cJSON_AddNumberToObject(ch, "index", c->index);
        if (j->p->chat) {
            cJSON *msg = cJSON_AddObjectToObject(ch, "message");
            cJSON_AddStringToObject(msg, "role", "assistant");
            if (c->n_calls && !c->delta[0].n) cJSON_AddNullToObject(msg, "content");
            else add_text(msg, "content", c->delta[0].p, c->delta[0].n);
            if (c->n_calls) {
                cJSON *calls = cJSON_AddArrayToObject(msg, "tool_calls");
                for (int k = 0; k < c->n_calls; k++) cJSON_AddItemToArray(calls, tool_call(c, k));
            }
            if (c->delta[1].n) add_text(msg, "reasoning_content", c->delta[1].p, c->delta[1].n);
        } else {
            add_text(ch, "text", c->delta[0].p, c->delta[0].n);
        }
        if (j->p->logprobs < 0) {
            cJSON_AddNullToObject(ch, "logprobs");
        } else {
            cJSON_AddItemToObject(ch, "logprobs", j->p->chat ? chat_logprobs(j, c) : completion_logprobs(j, c));
        }
        cJSON_AddStringToObject(ch, "finish_reason", c->finish);
        cJSON_AddItemToArray(choices, ch);
    }
    cJSON_AddItemToObject(o, "usage", usage(j));
    return o;
}

/* ---- streams --------------------------------------------------------------------------- */

typedef struct srv_stream {
    srv_server *srv;
    srv_model *m; /* held until the stream is freed */
    srv_params p;
    srv_job job;
    srv_buf out;
    size_t sent;
    bool started, done;
    bool *finish_sent;
    srv_reqlog *log; /* held until the stream is freed */
} srv_stream;

static void sse(srv_buf *b, cJSON *j) {
    char *t = cJSON_PrintUnformatted(j);
    cJSON_Delete(j);
    if (!t) {
        b->oom = true;
        return;
    }
    srv_buf_str(b, "data: ");
    srv_buf_str(b, t);
    srv_buf_str(b, "\n\n");
    free(t);
}

static cJSON *chunk(srv_stream *st) {
    cJSON *o = head(&st->job, st->p.chat ? "chat.completion.chunk" : "text_completion");
    return o;
}

static void chunk_end(srv_stream *st, cJSON *o) {
    if (st->p.include_usage) cJSON_AddNullToObject(o, "usage");
    sse(&st->out, o);
}

/* One choice's chunk: its new text (and logprobs), or its finish_reason with no text. */
static void choice_chunk(srv_stream *st, srv_choice *c, bool role, const char *finish) {
    srv_job *j = &st->job;
    cJSON *o = chunk(st), *choices = cJSON_AddArrayToObject(o, "choices"), *ch = cJSON_CreateObject();
    cJSON_AddItemToArray(choices, ch);
    cJSON_AddNumberToObject(ch, "index", c->index);
    if (st->p.chat) {
        cJSON *d = cJSON_AddObjectToObject(ch, "delta");
        if (role) {
            cJSON_AddStringToObject(d, "role", "assistant");
            cJSON_AddStringToObject(d, "content", "");
        } else if (!finish) {
            if (c->delta[0].n) add_text(d, "content", c->delta[0].p, c->delta[0].n);
            if (c->delta[1].n) add_text(d, "reasoning_content", c->delta[1].p, c->delta[1].n);
        }
    } else {
        add_text(ch, "text", c->delta[0].p, finish ? 0 : c->delta[0].n);
    }
    if (!role && !finish && j->p->logprobs >= 0 && c->n_toks) {
        cJSON_AddItemToObject(ch, "logprobs", st->p.chat ? chat_logprobs(j, c) : completion_logprobs(j, c));
        c->n_toks = 0;
    } else {
        cJSON_AddNullToObject(ch, "logprobs");
    }
    if (finish) cJSON_AddStringToObject(ch, "finish_reason", finish);
    else cJSON_AddNullToObject(ch, "finish_reason");
    chunk_end(st, o);
    if (!role && !finish) {
        srv_buf_clear(&c->delta[0]);
        srv_buf_clear(&c->delta[1]);
    }
}

/* A chunk of tool call k of a chat choice: its first (index, id, type, name and arguments
 * "") when head, else a piece of its arguments (index and arguments only), as OpenAI's
 * streams write them. */
static void call_chunk(srv_stream *st, srv_choice *c, int k, const char *name, const char *args, size_t n) {
    cJSON *o = chunk(st), *choices = cJSON_AddArrayToObject(o, "choices");
    cJSON *ch = cJSON_CreateObject();
    cJSON_AddItemToArray(choices, ch);
    cJSON_AddNumberToObject(ch, "index", c->index);
    cJSON *d = cJSON_AddObjectToObject(ch, "delta");
    cJSON *t = cJSON_CreateObject();
    cJSON_AddItemToArray(cJSON_AddArrayToObject(d, "tool_calls"), t);
    cJSON_AddNumberToObject(t, "index", k);
    if (name) {
        cJSON_AddStringToObject(t, "id", c->call_ids[k]);
        cJSON_AddStringToObject(t, "type", "function");
    }
    cJSON *f = cJSON_AddObjectToObject(t, "function");
    if (name) cJSON_AddStringToObject(f, "name", name);
    add_text(f, "arguments", args, name ? 0 : n);
    cJSON_AddNullToObject(ch, "logprobs");
    cJSON_AddNullToObject(ch, "finish_reason");
    chunk_end(st, o);
}

/* A chat choice's tool calls as far as the parser has read them (srv_call_deltas): a
 * call's first chunk once its name is whole, then its arguments as they grow. Calls of
 * text that turns out malformed at the end may have begun: the text then comes as content
 * and the finish is "stop". */
static void call_delta(void *ctx, srv_choice *c, int k, int what, const char *s, size_t n) {
    if (what == SRV_CALL_BEGIN) call_chunk(ctx, c, k, s, "", 0);
    else if (what == SRV_CALL_ARGS) call_chunk(ctx, c, k, NULL, s, n);
}

static void tool_call_deltas(srv_stream *st, srv_choice *c) {
    if (!srv_call_deltas(&st->job, c, call_delta, st)) st->out.oom = true;
}

/* Events for what the engine produced since the last call. */
static void stream_events(srv_stream *st) {
    srv_job *j = &st->job;
    if (!st->started) {
        st->started = true;
        if (st->p.chat)
            for (int i = 0; i < j->n_choices; i++) choice_chunk(st, &j->c[i], true, NULL);
        return;
    }
    bool done = srv_job_pump(j, 0.05);
    for (int i = 0; i < j->n_choices && !j->failed; i++) {
        srv_choice *c = &j->c[i];
        if (c->delta[0].n || c->delta[1].n || (j->p->logprobs >= 0 && c->n_toks))
            choice_chunk(st, c, false, NULL);
        if (st->p.chat && c->tc_live && !st->finish_sent[i]) tool_call_deltas(st, c);
        if (c->finish && !st->finish_sent[i]) {
            choice_chunk(st, c, false, c->finish);
            st->finish_sent[i] = true;
        }
    }
    if (!done) return;
    if (j->failed) {
        sse(&st->out, error_object(&j->err));
    } else if (st->p.include_usage) {
        cJSON *o = chunk(st);
        cJSON_AddArrayToObject(o, "choices");
        cJSON_AddItemToObject(o, "usage", usage(j));
        sse(&st->out, o);
    }
    srv_buf_str(&st->out, "data: [DONE]\n\n");
    st->done = true;
}

static void stream_more(void *cls) {
    stream_events(cls);
}

static ssize_t stream_read(void *cls, uint64_t pos, char *buf, size_t max) {
    (void)pos;
    srv_stream *st = cls;
    return srv_sse_read(st->srv, &st->job, &st->out, &st->sent, &st->done, buf, max, stream_more, st);
}

static void stream_free(void *cls) {
    srv_stream *st = cls;
    srv_log_job(st->log, &st->job);
    srv_log_end(st->log);
    srv_job_free(&st->job); /* cancels what still runs: its KV is freed before the next step */
    srv_params_free(&st->p);
    if (st->m) srv_release(st->srv, st->m);
    srv_buf_free(&st->out);
    free(st->finish_sent);
    atomic_fetch_sub(&st->srv->in_flight, 1);
    free(st);
}

void srv_handle_generate(srv_server *s, bool chat, const char *body, size_t len, int fd,
                         srv_reply *r) {
    srv_error err = {0};
    srv_stream *st = calloc(1, sizeof *st);
    if (!st) {
        srv_fail(&err, 500, "", "out of memory");
        srv_reply_error(r, &err);
        return;
    }
    st->srv = s;
    cJSON *j0 = srv_parse_object(body, len, &err);
    st->m = j0 ? srv_acquire(s, j0, &err) : NULL;
    bool ok = st->m && srv_parse_params(s, st->m, j0, chat, &st->p, &err);
    cJSON_Delete(j0);
    if (!ok || !srv_job_start(&st->job, s, st->m, &st->p, fd, &err)) {
        srv_params_free(&st->p);
        if (st->m) srv_release(s, st->m);
        free(st);
        srv_reply_error(r, &err);
        return;
    }
    atomic_fetch_add(&s->in_flight, 1);
    srv_job *j = &st->job;
    j->p = &st->p;
    st->log = srv_log_hold(r->log);
    if (st->p.stream) {
        st->finish_sent = calloc((size_t)j->n_choices, sizeof *st->finish_sent);
        struct MHD_Response *resp = st->finish_sent
            ? MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 16 * 1024, stream_read, st, stream_free)
            : NULL;
        if (!resp) {
            stream_free(st);
            srv_fail(&err, 500, "", "out of memory");
            srv_reply_error(r, &err);
            return;
        }
        r->status = 200;
        r->type = "text/event-stream";
        r->stream = resp;
        return;
    }
    bool gone = false;
    while (!srv_job_pump(j, 0.05))
        if ((gone = srv_client_gone(j))) break;
    if (gone) {
        srv_fail(&err, 499, "", "the client closed the connection");
        srv_reply_error(r, &err);
    } else if (j->failed) {
        srv_reply_error(r, &j->err);
    } else {
        srv_reply_json(r, 200, whole_answer(j));
    }
    stream_free(st);
}

/* ---- models, tokenize, detokenize ---------------------------------------------------------- */

/* adapter: one of s->adapter_names ("MODEL:ADAPTER"), or NULL for the model itself */
static cJSON *model_object(srv_server *s, srv_model *m, const char *adapter) {
    cJSON *o = cJSON_CreateObject();
    char id[512];
    snprintf(id, sizeof id, "%s%s%s", m->name, adapter ? ":" : "", adapter ? adapter : "");
    cJSON_AddStringToObject(o, "id", id);
    if (adapter) cJSON_AddStringToObject(o, "parent", m->name);
    cJSON_AddStringToObject(o, "object", "model");
    srv_model *held = srv_try_use(s, (int)(m - s->models));
    cJSON_AddNumberToObject(o, "created", held ? (double)m->created : 0);
    cJSON_AddStringToObject(o, "owned_by", "onnx-genai");
    cJSON_AddBoolToObject(o, "loaded", held != NULL);
    if (held) {
        cJSON_AddNumberToObject(o, "max_model_len", m->context);
        srv_release(s, held);
    }
    return o;
}

void srv_handle_models(srv_server *s, const char *url, srv_reply *r) {
    const char *rest = url + strlen("/v1/models");
    if (*rest == '/' && rest[1]) {
        for (int i = 0; i < s->n_models; i++)
            if (!strcmp(rest + 1, s->models[i].name)) {
                srv_reply_json(r, 200, model_object(s, &s->models[i], NULL));
                return;
            }
        cJSON *named = cJSON_CreateObject();
        const char *adapter = NULL;
        if (named && cJSON_AddStringToObject(named, "model", rest + 1))
            adapter = srv_adapter_of(s, named);
        cJSON_Delete(named);
        if (adapter) {
            srv_reply_json(r, 200, model_object(s, &s->models[0], adapter));
            return;
        }
        srv_error err;
        srv_fail(&err, 404, "model", "The model '%.200s' does not exist", rest + 1);
        err.code = "model_not_found";
        srv_reply_error(r, &err);
        return;
    }
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "object", "list");
    cJSON *data = cJSON_AddArrayToObject(o, "data");
    for (int i = 0; i < s->n_models; i++) cJSON_AddItemToArray(data, model_object(s, &s->models[i], NULL));
    for (int i = 0; i < s->o.n_adapters; i++) /* -m only: the one model with each adapter */
        cJSON_AddItemToArray(data, model_object(s, &s->models[0], s->adapter_names[i]));
    srv_reply_json(r, 200, o);
}

void srv_handle_tokenize(srv_server *s, const char *body, size_t len, srv_reply *r) {
    srv_error err = {0};
    srv_media md = {0}; /* the messages' images: their placeholders expanded */
    cJSON *j = srv_parse_object(body, len, &err);
    srv_model *m = j ? srv_acquire(s, j, &err) : NULL;
    if (!m) {
        cJSON_Delete(j);
        srv_reply_error(r, &err);
        return;
    }
    const cJSON *prompt = cJSON_GetObjectItemCaseSensitive(j, "prompt");
    const cJSON *msgs = cJSON_GetObjectItemCaseSensitive(j, "messages");
    static const char *const keys[] = {"model", "prompt", "messages", "add_special_tokens",
                                       "add_generation_prompt", "tools", NULL};
    if (!srv_known_keys(j, keys, &err)) goto out;
    const cJSON *asp = cJSON_GetObjectItemCaseSensitive(j, "add_special_tokens");
    const cJSON *agp = cJSON_GetObjectItemCaseSensitive(j, "add_generation_prompt");
    if (asp && !cJSON_IsBool(asp)) {
        srv_fail(&err, 400, "add_special_tokens", "'add_special_tokens' must be true or false");
        goto out;
    }
    if (agp && !cJSON_IsBool(agp)) {
        srv_fail(&err, 400, "add_generation_prompt", "'add_generation_prompt' must be true or false");
        goto out;
    }
    if (!!prompt == !!msgs) {
        srv_fail(&err, 400, prompt ? "messages" : "prompt", "give exactly one of 'prompt' and 'messages'");
        goto out;
    }
    char *text = NULL, *rendered = NULL;
    bool special;
    if (prompt) {
        if (!cJSON_IsString(prompt)) {
            srv_fail(&err, 400, "prompt", "'prompt' must be a string");
            goto out;
        }
        text = prompt->valuestring;
        special = asp ? cJSON_IsTrue(asp) : true;
    } else {
        if (!cJSON_IsArray(msgs)) {
            srv_fail(&err, 400, "messages", "'messages' must be an array of messages");
            goto out;
        }
        if (!m->tpl) {
            srv_fail(&err, 400, "messages", "this model has no chat template (%s)", m->tpl_error);
            goto out;
        }
        const cJSON *tools = cJSON_GetObjectItemCaseSensitive(j, "tools");
        if (tools && !cJSON_IsNull(tools) && !cJSON_IsArray(tools)) {
            srv_fail(&err, 400, "tools", "'tools' must be an array");
            goto out;
        }
        char *mj = NULL, *tj = tools && !cJSON_IsNull(tools) ? cJSON_PrintUnformatted(tools) : NULL;
        if (!srv_messages_json(m, msgs, &mj, &md, &err)) {
            cJSON_free(tj);
            goto out;
        }
        og_chat_options co = og_chat_options_default();
        co.add_generation_prompt = agp ? cJSON_IsTrue(agp) : 1;
        co.tools_json = tj;
        og_status *st = og_chat_template_apply(m->tpl, mj, &co, &rendered);
        cJSON_free(mj);
        cJSON_free(tj);
        if (st) {
            srv_fail(&err, og_status_code(st) == OG_ERR_OUT_OF_MEMORY ? 500 : 400, "messages",
                     "the chat template could not render the messages: %s", og_status_message(st));
            og_status_free(st);
            goto out;
        }
        text = rendered;
        special = asp ? cJSON_IsTrue(asp) : false;
    }
    int32_t *ids = NULL;
    size_t n = 0;
    if (md.n_images) {
        bool ok = srv_media_images_prompt(m, &md, text, &ids, &n, &err);
        og_free(rendered);
        if (!ok) goto out;
    }
    og_status *st = md.n_images ? NULL : og_tokenizer_encode(m->tok, text, strlen(text), special,
                                                            &ids, &n);
    if (!md.n_images) og_free(rendered);
    if (st) {
        srv_fail(&err, 400, prompt ? "prompt" : "messages", "tokenizing: %s", og_status_message(st));
        og_status_free(st);
        goto out;
    }
    cJSON *o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "count", (double)n);
    cJSON_AddNumberToObject(o, "max_model_len", m->context);
    cJSON *arr = cJSON_AddArrayToObject(o, "tokens");
    for (size_t i = 0; i < n; i++) cJSON_AddItemToArray(arr, cJSON_CreateNumber(ids[i]));
    og_free(ids);
    srv_media_free(&md);
    cJSON_Delete(j);
    srv_release(s, m);
    srv_reply_json(r, 200, o);
    return;
out:
    srv_media_free(&md);
    cJSON_Delete(j);
    srv_release(s, m);
    srv_reply_error(r, &err);
}

void srv_handle_detokenize(srv_server *s, const char *body, size_t len, srv_reply *r) {
    srv_error err = {0};
    cJSON *j = srv_parse_object(body, len, &err);
    int32_t *ids = NULL;
    srv_model *m = j ? srv_acquire(s, j, &err) : NULL;
    if (!m) goto out;
    static const char *const keys[] = {"model", "tokens", NULL};
    if (!srv_known_keys(j, keys, &err)) goto out;
    const cJSON *toks = cJSON_GetObjectItemCaseSensitive(j, "tokens");
    if (!cJSON_IsArray(toks)) {
        srv_fail(&err, 400, "tokens", "'tokens' must be an array of token ids");
        goto out;
    }
    int n = cJSON_GetArraySize(toks), i = 0;
    if (!(ids = malloc(sizeof *ids * (size_t)(n ? n : 1)))) {
        srv_fail(&err, 500, "", "out of memory");
        goto out;
    }
    const cJSON *v;
    cJSON_ArrayForEach(v, toks) {
        /* the range first: a double beyond int32_t's has no defined conversion */
        if (!cJSON_IsNumber(v) || !(v->valuedouble >= 0 && v->valuedouble < m->vocab) ||
            v->valuedouble != floor(v->valuedouble)) {
            srv_fail(&err, 400, "tokens", "'tokens'[%d] is not a token id in [0, %d)", i, m->vocab);
            goto out;
        }
        ids[i++] = (int32_t)v->valuedouble;
    }
    char *text = NULL;
    size_t text_len = 0;
    og_status *st = og_tokenizer_decode_len(m->tok, ids, (size_t)n, 0, &text, &text_len);
    if (st) {
        srv_fail(&err, 400, "tokens", "decoding: %s", og_status_message(st));
        og_status_free(st);
        goto out;
    }
    cJSON *o = cJSON_CreateObject();
    add_text(o, "prompt", text, text_len);
    og_free(text);
    free(ids);
    cJSON_Delete(j);
    srv_release(s, m);
    srv_reply_json(r, 200, o);
    return;
out:
    free(ids);
    cJSON_Delete(j);
    if (m) srv_release(s, m);
    srv_reply_error(r, &err);
}
