/* The lexer. It follows jinja2's rules for the settings transformers uses; the places
 * where whitespace disappears are the ones that decide whether a prompt is
 * byte-identical:
 *   - "{%-", "{#-", "{{-" strip all whitespace before the tag; "-%}", "-#}", "-}}" all
 *     whitespace after it;
 *   - trim_blocks: a block or comment end ("%}", "#}") eats one following "\n" (not
 *     "+%}", and not after "{% raw %}");
 *   - lstrip_blocks: spaces and tabs between the start of a line and a block or comment
 *     tag are dropped (not before "{{", not with "{%+");
 *   - newlines are normalised to "\n" and one trailing newline of the source is dropped
 *     (keep_trailing_newline=False). */
#include "chat/lex.h"

#include "chat/ustr.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct lexer {
    const char *s; /* normalised source */
    size_t n, pos;
    int line;
    bool line_starting; /* the last match ended with a newline (or nothing matched yet) */
    arena *a;
    const char *origin;
    tok *t;
    size_t nt, cap;
    tok_op stack[256]; /* open brackets inside a tag */
    int depth;
} lexer;

static og_status *lex_err(const lexer *lx, int line, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static og_status *lex_err(const lexer *lx, int line, const char *fmt, ...) {
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return og_errorf(OG_ERR_INVALID_MODEL, "%s:%d: TemplateSyntaxError: %s", lx->origin, line, msg);
}

static tok *push(lexer *lx, tok_type type) {
    if (lx->nt == lx->cap) {
        size_t cap = lx->cap ? lx->cap * 2 : 256;
        tok *t = arena_alloc(lx->a, cap * sizeof *t);
        if (!t) return NULL;
        if (lx->nt) memcpy(t, lx->t, lx->nt * sizeof *t);
        lx->t = t;
        lx->cap = cap;
    }
    tok *t = &lx->t[lx->nt++];
    memset(t, 0, sizeof *t);
    t->type = (uint8_t)type;
    t->line = lx->line;
    return t;
}

static int count_lines(const char *s, size_t n) {
    int c = 0;
    for (size_t i = 0; i < n; i++) c += s[i] == '\n';
    return c;
}

/* Length of the whitespace run at s[i..n) (Python's \s). */
static size_t ws_run(const char *s, size_t n, size_t i) {
    size_t j = i;
    while (j < n) {
        int32_t cp;
        size_t k = u8_next(s, n, j, &cp);
        if (!py_isspace(cp)) break;
        j += k;
    }
    return j - i;
}

/* Length of s[0..n) without its trailing whitespace (str.rstrip()). */
static size_t rstrip_len(const char *s, size_t n) {
    size_t end = n;
    size_t i = 0, last = 0; /* last: end of the last non-space code point */
    while (i < end) {
        int32_t cp;
        size_t k = u8_next(s, end, i, &cp);
        i += k;
        if (!py_isspace(cp)) last = i;
    }
    return last;
}

/* Applies "-" / lstrip_blocks to the text before a tag; returns the kept length. */
static size_t strip_before(const lexer *lx, const char *text, size_t len, char sign,
                           bool lstrip_applies) {
    if (sign == '-') return rstrip_len(text, len);
    if (sign == '+' || !lstrip_applies) return len;
    size_t l_pos = 0;
    for (size_t i = len; i > 0; i--)
        if (text[i - 1] == '\n') {
            l_pos = i;
            break;
        }
    if (l_pos == 0 && !lx->line_starting) return len;
    if (l_pos == len) return len;
    if (ws_run(text, len, l_pos) == len - l_pos) return l_pos;
    return len;
}

static og_status *emit_text(lexer *lx, const char *text, size_t len) {
    if (len == 0) return NULL;
    tok *t = push(lx, TK_TEXT);
    if (!t) return og_oom();
    t->s = text;
    t->len = len;
    return NULL;
}

static bool starts(const lexer *lx, size_t i, const char *lit) {
    size_t k = strlen(lit);
    return i + k <= lx->n && memcmp(lx->s + i, lit, k) == 0;
}

/* "{%[-+]? raw [-]%}" at i: returns the end of the match (0 if none) and the sign. */
static size_t match_raw_begin(const lexer *lx, size_t i, char *sign) {
    size_t j = i + 2;
    *sign = 0;
    if (j < lx->n && (lx->s[j] == '-' || lx->s[j] == '+')) *sign = lx->s[j++];
    j += ws_run(lx->s, lx->n, j);
    if (!starts(lx, j, "raw")) return 0;
    j += 3;
    j += ws_run(lx->s, lx->n, j);
    if (starts(lx, j, "-%}")) return j + 3 + ws_run(lx->s, lx->n, j + 3);
    if (starts(lx, j, "%}")) return j + 2;
    return 0;
}

/* "{%[-+]? endraw (+%}|-%}\s*|%}\n?)" at i. */
static size_t match_raw_end(const lexer *lx, size_t i, char *sign) {
    if (!starts(lx, i, "{%")) return 0;
    size_t j = i + 2;
    *sign = 0;
    if (j < lx->n && (lx->s[j] == '-' || lx->s[j] == '+')) *sign = lx->s[j++];
    j += ws_run(lx->s, lx->n, j);
    if (!starts(lx, j, "endraw")) return 0;
    j += 6;
    j += ws_run(lx->s, lx->n, j);
    if (starts(lx, j, "+%}")) return j + 3;
    if (starts(lx, j, "-%}")) return j + 3 + ws_run(lx->s, lx->n, j + 3);
    if (starts(lx, j, "%}")) return j + 2 + (starts(lx, j + 2, "\n") ? 1 : 0);
    return 0;
}

static void advance_to(lexer *lx, size_t end) {
    lx->line += count_lines(lx->s + lx->pos, end - lx->pos);
    lx->line_starting = end > lx->pos && lx->s[end - 1] == '\n';
    lx->pos = end;
}

static og_status *lex_raw(lexer *lx, size_t begin_end) {
    int line0 = lx->line;
    advance_to(lx, begin_end);
    for (size_t j = lx->pos; j < lx->n; j++) {
        if (lx->s[j] != '{') continue;
        char sign;
        size_t end = match_raw_end(lx, j, &sign);
        if (!end) continue;
        size_t keep = strip_before(lx, lx->s + lx->pos, j - lx->pos, sign, true);
        OG_TRY(emit_text(lx, lx->s + lx->pos, keep));
        advance_to(lx, end);
        return NULL;
    }
    return lex_err(lx, line0, "missing end of raw directive ({%% endraw %%})");
}

static og_status *lex_comment(lexer *lx, size_t start) {
    int line0 = lx->line;
    for (size_t j = start; j < lx->n; j++) {
        size_t end = 0;
        if (starts(lx, j, "+#}")) end = j + 3;
        else if (starts(lx, j, "-#}")) end = j + 3 + ws_run(lx->s, lx->n, j + 3);
        else if (starts(lx, j, "#}")) end = j + 2 + (starts(lx, j + 2, "\n") ? 1 : 0);
        if (end) {
            advance_to(lx, end);
            return NULL;
        }
    }
    return lex_err(lx, line0, "missing end of comment tag");
}

/* ---- inside {{ }} and {% %} --------------------------------------------------------- */

static bool name_start(int32_t cp) { return cp == '_' || py_isalpha(cp); }
static bool name_char(int32_t cp) { return cp == '_' || py_isalnum(cp) || (cp >= 0x80 && (cp == 0xB7)); }

static int hexval(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

/* A string literal's value: Python's "unicode-escape" decoding of the text, as jinja2
 * does it (after backslash-replacing non-ASCII, so "\é" stays the four characters
 * "\xe9"). */
static og_status *decode_string(lexer *lx, const char *s, size_t len, int line, tok *t) {
    char *out = arena_alloc(lx->a, len * 4 + 1); /* an escape never grows more than 4x */
    if (!out) return og_oom();
    size_t o = 0;
    for (size_t i = 0; i < len;) {
        if (s[i] != '\\') {
            out[o++] = s[i++];
            continue;
        }
        if (i + 1 >= len) return lex_err(lx, line, "\\ at end of string");
        int32_t nx;
        size_t k = u8_next(s, len, i + 1, &nx);
        i += 1 + k;
        int32_t cp = -1;
        switch (nx) {
        case '\n': continue;
        case '\\': cp = '\\'; break;
        case '\'': cp = '\''; break;
        case '"': cp = '"'; break;
        case 'a': cp = 7; break;
        case 'b': cp = 8; break;
        case 'f': cp = 12; break;
        case 'n': cp = 10; break;
        case 'r': cp = 13; break;
        case 't': cp = 9; break;
        case 'v': cp = 11; break;
        case 'x':
        case 'u':
        case 'U': {
            int want = nx == 'x' ? 2 : nx == 'u' ? 4 : 8;
            int32_t v = 0;
            for (int d = 0; d < want; d++) {
                int h = i < len ? hexval(s[i]) : -1;
                if (h < 0)
                    return lex_err(lx, line, "truncated \\%c escape in a string literal", (char)nx);
                v = v * 16 + h;
                i++;
            }
            if (v > 0x10FFFF) return lex_err(lx, line, "illegal Unicode character in a string literal");
            cp = v;
            break;
        }
        case 'N':
            return og_errorf(OG_ERR_UNSUPPORTED, "%s:%d: \\N{...} escapes in string literals are "
                             "not implemented", lx->origin, line);
        default:
            if (nx >= '0' && nx <= '7') {
                int32_t v = nx - '0';
                for (int d = 0; d < 2 && i < len && s[i] >= '0' && s[i] <= '7'; d++)
                    v = v * 8 + (s[i++] - '0');
                cp = v;
            } else if (nx >= 0x80) {
                char esc[12];
                if (nx <= 0xFF) snprintf(esc, sizeof esc, "\\x%02x", (unsigned)nx);
                else if (nx <= 0xFFFF) snprintf(esc, sizeof esc, "\\u%04x", (unsigned)nx);
                else snprintf(esc, sizeof esc, "\\U%08x", (unsigned)nx);
                size_t el = strlen(esc);
                memcpy(out + o, esc, el);
                o += el;
                continue;
            } else { /* an unknown escape keeps its backslash */
                out[o++] = '\\';
                o += (size_t)u8_put(nx, out + o);
                continue;
            }
        }
        if (cp >= 0xD800 && cp <= 0xDFFF)
            return og_errorf(OG_ERR_UNSUPPORTED, "%s:%d: a lone surrogate (\\u%04x) in a string "
                             "literal is not supported", lx->origin, line, (unsigned)cp);
        o += (size_t)u8_put(cp, out + o);
    }
    out[o] = 0;
    t->s = out;
    t->len = o;
    return NULL;
}

/* Number literals: 12, 1_000, 0x1F, 0o17, 0b101, 1.5, 1e3, 2.5e-3. */
static og_status *lex_number(lexer *lx, tok **out) {
    const char *s = lx->s;
    size_t i = lx->pos, n = lx->n;
    char digits[128];
    size_t nd = 0;
    int line = lx->line;
    if (s[i] == '0' && i + 1 < n && strchr("xXoObB", s[i + 1]) && i + 2 < n) {
        int base = (s[i + 1] | 0x20) == 'x' ? 16 : (s[i + 1] | 0x20) == 'o' ? 8 : 2;
        size_t j = i + 2;
        while (j < n && (hexval(s[j]) >= 0 && hexval(s[j]) < base ? true : s[j] == '_')) {
            if (s[j] != '_' && nd < sizeof digits - 1) digits[nd++] = s[j];
            j++;
        }
        if (nd > 0) {
            digits[nd] = 0;
            errno = 0;
            unsigned long long v = strtoull(digits, NULL, base);
            if (errno || v > INT64_MAX)
                return og_errorf(OG_ERR_UNSUPPORTED, "%s:%d: integer literal beyond 64 bits",
                                 lx->origin, line);
            tok *t = push(lx, TK_INT);
            if (!t) return og_oom();
            t->i = (int64_t)v;
            lx->pos = j;
            *out = t;
            return NULL;
        }
    }
    size_t j = i;
    bool is_float = false;
    while (j < n && ((s[j] >= '0' && s[j] <= '9') || (s[j] == '_' && j + 1 < n && s[j + 1] >= '0' &&
                                                     s[j + 1] <= '9' && j > i))) {
        if (s[j] != '_' && nd < sizeof digits - 8) digits[nd++] = s[j];
        j++;
    }
    if (j + 1 < n && s[j] == '.' && s[j + 1] >= '0' && s[j + 1] <= '9') {
        is_float = true;
        digits[nd++] = '.';
        j++;
        while (j < n && ((s[j] >= '0' && s[j] <= '9') || (s[j] == '_' && j + 1 < n &&
                                                           s[j + 1] >= '0' && s[j + 1] <= '9'))) {
            if (s[j] != '_' && nd < sizeof digits - 8) digits[nd++] = s[j];
            j++;
        }
    }
    if (j < n && (s[j] == 'e' || s[j] == 'E')) {
        size_t k = j + 1;
        if (k < n && (s[k] == '+' || s[k] == '-')) k++;
        if (k < n && s[k] >= '0' && s[k] <= '9') {
            is_float = true;
            digits[nd++] = 'e';
            if (s[j + 1] == '-') digits[nd++] = '-';
            j = k;
            while (j < n && ((s[j] >= '0' && s[j] <= '9') || s[j] == '_')) {
                if (s[j] != '_' && nd < sizeof digits - 1) digits[nd++] = s[j];
                j++;
            }
        }
    }
    digits[nd] = 0;
    tok *t = push(lx, is_float ? TK_FLOAT : TK_INT);
    if (!t) return og_oom();
    if (is_float) {
        t->f = strtod(digits, NULL);
    } else {
        errno = 0;
        long long v = strtoll(digits, NULL, 10);
        if (errno)
            return og_errorf(OG_ERR_UNSUPPORTED, "%s:%d: integer literal beyond 64 bits",
                             lx->origin, line);
        t->i = v;
    }
    lx->pos = j;
    *out = t;
    return NULL;
}

static const struct {
    const char *text;
    tok_op op;
} ops[] = {
    {"//", K_FLOORDIV}, {"**", K_POW}, {"==", K_EQ}, {"!=", K_NE}, {">=", K_GE}, {"<=", K_LE},
    {"+", K_ADD}, {"-", K_SUB}, {"/", K_DIV}, {"*", K_MUL}, {"%", K_MOD}, {"~", K_TILDE},
    {"[", K_LBRACKET}, {"]", K_RBRACKET}, {"(", K_LPAREN}, {")", K_RPAREN}, {"{", K_LBRACE},
    {"}", K_RBRACE}, {">", K_GT}, {"<", K_LT}, {"=", K_ASSIGN}, {".", K_DOT}, {":", K_COLON},
    {"|", K_PIPE}, {",", K_COMMA}, {";", K_SEMI},
};

const char *chat_op_text(tok_op op) {
    for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++)
        if (ops[i].op == op) return ops[i].text;
    return "?";
}

static og_status *lex_tag(lexer *lx, bool block) {
    int line0 = lx->line;
    lx->depth = 0;
    for (;;) {
        if (lx->pos >= lx->n)
            return lex_err(lx, line0, "unexpected end of template: the %s opened here is not "
                           "closed", block ? "'{%' tag" : "'{{' expression");
        const char *s = lx->s;
        size_t i = lx->pos;
        if (lx->depth == 0) {
            size_t end = 0;
            if (block) {
                if (starts(lx, i, "+%}")) end = i + 3;
                else if (starts(lx, i, "-%}")) end = i + 3 + ws_run(s, lx->n, i + 3);
                else if (starts(lx, i, "%}")) end = i + 2 + (starts(lx, i + 2, "\n") ? 1 : 0);
            } else {
                if (starts(lx, i, "-}}")) end = i + 3 + ws_run(s, lx->n, i + 3);
                else if (starts(lx, i, "}}")) end = i + 2;
            }
            if (end) {
                if (!push(lx, block ? TK_BLOCK_END : TK_VAR_END)) return og_oom();
                advance_to(lx, end);
                return NULL;
            }
        }
        int32_t cp;
        size_t k = u8_next(s, lx->n, i, &cp);
        if (py_isspace(cp)) {
            size_t w = ws_run(s, lx->n, i);
            lx->line += count_lines(s + i, w);
            lx->pos += w;
            continue;
        }
        if (cp >= '0' && cp <= '9') {
            tok *t;
            OG_TRY(lex_number(lx, &t));
            continue;
        }
        if (name_start(cp)) {
            size_t j = i + k;
            while (j < lx->n) {
                int32_t c2;
                size_t k2 = u8_next(s, lx->n, j, &c2);
                if (!name_char(c2)) break;
                j += k2;
            }
            tok *t = push(lx, TK_NAME);
            if (!t) return og_oom();
            t->s = arena_strndup(lx->a, s + i, j - i);
            if (!t->s) return og_oom();
            t->len = j - i;
            lx->pos = j;
            continue;
        }
        if (cp == '\'' || cp == '"') {
            size_t j = i + 1;
            while (j < lx->n && s[j] != (char)cp) j += s[j] == '\\' ? 2 : 1;
            if (j >= lx->n) return lex_err(lx, lx->line, "unterminated string literal");
            tok *t = push(lx, TK_STRING);
            if (!t) return og_oom();
            OG_TRY(decode_string(lx, s + i + 1, j - i - 1, lx->line, t));
            lx->line += count_lines(s + i, j + 1 - i);
            lx->pos = j + 1;
            continue;
        }
        size_t o = 0;
        for (; o < sizeof ops / sizeof ops[0]; o++)
            if (starts(lx, i, ops[o].text)) break;
        if (o == sizeof ops / sizeof ops[0])
            return lex_err(lx, lx->line, "unexpected char '%.*s'", (int)k, s + i);
        tok_op op = ops[o].op;
        if (op == K_LPAREN || op == K_LBRACKET || op == K_LBRACE) {
            if (lx->depth == (int)(sizeof lx->stack / sizeof lx->stack[0]))
                return lex_err(lx, lx->line, "brackets nested too deeply");
            lx->stack[lx->depth++] = op;
        } else if (op == K_RPAREN || op == K_RBRACKET || op == K_RBRACE) {
            tok_op want = op == K_RPAREN ? K_LPAREN : op == K_RBRACKET ? K_LBRACKET : K_LBRACE;
            if (lx->depth == 0) return lex_err(lx, lx->line, "unexpected '%s'", ops[o].text);
            if (lx->stack[lx->depth - 1] != want)
                return lex_err(lx, lx->line, "unexpected '%s', expected '%s'", ops[o].text,
                               lx->stack[lx->depth - 1] == K_LPAREN     ? ")"
                               : lx->stack[lx->depth - 1] == K_LBRACKET ? "]"
                                                                        : "}");
            lx->depth--;
        }
        tok *t = push(lx, TK_OP);
        if (!t) return og_oom();
        t->op = (uint8_t)op;
        lx->pos += strlen(ops[o].text);
    }
}

/* Newlines to "\n", one trailing newline dropped. */
static char *normalise(arena *a, const char *src, size_t len, size_t *out_len) {
    char *s = arena_alloc(a, len + 1);
    if (!s) return NULL;
    size_t n = 0;
    for (size_t i = 0; i < len; i++) {
        if (src[i] == '\r') {
            s[n++] = '\n';
            if (i + 1 < len && src[i + 1] == '\n') i++;
        } else {
            s[n++] = src[i];
        }
    }
    if (n && s[n - 1] == '\n') n--;
    s[n] = 0;
    *out_len = n;
    return s;
}

og_status *chat_lex(const char *src, size_t len, arena *a, const char *origin, tok **out,
                    size_t *n) {
    lexer lx;
    memset(&lx, 0, sizeof lx);
    lx.a = a;
    lx.origin = origin;
    lx.line = 1;
    lx.line_starting = true;
    lx.s = normalise(a, src, len, &lx.n);
    if (!lx.s) return og_oom();
    while (lx.pos < lx.n) {
        /* the next "{{", "{%" or "{#" */
        size_t k = lx.pos;
        const char *hit = NULL;
        while ((hit = memchr(lx.s + k, '{', lx.n - k)) != NULL) {
            size_t j = (size_t)(hit - lx.s);
            if (j + 1 < lx.n && (lx.s[j + 1] == '{' || lx.s[j + 1] == '%' || lx.s[j + 1] == '#'))
                break;
            k = j + 1;
        }
        if (!hit) {
            OG_TRY(emit_text(&lx, lx.s + lx.pos, lx.n - lx.pos));
            break;
        }
        size_t j = (size_t)(hit - lx.s);
        char kind = lx.s[j + 1];
        char sign = (j + 2 < lx.n && (lx.s[j + 2] == '-' || lx.s[j + 2] == '+')) ? lx.s[j + 2] : 0;
        const char *text = lx.s + lx.pos;
        size_t tlen = j - lx.pos;
        if (kind == '%') {
            char rsign;
            size_t raw_end = match_raw_begin(&lx, j, &rsign);
            if (raw_end) {
                OG_TRY(emit_text(&lx, text, strip_before(&lx, text, tlen, rsign, true)));
                lx.line += count_lines(text, tlen);
                lx.pos = j;
                OG_TRY(lex_raw(&lx, raw_end));
                continue;
            }
        }
        OG_TRY(emit_text(&lx, text, strip_before(&lx, text, tlen, sign, kind != '{')));
        lx.line += count_lines(text, tlen);
        lx.pos = j + 2 + (sign ? 1 : 0);
        lx.line_starting = false;
        if (kind == '#') {
            OG_TRY(lex_comment(&lx, lx.pos));
            continue;
        }
        if (!push(&lx, kind == '{' ? TK_VAR_BEGIN : TK_BLOCK_BEGIN)) return og_oom();
        OG_TRY(lex_tag(&lx, kind == '%'));
    }
    if (!push(&lx, TK_EOF)) return og_oom();
    *out = lx.t;
    *n = lx.nt;
    return NULL;
}
