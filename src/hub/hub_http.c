/* The hub's HTTP, over libcurl: a JSON GET, a HEAD for a file's metadata, a resumable
 * download. Nothing here decides what a status means; hub_pull.c does, knowing what was
 * asked for. The token goes only to the endpoint's own host: a file's bytes come from a
 * CDN URL that is already signed, and must not see it. */
#include "hub/hub.h"

#include <curl/curl.h>
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

static pthread_once_t curl_once = PTHREAD_ONCE_INIT;
static void curl_init(void) { curl_global_init(CURL_GLOBAL_DEFAULT); }

void hub_response_free(hub_response *r) {
    free(r->location);
    free(r->body);
    memset(r, 0, sizeof *r);
}

/* Copies a header's value, trimmed of whitespace and CR/LF, into dst. */
static void header_value(const char *v, size_t n, char *dst, size_t cap) {
    while (n && (*v == ' ' || *v == '\t')) v++, n--;
    while (n && (v[n - 1] == '\r' || v[n - 1] == '\n' || v[n - 1] == ' ')) n--;
    if (n >= cap) n = cap - 1;
    memcpy(dst, v, n);
    dst[n] = 0;
}

/* ETag: W/"x" or "x" -> x (huggingface_hub's _normalize_etag). */
static void normalize_etag(char *s) {
    char *p = s;
    if (p[0] == 'W' && p[1] == '/') p += 2;
    while (*p == '"') p++;
    size_t n = strlen(p);
    while (n && p[n - 1] == '"') n--;
    memmove(s, p, n);
    s[n] = 0;
}

typedef struct hdr_state {
    hub_response *r;
    bool linked_etag;      /* X-Linked-Etag seen: it wins over ETag */
    long long linked_size; /* X-Linked-Size, -1 unseen */
    long long length;      /* Content-Length, -1 unseen */
    bool redirect;         /* the response is a 3xx: its Content-Length is not the file's */
} hdr_state;

static size_t on_header(char *line, size_t size, size_t n, void *ctx) {
    hdr_state *h = ctx;
    hub_response *r = h->r;
    size_t len = size * n;
    if (len >= 5 && !strncmp(line, "HTTP/", 5)) {
        /* A new response (after a redirect): its headers replace the last one's. */
        r->commit[0] = r->etag[0] = r->error_code[0] = 0;
        free(r->location);
        r->location = NULL;
        h->linked_etag = false;
        h->linked_size = h->length = -1;
        r->size = -1;
        const char *sp = memchr(line, ' ', len);
        h->redirect = sp && sp[1] == '3';
        return len;
    }
    const char *colon = memchr(line, ':', len);
    if (!colon) return len;
    size_t name_len = (size_t)(colon - line);
    const char *v = colon + 1;
    size_t vn = len - name_len - 1;
    char num[32];
#define IS(name) (name_len == strlen(name) && !strncasecmp(line, name, name_len))
    if (IS("X-Repo-Commit")) {
        header_value(v, vn, r->commit, sizeof r->commit);
    } else if (IS("X-Linked-Etag")) {
        header_value(v, vn, r->etag, sizeof r->etag);
        normalize_etag(r->etag);
        h->linked_etag = true;
    } else if (IS("ETag") && !h->linked_etag) {
        header_value(v, vn, r->etag, sizeof r->etag);
        normalize_etag(r->etag);
    } else if (IS("X-Linked-Size")) {
        header_value(v, vn, num, sizeof num);
        h->linked_size = atoll(num);
    } else if (IS("Content-Length")) {
        header_value(v, vn, num, sizeof num);
        h->length = atoll(num);
    } else if (IS("X-Error-Code")) {
        header_value(v, vn, r->error_code, sizeof r->error_code);
    } else if (IS("Location")) {
        free(r->location);
        r->location = malloc(vn + 1);
        if (r->location) header_value(v, vn, r->location, vn + 1);
    }
#undef IS
    r->size = h->linked_size >= 0 ? h->linked_size : h->redirect ? -1 : h->length;
    return len;
}

/* One request: its handle, headers, the state its header callback fills, curl's message. */
typedef struct request {
    CURL *c;
    struct curl_slist *list;
    hdr_state h;
    char errbuf[CURL_ERROR_SIZE];
} request;

/* Starts q for url with what every request shares (r cleared, then filled as answers
 * come); false, said in r, when curl cannot start. */
static bool request_start(request *q, const hub_env *e, const char *url, hub_response *r,
                          bool follow) {
    memset(r, 0, sizeof *r);
    memset(q, 0, sizeof *q);
    q->h = (hdr_state){r, false, -1, -1, false};
    pthread_once(&curl_once, curl_init);
    CURL *c = q->c = curl_easy_init();
    if (!c) {
        snprintf(r->curl_error, sizeof r->curl_error, "libcurl could not start");
        r->curl_code = -1;
        return false;
    }
    curl_easy_setopt(c, CURLOPT_ERRORBUFFER, q->errbuf);
    curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, follow ? 1L : 0L);
    curl_easy_setopt(c, CURLOPT_MAXREDIRS, 10L);
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_USERAGENT, "onnx-genai");
    curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(c, CURLOPT_HEADERDATA, &q->h);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT, 20L);
    /* A stalled transfer (under 1 byte/s for a minute) ends as a network failure. */
    curl_easy_setopt(c, CURLOPT_LOW_SPEED_LIMIT, 1L);
    curl_easy_setopt(c, CURLOPT_LOW_SPEED_TIME, 60L);
    q->list = curl_slist_append(NULL, "Accept-Encoding: identity");
    size_t ep = strlen(e->endpoint);
    if (e->token && !strncmp(url, e->endpoint, ep) && (url[ep] == '/' || !url[ep])) {
        size_t n = strlen(e->token) + 32;
        char *auth = malloc(n);
        if (auth) {
            snprintf(auth, n, "Authorization: Bearer %s", e->token);
            q->list = curl_slist_append(q->list, auth);
            free(auth);
        }
    }
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, q->list);
    return true;
}

/* Runs q and ends it: the status, or curl's error, into the response. */
static void request_run(request *q) {
    hub_response *r = q->h.r;
    CURLcode rc = curl_easy_perform(q->c);
    r->curl_code = (int)rc;
    if (rc != CURLE_OK)
        snprintf(r->curl_error, sizeof r->curl_error, "%s",
                 q->errbuf[0] ? q->errbuf : curl_easy_strerror(rc));
    curl_easy_getinfo(q->c, CURLINFO_RESPONSE_CODE, &r->status);
    curl_slist_free_all(q->list);
    curl_easy_cleanup(q->c);
    q->c = NULL;
    q->list = NULL;
}

typedef struct membuf {
    char *p;
    size_t n, cap;
} membuf;

static size_t to_mem(char *data, size_t size, size_t n, void *ctx) {
    membuf *m = ctx;
    size_t len = size * n;
    if (m->n + len + 1 > m->cap) {
        size_t cap = (m->n + len + 1) * 2;
        char *p = realloc(m->p, cap);
        if (!p) return 0; /* curl ends the transfer: CURLE_WRITE_ERROR */
        m->p = p;
        m->cap = cap;
    }
    memcpy(m->p + m->n, data, len);
    m->n += len;
    m->p[m->n] = 0;
    return len;
}

void hub_http_get(const hub_env *e, const char *url, hub_response *r) {
    request q;
    if (!request_start(&q, e, url, r, true)) return;
    membuf m = {0};
    curl_easy_setopt(q.c, CURLOPT_WRITEFUNCTION, to_mem);
    curl_easy_setopt(q.c, CURLOPT_WRITEDATA, &m);
    curl_easy_setopt(q.c, CURLOPT_TIMEOUT, 120L);
    request_run(&q);
    r->body = m.p ? m.p : calloc(1, 1);
    r->body_len = m.n;
}

void hub_http_head(const hub_env *e, const char *url, hub_response *r) {
    memset(r, 0, sizeof *r);
    char *cur = strdup(url);
    for (int hop = 0; cur && hop < 10; hop++) {
        hub_response_free(r);
        request q;
        if (!request_start(&q, e, cur, r, false)) break;
        curl_easy_setopt(q.c, CURLOPT_NOBODY, 1L);
        curl_easy_setopt(q.c, CURLOPT_TIMEOUT, 60L);
        request_run(&q);
        /* A relative redirect stays on the hub (a renamed repository): follow it. An
         * absolute one leads to the file's bytes: its headers are the metadata. */
        bool relative = r->status >= 300 && r->status < 400 && r->location && r->location[0] == '/';
        char *next = NULL;
        if (relative) {
            CURLU *u = curl_url();
            if (u && curl_url_set(u, CURLUPART_URL, cur, 0) == CURLUE_OK &&
                curl_url_set(u, CURLUPART_URL, r->location, 0) == CURLUE_OK) {
                char *s = NULL;
                if (curl_url_get(u, CURLUPART_URL, &s, 0) == CURLUE_OK) {
                    next = strdup(s);
                    curl_free(s);
                }
            }
            curl_url_cleanup(u);
        }
        free(cur);
        cur = next;
        if (!relative || r->curl_code) return;
    }
    free(cur);
    if (!r->curl_code) { /* the hops ran out, or a Location could not be followed */
        snprintf(r->curl_error, sizeof r->curl_error, "redirects from %s could not be followed", url);
        r->curl_code = -1;
    }
}

typedef struct dl_state {
    CURL *c;
    FILE *f;
    long long *have;
    hub_sha256 *sha;
    hub_bar *bar;
    bool checked, writing, failed_write;
} dl_state;

static size_t to_file(char *data, size_t size, size_t n, void *ctx) {
    dl_state *d = ctx;
    size_t len = size * n;
    if (!d->checked) {
        d->checked = true;
        long code = 0;
        curl_easy_getinfo(d->c, CURLINFO_RESPONSE_CODE, &code);
        d->writing = code == 200 || code == 206;
        if (code == 200 && *d->have > 0) {
            /* The server sent the whole file, not the rest: start over. */
            if (fflush(d->f) != 0 || ftruncate(fileno(d->f), 0) != 0) return 0;
            rewind(d->f);
            *d->have = 0;
            hub_sha256_init(d->sha);
        }
    }
    if (!d->writing) return len; /* an error page: the status says it */
    if (fwrite(data, 1, len, d->f) != len) {
        d->failed_write = true;
        return 0;
    }
    hub_sha256_update(d->sha, data, len);
    *d->have += (long long)len;
    hub_bar_update(d->bar, *d->have);
    return len;
}

void hub_http_download(const hub_env *e, const char *url, FILE *f, long long *have,
                       hub_sha256 *sha, hub_bar *bar, hub_response *r) {
    request q;
    if (!request_start(&q, e, url, r, true)) return;
    char range[48];
    dl_state d = {q.c, f, have, sha, bar, false, false, false};
    curl_easy_setopt(q.c, CURLOPT_WRITEFUNCTION, to_file);
    curl_easy_setopt(q.c, CURLOPT_WRITEDATA, &d);
    if (*have > 0) {
        snprintf(range, sizeof range, "%lld-", *have);
        curl_easy_setopt(q.c, CURLOPT_RANGE, range);
    }
    request_run(&q);
    if (d.failed_write) {
        snprintf(r->curl_error, sizeof r->curl_error, "writing the file failed: %s", strerror(errno));
        if (!r->curl_code) r->curl_code = -1;
    }
}
