/* The globals a chat template can call: jinja2's range (with the sandbox's size limit),
 * cycler, joiner; transformers' namespace, dict, raise_exception and strftime_now. */
#include "chat/eval.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum { MAX_RANGE = 100000 }; /* jinja2.sandbox.MAX_RANGE */

static const char *const global_names[CB_COUNT] = {
    [CB_RANGE] = "range",       [CB_NAMESPACE] = "namespace", [CB_DICT] = "dict",
    [CB_DICT_FROMKEYS] = NULL,  [CB_RAISE] = "raise_exception", [CB_STRFTIME] = "strftime_now",
    [CB_CYCLER] = "cycler",     [CB_JOINER] = "joiner",       [CB_LIPSUM] = "lipsum",
};

int chat_global_find(const char *name) {
    for (int i = 0; i < CB_COUNT; i++)
        if (global_names[i] && !strcmp(global_names[i], name)) return i;
    return -1;
}

static og_status *int_arg(crt *rt, cv v, int64_t *out) {
    if (v.kind == CV_UNDEF) return cv_undef_error(rt, v);
    if (v.kind != CV_INT && v.kind != CV_BOOL)
        return chat_type_err(rt, "'%s' object cannot be interpreted as an integer", cv_type_name(v));
    *out = v.kind == CV_BOOL ? v.b : v.i;
    return NULL;
}

static og_status *g_range(crt *rt, const cargs *a, cv *out) {
    if (a->nkw) return chat_type_err(rt, "range() takes no keyword arguments");
    if (a->npos < 1 || a->npos > 3)
        return chat_type_err(rt, "range expected 1 to 3 arguments, got %d", a->npos);
    int64_t start = 0, stop, step = 1;
    if (a->npos == 1) {
        OG_TRY(int_arg(rt, a->pos[0], &stop));
    } else {
        OG_TRY(int_arg(rt, a->pos[0], &start));
        OG_TRY(int_arg(rt, a->pos[1], &stop));
        if (a->npos == 3) OG_TRY(int_arg(rt, a->pos[2], &step));
    }
    if (step == 0) return crt_err(rt, OG_ERR_RUNTIME, "ValueError: range() arg 3 must not be zero");
    /* the length in 128 bits: the bounds may be anywhere in int64 */
    __int128 span = step > 0 ? (__int128)stop - start : (__int128)start - stop;
    __int128 st = step > 0 ? step : -(__int128)step;
    __int128 len = span > 0 ? (span + st - 1) / st : 0;
    if (len > MAX_RANGE)
        return crt_err(rt, OG_ERR_RUNTIME, "OverflowError: Range too big. The sandbox blocks ranges "
                       "larger than MAX_RANGE (%d).", MAX_RANGE);
    cv_list *l = cv_list_new(rt, (size_t)len, CV_SEQ_RANGE);
    if (!l) return crt_mem_err(rt);
    for (int64_t i = 0; i < (int64_t)len; i++) l->v[l->n++] = cv_int(start + i * step);
    l->r_start = start;
    l->r_stop = stop;
    l->r_step = step;
    *out = cv_of_list(l);
    return NULL;
}

/* dict(*args, **kwargs) into d: a mapping or an iterable of pairs, then the keywords. */
static og_status *fill_dict(crt *rt, const char *fname, const cargs *a, cv_dict *d) {
    if (a->npos > 1)
        return chat_type_err(rt, "%s expected at most 1 argument, got %d", fname, a->npos);
    if (a->npos == 1) {
        cv src = a->pos[0];
        if (src.kind == CV_DICT || src.kind == CV_NS) {
            for (size_t i = 0; i < src.d->n; i++)
                OG_TRY(cv_dict_set(rt, d, src.d->e[i].key, src.d->e[i].val));
        } else {
            cv_list *items;
            OG_TRY(cv_iterate(rt, src, &items));
            for (size_t i = 0; i < items->n; i++) {
                cv_list *pair;
                if (items->v[i].kind != CV_LIST && items->v[i].kind != CV_STR)
                    return chat_type_err(rt, "cannot convert dictionary update sequence element "
                                         "#%zu to a sequence", i);
                OG_TRY(cv_iterate(rt, items->v[i], &pair));
                if (pair->n != 2)
                    return crt_err(rt, OG_ERR_RUNTIME, "ValueError: dictionary update sequence "
                                   "element #%zu has length %zu; 2 is required", i, pair->n);
                if (!cv_hashable(pair->v[0]))
                    return chat_type_err(rt, "unhashable type: '%s'", cv_type_name(pair->v[0]));
                OG_TRY(cv_dict_set(rt, d, pair->v[0], pair->v[1]));
            }
        }
    }
    for (int i = 0; i < a->nkw; i++) OG_TRY(cv_dict_set_str(rt, d, a->kwn[i], a->kw[i]));
    return NULL;
}

static og_status *g_namespace(crt *rt, const cargs *a, cv *out) {
    cv_dict *d = cv_dict_new(rt, 4);
    if (!d) return crt_mem_err(rt);
    OG_TRY(fill_dict(rt, "namespace", a, d));
    for (size_t i = 0; i < d->n; i++)
        if (d->e[i].key.kind == CV_STR && d->e[i].key.s->s[0] == '_')
            return crt_err(rt, OG_ERR_RUNTIME, "SecurityError: Chat templates cannot store "
                           "underscore-prefixed attributes on a namespace, but got '%s'. Please "
                           "rename the attribute.", d->e[i].key.s->s);
    out->kind = CV_NS;
    out->flags = 0;
    out->d = d;
    return NULL;
}

static og_status *g_dict(crt *rt, const cargs *a, cv *out) {
    cv_dict *d = cv_dict_new(rt, 4);
    if (!d) return crt_mem_err(rt);
    OG_TRY(fill_dict(rt, "dict", a, d));
    *out = cv_of_dict(d);
    return NULL;
}

static og_status *g_fromkeys(crt *rt, const cargs *a, cv *out) {
    static const char *const names[] = {"iterable", "value"};
    cv v[2];
    bool g[2];
    OG_TRY(chat_bind(rt, "fromkeys", a, names, 2, 1, v, g));
    cv_list *keys;
    OG_TRY(cv_iterate(rt, v[0], &keys));
    cv_dict *d = cv_dict_new(rt, keys->n);
    if (!d) return crt_mem_err(rt);
    for (size_t i = 0; i < keys->n; i++) {
        if (!cv_hashable(keys->v[i]))
            return chat_type_err(rt, "unhashable type: '%s'", cv_type_name(keys->v[i]));
        OG_TRY(cv_dict_set(rt, d, keys->v[i], g[1] ? v[1] : cv_none()));
    }
    *out = cv_of_dict(d);
    return NULL;
}

static og_status *g_raise(crt *rt, const cargs *a, cv *out) {
    (void)out;
    static const char *const names[] = {"message"};
    cv msg;
    bool given;
    OG_TRY(chat_bind(rt, "raise_exception", a, names, 1, 1, &msg, &given));
    sbuf b;
    sbuf_init(&b, 4000);
    og_status *st = cv_write_str(rt, &b, msg);
    og_status_free(st);
    og_status *r = crt_err(rt, OG_ERR_INVALID_ARGUMENT, "TemplateError: %.*s", (int)b.n,
                           b.p ? b.p : "");
    sbuf_free(&b);
    return r;
}

/* The moment strftime_now shows: CHAT_TEMPLATE_NOW (YYYY-MM-DDTHH:MM:SS) or the local
 * clock. */
static og_status *now_tm(crt *rt, struct tm *tm, long *usec) {
    memset(tm, 0, sizeof *tm);
    if (rt->now) {
        int y, mo, d, h = 0, mi = 0, s = 0;
        char tail;
        int n = sscanf(rt->now, "%4d-%2d-%2dT%2d:%2d:%2d%c", &y, &mo, &d, &h, &mi, &s, &tail);
        if (!(n == 6 || (n == 3 && strlen(rt->now) == 10)) || mo < 1 || mo > 12 || d < 1 ||
            d > 31 || h > 23 || mi > 59 || s > 59)
            return crt_err(rt, OG_ERR_INVALID_ARGUMENT, "CHAT_TEMPLATE_NOW='%s' is not "
                           "YYYY-MM-DDTHH:MM:SS", rt->now);
        tm->tm_year = y - 1900;
        tm->tm_mon = mo - 1;
        tm->tm_mday = d;
        tm->tm_hour = h;
        tm->tm_min = mi;
        tm->tm_sec = s;
        time_t t = timegm(tm); /* fills in the weekday and day of the year */
        gmtime_r(&t, tm);
        tm->tm_isdst = -1;
        *usec = 0;
        return NULL;
    }
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    localtime_r(&ts.tv_sec, tm);
    *usec = ts.tv_nsec / 1000;
    return NULL;
}

og_status *chat_strftime_now(crt *rt, const cv_str *fmt, cv *out) {
    struct tm tm;
    long usec;
    OG_TRY(now_tm(rt, &tm, &usec));
    /* datetime.strftime on a naive datetime: %f is the microseconds, %z and %Z are empty */
    sbuf f;
    sbuf_init(&f, rt->lim.max_output);
    og_status *st = NULL;
    for (size_t i = 0; i < fmt->len && !st; i++) {
        bool ok = true;
        if (fmt->s[i] == '%' && i + 1 < fmt->len) {
            char c = fmt->s[i + 1];
            if (c == 'f') ok = sbuf_printf(&f, "%06ld", usec);
            else if (c == 'z' || c == 'Z') ok = true;
            else ok = sbuf_add(&f, fmt->s + i, 2);
            i++;
        } else {
            ok = sbuf_addc(&f, fmt->s[i]);
        }
        if (!ok) st = sbuf_err(rt, &f);
    }
    if (st) {
        sbuf_free(&f);
        return st;
    }
    size_t cap = f.n * 4 + 64;
    for (;;) {
        if (cap > rt->lim.max_output) {
            st = crt_err(rt, OG_ERR_RUNTIME, "LimitError: strftime output passes the output limit");
            break;
        }
        char *buf = malloc(cap);
        if (!buf) {
            st = og_oom();
            break;
        }
        /* strftime returns 0 both for "" and for "did not fit": a marker tells them apart */
        sbuf_addc(&f, 'x');
        size_t n = strftime(buf, cap, f.p ? f.p : "x", &tm);
        if (n > 0) {
            st = cv_make_str(rt, buf, n - 1, out);
            free(buf);
            break;
        }
        f.n--;
        free(buf);
        cap *= 2;
    }
    sbuf_free(&f);
    return st;
}

static og_status *g_strftime(crt *rt, const cargs *a, cv *out) {
    static const char *const names[] = {"format"};
    cv fmt;
    bool given;
    OG_TRY(chat_bind(rt, "strftime_now", a, names, 1, 1, &fmt, &given));
    if (fmt.kind == CV_UNDEF) return cv_undef_error(rt, fmt);
    if (fmt.kind != CV_STR)
        return chat_type_err(rt, "strftime() argument 1 must be str, not %s", cv_type_name(fmt));
    return chat_strftime_now(rt, fmt.s, out);
}

static og_status *g_cycler(crt *rt, const cargs *a, cv *out) {
    if (a->nkw) return chat_type_err(rt, "cycler() takes no keyword arguments");
    if (a->npos == 0) return crt_err(rt, OG_ERR_RUNTIME, "RuntimeError: at least one item has to be provided");
    cv_func *fn = crt_alloc(rt, sizeof *fn);
    cv_list *items = cv_list_new(rt, (size_t)a->npos, CV_SEQ_TUPLE);
    if (!fn || !items) return crt_mem_err(rt);
    for (int i = 0; i < a->npos; i++) items->v[items->n++] = a->pos[i];
    fn->type = CF_CYCLER;
    fn->items = items;
    *out = cv_of_func(fn);
    return NULL;
}

static og_status *g_joiner(crt *rt, const cargs *a, cv *out) {
    static const char *const names[] = {"sep"};
    cv sep;
    bool given;
    OG_TRY(chat_bind(rt, "joiner", a, names, 1, 0, &sep, &given));
    cv_func *fn = crt_alloc(rt, sizeof *fn);
    if (!fn) return crt_mem_err(rt);
    fn->type = CF_JOINER;
    if (given) {
        cv s;
        OG_TRY(cv_to_str(rt, sep, &s));
        fn->sep = s.s->s;
    } else {
        fn->sep = ", ";
    }
    *out = cv_of_func(fn);
    return NULL;
}

og_status *chat_global_call(crt *rt, cv_func *fn, const cargs *a, cv *out) {
    if (fn->type == CF_JOINER) {
        if (a->npos || a->nkw) return chat_type_err(rt, "joiner takes no arguments");
        bool first = !fn->used;
        fn->used = true;
        return first ? cv_make_str(rt, "", 0, out) : cv_make_str(rt, fn->sep, strlen(fn->sep), out);
    }
    if (fn->type == CF_CYCLER) return chat_type_err(rt, "'Cycler' object is not callable");
    switch ((cv_builtin)fn->id) {
    case CB_RANGE: return g_range(rt, a, out);
    case CB_NAMESPACE: return g_namespace(rt, a, out);
    case CB_DICT: return g_dict(rt, a, out);
    case CB_DICT_FROMKEYS: return g_fromkeys(rt, a, out);
    case CB_RAISE: return g_raise(rt, a, out);
    case CB_STRFTIME: return g_strftime(rt, a, out);
    case CB_CYCLER: return g_cycler(rt, a, out);
    case CB_JOINER: return g_joiner(rt, a, out);
    case CB_LIPSUM:
        return crt_err(rt, OG_ERR_UNSUPPORTED, "the global 'lipsum' is not implemented");
    case CB_COUNT: break;
    }
    return chat_type_err(rt, "object is not callable");
}
