/* Cast between numbers and strings, as onnx's reference does it (numpy's astype):
 *
 * To string:
 *  - integers in decimal; bool as "True" / "False";
 *  - floats as numpy's str of a scalar of that type: the shortest digits that read back
 *    to the same value in that type, positional ("0.0001", "1234.5", "3.0") when
 *    1e-4 <= |x| < 10^p, else scientific ("1e-05", "1.2345679e+08", at least two exponent
 *    digits), with p = 16 for float64, 6 for float32, 3 for float16, and 2 for bfloat16
 *    (which numpy cannot cast to str; we follow the same pattern, 10^precision); "nan",
 *    "inf", "-inf"; "-0.0".
 * From string:
 *  - floats as Python's float(): ASCII whitespace around, a sign, decimal digits with an
 *    optional point and exponent (single underscores between digits allowed), or
 *    "inf"/"infinity"/"nan" in any case; read as double, then rounded to the type;
 *  - integers as Python's int(): whitespace, a sign, decimal digits (underscores as
 *    above); a value outside the type's range is an error, as it is for numpy;
 *  - bool: true for any non-empty string (numpy's rule: "False" is true).
 * Anything else (hex, "100.5" to an integer, an empty string to a number) is an error
 * naming the element: ONNX leaves it undefined and the reference raises.
 *
 * New strings are written into memory held for the run (kernel_hold); their views go
 * in the output. */
#include "backends/native/kernels/cast/cast.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- numbers to text ------------------------------------------------------------- */

/* Whether the decimal text reads back as v (a value of float type dt). */
static bool reads_back(const char *text, double v, og_dtype dt) {
    if (dt == OG_FLOAT64) return strtod(text, NULL) == v;
    if (dt == OG_FLOAT32) return strtof(text, NULL) == (float)v;
    uint64_t a = 0, b = 0; /* float16/bfloat16: compare the stored bits */
    cpu_math_store_f64(dt, &a, 0, strtod(text, NULL));
    cpu_math_store_f64(dt, &b, 0, v);
    return a == b;
}

/* Shortest decimal digits of |v| (finite, non-zero) that read back in dt: digits into
 * d (NUL-terminated, no trailing zeros) and the exponent of the first digit. For each
 * length the correctly rounded digits are tried, then their neighbours (an asymmetric
 * rounding interval at a power of two can hold a neighbour but not them). */
static void shortest(double v, og_dtype dt, char *d, int *exp10) {
    char buf[40];
    for (int p = 1; p <= 17; p++) {
        snprintf(buf, sizeof buf, "%.*e", p - 1, v);
        char *e = strchr(buf, 'e');
        int ex = atoi(e + 1);
        uint64_t m = 0;
        for (const char *c = buf; c < e; c++)
            if (*c >= '0' && *c <= '9') m = m * 10 + (uint64_t)(*c - '0');
        uint64_t cand[3] = {m, m + 1, m - 1};
        for (int k = 0; k < 3; k++) {
            uint64_t mm = cand[k];
            int ee = ex;
            char digits[24];
            snprintf(digits, sizeof digits, "%llu", (unsigned long long)mm);
            int nd = (int)strlen(digits);
            if (mm == 0 || nd < p - 1) continue; /* 1000 - 1 loses a digit: another length */
            ee += nd - p;                        /* 999 + 1 gains one */
            char text[48];
            snprintf(text, sizeof text, "%c.%se%d", digits[0], digits + 1, ee);
            if (!reads_back(text, v, dt)) continue;
            while (nd > 1 && digits[nd - 1] == '0') digits[--nd] = 0;
            memcpy(d, digits, (size_t)nd + 1);
            *exp10 = ee;
            return;
        }
    }
    snprintf(d, 24, "0"); /* not reached for finite v */
    *exp10 = 0;
}

/* numpy's str of a float of type dt, into out (>= 48 bytes); returns the length. */
static int format_float(double v, og_dtype dt, char *out) {
    if (isnan(v)) return snprintf(out, 48, "nan");
    if (isinf(v)) return snprintf(out, 48, v < 0 ? "-inf" : "inf");
    const char *sign = signbit(v) ? "-" : "";
    double a = fabs(v);
    if (a == 0) return snprintf(out, 48, "%s0.0", sign);
    double upper = dt == OG_FLOAT64 ? 1e16 : dt == OG_FLOAT32 ? 1e6 : dt == OG_FLOAT16 ? 1e3 : 1e2;
    char d[24];
    int e;
    shortest(a, dt, d, &e);
    int nd = (int)strlen(d);
    if (!(a >= 1e-4 && a < upper)) {
        int n = nd > 1 ? snprintf(out, 48, "%s%c.%se", sign, d[0], d + 1)
                       : snprintf(out, 48, "%s%ce", sign, d[0]);
        return n + snprintf(out + n, (size_t)(48 - n), "%c%02d", e < 0 ? '-' : '+', abs(e));
    }
    int n = snprintf(out, 48, "%s", sign);
    if (e < 0) {
        n += snprintf(out + n, (size_t)(48 - n), "0.");
        for (int i = -1; i > e; i--) out[n++] = '0';
        n += snprintf(out + n, (size_t)(48 - n), "%s", d);
        return n;
    }
    for (int i = 0; i <= e; i++) out[n++] = i < nd ? d[i] : '0';
    out[n++] = '.';
    if (nd > e + 1) n += snprintf(out + n, (size_t)(48 - n), "%s", d + e + 1);
    else out[n++] = '0', out[n] = 0;
    return n;
}

/* Element i of x as text into out (>= 48 bytes); returns the length. */
static int format_elem(const tensor *x, int64_t i, char *out) {
    og_dtype dt = x->dtype;
    switch (dt) {
    case OG_BOOL: return snprintf(out, 48, ((const uint8_t *)x->data)[i] ? "True" : "False");
    case OG_UINT64:
        return snprintf(out, 48, "%llu", (unsigned long long)((const uint64_t *)x->data)[i]);
    case OG_FLOAT32: case OG_FLOAT64: case OG_FLOAT16: case OG_BFLOAT16:
        return format_float(cpu_math_load_f64(dt, x->data, i), dt, out);
    default: return snprintf(out, 48, "%lld", (long long)tensor_get_i64(x, i));
    }
}

static bool to_text_ok(og_dtype dt) {
    return mk_is_float(dt) || dt == OG_BOOL || dt == OG_INT8 || dt == OG_INT16 ||
           dt == OG_INT32 || dt == OG_INT64 || dt == OG_UINT8 || dt == OG_UINT16 ||
           dt == OG_UINT32 || dt == OG_UINT64;
}

static og_status *numbers_to_strings(kernel_ctx *ctx, const tensor *x) {
    if (!to_text_ok(x->dtype))
        return kernel_errorf(ctx, OG_ERR_UNSUPPORTED, "casting %s to string is not implemented",
                             og_dtype_name(x->dtype));
    tensor *y;
    OG_TRY(kernel_output(ctx, 0, OG_STRING, x->rank, x->dims, &y));
    int64_t n = tensor_count(x);
    if (n == 0) return NULL;
    char *bytes; /* at most 47 characters an element */
    OG_TRY(kernel_hold(ctx, (size_t)n * 48, (void **)&bytes));
    og_string *v = y->data;
    for (int64_t i = 0; i < n; i++) {
        char *p = bytes + (size_t)i * 48;
        v[i] = (og_string){p, (size_t)format_elem(x, i, p)};
    }
    return NULL;
}

/* ---- text to numbers ------------------------------------------------------------- */

static bool is_space(char c) { return c == ' ' || (c >= '\t' && c <= '\r'); }

/* s without the ASCII whitespace around it and without single underscores between
 * digits (Python's number syntax), NUL-terminated into t[cap]; false when empty, too
 * long, or an underscore stands elsewhere. */
static bool clean_number(og_string s, char *t, size_t cap) {
    size_t a = 0, b = s.size, n = 0;
    while (a < b && is_space(s.data[a])) a++;
    while (b > a && is_space(s.data[b - 1])) b--;
    if (a == b) return false;
    for (size_t i = a; i < b; i++) {
        if (s.data[i] == '_') {
            bool between = i > a && i + 1 < b && s.data[i - 1] >= '0' && s.data[i - 1] <= '9' &&
                           s.data[i + 1] >= '0' && s.data[i + 1] <= '9';
            if (!between) return false;
            continue;
        }
        if (n + 1 >= cap) return false;
        t[n++] = s.data[i];
    }
    t[n] = 0;
    return true;
}

static bool ieq(const char *a, const char *b) {
    for (; *a && *b; a++, b++)
        if ((*a | 0x20) != *b) return false;
    return *a == *b;
}

/* Python's float() on a string: *out, or false. */
static bool parse_float(og_string s, double *out) {
    char t[400];
    if (!clean_number(s, t, sizeof t)) return false;
    const char *body = t + (t[0] == '+' || t[0] == '-');
    double sign = t[0] == '-' ? -1 : 1;
    if (ieq(body, "inf") || ieq(body, "infinity")) return *out = sign * INFINITY, true;
    if (ieq(body, "nan")) return *out = NAN, true;
    /* digits [. digits] [e [sign] digits], with at least one mantissa digit */
    const char *c = body;
    int digits = 0;
    while (*c >= '0' && *c <= '9') c++, digits++;
    if (*c == '.') {
        c++;
        while (*c >= '0' && *c <= '9') c++, digits++;
    }
    if (!digits) return false;
    if (*c == 'e' || *c == 'E') {
        c++;
        if (*c == '+' || *c == '-') c++;
        if (!(*c >= '0' && *c <= '9')) return false;
        while (*c >= '0' && *c <= '9') c++;
    }
    if (*c) return false;
    *out = strtod(t, NULL);
    return true;
}

/* Python's int() on a string, within [-(umax+1), umax] for signed types, [0, umax] for
 * unsigned ones: false when malformed or out of range. */
static bool parse_int(og_string s, bool is_signed, uint64_t umax, int64_t *out) {
    char t[400];
    if (!clean_number(s, t, sizeof t)) return false;
    bool neg = t[0] == '-';
    const char *c = t + (t[0] == '+' || t[0] == '-');
    if (!*c) return false;
    uint64_t v = 0;
    for (; *c; c++) {
        if (*c < '0' || *c > '9') return false;
        uint64_t d = (uint64_t)(*c - '0');
        if (v > (UINT64_MAX - d) / 10) return false;
        v = v * 10 + d;
    }
    if (neg) {
        if (!is_signed ? v != 0 : v > umax + 1) return false;
        *out = (int64_t)(0 - v);
    } else {
        if (v > umax) return false;
        *out = (int64_t)v;
    }
    return true;
}

static og_status *strings_to_numbers(kernel_ctx *ctx, const tensor *x, og_dtype to) {
    bool is_int = to == OG_INT8 || to == OG_INT16 || to == OG_INT32 || to == OG_INT64 ||
                  to == OG_UINT8 || to == OG_UINT16 || to == OG_UINT32 || to == OG_UINT64;
    if (!is_int && !mk_is_float(to) && to != OG_BOOL)
        return kernel_errorf(ctx, OG_ERR_UNSUPPORTED, "casting string to %s is not implemented",
                             og_dtype_name(to));
    tensor *y;
    OG_TRY(kernel_output(ctx, 0, to, x->rank, x->dims, &y));
    int64_t n = tensor_count(x);
    const og_string *v = x->data;
    bool is_signed = to == OG_INT8 || to == OG_INT16 || to == OG_INT32 || to == OG_INT64;
    int bits = og_dtype_bits(to);
    uint64_t umax = bits == 64 ? (is_signed ? (uint64_t)INT64_MAX : UINT64_MAX)
                               : ((uint64_t)1 << (bits - is_signed)) - 1;
    for (int64_t i = 0; i < n; i++) {
        if (to == OG_BOOL) {
            ((uint8_t *)y->data)[i] = v[i].size != 0;
            continue;
        }
        double d = 0;
        int64_t k = 0;
        bool ok = is_int ? parse_int(v[i], is_signed, umax, &k) : parse_float(v[i], &d);
        if (!ok)
            return kernel_errorf(ctx, OG_ERR_INVALID_ARGUMENT, "input 0 element %lld, \"%.*s\", "
                                 "is not %s %s", (long long)i,
                                 (int)(v[i].size > 60 ? 60 : v[i].size),
                                 v[i].data ? v[i].data : "", is_int ? "an integer in the range of"
                                                                    : "a number for",
                                 og_dtype_name(to));
        if (is_int) {
            switch (dtype_size(to)) {
            case 1: ((uint8_t *)y->data)[i] = (uint8_t)k; break;
            case 2: ((uint16_t *)y->data)[i] = (uint16_t)k; break;
            case 4: ((uint32_t *)y->data)[i] = (uint32_t)k; break;
            default: ((uint64_t *)y->data)[i] = (uint64_t)k; break;
            }
        } else {
            cpu_math_store_f64(to, y->data, i, d);
        }
    }
    return NULL;
}

og_status *cpu_cast_string(kernel_ctx *ctx, const tensor *x, og_dtype to) {
    if (x->dtype == OG_STRING && to == OG_STRING) {
        tensor *y;
        OG_TRY(kernel_output(ctx, 0, OG_STRING, x->rank, x->dims, &y));
        if (y->nbytes) memcpy(y->data, x->data, y->nbytes);
        return NULL;
    }
    return x->dtype == OG_STRING ? strings_to_numbers(ctx, x, to) : numbers_to_strings(ctx, x);
}
