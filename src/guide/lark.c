/* Lark grammars, the subset llguidance accepts, into lexemes and rules.
 *
 * Two passes. The first reads the whole text into definitions (rules, terminals,
 * %ignore, %import common) whose bodies are small expression trees; syntax errors are
 * found here, everywhere in the text. The second compiles what `start` reaches, as
 * llguidance does (an unreachable rule may name something undefined):
 *   - a terminal (uppercase name) is one lexeme: its whole definition, terminals it names
 *     inlined, written out as one regular expression;
 *   - a string or regex written in a rule is a lexeme of its own;
 *   - a rule is a nonterminal; groups, optionals and repetitions in rules become helper
 *     nonterminals of linear size (x* is H -> H x | empty, left-recursive as Earley likes;
 *     x~n..m is n copies then a chain of m-n optional ones).
 * Rules are compiled from a queue, not by recursion, so a long chain of rules cannot
 * exhaust the stack; expression nesting is bounded while parsing. */
#include "guide/front.h"
#include "guide/lark_common.h"

#include <ctype.h>
#include <utf8proc.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Nesting of ( [ in one definition, repetition counts, and a terminal's regex once its
 * terminals are inlined (terminals naming terminals twice can double it each level). */
#define LK_MAX_DEPTH 64
#define LK_MAX_REPEAT 10000
#define LK_MAX_REGEX ((size_t)1 << 20)

/* AND: its kids (SEQs) all match; NOT: any byte string kids[0] does not match; SUB: the
 * concatenations of consecutive kids (STRs), %regex's substrings. */
typedef enum ln_kind {
    LN_ALT, LN_SEQ, LN_STR, LN_REGEX, LN_RANGE, LN_NAME, LN_REPEAT, LN_JSON, LN_AND, LN_NOT,
    LN_SUB, LN_TOKEN
} ln_kind;

/* One node of a definition's body. */
typedef struct ln {
    ln_kind kind;
    size_t off;            /* where it starts in the text, for messages */
    struct ln **kids;      /* ALT: its SEQs; SEQ: its items; REPEAT: kids[0] */
    size_t n, cap;
    char *text;            /* STR: the decoded bytes; REGEX: the expression; TOKEN: <...> */
    size_t tlen;
    const char *name;      /* NAME: into the text */
    size_t nlen;
    uint32_t lo, hi;       /* RANGE: code points */
    int min, max;          /* REPEAT: max -1 is unbounded */
    bool icase;            /* STR: "..."i */
    char flags[8];         /* REGEX: its flags */
    cJSON *json;           /* JSON: the schema */
} ln;

typedef struct ldef {
    const char *name;      /* into the text (or the common table) */
    size_t nlen;
    size_t off;
    bool terminal;
    ln *body;              /* NULL for an imported common terminal */
    const char *common_re; /* the imported terminal's expression */
    int state;             /* terminal: 1 while being expanded, 2 expanded; rule: 1 queued */
    char *re;              /* terminal: its expression once expanded */
    size_t re_len;
    bool ext;              /* terminal: its expression uses '&', '~' or %regex */
    bool lazy;             /* rule [lazy]: its body one lazy lexeme */
    ln *suffix;            /* rule [suffix=X]: X (a terminal) after the lazy body */
    ln *stop;              /* rule [stop=X]: X (a terminal) after the lazy body, hidden */
    int max_tokens;        /* rule [max_tokens=N]: its body one lexeme of at most N tokens;
                            * -1 when not given */
    bool eos;              /* rule [stop=""]: its body one lexeme a stop id may end */
    int lexeme;            /* terminal: its lexeme once added, else -1 */
    gsym nt;               /* rule: its nonterminal once queued */
} ldef;

typedef struct sbuf {
    char *p;
    size_t len, cap;
    bool oom;
} sbuf;

typedef struct lk {
    const char *src;
    size_t len, pos;
    glex *lex;
    gcfg *cfg;
    const guide_vocab *vocab; /* for special tokens by name or id (NULL: none) */
    ln **nodes; /* every node made, to free them */
    size_t n_nodes, cap_nodes;
    ldef *defs;
    size_t n_defs, cap_defs;
    ldef **sorted; /* defs by name, for look-up */
    ln **ignores;
    size_t n_ignores, cap_ignores;
    ldef **queue; /* rules whose bodies are yet to compile */
    size_t n_queue, cap_queue;
    /* Per lexeme id, once looked at: whether it matches the empty string (LK_EMPTY_*),
     * and then the optional nonterminal that stands for it in rules. */
    uint8_t *empty;
    gsym *empty_nt;
    size_t cap_empty;
    bool ext; /* the expression being written uses '&', '~' or %regex (lexer.h's ext) */
} lk;

enum { LK_EMPTY_UNKNOWN, LK_EMPTY_NO, LK_EMPTY_ALSO, LK_EMPTY_ONLY };

/* ---- small helpers ------------------------------------------------------------------ */

static bool grow(void **p, size_t *cap, size_t need, size_t elem) {
    if (need <= *cap) return true;
    size_t c = *cap ? *cap * 2 : 8;
    while (c < need) c *= 2;
    void *q = realloc(*p, c * elem);
    if (!q) return false;
    *p = q;
    *cap = c;
    return true;
}

static void sb_put(sbuf *b, const char *s, size_t n) {
    if (b->oom) return;
    if (!grow((void **)&b->p, &b->cap, b->len + n + 1, 1)) {
        b->oom = true;
        return;
    }
    memcpy(b->p + b->len, s, n);
    b->len += n;
    b->p[b->len] = 0;
}

static void sb_str(sbuf *b, const char *s) { sb_put(b, s, strlen(s)); }

static void where(const lk *p, size_t off, int *line, int *col) {
    int l = 1;
    size_t start = 0;
    for (size_t i = 0; i < off && i < p->len; i++)
        if (p->src[i] == '\n') l++, start = i + 1;
    *line = l;
    *col = (int)(off - start) + 1;
}

static og_status *lk_err(const lk *p, size_t off, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static og_status *lk_err(const lk *p, size_t off, const char *fmt, ...) {
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    int line, col;
    where(p, off, &line, &col);
    return og_errorf(OG_ERR_INVALID_ARGUMENT, "lark grammar line %d, column %d: %s", line, col,
                     msg);
}

/* Adds "lark grammar line L, column C" before a message from the lexer or JSON front. */
static og_status *lk_wrap(const lk *p, size_t off, og_status *st) {
    if (!st) return NULL;
    int line, col;
    where(p, off, &line, &col);
    return og_status_wrap(st, "lark grammar line %d, column %d", line, col);
}

/* What the text shows at `off`, for "found ..." in messages. */
static const char *shown(const lk *p, size_t off, char *buf, size_t cap) {
    if (off >= p->len) return "the end of the grammar";
    char c = p->src[off];
    if (c == '\n' || c == '\r') return "the end of the line";
    snprintf(buf, cap, "'%c'", c);
    return buf;
}

static ln *node(lk *p, ln_kind kind, size_t off) {
    if (!grow((void **)&p->nodes, &p->cap_nodes, p->n_nodes + 1, sizeof *p->nodes)) return NULL;
    ln *n = calloc(1, sizeof *n);
    if (!n) return NULL;
    n->kind = kind;
    n->off = off;
    p->nodes[p->n_nodes++] = n;
    return n;
}

static og_status *add_kid(ln *parent, ln *kid) {
    if (!grow((void **)&parent->kids, &parent->cap, parent->n + 1, sizeof *parent->kids))
        return og_oom();
    parent->kids[parent->n++] = kid;
    return NULL;
}

/* ---- reading the text ----------------------------------------------------------------- */

static bool name_start(char c) { return isalpha((unsigned char)c) || c == '_'; }

/* Names are [A-Za-z_][A-Za-z0-9_-]* (llguidance allows '-'), stopping before "->". */
static size_t name_len(const lk *p, size_t at) {
    size_t i = at;
    if (i >= p->len || !name_start(p->src[i])) return 0;
    while (i < p->len) {
        char c = p->src[i];
        if (isalnum((unsigned char)c) || c == '_' ||
            (c == '-' && !(i + 1 < p->len && p->src[i + 1] == '>')))
            i++;
        else
            break;
    }
    return i - at;
}

/* Skips blanks and comments within a statement. A statement ends at a newline, unless
 * the next line that is not blank starts with '|' (the alternatives of a rule may each
 * take a line, as in Lark); a comment line in between ends it, as in llguidance. */
static void skip_ws(lk *p) {
    while (p->pos < p->len) {
        char c = p->src[p->pos];
        if (c == ' ' || c == '\t' || c == '\r' || c == '\f') {
            p->pos++;
        } else if (c == '#' || (c == '/' && p->pos + 1 < p->len && p->src[p->pos + 1] == '/')) {
            while (p->pos < p->len && p->src[p->pos] != '\n') p->pos++;
        } else if (c == '\n') {
            size_t q = p->pos;
            while (q < p->len && isspace((unsigned char)p->src[q])) q++;
            if (q < p->len && p->src[q] == '|') p->pos = q;
            return;
        } else {
            return;
        }
    }
}

/* Skips blank lines and comment lines between statements. */
static void skip_lines(lk *p) {
    while (p->pos < p->len) {
        char c = p->src[p->pos];
        if (isspace((unsigned char)c))
            p->pos++;
        else if (c == '#' || (c == '/' && p->pos + 1 < p->len && p->src[p->pos + 1] == '/'))
            while (p->pos < p->len && p->src[p->pos] != '\n') p->pos++;
        else
            return;
    }
}

static bool at_stmt_end(const lk *p) { return p->pos >= p->len || p->src[p->pos] == '\n'; }

static bool looking_at(const lk *p, const char *s) {
    size_t n = strlen(s);
    return p->pos + n <= p->len && !memcmp(p->src + p->pos, s, n);
}

static int hexval(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

static void put_utf8(sbuf *b, uint32_t cp) {
    char u[4];
    size_t n;
    if (cp < 0x80) {
        u[0] = (char)cp, n = 1;
    } else if (cp < 0x800) {
        u[0] = (char)(0xC0 | cp >> 6), u[1] = (char)(0x80 | (cp & 0x3F)), n = 2;
    } else if (cp < 0x10000) {
        u[0] = (char)(0xE0 | cp >> 12), u[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
        u[2] = (char)(0x80 | (cp & 0x3F)), n = 3;
    } else {
        u[0] = (char)(0xF0 | cp >> 18), u[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
        u[2] = (char)(0x80 | ((cp >> 6) & 0x3F)), u[3] = (char)(0x80 | (cp & 0x3F)), n = 4;
    }
    sb_put(b, u, n);
}

/* The code point of UTF-8 `s` (n bytes) when it is exactly one, else -1. */
static long one_code_point(const char *s, size_t n) {
    const unsigned char *u = (const unsigned char *)s;
    if (n == 1 && u[0] < 0x80) return u[0];
    size_t want = n == 2 ? 0xC0 : n == 3 ? 0xE0 : n == 4 ? 0xF0 : 0;
    size_t mask = n == 2 ? 0xE0 : n == 3 ? 0xF0 : 0xF8;
    if (!want || (u[0] & mask) != want) return -1;
    long cp = u[0] & (0x7F >> n);
    for (size_t i = 1; i < n; i++) {
        if ((u[i] & 0xC0) != 0x80) return -1;
        cp = cp << 6 | (u[i] & 0x3F);
    }
    return cp;
}

/* "..." with JSON's escapes and \xHH (a code point, as llguidance reads it). */
static og_status *read_string(lk *p, ln *n) {
    size_t start = p->pos++;
    sbuf b = {0};
    og_status *st = NULL;
    for (;;) {
        if (p->pos >= p->len || p->src[p->pos] == '\n') {
            st = lk_err(p, start, "unterminated string");
            break;
        }
        char c = p->src[p->pos];
        if (c == '"') {
            p->pos++;
            break;
        }
        if (c != '\\') {
            sb_put(&b, &c, 1);
            p->pos++;
            continue;
        }
        size_t esc = p->pos;
        char e = p->pos + 1 < p->len ? p->src[p->pos + 1] : 0;
        p->pos += 2;
        const char *simple = strchr("\"\\/bfnrt", e);
        if (e && simple) {
            static const char to[] = "\"\\/\b\f\n\r\t";
            sb_put(&b, &to[simple - "\"\\/bfnrt"], 1);
        } else if (e == 'x' || e == 'u') {
            int digits = e == 'x' ? 2 : 4;
            uint32_t cp = 0;
            for (int i = 0; i < digits; i++) {
                int h = p->pos < p->len ? hexval(p->src[p->pos]) : -1;
                if (h < 0) {
                    st = lk_err(p, esc, "\\%c in a string needs %d hex digits", e, digits);
                    goto out;
                }
                cp = cp << 4 | (uint32_t)h;
                p->pos++;
            }
            /* \uD83D\uDE00: a surrogate pair is one code point, as in JSON. */
            if (cp >= 0xD800 && cp < 0xDC00 && e == 'u' && looking_at(p, "\\u") &&
                p->pos + 6 <= p->len) {
                uint32_t lo = 0;
                bool ok = true;
                for (int i = 0; i < 4; i++) {
                    int h = hexval(p->src[p->pos + 2 + (size_t)i]);
                    if (h < 0) ok = false;
                    lo = lo << 4 | (uint32_t)(h < 0 ? 0 : h);
                }
                if (ok && lo >= 0xDC00 && lo < 0xE000) {
                    cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
                    p->pos += 6;
                }
            }
            if (cp >= 0xD800 && cp < 0xE000) {
                st = lk_err(p, esc, "\\u%04X in a string is a lone surrogate", (unsigned)cp);
                goto out;
            }
            put_utf8(&b, cp);
        } else {
            st = lk_err(p, esc, "unknown escape '\\%c' in a string (\\\" \\\\ \\/ \\b \\f \\n \\r "
                                "\\t \\xHH \\uHHHH)",
                        e ? e : ' ');
            break;
        }
    }
out:
    if (!st && b.oom) st = og_oom();
    if (st) {
        free(b.p);
        return st;
    }
    n->text = b.p;
    n->tlen = b.len;
    return NULL;
}

/* /.../flags: the expression as written except that \/ is a slash. It may span lines
 * (as in Lark: with the x flag, a regex of several commented lines). */
static og_status *read_regex(lk *p, ln *n) {
    size_t start = p->pos++;
    sbuf b = {0};
    sb_put(&b, "", 0);
    for (;;) {
        if (p->pos >= p->len) {
            free(b.p);
            return lk_err(p, start, "unterminated regex");
        }
        char c = p->src[p->pos];
        if (c == '/') break;
        if (c == '\\' && p->pos + 1 < p->len && p->src[p->pos + 1] == '/') {
            sb_put(&b, "/", 1);
            p->pos += 2;
        } else if (c == '\\' && p->pos + 1 < p->len) {
            sb_put(&b, p->src + p->pos, 2);
            p->pos += 2;
        } else {
            sb_put(&b, &c, 1);
            p->pos++;
        }
    }
    p->pos++;
    if (b.oom) return og_oom();
    n->text = b.p;
    n->tlen = b.len;
    size_t nf = 0;
    while (p->pos < p->len && isalpha((unsigned char)p->src[p->pos])) {
        char f = p->src[p->pos];
        if (!strchr("imsux", f))
            return lk_err(p, p->pos, "regex flag '%c' is not supported (i, m, s, u, x)", f);
        /* u (Unicode) is how every regex here is read already */
        if (f != 'u' && !strchr(n->flags, f)) {
            if (nf + 1 >= sizeof n->flags) return lk_err(p, p->pos, "too many regex flags");
            n->flags[nf++] = f;
        }
        p->pos++;
    }
    return NULL;
}

/* The text of %json's value: from its '{' to the matching '}', strings skipped; or the
 * schemas true and false. */
static og_status *read_json(lk *p, ln *n) {
    size_t start = p->pos;
    size_t w = name_len(p, p->pos);
    if ((w == 4 && looking_at(p, "true")) || (w == 5 && looking_at(p, "false"))) {
        p->pos += w;
        n->json = w == 4 ? cJSON_CreateTrue() : cJSON_CreateFalse();
        return n->json ? NULL : og_oom();
    }
    if (p->pos >= p->len || p->src[p->pos] != '{') {
        char buf[8];
        return lk_err(p, p->pos, "%%json needs a JSON object, found %s",
                      shown(p, p->pos, buf, sizeof buf));
    }
    int depth = 0;
    bool in_str = false;
    size_t i = p->pos;
    for (; i < p->len; i++) {
        char c = p->src[i];
        if (in_str) {
            if (c == '\\') i++;
            else if (c == '"') in_str = false;
        } else if (c == '"') {
            in_str = true;
        } else if (c == '{' || c == '[') {
            depth++;
        } else if (c == '}' || c == ']') {
            if (--depth == 0) break;
        }
    }
    if (i >= p->len) return lk_err(p, start, "unterminated JSON object after %%json");
    p->pos = i + 1;
    n->json = cJSON_ParseWithLength(p->src + start, p->pos - start);
    if (!n->json) return lk_err(p, start, "invalid JSON after %%json");
    return NULL;
}

static og_status *read_number(lk *p, int *out) {
    if (p->pos >= p->len || !isdigit((unsigned char)p->src[p->pos])) {
        char buf[8];
        return lk_err(p, p->pos, "expected a number, found %s", shown(p, p->pos, buf, sizeof buf));
    }
    size_t at = p->pos;
    long v = 0;
    while (p->pos < p->len && isdigit((unsigned char)p->src[p->pos])) {
        v = v * 10 + (p->src[p->pos++] - '0');
        if (v > LK_MAX_REPEAT)
            return lk_err(p, at, "repetition count over %d", LK_MAX_REPEAT);
    }
    *out = (int)v;
    return NULL;
}

/* Terminal names have no lowercase letter, rule names no uppercase one. */
static og_status *name_kind(const lk *p, const char *name, size_t n, size_t at, bool *terminal) {
    bool upper = false, lower = false;
    for (size_t i = 0; i < n; i++) {
        upper |= isupper((unsigned char)name[i]) != 0;
        lower |= islower((unsigned char)name[i]) != 0;
    }
    if (upper && lower)
        return lk_err(p, at, "name '%.*s' mixes upper and lower case (rules are lowercase, "
                             "terminals uppercase)",
                      (int)n, name);
    *terminal = upper;
    return NULL;
}

static og_status *read_alts(lk *p, int depth, ln **out);

/* One atom: a group, an optional, a string or range, a regex, a name, %json. */
/* Rust's char::is_whitespace and is_alphanumeric (or '_'), by Unicode category for
 * characters past ASCII (marks counted as letters, as the Alphabetic property mostly has
 * them). */
static int word_class(int32_t cp) {
    if (cp < 0x80) {
        if (cp == ' ' || (cp >= 9 && cp <= 13)) return 0;
        return isalnum(cp) || cp == '_' ? 1 : 2;
    }
    if (cp == 0x85 || cp == 0xA0 || cp == 0x1680 || (cp >= 0x2000 && cp <= 0x200A) ||
        cp == 0x2028 || cp == 0x2029 || cp == 0x202F || cp == 0x205F || cp == 0x3000)
        return 0;
    utf8proc_category_t k = utf8proc_category(cp);
    bool word = (k >= UTF8PROC_CATEGORY_LU && k <= UTF8PROC_CATEGORY_LO) ||
                (k >= UTF8PROC_CATEGORY_MN && k <= UTF8PROC_CATEGORY_MC) ||
                (k >= UTF8PROC_CATEGORY_ND && k <= UTF8PROC_CATEGORY_NO);
    return word ? 1 : 2;
}

/* Adds the chunks of `text` to n as STR kids: each character ("chars"), or each run of
 * whitespace, of word characters or of other characters ("words"). */
static og_status *add_chunks(lk *p, ln *n, const char *text, size_t len, bool words) {
    size_t i = 0;
    while (i < len) {
        size_t j = i;
        int cls = -1;
        while (j < len) {
            utf8proc_int32_t cp;
            utf8proc_ssize_t k = utf8proc_iterate((const uint8_t *)text + j,
                                                  (utf8proc_ssize_t)(len - j), &cp);
            if (k <= 0) k = 1, cp = 0xFFFD;
            int c = word_class(cp);
            if (j > i && (!words || c != cls)) break;
            cls = c;
            j += (size_t)k;
        }
        ln *s = node(p, LN_STR, n->off);
        if (!s || !(s->text = malloc(j - i + 1))) return og_oom();
        memcpy(s->text, text + i, j - i);
        s->text[j - i] = 0;
        s->tlen = j - i;
        OG_TRY(add_kid(n, s));
        i = j;
    }
    return NULL;
}

/* %regex { "substring_chunks": [..] | "substring_words": ".." | "substring_chars": ".." }:
 * the concatenations of consecutive chunks (llguidance's structured regex). */
static og_status *read_regex_ext(lk *p, size_t at, ln **out) {
    ln tmp = {.off = p->pos};
    if (p->pos >= p->len || p->src[p->pos] != '{')
        return lk_err(p, p->pos, "%%regex needs a JSON object");
    OG_TRY(read_json(p, &tmp));
    ln *n = node(p, LN_SUB, at);
    og_status *st = n ? NULL : og_oom();
    const cJSON *f = NULL, *k;
    int fields = 0;
    cJSON_ArrayForEach(k, tmp.json) {
        if (!strcmp(k->string, "substring_chunks") || !strcmp(k->string, "substring_words") ||
            !strcmp(k->string, "substring_chars")) {
            f = k;
            fields++;
        } else if (!st) {
            st = lk_err(p, at, "%%regex: unknown field '%s'", k->string);
        }
    }
    if (!st && fields != 1)
        st = lk_err(p, at, fields ? "%%regex: only one field can be set"
                                  : "%%regex: no fields set");
    if (!st && !strcmp(f->string, "substring_chunks")) {
        if (!cJSON_IsArray(f)) st = lk_err(p, at, "%%regex: substring_chunks is not a list");
        const cJSON *e, *list = st ? NULL : f;
        cJSON_ArrayForEach(e, list) {
            if (!cJSON_IsString(e)) {
                st = lk_err(p, at, "%%regex: substring_chunks holds a non-string");
                break;
            }
            ln *c = node(p, LN_STR, at);
            if (!c || !(c->text = strdup(e->valuestring))) {
                st = og_oom();
                break;
            }
            c->tlen = strlen(e->valuestring);
            if ((st = add_kid(n, c))) break;
        }
    } else if (!st) {
        if (!cJSON_IsString(f)) st = lk_err(p, at, "%%regex: %s is not a string", f->string);
        else st = add_chunks(p, n, f->valuestring, strlen(f->valuestring),
                             !strcmp(f->string, "substring_words"));
    }
    cJSON_Delete(tmp.json);
    *out = n;
    return st;
}

static og_status *read_atom(lk *p, int depth, ln **out) {
    char buf[8];
    size_t at = p->pos;
    char c = at < p->len ? p->src[at] : 0;
    ln *n = NULL;
    if (c == '(' || c == '[') {
        if (depth >= LK_MAX_DEPTH) return lk_err(p, at, "groups nested deeper than %d", LK_MAX_DEPTH);
        p->pos++;
        ln *inner = NULL;
        OG_TRY(read_alts(p, depth + 1, &inner));
        skip_ws(p);
        char close = c == '(' ? ')' : ']';
        if (p->pos >= p->len || p->src[p->pos] != close) {
            int line, col;
            where(p, at, &line, &col);
            return lk_err(p, p->pos, "expected '%c' closing the '%c' at line %d, column %d, found %s",
                          close, c, line, col, shown(p, p->pos, buf, sizeof buf));
        }
        p->pos++;
        if (c == '(') {
            *out = inner;
            return NULL;
        }
        if (!(n = node(p, LN_REPEAT, at))) return og_oom();
        n->min = 0, n->max = 1;
        OG_TRY(add_kid(n, inner));
    } else if (c == '"') {
        if (!(n = node(p, LN_STR, at))) return og_oom();
        OG_TRY(read_string(p, n));
        if (p->pos < p->len && p->src[p->pos] == 'i' && !name_len(p, p->pos + 1)) {
            n->icase = true;
            p->pos++;
        }
        size_t save = p->pos;
        skip_ws(p);
        if (looking_at(p, "..")) {
            p->pos += 2;
            skip_ws(p);
            if (p->pos >= p->len || p->src[p->pos] != '"')
                return lk_err(p, p->pos, "expected a string after '..', found %s",
                              shown(p, p->pos, buf, sizeof buf));
            ln hi = {.off = p->pos};
            OG_TRY(read_string(p, &hi));
            long lo_cp = one_code_point(n->text, n->tlen);
            long hi_cp = one_code_point(hi.text, hi.tlen);
            free(hi.text);
            if (n->icase) return lk_err(p, at, "a range takes no flags");
            if (p->pos < p->len && name_start(p->src[p->pos]))
                return lk_err(p, p->pos, "a range takes no flags");
            if (lo_cp < 0) return lk_err(p, at, "a range's start must be one character");
            if (hi_cp < 0) return lk_err(p, hi.off, "a range's end must be one character");
            if (hi_cp < lo_cp) return lk_err(p, at, "a range's end is before its start");
            n->kind = LN_RANGE;
            n->lo = (uint32_t)lo_cp, n->hi = (uint32_t)hi_cp;
        } else {
            p->pos = save;
        }
    } else if (c == '/') {
        if (!(n = node(p, LN_REGEX, at))) return og_oom();
        OG_TRY(read_regex(p, n));
    } else if (name_start(c)) {
        if (!(n = node(p, LN_NAME, at))) return og_oom();
        n->name = p->src + at;
        n->nlen = name_len(p, at);
        p->pos += n->nlen;
    } else if (c == '%') {
        size_t w = 1;
        while (at + w < p->len && isalpha((unsigned char)p->src[at + w])) w++;
        if (w == 5 && !memcmp(p->src + at, "%json", 5)) {
            p->pos += 5;
            skip_ws(p);
            if (!(n = node(p, LN_JSON, at))) return og_oom();
            OG_TRY(read_json(p, n));
        } else if (w == 6 && !memcmp(p->src + at, "%regex", 6)) {
            p->pos += 6;
            skip_ws(p);
            OG_TRY(read_regex_ext(p, at, &n));
        } else {
            return lk_err(p, at, "%.*s is not supported inside a rule", (int)w, p->src + at);
        }
    } else if (c == '<') {
        /* a special token, by name (<|im_end|>) or by ids (<[128000-128255]>): '<', no
         * white space nor '<' '>' inside, '>' */
        size_t e = at + 1;
        while (e < p->len && !strchr("<> \t\r\n\f\v", p->src[e])) e++;
        if (e == at + 1 || e >= p->len || p->src[e] != '>')
            return lk_err(p, at, "expected a special token <name> or <[ids]>");
        if (!(n = node(p, LN_TOKEN, at)) || !(n->text = malloc(e + 1 - at))) return og_oom();
        memcpy(n->text, p->src + at, e + 1 - at);
        n->tlen = e + 1 - at;
        p->pos = e + 1;
    } else if (c == '@') {
        return lk_err(p, at, "references to other grammars (@name) are not supported");
    } else if (c == '~') {
        if (depth >= LK_MAX_DEPTH) return lk_err(p, at, "'~' nested deeper than %d", LK_MAX_DEPTH);
        p->pos++;
        skip_ws(p);
        if (p->pos < p->len && p->src[p->pos] == '~')
            return lk_err(p, p->pos, "expected a value after '~', found '~'");
        ln *inner = NULL;
        OG_TRY(read_atom(p, depth + 1, &inner));
        if (!(n = node(p, LN_NOT, at))) return og_oom();
        OG_TRY(add_kid(n, inner));
    } else {
        return lk_err(p, at, "expected a string, a regex, a name, '(' or '[', found %s",
                      shown(p, at, buf, sizeof buf));
    }
    *out = n;
    return NULL;
}

/* Whether the '~' at p->pos is the repetition x ~ n (a number follows), not the
 * negation of the next item. */
static bool tilde_count(const lk *p) {
    size_t i = p->pos + 1;
    while (i < p->len && (p->src[i] == ' ' || p->src[i] == '\t')) i++;
    return i < p->len && isdigit((unsigned char)p->src[i]);
}

/* An atom and its one operator: ? * + ~n ~n..m {n} {n,} {,m} {n,m}. */
static og_status *read_expr(lk *p, int depth, ln **out) {
    ln *atom = NULL;
    OG_TRY(read_atom(p, depth, &atom));
    skip_ws(p);
    size_t at = p->pos;
    char c = at < p->len ? p->src[at] : 0;
    int min, max;
    if (c == '?' || c == '*' || c == '+') {
        p->pos++;
        min = c == '+' ? 1 : 0;
        max = c == '?' ? 1 : -1;
    } else if (c == '~' && tilde_count(p)) {
        p->pos++;
        skip_ws(p);
        OG_TRY(read_number(p, &min));
        max = min;
        skip_ws(p);
        if (looking_at(p, "..")) {
            p->pos += 2;
            skip_ws(p);
            OG_TRY(read_number(p, &max));
        }
    } else if (c == '{') {
        p->pos++;
        skip_ws(p);
        min = 0, max = -1;
        bool has_min = false;
        if (p->pos < p->len && isdigit((unsigned char)p->src[p->pos])) {
            OG_TRY(read_number(p, &min));
            has_min = true;
        }
        skip_ws(p);
        if (p->pos < p->len && p->src[p->pos] == ',') {
            p->pos++;
            skip_ws(p);
            if (p->pos < p->len && isdigit((unsigned char)p->src[p->pos]))
                OG_TRY(read_number(p, &max));
        } else if (has_min) {
            max = min;
        } else {
            return lk_err(p, at, "expected a repetition count {n}, {n,}, {,m} or {n,m} "
                                 "(templates are not supported)");
        }
        skip_ws(p);
        if (p->pos >= p->len || p->src[p->pos] != '}')
            return lk_err(p, p->pos, "expected '}' closing the repetition count");
        p->pos++;
        /* llguidance refuses it in this form (x~0 is allowed: nothing) */
        if (max == 0) return lk_err(p, at, "a repetition {..} cannot end at 0");
    } else {
        *out = atom;
        return NULL;
    }
    if (max >= 0 && max < min)
        return lk_err(p, at, "repetition's upper bound %d is below its lower bound %d", max, min);
    ln *r = node(p, LN_REPEAT, atom->off);
    if (!r) return og_oom();
    r->min = min, r->max = max;
    OG_TRY(add_kid(r, atom));
    *out = r;
    return NULL;
}

static bool seq_ends(const lk *p) {
    if (at_stmt_end(p)) return true;
    char c = p->src[p->pos];
    return c == '|' || c == ')' || c == ']' || c == '&' || looking_at(p, "->");
}

/* alternatives: expansion ('->' alias)? ('|' expansion ('->' alias)?)* */
static og_status *read_alts(lk *p, int depth, ln **out) {
    ln *alt = node(p, LN_ALT, p->pos);
    if (!alt) return og_oom();
    for (;;) {
        ln *seq = node(p, LN_SEQ, p->pos), *conj = NULL;
        if (!seq) return og_oom();
        for (;;) {
            skip_ws(p);
            if (p->pos < p->len && p->src[p->pos] == '&') {
                /* A & B: binds tighter than '|', looser than a sequence */
                if (!conj) { /* an empty side matches the empty string (llguidance) */
                    size_t off = seq->n ? seq->kids[0]->off : seq->off;
                    if (!(conj = node(p, LN_AND, off))) return og_oom();
                    OG_TRY(add_kid(conj, seq));
                }
                p->pos++;
                if (!(seq = node(p, LN_SEQ, p->pos))) return og_oom();
                OG_TRY(add_kid(conj, seq));
                continue;
            }
            if (seq_ends(p)) break;
            ln *e = NULL;
            OG_TRY(read_expr(p, depth, &e));
            OG_TRY(add_kid(seq, e));
        }
        if (conj) {
            ln *one = node(p, LN_SEQ, conj->off);
            if (!one) return og_oom();
            OG_TRY(add_kid(one, conj));
            seq = one;
        }
        /* An alias names the tree node, which has no bearing on the language. */
        if (looking_at(p, "->")) {
            p->pos += 2;
            skip_ws(p);
            size_t n = name_len(p, p->pos);
            if (!n) return lk_err(p, p->pos, "expected a name after '->'");
            bool terminal = false;
            OG_TRY(name_kind(p, p->src + p->pos, n, p->pos, &terminal));
            if (terminal)
                return lk_err(p, p->pos, "an alias is a rule name (lowercase), not '%.*s'", (int)n,
                              p->src + p->pos);
            p->pos += n;
            skip_ws(p);
        }
        OG_TRY(add_kid(alt, seq));
        if (p->pos < p->len && p->src[p->pos] == '|') {
            p->pos++;
            continue;
        }
        break;
    }
    *out = alt;
    return NULL;
}

static og_status *add_def(lk *p, const char *name, size_t n, size_t at, bool terminal, ln *body,
                          const char *common_re) {
    if (!grow((void **)&p->defs, &p->cap_defs, p->n_defs + 1, sizeof *p->defs)) return og_oom();
    p->defs[p->n_defs++] = (ldef){.name = name, .nlen = n, .off = at, .terminal = terminal,
                                  .body = body, .common_re = common_re, .lexeme = -1,
                                  .max_tokens = -1};
    return NULL;
}

static og_status *read_import(lk *p, size_t at) {
    skip_ws(p);
    size_t mod_at = p->pos;
    size_t m = name_len(p, p->pos);
    if (m != 6 || memcmp(p->src + p->pos, "common", 6)) {
        size_t end = p->pos;
        while (end < p->len && !isspace((unsigned char)p->src[end]) && p->src[end] != '(') end++;
        return lk_err(p, mod_at, "only %%import common is supported, not '%.*s'",
                      (int)(end - mod_at), p->src + mod_at);
    }
    p->pos += m;
    /* Names and the alias each takes: %import common.A [-> B] or common (A, B, ...). */
    const char *names[64], *aliases[64];
    size_t lens[64], alens[64], offs[64], n = 0;
    if (p->pos < p->len && p->src[p->pos] == '.') {
        p->pos++;
        offs[0] = p->pos;
        lens[0] = name_len(p, p->pos);
        if (!lens[0]) return lk_err(p, p->pos, "expected a name after 'common.'");
        names[0] = aliases[0] = p->src + p->pos;
        alens[0] = lens[0];
        p->pos += lens[0];
        n = 1;
        skip_ws(p);
        if (looking_at(p, "->")) {
            p->pos += 2;
            skip_ws(p);
            alens[0] = name_len(p, p->pos);
            if (!alens[0]) return lk_err(p, p->pos, "expected a name after '->'");
            aliases[0] = p->src + p->pos;
            p->pos += alens[0];
        }
    } else {
        skip_ws(p);
        if (p->pos >= p->len || p->src[p->pos] != '(')
            return lk_err(p, p->pos, "expected '.NAME' or '(NAME, ...)' after %%import common");
        p->pos++;
        for (;;) {
            skip_ws(p);
            size_t l = name_len(p, p->pos);
            if (!l) return lk_err(p, p->pos, "expected a name in %%import common (...)");
            if (n == 64) return lk_err(p, p->pos, "over 64 names in one %%import");
            names[n] = aliases[n] = p->src + p->pos;
            lens[n] = alens[n] = l;
            offs[n++] = p->pos;
            p->pos += l;
            skip_ws(p);
            if (p->pos < p->len && p->src[p->pos] == ',') {
                p->pos++;
                continue;
            }
            if (p->pos < p->len && p->src[p->pos] == ')') {
                p->pos++;
                break;
            }
            return lk_err(p, p->pos, "expected ',' or ')' in %%import common (...)");
        }
    }
    for (size_t i = 0; i < n; i++) {
        const lark_common_term *t = lark_common_find(names[i], lens[i]);
        if (!t) {
            sbuf all = {0};
            for (size_t k = 0; k < lark_common_count(); k++) {
                if (k) sb_str(&all, ", ");
                sb_str(&all, lark_common_at(k)->name);
            }
            og_status *st = lk_err(p, offs[i], "common has no terminal '%.*s' (it has %s)",
                                   (int)lens[i], names[i], all.p ? all.p : "");
            free(all.p);
            return st;
        }
        /* A lowercase alias (common.WS -> ws) is a rule of that one terminal: in rules the
         * same lexeme, so it is kept as the terminal. */
        bool terminal = false;
        OG_TRY(name_kind(p, aliases[i], alens[i], offs[i], &terminal));
        OG_TRY(add_def(p, aliases[i], alens[i], at, true, NULL, t->regex));
    }
    return NULL;
}

/* %llguidance {options}: the marker that the grammar is meant for llguidance. Of its
 * options only no_forcing is taken (we never narrow a mask to a forced token, so either
 * value is our behaviour); the others change the language or the lexer's rules. */
static og_status *read_llguidance(lk *p) {
    skip_ws(p);
    size_t at = p->pos;
    ln tmp = {0};
    OG_TRY(read_json(p, &tmp));
    og_status *st = NULL;
    if (!cJSON_IsObject(tmp.json))
        st = lk_err(p, at, "%%llguidance takes a JSON object");
    for (const cJSON *o = tmp.json->child; o && !st; o = o->next)
        if (strcmp(o->string, "no_forcing") || !cJSON_IsBool(o))
            st = lk_err(p, at, "%%llguidance option '%s' is not supported", o->string);
    cJSON_Delete(tmp.json);
    return st;
}

/* A rule's attributes, as llguidance takes them: lazy; capture and capture="name" and
 * stop_capture="name" (no bearing on the language); suffix=X with X a terminal (a string,
 * a regex or a terminal's name): the body and then X as one lazy lexeme, which is the
 * language llguidance gives it; stop="..." (a non-empty string): the same lexeme with the
 * string hidden (lexer.h's glex_attrs: it starts what follows where that begins with it,
 * else it ends the token); stop=X with X a regex, a "..."i string or a terminal's name:
 * the same for each of X's strings where they are finitely many and of one length
 * (compile_gen; else refused by name); stop="": the body one greedy lexeme that a stop id
 * may also end (the output going on after it); max_tokens=N: the body one lexeme that
 * spans at most N tokens. One of lazy, suffix and stop (lazy after a non-empty one is
 * nothing more; either after lazy is an error, as in llguidance). Every other attribute
 * (temperature) is refused by name. */
typedef struct lattrs {
    bool lazy, eos;
    ln *suffix, *stop;
    int max_tokens;
} lattrs;

static og_status *read_attributes(lk *p, lattrs *a) {
    char buf[8];
    p->pos++;
    for (;;) {
        skip_ws(p);
        if (p->pos < p->len && p->src[p->pos] == ']') break;
        size_t at = p->pos, n = name_len(p, at);
        if (!n)
            return lk_err(p, at, "expected an attribute name, found %s",
                          shown(p, at, buf, sizeof buf));
        bool is_lazy = n == 4 && !memcmp(p->src + at, "lazy", 4);
        bool is_suffix = n == 6 && !memcmp(p->src + at, "suffix", 6);
        bool is_stop = n == 4 && !memcmp(p->src + at, "stop", 4);
        bool is_max = n == 10 && !memcmp(p->src + at, "max_tokens", 10);
        bool is_capture = (n == 7 && !memcmp(p->src + at, "capture", 7)) ||
                          (n == 12 && !memcmp(p->src + at, "stop_capture", 12));
        if (!is_lazy && !is_suffix && !is_stop && !is_max && !is_capture)
            return lk_err(p, at, "rule attribute '%.*s' is not supported", (int)n, p->src + at);
        p->pos += n;
        skip_ws(p);
        if (is_lazy && p->pos < p->len && p->src[p->pos] == '=')
            return lk_err(p, p->pos, "lazy takes no value");
        if (is_lazy && a->eos)
            return lk_err(p, at, "a rule takes one of lazy, stop= and suffix=");
        if ((is_suffix || is_stop) && (a->lazy || a->suffix || a->stop || a->eos))
            return lk_err(p, at, "a rule takes one of lazy, stop= and suffix=");
        a->lazy |= is_lazy || is_suffix || is_stop;
        if (is_suffix || is_stop) {
            if (p->pos >= p->len || p->src[p->pos] != '=')
                return lk_err(p, p->pos, "%s takes a terminal (%s=\"...\")",
                              is_stop ? "stop" : "suffix", is_stop ? "stop" : "suffix");
            p->pos++;
            skip_ws(p);
            size_t vat = p->pos;
            ln *x = NULL;
            OG_TRY(read_atom(p, 1, &x));
            bool term = x->kind == LN_STR || x->kind == LN_REGEX ||
                        (x->kind == LN_NAME && x->nlen && isupper((unsigned char)x->name[0]));
            if (!term)
                return lk_err(p, vat, "%s takes a terminal: a string, a regex or a "
                                      "TERMINAL's name", is_stop ? "stop" : "suffix");
            if (is_stop && x->kind == LN_STR && !x->tlen) /* stop="": not lazy, ended by a stop id too */
                a->eos = true, a->lazy = false;
            else if (is_stop) a->stop = x;
            else a->suffix = x;
            skip_ws(p);
        } else if (is_max) {
            if (p->pos >= p->len || p->src[p->pos] != '=')
                return lk_err(p, p->pos, "max_tokens takes a number (max_tokens=N)");
            p->pos++;
            skip_ws(p);
            OG_TRY(read_number(p, &a->max_tokens));
            skip_ws(p);
        } else if (p->pos < p->len && p->src[p->pos] == '=') {
            p->pos++;
            skip_ws(p);
            if (p->pos >= p->len || p->src[p->pos] != '"')
                return lk_err(p, p->pos, "capture= takes a string, found %s",
                              shown(p, p->pos, buf, sizeof buf));
            ln name = {0};
            OG_TRY(read_string(p, &name));
            free(name.text);
            skip_ws(p);
        }
        if (p->pos < p->len && p->src[p->pos] == ',') {
            p->pos++;
            continue;
        }
        if (p->pos < p->len && p->src[p->pos] == ']') break;
        return lk_err(p, p->pos, "expected ',' or ']' in the rule's attributes, found %s",
                      shown(p, p->pos, buf, sizeof buf));
    }
    p->pos++;
    return NULL;
}

static og_status *read_statement(lk *p) {
    char buf[8];
    size_t at = p->pos;
    if (p->src[at] == '%') {
        size_t w = 1;
        while (at + w < p->len && (isalpha((unsigned char)p->src[at + w]) || p->src[at + w] == '_'))
            w++;
        const char *d = p->src + at + 1;
        size_t dl = w - 1;
        p->pos += w;
        if (dl == 6 && !memcmp(d, "ignore", 6)) {
            skip_ws(p);
            ln *e = NULL;
            OG_TRY(read_alts(p, 0, &e));
            if (!grow((void **)&p->ignores, &p->cap_ignores, p->n_ignores + 1, sizeof *p->ignores))
                return og_oom();
            p->ignores[p->n_ignores++] = e;
            return NULL;
        }
        if (dl == 6 && !memcmp(d, "import", 6)) return read_import(p, at);
        if (dl == 10 && !memcmp(d, "llguidance", 10)) return read_llguidance(p);
        if ((dl == 7 && !memcmp(d, "declare", 7)) || (dl == 8 && !memcmp(d, "override", 8)) ||
            (dl == 6 && !memcmp(d, "extend", 6)))
            return lk_err(p, at, "%%%.*s is not supported", (int)dl, d);
        return lk_err(p, at, "unknown directive '%%%.*s' (%%ignore, %%import common, %%llguidance)",
                      (int)dl, d);
    }
    /* ?rule inlines and !rule keeps tokens in Lark's tree: the same language. */
    if (p->pos < p->len && p->src[p->pos] == '!') p->pos++;
    if (p->pos < p->len && p->src[p->pos] == '?') p->pos++;
    size_t name_at = p->pos;
    size_t n = name_len(p, p->pos);
    if (!n)
        return lk_err(p, p->pos, "expected a rule, a terminal or a directive, found %s",
                      shown(p, p->pos, buf, sizeof buf));
    const char *name = p->src + p->pos;
    bool terminal = false;
    OG_TRY(name_kind(p, name, n, name_at, &terminal));
    p->pos += n;
    skip_ws(p);
    char c = p->pos < p->len ? p->src[p->pos] : 0;
    if (c == '{') return lk_err(p, p->pos, "templates (rules with parameters) are not supported");
    lattrs attrs = {.max_tokens = -1};
    if (c == '[') {
        if (terminal) return lk_err(p, p->pos, "a terminal takes no attributes");
        OG_TRY(read_attributes(p, &attrs));
        skip_ws(p);
        c = p->pos < p->len ? p->src[p->pos] : 0;
    }
    if (c == '.') return lk_err(p, p->pos, "priorities are not supported");
    if (c != ':')
        return lk_err(p, p->pos, "expected ':' after '%.*s', found %s", (int)n, name,
                      shown(p, p->pos, buf, sizeof buf));
    p->pos++;
    ln *body = NULL;
    OG_TRY(read_alts(p, 0, &body));
    OG_TRY(add_def(p, name, n, name_at, terminal, body, NULL));
    p->defs[p->n_defs - 1].lazy = attrs.lazy;
    p->defs[p->n_defs - 1].suffix = attrs.suffix;
    p->defs[p->n_defs - 1].stop = attrs.stop;
    p->defs[p->n_defs - 1].max_tokens = attrs.max_tokens;
    p->defs[p->n_defs - 1].eos = attrs.eos;
    return NULL;
}

static int def_cmp(const void *a, const void *b) {
    const ldef *x = *(ldef *const *)a, *y = *(ldef *const *)b;
    size_t n = x->nlen < y->nlen ? x->nlen : y->nlen;
    int c = memcmp(x->name, y->name, n);
    if (c) return c;
    if (x->nlen != y->nlen) return x->nlen < y->nlen ? -1 : 1;
    return x->off < y->off ? -1 : x->off > y->off;
}

static og_status *read_all(lk *p) {
    for (;;) {
        skip_lines(p);
        if (p->pos >= p->len) break;
        OG_TRY(read_statement(p));
        skip_ws(p);
        if (!at_stmt_end(p)) {
            char buf[8];
            return lk_err(p, p->pos, "unexpected %s", shown(p, p->pos, buf, sizeof buf));
        }
    }
    if (!p->n_defs) return NULL;
    if (!(p->sorted = malloc(p->n_defs * sizeof *p->sorted))) return og_oom();
    for (size_t i = 0; i < p->n_defs; i++) p->sorted[i] = &p->defs[i];
    qsort(p->sorted, p->n_defs, sizeof *p->sorted, def_cmp);
    for (size_t i = 1; i < p->n_defs; i++) {
        const ldef *a = p->sorted[i - 1], *b = p->sorted[i];
        if (a->nlen == b->nlen && !memcmp(a->name, b->name, a->nlen))
        {
            int line, col;
            where(p, a->off, &line, &col);
            return lk_err(p, b->off, "%s '%.*s' is defined twice (first at line %d)",
                          b->terminal ? "terminal" : "rule", (int)b->nlen, b->name, line);
        }
    }
    return NULL;
}

static ldef *lookup(const lk *p, const char *name, size_t n) {
    size_t lo = 0, hi = p->n_defs;
    ldef key = {.name = name, .nlen = n, .off = 0};
    const ldef *kp = &key;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        int c = def_cmp(&p->sorted[mid], &kp);
        if (c < 0) lo = mid + 1;
        else hi = mid;
    }
    if (lo < p->n_defs && p->sorted[lo]->nlen == n && !memcmp(p->sorted[lo]->name, name, n))
        return p->sorted[lo];
    return NULL;
}

/* ---- terminals: one regular expression each ----------------------------------------- */

static og_status *term_regex(lk *p, ldef *d);

static void put_escaped(sbuf *b, const char *s, size_t n) {
    size_t need = glex_escape((const uint8_t *)s, n, NULL, 0);
    if (b->oom || !grow((void **)&b->p, &b->cap, b->len + need + 1, 1)) {
        b->oom = true;
        return;
    }
    glex_escape((const uint8_t *)s, n, b->p + b->len, need + 1);
    b->len += need;
    b->p[b->len] = 0;
}

/* A string as a regular expression; "..."i under the lexer's (?i), which folds case
 * beyond ASCII as llguidance does ("\u00e9"i matches "\u00c9"). */
static void put_string(sbuf *b, const ln *n) {
    if (n->icase) sb_str(b, "(?i:");
    put_escaped(b, n->text, n->tlen);
    if (n->icase) sb_str(b, ")");
}

static void put_regex(sbuf *b, const ln *n) {
    sb_str(b, "(?");
    sb_str(b, n->flags);
    sb_str(b, ":");
    sb_put(b, n->text, n->tlen);
    sb_str(b, ")");
}

static void put_range(sbuf *b, uint32_t lo, uint32_t hi) {
    char t[48];
    snprintf(t, sizeof t, "[\\u{%X}-\\u{%X}]", (unsigned)lo, (unsigned)hi);
    sb_str(b, t);
}

/* Writes node `n` of a terminal (or %ignore) as a regular expression; `ctx` names what
 * is being written for messages. */
static og_status *put_term(lk *p, sbuf *b, const ln *n, const char *ctx) {
    switch (n->kind) {
    case LN_ALT:
        if (n->n == 1) return put_term(p, b, n->kids[0], ctx);
        sb_str(b, "(?:");
        for (size_t i = 0; i < n->n; i++) {
            if (i) sb_str(b, "|");
            OG_TRY(put_term(p, b, n->kids[i], ctx));
        }
        sb_str(b, ")");
        break;
    case LN_SEQ:
        for (size_t i = 0; i < n->n; i++) OG_TRY(put_term(p, b, n->kids[i], ctx));
        break;
    case LN_STR:
        put_string(b, n);
        break;
    case LN_REGEX:
        put_regex(b, n);
        break;
    case LN_RANGE:
        put_range(b, n->lo, n->hi);
        break;
    case LN_NAME: {
        ldef *d = lookup(p, n->name, n->nlen);
        if (!d) return lk_err(p, n->off, "unknown name '%.*s'", (int)n->nlen, n->name);
        if (!d->terminal)
            return lk_err(p, n->off, "%s cannot use rule '%.*s' (only strings, regexes and "
                                     "terminals)",
                          ctx, (int)n->nlen, n->name);
        OG_TRY(term_regex(p, d));
        p->ext |= d->ext;
        sb_str(b, "(?:");
        sb_put(b, d->re, d->re_len);
        sb_str(b, ")");
        break;
    }
    case LN_REPEAT: {
        sb_str(b, "(?:");
        OG_TRY(put_term(p, b, n->kids[0], ctx));
        sb_str(b, ")");
        char q[32];
        if (n->min == 0 && n->max == 1) snprintf(q, sizeof q, "?");
        else if (n->min == 0 && n->max < 0) snprintf(q, sizeof q, "*");
        else if (n->min == 1 && n->max < 0) snprintf(q, sizeof q, "+");
        else if (n->max < 0) snprintf(q, sizeof q, "{%d,}", n->min);
        else if (n->max == n->min) snprintf(q, sizeof q, "{%d}", n->min);
        else snprintf(q, sizeof q, "{%d,%d}", n->min, n->max);
        sb_str(b, q);
        break;
    }
    case LN_AND:
    case LN_NOT:
    case LN_SUB:
        p->ext = true;
        sb_str(b, n->kind == LN_AND ? "(?&" : n->kind == LN_NOT ? "(?~" : "(?*");
        for (size_t i = 0; i < n->n; i++) {
            if (i) sb_str(b, "&&");
            if (n->kind == LN_SUB) {
                put_escaped(b, n->kids[i]->text, n->kids[i]->tlen);
            } else {
                sb_str(b, "(?:");
                OG_TRY(put_term(p, b, n->kids[i], ctx));
                sb_str(b, ")");
            }
        }
        sb_str(b, ")");
        break;
    case LN_JSON:
        return lk_err(p, n->off, "%%json cannot be used in %s", ctx);
    case LN_TOKEN:
        return lk_err(p, n->off, "special tokens (like \"%.*s\") cannot be used in terminals",
                      (int)n->tlen, n->text);
    }
    if (b->oom) return og_oom();
    if (b->len > LK_MAX_REGEX)
        return lk_err(p, n->off, "%s grows past %zu bytes of regular expression", ctx,
                      LK_MAX_REGEX);
    return NULL;
}

/* The terminal's regular expression, its terminals inlined (once; a cycle is refused). */
static og_status *term_regex(lk *p, ldef *d) {
    if (d->state == 2) return NULL;
    if (d->state == 1)
        return lk_err(p, d->off, "terminal '%.*s' refers to itself (terminals are regular)",
                      (int)d->nlen, d->name);
    d->state = 1;
    sbuf b = {0};
    sb_put(&b, "", 0);
    if (d->common_re) {
        sb_str(&b, d->common_re);
    } else {
        char ctx[160];
        snprintf(ctx, sizeof ctx, "terminal '%.*s'", (int)(d->nlen < 100 ? d->nlen : 100), d->name);
        bool outer = p->ext;
        p->ext = false;
        og_status *st = put_term(p, &b, d->body, ctx);
        d->ext = p->ext;
        p->ext = outer || d->ext;
        if (st) {
            free(b.p);
            return st;
        }
    }
    if (b.oom) return og_oom();
    d->re = b.p;
    d->re_len = b.len;
    d->state = 2;
    return NULL;
}

static og_status *term_lexeme(lk *p, ldef *d, int *id) {
    if (d->lexeme < 0) {
        OG_TRY(term_regex(p, d));
        char what[160];
        snprintf(what, sizeof what, "terminal %.*s", (int)(d->nlen < 100 ? d->nlen : 100), d->name);
        OG_TRY(lk_wrap(p, d->off, (d->ext ? glex_add_regex_ext : glex_add_regex)(
                                       p->lex, d->re, d->re_len, what, &d->lexeme)));
    }
    *id = d->lexeme;
    return NULL;
}

/* ---- lexemes that match the empty string -------------------------------------------
 * The matcher reads a lexeme as one or more bytes, so a regex or terminal that also
 * matches the empty string (/[a-z]*\/, A: "a"?) is split: the lexeme loses the empty
 * string (glex_exclude) and its place in rules becomes an optional nonterminal; one that
 * matches only the empty string takes no place at all. Shared ids share the split. */

static og_status *classify_empty(lk *p, int id) {
    size_t need = (size_t)id + 1;
    size_t old = p->cap_empty;
    if (need > old) {
        size_t cap = old ? old : 64;
        while (cap < need) cap *= 2;
        uint8_t *e = realloc(p->empty, cap);
        if (!e) return og_oom();
        p->empty = e;
        gsym *g = realloc(p->empty_nt, cap * sizeof *g);
        if (!g) return og_oom();
        p->empty_nt = g;
        memset(p->empty + old, LK_EMPTY_UNKNOWN, cap - old);
        p->cap_empty = cap;
    }
    if (p->empty[id] != LK_EMPTY_UNKNOWN) return NULL;
    size_t words = glex_words(p->lex);
    uint64_t *only = calloc(words, sizeof *only);
    if (!only) return og_oom();
    only[id / 64] = (uint64_t)1 << (id % 64);
    og_status *st = NULL;
    uint32_t s0 = glex_start(p->lex, only);
    if (s0 == GLEX_FAILED) {
        st = glex_error(p->lex);
    } else {
        const uint64_t *acc = glex_accepts(p->lex, s0);
        p->empty[id] = acc && (acc[id / 64] >> (id % 64) & 1) ? LK_EMPTY_ALSO : LK_EMPTY_NO;
    }
    if (!st && p->empty[id] == LK_EMPTY_ALSO) {
        st = glex_exclude(p->lex, id, (const uint8_t *)"", 0);
        uint32_t s1 = st ? GLEX_FAILED : glex_start(p->lex, only);
        if (!st && s1 == GLEX_FAILED) st = glex_error(p->lex);
        if (!st && !glex_can_extend(p->lex, s1)) p->empty[id] = LK_EMPTY_ONLY;
    }
    free(only);
    if (!st && p->empty[id] == LK_EMPTY_ALSO) {
        /* X -> empty | the lexeme */
        char name[96];
        snprintf(name, sizeof name, "%.80s (or nothing)", glex_describe(p->lex, id));
        gsym lx = GSYM_LEX(id);
        st = gcfg_nonterminal(p->cfg, name, &p->empty_nt[id]);
        if (!st) st = gcfg_add_rule(p->cfg, p->empty_nt[id], NULL, 0);
        if (!st) st = gcfg_add_rule(p->cfg, p->empty_nt[id], &lx, 1);
    }
    return st;
}

/* The symbol standing for lexeme `id` in a rule (see above); *has is false when it
 * matches only the empty string. */
static og_status *lexeme_sym(lk *p, int id, bool *has, gsym *out) {
    OG_TRY(classify_empty(p, id));
    *has = p->empty[id] != LK_EMPTY_ONLY;
    *out = p->empty[id] == LK_EMPTY_ALSO ? p->empty_nt[id] : GSYM_LEX(id);
    return NULL;
}

/* ---- rules: nonterminals ------------------------------------------------------------ */

typedef struct symvec {
    gsym *v;
    size_t n, cap;
} symvec;

static og_status *push_sym(symvec *s, gsym g) {
    if (!grow((void **)&s->v, &s->cap, s->n + 1, sizeof *s->v)) return og_oom();
    s->v[s->n++] = g;
    return NULL;
}

static og_status *new_nt(lk *p, const ldef *ctx, const char *suffix, gsym *out) {
    char name[160];
    snprintf(name, sizeof name, "%.*s%s", (int)(ctx->nlen < 100 ? ctx->nlen : 100), ctx->name,
             suffix);
    return gcfg_nonterminal(p->cfg, name, out);
}

static og_status *rule_nt(lk *p, ldef *d, gsym *out) {
    if (!d->state) {
        OG_TRY(new_nt(p, d, "", &d->nt));
        if (!grow((void **)&p->queue, &p->cap_queue, p->n_queue + 1, sizeof *p->queue))
            return og_oom();
        p->queue[p->n_queue++] = d;
        d->state = 1;
    }
    *out = d->nt;
    return NULL;
}

static og_status *compile_alts(lk *p, const ln *alt, gsym lhs, const ldef *ctx);

/* Sorts and merges ranges r[0 .. 2n) (pairs) in place; the count of pairs left. */
static size_t merge_ranges(uint32_t *r, size_t n) {
    for (size_t i = 1; i < n; i++) /* insertion sort by low bound: a grammar's few ranges */
        for (size_t j = i; j > 0 && r[2 * (j - 1)] > r[2 * j]; j--) {
            uint32_t lo = r[2 * j], hi = r[2 * j + 1];
            r[2 * j] = r[2 * (j - 1)], r[2 * j + 1] = r[2 * (j - 1) + 1];
            r[2 * (j - 1)] = lo, r[2 * (j - 1) + 1] = hi;
        }
    size_t m = 0;
    for (size_t i = 0; i < n; i++) {
        if (m && r[2 * i] <= r[2 * (m - 1) + 1] + 1) {
            if (r[2 * i + 1] > r[2 * (m - 1) + 1]) r[2 * (m - 1) + 1] = r[2 * i + 1];
            continue;
        }
        r[2 * m] = r[2 * i], r[2 * m + 1] = r[2 * i + 1];
        m++;
    }
    return m;
}

/* A token id at *x (decimal digits, up to '-' or e): false when there is none or it
 * passes 32 bits. */
static bool read_id(const char **x, const char *e, uint32_t *out) {
    uint64_t v = 0;
    const char *c = *x;
    for (; c < e && *c != '-'; c++) {
        if (*c < '0' || *c > '9' || (v = v * 10 + (uint64_t)(*c - '0')) > UINT32_MAX)
            return false;
    }
    *out = (uint32_t)v;
    bool some = c > *x;
    *x = c;
    return some;
}

/* The token ids of a special token as llguidance reads them: <[ids]> is a list of ids and
 * inclusive ranges "a-b" separated by ',', negated by a leading '^', or '*' for every
 * token; any other <name> is the special token whose text is exactly that (the
 * vocabulary's excluded tokens: special and control tokens). Into a lexeme of its own. */
static og_status *token_lexeme(lk *p, const ln *n, int *id) {
    if (!p->vocab) return lk_err(p, n->off, "special tokens need a vocabulary");
    const guide_vocab *v = p->vocab;
    const char *t = n->text;
    size_t len = n->tlen;
    uint32_t max = v->n ? (uint32_t)(v->n - 1) : 0;
    if (!v->n) return lk_err(p, n->off, "special tokens need a vocabulary");
    if (len < 4 || t[1] != '[' || t[len - 2] != ']') {
        for (size_t i = 0; i < v->n; i++)
            if (v->excluded[i] && v->off[i + 1] - v->off[i] == len &&
                !memcmp(v->blob + v->off[i], t, len)) {
                uint32_t r[2] = {(uint32_t)i, (uint32_t)i};
                return lk_wrap(p, n->off, glex_add_tokens(p->lex, r, 1, id));
            }
        return lk_err(p, n->off, "unknown special token: \"%.*s\"", (int)len, t);
    }
    const char *s = t + 2, *end = t + len - 2;
    bool neg = s < end && *s == '^';
    if (neg) s++;
    if (end - s == 1 && *s == '*') {
        if (neg) return lk_err(p, n->off, "negated wildcard token <[^*]> is not supported");
        uint32_t r[2] = {0, max};
        return lk_wrap(p, n->off, glex_add_tokens(p->lex, r, 1, id));
    }
    if (memchr(s, '*', (size_t)(end - s)))
        return lk_err(p, n->off, "wildcard token range '*' must not contain additional tokens");
    size_t cap = 2, m = 0;
    for (const char *c = s; c < end; c++) cap += *c == ',';
    uint32_t *r = malloc((2 * cap + 2) * sizeof *r);
    if (!r) return og_oom();
    for (const char *c = s; c <= end;) {
        const char *e = memchr(c, ',', (size_t)(end - c));
        if (!e) e = end;
        const char *x = c;
        uint32_t lo = 0, hi = 0;
        bool ok = read_id(&x, e, &lo);
        hi = lo;
        if (ok && x < e) { /* '-' then the high bound */
            x++;
            ok = read_id(&x, e, &hi) && x == e;
        }
        if (!ok || hi < lo) {
            free(r);
            return lk_err(p, n->off, "invalid token range: \"%.*s\"", (int)(e - c), c);
        }
        r[2 * m] = lo;
        r[2 * m + 1] = hi;
        m++;
        c = e + 1;
    }
    m = merge_ranges(r, m);
    if (neg) { /* the complement within the vocabulary */
        uint32_t *q = malloc((2 * m + 2) * sizeof *q);
        if (!q) {
            free(r);
            return og_oom();
        }
        size_t k = 0;
        uint64_t next = 0;
        for (size_t i = 0; i < m; i++) {
            if (r[2 * i] > next) q[2 * k] = (uint32_t)next, q[2 * k + 1] = r[2 * i] - 1, k++;
            next = (uint64_t)r[2 * i + 1] + 1;
        }
        if (next <= max) q[2 * k] = (uint32_t)next, q[2 * k + 1] = max, k++;
        free(r);
        r = q;
        m = k;
    }
    size_t kept = 0; /* ids past the vocabulary dropped */
    for (size_t i = 0; i < m; i++) {
        if (r[2 * i] > max) continue;
        r[2 * kept] = r[2 * i];
        r[2 * kept + 1] = r[2 * i + 1] > max ? max : r[2 * i + 1];
        kept++;
    }
    og_status *st = kept ? glex_add_tokens(p->lex, r, kept, id)
                         : lk_err(p, n->off, "%.*s names no token of the vocabulary (%zu "
                                              "tokens)", (int)len, t, v->n);
    free(r);
    return kept ? lk_wrap(p, n->off, st) : st;
}

/* The symbol of node `n` in a rule of `ctx`; *has is false when it derives only the
 * empty string and needs no symbol. */
static og_status *compile_sym(lk *p, const ln *n, const ldef *ctx, bool *has, gsym *out) {
    int id = -1;
    *has = true;
    switch (n->kind) {
    case LN_STR:
        if (!n->tlen) {
            *has = false;
            return NULL;
        }
        if (!n->icase) {
            OG_TRY(lk_wrap(p, n->off, glex_add_literal(p->lex, (const uint8_t *)n->text, n->tlen, &id)));
        } else {
            sbuf b = {0};
            put_string(&b, n);
            if (b.oom) return og_oom();
            og_status *st = glex_add_regex(p->lex, b.p, b.len, "string", &id);
            free(b.p);
            OG_TRY(lk_wrap(p, n->off, st));
        }
        break;
    case LN_REGEX:
        if (!n->flags[0]) {
            OG_TRY(lk_wrap(p, n->off, glex_add_regex(p->lex, n->text, n->tlen, "regex", &id)));
        } else {
            sbuf b = {0};
            put_regex(&b, n);
            if (b.oom) return og_oom();
            og_status *st = glex_add_regex(p->lex, b.p, b.len, "regex", &id);
            free(b.p);
            OG_TRY(lk_wrap(p, n->off, st));
        }
        return lexeme_sym(p, id, has, out);
    case LN_RANGE: {
        sbuf b = {0};
        put_range(&b, n->lo, n->hi);
        if (b.oom) return og_oom();
        og_status *st = glex_add_regex(p->lex, b.p, b.len, "range", &id);
        free(b.p);
        OG_TRY(lk_wrap(p, n->off, st));
        break;
    }
    case LN_NAME: {
        ldef *d = lookup(p, n->name, n->nlen);
        if (!d) {
            bool terminal = false;
            OG_TRY(name_kind(p, n->name, n->nlen, n->off, &terminal));
            return lk_err(p, n->off, "unknown %s '%.*s'", terminal ? "terminal" : "rule",
                          (int)n->nlen, n->name);
        }
        if (!d->terminal) return rule_nt(p, d, out);
        OG_TRY(term_lexeme(p, d, &id));
        return lexeme_sym(p, id, has, out);
    }
    case LN_AND:
        return lk_err(p, n->off, "& is only supported for tokens, not rules; try renaming the "
                                 "rule to UPPERCASE");
    case LN_NOT: /* in a rule as llguidance has it: a lexeme of its own */
    case LN_SUB: {
        sbuf b = {0};
        sb_put(&b, "", 0);
        OG_TRY(put_term(p, &b, n, n->kind == LN_SUB ? "%regex" : "'~'"));
        if (b.oom) return og_oom();
        og_status *st = glex_add_regex_ext(p->lex, b.p, b.len, "%regex", &id);
        free(b.p);
        OG_TRY(lk_wrap(p, n->off, st));
        return lexeme_sym(p, id, has, out);
    }
    case LN_TOKEN:
        OG_TRY(token_lexeme(p, n, &id));
        break;
    case LN_JSON: {
        int line, col;
        where(p, n->off, &line, &col);
        char at[96];
        snprintf(at, sizeof at, "lark grammar line %d, column %d: %%json", line, col);
        return guide_front_json_value(n->json, at, p->lex, p->cfg, out);
    }
    case LN_SEQ:
    case LN_ALT: {
        /* One item (or one alternative) is that item's symbol; more need a helper. */
        if (n->n == 1) return compile_sym(p, n->kids[0], ctx, has, out);
        if (n->n == 0) {
            *has = false;
            return NULL;
        }
        OG_TRY(new_nt(p, ctx, " (group)", out));
        if (n->kind == LN_ALT) return compile_alts(p, n, *out, ctx);
        const ln *only[1] = {n};
        ln one = {.kind = LN_ALT, .kids = (ln **)only, .n = 1};
        return compile_alts(p, &one, *out, ctx);
    }
    case LN_REPEAT: {
        gsym x;
        bool hx;
        OG_TRY(compile_sym(p, n->kids[0], ctx, &hx, &x));
        if (!hx || n->max == 0) {
            *has = false;
            return NULL;
        }
        symvec s = {0};
        og_status *st = NULL;
        for (int i = 0; i < n->min && !st; i++) st = push_sym(&s, x);
        gsym h = 0;
        /* x~0..m is the chain's head itself */
        if (!st && (n->min > 0 || n->max < 0)) st = new_nt(p, ctx, " (repeat)", &h);
        if (!st && n->max < 0) {
            /* H -> x^min | H x */
            st = gcfg_add_rule(p->cfg, h, s.v, s.n);
            gsym hx2[2] = {h, x};
            if (!st) st = gcfg_add_rule(p->cfg, h, hx2, 2);
        } else if (!st) {
            /* H -> x^min T(max-min), T(k) -> empty | x T(k-1), T(0) left out */
            gsym tail = 0;
            bool has_tail = false;
            for (int k = 1; k <= n->max - n->min && !st; k++) {
                gsym t;
                st = new_nt(p, ctx, " (optional)", &t);
                gsym r[2] = {x, tail};
                if (!st) st = gcfg_add_rule(p->cfg, t, NULL, 0);
                if (!st) st = gcfg_add_rule(p->cfg, t, r, has_tail ? 2 : 1);
                tail = t;
                has_tail = true;
            }
            if (!st && n->min == 0) h = tail;
            else if (!st && has_tail) st = push_sym(&s, tail);
            if (!st && n->min > 0) st = gcfg_add_rule(p->cfg, h, s.v, s.n);
        }
        free(s.v);
        OG_TRY(st);
        *out = h;
        return NULL;
    }
    }
    *out = GSYM_LEX(id);
    return NULL;
}

/* Appends the symbols of sequence `seq` to `out`; a group of one alternative is spliced
 * in rather than given a helper. */
static og_status *compile_seq(lk *p, const ln *seq, const ldef *ctx, symvec *out) {
    for (size_t i = 0; i < seq->n; i++) {
        const ln *k = seq->kids[i];
        if (k->kind == LN_ALT && k->n == 1) {
            OG_TRY(compile_seq(p, k->kids[0], ctx, out));
            continue;
        }
        bool has;
        gsym g;
        OG_TRY(compile_sym(p, k, ctx, &has, &g));
        if (has) OG_TRY(push_sym(out, g));
    }
    return NULL;
}

/* Most strings, and longest, of a stop=/regex/ (compile_gen). */
#define LK_STOP_STRINGS 256
#define LK_STOP_LEN 64

/* True when stop=X is one plain string (its bytes the hidden ones as written). */
static bool plain_stop(const ln *x) { return x->kind == LN_STR && !x->icase; }

/* The strings of stop=X for X not a plain string: finitely many, all of one length, as
 * llguidance's lookahead hides them. llguidance hides the longest part of any stop string
 * begun when one completes; where every stop string has one length L that is always L,
 * the bytes of the one that completed, so X's strings as separate hidden stops are the
 * same language and the same hidden bytes. Other stop regexes are refused by name. */
static og_status *stop_strings(lk *p, const ldef *d, const char *ctx, uint8_t **strs,
                               size_t **lens, size_t *n) {
    sbuf b = {0};
    sb_put(&b, "", 0);
    bool ext = p->ext;
    p->ext = false;
    og_status *st = put_term(p, &b, d->stop, ctx);
    if (!st && b.oom) st = og_oom();
    if (!st)
        st = glex_regex_strings(b.p, b.len, p->ext, "stop=", LK_STOP_STRINGS, LK_STOP_LEN, strs,
                                lens, n);
    p->ext = ext;
    free(b.p);
    if (st && og_status_code(st) == OG_ERR_UNSUPPORTED) {
        og_status *why = lk_err(p, d->stop->off, "%s: stop= with a regex is supported where it "
                                "matches at most %d strings of at most %d bytes (%s)", ctx,
                                LK_STOP_STRINGS, LK_STOP_LEN, og_status_message(st));
        og_status_free(st);
        return why;
    }
    if (st) return lk_wrap(p, d->stop->off, st);
    for (size_t i = 0; i < *n; i++)
        if (!(*lens)[i] || (*lens)[i] != (*lens)[0]) {
            size_t a = (*lens)[0], c = (*lens)[i];
            free(*strs);
            free(*lens);
            *strs = NULL;
            *lens = NULL;
            return lk_err(p, d->stop->off, "%s: stop= with a regex is supported where its strings "
                          "all have one length, none empty (this one has strings of %zu and %zu "
                          "bytes)", ctx, a, c);
        }
    return NULL;
}

/* A rule with [lazy], suffix=, stop= or max_tokens=: its body (terminals, strings,
 * regexes only) one lexeme, lazy unless max_tokens alone; max_tokens=0 is the empty
 * string (llguidance). A stop= that is not one plain string is one such lexeme per stop
 * string (stop_strings), each an alternative of the rule. */
static og_status *compile_gen(lk *p, ldef *d) {
    if (d->max_tokens == 0) return gcfg_add_rule(p->cfg, d->nt, NULL, 0);
    char ctx[160];
    snprintf(ctx, sizeof ctx, "rule '%.*s' (one lexeme: lazy, stop=, suffix= or max_tokens=)",
             (int)(d->nlen < 100 ? d->nlen : 100), d->name);
    sbuf b = {0};
    sb_put(&b, "", 0);
    p->ext = false;
    sb_str(&b, "(?:");
    og_status *st = put_term(p, &b, d->body, ctx);
    sb_str(&b, ")");
    uint8_t *strs = NULL;
    size_t *lens = NULL, n_stops = 1, body_len = b.len;
    if (!st && d->stop && !plain_stop(d->stop)) st = stop_strings(p, d, ctx, &strs, &lens, &n_stops);
    for (size_t k = 0; k < n_stops && !st; k++) {
        b.len = body_len;
        ln *tail = d->suffix ? d->suffix : d->stop;
        const uint8_t *hidden = NULL;
        size_t n_hidden = 0;
        if (strs) { /* stop string k of a stop regex */
            hidden = strs + k * LK_STOP_LEN;
            n_hidden = lens[k];
            sb_str(&b, "(?:");
            put_escaped(&b, (const char *)hidden, n_hidden);
            sb_str(&b, ")");
        } else if (tail) { /* suffix=X or stop="X": the body, then X */
            sb_str(&b, "(?:");
            st = put_term(p, &b, tail, ctx);
            sb_str(&b, ")");
            if (d->stop) {
                hidden = (const uint8_t *)d->stop->text;
                n_hidden = d->stop->tlen;
            }
        }
        int id = -1;
        if (!st && b.oom) st = og_oom();
        glex_attrs attrs = {
            .hidden = hidden,
            .n_hidden = n_hidden,
            .max_tokens = d->max_tokens > 0 ? (uint32_t)d->max_tokens : 0,
            .eos_ends = d->eos,
        };
        unsigned opts = (d->lazy ? GLEX_LAZY : 0) | (p->ext ? GLEX_EXT : 0);
        if (!st)
            st = lk_wrap(p, d->off, glex_add_regex_attrs(p->lex, b.p, b.len, ctx, opts, &attrs, &id));
        bool has = false;
        gsym g;
        if (!st) st = lexeme_sym(p, id, &has, &g);
        if (!st) st = gcfg_add_rule(p->cfg, d->nt, has ? &g : NULL, has ? 1 : 0);
    }
    free(b.p);
    free(strs);
    free(lens);
    return st;
}

static og_status *compile_alts(lk *p, const ln *alt, gsym lhs, const ldef *ctx) {
    for (size_t i = 0; i < alt->n; i++) {
        symvec s = {0};
        og_status *st = compile_seq(p, alt->kids[i], ctx, &s);
        if (!st) st = gcfg_add_rule(p->cfg, lhs, s.v, s.n);
        free(s.v);
        OG_TRY(st);
    }
    return NULL;
}

static og_status *compile(lk *p) {
    ldef *start = lookup(p, "start", 5);
    if (!start) return og_errorf(OG_ERR_INVALID_ARGUMENT, "lark grammar: no rule 'start'");
    gsym s;
    OG_TRY(rule_nt(p, start, &s));
    /* Rules join the queue as they are first named. */
    for (size_t i = 0; i < p->n_queue; i++) {
        ldef *d = p->queue[i];
        OG_TRY(d->lazy || d->eos || d->max_tokens >= 0 ? compile_gen(p, d)
                                             : compile_alts(p, d->body, d->nt, d));
    }
    for (size_t i = 0; i < p->n_ignores; i++) {
        sbuf b = {0};
        sb_put(&b, "", 0);
        p->ext = false;
        og_status *st = put_term(p, &b, p->ignores[i], "%ignore");
        int id = -1;
        if (!st && b.oom) st = og_oom();
        if (!st)
            st = lk_wrap(p, p->ignores[i]->off, (p->ext ? glex_add_regex_ext : glex_add_regex)(
                                                    p->lex, b.p, b.len, "%ignore", &id));
        free(b.p);
        OG_TRY(st);
        /* skipping nothing is no skip: only the non-empty strings are ignored */
        OG_TRY(classify_empty(p, id));
        if (p->empty[id] != LK_EMPTY_ONLY) OG_TRY(gcfg_add_ignore(p->cfg, id));
    }
    return gcfg_set_start(p->cfg, s);
}

og_status *guide_front_lark(const char *src, size_t len, const guide_vocab *vocab, glex *lex,
                           gcfg *cfg) {
    lk p = {.src = src, .len = len, .lex = lex, .cfg = cfg, .vocab = vocab};
    og_status *st = read_all(&p);
    if (!st) st = compile(&p);
    for (size_t i = 0; i < p.n_nodes; i++) {
        free(p.nodes[i]->kids);
        free(p.nodes[i]->text);
        cJSON_Delete(p.nodes[i]->json);
        free(p.nodes[i]);
    }
    for (size_t i = 0; i < p.n_defs; i++) free(p.defs[i].re);
    free(p.nodes);
    free(p.defs);
    free(p.sorted);
    free(p.ignores);
    free(p.queue);
    free(p.empty);
    free(p.empty_nt);
    return st;
}
