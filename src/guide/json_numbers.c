/* JSON numbers as regular expressions. Without bounds an integer is
 * -?(0|[1-9][0-9]*) and a number adds a fraction and an exponent. With bounds (as
 * llguidance) an integer is the canonical decimals of the integers in range ("-0" too
 * where the range is bounded on both sides around zero), and a number is decimals
 * without exponent, split at zero and at the bounds' integer parts, with llguidance's
 * digit-by-digit fraction comparisons (see frac_above). Bounds are handled as decimal
 * digit strings of their shortest forms, so any double (1e30, 0.1) is exact. */
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

/* The fraction comparisons below are llguidance's, digit by digit: a fraction "above x"
 * either follows x to its end (then anything, or for a strict bound anything ending in
 * a nonzero digit) or leaves it upwards at some digit; "below x" leaves it downwards at
 * some digit, or (inclusive) is exactly x. So a fraction equal in value but written with
 * more or fewer zeros than the bound is not always taken: with maximum 0.001, "0.0010"
 * and "0.00" are refused and "0.000" allowed. The language is the oracle's, not the
 * numeric interval's. */

/* Fraction digits above x (inclusive: x itself and its extensions too). */
static void frac_above(jbuf *o, const char *x, bool incl) {
    if (!x[0]) {
        jbuf_puts(o, incl ? "[0-9]*" : "[0-9]*[1-9]");
        return;
    }
    if (incl && !x[1]) {
        jbuf_printf(o, "[%c-9][0-9]*", x[0]);
        return;
    }
    jbuf_printf(o, "(?:%c", x[0]);
    frac_above(o, x + 1, incl);
    if (x[0] < '9') {
        jbuf_putc(o, '|');
        put_digit_class(o, (char)(x[0] + 1), '9');
        jbuf_puts(o, "[0-9]*");
    }
    jbuf_putc(o, ')');
}

/* Fraction digits below x (inclusive: x itself too, but not its extensions). x is empty
 * only when inclusive (the empty string), and never a single '0' when strict. */
static void frac_below(jbuf *o, const char *x, bool incl) {
    if (!x[0]) return;
    if (!incl && !x[1]) {
        put_digit_class(o, '0', (char)(x[0] - 1));
        jbuf_puts(o, "[0-9]*");
        return;
    }
    jbuf_printf(o, "(?:%c", x[0]);
    frac_below(o, x + 1, incl);
    if (x[0] > '0') {
        jbuf_putc(o, '|');
        put_digit_class(o, '0', (char)(x[0] - 1));
        jbuf_puts(o, "[0-9]*");
    }
    jbuf_putc(o, ')');
}

static void trim_zeros(char *dst, const char *src) {
    size_t n = strlen(src);
    while (n > 0 && src[n - 1] == '0') n--;
    memcpy(dst, src, n);
    dst[n] = 0;
}

/* Fraction digits between lo and hi, two different digit strings of one length. */
static void frac_between(jbuf *o, const char *lo, const char *hi, bool lo_incl, bool hi_incl) {
    while (lo[0] && lo[0] == hi[0]) {
        jbuf_putc(o, lo[0]);
        lo++;
        hi++;
    }
    char lr[ND], hr[ND];
    trim_zeros(lr, lo + 1);
    trim_zeros(hr, hi + 1);
    jbuf_printf(o, "(?:%c", lo[0]);
    frac_above(o, lr, lo_incl);
    if (lo[0] + 1 < hi[0]) {
        jbuf_putc(o, '|');
        put_digit_class(o, (char)(lo[0] + 1), (char)(hi[0] - 1));
        jbuf_puts(o, "[0-9]*");
    }
    if (hr[0] || hi_incl) {
        jbuf_printf(o, "|%c", hi[0]);
        frac_below(o, hr, hi_incl);
    }
    jbuf_putc(o, ')');
}

/* Numbers in the range [a, b] (either end strict, b NULL: unbounded), 0 <= a < b, as
 * integer digits ai/bi and fraction digits af/bf of the bounds' shortest forms. */
static void nonneg_range(jbuf *o, const char *ai, const char *af, bool a_incl, const char *bi,
                         const char *bf, bool b_incl) {
    char lo_int[ND], top[ND];
    if (!bi) {
        /* up to the next power of ten, then every longer integer part */
        size_t d = strlen(ai);
        top[0] = '1';
        memset(top + 1, '0', d);
        top[d + 1] = 0;
        jbuf_puts(o, "(?:");
        nonneg_range(o, ai, af, a_incl, top, "", false);
        jbuf_printf(o, "|[1-9][0-9]{%zu,}(?:\\.[0-9]+)?)", d);
        return;
    }
    jbuf_puts(o, "(?:");
    if (!strcmp(ai, bi)) {
        char lf[ND], rf[ND];
        size_t n = strlen(af) > strlen(bf) ? strlen(af) : strlen(bf);
        snprintf(lf, sizeof lf, "%-*s", (int)n, af);
        snprintf(rf, sizeof rf, "%-*s", (int)n, bf);
        for (size_t k = 0; k < n; k++) {
            if (lf[k] == ' ') lf[k] = '0';
            if (rf[k] == ' ') rf[k] = '0';
        }
        jbuf_printf(o, "%s(?:\\.", ai);
        frac_between(o, lf, rf, a_incl, b_incl);
        jbuf_puts(o, all_zero(lf) ? ")?)" : "))");
        return;
    }
    bool any = false;
    snprintf(lo_int, sizeof lo_int, "%s", ai);
    if (af[0] || !a_incl) {
        jbuf_printf(o, "%s\\.", ai);
        frac_above(o, af, a_incl);
        inc_digits(lo_int);
        any = true;
    }
    if (cmp_digits(bi, lo_int) > 0) {
        char hi_int[ND];
        snprintf(hi_int, sizeof hi_int, "%s", bi);
        dec_digits(hi_int);
        if (any) jbuf_putc(o, '|');
        int_range(o, lo_int, hi_int);
        jbuf_puts(o, "(?:\\.[0-9]+)?");
        any = true;
    }
    if (bf[0]) {
        if (any) jbuf_putc(o, '|');
        jbuf_printf(o, "%s(?:\\.", bi);
        frac_below(o, bf, b_incl);
        jbuf_puts(o, ")?");
    } else if (b_incl) {
        if (any) jbuf_putc(o, '|');
        jbuf_printf(o, "%s(?:\\.0+)?", bi);
    }
    jbuf_putc(o, ')');
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
    bool lo_incl = !b->min_excl, hi_incl = !b->max_excl;
    if (b->has_min && b->has_max &&
        (b->min > b->max || (b->min == b->max && !(lo_incl && hi_incl))))
        return unsatisfiable(b, where);
    char li[ND], lf[ND], hi_[ND], hf[ND];
    if (b->has_min) split_decimal(b->min, li, lf);
    if (b->has_max) split_decimal(b->max, hi_, hf);
    if (b->has_min && b->has_max && b->min == b->max) {
        /* the one value, as its shortest decimal */
        jbuf_printf(out, "(?:%s%s%s%s)", b->min < 0 ? "-" : "", li, lf[0] ? "\\." : "", lf);
        return out->oom ? og_oom() : NULL;
    }
    bool lo_neg = b->has_min && b->min < 0, hi_neg = b->has_max && b->max < 0;
    jbuf_puts(out, "(?:");
    if (hi_neg) {
        /* all negative: the magnitudes between -max and -min */
        jbuf_putc(out, '-');
        nonneg_range(out, hi_, hf, hi_incl, b->has_min ? li : NULL, lf, lo_incl);
    } else {
        bool neg_part = !b->has_min || lo_neg;
        if (neg_part) { /* negatives: magnitudes above 0 (strictly) up to -min */
            jbuf_putc(out, '-');
            nonneg_range(out, "0", "", false, lo_neg ? li : NULL, lf, lo_incl);
        }
        if (!b->has_max || b->max > 0 || hi_incl) {
            if (neg_part) jbuf_putc(out, '|');
            const char *ai = lo_neg || !b->has_min ? "0" : li;
            const char *af = lo_neg || !b->has_min ? "" : lf;
            bool a_incl = lo_neg || !b->has_min ? true : lo_incl;
            if (b->has_max && b->max == 0) jbuf_puts(out, "0");
            else nonneg_range(out, ai, af, a_incl, b->has_max ? hi_ : NULL, hf, hi_incl);
        }
    }
    jbuf_putc(out, ')');
    return out->oom ? og_oom() : NULL;
}
