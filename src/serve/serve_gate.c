/* The front door: one thread owns the listening socket and every new connection until its
 * first request header has arrived whole, and only then hands it to libmicrohttpd, whose
 * threads (one per connection) are the scarce resource. A client that sends its header
 * slowly, or never, costs a descriptor here for at most --read-timeout seconds (then 408)
 * and never a thread, so a few hundred of them cannot shut the others out.
 *
 * The gate never consumes what it looks at: it peeks (MSG_PEEK) at the bytes that have
 * arrived, so the connection reaches libmicrohttpd as it came. Connections are watched
 * edge-triggered, because peeked bytes stay readable: a level-triggered poll would report
 * them again and again; an edge says that something new arrived.
 *
 * What it refuses, each with an answer and a close, never a silent one: a request line
 * that is not HTTP (400, as soon as a byte shows it), a header above SRV_GATE_HEADER_MAX
 * (431), a header not whole within --read-timeout (408), a connection beyond
 * --max-per-address from one address or beyond --max-connections in the handlers (503
 * with Retry-After). When more connections wait for their headers than descriptors allow,
 * the oldest waiting one is answered 503 to make room: a real client sends its header in
 * one round trip, a slow one is the oldest.
 *
 * GET /health is answered here, from this thread, whatever the handlers are doing: an
 * orchestrator's probe must see a live server even when every handler is busy.
 *
 * A kept-alive connection's next request is read by its handler thread, where a byte now
 * and then would reset libmicrohttpd's inactivity timer for ever. So the gate also watches
 * the connections it handed over: from the end of an answer, the next request's header
 * must be whole within --read-timeout too, or the gate shuts the socket and the handler's
 * thread sees its client gone (a silent close, as for any idle kept-alive connection). */
#include "serve/serve_internal.h"

#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

/* Bytes a request line and header fields may take: what libmicrohttpd's per-connection
 * memory (32 KiB by default) holds with room for its buffers. */
enum { SRV_GATE_HEADER_MAX = 16 * 1024 };
/* Descriptors kept for everything but connections: the model's files, the engine. */
enum { GATE_SPARE_FDS = 64 };
enum { GATE_LISTEN = -1, GATE_WAKE = -2 };

/* A client as a key: an IPv4 address as its IPv6-mapped form, so both families count
 * alike; an IPv6 client by its /64, the block one subscriber is given (counted by the
 * whole address, one client would be 2^64 of them). */
typedef struct gate_addr {
    uint8_t b[16];
} gate_addr;

/* A connection waiting for its header, in accept order (which is deadline order: every
 * deadline is the accept time plus the same timeout). */
typedef struct gate_conn {
    int fd; /* -1: a free slot */
    gate_addr addr;
    struct sockaddr_storage sa;
    socklen_t sa_len;
    int64_t deadline_ms;
    int prev, next; /* the waiting list, or (next) the free list */
} gate_conn;

/* A connection handed to libmicrohttpd: its socket context once it has started, watched
 * between its requests. */
typedef struct gate_held {
    int fd; /* -1: a free slot */
    gate_addr addr;
    bool started;        /* libmicrohttpd reported it (it may do so from its own thread) */
    int64_t deadline_ms; /* the next request's header is due (0: a request is in) */
    bool shut;           /* shut by the watch; the handler's thread closes it */
    int next_free;
} gate_held;

/* Open connections per address (waiting here or in a handler), open addressing with
 * linear probing; n == 0 marks an empty slot. */
typedef struct gate_count {
    gate_addr addr;
    int n;
} gate_count;

struct srv_gate {
    srv_server *s;
    int listen_fd, ep, wake_fd;
    int port;
    pthread_t thread;
    bool started;
    gate_conn *conns; /* cap_waiting slots */
    int cap_waiting;
    int head, tail, free_slot; /* oldest and newest waiting; first free slot */
    int64_t accept_paused_until; /* out of descriptors with none waiting: retry then */
    char *peek;                  /* SRV_GATE_HEADER_MAX bytes */
    pthread_mutex_t mu;          /* held, handed and counts: libmicrohttpd's threads too */
    int handed;                  /* connections libmicrohttpd holds */
    gate_held *held;             /* max_connections slots, one per connection handed */
    int free_held;
    gate_count *counts;
    size_t counts_cap; /* a power of two, at least twice the connections possible */
};

static int64_t now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static gate_addr addr_key(const struct sockaddr *sa) {
    gate_addr a = {{0}};
    if (sa->sa_family == AF_INET6) {
        const struct in6_addr *ip = &((const struct sockaddr_in6 *)sa)->sin6_addr;
        memcpy(a.b, ip, IN6_IS_ADDR_V4MAPPED(ip) ? 16 : 8);
    } else if (sa->sa_family == AF_INET) {
        a.b[10] = a.b[11] = 0xff;
        memcpy(a.b + 12, &((const struct sockaddr_in *)sa)->sin_addr, 4);
    }
    return a;
}

static size_t addr_home(const srv_gate *g, const gate_addr *a) {
    uint64_t h = 1469598103934665603ULL; /* FNV-1a */
    for (int i = 0; i < 16; i++) h = (h ^ a->b[i]) * 1099511628211ULL;
    return (size_t)h & (g->counts_cap - 1);
}

/* Where a is counted, or the empty slot where it would be. */
static size_t addr_slot(const srv_gate *g, const gate_addr *a) {
    size_t i = addr_home(g, a);
    while (g->counts[i].n && memcmp(&g->counts[i].addr, a, sizeof *a))
        i = (i + 1) & (g->counts_cap - 1);
    return i;
}

/* One more connection from a, unless a has max already. Called with mu held. */
static bool count_add(srv_gate *g, const gate_addr *a, int max) {
    gate_count *c = &g->counts[addr_slot(g, a)];
    if (c->n >= max) return false;
    c->addr = *a;
    c->n++;
    return true;
}

/* One connection from a fewer. Called with mu held. A slot emptied is refilled from
 * the run after it (backward shift), so that probing never stops at a false hole. */
static void count_del(srv_gate *g, const gate_addr *a) {
    size_t mask = g->counts_cap - 1, i = addr_slot(g, a);
    if (!g->counts[i].n || --g->counts[i].n) return;
    for (size_t j = (i + 1) & mask; g->counts[j].n; j = (j + 1) & mask) {
        size_t home = addr_home(g, &g->counts[j].addr);
        /* an entry whose home lies cyclically in (i, j] is found before the hole: it stays */
        bool stays = i <= j ? (i < home && home <= j) : (i < home || home <= j);
        if (stays) continue;
        g->counts[i] = g->counts[j];
        g->counts[j].n = 0;
        i = j;
    }
}

/* ---- answers written here ------------------------------------------------------------ */

/* Writes r as a whole HTTP/1.1 response that closes the connection, and frees its body.
 * The socket's send buffer is empty at this point, so the few hundred bytes go at once;
 * a client too slow to take them loses them. */
static void write_reply(srv_gate *g, int fd, srv_route rt, srv_reply *r, bool head_only) {
    srv_count(g->s, rt, r->status);
    srv_header h[SRV_MAX_HEADERS];
    char retry[16];
    int nh = srv_reply_headers(g->s, r, h, retry);
    char top[2048];
    int k = snprintf(top, sizeof top, "HTTP/1.1 %d %s\r\nContent-Length: %zu\r\nConnection: close\r\n",
                     r->status, MHD_get_reason_phrase_for((unsigned)r->status), r->len);
    for (int i = 0; i < nh && k > 0 && (size_t)k < sizeof top; i++)
        k += snprintf(top + k, sizeof top - (size_t)k, "%s: %s\r\n", h[i].name, h[i].value);
    if (k > 0 && (size_t)k + 2 < sizeof top) {
        memcpy(top + k, "\r\n", 2);
        k += 2;
        struct iovec iov[2] = {{top, (size_t)k}, {r->body, head_only ? 0 : r->len}};
        struct msghdr msg = {.msg_iov = iov, .msg_iovlen = 2};
        (void)!sendmsg(fd, &msg, MSG_NOSIGNAL | MSG_DONTWAIT);
    }
    free(r->body);
    r->body = NULL;
}

/* Closes fd after an answer without resetting it: what the client sent and we did not
 * read would make close() send a reset, which can destroy the answer before the client
 * reads it. So the write side is shut (the client sees the end of the answer) and what
 * has arrived is read away first. */
static void close_answered(int fd) {
    shutdown(fd, SHUT_WR);
    char sink[4096];
    for (int i = 0; i < 16 && recv(fd, sink, sizeof sink, MSG_DONTWAIT) > 0; i++) {}
    close(fd);
}

/* Answers an error in OpenAI's shape and closes. */
static void refuse(srv_gate *g, int fd, int status, int retry_after, const char *why) {
    srv_error err;
    srv_fail(&err, status, "", "%s", why);
    err.retry_after = retry_after;
    srv_reply r = {0};
    srv_reply_error(&r, &err);
    write_reply(g, fd, SRV_OTHER, &r, false);
    close_answered(fd);
}

/* ---- reading a request head ---------------------------------------------------------- */

typedef enum { HEAD_MORE, HEAD_BAD, HEAD_WHOLE } head_state;

typedef struct gate_head {
    size_t len;          /* bytes up to and with the empty line ending the header */
    srv_probe probe;     /* GET or HEAD of a health probe (srv_probe_of) */
    bool head_method;
} gate_head;

static bool is_tchar(unsigned char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
           (c && strchr("!#$%&'*+-.^_`|~", c));
}

/* Reads what has arrived of a request: HEAD_BAD as soon as a byte shows that the first
 * line is not `METHOD TARGET HTTP/d.d`, HEAD_WHOLE once the empty line after the fields
 * has arrived (the fields themselves are libmicrohttpd's to judge). */
static head_state scan_head(const char *p, size_t n, gate_head *h) {
    size_t i = 0;
    while (i < n && (p[i] == '\r' || p[i] == '\n')) i++; /* empty lines before: allowed */
    size_t m0 = i;
    while (i < n && is_tchar((unsigned char)p[i])) i++;
    if (i == n) return HEAD_MORE;
    if (p[i] != ' ' || i == m0) return HEAD_BAD;
    size_t method_len = i - m0, t0 = ++i;
    while (i < n && (unsigned char)p[i] > ' ' && (unsigned char)p[i] < 0x7f) i++;
    if (i == n) return HEAD_MORE;
    if (p[i] != ' ' || i == t0) return HEAD_BAD;
    size_t target_len = i - t0;
    static const char version[] = "HTTP/d.d";
    for (size_t k = 0; k < 8; k++) {
        if (++i == n) return HEAD_MORE;
        bool ok = version[k] == 'd' ? p[i] >= '0' && p[i] <= '9' : p[i] == version[k];
        if (!ok) return HEAD_BAD;
    }
    if (++i == n) return HEAD_MORE;
    if (p[i] == '\r' && ++i == n) return HEAD_MORE;
    if (p[i] != '\n') return HEAD_BAD;
    /* the fields: lines up to an empty one */
    for (size_t line = ++i; i < n; i++) {
        if (p[i] != '\n') continue;
        size_t len = i - line;
        if (len == 0 || (len == 1 && p[line] == '\r')) {
            h->len = i + 1;
            const char *method = p + m0, *target = p + t0;
            size_t path_len = target_len;
            for (size_t k = 0; k < target_len; k++)
                if (target[k] == '?') {
                    path_len = k;
                    break;
                }
            h->head_method = method_len == 4 && !memcmp(method, "HEAD", 4);
            h->probe = h->head_method || (method_len == 3 && !memcmp(method, "GET", 3))
                           ? srv_probe_of(target, path_len) : SRV_PROBE_NONE;
            return HEAD_WHOLE;
        }
        line = i + 1;
    }
    return HEAD_MORE;
}

/* ---- the waiting list ------------------------------------------------------------------ */

static void unlink_waiting(srv_gate *g, int i) {
    gate_conn *c = &g->conns[i];
    if (c->prev >= 0) g->conns[c->prev].next = c->next;
    else g->head = c->next;
    if (c->next >= 0) g->conns[c->next].prev = c->prev;
    else g->tail = c->prev;
    epoll_ctl(g->ep, EPOLL_CTL_DEL, c->fd, NULL);
    c->fd = -1;
    c->next = g->free_slot;
    g->free_slot = i;
}

/* The connection leaves the gate closed: its address counts one fewer. */
static void drop(srv_gate *g, int i) {
    gate_addr a = g->conns[i].addr;
    unlink_waiting(g, i);
    pthread_mutex_lock(&g->mu);
    count_del(g, &a);
    pthread_mutex_unlock(&g->mu);
}

static void refuse_waiting(srv_gate *g, int i, int status, int retry_after, const char *why) {
    int fd = g->conns[i].fd;
    drop(g, i);
    refuse(g, fd, status, retry_after, why);
}

static void answer_health(srv_gate *g, int i, const gate_head *h) {
    int fd = g->conns[i].fd;
    drop(g, i);
    (void)!recv(fd, g->peek, h->len, MSG_DONTWAIT); /* the request, consumed: it is answered */
    srv_reply r = {0};
    srv_answer_probe(g->s, h->probe, &r);
    write_reply(g, fd, SRV_HEALTH, &r, h->head_method);
    close_answered(fd);
}

/* Gives back what h holds: its slot, its address's count. Called with mu held. */
static void release_held(srv_gate *g, gate_held *h) {
    g->handed--;
    count_del(g, &h->addr);
    h->fd = -1;
    h->next_free = g->free_held;
    g->free_held = (int)(h - g->held);
}

static void hand_over(srv_gate *g, int i) {
    srv_server *s = g->s;
    gate_conn c = g->conns[i];
    gate_held *h = NULL;
    pthread_mutex_lock(&g->mu);
    /* A record with this descriptor is stale: a connection libmicrohttpd dropped before it
     * started (it reports nothing then), whose number accept has given out again. */
    for (int k = 0; k < s->o.max_connections; k++)
        if (g->held[k].fd == c.fd) release_held(g, &g->held[k]);
    if (g->handed < s->o.max_connections) { /* then a slot is free: handed counts them */
        h = &g->held[g->free_held];
        g->free_held = h->next_free;
        *h = (gate_held){.fd = c.fd, .addr = c.addr, .next_free = -1};
        g->handed++;
    }
    pthread_mutex_unlock(&g->mu);
    if (!h) {
        char why[160];
        snprintf(why, sizeof why, "all %d request slots are busy (--max-connections); try again",
                 s->o.max_connections);
        refuse_waiting(g, i, 503, 1, why);
        return;
    }
    /* Its counts now go with h: the waiting slot is let go without them. */
    unlink_waiting(g, i);
    /* libmicrohttpd closes the socket in any case. A connection that failed before it
     * started is never reported, so its record is given back here; one that started
     * (srv_gate_started, perhaps already) is reported closed (srv_gate_released). */
    if (MHD_add_connection(s->daemon, c.fd, (const struct sockaddr *)&c.sa, c.sa_len) != MHD_YES) {
        pthread_mutex_lock(&g->mu);
        if (h->fd == c.fd && !h->started) release_held(g, h);
        pthread_mutex_unlock(&g->mu);
    }
}

/* Shuts the handed connections whose next request's header is overdue; returns when to
 * look again. */
static int64_t watch_held(srv_gate *g, int64_t now) {
    int64_t next = -1;
    pthread_mutex_lock(&g->mu);
    for (int i = 0; i < g->s->o.max_connections; i++) {
        gate_held *h = &g->held[i];
        if (h->fd < 0 || !h->deadline_ms || h->shut) continue;
        if (h->deadline_ms <= now) {
            /* the fd stays open until srv_gate_released, which needs mu: it is h's */
            shutdown(h->fd, SHUT_RDWR);
            h->shut = true;
        } else if (next < 0 || h->deadline_ms < next) {
            next = h->deadline_ms;
        }
    }
    pthread_mutex_unlock(&g->mu);
    return next;
}

/* Something arrived on waiting connection i (or it was shut: hup): look at all of it again. */
static void on_readable(srv_gate *g, int i, bool hup) {
    ssize_t n = recv(g->conns[i].fd, g->peek, SRV_GATE_HEADER_MAX, MSG_PEEK | MSG_DONTWAIT);
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) return;
    if (n <= 0) { /* gone before its request */
        int fd = g->conns[i].fd;
        drop(g, i);
        close(fd);
        return;
    }
    gate_head h = {0};
    switch (scan_head(g->peek, (size_t)n, &h)) {
    case HEAD_BAD: refuse_waiting(g, i, 400, 0, "this is not an HTTP/1.x request"); return;
    case HEAD_MORE:
        if (n == SRV_GATE_HEADER_MAX) {
            refuse_waiting(g, i, 431, 0, "the request header is larger than 16 KiB");
        } else if (hup) { /* the client shut its side: the rest will never come */
            int fd = g->conns[i].fd;
            drop(g, i);
            close(fd);
        }
        return;
    case HEAD_WHOLE:
        if (h.probe != SRV_PROBE_NONE) answer_health(g, i, &h);
        else hand_over(g, i);
        return;
    }
}

static void expire(srv_gate *g, int64_t now) {
    while (g->head >= 0 && g->conns[g->head].deadline_ms <= now) {
        char why[160];
        snprintf(why, sizeof why, "the request header did not arrive within %d s (--read-timeout)",
                 g->s->o.read_timeout);
        refuse_waiting(g, g->head, 408, 0, why);
    }
}

static void on_accept(srv_gate *g) {
    for (;;) {
        struct sockaddr_storage sa;
        socklen_t len = sizeof sa;
        int fd = accept4(g->listen_fd, (struct sockaddr *)&sa, &len, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0) {
            if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
                /* out of descriptors: the oldest waiting connection makes room, or, with none
                 * waiting (the handlers hold them all), accepting pauses for a moment, so
                 * that the pending connection does not wake this loop again and again */
                if (g->head >= 0) {
                    refuse_waiting(g, g->head, 503, 1, "the server is out of connections; try again");
                    continue;
                }
                g->accept_paused_until = now_ms() + 100;
                epoll_ctl(g->ep, EPOLL_CTL_DEL, g->listen_fd, NULL);
            }
            return; /* EAGAIN: all taken; anything else: the client is gone already */
        }
        int one = 1;
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        gate_addr a = addr_key((struct sockaddr *)&sa);
        pthread_mutex_lock(&g->mu);
        bool ok = count_add(g, &a, g->s->o.max_per_address);
        pthread_mutex_unlock(&g->mu);
        if (!ok) {
            char why[160];
            snprintf(why, sizeof why, "this address has %d connections open already "
                     "(--max-per-address); try again", g->s->o.max_per_address);
            refuse(g, fd, 503, 1, why);
            continue;
        }
        if (g->free_slot < 0) refuse_waiting(g, g->head, 503, 1, "the server is busy; try again");
        int i = g->free_slot;
        gate_conn *c = &g->conns[i];
        g->free_slot = c->next;
        *c = (gate_conn){.fd = fd, .addr = a, .sa = sa, .sa_len = len,
                         .deadline_ms = now_ms() + 1000LL * g->s->o.read_timeout,
                         .prev = g->tail, .next = -1};
        if (g->tail >= 0) g->conns[g->tail].next = i;
        else g->head = i;
        g->tail = i;
        /* added with data already there, an edge is reported at once */
        struct epoll_event ev = {.events = EPOLLIN | EPOLLRDHUP | EPOLLET, .data.u64 = (uint64_t)i};
        if (epoll_ctl(g->ep, EPOLL_CTL_ADD, fd, &ev)) {
            drop(g, i);
            close(fd);
        }
    }
}

/* A handler's thread starts a connection's watch (at most every WATCH_MS late: the gate
 * learns of it on its next look). */
enum { WATCH_MS = 100 };

static void *gate_loop(void *arg) {
    srv_gate *g = arg;
    struct epoll_event evs[256];
    int64_t next_watch = 0;
    for (;;) {
        int64_t now = now_ms();
        if (now >= next_watch) {
            int64_t due = watch_held(g, now);
            next_watch = now + WATCH_MS;
            if (due > next_watch) next_watch = due;
        }
        /* until the next deadline, the end of a pause or the next look at the held ones */
        int64_t until = next_watch;
        if (g->head >= 0 && g->conns[g->head].deadline_ms < until) until = g->conns[g->head].deadline_ms;
        if (g->accept_paused_until && g->accept_paused_until < until) until = g->accept_paused_until;
        int wait = until <= now ? 0 : (int)(until - now);
        int n = epoll_wait(g->ep, evs, 256, wait);
        if (n < 0 && errno != EINTR) break;
        for (int k = 0; k < n; k++) {
            int64_t id = (int64_t)evs[k].data.u64;
            if (id == GATE_WAKE) return NULL;
            if (id == GATE_LISTEN) on_accept(g);
            else if (g->conns[id].fd >= 0)
                on_readable(g, (int)id, evs[k].events & (EPOLLRDHUP | EPOLLHUP | EPOLLERR));
        }
        now = now_ms();
        if (g->accept_paused_until && now >= g->accept_paused_until) {
            g->accept_paused_until = 0;
            struct epoll_event ev = {.events = EPOLLIN, .data.u64 = (uint64_t)(int64_t)GATE_LISTEN};
            epoll_ctl(g->ep, EPOLL_CTL_ADD, g->listen_fd, &ev);
        }
        expire(g, now);
    }
    return NULL;
}

/* ---- life ------------------------------------------------------------------------------ */

/* Descriptors this process may open, raised first to the hard limit (a server's
 * connections are descriptors; the soft limit is often 1024). */
static long open_files(void) {
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl)) return 1024;
    if (rl.rlim_cur < rl.rlim_max) {
        rlim_t want = rl.rlim_max == RLIM_INFINITY || rl.rlim_max > 1 << 20 ? 1 << 20 : rl.rlim_max;
        if (want > rl.rlim_cur) {
            rl.rlim_cur = want;
            if (!setrlimit(RLIMIT_NOFILE, &rl)) return (long)want;
            getrlimit(RLIMIT_NOFILE, &rl);
        }
    }
    return rl.rlim_cur == RLIM_INFINITY ? 1 << 20 : (long)rl.rlim_cur;
}

srv_gate *srv_gate_open(srv_server *s, const struct sockaddr *addr, socklen_t addr_len) {
    srv_gate *g = calloc(1, sizeof *g);
    if (!g) return NULL;
    g->s = s;
    g->listen_fd = g->ep = g->wake_fd = -1;
    pthread_mutex_init(&g->mu, NULL);
    long files = open_files() - GATE_SPARE_FDS - s->o.max_connections;
    g->cap_waiting = files < 16 ? 16 : files > 65536 ? 65536 : (int)files;
    size_t conns = (size_t)g->cap_waiting + (size_t)s->o.max_connections;
    for (g->counts_cap = 64; g->counts_cap < 2 * conns; g->counts_cap *= 2) {}
    g->conns = calloc((size_t)g->cap_waiting, sizeof *g->conns);
    g->counts = calloc(g->counts_cap, sizeof *g->counts);
    g->held = calloc((size_t)s->o.max_connections, sizeof *g->held);
    g->peek = malloc(SRV_GATE_HEADER_MAX);
    if (!g->conns || !g->counts || !g->held || !g->peek) {
        srv_gate_free(g);
        return NULL;
    }
    for (int i = 0; i < s->o.max_connections; i++) {
        g->held[i].fd = -1;
        g->held[i].next_free = i + 1 < s->o.max_connections ? i + 1 : -1;
    }
    g->free_held = 0;
    for (int i = 0; i < g->cap_waiting; i++) {
        g->conns[i].fd = -1;
        g->conns[i].next = i + 1 < g->cap_waiting ? i + 1 : -1;
    }
    g->head = g->tail = -1;
    g->free_slot = 0;
    int one = 1;
    g->listen_fd = socket(addr->sa_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (g->listen_fd < 0 || setsockopt(g->listen_fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) ||
        bind(g->listen_fd, addr, addr_len) || listen(g->listen_fd, 1024)) {
        srv_gate_free(g);
        return NULL;
    }
    struct sockaddr_storage bound;
    socklen_t bl = sizeof bound;
    getsockname(g->listen_fd, (struct sockaddr *)&bound, &bl);
    g->port = ntohs(bound.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&bound)->sin6_port
                                                : ((struct sockaddr_in *)&bound)->sin_port);
    g->ep = epoll_create1(EPOLL_CLOEXEC);
    g->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    struct epoll_event ev = {.events = EPOLLIN, .data.u64 = (uint64_t)(int64_t)GATE_LISTEN};
    struct epoll_event wake = {.events = EPOLLIN, .data.u64 = (uint64_t)(int64_t)GATE_WAKE};
    if (g->ep < 0 || g->wake_fd < 0 || epoll_ctl(g->ep, EPOLL_CTL_ADD, g->listen_fd, &ev) ||
        epoll_ctl(g->ep, EPOLL_CTL_ADD, g->wake_fd, &wake)) {
        srv_gate_free(g);
        return NULL;
    }
    return g;
}

int srv_gate_port(const srv_gate *g) { return g->port; }

bool srv_gate_start(srv_gate *g) {
    g->started = !pthread_create(&g->thread, NULL, gate_loop, g);
    return g->started;
}

void srv_gate_stop(srv_gate *g) {
    if (!g || !g->started) return;
    uint64_t one = 1;
    (void)!write(g->wake_fd, &one, sizeof one);
    pthread_join(g->thread, NULL);
    g->started = false;
    while (g->head >= 0) {
        int fd = g->conns[g->head].fd;
        drop(g, g->head);
        close(fd);
    }
    close(g->listen_fd); /* no new connection from here on */
    g->listen_fd = -1;
}

void srv_gate_free(srv_gate *g) {
    if (!g) return;
    srv_gate_stop(g);
    if (g->listen_fd >= 0) close(g->listen_fd);
    if (g->ep >= 0) close(g->ep);
    if (g->wake_fd >= 0) close(g->wake_fd);
    pthread_mutex_destroy(&g->mu);
    free(g->conns);
    free(g->counts);
    free(g->held);
    free(g->peek);
    free(g);
}

void *srv_gate_started(srv_gate *g, int fd) {
    gate_held *h = NULL;
    pthread_mutex_lock(&g->mu);
    for (int k = 0; k < g->s->o.max_connections && !h; k++)
        if (g->held[k].fd == fd && !g->held[k].started) h = &g->held[k];
    if (h) h->started = true;
    pthread_mutex_unlock(&g->mu);
    return h;
}

void srv_gate_request(srv_gate *g, void *held) {
    gate_held *h = held;
    if (!h) return;
    pthread_mutex_lock(&g->mu);
    h->deadline_ms = 0;
    pthread_mutex_unlock(&g->mu);
}

void srv_gate_answered(srv_gate *g, void *held) {
    gate_held *h = held;
    if (!h) return;
    pthread_mutex_lock(&g->mu);
    h->deadline_ms = now_ms() + 1000LL * g->s->o.read_timeout;
    pthread_mutex_unlock(&g->mu);
}

void srv_gate_released(srv_gate *g, void *held) {
    gate_held *h = held;
    if (!h) return;
    pthread_mutex_lock(&g->mu);
    release_held(g, h);
    pthread_mutex_unlock(&g->mu);
}
