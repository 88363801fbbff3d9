/* JSON strings as regular expressions over their encoded bytes. A string schema's
 * constraints (a literal value, a pattern, a format) speak of the decoded text; the
 * lexeme matches its JSON encoding. The characters JSON must escape ('"', '\\', the
 * controls U+0000-U+001F and U+007F) are all single ASCII bytes that never occur inside
 * a multi-byte UTF-8 sequence, so rewriting each of them (as a literal, or as a member
 * of a class) into the alternatives of its escapes turns a regex over the text into one
 * over the encoding, and leaves every other character as it is. */
#include "guide/json_internal.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- text buffer ---- */

void jbuf_put(jbuf *b, const char *s, size_t n) {
    if (b->oom) return;
    if (b->len + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 64;
        while (cap < b->len + n + 1) cap *= 2;
        char *p = realloc(b->s, cap);
        if (!p) {
            b->oom = true;
            return;
        }
        b->s = p;
        b->cap = cap;
    }
    memcpy(b->s + b->len, s, n);
    b->len += n;
    b->s[b->len] = 0;
}

void jbuf_puts(jbuf *b, const char *s) { jbuf_put(b, s, strlen(s)); }
void jbuf_putc(jbuf *b, char c) { jbuf_put(b, &c, 1); }

void jbuf_printf(jbuf *b, const char *fmt, ...) {
    char tmp[256];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    if (n < 0) return;
    if ((size_t)n < sizeof tmp) {
        jbuf_put(b, tmp, (size_t)n);
        return;
    }
    char *big = malloc((size_t)n + 1);
    if (!big) {
        b->oom = true;
        return;
    }
    va_start(ap, fmt);
    vsnprintf(big, (size_t)n + 1, fmt, ap);
    va_end(ap);
    jbuf_put(b, big, (size_t)n);
    free(big);
}

void jbuf_free(jbuf *b) {
    free(b->s);
    *b = (jbuf){0};
}

/* ---- characters and their escapes ---- */

#define NON_SPECIAL_ITEMS "\"\\\\\\x00-\\x1F\\x7F"

const char JSON_CHAR_RE[] = "(?:[^" NON_SPECIAL_ITEMS "]|\\\\[\"\\\\bfnrt]"
                            "|\\\\u00[01][0-9a-fA-F]|\\\\u007[fF])";

#define HEX_ "[0-9a-fA-F]"
const char JSON_KEY_CHAR_RE[] =
    "(?:[^" NON_SPECIAL_ITEMS "]|\\\\[\"\\\\bfnrt]"
    "|\\\\u(?:[0-9a-cA-Ce-fE-F]" HEX_ "{3}|[dD][0-7]" HEX_ "{2})"
    "|\\\\u[dD][89abAB]" HEX_ "{2}\\\\u[dD][c-fC-F]" HEX_ "{2})";

static bool is_special(uint32_t c) { return c < 0x20 || c == 0x7f || c == '"' || c == '\\'; }

static void put_hex_digit(jbuf *o, unsigned d) {
    if (d < 10) jbuf_putc(o, (char)('0' + d));
    else jbuf_printf(o, "[%c%c]", 'a' + (int)(d - 10), 'A' + (int)(d - 10));
}

/* The escapes of special character c, as one group. */
static void put_escapes(jbuf *o, uint32_t c) {
    jbuf_puts(o, "(?:");
    if (c == '"') {
        jbuf_puts(o, "\\\\\"");
    } else if (c == '\\') {
        jbuf_puts(o, "\\\\\\\\");
    } else {
        static const char shorts[][2] = {{'\b', 'b'}, {'\f', 'f'}, {'\n', 'n'},
                                         {'\r', 'r'}, {'\t', 't'}};
        for (size_t i = 0; i < sizeof shorts / sizeof shorts[0]; i++)
            if ((uint32_t)(unsigned char)shorts[i][0] == c)
                jbuf_printf(o, "\\\\%c|", shorts[i][1]);
        jbuf_puts(o, "\\\\u00");
        put_hex_digit(o, c >> 4);
        put_hex_digit(o, c & 15);
    }
    jbuf_putc(o, ')');
}

/* "|" and the escapes of every special character in `has`, grouped (one class of short
 * escapes, one \u00 form per high digit) so that a class with many of them stays small. */
static void put_escape_set(jbuf *o, const bool has[128]) {
    static const char shorts[][2] = {{'"', '"'},  {'\\', '\\'}, {'\b', 'b'}, {'\f', 'f'},
                                     {'\n', 'n'}, {'\r', 'r'},   {'\t', 't'}};
    char letters[16];
    size_t nl = 0;
    for (size_t i = 0; i < sizeof shorts / sizeof shorts[0]; i++)
        if (has[(unsigned char)shorts[i][0]]) {
            if (shorts[i][1] == '\\' || shorts[i][1] == '"') letters[nl++] = '\\';
            letters[nl++] = shorts[i][1];
        }
    if (nl) jbuf_printf(o, "|\\\\[%.*s]", (int)nl, letters);
    for (unsigned hi = 0; hi < 8; hi++) {
        char digits[40];
        size_t nd = 0;
        for (unsigned lo = 0; lo < 16; lo++) {
            unsigned c = hi * 16 + lo;
            if (c == '"' || c == '\\' || !is_special(c) || !has[c]) continue;
            if (lo < 10) {
                digits[nd++] = (char)('0' + lo);
            } else {
                digits[nd++] = (char)('a' + lo - 10);
                digits[nd++] = (char)('A' + lo - 10);
            }
        }
        if (nd) jbuf_printf(o, "|\\\\u00%u[%.*s]", hi, (int)nd, digits);
    }
}

void json_re_literal_body(jbuf *out, const uint8_t *s, size_t n) {
    size_t i = 0;
    while (i < n) {
        if (is_special(s[i])) {
            put_escapes(out, s[i++]);
            continue;
        }
        size_t j = i;
        while (j < n && !is_special(s[j])) j++;
        size_t need = glex_escape(s + i, j - i, NULL, 0);
        char *tmp = malloc(need + 1);
        if (!tmp) {
            out->oom = true;
            return;
        }
        glex_escape(s + i, j - i, tmp, need + 1);
        jbuf_put(out, tmp, need);
        free(tmp);
        i = j;
    }
}

/* ---- patterns ---- */

typedef struct pat {
    const char *p;
    size_t n, i;
    glex *scratch;
    const char *where;
    jbuf *o;
} pat;

static og_status *pat_error(const pat *t, size_t at, const char *why) {
    return og_errorf(OG_ERR_INVALID_ARGUMENT, "JSON schema at %s: pattern column %zu: %s",
                     t->where, at + 1, why);
}

/* Whether the regex `atom` (one class) matches the one-byte string c. */
static og_status *class_has(pat *t, const char *atom, size_t len, uint32_t c, bool *has) {
    int id;
    og_status *st = glex_add_regex(t->scratch, atom, len, "pattern class", &id);
    if (st) return og_status_wrap(st, "JSON schema at %s", t->where);
    uint64_t set[64] = {0};
    size_t words = glex_words(t->scratch);
    if (words > 64) return pat_error(t, t->i, "too many classes");
    set[id / 64] |= 1ull << (id % 64);
    uint32_t s = glex_start(t->scratch, set);
    if (s != GLEX_DEAD && s != GLEX_FAILED) s = glex_next(t->scratch, s, (uint8_t)c);
    if (s == GLEX_FAILED) return glex_error(t->scratch);
    const uint64_t *acc = s == GLEX_DEAD ? NULL : glex_accepts(t->scratch, s);
    *has = acc && (acc[id / 64] >> (id % 64) & 1);
    return NULL;
}

/* A class (`atom`: "[...]", "\s", "\p{L}", ...): unchanged when it holds no special
 * character; otherwise its other characters (`rest`: a negated class that excludes the
 * specials) or the escapes of each special it holds. `quotes`: the escapes \" and \\
 * whatever the class says, as llguidance allows them in every negated bracket class
 * ([^"] matches \"; the controls it excludes stay excluded). */
static og_status *emit_class(pat *t, const char *atom, size_t len, const char *rest_items,
                             bool quotes) {
    bool any = false, has[128] = {false};
    for (uint32_t c = 0; c < 128; c++) {
        if (!is_special(c)) continue;
        if (quotes && (c == '"' || c == '\\')) has[c] = true;
        else OG_TRY(class_has(t, atom, len, c, &has[c]));
        any |= has[c];
    }
    if (!any) {
        jbuf_put(t->o, atom, len);
        return NULL;
    }
    jbuf_printf(t->o, "(?:[^%s" NON_SPECIAL_ITEMS "]", rest_items);
    put_escape_set(t->o, has);
    jbuf_putc(t->o, ')');
    return NULL;
}

#define ASCII_DIGIT "0-9"
#define ASCII_WORD "0-9A-Za-z_"

static int hexval(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

/* After "\x", "\u" or "\U" at t->i: the code point of "{H..}" or of `fixed` digits. */
static og_status *pat_hex(pat *t, size_t fixed, uint32_t *cp) {
    uint32_t v = 0;
    size_t start = t->i;
    if (t->i < t->n && t->p[t->i] == '{') {
        t->i++;
        size_t digits = 0;
        while (t->i < t->n && t->p[t->i] != '}') {
            int h = hexval(t->p[t->i]);
            if (h < 0 || ++digits > 8) return pat_error(t, t->i, "invalid hex escape");
            v = v * 16 + (uint32_t)h;
            t->i++;
        }
        if (t->i >= t->n || digits == 0) return pat_error(t, start, "invalid hex escape");
        t->i++;
    } else {
        for (size_t k = 0; k < fixed; k++, t->i++) {
            int h = t->i < t->n ? hexval(t->p[t->i]) : -1;
            if (h < 0) return pat_error(t, start, "invalid hex escape");
            v = v * 16 + (uint32_t)h;
        }
    }
    *cp = v;
    return NULL;
}

/* An escape at t->i (the backslash). */
static og_status *pat_escape(pat *t) {
    size_t at = t->i;
    if (at + 1 >= t->n) return pat_error(t, at, "incomplete escape");
    char e = t->p[at + 1];
    t->i = at + 2;
    uint32_t cp;
    switch (e) {
    /* \d and \w are ASCII in JSON Schema's patterns (llguidance too); \s is Unicode */
    case 'd': jbuf_puts(t->o, "[" ASCII_DIGIT "]"); return NULL;
    case 'w': jbuf_puts(t->o, "[" ASCII_WORD "]"); return NULL;
    case 's': return emit_class(t, "\\s", 2, "\\S", false);
    case 'S': return emit_class(t, "\\S", 2, "\\s", false);
    case 'D': return emit_class(t, "[^" ASCII_DIGIT "]", 2 + sizeof ASCII_DIGIT, ASCII_DIGIT, false);
    case 'W': return emit_class(t, "[^" ASCII_WORD "]", 2 + sizeof ASCII_WORD, ASCII_WORD, false);
    case 'p':
    case 'P': {
        if (t->i < t->n && t->p[t->i] == '{') {
            while (t->i < t->n && t->p[t->i] != '}') t->i++;
            if (t->i >= t->n) return pat_error(t, at, "unclosed \\p{");
            t->i++;
        } else if (t->i < t->n) {
            t->i++;
        } else {
            return pat_error(t, at, "incomplete \\p");
        }
        size_t len = t->i - at;
        char rest[128];
        if (len + 1 > sizeof rest) return pat_error(t, at, "Unicode class name too long");
        memcpy(rest, t->p + at, len);
        rest[len] = 0;
        rest[1] = e == 'p' ? 'P' : 'p';
        return emit_class(t, t->p + at, len, rest, false);
    }
    case 'x': OG_TRY(pat_hex(t, 2, &cp)); break;
    case 'u': OG_TRY(pat_hex(t, 4, &cp)); break;
    case 'U': OG_TRY(pat_hex(t, 8, &cp)); break;
    case 'n': cp = '\n'; break;
    case 't': cp = '\t'; break;
    case 'r': cp = '\r'; break;
    case 'f': cp = '\f'; break;
    case 'v': cp = '\v'; break;
    case 'a': cp = 7; break;
    case '\\': cp = '\\'; break;
    case '"': cp = '"'; break;
    default:
        /* Escaped metacharacters and assertions: the lexer's business. */
        jbuf_put(t->o, t->p + at, 2);
        return NULL;
    }
    if (is_special(cp)) put_escapes(t->o, cp);
    else jbuf_put(t->o, t->p + at, t->i - at);
    return NULL;
}

/* A bracket class at t->i ('['): its extent, then emit_class. */
static og_status *pat_bracket(pat *t) {
    size_t at = t->i;
    size_t j = at + 1;
    bool negated = j < t->n && t->p[j] == '^';
    if (negated) j++;
    if (j < t->n && t->p[j] == ']') j++; /* a leading ']' is a literal */
    int depth = 1;
    while (j < t->n && depth > 0) {
        char c = t->p[j];
        if (c == '\\') {
            j += 2;
            continue;
        }
        if (c == '[') {
            depth++;
            if (j + 1 < t->n && t->p[j + 1] == '^') j++;
            if (j + 1 < t->n && t->p[j + 1] == ']') j++;
        } else if (c == ']') {
            depth--;
        }
        j++;
    }
    if (depth > 0) return pat_error(t, at, "unclosed character class");
    t->i = j;
    /* the class with \d \w \D \W spelt as their ASCII sets */
    jbuf cls = {0};
    for (size_t k = at; k < j; k++) {
        char c = t->p[k], e = k + 1 < j ? t->p[k + 1] : 0;
        if (c == '\\' && (e == 'd' || e == 'w' || e == 'D' || e == 'W')) {
            const char *set = e == 'd' || e == 'D' ? ASCII_DIGIT : ASCII_WORD;
            if (e == 'd' || e == 'w') jbuf_puts(&cls, set);
            else jbuf_printf(&cls, "[^%s]", set);
            k++;
        } else if (c == '\\' && e) {
            jbuf_put(&cls, t->p + k, 2);
            k++;
        } else {
            jbuf_putc(&cls, c);
        }
    }
    size_t len = cls.len;
    /* The class's non-special part: a negated class needs only more exclusions; a
     * positive one is nested inside a negation. */
    jbuf rest = {0};
    if (!cls.oom) {
        if (negated) jbuf_put(&rest, cls.s + 2, len - 3);
        else jbuf_printf(&rest, "[^%.*s]", (int)(len - 2), cls.s + 1);
    }
    og_status *st = cls.oom || rest.oom ? og_oom()
                                        : emit_class(t, cls.s, len, rest.s ? rest.s : "", negated);
    jbuf_free(&rest);
    jbuf_free(&cls);
    return st;
}

/* '.': any character but a newline. */
static void put_dot(jbuf *o) {
    bool has[128] = {false};
    for (uint32_t c = 0; c < 128; c++) has[c] = is_special(c) && c != '\n';
    jbuf_puts(o, "(?:[^" NON_SPECIAL_ITEMS "]");
    put_escape_set(o, has);
    jbuf_putc(o, ')');
}

/* Whether position j ends a top-level alternative. */
static bool alt_ends(const pat *t, size_t j) { return j >= t->n || t->p[j] == '|'; }

og_status *json_re_pattern_body(jbuf *out, const char *pattern, size_t n, glex *scratch,
                                const char *where) {
    pat t = {.p = pattern, .n = n, .scratch = scratch, .where = where, .o = out};
    /* `(?s)` makes '.' match a newline too; it lasts to the end of its group. */
    bool dotall[256];
    int depth = 0;
    dotall[0] = false;
    bool alt_start = true;
    jbuf_puts(out, "(?:");
    while (t.i <= t.n) {
        if (alt_start) {
            if (t.i < t.n && t.p[t.i] == '^') t.i++;
            else jbuf_printf(out, "%s*", JSON_CHAR_RE);
            jbuf_puts(out, "(?:");
            alt_start = false;
        }
        char c = t.i < t.n ? t.p[t.i] : 0;
        if (depth == 0 && (t.i == t.n || c == '|' ||
                           (c == '$' && alt_ends(&t, t.i + 1)))) {
            bool anchored = c == '$';
            if (anchored) t.i++;
            jbuf_putc(out, ')');
            if (!anchored) jbuf_printf(out, "%s*", JSON_CHAR_RE);
            if (t.i >= t.n) break;
            jbuf_putc(out, '|');
            t.i++;
            alt_start = true;
            continue;
        }
        if (c == '\\') {
            OG_TRY(pat_escape(&t));
        } else if (c == '[') {
            OG_TRY(pat_bracket(&t));
        } else if (c == '.') {
            if (dotall[depth]) {
                jbuf_puts(out, JSON_CHAR_RE);
            } else {
                put_dot(out);
            }
            t.i++;
        } else if (c == '(') {
            if (depth + 1 >= (int)(sizeof dotall / sizeof dotall[0]))
                return pat_error(&t, t.i, "groups nested too deeply");
            bool s_flag = dotall[depth];
            size_t j = t.i + 1;
            if (j < t.n && t.p[j] == '?') {
                /* Flags "(?is-m)" or "(?is-m:...)": note what they do to 's'. */
                bool on = true;
                size_t k = j + 1;
                while (k < t.n && strchr("imsxuU-", t.p[k])) {
                    if (t.p[k] == '-') on = false;
                    else if (t.p[k] == 's') s_flag = on;
                    k++;
                }
                if (k < t.n && t.p[k] == ')' && k > j + 1) {
                    dotall[depth] = s_flag;
                    jbuf_put(out, t.p + t.i, k + 1 - t.i);
                    t.i = k + 1;
                    continue;
                }
                if (!(k < t.n && t.p[k] == ':')) s_flag = dotall[depth];
            }
            dotall[++depth] = s_flag;
            jbuf_putc(out, '(');
            t.i++;
        } else if (c == ')') {
            if (depth == 0) return pat_error(&t, t.i, "unopened group");
            depth--;
            jbuf_putc(out, ')');
            t.i++;
        } else if (is_special((uint8_t)c)) {
            put_escapes(out, (uint8_t)c);
            t.i++;
        } else {
            jbuf_putc(out, c);
            t.i++;
        }
    }
    jbuf_putc(out, ')');
    if (depth != 0) return pat_error(&t, n, "unclosed group");
    return out->oom ? og_oom() : NULL;
}

/* ---- patterns with a length ----
 * A regex cannot say "and at most n characters", so a pattern meets minLength /
 * maxLength only in two shapes whose intersection is again a regex: a pattern every
 * string contains a match of (one unanchored alternative that matches the empty
 * string: ".*", "(?s).*", "[\s\S]*"), which leaves the lengths alone; and an anchored
 * run of one-character atoms ("^[\w\-]+$", "^([a-z]*)$", "^[0-9]{12}$") where at most
 * one atom's count varies, whose count the lengths then narrow. */

/* Whether the regex `re` matches the empty string. */
static og_status *nullable(pat *t, const char *re, size_t len, bool *out) {
    int id;
    og_status *st = glex_add_regex(t->scratch, re, len, "pattern", &id);
    if (st) return og_status_wrap(st, "JSON schema at %s", t->where);
    uint64_t set[64] = {0};
    if (glex_words(t->scratch) > 64) return pat_error(t, 0, "too many classes");
    set[id / 64] |= 1ull << (id % 64);
    uint32_t s = glex_start(t->scratch, set);
    if (s == GLEX_FAILED) return glex_error(t->scratch);
    const uint64_t *acc = s == GLEX_DEAD ? NULL : glex_accepts(t->scratch, s);
    *out = acc && (acc[id / 64] >> (id % 64) & 1);
    return NULL;
}

/* A quantifier at t->i: its counts (1, 1 when there is none). False when it is not one
 * the shape takes. */
static bool read_quantifier(pat *t, unsigned *qmin, unsigned *qmax) {
    *qmin = *qmax = 1;
    if (t->i >= t->n) return true;
    char c = t->p[t->i];
    if (c == '*' || c == '+' || c == '?') {
        *qmin = c == '+';
        *qmax = c == '?' ? 1 : UINT32_MAX;
        t->i++;
    } else if (c == '{') {
        char *end;
        unsigned long a = strtoul(t->p + t->i + 1, &end, 10), b = a;
        if (end == t->p + t->i + 1 || (size_t)(end - t->p) >= t->n) return false;
        if (*end == ',') {
            char *e2;
            b = strtoul(end + 1, &e2, 10);
            if (e2 == end + 1) b = UINT32_MAX;
            end = e2;
        }
        if ((size_t)(end - t->p) >= t->n || *end != '}' || a > 100000 || b < a) return false;
        *qmin = (unsigned)a;
        *qmax = b > 100000 ? UINT32_MAX : (unsigned)b;
        t->i = (size_t)(end - t->p) + 1;
    } else {
        return true;
    }
    if (t->i < t->n && t->p[t->i] == '?') t->i++; /* lazy: the same language */
    return true;
}

og_status *json_re_pattern_sized(jbuf *out, const char *pattern, size_t n, glex *scratch,
                                 const char *where, unsigned lo, unsigned hi, bool *handled) {
    pat t = {.p = pattern, .n = n, .scratch = scratch, .where = where, .o = out};
    *handled = false;
    /* every string contains a match */
    bool anchored = n > 0 && (pattern[0] == '^' || pattern[n - 1] == '$');
    bool has_alt = false;
    for (size_t i = 0, depth = 0, cls = 0; i < n; i++) {
        char c = pattern[i];
        if (c == '\\') i++;
        else if (c == '[') cls++;
        else if (c == ']' && cls) cls--;
        else if (!cls && c == '(') depth++;
        else if (!cls && c == ')' && depth) depth--;
        else if (!cls && !depth && c == '|') has_alt = true;
    }
    if (!anchored && !has_alt) {
        bool empty = false;
        OG_TRY(nullable(&t, pattern, n, &empty));
        if (empty) {
            if (hi == UINT32_MAX) jbuf_printf(out, "%s{%u,}", JSON_CHAR_RE, lo);
            else jbuf_printf(out, "%s{%u,%u}", JSON_CHAR_RE, lo, hi);
            *handled = true;
            return out->oom ? og_oom() : NULL;
        }
    }
    /* ^ atoms $, or ^( atoms )$ */
    if (has_alt || n < 2 || pattern[0] != '^' || pattern[n - 1] != '$') return NULL;
    size_t b = 1, e = n - 1;
    if (e - b >= 2 && pattern[b] == '(' && pattern[e - 1] == ')') {
        b += strncmp(pattern + b, "(?:", 3) == 0 ? 3 : 1;
        e--;
    }
    typedef struct item {
        size_t from, to; /* its translation in `units` */
        unsigned qmin, qmax;
    } item;
    item items[64];
    size_t n_items = 0;
    jbuf units = {0};
    t.o = &units;
    t.i = b;
    t.n = e;
    og_status *st = NULL;
    while (t.i < e && !st) {
        if (n_items == sizeof items / sizeof items[0]) goto unhandled;
        size_t from = units.len;
        char c = t.p[t.i];
        if (c == '\\') {
            char x = t.i + 1 < e ? t.p[t.i + 1] : 0;
            if (strchr("bBAzZ<>", x) || (x >= '0' && x <= '9')) goto unhandled;
            st = pat_escape(&t);
        } else if (c == '[') {
            st = pat_bracket(&t);
        } else if (c == '.') {
            put_dot(&units);
            t.i++;
        } else if (strchr("()|^$*+?{", c)) {
            goto unhandled;
        } else if (is_special((uint8_t)c)) {
            put_escapes(&units, (uint8_t)c);
            t.i++;
        } else {
            /* one code point: its UTF-8 bytes */
            size_t len = (uint8_t)c < 0x80 ? 1 : (uint8_t)c >= 0xF0 ? 4 : (uint8_t)c >= 0xE0 ? 3 : 2;
            if (t.i + len > e) goto unhandled;
            jbuf_puts(&units, "(?:");
            jbuf_put(&units, t.p + t.i, len);
            jbuf_putc(&units, ')');
            t.i += len;
        }
        if (st) break;
        items[n_items].from = from;
        items[n_items].to = units.len;
        if (!read_quantifier(&t, &items[n_items].qmin, &items[n_items].qmax)) goto unhandled;
        n_items++;
    }
    if (st) {
        jbuf_free(&units);
        return st;
    }
    {
        size_t var = SIZE_MAX;
        unsigned long long fixed = 0;
        for (size_t k = 0; k < n_items; k++) {
            if (items[k].qmin != items[k].qmax) {
                if (var != SIZE_MAX) goto unhandled;
                var = k;
            } else {
                fixed += items[k].qmin;
            }
        }
        unsigned long long vmin = 0, vmax = 0;
        if (var != SIZE_MAX) {
            vmin = items[var].qmin;
            vmax = items[var].qmax;
            if (lo > fixed && lo - fixed > vmin) vmin = lo - fixed;
            if (hi != UINT32_MAX) {
                unsigned long long room = hi >= fixed ? hi - fixed : 0;
                if (vmax > room) vmax = room;
            }
        }
        if (fixed + vmin < lo || (hi != UINT32_MAX && fixed + vmin > hi) || vmin > vmax) {
            jbuf_free(&units);
            return og_errorf(OG_ERR_INVALID_ARGUMENT,
                             "JSON schema at %s: unsatisfiable schema: no string of the pattern "
                             "has a length between minLength and maxLength", where);
        }
        jbuf_puts(out, "(?:");
        for (size_t k = 0; k < n_items; k++) {
            jbuf_puts(out, "(?:");
            jbuf_put(out, units.s + items[k].from, items[k].to - items[k].from);
            jbuf_putc(out, ')');
            unsigned long long a = k == var ? vmin : items[k].qmin;
            unsigned long long z = k == var ? vmax : items[k].qmax;
            if (z == UINT32_MAX) jbuf_printf(out, "{%llu,}", a);
            else if (a != 1 || z != 1) jbuf_printf(out, "{%llu,%llu}", a, z);
        }
        jbuf_putc(out, ')');
        jbuf_free(&units);
        *handled = true;
        return out->oom ? og_oom() : NULL;
    }
unhandled:
    jbuf_free(&units);
    return NULL;
}
