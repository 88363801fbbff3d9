/* The lexer (lexer.h): every lexeme in one NFA (regex.h), and a DFA built lazily over it.
 * A DFA state is a sorted set of the NFA's "important" states (byte ranges, accepts,
 * vetoes), interned in a hash table; its 256 transitions start unknown and are filled the
 * first time they are asked for, so a known transition is one table read. */
#include "guide/lexer.h"

#include "guide/regex.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define UNKNOWN (UINT32_MAX - 1)
#define ACC_BLOCK 4096 /* words */
#define DESC_MAX 60

/* Virtual states (a repeat's copies) one closure may visit, and their hash set's slots. */
#define VMARK_MAX 2048
#define VMARK_SLOTS 4096

typedef struct lexeme {
    uint32_t start;  /* NFA entry */
    bool lazy;       /* ends the lexeme where it is complete (glex_add_regex_opts) */
    uint32_t *vetos; /* entries of its exclusions' branches */
    size_t n_vetos;
    char *desc;
    char *key; /* dedup key: kind byte + text (+ attributes) */
    size_t key_len;
    uint8_t *hidden; /* Lark's stop=: the stop string that ends it, hidden (glex_attrs) */
    size_t n_hidden;
    uint32_t max_tokens; /* 0: no limit */
    bool eos_ends;       /* stop="": a stop id may end it (glex_attrs) */
} lexeme;

typedef struct dstate {
    uint32_t set_off, set_len; /* into glex.sets */
    const uint64_t *acc;       /* complete lexemes (glex_words words), or NULL */
    bool extend;               /* some non-veto byte range is alive */
    int32_t hidden;            /* cut by a lazy lexeme that has hidden bytes: it; else -1 */
} dstate;

/* Open addressing over uint32 values (0 = empty slot, else value + 1). */
typedef struct imap {
    uint32_t *slot;
    uint64_t *hash;
    size_t cap, n;
} imap;

struct glex {
    gnfa nfa;
    lexeme *lex;
    int n_lex, cap_lex;
    imap by_key; /* lexeme dedup */

    /* the DFA (reset when a lexeme or exclusion is added after it was built) */
    dstate *ds;
    uint32_t n_ds, cap_ds;
    uint32_t *trans; /* n_ds * 256 */
    uint32_t *sets;
    size_t n_sets, cap_sets;
    /* accept sets live in blocks that never move, so glex_accepts' pointers stay valid
     * while the DFA grows */
    uint64_t **acc_blocks;
    size_t n_acc_blocks, acc_used; /* words used in the last block */
    imap by_set;   /* DFA states by NFA set */
    imap by_start; /* DFA start states by allowed set (values: index into starts) */
    uint64_t *starts; /* (words + 1) per entry: the allowed set, then the state */
    size_t n_starts, cap_starts;
    size_t words; /* glex_words when the DFA was started */

    /* scratch for closures */
    uint32_t *mark, gen;
    uint32_t *stack, *buf;
    size_t cap_scratch;
    uint64_t *veto_bits;
    uint32_t vmark_key[VMARK_SLOTS], vmark_gen[VMARK_SLOTS]; /* virtual states seen */
    size_t vmarked;
    bool vfull; /* a closure met more than VMARK_MAX virtual states */
    uint64_t *lazy_bits; /* the lazy lexemes (lazy_words words), NULL when none */
    size_t lazy_words;

    uint32_t *owner; /* per NFA state, the lexeme it belongs to (built by glex_limit) */
    size_t n_owner;
    bool any_max_tokens;
    uint64_t *eos_bits; /* the lexemes a stop id may end (eos_words words), or NULL */
    size_t eos_words;

    size_t max_states, max_bytes, bytes;
    size_t work; /* NFA states the closures have visited, in all */
    char err[256];
};

static uint64_t hash_words(const void *p, size_t n)
{
    const uint8_t *b = p;
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; i++) h = (h ^ b[i]) * 1099511628211ull;
    return h | 1;
}

/* Finds `h` with eq(ctx, value) or returns the empty slot where it would go. */
typedef bool (*imap_eq)(const void *ctx, uint32_t value);

static size_t imap_find(const imap *m, uint64_t h, imap_eq eq, const void *ctx)
{
    size_t j = (size_t)h & (m->cap - 1);
    while (m->slot[j] && !(m->hash[j] == h && eq(ctx, m->slot[j] - 1))) j = (j + 1) & (m->cap - 1);
    return j;
}

static bool imap_grow(imap *m)
{
    if (m->cap && (m->n + 1) * 4 < m->cap * 3) return true;
    size_t cap = m->cap ? m->cap * 2 : 64;
    uint32_t *slot = calloc(cap, sizeof *slot);
    uint64_t *hash = malloc(cap * sizeof *hash);
    if (!slot || !hash) {
        free(slot);
        free(hash);
        return false;
    }
    for (size_t i = 0; i < m->cap; i++) {
        if (!m->slot[i]) continue;
        size_t j = (size_t)m->hash[i] & (cap - 1);
        while (slot[j]) j = (j + 1) & (cap - 1);
        slot[j] = m->slot[i];
        hash[j] = m->hash[i];
    }
    free(m->slot);
    free(m->hash);
    m->slot = slot;
    m->hash = hash;
    m->cap = cap;
    return true;
}

static void imap_free(imap *m)
{
    free(m->slot);
    free(m->hash);
    memset(m, 0, sizeof *m);
}

static bool grow(void **p, size_t *cap, size_t need, size_t elem)
{
    if (need <= *cap) return true;
    size_t c = *cap ? *cap : 16;
    while (c < need) c *= 2;
    void *n = realloc(*p, c * elem);
    if (!n) return false;
    *p = n;
    *cap = c;
    return true;
}

og_status *glex_new(glex **out)
{
    glex *lex = calloc(1, sizeof *lex);
    if (!lex) return og_oom_context(og_oom(), "lexer");
    lex->nfa.max = GNFA_MAX_STATES;
    lex->max_states = 200000;
    lex->max_bytes = (size_t)256 << 20;
    *out = lex;
    return NULL;
}

static void dfa_reset(glex *lex)
{
    free(lex->ds);
    free(lex->trans);
    free(lex->sets);
    for (size_t i = 0; i < lex->n_acc_blocks; i++) free(lex->acc_blocks[i]);
    free(lex->acc_blocks);
    free(lex->starts);
    free(lex->owner);
    lex->owner = NULL;
    lex->n_owner = 0;
    imap_free(&lex->by_set);
    imap_free(&lex->by_start);
    lex->ds = NULL;
    lex->trans = lex->sets = NULL;
    lex->acc_blocks = NULL;
    lex->starts = NULL;
    lex->n_acc_blocks = lex->acc_used = 0;
    lex->n_ds = lex->cap_ds = 0;
    lex->n_sets = lex->cap_sets = 0;
    lex->n_starts = lex->cap_starts = 0;
    lex->bytes = 0;
}

void glex_free(glex *lex)
{
    if (!lex) return;
    dfa_reset(lex);
    for (int i = 0; i < lex->n_lex; i++) {
        free(lex->lex[i].vetos);
        free(lex->lex[i].desc);
        free(lex->lex[i].key);
        free(lex->lex[i].hidden);
    }
    free(lex->lex);
    imap_free(&lex->by_key);
    free(lex->nfa.st);
    free(lex->nfa.reps);
    free(lex->mark);
    free(lex->stack);
    free(lex->buf);
    free(lex->veto_bits);
    free(lex->lazy_bits);
    free(lex->eos_bits);
    free(lex);
}

/* ---- lexemes ---- */

typedef struct keyref {
    const glex *lex;
    const char *key;
    size_t len;
} keyref;

static bool key_eq(const void *ctx, uint32_t v)
{
    const keyref *k = ctx;
    const lexeme *l = &k->lex->lex[v];
    return l->key_len == k->len && !memcmp(l->key, k->key, k->len);
}

/* Appends `bytes` to buf as printable text: `quote` escaped, non-printables as \xHH. */
static size_t describe_bytes(char *buf, size_t cap, size_t w, const uint8_t *b, size_t n,
                             char quote)
{
    for (size_t i = 0; i < n && w + 8 < cap; i++) {
        uint8_t c = b[i];
        if (c == '\n') w += (size_t)snprintf(buf + w, cap - w, "\\n");
        else if (c == '\t') w += (size_t)snprintf(buf + w, cap - w, "\\t");
        else if (c == '\r') w += (size_t)snprintf(buf + w, cap - w, "\\r");
        else if (c == (uint8_t)quote || (quote == '"' && c == '\\'))
            w += (size_t)snprintf(buf + w, cap - w, "\\%c", c);
        else if (c < 0x20 || c == 0x7F) w += (size_t)snprintf(buf + w, cap - w, "\\x%02X", c);
        else buf[w++] = (char)c;
    }
    buf[w] = 0;
    return w;
}

static char *make_desc(const uint8_t *b, size_t n, bool literal)
{
    char tmp[DESC_MAX * 4 + 16];
    size_t show = n > DESC_MAX ? DESC_MAX : n;
    /* do not cut a UTF-8 sequence */
    while (show < n && show > 0 && (b[show] & 0xC0) == 0x80) show--;
    char q = literal ? '"' : '/';
    size_t w = 0;
    tmp[w++] = q;
    w = describe_bytes(tmp, sizeof tmp - 5, w, b, show, literal ? '"' : 0);
    if (show < n) w += (size_t)snprintf(tmp + w, sizeof tmp - w, "...");
    tmp[w++] = q;
    tmp[w] = 0;
    return strdup(tmp);
}

/* Byte ranges of states [first, n) from which the lexeme's accept state (`first`) cannot
 * be reached (after an empty class: `a[^\x00-\x{10FFFF}]`, or where the parts of an
 * intersection part ways) become dead ends, so that a DFA state holding a range state can
 * always extend. A search backwards from the accept state over the reversed edges. */
static bool prune(gnfa *nfa, uint32_t first)
{
    uint32_t n = nfa->n - first;
    uint8_t *ok = calloc(n, 1);
    uint32_t *deg = calloc((size_t)n + 1, sizeof *deg), *from = malloc(sizeof *from * 2 * n);
    uint32_t *stack = malloc(sizeof *stack * n);
    bool done = ok && deg && from && stack;
    /* reversed edges, grouped by target: deg[t]..deg[t+1] */
    for (uint32_t i = 0; i < n && done; i++) {
        const gnfa_state *st = &nfa->st[first + i];
        if (st->kind != GN_RANGE && st->kind != GN_SPLIT) continue;
        if (st->out != GN_NONE && st->out >= first) deg[st->out - first + 1]++;
        if (st->kind == GN_SPLIT && st->out2 != GN_NONE && st->out2 >= first)
            deg[st->out2 - first + 1]++;
    }
    for (uint32_t i = 0; i < n && done; i++) deg[i + 1] += deg[i];
    for (uint32_t i = 0; i < n && done; i++) {
        const gnfa_state *st = &nfa->st[first + i];
        if (st->kind != GN_RANGE && st->kind != GN_SPLIT) continue;
        if (st->out != GN_NONE && st->out >= first) from[deg[st->out - first]++] = i;
        if (st->kind == GN_SPLIT && st->out2 != GN_NONE && st->out2 >= first)
            from[deg[st->out2 - first]++] = i;
    }
    /* deg[t] now ends t's group; t's group starts where t-1's ends */
    size_t sp = 0;
    if (done) {
        ok[0] = 1;
        stack[sp++] = 0;
    }
    while (sp) {
        uint32_t t = stack[--sp];
        for (uint32_t k = t ? deg[t - 1] : 0; k < deg[t]; k++) {
            uint32_t f = from[k];
            if (!ok[f]) {
                ok[f] = 1;
                stack[sp++] = f;
            }
        }
    }
    for (uint32_t i = 1; i < n && done; i++) {
        if (ok[i]) continue;
        gnfa_state *st = &nfa->st[first + i];
        st->kind = GN_SPLIT;
        st->out = st->out2 = GN_NONE;
    }
    free(ok);
    free(deg);
    free(from);
    free(stack);
    return done;
}

/* "<[a-b,c]>" for a token lexeme's ranges (pairs of uint32 in `text`), cut at DESC_MAX. */
static char *token_desc(const uint8_t *text, size_t len)
{
    char buf[DESC_MAX + 16];
    size_t o = (size_t)snprintf(buf, sizeof buf, "<[");
    for (size_t i = 0; i + 8 <= len && o < DESC_MAX; i += 8) {
        uint32_t lo, hi;
        memcpy(&lo, text + i, 4);
        memcpy(&hi, text + i + 4, 4);
        o += (size_t)snprintf(buf + o, sizeof buf - o, lo == hi ? "%s%u" : "%s%u-%u",
                              i ? "," : "", lo, hi);
    }
    if (o >= DESC_MAX) o = DESC_MAX - 3, memcpy(buf + o, "...", 3), o += 3;
    snprintf(buf + o, sizeof buf - o, "]>");
    return strdup(buf);
}

/* Adds a lexeme whose NFA part `build` makes (regex or literal), unless its key exists. */
static og_status *add_lexeme_key(glex *lex, char kind, const uint8_t *text, size_t len,
                                 const char *what, const gre_part *parts, size_t n_parts,
                                 const uint8_t *ksuf, size_t n_ksuf, int *id)
{
    /* with attributes: its own kind byte (high bit set), and the text's length last, so
     * that two keys are equal only when text and attributes are */
    size_t klen = len + 1 + (n_ksuf ? n_ksuf + sizeof len : 0);
    char *key = malloc(klen);
    if (!key) return og_oom_context(og_oom(), "lexer");
    key[0] = n_ksuf ? (char)(kind | 0x80) : kind;
    memcpy(key + 1, text, len);
    if (n_ksuf) {
        memcpy(key + 1 + len, ksuf, n_ksuf);
        memcpy(key + 1 + len + n_ksuf, &len, sizeof len);
    }
    keyref kr = {lex, key, klen};
    uint64_t h = hash_words(key, klen);
    if (!imap_grow(&lex->by_key)) {
        free(key);
        return og_oom_context(og_oom(), "lexer");
    }
    size_t j = imap_find(&lex->by_key, h, key_eq, &kr);
    if (lex->by_key.slot[j]) {
        free(key);
        *id = (int)lex->by_key.slot[j] - 1;
        return NULL;
    }
    size_t cap = (size_t)lex->cap_lex;
    if (!grow((void **)&lex->lex, &cap, (size_t)lex->n_lex + 1, sizeof *lex->lex)) {
        free(key);
        return og_oom_context(og_oom(), "lexer");
    }
    lex->cap_lex = (int)cap;
    int me = lex->n_lex;
    uint32_t n0 = lex->nfa.n;
    og_status *st = NULL;
    uint32_t acc = gnfa_add(&lex->nfa, GN_ACCEPT, 0, 0, (uint32_t)me, GN_NONE);
    uint32_t entry = acc;
    if (acc == GN_NONE) {
        st = og_oom_context(og_oom(), "lexer: NFA states");
    } else if (kind == 'r') {
        st = gre_compile(&lex->nfa, (const char *)text, len, what, acc, &entry);
    } else if (kind == 'x' || kind == 'Z') {
        st = gre_compile_ext(&lex->nfa, (const char *)text, len, what, acc, &entry);
    } else if (kind == 'z') {
        st = gre_compile(&lex->nfa, (const char *)text, len, what, acc, &entry);
    } else if (kind == 'a') {
        st = gre_compile_and(&lex->nfa, parts, n_parts, what, acc, &entry);
    } else if (kind == 't') {
        entry = GN_NONE; /* no bytes: matched by token id (glex_add_tokens) */
    } else {
        for (size_t i = len; i-- > 0 && entry != GN_NONE;)
            entry = gnfa_add(&lex->nfa, GN_RANGE, text[i], text[i], entry, GN_NONE);
        if (entry == GN_NONE) st = og_oom_context(og_oom(), "lexer: NFA states");
    }
    if (!st && !prune(&lex->nfa, n0)) st = og_oom_context(og_oom(), "lexer");
    char *desc = st ? NULL
                 : kind == 'a' ? make_desc((const uint8_t *)(parts[0].re ? parts[0].re : "-?[0-9.]+"),
                                           parts[0].re ? parts[0].len : 9, false)
                 : kind == 't' ? token_desc(text, len)
                               : make_desc(text, len, kind == 'l');
    if (!st && !desc) st = og_oom_context(og_oom(), "lexer");
    if (st) {
        gnfa_truncate(&lex->nfa, n0);
        free(key);
        return st;
    }
    lexeme *l = &lex->lex[me];
    memset(l, 0, sizeof *l);
    l->start = entry;
    l->lazy = kind == 'z' || kind == 'Z';
    l->desc = desc;
    l->key = key;
    l->key_len = klen;
    lex->n_lex++;
    lex->by_key.slot[j] = (uint32_t)me + 1;
    lex->by_key.hash[j] = h;
    lex->by_key.n++;
    if (lex->n_ds) dfa_reset(lex);
    *id = me;
    return NULL;
}

static og_status *add_lexeme(glex *lex, char kind, const uint8_t *text, size_t len,
                             const char *what, const gre_part *parts, size_t n_parts, int *id)
{
    return add_lexeme_key(lex, kind, text, len, what, parts, n_parts, NULL, 0, id);
}

og_status *glex_add_regex(glex *lex, const char *re, size_t len, const char *what, int *id)
{
    return add_lexeme(lex, 'r', (const uint8_t *)re, len, what ? what : "regex", NULL, 0, id);
}

og_status *glex_add_regex_ext(glex *lex, const char *re, size_t len, const char *what, int *id)
{
    return add_lexeme(lex, 'x', (const uint8_t *)re, len, what ? what : "regex", NULL, 0, id);
}

og_status *glex_add_regex_opts(glex *lex, const char *re, size_t len, const char *what,
                               unsigned opts, int *id)
{
    return glex_add_regex_attrs(lex, re, len, what, opts, NULL, id);
}

og_status *glex_add_regex_attrs(glex *lex, const char *re, size_t len, const char *what,
                                unsigned opts, const glex_attrs *attrs, int *id)
{
    bool ext = opts & GLEX_EXT, lazy = opts & GLEX_LAZY;
    char kind = lazy ? (ext ? 'Z' : 'z') : ext ? 'x' : 'r';
    /* the attributes as the key's tail: max_tokens, then the hidden bytes */
    size_t n_hidden = attrs ? attrs->n_hidden : 0;
    uint32_t max_tokens = attrs ? attrs->max_tokens : 0;
    bool eos_ends = attrs && attrs->eos_ends;
    if (n_hidden && !lazy)
        return og_errorf(OG_ERR_INVALID_ARGUMENT, "lexer: hidden bytes on a lexeme that is not lazy");
    uint8_t *ksuf = NULL;
    size_t n_ksuf = 0;
    if (n_hidden || max_tokens || eos_ends) {
        n_ksuf = sizeof max_tokens + 1 + n_hidden;
        if (!(ksuf = malloc(n_ksuf))) return og_oom_context(og_oom(), "lexer");
        memcpy(ksuf, &max_tokens, sizeof max_tokens);
        ksuf[sizeof max_tokens] = eos_ends;
        if (n_hidden) memcpy(ksuf + sizeof max_tokens + 1, attrs->hidden, n_hidden);
    }
    int before = lex->n_lex;
    og_status *st = add_lexeme_key(lex, kind, (const uint8_t *)re, len, what ? what : "regex",
                                   NULL, 0, ksuf, n_ksuf, id);
    free(ksuf);
    OG_TRY(st);
    if (lex->n_lex > before) { /* new: its attributes */
        lexeme *l = &lex->lex[*id];
        l->max_tokens = max_tokens;
        lex->any_max_tokens |= max_tokens != 0;
        l->eos_ends = eos_ends;
        if (eos_ends) {
            size_t words = glex_words(lex);
            uint64_t *e = realloc(lex->eos_bits, words * sizeof *e);
            if (!e) return og_oom_context(og_oom(), "lexer");
            for (size_t w = lex->eos_words; w < words; w++) e[w] = 0;
            e[*id / 64] |= 1ull << (*id % 64);
            lex->eos_bits = e;
            lex->eos_words = words;
        }
        if (n_hidden) {
            if (!(l->hidden = malloc(n_hidden))) return og_oom_context(og_oom(), "lexer");
            memcpy(l->hidden, attrs->hidden, n_hidden);
            l->n_hidden = n_hidden;
        }
    }
    if (!lazy) return NULL;
    size_t words = glex_words(lex);
    uint64_t *b = realloc(lex->lazy_bits, words * sizeof *b);
    if (!b) return og_oom_context(og_oom(), "lexer");
    lex->lazy_bits = b;
    lex->lazy_words = words;
    for (size_t w = 0; w < words; w++) b[w] = 0;
    for (int i = 0; i < lex->n_lex; i++)
        if (lex->lex[i].lazy) b[i / 64] |= 1ull << (i % 64);
    return NULL;
}

og_status *glex_add_tokens(glex *lex, const uint32_t *ranges, size_t n_pairs, int *id)
{
    if (!n_pairs) return og_errorf(OG_ERR_INVALID_ARGUMENT, "lexer: an empty token set");
    return add_lexeme(lex, 't', (const uint8_t *)ranges, n_pairs * 2 * sizeof *ranges, NULL,
                      NULL, 0, id);
}

size_t glex_token_pairs(const glex *lex, int id)
{
    if (id < 0 || id >= lex->n_lex || lex->lex[id].key[0] != 't') return 0;
    return (lex->lex[id].key_len - 1) / 8;
}

uint32_t glex_token_range_at(const glex *lex, int id, size_t i, bool hi)
{
    /* the key is 't' then the pairs, not aligned */
    uint32_t v;
    memcpy(&v, lex->lex[id].key + 1 + i * 8 + (hi ? 4 : 0), 4);
    return v;
}

og_status *glex_add_literal(glex *lex, const uint8_t *bytes, size_t len, int *id)
{
    return add_lexeme(lex, 'l', bytes, len, NULL, NULL, 0, id);
}

og_status *glex_add_and(glex *lex, const glex_part *parts, size_t n, const char *what, int *id)
{
    if (n == 0) return og_errorf(OG_ERR_INVALID_ARGUMENT, "lexer: an empty intersection");
    /* the dedup key: each part as 'r' length text, or 'm' coef exp */
    size_t len = 0;
    for (size_t i = 0; i < n; i++) len += 1 + sizeof(size_t) + (parts[i].re ? parts[i].len : 8);
    uint8_t *key = malloc(len ? len : 1);
    gre_part *gp = malloc(sizeof *gp * n);
    if (!key || !gp) {
        free(key);
        free(gp);
        return og_oom_context(og_oom(), "lexer");
    }
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        gp[i] = (gre_part){parts[i].re, parts[i].len, parts[i].coef, parts[i].exp};
        key[k++] = parts[i].re ? 'r' : 'm';
        size_t l = parts[i].re ? parts[i].len : 8;
        memcpy(key + k, &l, sizeof l);
        k += sizeof l;
        if (parts[i].re) {
            memcpy(key + k, parts[i].re, l);
        } else {
            memcpy(key + k, &parts[i].coef, 4);
            memcpy(key + k + 4, &parts[i].exp, 4);
        }
        k += l;
    }
    og_status *st = add_lexeme(lex, 'a', key, len, what ? what : "regex", gp, n, id);
    free(key);
    free(gp);
    return st;
}

/* Room for one more exclusion branch of lexeme `id`. */
static og_status *veto_room(glex *lex, int id)
{
    if (id < 0 || id >= lex->n_lex)
        return og_errorf(OG_ERR_INVALID_ARGUMENT, "lexer: no lexeme %d to exclude from", id);
    lexeme *l = &lex->lex[id];
    uint32_t *v = realloc(l->vetos, (l->n_vetos + 1) * sizeof *v);
    if (!v) return og_oom_context(og_oom(), "lexer");
    l->vetos = v;
    return NULL;
}

og_status *glex_exclude(glex *lex, int id, const uint8_t *bytes, size_t len)
{
    OG_TRY(veto_room(lex, id));
    lexeme *l = &lex->lex[id];
    uint32_t n0 = lex->nfa.n;
    uint32_t entry = gnfa_add(&lex->nfa, GN_VETO, 0, 0, (uint32_t)id, GN_NONE);
    if (entry != GN_NONE) lex->nfa.st[entry].veto |= 1;
    for (size_t i = len; i-- > 0 && entry != GN_NONE;) {
        entry = gnfa_add(&lex->nfa, GN_RANGE, bytes[i], bytes[i], entry, GN_NONE);
        if (entry != GN_NONE) lex->nfa.st[entry].veto |= 1;
    }
    if (entry == GN_NONE) {
        gnfa_truncate(&lex->nfa, n0);
        return og_oom_context(og_oom(), "lexer: exclusion from %s", l->desc);
    }
    l->vetos[l->n_vetos++] = entry;
    if (lex->n_ds) dfa_reset(lex);
    return NULL;
}

og_status *glex_exclude_regex(glex *lex, int id, const char *re, size_t len, const char *what)
{
    OG_TRY(veto_room(lex, id));
    lexeme *l = &lex->lex[id];
    uint32_t n0 = lex->nfa.n, entry = GN_NONE;
    uint32_t end = gnfa_add(&lex->nfa, GN_VETO, 0, 0, (uint32_t)id, GN_NONE);
    og_status *st = end == GN_NONE ? og_oom_context(og_oom(), "lexer: NFA states")
                                   : gre_compile(&lex->nfa, re, len, what, end, &entry);
    if (st) {
        gnfa_truncate(&lex->nfa, n0);
        return st;
    }
    for (uint32_t i = n0; i < lex->nfa.n; i++) lex->nfa.st[i].veto |= 1;
    l->vetos[l->n_vetos++] = entry;
    if (lex->n_ds) dfa_reset(lex);
    return NULL;
}

size_t glex_escape(const uint8_t *bytes, size_t len, char *buf, size_t cap)
{
    static const char meta[] = "\\.+*?()|[]{}^$#&-~";
    size_t w = 0;
    char tmp[8];
    for (size_t i = 0; i < len; i++) {
        uint8_t c = bytes[i];
        int n;
        if (c < 0x20 || c == 0x7F) n = snprintf(tmp, sizeof tmp, "\\x%02X", c);
        else if (c < 0x80 && strchr(meta, c)) n = snprintf(tmp, sizeof tmp, "\\%c", c);
        else tmp[0] = (char)c, n = 1;
        for (int k = 0; k < n; k++, w++)
            if (w + 1 < cap) buf[w] = tmp[k];
    }
    if (cap) buf[w < cap ? w : cap - 1] = 0;
    return w;
}

bool glex_lexeme_empty(const glex *lex, int id)
{
    if (id < 0 || id >= lex->n_lex) return true;
    const gnfa_state *st = &lex->nfa.st[lex->lex[id].start];
    return st->kind == GN_SPLIT && st->out == GN_NONE && st->out2 == GN_NONE;
}

int glex_count(const glex *lex) { return lex->n_lex; }

size_t glex_words(const glex *lex) { return ((size_t)lex->n_lex + 63) / 64; }

const char *glex_describe(const glex *lex, int id)
{
    if (id < 0 || id >= lex->n_lex) return "?";
    return lex->lex[id].desc;
}

void glex_set_limits(glex *lex, size_t max_states, size_t max_bytes)
{
    lex->max_states = max_states;
    lex->max_bytes = max_bytes;
}

/* ---- the DFA ---- */

static uint32_t failed(glex *lex, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static uint32_t failed(glex *lex, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(lex->err, sizeof lex->err, fmt, ap);
    va_end(ap);
    return GLEX_FAILED;
}

#define OOM_STATES(lex) failed((lex), "lexer: out of memory at %u DFA states", (lex)->n_ds)

static bool scratch(glex *lex)
{
    size_t n = lex->nfa.n;
    if (n <= lex->cap_scratch && lex->veto_bits) return true;
    uint32_t *mark = calloc(n + 1, sizeof *mark);
    uint32_t *stack = malloc((n + 1 + VMARK_MAX) * sizeof *stack);
    uint32_t *buf = malloc((n + 1 + VMARK_MAX) * sizeof *buf);
    uint64_t *vb = calloc(glex_words(lex) + 1, sizeof *vb);
    if (!mark || !stack || !buf || !vb) {
        free(mark);
        free(stack);
        free(buf);
        free(vb);
        return false;
    }
    free(lex->mark);
    free(lex->stack);
    free(lex->buf);
    free(lex->veto_bits);
    lex->mark = mark;
    lex->stack = stack;
    lex->buf = buf;
    lex->veto_bits = vb;
    lex->gen = 0;
    lex->cap_scratch = n;
    return true;
}

static void new_gen(glex *lex)
{
    if (++lex->gen == 0) {
        memset(lex->mark, 0, lex->cap_scratch * sizeof *lex->mark);
        memset(lex->vmark_gen, 0, sizeof lex->vmark_gen);
        lex->gen = 1;
    }
    lex->vmarked = 0;
    lex->vfull = false;
}

/* Marks state x seen in this generation; false when it already was. Virtual states (a
 * repeat's copies, regex.h) in a small hash set; past VMARK_MAX of them in one
 * generation lex->vfull is set and they count as seen. */
static bool mark_new(glex *lex, uint32_t x)
{
    if (x < lex->cap_scratch) {
        if (lex->mark[x] == lex->gen) return false;
        lex->mark[x] = lex->gen;
        return true;
    }
    uint32_t h = (x * 2654435761u) & (VMARK_SLOTS - 1);
    for (;; h = (h + 1) & (VMARK_SLOTS - 1)) {
        if (lex->vmark_gen[h] != lex->gen) break;
        if (lex->vmark_key[h] == x) return false;
    }
    if (lex->vmarked >= VMARK_MAX) {
        lex->vfull = true;
        return false;
    }
    lex->vmarked++;
    lex->vmark_gen[h] = lex->gen;
    lex->vmark_key[h] = x;
    return true;
}

/* Adds the important states reachable from `s` by epsilon moves to lex->buf. */
static size_t closure(glex *lex, uint32_t s, size_t n)
{
    size_t sp = 0;
    if (s == GN_NONE || !mark_new(lex, s)) return n;
    lex->stack[sp++] = s;
    gnfa_state tmp;
    while (sp) {
        uint32_t x = lex->stack[--sp];
        const gnfa_state *st = gnfa_get(&lex->nfa, x, &tmp);
        lex->work++;
        if (st->kind != GN_SPLIT) {
            lex->buf[n++] = x;
            continue;
        }
        uint32_t o1 = st->out, o2 = st->out2;
        if (o2 != GN_NONE && mark_new(lex, o2)) lex->stack[sp++] = o2;
        if (o1 != GN_NONE && mark_new(lex, o1)) lex->stack[sp++] = o1;
    }
    return n;
}

static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return x < y ? -1 : x > y;
}

typedef struct setref {
    const glex *lex;
    const uint32_t *set;
    size_t n;
} setref;

static bool set_eq(const void *ctx, uint32_t v)
{
    const setref *r = ctx;
    const dstate *d = &r->lex->ds[v];
    return d->set_len == r->n &&
           !memcmp(r->lex->sets + d->set_off, r->set, r->n * sizeof *r->set);
}

/* State 0: the empty set, every transition back to itself. */
static bool add_dead(glex *lex)
{
    lex->ds = malloc(16 * sizeof *lex->ds);
    lex->trans = calloc(16 * 256, sizeof *lex->trans);
    if (!lex->ds || !lex->trans) return false;
    lex->cap_ds = 16;
    lex->ds[0] = (dstate){0, 0, NULL, false, -1};
    lex->n_ds = 1;
    lex->words = glex_words(lex);
    lex->bytes = 256 * sizeof *lex->trans + sizeof *lex->ds;
    return true;
}

/* Room for one accept set of lex->words words. */
static uint64_t *acc_alloc(glex *lex)
{
    size_t words = lex->words, block = words > ACC_BLOCK ? words : ACC_BLOCK;
    if (!lex->n_acc_blocks || lex->acc_used + words > block) {
        uint64_t **b = realloc(lex->acc_blocks, (lex->n_acc_blocks + 1) * sizeof *b);
        if (!b) return NULL;
        lex->acc_blocks = b;
        if (!(b[lex->n_acc_blocks] = malloc(block * sizeof **b))) return NULL;
        lex->n_acc_blocks++;
        lex->acc_used = 0;
        lex->bytes += block * sizeof **b;
    }
    uint64_t *a = lex->acc_blocks[lex->n_acc_blocks - 1] + lex->acc_used;
    memset(a, 0, words * sizeof *a);
    return a;
}

/* The DFA state of the set in lex->buf[0..n) (sorted here); GLEX_DEAD when it holds no
 * state outside exclusion branches. */
static uint32_t intern(glex *lex, size_t n)
{
    uint32_t *set = lex->buf;
    bool live = false;
    if (lex->vfull) {
        lex->vfull = false;
        return failed(lex, "lexer: a repeat's copies alive at once passed %d", VMARK_MAX);
    }
    gnfa_state tmp;
    for (size_t i = 0; i < n && !live; i++) live = !(gnfa_get(&lex->nfa, set[i], &tmp)->veto & 1);
    if (!live) return GLEX_DEAD;
    qsort(set, n, sizeof *set, cmp_u32);
    setref r = {lex, set, n};
    uint64_t h = hash_words(set, n * sizeof *set);
    if (lex->by_set.cap) {
        size_t j = imap_find(&lex->by_set, h, set_eq, &r);
        if (lex->by_set.slot[j]) return lex->by_set.slot[j] - 1;
    }
    size_t words = lex->words;
    size_t add = 256 * sizeof *lex->trans + sizeof *lex->ds + n * sizeof *set + words * 8 + 16;
    if (lex->n_ds >= lex->max_states)
        return failed(lex, "lexer: the DFA passed its limit of %zu states (%zu bytes of tables)",
                      lex->max_states, lex->bytes);
    if (lex->bytes + add > lex->max_bytes)
        return failed(lex, "lexer: the DFA passed its limit of %zu bytes of tables (%u states)",
                      lex->max_bytes, lex->n_ds);
    if (!imap_grow(&lex->by_set)) return OOM_STATES(lex);
    if (lex->n_ds == lex->cap_ds) {
        /* doubling, but not past the state limit: the table is most of the memory */
        size_t want = (size_t)lex->cap_ds * 2, most = lex->max_states + 1;
        uint32_t cap = (uint32_t)(want < most ? want : most > lex->cap_ds ? most : want);
        dstate *ds = realloc(lex->ds, (size_t)cap * sizeof *ds);
        if (!ds) return OOM_STATES(lex);
        lex->ds = ds;
        uint32_t *tr = realloc(lex->trans, (size_t)cap * 256 * sizeof *tr);
        if (!tr) return OOM_STATES(lex);
        lex->trans = tr;
        lex->cap_ds = cap;
    }
    if (!grow((void **)&lex->sets, &lex->cap_sets, lex->n_sets + n, sizeof *lex->sets))
        return OOM_STATES(lex);
    /* accepts: ACCEPT states minus VETO states */
    uint64_t *acc = NULL;
    bool extend = false, any_veto = false;
    for (size_t i = 0; i < n; i++) {
        const gnfa_state *st = gnfa_get(&lex->nfa, set[i], &tmp);
        if (st->kind == GN_RANGE && !(st->veto & 1)) extend = true;
        if (st->kind == GN_VETO) {
            lex->veto_bits[st->out / 64] |= 1ull << (st->out % 64);
            any_veto = true;
        }
        if (st->kind != GN_ACCEPT) continue;
        if (!acc && !(acc = acc_alloc(lex))) return OOM_STATES(lex);
        acc[st->out / 64] |= 1ull << (st->out % 64);
    }
    if (acc) {
        bool any = false;
        for (size_t w = 0; w < words; w++) {
            if (any_veto) acc[w] &= ~lex->veto_bits[w];
            any = any || acc[w];
        }
        if (any) lex->acc_used += words; /* else the room is reused */
        else acc = NULL;
    }
    if (any_veto) memset(lex->veto_bits, 0, words * sizeof *lex->veto_bits);
    /* a lazy lexeme complete here ends the lexeme here, whatever else could go on */
    bool cut = false;
    for (size_t w = 0; acc && w < words && w < lex->lazy_words && !cut; w++)
        cut = (acc[w] & lex->lazy_bits[w]) != 0;
    if (cut) { /* and only the lazy ones are complete (llguidance's lexer) */
        extend = false;
        for (size_t w = 0; w < words; w++)
            acc[w] &= w < lex->lazy_words ? lex->lazy_bits[w] : 0;
    }
    /* Only vetoed accepts and no way on (an excluded key read whole): no lexeme of the
     * start set matches any extension, which is what dead means. */
    if (!acc && !extend) return GLEX_DEAD;
    uint32_t id = lex->n_ds++;
    memcpy(lex->sets + lex->n_sets, set, n * sizeof *set);
    int32_t hidden = -1;
    for (size_t w = 0; cut && w < words && w < lex->lazy_words && hidden < 0; w++)
        if (acc[w]) {
            int first = (int)(w * 64) + __builtin_ctzll(acc[w]);
            hidden = lex->lex[first].n_hidden ? first : -1;
            break;
        }
    lex->ds[id] = (dstate){(uint32_t)lex->n_sets, (uint32_t)n, acc, extend, hidden};
    lex->n_sets += n;
    for (int b = 0; b < 256; b++) lex->trans[(size_t)id * 256 + b] = cut ? GLEX_DEAD : UNKNOWN;
    size_t j = imap_find(&lex->by_set, h, set_eq, &r);
    lex->by_set.slot[j] = id + 1;
    lex->by_set.hash[j] = h;
    lex->by_set.n++;
    lex->bytes += add;
    return id;
}

typedef struct startref {
    const glex *lex;
    const uint64_t *allowed;
} startref;

static bool start_eq(const void *ctx, uint32_t v)
{
    const startref *r = ctx;
    return !memcmp(r->lex->starts + (size_t)v * (r->lex->words + 1), r->allowed,
                   r->lex->words * sizeof *r->allowed);
}

uint32_t glex_start(glex *lex, const uint64_t *allowed)
{
    size_t words = glex_words(lex);
    if (lex->n_ds == 0 || lex->words != words) {
        dfa_reset(lex);
        if (!add_dead(lex)) return OOM_STATES(lex);
    }
    if (!scratch(lex)) return OOM_STATES(lex);
    startref r = {lex, allowed};
    uint64_t h = hash_words(allowed, words * sizeof *allowed);
    if (lex->by_start.cap) {
        size_t j = imap_find(&lex->by_start, h, start_eq, &r);
        if (lex->by_start.slot[j])
            return (uint32_t)lex->starts[(size_t)(lex->by_start.slot[j] - 1) * (words + 1) + words];
    }
    new_gen(lex);
    size_t n = 0;
    for (int i = 0; i < lex->n_lex; i++) {
        if (!(allowed[i / 64] >> (i % 64) & 1)) continue;
        n = closure(lex, lex->lex[i].start, n);
        for (size_t v = 0; v < lex->lex[i].n_vetos; v++) n = closure(lex, lex->lex[i].vetos[v], n);
    }
    uint32_t s = intern(lex, n);
    if (s == GLEX_FAILED) return s;
    if (!imap_grow(&lex->by_start) ||
        !grow((void **)&lex->starts, &lex->cap_starts, (lex->n_starts + 1) * (words + 1),
              sizeof *lex->starts))
        return s; /* not cached: still correct */
    uint64_t *e = lex->starts + lex->n_starts * (words + 1);
    memcpy(e, allowed, words * sizeof *e);
    e[words] = s;
    size_t j = imap_find(&lex->by_start, h, start_eq, &r);
    lex->by_start.slot[j] = (uint32_t)lex->n_starts + 1;
    lex->by_start.hash[j] = h;
    lex->by_start.n++;
    lex->n_starts++;
    return s;
}

uint32_t glex_next(glex *lex, uint32_t state, uint8_t byte)
{
    uint32_t t = lex->trans[(size_t)state * 256 + byte];
    if (t != UNKNOWN) return t;
    new_gen(lex);
    size_t n = 0;
    const dstate *d = &lex->ds[state];
    /* the bytes [lo, hi] around `byte` that every range of the set takes or leaves alike
     * move to the same set: their transitions are this one */
    unsigned lo = 0, hi = 255;
    gnfa_state tmp;
    for (uint32_t i = 0; i < d->set_len; i++) {
        const gnfa_state *st = gnfa_get(&lex->nfa, lex->sets[d->set_off + i], &tmp);
        if (st->kind != GN_RANGE) continue;
        if (st->lo <= byte && byte <= st->hi) {
            n = closure(lex, st->out, n);
            if (st->lo > lo) lo = st->lo;
            if (st->hi < hi) hi = st->hi;
        } else if (st->hi < byte) {
            if (st->hi + 1u > lo) lo = st->hi + 1u;
        } else if (st->lo - 1u < hi) {
            hi = st->lo - 1u;
        }
    }
    t = intern(lex, n);
    if (t != GLEX_FAILED) {
        /* intern may have moved the table */
        uint32_t *row = lex->trans + (size_t)state * 256;
        for (unsigned b = lo; b <= hi; b++) row[b] = t;
    }
    return t;
}

const uint64_t *glex_accepts(const glex *lex, uint32_t state)
{
    return state < lex->n_ds ? lex->ds[state].acc : NULL;
}

bool glex_can_extend(glex *lex, uint32_t state)
{
    return state < lex->n_ds && lex->ds[state].extend;
}

og_status *glex_error(const glex *lex)
{
    if (!lex->err[0]) return NULL;
    return og_errorf(strstr(lex->err, "out of memory") ? OG_ERR_OUT_OF_MEMORY : OG_ERR_RUNTIME,
                     "%s", lex->err);
}

size_t glex_states(const glex *lex) { return lex->n_ds; }

size_t glex_work(const glex *lex) { return lex->work; }

/* ---- the strings of a finite expression (Lark's stop=/regex/) ---- */

typedef struct strwalk {
    const gnfa *nfa;
    uint8_t *mark;     /* per NFA state: in the set being built */
    uint8_t *buf;      /* the string so far */
    size_t max_n, max_len, n;
    uint8_t *out;      /* the strings, each max_len bytes */
    size_t *lens;
    size_t nodes;      /* sets visited, bounded */
    int why;           /* 0 ok; 1 too many strings; 2 too long (or endless); 3 memory */
} strwalk;

/* Adds the epsilon closure of x to set (n states so far; the NFA has no virtual states). */
static bool sw_close(strwalk *w, uint32_t x, uint32_t *set, size_t *n)
{
    if (x == GN_NONE || w->mark[x]) return true;
    w->mark[x] = 1;
    set[(*n)++] = x;
    const gnfa_state *st = &w->nfa->st[x];
    if (st->kind == GN_SPLIT) return sw_close(w, st->out, set, n) && sw_close(w, st->out2, set, n);
    return true;
}

static void sw_walk(strwalk *w, const uint32_t *set, size_t n, size_t len)
{
    if (w->why || ++w->nodes > (size_t)1 << 16) {
        if (!w->why) w->why = 1;
        return;
    }
    bool any_range = false;
    for (size_t i = 0; i < n; i++) {
        const gnfa_state *st = &w->nfa->st[set[i]];
        if (st->kind == GN_ACCEPT) {
            if (w->n == w->max_n) {
                w->why = 1;
                return;
            }
            memcpy(w->out + w->n * w->max_len, w->buf, len);
            w->lens[w->n++] = len;
        }
        any_range |= st->kind == GN_RANGE;
    }
    if (!any_range) return;
    if (len == w->max_len) {
        w->why = 2;
        return;
    }
    uint32_t *next = malloc(sizeof *next * w->nfa->n);
    if (!next) {
        w->why = 3;
        return;
    }
    for (int b = 0; b < 256 && !w->why; b++) {
        size_t m = 0;
        for (size_t i = 0; i < n && m < w->nfa->n; i++) {
            const gnfa_state *st = &w->nfa->st[set[i]];
            if (st->kind == GN_RANGE && b >= st->lo && b <= st->hi) sw_close(w, st->out, next, &m);
        }
        for (size_t i = 0; i < m; i++) w->mark[next[i]] = 0;
        if (!m) continue;
        w->buf[len] = (uint8_t)b;
        sw_walk(w, next, m, len + 1);
    }
    free(next);
}

og_status *glex_regex_strings(const char *re, size_t len, bool ext, const char *what,
                              size_t max_n, size_t max_len, uint8_t **strs, size_t **lens,
                              size_t *n)
{
    *strs = NULL;
    *lens = NULL;
    *n = 0;
    gnfa sc = {.max = GRE_MAX_STATES, .plain = 1};
    uint32_t acc = gnfa_add(&sc, GN_ACCEPT, 0, 0, 0, GN_NONE), entry = GN_NONE;
    og_status *st = acc == GN_NONE ? og_oom_context(og_oom(), "lexer")
                    : (ext ? gre_compile_ext : gre_compile)(&sc, re, len, what, acc, &entry);
    if (!st && !prune(&sc, 0)) st = og_oom_context(og_oom(), "lexer");
    if (!st && sc.n > 65536) /* its closures recurse: bounded by states, not strings */
        st = og_errorf(OG_ERR_UNSUPPORTED, "%s: has too many strings", what ? what : "regex");
    strwalk w = {.nfa = &sc, .max_n = max_n, .max_len = max_len};
    uint32_t *set = st ? NULL : malloc(sizeof *set * (sc.n + 1));
    w.mark = st ? NULL : calloc(sc.n + 1, 1);
    w.buf = st ? NULL : malloc(max_len + 1);
    w.out = st ? NULL : malloc(max_n * max_len + 1);
    w.lens = st ? NULL : malloc(sizeof *w.lens * (max_n + 1));
    if (!st && (!set || !w.mark || !w.buf || !w.out || !w.lens)) st = og_oom_context(og_oom(), "lexer");
    if (!st) {
        size_t m = 0;
        sw_close(&w, entry, set, &m);
        for (size_t i = 0; i < m; i++) w.mark[set[i]] = 0;
        sw_walk(&w, set, m, 0);
        if (w.why == 3) st = og_oom_context(og_oom(), "lexer");
        else if (w.why)
            st = og_errorf(OG_ERR_UNSUPPORTED, "%s: %s", what ? what : "regex",
                           w.why == 1 ? "has too many strings" : "has strings too long (or endless)");
    }
    free(set);
    free(w.mark);
    free(w.buf);
    free(sc.st);
    free(sc.reps);
    if (st) {
        free(w.out);
        free(w.lens);
        return st;
    }
    *strs = w.out;
    *lens = w.lens;
    *n = w.n;
    return NULL;
}

/* ---- attributes: hidden stops and token counts ---- */

int glex_hidden_lexeme(const glex *lex, uint32_t state)
{
    return state < lex->n_ds ? lex->ds[state].hidden : -1;
}

const uint8_t *glex_hidden(const glex *lex, int id, size_t *len)
{
    *len = id >= 0 && id < lex->n_lex ? lex->lex[id].n_hidden : 0;
    return *len ? lex->lex[id].hidden : NULL;
}

uint32_t glex_max_tokens(const glex *lex, int id)
{
    return id >= 0 && id < lex->n_lex ? lex->lex[id].max_tokens : 0;
}

bool glex_any_max_tokens(const glex *lex) { return lex->any_max_tokens; }

bool glex_eos_ends(const glex *lex, uint32_t state)
{
    const uint64_t *acc = glex_accepts(lex, state);
    for (size_t w = 0; acc && w < lex->eos_words; w++)
        if (acc[w] & lex->eos_bits[w]) return true;
    return false;
}

/* owner[s]: the lexeme whose fragment (or exclusion branch) holds NFA state s; each
 * lexeme's states are reached only from its own entries. */
static bool owners(glex *lex)
{
    if (lex->owner && lex->n_owner == lex->nfa.n) return true;
    free(lex->owner);
    uint32_t n = lex->nfa.n;
    lex->owner = malloc((n ? n : 1) * sizeof *lex->owner);
    uint32_t *stack = malloc((n ? n : 1) * sizeof *stack);
    if (!lex->owner || !stack) {
        free(stack);
        free(lex->owner);
        lex->owner = NULL;
        lex->n_owner = 0;
        return false;
    }
    for (uint32_t i = 0; i < n; i++) lex->owner[i] = UINT32_MAX;
    for (int i = 0; i < lex->n_lex; i++) {
        const lexeme *l = &lex->lex[i];
        for (size_t e = 0; e <= l->n_vetos; e++) {
            uint32_t s0 = e ? l->vetos[e - 1] : l->start;
            if (s0 == GN_NONE || s0 >= n || lex->owner[s0] != UINT32_MAX) continue;
            size_t sp = 0;
            lex->owner[s0] = (uint32_t)i;
            stack[sp++] = s0;
            while (sp) {
                const gnfa_state *st = &lex->nfa.st[stack[--sp]];
                if (st->kind != GN_RANGE && st->kind != GN_SPLIT) continue;
                uint32_t nx[2] = {st->out, st->kind == GN_SPLIT ? st->out2 : GN_NONE};
                for (int k = 0; k < 2; k++)
                    if (nx[k] != GN_NONE && nx[k] < n && lex->owner[nx[k]] == UINT32_MAX) {
                        lex->owner[nx[k]] = (uint32_t)i;
                        stack[sp++] = nx[k];
                    }
            }
        }
    }
    free(stack);
    lex->n_owner = n;
    return true;
}

bool glex_possible(glex *lex, uint32_t state, uint64_t *out)
{
    memset(out, 0, glex_words(lex) * sizeof *out);
    if (state == GLEX_DEAD || state >= lex->n_ds) return true;
    if (!owners(lex)) return false;
    const dstate *d = &lex->ds[state];
    for (uint32_t i = 0; i < d->set_len; i++) {
        uint32_t o = lex->owner[gnfa_template(&lex->nfa, lex->sets[d->set_off + i])];
        if (o != UINT32_MAX) out[o / 64] |= 1ull << (o % 64);
    }
    return true;
}

uint32_t glex_limit(glex *lex, uint32_t state, const uint64_t *allowed)
{
    if (state == GLEX_DEAD || state >= lex->n_ds) return GLEX_DEAD;
    if (!owners(lex) || !scratch(lex)) return OOM_STATES(lex);
    const dstate *d = &lex->ds[state];
    size_t n = 0;
    for (uint32_t i = 0; i < d->set_len; i++) {
        uint32_t s = lex->sets[d->set_off + i], o = lex->owner[gnfa_template(&lex->nfa, s)];
        if (o != UINT32_MAX && (allowed[o / 64] >> (o % 64) & 1)) lex->buf[n++] = s;
    }
    return intern(lex, n);
}

bool glex_forced_prefix(glex *lex, int id, const uint8_t *bytes, size_t len, bool *out)
{
    *out = false;
    size_t words = glex_words(lex);
    uint64_t *one = calloc(words ? words : 1, sizeof *one);
    if (!one) return false;
    one[id / 64] |= 1ull << (id % 64);
    uint32_t s = glex_start(lex, one);
    free(one);
    if (s == GLEX_FAILED) return false;
    for (size_t i = 0; i < len; i++) {
        if (s == GLEX_DEAD || glex_accepts(lex, s)) return true;
        for (int b = 0; b < 256; b++) {
            uint32_t nx = glex_next(lex, s, (uint8_t)b);
            if (nx == GLEX_FAILED) return false;
            if (nx != GLEX_DEAD && b != bytes[i]) return true;
        }
        s = glex_next(lex, s, bytes[i]);
    }
    *out = s != GLEX_DEAD;
    return true;
}
