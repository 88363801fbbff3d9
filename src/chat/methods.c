/* Methods of str, dict and list/tuple that templates call (message.content.strip(),
 * tool.items(), ...), with Python's semantics. The immutable sandbox forbids the ones
 * that change a list or dict; those are known here so that calling them is jinja2's
 * SecurityError rather than "no such attribute". */
#include "chat/eval.h"

#include "chat/ustr.h"

#include <string.h>

typedef enum mkind { M_NONE, M_OK, M_UNSAFE, M_MISSING } mkind;

static const char *const str_ok[] = {
    "capitalize", "center", "count", "endswith", "expandtabs", "find", "format", "index",
    "isalnum", "isalpha", "isascii", "isdecimal", "isdigit", "isidentifier", "islower",
    "isnumeric", "isprintable", "isspace", "istitle", "isupper", "join", "ljust", "lower",
    "lstrip", "partition", "removeprefix", "removesuffix", "replace", "rfind", "rindex",
    "rjust", "rpartition", "rsplit", "rstrip", "split", "splitlines", "startswith", "strip",
    "swapcase", "title", "upper", "zfill", NULL};
static const char *const str_missing[] = {"casefold", "encode", "format_map", "maketrans",
                                          "translate", NULL};
static const char *const dict_ok[] = {"copy", "get", "items", "keys", "values", NULL};
static const char *const dict_unsafe[] = {"clear", "pop", "popitem", "setdefault", "update", NULL};
static const char *const dict_missing[] = {"fromkeys", NULL};
static const char *const list_ok[] = {"copy", "count", "index", NULL};
static const char *const list_unsafe[] = {"append", "clear", "extend", "insert", "pop",
                                          "remove", "reverse", "sort", NULL};
static const char *const tuple_ok[] = {"count", "index", NULL};

static bool in(const char *const *names, const char *name) {
    for (int i = 0; names[i]; i++)
        if (!strcmp(names[i], name)) return true;
    return false;
}

int chat_method_mask(const char *name) {
    int m = 0;
    if (in(str_ok, name) || in(str_missing, name)) m |= CHAT_M_STR;
    if (in(dict_ok, name) || in(dict_unsafe, name) || in(dict_missing, name)) m |= CHAT_M_DICT;
    if (in(list_ok, name) || in(list_unsafe, name)) m |= CHAT_M_LIST;
    return m;
}

int chat_method_kind(cv self, const char *name) {
    switch ((cv_kind)self.kind) {
    case CV_STR:
        if (in(str_ok, name)) return M_OK;
        if (in(str_missing, name)) return M_MISSING;
        return M_NONE;
    case CV_DICT:
        if (in(dict_ok, name)) return M_OK;
        if (in(dict_unsafe, name)) return M_UNSAFE;
        if (in(dict_missing, name)) return M_MISSING;
        return M_NONE;
    case CV_LIST:
        if (self.l->seq == CV_SEQ_LIST) {
            if (in(list_ok, name)) return M_OK;
            if (in(list_unsafe, name)) return M_UNSAFE;
        } else if (self.l->seq == CV_SEQ_TUPLE || self.l->seq == CV_SEQ_RANGE) {
            if (in(tuple_ok, name)) return M_OK;
        }
        return M_NONE;
    default:
        return M_NONE;
    }
}

/* Python's start/end arguments of find/count/startswith as code point positions. */
static og_status *span(crt *rt, const cv_str *s, cv start, cv end, size_t *from, size_t *to) {
    int64_t n = (int64_t)s->ncp, a = 0, z = n;
    if (start.kind == CV_INT || start.kind == CV_BOOL) a = start.kind == CV_BOOL ? start.b : start.i;
    else if (start.kind != CV_NONE && start.kind != CV_UNDEF)
        return chat_type_err(rt, "slice indices must be integers or None");
    if (end.kind == CV_INT || end.kind == CV_BOOL) z = end.kind == CV_BOOL ? end.b : end.i;
    else if (end.kind != CV_NONE && end.kind != CV_UNDEF)
        return chat_type_err(rt, "slice indices must be integers or None");
    if (z > n) z = n;
    else if (z < 0) {
        z += n;
        if (z < 0) z = 0;
    }
    if (a < 0) {
        a += n;
        if (a < 0) a = 0;
    }
    *from = (size_t)a;
    *to = (size_t)z;
    return NULL;
}

static og_status *arg_str(crt *rt, cv v, const char *what) {
    if (v.kind == CV_UNDEF) return cv_undef_error(rt, v);
    if (v.kind != CV_STR)
        return chat_type_err(rt, "%s must be str, not %s", what, cv_type_name(v));
    return NULL;
}

/* find / rfind / index / rindex / count over s[from:to) (code points). */
static og_status *search(crt *rt, const cv_str *s, const cv_str *sub, size_t from, size_t to,
                         int mode, int64_t *out) {
    /* mode 0 find, 1 rfind, 2 count */
    bool ascii = s->len == s->ncp;
    if (from > s->ncp || (from > to && !(sub->len == 0 && from <= to))) {
        *out = mode == 2 ? 0 : -1;
        return NULL;
    }
    if (to < from) {
        *out = mode == 2 ? 0 : -1;
        return NULL;
    }
    size_t a = u8_offset(s->s, s->len, ascii, from), z = u8_offset(s->s, s->len, ascii, to);
    if (mode == 2) {
        if (sub->len == 0) {
            *out = (int64_t)(to - from + 1);
            return NULL;
        }
        int64_t c = 0;
        for (size_t i = a; i + sub->len <= z;) {
            const char *hit = memmem(s->s + i, z - i, sub->s, sub->len);
            if (!hit) break;
            c++;
            i = (size_t)(hit - s->s) + sub->len;
        }
        *out = c;
        return NULL;
    }
    size_t found = SIZE_MAX;
    if (mode == 0) {
        const char *hit = sub->len ? memmem(s->s + a, z - a, sub->s, sub->len) : s->s + a;
        if (hit) found = (size_t)(hit - s->s);
    } else {
        for (size_t j = z >= sub->len ? z - sub->len + 1 : 0; j-- > a;)
            if (memcmp(s->s + j, sub->s, sub->len) == 0) {
                found = j;
                break;
            }
    }
    *out = found == SIZE_MAX ? -1 : (int64_t)u8_count(s->s, found);
    return NULL;
}

/* startswith / endswith with a str or a tuple of str. */
static og_status *affix(crt *rt, const cv_str *s, cv what, cv start, cv end, bool suffix,
                        bool *out) {
    size_t from, to;
    OG_TRY(span(rt, s, start, end, &from, &to));
    *out = false;
    if (from > s->ncp) return NULL;
    if (to < from) to = from;
    bool ascii = s->len == s->ncp;
    size_t a = u8_offset(s->s, s->len, ascii, from), z = u8_offset(s->s, s->len, ascii, to);
    cv_list one = {0};
    cv_list *cands = &one;
    if (what.kind == CV_STR) {
        one.n = 1;
        one.v = &what;
    } else if (what.kind == CV_LIST && what.l->seq == CV_SEQ_TUPLE) {
        cands = what.l;
    } else {
        if (what.kind == CV_UNDEF) return cv_undef_error(rt, what);
        return chat_type_err(rt, "%s first arg must be str or a tuple of str, not %s",
                             suffix ? "endswith" : "startswith", cv_type_name(what));
    }
    for (size_t i = 0; i < cands->n; i++) {
        cv c = cands->v[i];
        if (c.kind != CV_STR)
            return chat_type_err(rt, "tuple for %s must only contain str, not %s",
                                 suffix ? "endswith" : "startswith", cv_type_name(c));
        if (c.s->len > z - a) continue;
        const char *at = suffix ? s->s + z - c.s->len : s->s + a;
        if (memcmp(at, c.s->s, c.s->len) == 0) {
            *out = true;
            return NULL;
        }
    }
    return NULL;
}

typedef bool (*cp_pred)(int32_t);

static bool all_chars(const cv_str *s, cp_pred pred) {
    if (s->len == 0) return false;
    for (size_t i = 0; i < s->len;) {
        int32_t cp;
        i += u8_next(s->s, s->len, i, &cp);
        if (!pred(cp)) return false;
    }
    return true;
}

static bool is_ascii_cp(int32_t cp) { return cp < 0x80; }

/* islower / isupper / istitle as Python defines them over a whole string. */
static bool case_test(const cv_str *s, int which) {
    bool cased = false, prev_cased = false;
    for (size_t i = 0; i < s->len;) {
        int32_t cp;
        i += u8_next(s->s, s->len, i, &cp);
        bool up = py_isupper(cp) || py_istitle(cp), lo = py_islower(cp);
        if (which == 0) {
            if (up) return false;
            if (lo) cased = true;
        } else if (which == 1) {
            if (lo) return false;
            if (py_isupper(cp)) cased = true;
            if (py_istitle(cp)) return false;
        } else {
            if (up) {
                if (prev_cased) return false;
                prev_cased = cased = true;
            } else if (lo) {
                if (!prev_cased) return false;
                prev_cased = cased = true;
            } else {
                prev_cased = false;
            }
        }
    }
    return cased;
}

static og_status *make_tuple3(crt *rt, const char *s, size_t a, size_t b, size_t c, size_t d,
                              size_t len, cv *out) {
    cv_list *l = cv_list_new(rt, 3, CV_SEQ_TUPLE);
    if (!l) return crt_mem_err(rt);
    OG_TRY(cv_make_str(rt, s + a, b - a, &l->v[0]));
    OG_TRY(cv_make_str(rt, s + b, c - b, &l->v[1]));
    OG_TRY(cv_make_str(rt, s + c, d - c, &l->v[2]));
    (void)len;
    l->n = 3;
    *out = cv_of_list(l);
    return NULL;
}

static og_status *str_method(crt *rt, cv self, const char *m, const cargs *a, cv *out) {
    const cv_str *s = self.s;
    cv v[4];
    bool g[4];
    int64_t n64;
    bool b;
#define BIND(...)                                                                        \
    do {                                                                                 \
        static const char *const names_[] = {__VA_ARGS__};                               \
        OG_TRY(chat_bind(rt, m, a, names_, (int)(sizeof names_ / sizeof names_[0]), nreq_, v, g)); \
    } while (0)
    int nreq_ = 0;
    if (!strcmp(m, "strip") || !strcmp(m, "lstrip") || !strcmp(m, "rstrip")) {
        BIND("chars");
        return chat_str_strip(rt, self, g[0] ? v[0] : cv_none(), m[0] == 'l' ? 1 : m[0] == 'r' ? 2 : 3, out);
    }
    if (!strcmp(m, "lower") || !strcmp(m, "upper") || !strcmp(m, "capitalize") ||
        !strcmp(m, "title") || !strcmp(m, "swapcase")) {
        BIND("x");
        if (a->npos || a->nkw) return chat_type_err(rt, "str.%s() takes no arguments", m);
        int how = m[0] == 'l' ? 0 : m[0] == 'u' ? 1 : m[0] == 'c' ? 2 : m[0] == 't' ? 3 : 4;
        return chat_str_case(rt, self, how, out);
    }
    if (!strcmp(m, "split") || !strcmp(m, "rsplit")) {
        BIND("sep", "maxsplit");
        int64_t maxsplit = -1;
        if (g[1]) {
            if (v[1].kind != CV_INT && v[1].kind != CV_BOOL)
                return chat_type_err(rt, "'%s' object cannot be interpreted as an integer",
                                     cv_type_name(v[1]));
            maxsplit = v[1].kind == CV_BOOL ? v[1].b : v[1].i;
        }
        return chat_str_split(rt, self, g[0] ? v[0] : cv_none(), maxsplit, m[0] == 'r', out);
    }
    if (!strcmp(m, "splitlines")) {
        BIND("keepends");
        return chat_str_splitlines(rt, self, g[0] && cv_truthy(v[0]), out);
    }
    if (!strcmp(m, "startswith") || !strcmp(m, "endswith")) {
        nreq_ = 1;
        BIND("prefix", "start", "end");
        OG_TRY(affix(rt, s, v[0], v[1], v[2], m[0] == 'e', &b));
        *out = cv_bool(b);
        return NULL;
    }
    if (!strcmp(m, "replace")) {
        nreq_ = 2;
        BIND("old", "new", "count");
        int64_t count = -1;
        if (g[2]) {
            if (v[2].kind != CV_INT && v[2].kind != CV_BOOL)
                return chat_type_err(rt, "'%s' object cannot be interpreted as an integer",
                                     cv_type_name(v[2]));
            count = v[2].kind == CV_BOOL ? v[2].b : v[2].i;
        }
        return chat_str_replace(rt, self, v[0], v[1], count, out);
    }
    if (!strcmp(m, "find") || !strcmp(m, "rfind") || !strcmp(m, "index") ||
        !strcmp(m, "rindex") || !strcmp(m, "count")) {
        nreq_ = 1;
        BIND("sub", "start", "end");
        OG_TRY(arg_str(rt, v[0], "substring"));
        size_t from, to;
        OG_TRY(span(rt, s, v[1], v[2], &from, &to));
        int mode = m[0] == 'c' ? 2 : m[0] == 'r' ? 1 : 0;
        OG_TRY(search(rt, s, v[0].s, from, to, mode, &n64));
        if (n64 < 0 && m[strlen(m) - 1] == 'x')
            return crt_err(rt, OG_ERR_RUNTIME, "ValueError: substring not found");
        *out = cv_int(n64);
        return NULL;
    }
    if (!strcmp(m, "join")) {
        nreq_ = 1;
        BIND("iterable");
        return chat_str_join(rt, self, v[0], out);
    }
    if (!strcmp(m, "center") || !strcmp(m, "ljust") || !strcmp(m, "rjust") || !strcmp(m, "zfill")) {
        nreq_ = 1;
        BIND("width", "fillchar");
        if (v[0].kind != CV_INT && v[0].kind != CV_BOOL)
            return chat_type_err(rt, "'%s' object cannot be interpreted as an integer",
                                 cv_type_name(v[0]));
        int64_t w = v[0].kind == CV_BOOL ? v[0].b : v[0].i;
        const char *fill = " ";
        size_t fl = 1;
        if (g[1]) {
            if (v[1].kind != CV_STR || v[1].s->ncp != 1)
                return chat_type_err(rt, "The fill character must be exactly one character long");
            fill = v[1].s->s;
            fl = v[1].s->len;
        }
        sbuf buf;
        sbuf_init(&buf, rt->lim.max_output);
        og_status *st;
        if (m[0] == 'z') {
            size_t sign = s->len && (s->s[0] == '+' || s->s[0] == '-') ? 1 : 0;
            size_t pad = w > 0 && (uint64_t)w > s->ncp ? (size_t)w - s->ncp : 0;
            st = NULL;
            if (!sbuf_add(&buf, s->s, sign)) st = sbuf_err(rt, &buf);
            for (size_t i = 0; i < pad && !st; i++)
                if (!sbuf_addc(&buf, '0')) st = sbuf_err(rt, &buf);
            if (!st && !sbuf_add(&buf, s->s + sign, s->len - sign)) st = sbuf_err(rt, &buf);
        } else {
            char align = m[0] == 'c' ? 'c' : m[0] == 'l' ? '<' : '>';
            st = chat_str_pad(rt, &buf, s->s, s->len, s->ncp, w, align, fill, fl);
        }
        if (!st) st = cv_make_str(rt, buf.p ? buf.p : "", buf.n, out);
        sbuf_free(&buf);
        return st;
    }
    if (!strcmp(m, "partition") || !strcmp(m, "rpartition")) {
        nreq_ = 1;
        BIND("sep");
        OG_TRY(arg_str(rt, v[0], "sep"));
        if (v[0].s->len == 0) return crt_err(rt, OG_ERR_RUNTIME, "ValueError: empty separator");
        size_t sl = v[0].s->len, at = SIZE_MAX;
        if (m[0] == 'p') {
            const char *hit = memmem(s->s, s->len, v[0].s->s, sl);
            if (hit) at = (size_t)(hit - s->s);
        } else {
            for (size_t j = s->len >= sl ? s->len - sl + 1 : 0; j-- > 0;)
                if (memcmp(s->s + j, v[0].s->s, sl) == 0) {
                    at = j;
                    break;
                }
        }
        if (at == SIZE_MAX)
            return m[0] == 'p' ? make_tuple3(rt, s->s, 0, s->len, s->len, s->len, s->len, out)
                               : make_tuple3(rt, s->s, 0, 0, 0, s->len, s->len, out);
        return make_tuple3(rt, s->s, 0, at, at + sl, s->len, s->len, out);
    }
    if (!strcmp(m, "removeprefix") || !strcmp(m, "removesuffix")) {
        nreq_ = 1;
        BIND("affix");
        OG_TRY(arg_str(rt, v[0], m));
        size_t l = v[0].s->len;
        if (l <= s->len) {
            if (m[6] == 'p' && memcmp(s->s, v[0].s->s, l) == 0)
                return cv_make_str(rt, s->s + l, s->len - l, out);
            if (m[6] == 's' && l && memcmp(s->s + s->len - l, v[0].s->s, l) == 0)
                return cv_make_str(rt, s->s, s->len - l, out);
        }
        *out = self;
        return NULL;
    }
    if (!strcmp(m, "expandtabs")) {
        BIND("tabsize");
        int64_t ts = g[0] && v[0].kind == CV_INT ? v[0].i : 8;
        sbuf buf;
        sbuf_init(&buf, rt->lim.max_output);
        og_status *st = NULL;
        int64_t col = 0;
        for (size_t i = 0; i < s->len && !st;) {
            int32_t cp;
            size_t k = u8_next(s->s, s->len, i, &cp);
            if (cp == '\t') {
                if (ts > 0) {
                    int64_t spaces = ts - col % ts;
                    for (int64_t q = 0; q < spaces && !st; q++)
                        if (!sbuf_addc(&buf, ' ')) st = sbuf_err(rt, &buf);
                    col += spaces;
                }
            } else {
                if (!sbuf_add(&buf, s->s + i, k)) st = sbuf_err(rt, &buf);
                col = (cp == '\n' || cp == '\r') ? 0 : col + 1;
            }
            i += k;
        }
        if (!st) st = cv_make_str(rt, buf.p ? buf.p : "", buf.n, out);
        sbuf_free(&buf);
        return st;
    }
    if (!strcmp(m, "format")) return chat_str_format(rt, s, a, out);
    /* predicates */
    if (a->npos || a->nkw) return chat_type_err(rt, "str.%s() takes no arguments", m);
    if (!strcmp(m, "isalnum")) b = all_chars(s, py_isalnum);
    else if (!strcmp(m, "isalpha")) b = all_chars(s, py_isalpha);
    else if (!strcmp(m, "isascii")) b = s->len == 0 || all_chars(s, is_ascii_cp);
    else if (!strcmp(m, "isdecimal")) b = all_chars(s, py_isdecimal);
    else if (!strcmp(m, "isdigit")) b = all_chars(s, py_isdigit);
    else if (!strcmp(m, "isnumeric")) b = all_chars(s, py_isnumeric);
    else if (!strcmp(m, "isspace")) b = all_chars(s, py_isspace);
    else if (!strcmp(m, "isprintable")) b = s->len == 0 || all_chars(s, py_isprintable);
    else if (!strcmp(m, "islower")) b = case_test(s, 0);
    else if (!strcmp(m, "isupper")) b = case_test(s, 1);
    else if (!strcmp(m, "istitle")) b = case_test(s, 2);
    else if (!strcmp(m, "isidentifier")) {
        int32_t c0 = 0;
        if (s->len) u8_next(s->s, s->len, 0, &c0);
        b = s->len && (c0 == '_' || py_isalpha(c0)) && all_chars(s, py_isword);
    } else return crt_err(rt, OG_ERR_UNSUPPORTED, "the str method '%s' is not implemented", m);
    *out = cv_bool(b);
    return NULL;
#undef BIND
}

static og_status *view(crt *rt, const cv_dict *d, cv_seq seq, cv *out) {
    cv_list *l = cv_list_new(rt, d->n, seq);
    if (!l) return crt_mem_err(rt);
    for (size_t i = 0; i < d->n; i++) {
        if (seq == CV_SEQ_KEYS) l->v[i] = d->e[i].key;
        else if (seq == CV_SEQ_VALUES) l->v[i] = d->e[i].val;
        else {
            cv_list *pair = cv_list_new(rt, 2, CV_SEQ_TUPLE);
            if (!pair) return crt_mem_err(rt);
            pair->v[0] = d->e[i].key;
            pair->v[1] = d->e[i].val;
            pair->n = 2;
            l->v[i] = cv_of_list(pair);
        }
    }
    l->n = d->n;
    *out = cv_of_list(l);
    return NULL;
}

og_status *chat_method_call(crt *rt, cv self, const char *m, const cargs *a, cv *out) {
    if (self.kind == CV_STR) return str_method(rt, self, m, a, out);
    if (self.kind == CV_FUNC && self.fn->type == CF_CYCLER) { /* cycler.next() / .reset() */
        cv_func *c = self.fn;
        if (!strcmp(m, "reset")) {
            c->pos = 0;
            *out = cv_none();
            return NULL;
        }
        if (!c->items->n) return crt_err(rt, OG_ERR_RUNTIME, "StopIteration");
        *out = c->items->v[c->pos % c->items->n];
        c->pos = (c->pos + 1) % c->items->n;
        return NULL;
    }
    cv v[3];
    bool g[3];
    if (self.kind == CV_DICT) {
        if (!strcmp(m, "get")) {
            static const char *const names[] = {"key", "default"};
            OG_TRY(chat_bind(rt, "get", a, names, 2, 1, v, g));
            if (!cv_hashable(v[0])) return chat_type_err(rt, "unhashable type: '%s'", cv_type_name(v[0]));
            cv_entry *e = cv_dict_find(self.d, v[0]);
            *out = e ? e->val : g[1] ? v[1] : cv_none();
            return NULL;
        }
        if (a->npos || a->nkw) return chat_type_err(rt, "dict.%s() takes no arguments", m);
        if (!strcmp(m, "items")) return view(rt, self.d, CV_SEQ_ITEMS, out);
        if (!strcmp(m, "keys")) return view(rt, self.d, CV_SEQ_KEYS, out);
        if (!strcmp(m, "values")) return view(rt, self.d, CV_SEQ_VALUES, out);
        if (!strcmp(m, "copy")) {
            cv_dict *d = cv_dict_new(rt, self.d->n);
            if (!d) return crt_mem_err(rt);
            memcpy(d->e, self.d->e, self.d->n * sizeof(cv_entry));
            d->n = self.d->n;
            *out = cv_of_dict(d);
            return NULL;
        }
    }
    if (self.kind == CV_LIST) {
        const cv_list *l = self.l;
        if (!strcmp(m, "count")) {
            static const char *const names[] = {"value"};
            OG_TRY(chat_bind(rt, "count", a, names, 1, 1, v, g));
            int64_t c = 0;
            for (size_t i = 0; i < l->n; i++) c += cv_eq(l->v[i], v[0]);
            *out = cv_int(c);
            return NULL;
        }
        if (!strcmp(m, "index")) {
            static const char *const names[] = {"value", "start", "stop"};
            OG_TRY(chat_bind(rt, "index", a, names, 3, 1, v, g));
            int64_t n = (int64_t)l->n, from = 0, to = n;
            if (g[1] && v[1].kind == CV_INT) from = v[1].i < 0 ? (v[1].i + n < 0 ? 0 : v[1].i + n) : v[1].i;
            if (g[2] && v[2].kind == CV_INT) to = v[2].i < 0 ? v[2].i + n : (v[2].i > n ? n : v[2].i);
            for (int64_t i = from; i < to; i++)
                if (cv_eq(l->v[i], v[0])) {
                    *out = cv_int(i);
                    return NULL;
                }
            sbuf b;
            sbuf_init(&b, 200);
            og_status_free(cv_write_repr(rt, &b, v[0]));
            og_status *st = crt_err(rt, OG_ERR_RUNTIME, "ValueError: %.*s is not in %s", (int)b.n,
                                    b.p ? b.p : "", cv_type_name(self));
            sbuf_free(&b);
            return st;
        }
        if (!strcmp(m, "copy")) {
            cv_list *c = cv_list_new(rt, l->n, CV_SEQ_LIST);
            if (!c) return crt_mem_err(rt);
            memcpy(c->v, l->v, l->n * sizeof(cv));
            c->n = l->n;
            *out = cv_of_list(c);
            return NULL;
        }
    }
    return chat_type_err(rt, "'%s' object has no callable attribute '%s'", cv_type_name(self), m);
}
