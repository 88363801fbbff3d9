/* See pack_cache.h. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "base/pack_cache.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

enum {
    HEADER_BYTES = 4096,
    KEY_MAX = HEADER_BYTES - 64,
    FLUSH_BYTES = 4 << 20,                      /* whole huge folios per write */
    BUF_BYTES = FLUSH_BYTES + PACK_WRITER_MAX_RESERVE,
    MAX_BUFS = 64,
    VERSION = 1,
};
static const char MAGIC[8] = {'O', 'G', 'P', 'A', 'C', 'K', 0, 1};
static const size_t MIN_FREE = (size_t)2 << 30; /* disk left free after writing */

typedef struct entry {
    uint64_t id, off, size, sum;
} entry;

typedef struct file_header {
    char magic[8];
    uint32_t version, key_len;
    uint64_t file_size, index_off, n_entries, index_sum, header_sum;
    char key[KEY_MAX - 8];
} file_header;
_Static_assert(sizeof(file_header) <= HEADER_BYTES, "header fits its page");

struct pack_cache {
    pack_cache_mode mode;
    const char *outcome;
    char *path, *tmp;
    char key[KEY_MAX];
    size_t key_len;
    /* reading */
    uint8_t *map;
    size_t map_size;
    entry *index; /* sorted by id */
    size_t n;
    /* writing */
    pthread_mutex_t mu;
    int fd;
    uint64_t end;
    entry *written;
    size_t n_written, cap_written;
    uint8_t *bufs[MAX_BUFS];
    bool buf_busy[MAX_BUFS];
};

struct pack_writer {
    pack_cache *c;
    entry e;
    int slot;
    uint8_t *buf;
    size_t fill, reserved, flushed;
    uint64_t a[4], b[4];
    bool failed;
};

uint64_t pack_cache_hash(uint64_t h, const void *p, size_t len) {
    const uint8_t *b = p;
    for (size_t i = 0; i < len; i++) h = (h ^ b[i]) * 0x100000001b3ull;
    return h;
}

/* Two sums per lane (Fletcher's idea without the modulus): the first catches any changed
 * word, the second, which adds the first after every word, any moved one. Memory speed. */
static void ck_update(uint64_t a[4], uint64_t b[4], const uint8_t *p, size_t len) {
    const uint64_t *w = (const uint64_t *)p;
    size_t n = len / 8;
    uint64_t a0 = a[0], a1 = a[1], a2 = a[2], a3 = a[3];
    uint64_t b0 = b[0], b1 = b[1], b2 = b[2], b3 = b[3];
    for (size_t i = 0; i + 4 <= n; i += 4) {
        b0 += a0 += w[i], b1 += a1 += w[i + 1], b2 += a2 += w[i + 2], b3 += a3 += w[i + 3];
    }
    a[0] = a0, a[1] = a1, a[2] = a2, a[3] = a3;
    b[0] = b0, b[1] = b1, b[2] = b2, b[3] = b3;
}

static uint64_t ck_final(const uint64_t a[4], const uint64_t b[4], size_t len) {
    uint64_t h = pack_cache_hash(PACK_HASH_SEED, a, 4 * sizeof *a);
    h = pack_cache_hash(h, b, 4 * sizeof *b);
    return pack_cache_hash(h, &len, sizeof len);
}

uint64_t pack_cache_checksum(const void *p, size_t len) {
    uint64_t a[4] = {0}, b[4] = {0};
    ck_update(a, b, p, len);
    return ck_final(a, b, len);
}

static uint64_t round_up(uint64_t v, uint64_t to) { return (v + to - 1) / to * to; }

static size_t env_mb(const char *name, size_t dflt) {
    const char *v = getenv(name);
    if (!v || !*v) return dflt;
    char *end;
    unsigned long long x = strtoull(v, &end, 10);
    return *end ? dflt : (size_t)x;
}

static void note(const pack_cache *c, const char *what) {
    fprintf(stderr, "onnx-genai: pack cache: %s: %s\n", c && c->path ? c->path : "", what);
}

/* mkdir -p; true when the folder exists */
static bool make_dirs(const char *dir) {
    char p[PATH_MAX];
    if (snprintf(p, sizeof p, "%s", dir) >= (int)sizeof p) return false;
    for (char *s = p + 1; *s; s++) {
        if (*s != '/') continue;
        *s = 0;
        if (mkdir(p, 0755) != 0 && errno != EEXIST) return false;
        *s = '/';
    }
    return mkdir(p, 0755) == 0 || errno == EEXIST;
}

static bool cache_dir(char *out, size_t size) {
    const char *v = getenv("OG_PACK_CACHE");
    /* opt-in until its test has run on the quiet machine (issue 27) */
    if (!v || !*v || !strcmp(v, "off") || !strcmp(v, "0")) return false;
    int n;
    if (strcmp(v, "on") && strcmp(v, "1")) n = snprintf(out, size, "%s", v);
    else if (getenv("XDG_CACHE_HOME") && *getenv("XDG_CACHE_HOME"))
        n = snprintf(out, size, "%s/onnx-genai/packs", getenv("XDG_CACHE_HOME"));
    else if (getenv("HOME") && *getenv("HOME"))
        n = snprintf(out, size, "%s/.cache/onnx-genai/packs", getenv("HOME"));
    else return false;
    return n > 0 && n < (int)size;
}

/* The key: each file's real path and what changes when it is written or replaced. */
static bool make_key(pack_cache *c, const char *const *paths, int n, const char *tag) {
    size_t at = 0;
    int k = snprintf(c->key, sizeof c->key, "%s\n", tag);
    if (k < 0 || (size_t)k >= sizeof c->key) return false;
    at = (size_t)k;
    for (int i = 0; i < n; i++) {
        char real[PATH_MAX];
        struct stat st;
        if (!realpath(paths[i], real) || stat(real, &st) != 0) return false;
        k = snprintf(c->key + at, sizeof c->key - at,
                     "%s %llu %llu %lld %lld.%09ld %lld.%09ld\n", real,
                     (unsigned long long)st.st_dev, (unsigned long long)st.st_ino,
                     (long long)st.st_size, (long long)st.st_mtim.tv_sec, st.st_mtim.tv_nsec,
                     (long long)st.st_ctim.tv_sec, st.st_ctim.tv_nsec);
        if (k < 0 || (size_t)k >= sizeof c->key - at) return false;
        at += (size_t)k;
    }
    c->key_len = at;
    return true;
}

static int by_id(const void *x, const void *y) {
    const entry *a = x, *b = y;
    return a->id < b->id ? -1 : a->id > b->id;
}

typedef struct verify_job {
    const pack_cache *c;
    atomic_bool bad;
} verify_job;

static void verify_entries(void *arg, int64_t i0, int64_t i1) {
    verify_job *j = arg;
    for (int64_t i = i0; i < i1 && !atomic_load(&j->bad); i++) {
        const entry *e = &j->c->index[i];
        if (pack_cache_checksum(j->c->map + e->off, e->size) != e->sum) atomic_store(&j->bad, true);
    }
}

static void unmap(pack_cache *c) {
    if (c->map) munmap(c->map, c->map_size);
    c->map = NULL;
    free(c->index);
    c->index = NULL;
    c->n = 0;
}

/* Maps c->path and checks it; NULL when valid, else why not. */
static const char *map_file(pack_cache *c, threadpool *pool, bool verify) {
    int fd = open(c->path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return errno == ENOENT ? "" : "cannot be opened";
    struct stat st;
    file_header h;
    const char *why = NULL;
    if (fstat(fd, &st) != 0 || st.st_size < HEADER_BYTES) why = "shorter than its header";
    else if (pread(fd, &h, sizeof h, 0) != (ssize_t)sizeof h) why = "header unreadable";
    else if (memcmp(h.magic, MAGIC, sizeof MAGIC) || h.version != VERSION) why = "not this version's";
    else {
        uint64_t sum = h.header_sum;
        h.header_sum = 0;
        if (pack_cache_hash(PACK_HASH_SEED, &h, sizeof h) != sum) why = "header checksum differs";
        else if (h.key_len != c->key_len || memcmp(h.key, c->key, c->key_len))
            why = "made for other files"; /* a hash collision of the name */
        else if (h.file_size != (uint64_t)st.st_size) why = "truncated or extended";
        else if (h.index_off < HEADER_BYTES || h.n_entries > (1u << 24) ||
                 h.index_off + h.n_entries * sizeof(entry) != h.file_size)
            why = "index out of bounds";
    }
    if (why) {
        close(fd);
        return why;
    }
    /* at a huge page boundary, so that the page cache's huge folios map whole */
    size_t size = (size_t)st.st_size, span = size + PACK_CACHE_ALIGN;
    uint8_t *raw = mmap(NULL, span, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    uint8_t *p = raw == MAP_FAILED ? MAP_FAILED
               : mmap((void *)round_up((uint64_t)(uintptr_t)raw, PACK_CACHE_ALIGN), size,
                      PROT_READ, MAP_SHARED | MAP_FIXED, fd, 0);
    if (raw != MAP_FAILED && p != MAP_FAILED) {
        if (p > raw) munmap(raw, (size_t)(p - raw));
        size_t tail = (size_t)(raw + span - (p + size));
        if (tail) munmap(p + size, tail);
#ifdef MADV_HUGEPAGE
        madvise(p, size, MADV_HUGEPAGE);
#endif
    } else if (raw != MAP_FAILED) {
        munmap(raw, span);
    }
    if (p == MAP_FAILED) {
        close(fd);
        return "cannot be mapped";
    }
    if (verify) futimens(fd, NULL); /* used now: the folder's bound evicts by this */
    close(fd);
    c->map = p;
    c->map_size = size;
    c->n = h.n_entries;
    c->index = malloc(sizeof(entry) * (c->n + 1));
    if (!c->index) return "out of memory";
    memcpy(c->index, p + h.index_off, sizeof(entry) * c->n);
    if (pack_cache_hash(PACK_HASH_SEED, c->index, sizeof(entry) * c->n) != h.index_sum)
        return "index checksum differs";
    qsort(c->index, c->n, sizeof *c->index, by_id);
    for (size_t i = 0; i < c->n; i++) {
        const entry *e = &c->index[i];
        if (e->off % PACK_CACHE_ALIGN || e->off < HEADER_BYTES || e->size % 64 ||
            e->off + e->size > h.index_off || e->off + e->size < e->off)
            return "entry out of bounds";
        if (i > 0 && e->id == c->index[i - 1].id) return "entry listed twice";
    }
    if (!verify) return NULL;
    verify_job j = {.c = c};
    atomic_init(&j.bad, false);
    threadpool_parallel_for(pool, (int64_t)c->n, 1, verify_entries, &j);
    return atomic_load(&j.bad) ? "entry checksum differs" : NULL;
}

typedef struct cached_file {
    char *path;
    uint64_t bytes;
    time_t mtime;
} cached_file;

static int oldest_first(const void *x, const void *y) {
    const cached_file *a = x, *b = y;
    return a->mtime < b->mtime ? -1 : a->mtime > b->mtime;
}

/* Removes the least recently used files of dir until `bytes` more fit under max, and
 * temporary files a crashed writer left over a day ago. */
static bool make_room(const char *dir, uint64_t bytes, uint64_t max) {
    DIR *d = opendir(dir);
    if (!d) return false;
    cached_file *fs = NULL;
    size_t n = 0, cap = 0;
    uint64_t total = 0;
    time_t now = time(NULL);
    for (struct dirent *de; (de = readdir(d));) {
        const char *dot = strstr(de->d_name, ".pack");
        if (!dot) continue;
        char p[PATH_MAX];
        struct stat st;
        if (snprintf(p, sizeof p, "%s/%s", dir, de->d_name) >= (int)sizeof p || stat(p, &st)) continue;
        if (dot[5] != 0) { /* NAME.pack.XXXXXX: being written, or left by a crash */
            if (now - st.st_mtime > 86400) unlink(p);
            else total += (uint64_t)st.st_blocks * 512;
            continue;
        }
        if (n == cap) {
            cap = cap ? 2 * cap : 16;
            cached_file *g = realloc(fs, cap * sizeof *fs);
            if (!g) break;
            fs = g;
        }
        fs[n].path = strdup(p);
        fs[n].bytes = (uint64_t)st.st_blocks * 512;
        fs[n].mtime = st.st_mtime;
        total += fs[n].bytes;
        n++;
    }
    closedir(d);
    if (n) qsort(fs, n, sizeof *fs, oldest_first); /* fs is NULL when the folder is empty */
    for (size_t i = 0; i < n && total + bytes > max; i++)
        if (fs[i].path && unlink(fs[i].path) == 0) total -= fs[i].bytes;
    for (size_t i = 0; i < n; i++) free(fs[i].path);
    free(fs);
    return total + bytes <= max;
}

static bool start_writing(pack_cache *c, const char *dir, size_t bytes) {
    uint64_t max = (uint64_t)env_mb("OG_PACK_CACHE_MAX_MB", 16384) << 20;
    struct statvfs vs;
    if (bytes > max) {
        note(c, "the model's prepared weights exceed OG_PACK_CACHE_MAX_MB; not cached");
        return false;
    }
    if (statvfs(dir, &vs) == 0 && (uint64_t)vs.f_bavail * vs.f_frsize < bytes + MIN_FREE) {
        note(c, "under 2 GiB would be left on the disk; not cached");
        return false;
    }
    if (!make_room(dir, bytes, max)) {
        note(c, "no room under OG_PACK_CACHE_MAX_MB; not cached");
        return false;
    }
    size_t len = strlen(c->path) + 8;
    if (!(c->tmp = malloc(len))) return false;
    snprintf(c->tmp, len, "%s.XXXXXX", c->path);
    c->fd = mkstemp(c->tmp);
    if (c->fd < 0) {
        free(c->tmp);
        c->tmp = NULL;
        note(c, "cannot create a file in the folder; not cached");
        return false;
    }
    fchmod(c->fd, 0644);
    c->end = PACK_CACHE_ALIGN;
    c->mode = PACK_CACHE_WRITING;
    return true;
}

pack_cache *pack_cache_open(const char *const *paths, int n, const char *tag, size_t bytes,
                            threadpool *pool) {
    char dir[PATH_MAX - 64];
    if (n <= 0 || bytes < env_mb("OG_PACK_CACHE_MIN_MB", 64) << 20 || !cache_dir(dir, sizeof dir))
        return NULL;
    pack_cache *c = calloc(1, sizeof *c);
    if (!c) return NULL;
    c->fd = -1;
    pthread_mutex_init(&c->mu, NULL);
    if (!make_key(c, paths, n, tag)) {
        pack_cache_close(c);
        return NULL;
    }
    size_t len = strlen(dir) + 32;
    if (!(c->path = malloc(len))) {
        pack_cache_close(c);
        return NULL;
    }
    snprintf(c->path, len, "%s/%016llx.pack", dir,
             (unsigned long long)pack_cache_hash(PACK_HASH_SEED, c->key, c->key_len));
    const char *why = map_file(c, pool, true);
    if (!why) {
        c->mode = PACK_CACHE_READING;
        c->outcome = "hit";
        return c;
    }
    unmap(c);
    c->outcome = "written";
    if (*why) { /* not merely absent */
        char msg[160];
        snprintf(msg, sizeof msg, "%s; writing it again", why);
        note(c, msg);
        unlink(c->path);
        c->outcome = "rebuilt";
    }
    if (!make_dirs(dir) || !start_writing(c, dir, bytes)) {
        pack_cache_close(c);
        return NULL;
    }
    return c;
}

static void fail(pack_cache *c, const char *why) {
    pthread_mutex_lock(&c->mu);
    if (c->mode == PACK_CACHE_WRITING) {
        note(c, why);
        c->mode = PACK_CACHE_FAILED;
        c->outcome = "failed";
    }
    pthread_mutex_unlock(&c->mu);
}

void pack_cache_close(pack_cache *c) {
    if (!c) return;
    unmap(c);
    if (c->fd >= 0) close(c->fd);
    if (c->tmp) unlink(c->tmp);
    for (int i = 0; i < MAX_BUFS; i++) free(c->bufs[i]);
    free(c->written);
    free(c->tmp);
    free(c->path);
    pthread_mutex_destroy(&c->mu);
    free(c);
}

pack_cache_mode pack_cache_get_mode(const pack_cache *c) { return c ? c->mode : PACK_CACHE_OFF; }
const char *pack_cache_outcome(const pack_cache *c) { return c ? c->outcome : "off"; }
const char *pack_cache_path(const pack_cache *c) { return c ? c->path : NULL; }

const void *pack_cache_find(pack_cache *c, uint64_t id, size_t size) {
    if (!c || c->mode != PACK_CACHE_READING) return NULL;
    entry key = {.id = id};
    const entry *e = bsearch(&key, c->index, c->n, sizeof *c->index, by_id);
    return e && e->size == round_up(size, 64) ? c->map + e->off : NULL;
}

pack_writer *pack_writer_begin(pack_cache *c, uint64_t id, size_t size) {
    if (!c || c->mode != PACK_CACHE_WRITING) return NULL;
    pack_writer *w = calloc(1, sizeof *w);
    if (!w) return NULL;
    w->c = c;
    w->e.id = id;
    w->e.size = round_up(size, 64);
    w->slot = -1;
    pthread_mutex_lock(&c->mu);
    for (int i = 0; i < MAX_BUFS && w->slot < 0 && c->mode == PACK_CACHE_WRITING; i++) {
        if (c->buf_busy[i]) continue;
        /* kept for the next entry: its pages are touched once, not once per entry */
        if (!c->bufs[i] && posix_memalign((void **)&c->bufs[i], 64, BUF_BYTES)) c->bufs[i] = NULL;
        if (c->bufs[i]) c->buf_busy[i] = true, w->slot = i;
    }
    w->e.off = round_up(c->end, PACK_CACHE_ALIGN);
    c->end = w->e.off + w->e.size;
    pthread_mutex_unlock(&c->mu);
    if (w->slot < 0) {
        free(w);
        return NULL;
    }
    w->buf = c->bufs[w->slot];
    return w;
}

static bool flush(pack_writer *w, size_t len) {
    ck_update(w->a, w->b, w->buf, len);
    for (size_t done = 0; done < len;) {
        ssize_t k = pwrite(w->c->fd, w->buf + done, len - done, (off_t)(w->e.off + w->flushed + done));
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0) {
            fail(w->c, errno == ENOSPC ? "disk full; not cached" : "write failed; not cached");
            return false;
        }
        done += (size_t)k;
    }
    w->flushed += len;
    memmove(w->buf, w->buf + len, w->fill - len);
    w->fill -= len;
    return true;
}

uint8_t *pack_writer_reserve(pack_writer *w, size_t len) {
    if (w->failed || len > PACK_WRITER_MAX_RESERVE || w->reserved + len > w->e.size) {
        w->failed = true;
        return NULL;
    }
    if (w->fill >= FLUSH_BYTES && !flush(w, FLUSH_BYTES)) {
        w->failed = true;
        return NULL;
    }
    uint8_t *p = w->buf + w->fill;
    w->fill += len;
    w->reserved += len;
    return p;
}

bool pack_writer_end(pack_writer *w) {
    pack_cache *c = w->c;
    bool ok = !w->failed && round_up(w->reserved, 64) == w->e.size;
    if (ok) {
        size_t pad = (size_t)(w->e.size - w->reserved);
        memset(w->buf + w->fill, 0, pad);
        w->fill += pad;
        while (ok && w->fill >= FLUSH_BYTES) ok = flush(w, FLUSH_BYTES);
        if (ok && w->fill) ok = flush(w, w->fill);
    }
    pthread_mutex_lock(&c->mu);
    c->buf_busy[w->slot] = false;
    if (ok) {
        w->e.sum = ck_final(w->a, w->b, (size_t)w->e.size);
        if (c->n_written == c->cap_written) {
            size_t cap = c->cap_written ? 2 * c->cap_written : 64;
            entry *g = realloc(c->written, cap * sizeof *g);
            if (g) c->written = g, c->cap_written = cap;
        }
        if (c->n_written < c->cap_written) c->written[c->n_written++] = w->e;
        else ok = false;
    }
    pthread_mutex_unlock(&c->mu);
    if (!ok) fail(c, "an entry could not be written; not cached");
    free(w);
    return ok;
}

void pack_cache_finish(pack_cache *c) {
    if (!c || c->mode != PACK_CACHE_WRITING) return;
    file_header h;
    memset(&h, 0, sizeof h);
    memcpy(h.magic, MAGIC, sizeof MAGIC);
    h.version = VERSION;
    h.key_len = (uint32_t)c->key_len;
    memcpy(h.key, c->key, c->key_len);
    h.index_off = round_up(c->end, HEADER_BYTES);
    h.n_entries = c->n_written;
    size_t ib = sizeof(entry) * c->n_written;
    h.index_sum = pack_cache_hash(PACK_HASH_SEED, c->written, ib);
    h.file_size = h.index_off + ib;
    h.header_sum = pack_cache_hash(PACK_HASH_SEED, &h, sizeof h);
    /* no fsync: a file cut short by a crash fails its checksums and is written again */
    bool ok = (!ib || pwrite(c->fd, c->written, ib, (off_t)h.index_off) == (ssize_t)ib) &&
              ftruncate(c->fd, (off_t)h.file_size) == 0 &&
              pwrite(c->fd, &h, sizeof h, 0) == (ssize_t)sizeof h && rename(c->tmp, c->path) == 0;
    close(c->fd);
    c->fd = -1;
    if (!ok) {
        fail(c, "the file could not be completed; not cached");
        return;
    }
    free(c->tmp);
    c->tmp = NULL;
    const char *why = map_file(c, NULL, false); /* checksums just computed */
    if (why) {
        unmap(c);
        fail(c, why);
        return;
    }
    c->mode = PACK_CACHE_READING;
}
