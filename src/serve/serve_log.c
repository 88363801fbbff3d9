/* --log-format text|json: one line on stderr per request libmicrohttpd answers (the gate's
 * own answers, /health on a new connection and its refusals, are not requests here): when
 * it came, the client's address, method, path, status, model, prompt and completion
 * tokens, time to the first token and the whole duration. A streamed answer ends after its
 * handler returned, so the record is shared by the connection's request and the stream
 * (a reference each); whichever lets go last writes the line. */
#include "serve/serve_internal.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct srv_reqlog {
    srv_server *srv;
    atomic_int refs;
    struct timespec wall;  /* when the header was in */
    double t0;             /* the same, monotonic */
    char client[64], method[16], path[160], model[128];
    int status;            /* 0: no answer sent (the client left) */
    int prompt_tokens, completion_tokens;
    double t_first;        /* monotonic time of the first token (0: none) */
};

double srv_now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static void address(const struct sockaddr *a, char out[64]) {
    char ip[INET6_ADDRSTRLEN] = "-";
    if (a && a->sa_family == AF_INET)
        inet_ntop(AF_INET, &((const struct sockaddr_in *)a)->sin_addr, ip, sizeof ip);
    else if (a && a->sa_family == AF_INET6)
        inet_ntop(AF_INET6, &((const struct sockaddr_in6 *)a)->sin6_addr, ip, sizeof ip);
    snprintf(out, 64, "%s", ip);
}

srv_reqlog *srv_log_begin(srv_server *s, struct MHD_Connection *c, const char *method, const char *url) {
    if (s->o.log_format == SERVE_LOG_NONE) return NULL;
    srv_reqlog *l = calloc(1, sizeof *l);
    if (!l) return NULL; /* no line for this one rather than no answer */
    l->srv = s;
    atomic_init(&l->refs, 1);
    clock_gettime(CLOCK_REALTIME, &l->wall);
    l->t0 = srv_now();
    const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
    address(ci ? ci->client_addr : NULL, l->client);
    snprintf(l->method, sizeof l->method, "%s", method);
    snprintf(l->path, sizeof l->path, "%s", url);
    return l;
}

void srv_log_job(srv_reqlog *l, const srv_job *j) {
    if (!l || !j->m) return;
    snprintf(l->model, sizeof l->model, "%s", j->m->name);
    l->prompt_tokens = j->prompt_tokens;
    l->completion_tokens = j->completion_tokens;
    l->t_first = j->t_first;
}

void srv_log_status(srv_reqlog *l, int status) {
    if (l) l->status = status;
}

srv_reqlog *srv_log_hold(srv_reqlog *l) {
    if (l) atomic_fetch_add(&l->refs, 1);
    return l;
}

/* Model text and paths may hold anything: quoted as JSON strings in both formats. */
static void write_line(const srv_reqlog *l) {
    double now = srv_now();
    struct tm tm;
    gmtime_r(&l->wall.tv_sec, &tm);
    char when[40];
    size_t n = strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%S", &tm);
    snprintf(when + n, sizeof when - n, ".%03ldZ", l->wall.tv_nsec / 1000000L);
    double ttft = l->t_first > 0 ? 1e3 * (l->t_first - l->t0) : -1;
    srv_buf b = {0};
    bool json = l->srv->o.log_format == SERVE_LOG_JSON;
    if (json) {
        srv_buf_printf(&b, "{\"time\":\"%s\",\"client\":\"%s\",\"method\":", when, l->client);
        srv_buf_json_string(&b, l->method, strlen(l->method));
        srv_buf_str(&b, ",\"path\":");
        srv_buf_json_string(&b, l->path, strlen(l->path));
        srv_buf_printf(&b, ",\"status\":%d,\"model\":", l->status);
        if (l->model[0]) srv_buf_json_string(&b, l->model, strlen(l->model));
        else srv_buf_str(&b, "null");
        srv_buf_printf(&b, ",\"prompt_tokens\":%d,\"completion_tokens\":%d,\"ttft_ms\":", l->prompt_tokens,
                       l->completion_tokens);
        if (ttft >= 0) srv_buf_printf(&b, "%.1f", ttft);
        else srv_buf_str(&b, "null");
        srv_buf_printf(&b, ",\"duration_ms\":%.1f}\n", 1e3 * (now - l->t0));
    } else {
        srv_buf_printf(&b, "%s %s ", when, l->client);
        srv_buf_json_string(&b, l->method, strlen(l->method));
        srv_buf_str(&b, " ");
        srv_buf_json_string(&b, l->path, strlen(l->path));
        srv_buf_printf(&b, " %d model=", l->status);
        if (l->model[0]) srv_buf_json_string(&b, l->model, strlen(l->model));
        else srv_buf_str(&b, "-");
        srv_buf_printf(&b, " prompt_tokens=%d completion_tokens=%d ttft_ms=", l->prompt_tokens,
                       l->completion_tokens);
        if (ttft >= 0) srv_buf_printf(&b, "%.1f", ttft);
        else srv_buf_str(&b, "-");
        srv_buf_printf(&b, " duration_ms=%.1f\n", 1e3 * (now - l->t0));
    }
    if (!b.oom && b.p) fputs(b.p, stderr); /* one call: lines of threads do not interleave */
    srv_buf_free(&b);
}

void srv_log_end(srv_reqlog *l) {
    if (!l || atomic_fetch_sub(&l->refs, 1) != 1) return;
    write_line(l);
    free(l);
}
