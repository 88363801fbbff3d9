/* A growable byte buffer for responses and events; once out of memory it stays so
 * (srv_buf_take then gives NULL), so callers check once at the end. Also srv_fail. */
#include "serve/serve_internal.h"

#include "base/json_str.h"

#include <cjson/cJSON.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void srv_buf_add(srv_buf *b, const char *s, size_t n) {
    if (b->oom) return;
    if (b->n + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap < b->n + n + 1) cap *= 2;
        char *p = realloc(b->p, cap);
        if (!p) {
            b->oom = true;
            return;
        }
        b->p = p;
        b->cap = cap;
    }
    if (n) memcpy(b->p + b->n, s, n);
    b->n += n;
    b->p[b->n] = 0;
}

void srv_buf_str(srv_buf *b, const char *s) { srv_buf_add(b, s, strlen(s)); }

void srv_buf_printf(srv_buf *b, const char *fmt, ...) {
    char small[256];
    va_list ap;
    va_start(ap, fmt);
    int k = vsnprintf(small, sizeof small, fmt, ap);
    va_end(ap);
    if (k < 0) return;
    if ((size_t)k < sizeof small) {
        srv_buf_add(b, small, (size_t)k);
        return;
    }
    char *big = malloc((size_t)k + 1);
    if (!big) {
        b->oom = true;
        return;
    }
    va_start(ap, fmt);
    vsnprintf(big, (size_t)k + 1, fmt, ap);
    va_end(ap);
    srv_buf_add(b, big, (size_t)k);
    free(big);
}

char *srv_buf_take(srv_buf *b, size_t *n) {
    if (b->oom) {
        srv_buf_free(b);
        return NULL;
    }
    if (!b->p) srv_buf_add(b, "", 0);
    if (b->oom) return NULL;
    char *p = b->p;
    if (n) *n = b->n;
    memset(b, 0, sizeof *b);
    return p;
}

void srv_buf_free(srv_buf *b) {
    free(b->p);
    memset(b, 0, sizeof *b);
}

void srv_buf_clear(srv_buf *b) {
    b->n = 0;
    if (b->p) b->p[0] = 0;
}

static void put_buf(void *ctx, const char *p, size_t n) { srv_buf_add(ctx, p, n); }

void srv_buf_json_string(srv_buf *b, const char *s, size_t n) { json_str_write(s, n, put_buf, b); }

cJSON *srv_json_text(const char *s, size_t n) {
    char *t = json_str_dup(s, n, NULL);
    cJSON *j = t ? cJSON_CreateRaw(t) : NULL;
    free(t);
    return j;
}

void srv_fail(srv_error *e, int status, const char *param, const char *fmt, ...) {
    e->status = status;
    e->type = status == 404 ? "not_found_error"
            : status == 429 ? "rate_limit_error"
            : status == 503 ? "service_unavailable_error"
            : status >= 500 ? "server_error"
                            : "invalid_request_error";
    e->code = NULL;
    e->retry_after = 0;
    snprintf(e->param, sizeof e->param, "%s", param ? param : "");
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(e->msg, sizeof e->msg, fmt, ap);
    va_end(ap);
}

void srv_fail_status(srv_error *e, og_status *st, const char *param, const char *what) {
    og_code code = og_status_code(st);
    int status = code == OG_ERR_OUT_OF_MEMORY || code == OG_ERR_RUNTIME ? 500 : 400;
    srv_fail(e, status, status == 400 ? param : "", "%s: %s", what, og_status_message(st));
    og_status_free(st);
}
