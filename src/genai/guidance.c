/* The model's vocabulary for guidance and its cache of compiled grammars (guidance.h). */
#include "genai/guidance.h"

#include "genai/config.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

/* ---- token table ---- */

/* An added token written as a control token ("<s>", "</s>", "<|end|>"): tokenizers mark
 * these special inconsistently, and no text a grammar describes should come from one. */
static bool control_look(const tok_tokenizer *tok, int32_t id) {
    const char *s = tok_is_added(tok, id) ? tok_id_to_token(tok, id) : NULL;
    size_t n = s ? strlen(s) : 0;
    return n >= 2 && s[0] == '<' && s[n - 1] == '>';
}

og_status *gen_token_table_build(const tok_tokenizer *tok, size_t n, const int32_t *stop_ids,
                                 size_t n_stop, gen_token_table *out) {
    memset(out, 0, sizeof *out);
    if (!tok || (!stop_ids && n_stop))
        return og_errorf(OG_ERR_INVALID_ARGUMENT, "gen_token_table_build: NULL argument");
    gen_token_table t = {.n = n};
    size_t *off = calloc(n ? n : 1, sizeof *off);
    t.bytes = calloc(n ? n : 1, sizeof *t.bytes);
    t.lens = calloc(n ? n : 1, sizeof *t.lens);
    t.excluded = calloc(n ? n : 1, sizeof *t.excluded);
    size_t cap = 1 << 16, used = 0;
    t.pool = malloc(cap);
    og_status *st = NULL;
    if (!off || !t.bytes || !t.lens || !t.excluded || !t.pool) st = og_oom();
    for (size_t id = 0; id < n && !st; id++) {
        size_t len;
        for (;;) {
            st = tok_token_bytes(tok, (int32_t)id, t.pool + used, cap - used, &len);
            if (st || len <= cap - used) break;
            size_t ncap = cap * 2 + len;
            uint8_t *p = realloc(t.pool, ncap);
            if (!p) {
                st = og_oom();
                break;
            }
            t.pool = p;
            cap = ncap;
        }
        if (st) break;
        if (len > UINT32_MAX) {
            st = og_errorf(OG_ERR_INVALID_MODEL, "tokenizer: token %zu is %zu bytes long", id, len);
            break;
        }
        off[id] = used;
        used += len;
        t.lens[id] = (uint32_t)len;
        t.excluded[id] = len == 0 || tok_is_special(tok, (int32_t)id) || control_look(tok, (int32_t)id);
    }
    for (size_t i = 0; i < n_stop && !st; i++)
        if (stop_ids[i] >= 0 && (size_t)stop_ids[i] < n) t.excluded[stop_ids[i]] = true;
    /* pool may have moved while it grew: pointers only now */
    for (size_t id = 0; id < n && !st; id++) t.bytes[id] = t.pool + off[id];
    free(off);
    if (st) {
        gen_token_table_free(&t);
        return og_oom_context(st, "tokenizer: the token bytes of %zu tokens", n);
    }
    *out = t;
    return NULL;
}

void gen_token_table_free(gen_token_table *t) {
    if (!t) return;
    free(t->pool);
    free(t->bytes);
    free(t->lens);
    free(t->excluded);
    memset(t, 0, sizeof *t);
}

/* ---- per-model state ---- */

/* Compiled grammars kept per model: a server sees few distinct schemas again and again;
 * past this many the least recently used is dropped (its users keep their reference). */
enum { GUIDANCE_CACHE_MAX = 64 };

typedef struct cache_entry {
    guide_kind kind;
    char *text;
    size_t len;
    guide_grammar *g;
    uint64_t used; /* the cache clock at its last use */
} cache_entry;

struct gen_guidance {
    pthread_mutex_t lock;
    tok_tokenizer *tok;    /* the package's tokenizer, for forced bytes (gen_guidance_encode) */
    gen_token_table table; /* what vocab's bytes point into */
    guide_vocab *vocab;    /* NULL until first use */
    cache_entry ents[GUIDANCE_CACHE_MAX];
    int n_ents;
    uint64_t clock;
};

/* Makes m->guidance once; the lock is global but held only for that. */
static og_status *guidance_of(og_model *m, struct gen_guidance **out) {
    static pthread_mutex_t make_lock = PTHREAD_MUTEX_INITIALIZER;
    pthread_mutex_lock(&make_lock);
    og_status *st = NULL;
    if (!m->guidance) {
        struct gen_guidance *g = calloc(1, sizeof *g);
        if (!g || pthread_mutex_init(&g->lock, NULL) != 0) {
            free(g);
            st = og_oom();
        } else {
            m->guidance = g;
        }
    }
    pthread_mutex_unlock(&make_lock);
    *out = m->guidance;
    return st;
}

og_status *gen_guidance_encode(void *ctx, const uint8_t *bytes, size_t len, int32_t **ids,
                               size_t *n) {
    return tok_encode(ctx, (const char *)bytes, len, false, ids, n);
}

static og_status *build_vocab(og_model *m, struct gen_guidance *g) {
    og_status *st = tok_tokenizer_load(m->cfg->dir, &g->tok);
    if (st) return og_status_wrap(st, "guidance needs the package's tokenizer");
    st = gen_token_table_build(g->tok, (size_t)m->vocab_size, m->eos_ids, (size_t)m->n_eos,
                               &g->table);
    if (!st) st = guide_vocab_new(g->table.n, g->table.bytes, g->table.lens, g->table.excluded,
                                  &g->vocab);
    if (!st) {
        guide_vocab_set_tokenize(g->vocab, gen_guidance_encode, g->tok);
        return NULL;
    }
    gen_token_table_free(&g->table);
    tok_tokenizer_free(g->tok);
    g->tok = NULL;
    return st;
}

og_status *gen_guidance_vocab(og_model *m, const guide_vocab **out) {
    if (!m || !out) return og_errorf(OG_ERR_INVALID_ARGUMENT, "gen_guidance_vocab: NULL argument");
    struct gen_guidance *g;
    OG_TRY(guidance_of(m, &g));
    pthread_mutex_lock(&g->lock);
    og_status *st = g->vocab ? NULL : build_vocab(m, g);
    pthread_mutex_unlock(&g->lock);
    *out = g->vocab;
    return st;
}

/* The cached grammar of (kind, text) as a new reference, or NULL. Called locked. */
static guide_grammar *cache_find(struct gen_guidance *g, guide_kind kind, const char *text,
                                 size_t len) {
    for (int i = 0; i < g->n_ents; i++) {
        cache_entry *e = &g->ents[i];
        if (e->kind == kind && e->len == len && !memcmp(e->text, text, len)) {
            e->used = ++g->clock;
            return guide_grammar_ref(e->g);
        }
    }
    return NULL;
}

/* Keeps a reference to gr under (kind, text), dropping the least recently used entry
 * when full. Called locked; out of memory only means it is not cached. */
static void cache_put(struct gen_guidance *g, guide_kind kind, const char *text, size_t len,
                      guide_grammar *gr) {
    char *copy = malloc(len + 1);
    if (!copy) return;
    memcpy(copy, text, len);
    copy[len] = 0;
    cache_entry *e;
    if (g->n_ents < GUIDANCE_CACHE_MAX) {
        e = &g->ents[g->n_ents++];
    } else {
        e = &g->ents[0];
        for (int i = 1; i < g->n_ents; i++)
            if (g->ents[i].used < e->used) e = &g->ents[i];
        free(e->text);
        guide_grammar_unref(e->g);
    }
    *e = (cache_entry){.kind = kind, .text = copy, .len = len, .g = guide_grammar_ref(gr),
                       .used = ++g->clock};
}

og_status *gen_guidance_grammar(og_model *m, guide_kind kind, const char *text,
                                guide_grammar **out) {
    if (!m || !out) return og_errorf(OG_ERR_INVALID_ARGUMENT, "gen_guidance_grammar: NULL argument");
    const guide_vocab *vocab;
    OG_TRY(gen_guidance_vocab(m, &vocab));
    struct gen_guidance *g = m->guidance;
    if (!text) text = "";
    size_t len = strlen(text);
    pthread_mutex_lock(&g->lock);
    guide_grammar *gr = cache_find(g, kind, text, len);
    pthread_mutex_unlock(&g->lock);
    if (gr) {
        *out = gr;
        return NULL;
    }
    /* compiled unlocked: other sequences of the model go on meanwhile; two threads that
     * compile the same text at once both do, and the second keeps the first's */
    OG_TRY(guide_grammar_compile(kind, text, len, vocab, &gr));
    pthread_mutex_lock(&g->lock);
    guide_grammar *had = cache_find(g, kind, text, len);
    if (had) {
        guide_grammar_unref(gr);
        gr = had;
    } else {
        cache_put(g, kind, text, len, gr);
    }
    pthread_mutex_unlock(&g->lock);
    *out = gr;
    return NULL;
}

void gen_guidance_free(struct gen_guidance *g) {
    if (!g) return;
    for (int i = 0; i < g->n_ents; i++) {
        free(g->ents[i].text);
        guide_grammar_unref(g->ents[i].g);
    }
    guide_vocab_free(g->vocab);
    gen_token_table_free(&g->table);
    tok_tokenizer_free(g->tok);
    pthread_mutex_destroy(&g->lock);
    free(g);
}
