/* The BPE model: vocabulary, merge ranks, the per-word merge loop and a word cache.
 *
 * The merge loop follows HF's: a linked list of symbols and a min-heap of candidate
 * merges ordered by (rank, position); stale heap entries are recognised and dropped
 * when popped. Results must match HF exactly, including in the rare cases where the
 * order of equal-string merges matters, so the loop is not "simplified". */
#include "tokenizer/tok_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { CACHE_CAP = 1 << 15, CACHE_MAX_WORD = 256, MAX_AFFIX = 64, CHAR_TABLE = 0x800,
       SCAN_MAX = 96 };

typedef struct cache_ent {
    uint32_t hash, klen, ilen;
    size_t koff, ioff;
} cache_ent;

struct tok_cache {
    pthread_mutex_t lock;
    cache_ent *ents; /* CACHE_CAP slots; klen == 0 marks an empty one */
    size_t n;
    tok_buf keys;
    int32_t *ids;
    size_t n_ids, cap_ids;
};

/* ---- merges map ---- */

static inline size_t merge_slot(uint64_t key, size_t cap) {
    /* Both halves of the key must reach the low bits (a murmur-style finalizer). */
    key ^= key >> 33;
    key *= 0xFF51AFD7ED558CCDull;
    key ^= key >> 33;
    return (size_t)key & (cap - 1);
}

static inline bool merge_get(const tok_bpe *m, int32_t a, int32_t b, uint32_t *rank, int32_t *nid) {
    if (!m->mcap) return false;
    uint64_t key = (((uint64_t)(uint32_t)a << 32) | (uint32_t)b) + 1;
    for (size_t j = merge_slot(key, m->mcap); m->mkeys[j]; j = (j + 1) & (m->mcap - 1))
        if (m->mkeys[j] == key) {
            *rank = m->mrank[j];
            *nid = m->mnew[j];
            return true;
        }
    return false;
}

static void merge_put(tok_bpe *m, int32_t a, int32_t b, uint32_t rank, int32_t nid) {
    uint64_t key = (((uint64_t)(uint32_t)a << 32) | (uint32_t)b) + 1;
    size_t j = merge_slot(key, m->mcap);
    while (m->mkeys[j] && m->mkeys[j] != key) j = (j + 1) & (m->mcap - 1);
    /* A repeated pair keeps the later rank, as a map built from the list would. */
    m->mkeys[j] = key;
    m->mrank[j] = rank;
    m->mnew[j] = nid;
}

/* ---- loading ---- */

static og_status *lookup_pair(const tok_bpe *m, const char *a, size_t al, const char *b,
                              size_t bl, const char *file, int idx, int32_t *ia, int32_t *ib,
                              int32_t *inew) {
    *ia = tok_smap_get(&m->vocab, a, al, -1);
    *ib = tok_smap_get(&m->vocab, b, bl, -1);
    if (*ia < 0 || *ib < 0)
        return og_errorf(OG_ERR_INVALID_MODEL, "%s: model.merges[%d]: '%.*s' is not in the vocabulary",
                         file, idx, (int)(*ia < 0 ? al : bl), *ia < 0 ? a : b);
    if (m->prefix_len && bl >= m->prefix_len && !memcmp(b, m->prefix, m->prefix_len)) {
        b += m->prefix_len;
        bl -= m->prefix_len;
    }
    char stack[512];
    char *cat = al + bl <= sizeof stack ? stack : malloc(al + bl);
    if (!cat) return og_oom();
    memcpy(cat, a, al);
    memcpy(cat + al, b, bl);
    *inew = tok_smap_get(&m->vocab, cat, al + bl, -1);
    og_status *st = NULL;
    if (*inew < 0)
        st = og_errorf(OG_ERR_INVALID_MODEL, "%s: model.merges[%d]: merged token '%.*s' is not in the vocabulary",
                       file, idx, (int)(al + bl), cat);
    if (cat != stack) free(cat);
    return st;
}

static og_status *dup_affix(const cJSON *j, const char *key, const char *file, char **out,
                            size_t *len) {
    const char *s = tok_json_str(j, key);
    if (!s || !*s) return NULL; /* "" behaves exactly like no affix */
    *len = strlen(s);
    if (*len > MAX_AFFIX)
        return og_errorf(OG_ERR_UNSUPPORTED, "%s: model.%s longer than %d bytes is not supported",
                         file, key, MAX_AFFIX);
    *out = strdup(s);
    return *out ? NULL : og_oom();
}

og_status *tok_bpe_parse(tok_bpe *m, const cJSON *j, const char *file) {
    memset(m, 0, sizeof *m);
    m->unk_id = -1;
    const cJSON *dropout = cJSON_GetObjectItemCaseSensitive(j, "dropout");
    if (cJSON_IsNumber(dropout) && dropout->valuedouble > 0.0)
        return og_errorf(OG_ERR_UNSUPPORTED, "%s: model.dropout (random BPE) is not supported", file);
    m->fuse_unk = tok_json_bool(j, "fuse_unk", false);
    m->byte_fallback = tok_json_bool(j, "byte_fallback", false);
    m->ignore_merges = tok_json_bool(j, "ignore_merges", false);
    OG_TRY(dup_affix(j, "continuing_subword_prefix", file, &m->prefix, &m->prefix_len));
    OG_TRY(dup_affix(j, "end_of_word_suffix", file, &m->suffix, &m->suffix_len));

    const cJSON *vocab = cJSON_GetObjectItemCaseSensitive(j, "vocab");
    if (!cJSON_IsObject(vocab))
        return og_errorf(OG_ERR_INVALID_MODEL, "%s: model.vocab must be an object", file);
    for (const cJSON *e = vocab->child; e; e = e->next) {
        int64_t id64;
        if (!tok_json_index(e, TOK_MAX_ID, &id64))
            return og_errorf(OG_ERR_INVALID_MODEL, "%s: model.vocab['%.60s'] must be an integer id "
                             "in [0, %d]", file, e->string ? e->string : "", TOK_MAX_ID);
        int32_t id = (int32_t)id64;
        if (!tok_smap_put(&m->vocab, e->string, strlen(e->string), id)) return og_oom();
        if ((size_t)id + 1 > m->vocab_max) m->vocab_max = (size_t)id + 1;
    }
    const char *unk = tok_json_str(j, "unk_token");
    if (unk) {
        m->unk_id = tok_smap_get(&m->vocab, unk, strlen(unk), -1);
        /* HF only complains once an unknown character needs the token. */
        if (m->unk_id < 0) m->unk_id = -2;
    }
    m->char_ids = malloc(CHAR_TABLE * sizeof *m->char_ids);
    if (!m->char_ids) return og_oom();
    for (int32_t cp = 0; cp < CHAR_TABLE; cp++) {
        char enc[4];
        m->char_ids[cp] = tok_smap_get(&m->vocab, enc, tok_utf8_put(cp, enc), -1);
    }
    for (int b = 0; b < 256; b++) {
        char name[8];
        snprintf(name, sizeof name, "<0x%02X>", b);
        m->byte_ids[b] = tok_smap_get(&m->vocab, name, 6, -1);
    }

    const cJSON *merges = cJSON_GetObjectItemCaseSensitive(j, "merges");
    int nm = cJSON_IsArray(merges) ? cJSON_GetArraySize(merges) : 0;
    if (merges && !cJSON_IsArray(merges) && !cJSON_IsNull(merges))
        return og_errorf(OG_ERR_INVALID_MODEL, "%s: model.merges must be an array", file);
    size_t cap = 16;
    while (cap < (size_t)nm * 2 + 2) cap *= 2;
    m->mcap = cap;
    m->mkeys = calloc(cap, sizeof *m->mkeys);
    m->mrank = malloc(cap * sizeof *m->mrank);
    m->mnew = malloc(cap * sizeof *m->mnew);
    if (!m->mkeys || !m->mrank || !m->mnew) return og_oom();
    int idx = 0;
    for (const cJSON *e = nm ? merges->child : NULL; e; e = e->next, idx++) {
        const char *a, *b;
        size_t al, bl;
        if (cJSON_IsString(e)) {
            const char *s = e->valuestring, *sp = strchr(s, ' ');
            if (!sp)
                return og_errorf(OG_ERR_INVALID_MODEL, "%s: model.merges[%d] '%s' is not \"left right\"",
                                 file, idx, s);
            a = s;
            al = (size_t)(sp - s);
            b = sp + 1;
            bl = strlen(b);
        } else if (cJSON_IsArray(e) && cJSON_GetArraySize(e) == 2 &&
                   cJSON_IsString(cJSON_GetArrayItem(e, 0)) && cJSON_IsString(cJSON_GetArrayItem(e, 1))) {
            a = cJSON_GetArrayItem(e, 0)->valuestring;
            b = cJSON_GetArrayItem(e, 1)->valuestring;
            al = strlen(a);
            bl = strlen(b);
        } else {
            return og_errorf(OG_ERR_INVALID_MODEL, "%s: model.merges[%d] must be a string or a pair of strings",
                             file, idx);
        }
        int32_t ia, ib, inew;
        OG_TRY(lookup_pair(m, a, al, b, bl, file, idx, &ia, &ib, &inew));
        merge_put(m, ia, ib, (uint32_t)idx, inew);
    }

    m->cache = calloc(1, sizeof *m->cache);
    if (!m->cache) return og_oom();
    m->cache->ents = calloc(CACHE_CAP, sizeof *m->cache->ents);
    if (!m->cache->ents) {
        free(m->cache);
        m->cache = NULL;
        return og_oom();
    }
    pthread_mutex_init(&m->cache->lock, NULL);
    return NULL;
}

void tok_bpe_free(tok_bpe *m) {
    if (!m) return;
    tok_smap_free(&m->vocab);
    free(m->mkeys);
    free(m->mrank);
    free(m->mnew);
    free(m->prefix);
    free(m->suffix);
    free(m->char_ids);
    if (m->cache) {
        pthread_mutex_destroy(&m->cache->lock);
        free(m->cache->ents);
        tok_buf_free(&m->cache->keys);
        free(m->cache->ids);
        free(m->cache);
    }
    memset(m, 0, sizeof *m);
}

/* ---- ids output ---- */

static bool push_id(int32_t **ids, size_t *n, size_t *cap, int32_t id) {
    if (*n == *cap) {
        size_t c = *cap ? *cap * 2 : 64;
        int32_t *p = realloc(*ids, c * sizeof *p);
        if (!p) return false;
        *ids = p;
        *cap = c;
    }
    (*ids)[(*n)++] = id;
    return true;
}

/* ---- cache ---- */

static bool cache_get(tok_cache *c, const char *w, size_t n, uint32_t h, int32_t **ids,
                      size_t *n_ids, size_t *cap_ids) {
    bool hit = false;
    pthread_mutex_lock(&c->lock);
    for (size_t j = h & (CACHE_CAP - 1); c->ents[j].klen; j = (j + 1) & (CACHE_CAP - 1)) {
        const cache_ent *e = &c->ents[j];
        if (e->hash == h && e->klen == n && !memcmp(c->keys.p + e->koff, w, n)) {
            hit = true;
            for (size_t i = 0; i < e->ilen && hit; i++)
                hit = push_id(ids, n_ids, cap_ids, c->ids[e->ioff + i]);
            if (!hit) *n_ids = 0; /* out of memory: let the caller recompute and fail */
            break;
        }
    }
    pthread_mutex_unlock(&c->lock);
    return hit;
}

static void cache_put(tok_cache *c, const char *w, size_t n, uint32_t h, const int32_t *ids,
                      size_t k) {
    pthread_mutex_lock(&c->lock);
    if (c->n * 2 >= CACHE_CAP) {
        /* Full: start over rather than evict one by one (cheap, and keeps it simple). */
        memset(c->ents, 0, CACHE_CAP * sizeof *c->ents);
        c->n = 0;
        c->keys.n = 0;
        c->n_ids = 0;
    }
    if (c->n_ids + k > c->cap_ids) {
        size_t cap = c->cap_ids ? c->cap_ids : 4096;
        while (cap < c->n_ids + k) cap *= 2;
        int32_t *p = realloc(c->ids, cap * sizeof *p);
        if (!p) goto out;
        c->ids = p;
        c->cap_ids = cap;
    }
    size_t j = h & (CACHE_CAP - 1);
    for (; c->ents[j].klen; j = (j + 1) & (CACHE_CAP - 1))
        if (c->ents[j].hash == h && c->ents[j].klen == n && !memcmp(c->keys.p + c->ents[j].koff, w, n))
            goto out; /* another thread got there first */
    size_t koff = c->keys.n;
    if (!tok_buf_put(&c->keys, w, n)) goto out;
    if (k) memcpy(c->ids + c->n_ids, ids, k * sizeof *ids); /* ids and c->ids may be NULL for 0 */
    c->ents[j] = (cache_ent){h, (uint32_t)n, (uint32_t)k, koff, c->n_ids};
    c->n_ids += k;
    c->n++;
out:
    pthread_mutex_unlock(&c->lock);
}

/* ---- merging ---- */

typedef struct symbol {
    int32_t c, prev, next;
    uint32_t len; /* bytes; 0 once merged into its left neighbour */
} symbol;

typedef struct merge_cand {
    uint32_t rank;
    int32_t pos, nid;
} merge_cand;

static inline bool cand_less(merge_cand a, merge_cand b) {
    return a.rank < b.rank || (a.rank == b.rank && a.pos < b.pos);
}

typedef struct heap {
    merge_cand *v;
    size_t n, cap;
} heap;

static bool heap_push(heap *h, merge_cand c) {
    if (h->n == h->cap) {
        size_t cap = h->cap ? h->cap * 2 : 32;
        merge_cand *v = realloc(h->v, cap * sizeof *v);
        if (!v) return false;
        h->v = v;
        h->cap = cap;
    }
    size_t i = h->n++;
    while (i > 0) {
        size_t p = (i - 1) / 2;
        if (!cand_less(c, h->v[p])) break;
        h->v[i] = h->v[p];
        i = p;
    }
    h->v[i] = c;
    return true;
}

static merge_cand heap_pop(heap *h) {
    merge_cand top = h->v[0], last = h->v[--h->n];
    size_t i = 0;
    for (;;) {
        size_t l = 2 * i + 1, r = l + 1, s = i;
        merge_cand best = last;
        if (l < h->n && cand_less(h->v[l], best)) {
            s = l;
            best = h->v[l];
        }
        if (r < h->n && cand_less(h->v[r], best)) s = r;
        if (s == i) break;
        h->v[i] = h->v[s];
        i = s;
    }
    if (h->n) h->v[i] = last;
    return top;
}

typedef struct word {
    symbol *s;
    size_t n, cap;
} word;

static bool word_add(word *w, int32_t c, size_t len) {
    if (w->n == w->cap) {
        size_t cap = w->cap ? w->cap * 2 : 32;
        symbol *s = realloc(w->s, cap * sizeof *s);
        if (!s) return false;
        w->s = s;
        w->cap = cap;
    }
    int32_t i = (int32_t)w->n;
    if (i > 0) w->s[i - 1].next = i;
    w->s[w->n++] = (symbol){c, i - 1, -1, (uint32_t)len};
    return true;
}

/* The same merges as the heap loop below, for short words: repeatedly merge the
 * adjacent pair of lowest (rank, position). A popped heap entry is only acted on while
 * its pair is unchanged (a changed pair covers a longer span, so names another token),
 * so both pick the same pair every step; scanning a few dozen ranks beats the heap. */
static og_status *merge_scan(const tok_bpe *m, word *wd) {
    enum { NONE = UINT32_MAX };
    size_t n = wd->n;
    int32_t c[SCAN_MAX], nid[SCAN_MAX];
    uint32_t rank[SCAN_MAX];
    for (size_t i = 0; i < n; i++) c[i] = wd->s[i].c;
    for (size_t i = 0; i + 1 < n; i++)
        if (!merge_get(m, c[i], c[i + 1], &rank[i], &nid[i])) rank[i] = NONE;
    while (n > 1) {
        size_t best = 0;
        for (size_t i = 1; i + 1 < n; i++)
            if (rank[i] < rank[best]) best = i;
        if (rank[best] == NONE) break;
        c[best] = nid[best];
        size_t tail = n - best - 2;
        memmove(c + best + 1, c + best + 2, tail * sizeof *c);
        memmove(rank + best + 1, rank + best + 2, tail * sizeof *rank);
        memmove(nid + best + 1, nid + best + 2, tail * sizeof *nid);
        n--;
        if (best > 0 && !merge_get(m, c[best - 1], c[best], &rank[best - 1], &nid[best - 1]))
            rank[best - 1] = NONE;
        if (best + 1 < n && !merge_get(m, c[best], c[best + 1], &rank[best], &nid[best]))
            rank[best] = NONE;
    }
    for (size_t i = 0; i < n; i++) wd->s[i] = (symbol){c[i], 0, 0, 1};
    wd->n = n;
    return NULL;
}

static og_status *merge_word(const tok_bpe *m, const char *w, size_t n, word *wd) {
    char buf[MAX_AFFIX * 2 + 8];
    int32_t unk = -1;
    size_t unk_len = 0;
    for (size_t i = 0; i < n;) {
        int32_t cp;
        size_t k = tok_utf8_next(w + i, n - i, &cp);
        const char *s = w + i;
        size_t sl = k;
        bool first = i == 0, last = i + k >= n;
        if ((m->prefix && !first) || (m->suffix && last)) {
            sl = 0;
            if (m->prefix && !first) {
                memcpy(buf, m->prefix, m->prefix_len);
                sl = m->prefix_len;
            }
            memcpy(buf + sl, w + i, k);
            sl += k;
            if (m->suffix && last) {
                memcpy(buf + sl, m->suffix, m->suffix_len);
                sl += m->suffix_len;
            }
            s = buf;
        }
        i += k;
        int32_t id = s == w + i - k && cp < CHAR_TABLE ? m->char_ids[cp]
                                                        : tok_smap_get(&m->vocab, s, sl, -1);
        if (id >= 0) {
            if (unk >= 0 && !word_add(wd, unk, unk_len)) return og_oom();
            unk = -1;
            if (!word_add(wd, id, k)) return og_oom();
            continue;
        }
        if (m->byte_fallback) {
            bool all = true;
            for (size_t b = 0; b < sl && all; b++) all = m->byte_ids[(unsigned char)s[b]] >= 0;
            if (all) {
                /* HF keeps a pending unk waiting here too, so bytes can precede it. */
                for (size_t b = 0; b < sl; b++)
                    if (!word_add(wd, m->byte_ids[(unsigned char)s[b]], 1)) return og_oom();
                continue;
            }
        }
        if (m->unk_id == -2)
            return og_errorf(OG_ERR_INVALID_MODEL, "tokenizer: unk_token is not in the vocabulary");
        if (m->unk_id >= 0) {
            if (unk >= 0 && m->fuse_unk) {
                unk_len += k;
            } else {
                if (unk >= 0 && !word_add(wd, unk, unk_len)) return og_oom();
                unk = m->unk_id;
                unk_len = k;
            }
        }
    }
    if (unk >= 0 && !word_add(wd, unk, unk_len)) return og_oom();

    if (wd->n <= SCAN_MAX) return merge_scan(m, wd);
    heap h = {0};
    og_status *st = NULL;
    for (size_t i = 0; i + 1 < wd->n; i++) {
        merge_cand c = {0, (int32_t)i, 0};
        if (merge_get(m, wd->s[i].c, wd->s[i + 1].c, &c.rank, &c.nid) && !heap_push(&h, c)) {
            st = og_oom();
            goto done;
        }
    }
    while (h.n) {
        merge_cand top = heap_pop(&h);
        symbol *cur = &wd->s[top.pos];
        if (cur->len == 0 || cur->next < 0) continue;
        int32_t next_pos = cur->next;
        symbol right = wd->s[next_pos];
        uint32_t r;
        int32_t nid;
        if (!merge_get(m, cur->c, right.c, &r, &nid) || nid != top.nid) continue;
        cur->c = top.nid;
        cur->len += right.len;
        cur->next = right.next;
        wd->s[next_pos].len = 0;
        if (right.next >= 0 && (size_t)right.next < wd->n) wd->s[right.next].prev = top.pos;
        if (cur->prev >= 0) {
            merge_cand c = {0, cur->prev, 0};
            if (merge_get(m, wd->s[cur->prev].c, cur->c, &c.rank, &c.nid) && !heap_push(&h, c)) {
                st = og_oom();
                goto done;
            }
        }
        if (cur->next >= 0 && (size_t)cur->next < wd->n) {
            merge_cand c = {0, top.pos, 0};
            if (merge_get(m, cur->c, wd->s[cur->next].c, &c.rank, &c.nid) && !heap_push(&h, c)) {
                st = og_oom();
                goto done;
            }
        }
    }
done:
    free(h.v);
    return st;
}

og_status *tok_bpe_tokenize(const tok_bpe *m, const char *w, size_t n, int32_t **ids,
                            size_t *n_ids, size_t *cap_ids) {
    if (n == 0) return NULL;
    if (m->ignore_merges) {
        int32_t id = tok_smap_get(&m->vocab, w, n, -1);
        if (id >= 0) return push_id(ids, n_ids, cap_ids, id) ? NULL : og_oom();
    }
    uint32_t h = 0;
    bool cacheable = n < CACHE_MAX_WORD;
    size_t start = *n_ids;
    if (cacheable) {
        h = tok_hash(w, n) | 1u;
        if (cache_get(m->cache, w, n, h, ids, n_ids, cap_ids)) return NULL;
        *n_ids = start;
    }
    word wd = {0};
    og_status *st = merge_word(m, w, n, &wd);
    for (size_t i = 0; !st && i < wd.n; i++)
        if (wd.s[i].len && !push_id(ids, n_ids, cap_ids, wd.s[i].c)) st = og_oom();
    free(wd.s);
    /* a word may give no ids at all (every piece empty): then *ids may still be NULL */
    if (!st && cacheable) cache_put(m->cache, w, n, h, *ids ? *ids + start : NULL, *n_ids - start);
    return st;
}
