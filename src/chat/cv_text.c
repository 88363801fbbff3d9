/* str() and repr() of values, byte for byte as Python writes them: what `{{ x }}`
 * prints, and what a list or dict shows of its items. */
#include "chat/cv.h"

#include "chat/ustr.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void cv_float_repr(double f, char buf[32]) {
    if (isnan(f)) {
        strcpy(buf, "nan");
        return;
    }
    if (isinf(f)) {
        strcpy(buf, f < 0 ? "-inf" : "inf");
        return;
    }
    if (f == 0) {
        strcpy(buf, signbit(f) ? "-0.0" : "0.0");
        return;
    }
    /* the shortest digit string that reads back as f */
    char tmp[40];
    for (int p = 1; p <= 17; p++) {
        snprintf(tmp, sizeof tmp, "%.*e", p - 1, f);
        if (strtod(tmp, NULL) == f) break;
    }
    const char *s = tmp;
    bool neg = *s == '-';
    if (neg) s++;
    char digits[24];
    int nd = 0;
    for (; *s && *s != 'e'; s++)
        if (*s >= '0' && *s <= '9') digits[nd++] = *s;
    while (nd > 1 && digits[nd - 1] == '0') nd--;
    int exp10 = atoi(s + 1);
    int decpt = exp10 + 1; /* position of the decimal point after the first digit */
    char *o = buf;
    if (neg) *o++ = '-';
    if (decpt > 16 || decpt < -3) { /* Python's repr switches to exponent form here */
        *o++ = digits[0];
        if (nd > 1) {
            *o++ = '.';
            memcpy(o, digits + 1, (size_t)nd - 1);
            o += nd - 1;
        }
        sprintf(o, "e%c%02d", exp10 < 0 ? '-' : '+', exp10 < 0 ? -exp10 : exp10);
        return;
    }
    if (decpt <= 0) {
        *o++ = '0';
        *o++ = '.';
        for (int i = 0; i < -decpt; i++) *o++ = '0';
        memcpy(o, digits, (size_t)nd);
        o += nd;
    } else if (decpt >= nd) {
        memcpy(o, digits, (size_t)nd);
        o += nd;
        for (int i = nd; i < decpt; i++) *o++ = '0';
        *o++ = '.';
        *o++ = '0';
    } else {
        memcpy(o, digits, (size_t)decpt);
        o += decpt;
        *o++ = '.';
        memcpy(o, digits + decpt, (size_t)(nd - decpt));
        o += nd - decpt;
    }
    *o = 0;
}

#define ADD(b, s, n)                                                                     \
    do {                                                                                 \
        if (!sbuf_add((b), (s), (n))) return sbuf_err(rt, (b));                          \
    } while (0)
#define ADDS(b, s) ADD(b, s, strlen(s))

static og_status *write_str_repr(crt *rt, sbuf *b, const cv_str *s) {
    bool has_sq = memchr(s->s, '\'', s->len) != NULL, has_dq = memchr(s->s, '"', s->len) != NULL;
    char q = has_sq && !has_dq ? '"' : '\'';
    ADD(b, &q, 1);
    size_t run = 0; /* start of a run of bytes copied as they are */
    for (size_t i = 0; i < s->len;) {
        int32_t cp;
        size_t k = u8_next(s->s, s->len, i, &cp);
        char esc[16];
        const char *e = NULL;
        if (cp == q || cp == '\\') {
            esc[0] = '\\';
            esc[1] = (char)cp;
            esc[2] = 0;
            e = esc;
        } else if (cp == '\n') e = "\\n";
        else if (cp == '\r') e = "\\r";
        else if (cp == '\t') e = "\\t";
        else if (cp < 0x20 || cp == 0x7F) {
            snprintf(esc, sizeof esc, "\\x%02x", (unsigned)cp);
            e = esc;
        } else if (cp >= 0x80 && !py_isprintable(cp)) {
            if (cp <= 0xFF) snprintf(esc, sizeof esc, "\\x%02x", (unsigned)cp);
            else if (cp <= 0xFFFF) snprintf(esc, sizeof esc, "\\u%04x", (unsigned)cp);
            else snprintf(esc, sizeof esc, "\\U%08x", (unsigned)cp);
            e = esc;
        }
        if (e) {
            ADD(b, s->s + run, i - run);
            ADDS(b, e);
            run = i + k;
        }
        i += k;
    }
    ADD(b, s->s + run, s->len - run);
    ADD(b, &q, 1);
    return NULL;
}

enum { MAX_REPR_DEPTH = 512 };

static og_status *repr_d(crt *rt, sbuf *b, cv v, int depth);

static og_status *write_items(crt *rt, sbuf *b, const cv_list *l, const char *open,
                              const char *close, int depth) {
    ADDS(b, open);
    for (size_t i = 0; i < l->n; i++) {
        if (i) ADD(b, ", ", 2);
        OG_TRY(repr_d(rt, b, l->v[i], depth + 1));
    }
    if (l->seq == CV_SEQ_TUPLE && l->n == 1) ADD(b, ",", 1);
    ADDS(b, close);
    return NULL;
}

static og_status *write_dict(crt *rt, sbuf *b, const cv_dict *d, int depth) {
    ADD(b, "{", 1);
    for (size_t i = 0; i < d->n; i++) {
        if (i) ADD(b, ", ", 2);
        OG_TRY(repr_d(rt, b, d->e[i].key, depth + 1));
        ADD(b, ": ", 2);
        OG_TRY(repr_d(rt, b, d->e[i].val, depth + 1));
    }
    ADD(b, "}", 1);
    return NULL;
}

static og_status *write_common(crt *rt, sbuf *b, cv v, int depth) {
    char num[40];
    if (depth > MAX_REPR_DEPTH)
        return crt_err(rt, OG_ERR_RUNTIME, "RecursionError: maximum recursion depth exceeded "
                       "while getting the repr of an object");
    switch ((cv_kind)v.kind) {
    case CV_NONE: ADDS(b, "None"); return NULL;
    case CV_BOOL: ADDS(b, v.b ? "True" : "False"); return NULL;
    case CV_INT:
        snprintf(num, sizeof num, "%" PRId64, v.i);
        ADDS(b, num);
        return NULL;
    case CV_FLOAT:
        cv_float_repr(v.f, num);
        ADDS(b, num);
        return NULL;
    case CV_LIST:
        switch ((cv_seq)v.l->seq) {
        case CV_SEQ_LIST: return write_items(rt, b, v.l, "[", "]", depth);
        case CV_SEQ_TUPLE: return write_items(rt, b, v.l, "(", ")", depth);
        case CV_SEQ_KEYS: return write_items(rt, b, v.l, "dict_keys([", "])", depth);
        case CV_SEQ_VALUES: return write_items(rt, b, v.l, "dict_values([", "])", depth);
        case CV_SEQ_ITEMS: return write_items(rt, b, v.l, "dict_items([", "])", depth);
        case CV_SEQ_RANGE:
            if (v.l->r_step == 1)
                snprintf(num, sizeof num, "range(%" PRId64 ", %" PRId64 ")", v.l->r_start,
                         v.l->r_stop);
            else
                snprintf(num, sizeof num, "range(%" PRId64 ", %" PRId64 ", %" PRId64 ")",
                         v.l->r_start, v.l->r_stop, v.l->r_step);
            ADDS(b, num);
            return NULL;
        case CV_SEQ_GEN:
        case CV_SEQ_REVITER:
            /* Python prints an object address here; nothing a template can depend on */
            return crt_err(rt, OG_ERR_UNSUPPORTED, "printing a %s object (it has no stable text; "
                           "apply |list first) is not implemented", cv_type_name(v));
        }
        return NULL;
    case CV_DICT: return write_dict(rt, b, v.d, depth);
    case CV_NS:
        ADDS(b, "<Namespace ");
        OG_TRY(write_dict(rt, b, v.d, depth));
        ADDS(b, ">");
        return NULL;
    case CV_LOOP:
        snprintf(num, sizeof num, "<LoopContext %zu/%zu>", v.loop->index0 + 1, v.loop->items->n);
        ADDS(b, num);
        return NULL;
    case CV_FUNC:
        if (v.fn->type == CF_MACRO && v.fn->name) {
            ADDS(b, "<Macro '");
            ADDS(b, v.fn->name);
            ADDS(b, "'>");
            return NULL;
        }
        return crt_err(rt, OG_ERR_UNSUPPORTED, "printing a %s object (Python shows an address) "
                       "is not implemented", cv_type_name(v));
    case CV_UNDEF:
    case CV_STR: break;
    }
    return NULL;
}

og_status *cv_write_str(crt *rt, sbuf *b, cv v) {
    if (v.kind == CV_UNDEF) return NULL;
    if (v.kind == CV_STR) {
        ADD(b, v.s->s, v.s->len);
        return NULL;
    }
    return write_common(rt, b, v, 0);
}

static og_status *repr_d(crt *rt, sbuf *b, cv v, int depth) {
    if (v.kind == CV_UNDEF) {
        ADDS(b, "Undefined");
        return NULL;
    }
    if (v.kind == CV_STR) {
        if (v.flags & CVF_MARKUP) {
            ADDS(b, "Markup(");
            OG_TRY(write_str_repr(rt, b, v.s));
            ADDS(b, ")");
            return NULL;
        }
        return write_str_repr(rt, b, v.s);
    }
    return write_common(rt, b, v, depth);
}

og_status *cv_write_repr(crt *rt, sbuf *b, cv v) { return repr_d(rt, b, v, 0); }

og_status *cv_to_str(crt *rt, cv v, cv *out) {
    if (v.kind == CV_STR) {
        *out = v;
        out->flags = 0;
        return NULL;
    }
    if (v.kind == CV_UNDEF) return cv_make_str(rt, "", 0, out);
    sbuf b;
    sbuf_init(&b, rt->lim.max_output);
    og_status *st = cv_write_str(rt, &b, v);
    if (!st) st = cv_make_str(rt, b.p ? b.p : "", b.n, out);
    sbuf_free(&b);
    return st;
}
