/* A cached prefix saved to a file and restored into the prefix cache (engine.h:
 * eng_prefix_save / _restore / _erase; serve's POST /slots/{id}?action=save|restore|erase).
 *
 * What is saved is what the prefix cache holds for a run of tokens: its leading full
 * blocks (kv_pool_match), and for a hybrid model only up to the last block boundary that
 * has a state snapshot, with that snapshot. Restoring puts the positions back as cached
 * blocks registered under the same chained hashes (and the snapshot under the last one),
 * so a later request whose prompt starts with those tokens finds them as it finds any
 * cached prefix: a restored slot is a prefix-cache entry, evicted like the others.
 *
 * The file (host byte order; written to NAME.XXXXXX (mkstemp), then renamed):
 *   "OGKVSLOT" | u32 version (1) | u64 weights fingerprint | u32 name bytes, the name
 *   (the package folder's, for messages) | i32 layers, kv heads, row bytes, dtype, codes |
 *   i32 positions n | u64 state bytes | i32 tokens[n] | rows | state | u64 FNV-1a of all
 *   before it.
 * Rows are one position of one head of one layer's keys or values, in the pool's stored
 * form (float, float16, bfloat16 or the builder's codes), ordered layer, keys then values,
 * head, position: independent of the block size, so a server with another --block-size
 * restores the whole blocks of its own size. The fingerprint hashes the weight files'
 * names, sizes and samples of their bytes, so a file made on other weights of the same
 * shapes is refused. The copies into and out of the pool run on the engine's thread
 * between steps; the file is read and written on the caller's. */
#include "engine/engine_internal.h"

#include "base/tensor.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char PREFIX_MAGIC[8] = {'O', 'G', 'K', 'V', 'S', 'L', 'O', 'T'};
enum { PREFIX_VERSION = 1 };

/* ---- the weights' fingerprint ------------------------------------------------------- */

static uint64_t fnv(uint64_t h, const void *p, size_t n) {
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++) h = (h ^ b[i]) * 0x100000001b3ull;
    return h;
}

static bool weight_file(const char *name) {
    size_t n = strlen(name);
    return strstr(name, ".onnx") || (n > 5 && !strcmp(name + n - 5, ".data")) ||
           (n > 12 && !strcmp(name + n - 12, ".safetensors"));
}

static int by_name(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Names, sizes, and 4 KiB at nine evenly spread offsets of each weight file (sorted by
 * name): reads at most 36 KiB a file. */
static uint64_t weights_fingerprint(const char *dir) {
    uint64_t h = 0xcbf29ce484222325ull;
    DIR *d = opendir(dir);
    if (!d) return 1;
    char **names = NULL;
    size_t n = 0, cap = 0;
    for (struct dirent *de; (de = readdir(d));) {
        if (de->d_name[0] == '.' || !weight_file(de->d_name)) continue;
        if (n == cap) {
            cap = cap ? 2 * cap : 16;
            char **p = realloc(names, cap * sizeof *p);
            if (!p) break;
            names = p;
        }
        if (!(names[n] = strdup(de->d_name))) break;
        n++;
    }
    closedir(d);
    if (n) qsort(names, n, sizeof *names, by_name);
    char path[4096], buf[4096];
    for (size_t i = 0; i < n; i++) {
        h = fnv(h, names[i], strlen(names[i]) + 1);
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        free(names[i]);
        FILE *f = fopen(path, "rb");
        struct stat st;
        if (!f) continue;
        if (fstat(fileno(f), &st) == 0) {
            uint64_t size = (uint64_t)st.st_size;
            h = fnv(h, &size, sizeof size);
            for (int k = 0; k < 9 && size; k++) {
                uint64_t at = size > sizeof buf ? (size - sizeof buf) / 8 * (uint64_t)k : 0;
                if (fseeko(f, (off_t)at, SEEK_SET) != 0) break;
                size_t got = fread(buf, 1, sizeof buf, f);
                h = fnv(h, buf, got);
            }
        }
        fclose(f);
    }
    free(names);
    return h ? h : 1;
}

/* ---- what moves between the pool and a file ---------------------------------------- */

typedef struct prefix {
    int n;               /* positions */
    int32_t *tokens;
    char *rows;          /* [layers][2][kv_heads][n][row] */
    size_t state_bytes;  /* a hybrid's snapshot at n (0: none) */
    char *state;
} prefix;

static void prefix_free(prefix *p) {
    free(p->tokens);
    free(p->rows);
    free(p->state);
    memset(p, 0, sizeof *p);
}

static size_t row_bytes(const kv_pool *pool) {
    return pool->block_bytes / ((size_t)pool->kv_heads * (size_t)pool->block_size);
}

/* The address of position pos (in block b) of head h of layer l's keys (kv 0) or values. */
static char *pool_row(const kv_pool *pool, int l, int kv, int h, int32_t b, int pos) {
    char *base = kv ? pool->v[l] : pool->k[l];
    return base + (size_t)b * pool->block_bytes +
           ((size_t)h * (size_t)pool->block_size + (size_t)(pos % pool->block_size)) * row_bytes(pool);
}

/* The file's row r of position pos: layer l, keys or values, head h. */
static char *file_row(const kv_pool *pool, char *rows, int n, int l, int kv, int h, int pos) {
    size_t per = (size_t)n * row_bytes(pool);
    return rows + ((((size_t)l * 2 + (size_t)kv) * (size_t)pool->kv_heads + (size_t)h) * per) +
           (size_t)pos * row_bytes(pool);
}

static void copy_block(const kv_pool *pool, int32_t b, int first, prefix *p, bool out) {
    for (int l = 0; l < pool->n_layers; l++)
        for (int kv = 0; kv < 2; kv++)
            for (int h = 0; h < pool->kv_heads; h++)
                for (int i = 0; i < pool->block_size; i++) {
                    char *a = pool_row(pool, l, kv, h, b, first + i);
                    char *f = file_row(pool, p->rows, p->n, l, kv, h, first + i);
                    if (out) memcpy(f, a, row_bytes(pool));
                    else memcpy(a, f, row_bytes(pool));
                }
}

/* ---- on the engine's thread -------------------------------------------------------- */

typedef struct take_job {
    const int32_t *tokens;
    int n;
    prefix *out; /* NULL: the blocks are forgotten instead (erase) */
    og_status *st;
    int forgotten; /* erase: the positions freed */
} take_job;

/* The cached whole blocks of tokens[0..n) (kv_pool_match: referenced) in *blocks (malloc'd,
 * room for n / block_size), their chained hash in *h; -1 when out of memory. */
static int match_blocks(kv_pool *pool, const int32_t *tokens, int n, int32_t **blocks, uint64_t *h) {
    int max_blocks = n / pool->block_size;
    *h = 0;
    if (!(*blocks = malloc(sizeof **blocks * (size_t)(max_blocks ? max_blocks : 1)))) return -1;
    return max_blocks ? kv_pool_match(pool, tokens, n, max_blocks, *blocks, h) : 0;
}

/* The matched blocks[0..got) out of the cache (those a running request holds stay), freed
 * (erase). */
static void forget_blocks(eng_engine *e, int32_t *blocks, int got, take_job *j) {
    kv_pool *pool = e->pool;
    for (int i = got - 1; i >= 0; i--) {
        if (e->hybrid) eng_state_forget(e, pool->hash[blocks[i]]);
        kv_pool_release(pool, blocks[i]);
        bool cached = pool->ref[blocks[i]] == 0 && pool->hash[blocks[i]];
        kv_pool_forget(pool, blocks[i]); /* one a running request holds stays */
        j->forgotten += cached ? pool->block_size : 0;
    }
    free(blocks);
}

/* The cached prefix of tokens copied out into j->out, or without one taken out of the
 * cache (engine thread). */
static void take_on_thread(eng_engine *e, void *arg) {
    take_job *j = arg;
    kv_pool *pool = e->pool;
    int bs = pool->block_size;
    int32_t *blocks;
    uint64_t h;
    int got = match_blocks(pool, j->tokens, j->n, &blocks, &h);
    if (got < 0) {
        j->st = og_oom();
        return;
    }
    if (!j->out) {
        forget_blocks(e, blocks, got, j);
        return;
    }
    const char *state = NULL;
    if (e->hybrid) { /* only up to a boundary whose state is kept */
        int snap, keep = eng_state_match(e, blocks, got, &snap);
        for (int i = got - 1; i >= keep; i--) kv_pool_release(pool, blocks[i]);
        got = keep;
        h = got ? pool->hash[blocks[got - 1]] : 0;
        state = eng_state_kept(e, h);
    }
    prefix *p = j->out;
    p->n = got * bs;
    size_t nrows = (size_t)pool->n_layers * 2 * (size_t)pool->kv_heads * (size_t)p->n;
    p->tokens = malloc(sizeof *p->tokens * (size_t)(p->n ? p->n : 1));
    p->rows = malloc(nrows * row_bytes(pool) + 1);
    p->state_bytes = state ? e->slot_bytes : 0;
    p->state = state ? malloc(e->slot_bytes) : NULL;
    if (!p->tokens || !p->rows || (state && !p->state)) {
        j->st = og_oom();
    } else {
        if (p->n) /* nothing matched: j->tokens may be NULL */
            memcpy(p->tokens, j->tokens, sizeof *p->tokens * (size_t)p->n);
        for (int i = 0; i < got; i++) copy_block(pool, blocks[i], i * bs, p, true);
        if (state) memcpy(p->state, state, e->slot_bytes);
    }
    for (int i = got - 1; i >= 0; i--) kv_pool_release(pool, blocks[i]);
    free(blocks);
}

typedef struct put_job {
    const prefix *in;
    int restored;
    og_status *st;
} put_job;

/* The prefix's whole blocks into the pool as cached blocks, the state under the last
 * (engine thread). */
static void put_on_thread(eng_engine *e, void *arg) {
    put_job *j = arg;
    const prefix *p = j->in;
    kv_pool *pool = e->pool;
    int bs = pool->block_size, nb = p->n / bs;
    if (e->hybrid && (p->n % bs || p->n % e->snap_stride)) {
        j->st = og_errorf(OG_ERR_INVALID_ARGUMENT, "the file's %d positions end where this "
                          "server keeps no state snapshot (at multiples of %d positions, with "
                          "blocks of %d): restore it into a server with the block size it was "
                          "saved with", p->n, e->snap_stride, bs);
        return;
    }
    if (e->hybrid && nb && (!p->state_bytes || e->n_snaps == 0)) {
        j->st = og_errorf(OG_ERR_INVALID_ARGUMENT, p->state_bytes ? "this server keeps no "
                          "state snapshots (--no-prefix-cache or --kv-memory too small)"
                          : "the file holds no recurrent state for its positions");
        return;
    }
    int32_t *blocks;
    uint64_t h;
    int got = match_blocks(pool, p->tokens, nb * bs, &blocks, &h);
    if (got < 0) {
        j->st = og_oom();
        return;
    }
    if (kv_pool_available(pool) < nb - got) {
        j->st = og_errorf(OG_ERR_INVALID_ARGUMENT, "no room in the KV cache for %d blocks of %d "
                          "positions (%d free or cached): try again when fewer requests run",
                          nb - got, bs, kv_pool_available(pool));
        nb = got;
    }
    for (int i = got; i < nb; i++) {
        int32_t b = kv_pool_alloc(pool); /* available: a free or an unused cached block */
        copy_block(pool, b, i * bs, (prefix *)p, false);
        const int32_t *t = p->tokens + (size_t)i * bs;
        h = kv_pool_hash(h, t, bs);
        kv_pool_register(pool, b, i > 0 ? blocks[i - 1] : -1, h, t);
        blocks[i] = b;
    }
    if (!j->st && e->hybrid && nb) eng_state_keep(e, h, p->state);
    for (int i = nb - 1; i >= 0; i--) kv_pool_release(pool, blocks[i]); /* tail evicted first */
    j->restored = j->st ? 0 : nb * bs;
    free(blocks);
}

/* ---- the file ------------------------------------------------------------------------ */

typedef struct head {
    uint64_t fingerprint;
    int32_t layers, heads, row, dtype, codes, n;
    uint64_t state_bytes;
} head;

static head head_of(eng_engine *e, uint64_t fingerprint, int n, size_t state_bytes) {
    kv_pool *pool = e->pool;
    return (head){fingerprint, pool->n_layers, pool->kv_heads, (int32_t)row_bytes(pool),
                  (int32_t)pool->dtype, e->kv_codes, n, state_bytes};
}

static const char *base_name(const char *dir) {
    size_t n = strlen(dir);
    while (n > 1 && dir[n - 1] == '/') n--;
    const char *b = dir + n;
    while (b > dir && b[-1] != '/') b--;
    return b;
}

typedef struct wfile {
    FILE *f;
    uint64_t sum;
    size_t bytes;
    bool bad;
} wfile;

static void put_bytes(wfile *w, const void *p, size_t n) {
    if (w->bad || !n) return;
    if (fwrite(p, 1, n, w->f) != n) w->bad = true;
    w->sum = fnv(w->sum, p, n);
    w->bytes += n;
}

/* The weights' fingerprint, read once (under mu: slot actions may run at once). */
static uint64_t fingerprint_of(eng_engine *e) {
    pthread_mutex_lock(&e->mu);
    uint64_t fp = e->fingerprint;
    pthread_mutex_unlock(&e->mu);
    if (fp) return fp;
    fp = weights_fingerprint(e->m->dir);
    pthread_mutex_lock(&e->mu);
    e->fingerprint = fp;
    pthread_mutex_unlock(&e->mu);
    return fp;
}

/* Why e has no prefix cache to save, restore or erase ("saving", ...), or NULL. */
static og_status *no_prefix_cache(const eng_engine *e, const char *doing) {
    if (!e->batched)
        return og_errorf(OG_ERR_UNSUPPORTED, "%s KV needs the batched engine's prefix cache; this "
                         "model is served one generator per sequence (%s)", doing, e->note);
    if (!e->o.prefix_cache)
        return og_errorf(OG_ERR_UNSUPPORTED, "%s KV needs the prefix cache (--no-prefix-cache is "
                         "set)", doing);
    return NULL;
}

og_status *eng_prefix_save(eng_engine *e, const int32_t *tokens, int n, const char *path,
                           int *n_saved, size_t *bytes) {
    *n_saved = 0;
    *bytes = 0;
    og_status *why = no_prefix_cache(e, "saving");
    if (why) return why;
    uint64_t fp = fingerprint_of(e);
    prefix p = {0};
    take_job j = {tokens, n < 0 ? 0 : n, &p, NULL, 0};
    if (!eng_on_thread(e, take_on_thread, &j)) return og_errorf(OG_ERR_RUNTIME, "the engine is stopping");
    if (j.st) {
        prefix_free(&p);
        return j.st;
    }
    /* a temporary name of its own (two saves to one name at once must not share it) */
    char tmp[4200];
    snprintf(tmp, sizeof tmp, "%s.XXXXXX", path);
    int fd = mkstemp(tmp);
    wfile w = {fd >= 0 ? fdopen(fd, "wb") : NULL, 0xcbf29ce484222325ull, 0, false};
    if (!w.f) {
        og_status *st = og_errorf(OG_ERR_IO, "cannot write %s: %s", tmp, strerror(errno));
        if (fd >= 0) {
            close(fd);
            remove(tmp);
        }
        prefix_free(&p);
        return st;
    }
    head hd = head_of(e, fp, p.n, p.state_bytes);
    const char *name = base_name(e->m->dir);
    uint32_t version = PREFIX_VERSION, name_len = (uint32_t)strlen(name);
    put_bytes(&w, PREFIX_MAGIC, sizeof PREFIX_MAGIC);
    put_bytes(&w, &version, sizeof version);
    put_bytes(&w, &hd.fingerprint, sizeof hd.fingerprint);
    put_bytes(&w, &name_len, sizeof name_len);
    put_bytes(&w, name, name_len);
    int32_t geo[6] = {hd.layers, hd.heads, hd.row, hd.dtype, hd.codes, hd.n};
    put_bytes(&w, geo, sizeof geo);
    put_bytes(&w, &hd.state_bytes, sizeof hd.state_bytes);
    put_bytes(&w, p.tokens, sizeof *p.tokens * (size_t)p.n);
    put_bytes(&w, p.rows, (size_t)hd.layers * 2 * (size_t)hd.heads * (size_t)p.n * (size_t)hd.row);
    put_bytes(&w, p.state, p.state_bytes);
    uint64_t sum = w.sum;
    put_bytes(&w, &sum, sizeof sum);
    bool bad = w.bad | (fclose(w.f) != 0);
    prefix_free(&p);
    if (bad || rename(tmp, path) != 0) {
        og_status *st = og_errorf(OG_ERR_IO, "cannot write %s: %s", path, strerror(errno));
        remove(tmp);
        return st;
    }
    *n_saved = hd.n;
    *bytes = w.bytes;
    return NULL;
}

typedef struct rfile {
    FILE *f;
    uint64_t sum;
    size_t bytes;
    bool bad;
} rfile;

static bool get_bytes(rfile *r, void *p, size_t n) {
    if (r->bad) return false;
    if (n && fread(p, 1, n, r->f) != n) {
        r->bad = true;
        return false;
    }
    r->sum = fnv(r->sum, p, n);
    r->bytes += n;
    return true;
}

og_status *eng_prefix_restore(eng_engine *e, const char *path, int32_t **tokens, int *n_tokens,
                              int *n_restored, size_t *bytes) {
    *tokens = NULL;
    *n_tokens = *n_restored = 0;
    *bytes = 0;
    og_status *why = no_prefix_cache(e, "restoring");
    if (why) return why;
    uint64_t fp = fingerprint_of(e);
    rfile r = {fopen(path, "rb"), 0xcbf29ce484222325ull, 0, false};
    if (!r.f) return og_errorf(errno == ENOENT ? OG_ERR_NOT_FOUND : OG_ERR_IO, "cannot read %s: %s",
                               path, strerror(errno));
    og_status *st = NULL;
    prefix p = {0};
    put_job j = {&p, 0, NULL};
    char magic[8], name[256];
    uint32_t version = 0, name_len = 0;
    int32_t geo[6];
    head hd = {0};
    get_bytes(&r, magic, sizeof magic);
    get_bytes(&r, &version, sizeof version);
    if (r.bad || memcmp(magic, PREFIX_MAGIC, sizeof magic) || version != PREFIX_VERSION) {
        st = og_errorf(OG_ERR_INVALID_ARGUMENT, "%s is not a slot file of this server (version %d)",
                       path, PREFIX_VERSION);
        goto done;
    }
    get_bytes(&r, &hd.fingerprint, sizeof hd.fingerprint);
    get_bytes(&r, &name_len, sizeof name_len);
    if (r.bad || name_len >= sizeof name || !get_bytes(&r, name, name_len) ||
        !get_bytes(&r, geo, sizeof geo) || !get_bytes(&r, &hd.state_bytes, sizeof hd.state_bytes)) {
        st = og_errorf(OG_ERR_INVALID_ARGUMENT, "%s: the header is cut or damaged", path);
        goto done;
    }
    name[name_len] = 0;
    hd.layers = geo[0], hd.heads = geo[1], hd.row = geo[2], hd.dtype = geo[3], hd.codes = geo[4];
    hd.n = geo[5];
    head want = head_of(e, fp, hd.n, e->hybrid ? e->slot_bytes : 0);
    if (hd.fingerprint != want.fingerprint || hd.layers != want.layers || hd.heads != want.heads ||
        hd.row != want.row || hd.dtype != want.dtype || hd.codes != want.codes ||
        (hd.state_bytes && hd.state_bytes != want.state_bytes)) {
        st = og_errorf(OG_ERR_INVALID_ARGUMENT, "%s was saved from the model '%s' (other weights "
                       "or another KV layout than '%s' here: %d layers, %d kv heads, %d-byte "
                       "rows of %s there)", path, name, base_name(e->m->dir), hd.layers, hd.heads,
                       hd.row, og_dtype_name((og_dtype)hd.dtype));
        goto done;
    }
    if (hd.n < 0 || hd.n > e->context) {
        st = og_errorf(OG_ERR_INVALID_ARGUMENT, "%s: %d positions (this model's context is %d)",
                       path, hd.n, e->context);
        goto done;
    }
    p.n = hd.n;
    size_t rows = (size_t)hd.layers * 2 * (size_t)hd.heads * (size_t)p.n * (size_t)hd.row;
    p.tokens = malloc(sizeof *p.tokens * (size_t)(p.n ? p.n : 1));
    p.rows = malloc(rows + 1);
    p.state_bytes = hd.state_bytes;
    p.state = hd.state_bytes ? malloc(hd.state_bytes) : NULL;
    if (!p.tokens || !p.rows || (hd.state_bytes && !p.state)) {
        st = og_oom();
        goto done;
    }
    uint64_t sum = 0;
    get_bytes(&r, p.tokens, sizeof *p.tokens * (size_t)p.n);
    get_bytes(&r, p.rows, rows);
    get_bytes(&r, p.state, p.state_bytes);
    uint64_t want_sum = r.sum;
    char extra;
    if (!get_bytes(&r, &sum, sizeof sum) || sum != want_sum || fread(&extra, 1, 1, r.f) != 0) {
        st = og_errorf(OG_ERR_INVALID_ARGUMENT, "%s is cut or damaged (its checksum differs)", path);
        goto done;
    }
    for (int i = 0; i < p.n; i++)
        if (p.tokens[i] < 0 || p.tokens[i] >= e->vocab) {
            st = og_errorf(OG_ERR_INVALID_ARGUMENT, "%s: token %d is outside the vocabulary", path,
                           p.tokens[i]);
            goto done;
        }
    if (!eng_on_thread(e, put_on_thread, &j)) {
        st = og_errorf(OG_ERR_RUNTIME, "the engine is stopping");
        goto done;
    }
    if ((st = j.st)) goto done;
    *n_restored = j.restored;
    *bytes = r.bytes;
    *n_tokens = p.n;
    *tokens = p.tokens;
    p.tokens = NULL;
done:
    fclose(r.f);
    prefix_free(&p);
    return st;
}

og_status *eng_prefix_erase(eng_engine *e, const int32_t *tokens, int n, int *n_erased) {
    *n_erased = 0;
    og_status *why = no_prefix_cache(e, "erasing");
    if (why || n <= 0) return why;
    take_job j = {tokens, n, NULL, NULL, 0};
    if (!eng_on_thread(e, take_on_thread, &j)) return og_errorf(OG_ERR_RUNTIME, "the engine is stopping");
    *n_erased = j.forgotten;
    return j.st;
}
