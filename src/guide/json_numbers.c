/* JSON numbers as regular expressions. Without bounds an integer is
 * -?(0|[1-9][0-9]*) and a number adds a fraction and an exponent. With bounds (as
 * llguidance) an integer is the canonical decimals of the integers in range, and a
 * number is the decimals (no exponent) whose value is in range: "-0" only where an
 * integer range is bounded on both sides around zero, never for a bounded number.
 * Bounds are handled as decimal digit strings, so any double (1e30, 0.1) is exact. */
#include "guide/json_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define INT_RE "-?(?:0|[1-9][0-9]*)"
#define NUM_RE INT_RE "(?:\\.[0-9]+)?(?:[eE][+-]?[0-9]+)?"

/* Digit strings of at most this many digits (doubles reach 309 integer digits and
 * about 330 fraction digits of their shortest form). */
#define ND 400

void json_number_text(jbuf *out, double v) {
    char buf[64];
    if (v == floor(v) && fabs(v) < 1e17) {
        snprintf(buf, sizeof buf, "%.0f", v);
        if (strcmp(buf, "-0") == 0) strcpy(buf, "0");
    } else {
        for (int p = 1; p <= 17; p++) {
            snprintf(buf, sizeof buf, "%.*g", p, v);
            if (strtod(buf, NULL) == v) break;
        }
    }
    jbuf_puts(out, buf);
}

/* |v| split into integer digits (no leading zeros, "0" for zero) and fraction digits
 * (no trailing zeros, possibly empty), from v's shortest round-trip form. */
static void split_decimal(double v, char ip[ND], char fp[ND]) {
    char e[64];
    v = fabs(v);
    int p = 1;
    for (; p <= 17; p++) {
        snprintf(e, sizeof e, "%.*e", p - 1, v);
        if (strtod(e, NULL) == v) break;
    }
    /* e = "d.ddde[+-]XX": digits D, value 0.D x 10^(exp+1) */
    char d[32];
    size_t nd = 0;
    const char *s = e;
    for (; *s && *s != 'e'; s++)
        if (*s >= '0' && *s <= '9') d[nd++] = *s;
    int exp = atoi(s + 1) + 1; /* digits before the point */
    size_t ni = 0, nf = 0;
    for (int k = 0; k < exp && ni < ND - 1; k++) ip[ni++] = k < (int)nd ? d[k] : '0';
    for (int k = exp; k < (int)nd; k++) {
        if (k < 0) continue;
        if (nf < ND - 1) fp[nf++] = d[k];
    }
    /* leading fraction zeros when exp < 0 */
    if (exp < 0) {
        char tmp[ND];
        size_t z = (size_t)-exp;
        size_t m = 0;
        for (size_t k = 0; k < z && m < ND - 1; k++) tmp[m++] = '0';
        for (size_t k = 0; k < nd && m < ND - 1; k++) tmp[m++] = d[k];
        memcpy(fp, tmp, m);
        nf = m;
    }
    ip[ni] = 0;
    fp[nf] = 0;
    while (nf > 0 && fp[nf - 1] == '0') fp[--nf] = 0;
    size_t lead = 0;
    while (ip[lead] == '0') lead++;
    memmove(ip, ip + lead, strlen(ip + lead) + 1);
    if (!ip[0]) strcpy(ip, "0");
}

static int cmp_digits(const char *a, const char *b) {
    size_t la = strlen(a), lb = strlen(b);
    if (la != lb) return la < lb ? -1 : 1;
    int c = strcmp(a, b);
    return c < 0 ? -1 : c > 0;
}

static void inc_digits(char s[ND]) {
    size_t n = strlen(s);
    for (size_t k = n; k-- > 0;) {
        if (s[k] < '9') {
            s[k]++;
            return;
        }
        s[k] = '0';
    }
    memmove(s + 1, s, n + 1);
    s[0] = '1';
}

/* s >= 1 */
static void dec_digits(char s[ND]) {
    size_t n = strlen(s);
    for (size_t k = n; k-- > 0;) {
        if (s[k] > '0') {
            s[k]--;
            break;
        }
        s[k] = '9';
    }
    if (s[0] == '0' && s[1]) memmove(s, s + 1, n);
}

static void put_digit_class(jbuf *o, char lo, char hi) {
    if (lo == hi) jbuf_putc(o, lo);
    else if (lo == '0' && hi == '9') jbuf_puts(o, "[0-9]");
    else jbuf_printf(o, "[%c-%c]", lo, hi);
}

/* Digit strings of length n (leading zeros allowed) between a and b inclusive. */
static void same_len(jbuf *o, const char *a, const char *b, size_t n) {
    if (n == 0) return;
    if (a[0] == b[0]) {
        jbuf_putc(o, a[0]);
        same_len(o, a + 1, b + 1, n - 1);
        return;
    }
    char nines[ND], zeros[ND];
    memset(nines, '9', n);
    memset(zeros, '0', n);
    bool a_low = strncmp(a + 1, zeros + 1, n - 1) == 0;
    bool b_high = strncmp(b + 1, nines + 1, n - 1) == 0;
    char lo = a_low ? a[0] : (char)(a[0] + 1), hi = b_high ? b[0] : (char)(b[0] - 1);
    jbuf_puts(o, "(?:");
    bool first = true;
    if (!a_low) {
        jbuf_putc(o, a[0]);
        same_len(o, a + 1, nines + 1, n - 1);
        first = false;
    }
    if (lo <= hi) {
        if (!first) jbuf_putc(o, '|');
        put_digit_class(o, lo, hi);
        if (n > 1) jbuf_printf(o, "[0-9]{%zu}", n - 1);
        first = false;
    }
    if (!b_high) {
        if (!first) jbuf_putc(o, '|');
        jbuf_putc(o, b[0]);
        same_len(o, zeros + 1, b + 1, n - 1);
    }
    jbuf_putc(o, ')');
}

/* Canonical decimals of the integers in [a, b] (b NULL: unbounded), a <= b. */
static void int_range(jbuf *o, const char *a, const char *b) {
    size_t la = strlen(a), lb = b ? strlen(b) : 0;
    char buf[ND];
    jbuf_puts(o, "(?:");
    if (b && la == lb) {
        same_len(o, a, b, la);
    } else {
        memset(buf, '9', la);
        buf[la] = 0;
        same_len(o, a, buf, la);
        if (!b) {
            jbuf_printf(o, "|[1-9][0-9]{%zu,}", la);
        } else {
            for (size_t l = la + 1; l < lb; l++) jbuf_printf(o, "|[1-9][0-9]{%zu}", l - 1);
            memset(buf, '0', lb);
            buf[0] = '1';
            buf[lb] = 0;
            jbuf_putc(o, '|');
            same_len(o, buf, b, lb);
        }
    }
    jbuf_putc(o, ')');
}

static bool all_zero(const char *s) {
    for (; *s; s++)
        if (*s != '0') return false;
    return true;
}

static void truncate_to(jbuf *o, size_t len) {
    o->len = len;
    if (o->s) o->s[len] = 0;
}

/* Fraction digit strings t (empty allowed unless `nonempty`) whose value 0.t is above
 * lo (NULL: no bound; strictly when lo_x) and below hi (NULL: below 1; strictly when
 * hi_x). Returns false, writing nothing, when there is none. */
static bool frac(jbuf *o, const char *lo, bool lo_x, const char *hi, bool hi_x,
                 bool nonempty) {
    if (lo && all_zero(lo) && !lo_x) lo = NULL;
    if (hi && all_zero(hi)) {
        /* t's value must be 0 (or below it) */
        if (hi_x || lo) return false;
        jbuf_puts(o, nonempty ? "0+" : "0*");
        return true;
    }
    if (!lo && !hi) {
        jbuf_puts(o, nonempty ? "[0-9]+" : "[0-9]*");
        return true;
    }
    if (lo && !hi && all_zero(lo)) { /* above zero */
        jbuf_puts(o, "0*[1-9][0-9]*");
        return true;
    }
    /* value 0 (t empty) is above a NULL lo and below any nonzero hi */
    bool empty_ok = !nonempty && !lo;
    char l0 = lo && lo[0] ? lo[0] : '0';
    char h0 = hi ? hi[0] : '9';
    const char *lr = lo ? (lo[0] ? lo + 1 : lo) : NULL;
    const char *hr = hi ? hi + 1 : NULL;
    size_t mark = o->len;
    jbuf_puts(o, "(?:");
    bool any = false;
    size_t m = o->len;
    if (l0 == h0) {
        jbuf_putc(o, l0);
        if (frac(o, lr, lo_x, hr, hi_x, false)) any = true;
        else truncate_to(o, m);
    } else {
        jbuf_putc(o, l0);
        if (!lo) jbuf_puts(o, "[0-9]*");
        if (!lo || frac(o, lr, lo_x, NULL, false, false)) any = true;
        else truncate_to(o, m);
        if (l0 + 1 <= h0 - 1) {
            if (any) jbuf_putc(o, '|');
            put_digit_class(o, (char)(l0 + 1), (char)(h0 - 1));
            jbuf_puts(o, "[0-9]*");
            any = true;
        }
        m = o->len;
        if (any) jbuf_putc(o, '|');
        jbuf_putc(o, h0);
        if (!hi) jbuf_puts(o, "[0-9]*");
        if (!hi || frac(o, NULL, false, hr, hi_x, false)) any = true;
        else truncate_to(o, m);
    }
    if (!any) {
        truncate_to(o, mark);
        return empty_ok;
    }
    jbuf_putc(o, ')');
    if (empty_ok) jbuf_putc(o, '?');
    return true;
}

/* Integer digits I followed by the fraction options that keep I.t between lo and hi
 * (fraction digit bounds as in frac). False, writing nothing, when there is none. */
static bool int_frac(jbuf *o, const char *ip, const char *lo, bool lo_x, const char *hi,
                     bool hi_x) {
    bool zero_ok = (!lo || (all_zero(lo) && !lo_x)) && (!hi || !all_zero(hi) || !hi_x);
    size_t mark = o->len;
    jbuf_puts(o, ip);
    size_t m = o->len;
    jbuf_puts(o, "(?:\\.");
    bool has = frac(o, lo, lo_x, hi, hi_x, true);
    jbuf_putc(o, ')');
    if (!has) {
        truncate_to(o, zero_ok ? m : mark);
        return zero_ok;
    }
    if (zero_ok) jbuf_putc(o, '?');
    return true;
}

/* Decimals x >= 0 (no exponent) with a <= x (a_x: <) and x <= b (b_x: <; bi NULL:
 * unbounded); integer and fraction digits as split_decimal gives. False when none. */
static bool dec_range(jbuf *o, const char *ai, const char *af, bool a_x, const char *bi,
                      const char *bf, bool b_x) {
    if (bi) {
        int c = cmp_digits(ai, bi);
        if (c == 0) c = strcmp(af, bf) < 0 ? -1 : strcmp(af, bf) > 0;
        if (c > 0 || (c == 0 && (a_x || b_x))) return false;
    }
    size_t mark = o->len;
    jbuf_puts(o, "(?:");
    bool any = false;
    if (bi && strcmp(ai, bi) == 0) {
        any = int_frac(o, ai, af, a_x, bf, b_x);
    } else {
        any = int_frac(o, ai, af, a_x, NULL, false);
        char mid_lo[ND], mid_hi[ND];
        snprintf(mid_lo, sizeof mid_lo, "%s", ai);
        inc_digits(mid_lo);
        bool mid = true;
        if (bi) {
            snprintf(mid_hi, sizeof mid_hi, "%s", bi);
            if (strcmp(bi, "0") == 0) mid = false;
            else dec_digits(mid_hi);
            if (mid && cmp_digits(mid_lo, mid_hi) > 0) mid = false;
        }
        if (mid) {
            if (any) jbuf_putc(o, '|');
            int_range(o, mid_lo, bi ? mid_hi : NULL);
            jbuf_puts(o, "(?:\\.[0-9]+)?");
            any = true;
        }
        if (bi) {
            size_t m = o->len;
            if (any) jbuf_putc(o, '|');
            if (int_frac(o, bi, NULL, false, bf, b_x)) any = true;
            else truncate_to(o, m);
        }
    }
    if (!any) {
        truncate_to(o, mark);
        return false;
    }
    jbuf_putc(o, ')');
    return true;
}

static og_status *unsatisfiable(const json_bounds *b, const char *where) {
    char lo[64] = "", hi[64] = "";
    if (b->has_min) snprintf(lo, sizeof lo, "%.17g", b->min);
    if (b->has_max) snprintf(hi, sizeof hi, "%.17g", b->max);
    return og_errorf(OG_ERR_INVALID_ARGUMENT,
                     "JSON schema at %s: unsatisfiable schema: no value between %s%s and %s%s",
                     where, b->min_excl ? "exclusive " : "", lo, b->max_excl ? "exclusive " : "",
                     hi);
}

og_status *json_re_integer(jbuf *out, const json_bounds *b, const char *where) {
    if (!b->has_min && !b->has_max) {
        jbuf_puts(out, INT_RE);
        return out->oom ? og_oom() : NULL;
    }
    double lo = -INFINITY, hi = INFINITY;
    if (b->has_min) lo = b->min_excl ? floor(b->min) + 1 : ceil(b->min);
    if (b->has_max) hi = b->max_excl ? ceil(b->max) - 1 : floor(b->max);
    if (lo > hi) return unsatisfiable(b, where);
    char a[ND], bb[ND];
    jbuf_puts(out, "(?:");
    bool any = false;
    if (hi >= 0) { /* x >= 0 */
        snprintf(a, sizeof a, "%.0f", lo > 0 ? lo : 0.0);
        if (hi < INFINITY) snprintf(bb, sizeof bb, "%.0f", hi);
        int_range(out, a, hi < INFINITY ? bb : NULL);
        any = true;
    }
    if (lo < 0) { /* x = -y, y >= 1 */
        if (any) jbuf_putc(out, '|');
        snprintf(a, sizeof a, "%.0f", hi < 0 ? -hi : 1.0);
        if (lo > -INFINITY) snprintf(bb, sizeof bb, "%.0f", -lo);
        jbuf_putc(out, '-');
        int_range(out, a, lo > -INFINITY ? bb : NULL);
        if (lo > -INFINITY && hi < INFINITY && hi >= 0) jbuf_puts(out, "|-0");
    }
    jbuf_putc(out, ')');
    return out->oom ? og_oom() : NULL;
}

og_status *json_re_number(jbuf *out, const json_bounds *b, const char *where) {
    if (!b->has_min && !b->has_max) {
        jbuf_puts(out, NUM_RE);
        return out->oom ? og_oom() : NULL;
    }
    if (b->has_min && b->has_max &&
        (b->min > b->max || (b->min == b->max && (b->min_excl || b->max_excl))))
        return unsatisfiable(b, where);
    char zi[] = "0", zf[] = "";
    jbuf_puts(out, "(?:");
    bool any = false;
    /* x >= 0 */
    if (!b->has_max || b->max >= 0) {
        const char *ai = zi, *af = zf;
        bool ax = false;
        char bi_[ND], bf_[ND], ai_[ND], af_[ND];
        if (b->has_min && b->min >= 0) {
            split_decimal(b->min, ai_, af_);
            ai = ai_;
            af = af_;
            ax = b->min_excl;
        }
        if (b->has_max) split_decimal(b->max, bi_, bf_);
        if (dec_range(out, ai, af, ax, b->has_max ? bi_ : NULL, b->has_max ? bf_ : NULL,
                      b->max_excl))
            any = true;
    }
    /* x = -y, y > 0 */
    if (!b->has_min || b->min < 0) {
        char ai_[ND] = "0", af_[ND] = "", bi_[ND], bf_[ND];
        bool ax = true;
        if (b->has_max && b->max < 0) {
            split_decimal(b->max, ai_, af_);
            ax = b->max_excl;
        }
        if (b->has_min) split_decimal(b->min, bi_, bf_);
        size_t m = out->len;
        if (any) jbuf_putc(out, '|');
        jbuf_putc(out, '-');
        if (dec_range(out, ai_, af_, ax, b->has_min ? bi_ : NULL, b->has_min ? bf_ : NULL,
                      b->min_excl))
            any = true;
        else
            truncate_to(out, m);
    }
    if (!any) return unsatisfiable(b, where);
    jbuf_putc(out, ')');
    return out->oom ? og_oom() : NULL;
}
