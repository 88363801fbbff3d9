/* Tokenizer building blocks: buffers, piece lists, a string map, UTF-8 and Unicode
 * character classes, literal/regex patterns. */
#include "tokenizer/tok_internal.h"

#include <math.h>

#include <stdlib.h>
#include <string.h>
#include <utf8proc.h>

bool tok_buf_reserve(tok_buf *b, size_t extra) {
    if (b->n + extra <= b->cap) return true;
    size_t cap = b->cap ? b->cap : 64;
    while (cap < b->n + extra) cap *= 2;
    char *p = realloc(b->p, cap);
    if (!p) return false;
    b->p = p;
    b->cap = cap;
    return true;
}

bool tok_buf_put(tok_buf *b, const void *s, size_t n) {
    if (!tok_buf_reserve(b, n + 1)) return false;
    if (n) memcpy(b->p + b->n, s, n);
    b->n += n;
    b->p[b->n] = 0; /* handy for NUL-terminated results; not counted */
    return true;
}

void tok_buf_free(tok_buf *b) {
    free(b->p);
    b->p = NULL;
    b->n = b->cap = 0;
}

bool tok_plist_push(tok_plist *l, size_t off, size_t len, int32_t id, bool at_start) {
    if (l->n == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 16;
        tok_piece *v = realloc(l->v, cap * sizeof *v);
        if (!v) return false;
        l->v = v;
        l->cap = cap;
    }
    l->v[l->n++] = (tok_piece){off, len, id, at_start};
    return true;
}

void tok_plist_free(tok_plist *l) {
    free(l->v);
    l->v = NULL;
    l->n = l->cap = 0;
}

/* ---- string map (FNV-1a, linear probing) ---- */

uint32_t tok_hash(const void *s, size_t n) {
    const unsigned char *p = s;
    uint32_t h = 2166136261u;
    for (size_t i = 0; i < n; i++) h = (h ^ p[i]) * 16777619u;
    return h;
}

static bool smap_grow(tok_smap *m) {
    size_t cap = m->cap ? m->cap * 2 : 64;
    uint32_t *slots = calloc(cap, sizeof *slots);
    if (!slots) return false;
    for (size_t i = 0; i < m->n; i++) {
        size_t j = m->ents[i].hash & (cap - 1);
        while (slots[j]) j = (j + 1) & (cap - 1);
        slots[j] = (uint32_t)i + 1;
    }
    free(m->slots);
    m->slots = slots;
    m->cap = cap;
    return true;
}

bool tok_smap_put(tok_smap *m, const char *key, size_t len, int32_t val) {
    uint32_t h = tok_hash(key, len);
    if (m->cap) {
        size_t j = h & (m->cap - 1);
        for (; m->slots[j]; j = (j + 1) & (m->cap - 1)) {
            tok_smap_ent *e = &m->ents[m->slots[j] - 1];
            if (e->hash == h && e->len == len && !memcmp(m->pool.p + e->off, key, len)) {
                e->val = val;
                return true;
            }
        }
    }
    if ((m->n + 1) * 2 > m->cap && !smap_grow(m)) return false;
    if (m->n == m->ecap) {
        size_t ecap = m->ecap ? m->ecap * 2 : 64;
        tok_smap_ent *ents = realloc(m->ents, ecap * sizeof *ents);
        if (!ents) return false;
        m->ents = ents;
        m->ecap = ecap;
    }
    size_t off = m->pool.n;
    if (!tok_buf_put(&m->pool, key, len)) return false;
    m->pool.n++; /* keep the NUL so keys can be used as C strings */
    m->ents[m->n] = (tok_smap_ent){off, (uint32_t)len, h, val};
    size_t j = h & (m->cap - 1);
    while (m->slots[j]) j = (j + 1) & (m->cap - 1);
    m->slots[j] = (uint32_t)++m->n;
    return true;
}

int32_t tok_smap_get(const tok_smap *m, const char *key, size_t len, int32_t missing) {
    if (!m->cap) return missing;
    uint32_t h = tok_hash(key, len);
    for (size_t j = h & (m->cap - 1); m->slots[j]; j = (j + 1) & (m->cap - 1)) {
        const tok_smap_ent *e = &m->ents[m->slots[j] - 1];
        if (e->hash == h && e->len == len && !memcmp(m->pool.p + e->off, key, len))
            return e->val;
    }
    return missing;
}

void tok_smap_free(tok_smap *m) {
    free(m->slots);
    free(m->ents);
    tok_buf_free(&m->pool);
    memset(m, 0, sizeof *m);
}

/* ---- UTF-8 ---- */

size_t tok_utf8_next(const char *s, size_t n, int32_t *cp) {
    const unsigned char *p = (const unsigned char *)s;
    unsigned c = p[0];
    if (c < 0x80 || n < 2) {
        *cp = (int32_t)c;
        return 1;
    }
    if (c < 0xE0) {
        *cp = (int32_t)(((c & 0x1F) << 6) | (p[1] & 0x3F));
        return 2;
    }
    if (c < 0xF0 || n < 4) {
        *cp = n < 3 ? (int32_t)c
                    : (int32_t)(((c & 0x0F) << 12) | ((p[1] & 0x3F) << 6) | (p[2] & 0x3F));
        return n < 3 ? 1 : 3;
    }
    *cp = (int32_t)(((c & 0x07) << 18) | ((p[1] & 0x3F) << 12) | ((p[2] & 0x3F) << 6) |
                    (p[3] & 0x3F));
    return 4;
}

size_t tok_utf8_put(int32_t cp, char out[4]) {
    uint32_t c = (uint32_t)cp;
    if (c < 0x80) {
        out[0] = (char)c;
        return 1;
    }
    if (c < 0x800) {
        out[0] = (char)(0xC0 | (c >> 6));
        out[1] = (char)(0x80 | (c & 0x3F));
        return 2;
    }
    if (c < 0x10000) {
        out[0] = (char)(0xE0 | (c >> 12));
        out[1] = (char)(0x80 | ((c >> 6) & 0x3F));
        out[2] = (char)(0x80 | (c & 0x3F));
        return 3;
    }
    out[0] = (char)(0xF0 | (c >> 18));
    out[1] = (char)(0x80 | ((c >> 12) & 0x3F));
    out[2] = (char)(0x80 | ((c >> 6) & 0x3F));
    out[3] = (char)(0x80 | (c & 0x3F));
    return 4;
}

/* Length of the valid sequence starting at s (1..4), or 0 if invalid; *bad gets how
 * many bytes form the maximal invalid subpart (Unicode's "maximal subpart" rule, which
 * is what Python's "replace" error handler follows). */
static size_t utf8_seq(const unsigned char *s, size_t n, size_t *bad) {
    unsigned c = s[0];
    if (c < 0x80) return 1;
    size_t need;
    unsigned lo = 0x80, hi = 0xBF;
    if (c >= 0xC2 && c <= 0xDF) need = 1;
    else if (c >= 0xE0 && c <= 0xEF) {
        need = 2;
        if (c == 0xE0) lo = 0xA0;
        if (c == 0xED) hi = 0x9F;
    } else if (c >= 0xF0 && c <= 0xF4) {
        need = 3;
        if (c == 0xF0) lo = 0x90;
        if (c == 0xF4) hi = 0x8F;
    } else {
        *bad = 1;
        return 0;
    }
    size_t i = 1;
    for (; i <= need; i++) {
        if (i >= n) break;
        unsigned b = s[i];
        unsigned l = i == 1 ? lo : 0x80, h = i == 1 ? hi : 0xBF;
        if (b < l || b > h) break;
    }
    if (i == need + 1) return need + 1;
    *bad = i;
    return 0;
}

size_t tok_utf8_valid_prefix(const char *s, size_t n) {
    const unsigned char *p = (const unsigned char *)s;
    size_t i = 0;
    while (i < n) {
        if (p[i] < 0x80) {
            i++;
            continue;
        }
        size_t bad = 0, k = utf8_seq(p + i, n - i, &bad);
        if (!k) return i;
        i += k;
    }
    return n;
}

bool tok_utf8_sanitize(const char *s, size_t n, tok_buf *out) {
    const unsigned char *p = (const unsigned char *)s;
    size_t i = 0, run = 0;
    while (i < n) {
        size_t bad = 0, k = p[i] < 0x80 ? 1 : utf8_seq(p + i, n - i, &bad);
        if (k) {
            i += k;
            continue;
        }
        if (!tok_buf_put(out, s + run, i - run) || !tok_buf_put(out, "\xEF\xBF\xBD", 3))
            return false;
        i += bad;
        run = i;
    }
    return tok_buf_put(out, s + run, n - run);
}

bool tok_is_whitespace(int32_t c) {
    return (c >= 9 && c <= 13) || c == 32 || c == 0x85 || c == 0xA0 || c == 0x1680 ||
           (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 || c == 0x202F ||
           c == 0x205F || c == 0x3000;
}

bool tok_is_word_char(int32_t c) {
    if (c < 128)
        return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
               c == '_';
    if (c == 0x200C || c == 0x200D) return true;
    if (c >= 0x24B6 && c <= 0x24E9) return true; /* circled letters are Alphabetic */
    switch (utf8proc_category(c)) {
    case UTF8PROC_CATEGORY_LU: case UTF8PROC_CATEGORY_LL: case UTF8PROC_CATEGORY_LT:
    case UTF8PROC_CATEGORY_LM: case UTF8PROC_CATEGORY_LO: case UTF8PROC_CATEGORY_NL:
    case UTF8PROC_CATEGORY_MN: case UTF8PROC_CATEGORY_MC: case UTF8PROC_CATEGORY_ME:
    case UTF8PROC_CATEGORY_ND: case UTF8PROC_CATEGORY_PC:
        return true;
    default:
        return false;
    }
}

bool tok_is_numeric(int32_t c) {
    if (c < 128) return c >= '0' && c <= '9';
    utf8proc_category_t k = utf8proc_category(c);
    return k == UTF8PROC_CATEGORY_ND || k == UTF8PROC_CATEGORY_NL || k == UTF8PROC_CATEGORY_NO;
}

bool tok_is_punctuation(int32_t c) {
    if (c < 128)
        return (c >= 33 && c <= 47) || (c >= 58 && c <= 64) || (c >= 91 && c <= 96) ||
               (c >= 123 && c <= 126);
    utf8proc_category_t k = utf8proc_category(c);
    return k >= UTF8PROC_CATEGORY_PC && k <= UTF8PROC_CATEGORY_PO;
}

/* ---- patterns ---- */

og_status *tok_pattern_regex(tok_pattern *p, const char *re, const char *file,
                             const char *where) {
    int err = 0;
    PCRE2_SIZE at = 0;
    p->code = pcre2_compile((PCRE2_SPTR)re, PCRE2_ZERO_TERMINATED, PCRE2_UTF | PCRE2_UCP, &err,
                            &at, NULL);
    if (!p->code) {
        PCRE2_UCHAR msg[256];
        pcre2_get_error_message(err, msg, sizeof msg);
        return og_errorf(OG_ERR_UNSUPPORTED, "%s: %s: regex '%s' does not compile at offset %zu: %s",
                         file, where, re, (size_t)at, (const char *)msg);
    }
    /* Without JIT support the interpreter still gives the same matches. */
    (void)pcre2_jit_compile(p->code, PCRE2_JIT_COMPLETE);
    return NULL;
}

og_status *tok_pattern_parse(tok_pattern *p, const cJSON *j, const char *file,
                             const char *where) {
    const cJSON *s = cJSON_GetObjectItemCaseSensitive(j, "String");
    const cJSON *r = cJSON_GetObjectItemCaseSensitive(j, "Regex");
    if (cJSON_IsString(s)) {
        p->lit_len = strlen(s->valuestring);
        p->lit = strdup(s->valuestring);
        return p->lit ? NULL : og_oom();
    }
    if (cJSON_IsString(r)) return tok_pattern_regex(p, r->valuestring, file, where);
    return og_errorf(OG_ERR_INVALID_MODEL, "%s: %s: expected {\"String\": ...} or {\"Regex\": ...}",
                     file, where);
}

void tok_pattern_free(tok_pattern *p) {
    free(p->lit);
    if (p->code) pcre2_code_free(p->code);
    memset(p, 0, sizeof *p);
}

static bool push_match(tok_plist *out, size_t *prev, size_t s, size_t e) {
    if (*prev != s && !tok_plist_push(out, *prev, s - *prev, 0, false)) return false;
    if (!tok_plist_push(out, s, e - s, 1, false)) return false;
    *prev = e;
    return true;
}

og_status *tok_pattern_find(const tok_pattern *p, const char *s, size_t n, tok_plist *out) {
    if (n == 0) return tok_plist_push(out, 0, 0, 0, false) ? NULL : og_oom();
    size_t prev = 0;
    if (!p->code) {
        if (p->lit_len == 0) return tok_plist_push(out, 0, n, 0, false) ? NULL : og_oom();
        const char *at = s, *end = s + n;
        while ((at = memmem(at, (size_t)(end - at), p->lit, p->lit_len))) {
            size_t st = (size_t)(at - s);
            if (!push_match(out, &prev, st, st + p->lit_len)) return og_oom();
            at += p->lit_len;
        }
    } else {
        pcre2_match_data *md = pcre2_match_data_create(1, NULL);
        if (!md) return og_oom();
        size_t pos = 0;
        bool have_last = false;
        size_t last_end = 0;
        uint32_t opts = PCRE2_NO_UTF_CHECK;
        while (pos <= n) {
            int rc = pcre2_match(p->code, (PCRE2_SPTR)s, n, pos, opts, md, NULL);
            if (rc == PCRE2_ERROR_JIT_STACKLIMIT) {
                /* The interpreter keeps its backtracking on the heap. */
                opts |= PCRE2_NO_JIT;
                continue;
            }
            if (rc == PCRE2_ERROR_NOMATCH) break;
            if (rc < 0) {
                pcre2_match_data_free(md);
                PCRE2_UCHAR msg[256];
                pcre2_get_error_message(rc, msg, sizeof msg);
                return og_errorf(OG_ERR_RUNTIME, "tokenizer: regex match failed: %s",
                                 (const char *)msg);
            }
            PCRE2_SIZE *ov = pcre2_get_ovector_pointer(md);
            size_t ms = ov[0], me = ov[1];
            /* An empty match right where the previous one ended would loop forever:
             * step one character instead (Oniguruma's find_iter does the same). */
            if (ms == me && have_last && last_end == me) {
                if (pos >= n) break;
                int32_t cp;
                pos += tok_utf8_next(s + pos, n - pos, &cp);
                continue;
            }
            if (!push_match(out, &prev, ms, me)) {
                pcre2_match_data_free(md);
                return og_oom();
            }
            have_last = true;
            last_end = me;
            pos = me;
        }
        pcre2_match_data_free(md);
    }
    if (prev != n && !tok_plist_push(out, prev, n - prev, 0, false)) return og_oom();
    return NULL;
}

/* ---- JSON helpers ---- */

const char *tok_json_type(const cJSON *j) { return tok_json_str(j, "type"); }

bool tok_json_bool(const cJSON *j, const char *key, bool dflt) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(j, key);
    if (cJSON_IsBool(v)) return cJSON_IsTrue(v);
    return dflt;
}

bool tok_json_index(const cJSON *v, double max, int64_t *out) {
    if (!cJSON_IsNumber(v)) return false;
    double d = v->valuedouble;
    if (!(d >= 0 && d <= max) || d != floor(d)) return false;
    *out = (int64_t)d;
    return true;
}

const char *tok_json_str(const cJSON *j, const char *key) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(j, key);
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

og_status *tok_unsupported(const char *file, const char *path, const char *type) {
    if (!type)
        return og_errorf(OG_ERR_INVALID_MODEL, "%s: %s has no \"type\"", file, path);
    return og_errorf(OG_ERR_UNSUPPORTED, "%s: %s.type '%s' is not supported", file, path, type);
}
