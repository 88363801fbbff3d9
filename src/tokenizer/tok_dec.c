/* Decoders: token strings -> text. Each stage maps a list of strings to a list of
 * strings (HF's decode_chain); the caller joins what is left. */
#include "tokenizer/tok_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Strip's start/stop: characters to remove; clamped so that a huge or odd number never
 * becomes an out-of-range conversion (a count past any text strips it all). */
static size_t strip_count(const cJSON *v) {
    double x = cJSON_IsNumber(v) ? v->valuedouble : 0;
    return x > 0 ? (x < 2147483647.0 ? (size_t)x : (size_t)2147483647) : 0;
}

static int32_t first_char(const char *s) {
    int32_t cp = 0;
    if (s && *s) tok_utf8_next(s, strlen(s), &cp);
    return cp;
}

og_status *tok_dec_parse(tok_dec *d, const cJSON *j, const char *file, const char *path) {
    memset(d, 0, sizeof *d);
    const char *t = tok_json_type(j);
    if (!t) return tok_unsupported(file, path, NULL);
    if (!strcmp(t, "Sequence")) {
        d->kind = TOK_DEC_SEQUENCE;
        const cJSON *arr = cJSON_GetObjectItemCaseSensitive(j, "decoders");
        if (!cJSON_IsArray(arr))
            return og_errorf(OG_ERR_INVALID_MODEL, "%s: %s.decoders must be an array", file, path);
        int n = cJSON_GetArraySize(arr);
        d->kids = calloc((size_t)(n ? n : 1), sizeof *d->kids);
        if (!d->kids) return og_oom();
        for (int i = 0; i < n; i++) {
            char sub[TOK_PATH_MAX];
            snprintf(sub, sizeof sub, "%s.decoders[%d]", path, i);
            d->n_kids = (size_t)i + 1;
            OG_TRY(tok_dec_parse(&d->kids[i], cJSON_GetArrayItem(arr, i), file, sub));
        }
    } else if (!strcmp(t, "ByteLevel")) {
        d->kind = TOK_DEC_BYTELEVEL;
    } else if (!strcmp(t, "Metaspace")) {
        d->kind = TOK_DEC_METASPACE;
        d->ch = tok_json_str(j, "replacement") ? first_char(tok_json_str(j, "replacement")) : 0x2581;
        const char *ps = tok_json_str(j, "prepend_scheme");
        if (!ps) d->prepend = tok_json_bool(j, "add_prefix_space", true) ? TOK_PREPEND_ALWAYS : TOK_PREPEND_NEVER;
        else if (!strcmp(ps, "always")) d->prepend = TOK_PREPEND_ALWAYS;
        else if (!strcmp(ps, "first")) d->prepend = TOK_PREPEND_FIRST;
        else if (!strcmp(ps, "never")) d->prepend = TOK_PREPEND_NEVER;
        else
            return og_errorf(OG_ERR_UNSUPPORTED, "%s: %s.prepend_scheme '%s' is not supported",
                             file, path, ps);
    } else if (!strcmp(t, "ByteFallback")) {
        d->kind = TOK_DEC_BYTE_FALLBACK;
    } else if (!strcmp(t, "Fuse")) {
        d->kind = TOK_DEC_FUSE;
    } else if (!strcmp(t, "Strip")) {
        d->kind = TOK_DEC_STRIP;
        const char *c = tok_json_str(j, "content");
        d->ch = c ? first_char(c) : ' ';
        const cJSON *a = cJSON_GetObjectItemCaseSensitive(j, "start");
        const cJSON *b = cJSON_GetObjectItemCaseSensitive(j, "stop");
        d->start = strip_count(a);
        d->stop = strip_count(b);
    } else if (!strcmp(t, "Replace")) {
        d->kind = TOK_DEC_REPLACE;
        const char *c = tok_json_str(j, "content");
        if (!c) return og_errorf(OG_ERR_INVALID_MODEL, "%s: %s.content must be a string", file, path);
        d->content = strdup(c);
        d->content_len = strlen(c);
        if (!d->content) return og_oom();
        char sub[TOK_PATH_MAX];
        snprintf(sub, sizeof sub, "%s.pattern", path);
        OG_TRY(tok_pattern_parse(&d->pat, cJSON_GetObjectItemCaseSensitive(j, "pattern"), file, sub));
    } else {
        return tok_unsupported(file, path, t);
    }
    return NULL;
}

void tok_dec_free(tok_dec *d) {
    if (!d) return;
    for (size_t i = 0; i < d->n_kids; i++) tok_dec_free(&d->kids[i]);
    free(d->kids);
    free(d->content);
    tok_pattern_free(&d->pat);
}

/* "<0xNN>" -> byte, as Rust's u8::from_str_radix(.., 16) reads the two characters
 * (which also takes "+N"). */
int tok_byte_token(const char *s, size_t n) {
    if (n != 6 || memcmp(s, "<0x", 3) || s[5] != '>') return -1;
    int v = 0, digits = 0;
    for (int i = 3; i < 5; i++) {
        char c = s[i];
        int d = c >= '0' && c <= '9' ? c - '0'
                : c >= 'a' && c <= 'f' ? c - 'a' + 10
                : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                       : -1;
        if (d < 0) {
            if (i == 3 && c == '+') continue;
            return -1;
        }
        v = v * 16 + d;
        digits++;
    }
    return digits ? v : -1;
}

static og_status *apply_one(const tok_dec *d, tok_buf *text, const tok_plist *in, tok_plist *out) {
    out->n = 0;
    switch (d->kind) {
    case TOK_DEC_BYTELEVEL: {
        tok_buf bytes = {0};
        og_status *st = NULL;
        for (size_t i = 0; i < in->n && !st; i++) {
            const char *s = text->p + in->v[i].off;
            size_t n = in->v[i].len, mark = bytes.n;
            bool ok = tok_buf_reserve(&bytes, n + 1);
            for (size_t k = 0; ok && k < n;) {
                int32_t cp;
                k += tok_utf8_next(s + k, n - k, &cp);
                int b = tok_cp_to_byte(cp);
                if (b < 0) {
                    /* A character outside the byte alphabet: keep the token verbatim. */
                    bytes.n = mark;
                    ok = tok_buf_put(&bytes, s, n);
                    break;
                }
                bytes.p[bytes.n++] = (char)b;
            }
            if (!ok) st = og_oom();
        }
        size_t off = text->n;
        if (!st && !tok_utf8_sanitize(bytes.p ? bytes.p : "", bytes.n, text)) st = og_oom();
        if (!st && !tok_plist_push(out, off, text->n - off, -1, false)) st = og_oom();
        tok_buf_free(&bytes);
        return st;
    }
    case TOK_DEC_METASPACE: {
        char rep[4];
        size_t rl = tok_utf8_put(d->ch, rep);
        for (size_t i = 0; i < in->n; i++) {
            size_t n = in->v[i].len;
            if (!tok_buf_reserve(text, n + 1)) return og_oom();
            const char *s = text->p + in->v[i].off;
            size_t off = text->n;
            for (size_t k = 0; k < n;) {
                if (n - k >= rl && !memcmp(s + k, rep, rl)) {
                    /* HF drops every replacement of the first token, not only a leading one. */
                    if (!(i == 0 && d->prepend != TOK_PREPEND_NEVER)) text->p[text->n++] = ' ';
                    k += rl;
                } else {
                    text->p[text->n++] = s[k++];
                }
            }
            if (!tok_plist_push(out, off, text->n - off, -1, false)) return og_oom();
        }
        return NULL;
    }
    case TOK_DEC_BYTE_FALLBACK: {
        tok_buf pending = {0};
        og_status *st = NULL;
        for (size_t i = 0; i <= in->n && !st; i++) {
            int b = i < in->n ? tok_byte_token(text->p + in->v[i].off, in->v[i].len) : -1;
            if (b >= 0) {
                char c = (char)b;
                if (!tok_buf_put(&pending, &c, 1)) st = og_oom();
                continue;
            }
            if (pending.n) {
                size_t off = text->n;
                bool ok;
                if (tok_utf8_valid_prefix(pending.p, pending.n) == pending.n) {
                    ok = tok_buf_put(text, pending.p, pending.n) &&
                         tok_plist_push(out, off, pending.n, -1, false);
                } else {
                    ok = true;
                    for (size_t k = 0; k < pending.n && ok; k++) {
                        size_t o = text->n;
                        ok = tok_buf_put(text, "\xEF\xBF\xBD", 3) && tok_plist_push(out, o, 3, -1, false);
                    }
                }
                if (!ok) st = og_oom();
                pending.n = 0;
            }
            if (!st && i < in->n && !tok_plist_push(out, in->v[i].off, in->v[i].len, -1, false))
                st = og_oom();
        }
        tok_buf_free(&pending);
        return st;
    }
    case TOK_DEC_FUSE: {
        size_t total = 0;
        for (size_t i = 0; i < in->n; i++) total += in->v[i].len;
        if (!tok_buf_reserve(text, total + 1)) return og_oom();
        size_t off = text->n;
        for (size_t i = 0; i < in->n; i++) {
            memmove(text->p + text->n, text->p + in->v[i].off, in->v[i].len);
            text->n += in->v[i].len;
        }
        return tok_plist_push(out, off, total, -1, false) ? NULL : og_oom();
    }
    case TOK_DEC_STRIP: {
        char c[4];
        size_t cl = tok_utf8_put(d->ch, c);
        for (size_t i = 0; i < in->n; i++) {
            size_t a = in->v[i].off, b = a + in->v[i].len;
            for (size_t k = 0; k < d->start && b - a >= cl && !memcmp(text->p + a, c, cl); k++) a += cl;
            for (size_t k = 0; k < d->stop && b - a >= cl && !memcmp(text->p + b - cl, c, cl); k++) b -= cl;
            if (!tok_plist_push(out, a, b - a, -1, false)) return og_oom();
        }
        return NULL;
    }
    case TOK_DEC_REPLACE: {
        tok_plist m = {0};
        og_status *st = NULL;
        for (size_t i = 0; i < in->n && !st; i++) {
            m.n = 0;
            st = tok_pattern_find(&d->pat, text->p + in->v[i].off, in->v[i].len, &m);
            tok_buf piece = {0};
            for (size_t k = 0; !st && k < m.n; k++) {
                bool ok = m.v[k].id ? tok_buf_put(&piece, d->content, d->content_len)
                                    : tok_buf_put(&piece, text->p + in->v[i].off + m.v[k].off, m.v[k].len);
                if (!ok) st = og_oom();
            }
            size_t off = text->n;
            if (!st && (!tok_buf_put(text, piece.p ? piece.p : "", piece.n) ||
                        !tok_plist_push(out, off, piece.n, -1, false)))
                st = og_oom();
            tok_buf_free(&piece);
        }
        tok_plist_free(&m);
        return st;
    }
    case TOK_DEC_SEQUENCE: break;
    }
    return og_errorf(OG_ERR_RUNTIME, "tokenizer: bad decoder kind");
}

og_status *tok_dec_apply(const tok_dec *d, tok_buf *text, tok_plist *l) {
    if (d->kind == TOK_DEC_SEQUENCE) {
        for (size_t i = 0; i < d->n_kids; i++) OG_TRY(tok_dec_apply(&d->kids[i], text, l));
        return NULL;
    }
    tok_plist out = {0};
    og_status *st = apply_one(d, text, l, &out);
    if (st) {
        tok_plist_free(&out);
        return st;
    }
    tok_plist_free(l);
    *l = out;
    return NULL;
}

/* ---- one token's bytes (tok_token_bytes) ---- */

/* Replaces cur's text by what stage d makes of the token alone. `fused`: a Fuse ran
 * before, so what follows sees the whole text as one piece. */
static og_status *token_stage(const tok_dec *d, tok_buf *cur, tok_buf *tmp, bool *fused) {
    tmp->n = 0;
    switch (d->kind) {
    case TOK_DEC_SEQUENCE:
        for (size_t i = 0; i < d->n_kids; i++) OG_TRY(token_stage(&d->kids[i], cur, tmp, fused));
        return NULL;
    case TOK_DEC_BYTELEVEL:
        /* Only text can be mapped back; raw bytes from an earlier stage stay as they are. */
        if (tok_utf8_valid_prefix(cur->p, cur->n) != cur->n) return NULL;
        if (!tok_buf_reserve(tmp, cur->n)) return og_oom();
        for (size_t k = 0; k < cur->n;) {
            int32_t cp;
            k += tok_utf8_next(cur->p + k, cur->n - k, &cp);
            int b = tok_cp_to_byte(cp);
            /* a character outside the byte alphabet: the token is kept verbatim, as
             * decoding keeps it */
            if (b < 0) return NULL;
            tmp->p[tmp->n++] = (char)b;
        }
        break;
    case TOK_DEC_METASPACE: {
        char rep[4];
        size_t rl = tok_utf8_put(d->ch, rep);
        if (!tok_buf_reserve(tmp, cur->n)) return og_oom();
        for (size_t k = 0; k < cur->n;) {
            if (cur->n - k >= rl && !memcmp(cur->p + k, rep, rl)) {
                tmp->p[tmp->n++] = ' ';
                k += rl;
            } else {
                tmp->p[tmp->n++] = cur->p[k++];
            }
        }
        break;
    }
    case TOK_DEC_BYTE_FALLBACK: {
        int b = tok_byte_token(cur->p, cur->n);
        if (b < 0) return NULL;
        char c = (char)b;
        if (!tok_buf_put(tmp, &c, 1)) return og_oom();
        break;
    }
    case TOK_DEC_FUSE:
        *fused = true;
        return NULL;
    case TOK_DEC_STRIP: {
        if (*fused) return NULL; /* it strips the ends of the whole text, not of a token */
        char c[4];
        size_t cl = tok_utf8_put(d->ch, c), a = 0, b = cur->n;
        for (size_t k = 0; k < d->start && b - a >= cl && !memcmp(cur->p + a, c, cl); k++) a += cl;
        for (size_t k = 0; k < d->stop && b - a >= cl && !memcmp(cur->p + b - cl, c, cl); k++) b -= cl;
        if (!tok_buf_put(tmp, cur->p + a, b - a)) return og_oom();
        break;
    }
    case TOK_DEC_REPLACE: {
        tok_plist m = {0};
        og_status *st = tok_pattern_find(&d->pat, cur->p, cur->n, &m);
        for (size_t k = 0; !st && k < m.n; k++) {
            bool ok = m.v[k].id ? tok_buf_put(tmp, d->content, d->content_len)
                                : tok_buf_put(tmp, cur->p + m.v[k].off, m.v[k].len);
            if (!ok) st = og_oom();
        }
        tok_plist_free(&m);
        if (st) return st;
        break;
    }
    }
    tok_buf swap = *cur;
    *cur = *tmp;
    *tmp = swap;
    return NULL;
}

og_status *tok_token_bytes(const tok_tokenizer *t, int32_t id, uint8_t *buf, size_t cap,
                           size_t *len) {
    if (!t || (!buf && cap) || !len)
        return og_errorf(OG_ERR_INVALID_ARGUMENT, "tok_token_bytes: NULL argument");
    *len = 0;
    if (id < 0 || (size_t)id >= t->vocab_size || !t->id_tok[id]) return NULL;
    const char *s = t->id_tok[id];
    tok_buf cur = {0}, tmp = {0};
    bool fused = false;
    og_status *st = tok_buf_put(&cur, s, strlen(s)) ? NULL : og_oom();
    if (!st && t->dec) st = token_stage(t->dec, &cur, &tmp, &fused);
    if (!st) {
        *len = cur.n;
        if (cur.n && cap) memcpy(buf, cur.p, cur.n < cap ? cur.n : cap);
    }
    tok_buf_free(&cur);
    tok_buf_free(&tmp);
    return st;
}
