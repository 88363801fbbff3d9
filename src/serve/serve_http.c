/* The HTTP side: libmicrohttpd with a thread per connection (a handler may block while
 * its answer is generated), fed by the gate (serve_gate.c), which owns the listening
 * socket and hands over connections whose first request header has arrived whole. Here:
 * what is checked once a request's header is in (CORS preflight, the API key, route and
 * method, Content-Length against --max-body, the JSON content type), all answered before
 * any of the body is read; bodies gathered up to --max-body (a chunked one that grows
 * beyond is read to its end and dropped, then answered 413, so the client sees the status
 * rather than a reset) and checked to be UTF-8; routing; and the server's life: listen
 * first (requests get 503 while the model loads), serve until SIGINT/SIGTERM, then stop
 * the gate, the connections, and the engine. */
#include "serve/serve_internal.h"

#include "base/status.h"
#include "tokenizer/tok_internal.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>

const char *const srv_route_names[SRV_ROUTES] = {
    "/v1/chat/completions", "/v1/completions", "/v1/models", "/health", "/metrics",
    "/tokenize", "/detokenize", "/", "/v1/messages", "/v1/responses", "/props", "/slots", "/v1/embeddings",
    "/slots/{id}", "other"};

serve_options serve_options_default(void) {
    serve_options o = {0};
    o.host = "127.0.0.1";
    o.port = 8080;
    o.max_body = 8u << 20;
    o.max_connections = 512;
    o.max_per_address = 256;
    o.read_timeout = 10;
    o.max_n = 16;
    o.drain_timeout = 30;
    o.embed_normalize = -1;
    o.eng = eng_options_default();
    o.model = og_model_options_default();
    return o;
}

void srv_count(srv_server *s, srv_route r, int status) {
    if (status < 100 || status >= 600) return;
    pthread_mutex_lock(&s->mu);
    s->responses[r][status]++;
    pthread_mutex_unlock(&s->mu);
}

/* How long an answer may go without sending a byte before libmicrohttpd closes the
 * connection: a streamed request waiting its turn in a long queue sends nothing. */
enum { SRV_ANSWER_TIMEOUT_S = 600 };

/* What one connection's current request has gathered. */
typedef struct srv_conn {
    srv_buf body;
    size_t seen;
    bool too_large;
    srv_reply early; /* an answer decided from the header alone (status 0: none) */
    srv_reqlog *log; /* its --log-format line */
} srv_conn;

static srv_route route_of(const char *url) {
    if (!strcmp(url, "/v1/chat/completions")) return SRV_CHAT;
    if (!strcmp(url, "/v1/completions")) return SRV_COMPLETIONS;
    if (!strcmp(url, "/v1/models") || !strncmp(url, "/v1/models/", 11)) return SRV_MODELS;
    if (srv_probe_of(url, strlen(url)) != SRV_PROBE_NONE) return SRV_HEALTH;
    if (!strcmp(url, "/metrics")) return SRV_METRICS;
    if (!strcmp(url, "/tokenize")) return SRV_TOKENIZE;
    if (!strcmp(url, "/detokenize")) return SRV_DETOKENIZE;
    if (!strcmp(url, "/") || !strcmp(url, "/index.html")) return SRV_PAGE;
    if (!strcmp(url, "/v1/messages")) return SRV_MESSAGES;
    if (!strcmp(url, "/v1/responses")) return SRV_RESPONSES;
    if (!strcmp(url, "/props")) return SRV_PROPS;
    if (!strcmp(url, "/slots")) return SRV_SLOTS;
    if (!strcmp(url, "/v1/embeddings")) return SRV_EMBEDDINGS;
    if (!strncmp(url, "/slots/", 7)) return SRV_SLOT_ACTION;
    return SRV_OTHER;
}

static const char *route_method(srv_route r) {
    switch (r) {
    case SRV_CHAT: case SRV_COMPLETIONS: case SRV_TOKENIZE: case SRV_DETOKENIZE: case SRV_MESSAGES:
    case SRV_RESPONSES: case SRV_EMBEDDINGS: case SRV_SLOT_ACTION: return "POST";
    default: return "GET";
    }
}

int srv_reply_headers(const srv_server *s, const srv_reply *r, srv_header h[SRV_MAX_HEADERS],
                      char retry[16]) {
    int n = 0;
    if (r->type) h[n++] = (srv_header){MHD_HTTP_HEADER_CONTENT_TYPE, r->type};
    if (s->o.cors_origin) {
        h[n++] = (srv_header){"Access-Control-Allow-Origin", s->o.cors_origin};
        h[n++] = (srv_header){"Vary", "Origin"}; /* caches keep one answer per origin */
    }
    if (r->status == 401) h[n++] = (srv_header){"WWW-Authenticate", "Bearer"};
    if (r->retry_after > 0) {
        snprintf(retry, 16, "%d", r->retry_after);
        h[n++] = (srv_header){MHD_HTTP_HEADER_RETRY_AFTER, retry};
    }
    return n;
}

static enum MHD_Result send_reply(srv_server *s, struct MHD_Connection *c, srv_route rt, srv_reply *r) {
    srv_count(s, rt, r->status);
    srv_log_status(r->log, r->status);
    if (rt == SRV_MESSAGES) srv_messages_error_shape(r); /* Anthropic's clients read their own */
    if (r->status == 499) { /* the client left: nothing to send, close */
        free(r->body);
        return MHD_NO;
    }
    struct MHD_Response *resp = r->stream;
    if (!resp) {
        resp = r->body ? MHD_create_response_from_buffer(r->len, r->body, MHD_RESPMEM_MUST_FREE)
                       : MHD_create_response_from_buffer(0, (void *)"", MHD_RESPMEM_PERSISTENT);
        if (!resp) {
            free(r->body);
            return MHD_NO;
        }
    }
    srv_header h[SRV_MAX_HEADERS];
    char retry[16];
    int nh = srv_reply_headers(s, r, h, retry);
    for (int i = 0; i < nh; i++) MHD_add_response_header(resp, h[i].name, h[i].value);
    if (r->stream) {
        MHD_add_response_header(resp, MHD_HTTP_HEADER_CACHE_CONTROL, "no-cache");
        MHD_add_response_header(resp, "X-Accel-Buffering", "no");
    }
    enum MHD_Result ret = MHD_queue_response(c, (unsigned)r->status, resp);
    MHD_destroy_response(resp);
    return ret;
}

void srv_health(srv_server *s, srv_reply *r) {
    cJSON *o = cJSON_CreateObject();
    int status = 200;
    if (s->multi) {
        int loaded = 0;
        for (int i = 0; i < s->n_models; i++) loaded += srv_model_state(s, &s->models[i]) == SRV_READY;
        cJSON_AddStringToObject(o, "status", "ok");
        cJSON_AddNumberToObject(o, "models", s->n_models);
        cJSON_AddNumberToObject(o, "loaded", loaded);
    } else {
        int state = srv_model_state(s, &s->models[0]);
        cJSON_AddStringToObject(o, "status", state == SRV_READY ? "ok" : state == SRV_LOADING ? "loading" : "error");
        cJSON_AddStringToObject(o, "model", s->models[0].name);
        srv_model *m = srv_try_use(s, 0);
        if (m) {
            cJSON_AddStringToObject(o, "mode", !m->eng ? "embeddings" : eng_batched(m->eng) ? "batched" : "per-sequence");
            srv_release(s, m);
        }
        status = state == SRV_READY ? 200 : 503;
    }
    if (atomic_load(&s->draining)) {
        cJSON_ReplaceItemInObject(o, "status", cJSON_CreateString("draining"));
        status = 503;
    }
    srv_reply_json(r, status, o);
    if (status == 503) r->retry_after = 5;
}

srv_probe srv_probe_of(const char *path, size_t len) {
    static const struct {
        const char *path;
        srv_probe p;
    } probes[] = {{"/health", SRV_PROBE_HEALTH}, {"/health/live", SRV_PROBE_LIVE},
                  {"/health/ready", SRV_PROBE_READY}};
    for (size_t i = 0; i < sizeof probes / sizeof probes[0]; i++)
        if (len == strlen(probes[i].path) && !memcmp(path, probes[i].path, len)) return probes[i].p;
    return SRV_PROBE_NONE;
}

void srv_answer_probe(srv_server *s, srv_probe p, srv_reply *r) {
    if (p == SRV_PROBE_LIVE) {
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "status", "alive");
        srv_reply_json(r, 200, o);
        return;
    }
    srv_health(s, r); /* readiness: /health's status code (ready, not loading or draining) */
}

static bool json_route(srv_route r) {
    return r == SRV_CHAT || r == SRV_COMPLETIONS || r == SRV_TOKENIZE || r == SRV_DETOKENIZE ||
           r == SRV_MESSAGES || r == SRV_RESPONSES || r == SRV_EMBEDDINGS;
}

/* The routes that generate, refused while draining. */
static bool generating_route(srv_route r) {
    return r == SRV_CHAT || r == SRV_COMPLETIONS || r == SRV_MESSAGES || r == SRV_RESPONSES ||
           r == SRV_EMBEDDINGS;
}

/* Byte-equal in a time that does not depend on where they differ, so that the key cannot
 * be found a byte at a time by timing the 401s. */
static bool same_secret(const char *a, size_t na, const char *b, size_t nb) {
    unsigned char d = na != nb;
    for (size_t i = 0; i < na; i++) d |= (unsigned char)(a[i] ^ b[i % (nb ? nb : 1)]);
    return !d;
}

/* "Authorization: Bearer KEY" with the server's key, or "x-api-key: KEY" as Anthropic's
 * clients send it. */
static bool authorized(const srv_server *s, struct MHD_Connection *c) {
    const char *v = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_AUTHORIZATION);
    if (!v || strncasecmp(v, "Bearer ", 7)) {
        v = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "x-api-key");
        if (!v) return false;
    } else {
        v += 7;
    }
    for (; *v == ' '; v++) {}
    size_t n = strlen(v);
    while (n && (v[n - 1] == ' ' || v[n - 1] == '\t')) n--;
    return same_secret(v, n, s->o.api_key, strlen(s->o.api_key));
}

/* application/json, with at most a charset parameter that says UTF-8 (RFC 8259: JSON
 * between systems is UTF-8). */
static bool json_type(const char *v) {
    if (!v) return false;
    while (*v == ' ') v++;
    if (strncasecmp(v, "application/json", 16)) return false;
    v += 16;
    while (*v == ' ' || *v == '\t') v++;
    if (!*v) return true;
    if (*v++ != ';') return false;
    while (*v == ' ' || *v == '\t') v++;
    if (strncasecmp(v, "charset=", 8)) return false;
    v += 8;
    if (*v == '"') v++;
    if (strncasecmp(v, "utf-8", 5)) return false;
    v += 5;
    if (*v == '"') v++;
    while (*v == ' ' || *v == '\t') v++;
    return !*v;
}

/* What the header alone decides, before any of the body is read: false with r set to the
 * answer. A preflight is answered whole here; the rest are refusals. */
static bool admit(srv_server *s, struct MHD_Connection *c, srv_route rt, const char *url,
                  const char *method, srv_reply *r) {
    srv_error err;
    if (!strcmp(method, "OPTIONS") && s->o.cors_origin) { /* a browser's CORS preflight */
        r->status = 204;
        return false;
    }
    if (s->o.api_key && rt != SRV_HEALTH && !authorized(s, c)) {
        srv_fail(&err, 401, "", "a valid API key is needed: send the header 'Authorization: Bearer KEY' "
                 "(or 'x-api-key: KEY') with the key this server was started with (--api-key)");
        err.code = "invalid_api_key";
        srv_reply_error(r, &err);
        return false;
    }
    if (atomic_load(&s->draining) && generating_route(rt)) {
        srv_fail(&err, 503, "", "the server is shutting down (SIGTERM): send the request to "
                 "another instance");
        srv_reply_error(r, &err);
        r->retry_after = 5;
        return false;
    }
    if (rt == SRV_OTHER) {
        srv_fail(&err, 404, "", "Unknown route: %.16s %.200s", method, url);
        srv_reply_error(r, &err);
        return false;
    }
    bool allowed = !strcmp(method, route_method(rt)) ||
                   (!strcmp(method, "HEAD") && !strcmp(route_method(rt), "GET"));
    if (!allowed) {
        srv_fail(&err, 405, "", "%.200s takes %s, not %.16s", srv_route_names[rt], route_method(rt),
                 method);
        srv_reply_error(r, &err);
        return false;
    }
    const char *length = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
    if (length) {
        errno = 0;
        char *end;
        unsigned long long n = strtoull(length, &end, 10);
        if (!errno && end != length && n > s->o.max_body) {
            srv_fail(&err, 413, "", "the request body has %llu bytes; this server takes at most %zu "
                     "(--max-body)", n, s->o.max_body);
            srv_reply_error(r, &err);
            return false;
        }
    }
    /* a slot action's body is optional (erase has none) */
    bool body_announced = (length && strtoull(length, NULL, 10) > 0) ||
                          MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_TRANSFER_ENCODING);
    if ((json_route(rt) || (rt == SRV_SLOT_ACTION && body_announced)) &&
        !json_type(MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_TYPE))) {
        srv_fail(&err, 415, "", "%s takes a JSON body: send the header 'Content-Type: application/json'",
                 srv_route_names[rt]);
        srv_reply_error(r, &err);
        return false;
    }
    return true;
}

static void dispatch(srv_server *s, struct MHD_Connection *c, srv_conn *k, srv_route rt,
                     const char *url, srv_reply *r) {
    srv_error err;
    const char *body = k->body.p ? k->body.p : "";
    size_t len = k->body.n;
    if (k->too_large) {
        srv_fail(&err, 413, "", "the request body has %zu bytes; this server takes at most %zu "
                 "(--max-body)", k->seen, s->o.max_body);
        srv_reply_error(r, &err);
        return;
    }
    if (json_route(rt) || rt == SRV_SLOT_ACTION) {
        size_t ok = tok_utf8_valid_prefix(body, len);
        if (ok < len) {
            srv_fail(&err, 400, "", "the request body is not valid UTF-8 (byte %zu)", ok);
            srv_reply_error(r, &err);
            return;
        }
    }
    switch (rt) {
    case SRV_HEALTH: srv_answer_probe(s, srv_probe_of(url, strlen(url)), r); return;
    case SRV_METRICS: srv_handle_metrics(s, r); return;
    case SRV_PAGE:
        r->status = 200;
        r->type = "text/html; charset=utf-8";
        r->body = strdup(srv_page_html);
        r->len = r->body ? strlen(r->body) : 0;
        if (!r->body) r->status = 500;
        return;
    default: break;
    }
    const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
    int fd = ci ? (int)ci->connect_fd : -1;
    switch (rt) {
    case SRV_CHAT: srv_handle_generate(s, true, body, len, fd, r); return;
    case SRV_COMPLETIONS: srv_handle_generate(s, false, body, len, fd, r); return;
    case SRV_MODELS: srv_handle_models(s, url, r); return;
    case SRV_TOKENIZE: srv_handle_tokenize(s, body, len, r); return;
    case SRV_DETOKENIZE: srv_handle_detokenize(s, body, len, r); return;
    case SRV_MESSAGES: srv_handle_dialect(s, &srv_messages_api, body, len, fd, r); return;
    case SRV_RESPONSES: srv_handle_dialect(s, &srv_responses_api, body, len, fd, r); return;
    case SRV_PROPS: srv_handle_props(s, c, r); return;
    case SRV_SLOTS: srv_handle_slots(s, c, r); return;
    case SRV_SLOT_ACTION: srv_handle_slot_action(s, c, url, body, len, r); return;
    case SRV_EMBEDDINGS: srv_handle_embeddings(s, body, len, r); return;
    default: return;
    }
}

/* A preflight's answer: the methods and headers a page from the one allowed origin may use. */
static enum MHD_Result send_preflight(srv_server *s, struct MHD_Connection *c, srv_route rt) {
    struct MHD_Response *resp = MHD_create_response_from_buffer(0, (void *)"", MHD_RESPMEM_PERSISTENT);
    if (!resp) return MHD_NO;
    srv_reply r = {.status = 204};
    srv_header h[SRV_MAX_HEADERS];
    char retry[16];
    int nh = srv_reply_headers(s, &r, h, retry);
    for (int i = 0; i < nh; i++) MHD_add_response_header(resp, h[i].name, h[i].value);
    MHD_add_response_header(resp, "Access-Control-Allow-Methods", "GET, POST, OPTIONS");
    MHD_add_response_header(resp, "Access-Control-Allow-Headers", "Content-Type, Authorization");
    MHD_add_response_header(resp, "Access-Control-Max-Age", "600");
    enum MHD_Result ret = MHD_queue_response(c, 204, resp);
    MHD_destroy_response(resp);
    srv_count(s, rt, 204);
    return ret;
}

/* The gate's record of c (srv_gate_started). */
static void *gate_record(struct MHD_Connection *c) {
    const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    return ci ? ci->socket_context : NULL;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url,
                                  const char *method, const char *version, const char *upload,
                                  size_t *upload_size, void **ctx) {
    srv_server *s = cls;
    srv_conn *k = *ctx;
    srv_route rt = route_of(url);
    if (!k) { /* the header is in, none of the body read */
        srv_gate_request(s->gate, gate_record(c));
        if (!(k = calloc(1, sizeof *k))) return MHD_NO;
        *ctx = k;
        k->log = k->early.log = srv_log_begin(s, c, method, url);
        if (admit(s, c, rt, url, method, &k->early)) return MHD_YES;
        /* Answered now: libmicrohttpd then reads no body and closes the connection
         * after the answer when one was announced. */
        if (k->early.status == 204) return send_preflight(s, c, rt);
        return send_reply(s, c, rt, &k->early);
    }
    if (*upload_size) {
        k->seen += *upload_size;
        if (!k->too_large && k->seen > s->o.max_body) {
            k->too_large = true;
            srv_buf_free(&k->body);
        }
        if (!k->too_large) srv_buf_add(&k->body, upload, *upload_size);
        *upload_size = 0;
        return MHD_YES;
    }
    /* From here the connection waits on the answer, not the client: a request may wait
     * its turn in the queue or a long prefill with nothing sent, which --read-timeout (a
     * bound on the client) must not cut. on_completed puts it back. */
    MHD_set_connection_option(c, MHD_CONNECTION_OPTION_TIMEOUT, SRV_ANSWER_TIMEOUT_S);
    srv_reply r = {.log = k->log};
    if (k->body.oom) {
        srv_error err;
        srv_fail(&err, 500, "", "out of memory for the request body");
        srv_reply_error(&r, &err);
    } else {
        dispatch(s, c, k, rt, url, &r);
    }
    return send_reply(s, c, rt, &r);
}

static void on_completed(void *cls, struct MHD_Connection *c, void **ctx,
                         enum MHD_RequestTerminationCode why) {
    srv_server *s = cls;
    /* kept alive, the connection waits on its client again: no pause longer than
     * --read-timeout, and the gate's deadline for the next header */
    MHD_set_connection_option(c, MHD_CONNECTION_OPTION_TIMEOUT, (unsigned)s->o.read_timeout);
    srv_gate_answered(s->gate, gate_record(c));
    srv_conn *k = *ctx;
    if (!k) return;
    srv_log_end(k->log); /* written now, or by a stream still ending */
    srv_buf_free(&k->body);
    free(k);
    *ctx = NULL;
}

/* Every connection libmicrohttpd has came from the gate, which counts them by address and
 * watches them between requests; its record is the connection's socket context. */
static void on_connection(void *cls, struct MHD_Connection *c, void **socket_ctx,
                          enum MHD_ConnectionNotificationCode code) {
    srv_server *s = cls;
    if (code == MHD_CONNECTION_NOTIFY_STARTED) {
        const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
        *socket_ctx = ci ? srv_gate_started(s->gate, (int)ci->connect_fd) : NULL;
        return;
    }
    srv_gate_released(s->gate, *socket_ctx);
    *socket_ctx = NULL;
}

/* SIGTERM: generation requests are refused from now on (503, readiness fails) while those
 * being answered finish, for at most drain_timeout seconds; a second signal ends it. */
static void drain(srv_server *s, const sigset_t *sigs) {
    atomic_store(&s->draining, true);
    printf("draining (SIGTERM): %lld request(s) being answered, up to %d s\n",
           (long long)atomic_load(&s->in_flight), s->o.drain_timeout);
    fflush(stdout);
    /* a test hook: the drain lasts at least this long, so that a test sees its 503s */
    const char *hold = getenv("OG_SERVE_TEST_DRAIN_HOLD_MS");
    long hold_ms = hold ? atol(hold) : 0;
    struct timespec t0, now, tick = {0, 50 * 1000000L};
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (;;) {
        clock_gettime(CLOCK_MONOTONIC, &now);
        double waited = (double)(now.tv_sec - t0.tv_sec) + 1e-9 * (double)(now.tv_nsec - t0.tv_nsec);
        if (waited >= s->o.drain_timeout) {
            printf("drain timeout: %lld request(s) cut\n", (long long)atomic_load(&s->in_flight));
            break;
        }
        if (atomic_load(&s->in_flight) == 0 && waited * 1e3 >= (double)hold_ms) break;
        if (sigtimedwait(sigs, NULL, &tick) > 0) break; /* a second signal: stop now */
    }
}

int serve_main(const serve_options *o) {
    srv_server *s = calloc(1, sizeof *s);
    if (!s) {
        fprintf(stderr, "onnx-genai serve: out of memory\n");
        return 1;
    }
    s->o = *o;
    pthread_mutex_init(&s->mu, NULL);
    pthread_cond_init(&s->slot_cv, NULL);
    int rc = 1;
    bool models = srv_models_init(s) && srv_slots_init(s);
    /* Signals go to sigwait below: every thread started from here on has them blocked. */
    sigset_t sigs;
    sigemptyset(&sigs);
    sigaddset(&sigs, SIGINT);
    sigaddset(&sigs, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &sigs, NULL);
    signal(SIGPIPE, SIG_IGN);

    struct sockaddr_storage ss;
    socklen_t addr_len = 0;
    char why[256];
    if (!srv_host_address(o->host, o->port, &ss, &addr_len, why, sizeof why)) {
        fprintf(stderr, "onnx-genai serve: --host '%s': %s\n", o->host, why);
        goto out;
    }
    struct sockaddr *addr = (struct sockaddr *)&ss;
    bool loopback = srv_address_loopback(addr);
    if (!models) goto out;
    if (!loopback && !o->api_key)
        fprintf(stderr, "onnx-genai serve: warning: listening on %s, which other machines may reach, "
                "without an API key: anyone who reaches it can use it (give --api-key or "
                "--api-key-file)\n", o->host);
    /* The gate owns the listening socket and hands libmicrohttpd whole request headers
     * (serve_gate.c); libmicrohttpd's own limit is only a backstop above the gate's count,
     * which it may briefly trail while a closed connection's thread ends. Its inactivity
     * timeout (set per connection: SRV_ANSWER_TIMEOUT_S while an answer is made) bounds
     * a stalled body and an idle kept-alive connection. */
    s->gate = srv_gate_open(s, addr, addr_len);
    if (!s->gate) {
        fprintf(stderr, "onnx-genai serve: cannot listen on %s port %d: %s\n", o->host, o->port,
                strerror(errno));
        goto out;
    }
    unsigned flags = MHD_USE_THREAD_PER_CONNECTION | MHD_USE_POLL_INTERNAL_THREAD |
                     MHD_USE_NO_LISTEN_SOCKET | MHD_USE_ITC | MHD_USE_ERROR_LOG;
    s->daemon = MHD_start_daemon(flags, 0, NULL, NULL, on_request, s,
                                 MHD_OPTION_NOTIFY_COMPLETED, on_completed, s,
                                 MHD_OPTION_NOTIFY_CONNECTION, on_connection, s,
                                 MHD_OPTION_CONNECTION_LIMIT, 2u * (unsigned)o->max_connections + 16u,
                                 MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)o->read_timeout,
                                 MHD_OPTION_END);
    if (!s->daemon || !srv_gate_start(s->gate)) {
        fprintf(stderr, "onnx-genai serve: cannot start the HTTP server\n");
        goto out;
    }
    printf(strchr(o->host, ':') ? "listening on http://[%s]:%d\n" : "listening on http://%s:%d\n",
           o->host, srv_gate_port(s->gate));
    fflush(stdout);

    if (!s->multi) {
        /* A test hook: hold the loading state this long, so that a test can see the 503s. */
        const char *delay = getenv("OG_SERVE_TEST_LOAD_DELAY_MS");
        if (delay && atoi(delay) > 0) {
            struct timespec ts = {atoi(delay) / 1000, (long)(atoi(delay) % 1000) * 1000000L};
            nanosleep(&ts, NULL);
        }
        srv_model *m = &s->models[0];
        og_status *st = srv_model_load(s, m);
        pthread_mutex_lock(&s->models_mu);
        m->state = st ? SRV_FAILED : SRV_READY;
        pthread_mutex_unlock(&s->models_mu);
        if (st) {
            fprintf(stderr, "onnx-genai serve: %s: %s\n", m->dir, og_status_message(st));
            og_status_free(st);
            goto out;
        }
        if (!m->eng) {
            printf("ready: model '%s', context %d, embeddings only (%s)\n", m->name, m->context,
                   srv_embedder_how(m->emb));
        } else {
            printf("ready: model '%s', context %d, %s%s%s\n", m->name, m->context,
                   eng_batched(m->eng) ? "continuous batching" : "per-sequence mode",
                   eng_batched(m->eng) ? "" : ": ",
                   srv_model_takes_images(m) || srv_model_takes_audio(m)
                       ? "a package that takes images or audio runs a generator per request"
                       : eng_mode_note(m->eng));
            if (!m->tpl) printf("no chat template (%s): /v1/chat/completions answers 400\n", m->tpl_error);
            else printf("tool calls: %s\n", m->tools_fmt == TC_NONE
                                                 ? "none taught by the chat template (text stays in content)"
                                                 : tc_format_name(m->tools_fmt));
        }
    } else {
        printf("ready: %d models in %s, each loaded on its first request\n", s->n_models, o->models_dir);
    }
    fflush(stdout);

    int sig = 0;
    sigwait(&sigs, &sig);
    if (sig == SIGTERM && o->drain_timeout > 0) drain(s, &sigs);
    printf("stopping (%s)\n", sig == SIGINT ? "SIGINT" : "SIGTERM");
    fflush(stdout);
    rc = 0;
out:
    atomic_store(&s->stopping, true); /* handlers waiting on the engine give up */
    srv_gate_stop(s->gate); /* nothing more is handed over */
    if (s->daemon) MHD_stop_daemon(s->daemon);
    srv_gate_free(s->gate); /* after the daemon: its closing connections report to the gate */
    srv_slots_free(s); /* before the models: it walks n_models of them */
    if (s->models) srv_models_free(s);
    pthread_mutex_destroy(&s->mu);
    pthread_cond_destroy(&s->slot_cv);
    free(s);
    return rc;
}
