/* Intersections of languages for the lexer (gre_compile_and): each part becomes an NFA
 * fragment in a scratch NFA, ending in a marker state of its own, and the fragments are
 * folded pairwise into product automata over the pairs of states reachable from the two
 * entries. A pair moves by epsilon when either side does (the left side first), and by a
 * byte when both sides take it (the two byte ranges intersected); a pair of markers is
 * the end. Only reachable pairs are built, so a pattern intersected with a length counter
 * costs about (pattern states) x (counts). The other kind of part, llguidance's
 * multipleOf, is a small deterministic automaton built here directly. */
#include "guide/regex.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- pair maps: open addressing from (a, b) to a state ---- */

typedef struct pmap {
    uint64_t *key; /* (a << 32 | b) + 1; 0 = empty */
    uint32_t *val;
    size_t n, cap; /* cap a power of two, at most half full */
} pmap;

static size_t pmap_slot(const pmap *m, uint64_t k)
{
    uint64_t h = k * 0x9E3779B97F4A7C15ull;
    size_t i = (size_t)(h >> 20) & (m->cap - 1);
    while (m->key[i] && m->key[i] != k) i = (i + 1) & (m->cap - 1);
    return i;
}

static bool pmap_grow(pmap *m)
{
    if (2 * (m->n + 1) <= m->cap) return true;
    size_t cap = m->cap ? m->cap * 2 : 1024;
    pmap o = *m;
    m->key = calloc(cap, sizeof *m->key);
    m->val = malloc(cap * sizeof *m->val);
    if (!m->key || !m->val) {
        free(m->key);
        free(m->val);
        *m = o;
        return false;
    }
    m->cap = cap;
    for (size_t i = 0; i < o.cap; i++)
        if (o.key[i]) {
            size_t j = pmap_slot(m, o.key[i]);
            m->key[j] = o.key[i];
            m->val[j] = o.val[i];
        }
    free(o.key);
    free(o.val);
    return true;
}

static void pmap_free(pmap *m)
{
    free(m->key);
    free(m->val);
}

/* ---- the product of two fragments of `src` ---- */

typedef struct prod {
    const gnfa *src;
    uint32_t end_a, end_b; /* the two fragments' markers */
    gnfa *dst;
    uint32_t dst_end; /* what the pair of markers leads to */
    uint32_t limit;   /* dst->n may not pass this */
    pmap map;
    uint64_t *work; /* pairs waiting to be filled in */
    size_t n_work, cap_work;
    bool full; /* out of memory or past the limit */
} prod;

/* The dst state of pair (a, b), made (empty, to be filled in) the first time. */
static uint32_t pair(prod *p, uint32_t a, uint32_t b)
{
    if (a == GN_NONE || b == GN_NONE || p->full) return GN_NONE;
    uint64_t k = ((uint64_t)a << 32 | b) + 1;
    if (!pmap_grow(&p->map)) {
        p->full = true;
        return GN_NONE;
    }
    size_t j = pmap_slot(&p->map, k);
    if (p->map.key[j]) return p->map.val[j];
    if (p->dst->n >= p->limit) {
        p->full = true;
        return GN_NONE;
    }
    uint32_t s = gnfa_add(p->dst, GN_SPLIT, 0, 0, GN_NONE, GN_NONE);
    if (s == GN_NONE) {
        p->full = true;
        return GN_NONE;
    }
    if (p->n_work == p->cap_work) {
        size_t cap = p->cap_work ? p->cap_work * 2 : 256;
        uint64_t *w = realloc(p->work, cap * sizeof *w);
        if (!w) {
            p->full = true;
            return GN_NONE;
        }
        p->work = w;
        p->cap_work = cap;
    }
    p->work[p->n_work++] = k - 1;
    p->map.key[j] = k;
    p->map.val[j] = s;
    p->map.n++;
    return s;
}

/* Fills in the state of pair (a, b). */
static void fill(prod *p, uint32_t a, uint32_t b, uint32_t s)
{
    /* copies: making pairs may move the states (src and dst are one NFA while folding) */
    const gnfa_state xs = p->src->st[a], ys = p->src->st[b], *x = &xs, *y = &ys;
    uint8_t kind = GN_SPLIT, lo = 0, hi = 0;
    uint32_t out = GN_NONE, out2 = GN_NONE;
    if (a == p->end_a && b == p->end_b) {
        out = p->dst_end;
    } else if (x->kind == GN_SPLIT) {
        out = pair(p, x->out, b);
        out2 = pair(p, x->out2, b);
    } else if (y->kind == GN_SPLIT) {
        out = pair(p, a, y->out);
        out2 = pair(p, a, y->out2);
    } else if (x->kind == GN_RANGE && y->kind == GN_RANGE) {
        lo = x->lo > y->lo ? x->lo : y->lo;
        hi = x->hi < y->hi ? x->hi : y->hi;
        if (lo <= hi) {
            kind = GN_RANGE;
            out = pair(p, x->out, y->out);
            if (out == GN_NONE) kind = GN_SPLIT;
        }
    } /* else a marker against a byte: no way on */
    gnfa_state *d = &p->dst->st[s];
    d->kind = kind;
    d->lo = kind == GN_RANGE ? lo : 0;
    d->hi = kind == GN_RANGE ? hi : 0;
    d->out = out;
    d->out2 = out2;
}

/* The product of the fragments entered at a and b into dst, leading to dst_end. */
static uint32_t product(const gnfa *src, uint32_t a, uint32_t end_a, uint32_t b, uint32_t end_b,
                        gnfa *dst, uint32_t dst_end, uint32_t limit, bool *full)
{
    prod p = {.src = src, .end_a = end_a, .end_b = end_b, .dst = dst, .dst_end = dst_end,
              .limit = limit};
    uint32_t entry = pair(&p, a, b);
    while (p.n_work && !p.full) {
        uint64_t k = p.work[--p.n_work];
        uint32_t x = (uint32_t)(k >> 32), y = (uint32_t)k;
        size_t j = pmap_slot(&p.map, k + 1);
        fill(&p, x, y, p.map.val[j]);
    }
    *full = p.full;
    pmap_free(&p.map);
    free(p.work);
    return p.full ? GN_NONE : entry;
}

/* ---- llguidance's multipleOf: decimal text whose value is a multiple of coef * 10^-exp ----
 *
 * As llguidance's regex engine reads it (derivre's RemainderIs): the integer digits
 * keep the value (in units of 10^-exp) modulo coef, a first state that is not complete
 * standing for 0; with exp > 0 a '.' may follow, and each fraction digit lowers the
 * scale; the text is complete when the remainder is 0. Once the remainder still to go is
 * below 10^scale and 10^scale is at most coef, the rest is forced as exactly `scale`
 * digits (trailing zeros included); once scale and remainder are 0, nothing may follow.
 * No sign, no exponent (the caller adds "-?"). */

typedef struct mult {
    gnfa *nfa;
    uint32_t coef, exp, end, limit;
    uint64_t pow10[20];
    uint32_t *int_hub;  /* coef + 1 (the last: the first state) */
    uint32_t *frac_hub; /* coef * (exp + 1), GN_NONE until made; UINT32_MAX - 1: none */
    bool full;
} mult;

static uint32_t madd(mult *m, uint8_t kind, uint8_t lo, uint8_t hi, uint32_t out, uint32_t out2)
{
    if (m->full || m->nfa->n >= m->limit) {
        m->full = true;
        return GN_NONE;
    }
    uint32_t s = gnfa_add(m->nfa, kind, lo, hi, out, out2);
    if (s == GN_NONE) m->full = true;
    return s;
}

/* One state: its byte transitions (targets GN_NONE skipped) into hub, complete or not. */
static void mhub(mult *m, uint32_t hub, const uint32_t target[11], bool complete)
{
    uint32_t head = GN_NONE;
    for (int i = 10; i >= 0; i--) {
        if (target[i] == GN_NONE) continue;
        uint8_t byte = i < 10 ? (uint8_t)('0' + i) : (uint8_t)'.';
        uint32_t r = madd(m, GN_RANGE, byte, byte, target[i], GN_NONE);
        head = head == GN_NONE ? r : madd(m, GN_SPLIT, 0, 0, r, head);
    }
    if (m->full) return;
    gnfa_state *h = &m->nfa->st[hub];
    h->kind = GN_SPLIT;
    h->out = head;
    h->out2 = complete ? m->end : GN_NONE;
}

/* The fraction's state for remainder rem with `scale` digits left (derivre's
 * mk_remainder_is in its fractional part): GN_NONE when no text completes it. */
static uint32_t mfrac(mult *m, uint32_t rem, uint32_t scale)
{
    if (scale == 0 && rem == 0) return m->end;
    uint64_t to_go = (m->coef - rem) % m->coef, p = m->pow10[scale];
    if (to_go >= p) return GN_NONE;
    if (p <= m->coef) { /* forced: exactly `scale` digits */
        uint32_t s = m->end;
        uint64_t v = to_go;
        for (uint32_t i = 0; i < scale; i++, v /= 10)
            s = madd(m, GN_RANGE, (uint8_t)('0' + v % 10), (uint8_t)('0' + v % 10), s, GN_NONE);
        return s;
    }
    uint32_t *slot = &m->frac_hub[(size_t)rem * (m->exp + 1) + scale];
    if (*slot != GN_NONE) return *slot;
    uint32_t hub = madd(m, GN_SPLIT, 0, 0, GN_NONE, GN_NONE);
    if (hub == GN_NONE) return GN_NONE;
    *slot = hub;
    uint32_t target[11];
    for (int d = 0; d < 10; d++)
        target[d] = mfrac(m, (uint32_t)((rem + d * m->pow10[scale - 1]) % m->coef), scale - 1);
    target[10] = GN_NONE;
    mhub(m, hub, target, rem == 0);
    return hub;
}

/* Most states of the remainder automaton (integer and fraction states together). */
#define MULT_MAX_STATES (1u << 20)

static og_status *multiple_of(gnfa *nfa, uint32_t coef, uint32_t exp, const char *what,
                              uint32_t end, uint32_t limit, uint32_t *entry)
{
    if (coef == 0 || exp > 9)
        return og_errorf(OG_ERR_INVALID_ARGUMENT, "%s: invalid multipleOf", what);
    if ((uint64_t)coef * (exp + 2) > MULT_MAX_STATES)
        return og_errorf(OG_ERR_INVALID_ARGUMENT,
                         "%s: multipleOf with %u significant units is too large (limit %u "
                         "states)", what, coef, MULT_MAX_STATES);
    mult m = {.nfa = nfa, .coef = coef, .exp = exp, .end = end, .limit = limit};
    m.pow10[0] = 1;
    for (int i = 1; i < 20; i++) m.pow10[i] = m.pow10[i - 1] * 10;
    m.int_hub = malloc(sizeof *m.int_hub * ((size_t)coef + 1));
    m.frac_hub = malloc(sizeof *m.frac_hub * (size_t)coef * (exp + 1));
    if (!m.int_hub || !m.frac_hub) m.full = true;
    for (size_t i = 0; i < (size_t)coef * (exp + 1) && !m.full; i++) m.frac_hub[i] = GN_NONE;
    for (uint32_t r = 0; r <= coef && !m.full; r++)
        m.int_hub[r] = madd(&m, GN_SPLIT, 0, 0, GN_NONE, GN_NONE);
    uint64_t unit = m.pow10[exp] % coef;
    for (uint32_t r = 0; r <= coef && !m.full; r++) {
        uint64_t rem = r == coef ? 0 : r; /* the first state counts as 0 */
        uint32_t target[11];
        for (int d = 0; d < 10; d++) target[d] = m.int_hub[(rem * 10 + d * unit) % coef];
        target[10] = exp > 0 ? mfrac(&m, (uint32_t)rem, exp) : GN_NONE;
        mhub(&m, m.int_hub[r], target, r == 0);
    }
    *entry = m.full ? GN_NONE : m.int_hub[coef];
    free(m.int_hub);
    free(m.frac_hub);
    if (*entry == GN_NONE)
        return og_errorf(OG_ERR_INVALID_ARGUMENT, "%s: multipleOf is too large (more than %u "
                         "NFA states)", what, GRE_MAX_STATES);
    return NULL;
}

/* ---- the complement ----
 *
 * Every byte string the fragment (entry .. end in src) does not match, invalid UTF-8
 * included (as llguidance's '~'): the subset construction over its states, made complete
 * (the empty set a sink that takes every byte), with the acceptance flipped. */

/* Most DFA states a complement may have. */
#define NOT_MAX_STATES 4096u

typedef struct dset {
    uint32_t *st; /* sorted important states (RANGE states and the end marker) */
    uint32_t n;
} dset;

static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return x < y ? -1 : x > y;
}

/* Most NFA states the complement's closures may visit in all (a bound on its time). */
#define NOT_MAX_WORK 20000000u

/* The closure of the states in `from` (n of them) into *out, sorted and unique. `mark`
 * is all zero before and after; `trail` has room for every state; *work counts the
 * states visited (false past NOT_MAX_WORK). */
static bool dclosure(const gnfa *g, const uint32_t *from, size_t n, uint8_t *mark,
                     uint32_t *stack, uint32_t *trail, size_t *work, dset *out)
{
    size_t sp = 0, k = 0, nt = 0;
    out->st = NULL;
    out->n = 0;
    for (size_t i = 0; i < n; i++)
        if (from[i] != GN_NONE && !mark[from[i]])
            mark[from[i]] = 1, stack[sp++] = from[i], trail[nt++] = from[i];
    while (sp) {
        uint32_t x = stack[--sp];
        const gnfa_state *st = &g->st[x];
        if (st->kind != GN_SPLIT) continue;
        if (st->out != GN_NONE && !mark[st->out])
            mark[st->out] = 1, stack[sp++] = st->out, trail[nt++] = st->out;
        if (st->out2 != GN_NONE && !mark[st->out2])
            mark[st->out2] = 1, stack[sp++] = st->out2, trail[nt++] = st->out2;
    }
    *work += nt;
    uint32_t *res = malloc(sizeof *res * (nt + 1));
    for (size_t i = 0; i < nt; i++) {
        if (res && g->st[trail[i]].kind != GN_SPLIT) res[k++] = trail[i];
        mark[trail[i]] = 0;
    }
    if (!res || *work > NOT_MAX_WORK) {
        free(res);
        return false;
    }
    qsort(res, k, sizeof *res, cmp_u32);
    out->st = res;
    out->n = (uint32_t)k;
    return true;
}

static uint32_t complement(const gnfa *src, uint32_t entry, uint32_t end, gnfa *dst,
                           uint32_t next, uint32_t limit, bool *full)
{
    *full = false;
    dset *sets = calloc(NOT_MAX_STATES + 1, sizeof *sets);
    uint32_t *hub = malloc(sizeof *hub * (NOT_MAX_STATES + 1));
    uint8_t *mark = calloc(src->n + 1, 1);
    uint32_t *stack = malloc(sizeof *stack * (src->n + 1));
    uint32_t *from = malloc(sizeof *from * (src->n + 1));
    uint32_t *trail = malloc(sizeof *trail * (src->n + 1));
    uint32_t n_sets = 0, result = GN_NONE;
    size_t work = 0;
    bool ok = sets && hub && mark && stack && from && trail;
    /* set 0: the empty set (the sink) */
    if (ok) sets[n_sets++] = (dset){NULL, 0};
    if (ok) {
        ok = dclosure(src, &entry, 1, mark, stack, trail, &work, &sets[1]);
        if (ok) n_sets = 2;
    }
    for (uint32_t i = 0; i < n_sets && ok; i++) {
        uint32_t h = dst->n < limit ? gnfa_add(dst, GN_SPLIT, 0, 0, GN_NONE, GN_NONE) : GN_NONE;
        if (h == GN_NONE) ok = false;
        hub[i] = h;
        /* the byte intervals on which the set's range states agree */
        bool bound[257] = {false};
        bound[0] = bound[256] = true;
        for (uint32_t k = 0; k < sets[i].n; k++) {
            const gnfa_state *st = &src->st[sets[i].st[k]];
            if (st->kind != GN_RANGE) continue;
            bound[st->lo] = true;
            bound[st->hi + 1] = true;
        }
        uint32_t lo = 0;
        uint32_t first_edge = GN_NONE;
        for (uint32_t b = 1; b <= 256 && ok; b++) {
            if (!bound[b]) continue;
            /* [lo, b-1]: the target set */
            size_t nf = 0;
            for (uint32_t k = 0; k < sets[i].n; k++) {
                const gnfa_state *st = &src->st[sets[i].st[k]];
                if (st->kind == GN_RANGE && st->lo <= lo && lo <= st->hi) from[nf++] = st->out;
            }
            dset t;
            ok = dclosure(src, from, nf, mark, stack, trail, &work, &t);
            if (!ok) break;
            uint32_t j = 0;
            if (t.n) {
                for (j = 1; j < n_sets; j++)
                    if (sets[j].n == t.n && !memcmp(sets[j].st, t.st, t.n * sizeof *t.st)) break;
                if (j == n_sets) {
                    if (n_sets > NOT_MAX_STATES) {
                        free(t.st);
                        ok = false;
                        break;
                    }
                    sets[n_sets++] = t;
                } else {
                    free(t.st);
                }
            } else {
                free(t.st);
            }
            /* an edge record: RANGE lo..b-1 to set j, its out patched once j has a hub */
            uint32_t r = dst->n < limit ? gnfa_add(dst, GN_RANGE, (uint8_t)lo, (uint8_t)(b - 1),
                                                   j, GN_NONE)
                                        : GN_NONE;
            uint32_t sp = r == GN_NONE || dst->n >= limit
                              ? GN_NONE
                              : gnfa_add(dst, GN_SPLIT, 0, 0, r, first_edge);
            if (sp == GN_NONE) ok = false;
            first_edge = sp;
            lo = b;
        }
        if (!ok) break;
        bool matched = false;
        for (uint32_t k = 0; k < sets[i].n; k++) matched |= sets[i].st[k] == end;
        dst->st[h].out = first_edge;
        dst->st[h].out2 = matched ? GN_NONE : next;
    }
    /* the RANGE edges point at set numbers: now at their hubs */
    if (ok) {
        for (uint32_t i = 0; i < n_sets; i++) {
            for (uint32_t e = dst->st[hub[i]].out; e != GN_NONE; e = dst->st[e].out2) {
                gnfa_state *r = &dst->st[dst->st[e].out];
                r->out = hub[r->out];
            }
        }
        result = hub[1];
    }
    for (uint32_t i = 0; sets && i < n_sets; i++) free(sets[i].st);
    free(sets);
    free(hub);
    free(mark);
    free(stack);
    free(from);
    free(trail);
    *full = !ok;
    return result;
}

uint32_t gre_complement(const gnfa *src, uint32_t entry, uint32_t end, gnfa *dst, uint32_t next,
                        uint32_t limit)
{
    bool full;
    uint32_t e = complement(src, entry, end, dst, next, limit, &full);
    return full ? GN_NONE : e;
}

/* ---- the intersection ---- */

uint32_t gre_fold(gnfa *sc, const uint32_t *ent, const uint32_t *end, size_t n, gnfa *dst,
                  uint32_t next, uint32_t limit)
{
    uint32_t acc = ent[0], acc_end = end[0];
    for (size_t i = 1; i < n; i++) {
        bool last = i + 1 == n, full = false;
        uint32_t mark = last ? next : gnfa_add(sc, GN_ACCEPT, 0, 0, UINT32_MAX, GN_NONE);
        gnfa *to = last ? dst : sc;
        uint64_t room = (uint64_t)to->n + GRE_MAX_PRODUCT;
        uint32_t lim = last ? limit : room > to->max ? to->max : (uint32_t)room;
        uint32_t e = mark == GN_NONE ? GN_NONE
                                     : product(sc, acc, acc_end, ent[i], end[i], to, mark, lim,
                                               &full);
        if (e == GN_NONE) return GN_NONE;
        acc = e;
        acc_end = mark;
    }
    return acc;
}

og_status *gre_compile_and(gnfa *nfa, const gre_part *parts, size_t n, const char *what,
                           uint32_t next, uint32_t *entry)
{
    what = what ? what : "regex";
    if (n == 0) return og_errorf(OG_ERR_INVALID_ARGUMENT, "%s: an empty intersection", what);
    if (n == 1 && parts[0].re) return gre_compile(nfa, parts[0].re, parts[0].len, what, next, entry);
    /* each part in the scratch NFA, ending in its marker */
    gnfa sc = {.max = GRE_MAX_STATES * 2, .plain = 1};
    uint32_t *ent = malloc(sizeof *ent * n), *end = malloc(sizeof *end * n);
    og_status *st = ent && end ? NULL : og_errorf(OG_ERR_OUT_OF_MEMORY, "%s: out of memory", what);
    for (size_t i = 0; i < n && !st; i++) {
        end[i] = gnfa_add(&sc, GN_ACCEPT, 0, 0, (uint32_t)i, GN_NONE);
        if (end[i] == GN_NONE) {
            st = og_errorf(OG_ERR_OUT_OF_MEMORY, "%s: out of memory", what);
        } else if (parts[i].re) {
            st = gre_compile(&sc, parts[i].re, parts[i].len, what, end[i], &ent[i]);
        } else {
            uint32_t e;
            st = multiple_of(&sc, parts[i].coef, parts[i].exp, what, end[i], sc.max, &e);
            if (!st) { /* an optional '-' first */
                uint32_t minus = gnfa_add(&sc, GN_RANGE, '-', '-', e, GN_NONE);
                ent[i] = minus == GN_NONE ? GN_NONE : gnfa_add(&sc, GN_SPLIT, 0, 0, minus, e);
                if (ent[i] == GN_NONE)
                    st = og_errorf(OG_ERR_OUT_OF_MEMORY, "%s: out of memory", what);
            }
        }
    }
    /* fold: (p0 & p1) into the scratch with a marker of its own, ..., the last into nfa */
    if (!st) {
        uint64_t room = (uint64_t)nfa->n + GRE_MAX_PRODUCT;
        uint32_t limit = room > nfa->max ? nfa->max : (uint32_t)room;
        *entry = gre_fold(&sc, ent, end, n, nfa, next, limit);
        if (*entry == GN_NONE)
            st = og_errorf(OG_ERR_INVALID_ARGUMENT, "%s: the intersection is too large (more "
                           "than %u NFA states)", what, GRE_MAX_PRODUCT);
    }
    free(sc.st);
    free(ent);
    free(end);
    return st;
}
