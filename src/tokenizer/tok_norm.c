/* Normalizers: text -> text before pre-tokenization (and for normalized added tokens). */
#include "tokenizer/tok_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <utf8proc.h>

og_status *tok_norm_parse(tok_norm *nm, const cJSON *j, const char *file, const char *path) {
    memset(nm, 0, sizeof *nm);
    const char *t = tok_json_type(j);
    if (!t) return tok_unsupported(file, path, NULL);
    if (!strcmp(t, "Sequence")) {
        nm->kind = TOK_NORM_SEQUENCE;
        const cJSON *arr = cJSON_GetObjectItemCaseSensitive(j, "normalizers");
        if (!cJSON_IsArray(arr))
            return og_errorf(OG_ERR_INVALID_MODEL, "%s: %s.normalizers must be an array", file, path);
        int n = cJSON_GetArraySize(arr);
        nm->kids = calloc((size_t)(n ? n : 1), sizeof *nm->kids);
        if (!nm->kids) return og_oom();
        for (int i = 0; i < n; i++) {
            char sub[TOK_PATH_MAX];
            snprintf(sub, sizeof sub, "%s.normalizers[%d]", path, i);
            nm->n_kids = (size_t)i + 1;
            OG_TRY(tok_norm_parse(&nm->kids[i], cJSON_GetArrayItem(arr, i), file, sub));
        }
    } else if (!strcmp(t, "NFC")) nm->kind = TOK_NORM_NFC;
    else if (!strcmp(t, "NFD")) nm->kind = TOK_NORM_NFD;
    else if (!strcmp(t, "NFKC")) nm->kind = TOK_NORM_NFKC;
    else if (!strcmp(t, "NFKD")) nm->kind = TOK_NORM_NFKD;
    else if (!strcmp(t, "Lowercase")) nm->kind = TOK_NORM_LOWERCASE;
    else if (!strcmp(t, "StripAccents")) nm->kind = TOK_NORM_STRIP_ACCENTS;
    else if (!strcmp(t, "Strip")) {
        nm->kind = TOK_NORM_STRIP;
        nm->left = tok_json_bool(j, "strip_left", true);
        nm->right = tok_json_bool(j, "strip_right", true);
    } else if (!strcmp(t, "Prepend")) {
        nm->kind = TOK_NORM_PREPEND;
        const char *s = tok_json_str(j, "prepend");
        if (!s) return og_errorf(OG_ERR_INVALID_MODEL, "%s: %s.prepend must be a string", file, path);
        nm->str = strdup(s);
        nm->str_len = strlen(s);
        if (!nm->str) return og_oom();
    } else if (!strcmp(t, "Replace")) {
        nm->kind = TOK_NORM_REPLACE;
        const char *s = tok_json_str(j, "content");
        if (!s) return og_errorf(OG_ERR_INVALID_MODEL, "%s: %s.content must be a string", file, path);
        nm->str = strdup(s);
        nm->str_len = strlen(s);
        if (!nm->str) return og_oom();
        char sub[TOK_PATH_MAX];
        snprintf(sub, sizeof sub, "%s.pattern", path);
        OG_TRY(tok_pattern_parse(&nm->pat, cJSON_GetObjectItemCaseSensitive(j, "pattern"), file, sub));
    } else {
        return tok_unsupported(file, path, t);
    }
    return NULL;
}

void tok_norm_free(tok_norm *nm) {
    if (!nm) return;
    for (size_t i = 0; i < nm->n_kids; i++) tok_norm_free(&nm->kids[i]);
    free(nm->kids);
    free(nm->str);
    tok_pattern_free(&nm->pat);
}

static bool all_ascii(const char *s, size_t n) {
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)s[i] >= 0x80) return false;
    return true;
}

static og_status *unicode_form(const char *s, size_t n, int opts, tok_buf *out) {
    if (all_ascii(s, n)) return tok_buf_put(out, s, n) ? NULL : og_oom();
    utf8proc_uint8_t *dst = NULL;
    utf8proc_ssize_t m = utf8proc_map((const utf8proc_uint8_t *)s, (utf8proc_ssize_t)n, &dst,
                                      (utf8proc_option_t)(UTF8PROC_STABLE | opts));
    if (m < 0) {
        free(dst);
        return m == UTF8PROC_ERROR_NOMEM
                   ? og_oom()
                   : og_errorf(OG_ERR_RUNTIME, "tokenizer: normalization failed: %s",
                               utf8proc_errmsg(m));
    }
    bool ok = tok_buf_put(out, dst, (size_t)m);
    free(dst);
    return ok ? NULL : og_oom();
}

static og_status *apply_one(const tok_norm *nm, const char *s, size_t n, tok_buf *out) {
    switch (nm->kind) {
    case TOK_NORM_NFC: return unicode_form(s, n, UTF8PROC_COMPOSE, out);
    case TOK_NORM_NFD: return unicode_form(s, n, UTF8PROC_DECOMPOSE, out);
    case TOK_NORM_NFKC: return unicode_form(s, n, UTF8PROC_COMPOSE | UTF8PROC_COMPAT, out);
    case TOK_NORM_NFKD: return unicode_form(s, n, UTF8PROC_DECOMPOSE | UTF8PROC_COMPAT, out);
    case TOK_NORM_LOWERCASE:
    case TOK_NORM_STRIP_ACCENTS: {
        if (!tok_buf_reserve(out, n * 2 + 4)) return og_oom();
        for (size_t i = 0; i < n;) {
            int32_t cp;
            size_t k = tok_utf8_next(s + i, n - i, &cp);
            i += k;
            char enc[4];
            if (nm->kind == TOK_NORM_STRIP_ACCENTS) {
                utf8proc_category_t c = utf8proc_category(cp);
                if (c == UTF8PROC_CATEGORY_MN || c == UTF8PROC_CATEGORY_MC ||
                    c == UTF8PROC_CATEGORY_ME)
                    continue;
            } else if (cp == 0x130) {
                /* The one unconditional multi-character lowercase mapping. */
                if (!tok_buf_put(out, "i\xCC\x87", 3)) return og_oom();
                continue;
            } else {
                cp = cp < 128 ? (cp >= 'A' && cp <= 'Z' ? cp + 32 : cp) : utf8proc_tolower(cp);
            }
            if (!tok_buf_put(out, enc, tok_utf8_put(cp, enc))) return og_oom();
        }
        return NULL;
    }
    case TOK_NORM_STRIP: {
        size_t a = 0, b = n;
        if (nm->left)
            while (a < b) {
                int32_t cp;
                size_t k = tok_utf8_next(s + a, b - a, &cp);
                if (!tok_is_whitespace(cp)) break;
                a += k;
            }
        if (nm->right)
            while (b > a) {
                size_t st = b - 1;
                while (st > a && ((unsigned char)s[st] & 0xC0) == 0x80) st--;
                int32_t cp;
                tok_utf8_next(s + st, b - st, &cp);
                if (!tok_is_whitespace(cp)) break;
                b = st;
            }
        return tok_buf_put(out, s + a, b - a) ? NULL : og_oom();
    }
    case TOK_NORM_PREPEND:
        if (n && !tok_buf_put(out, nm->str, nm->str_len)) return og_oom();
        return tok_buf_put(out, s, n) ? NULL : og_oom();
    case TOK_NORM_REPLACE: {
        tok_plist m = {0};
        og_status *st = tok_pattern_find(&nm->pat, s, n, &m);
        for (size_t i = 0; !st && i < m.n; i++) {
            bool ok = m.v[i].id ? tok_buf_put(out, nm->str, nm->str_len)
                                : tok_buf_put(out, s + m.v[i].off, m.v[i].len);
            if (!ok) st = og_oom();
        }
        tok_plist_free(&m);
        return st;
    }
    case TOK_NORM_SEQUENCE: break;
    }
    return og_errorf(OG_ERR_RUNTIME, "tokenizer: bad normalizer kind");
}

og_status *tok_norm_apply(const tok_norm *nm, const char *s, size_t n, tok_buf *out) {
    out->n = 0;
    if (nm->kind != TOK_NORM_SEQUENCE) {
        og_status *st = apply_one(nm, s, n, out);
        if (!st && !tok_buf_put(out, "", 0)) st = og_oom();
        return st;
    }
    if (!tok_buf_put(out, s, n)) return og_oom();
    tok_buf tmp = {0};
    og_status *st = NULL;
    for (size_t i = 0; i < nm->n_kids && !st; i++) {
        st = tok_norm_apply(&nm->kids[i], out->p, out->n, &tmp);
        if (!st) {
            tok_buf swap = *out;
            *out = tmp;
            tmp = swap;
        }
    }
    tok_buf_free(&tmp);
    return st;
}
