/* Regular expressions (Rust regex syntax, as llguidance takes them) to the lexer's
 * byte-level NFA: a parser to a small tree whose leaves are sets of code points, then
 * Thompson's construction where each set becomes the UTF-8 byte sequences of its ranges.
 * Unicode classes come from libutf8proc, computed once per process. */
#include "guide/regex.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <utf8proc.h>

#define CP_MAX 0x10FFFFu
#define REP_INF UINT32_MAX
#define MAX_DEPTH 200

/* ---- sets of code points: sorted, disjoint, non-adjacent [lo, hi] pairs ---- */

typedef struct cset {
    uint32_t *r; /* r[2i], r[2i+1] */
    size_t n, cap; /* pairs */
} cset;

static void cset_free(cset *s) { free(s->r); memset(s, 0, sizeof *s); }

static bool cset_push(cset *s, uint32_t lo, uint32_t hi)
{
    if (s->n == s->cap) {
        size_t cap = s->cap ? s->cap * 2 : 8;
        uint32_t *r = realloc(s->r, cap * 2 * sizeof *r);
        if (!r) return false;
        s->r = r;
        s->cap = cap;
    }
    s->r[2 * s->n] = lo;
    s->r[2 * s->n + 1] = hi;
    s->n++;
    return true;
}

static int cmp_pair(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return x < y ? -1 : x > y;
}

static void cset_norm(cset *s)
{
    if (s->n < 2) return;
    qsort(s->r, s->n, 2 * sizeof(uint32_t), cmp_pair);
    size_t w = 0;
    for (size_t i = 1; i < s->n; i++) {
        uint32_t lo = s->r[2 * i], hi = s->r[2 * i + 1];
        if (lo <= s->r[2 * w + 1] + 1) {
            if (hi > s->r[2 * w + 1]) s->r[2 * w + 1] = hi;
        } else {
            w++;
            s->r[2 * w] = lo;
            s->r[2 * w + 1] = hi;
        }
    }
    s->n = w + 1;
}

static bool cset_add_set(cset *s, const cset *o)
{
    for (size_t i = 0; i < o->n; i++)
        if (!cset_push(s, o->r[2 * i], o->r[2 * i + 1])) return false;
    cset_norm(s);
    return true;
}

/* In place: the code points of 0..CP_MAX not in s (s normalised). */
static bool cset_negate(cset *s)
{
    cset t = {0};
    uint32_t next = 0;
    for (size_t i = 0; i < s->n; i++) {
        if (s->r[2 * i] > next && !cset_push(&t, next, s->r[2 * i] - 1)) goto oom;
        next = s->r[2 * i + 1] + 1;
    }
    if (next <= CP_MAX && !cset_push(&t, next, CP_MAX)) goto oom;
    cset_free(s);
    *s = t;
    return true;
oom:
    cset_free(&t);
    return false;
}

static bool cset_copy(cset *dst, const cset *src)
{
    memset(dst, 0, sizeof *dst);
    for (size_t i = 0; i < src->n; i++)
        if (!cset_push(dst, src->r[2 * i], src->r[2 * i + 1])) return false;
    return true;
}

/* a := a && b (both normalised). */
static bool cset_intersect(cset *a, const cset *b)
{
    cset t = {0};
    size_t i = 0, j = 0;
    while (i < a->n && j < b->n) {
        uint32_t lo = a->r[2 * i] > b->r[2 * j] ? a->r[2 * i] : b->r[2 * j];
        uint32_t hi = a->r[2 * i + 1] < b->r[2 * j + 1] ? a->r[2 * i + 1] : b->r[2 * j + 1];
        if (lo <= hi && !cset_push(&t, lo, hi)) {
            cset_free(&t);
            return false;
        }
        if (a->r[2 * i + 1] < b->r[2 * j + 1]) i++;
        else j++;
    }
    cset_free(a);
    *a = t;
    return true;
}

/* a := a -- b. */
static bool cset_subtract(cset *a, const cset *b)
{
    cset nb;
    if (!cset_copy(&nb, b) || !cset_negate(&nb)) {
        cset_free(&nb);
        return false;
    }
    bool ok = cset_intersect(a, &nb);
    cset_free(&nb);
    return ok;
}

/* ---- Unicode tables, built once ---- */

enum { N_GC = 30 };
static cset g_gc[N_GC];     /* general category -> code points */
static uint32_t *g_cased;   /* code points with a case mapping, ascending */
static uint32_t *g_fold;    /* (key, cp) pairs sorted by key: the simple case classes */
static size_t g_n_cased;
static bool g_tables_ok;
static pthread_once_t g_once = PTHREAD_ONCE_INIT;

/* The representative of c's simple case class. Turkic dotted İ and dotless ı stand
 * alone: their mappings to I and i are Turkic-only (CaseFolding.txt status T), not
 * simple case folding, which Rust's (?i) uses. */
static uint32_t fold_key(uint32_t c)
{
    if (c == 0x130 || c == 0x131) return c;
    return (uint32_t)utf8proc_tolower(utf8proc_toupper((int32_t)c));
}

static void build_tables(void)
{
    int prev = -1;
    uint32_t start = 0;
    size_t cap = 4096;
    g_cased = malloc(cap * sizeof *g_cased);
    if (!g_cased) return;
    for (uint32_t c = 0; c <= CP_MAX + 1; c++) {
        int gc = c > CP_MAX ? -2 : (c >= 0xD800 && c <= 0xDFFF) ? -1
                                                                  : (int)utf8proc_category((int32_t)c);
        if (gc != prev) {
            if (prev >= 0 && !cset_push(&g_gc[prev], start, c - 1)) return;
            prev = gc;
            start = c;
        }
        if (gc < 0) continue;
        int32_t ci = (int32_t)c;
        if (utf8proc_tolower(ci) != ci || utf8proc_toupper(ci) != ci ||
            utf8proc_totitle(ci) != ci) {
            if (g_n_cased == cap) {
                uint32_t *n = realloc(g_cased, 2 * cap * sizeof *n);
                if (!n) return;
                g_cased = n;
                cap *= 2;
            }
            g_cased[g_n_cased++] = c;
        }
    }
    g_fold = malloc(2 * g_n_cased * sizeof *g_fold);
    if (!g_fold) return;
    for (size_t i = 0; i < g_n_cased; i++) {
        g_fold[2 * i] = fold_key(g_cased[i]);
        g_fold[2 * i + 1] = g_cased[i];
    }
    qsort(g_fold, g_n_cased, 2 * sizeof(uint32_t), cmp_pair);
    g_tables_ok = true;
}

static bool tables(void)
{
    pthread_once(&g_once, build_tables);
    return g_tables_ok;
}

/* Adds every code point case-equivalent to one in s (simple case folding). */
static bool cset_fold(cset *s)
{
    if (!tables()) return false;
    size_t n0 = s->n;
    for (size_t i = 0; i < n0; i++) {
        uint32_t lo = s->r[2 * i], hi = s->r[2 * i + 1];
        size_t a = 0, b = g_n_cased;
        while (a < b) {
            size_t m = (a + b) / 2;
            if (g_cased[m] < lo) a = m + 1;
            else b = m;
        }
        for (; a < g_n_cased && g_cased[a] <= hi; a++) {
            uint32_t key = fold_key(g_cased[a]);
            if (!cset_push(s, key, key)) return false;
            size_t x = 0, y = g_n_cased;
            while (x < y) {
                size_t m = (x + y) / 2;
                if (g_fold[2 * m] < key) x = m + 1;
                else y = m;
            }
            for (; x < g_n_cased && g_fold[2 * x] == key; x++)
                if (!cset_push(s, g_fold[2 * x + 1], g_fold[2 * x + 1])) return false;
        }
    }
    cset_norm(s);
    return true;
}

/* ---- the tree ---- */

enum { RN_EMPTY, RN_SET, RN_CAT, RN_ALT, RN_REP, RN_AND, RN_NOT, RN_SUB };

typedef struct rnode {
    uint8_t kind;
    uint32_t col;
    uint32_t min, max;  /* RN_REP (max REP_INF: unbounded) */
    int first, last;    /* children (RN_CAT, RN_ALT, RN_REP) */
    int next;           /* next sibling */
    cset set;           /* RN_SET */
} rnode;

typedef struct flags {
    bool i, s, x, m;
} flags;

typedef struct rparse {
    const uint8_t *s;
    size_t n, pos;
    const char *what;
    og_status *err;
    rnode *nodes;
    size_t nn, cap;
    int depth;
    bool ext;      /* the Lark terminal operators (gre_compile_ext) */
    int and_level; /* the depth at which "&&" parts an ext group's content (-1: none) */
} rparse;

static int fail(rparse *p, size_t at, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int fail(rparse *p, size_t at, const char *fmt, ...)
{
    if (p->err) return -1;
    char msg[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    p->err = og_errorf(OG_ERR_INVALID_ARGUMENT, "%s at column %zu: %s", p->what, at + 1, msg);
    return -1;
}

static int oom(rparse *p)
{
    if (!p->err) p->err = og_oom_context(og_oom(), "%s", p->what);
    return -1;
}

static int node_new(rparse *p, int kind, size_t col)
{
    if (p->nn == p->cap) {
        size_t cap = p->cap ? p->cap * 2 : 32;
        rnode *n = realloc(p->nodes, cap * sizeof *n);
        if (!n) return oom(p);
        p->nodes = n;
        p->cap = cap;
    }
    rnode *n = &p->nodes[p->nn];
    memset(n, 0, sizeof *n);
    n->kind = (uint8_t)kind;
    n->col = (uint32_t)col;
    n->first = n->last = n->next = -1;
    return (int)p->nn++;
}

static void node_append(rparse *p, int parent, int child)
{
    rnode *par = &p->nodes[parent];
    if (par->last < 0) par->first = child;
    else p->nodes[par->last].next = child;
    par->last = child;
}

/* Decodes one UTF-8 code point at p->pos; -1 on invalid UTF-8. */
static int64_t peek_cp(rparse *p, size_t *len)
{
    utf8proc_int32_t cp;
    utf8proc_ssize_t k = utf8proc_iterate(p->s + p->pos, (utf8proc_ssize_t)(p->n - p->pos), &cp);
    if (k <= 0) return -1;
    *len = (size_t)k;
    return cp;
}

static bool at_end(const rparse *p) { return p->pos >= p->n; }
static int cur(const rparse *p) { return p->pos < p->n ? p->s[p->pos] : -1; }

static void skip_space(rparse *p, const flags *f)
{
    if (!f->x) return;
    while (!at_end(p)) {
        int c = cur(p);
        if (c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v') {
            p->pos++;
        } else if (c == '#') {
            while (!at_end(p) && cur(p) != '\n') p->pos++;
        } else {
            break;
        }
    }
}

/* ---- named classes ---- */

/* The tables are built on first use: patterns without Unicode classes or (?i) never
 * pay for them (about 70 ms). */
static bool add_gc(cset *s, int gc) { return tables() && cset_add_set(s, &g_gc[gc]); }

static bool add_ranges(cset *s, const uint32_t *r, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!cset_push(s, r[2 * i], r[2 * i + 1])) return false;
    cset_norm(s);
    return true;
}

/* Unicode's White_Space property (PropList.txt). */
static const uint32_t k_space[] = {0x9,    0xD,    0x20,   0x20,   0x85,   0x85,   0xA0,
                                   0xA0,   0x1680, 0x1680, 0x2000, 0x200A, 0x2028, 0x2029,
                                   0x202F, 0x202F, 0x205F, 0x205F, 0x3000, 0x3000};
/* Join_Control, and the symbols (So) that are Other_Alphabetic: circled and squared
 * letters. The other Other_Alphabetic code points are marks (M), already in \w. */
static const uint32_t k_word_extra[] = {0x200C, 0x200D, 0x24B6, 0x24E9, 0x1F130,
                                        0x1F149, 0x1F150, 0x1F169, 0x1F170, 0x1F189};

static bool add_alpha(cset *s)
{
    static const int gcs[] = {UTF8PROC_CATEGORY_LU, UTF8PROC_CATEGORY_LL, UTF8PROC_CATEGORY_LT,
                              UTF8PROC_CATEGORY_LM, UTF8PROC_CATEGORY_LO, UTF8PROC_CATEGORY_NL};
    for (size_t i = 0; i < sizeof gcs / sizeof *gcs; i++)
        if (!add_gc(s, gcs[i])) return false;
    return add_ranges(s, k_word_extra + 4, 3);
}

/* \w: Alphabetic, marks, decimal digits, connector punctuation, Join_Control. */
static bool add_word(cset *s)
{
    static const int gcs[] = {UTF8PROC_CATEGORY_MN, UTF8PROC_CATEGORY_MC, UTF8PROC_CATEGORY_ME,
                              UTF8PROC_CATEGORY_ND, UTF8PROC_CATEGORY_PC};
    if (!add_alpha(s)) return false;
    for (size_t i = 0; i < sizeof gcs / sizeof *gcs; i++)
        if (!add_gc(s, gcs[i])) return false;
    return add_ranges(s, k_word_extra, 2);
}

typedef struct gc_name {
    const char *abbr, *name;
    uint32_t mask; /* bit per utf8proc category */
} gc_name;

#define B(x) (1u << UTF8PROC_CATEGORY_##x)
static const gc_name k_gc_names[] = {
    {"l", "letter", B(LU) | B(LL) | B(LT) | B(LM) | B(LO)},
    {"lc", "casedletter", B(LU) | B(LL) | B(LT)},
    {"lu", "uppercaseletter", B(LU)},
    {"ll", "lowercaseletter", B(LL)},
    {"lt", "titlecaseletter", B(LT)},
    {"lm", "modifierletter", B(LM)},
    {"lo", "otherletter", B(LO)},
    {"m", "mark", B(MN) | B(MC) | B(ME)},
    {"mn", "nonspacingmark", B(MN)},
    {"mc", "spacingmark", B(MC)},
    {"me", "enclosingmark", B(ME)},
    {"n", "number", B(ND) | B(NL) | B(NO)},
    {"nd", "decimalnumber", B(ND)},
    {"nl", "letternumber", B(NL)},
    {"no", "othernumber", B(NO)},
    {"p", "punctuation", B(PC) | B(PD) | B(PS) | B(PE) | B(PI) | B(PF) | B(PO)},
    {"pc", "connectorpunctuation", B(PC)},
    {"pd", "dashpunctuation", B(PD)},
    {"ps", "openpunctuation", B(PS)},
    {"pe", "closepunctuation", B(PE)},
    {"pi", "initialpunctuation", B(PI)},
    {"pf", "finalpunctuation", B(PF)},
    {"po", "otherpunctuation", B(PO)},
    {"s", "symbol", B(SM) | B(SC) | B(SK) | B(SO)},
    {"sm", "mathsymbol", B(SM)},
    {"sc", "currencysymbol", B(SC)},
    {"sk", "modifiersymbol", B(SK)},
    {"so", "othersymbol", B(SO)},
    {"z", "separator", B(ZS) | B(ZL) | B(ZP)},
    {"zs", "spaceseparator", B(ZS)},
    {"zl", "lineseparator", B(ZL)},
    {"zp", "paragraphseparator", B(ZP)},
    {"c", "other", B(CC) | B(CF) | B(CS) | B(CO) | B(CN)},
    {"cc", "control", B(CC)},
    {"cf", "format", B(CF)},
    {"cs", "surrogate", B(CS)},
    {"co", "privateuse", B(CO)},
    {"cn", "unassigned", B(CN)},
};
#undef B

/* Unicode property names match loosely: case, spaces, '_' and '-' do not count. */
static void loose(const uint8_t *s, size_t n, char *out, size_t cap)
{
    size_t w = 0;
    for (size_t i = 0; i < n && w + 1 < cap; i++) {
        uint8_t c = s[i];
        if (c == ' ' || c == '_' || c == '-') continue;
        out[w++] = (char)(c >= 'A' && c <= 'Z' ? c + 32 : c);
    }
    out[w] = 0;
}

/* \p{name}: general categories (short or long names, optionally "gc=" before), Any,
 * ASCII, Alphabetic, White_Space. Returns 0, or 1 when the name is unknown. */
static int unicode_class(const uint8_t *name, size_t n, cset *out, bool *oom_out)
{
    char k[64];
    loose(name, n, k, sizeof k);
    const char *v = k;
    if (!strncmp(v, "gc=", 3)) v += 3;
    else if (!strncmp(v, "generalcategory=", 16)) v += 16;
    bool ok = true;
    if (!strcmp(v, "any")) ok = cset_push(out, 0, CP_MAX);
    else if (!strcmp(v, "ascii")) ok = cset_push(out, 0, 0x7F);
    else if (!strcmp(v, "alphabetic") || !strcmp(v, "alpha")) ok = add_alpha(out);
    else if (!strcmp(v, "whitespace") || !strcmp(v, "wspace") || !strcmp(v, "space"))
        ok = add_ranges(out, k_space, sizeof k_space / sizeof *k_space / 2);
    else {
        size_t i = 0, nn = sizeof k_gc_names / sizeof *k_gc_names;
        while (i < nn && strcmp(v, k_gc_names[i].abbr) && strcmp(v, k_gc_names[i].name)) i++;
        if (i == nn) return 1;
        for (int g = 0; g < N_GC && ok; g++)
            if (k_gc_names[i].mask & (1u << g)) ok = add_gc(out, g);
    }
    *oom_out = !ok;
    return 0;
}

/* [:name:] ASCII classes. */
static bool ascii_class(const char *name, cset *out, bool *found)
{
    static const struct { const char *name; uint32_t r[8]; int n; } k[] = {
        {"alnum", {'0', '9', 'A', 'Z', 'a', 'z'}, 3},
        {"alpha", {'A', 'Z', 'a', 'z'}, 2},
        {"ascii", {0, 0x7F}, 1},
        {"blank", {'\t', '\t', ' ', ' '}, 2},
        {"cntrl", {0, 0x1F, 0x7F, 0x7F}, 2},
        {"digit", {'0', '9'}, 1},
        {"graph", {'!', '~'}, 1},
        {"lower", {'a', 'z'}, 1},
        {"print", {' ', '~'}, 1},
        {"punct", {'!', '/', ':', '@', '[', '`', '{', '~'}, 4},
        {"space", {'\t', '\r', ' ', ' '}, 2},
        {"upper", {'A', 'Z'}, 1},
        {"word", {'0', '9', 'A', 'Z', '_', '_', 'a', 'z'}, 4},
        {"xdigit", {'0', '9', 'A', 'F', 'a', 'f'}, 3},
    };
    for (size_t i = 0; i < sizeof k / sizeof *k; i++) {
        if (strcmp(name, k[i].name)) continue;
        *found = true;
        return add_ranges(out, k[i].r, (size_t)k[i].n);
    }
    *found = false;
    return true;
}

/* ---- escapes ---- */

enum { ESC_CP, ESC_SET, ESC_START, ESC_END };

static int hex_digits(rparse *p, size_t start, int count, uint32_t *cp)
{
    uint32_t v = 0;
    if (cur(p) == '{') {
        size_t open = p->pos++;
        int nd = 0;
        while (!at_end(p) && cur(p) != '}') {
            int c = cur(p), d = c >= '0' && c <= '9' ? c - '0'
                              : c >= 'a' && c <= 'f' ? c - 'a' + 10
                              : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
            if (d < 0) return fail(p, p->pos, "invalid hexadecimal digit");
            if (++nd > 8) return fail(p, open, "hexadecimal literal is too long");
            v = v * 16 + (uint32_t)d;
            p->pos++;
        }
        if (at_end(p)) return fail(p, open, "unclosed hexadecimal literal");
        if (nd == 0) return fail(p, open, "empty hexadecimal literal");
        p->pos++;
    } else {
        for (int i = 0; i < count; i++) {
            int c = cur(p), d = c >= '0' && c <= '9' ? c - '0'
                              : c >= 'a' && c <= 'f' ? c - 'a' + 10
                              : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
            if (d < 0) return fail(p, start, "expected %d hexadecimal digits", count);
            v = v * 16 + (uint32_t)d;
            p->pos++;
        }
    }
    if (v > CP_MAX || (v >= 0xD800 && v <= 0xDFFF))
        return fail(p, start, "hexadecimal literal is not a Unicode scalar value");
    *cp = v;
    return 0;
}

/* Reads one escape after '\' (p->pos at the backslash). */
static int parse_escape(rparse *p, bool in_class, uint32_t *cp, cset *set)
{
    size_t start = p->pos++;
    if (at_end(p)) return fail(p, start, "incomplete escape sequence");
    int c = cur(p);
    bool oomf = false;
    p->pos++;
    switch (c) {
    case 'a': *cp = 7; return ESC_CP;
    case 'f': *cp = 0xC; return ESC_CP;
    case 't': *cp = '\t'; return ESC_CP;
    case 'n': *cp = '\n'; return ESC_CP;
    case 'r': *cp = '\r'; return ESC_CP;
    case 'v': *cp = 0xB; return ESC_CP;
    case 'x': return hex_digits(p, start, 2, cp) < 0 ? -1 : ESC_CP;
    case 'u': return hex_digits(p, start, 4, cp) < 0 ? -1 : ESC_CP;
    case 'U': return hex_digits(p, start, 8, cp) < 0 ? -1 : ESC_CP;
    case 'd': case 'D':
        if (!add_gc(set, UTF8PROC_CATEGORY_ND) || (c == 'D' && !cset_negate(set))) return oom(p);
        return ESC_SET;
    case 's': case 'S':
        if (!add_ranges(set, k_space, sizeof k_space / sizeof *k_space / 2) ||
            (c == 'S' && !cset_negate(set)))
            return oom(p);
        return ESC_SET;
    case 'w': case 'W':
        if (!add_word(set) || (c == 'W' && !cset_negate(set))) return oom(p);
        return ESC_SET;
    case 'p': case 'P': {
        const uint8_t *name;
        size_t n;
        if (cur(p) == '{') {
            size_t open = p->pos++;
            while (!at_end(p) && cur(p) != '}') p->pos++;
            if (at_end(p)) return fail(p, open, "unclosed Unicode class name");
            name = p->s + open + 1;
            n = p->pos - open - 1;
            p->pos++;
        } else {
            if (at_end(p)) return fail(p, start, "incomplete Unicode class");
            name = p->s + p->pos++;
            n = 1;
        }
        if (unicode_class(name, n, set, &oomf))
            return fail(p, start, "Unicode class '%.*s' is not supported (general categories, "
                                  "Any, ASCII, Alphabetic and White_Space are)",
                        (int)n, (const char *)name);
        if (oomf || (c == 'P' && !cset_negate(set))) return oom(p);
        return ESC_SET;
    }
    case '0': case '1': case '2': case '3': case '4': case '5': case '6': case '7': case '8':
    case '9':
        return fail(p, start, "backreferences are not supported");
    case 'b': case 'B': case '<': case '>':
        return fail(p, start, "word-boundary assertions (\\%c) are not supported", c);
    case 'A':
        if (in_class) break;
        return ESC_START;
    case 'z':
        if (in_class) break;
        return ESC_END;
    default:
        if (c < 0x80 && !((c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') ||
                          (c >= 'A' && c <= 'Z'))) {
            *cp = (uint32_t)c;
            return ESC_CP;
        }
        break;
    }
    return fail(p, start, "unrecognized escape sequence");
}

/* ---- classes [...] ---- */

static int parse_class_body(rparse *p, const flags *f, cset *out);

/* One item of a class: a nested class, an escape class, [:name:], or a char or a range. */
static int parse_class_item(rparse *p, const flags *f, cset *out)
{
    size_t start = p->pos;
    int c = cur(p);
    if (c == '[') {
        if (p->pos + 1 < p->n && p->s[p->pos + 1] == ':') {
            const uint8_t *e = memchr(p->s + p->pos + 2, ']', p->n - p->pos - 2);
            if (e && e[-1] == ':' && e - 1 > p->s + p->pos + 1) {
                const uint8_t *nm = p->s + p->pos + 2;
                bool neg = *nm == '^';
                if (neg) nm++;
                char name[16];
                size_t len = (size_t)(e - 1 - nm);
                if (len < sizeof name) {
                    memcpy(name, nm, len);
                    name[len] = 0;
                    cset s = {0};
                    bool found;
                    if (!ascii_class(name, &s, &found) || (neg && !cset_negate(&s)) ||
                        !cset_add_set(out, &s)) {
                        cset_free(&s);
                        return oom(p);
                    }
                    cset_free(&s);
                    if (found) {
                        p->pos = (size_t)(e - p->s) + 1;
                        return 0;
                    }
                }
                return fail(p, start, "unknown ASCII class");
            }
        }
        p->pos++;
        cset s = {0};
        if (parse_class_body(p, f, &s) < 0 || !cset_add_set(out, &s)) {
            cset_free(&s);
            return p->err ? -1 : oom(p);
        }
        cset_free(&s);
        return 0;
    }
    uint32_t lo, hi;
    if (c == '\\') {
        cset s = {0};
        int k = parse_escape(p, true, &lo, &s);
        if (k < 0) {
            cset_free(&s);
            return -1;
        }
        if (k == ESC_SET) {
            bool ok = cset_add_set(out, &s);
            cset_free(&s);
            return ok ? 0 : oom(p);
        }
    } else {
        size_t len;
        int64_t cp = peek_cp(p, &len);
        if (cp < 0) return fail(p, p->pos, "invalid UTF-8");
        lo = (uint32_t)cp;
        p->pos += len;
    }
    hi = lo;
    skip_space(p, f);
    if (cur(p) == '-' && p->pos + 1 < p->n && p->s[p->pos + 1] != ']' &&
        p->s[p->pos + 1] != '-') {
        p->pos++;
        skip_space(p, f);
        size_t hs = p->pos;
        if (cur(p) == '\\') {
            cset s = {0};
            int k = parse_escape(p, true, &hi, &s);
            cset_free(&s);
            if (k < 0) return -1;
            if (k != ESC_CP) return fail(p, hs, "invalid range boundary, it must be a literal");
        } else if (cur(p) == '[') {
            return fail(p, hs, "invalid range boundary, it must be a literal");
        } else {
            size_t len;
            int64_t cp = peek_cp(p, &len);
            if (cp < 0) return fail(p, p->pos, "invalid UTF-8");
            hi = (uint32_t)cp;
            p->pos += len;
        }
        if (hi < lo)
            return fail(p, start, "invalid character class range, the start must be <= the end");
    }
    if (!cset_push(out, lo, hi)) return oom(p);
    cset_norm(out);
    return 0;
}

/* acc := acc <op> rhs (op 0: acc := rhs); rhs is consumed. */
static bool class_op(int op, cset *acc, cset *rhs)
{
    bool ok = true;
    if (op == 0) {
        cset_free(acc);
        *acc = *rhs;
        memset(rhs, 0, sizeof *rhs);
        return true;
    }
    if (op == '&') {
        ok = cset_intersect(acc, rhs);
    } else if (op == '-') {
        ok = cset_subtract(acc, rhs);
    } else { /* '~': symmetric difference */
        cset x = {0}, y = {0};
        ok = cset_copy(&x, acc) && cset_copy(&y, rhs) && cset_subtract(&x, rhs) &&
             cset_subtract(&y, acc) && cset_add_set(&x, &y);
        cset_free(acc);
        cset_free(&y);
        *acc = x;
    }
    cset_free(rhs);
    return ok;
}

/* After '[': items, '&&' '--' '~~' operators (left to right), up to the closing ']'. */
static int parse_class_body(rparse *p, const flags *f, cset *out)
{
    size_t open = p->pos - 1;
    if (++p->depth > MAX_DEPTH) return fail(p, open, "classes nested too deeply");
    bool neg = false;
    skip_space(p, f);
    if (cur(p) == '^') {
        neg = true;
        p->pos++;
    }
    cset acc = {0}, cur_set = {0};
    int op = 0; /* 0 none, '&', '-', '~' */
    bool first = true;
    for (;;) {
        skip_space(p, f);
        if (at_end(p)) {
            fail(p, open, "unclosed character class");
            goto err;
        }
        int c = cur(p);
        if (c == ']' && !first) break;
        first = false;
        if ((c == '&' || c == '-' || c == '~') && p->pos + 1 < p->n && p->s[p->pos + 1] == c &&
            !(c == '-' && p->pos + 2 < p->n && p->s[p->pos + 2] == ']')) {
            /* an operator: what came before is its left side */
            if (!class_op(op, &acc, &cur_set)) {
                oom(p);
                goto err;
            }
            op = c;
            p->pos += 2;
            continue;
        }
        if (parse_class_item(p, f, &cur_set) < 0) goto err;
    }
    p->pos++;
    if (!class_op(op, &acc, &cur_set)) {
        oom(p);
        goto err;
    }
    if (f->i && !cset_fold(&acc)) {
        oom(p);
        goto err;
    }
    if (neg && !cset_negate(&acc)) {
        oom(p);
        goto err;
    }
    cset_free(out);
    *out = acc;
    p->depth--;
    return 0;
err:
    cset_free(&acc);
    cset_free(&cur_set);
    return -1;
}

/* ---- expressions ---- */

/* What a concatenation knows about anchors: `^` may only come before anything that
 * consumes, `$` only after everything that does. */
typedef struct anchors {
    bool at_start; /* nothing consuming can come before this point */
    bool ended;    /* a `$` has been seen: nothing consuming may follow */
} anchors;

static int parse_alt(rparse *p, flags *f, anchors *a);

static int set_node(rparse *p, size_t col, cset *s, const flags *f)
{
    int id = node_new(p, RN_SET, col);
    if (id < 0) {
        cset_free(s);
        return -1;
    }
    if (f->i && !cset_fold(s)) {
        cset_free(s);
        return oom(p);
    }
    p->nodes[id].set = *s;
    return id;
}

/* Parses "(?flags)" or "(?flags:" after "(?"; returns 1 for a scoped group (':'), 0 for
 * flags that apply to the rest of the enclosing group. */
static int parse_flags(rparse *p, size_t open, flags *f)
{
    bool neg = false;
    for (;;) {
        if (at_end(p)) return fail(p, open, "unclosed group");
        int c = cur(p);
        size_t at = p->pos++;
        switch (c) {
        case ':': return 1;
        case ')': return 0;
        case '-':
            if (neg) return fail(p, at, "repeated negation in flags");
            neg = true;
            break;
        case 'i': f->i = !neg; break;
        case 's': f->s = !neg; break;
        case 'x': f->x = !neg; break;
        case 'm': f->m = !neg; break;
        case 'U': case 'R': case 'u': break; /* greediness, CRLF, Unicode: same language */
        default: return fail(p, at, "unrecognized flag");
        }
    }
}

/* The decimal of a counted repetition `{n,m}`: spaces around it are allowed, as in
 * Rust's regex, with or without (?x). */
static int parse_count(rparse *p, uint32_t *out)
{
    while (cur(p) == ' ') p->pos++;
    size_t start = p->pos;
    uint64_t v = 0;
    while (cur(p) >= '0' && cur(p) <= '9') {
        v = v * 10 + (uint64_t)(cur(p) - '0');
        if (v > 0xFFFFFFFEu) v = 0xFFFFFFFEu;
        p->pos++;
    }
    if (p->pos == start) return fail(p, p->pos, "repetition quantifier expects a valid decimal");
    while (cur(p) == ' ') p->pos++;
    *out = (uint32_t)v;
    return 0;
}

static int parse_concat(rparse *p, flags *f, anchors *a)
{
    int cat = node_new(p, RN_CAT, p->pos);
    if (cat < 0) return -1;
    for (;;) {
        skip_space(p, f);
        if (at_end(p) || cur(p) == '|' || cur(p) == ')') return cat;
        if (p->ext && p->and_level == p->depth && cur(p) == '&' && p->pos + 1 < p->n &&
            p->s[p->pos + 1] == '&')
            return cat;
        size_t col = p->pos;
        int c = cur(p);
        int atom = -1;
        bool consumes = true;
        if (c == '*' || c == '+' || c == '?' || c == '{')
            return fail(p, col, "repetition operator missing expression");
        if (c == '^' || c == '$') {
            p->pos++;
            if (f->m) return fail(p, col, "line anchors ((?m) with ^ or $) are not supported");
            goto anchor;
        }
        if (c == '\\') {
            cset s = {0};
            uint32_t cp;
            int k = parse_escape(p, false, &cp, &s);
            if (k < 0) {
                cset_free(&s);
                return -1;
            }
            if (k == ESC_START || k == ESC_END) {
                c = k == ESC_START ? '^' : '$';
                goto anchor;
            }
            if (k == ESC_CP && !cset_push(&s, cp, cp)) {
                cset_free(&s);
                return oom(p);
            }
            atom = set_node(p, col, &s, f);
        } else if (c == '.') {
            p->pos++;
            cset s = {0};
            bool ok = f->s ? cset_push(&s, 0, CP_MAX)
                           : cset_push(&s, 0, '\n' - 1) && cset_push(&s, '\n' + 1, CP_MAX);
            if (!ok) {
                cset_free(&s);
                return oom(p);
            }
            flags nf = *f;
            nf.i = false;
            atom = set_node(p, col, &s, &nf);
        } else if (c == '[') {
            p->pos++;
            cset s = {0};
            flags nf = *f;
            if (parse_class_body(p, &nf, &s) < 0) {
                cset_free(&s);
                return -1;
            }
            nf.i = false; /* folded inside, before negation */
            atom = set_node(p, col, &s, &nf);
        } else if (c == '(') {
            p->pos++;
            flags inner = *f;
            if (cur(p) == '?' && p->ext && p->pos + 1 < p->n &&
                (p->s[p->pos + 1] == '&' || p->s[p->pos + 1] == '~' ||
                 p->s[p->pos + 1] == '*')) {
                int k = p->s[p->pos + 1];
                p->pos += 2;
                if (++p->depth > MAX_DEPTH) return fail(p, col, "groups nested too deeply");
                int grp = node_new(p, k == '&' ? RN_AND : k == '~' ? RN_NOT : RN_SUB, col);
                if (grp < 0) return -1;
                int saved = p->and_level;
                p->and_level = p->depth;
                anchors ia = *a;
                for (;;) {
                    int part = parse_alt(p, &inner, &ia);
                    if (part < 0) return -1;
                    node_append(p, grp, part);
                    if (k != '~' && cur(p) == '&') {
                        p->pos += 2;
                        continue;
                    }
                    break;
                }
                p->and_level = saved;
                if (cur(p) != ')') return fail(p, col, "unclosed group");
                p->pos++;
                p->depth--;
                *a = ia;
                atom = grp;
                consumes = false;
                goto quantifiers;
            }
            if (cur(p) == '?') {
                p->pos++;
                int k = cur(p);
                if (k == '=' || k == '!' ||
                    (k == '<' && p->pos + 1 < p->n &&
                     (p->s[p->pos + 1] == '=' || p->s[p->pos + 1] == '!')))
                    return fail(p, col, "look-around, including look-ahead and look-behind, is "
                                        "not supported");
                if (k == 'P' || k == '<') {
                    if (k == 'P') p->pos++;
                    if (cur(p) != '<') return fail(p, col, "invalid group name");
                    while (!at_end(p) && cur(p) != '>') p->pos++;
                    if (at_end(p)) return fail(p, col, "unclosed group name");
                    p->pos++;
                } else {
                    int scoped = parse_flags(p, col, &inner);
                    if (scoped < 0) return -1;
                    if (!scoped) {
                        *f = inner; /* the rest of this group */
                        continue;
                    }
                }
            }
            if (++p->depth > MAX_DEPTH) return fail(p, col, "groups nested too deeply");
            anchors ia = *a; /* the group's content checks the anchors itself */
            atom = parse_alt(p, &inner, &ia);
            if (atom < 0) return -1;
            if (cur(p) != ')') return fail(p, col, "unclosed group");
            p->pos++;
            p->depth--;
            *a = ia;
            consumes = false;
        } else {
            size_t len;
            int64_t cp = peek_cp(p, &len);
            if (cp < 0) return fail(p, col, "invalid UTF-8");
            p->pos += len;
            cset s = {0};
            if (!cset_push(&s, (uint32_t)cp, (uint32_t)cp)) return oom(p);
            atom = set_node(p, col, &s, f);
        }
        if (atom < 0) return -1;
    quantifiers:
        /* quantifiers (they may stack: a** is a*) */
        for (;;) {
            skip_space(p, f);
            int q = cur(p);
            size_t qcol = p->pos;
            uint32_t min, max;
            if (q == '*') min = 0, max = REP_INF;
            else if (q == '+') min = 1, max = REP_INF;
            else if (q == '?') min = 0, max = 1;
            else if (q == '{') {
                p->pos++;
                while (cur(p) == ' ') p->pos++;
                if (at_end(p)) return fail(p, qcol, "unclosed counted repetition");
                if (parse_count(p, &min) < 0) return -1;
                max = min;
                if (cur(p) == ',') {
                    p->pos++;
                    while (cur(p) == ' ') p->pos++;
                    if (cur(p) == '}') max = REP_INF;
                    else if (parse_count(p, &max) < 0) return -1;
                }
                if (cur(p) != '}') return fail(p, qcol, "unclosed counted repetition");
                if (max < min)
                    return fail(p, qcol, "invalid repetition count range, the start must be <= "
                                         "the end");
                uint32_t big = max == REP_INF ? min : max;
                if (big > GRE_MAX_REPEAT)
                    return fail(p, qcol, "repetition %.*s is too large (limit %u)",
                                (int)(p->pos + 1 - qcol), (const char *)p->s + qcol,
                                GRE_MAX_REPEAT);
            } else {
                break;
            }
            p->pos++;
            if (cur(p) == '?') p->pos++; /* lazy: the same language */
            int rep = node_new(p, RN_REP, qcol);
            if (rep < 0) return -1;
            p->nodes[rep].min = min;
            p->nodes[rep].max = max;
            node_append(p, rep, atom);
            atom = rep;
        }
        if (consumes) {
            if (a->ended) goto after_end;
            a->at_start = false;
        }
        node_append(p, cat, atom);
        continue;
    anchor:
        if (c == '^' && !a->at_start)
            return fail(p, col, "^ is only supported at the start of the expression");
        if (c == '$') a->ended = true;
        continue;
    after_end:
        return fail(p, col, "$ is only supported at the end of the expression");
    }
}

static int parse_alt(rparse *p, flags *f, anchors *a)
{
    anchors in = *a;
    int first = parse_concat(p, f, a);
    if (first < 0 || cur(p) != '|') return first;
    int alt = node_new(p, RN_ALT, p->nodes[first].col);
    if (alt < 0) return -1;
    node_append(p, alt, first);
    bool all_start = a->at_start, any_end = a->ended;
    while (cur(p) == '|') {
        p->pos++;
        anchors b = in;
        int br = parse_concat(p, f, &b);
        if (br < 0) return -1;
        node_append(p, alt, br);
        all_start = all_start && b.at_start;
        any_end = any_end || b.ended;
    }
    a->at_start = all_start;
    a->ended = any_end;
    return alt;
}

/* ---- compiling to the NFA ---- */

uint32_t gnfa_add(gnfa *nfa, uint8_t kind, uint8_t lo, uint8_t hi, uint32_t out, uint32_t out2)
{
    if (nfa->n >= nfa->max) return GN_NONE;
    if (nfa->n == nfa->cap) {
        uint32_t cap = nfa->cap ? nfa->cap * 2 : 256;
        gnfa_state *s = realloc(nfa->st, (size_t)cap * sizeof *s);
        if (!s) return GN_NONE;
        nfa->st = s;
        nfa->cap = cap;
    }
    gnfa_state *s = &nfa->st[nfa->n];
    s->kind = kind;
    s->lo = lo;
    s->hi = hi;
    s->veto = 0;
    s->out = out;
    s->out2 = out2;
    return nfa->n++;
}

typedef struct rcomp {
    rparse *p;
    gnfa *nfa;
    uint32_t limit; /* nfa->n may not pass this */
    int in_rep;     /* inside a repeat's template (no repeat in a repeat) */
} rcomp;

/* UTF-8 byte sequences of a code point range: each is 1..4 byte ranges. */
typedef struct useq {
    uint8_t n, lo[4], hi[4];
} useq;

typedef struct useqs {
    useq *v;
    size_t n, cap;
} useqs;

static int enc(uint32_t c, uint8_t *b)
{
    if (c < 0x80) return b[0] = (uint8_t)c, 1;
    if (c < 0x800) return b[0] = (uint8_t)(0xC0 | c >> 6), b[1] = (uint8_t)(0x80 | (c & 0x3F)), 2;
    if (c < 0x10000)
        return b[0] = (uint8_t)(0xE0 | c >> 12), b[1] = (uint8_t)(0x80 | ((c >> 6) & 0x3F)),
               b[2] = (uint8_t)(0x80 | (c & 0x3F)), 3;
    b[0] = (uint8_t)(0xF0 | c >> 18);
    b[1] = (uint8_t)(0x80 | ((c >> 12) & 0x3F));
    b[2] = (uint8_t)(0x80 | ((c >> 6) & 0x3F));
    b[3] = (uint8_t)(0x80 | (c & 0x3F));
    return 4;
}

/* Splits [lo, hi] (no surrogates inside) until both ends encode to the same length and
 * every continuation byte spans its full range or a single prefix: then the range is one
 * sequence of byte ranges. */
static bool utf8_split(uint32_t lo, uint32_t hi, useqs *out)
{
    static const uint32_t lens[] = {0x7F, 0x7FF, 0xFFFF};
    for (int i = 0; i < 3; i++)
        if (lo <= lens[i] && hi > lens[i])
            return utf8_split(lo, lens[i], out) && utf8_split(lens[i] + 1, hi, out);
    uint8_t a[4], b[4];
    int n = enc(lo, a);
    for (int i = 1; i < n; i++) {
        uint32_t m = (1u << (6 * i)) - 1;
        if ((lo & ~m) != (hi & ~m)) {
            if ((lo & m) != 0)
                return utf8_split(lo, lo | m, out) && utf8_split((lo | m) + 1, hi, out);
            if ((hi & m) != m)
                return utf8_split(lo, (hi & ~m) - 1, out) && utf8_split(hi & ~m, hi, out);
        }
    }
    enc(hi, b);
    if (out->n == out->cap) {
        size_t cap = out->cap ? out->cap * 2 : 16;
        useq *v = realloc(out->v, cap * sizeof *v);
        if (!v) return false;
        out->v = v;
        out->cap = cap;
    }
    useq *q = &out->v[out->n++];
    q->n = (uint8_t)n;
    memcpy(q->lo, a, 4);
    memcpy(q->hi, b, 4);
    return true;
}

static bool set_seqs(const cset *s, useqs *out)
{
    for (size_t i = 0; i < s->n; i++) {
        uint32_t lo = s->r[2 * i], hi = s->r[2 * i + 1];
        if (lo <= 0xDFFF && hi >= 0xD800) { /* surrogates are not scalar values */
            if (lo < 0xD800 && !utf8_split(lo, 0xD7FF, out)) return false;
            if (hi > 0xDFFF && !utf8_split(0xE000, hi, out)) return false;
        } else if (!utf8_split(lo, hi, out)) {
            return false;
        }
    }
    return true;
}

static uint32_t add_state(rcomp *c, uint8_t kind, uint8_t lo, uint8_t hi, uint32_t out,
                          uint32_t out2)
{
    if (c->nfa->n >= c->limit) return GN_NONE;
    return gnfa_add(c->nfa, kind, lo, hi, out, out2);
}

static int too_big(rcomp *c, size_t col)
{
    if (c->nfa->n >= c->limit)
        return fail(c->p, col, "expression is too large (more than %u NFA states%s)",
                    c->limit == c->nfa->max ? c->nfa->max : GRE_MAX_STATES,
                    c->limit == c->nfa->max ? " in all lexemes" : "");
    return oom(c->p);
}

/* The states of a set: its sequences share their tails (a state per distinct
 * (range, next) pair, found with a small hash table). */
static uint32_t comp_set(rcomp *c, const rnode *nd, uint32_t next)
{
    useqs q = {0};
    if (!set_seqs(&nd->set, &q)) {
        free(q.v);
        oom(c->p);
        return GN_NONE;
    }
    if (q.n == 0) { /* the empty set: a state that leads nowhere */
        free(q.v);
        uint32_t s = add_state(c, GN_SPLIT, 0, 0, GN_NONE, GN_NONE);
        if (s == GN_NONE) too_big(c, nd->col);
        return s;
    }
    size_t hcap = 16;
    while (hcap < q.n * 8) hcap *= 2;
    uint32_t *h = malloc(hcap * 3 * sizeof *h); /* (key lo|hi<<8, next, state) */
    uint32_t *firsts = malloc(q.n * sizeof *firsts);
    uint32_t entry = GN_NONE;
    if (!h || !firsts) {
        oom(c->p);
        goto done;
    }
    memset(h, 0xFF, hcap * 3 * sizeof *h);
    for (size_t i = 0; i < q.n; i++) {
        uint32_t to = next;
        for (int k = q.v[i].n - 1; k >= 0; k--) {
            uint32_t key = (uint32_t)q.v[i].lo[k] | (uint32_t)q.v[i].hi[k] << 8;
            size_t j = ((key * 2654435761u) ^ (to * 40503u)) & (hcap - 1);
            while (h[3 * j] != GN_NONE && !(h[3 * j] == key && h[3 * j + 1] == to))
                j = (j + 1) & (hcap - 1);
            if (h[3 * j] == GN_NONE) {
                uint32_t s = add_state(c, GN_RANGE, q.v[i].lo[k], q.v[i].hi[k], to, GN_NONE);
                if (s == GN_NONE) {
                    too_big(c, nd->col);
                    goto done;
                }
                h[3 * j] = key;
                h[3 * j + 1] = to;
                h[3 * j + 2] = s;
            }
            to = h[3 * j + 2];
        }
        firsts[i] = to;
    }
    entry = firsts[q.n - 1];
    for (size_t i = q.n - 1; i-- > 0;) {
        entry = add_state(c, GN_SPLIT, 0, 0, firsts[i], entry);
        if (entry == GN_NONE) {
            too_big(c, nd->col);
            goto done;
        }
    }
done:
    free(h);
    free(firsts);
    free(q.v);
    return entry;
}

/* An upper bound of the states node `i` becomes (saturating), to refuse a repetition
 * before building it. */
static uint64_t estimate(rparse *p, int i)
{
    const rnode *nd = &p->nodes[i];
    uint64_t n = 1;
    switch (nd->kind) {
    case RN_SET:
        for (size_t k = 0; k < nd->set.n; k++) {
            uint32_t lo = nd->set.r[2 * k], hi = nd->set.r[2 * k + 1];
            n += (lo < 0x80) + 2u * (lo < 0x800 && hi >= 0x80) + 6u * (lo < 0x10000 && hi >= 0x800) +
                 12u * (hi >= 0x10000);
        }
        return n;
    case RN_CAT:
    case RN_ALT:
        for (int ch = nd->first; ch >= 0; ch = p->nodes[ch].next) {
            n += estimate(p, ch);
            if (n > (1ull << 40)) return 1ull << 40;
        }
        return n;
    case RN_REP: {
        uint64_t x = estimate(p, nd->first);
        uint64_t k = nd->max == REP_INF ? (nd->min ? (uint64_t)nd->min : 1) : nd->max;
        return x * k + k + 1;
    }
    case RN_SUB:
        for (int ch = nd->first; ch >= 0; ch = p->nodes[ch].next) {
            n += estimate(p, ch) + 2;
            if (n > (1ull << 40)) return 1ull << 40;
        }
        return n;
    case RN_AND: /* the product, at most */
        for (int ch = nd->first; ch >= 0; ch = p->nodes[ch].next) {
            n *= estimate(p, ch);
            if (n > (1ull << 40)) return 1ull << 40;
        }
        return n;
    case RN_NOT: { /* a few states per DFA state; the DFA's size unknown: a guess */
        uint64_t x = estimate(p, nd->first) * 64;
        return x > (1ull << 40) ? 1ull << 40 : x;
    }
    default:
        return 1;
    }
}

static uint32_t comp(rcomp *c, int i, uint32_t next);

/* An ext group's parts, each compiled into a scratch NFA up to a marker of its own. */
static bool comp_parts(rcomp *c, const rnode *nd, gnfa *sc, uint32_t **ent, uint32_t **end,
                       size_t *n)
{
    size_t k = 0;
    for (int ch = nd->first; ch >= 0; ch = c->p->nodes[ch].next) k++;
    *ent = malloc(sizeof **ent * (k + 1));
    *end = malloc(sizeof **end * (k + 1));
    if (!*ent || !*end) {
        oom(c->p);
        return false;
    }
    rcomp sub = {c->p, sc, sc->max};
    k = 0;
    for (int ch = nd->first; ch >= 0; ch = c->p->nodes[ch].next, k++) {
        (*end)[k] = gnfa_add(sc, GN_ACCEPT, 0, 0, (uint32_t)k, GN_NONE);
        (*ent)[k] = (*end)[k] == GN_NONE ? GN_NONE : comp(&sub, ch, (*end)[k]);
        if ((*ent)[k] == GN_NONE) {
            if (!c->p->err) too_big(c, nd->col);
            return false;
        }
    }
    *n = k;
    return true;
}

/* (?&..) and (?~..): built in a scratch NFA, then the product or the complement. */
static uint32_t comp_ext(rcomp *c, const rnode *nd, uint32_t next)
{
    gnfa sc = {.max = GRE_MAX_STATES, .plain = 1};
    uint32_t *ent = NULL, *end = NULL, out = GN_NONE;
    size_t n = 0;
    if (comp_parts(c, nd, &sc, &ent, &end, &n)) {
        uint64_t room = (uint64_t)c->nfa->n + GRE_MAX_PRODUCT;
        uint32_t limit = room < c->limit ? (uint32_t)room : c->limit;
        out = nd->kind == RN_AND ? gre_fold(&sc, ent, end, n, c->nfa, next, limit)
                                 : gre_complement(&sc, ent[0], end[0], c->nfa, next, limit);
        if (out == GN_NONE && nd->kind == RN_AND)
            fail(c->p, nd->col, "the intersection is too large (limit %u NFA states)",
                 GRE_MAX_PRODUCT);
        else if (out == GN_NONE)
            fail(c->p, nd->col, "the complement is too large (limit %u NFA states, 4096 DFA "
                 "states)", GRE_MAX_PRODUCT);
    }
    free(sc.st);
    free(ent);
    free(end);
    return out;
}

/* ---- repeats: x{min,max} with a large max as one copy of x and virtual copies ---- */

/* Most states a repeat's template may have, and the smallest max worth one. */
#define REP_TEMPLATE_MAX 65536u
#define REP_VIRTUAL_FROM 64u

static const gnfa_rep *rep_of(const gnfa *nfa, uint32_t x)
{
    uint32_t lo = 0, hi = nfa->n_reps;
    while (hi - lo > 1) {
        uint32_t mid = (lo + hi) / 2;
        if (nfa->reps[mid].vbase <= x) lo = mid;
        else hi = mid;
    }
    return hi ? &nfa->reps[lo] : NULL;
}

static uint32_t rep_entry(const gnfa_rep *r, uint32_t k)
{
    return k == 0 ? r->entry : r->vbase + (k - 1) * r->size + (r->entry - r->first);
}

const gnfa_state *gnfa_virtual(const gnfa *nfa, uint32_t x, gnfa_state *tmp)
{
    uint32_t c = 0, s = x;
    const gnfa_rep *r = NULL;
    if (x < nfa->n) { /* a repeat's end, copy 0: its repeat's index in lo, hi */
        r = &nfa->reps[nfa->st[x].lo | (uint32_t)nfa->st[x].hi << 8];
    } else {
        r = rep_of(nfa, x);
        uint32_t off = x - r->vbase;
        c = 1 + off / r->size;
        s = r->first + off % r->size;
    }
    *tmp = nfa->st[s];
    tmp->veto &= (uint8_t)~GN_REP_END;
    if (s == r->end) {
        tmp->out = c + 1 < r->max ? rep_entry(r, c + 1) : GN_NONE;
        tmp->out2 = c + 1 >= r->min ? r->after : GN_NONE;
        return tmp;
    }
    if (c) {
        uint32_t base = r->vbase + (c - 1) * r->size;
        if (tmp->out != GN_NONE && tmp->out - r->first < r->size) tmp->out = base + (tmp->out - r->first);
        if (tmp->kind == GN_SPLIT && tmp->out2 != GN_NONE && tmp->out2 - r->first < r->size)
            tmp->out2 = base + (tmp->out2 - r->first);
    }
    return tmp;
}

uint32_t gnfa_template(const gnfa *nfa, uint32_t x)
{
    if (x < nfa->n || x == GN_NONE) return x;
    const gnfa_rep *r = rep_of(nfa, x);
    return r->first + (x - r->vbase) % r->size;
}

void gnfa_truncate(gnfa *nfa, uint32_t n0)
{
    nfa->n = n0;
    while (nfa->n_reps && nfa->reps[nfa->n_reps - 1].first >= n0) {
        nfa->n_reps--;
        nfa->vnext = nfa->reps[nfa->n_reps].vbase;
    }
}

/* Whether the template's end is reached from its entry by epsilon moves alone (x can be
 * empty: its copies would all be alive at once, so it is not kept as a repeat). */
static bool template_nullable(const gnfa *nfa, uint32_t first, uint32_t entry, uint32_t end)
{
    uint32_t size = nfa->n - first, sp = 0;
    uint8_t *seen = calloc(size, 1);
    uint32_t *stack = malloc(size * sizeof *stack);
    bool found = !seen || !stack; /* out of memory: say nullable, the plain way follows */
    if (!found) {
        stack[sp++] = entry;
        seen[entry - first] = 1;
    }
    while (sp && !found) {
        uint32_t x = stack[--sp];
        if (x == end) found = true;
        const gnfa_state *st = &nfa->st[x];
        if (st->kind != GN_SPLIT || x == end) continue;
        uint32_t nx[2] = {st->out, st->out2};
        for (int k = 0; k < 2; k++)
            if (nx[k] != GN_NONE && nx[k] - first < size && !seen[nx[k] - first]) {
                seen[nx[k] - first] = 1;
                stack[sp++] = nx[k];
            }
    }
    free(seen);
    free(stack);
    return found;
}

static uint32_t comp(rcomp *c, int i, uint32_t next);

/* x{min,max} (max finite and large, or x{min,} with a large min) as a repeat: GN_NONE
 * when it is not one (then the caller copies x; an error is set only on failure). */
static uint32_t comp_repeat(rcomp *c, const rnode *nd, uint32_t next)
{
    gnfa *nfa = c->nfa;
    uint32_t min = nd->min, max = nd->max;
    bool open = max == REP_INF;
    if (nfa->plain || c->in_rep || (open ? min : max) < REP_VIRTUAL_FROM) return GN_NONE;
    if (estimate(c->p, nd->first) > REP_TEMPLATE_MAX) return GN_NONE;
    uint32_t after = next;
    if (open) { /* x{min,}: x{min} then x*, the loop one more copy */
        uint32_t loop = add_state(c, GN_SPLIT, 0, 0, GN_NONE, next);
        if (loop == GN_NONE) return too_big(c, nd->col), GN_NONE;
        uint32_t body = comp(c, nd->first, loop);
        if (body == GN_NONE) return GN_NONE;
        nfa->st[loop].out = body;
        after = loop;
        max = min;
    }
    uint32_t first = nfa->n;
    uint32_t end = add_state(c, GN_SPLIT, 0, 0, GN_NONE, after);
    if (end == GN_NONE) return too_big(c, nd->col), GN_NONE;
    c->in_rep++;
    uint32_t entry = comp(c, nd->first, end);
    c->in_rep--;
    if (entry == GN_NONE) return GN_NONE;
    uint32_t size = nfa->n - first;
    if (nfa->n_reps >= 65536 || template_nullable(nfa, first, entry, end) ||
        (uint64_t)(nfa->vnext ? nfa->vnext : GNFA_VBASE) + (uint64_t)(max - 1) * size >= GN_NONE - 1) {
        /* not a repeat: the caller compiles x{min,max} the plain way (these states
         * stay unused) */
        return GN_NONE;
    }
    if (nfa->n_reps == nfa->cap_reps) {
        uint32_t cap = nfa->cap_reps ? nfa->cap_reps * 2 : 8;
        gnfa_rep *r = realloc(nfa->reps, cap * sizeof *r);
        if (!r) return oom(c->p), GN_NONE;
        nfa->reps = r;
        nfa->cap_reps = cap;
    }
    if (!nfa->vnext) nfa->vnext = GNFA_VBASE;
    nfa->reps[nfa->n_reps++] = (gnfa_rep){first, size, entry, end, after, min, max, nfa->vnext};
    nfa->vnext += (max - 1) * size;
    nfa->st[end].veto |= GN_REP_END;
    nfa->st[end].lo = (uint8_t)((nfa->n_reps - 1) & 0xff);
    nfa->st[end].hi = (uint8_t)((nfa->n_reps - 1) >> 8);
    if (min > 0) return entry;
    uint32_t skip = add_state(c, GN_SPLIT, 0, 0, entry, after);
    if (skip == GN_NONE) too_big(c, nd->col);
    return skip;
}

static uint32_t comp(rcomp *c, int i, uint32_t next)
{
    const rnode *nd = &c->p->nodes[i];
    switch (nd->kind) {
    case RN_SET:
        return comp_set(c, nd, next);
    case RN_CAT: {
        /* children in reverse: each compiles towards the one after it */
        size_t n = 0;
        for (int ch = nd->first; ch >= 0; ch = c->p->nodes[ch].next) n++;
        if (n == 0) return next;
        int *kids = malloc(n * sizeof *kids);
        if (!kids) {
            oom(c->p);
            return GN_NONE;
        }
        n = 0;
        for (int ch = nd->first; ch >= 0; ch = c->p->nodes[ch].next) kids[n++] = ch;
        uint32_t to = next;
        while (n-- > 0 && to != GN_NONE) to = comp(c, kids[n], to);
        free(kids);
        return to;
    }
    case RN_ALT: {
        uint32_t entry = GN_NONE;
        for (int ch = nd->first; ch >= 0; ch = c->p->nodes[ch].next) {
            uint32_t e = comp(c, ch, next);
            if (e == GN_NONE) return GN_NONE;
            entry = entry == GN_NONE ? e : add_state(c, GN_SPLIT, 0, 0, e, entry);
            if (entry == GN_NONE) {
                too_big(c, nd->col);
                return GN_NONE;
            }
        }
        return entry;
    }
    case RN_REP: {
        uint32_t r = comp_repeat(c, nd, next);
        if (r != GN_NONE || c->p->err) return r;
        uint64_t est = estimate(c->p, i);
        if (est > (uint64_t)(c->limit - c->nfa->n)) {
            fail(c->p, nd->col, "repetition is too large (about %llu NFA states, limit %u)",
                 (unsigned long long)est, c->limit - c->nfa->n);
            return GN_NONE;
        }
        uint32_t to = next, min = nd->min;
        if (nd->max == REP_INF) {
            uint32_t loop = add_state(c, GN_SPLIT, 0, 0, GN_NONE, next);
            if (loop == GN_NONE) {
                too_big(c, nd->col);
                return GN_NONE;
            }
            uint32_t body = comp(c, nd->first, loop);
            if (body == GN_NONE) return GN_NONE;
            c->nfa->st[loop].out = body;
            to = loop;
            /* x{k,}: the loop's body is the last mandatory copy (x+ is one copy of x,
             * so nested x++ stays linear) */
            if (min > 0) {
                to = body;
                min--;
            }
        } else {
            for (uint32_t k = nd->min; k < nd->max; k++) {
                uint32_t body = comp(c, nd->first, to);
                if (body == GN_NONE) return GN_NONE;
                to = add_state(c, GN_SPLIT, 0, 0, body, next);
                if (to == GN_NONE) {
                    too_big(c, nd->col);
                    return GN_NONE;
                }
            }
        }
        for (uint32_t k = 0; k < min; k++) {
            to = comp(c, nd->first, to);
            if (to == GN_NONE) return GN_NONE;
        }
        return to;
    }
    case RN_AND:
    case RN_NOT:
        return comp_ext(c, nd, next);
    case RN_SUB: {
        /* boundaries b_k = next, b_i = SPLIT(part_i -> b_{i+1}, next); the entry may
         * start at any boundary */
        size_t n = 0;
        for (int ch = nd->first; ch >= 0; ch = c->p->nodes[ch].next) n++;
        int *kids = malloc((n + 1) * sizeof *kids);
        if (!kids) {
            oom(c->p);
            return GN_NONE;
        }
        n = 0;
        for (int ch = nd->first; ch >= 0; ch = c->p->nodes[ch].next) kids[n++] = ch;
        uint32_t b = next, entry = next;
        while (n-- > 0) {
            uint32_t part = comp(c, kids[n], b);
            b = part == GN_NONE ? GN_NONE : add_state(c, GN_SPLIT, 0, 0, part, next);
            entry = b == GN_NONE ? GN_NONE : add_state(c, GN_SPLIT, 0, 0, b, entry);
            if (entry == GN_NONE) {
                if (!c->p->err) too_big(c, nd->col);
                break;
            }
        }
        free(kids);
        return entry;
    }
    default:
        return next;
    }
}

static og_status *compile_re(gnfa *nfa, const char *re, size_t len, const char *what,
                             uint32_t next, uint32_t *entry, bool ext);

og_status *gre_compile(gnfa *nfa, const char *re, size_t len, const char *what, uint32_t next,
                       uint32_t *entry)
{
    return compile_re(nfa, re, len, what, next, entry, false);
}

og_status *gre_compile_ext(gnfa *nfa, const char *re, size_t len, const char *what,
                           uint32_t next, uint32_t *entry)
{
    return compile_re(nfa, re, len, what, next, entry, true);
}

static og_status *compile_re(gnfa *nfa, const char *re, size_t len, const char *what,
                             uint32_t next, uint32_t *entry, bool ext)
{
    rparse p = {.s = (const uint8_t *)re, .n = len, .what = what ? what : "regex", .ext = ext,
                .and_level = -1};
    flags f = {0};
    anchors a = {true, false};
    int root = parse_alt(&p, &f, &a);
    if (root >= 0 && !at_end(&p)) fail(&p, p.pos, "unopened group");
    if (root >= 0 && !p.err) {
        uint64_t room = (uint64_t)nfa->n + GRE_MAX_STATES;
        rcomp c = {&p, nfa, room > nfa->max ? nfa->max : (uint32_t)room};
        *entry = comp(&c, root, next);
        if (*entry == GN_NONE && !p.err) fail(&p, 0, "could not be compiled");
    }
    for (size_t i = 0; i < p.nn; i++) cset_free(&p.nodes[i].set);
    free(p.nodes);
    return p.err;
}
