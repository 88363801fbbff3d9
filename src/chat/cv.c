/* Values: construction in the render arena, and the Python semantics every other part
 * of the engine leans on (truthiness, ==, ordering, iteration, len). */
#include "chat/cv.h"

#include "chat/ustr.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

og_status *crt_err(crt *rt, og_code code, const char *fmt, ...) {
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return og_errorf(code, "%s:%d: %s", rt->origin ? rt->origin : "chat template", rt->line, msg);
}

void *crt_alloc(crt *rt, size_t size) {
    if (size > rt->lim.max_memory || rt->mem_used > rt->lim.max_memory - size) {
        rt->mem_limit_hit = true;
        return NULL;
    }
    void *p = arena_alloc(&rt->mem, size);
    if (p) rt->mem_used += size;
    return p;
}

og_status *crt_mem_err(crt *rt) {
    if (!rt->mem_limit_hit) return crt_err(rt, OG_ERR_OUT_OF_MEMORY, "out of memory");
    return crt_err(rt, OG_ERR_RUNTIME, "LimitError: the template used more than %zu bytes of "
                   "memory (the limit for one render)", rt->lim.max_memory);
}

/* ---- strings, lists, dicts --------------------------------------------------------- */

static void str_fill(cv_str *s, const char *src, size_t len) {
    if (len) memcpy(s->s, src, len);
    s->s[len] = 0;
    s->len = len;
    s->ncp = u8_count(s->s, len);
}

cv_str *cv_str_new(crt *rt, const char *s, size_t len) {
    if (len > rt->lim.max_output) return NULL;
    cv_str *r = crt_alloc(rt, sizeof *r + len + 1);
    if (r) str_fill(r, s, len);
    return r;
}

cv_str *cv_str_in(arena *a, const char *s, size_t len) {
    cv_str *r = arena_alloc(a, sizeof *r + len + 1);
    if (r) str_fill(r, s, len);
    return r;
}

cv_str *cv_str_alloc(crt *rt, size_t len) {
    if (len > rt->lim.max_output) return NULL;
    cv_str *r = crt_alloc(rt, sizeof *r + len + 1);
    if (r) r->len = len;
    return r;
}

void cv_str_done(cv_str *s) {
    s->s[s->len] = 0;
    s->ncp = u8_count(s->s, s->len);
}

og_status *cv_make_str(crt *rt, const char *s, size_t len, cv *out) {
    cv_str *r = cv_str_new(rt, s, len);
    if (!r) {
        if (len > rt->lim.max_output)
            return crt_err(rt, OG_ERR_RUNTIME, "LimitError: a string of %zu bytes is longer than "
                           "the output limit (%zu bytes)", len, rt->lim.max_output);
        return crt_mem_err(rt);
    }
    *out = cv_of_str(r);
    return NULL;
}

cv_list *cv_list_new(crt *rt, size_t cap, cv_seq seq) {
    cv_list *l = crt_alloc(rt, sizeof *l);
    if (!l) return NULL;
    l->seq = (uint8_t)seq;
    if (cap) {
        if (cap > rt->lim.max_memory / sizeof(cv)) return NULL;
        l->v = crt_alloc(rt, cap * sizeof(cv));
        if (!l->v) return NULL;
        l->cap = cap;
    }
    return l;
}

void *crt_grow(crt *rt, void *old, size_t n, size_t *cap, size_t elem) {
    size_t nc = *cap ? *cap * 2 : 4;
    if (nc > rt->lim.max_memory / elem) {
        rt->mem_limit_hit = true;
        return NULL;
    }
    void *p = crt_alloc(rt, nc * elem);
    if (!p) return NULL;
    if (n) memcpy(p, old, n * elem);
    *cap = nc;
    return p;
}

og_status *cv_list_push(crt *rt, cv_list *l, cv v) {
    if (l->n == l->cap) {
        cv *nv = crt_grow(rt, l->v, l->n, &l->cap, sizeof(cv));
        if (!nv) return crt_mem_err(rt);
        l->v = nv;
    }
    l->v[l->n++] = v;
    return NULL;
}

cv_dict *cv_dict_new(crt *rt, size_t cap) {
    cv_dict *d = crt_alloc(rt, sizeof *d);
    if (!d) return NULL;
    if (cap) {
        d->e = crt_alloc(rt, cap * sizeof(cv_entry));
        if (!d->e) return NULL;
        d->cap = cap;
    }
    return d;
}

cv_entry *cv_dict_find_str(const cv_dict *d, const char *key, size_t len) {
    for (size_t i = 0; i < d->n; i++) {
        const cv *k = &d->e[i].key;
        if (k->kind == CV_STR && k->s->len == len && memcmp(k->s->s, key, len) == 0)
            return &d->e[i];
    }
    return NULL;
}

cv_entry *cv_dict_find(const cv_dict *d, cv key) {
    if (key.kind == CV_STR) return cv_dict_find_str(d, key.s->s, key.s->len);
    for (size_t i = 0; i < d->n; i++)
        if (cv_eq(d->e[i].key, key)) return &d->e[i];
    return NULL;
}

og_status *cv_dict_set(crt *rt, cv_dict *d, cv key, cv val) {
    cv_entry *e = cv_dict_find(d, key);
    if (e) {
        e->val = val;
        return NULL;
    }
    if (d->n == d->cap) {
        cv_entry *ne = crt_grow(rt, d->e, d->n, &d->cap, sizeof(cv_entry));
        if (!ne) return crt_mem_err(rt);
        d->e = ne;
    }
    d->e[d->n].key = key;
    d->e[d->n].val = val;
    d->n++;
    return NULL;
}

og_status *cv_dict_set_str(crt *rt, cv_dict *d, const char *key, cv val) {
    cv k;
    OG_TRY(cv_make_str(rt, key, strlen(key), &k));
    return cv_dict_set(rt, d, k, val);
}

/* ---- undefined --------------------------------------------------------------------- */

static cv make_undef(crt *rt, cv_undef_why why, const char *name, const char *owner) {
    cv v = cv_undef();
    cv_undefined *u = crt_alloc(rt, sizeof *u);
    if (!u) return v; /* a plain undefined still behaves; only its message is generic */
    u->why = (uint8_t)why;
    u->name = name;
    u->owner = owner;
    v.u = u;
    return v;
}

cv cv_undef_name(crt *rt, const char *name) { return make_undef(rt, CV_UNDEF_NAME, name, NULL); }

cv cv_undef_attr(crt *rt, cv owner, const char *name) {
    return make_undef(rt, CV_UNDEF_ATTR, name, cv_type_name(owner));
}

cv cv_undef_item(crt *rt, cv owner, cv key) {
    cv v = make_undef(rt, CV_UNDEF_ITEM, NULL, cv_type_name(owner));
    if (v.u) v.u->key = key;
    return v;
}

cv cv_undef_hint(crt *rt, const char *msg) { return make_undef(rt, CV_UNDEF_HINT, msg, NULL); }

cv cv_undef_unsafe(crt *rt, cv owner, const char *name) {
    return make_undef(rt, CV_UNDEF_UNSAFE, name, cv_type_name(owner));
}

og_status *cv_undef_error(crt *rt, cv u) {
    const cv_undefined *x = u.u;
    if (!x) return crt_err(rt, OG_ERR_RUNTIME, "UndefinedError: a value is undefined");
    switch ((cv_undef_why)x->why) {
    case CV_UNDEF_NAME:
        return crt_err(rt, OG_ERR_RUNTIME, "UndefinedError: '%s' is undefined", x->name);
    case CV_UNDEF_ATTR:
        if (!strcmp(x->owner, "NoneType"))
            return crt_err(rt, OG_ERR_RUNTIME, "UndefinedError: 'None' has no attribute '%s'",
                           x->name);
        return crt_err(rt, OG_ERR_RUNTIME, "UndefinedError: '%s object' has no attribute '%s'",
                       x->owner, x->name);
    case CV_UNDEF_ITEM: {
        sbuf b;
        sbuf_init(&b, 200);
        og_status *st = cv_write_repr(rt, &b, x->key);
        og_status_free(st);
        og_status *r = crt_err(rt, OG_ERR_RUNTIME, "UndefinedError: '%s object' has no element %.*s",
                               x->owner, (int)b.n, b.p ? b.p : "?");
        sbuf_free(&b);
        return r;
    }
    case CV_UNDEF_HINT:
        return crt_err(rt, OG_ERR_RUNTIME, "UndefinedError: %s", x->name);
    case CV_UNDEF_UNSAFE:
        return crt_err(rt, OG_ERR_RUNTIME, "SecurityError: access to attribute '%s' of '%s' "
                       "object is unsafe.", x->name, x->owner);
    }
    return crt_err(rt, OG_ERR_RUNTIME, "UndefinedError");
}

/* ---- Python semantics -------------------------------------------------------------- */

const char *cv_type_name(cv v) {
    switch ((cv_kind)v.kind) {
    case CV_UNDEF: return "Undefined";
    case CV_NONE: return "NoneType";
    case CV_BOOL: return "bool";
    case CV_INT: return "int";
    case CV_FLOAT: return "float";
    case CV_STR: return "str";
    case CV_LIST:
        switch ((cv_seq)v.l->seq) {
        case CV_SEQ_LIST: return "list";
        case CV_SEQ_TUPLE: return "tuple";
        case CV_SEQ_GEN: return "generator";
        case CV_SEQ_REVITER: return "list_reverseiterator";
        case CV_SEQ_RANGE: return "range";
        case CV_SEQ_KEYS: return "dict_keys";
        case CV_SEQ_VALUES: return "dict_values";
        case CV_SEQ_ITEMS: return "dict_items";
        }
        return "list";
    case CV_DICT: return "dict";
    case CV_NS: return "Namespace";
    case CV_FUNC:
        if (v.fn->type == CF_MACRO) return "Macro";
        if (v.fn->type == CF_METHOD) return "builtin_function_or_method";
        if (v.fn->type == CF_JOINER) return "Joiner";
        if (v.fn->type == CF_CYCLER) return "Cycler";
        return "function";
    case CV_LOOP: return "LoopContext";
    }
    return "object";
}

bool cv_is_number(cv v) { return v.kind == CV_BOOL || v.kind == CV_INT || v.kind == CV_FLOAT; }

double cv_as_double(cv v) {
    if (v.kind == CV_FLOAT) return v.f;
    if (v.kind == CV_INT) return (double)v.i;
    if (v.kind == CV_BOOL) return v.b ? 1.0 : 0.0;
    return 0.0;
}

static int64_t as_int(cv v) { return v.kind == CV_BOOL ? (int64_t)v.b : v.i; }

static bool list_has_len(const cv_list *l) {
    return l->seq != CV_SEQ_GEN && l->seq != CV_SEQ_REVITER;
}

bool cv_truthy(cv v) {
    switch ((cv_kind)v.kind) {
    case CV_UNDEF:
    case CV_NONE: return false;
    case CV_BOOL: return v.b;
    case CV_INT: return v.i != 0;
    case CV_FLOAT: return v.f != 0.0;
    case CV_STR: return v.s->len != 0;
    case CV_LIST: return list_has_len(v.l) ? v.l->n != 0 : true;
    case CV_DICT: return v.d->n != 0;
    case CV_NS:
    case CV_FUNC:
    case CV_LOOP: return true;
    }
    return false;
}

/* list/tuple/range compare equal only with the same kind (range == list is False). */
static bool same_seq_family(const cv_list *a, const cv_list *b) {
    return a->seq == b->seq;
}

enum { MAX_COMPARE_DEPTH = 512 };

/* Deeper than MAX_COMPARE_DEPTH, structures compare unequal (Python would raise a
 * RecursionError; only a template that builds such nesting on purpose gets there). */
static bool eq_d(cv a, cv b, int depth) {
    if (depth > MAX_COMPARE_DEPTH) return false;
    if (cv_is_number(a) && cv_is_number(b)) {
        if (a.kind == CV_FLOAT || b.kind == CV_FLOAT) return cv_as_double(a) == cv_as_double(b);
        return as_int(a) == as_int(b);
    }
    if (a.kind != b.kind) return false;
    switch ((cv_kind)a.kind) {
    case CV_UNDEF:
    case CV_NONE: return true;
    case CV_STR: return a.s->len == b.s->len && memcmp(a.s->s, b.s->s, a.s->len) == 0;
    case CV_LIST:
        if (a.l == b.l) return true;
        if (!same_seq_family(a.l, b.l) || !list_has_len(a.l)) return false;
        if (a.l->n != b.l->n) return false;
        for (size_t i = 0; i < a.l->n; i++)
            if (!eq_d(a.l->v[i], b.l->v[i], depth + 1)) return false;
        return true;
    case CV_DICT:
        if (a.d->n != b.d->n) return false;
        for (size_t i = 0; i < a.d->n; i++) {
            const cv_entry *e = cv_dict_find(b.d, a.d->e[i].key);
            if (!e || !eq_d(a.d->e[i].val, e->val, depth + 1)) return false;
        }
        return true;
    case CV_NS: return a.d == b.d;
    case CV_FUNC: return a.fn == b.fn;
    case CV_LOOP: return a.loop == b.loop;
    default: return false;
    }
}

bool cv_eq(cv a, cv b) { return eq_d(a, b, 0); }

static bool hashable_d(cv v, int depth) {
    if (depth > MAX_COMPARE_DEPTH) return false;
    if (v.kind == CV_LIST) {
        if (v.l->seq != CV_SEQ_TUPLE) return v.l->seq == CV_SEQ_RANGE || !list_has_len(v.l);
        for (size_t i = 0; i < v.l->n; i++)
            if (!hashable_d(v.l->v[i], depth + 1)) return false;
        return true;
    }
    return v.kind != CV_DICT;
}

bool cv_hashable(cv v) { return hashable_d(v, 0); }

static og_status *cmp_d(crt *rt, cv a, cv b, const char *op, int *res, int depth) {
    if (depth > MAX_COMPARE_DEPTH)
        return crt_err(rt, OG_ERR_RUNTIME, "RecursionError: maximum recursion depth exceeded in "
                       "comparison");
    if (a.kind == CV_UNDEF) return cv_undef_error(rt, a);
    if (b.kind == CV_UNDEF) return cv_undef_error(rt, b);
    if (cv_is_number(a) && cv_is_number(b)) {
        if (a.kind == CV_FLOAT || b.kind == CV_FLOAT) {
            double x = cv_as_double(a), y = cv_as_double(b);
            *res = x < y ? -1 : x > y ? 1 : 0; /* NaN compares as equal here, as no order */
            return NULL;
        }
        int64_t x = as_int(a), y = as_int(b);
        *res = x < y ? -1 : x > y ? 1 : 0;
        return NULL;
    }
    if (a.kind == CV_STR && b.kind == CV_STR) {
        size_t n = a.s->len < b.s->len ? a.s->len : b.s->len;
        int c = memcmp(a.s->s, b.s->s, n); /* UTF-8 byte order is code point order */
        *res = c ? (c < 0 ? -1 : 1) : (a.s->len < b.s->len ? -1 : a.s->len > b.s->len);
        return NULL;
    }
    if (a.kind == CV_LIST && b.kind == CV_LIST && a.l->seq == b.l->seq &&
        (a.l->seq == CV_SEQ_LIST || a.l->seq == CV_SEQ_TUPLE)) {
        size_t n = a.l->n < b.l->n ? a.l->n : b.l->n;
        for (size_t i = 0; i < n; i++) {
            if (eq_d(a.l->v[i], b.l->v[i], depth + 1)) continue;
            return cmp_d(rt, a.l->v[i], b.l->v[i], op, res, depth + 1);
        }
        *res = a.l->n < b.l->n ? -1 : a.l->n > b.l->n;
        return NULL;
    }
    return crt_err(rt, OG_ERR_RUNTIME, "TypeError: '%s' not supported between instances of "
                   "'%s' and '%s'", op, cv_type_name(a), cv_type_name(b));
}

og_status *cv_cmp(crt *rt, cv a, cv b, const char *op, int *res) {
    return cmp_d(rt, a, b, op, res, 0);
}

og_status *cv_iterate(crt *rt, cv v, cv_list **out) {
    switch ((cv_kind)v.kind) {
    case CV_UNDEF: {
        static cv_list empty;
        *out = &empty;
        return NULL;
    }
    case CV_LIST:
        if (!list_has_len(v.l)) {
            if (v.l->consumed) {
                static cv_list spent;
                *out = &spent;
                return NULL;
            }
            v.l->consumed = true;
        }
        *out = v.l;
        return NULL;
    case CV_DICT: {
        cv_list *l = cv_list_new(rt, v.d->n, CV_SEQ_LIST);
        if (!l) return crt_mem_err(rt);
        for (size_t i = 0; i < v.d->n; i++) l->v[l->n++] = v.d->e[i].key;
        *out = l;
        return NULL;
    }
    case CV_STR: {
        cv_list *l = cv_list_new(rt, v.s->ncp, CV_SEQ_LIST);
        if (!l) return crt_mem_err(rt);
        for (size_t i = 0; i < v.s->len;) {
            int32_t cp;
            size_t k = u8_next(v.s->s, v.s->len, i, &cp);
            cv_str *c = cv_str_new(rt, v.s->s + i, k);
            if (!c) return crt_mem_err(rt);
            l->v[l->n++] = cv_of_str(c);
            i += k;
        }
        *out = l;
        return NULL;
    }
    case CV_LOOP: /* jinja2's LoopContext iterates by advancing the loop itself */
        return crt_err(rt, OG_ERR_UNSUPPORTED, "iterating the loop object is not implemented");
    default:
        return crt_err(rt, OG_ERR_RUNTIME, "TypeError: '%s' object is not iterable",
                       cv_type_name(v));
    }
}

og_status *cv_len(crt *rt, cv v, int64_t *out) {
    switch ((cv_kind)v.kind) {
    case CV_UNDEF: *out = 0; return NULL;
    case CV_STR: *out = (int64_t)v.s->ncp; return NULL;
    case CV_LIST:
        if (list_has_len(v.l)) {
            *out = (int64_t)v.l->n;
            return NULL;
        }
        break;
    case CV_DICT: *out = (int64_t)v.d->n; return NULL;
    case CV_LOOP: *out = (int64_t)v.loop->items->n; return NULL;
    default: break;
    }
    return crt_err(rt, OG_ERR_RUNTIME, "TypeError: object of type '%s' has no len()",
                   cv_type_name(v));
}

/* ---- sbuf -------------------------------------------------------------------------- */

void sbuf_init(sbuf *b, size_t limit) {
    b->p = NULL;
    b->n = b->cap = 0;
    b->limit = limit;
    b->oom = false;
}

void sbuf_free(sbuf *b) {
    free(b->p);
    b->p = NULL;
    b->n = b->cap = 0;
}

static bool sbuf_reserve(sbuf *b, size_t more) {
    if (more > b->limit || b->n > b->limit - more) return false;
    if (b->n + more + 1 <= b->cap) return true;
    size_t cap = b->cap ? b->cap : 256;
    while (cap < b->n + more + 1) cap *= 2;
    char *p = realloc(b->p, cap);
    if (!p) {
        b->oom = true;
        return false;
    }
    b->p = p;
    b->cap = cap;
    return true;
}

bool sbuf_add(sbuf *b, const char *s, size_t len) {
    if (!sbuf_reserve(b, len)) return false;
    if (len) memcpy(b->p + b->n, s, len);
    b->n += len;
    b->p[b->n] = 0;
    return true;
}

bool sbuf_addc(sbuf *b, char c) { return sbuf_add(b, &c, 1); }

bool sbuf_adds(sbuf *b, const char *s) { return sbuf_add(b, s, strlen(s)); }

bool sbuf_printf(sbuf *b, const char *fmt, ...) {
    char tmp[256];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    if (n < 0) return false;
    if ((size_t)n < sizeof tmp) return sbuf_add(b, tmp, (size_t)n);
    if (!sbuf_reserve(b, (size_t)n)) return false;
    va_start(ap, fmt);
    vsnprintf(b->p + b->n, (size_t)n + 1, fmt, ap);
    va_end(ap);
    b->n += (size_t)n;
    return true;
}

og_status *sbuf_err(crt *rt, const sbuf *b) {
    if (b->oom) return crt_err(rt, OG_ERR_OUT_OF_MEMORY, "out of memory");
    return crt_err(rt, OG_ERR_RUNTIME, "LimitError: the rendered text passed the output limit "
                   "(%zu bytes)", b->limit);
}
