/* jinja2's builtin filters (jinja2/filters.py), as they behave with autoescaping off,
 * plus transformers' tojson. Generators stay generators (select, map, unique, items,
 * batch, slice return one-shot values, as in Python: `|length` on them fails, `|list`
 * works). Filters jinja2 has that chat templates have no use for (groupby, urlize, ...)
 * are known by name and fail with "not implemented" when used. */
#include "chat/eval.h"

#include "chat/ustr.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef og_status *(*filter_fn)(crt *rt, cv in, const cargs *a, cv *out);

#define FILTER(name) static og_status *f_##name(crt *rt, cv in, const cargs *a, cv *out)
#define BIND(fname, nreq, ...)                                                           \
    static const char *const names_[] = {__VA_ARGS__};                                   \
    enum { NP_ = sizeof names_ / sizeof names_[0] };                                     \
    cv v[NP_];                                                                           \
    bool g[NP_];                                                                         \
    OG_TRY(chat_bind(rt, fname, a, names_, NP_, nreq, v, g))
#define NOARGS(fname)                                                                    \
    if (a->npos || a->nkw) return chat_type_err(rt, "%s() takes no arguments", fname)

static og_status *soft_str(crt *rt, cv v, cv *out) {
    if (v.kind == CV_UNDEF) return cv_make_str(rt, "", 0, out);
    return cv_to_str(rt, v, out);
}

static og_status *filter_arg_err(crt *rt, const char *msg) {
    return crt_err(rt, OG_ERR_RUNTIME, "FilterArgumentError: %s", msg);
}

static bool intlike(cv v) { return v.kind == CV_INT || v.kind == CV_BOOL; }
static int64_t ival(cv v) { return v.kind == CV_BOOL ? (int64_t)v.b : v.i; }

static og_status *need_int(crt *rt, cv v, int64_t *out) {
    if (v.kind == CV_UNDEF) return cv_undef_error(rt, v);
    if (!intlike(v))
        return chat_type_err(rt, "'%s' object cannot be interpreted as an integer", cv_type_name(v));
    *out = ival(v);
    return NULL;
}

/* ---- attribute getters (make_attrgetter) --------------------------------------------- */

typedef struct attr_path {
    cv parts[16];
    int n;
    bool none; /* attribute=None: the item itself */
} attr_path;

static og_status *prepare_parts(crt *rt, cv attr, const char *s, size_t len, attr_path *p) {
    p->n = 0;
    p->none = false;
    if (s == NULL) {
        if (attr.kind == CV_NONE || attr.kind == CV_UNDEF) {
            p->none = true;
            return NULL;
        }
        if (attr.kind != CV_STR) {
            p->parts[p->n++] = attr;
            return NULL;
        }
        s = attr.s->s;
        len = attr.s->len;
    }
    size_t start = 0;
    for (size_t i = 0; i <= len; i++) {
        if (i < len && s[i] != '.') continue;
        if (p->n == 16) return filter_arg_err(rt, "attribute path is too long");
        bool digits = i > start;
        for (size_t k = start; k < i; k++)
            if (s[k] < '0' || s[k] > '9') digits = false;
        if (digits) {
            p->parts[p->n++] = cv_int(strtoll(s + start, NULL, 10));
        } else {
            OG_TRY(cv_make_str(rt, s + start, i - start, &p->parts[p->n]));
            p->n++;
        }
        start = i + 1;
    }
    return NULL;
}

static og_status *get_path(crt *rt, cv item, const attr_path *p, cv dflt, bool lower, cv *out) {
    for (int i = 0; i < p->n; i++) {
        OG_TRY(chat_getitem(rt, item, p->parts[i], &item));
        if (dflt.kind != CV_UNDEF && dflt.kind != CV_NONE && item.kind == CV_UNDEF) item = dflt;
    }
    if (lower && item.kind == CV_STR) OG_TRY(chat_str_case(rt, item, 0, &item));
    *out = item;
    return NULL;
}

/* ---- sorting ------------------------------------------------------------------------- */

typedef struct keyed {
    cv key;
    cv item;
} keyed;

/* Stable merge sort with a comparison that may fail (TypeError, undefined). */
static og_status *merge_sort(crt *rt, keyed *v, keyed *tmp, size_t n, bool reverse) {
    if (n < 2) return NULL;
    size_t h = n / 2;
    OG_TRY(merge_sort(rt, v, tmp, h, reverse));
    OG_TRY(merge_sort(rt, v + h, tmp, n - h, reverse));
    size_t i = 0, j = h, k = 0;
    while (i < h && j < n) {
        int c;
        OG_TRY(cv_cmp(rt, v[j].key, v[i].key, "<", &c));
        /* take from the right only when strictly before (after, when reversed) */
        bool right = reverse ? c > 0 : c < 0;
        tmp[k++] = right ? v[j++] : v[i++];
    }
    while (i < h) tmp[k++] = v[i++];
    while (j < n) tmp[k++] = v[j++];
    memcpy(v, tmp, n * sizeof *v);
    return NULL;
}

static og_status *sort_keyed(crt *rt, keyed *v, size_t n, bool reverse) {
    keyed *tmp = crt_alloc(rt, (n ? n : 1) * sizeof *tmp);
    if (!tmp) return crt_mem_err(rt);
    return merge_sort(rt, v, tmp, n, reverse);
}

static og_status *items_of(crt *rt, cv in, cv_list **out) { return cv_iterate(rt, in, out); }

static og_status *new_list(crt *rt, size_t cap, cv_seq seq, cv_list **out) {
    *out = cv_list_new(rt, cap, seq);
    return *out ? NULL : crt_mem_err(rt);
}

/* ---- the filters --------------------------------------------------------------------- */

FILTER(abs) {
    NOARGS("abs");
    if (in.kind == CV_FLOAT) {
        *out = cv_float(fabs(in.f));
        return NULL;
    }
    if (intlike(in)) {
        int64_t x = ival(in);
        if (x == INT64_MIN) return crt_err(rt, OG_ERR_UNSUPPORTED, "OverflowError: abs() beyond 64 bits");
        *out = cv_int(x < 0 ? -x : x);
        return NULL;
    }
    return chat_type_err(rt, "bad operand type for abs(): '%s'", cv_type_name(in));
}

FILTER(attr) {
    BIND("attr", 1, "name");
    cv name;
    OG_TRY(soft_str(rt, v[0], &name));
    return chat_attr_only(rt, in, name.s->s, out);
}

FILTER(batch) {
    BIND("batch", 1, "linecount", "fill_with");
    int64_t n;
    OG_TRY(need_int(rt, v[0], &n));
    cv_list *items, *res, *cur = NULL;
    OG_TRY(items_of(rt, in, &items));
    OG_TRY(new_list(rt, 4, CV_SEQ_GEN, &res));
    for (size_t i = 0; i < items->n; i++) {
        if (cur && (int64_t)cur->n == n) {
            OG_TRY(cv_list_push(rt, res, cv_of_list(cur)));
            cur = NULL;
        }
        if (!cur) OG_TRY(new_list(rt, n > 0 && n < 1024 ? (size_t)n : 4, CV_SEQ_LIST, &cur));
        OG_TRY(cv_list_push(rt, cur, items->v[i]));
    }
    if (cur) {
        if (g[1] && v[1].kind != CV_NONE)
            while ((int64_t)cur->n < n) OG_TRY(cv_list_push(rt, cur, v[1]));
        OG_TRY(cv_list_push(rt, res, cv_of_list(cur)));
    }
    *out = cv_of_list(res);
    return NULL;
}

static og_status *case_filter(crt *rt, cv in, const cargs *a, int how, const char *fname, cv *out) {
    NOARGS(fname);
    cv s;
    OG_TRY(soft_str(rt, in, &s));
    return chat_str_case(rt, s, how, out);
}

FILTER(capitalize) { return case_filter(rt, in, a, 2, "capitalize", out); }
FILTER(lower) { return case_filter(rt, in, a, 0, "lower", out); }
FILTER(upper) { return case_filter(rt, in, a, 1, "upper", out); }

FILTER(center) {
    BIND("center", 0, "width");
    int64_t w = 80;
    if (g[0]) OG_TRY(need_int(rt, v[0], &w));
    cv s;
    OG_TRY(soft_str(rt, in, &s));
    sbuf b;
    sbuf_init(&b, rt->lim.max_output);
    og_status *st = chat_str_pad(rt, &b, s.s->s, s.s->len, s.s->ncp, w, 'c', " ", 1);
    if (!st) st = cv_make_str(rt, b.p ? b.p : "", b.n, out);
    sbuf_free(&b);
    return st;
}

FILTER(length) {
    NOARGS("length");
    int64_t n;
    OG_TRY(cv_len(rt, in, &n));
    *out = cv_int(n);
    return NULL;
}

FILTER(default) {
    BIND("default", 0, "default_value", "boolean");
    bool boolean = g[1] && cv_truthy(v[1]);
    if (in.kind == CV_UNDEF || (boolean && !cv_truthy(in))) {
        if (g[0]) *out = v[0];
        else OG_TRY(cv_make_str(rt, "", 0, out));
        return NULL;
    }
    *out = in;
    return NULL;
}

FILTER(dictsort) {
    BIND("dictsort", 0, "case_sensitive", "by", "reverse");
    int pos = 0;
    if (g[1]) {
        if (v[1].kind == CV_STR && !strcmp(v[1].s->s, "value")) pos = 1;
        else if (!(v[1].kind == CV_STR && !strcmp(v[1].s->s, "key")))
            return filter_arg_err(rt, "You can only sort by either \"key\" or \"value\"");
    }
    if (in.kind == CV_UNDEF) return cv_undef_error(rt, in);
    if (in.kind != CV_DICT)
        return crt_err(rt, OG_ERR_RUNTIME, "AttributeError: '%s' object has no attribute 'items'",
                       cv_type_name(in));
    bool cs = g[0] && cv_truthy(v[0]);
    size_t n = in.d->n;
    keyed *k = crt_alloc(rt, (n ? n : 1) * sizeof *k);
    if (!k) return crt_mem_err(rt);
    for (size_t i = 0; i < n; i++) {
        cv_list *pair;
        OG_TRY(new_list(rt, 2, CV_SEQ_TUPLE, &pair));
        pair->v[0] = in.d->e[i].key;
        pair->v[1] = in.d->e[i].val;
        pair->n = 2;
        k[i].item = cv_of_list(pair);
        k[i].key = pos ? in.d->e[i].val : in.d->e[i].key;
        if (!cs && k[i].key.kind == CV_STR) OG_TRY(chat_str_case(rt, k[i].key, 0, &k[i].key));
    }
    OG_TRY(sort_keyed(rt, k, n, g[2] && cv_truthy(v[2])));
    cv_list *res;
    OG_TRY(new_list(rt, n, CV_SEQ_LIST, &res));
    for (size_t i = 0; i < n; i++) res->v[res->n++] = k[i].item;
    *out = cv_of_list(res);
    return NULL;
}

FILTER(escape) {
    NOARGS("escape");
    return chat_escape(rt, in, out);
}

FILTER(forceescape) {
    NOARGS("forceescape");
    cv s;
    OG_TRY(soft_str(rt, in, &s));
    return chat_escape(rt, s, out);
}

FILTER(first) {
    NOARGS("first");
    cv_list *items;
    OG_TRY(items_of(rt, in, &items));
    *out = items->n ? items->v[0] : cv_undef_hint(rt, "No first item, sequence was empty.");
    return NULL;
}

FILTER(last) {
    NOARGS("last");
    if (in.kind == CV_LIST && (in.l->seq == CV_SEQ_GEN || in.l->seq == CV_SEQ_REVITER))
        return chat_type_err(rt, "'%s' object is not reversible", cv_type_name(in));
    cv_list *items;
    OG_TRY(items_of(rt, in, &items));
    *out = items->n ? items->v[items->n - 1] : cv_undef_hint(rt, "No last item, sequence was empty.");
    if (in.kind == CV_STR && items->n) out->flags = in.flags; /* reversed(Markup) yields Markup */
    return NULL;
}

/* Python's float(str): optional whitespace, sign, digits with single underscores,
 * inf/nan spelled any case. */
static bool parse_py_float(const char *s, size_t len, double *out) {
    char buf[128];
    size_t a = 0, z = len;
    while (a < z && (s[a] == ' ' || (s[a] >= 9 && s[a] <= 13))) a++;
    while (z > a && (s[z - 1] == ' ' || (s[z - 1] >= 9 && s[z - 1] <= 13))) z--;
    if (z == a || z - a >= sizeof buf) return false;
    size_t n = 0;
    for (size_t i = a; i < z; i++) {
        if (s[i] == '_') {
            if (i == a || i + 1 >= z || !(s[i - 1] >= '0' && s[i - 1] <= '9') ||
                !(s[i + 1] >= '0' && s[i + 1] <= '9'))
                return false;
            continue;
        }
        buf[n++] = s[i];
    }
    buf[n] = 0;
    const char *p = buf + (buf[0] == '+' || buf[0] == '-');
    if (!strcasecmp(p, "inf") || !strcasecmp(p, "infinity") || !strcasecmp(p, "nan")) {
        *out = strtod(buf, NULL);
        return true;
    }
    for (const char *q = p; *q; q++)
        if (!((*q >= '0' && *q <= '9') || *q == '.' || *q == 'e' || *q == 'E' || *q == '+' ||
              *q == '-'))
            return false;
    char *end;
    errno = 0;
    *out = strtod(buf, &end);
    return *end == 0 && end != buf;
}

/* Python's int(str, base). */
static bool parse_py_int(const char *s, size_t len, int64_t base, int64_t *out, bool *overflow) {
    size_t a = 0, z = len;
    *overflow = false;
    while (a < z && (s[a] == ' ' || (s[a] >= 9 && s[a] <= 13))) a++;
    while (z > a && (s[z - 1] == ' ' || (s[z - 1] >= 9 && s[z - 1] <= 13))) z--;
    bool neg = false;
    if (a < z && (s[a] == '+' || s[a] == '-')) neg = s[a++] == '-';
    if (a + 1 < z && s[a] == '0') {
        char c = (char)(s[a + 1] | 0x20);
        int pb = c == 'x' ? 16 : c == 'o' ? 8 : c == 'b' ? 2 : 0;
        if (pb && (base == pb || base == 0)) {
            base = pb;
            a += 2;
            if (a < z && s[a] == '_') a++;
        }
    }
    if (base == 0) base = 10;
    if (a == z) return false;
    uint64_t v = 0;
    bool prev_us = true;
    for (size_t i = a; i < z; i++) {
        if (s[i] == '_') {
            if (prev_us) return false;
            prev_us = true;
            continue;
        }
        int d = s[i] >= '0' && s[i] <= '9' ? s[i] - '0'
                : (s[i] | 0x20) >= 'a' && (s[i] | 0x20) <= 'z' ? (s[i] | 0x20) - 'a' + 10
                                                               : 99;
        if (d >= base) return false;
        prev_us = false;
        if (v > (UINT64_MAX - (uint64_t)d) / (uint64_t)base) *overflow = true;
        else v = v * (uint64_t)base + (uint64_t)d;
    }
    if (prev_us) return false;
    if (v > (uint64_t)INT64_MAX + (neg ? 1 : 0)) *overflow = true;
    *out = neg ? (int64_t)(0 - v) : (int64_t)v;
    return true;
}

FILTER(float) {
    BIND("float", 0, "default");
    cv dflt = g[0] ? v[0] : cv_float(0.0);
    if (in.kind == CV_UNDEF) return cv_undef_error(rt, in);
    if (cv_is_number(in)) {
        *out = cv_float(cv_as_double(in));
        return NULL;
    }
    double d;
    if (in.kind == CV_STR && parse_py_float(in.s->s, in.s->len, &d)) {
        *out = cv_float(d);
        return NULL;
    }
    *out = dflt;
    return NULL;
}

FILTER(int) {
    BIND("int", 0, "default", "base");
    cv dflt = g[0] ? v[0] : cv_int(0);
    int64_t base = 10;
    if (g[1]) OG_TRY(need_int(rt, v[1], &base));
    if (in.kind == CV_UNDEF) return cv_undef_error(rt, in);
    if (intlike(in)) {
        *out = cv_int(ival(in));
        return NULL;
    }
    double d;
    if (in.kind == CV_FLOAT) {
        d = in.f;
    } else if (in.kind == CV_STR) {
        int64_t iv;
        bool ovf;
        if (base != 1 && base <= 36 && base >= 0 && parse_py_int(in.s->s, in.s->len, base, &iv, &ovf)) {
            if (ovf) return crt_err(rt, OG_ERR_UNSUPPORTED, "OverflowError: integer beyond 64 bits");
            *out = cv_int(iv);
            return NULL;
        }
        if (!parse_py_float(in.s->s, in.s->len, &d)) {
            *out = dflt;
            return NULL;
        }
    } else {
        *out = dflt;
        return NULL;
    }
    if (isnan(d)) {
        *out = dflt;
        return NULL;
    }
    if (isinf(d)) return crt_err(rt, OG_ERR_RUNTIME, "OverflowError: cannot convert float infinity to integer");
    if (d >= 9223372036854775808.0 || d < -9223372036854775808.0)
        return crt_err(rt, OG_ERR_UNSUPPORTED, "OverflowError: integer beyond 64 bits");
    *out = cv_int((int64_t)d);
    return NULL;
}

FILTER(format) {
    if (a->npos && a->nkw)
        return filter_arg_err(rt, "can't handle positional and keyword arguments at the same time");
    cv s;
    OG_TRY(soft_str(rt, in, &s));
    if (in.kind == CV_STR) s.flags = in.flags;
    if (a->nkw) {
        cv_dict *d = cv_dict_new(rt, (size_t)a->nkw);
        if (!d) return crt_mem_err(rt);
        for (int i = 0; i < a->nkw; i++) OG_TRY(cv_dict_set_str(rt, d, a->kwn[i], a->kw[i]));
        return chat_percent_format(rt, s, cv_of_dict(d), out);
    }
    cv_list *t;
    OG_TRY(new_list(rt, (size_t)a->npos, CV_SEQ_TUPLE, &t));
    for (int i = 0; i < a->npos; i++) t->v[t->n++] = a->pos[i];
    return chat_percent_format(rt, s, cv_of_list(t), out);
}

FILTER(indent) {
    BIND("indent", 0, "width", "first", "blank");
    og_status *st = NULL;
    cv ind;
    if (g[0] && v[0].kind == CV_STR) {
        ind = v[0];
    } else {
        int64_t w = 4;
        if (g[0]) OG_TRY(need_int(rt, v[0], &w));
        if (w < 0) w = 0;
        if ((uint64_t)w > rt->lim.max_output) return filter_arg_err(rt, "indent width too large");
        cv_str *sp = cv_str_alloc(rt, (size_t)w);
        if (!sp) return crt_mem_err(rt);
        memset(sp->s, ' ', (size_t)w);
        cv_str_done(sp);
        ind = cv_of_str(sp);
    }
    /* jinja2 does `s += "\n"` on the value as it is (then s.splitlines()): only a str works */
    if (in.kind == CV_UNDEF) return cv_undef_error(rt, in);
    if (in.kind == CV_LIST && in.l->seq == CV_SEQ_LIST)
        return crt_err(rt, OG_ERR_RUNTIME, "AttributeError: 'list' object has no attribute 'splitlines'");
    if (in.kind == CV_LIST && in.l->seq == CV_SEQ_TUPLE)
        return chat_type_err(rt, "can only concatenate tuple (not \"str\") to tuple");
    if (in.kind != CV_STR)
        return chat_type_err(rt, "unsupported operand type(s) for +=: '%s' and 'str'", cv_type_name(in));
    cv s = in;
    cv_str *sn = cv_str_alloc(rt, s.s->len + 1);
    if (!sn) return crt_mem_err(rt);
    memcpy(sn->s, s.s->s, s.s->len);
    sn->s[s.s->len] = '\n';
    cv_str_done(sn);
    cv lines;
    OG_TRY(chat_str_splitlines(rt, cv_of_str(sn), false, &lines));
    sbuf b;
    sbuf_init(&b, rt->lim.max_output);
    const cv_list *l = lines.l;
    bool blank = g[2] && cv_truthy(v[2]);
#define PUT(p, n)                                                                        \
    do {                                                                                 \
        if (!sbuf_add(&b, (p), (n))) {                                                   \
            st = sbuf_err(rt, &b);                                                       \
            goto done;                                                                   \
        }                                                                                \
    } while (0)
    if (g[1] && cv_truthy(v[1])) PUT(ind.s->s, ind.s->len);
    for (size_t i = 0; i < l->n; i++) {
        const cv_str *line = l->v[i].s;
        if (i) {
            PUT("\n", 1);
            if (blank || line->len) PUT(ind.s->s, ind.s->len);
        }
        PUT(line->s, line->len);
    }
#undef PUT
done:
    if (!st) st = cv_make_str(rt, b.p ? b.p : "", b.n, out);
    sbuf_free(&b);
    return st;
}

FILTER(items) {
    NOARGS("items");
    cv_list *res;
    if (in.kind == CV_UNDEF) {
        OG_TRY(new_list(rt, 0, CV_SEQ_GEN, &res));
        *out = cv_of_list(res);
        return NULL;
    }
    if (in.kind != CV_DICT) return chat_type_err(rt, "Can only get item pairs from a mapping.");
    OG_TRY(new_list(rt, in.d->n, CV_SEQ_GEN, &res));
    for (size_t i = 0; i < in.d->n; i++) {
        cv_list *pair;
        OG_TRY(new_list(rt, 2, CV_SEQ_TUPLE, &pair));
        pair->v[0] = in.d->e[i].key;
        pair->v[1] = in.d->e[i].val;
        pair->n = 2;
        res->v[res->n++] = cv_of_list(pair);
    }
    *out = cv_of_list(res);
    return NULL;
}

FILTER(join) {
    BIND("join", 0, "d", "attribute");
    cv sep;
    if (g[0]) OG_TRY(soft_str(rt, v[0], &sep));
    else OG_TRY(cv_make_str(rt, "", 0, &sep));
    attr_path p;
    if (g[1]) OG_TRY(prepare_parts(rt, v[1], NULL, 0, &p));
    cv_list *items;
    OG_TRY(items_of(rt, in, &items));
    og_status *st = NULL;
    sbuf b;
    sbuf_init(&b, rt->lim.max_output);
    for (size_t i = 0; i < items->n && !st; i++) {
        cv x = items->v[i];
        if (g[1] && !p.none) st = get_path(rt, x, &p, cv_undef(), false, &x);
        if (!st && i && !sbuf_add(&b, sep.s->s, sep.s->len)) st = sbuf_err(rt, &b);
        if (!st) st = cv_write_str(rt, &b, x);
    }
    if (!st) st = cv_make_str(rt, b.p ? b.p : "", b.n, out);
    sbuf_free(&b);
    return st;
}

FILTER(list) {
    NOARGS("list");
    cv_list *items, *res;
    OG_TRY(items_of(rt, in, &items));
    OG_TRY(new_list(rt, items->n, CV_SEQ_LIST, &res));
    if (items->n) memcpy(res->v, items->v, items->n * sizeof(cv));
    res->n = items->n;
    *out = cv_of_list(res);
    return NULL;
}

static og_status *call_filter_by_name(crt *rt, cv name, cv item, const cargs *rest, cv *out) {
    if (name.kind != CV_STR) return chat_type_err(rt, "filter name must be a string");
    int id = chat_filter_find(name.s->s);
    if (id < 0) return crt_err(rt, OG_ERR_RUNTIME, "TemplateRuntimeError: No filter named '%s'.", name.s->s);
    return chat_filter_apply(rt, id, item, rest, out);
}

FILTER(map) {
    cv_list *res;
    OG_TRY(new_list(rt, 0, CV_SEQ_GEN, &res));
    *out = cv_of_list(res);
    if (!cv_truthy(in)) return NULL;
    cv_list *items;
    if (a->npos == 0) {
        /* map(attribute='x', default=...) */
        cv attr = cv_undef(), dflt = cv_none();
        bool have = false;
        for (int i = 0; i < a->nkw; i++) {
            if (!strcmp(a->kwn[i], "attribute")) {
                attr = a->kw[i];
                have = true;
            } else if (!strcmp(a->kwn[i], "default")) dflt = a->kw[i];
            else {
                char msg[128];
                snprintf(msg, sizeof msg, "Unexpected keyword argument '%s'", a->kwn[i]);
                return filter_arg_err(rt, msg);
            }
        }
        if (!have) return filter_arg_err(rt, "map requires a filter argument");
        attr_path p;
        OG_TRY(prepare_parts(rt, attr, NULL, 0, &p));
        OG_TRY(items_of(rt, in, &items));
        for (size_t i = 0; i < items->n; i++) {
            cv x;
            OG_TRY(get_path(rt, items->v[i], &p, dflt, false, &x));
            OG_TRY(cv_list_push(rt, res, x));
        }
        return NULL;
    }
    cargs rest = *a;
    rest.pos++;
    rest.npos--;
    OG_TRY(items_of(rt, in, &items));
    for (size_t i = 0; i < items->n; i++) {
        cv x;
        OG_TRY(call_filter_by_name(rt, a->pos[0], items->v[i], &rest, &x));
        OG_TRY(cv_list_push(rt, res, x));
    }
    return NULL;
}

static og_status *min_max(crt *rt, cv in, const cargs *a, bool want_max, cv *out) {
    BIND(want_max ? "max" : "min", 0, "case_sensitive", "attribute");
    cv_list *items;
    OG_TRY(items_of(rt, in, &items));
    if (!items->n) {
        *out = cv_undef_hint(rt, "No aggregated item, sequence was empty.");
        return NULL;
    }
    attr_path p;
    OG_TRY(prepare_parts(rt, g[1] ? v[1] : cv_none(), NULL, 0, &p));
    bool lower = !(g[0] && cv_truthy(v[0]));
    size_t best = 0;
    cv best_key;
    OG_TRY(get_path(rt, items->v[0], &p, cv_undef(), lower, &best_key));
    for (size_t i = 1; i < items->n; i++) {
        cv k;
        OG_TRY(get_path(rt, items->v[i], &p, cv_undef(), lower, &k));
        int c;
        OG_TRY(cv_cmp(rt, k, best_key, want_max ? ">" : "<", &c));
        if (want_max ? c > 0 : c < 0) {
            best = i;
            best_key = k;
        }
    }
    *out = items->v[best];
    return NULL;
}

FILTER(max) { return min_max(rt, in, a, true, out); }
FILTER(min) { return min_max(rt, in, a, false, out); }

/* select / reject / selectattr / rejectattr */
static og_status *select_reject(crt *rt, cv in, const cargs *a, bool keep_true, bool by_attr,
                                cv *out) {
    cv_list *res;
    OG_TRY(new_list(rt, 0, CV_SEQ_GEN, &res));
    *out = cv_of_list(res);
    if (!cv_truthy(in)) return NULL;
    int off = 0;
    attr_path p = {.none = true};
    if (by_attr) {
        if (a->npos < 1) return filter_arg_err(rt, "Missing parameter for attribute name");
        OG_TRY(prepare_parts(rt, a->pos[0], NULL, 0, &p));
        off = 1;
    }
    bool have_test = a->npos > off;
    int test_id = -1;
    cargs rest = *a;
    if (have_test) {
        cv name = a->pos[off];
        if (name.kind != CV_STR) return chat_type_err(rt, "test name must be a string");
        test_id = chat_test_find(name.s->s);
        rest.pos += off + 1;
        rest.npos -= off + 1;
    }
    cv_list *items;
    OG_TRY(items_of(rt, in, &items));
    for (size_t i = 0; i < items->n; i++) {
        cv x = items->v[i];
        if (!p.none) OG_TRY(get_path(rt, x, &p, cv_undef(), false, &x));
        bool r;
        if (have_test) {
            if (test_id < 0)
                return crt_err(rt, OG_ERR_RUNTIME, "TemplateRuntimeError: No test named '%s'.",
                               a->pos[off].s->s);
            OG_TRY(chat_test_apply(rt, test_id, x, &rest, &r));
        } else {
            r = cv_truthy(x);
        }
        if (r == keep_true) OG_TRY(cv_list_push(rt, res, items->v[i]));
    }
    return NULL;
}

FILTER(select) { return select_reject(rt, in, a, true, false, out); }
FILTER(reject) { return select_reject(rt, in, a, false, false, out); }
FILTER(selectattr) { return select_reject(rt, in, a, true, true, out); }
FILTER(rejectattr) { return select_reject(rt, in, a, false, true, out); }

FILTER(replace) {
    BIND("replace", 2, "old", "new", "count");
    int64_t count = -1;
    if (g[2] && v[2].kind != CV_NONE) OG_TRY(need_int(rt, v[2], &count));
    cv s, o, n;
    OG_TRY(soft_str(rt, in, &s));
    OG_TRY(soft_str(rt, v[0], &o));
    OG_TRY(soft_str(rt, v[1], &n));
    return chat_str_replace(rt, s, o, n, count, out);
}

FILTER(reverse) {
    NOARGS("reverse");
    if (in.kind == CV_STR) return chat_slice(rt, in, cv_none(), cv_none(), cv_int(-1), out);
    bool reversible = in.kind == CV_UNDEF || in.kind == CV_DICT ||
                      (in.kind == CV_LIST && in.l->seq != CV_SEQ_GEN && in.l->seq != CV_SEQ_REVITER);
    if (!reversible && in.kind != CV_LIST)
        return filter_arg_err(rt, "argument must be iterable");
    cv_list *items, *res;
    OG_TRY(items_of(rt, in, &items));
    OG_TRY(new_list(rt, items->n, reversible ? CV_SEQ_REVITER : CV_SEQ_LIST, &res));
    for (size_t i = items->n; i-- > 0;) res->v[res->n++] = items->v[i];
    *out = cv_of_list(res);
    return NULL;
}

/* round(x, ndigits) as Python does it: correctly rounded, ties to even. */
static double py_round(double x, int64_t nd) {
    if (!isfinite(x)) return x;
    if (nd >= 0 && nd < 300) {
        char buf[400];
        snprintf(buf, sizeof buf, "%.*f", (int)nd, x);
        return strtod(buf, NULL);
    }
    if (nd >= 300) return x;
    double p = pow(10.0, (double)-nd);
    double r = nearbyint(x / p) * p;
    return r;
}

FILTER(round) {
    BIND("round", 0, "precision", "method");
    int64_t prec = 0;
    if (g[0]) OG_TRY(need_int(rt, v[0], &prec));
    const char *method = "common";
    if (g[1]) {
        if (v[1].kind != CV_STR || (strcmp(v[1].s->s, "common") && strcmp(v[1].s->s, "ceil") &&
                                    strcmp(v[1].s->s, "floor")))
            return filter_arg_err(rt, "method must be common, ceil or floor");
        method = v[1].s->s;
    }
    if (!cv_is_number(in)) /* Python's round() on an undefined value too */
        return chat_type_err(rt, "type %s doesn't define __round__ method", cv_type_name(in));
    if (!strcmp(method, "common")) {
        if (intlike(in)) {
            if (prec >= 0) {
                *out = cv_int(ival(in));
                return NULL;
            }
            double r = py_round((double)ival(in), prec);
            *out = cv_int((int64_t)r);
            return NULL;
        }
        *out = cv_float(py_round(in.f, prec));
        return NULL;
    }
    double scale = pow(10.0, (double)prec), x = cv_as_double(in) * scale;
    x = method[0] == 'c' ? ceil(x) : floor(x);
    *out = cv_float(x / scale);
    return NULL;
}

FILTER(safe) {
    NOARGS("safe");
    OG_TRY(soft_str(rt, in, out));
    out->flags = CVF_MARKUP;
    return NULL;
}

FILTER(slice) {
    BIND("slice", 1, "slices", "fill_with");
    int64_t slices;
    OG_TRY(need_int(rt, v[0], &slices));
    cv_list *items, *res;
    OG_TRY(items_of(rt, in, &items));
    OG_TRY(new_list(rt, 4, CV_SEQ_GEN, &res));
    if (slices <= 0) {
        if (slices == 0) return crt_err(rt, OG_ERR_RUNTIME, "ZeroDivisionError: integer division or modulo by zero");
        *out = cv_of_list(res);
        return NULL;
    }
    int64_t length = (int64_t)items->n, per = length / slices, extra = length % slices, offset = 0;
    for (int64_t k = 0; k < slices; k++) {
        int64_t start = offset + k * per;
        if (k < extra) offset++;
        int64_t end = offset + (k + 1) * per;
        cv_list *part;
        OG_TRY(new_list(rt, (size_t)(end - start + 1), CV_SEQ_LIST, &part));
        for (int64_t i = start; i < end && i < length; i++) part->v[part->n++] = items->v[i];
        if (g[1] && v[1].kind != CV_NONE && k >= extra) part->v[part->n++] = v[1];
        OG_TRY(cv_list_push(rt, res, cv_of_list(part)));
    }
    *out = cv_of_list(res);
    return NULL;
}

FILTER(sort) {
    BIND("sort", 0, "reverse", "case_sensitive", "attribute");
    cv_list *items;
    OG_TRY(items_of(rt, in, &items));
    bool lower = !(g[1] && cv_truthy(v[1]));
    /* attribute "a,b": the key is the list of both */
    attr_path paths[8];
    int np = 0;
    cv attr = g[2] ? v[2] : cv_none();
    if (attr.kind == CV_STR) {
        const char *s = attr.s->s;
        size_t start = 0;
        for (size_t i = 0; i <= attr.s->len; i++) {
            if (i < attr.s->len && s[i] != ',') continue;
            if (np == 8) return filter_arg_err(rt, "too many sort attributes");
            OG_TRY(prepare_parts(rt, cv_none(), s + start, i - start, &paths[np++]));
            start = i + 1;
        }
    } else {
        OG_TRY(prepare_parts(rt, attr, NULL, 0, &paths[np++]));
    }
    size_t n = items->n;
    keyed *k = crt_alloc(rt, (n ? n : 1) * sizeof *k);
    if (!k) return crt_mem_err(rt);
    for (size_t i = 0; i < n; i++) {
        cv_list *key;
        OG_TRY(new_list(rt, (size_t)np, CV_SEQ_LIST, &key));
        for (int j = 0; j < np; j++) {
            cv x = items->v[i];
            if (!paths[j].none) OG_TRY(get_path(rt, x, &paths[j], cv_undef(), false, &x));
            if (lower && x.kind == CV_STR) OG_TRY(chat_str_case(rt, x, 0, &x));
            key->v[key->n++] = x;
        }
        k[i].key = cv_of_list(key);
        k[i].item = items->v[i];
    }
    OG_TRY(sort_keyed(rt, k, n, g[0] && cv_truthy(v[0])));
    cv_list *res;
    OG_TRY(new_list(rt, n, CV_SEQ_LIST, &res));
    for (size_t i = 0; i < n; i++) res->v[res->n++] = k[i].item;
    *out = cv_of_list(res);
    return NULL;
}

FILTER(string) {
    NOARGS("string");
    if (in.kind == CV_STR) {
        *out = in;
        return NULL;
    }
    return soft_str(rt, in, out);
}

FILTER(sum) {
    BIND("sum", 0, "attribute", "start");
    cv acc = g[1] ? v[1] : cv_int(0);
    if (acc.kind == CV_STR) return chat_type_err(rt, "sum() can't sum strings [use ''.join(seq) instead]");
    attr_path p = {.none = true};
    if (g[0]) OG_TRY(prepare_parts(rt, v[0], NULL, 0, &p));
    cv_list *items;
    OG_TRY(items_of(rt, in, &items));
    for (size_t i = 0; i < items->n; i++) {
        cv x = items->v[i];
        if (!p.none) OG_TRY(get_path(rt, x, &p, cv_undef(), false, &x));
        OG_TRY(chat_binop(rt, OP_ADD, acc, x, &acc));
    }
    *out = acc;
    return NULL;
}

/* jinja2's title: words split at runs of [-\s({[<]; first character upper, rest lower. */
FILTER(title) { return case_filter(rt, in, a, 5, "title", out); }

FILTER(tojson) {
    BIND("tojson", 0, "ensure_ascii", "indent", "separators", "sort_keys");
    char ind[64];
    const char *indent = NULL;
    if (g[1] && v[1].kind != CV_NONE) {
        if (v[1].kind == CV_STR) {
            indent = v[1].s->s;
        } else if (intlike(v[1])) {
            int64_t w = ival(v[1]);
            if (w > (int64_t)sizeof ind - 1) return filter_arg_err(rt, "tojson indent is too large");
            if (w < 0) w = 0;
            memset(ind, ' ', (size_t)w);
            ind[w] = 0;
            indent = ind;
        } else {
            return chat_type_err(rt, "indent must be an int or a str, not %s", cv_type_name(v[1]));
        }
    }
    const char *item_sep = NULL, *key_sep = NULL;
    if (g[2] && v[2].kind != CV_NONE) {
        cv_list *sep;
        OG_TRY(cv_iterate(rt, v[2], &sep));
        if (sep->n != 2 || sep->v[0].kind != CV_STR || sep->v[1].kind != CV_STR)
            return crt_err(rt, OG_ERR_RUNTIME, "ValueError: separators must be a pair of strings");
        item_sep = sep->v[0].s->s;
        key_sep = sep->v[1].s->s;
    }
    sbuf b;
    sbuf_init(&b, rt->lim.max_output);
    og_status *st = chat_json_dump(rt, &b, in, g[0] && cv_truthy(v[0]), indent, item_sep, key_sep,
                                   g[3] && cv_truthy(v[3]));
    if (!st) st = cv_make_str(rt, b.p ? b.p : "", b.n, out);
    sbuf_free(&b);
    return st;
}

FILTER(trim) {
    BIND("trim", 0, "chars");
    cv s;
    OG_TRY(soft_str(rt, in, &s));
    return chat_str_strip(rt, s, g[0] ? v[0] : cv_none(), 3, out);
}

FILTER(truncate) {
    BIND("truncate", 0, "length", "killwords", "end", "leeway");
    int64_t length = 255, leeway = 5;
    if (g[0]) OG_TRY(need_int(rt, v[0], &length));
    if (g[3] && v[3].kind != CV_NONE) OG_TRY(need_int(rt, v[3], &leeway));
    cv end;
    if (g[2]) end = v[2];
    else OG_TRY(cv_make_str(rt, "...", 3, &end));
    if (end.kind != CV_STR) return chat_type_err(rt, "truncate end must be a string");
    if (length < (int64_t)end.s->ncp)
        return crt_err(rt, OG_ERR_RUNTIME, "AssertionError: expected length >= %zu, got %lld",
                       end.s->ncp, (long long)length);
    if (leeway < 0)
        return crt_err(rt, OG_ERR_RUNTIME, "AssertionError: expected leeway >= 0, got %lld",
                       (long long)leeway);
    /* jinja2 takes len() of the value as it is: a short list comes back unchanged */
    int64_t n;
    OG_TRY(cv_len(rt, in, &n));
    if (n <= length + leeway) {
        *out = in;
        return NULL;
    }
    if (in.kind != CV_STR) {
        if (g[1] && cv_truthy(v[1])) {
            cv head;
            OG_TRY(chat_slice(rt, in, cv_none(), cv_int(length - (int64_t)end.s->ncp), cv_none(), &head));
            return chat_binop(rt, OP_ADD, head, end, out);
        }
        return crt_err(rt, OG_ERR_RUNTIME, "AttributeError: '%s' object has no attribute 'rsplit'",
                       cv_type_name(in));
    }
    cv head;
    OG_TRY(chat_str_slice_cp(rt, in.s, 0, (size_t)(length - (int64_t)end.s->ncp), &head));
    if (!(g[1] && cv_truthy(v[1]))) {
        cv sp, parts;
        OG_TRY(cv_make_str(rt, " ", 1, &sp));
        OG_TRY(chat_str_split(rt, head, sp, 1, true, &parts));
        head = parts.l->v[0];
    }
    return chat_binop(rt, OP_ADD, head, end, out);
}

FILTER(unique) {
    BIND("unique", 0, "case_sensitive", "attribute");
    attr_path p;
    OG_TRY(prepare_parts(rt, g[1] ? v[1] : cv_none(), NULL, 0, &p));
    bool lower = !(g[0] && cv_truthy(v[0]));
    cv_list *items, *res, *seen;
    OG_TRY(items_of(rt, in, &items));
    OG_TRY(new_list(rt, 4, CV_SEQ_GEN, &res));
    OG_TRY(new_list(rt, 4, CV_SEQ_LIST, &seen));
    for (size_t i = 0; i < items->n; i++) {
        cv k;
        OG_TRY(get_path(rt, items->v[i], &p, cv_undef(), lower, &k));
        if (!cv_hashable(k)) return chat_type_err(rt, "unhashable type: '%s'", cv_type_name(k));
        bool dup = false;
        for (size_t j = 0; j < seen->n && !dup; j++) dup = cv_eq(seen->v[j], k);
        if (dup) continue;
        OG_TRY(cv_list_push(rt, seen, k));
        OG_TRY(cv_list_push(rt, res, items->v[i]));
    }
    *out = cv_of_list(res);
    return NULL;
}

FILTER(wordcount) {
    NOARGS("wordcount");
    cv s;
    OG_TRY(soft_str(rt, in, &s));
    int64_t words = 0;
    bool inword = false;
    for (size_t i = 0; i < s.s->len;) {
        int32_t cp;
        i += u8_next(s.s->s, s.s->len, i, &cp);
        bool w = py_isword(cp);
        if (w && !inword) words++;
        inword = w;
    }
    *out = cv_int(words);
    return NULL;
}

static og_status *missing(crt *rt, const char *name) {
    return crt_err(rt, OG_ERR_UNSUPPORTED, "the filter '%s' is not implemented", name);
}

FILTER(filesizeformat) { (void)in; (void)a; (void)out; return missing(rt, "filesizeformat"); }
FILTER(groupby) { (void)in; (void)a; (void)out; return missing(rt, "groupby"); }
FILTER(pprint) { (void)in; (void)a; (void)out; return missing(rt, "pprint"); }
FILTER(random) { (void)in; (void)a; (void)out; return missing(rt, "random"); }
FILTER(striptags) { (void)in; (void)a; (void)out; return missing(rt, "striptags"); }
FILTER(urlencode) { (void)in; (void)a; (void)out; return missing(rt, "urlencode"); }
FILTER(urlize) { (void)in; (void)a; (void)out; return missing(rt, "urlize"); }
FILTER(wordwrap) { (void)in; (void)a; (void)out; return missing(rt, "wordwrap"); }
FILTER(xmlattr) { (void)in; (void)a; (void)out; return missing(rt, "xmlattr"); }

static const struct {
    const char *name;
    filter_fn fn;
} filters[] = {
    {"abs", f_abs}, {"attr", f_attr}, {"batch", f_batch}, {"capitalize", f_capitalize},
    {"center", f_center}, {"count", f_length}, {"d", f_default}, {"default", f_default},
    {"dictsort", f_dictsort}, {"e", f_escape}, {"escape", f_escape},
    {"filesizeformat", f_filesizeformat}, {"first", f_first}, {"float", f_float},
    {"forceescape", f_forceescape}, {"format", f_format}, {"groupby", f_groupby},
    {"indent", f_indent}, {"int", f_int}, {"items", f_items}, {"join", f_join},
    {"last", f_last}, {"length", f_length}, {"list", f_list}, {"lower", f_lower},
    {"map", f_map}, {"max", f_max}, {"min", f_min}, {"pprint", f_pprint},
    {"random", f_random}, {"reject", f_reject}, {"rejectattr", f_rejectattr},
    {"replace", f_replace}, {"reverse", f_reverse}, {"round", f_round}, {"safe", f_safe},
    {"select", f_select}, {"selectattr", f_selectattr}, {"slice", f_slice},
    {"sort", f_sort}, {"string", f_string}, {"striptags", f_striptags}, {"sum", f_sum},
    {"title", f_title}, {"tojson", f_tojson}, {"trim", f_trim}, {"truncate", f_truncate},
    {"unique", f_unique}, {"upper", f_upper}, {"urlencode", f_urlencode},
    {"urlize", f_urlize}, {"wordcount", f_wordcount}, {"wordwrap", f_wordwrap},
    {"xmlattr", f_xmlattr},
};

int chat_filter_find(const char *name) {
    for (size_t i = 0; i < sizeof filters / sizeof filters[0]; i++)
        if (!strcmp(filters[i].name, name)) return (int)i;
    return -1;
}

const char *chat_filter_name(int id) { return filters[id].name; }

og_status *chat_filter_apply(crt *rt, int id, cv in, const cargs *a, cv *out) {
    return filters[id].fn(rt, in, a, out);
}
