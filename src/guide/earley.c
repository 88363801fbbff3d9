/* The Earley recognizer (earley.h). An item is a dotted rule (a "position": rule r's
 * positions are numbered rule_pos[r] + dot) and the set where the rule began. */
#include "guide/earley.h"

#include <stdlib.h>
#include <string.h>

#define POS_END INT32_MAX /* the symbol after the dot of a finished rule */

struct gearley_tab {
    const gcfg *cfg;
    size_t words;      /* of a lexeme set */
    size_t n_pos;
    gsym *pos_next;    /* the symbol after the dot, or POS_END */
    gsym *pos_lhs;     /* the rule's left side */
    uint32_t *rule_pos; /* the first position of each rule */
    gsym start;
};

typedef struct gitem {
    uint32_t pos, origin;
} gitem;

struct gearley {
    const gearley_tab *t;
    gitem *items;
    size_t n_items, cap_items;
    size_t *set_start;   /* set k's items: [set_start[k], set_start[k + 1]) */
    uint64_t *expected;  /* words per set */
    uint8_t *complete;
    uint32_t *slot;
    size_t n_sets, cap_sets;
    /* Deduplication of the set being built: keys stamped with the set's build number, so
     * the table is never cleared. */
    uint64_t *hkeys;
    uint32_t *hstamp;
    size_t hcap, hcount;
    uint32_t stamp;
    size_t max_items, max_bytes;
};

og_status *gearley_tab_new(const gcfg *cfg, int n_lexemes, gearley_tab **out) {
    gearley_tab *t = calloc(1, sizeof *t);
    if (!t) return og_oom();
    t->cfg = cfg;
    t->words = n_lexemes > 0 ? ((size_t)n_lexemes + 63) / 64 : 1;
    t->start = gcfg_start(cfg);
    size_t nr = gcfg_n_rules(cfg);
    for (size_t r = 0; r < nr; r++) t->n_pos += gcfg_rule_at(cfg, r)->len + 1;
    t->pos_next = malloc((t->n_pos + 1) * sizeof *t->pos_next);
    t->pos_lhs = malloc((t->n_pos + 1) * sizeof *t->pos_lhs);
    t->rule_pos = malloc((nr + 1) * sizeof *t->rule_pos);
    if (!t->pos_next || !t->pos_lhs || !t->rule_pos) {
        gearley_tab_free(t);
        return og_oom();
    }
    uint32_t p = 0;
    for (size_t r = 0; r < nr; r++) {
        const gcfg_rule *ru = gcfg_rule_at(cfg, r);
        t->rule_pos[r] = p;
        for (uint32_t d = 0; d <= ru->len; d++, p++) {
            t->pos_next[p] = d < ru->len ? ru->rhs[d] : POS_END;
            t->pos_lhs[p] = ru->lhs;
        }
    }
    t->rule_pos[nr] = p;
    *out = t;
    return NULL;
}

void gearley_tab_free(gearley_tab *t) {
    if (!t) return;
    free(t->pos_next);
    free(t->pos_lhs);
    free(t->rule_pos);
    free(t);
}

size_t gearley_words(const gearley_tab *t) { return t->words; }

static size_t state_bytes(const gearley *p) {
    return p->cap_items * sizeof(gitem) +
           p->cap_sets * (sizeof(size_t) + p->t->words * 8 + 1 + sizeof(uint32_t)) +
           p->hcap * (sizeof(uint64_t) + sizeof(uint32_t));
}

static og_status *limit_bytes(const gearley *p) {
    return og_errorf(OG_ERR_RUNTIME,
                     "Earley parser: its state would pass %zu bytes (the limit on parser "
                     "memory) after %zu lexemes", p->max_bytes, p->n_sets - 1);
}

static og_status *grow_sets(gearley *p) {
    if (p->n_sets + 1 < p->cap_sets) return NULL;
    size_t c = p->cap_sets ? p->cap_sets * 2 : 64;
    size_t w = p->t->words;
    size_t *ss = realloc(p->set_start, (c + 1) * sizeof *ss);
    if (!ss) return og_oom();
    p->set_start = ss;
    uint64_t *ex = realloc(p->expected, c * w * sizeof *ex);
    if (!ex) return og_oom();
    p->expected = ex;
    uint8_t *co = realloc(p->complete, c);
    if (!co) return og_oom();
    p->complete = co;
    uint32_t *sl = realloc(p->slot, c * sizeof *sl);
    if (!sl) return og_oom();
    p->slot = sl;
    p->cap_sets = c;
    if (state_bytes(p) > p->max_bytes) return limit_bytes(p);
    return NULL;
}

static uint64_t key_of(gitem it) { return (uint64_t)it.pos << 32 | it.origin; }

static og_status *rehash(gearley *p, size_t cap) {
    uint64_t *k = malloc(cap * sizeof *k);
    uint32_t *s = calloc(cap, sizeof *s);
    if (!k || !s) {
        free(k);
        free(s);
        return og_oom();
    }
    free(p->hkeys);
    free(p->hstamp);
    p->hkeys = k;
    p->hstamp = s;
    p->hcap = cap;
    p->stamp = 1;
    /* Re-enter the items of the set being built. */
    size_t k0 = p->set_start[p->n_sets - 1];
    for (size_t i = k0; i < p->n_items; i++) {
        uint64_t key = key_of(p->items[i]);
        size_t h = (size_t)((key * 0x9E3779B97F4A7C15ull) >> 20) & (cap - 1);
        while (p->hstamp[h] == p->stamp) h = (h + 1) & (cap - 1);
        p->hstamp[h] = p->stamp;
        p->hkeys[h] = key;
    }
    return NULL;
}

/* Adds an item to the set being built (the top) unless it is there already. */
static og_status *add(gearley *p, uint32_t pos, uint32_t origin) {
    gitem it = {pos, origin};
    if ((p->hcount + 1) * 2 > p->hcap) {
        OG_TRY(rehash(p, p->hcap ? p->hcap * 2 : 256));
        if (state_bytes(p) > p->max_bytes) return limit_bytes(p);
    }
    uint64_t key = key_of(it);
    size_t h = (size_t)((key * 0x9E3779B97F4A7C15ull) >> 20) & (p->hcap - 1);
    while (p->hstamp[h] == p->stamp) {
        if (p->hkeys[h] == key) return NULL;
        h = (h + 1) & (p->hcap - 1);
    }
    size_t k0 = p->set_start[p->n_sets - 1];
    if (p->n_items - k0 >= p->max_items)
        return og_errorf(OG_ERR_RUNTIME,
                         "Earley parser: a set would hold more than %zu items (the limit on "
                         "items per set) after %zu lexemes", p->max_items, p->n_sets - 1);
    if (p->n_items == p->cap_items) {
        size_t c = p->cap_items ? p->cap_items * 2 : 1024;
        gitem *q = realloc(p->items, c * sizeof *q);
        if (!q) return og_oom();
        p->items = q;
        p->cap_items = c;
        if (state_bytes(p) > p->max_bytes) return limit_bytes(p);
    }
    p->hstamp[h] = p->stamp;
    p->hkeys[h] = key;
    p->hcount++;
    p->items[p->n_items++] = it;
    return NULL;
}

/* Opens a new, empty set on top. */
static og_status *open_set(gearley *p) {
    OG_TRY(grow_sets(p));
    if (state_bytes(p) > p->max_bytes) return limit_bytes(p); /* the limit may have been lowered */
    p->set_start[p->n_sets] = p->n_items;
    p->n_sets++;
    p->set_start[p->n_sets] = p->n_items;
    if (++p->stamp == 0) { /* the stamps wrapped: start the table afresh */
        memset(p->hstamp, 0, p->hcap * sizeof *p->hstamp);
        p->stamp = 1;
    }
    p->hcount = 0;
    return NULL;
}

/* Predicts and completes over the set being built until nothing new appears, then
 * records what it expects and whether the start is complete. */
static og_status *close_set(gearley *p) {
    const gearley_tab *t = p->t;
    size_t k = p->n_sets - 1;
    size_t w = t->words;
    uint64_t *ex = p->expected + k * w;
    memset(ex, 0, w * sizeof *ex);
    bool complete = false;
    for (size_t i = p->set_start[k]; i < p->n_items; i++) {
        gitem it = p->items[i];
        gsym next = t->pos_next[it.pos];
        if (next == POS_END) {
            gsym a = t->pos_lhs[it.pos];
            if (a == t->start && it.origin == 0) complete = true;
            /* A rule finished in the set it began in is nullable: its prediction already
             * stepped over it. */
            if (it.origin == k) continue;
            size_t j0 = p->set_start[it.origin], j1 = p->set_start[it.origin + 1];
            for (size_t j = j0; j < j1; j++) {
                gitem w2 = p->items[j];
                if (t->pos_next[w2.pos] == a) OG_TRY(add(p, w2.pos + 1, w2.origin));
            }
        } else if (GSYM_IS_LEX(next)) {
            int id = GSYM_LEX_ID(next);
            ex[id / 64] |= 1ull << (id % 64);
        } else {
            size_t first, count;
            gcfg_rules_of(t->cfg, next, &first, &count);
            for (size_t r = first; r < first + count; r++)
                OG_TRY(add(p, t->rule_pos[r], (uint32_t)k));
            if (gcfg_nullable(t->cfg, next)) OG_TRY(add(p, it.pos + 1, it.origin));
        }
    }
    p->set_start[p->n_sets] = p->n_items;
    p->complete[k] = complete;
    p->slot[k] = UINT32_MAX;
    return NULL;
}

og_status *gearley_new(const gearley_tab *t, gearley **out) {
    gearley *p = calloc(1, sizeof *p);
    if (!p) return og_oom();
    p->t = t;
    p->max_items = 20000;
    p->max_bytes = (size_t)256 << 20;
    og_status *st = open_set(p);
    if (!st) st = rehash(p, 256);
    if (!st) {
        size_t first, count;
        gcfg_rules_of(t->cfg, t->start, &first, &count);
        for (size_t r = first; r < first + count && !st; r++) st = add(p, t->rule_pos[r], 0);
    }
    if (!st) st = close_set(p);
    if (st) {
        gearley_free(p);
        return st;
    }
    *out = p;
    return NULL;
}

void gearley_free(gearley *p) {
    if (!p) return;
    free(p->items);
    free(p->set_start);
    free(p->expected);
    free(p->complete);
    free(p->slot);
    free(p->hkeys);
    free(p->hstamp);
    free(p);
}

void gearley_set_limits(gearley *p, size_t max_items_per_set, size_t max_bytes) {
    p->max_items = max_items_per_set;
    p->max_bytes = max_bytes;
}

size_t gearley_depth(const gearley *p) { return p->n_sets; }

void gearley_pop_to(gearley *p, size_t depth) {
    if (depth < 1 || depth >= p->n_sets) return;
    p->n_sets = depth;
    p->n_items = p->set_start[depth];
}

og_status *gearley_scan(gearley *p, const uint64_t *lexemes, bool *pushed) {
    *pushed = false;
    if (!gearley_expects_any(p, lexemes)) return NULL;
    const gearley_tab *t = p->t;
    size_t top = p->n_sets - 1;
    size_t i0 = p->set_start[top], i1 = p->set_start[top + 1];
    og_status *st = open_set(p);
    for (size_t i = i0; i < i1 && !st; i++) {
        gitem it = p->items[i];
        gsym next = t->pos_next[it.pos];
        if (next == POS_END || !GSYM_IS_LEX(next)) continue;
        int id = GSYM_LEX_ID(next);
        if (lexemes[id / 64] >> (id % 64) & 1) st = add(p, it.pos + 1, it.origin);
    }
    if (!st) st = close_set(p);
    if (st) {
        gearley_pop_to(p, top + 1);
        return st;
    }
    *pushed = true;
    return NULL;
}

const uint64_t *gearley_expected(const gearley *p) {
    return p->expected + (p->n_sets - 1) * p->t->words;
}

bool gearley_expects_any(const gearley *p, const uint64_t *lexemes) {
    const uint64_t *ex = gearley_expected(p);
    for (size_t i = 0; i < p->t->words; i++)
        if (ex[i] & lexemes[i]) return true;
    return false;
}

bool gearley_complete(const gearley *p) { return p->complete[p->n_sets - 1]; }

uint32_t *gearley_slot(gearley *p) { return &p->slot[p->n_sets - 1]; }
