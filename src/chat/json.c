/* JSON in and out, as Python's json module does it: parsing keeps object key order and
 * the int/float distinction ("1" is an int, "1.0" a float), and tojson writes what
 * json.dumps(x, ensure_ascii=..., indent=..., separators=..., sort_keys=...) writes.
 *
 * Parsing uses cJSON, which stores every number as a double; a scan of the text finds
 * each number literal in document order (the order cJSON builds its tree in), so that
 * integers keep their exact value and their type. */
#include "chat/eval.h"

#include "chat/ustr.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { MAX_JSON_DEPTH = 512 };

typedef struct numlit {
    const char *s;
    size_t len;
    bool is_int;
} numlit;

typedef struct jctx {
    crt *rt;
    const char *what;
    numlit *nums;
    size_t nnum, next;
} jctx;

/* Number literals outside strings, in order. */
static og_status *scan_numbers(jctx *j, const char *s, size_t len) {
    size_t cap = 16;
    j->nums = malloc(cap * sizeof *j->nums);
    if (!j->nums) return og_oom();
    for (size_t i = 0; i < len;) {
        char c = s[i];
        if (c == '"') { /* skip the string: the next quote not escaped by a backslash */
            const char *q = s + i + 1;
            for (;;) {
                q = memchr(q, '"', (size_t)(s + len - q));
                if (!q) return NULL; /* unterminated: cJSON has said so already */
                size_t bs = 0;
                while (q - bs - 1 >= s + i + 1 && q[-(ptrdiff_t)bs - 1] == '\\') bs++;
                if (bs % 2 == 0) break;
                q++;
            }
            i = (size_t)(q - s) + 1;
            continue;
        }
        if (c == '-' || (c >= '0' && c <= '9')) {
            size_t k = i + 1;
            bool is_int = true;
            while (k < len && ((s[k] >= '0' && s[k] <= '9') || s[k] == '.' || s[k] == 'e' ||
                               s[k] == 'E' || s[k] == '+' || s[k] == '-')) {
                if (s[k] == '.' || s[k] == 'e' || s[k] == 'E') is_int = false;
                k++;
            }
            if (j->nnum == cap) {
                numlit *n = realloc(j->nums, (cap *= 2) * sizeof *n);
                if (!n) return og_oom();
                j->nums = n;
            }
            j->nums[j->nnum++] = (numlit){s + i, k - i, is_int};
            i = k;
            continue;
        }
        i++;
    }
    return NULL;
}

static og_status *jerr(jctx *j, const char *fmt, const char *detail) {
    return og_errorf(OG_ERR_INVALID_ARGUMENT, "%s: %s%s", j->what, fmt, detail ? detail : "");
}

static og_status *convert(jctx *j, const cJSON *n, int depth, cv *out) {
    crt *rt = j->rt;
    if (depth > MAX_JSON_DEPTH) return jerr(j, "nested too deeply", NULL);
    if (cJSON_IsNull(n)) {
        *out = cv_none();
    } else if (cJSON_IsBool(n)) {
        *out = cv_bool(cJSON_IsTrue(n));
    } else if (cJSON_IsNumber(n)) {
        if (j->next >= j->nnum) return jerr(j, "internal error: number literals out of step", NULL);
        numlit lit = j->nums[j->next++];
        char buf[400];
        size_t l = lit.len < sizeof buf - 1 ? lit.len : sizeof buf - 1;
        memcpy(buf, lit.s, l);
        buf[l] = 0;
        if (lit.is_int) {
            errno = 0;
            long long v = strtoll(buf, NULL, 10);
            if (errno)
                return og_errorf(OG_ERR_UNSUPPORTED, "%s: the integer %s does not fit in 64 bits",
                                 j->what, buf);
            *out = cv_int(v);
        } else {
            *out = cv_float(strtod(buf, NULL));
        }
    } else if (cJSON_IsString(n)) {
        size_t len = strlen(n->valuestring);
        if (!u8_valid(n->valuestring, len)) return jerr(j, "a string is not valid UTF-8", NULL);
        OG_TRY(cv_make_str(rt, n->valuestring, len, out));
    } else if (cJSON_IsArray(n)) {
        cv_list *l = cv_list_new(rt, (size_t)cJSON_GetArraySize(n), CV_SEQ_LIST);
        if (!l) return crt_mem_err(rt);
        for (const cJSON *c = n->child; c; c = c->next) OG_TRY(convert(j, c, depth + 1, &l->v[l->n++]));
        *out = cv_of_list(l);
    } else if (cJSON_IsObject(n)) {
        cv_dict *d = cv_dict_new(rt, (size_t)cJSON_GetArraySize(n));
        if (!d) return crt_mem_err(rt);
        for (const cJSON *c = n->child; c; c = c->next) {
            cv k, v;
            size_t kl = strlen(c->string);
            if (!u8_valid(c->string, kl)) return jerr(j, "a key is not valid UTF-8", NULL);
            OG_TRY(cv_make_str(rt, c->string, kl, &k));
            OG_TRY(convert(j, c, depth + 1, &v));
            OG_TRY(cv_dict_set(rt, d, k, v));
        }
        *out = cv_of_dict(d);
    } else {
        return jerr(j, "unsupported JSON value", NULL);
    }
    return NULL;
}

og_status *chat_json_parse(crt *rt, const char *json, size_t len, const char *what, cv *out) {
    jctx j = {.rt = rt, .what = what ? what : "JSON"};
    const char *end = NULL;
    cJSON *root = cJSON_ParseWithLengthOpts(json, len, &end, 0);
    if (!root) {
        char where[64] = "";
        if (end && end >= json && end <= json + len)
            snprintf(where, sizeof where, " (at byte %zu)", (size_t)(end - json));
        else if (cJSON_GetErrorPtr())
            snprintf(where, sizeof where, " (near byte %zu)", (size_t)(cJSON_GetErrorPtr() - json));
        return jerr(&j, "not valid JSON", where);
    }
    for (const char *p = end; p && p < json + len; p++)
        if (*p != ' ' && *p != '\t' && *p != '\n' && *p != '\r' && *p != 0) {
            cJSON_Delete(root);
            return jerr(&j, "extra text after the JSON value", NULL);
        }
    og_status *st = scan_numbers(&j, json, len);
    if (!st) st = convert(&j, root, 0, out);
    free(j.nums);
    cJSON_Delete(root);
    return st;
}

/* ---- json.dumps --------------------------------------------------------------------- */

typedef struct jdump {
    crt *rt;
    sbuf *b;
    bool ascii, sort_keys;
    const char *indent, *item_sep, *key_sep;
} jdump;

#define PUT(s, n)                                                                        \
    do {                                                                                 \
        if (!sbuf_add(d->b, (s), (n))) return sbuf_err(d->rt, d->b);                     \
    } while (0)
#define PUTS(s) PUT(s, strlen(s))

static og_status *dump_string(jdump *d, const char *s, size_t len) {
    PUT("\"", 1);
    size_t run = 0;
    for (size_t i = 0; i < len;) {
        int32_t cp;
        size_t k = u8_next(s, len, i, &cp);
        char esc[16];
        const char *e = NULL;
        switch (cp) {
        case '"': e = "\\\""; break;
        case '\\': e = "\\\\"; break;
        case '\n': e = "\\n"; break;
        case '\r': e = "\\r"; break;
        case '\t': e = "\\t"; break;
        case '\b': e = "\\b"; break;
        case '\f': e = "\\f"; break;
        default:
            if (cp < 0x20 || (d->ascii && (cp < 0x20 || cp > 0x7E))) {
                if (cp > 0xFFFF) {
                    int32_t v = cp - 0x10000;
                    snprintf(esc, sizeof esc, "\\u%04x\\u%04x", (unsigned)(0xD800 | (v >> 10)),
                             (unsigned)(0xDC00 | (v & 0x3FF)));
                } else {
                    snprintf(esc, sizeof esc, "\\u%04x", (unsigned)cp);
                }
                e = esc;
            }
        }
        if (e) {
            PUT(s + run, i - run);
            PUTS(e);
            run = i + k;
        }
        i += k;
    }
    PUT(s + run, len - run);
    PUT("\"", 1);
    return NULL;
}

static og_status *dump_float(jdump *d, double f) {
    char buf[32];
    if (isnan(f)) PUTS("NaN");
    else if (isinf(f)) PUTS(f < 0 ? "-Infinity" : "Infinity");
    else {
        cv_float_repr(f, buf);
        PUTS(buf);
    }
    return NULL;
}

static og_status *newline(jdump *d, int level) {
    PUT("\n", 1);
    for (int i = 0; i < level; i++) PUTS(d->indent);
    return NULL;
}

static og_status *not_serializable(jdump *d, cv v) {
    return chat_type_err(d->rt, "Object of type %s is not JSON serializable", cv_type_name(v));
}

static og_status *dump_key(jdump *d, cv k) {
    char buf[40];
    switch ((cv_kind)k.kind) {
    case CV_STR: return dump_string(d, k.s->s, k.s->len);
    case CV_BOOL: return dump_string(d, k.b ? "true" : "false", k.b ? 4 : 5);
    case CV_NONE: return dump_string(d, "null", 4);
    case CV_INT:
        snprintf(buf, sizeof buf, "%lld", (long long)k.i);
        return dump_string(d, buf, strlen(buf));
    case CV_FLOAT:
        if (isnan(k.f)) strcpy(buf, "NaN");
        else if (isinf(k.f)) strcpy(buf, k.f < 0 ? "-Infinity" : "Infinity");
        else cv_float_repr(k.f, buf);
        return dump_string(d, buf, strlen(buf));
    default:
        return chat_type_err(d->rt, "keys must be str, int, float, bool or None, not %s",
                             cv_type_name(k));
    }
}

static og_status *dump(jdump *d, cv v, int level);

static og_status *dump_dict(jdump *d, const cv_dict *m, int level) {
    if (m->n == 0) {
        PUT("{}", 2);
        return NULL;
    }
    size_t *order = crt_alloc(d->rt, m->n * sizeof *order);
    if (!order) return crt_mem_err(d->rt);
    for (size_t i = 0; i < m->n; i++) order[i] = i;
    if (d->sort_keys) /* insertion sort: stable, and key comparisons may fail */
        for (size_t i = 1; i < m->n; i++)
            for (size_t k = i; k > 0; k--) {
                int c;
                OG_TRY(cv_cmp(d->rt, m->e[order[k]].key, m->e[order[k - 1]].key, "<", &c));
                if (c >= 0) break;
                size_t t = order[k];
                order[k] = order[k - 1];
                order[k - 1] = t;
            }
    PUT("{", 1);
    if (d->indent) OG_TRY(newline(d, level + 1));
    for (size_t i = 0; i < m->n; i++) {
        if (i) {
            PUTS(d->item_sep);
            if (d->indent) OG_TRY(newline(d, level + 1));
        }
        OG_TRY(dump_key(d, m->e[order[i]].key));
        PUTS(d->key_sep);
        OG_TRY(dump(d, m->e[order[i]].val, level + 1));
    }
    if (d->indent) OG_TRY(newline(d, level));
    PUT("}", 1);
    return NULL;
}

static og_status *dump(jdump *d, cv v, int level) {
    char buf[40];
    if (level > MAX_JSON_DEPTH)
        return crt_err(d->rt, OG_ERR_RUNTIME, "RecursionError: maximum recursion depth exceeded "
                       "while encoding a JSON object");
    switch ((cv_kind)v.kind) {
    case CV_NONE: PUTS("null"); return NULL;
    case CV_BOOL: PUTS(v.b ? "true" : "false"); return NULL;
    case CV_INT:
        snprintf(buf, sizeof buf, "%lld", (long long)v.i);
        PUTS(buf);
        return NULL;
    case CV_FLOAT: return dump_float(d, v.f);
    case CV_STR: return dump_string(d, v.s->s, v.s->len);
    case CV_DICT: return dump_dict(d, v.d, level);
    case CV_LIST: {
        if (v.l->seq != CV_SEQ_LIST && v.l->seq != CV_SEQ_TUPLE) return not_serializable(d, v);
        if (v.l->n == 0) {
            PUT("[]", 2);
            return NULL;
        }
        PUT("[", 1);
        if (d->indent) OG_TRY(newline(d, level + 1));
        for (size_t i = 0; i < v.l->n; i++) {
            if (i) {
                PUTS(d->item_sep);
                if (d->indent) OG_TRY(newline(d, level + 1));
            }
            OG_TRY(dump(d, v.l->v[i], level + 1));
        }
        if (d->indent) OG_TRY(newline(d, level));
        PUT("]", 1);
        return NULL;
    }
    default: return not_serializable(d, v);
    }
}

og_status *chat_json_dump(crt *rt, sbuf *b, cv v, bool ensure_ascii, const char *indent,
                          const char *item_sep, const char *key_sep, bool sort_keys) {
    jdump d = {rt, b, ensure_ascii, sort_keys, indent,
               item_sep ? item_sep : indent ? "," : ", ", key_sep ? key_sep : ": "};
    return dump(&d, v, 0);
}
