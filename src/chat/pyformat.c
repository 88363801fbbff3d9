/* Python's two string formatting languages: printf-style "fmt % args" (and the |format
 * filter, which is built on it) and str.format with its format-spec mini-language. The
 * number bodies come from C's printf, whose output for these conversions is Python's;
 * signs, prefixes, grouping and padding (in code points) are done here. */
#include "chat/eval.h"

#include "chat/ustr.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PUT(b, s, n)                                                                     \
    do {                                                                                 \
        if (!sbuf_add((b), (s), (n))) return sbuf_err(rt, (b));                          \
    } while (0)

static bool intlike(cv v) { return v.kind == CV_INT || v.kind == CV_BOOL; }
static int64_t ival(cv v) { return v.kind == CV_BOOL ? (int64_t)v.b : v.i; }

/* Digits of |v| in base (lowercase unless upper), most significant first. */
static size_t int_digits(int64_t v, int base, bool upper, char *out) {
    uint64_t u = v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;
    char tmp[70];
    size_t n = 0;
    const char *dig = upper ? "0123456789ABCDEF" : "0123456789abcdef";
    do {
        tmp[n++] = dig[u % (uint64_t)base];
        u /= (uint64_t)base;
    } while (u);
    for (size_t i = 0; i < n; i++) out[i] = tmp[n - 1 - i];
    return n;
}

/* Inserts a separator every `every` digits of the integer part digits[0..n). */
static size_t group_digits(const char *digits, size_t n, char sep, int every, char *out) {
    size_t o = 0;
    for (size_t i = 0; i < n; i++) {
        if (i && (n - i) % (size_t)every == 0) out[o++] = sep;
        out[o++] = digits[i];
    }
    return o;
}

/* ---- printf-style ------------------------------------------------------------------- */

typedef struct pspec {
    bool left, plus, space, alt, zero;
    int64_t width;
    int64_t prec; /* -1: none */
} pspec;

/* Pads body (sign and prefix apart for zero padding) to the width. */
static og_status *emit_padded(crt *rt, sbuf *b, const pspec *p, const char *sign, const char *prefix,
                              const char *body, size_t blen, size_t bcp, bool numeric) {
    size_t sl = strlen(sign), pl = strlen(prefix);
    size_t total = sl + pl + bcp;
    size_t pad = p->width > 0 && (uint64_t)p->width > total ? (size_t)p->width - total : 0;
    if (pad > rt->lim.max_output) return sbuf_err(rt, b);
    if (p->left) {
        PUT(b, sign, sl);
        PUT(b, prefix, pl);
        PUT(b, body, blen);
        for (size_t i = 0; i < pad; i++) PUT(b, " ", 1);
    } else if (p->zero && numeric) {
        PUT(b, sign, sl);
        PUT(b, prefix, pl);
        for (size_t i = 0; i < pad; i++) PUT(b, "0", 1);
        PUT(b, body, blen);
    } else {
        for (size_t i = 0; i < pad; i++) PUT(b, " ", 1);
        PUT(b, sign, sl);
        PUT(b, prefix, pl);
        PUT(b, body, blen);
    }
    return NULL;
}

/* ascii(): repr with every non-ASCII code point escaped. */
static og_status *write_ascii(crt *rt, sbuf *b, cv v) {
    sbuf r;
    sbuf_init(&r, rt->lim.max_output);
    og_status *st = cv_write_repr(rt, &r, v);
    for (size_t i = 0; i < r.n && !st;) {
        int32_t cp;
        size_t k = u8_next(r.p, r.n, i, &cp);
        char esc[12];
        bool ok;
        if (cp < 0x80) ok = sbuf_add(b, r.p + i, k);
        else {
            if (cp <= 0xFF) snprintf(esc, sizeof esc, "\\x%02x", (unsigned)cp);
            else if (cp <= 0xFFFF) snprintf(esc, sizeof esc, "\\u%04x", (unsigned)cp);
            else snprintf(esc, sizeof esc, "\\U%08x", (unsigned)cp);
            ok = sbuf_adds(b, esc);
        }
        if (!ok) st = sbuf_err(rt, b);
        i += k;
    }
    sbuf_free(&r);
    return st;
}

static og_status *percent_one(crt *rt, sbuf *b, const pspec *p, char conv, cv v, bool markup) {
    if (v.kind == CV_UNDEF && conv != 's' && conv != 'r' && conv != 'a') return cv_undef_error(rt, v);
    switch (conv) {
    case 's':
    case 'r':
    case 'a': {
        sbuf t;
        sbuf_init(&t, rt->lim.max_output);
        og_status *st;
        if (markup && conv == 's') {
            cv e;
            st = chat_escape(rt, v, &e);
            if (!st) st = cv_write_str(rt, &t, e);
        } else {
            st = conv == 's' ? cv_write_str(rt, &t, v) : conv == 'r' ? cv_write_repr(rt, &t, v)
                                                                     : write_ascii(rt, &t, v);
        }
        if (!st) {
            const char *s = t.p ? t.p : "";
            size_t len = t.n, ncp = u8_count(s, len);
            if (p->prec >= 0 && (uint64_t)p->prec < ncp) {
                len = u8_offset(s, len, false, (size_t)p->prec);
                ncp = (size_t)p->prec;
            }
            st = emit_padded(rt, b, p, "", "", s, len, ncp, false);
        }
        sbuf_free(&t);
        return st;
    }
    case 'd':
    case 'i':
    case 'u':
    case 'x':
    case 'X':
    case 'o': {
        int64_t x;
        if (intlike(v)) x = ival(v);
        else if (v.kind == CV_FLOAT && (conv == 'd' || conv == 'i' || conv == 'u')) {
            if (!isfinite(v.f))
                return crt_err(rt, OG_ERR_RUNTIME, "OverflowError: cannot convert float %s to integer",
                               isnan(v.f) ? "NaN" : "infinity");
            if (fabs(v.f) >= 9.2e18) return crt_err(rt, OG_ERR_UNSUPPORTED, "OverflowError: integer beyond 64 bits");
            x = (int64_t)v.f;
        } else if (conv == 'd' || conv == 'i' || conv == 'u')
            return chat_type_err(rt, "%%%c format: a real number is required, not %s", conv,
                                 cv_type_name(v));
        else
            return chat_type_err(rt, "%%%c format: an integer is required, not %s", conv,
                                 cv_type_name(v));
        int base = conv == 'x' || conv == 'X' ? 16 : conv == 'o' ? 8 : 10;
        char digits[80];
        size_t n = int_digits(x, base, conv == 'X', digits);
        char body[160];
        size_t bl = 0;
        if (p->prec > (int64_t)n && p->prec < 100)
            for (int64_t i = (int64_t)n; i < p->prec; i++) body[bl++] = '0';
        memcpy(body + bl, digits, n);
        bl += n;
        const char *sign = x < 0 ? "-" : p->plus ? "+" : p->space ? " " : "";
        const char *prefix = !p->alt ? "" : conv == 'x' ? "0x" : conv == 'X' ? "0X" : conv == 'o' ? "0o" : "";
        return emit_padded(rt, b, p, sign, prefix, body, bl, bl, true);
    }
    case 'e':
    case 'E':
    case 'f':
    case 'F':
    case 'g':
    case 'G': {
        if (!cv_is_number(v))
            return chat_type_err(rt, "must be real number, not %s", cv_type_name(v));
        double d = cv_as_double(v);
        char fmt[32], body[512];
        int prec = p->prec < 0 ? 6 : p->prec > 300 ? 300 : (int)p->prec;
        snprintf(fmt, sizeof fmt, "%%%s.%d%c", p->alt ? "#" : "", prec, conv);
        int n = snprintf(body, sizeof body, fmt, fabs(d));
        if (n < 0 || (size_t)n >= sizeof body)
            return crt_err(rt, OG_ERR_UNSUPPORTED, "formatting a float this large is not implemented");
        const char *sign = signbit(d) && !isnan(d) ? "-" : p->plus ? "+" : p->space ? " " : "";
        return emit_padded(rt, b, p, sign, "", body, (size_t)n, (size_t)n, isfinite(d));
    }
    case 'c': {
        char buf[8];
        int n;
        if (intlike(v)) {
            int64_t x = ival(v);
            if (x < 0 || x > 0x10FFFF)
                return crt_err(rt, OG_ERR_RUNTIME, "OverflowError: %%c arg not in range(0x110000)");
            n = u8_put((int32_t)x, buf);
        } else if (v.kind == CV_STR && v.s->ncp == 1) {
            n = (int)v.s->len;
            memcpy(buf, v.s->s, v.s->len);
        } else {
            return chat_type_err(rt, "%%c requires int or char");
        }
        return emit_padded(rt, b, p, "", "", buf, (size_t)n, 1, false);
    }
    default:
        return crt_err(rt, OG_ERR_RUNTIME, "ValueError: unsupported format character '%c' (0x%x)",
                       conv, (unsigned)(unsigned char)conv);
    }
}

og_status *chat_percent_format(crt *rt, cv fmt, cv args, cv *out) {
    const cv_str *f = fmt.s;
    bool markup = fmt.flags & CVF_MARKUP;
    bool is_tuple = args.kind == CV_LIST && args.l->seq == CV_SEQ_TUPLE;
    bool is_map = args.kind == CV_DICT;
    /* Python treats anything with __getitem__ (a list, a range, an undefined value) as a
     * mapping here: unused, it is no error ('abc' % [1] is 'abc') */
    bool map_like = is_map || args.kind == CV_UNDEF ||
                    (args.kind == CV_LIST && !is_tuple && args.l->seq != CV_SEQ_GEN &&
                     args.l->seq != CV_SEQ_REVITER && args.l->seq != CV_SEQ_KEYS &&
                     args.l->seq != CV_SEQ_VALUES && args.l->seq != CV_SEQ_ITEMS);
    const cv *items = is_tuple ? args.l->v : &args;
    int64_t nargs = is_tuple ? (int64_t)args.l->n : 1, next = 0;
    bool used_map = false;
    sbuf b;
    sbuf_init(&b, rt->lim.max_output);
    og_status *st = NULL;
#define FAIL(expr)                                                                       \
    do {                                                                                 \
        st = (expr);                                                                     \
        goto done;                                                                       \
    } while (0)
    for (size_t i = 0; i < f->len;) {
        const char *pct = memchr(f->s + i, '%', f->len - i);
        size_t run = pct ? (size_t)(pct - f->s) - i : f->len - i;
        if (!sbuf_add(&b, f->s + i, run)) FAIL(sbuf_err(rt, &b));
        i += run;
        if (!pct) break;
        i++; /* '%' */
        if (i >= f->len) FAIL(crt_err(rt, OG_ERR_RUNTIME, "ValueError: incomplete format"));
        cv v = cv_undef();
        bool have_v = false;
        if (f->s[i] == '(') {
            if (args.kind == CV_UNDEF) FAIL(cv_undef_error(rt, args));
            if (args.kind == CV_LIST && map_like)
                FAIL(chat_type_err(rt, "%s indices must be integers or slices, not str", cv_type_name(args)));
            if (!is_map) FAIL(chat_type_err(rt, "format requires a mapping"));
            size_t depth = 1, k = ++i;
            while (k < f->len && depth) {
                if (f->s[k] == '(') depth++;
                else if (f->s[k] == ')') depth--;
                if (depth) k++;
            }
            if (k >= f->len) FAIL(crt_err(rt, OG_ERR_RUNTIME, "ValueError: incomplete format key"));
            cv_entry *e = cv_dict_find_str(args.d, f->s + i, k - i);
            if (!e)
                FAIL(crt_err(rt, OG_ERR_RUNTIME, "KeyError: '%.*s'", (int)(k - i), f->s + i));
            v = e->val;
            have_v = true;
            used_map = true;
            i = k + 1;
        }
        pspec p = {.prec = -1};
        for (; i < f->len; i++) {
            char c = f->s[i];
            if (c == '-') p.left = true;
            else if (c == '+') p.plus = true;
            else if (c == ' ') p.space = true;
            else if (c == '#') p.alt = true;
            else if (c == '0') p.zero = true;
            else break;
        }
        if (i < f->len && f->s[i] == '*') {
            if (next >= nargs || !intlike(items[next]))
                FAIL(chat_type_err(rt, "* wants int"));
            p.width = ival(items[next++]);
            if (p.width < 0) {
                p.left = true;
                p.width = -p.width;
            }
            i++;
        } else {
            while (i < f->len && f->s[i] >= '0' && f->s[i] <= '9') {
                p.width = p.width * 10 + (f->s[i++] - '0');
                if (p.width > (int64_t)rt->lim.max_output) FAIL(sbuf_err(rt, &b));
            }
        }
        if (i < f->len && f->s[i] == '.') {
            i++;
            p.prec = 0;
            if (i < f->len && f->s[i] == '*') {
                if (next >= nargs || !intlike(items[next]))
                    FAIL(chat_type_err(rt, "* wants int"));
                p.prec = ival(items[next++]);
                i++;
            } else {
                while (i < f->len && f->s[i] >= '0' && f->s[i] <= '9') {
                    p.prec = p.prec * 10 + (f->s[i++] - '0');
                    if (p.prec > 100000) FAIL(sbuf_err(rt, &b));
                }
            }
        }
        while (i < f->len && (f->s[i] == 'h' || f->s[i] == 'l' || f->s[i] == 'L')) i++;
        if (i >= f->len) FAIL(crt_err(rt, OG_ERR_RUNTIME, "ValueError: incomplete format"));
        char conv = f->s[i++];
        if (conv == '%') {
            if (!sbuf_addc(&b, '%')) FAIL(sbuf_err(rt, &b));
            continue;
        }
        if (!have_v) {
            if (next >= nargs) FAIL(chat_type_err(rt, "not enough arguments for format string"));
            v = items[next++];
        }
        if ((st = percent_one(rt, &b, &p, conv, v, markup))) goto done;
    }
    if (!map_like && next < nargs)
        FAIL(chat_type_err(rt, "not all arguments converted during string formatting"));
    (void)used_map;
    st = cv_make_str(rt, b.p ? b.p : "", b.n, out);
    if (!st && markup) out->flags = CVF_MARKUP;
done:
#undef FAIL
    sbuf_free(&b);
    return st;
}

/* ---- format-spec mini-language ------------------------------------------------------ */

typedef struct fspec {
    char fill[5];
    size_t fill_len;
    char align; /* 0, '<', '>', '^', '=' */
    char sign;  /* 0, '+', '-', ' ' */
    bool alt, zero, z;
    int64_t width;
    char group; /* 0, ',', '_' */
    int64_t prec;
    char type;
} fspec;

static og_status *parse_spec(crt *rt, const char *s, size_t len, fspec *f) {
    memset(f, 0, sizeof *f);
    f->prec = -1;
    f->fill[0] = ' ';
    f->fill_len = 1;
    size_t i = 0;
    int32_t cp;
    size_t k = len ? u8_next(s, len, 0, &cp) : 0;
    if (len > k && strchr("<>^=", s[k])) {
        memcpy(f->fill, s, k);
        f->fill_len = k;
        f->align = s[k];
        i = k + 1;
    } else if (len && strchr("<>^=", s[0])) {
        f->align = s[0];
        i = 1;
    }
    if (i < len && (s[i] == '+' || s[i] == '-' || s[i] == ' ')) f->sign = s[i++];
    if (i < len && s[i] == 'z') {
        f->z = true;
        i++;
    }
    if (i < len && s[i] == '#') {
        f->alt = true;
        i++;
    }
    if (i < len && s[i] == '0') {
        f->zero = true;
        i++;
    }
    while (i < len && s[i] >= '0' && s[i] <= '9') {
        f->width = f->width * 10 + (s[i++] - '0');
        if (f->width > (int64_t)rt->lim.max_output)
            return crt_err(rt, OG_ERR_RUNTIME, "LimitError: format width too large");
    }
    if (i < len && (s[i] == ',' || s[i] == '_')) f->group = s[i++];
    if (i < len && s[i] == '.') {
        i++;
        if (i >= len || s[i] < '0' || s[i] > '9')
            return crt_err(rt, OG_ERR_RUNTIME, "ValueError: Format specifier missing precision");
        f->prec = 0;
        while (i < len && s[i] >= '0' && s[i] <= '9') {
            f->prec = f->prec * 10 + (s[i++] - '0');
            if (f->prec > 100000) return crt_err(rt, OG_ERR_RUNTIME, "LimitError: precision too large");
        }
    }
    if (i < len) f->type = s[i++];
    if (i < len) return crt_err(rt, OG_ERR_RUNTIME, "ValueError: Invalid format specifier");
    if (f->zero && !f->align) {
        f->fill[0] = '0';
        f->fill_len = 1;
        f->align = '=';
    }
    return NULL;
}

static og_status *emit_aligned(crt *rt, sbuf *b, const fspec *f, char dflt_align, const char *sign,
                               const char *body, size_t blen, size_t bcp) {
    size_t sl = strlen(sign), total = sl + bcp;
    size_t pad = f->width > 0 && (uint64_t)f->width > total ? (size_t)f->width - total : 0;
    char align = f->align ? f->align : dflt_align;
    size_t left = align == '>' ? pad : align == '^' ? pad / 2 : align == '=' ? 0 : 0;
    size_t mid = align == '=' ? pad : 0;
    size_t right = pad - left - mid;
    for (size_t i = 0; i < left; i++) PUT(b, f->fill, f->fill_len);
    PUT(b, sign, sl);
    for (size_t i = 0; i < mid; i++) PUT(b, f->fill, f->fill_len);
    PUT(b, body, blen);
    for (size_t i = 0; i < right; i++) PUT(b, f->fill, f->fill_len);
    return NULL;
}

static og_status *format_int(crt *rt, sbuf *b, int64_t x, const fspec *f) {
    char t = f->type ? f->type : 'd';
    if (t == 'c') {
        char buf[8];
        if (x < 0 || x > 0x10FFFF) return crt_err(rt, OG_ERR_RUNTIME, "OverflowError: %%c arg not in range(0x110000)");
        int n = u8_put((int32_t)x, buf);
        return emit_aligned(rt, b, f, '<', "", buf, (size_t)n, 1);
    }
    int base = t == 'b' ? 2 : t == 'o' ? 8 : (t == 'x' || t == 'X') ? 16 : t == 'd' || t == 'n' ? 10 : 0;
    if (!base) return crt_err(rt, OG_ERR_RUNTIME, "ValueError: Unknown format code '%c' for object of type 'int'", t);
    char digits[80], body[200];
    size_t n = int_digits(x, base, t == 'X', digits), bl = 0;
    if (f->alt && base != 10) {
        body[bl++] = '0';
        body[bl++] = t == 'b' ? 'b' : t == 'o' ? 'o' : t;
    }
    if (f->group) bl += group_digits(digits, n, f->group, base == 10 ? 3 : 4, body + bl);
    else {
        memcpy(body + bl, digits, n);
        bl += n;
    }
    const char *sign = x < 0 ? "-" : f->sign == '+' ? "+" : f->sign == ' ' ? " " : "";
    return emit_aligned(rt, b, f, '>', sign, body, bl, bl);
}

static og_status *format_float(crt *rt, sbuf *b, double d, const fspec *f) {
    char t = f->type;
    char body[600], tmp[600];
    size_t bl;
    if (f->z && d == 0) d = 0.0 * (d < 0 ? -1 : 1), d = fabs(d);
    double a = fabs(d);
    if (!isfinite(d)) {
        const char *s = isnan(d) ? "nan" : "inf";
        bool up = t == 'E' || t == 'F' || t == 'G';
        snprintf(body, sizeof body, "%s", up ? (isnan(d) ? "NAN" : "INF") : s);
        bl = strlen(body);
    } else if (t == 0 && f->prec < 0) {
        cv_float_repr(a, body);
        bl = strlen(body);
    } else {
        char c = t == 0 ? 'g' : t == 'n' ? 'g' : t == '%' ? 'f' : t;
        if (!strchr("eEfFgG", c))
            return crt_err(rt, OG_ERR_RUNTIME, "ValueError: Unknown format code '%c' for object of type 'float'", t);
        int prec = f->prec < 0 ? 6 : f->prec > 300 ? 300 : (int)f->prec;
        if (t == 0 && prec == 0) prec = 1;
        char fmt[32];
        snprintf(fmt, sizeof fmt, "%%%s.%d%c", f->alt ? "#" : "", prec, c);
        int n = snprintf(tmp, sizeof tmp, fmt, t == '%' ? a * 100 : a);
        if (n < 0 || (size_t)n >= sizeof tmp - 2)
            return crt_err(rt, OG_ERR_UNSUPPORTED, "formatting a float this large is not implemented");
        bl = (size_t)n;
        memcpy(body, tmp, bl);
        if (t == 0 && !strpbrk(tmp, ".eEn")) { /* no type: fixed notation keeps one decimal */
            memcpy(body + bl, ".0", 2);
            bl += 2;
        }
        if (t == '%') body[bl++] = '%';
    }
    if (f->group && isfinite(d)) {
        size_t intlen = 0;
        while (intlen < bl && body[intlen] >= '0' && body[intlen] <= '9') intlen++;
        char g[700];
        size_t gl = group_digits(body, intlen, f->group, 3, g);
        memcpy(g + gl, body + intlen, bl - intlen);
        gl += bl - intlen;
        memcpy(body, g, gl);
        bl = gl;
    }
    const char *sign = signbit(d) && !isnan(d) ? "-" : f->sign == '+' ? "+" : f->sign == ' ' ? " " : "";
    return emit_aligned(rt, b, f, '>', sign, body, bl, bl);
}

og_status *chat_format_value(crt *rt, sbuf *b, cv v, const char *spec, size_t spec_len) {
    if (spec_len == 0 && v.kind != CV_FLOAT) return cv_write_str(rt, b, v);
    fspec f;
    OG_TRY(parse_spec(rt, spec, spec_len, &f));
    switch ((cv_kind)v.kind) {
    case CV_STR: {
        if (f.type && f.type != 's')
            return crt_err(rt, OG_ERR_RUNTIME, "ValueError: Unknown format code '%c' for object of type 'str'", f.type);
        if (f.sign) return crt_err(rt, OG_ERR_RUNTIME, "ValueError: Sign not allowed in string format specifier");
        if (f.align == '=') return crt_err(rt, OG_ERR_RUNTIME, "ValueError: '=' alignment not allowed in string format specifier");
        size_t len = v.s->len, ncp = v.s->ncp;
        if (f.prec >= 0 && (uint64_t)f.prec < ncp) {
            len = u8_offset(v.s->s, v.s->len, len == ncp, (size_t)f.prec);
            ncp = (size_t)f.prec;
        }
        return emit_aligned(rt, b, &f, '<', "", v.s->s, len, ncp);
    }
    case CV_BOOL:
    case CV_INT:
        if (f.type && strchr("eEfFgG%", f.type)) return format_float(rt, b, (double)ival(v), &f);
        if (f.prec >= 0) return crt_err(rt, OG_ERR_RUNTIME, "ValueError: Precision not allowed in integer format specifier");
        return format_int(rt, b, ival(v), &f);
    case CV_FLOAT:
        if (spec_len == 0) return cv_write_str(rt, b, v);
        return format_float(rt, b, v.f, &f);
    default:
        return chat_type_err(rt, "unsupported format string passed to %s.__format__", cv_type_name(v));
    }
}

/* ---- str.format --------------------------------------------------------------------- */

static og_status *field_value(crt *rt, const char *name, size_t len, const cargs *a, int *auto_idx,
                              int *mode, cv *out) {
    size_t k = 0;
    while (k < len && name[k] != '.' && name[k] != '[') k++;
    bool digits = k > 0;
    for (size_t i = 0; i < k; i++)
        if (name[i] < '0' || name[i] > '9') digits = false;
    cv v;
    if (k == 0 || digits) {
        int idx;
        if (k == 0) {
            if (*mode == 2) return crt_err(rt, OG_ERR_RUNTIME, "ValueError: cannot switch from manual field specification to automatic field numbering");
            *mode = 1;
            idx = (*auto_idx)++;
        } else {
            if (*mode == 1) return crt_err(rt, OG_ERR_RUNTIME, "ValueError: cannot switch from automatic field numbering to manual field specification");
            *mode = 2;
            idx = atoi(name);
        }
        if (idx >= a->npos)
            return crt_err(rt, OG_ERR_RUNTIME, "IndexError: Replacement index %d out of range for positional args tuple", idx);
        v = a->pos[idx];
    } else {
        int i = 0;
        while (i < a->nkw && !(strlen(a->kwn[i]) == k && memcmp(a->kwn[i], name, k) == 0)) i++;
        if (i == a->nkw) return crt_err(rt, OG_ERR_RUNTIME, "KeyError: '%.*s'", (int)k, name);
        v = a->kw[i];
    }
    while (k < len) {
        char attr[256];
        if (name[k] == '.') {
            size_t j = ++k;
            while (k < len && name[k] != '.' && name[k] != '[') k++;
            if (k - j >= sizeof attr || k == j)
                return crt_err(rt, OG_ERR_RUNTIME, "ValueError: Empty attribute in format string");
            memcpy(attr, name + j, k - j);
            attr[k - j] = 0;
            OG_TRY(chat_getattr(rt, v, attr, &v));
        } else {
            size_t j = ++k;
            while (k < len && name[k] != ']') k++;
            if (k >= len || k - j >= sizeof attr)
                return crt_err(rt, OG_ERR_RUNTIME, "ValueError: Missing ']' in format string");
            memcpy(attr, name + j, k - j);
            attr[k - j] = 0;
            k++;
            bool num = k - 1 > j;
            for (size_t q = j; q < k - 1; q++)
                if (name[q] < '0' || name[q] > '9') num = false;
            cv key;
            if (num) key = cv_int(atoll(attr));
            else OG_TRY(cv_make_str(rt, attr, strlen(attr), &key));
            cv got;
            OG_TRY(chat_getitem(rt, v, key, &got));
            if (got.kind == CV_UNDEF && v.kind != CV_UNDEF)
                return crt_err(rt, OG_ERR_RUNTIME, "KeyError: '%s'", attr);
            v = got;
        }
    }
    *out = v;
    return NULL;
}

static og_status *format_into(crt *rt, sbuf *b, const char *s, size_t len, const cargs *a,
                              int *auto_idx, int *mode, int depth) {
    for (size_t i = 0; i < len;) {
        char c = s[i];
        if (c == '}') {
            if (i + 1 < len && s[i + 1] == '}') {
                PUT(b, "}", 1);
                i += 2;
                continue;
            }
            return crt_err(rt, OG_ERR_RUNTIME, "ValueError: Single '}' encountered in format string");
        }
        if (c != '{') {
            size_t j = i;
            while (j < len && s[j] != '{' && s[j] != '}') j++;
            PUT(b, s + i, j - i);
            i = j;
            continue;
        }
        if (i + 1 < len && s[i + 1] == '{') {
            PUT(b, "{", 1);
            i += 2;
            continue;
        }
        /* a field: find its end, counting nested braces of the spec */
        size_t j = i + 1, nest = 1;
        while (j < len) {
            if (s[j] == '{') nest++;
            else if (s[j] == '}' && --nest == 0) break;
            j++;
        }
        if (j >= len) return crt_err(rt, OG_ERR_RUNTIME, "ValueError: expected '}' before end of string");
        const char *fld = s + i + 1;
        size_t fl = j - i - 1, name_end = 0;
        while (name_end < fl && fld[name_end] != '!' && fld[name_end] != ':') {
            if (fld[name_end] == '[')
                while (name_end < fl && fld[name_end] != ']') name_end++;
            if (name_end < fl) name_end++;
        }
        char conv = 0;
        size_t p = name_end;
        if (p < fl && fld[p] == '!') {
            if (p + 1 >= fl) return crt_err(rt, OG_ERR_RUNTIME, "ValueError: end of string while looking for conversion specifier");
            conv = fld[p + 1];
            p += 2;
            if (p < fl && fld[p] != ':') return crt_err(rt, OG_ERR_RUNTIME, "ValueError: expected ':' after conversion specifier");
        }
        const char *spec = "";
        size_t spec_len = 0;
        if (p < fl && fld[p] == ':') {
            spec = fld + p + 1;
            spec_len = fl - p - 1;
        }
        cv v;
        OG_TRY(field_value(rt, fld, name_end, a, auto_idx, mode, &v));
        if (conv) {
            sbuf t;
            sbuf_init(&t, rt->lim.max_output);
            og_status *st = NULL;
            if (conv == 's') st = cv_write_str(rt, &t, v);
            else if (conv == 'r') st = cv_write_repr(rt, &t, v);
            else if (conv == 'a') st = write_ascii(rt, &t, v);
            else st = crt_err(rt, OG_ERR_RUNTIME, "ValueError: Unknown conversion specifier %c", conv);
            if (!st) st = cv_make_str(rt, t.p ? t.p : "", t.n, &v);
            sbuf_free(&t);
            OG_TRY(st);
        }
        if (memchr(spec, '{', spec_len)) { /* nested fields in the spec */
            if (depth > 1) return crt_err(rt, OG_ERR_RUNTIME, "ValueError: Max string recursion exceeded");
            sbuf t;
            sbuf_init(&t, rt->lim.max_output);
            og_status *st = format_into(rt, &t, spec, spec_len, a, auto_idx, mode, depth + 1);
            if (!st) st = chat_format_value(rt, b, v, t.p ? t.p : "", t.n);
            sbuf_free(&t);
            OG_TRY(st);
        } else {
            if (v.kind == CV_UNDEF && spec_len)
                return chat_type_err(rt, "unsupported format string passed to Undefined.__format__");
            OG_TRY(chat_format_value(rt, b, v, spec, spec_len));
        }
        i = j + 1;
    }
    return NULL;
}

og_status *chat_str_format(crt *rt, const cv_str *fmt, const cargs *a, cv *out) {
    sbuf b;
    sbuf_init(&b, rt->lim.max_output);
    int auto_idx = 0, mode = 0;
    og_status *st = format_into(rt, &b, fmt->s, fmt->len, a, &auto_idx, &mode, 0);
    if (!st) st = cv_make_str(rt, b.p ? b.p : "", b.n, out);
    sbuf_free(&b);
    return st;
}
