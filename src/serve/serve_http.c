/* The HTTP side: libmicrohttpd with a thread per connection (a handler may block while
 * its answer is generated), request bodies gathered up to --max-body (a larger one is
 * read to its end and dropped, then answered 413, so the client sees the status rather
 * than a reset), routing, and the server's life: listen first (requests get 503 while
 * the model loads), serve until SIGINT/SIGTERM, then stop the connections before the
 * engine. */
#include "serve/serve_internal.h"

#include "base/status.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

const char *const srv_route_names[SRV_ROUTES] = {
    "/v1/chat/completions", "/v1/completions", "/v1/models", "/health", "/metrics",
    "/tokenize", "/detokenize", "/", "other"};

serve_options serve_options_default(void) {
    serve_options o = {0};
    o.host = "127.0.0.1";
    o.port = 8080;
    o.max_body = 8u << 20;
    o.max_connections = 512;
    o.max_n = 16;
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

/* What one connection's current request has gathered. */
typedef struct srv_conn {
    srv_buf body;
    size_t seen;
    bool too_large;
} srv_conn;

static srv_route route_of(const char *url) {
    if (!strcmp(url, "/v1/chat/completions")) return SRV_CHAT;
    if (!strcmp(url, "/v1/completions")) return SRV_COMPLETIONS;
    if (!strcmp(url, "/v1/models") || !strncmp(url, "/v1/models/", 11)) return SRV_MODELS;
    if (!strcmp(url, "/health")) return SRV_HEALTH;
    if (!strcmp(url, "/metrics")) return SRV_METRICS;
    if (!strcmp(url, "/tokenize")) return SRV_TOKENIZE;
    if (!strcmp(url, "/detokenize")) return SRV_DETOKENIZE;
    if (!strcmp(url, "/") || !strcmp(url, "/index.html")) return SRV_PAGE;
    return SRV_OTHER;
}

static const char *route_method(srv_route r) {
    switch (r) {
    case SRV_CHAT: case SRV_COMPLETIONS: case SRV_TOKENIZE: case SRV_DETOKENIZE: return "POST";
    default: return "GET";
    }
}

static enum MHD_Result send_reply(srv_server *s, struct MHD_Connection *c, srv_route rt, srv_reply *r) {
    srv_count(s, rt, r->status);
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
    if (r->type) MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, r->type);
    MHD_add_response_header(resp, "Access-Control-Allow-Origin", "*");
    if (r->stream) {
        MHD_add_response_header(resp, MHD_HTTP_HEADER_CACHE_CONTROL, "no-cache");
        MHD_add_response_header(resp, "X-Accel-Buffering", "no");
    }
    if (r->retry_after > 0) {
        char v[16];
        snprintf(v, sizeof v, "%d", r->retry_after);
        MHD_add_response_header(resp, MHD_HTTP_HEADER_RETRY_AFTER, v);
    }
    enum MHD_Result ret = MHD_queue_response(c, (unsigned)r->status, resp);
    MHD_destroy_response(resp);
    return ret;
}

static void health(srv_server *s, srv_reply *r) {
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
            cJSON_AddStringToObject(o, "mode", eng_batched(m->eng) ? "batched" : "per-sequence");
            srv_release(s, m);
        }
        status = state == SRV_READY ? 200 : 503;
    }
    srv_reply_json(r, status, o);
    if (status == 503) r->retry_after = 5;
}

static void dispatch(srv_server *s, struct MHD_Connection *c, srv_conn *k, srv_route rt,
                     const char *url, const char *method, srv_reply *r) {
    srv_error err;
    const char *body = k->body.p ? k->body.p : "";
    size_t len = k->body.n;
    if (k->too_large) {
        srv_fail(&err, 413, "", "the request body has %zu bytes; this server takes at most %zu "
                 "(--max-body)", k->seen, s->o.max_body);
        srv_reply_error(r, &err);
        return;
    }
    if (rt == SRV_OTHER) {
        srv_fail(&err, 404, "", "Unknown route: %.16s %.200s", method, url);
        srv_reply_error(r, &err);
        return;
    }
    bool allowed = !strcmp(method, route_method(rt)) ||
                   (!strcmp(method, "HEAD") && !strcmp(route_method(rt), "GET"));
    if (!allowed) {
        srv_fail(&err, 405, "", "%.200s takes %s, not %.16s", srv_route_names[rt], route_method(rt),
                 method);
        srv_reply_error(r, &err);
        return;
    }
    switch (rt) {
    case SRV_HEALTH: health(s, r); return;
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
    default: return;
    }
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url,
                                  const char *method, const char *version, const char *upload,
                                  size_t *upload_size, void **ctx) {
    srv_server *s = cls;
    srv_conn *k = *ctx;
    if (!k) {
        if (!(k = calloc(1, sizeof *k))) return MHD_NO;
        *ctx = k;
        return MHD_YES;
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
    srv_route rt = route_of(url);
    srv_reply r = {0};
    if (!strcmp(method, "OPTIONS")) { /* a browser's CORS preflight */
        struct MHD_Response *resp = MHD_create_response_from_buffer(0, (void *)"", MHD_RESPMEM_PERSISTENT);
        if (!resp) return MHD_NO;
        MHD_add_response_header(resp, "Access-Control-Allow-Origin", "*");
        MHD_add_response_header(resp, "Access-Control-Allow-Methods", "GET, POST, OPTIONS");
        MHD_add_response_header(resp, "Access-Control-Allow-Headers", "Content-Type, Authorization");
        enum MHD_Result ret = MHD_queue_response(c, 204, resp);
        MHD_destroy_response(resp);
        srv_count(s, rt, 204);
        return ret;
    }
    if (k->body.oom) {
        srv_error err;
        srv_fail(&err, 500, "", "out of memory for the request body");
        srv_reply_error(&r, &err);
    } else {
        dispatch(s, c, k, rt, url, method, &r);
    }
    return send_reply(s, c, rt, &r);
}

static void on_completed(void *cls, struct MHD_Connection *c, void **ctx,
                         enum MHD_RequestTerminationCode why) {
    srv_conn *k = *ctx;
    if (!k) return;
    srv_buf_free(&k->body);
    free(k);
    *ctx = NULL;
}

int serve_main(const serve_options *o) {
    srv_server *s = calloc(1, sizeof *s);
    if (!s) {
        fprintf(stderr, "onnx-genai serve: out of memory\n");
        return 1;
    }
    s->o = *o;
    pthread_mutex_init(&s->mu, NULL);
    int rc = 1;
    bool models = srv_models_init(s);
    /* Signals go to sigwait below: every thread started from here on has them blocked. */
    sigset_t sigs;
    sigemptyset(&sigs);
    sigaddset(&sigs, SIGINT);
    sigaddset(&sigs, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &sigs, NULL);
    signal(SIGPIPE, SIG_IGN);

    struct sockaddr_in a4 = {0};
    struct sockaddr_in6 a6 = {0};
    struct sockaddr *addr;
    unsigned flags = MHD_USE_THREAD_PER_CONNECTION | MHD_USE_POLL_INTERNAL_THREAD | MHD_USE_ERROR_LOG;
    if (inet_pton(AF_INET, o->host, &a4.sin_addr) == 1) {
        a4.sin_family = AF_INET;
        a4.sin_port = htons((uint16_t)o->port);
        addr = (struct sockaddr *)&a4;
    } else if (inet_pton(AF_INET6, o->host, &a6.sin6_addr) == 1) {
        a6.sin6_family = AF_INET6;
        a6.sin6_port = htons((uint16_t)o->port);
        addr = (struct sockaddr *)&a6;
        flags |= MHD_USE_IPv6;
    } else {
        fprintf(stderr, "onnx-genai serve: --host '%s' is not a numeric IPv4 or IPv6 address\n", o->host);
        goto out;
    }
    if (!models) goto out;
    s->daemon = MHD_start_daemon(flags, (uint16_t)o->port, NULL, NULL, on_request, s,
                                 MHD_OPTION_SOCK_ADDR, addr,
                                 MHD_OPTION_NOTIFY_COMPLETED, on_completed, s,
                                 MHD_OPTION_CONNECTION_LIMIT, (unsigned)o->max_connections,
                                 MHD_OPTION_CONNECTION_TIMEOUT, 600u,
                                 MHD_OPTION_END);
    if (!s->daemon) {
        fprintf(stderr, "onnx-genai serve: cannot listen on %s port %d (in use, or not an "
                "address of this machine)\n", o->host, o->port);
        goto out;
    }
    const union MHD_DaemonInfo *di = MHD_get_daemon_info(s->daemon, MHD_DAEMON_INFO_BIND_PORT);
    int port = di ? di->port : o->port;
    printf(strchr(o->host, ':') ? "listening on http://[%s]:%d\n" : "listening on http://%s:%d\n",
           o->host, port);
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
        printf("ready: model '%s', context %d, %s%s%s\n", m->name, m->context,
               eng_batched(m->eng) ? "continuous batching" : "per-sequence mode",
               eng_batched(m->eng) ? "" : ": ", eng_mode_note(m->eng));
        if (!m->tpl) printf("no chat template (%s): /v1/chat/completions answers 400\n", m->tpl_error);
        else printf("tool calls: %s\n", m->tools_fmt == TC_NONE
                                             ? "none taught by the chat template (text stays in content)"
                                             : tc_format_name(m->tools_fmt));
    } else {
        printf("ready: %d models in %s, each loaded on its first request\n", s->n_models, o->models_dir);
    }
    fflush(stdout);

    int sig = 0;
    sigwait(&sigs, &sig);
    printf("stopping (%s)\n", sig == SIGINT ? "SIGINT" : "SIGTERM");
    fflush(stdout);
    rc = 0;
out:
    atomic_store(&s->stopping, true); /* handlers waiting on the engine give up */
    if (s->daemon) MHD_stop_daemon(s->daemon);
    if (s->models) srv_models_free(s);
    pthread_mutex_destroy(&s->mu);
    free(s);
    return rc;
}
