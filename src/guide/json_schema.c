/* JSON Schema to grammar, in the language llguidance's JSON compiler gives with its
 * default options (what onnxruntime-genai's `json_schema` guidance uses), or with the
 * top-level "x-guidance" options it reads: no whitespace before or after the value, any
 * JSON whitespace [ \t\n\r]+ between the tokens inside objects and arrays (an empty
 * container has one such place); object properties in the order of `properties`, then
 * `required` names not among them, then extra keys (allowed unless additionalProperties
 * is false; never one of the named keys); strings escape only what JSON must (no "\/",
 * \u00XX only for controls). Each scalar (a string with its constraints, a number,
 * true/false/null) is one lexeme; objects, arrays and alternatives are rules, linear in
 * the schema's size; $ref targets are one nonterminal each, made before their body, so
 * recursion works; allOf and a $ref's siblings are merged into one schema first; oneOf
 * is anyOf where its branches are proven apart. patternProperties (pairwise disjoint, as
 * llguidance requires) and additionalProperties are alternatives for the extra keys, each
 * key lexeme with the named keys and the other patterns' keys excluded; min/maxProperties
 * count the extra members as llguidance does (only where every named property is
 * required, or "at most / at least one" of them with no extra keys). What llguidance
 * refuses is refused with the keyword and its JSON pointer, and so is what this front end
 * does not do yet (multipleOf, some patterns with lengths). */
#include "guide/front.h"
#include "guide/json_internal.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Most items an array or object rule counts one by one (a chain of nonterminals); past
 * it, minItems / maxItems / min/maxProperties are counted in binary (count_range). */
#define JSON_MAX_COUNTED_ITEMS 1000
/* Largest count taken at all (minItems, maxItems, min/maxProperties; counted in binary
 * past JSON_MAX_COUNTED_ITEMS). */
#define JSON_MAX_COUNT 1099511627776.0
/* Longest minLength / maxLength a string lexeme counts. */
#define JSON_MAX_LENGTH 1000000
/* Deepest nesting of allOf / $ref merges (a cycle of references merged into itself). */
#define JSON_MAX_MERGE_DEPTH 64

/* Most patterns of one patternProperties, and most DFA states a check that two lexemes
 * meet (two patterns disjoint, an intersection not empty) may build. */
#define JSON_MAX_PATTERNS 64
#define JSON_DISJOINT_STATES 20000

/* Deepest nesting of schemas inside schemas (each level a C stack frame). */
#define JSON_MAX_DEPTH 256

/* The nonterminal of each schema compiled so far, by address: open addressing. */
typedef struct memo_ent {
    const cJSON *schema; /* NULL: free slot */
    gsym nt;
} memo_ent;

/* The top-level "x-guidance" options (llguidance's names); the defaults as it has them. */
typedef struct json_opts {
    const char *ws;       /* whitespace between tokens, at most one match a place; NULL: none */
    const char *item_sep; /* between items and members (a regex) */
    const char *key_sep;  /* between a key and its value (a regex) */
    bool coerce_one_of;   /* oneOf as anyOf, proven apart or not */
    bool lenient;         /* unsupported keywords and unknown formats ignored */
} json_opts;

#define JSON_WS_FLEXIBLE "[\\x20\\x0A\\x0D\\x09]+"

typedef struct jctx {
    json_opts opts;
    glex *lex;
    gcfg *cfg;
    const cJSON *root;
    const char *where; /* message prefix ("JSON schema" or the caller's) */
    glex *scratch;     /* evaluates pattern classes; made on first use */
    memo_ent *memo;
    size_t n_memo, cap_memo; /* cap_memo a power of two, at most half full */
    int depth;
    cJSON **owned; /* merged schemas, freed at the end */
    size_t n_owned, cap_owned;
    int lx_ws, lx_lbrace, lx_rbrace, lx_lbrack, lx_rbrack, lx_comma, lx_colon;
    int lx_true, lx_false, lx_null, lx_string, lx_number;
    gsym w;   /* optional whitespace */
    gsym any; /* any JSON value; -1 until made */
    int n_key_sets; /* extra-key lexemes made so far (each its own exclusions) */
} jctx;

static og_status *compile(jctx *c, const cJSON *s, const char *ptr, gsym *out);

static og_status *at_error(const jctx *c, const char *ptr, const char *fmt, const char *arg) {
    char msg[512];
    snprintf(msg, sizeof msg, fmt, arg);
    return og_errorf(OG_ERR_INVALID_ARGUMENT, "%s at %s: %s", c->where, ptr[0] ? ptr : "/",
                     msg);
}

/* ---- small grammar helpers ---- */

static og_status *rule(jctx *c, gsym lhs, const gsym *rhs, size_t n) {
    return gcfg_add_rule(c->cfg, lhs, rhs, n);
}

static og_status *nt(jctx *c, const char *name, gsym *out) {
    return gcfg_nonterminal(c->cfg, name, out);
}

static og_status *regex_lexeme(jctx *c, const jbuf *re, const char *ptr, gsym *out) {
    if (re->oom) return og_oom();
    int id;
    char what[300];
    snprintf(what, sizeof what, "%s at %s", c->where, ptr[0] ? ptr : "/");
    OG_TRY(glex_add_regex(c->lex, re->s, re->len, what, &id));
    *out = GSYM_LEX(id);
    return NULL;
}

static og_status *lit(jctx *c, const char *s, int *id) {
    return glex_add_literal(c->lex, (const uint8_t *)s, strlen(s), id);
}

/* A separator: the literal when it is the default, else the option's regex. */
static og_status *separator(jctx *c, const char *re, const char *dflt, const char *what,
                            int *id) {
    if (!strcmp(re, dflt)) return lit(c, dflt, id);
    return glex_add_regex(c->lex, re, strlen(re), what, id);
}

static og_status *ctx_init(jctx *c) {
    OG_TRY(lit(c, "{", &c->lx_lbrace));
    OG_TRY(lit(c, "}", &c->lx_rbrace));
    OG_TRY(lit(c, "[", &c->lx_lbrack));
    OG_TRY(lit(c, "]", &c->lx_rbrack));
    OG_TRY(separator(c, c->opts.item_sep, ",", "JSON schema at /x-guidance/item_separator",
                     &c->lx_comma));
    OG_TRY(separator(c, c->opts.key_sep, ":", "JSON schema at /x-guidance/key_separator",
                     &c->lx_colon));
    OG_TRY(lit(c, "true", &c->lx_true));
    OG_TRY(lit(c, "false", &c->lx_false));
    OG_TRY(lit(c, "null", &c->lx_null));
    c->lx_string = c->lx_number = -1;
    c->any = -1;
    OG_TRY(nt(c, "json whitespace?", &c->w));
    OG_TRY(rule(c, c->w, NULL, 0));
    if (!c->opts.ws) return NULL;
    OG_TRY(glex_add_regex(c->lex, c->opts.ws, strlen(c->opts.ws),
                         "JSON schema at /x-guidance/whitespace_pattern", &c->lx_ws));
    gsym ws = GSYM_LEX(c->lx_ws);
    return rule(c, c->w, &ws, 1);
}

static og_status *string_lexeme(jctx *c, gsym *out) {
    if (c->lx_string < 0) {
        jbuf re = {0};
        jbuf_printf(&re, "\"%s*\"", JSON_CHAR_RE);
        og_status *st = re.oom ? og_oom()
                               : glex_add_regex(c->lex, re.s, re.len, "JSON string", &c->lx_string);
        jbuf_free(&re);
        OG_TRY(st);
    }
    *out = GSYM_LEX(c->lx_string);
    return NULL;
}

static og_status *number_lexeme(jctx *c, gsym *out) {
    if (c->lx_number < 0) {
        jbuf re = {0};
        json_bounds none = {0};
        og_status *st = json_re_number(&re, &none, "");
        if (!st) st = glex_add_regex(c->lex, re.s, re.len, "JSON number", &c->lx_number);
        jbuf_free(&re);
        OG_TRY(st);
    }
    *out = GSYM_LEX(c->lx_number);
    return NULL;
}

/* lhs -> open W close | open W first rest W close, the shape of both containers;
 * first/rest of -1 leave the non-empty form out, allow_empty false the empty one. */
static og_status *container(jctx *c, gsym lhs, int open, int close, bool allow_empty,
                            gsym first, gsym rest) {
    if (allow_empty) {
        gsym r[] = {GSYM_LEX(open), c->w, GSYM_LEX(close)};
        OG_TRY(rule(c, lhs, r, 3));
    }
    if (first != -1) {
        gsym r[] = {GSYM_LEX(open), c->w, first, rest, c->w, GSYM_LEX(close)};
        OG_TRY(rule(c, lhs, r, 6));
    }
    return NULL;
}

/* tail -> empty | tail W "," W item: the repeated part of a list. Left-recursive, so an
 * Earley set holds one item for it however long the list is (right recursion makes each
 * item's completion walk back over all the earlier ones: quadratic on long arrays). */
static og_status *list_tail(jctx *c, gsym tail, gsym item) {
    OG_TRY(rule(c, tail, NULL, 0));
    gsym r[] = {tail, c->w, GSYM_LEX(c->lx_comma), c->w, item};
    return rule(c, tail, r, 5);
}

/* Any JSON value (the schema `true` or `{}`). */
static og_status *any_value(jctx *c, gsym *out) {
    if (c->any >= 0) {
        *out = c->any;
        return NULL;
    }
    gsym v, obj, arr, kv, otail, atail, str, num;
    OG_TRY(nt(c, "any JSON value", &v));
    c->any = v;
    OG_TRY(nt(c, "any JSON object", &obj));
    OG_TRY(nt(c, "any JSON array", &arr));
    OG_TRY(nt(c, "any JSON member", &kv));
    OG_TRY(nt(c, "any JSON members", &otail));
    OG_TRY(nt(c, "any JSON items", &atail));
    OG_TRY(string_lexeme(c, &str));
    OG_TRY(number_lexeme(c, &num));
    gsym alts[] = {obj, arr, str, num, GSYM_LEX(c->lx_true), GSYM_LEX(c->lx_false),
                   GSYM_LEX(c->lx_null)};
    for (size_t i = 0; i < sizeof alts / sizeof alts[0]; i++) OG_TRY(rule(c, v, &alts[i], 1));
    gsym m[] = {str, c->w, GSYM_LEX(c->lx_colon), c->w, v};
    OG_TRY(rule(c, kv, m, 5));
    OG_TRY(list_tail(c, otail, kv));
    OG_TRY(list_tail(c, atail, v));
    OG_TRY(container(c, obj, c->lx_lbrace, c->lx_rbrace, true, kv, otail));
    OG_TRY(container(c, arr, c->lx_lbrack, c->lx_rbrack, true, v, atail));
    *out = v;
    return NULL;
}

/* ---- literal JSON values (enum, const) ---- */

static og_status *string_literal(jctx *c, const char *s, const char *ptr, gsym *out) {
    jbuf re = {0};
    jbuf_putc(&re, '"');
    json_re_literal_body(&re, (const uint8_t *)s, strlen(s));
    jbuf_putc(&re, '"');
    og_status *st = regex_lexeme(c, &re, ptr, out);
    jbuf_free(&re);
    return st;
}

static og_status *literal_value(jctx *c, const cJSON *v, const char *ptr, gsym *out) {
    int id;
    if (cJSON_IsNull(v)) id = c->lx_null;
    else if (cJSON_IsTrue(v)) id = c->lx_true;
    else if (cJSON_IsFalse(v)) id = c->lx_false;
    else if (cJSON_IsString(v)) return string_literal(c, v->valuestring, ptr, out);
    else if (cJSON_IsNumber(v)) {
        jbuf t = {0};
        json_number_text(&t, v->valuedouble);
        og_status *st = t.oom ? og_oom() : glex_add_literal(c->lex, (uint8_t *)t.s, t.len, &id);
        jbuf_free(&t);
        OG_TRY(st);
    } else {
        bool is_obj = cJSON_IsObject(v);
        gsym lhs;
        OG_TRY(nt(c, ptr, &lhs));
        /* items as a fixed chain: lhs -> open W v1 W "," W v2 ... W close */
        size_t n = (size_t)cJSON_GetArraySize(v), k = 0;
        gsym *r = malloc(sizeof *r * (n * 8 + 4));
        if (!r) return og_oom();
        r[k++] = GSYM_LEX(is_obj ? c->lx_lbrace : c->lx_lbrack);
        r[k++] = c->w;
        const cJSON *e;
        bool first = true;
        cJSON_ArrayForEach(e, v) {
            if (!first) {
                r[k++] = GSYM_LEX(c->lx_comma);
                r[k++] = c->w;
            }
            first = false;
            if (is_obj) {
                og_status *st = string_literal(c, e->string, ptr, &r[k]);
                if (st) {
                    free(r);
                    return st;
                }
                k++;
                r[k++] = c->w;
                r[k++] = GSYM_LEX(c->lx_colon);
                r[k++] = c->w;
            }
            og_status *st = literal_value(c, e, ptr, &r[k]);
            if (st) {
                free(r);
                return st;
            }
            k++;
            r[k++] = c->w;
        }
        r[k++] = GSYM_LEX(is_obj ? c->lx_rbrace : c->lx_rbrack);
        og_status *st = rule(c, lhs, r, k);
        free(r);
        OG_TRY(st);
        *out = lhs;
        return NULL;
    }
    *out = GSYM_LEX(id);
    return NULL;
}

/* ---- schema reading ---- */

enum {
    T_NULL = 1,
    T_BOOLEAN = 2,
    T_OBJECT = 4,
    T_ARRAY = 8,
    T_NUMBER = 16,
    T_STRING = 32,
    T_INTEGER = 64,
    T_ALL = 127,
};

static const char *const type_names[] = {"null",   "boolean", "object", "array",
                                         "number", "string",  "integer"};

static og_status *read_types(jctx *c, const cJSON *t, const char *ptr, unsigned *out) {
    *out = 0;
    if (!t) {
        *out = T_ALL;
        return NULL;
    }
    const cJSON *one = t, *e;
    bool list = cJSON_IsArray(t);
    const cJSON *items = list ? t : NULL;
    cJSON_ArrayForEach(e, items) {
        unsigned m;
        OG_TRY(read_types(c, e, ptr, &m));
        *out |= m;
    }
    if (list) return NULL;
    if (!cJSON_IsString(one)) return at_error(c, ptr, "%s", "'type' is not a string or a list");
    for (unsigned i = 0; i < 7; i++)
        if (strcmp(one->valuestring, type_names[i]) == 0) {
            *out = 1u << i;
            return NULL;
        }
    return at_error(c, ptr, "invalid type '%s'", one->valuestring);
}

/* Keywords llguidance refuses (those it ignores as annotations are not listed). */
static const char *const unsupported[] = {
    "if", "then", "else", "not", "uniqueItems", "contains", "minContains", "maxContains",
    "dependentRequired", "dependentSchemas", "dependencies", "propertyNames",
    "unevaluatedProperties", "unevaluatedItems", "$dynamicRef", "$dynamicAnchor",
    "$recursiveRef",
};

static og_status *check_keywords(jctx *c, const cJSON *s, const char *ptr) {
    const cJSON *k;
    cJSON_ArrayForEach(k, s) {
        for (size_t i = 0; i < sizeof unsupported / sizeof unsupported[0] && !c->opts.lenient;
             i++)
            if (strcmp(k->string, unsupported[i]) == 0)
                return at_error(c, ptr, "unsupported keyword '%s'", k->string);
    }
    return NULL;
}

static void ptr_append(char *dst, size_t cap, const char *base, const char *seg) {
    size_t n = (size_t)snprintf(dst, cap, "%s/", base);
    for (; *seg && n + 3 < cap; seg++) {
        if (*seg == '~') {
            dst[n++] = '~';
            dst[n++] = '0';
        } else if (*seg == '/') {
            dst[n++] = '~';
            dst[n++] = '1';
        } else {
            dst[n++] = *seg;
        }
    }
    dst[n < cap ? n : cap - 1] = 0;
}

static void ptr_index(char *dst, size_t cap, const char *base, const char *kw, int i) {
    snprintf(dst, cap, "%s/%s/%d", base, kw, i);
}

/* The schema a "#..." reference names. */
static og_status *resolve_ref(jctx *c, const char *ref, const char *ptr, const cJSON **out) {
    if (ref[0] != '#')
        return at_error(c, ptr, "reference '%s' is not local to the schema (remote "
                                "references are not supported)", ref);
    const cJSON *cur = c->root;
    const char *p = ref + 1;
    while (*p) {
        if (*p != '/') return at_error(c, ptr, "reference '%s' is not a JSON pointer", ref);
        p++;
        char seg[256];
        size_t n = 0;
        for (; *p && *p != '/' && n + 1 < sizeof seg; p++) {
            if (*p == '~' && (p[1] == '0' || p[1] == '1')) {
                seg[n++] = p[1] == '0' ? '~' : '/';
                p++;
            } else if (*p == '%' && p[1] && p[2]) { /* URI percent-encoding */
                char hex[3] = {p[1], p[2], 0};
                seg[n++] = (char)strtol(hex, NULL, 16);
                p += 2;
            } else {
                seg[n++] = *p;
            }
        }
        seg[n] = 0;
        if (cJSON_IsArray(cur)) cur = cJSON_GetArrayItem(cur, atoi(seg));
        else if (cJSON_IsObject(cur)) cur = cJSON_GetObjectItemCaseSensitive(cur, seg);
        else cur = NULL;
        if (!cur) return at_error(c, ptr, "reference '%s' names nothing in the schema", ref);
    }
    *out = cur;
    return NULL;
}

static bool is_false(const cJSON *s) { return cJSON_IsFalse(s); }
static bool is_any(const cJSON *s) {
    return cJSON_IsTrue(s) || (cJSON_IsObject(s) && !s->child);
}

/* ---- merging (allOf, $ref with siblings) ---- */

static og_status *own(jctx *c, cJSON *s) {
    if (c->n_owned == c->cap_owned) {
        size_t cap = c->cap_owned ? c->cap_owned * 2 : 16;
        cJSON **p = realloc(c->owned, cap * sizeof *p);
        if (!p) {
            cJSON_Delete(s);
            return og_oom();
        }
        c->owned = p;
        c->cap_owned = cap;
    }
    c->owned[c->n_owned++] = s;
    return NULL;
}

static bool is_min_kw(const char *k) {
    return !strcmp(k, "minimum") || !strcmp(k, "exclusiveMinimum") || !strcmp(k, "minLength") ||
           !strcmp(k, "minItems");
}
static bool is_max_kw(const char *k) {
    return !strcmp(k, "maximum") || !strcmp(k, "exclusiveMaximum") || !strcmp(k, "maxLength") ||
           !strcmp(k, "maxItems");
}

static cJSON *all_of2(const cJSON *a, const cJSON *b) {
    cJSON *o = cJSON_CreateObject(), *l = cJSON_AddArrayToObject(o, "allOf");
    if (!l) {
        cJSON_Delete(o);
        return NULL;
    }
    cJSON_AddItemToArray(l, cJSON_Duplicate(a, true));
    cJSON_AddItemToArray(l, cJSON_Duplicate(b, true));
    return o;
}

/* dst := dst intersected with src (both plain: no $ref / allOf at their top). */
static og_status *merge_into(jctx *c, cJSON *dst, const cJSON *src, const char *ptr) {
    if (is_false(src)) return at_error(c, ptr, "%s", "unsatisfiable schema: allOf holds false");
    const cJSON *k;
    cJSON_ArrayForEach(k, src) {
        cJSON *d = cJSON_GetObjectItemCaseSensitive(dst, k->string);
        if (!d) {
            cJSON_AddItemToObject(dst, k->string, cJSON_Duplicate(k, true));
            continue;
        }
        const char *name = k->string;
        cJSON *rep = NULL;
        if (!strcmp(name, "type")) {
            unsigned ta, tb;
            OG_TRY(read_types(c, d, ptr, &ta));
            OG_TRY(read_types(c, k, ptr, &tb));
            if (ta & T_NUMBER) ta |= T_INTEGER;
            if (tb & T_NUMBER) tb |= T_INTEGER;
            unsigned t = ta & tb;
            if (!(ta & tb & T_NUMBER)) t &= ~(unsigned)T_NUMBER;
            rep = cJSON_CreateArray();
            for (unsigned i = 0; i < 7; i++)
                if (t & (1u << i)) cJSON_AddItemToArray(rep, cJSON_CreateString(type_names[i]));
        } else if (!strcmp(name, "properties")) {
            const cJSON *p;
            cJSON_ArrayForEach(p, k) {
                cJSON *q = cJSON_GetObjectItemCaseSensitive(d, p->string);
                if (!q) cJSON_AddItemToObject(d, p->string, cJSON_Duplicate(p, true));
                else cJSON_ReplaceItemInObjectCaseSensitive(d, p->string, all_of2(q, p));
            }
            continue;
        } else if (!strcmp(name, "required")) {
            const cJSON *p;
            cJSON_ArrayForEach(p, k) {
                const cJSON *q;
                bool have = false;
                cJSON_ArrayForEach(q, d) have |= cJSON_Compare(p, q, true);
                if (!have) cJSON_AddItemToArray(d, cJSON_Duplicate(p, true));
            }
            continue;
        } else if (is_min_kw(name) || is_max_kw(name)) {
            if (!cJSON_IsNumber(d) || !cJSON_IsNumber(k)) continue;
            bool take = is_min_kw(name) ? k->valuedouble > d->valuedouble
                                        : k->valuedouble < d->valuedouble;
            if (take) rep = cJSON_Duplicate(k, true);
        } else if (!strcmp(name, "items") || !strcmp(name, "additionalProperties")) {
            rep = all_of2(d, k);
        } else if (!strcmp(name, "enum")) {
            rep = cJSON_CreateArray();
            const cJSON *p, *q;
            cJSON_ArrayForEach(p, d) {
                bool have = false;
                cJSON_ArrayForEach(q, k) have |= cJSON_Compare(p, q, true);
                if (have) cJSON_AddItemToArray(rep, cJSON_Duplicate(p, true));
            }
        } else if (!strcmp(name, "const") || !strcmp(name, "pattern") ||
                   !strcmp(name, "format") || !strcmp(name, "anyOf") ||
                   !strcmp(name, "oneOf") || !strcmp(name, "prefixItems")) {
            if (!cJSON_Compare(d, k, true))
                return at_error(c, ptr, "allOf: '%s' in more than one part is not supported",
                                name);
            continue;
        } else {
            continue; /* annotations: the first part's stay */
        }
        if (!rep) return og_oom();
        cJSON_ReplaceItemInObjectCaseSensitive(dst, name, rep);
    }
    return NULL;
}

/* A plain object schema equal to s with its $ref and allOf folded in (owned by c). */
static og_status *flatten(jctx *c, const cJSON *s, const char *ptr, int depth, cJSON *acc) {
    if (depth > JSON_MAX_MERGE_DEPTH)
        return at_error(c, ptr, "%s", "allOf / $ref merges nested too deeply (a cycle?)");
    if (is_false(s)) return at_error(c, ptr, "%s", "unsatisfiable schema: schema is false");
    if (!cJSON_IsObject(s)) return NULL; /* true */
    /* llguidance reads each part's format as a string's, whatever the other parts say */
    const cJSON *fmt = cJSON_GetObjectItemCaseSensitive(s, "format");
    if (cJSON_IsString(fmt) && !c->opts.lenient && !json_format_known(fmt->valuestring)) {
        unsigned types;
        OG_TRY(read_types(c, cJSON_GetObjectItemCaseSensitive(s, "type"), ptr, &types));
        if (types & T_STRING) return at_error(c, ptr, "unknown format '%s'", fmt->valuestring);
    }
    const cJSON *k;
    cJSON_ArrayForEach(k, s) {
        if (!strcmp(k->string, "$ref")) {
            const cJSON *t;
            if (!cJSON_IsString(k)) return at_error(c, ptr, "%s", "'$ref' is not a string");
            OG_TRY(resolve_ref(c, k->valuestring, ptr, &t));
            OG_TRY(flatten(c, t, ptr, depth + 1, acc));
        } else if (!strcmp(k->string, "allOf")) {
            const cJSON *e;
            cJSON_ArrayForEach(e, k) OG_TRY(flatten(c, e, ptr, depth + 1, acc));
        } else {
            cJSON *one = cJSON_CreateObject();
            if (!one) return og_oom();
            cJSON_AddItemToObject(one, k->string, cJSON_Duplicate(k, true));
            og_status *st = merge_into(c, acc, one, ptr);
            cJSON_Delete(one);
            OG_TRY(st);
        }
    }
    return NULL;
}

/* ---- typed parts ---- */

/* Whether lexer `lex` has a string that lexemes a and b (b < 0: a alone) both complete:
 * a search of its DFA from the start with both allowed. *out false and an error past
 * JSON_DISJOINT_STATES states. */
static og_status *dfa_search(glex *lex, int a, int b, bool *out) {
    *out = false;
    glex_set_limits(lex, JSON_DISJOINT_STATES, (size_t)64 << 20);
    uint32_t *queue = malloc(sizeof *queue * (JSON_DISJOINT_STATES + 1));
    uint8_t *seen = calloc(JSON_DISJOINT_STATES + 1, 1);
    uint64_t *set = calloc(glex_words(lex), sizeof *set);
    og_status *st = queue && seen && set ? NULL : og_oom();
    size_t head = 0, tail = 0;
    if (!st) {
        set[a / 64] |= 1ull << (a % 64);
        if (b >= 0) set[b / 64] |= 1ull << (b % 64);
        uint32_t s0 = glex_start(lex, set);
        if (s0 == GLEX_FAILED) st = glex_error(lex);
        else if (s0 != GLEX_DEAD) seen[s0] = 1, queue[tail++] = s0;
    }
    while (head < tail && !*out && !st) {
        uint32_t x = queue[head++];
        const uint64_t *acc = glex_accepts(lex, x);
        if (acc && (acc[a / 64] >> (a % 64) & 1) && (b < 0 || (acc[b / 64] >> (b % 64) & 1)))
            *out = true;
        for (int byte = 0; byte < 256 && !*out; byte++) {
            uint32_t y = glex_next(lex, x, (uint8_t)byte);
            if (y == GLEX_FAILED) {
                st = glex_error(lex);
                break;
            }
            if (y == GLEX_DEAD || seen[y]) continue;
            seen[y] = 1;
            queue[tail++] = y;
        }
    }
    free(queue);
    free(seen);
    free(set);
    return st;
}

/* A string lexeme that is the intersection of a pattern, a format and lengths (those
 * given), as llguidance's And of them; an empty intersection is refused as
 * unsatisfiable. */
static og_status *string_and(jctx *c, const cJSON *pat, const cJSON *fmt, double lo, double hi,
                             const char *ptr, gsym *out) {
    jbuf re[3] = {{0}};
    glex_part parts[3];
    size_t n = 0;
    og_status *st = NULL;
    char where[600];
    if (pat) {
        snprintf(where, sizeof where, "%s/pattern", ptr);
        if (!cJSON_IsString(pat)) st = at_error(c, ptr, "%s", "'pattern' is not a string");
        else if (!c->scratch) st = glex_new(&c->scratch);
        jbuf_putc(&re[n], '"');
        if (!st)
            st = json_re_pattern_body(&re[n], pat->valuestring, strlen(pat->valuestring),
                                      c->scratch, where);
        jbuf_putc(&re[n++], '"');
    }
    if (fmt && !st) {
        if (!cJSON_IsString(fmt)) st = at_error(c, ptr, "%s", "'format' is not a string");
        jbuf_putc(&re[n], '"');
        if (!st) st = json_re_format_body(&re[n], fmt->valuestring, ptr);
        jbuf_putc(&re[n++], '"');
    }
    if (!st && (lo > 0 || hi >= 0)) {
        if (hi >= 0) jbuf_printf(&re[n++], "\"%s{%.0f,%.0f}\"", JSON_CHAR_RE, lo, hi);
        else jbuf_printf(&re[n++], "\"%s{%.0f,}\"", JSON_CHAR_RE, lo);
    }
    for (size_t i = 0; i < n && !st; i++) {
        if (re[i].oom) st = og_oom();
        else parts[i] = (glex_part){re[i].s, re[i].len, 0, 0};
    }
    snprintf(where, sizeof where, "%s at %s", c->where, ptr[0] ? ptr : "/");
    int id = -1;
    if (!st) st = glex_add_and(c->lex, parts, n, where, &id);
    /* llguidance refuses an empty language: no path from the entry to the end */
    bool found = !st && !glex_lexeme_empty(c->lex, id);
    if (!st && !found)
        st = at_error(c, ptr, "%s", "unsatisfiable schema: no string matches the pattern, "
                                    "format and lengths together");
    for (size_t i = 0; i < 3; i++) jbuf_free(&re[i]);
    if (!st) *out = GSYM_LEX(id);
    return st;
}

static og_status *string_schema(jctx *c, const cJSON *s, const char *ptr, gsym *out) {
    const cJSON *mn = cJSON_GetObjectItemCaseSensitive(s, "minLength");
    const cJSON *mx = cJSON_GetObjectItemCaseSensitive(s, "maxLength");
    const cJSON *pat = cJSON_GetObjectItemCaseSensitive(s, "pattern");
    const cJSON *fmt = cJSON_GetObjectItemCaseSensitive(s, "format");
    if (fmt && c->opts.lenient && !(cJSON_IsString(fmt) && json_format_known(fmt->valuestring)))
        fmt = NULL;
    double lo = cJSON_IsNumber(mn) ? mn->valuedouble : 0;
    double hi = cJSON_IsNumber(mx) ? mx->valuedouble : -1;
    if (hi >= 0 && lo > hi)
        return at_error(c, ptr, "%s", "unsatisfiable schema: minLength is above maxLength");
    /* a maximum past JSON_MAX_LENGTH characters is no maximum: no output reaches it (a
     * counted string that long passes the lexer's DFA states first) */
    if (hi > JSON_MAX_LENGTH) hi = -1;
    if (lo > JSON_MAX_LENGTH)
        return at_error(c, ptr, "%s", "minLength above 1000000 is not supported");
    bool lengths = lo > 0 || hi >= 0;
    if (!pat && !fmt && !lengths) return string_lexeme(c, out);
    jbuf re = {0};
    og_status *st = NULL;
    jbuf_putc(&re, '"');
    bool sized = false;
    if (pat && !fmt && lengths && cJSON_IsString(pat)) {
        char where[600];
        snprintf(where, sizeof where, "%s/pattern", ptr);
        if (!c->scratch) st = glex_new(&c->scratch);
        if (!st)
            st = json_re_pattern_sized(&re, pat->valuestring, strlen(pat->valuestring),
                                       c->scratch, where, (unsigned)lo,
                                       hi >= 0 ? (unsigned)hi : UINT32_MAX, &sized);
    }
    if (st || sized) {
    } else if (((pat || fmt) && lengths) || (pat && fmt)) {
        jbuf_free(&re);
        return string_and(c, pat, fmt, lo, hi, ptr, out);
    } else if (pat) {
        if (!cJSON_IsString(pat)) st = at_error(c, ptr, "%s", "'pattern' is not a string");
        else if (!c->scratch && (st = glex_new(&c->scratch))) {
        } else {
            char where[600];
            snprintf(where, sizeof where, "%s/pattern", ptr);
            st = json_re_pattern_body(&re, pat->valuestring, strlen(pat->valuestring),
                                      c->scratch, where);
        }
    } else if (fmt) {
        if (!cJSON_IsString(fmt)) st = at_error(c, ptr, "%s", "'format' is not a string");
        else st = json_re_format_body(&re, fmt->valuestring, ptr);
    } else {
        if (hi >= 0) jbuf_printf(&re, "%s{%.0f,%.0f}", JSON_CHAR_RE, lo, hi);
        else jbuf_printf(&re, "%s{%.0f,}", JSON_CHAR_RE, lo);
    }
    jbuf_putc(&re, '"');
    if (!st) st = regex_lexeme(c, &re, ptr, out);
    jbuf_free(&re);
    return st;
}

static og_status *read_bounds(jctx *c, const cJSON *s, const char *ptr, json_bounds *b) {
    *b = (json_bounds){0};
    static const char *const kws[] = {"minimum", "exclusiveMinimum", "maximum",
                                      "exclusiveMaximum"};
    for (int i = 0; i < 4; i++) {
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(s, kws[i]);
        if (!v) continue;
        if (cJSON_IsBool(v)) continue; /* draft-4 flags: not a bound */
        if (!cJSON_IsNumber(v)) return at_error(c, ptr, "'%s' is not a number", kws[i]);
        bool excl = i == 1 || i == 3;
        double x = v->valuedouble;
        if (i < 2) {
            if (!b->has_min || x > b->min || (x == b->min && excl)) {
                b->has_min = true;
                b->min = x;
                b->min_excl = excl;
            }
        } else if (!b->has_max || x < b->max || (x == b->max && excl)) {
            b->has_max = true;
            b->max = x;
            b->max_excl = excl;
        }
    }
    if (b->has_min && b->has_max && b->min > b->max)
        return at_error(c, ptr, "%s", "unsatisfiable schema: minimum is greater than maximum");
    return NULL;
}

/* multipleOf as llguidance reads it: coef * 10^-exp in lowest terms (the magnitude
 * scaled by ten until it is whole, as its f64 arithmetic does). */
static og_status *read_multiple(jctx *c, const cJSON *s, const char *ptr, bool *has,
                                uint32_t *coef, uint32_t *exp) {
    const cJSON *m = cJSON_GetObjectItemCaseSensitive(s, "multipleOf");
    *has = m != NULL;
    if (!m) return NULL;
    if (!cJSON_IsNumber(m)) return at_error(c, ptr, "%s", "'multipleOf' is not a number");
    double v = fabs(m->valuedouble); /* llguidance 1.9 takes a negative one's magnitude */
    uint32_t e = 0;
    while (v != floor(v) && e < 400) {
        v *= 10;
        e++;
    }
    if (!(v <= (double)UINT32_MAX))
        return at_error(c, ptr, "%s", "'multipleOf' has too many digits");
    uint32_t k = (uint32_t)v;
    if (k == 0) e = 0;
    while (e > 0 && k % 10 == 0) {
        k /= 10;
        e--;
    }
    if (k == 0) return at_error(c, ptr, "%s", "'multipleOf' 0 is not a valid multiple");
    *coef = k;
    *exp = e;
    return NULL;
}

/* llguidance's check that a closed range holds a multiple of the step. */
static og_status *check_multiple_range(jctx *c, const json_bounds *b, bool integer,
                                       uint32_t coef, uint32_t exp, const char *ptr) {
    if (!b->has_min || !b->has_max) return NULL;
    double step = (double)coef / pow(10.0, (double)exp);
    double lo = ceil(b->min / step) * step, hi = floor(b->max / step) * step;
    if (b->min_excl && lo == b->min) lo += step;
    if (b->max_excl && hi == b->max) hi -= step;
    if (integer) {
        lo = ceil(lo);
        hi = floor(hi);
    }
    if (lo > hi)
        return at_error(c, ptr, "%s", "unsatisfiable schema: the range does not contain a "
                                      "multiple of multipleOf");
    return NULL;
}

static og_status *number_schema(jctx *c, const cJSON *s, const char *ptr, bool integer,
                                gsym *out) {
    json_bounds b;
    OG_TRY(read_bounds(c, s, ptr, &b));
    bool mult;
    uint32_t coef = 0, exp = 0;
    OG_TRY(read_multiple(c, s, ptr, &mult, &coef, &exp));
    if (!integer && !b.has_min && !b.has_max && !mult) return number_lexeme(c, out);
    jbuf re = {0};
    og_status *st = integer ? json_re_integer(&re, &b, ptr) : json_re_number(&re, &b, ptr);
    if (st) {
        jbuf_free(&re);
        return og_status_wrap(st, "%s", c->where);
    }
    if (mult) {
        st = check_multiple_range(c, &b, integer, coef, exp, ptr);
        glex_part parts[2] = {{re.s, re.len, 0, 0}, {NULL, 0, coef, exp}};
        char where[600];
        snprintf(where, sizeof where, "%s at %s", c->where, ptr[0] ? ptr : "/");
        int id;
        if (!st) st = re.oom ? og_oom() : glex_add_and(c->lex, parts, 2, where, &id);
        if (!st) *out = GSYM_LEX(id);
    } else {
        st = regex_lexeme(c, &re, ptr, out);
    }
    jbuf_free(&re);
    return st;
}

/* lhs derives unit^n for lo <= n <= hi (hi INFINITY: no bound) in rules logarithmic in
 * the counts: E_j (exactly 2^j units) by doubling; lo as the E_j of its bits; then
 * AtMost(m) = U_b | E_b AtMost(m - 2^b), b m's top bit, with U_j (0..2^j - 1 units) =
 * U_{j-1} | E_{j-1} U_{j-1}; or, unbounded, a loop. No count has two derivations. */
static og_status *count_range(jctx *c, gsym unit, uint64_t lo, double hi, const char *ptr,
                              gsym lhs) {
    uint64_t span = isfinite(hi) ? (uint64_t)hi - lo : 0, top = lo > span ? lo : span;
    int bits = 0;
    while (bits < 63 && (top >> bits)) bits++;
    gsym E[64], U[65];
    E[0] = unit;
    for (int j = 1; j < bits; j++) {
        OG_TRY(nt(c, ptr, &E[j]));
        gsym r[] = {E[j - 1], E[j - 1]};
        OG_TRY(rule(c, E[j], r, 2));
    }
    gsym seq[66];
    size_t n = 0;
    for (int j = bits; j-- > 0;)
        if (lo >> j & 1) seq[n++] = E[j];
    gsym rest;
    OG_TRY(nt(c, ptr, &rest));
    if (!isfinite(hi)) { /* left-recursive, as list_tail */
        OG_TRY(rule(c, rest, NULL, 0));
        gsym r[] = {rest, unit};
        OG_TRY(rule(c, rest, r, 2));
    } else {
        OG_TRY(nt(c, ptr, &U[0]));
        OG_TRY(rule(c, U[0], NULL, 0));
        for (int j = 1; j <= bits; j++) {
            OG_TRY(nt(c, ptr, &U[j]));
            OG_TRY(rule(c, U[j], &U[j - 1], 1));
            gsym r[] = {E[j - 1], U[j - 1]};
            OG_TRY(rule(c, U[j], r, 2));
        }
        /* AtMost(m), top bit first: rest -> U_b | E_b rest' */
        gsym at = rest;
        for (uint64_t m = span;;) {
            if (m == 0) {
                OG_TRY(rule(c, at, NULL, 0));
                break;
            }
            int b = 63;
            while (!(m >> b & 1)) b--;
            OG_TRY(rule(c, at, &U[b], 1));
            gsym next;
            OG_TRY(nt(c, ptr, &next));
            gsym r[] = {E[b], next};
            OG_TRY(rule(c, at, r, 2));
            at = next;
            m -= 1ull << b;
        }
    }
    seq[n++] = rest;
    return rule(c, lhs, seq, n);
}

/* An array whose counts pass JSON_MAX_COUNTED_ITEMS: the k prefix positions one by one,
 * the items after them counted in binary (count_range), between lo and limit in all. */
static og_status *big_array(jctx *c, const gsym *slot, size_t k, gsym rest_item, uint64_t lo,
                            double limit, const char *ptr, gsym *out) {
    gsym unit;
    OG_TRY(nt(c, ptr, &unit));
    gsym u[] = {c->w, GSYM_LEX(c->lx_comma), c->w, rest_item};
    OG_TRY(rule(c, unit, u, 4));
    /* P_j: j items written, j = 1..max(k, 1); the last counts the rest */
    size_t last = k > 1 ? k : 1;
    gsym *P = malloc(sizeof *P * (last + 1));
    if (!P) return og_oom();
    og_status *st = NULL;
    for (size_t j = 1; j <= last && !st; j++) st = nt(c, ptr, &P[j]);
    for (size_t j = 1; j < last && !st; j++) {
        if (j >= lo) st = rule(c, P[j], NULL, 0);
        gsym r[] = {c->w, GSYM_LEX(c->lx_comma), c->w, slot[j], P[j + 1]};
        if (!st) st = rule(c, P[j], r, 5);
    }
    if (!st)
        st = count_range(c, unit, lo > last ? lo - last : 0, limit - (double)last, ptr, P[last]);
    if (!st) st = nt(c, ptr, out);
    if (!st)
        st = container(c, *out, c->lx_lbrack, c->lx_rbrack, lo == 0, k > 0 ? slot[0] : rest_item,
                       P[1]);
    free(P);
    return st;
}

static og_status *array_schema(jctx *c, const cJSON *s, const char *ptr, gsym *out) {
    const cJSON *prefix = cJSON_GetObjectItemCaseSensitive(s, "prefixItems");
    const cJSON *items = cJSON_GetObjectItemCaseSensitive(s, "items");
    const cJSON *mn = cJSON_GetObjectItemCaseSensitive(s, "minItems");
    const cJSON *mx = cJSON_GetObjectItemCaseSensitive(s, "maxItems");
    if (cJSON_IsArray(items) && !prefix) { /* draft 4 tuples */
        prefix = items;
        items = cJSON_GetObjectItemCaseSensitive(s, "additionalItems");
    }
    size_t k = cJSON_IsArray(prefix) ? (size_t)cJSON_GetArraySize(prefix) : 0;
    double lo = cJSON_IsNumber(mn) ? mn->valuedouble : 0;
    double hi = cJSON_IsNumber(mx) ? mx->valuedouble : INFINITY;
    if (lo > hi)
        return at_error(c, ptr, "%s", "unsatisfiable schema: minItems is above maxItems");
    /* the schema of each item position; past the prefix, `items` (absent: any) */
    size_t m = (size_t)lo;
    bool rest_ok = !is_false(items);
    double limit = rest_ok ? hi : (hi < (double)k ? hi : (double)k);
    if ((double)m > limit)
        return at_error(c, ptr, "%s", "unsatisfiable schema: minItems is above the items allowed");
    if (lo > JSON_MAX_COUNT || (isfinite(limit) && limit > JSON_MAX_COUNT))
        return at_error(c, ptr, "%s", "minItems / maxItems above 2^40 are not supported");
    size_t counted = k > m ? k : m; /* positions before the loop (if any) */
    if (isfinite(limit)) counted = (size_t)limit;
    /* past JSON_MAX_COUNTED_ITEMS, the positions after the prefix are counted in binary */
    bool big = counted > JSON_MAX_COUNTED_ITEMS;
    if (big && k > JSON_MAX_COUNTED_ITEMS)
        return at_error(c, ptr, "%s", "prefixItems longer than 1000 are not supported");
    if (big) counted = k;
    gsym *slot = malloc(sizeof *slot * (counted + 1));
    if (!slot) return og_oom();
    og_status *st = NULL;
    gsym rest_item = -1;
    char sub[600];
    if (rest_ok) {
        snprintf(sub, sizeof sub, "%s/items", ptr);
        st = items ? compile(c, items, sub, &rest_item) : any_value(c, &rest_item);
    }
    for (size_t j = 0; j < counted + 1 && !st; j++) {
        if (j < k) {
            const cJSON *pj = cJSON_GetArrayItem(prefix, (int)j);
            ptr_index(sub, sizeof sub, ptr, "prefixItems", (int)j);
            if (is_false(pj)) {
                /* no item here, nor after it */
                limit = (double)j;
                if ((double)m > limit)
                    st = at_error(c, sub, "%s", "unsatisfiable schema: a required item is false");
                counted = j;
                break;
            }
            st = compile(c, pj, sub, &slot[j]);
        } else {
            slot[j] = rest_item;
        }
    }
    if (!st && big && limit > (double)counted) { /* a false prefix item did not cut it */
        st = big_array(c, slot, k, rest_item, (uint64_t)lo, limit, ptr, out);
        free(slot);
        return st;
    }
    /* tails: T_j after j items (j = 1..counted), then the loop when unbounded */
    gsym loop = -1, *tail = NULL;
    if (!st) {
        tail = malloc(sizeof *tail * (counted + 2));
        if (!tail) st = og_oom();
    }
    if (!st && !isfinite(limit)) {
        st = nt(c, ptr, &loop);
        if (!st) st = list_tail(c, loop, rest_item);
    }
    for (size_t j = 1; j <= counted + 1 && !st; j++) st = nt(c, ptr, &tail[j]);
    for (size_t j = 1; j <= counted + 1 && !st; j++) {
        if ((double)j >= lo) st = rule(c, tail[j], NULL, 0);
        if (st) break;
        if ((double)j < limit) {
            gsym next = j + 1 <= counted ? tail[j + 1] : loop;
            gsym item = j < k ? slot[j] : rest_item;
            if (j == counted + 1 || next == -1) {
                if (loop != -1 && j >= counted) {
                    gsym r[] = {loop};
                    st = rule(c, tail[j], r, 1);
                }
                continue;
            }
            gsym r[] = {c->w, GSYM_LEX(c->lx_comma), c->w, item, next};
            st = rule(c, tail[j], r, 5);
        }
    }
    if (!st) st = nt(c, ptr, out);
    if (!st) {
        bool any_item = limit >= 1 && (k > 0 || rest_ok);
        gsym first = any_item ? (k > 0 ? slot[0] : rest_item) : -1;
        gsym next = counted >= 1 ? tail[1] : loop;
        st = container(c, *out, c->lx_lbrack, c->lx_rbrack, lo == 0, first, next);
    }
    free(slot);
    free(tail);
    return st;
}

/* A key as JSON writes it (escapes as in a literal's first alternative). */
static void key_bytes(jbuf *key, const char *name) {
    jbuf_putc(key, '"');
    for (const char *p = name; *p; p++) {
        unsigned char ch = (unsigned char)*p;
        if (ch == '"' || ch == '\\') jbuf_printf(key, "\\%c", ch);
        else if (ch == '\n') jbuf_puts(key, "\\n");
        else if (ch == '\t') jbuf_puts(key, "\\t");
        else if (ch == '\r') jbuf_puts(key, "\\r");
        else if (ch == '\b') jbuf_puts(key, "\\b");
        else if (ch == '\f') jbuf_puts(key, "\\f");
        else if (ch < 0x20 || ch == 0x7f) jbuf_printf(key, "\\u%04x", ch);
        else jbuf_putc(key, (char)ch);
    }
    jbuf_putc(key, '"');
}

/* A key lexeme: the JSON string regex `re` (NULL: any string, with every \uXXXX escape
 * where something is excluded), minus the named keys in names[0..n) and minus every
 * string of the regexes in vetoes[0..n_vetoes). Each exclusion set needs its own lexeme,
 * and the lexer gives one id per expression text, so the text carries a serial number as
 * a repetition of the empty group. */
static og_status *key_lexeme(jctx *c, const char *re, const char *const names[], size_t n,
                             const jbuf *vetoes, size_t n_vetoes, gsym *out) {
    if (n == 0 && n_vetoes == 0 && !re) return string_lexeme(c, out);
    jbuf text = {0};
    if (re) jbuf_printf(&text, "%s(?:){%d}", re, c->n_key_sets++);
    else jbuf_printf(&text, "\"%s*\"(?:){%d}", JSON_KEY_CHAR_RE, c->n_key_sets++);
    int id;
    og_status *st =
        text.oom ? og_oom() : glex_add_regex(c->lex, text.s, text.len, "JSON key", &id);
    jbuf_free(&text);
    OG_TRY(st);
    for (size_t i = 0; i < n; i++) {
        if (!names[i]) continue;
        jbuf key = {0};
        key_bytes(&key, names[i]);
        st = key.oom ? og_oom() : glex_exclude(c->lex, id, (uint8_t *)key.s, key.len);
        jbuf_free(&key);
        OG_TRY(st);
    }
    for (size_t i = 0; i < n_vetoes; i++)
        OG_TRY(glex_exclude_regex(c->lex, id, vetoes[i].s, vetoes[i].len, "patternProperties"));
    *out = GSYM_LEX(id);
    return NULL;
}

/* Whether the JSON string regex `re` ("\"body\"") matches `name` as JSON writes it. */
static og_status *key_matches(jctx *c, const char *re, const char *name, bool *out) {
    *out = false;
    if (!c->scratch) OG_TRY(glex_new(&c->scratch));
    int id;
    OG_TRY(glex_add_regex(c->scratch, re, strlen(re), "patternProperties", &id));
    uint64_t set[64] = {0};
    if (glex_words(c->scratch) > 64)
        return og_errorf(OG_ERR_INVALID_ARGUMENT, "JSON schema: too many patterns");
    set[id / 64] |= 1ull << (id % 64);
    jbuf key = {0};
    key_bytes(&key, name);
    if (key.oom) return og_oom();
    uint32_t st = glex_start(c->scratch, set);
    for (size_t i = 0; i < key.len && st != GLEX_DEAD && st != GLEX_FAILED; i++)
        st = glex_next(c->scratch, st, (uint8_t)key.s[i]);
    jbuf_free(&key);
    if (st == GLEX_FAILED) return glex_error(c->scratch);
    const uint64_t *acc = st == GLEX_DEAD ? NULL : glex_accepts(c->scratch, st);
    *out = acc && (acc[id / 64] >> (id % 64) & 1);
    return NULL;
}

/* Whether some string matches both regexes. */
static og_status *regexes_meet(const char *ra, const char *rb, bool *out) {
    *out = false;
    glex *lex;
    OG_TRY(glex_new(&lex));
    int a, b;
    og_status *st = glex_add_regex(lex, ra, strlen(ra), "patternProperties", &a);
    if (!st) st = glex_add_regex(lex, rb, strlen(rb), "patternProperties", &b);
    if (!st && a == b) *out = true;
    else if (!st) st = dfa_search(lex, a, b, out);
    glex_free(lex);
    return st;
}

/* One pattern of patternProperties: its value schema (the pattern is schema->string)
 * and the JSON string regex of the keys it matches. */
typedef struct jpat {
    const cJSON *schema;
    jbuf re;
} jpat;

static void free_patterns(jpat *p, size_t n) {
    for (size_t i = 0; i < n; i++) jbuf_free(&p[i].re);
    free(p);
}

/* patternProperties as llguidance reads it: each pattern a search, the patterns
 * pairwise disjoint (else refused). */
static og_status *read_patterns(jctx *c, const cJSON *s, const char *ptr, jpat **out,
                                size_t *n_out) {
    const cJSON *pp = cJSON_GetObjectItemCaseSensitive(s, "patternProperties");
    *out = NULL;
    *n_out = 0;
    if (!pp) return NULL;
    if (!cJSON_IsObject(pp)) return at_error(c, ptr, "%s", "'patternProperties' is not an object");
    size_t n = (size_t)cJSON_GetArraySize(pp);
    if (n == 0) return NULL;
    if (n > JSON_MAX_PATTERNS)
        return at_error(c, ptr, "%s", "patternProperties with more than 64 patterns is not "
                                      "supported");
    jpat *p = calloc(n, sizeof *p);
    if (!p) return og_oom();
    char pp_ptr[600], where[600];
    ptr_append(pp_ptr, sizeof pp_ptr, ptr, "patternProperties");
    og_status *st = NULL;
    size_t k = 0;
    const cJSON *e;
    cJSON_ArrayForEach(e, pp) {
        p[k].schema = e;
        ptr_append(where, sizeof where, pp_ptr, e->string);
        if (!c->scratch) st = glex_new(&c->scratch);
        jbuf body = {0};
        if (!st) st = json_re_pattern_body(&body, e->string, strlen(e->string), c->scratch, where);
        if (!st) jbuf_printf(&p[k].re, "\"%s\"", body.s ? body.s : "");
        if (!st && (body.oom || p[k].re.oom)) st = og_oom();
        jbuf_free(&body);
        k++;
        if (st) break;
    }
    for (size_t i = 0; i < n && !st; i++)
        for (size_t j = i + 1; j < n && !st; j++) {
            bool meet;
            st = regexes_meet(p[i].re.s, p[j].re.s, &meet);
            if (st) {
                og_status_free(st);
                char msg[300];
                snprintf(msg, sizeof msg, "can't determine if patternProperties /%.100s/ and "
                         "/%.100s/ are disjoint", p[i].schema->string, p[j].schema->string);
                st = at_error(c, ptr, "%s", msg);
            } else if (meet) {
                char msg[300];
                snprintf(msg, sizeof msg, "patternProperties /%.100s/ and /%.100s/ are not "
                         "disjoint", p[i].schema->string, p[j].schema->string);
                st = at_error(c, ptr, "%s", msg);
            }
        }
    if (st) {
        free_patterns(p, n);
        return st;
    }
    *out = p;
    *n_out = n;
    return NULL;
}

/* minProperties / maxProperties: *lo and *hi (-1: none) as given. */
static og_status *read_prop_counts(jctx *c, const cJSON *s, const char *ptr, double *lo,
                                   double *hi) {
    static const char *const kws[] = {"minProperties", "maxProperties"};
    *lo = 0;
    *hi = -1;
    for (int i = 0; i < 2; i++) {
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(s, kws[i]);
        if (!v) continue;
        if (!cJSON_IsNumber(v) || v->valuedouble < 0 || v->valuedouble != floor(v->valuedouble))
            return at_error(c, ptr, "'%s' is not a non-negative integer", kws[i]);
        *(i ? hi : lo) = v->valuedouble;
    }
    if (*hi >= 0 && *lo > *hi)
        return at_error(c, ptr, "%s",
                        "unsatisfiable schema: minProperties is above maxProperties");
    return NULL;
}

/* The rules of one object shape into lhs: the members kv[i] (-1: never written; in
 * order, each required or not) then extra members `extra` (-1: none), between lo and hi
 * (INFINITY: no bound) of them. first[i]: one or more members from i on, none written
 * before (-1: there is none to write); rest[i]: the members from i on after one was
 * written; the extras a chain of counts. An empty object is its own rule, so that it has
 * one place for whitespace, not two. */
static og_status *object_rules(jctx *c, gsym lhs, const gsym *kv, const bool *required,
                               size_t n, gsym extra, size_t lo, double hi, const char *ptr) {
    gsym *first = malloc(sizeof *first * (n + 1)), *rest = malloc(sizeof *rest * (n + 1));
    size_t counted = isfinite(hi) ? (size_t)hi : lo; /* T_0..T_counted */
    bool big = counted > JSON_MAX_COUNTED_ITEMS; /* then counted in binary */
    if (big) counted = 0;
    gsym *tail = extra != -1 ? malloc(sizeof *tail * (counted + 1)) : NULL;
    og_status *st = NULL;
    if (!first || !rest || (extra != -1 && !tail)) st = og_oom();
    bool any_required = extra != -1 && lo > 0;
    for (size_t i = 0; i < n; i++) any_required |= required[i];
    for (size_t i = 0; i <= n && !st; i++) {
        first[i] = -1;
        st = nt(c, ptr, &rest[i]);
    }
    if (extra == -1) {
        if (!st) st = rule(c, rest[n], NULL, 0);
    } else if (big) {
        gsym unit = -1, after = -1;
        if (!st) st = nt(c, ptr, &unit);
        gsym u[] = {c->w, GSYM_LEX(c->lx_comma), c->w, extra};
        if (!st) st = rule(c, unit, u, 4);
        if (!st) st = count_range(c, unit, lo, hi, ptr, rest[n]);
        if (!st && hi >= 1) {
            st = nt(c, ptr, &first[n]);
            if (!st) st = nt(c, ptr, &after);
            if (!st) st = count_range(c, unit, lo > 0 ? lo - 1 : 0, hi - 1, ptr, after);
            gsym r1[] = {extra, after};
            if (!st) st = rule(c, first[n], r1, 2);
        }
    } else {
        /* T_j: j extras written (j == counted: as many as the loop gives) */
        tail[0] = rest[n];
        for (size_t j = 1; j <= counted && !st; j++) st = nt(c, ptr, &tail[j]);
        for (size_t j = 0; j <= counted && !st; j++) {
            if (j >= lo) st = rule(c, tail[j], NULL, 0);
            if (!st && ((double)j < hi)) {
                gsym next = j < counted ? tail[j + 1] : tail[counted];
                gsym r[] = {c->w, GSYM_LEX(c->lx_comma), c->w, extra, next};
                st = rule(c, tail[j], r, 5);
            }
        }
        if (!st && hi >= 1) {
            st = nt(c, ptr, &first[n]);
            gsym r1[] = {extra, counted >= 1 ? tail[1] : tail[0]};
            if (!st) st = rule(c, first[n], r1, 2);
        }
    }
    for (size_t i = n; i-- > 0 && !st;) {
        if (kv[i] != -1 || (!required[i] && first[i + 1] != -1)) st = nt(c, ptr, &first[i]);
        if (!st && kv[i] != -1) {
            gsym r1[] = {kv[i], rest[i + 1]};
            st = rule(c, first[i], r1, 2);
            gsym r2[] = {c->w, GSYM_LEX(c->lx_comma), c->w, kv[i], rest[i + 1]};
            if (!st) st = rule(c, rest[i], r2, 5);
        }
        if (!st && !required[i]) {
            if (first[i + 1] != -1) st = rule(c, first[i], &first[i + 1], 1);
            if (!st) st = rule(c, rest[i], &rest[i + 1], 1);
        }
    }
    if (!st && !any_required) {
        gsym r[] = {GSYM_LEX(c->lx_lbrace), c->w, GSYM_LEX(c->lx_rbrace)};
        st = rule(c, lhs, r, 3);
    }
    if (!st && first[0] != -1) {
        gsym r[] = {GSYM_LEX(c->lx_lbrace), c->w, first[0], c->w, GSYM_LEX(c->lx_rbrace)};
        st = rule(c, lhs, r, 5);
    }
    free(first);
    free(rest);
    free(tail);
    return st;
}

/* llguidance's one exception to "min/maxProperties only with every named property
 * required": at most one or at least one of the optional ones, with no other keys. Each
 * choice an object shape of its own. */
static og_status *one_of_optional(jctx *c, gsym lhs, const gsym *kv, const bool *required,
                                  size_t n, size_t lo, double hi, const char *ptr) {
    gsym *k2 = malloc(sizeof *k2 * (n + 1));
    bool *r2 = malloc(sizeof *r2 * (n + 1));
    og_status *st = k2 && r2 ? NULL : og_oom();
    for (size_t idx = 0; idx < n && !st; idx++) {
        if (kv[idx] == -1 || required[idx]) continue;
        for (size_t i = 0; i < n; i++) {
            bool keep = hi == 1 ? i == idx || required[i] : true;
            k2[i] = keep ? kv[i] : -1;
            r2[i] = keep && kv[i] != -1 && (hi == 1 || required[i] || i == idx);
        }
        st = object_rules(c, lhs, k2, r2, n, -1, 0, 0, ptr);
    }
    if (!st && hi == 1 && lo == 0) { /* at most one: or none */
        for (size_t i = 0; i < n; i++) {
            k2[i] = required[i] ? kv[i] : -1;
            r2[i] = required[i];
        }
        st = object_rules(c, lhs, k2, r2, n, -1, 0, 0, ptr);
    }
    free(k2);
    free(r2);
    return st;
}

static og_status *object_schema(jctx *c, const cJSON *s, const char *ptr, gsym *out) {
    const cJSON *props = cJSON_GetObjectItemCaseSensitive(s, "properties");
    const cJSON *req = cJSON_GetObjectItemCaseSensitive(s, "required");
    const cJSON *addl = cJSON_GetObjectItemCaseSensitive(s, "additionalProperties");
    if (props && !cJSON_IsObject(props))
        return at_error(c, ptr, "%s", "'properties' is not an object");
    double min_p, max_p;
    OG_TRY(read_prop_counts(c, s, ptr, &min_p, &max_p));
    /* named properties: those of `properties`, then required names not among them */
    size_t cap = (size_t)cJSON_GetArraySize(props) + (size_t)cJSON_GetArraySize(req) + 1;
    const char **names = malloc(sizeof *names * cap);      /* the keys */
    const cJSON **schemas = malloc(sizeof *schemas * cap); /* NULL: additional's */
    bool *required = calloc(cap, sizeof *required);
    int *pat_of = malloc(sizeof *pat_of * cap); /* the pattern a name matches, or -1 */
    gsym *kv = malloc(sizeof *kv * cap);
    const char **excl = malloc(sizeof *excl * cap);
    og_status *st = NULL;
    if (!names || !schemas || !required || !pat_of || !kv || !excl) st = og_oom();
    if (!st && req && !cJSON_IsArray(req)) st = at_error(c, ptr, "%s", "'required' is not a list");
    size_t n = 0;
    const cJSON *p, *props_l = st ? NULL : props, *req_l = st ? NULL : req;
    cJSON_ArrayForEach(p, props_l) {
        names[n] = p->string;
        schemas[n++] = p;
    }
    cJSON_ArrayForEach(p, req_l) {
        if (!cJSON_IsString(p)) {
            st = at_error(c, ptr, "%s", "'required' holds a non-string");
            break;
        }
        size_t i = 0;
        while (i < n && strcmp(names[i], p->valuestring)) i++;
        if (i == n) {
            names[n] = p->valuestring;
            schemas[n++] = NULL;
        }
        required[i] = true;
    }
    jpat *pats = NULL;
    size_t n_pats = 0;
    if (!st) st = read_patterns(c, s, ptr, &pats, &n_pats);
    /* a named property that a pattern matches takes both schemas (patterns are
     * disjoint: one at most); a required name only, the pattern's */
    for (size_t i = 0; i < n && !st; i++) {
        pat_of[i] = -1;
        for (size_t j = 0; j < n_pats && !st && pat_of[i] < 0; j++) {
            bool m;
            st = key_matches(c, pats[j].re.s, names[i], &m);
            if (!st && m) pat_of[i] = (int)j;
        }
        if (st || pat_of[i] < 0) continue;
        const cJSON *ps = pats[pat_of[i]].schema;
        if (!schemas[i] || is_false(ps)) {
            schemas[i] = ps;
        } else if (!is_any(ps)) {
            cJSON *both = all_of2(schemas[i], ps);
            st = both ? own(c, both) : og_oom();
            if (!st) schemas[i] = both;
        }
    }
    char sub[600];
    /* each named member: key W ":" W value */
    size_t n_required = 0, n_optional = 0;
    for (size_t i = 0; i < n && !st; i++) {
        const cJSON *sch = schemas[i];
        char props_ptr[600];
        snprintf(props_ptr, sizeof props_ptr, "%s/properties", ptr);
        ptr_append(sub, sizeof sub, props_ptr, names[i]);
        if (!sch && is_false(addl)) {
            st = at_error(c, ptr, "unsatisfiable schema: required property '%s' is not allowed",
                          names[i]);
            break;
        }
        if (sch && is_false(sch)) {
            if (required[i])
                st = at_error(c, sub, "%s", "unsatisfiable schema: a required property is false");
            kv[i] = -1;
            continue;
        }
        gsym key, val = -1;
        st = string_literal(c, names[i], sub, &key);
        if (!st) {
            snprintf(props_ptr, sizeof props_ptr, "%s/additionalProperties", ptr);
            st = sch ? compile(c, sch, sub, &val)
                     : addl ? compile(c, addl, props_ptr, &val) : any_value(c, &val);
        }
        if (!st) st = nt(c, sub, &kv[i]);
        if (!st) {
            gsym r[] = {key, c->w, GSYM_LEX(c->lx_colon), c->w, val};
            st = rule(c, kv[i], r, 5);
        }
        if (required[i]) n_required++;
        else n_optional++;
    }
    /* min/maxProperties count what the named members leave (llguidance's rule) */
    size_t lo = min_p > (double)n_required ? (size_t)min_p - n_required : 0;
    double hi = max_p < 0 ? INFINITY : max_p > (double)n_required ? max_p - (double)n_required
                                                                   : 0;
    bool counts = lo > 0 || max_p >= 0;
    if (!st) st = nt(c, ptr, out);
    bool special = false;
    if (!st && n_optional > 0 && counts) {
        special = lo <= 1 && (hi == 1 || !isfinite(hi)) && n_pats == 0 && is_false(addl);
        if (special) st = one_of_optional(c, *out, kv, required, n, lo, hi, ptr);
        else if (!c->opts.lenient)
            st = at_error(c, ptr, "%s", "min/maxProperties only supported when all keys listed "
                                        "in \"properties\" are required");
    }
    /* extra members: one alternative per pattern (keys matching it, named keys aside),
     * and additionalProperties' (keys neither named nor matching a pattern) */
    gsym extra_kv = -1;
    if (special) hi = 0;
    for (size_t j = 0; j < n_pats && !st && hi > 0; j++) {
        if (is_false(pats[j].schema)) continue;
        size_t ne = 0;
        for (size_t i = 0; i < n; i++)
            if (pat_of[i] == (int)j) excl[ne++] = names[i];
        gsym key, val;
        char pp_ptr[600];
        ptr_append(pp_ptr, sizeof pp_ptr, ptr, "patternProperties");
        ptr_append(sub, sizeof sub, pp_ptr, pats[j].schema->string);
        st = key_lexeme(c, pats[j].re.s, excl, ne, NULL, 0, &key);
        if (!st) st = compile(c, pats[j].schema, sub, &val);
        if (!st && extra_kv == -1) st = nt(c, ptr, &extra_kv);
        if (!st) {
            gsym r[] = {key, c->w, GSYM_LEX(c->lx_colon), c->w, val};
            st = rule(c, extra_kv, r, 5);
        }
    }
    if (!st && !is_false(addl) && hi > 0) {
        gsym key, val;
        jbuf *vetoes = NULL;
        if (n_pats) {
            vetoes = malloc(sizeof *vetoes * n_pats);
            if (!vetoes) st = og_oom();
            for (size_t j = 0; j < n_pats && !st; j++) vetoes[j] = pats[j].re;
        }
        snprintf(sub, sizeof sub, "%s/additionalProperties", ptr);
        if (!st) st = key_lexeme(c, NULL, names, n, vetoes, n_pats, &key);
        free(vetoes);
        if (!st) st = addl ? compile(c, addl, sub, &val) : any_value(c, &val);
        if (!st && extra_kv == -1) st = nt(c, ptr, &extra_kv);
        if (!st) {
            gsym r[] = {key, c->w, GSYM_LEX(c->lx_colon), c->w, val};
            st = rule(c, extra_kv, r, 5);
        }
    }
    if (!st && !special && extra_kv == -1 && lo > 0) {
        char msg[200];
        snprintf(msg, sizeof msg, "unsatisfiable schema: minProperties (%.0f) is greater than "
                 "the number of properties (%zu)", min_p, n_required);
        st = at_error(c, ptr, "%s", msg);
    }
    if (!st && (min_p > JSON_MAX_COUNT || max_p > JSON_MAX_COUNT))
        st = at_error(c, ptr, "%s", "minProperties / maxProperties above 2^40 are not "
                                    "supported");
    if (!st && !special) st = object_rules(c, *out, kv, required, n, extra_kv, lo, hi, ptr);
    free_patterns(pats, n_pats);
    free(names);
    free(schemas);
    free(required);
    free(pat_of);
    free(kv);
    free(excl);
    return st;
}

static unsigned type_of_value(const cJSON *v) {
    return cJSON_IsNull(v) ? T_NULL : cJSON_IsBool(v) ? T_BOOLEAN
           : cJSON_IsNumber(v) ? T_NUMBER | T_INTEGER : cJSON_IsString(v) ? T_STRING
           : cJSON_IsArray(v) ? T_ARRAY : T_OBJECT;
}

/* The types a schema's values can have (T_ALL when unsure); number and integer are
 * one. */
static unsigned value_types(jctx *c, const cJSON *s) {
    if (!cJSON_IsObject(s)) return cJSON_IsFalse(s) ? 0 : T_ALL;
    const cJSON *t = cJSON_GetObjectItemCaseSensitive(s, "type");
    const cJSON *cst = cJSON_GetObjectItemCaseSensitive(s, "const");
    const cJSON *en = cJSON_GetObjectItemCaseSensitive(s, "enum");
    unsigned m = T_ALL;
    if (t) {
        og_status *st = read_types(c, t, "", &m);
        if (st) {
            og_status_free(st);
            m = T_ALL;
        }
    }
    if (m & (T_NUMBER | T_INTEGER)) m |= T_NUMBER | T_INTEGER;
    if (cst) m &= type_of_value(cst);
    if (cJSON_IsArray(en)) {
        unsigned e = 0;
        const cJSON *v;
        cJSON_ArrayForEach(v, en) e |= type_of_value(v);
        m &= e;
    }
    return m;
}

/* The enum or const values of s when they are all strings, booleans or null (values
 * compared one by one: numbers are not), else NULL. */
static const cJSON *literal_values(const cJSON *s, cJSON *one_holder) {
    const cJSON *cst = cJSON_GetObjectItemCaseSensitive(s, "const");
    const cJSON *en = cJSON_GetObjectItemCaseSensitive(s, "enum");
    const cJSON *list = en;
    if (cst) {
        one_holder->child = (cJSON *)cst;
        list = one_holder;
    }
    if (!cJSON_IsArray(list) && list != one_holder) return NULL;
    const cJSON *v;
    cJSON_ArrayForEach(v, list)
        if (!(cJSON_IsString(v) || cJSON_IsBool(v) || cJSON_IsNull(v))) return NULL;
    return list;
}

/* Whether no value satisfies both a and b, as far as llguidance proves it for oneOf
 * (learnt from its verdicts): types apart; string/boolean/null literals apart; or, both
 * objects only, a property one of them requires whose schemas in the two are apart (a
 * property the other does not name takes its additionalProperties). A $ref or allOf
 * at the top of either is not looked into. */
static bool disjoint(jctx *c, const cJSON *a, const cJSON *b, int depth) {
    if (cJSON_IsFalse(a) || cJSON_IsFalse(b)) return true;
    if (!cJSON_IsObject(a) || !cJSON_IsObject(b) || depth > JSON_MAX_MERGE_DEPTH) return false;
    static const char *const opaque[] = {"$ref", "allOf", "anyOf", "oneOf"};
    for (size_t i = 0; i < sizeof opaque / sizeof opaque[0]; i++)
        if (cJSON_GetObjectItemCaseSensitive(a, opaque[i]) ||
            cJSON_GetObjectItemCaseSensitive(b, opaque[i]))
            return false;
    unsigned common = value_types(c, a) & value_types(c, b);
    if (!common) return true;
    cJSON ha = {.type = cJSON_Array}, hb = {.type = cJSON_Array};
    const cJSON *la = literal_values(a, &ha), *lb = literal_values(b, &hb);
    if (la && lb) {
        const cJSON *x, *y;
        bool meet = false;
        cJSON_ArrayForEach(x, la) cJSON_ArrayForEach(y, lb) meet |= cJSON_Compare(x, y, true);
        return !meet;
    }
    if (common != T_OBJECT) return false;
    const cJSON *side[2] = {a, b};
    for (int k = 0; k < 2; k++) {
        const cJSON *req = cJSON_GetObjectItemCaseSensitive(side[k], "required"), *r;
        cJSON_ArrayForEach(r, req) {
            if (!cJSON_IsString(r)) continue;
            const cJSON *ps[2];
            for (int j = 0; j < 2; j++) {
                const cJSON *props = cJSON_GetObjectItemCaseSensitive(side[j], "properties");
                ps[j] = cJSON_GetObjectItemCaseSensitive(props, r->valuestring);
                if (!ps[j]) ps[j] = cJSON_GetObjectItemCaseSensitive(side[j],
                                                                     "additionalProperties");
            }
            if (ps[0] && ps[1] && disjoint(c, ps[0], ps[1], depth + 1)) return true;
        }
    }
    return false;
}

/* The body of schema s (a plain object: no $ref, no allOf) as rules of lhs. */
static og_status *compile_plain(jctx *c, const cJSON *s, const char *ptr, gsym lhs) {
    OG_TRY(check_keywords(c, s, ptr));
    const cJSON *any_of = cJSON_GetObjectItemCaseSensitive(s, "anyOf");
    const cJSON *one_of = cJSON_GetObjectItemCaseSensitive(s, "oneOf");
    if (any_of || one_of) {
        const char *kw = any_of ? "anyOf" : "oneOf";
        const cJSON *list = any_of ? any_of : one_of;
        if (any_of && one_of)
            return at_error(c, ptr, "%s", "anyOf together with oneOf is not supported");
        if (!cJSON_IsArray(list) || !list->child)
            return at_error(c, ptr, "unsatisfiable schema: %s is empty", kw);
        if (one_of && !c->opts.coerce_one_of && !c->opts.lenient) {
            /* as anyOf when no two branches can both hold */
            const cJSON *e, *f;
            cJSON_ArrayForEach(e, list) for (f = e->next; f; f = f->next)
                if (!disjoint(c, e, f, 0))
                    return at_error(c, ptr, "%s",
                                    "oneOf whose branches may overlap is not supported "
                                    "(llguidance's coerce_one_of is off)");
        }
        /* siblings: each branch is intersected with them */
        cJSON *sib = cJSON_Duplicate(s, true);
        OG_TRY(sib ? own(c, sib) : og_oom());
        cJSON_DeleteItemFromObjectCaseSensitive(sib, kw);
        const cJSON *e;
        int i = 0;
        bool any_branch = false;
        cJSON_ArrayForEach(e, list) {
            char sub[600];
            ptr_index(sub, sizeof sub, ptr, kw, i++);
            if (is_false(e)) continue;
            gsym b;
            if (!sib->child) {
                OG_TRY(compile(c, e, sub, &b));
            } else {
                cJSON *m = cJSON_CreateObject();
                OG_TRY(m ? own(c, m) : og_oom());
                OG_TRY(flatten(c, sib, ptr, 0, m));
                OG_TRY(flatten(c, e, sub, 0, m));
                OG_TRY(compile(c, m, sub, &b));
            }
            OG_TRY(rule(c, lhs, &b, 1));
            any_branch = true;
        }
        if (!any_branch) return at_error(c, ptr, "unsatisfiable schema: every %s branch is false", kw);
        return NULL;
    }
    unsigned types;
    OG_TRY(read_types(c, cJSON_GetObjectItemCaseSensitive(s, "type"), ptr, &types));
    const cJSON *cst = cJSON_GetObjectItemCaseSensitive(s, "const");
    const cJSON *en = cJSON_GetObjectItemCaseSensitive(s, "enum");
    if (cst || en) {
        bool any = false;
        const cJSON *e;
        cJSON *one = NULL;
        if (cst) {
            one = cJSON_CreateArray();
            OG_TRY(one ? own(c, one) : og_oom());
            cJSON_AddItemToArray(one, cJSON_Duplicate(cst, true));
            en = one;
        }
        if (!cJSON_IsArray(en)) return at_error(c, ptr, "%s", "'enum' is not a list");
        cJSON_ArrayForEach(e, en) {
            unsigned t;
            if (cJSON_IsNull(e)) t = T_NULL;
            else if (cJSON_IsBool(e)) t = T_BOOLEAN;
            else if (cJSON_IsNumber(e))
                t = e->valuedouble == floor(e->valuedouble) ? T_NUMBER | T_INTEGER : T_NUMBER;
            else if (cJSON_IsString(e)) t = T_STRING;
            else if (cJSON_IsArray(e)) t = T_ARRAY;
            else t = T_OBJECT;
            if (!(t & types)) continue;
            gsym v;
            OG_TRY(literal_value(c, e, ptr, &v));
            OG_TRY(rule(c, lhs, &v, 1));
            any = true;
        }
        if (!any)
            return at_error(c, ptr, "%s", "unsatisfiable schema: no enum or const value fits");
        return NULL;
    }
    gsym v;
    if (types & T_NULL) OG_TRY(rule(c, lhs, (gsym[]){GSYM_LEX(c->lx_null)}, 1));
    if (types & T_BOOLEAN) {
        OG_TRY(rule(c, lhs, (gsym[]){GSYM_LEX(c->lx_true)}, 1));
        OG_TRY(rule(c, lhs, (gsym[]){GSYM_LEX(c->lx_false)}, 1));
    }
    if (types & T_STRING) {
        OG_TRY(string_schema(c, s, ptr, &v));
        OG_TRY(rule(c, lhs, &v, 1));
    }
    if (types & T_NUMBER) {
        OG_TRY(number_schema(c, s, ptr, false, &v));
        OG_TRY(rule(c, lhs, &v, 1));
    } else if (types & T_INTEGER) {
        OG_TRY(number_schema(c, s, ptr, true, &v));
        OG_TRY(rule(c, lhs, &v, 1));
    }
    if (types & T_ARRAY) {
        OG_TRY(array_schema(c, s, ptr, &v));
        OG_TRY(rule(c, lhs, &v, 1));
    }
    if (types & T_OBJECT) {
        OG_TRY(object_schema(c, s, ptr, &v));
        OG_TRY(rule(c, lhs, &v, 1));
    }
    if (!types) return at_error(c, ptr, "%s", "unsatisfiable schema: no type left");
    return NULL;
}

static size_t memo_slot(const jctx *c, const cJSON *s) {
    size_t h = (size_t)(uintptr_t)s * 0x9E3779B97F4A7C15ull;
    size_t i = (h >> 17) & (c->cap_memo - 1);
    while (c->memo[i].schema && c->memo[i].schema != s) i = (i + 1) & (c->cap_memo - 1);
    return i;
}

static og_status *memo_put(jctx *c, const cJSON *s, gsym nt_) {
    if (2 * (c->n_memo + 1) > c->cap_memo) {
        size_t cap = c->cap_memo ? c->cap_memo * 2 : 64;
        memo_ent *old = c->memo;
        size_t old_cap = c->cap_memo;
        c->memo = calloc(cap, sizeof *c->memo);
        if (!c->memo) {
            c->memo = old;
            return og_oom();
        }
        c->cap_memo = cap;
        for (size_t i = 0; i < old_cap; i++)
            if (old[i].schema) c->memo[memo_slot(c, old[i].schema)] = old[i];
        free(old);
    }
    c->memo[memo_slot(c, s)] = (memo_ent){s, nt_};
    c->n_memo++;
    return NULL;
}

static og_status *compile_new(jctx *c, const cJSON *s, const char *ptr, gsym *out);

static og_status *compile(jctx *c, const cJSON *s, const char *ptr, gsym *out) {
    if (c->cap_memo) {
        const memo_ent *e = &c->memo[memo_slot(c, s)];
        if (e->schema) {
            *out = e->nt;
            return NULL;
        }
    }
    if (c->depth >= JSON_MAX_DEPTH)
        return at_error(c, ptr, "schemas nested more than %s deep are not supported", "256");
    c->depth++;
    og_status *st = compile_new(c, s, ptr, out);
    c->depth--;
    return st;
}

static og_status *compile_new(jctx *c, const cJSON *s, const char *ptr, gsym *out) {
    if (is_false(s)) return at_error(c, ptr, "%s", "unsatisfiable schema: schema is false");
    if (is_any(s)) return any_value(c, out);
    if (!cJSON_IsObject(s)) return at_error(c, ptr, "%s", "a schema is an object or a boolean");
    gsym lhs;
    OG_TRY(nt(c, ptr, &lhs));
    OG_TRY(memo_put(c, s, lhs));
    *out = lhs;
    const cJSON *ref = cJSON_GetObjectItemCaseSensitive(s, "$ref");
    const cJSON *all = cJSON_GetObjectItemCaseSensitive(s, "allOf");
    if (ref && !all) {
        /* a bare reference (annotations aside) is the target's nonterminal */
        bool bare = true;
        const cJSON *k;
        cJSON_ArrayForEach(k, s) {
            static const char *const notes[] = {"$ref", "title", "description", "$comment",
                                                "default", "examples", "$id", "$schema",
                                                "$defs", "definitions"};
            bool note = false;
            for (size_t i = 0; i < sizeof notes / sizeof notes[0]; i++)
                note |= !strcmp(k->string, notes[i]);
            bare &= note;
        }
        if (bare) {
            if (!cJSON_IsString(ref)) return at_error(c, ptr, "%s", "'$ref' is not a string");
            const cJSON *t;
            OG_TRY(resolve_ref(c, ref->valuestring, ptr, &t));
            gsym tn;
            char sub[600];
            snprintf(sub, sizeof sub, "%s", ref->valuestring[1] ? ref->valuestring + 1 : "");
            OG_TRY(compile(c, t, sub, &tn));
            return rule(c, lhs, &tn, 1);
        }
    }
    if (ref || all) {
        cJSON *m = cJSON_CreateObject();
        OG_TRY(m ? own(c, m) : og_oom());
        OG_TRY(flatten(c, s, ptr, 0, m));
        return compile_plain(c, m, ptr, lhs);
    }
    return compile_plain(c, s, ptr, lhs);
}

static og_status *front(const cJSON *schema, const json_opts *opts, const char *where,
                        glex *lex, gcfg *cfg, gsym *out) {
    jctx c = {.opts = *opts, .lex = lex, .cfg = cfg, .root = schema,
              .where = where ? where : "JSON schema"};
    og_status *st = ctx_init(&c);
    if (!st) st = compile(&c, schema, "", out);
    for (size_t i = 0; i < c.n_owned; i++) cJSON_Delete(c.owned[i]);
    free(c.owned);
    free(c.memo);
    glex_free(c.scratch);
    return st;
}

static og_status *read_options(const cJSON *xg, json_opts *o);

/* An embedded schema (Lark's %json) takes its own "x-guidance" options, as a whole
 * schema does. */
og_status *guide_front_json_value(const cJSON *schema, const char *where, glex *lex,
                                  gcfg *cfg, gsym *out) {
    json_opts opts;
    OG_TRY(read_options(cJSON_IsObject(schema)
                            ? cJSON_GetObjectItemCaseSensitive(schema, "x-guidance") : NULL,
                        &opts));
    return front(schema, &opts, where, lex, cfg, out);
}

/* Deepest nesting of arrays and objects in the schema's text that llguidance parses (its
 * JSON reader's recursion limit, less the levels of the request that wraps the schema). */
#define JSON_MAX_TEXT_DEPTH 124

static int text_depth(const cJSON *v) {
    int d = 0;
    const cJSON *e;
    cJSON_ArrayForEach(e, v) {
        int k = text_depth(e);
        if (k > d) d = k;
    }
    return cJSON_IsArray(v) || cJSON_IsObject(v) ? d + 1 : 0;
}

static og_status *opt_error(const char *field, const char *why) {
    return og_errorf(OG_ERR_INVALID_ARGUMENT, "JSON schema at /x-guidance/%s: %s", field, why);
}

/* The "x-guidance" options (xg may be NULL). Strings point into xg. */
static og_status *read_options(const cJSON *xg, json_opts *o) {
    *o = (json_opts){.ws = JSON_WS_FLEXIBLE, .item_sep = ",", .key_sep = ":"};
    if (!xg) return NULL;
    if (!cJSON_IsObject(xg))
        return og_errorf(OG_ERR_INVALID_ARGUMENT, "JSON schema at /x-guidance: not an object");
    bool flexible = true;
    const char *pattern = NULL;
    const cJSON *k;
    cJSON_ArrayForEach(k, xg) {
        const char *f = k->string;
        bool is_bool = !strcmp(f, "whitespace_flexible") || !strcmp(f, "coerce_one_of") ||
                       !strcmp(f, "lenient") || !strcmp(f, "json_allow_general_unicode_escapes");
        bool is_str = !strcmp(f, "whitespace_pattern") || !strcmp(f, "item_separator") ||
                      !strcmp(f, "key_separator") || !strcmp(f, "json_allowed_escapes");
        if (!is_bool && !is_str) return opt_error(f, "unknown option");
        if (is_bool && !cJSON_IsBool(k)) return opt_error(f, "not a boolean");
        if (is_str && !cJSON_IsString(k) && !(cJSON_IsNull(k) && !strcmp(f, "whitespace_pattern")))
            return opt_error(f, "not a string");
        bool on = cJSON_IsTrue(k);
        if (!strcmp(f, "whitespace_flexible")) flexible = on;
        else if (!strcmp(f, "coerce_one_of")) o->coerce_one_of = on;
        else if (!strcmp(f, "lenient")) o->lenient = on;
        else if (!strcmp(f, "json_allow_general_unicode_escapes") && on)
            return opt_error(f, "only false is supported");
        else if (!strcmp(f, "whitespace_pattern")) pattern = cJSON_IsString(k) ? k->valuestring : NULL;
        else if (!strcmp(f, "item_separator")) o->item_sep = k->valuestring;
        else if (!strcmp(f, "key_separator")) o->key_sep = k->valuestring;
        else if (!strcmp(f, "json_allowed_escapes") && strcmp(k->valuestring, "nrbtf\\\"u"))
            return opt_error(f, "only the default (all of nrbtf\\\"u) is supported");
    }
    o->ws = pattern ? pattern : flexible ? JSON_WS_FLEXIBLE : NULL;
    return NULL;
}

og_status *guide_front_json_schema(const char *src, size_t len, glex *lex, gcfg *cfg) {
    const char *end = NULL;
    cJSON *schema = cJSON_ParseWithLengthOpts(src, len, &end, false);
    if (!schema) {
        size_t at = end && end >= src ? (size_t)(end - src) : 0;
        return og_errorf(OG_ERR_INVALID_ARGUMENT, "JSON schema: invalid JSON at offset %zu",
                         at);
    }
    og_status *st = NULL;
    if (text_depth(schema) > JSON_MAX_TEXT_DEPTH)
        st = og_errorf(OG_ERR_INVALID_ARGUMENT,
                       "JSON schema: arrays and objects nested more than %d deep (llguidance's "
                       "limit)", JSON_MAX_TEXT_DEPTH);
    json_opts opts;
    if (!st) st = read_options(cJSON_GetObjectItemCaseSensitive(schema, "x-guidance"), &opts);
    gsym start;
    if (!st) st = front(schema, &opts, "JSON schema", lex, cfg, &start);
    if (!st) st = gcfg_set_start(cfg, start);
    cJSON_Delete(schema);
    return st;
}
