/* Loading tokenizer.json, added tokens, the encode pipeline and decoding.
 *
 * Encoding follows HF tokenizers' order: added tokens that are not "normalized" are cut
 * out of the raw text first; each remaining stretch is normalized, then "normalized"
 * added tokens are cut out of that; the rest is pre-tokenized into words, each word goes
 * through the BPE model, and the post-processor adds special tokens on request. */
#include "tokenizer/tok_internal.h"

#include "base/pkg_file.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* ---- files ---- */

static og_status *parse_text(const char *label, const char *data, size_t len, cJSON **out) {
    const char *end = NULL;
    cJSON *j = cJSON_ParseWithLengthOpts(data, len, &end, false);
    if (!j) {
        size_t at = end && end >= data && end <= data + len ? (size_t)(end - data) : 0;
        return og_errorf(OG_ERR_INVALID_MODEL, "%s: malformed JSON near byte %zu", label, at);
    }
    *out = j;
    return NULL;
}

static og_status *parse_json(const char *path, cJSON **out) {
    char *data;
    size_t len;
    OG_TRY(pkg_read_file(path, PKG_MAX_JSON_BYTES, &data, &len)); /* regular files only */
    og_status *st = parse_text(path, data, len, out);
    free(data);
    return st;
}

/* ---- added tokens ---- */

static int by_len_desc(const void *a, const void *b) {
    const tok_added *x = *(const tok_added *const *)a, *y = *(const tok_added *const *)b;
    return x->match_len < y->match_len ? 1 : x->match_len > y->match_len ? -1 : 0;
}

static og_status *build_matcher(tok_matcher *mt, tok_added *added, size_t n, bool normalized) {
    for (size_t i = 0; i < n; i++) {
        if (added[i].normalized != normalized || added[i].match_len == 0) continue;
        unsigned char b = (unsigned char)added[i].match[0];
        const tok_added **v = realloc(mt->by_byte[b], (mt->n_by_byte[b] + 1) * sizeof *v);
        if (!v) return og_oom();
        v[mt->n_by_byte[b]++] = &added[i];
        mt->by_byte[b] = v;
        if (added[i].match_len == 1) mt->single[b] = true;
        else {
            unsigned char b2 = (unsigned char)added[i].match[1];
            mt->second[b][b2 >> 6] |= 1ull << (b2 & 63);
        }
    }
    for (int b = 0; b < 256; b++)
        if (mt->n_by_byte[b] > 1)
            qsort(mt->by_byte[b], mt->n_by_byte[b], sizeof *mt->by_byte[b], by_len_desc);
    return NULL;
}

static void free_matcher(tok_matcher *mt) {
    for (int b = 0; b < 256; b++) free(mt->by_byte[b]);
    memset(mt, 0, sizeof *mt);
}

static bool matcher_empty(const tok_matcher *mt) {
    for (int b = 0; b < 256; b++)
        if (mt->n_by_byte[b]) return false;
    return true;
}

/* The leftmost, then longest, added token in s[from..n). */
static const tok_added *find_added(const tok_matcher *mt, const char *s, size_t n, size_t from,
                                   size_t *at) {
    for (size_t p = from; p < n; p++) {
        unsigned char b = (unsigned char)s[p];
        size_t k = mt->n_by_byte[b];
        if (!k) continue;
        if (!mt->single[b]) {
            if (p + 1 >= n) continue;
            unsigned char b2 = (unsigned char)s[p + 1];
            if (!(mt->second[b][b2 >> 6] >> (b2 & 63) & 1)) continue;
        }
        const tok_added **c = mt->by_byte[b];
        for (size_t i = 0; i < k; i++)
            if (c[i]->match_len <= n - p && !memcmp(s + p, c[i]->match, c[i]->match_len)) {
                *at = p;
                return c[i];
            }
    }
    return NULL;
}

static int32_t last_char(const char *s, size_t n) {
    if (!n) return -1;
    size_t st = n - 1;
    while (st > 0 && ((unsigned char)s[st] & 0xC0) == 0x80) st--;
    int32_t cp;
    tok_utf8_next(s + st, n - st, &cp);
    return cp;
}

/* Cuts added tokens out of s[0..n) (which lives at text offset `base`): pieces go to
 * `out`, token pieces with their id, the rest with id -1. */
static bool split_added(const tok_matcher *mt, const char *s, size_t n, size_t base,
                        bool at_start, tok_plist *out) {
    size_t start_off = 0, from = 0, at;
    const tok_added *a;
    while (from < n && (a = find_added(mt, s, n, from, &at))) {
        size_t start = at, stop = at + a->match_len;
        from = stop; /* the search resumes after the match as found */
        if (a->single_word) {
            int32_t before = last_char(s, start), after = -1;
            if (stop < n) tok_utf8_next(s + stop, n - stop, &after);
            bool start_ok = start == 0 || !tok_is_word_char(before);
            bool stop_ok = stop == n || !tok_is_word_char(after);
            if (!start_ok || !stop_ok) continue;
        }
        if (a->lstrip) {
            size_t ns = start;
            while (ns > 0) {
                size_t st = ns - 1;
                while (st > 0 && ((unsigned char)s[st] & 0xC0) == 0x80) st--;
                int32_t cp;
                tok_utf8_next(s + st, ns - st, &cp);
                if (!tok_is_whitespace(cp)) break;
                ns = st;
            }
            start = ns > start_off ? ns : start_off;
        }
        if (a->rstrip) {
            while (stop < n) {
                int32_t cp;
                size_t k = tok_utf8_next(s + stop, n - stop, &cp);
                if (!tok_is_whitespace(cp)) break;
                stop += k;
            }
        }
        if (start_off < start &&
            !tok_plist_push(out, base + start_off, start - start_off, -1, at_start && start_off == 0))
            return false;
        if (!tok_plist_push(out, base + start, stop - start, a->id, false)) return false;
        start_off = stop;
    }
    if (start_off < n &&
        !tok_plist_push(out, base + start_off, n - start_off, -1, at_start && start_off == 0))
        return false;
    return true;
}

/* ---- loading ---- */

static og_status *parse_added(tok_tokenizer *t, const cJSON *arr) {
    if (!arr || cJSON_IsNull(arr)) return NULL;
    if (!cJSON_IsArray(arr))
        return og_errorf(OG_ERR_INVALID_MODEL, "%s: added_tokens must be an array", t->file);
    int n = cJSON_GetArraySize(arr);
    t->added = calloc((size_t)(n ? n : 1), sizeof *t->added);
    if (!t->added) return og_oom();
    tok_buf norm = {0};
    og_status *st = NULL;
    int i = 0;
    for (const cJSON *e = arr->child; e && !st; e = e->next, i++) {
        tok_added *a = &t->added[t->n_added];
        const cJSON *id = cJSON_GetObjectItemCaseSensitive(e, "id");
        const char *content = tok_json_str(e, "content");
        int64_t id64;
        if (!tok_json_index(id, TOK_MAX_ID, &id64) || !content) {
            st = og_errorf(OG_ERR_INVALID_MODEL, "%s: added_tokens[%d] needs an integer id in "
                           "[0, %d] and a content string", t->file, i, TOK_MAX_ID);
            break;
        }
        a->id = (int32_t)id64;
        a->len = strlen(content);
        a->content = strdup(content);
        if (!a->content) {
            st = og_oom();
            break;
        }
        t->n_added++;
        a->special = tok_json_bool(e, "special", false);
        a->single_word = tok_json_bool(e, "single_word", false);
        a->lstrip = tok_json_bool(e, "lstrip", false);
        a->rstrip = tok_json_bool(e, "rstrip", false);
        a->normalized = tok_json_bool(e, "normalized", !a->special);
        if (a->normalized && t->norm) {
            /* A normalized token is searched for in normalized text, so in normalized form. */
            st = tok_norm_apply(t->norm, a->content, a->len, &norm);
            if (st) break;
            a->match = malloc(norm.n + 1);
            if (!a->match) {
                st = og_oom();
                break;
            }
            memcpy(a->match, norm.p ? norm.p : "", norm.n);
            a->match[norm.n] = 0;
            a->match_len = norm.n;
        } else {
            a->match = a->content;
            a->match_len = a->len;
        }
        if (!tok_smap_put(&t->added_map, a->content, a->len, a->id)) st = og_oom();
    }
    tok_buf_free(&norm);
    if (st) return st;
    OG_TRY(build_matcher(&t->raw_matcher, t->added, t->n_added, false));
    return build_matcher(&t->norm_matcher, t->added, t->n_added, true);
}

static bool ids_append(int32_t **v, size_t *n, const int32_t *src, size_t k) {
    if (!k) return true;
    int32_t *p = realloc(*v, (*n + k) * sizeof *p);
    if (!p) return false;
    memcpy(p + *n, src, k * sizeof *p);
    *v = p;
    *n += k;
    return true;
}

static og_status *parse_post(tok_tokenizer *t, const cJSON *j, const char *path) {
    const char *ty = tok_json_type(j);
    if (!ty) return tok_unsupported(t->file, path, NULL);
    tok_post *p = &t->post;
    if (!strcmp(ty, "ByteLevel")) return NULL; /* only moves offsets */
    if (!strcmp(ty, "Sequence")) {
        const cJSON *arr = cJSON_GetObjectItemCaseSensitive(j, "processors");
        if (!cJSON_IsArray(arr))
            return og_errorf(OG_ERR_INVALID_MODEL, "%s: %s.processors must be an array", t->file, path);
        int i = 0;
        for (const cJSON *e = arr->child; e; e = e->next, i++) {
            char sub[TOK_PATH_MAX];
            snprintf(sub, sizeof sub, "%s.processors[%d]", path, i);
            OG_TRY(parse_post(t, e, sub));
        }
        return NULL;
    }
    /* Later processors wrap what earlier ones produced. */
    int32_t *before = NULL, *after = NULL;
    size_t nb = 0, na = 0;
    og_status *st = NULL;
    if (!strcmp(ty, "TemplateProcessing")) {
        const cJSON *single = cJSON_GetObjectItemCaseSensitive(j, "single");
        const cJSON *specials = cJSON_GetObjectItemCaseSensitive(j, "special_tokens");
        if (!cJSON_IsArray(single))
            return og_errorf(OG_ERR_INVALID_MODEL, "%s: %s.single must be an array", t->file, path);
        int seen_seq = 0, i = 0;
        for (const cJSON *e = single->child; e && !st; e = e->next, i++) {
            const cJSON *sp = cJSON_GetObjectItemCaseSensitive(e, "SpecialToken");
            const cJSON *sq = cJSON_GetObjectItemCaseSensitive(e, "Sequence");
            if (sq) {
                const char *sid = tok_json_str(sq, "id");
                if (seen_seq || !sid || strcmp(sid, "A"))
                    st = og_errorf(OG_ERR_UNSUPPORTED, "%s: %s.single[%d]: only one $A sequence is supported",
                                   t->file, path, i);
                seen_seq = 1;
                continue;
            }
            const char *name = sp ? tok_json_str(sp, "id") : NULL;
            const cJSON *def = name ? cJSON_GetObjectItemCaseSensitive(specials, name) : NULL;
            const cJSON *ids = def ? cJSON_GetObjectItemCaseSensitive(def, "ids") : NULL;
            if (!cJSON_IsArray(ids)) {
                st = og_errorf(OG_ERR_INVALID_MODEL, "%s: %s.single[%d]: special token '%s' is not defined in special_tokens",
                               t->file, path, i, name ? name : "?");
                break;
            }
            for (const cJSON *x = ids->child; x && !st; x = x->next) {
                int64_t v64 = -1;
                int32_t v = tok_json_index(x, TOK_MAX_ID, &v64) ? (int32_t)v64 : -1;
                if (v < 0) st = og_errorf(OG_ERR_INVALID_MODEL, "%s: %s.special_tokens['%s'].ids must be ids "
                                          "in [0, %d]", t->file, path, name, TOK_MAX_ID);
                else if (!(seen_seq ? ids_append(&after, &na, &v, 1) : ids_append(&before, &nb, &v, 1)))
                    st = og_oom();
            }
        }
        if (!st && !seen_seq)
            st = og_errorf(OG_ERR_UNSUPPORTED, "%s: %s.single has no $A sequence", t->file, path);
    } else if (!strcmp(ty, "RobertaProcessing") || !strcmp(ty, "BertProcessing")) {
        const cJSON *cls = cJSON_GetObjectItemCaseSensitive(j, "cls");
        const cJSON *sep = cJSON_GetObjectItemCaseSensitive(j, "sep");
        const cJSON *ci = cJSON_GetArrayItem(cls, 1), *si = cJSON_GetArrayItem(sep, 1);
        int64_t c64, s64;
        if (!tok_json_index(ci, TOK_MAX_ID, &c64) || !tok_json_index(si, TOK_MAX_ID, &s64))
            return og_errorf(OG_ERR_INVALID_MODEL, "%s: %s: cls and sep must be [token, id] with ids "
                             "in [0, %d]", t->file, path, TOK_MAX_ID);
        int32_t c = (int32_t)c64, s = (int32_t)s64;
        if (!ids_append(&before, &nb, &c, 1) || !ids_append(&after, &na, &s, 1)) st = og_oom();
    } else {
        return tok_unsupported(t->file, path, ty);
    }
    if (!st) {
        /* new before = this before + old before; new after = old after + this after */
        if (!ids_append(&before, &nb, p->before, p->n_before) || !ids_append(&p->after, &p->n_after, after, na)) {
            st = og_oom();
        } else {
            free(p->before);
            p->before = before;
            p->n_before = nb;
            before = NULL;
        }
    }
    free(before);
    free(after);
    return st;
}

/* bos_token / eos_token in tokenizer_config.json: a string or {"content": ...}. */
static int32_t config_token(const tok_tokenizer *t, const cJSON *cfg, const char *key) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(cfg, key);
    const char *s = cJSON_IsString(v) ? v->valuestring : tok_json_str(v, "content");
    return s ? tok_token_to_id(t, s, strlen(s)) : -1;
}

static og_status *load_config(tok_tokenizer *t, const char *dir) {
    char path[4096];
    snprintf(path, sizeof path, "%s/tokenizer_config.json", dir);
    struct stat sb;
    if (stat(path, &sb) != 0) return NULL; /* optional */
    cJSON *cfg;
    OG_TRY(parse_json(path, &cfg));
    t->bos_id = config_token(t, cfg, "bos_token");
    t->eos_id = config_token(t, cfg, "eos_token");
    og_status *st = NULL;
    /* A tokenizer.json with a post-processor already says what to add (and HF tokenizers
     * follows it); only without one do the config's flags decide. */
    if (!t->has_post) {
        bool add_bos = tok_json_bool(cfg, "add_bos_token", false) && t->bos_id >= 0;
        bool add_eos = tok_json_bool(cfg, "add_eos_token", false) && t->eos_id >= 0;
        if ((add_bos && !ids_append(&t->post.before, &t->post.n_before, &t->bos_id, 1)) ||
            (add_eos && !ids_append(&t->post.after, &t->post.n_after, &t->eos_id, 1)))
            st = og_oom();
        t->has_post = add_bos || add_eos;
    }
    cJSON_Delete(cfg);
    return st;
}

static og_status *build_id_table(tok_tokenizer *t) {
    size_t n = t->bpe.vocab_max;
    for (size_t i = 0; i < t->n_added; i++)
        if ((size_t)t->added[i].id + 1 > n) n = (size_t)t->added[i].id + 1;
    t->vocab_size = n;
    t->id_tok = calloc(n ? n : 1, sizeof *t->id_tok);
    t->special = calloc(n ? n : 1, 1);
    t->is_added = calloc(n ? n : 1, 1);
    if (!t->id_tok || !t->special || !t->is_added) return og_oom();
    const tok_smap *v = &t->bpe.vocab;
    for (size_t i = 0; i < v->n; i++) t->id_tok[v->ents[i].val] = v->pool.p + v->ents[i].off;
    for (size_t i = 0; i < t->n_added; i++) {
        t->id_tok[t->added[i].id] = t->added[i].content;
        t->is_added[t->added[i].id] = 1;
        if (t->added[i].special) t->special[t->added[i].id] = 1;
    }
    return NULL;
}

static og_status *load_json(tok_tokenizer *t, const cJSON *j) {
    const char *f = t->file;
    if (!cJSON_IsObject(j)) return og_errorf(OG_ERR_INVALID_MODEL, "%s: expected a JSON object", f);
    const cJSON *model = cJSON_GetObjectItemCaseSensitive(j, "model");
    if (!cJSON_IsObject(model)) return og_errorf(OG_ERR_INVALID_MODEL, "%s: model must be an object", f);
    const char *mt = tok_json_type(model);
    if (mt ? strcmp(mt, "BPE") != 0 : !cJSON_GetObjectItemCaseSensitive(model, "merges"))
        return tok_unsupported(f, "model", mt ? mt : "(untyped, not BPE)");
    OG_TRY(tok_bpe_parse(&t->bpe, model, f));

    const cJSON *x = cJSON_GetObjectItemCaseSensitive(j, "normalizer");
    if (x && !cJSON_IsNull(x)) {
        t->norm = calloc(1, sizeof *t->norm);
        if (!t->norm) return og_oom();
        OG_TRY(tok_norm_parse(t->norm, x, f, "normalizer"));
    }
    x = cJSON_GetObjectItemCaseSensitive(j, "pre_tokenizer");
    if (x && !cJSON_IsNull(x)) {
        t->pre = calloc(1, sizeof *t->pre);
        if (!t->pre) return og_oom();
        OG_TRY(tok_pretok_parse(t->pre, x, f, "pre_tokenizer"));
    }
    x = cJSON_GetObjectItemCaseSensitive(j, "decoder");
    if (x && !cJSON_IsNull(x)) {
        t->dec = calloc(1, sizeof *t->dec);
        if (!t->dec) return og_oom();
        OG_TRY(tok_dec_parse(t->dec, x, f, "decoder"));
    }
    x = cJSON_GetObjectItemCaseSensitive(j, "post_processor");
    if (x && !cJSON_IsNull(x)) {
        t->has_post = true;
        OG_TRY(parse_post(t, x, "post_processor"));
    }
    OG_TRY(parse_added(t, cJSON_GetObjectItemCaseSensitive(j, "added_tokens")));
    return build_id_table(t);
}

og_status *tok_tokenizer_load(const char *path, tok_tokenizer **out) {
    if (!path || !out) return og_errorf(OG_ERR_INVALID_ARGUMENT, "tok_tokenizer_load: NULL argument");
    struct stat sb;
    if (stat(path, &sb) != 0)
        return og_errorf(OG_ERR_NOT_FOUND, "%s: no such tokenizer file or folder", path);
    char file[4096], dir[4096];
    if (S_ISDIR(sb.st_mode)) {
        snprintf(file, sizeof file, "%s/tokenizer.json", path);
        snprintf(dir, sizeof dir, "%s", path);
    } else {
        snprintf(file, sizeof file, "%s", path);
        snprintf(dir, sizeof dir, "%s", path);
        char *slash = strrchr(dir, '/');
        if (slash) *slash = 0;
        else snprintf(dir, sizeof dir, ".");
    }
    char *data;
    size_t len;
    OG_TRY(pkg_read_file(file, PKG_MAX_JSON_BYTES, &data, &len)); /* regular files only */
    tok_tokenizer *t = NULL;
    og_status *st = tok_tokenizer_parse(data, len, file, &t);
    free(data);
    if (!st && (st = load_config(t, dir))) {
        st = og_oom_context(st, "%s", file);
        tok_tokenizer_free(t);
    }
    if (st) return st;
    *out = t;
    return NULL;
}

og_status *tok_tokenizer_parse(const char *json, size_t len, const char *label,
                               tok_tokenizer **out) {
    if ((!json && len) || !label || !out)
        return og_errorf(OG_ERR_INVALID_ARGUMENT, "tok_tokenizer_parse: NULL argument");
    tok_tokenizer *t = calloc(1, sizeof *t);
    if (!t) return og_oom();
    t->bos_id = t->eos_id = -1;
    t->file = strdup(label);
    cJSON *j = NULL;
    og_status *st = t->file ? parse_text(label, json ? json : "", len, &j) : og_oom();
    if (!st) st = load_json(t, j);
    cJSON_Delete(j);
    if (st) {
        st = og_oom_context(st, "%s", label);
        tok_tokenizer_free(t);
        return st;
    }
    *out = t;
    return NULL;
}

void tok_tokenizer_free(tok_tokenizer *t) {
    if (!t) return;
    tok_bpe_free(&t->bpe);
    tok_norm_free(t->norm);
    free(t->norm);
    tok_pretok_free(t->pre);
    free(t->pre);
    tok_dec_free(t->dec);
    free(t->dec);
    free(t->post.before);
    free(t->post.after);
    for (size_t i = 0; i < t->n_added; i++) {
        if (t->added[i].match != t->added[i].content) free(t->added[i].match);
        free(t->added[i].content);
    }
    free(t->added);
    free_matcher(&t->raw_matcher);
    free_matcher(&t->norm_matcher);
    tok_smap_free(&t->added_map);
    free(t->id_tok);
    free(t->special);
    free(t->is_added);
    free(t->file);
    free(t);
}

/* ---- encode ---- */

og_status *tok_encode(const tok_tokenizer *t, const char *text, size_t len,
                      bool add_special_tokens, int32_t **ids_out, size_t *n_out) {
    if (!t || (!text && len) || !ids_out || !n_out)
        return og_errorf(OG_ERR_INVALID_ARGUMENT, "tok_encode: NULL argument");
    tok_buf tb = {0}, nb = {0};
    tok_plist raw = {0}, pieces = {0}, words = {0};
    int32_t *ids = NULL;
    size_t n = 0, cap = 0;
    og_status *st = NULL;
    bool ok = tok_utf8_valid_prefix(text ? text : "", len) == len ? tok_buf_put(&tb, text, len)
                                                                : tok_utf8_sanitize(text, len, &tb);
    if (!ok) {
        st = og_oom();
        goto done;
    }
    size_t in_len = tb.n;
    if (!split_added(&t->raw_matcher, tb.p, in_len, 0, true, &raw)) {
        st = og_oom();
        goto done;
    }
    bool norm_tokens = !matcher_empty(&t->norm_matcher);
    for (size_t i = 0; i < raw.n && !st; i++) {
        tok_piece r = raw.v[i];
        if (r.id >= 0) {
            if (!tok_plist_push(&pieces, r.off, r.len, r.id, false)) st = og_oom();
            continue;
        }
        size_t off = r.off, plen = r.len;
        if (t->norm) {
            st = tok_norm_apply(t->norm, tb.p + r.off, r.len, &nb);
            if (st) break;
            off = tb.n;
            plen = nb.n;
            if (!tok_buf_put(&tb, nb.p ? nb.p : "", nb.n)) {
                st = og_oom();
                break;
            }
        }
        ok = norm_tokens ? split_added(&t->norm_matcher, tb.p + off, plen, off, r.at_start, &pieces)
                         : (plen == 0 || tok_plist_push(&pieces, off, plen, -1, r.at_start));
        if (!ok) st = og_oom();
    }
    if (st) goto done;
    tok_plist *final = &pieces;
    if (t->pre) {
        st = tok_pretok_apply(t->pre, &tb, &pieces, &words);
        if (st) goto done;
        final = &words;
    }
    if (add_special_tokens && t->has_post && t->post.n_before) {
        if (!ids_append(&ids, &n, t->post.before, t->post.n_before)) {
            st = og_oom();
            goto done;
        }
        cap = n;
    }
    for (size_t i = 0; i < final->n && !st; i++) {
        const tok_piece *w = &final->v[i];
        if (w->id >= 0) {
            if (!ids_append(&ids, &n, &w->id, 1)) st = og_oom();
            cap = n;
        } else {
            st = tok_bpe_tokenize(&t->bpe, tb.p + w->off, w->len, &ids, &n, &cap);
        }
    }
    if (!st && add_special_tokens && t->has_post && !ids_append(&ids, &n, t->post.after, t->post.n_after))
        st = og_oom();
done:
    tok_buf_free(&tb);
    tok_buf_free(&nb);
    tok_plist_free(&raw);
    tok_plist_free(&pieces);
    tok_plist_free(&words);
    if (st) {
        free(ids);
        return st;
    }
    *ids_out = ids;
    *n_out = n;
    return NULL;
}

/* ---- decode ---- */

/* Decodes into `out` (cleared first), NUL-terminated. */
static og_status *decode_into(const tok_tokenizer *t, const int32_t *ids, size_t n, bool skip,
                              tok_buf *out) {
    tok_buf text = {0};
    tok_plist l = {0};
    og_status *st = NULL;
    out->n = 0;
    for (size_t i = 0; i < n && !st; i++) {
        int32_t id = ids[i];
        if (id < 0 || (size_t)id >= t->vocab_size || !t->id_tok[id]) continue;
        if (skip && t->special[id]) continue;
        const char *s = t->id_tok[id];
        size_t off = text.n, len = strlen(s);
        if (!tok_buf_put(&text, s, len) || !tok_plist_push(&l, off, len, -1, false)) st = og_oom();
    }
    if (!st && t->dec) st = tok_dec_apply(t->dec, &text, &l);
    for (size_t i = 0; i < l.n && !st; i++) {
        /* Without a decoder HF joins tokens with spaces. */
        if (!t->dec && i > 0 && !tok_buf_put(out, " ", 1)) st = og_oom();
        else if (!tok_buf_put(out, text.p + l.v[i].off, l.v[i].len)) st = og_oom();
    }
    if (!st && !tok_buf_put(out, "", 0)) st = og_oom();
    tok_buf_free(&text);
    tok_plist_free(&l);
    return st;
}

og_status *tok_decode(const tok_tokenizer *t, const int32_t *ids, size_t n, bool skip,
                      char **text, size_t *text_len) {
    if (!t || (!ids && n) || !text) return og_errorf(OG_ERR_INVALID_ARGUMENT, "tok_decode: NULL argument");
    tok_buf out = {0};
    og_status *st = decode_into(t, ids, n, skip, &out);
    if (st) {
        tok_buf_free(&out);
        return st;
    }
    *text = out.p;
    if (text_len) *text_len = out.n;
    return NULL;
}

/* ---- accessors ---- */

int32_t tok_token_to_id(const tok_tokenizer *t, const char *token, size_t len) {
    if (!t || !token) return -1;
    int32_t id = tok_smap_get(&t->added_map, token, len, -1);
    return id >= 0 ? id : tok_smap_get(&t->bpe.vocab, token, len, -1);
}

const char *tok_id_to_token(const tok_tokenizer *t, int32_t id) {
    if (!t || id < 0 || (size_t)id >= t->vocab_size) return NULL;
    return t->id_tok[id];
}

size_t tok_vocab_size(const tok_tokenizer *t) { return t ? t->vocab_size : 0; }
int32_t tok_bos_id(const tok_tokenizer *t) { return t ? t->bos_id : -1; }
int32_t tok_eos_id(const tok_tokenizer *t) { return t ? t->eos_id : -1; }

bool tok_is_special(const tok_tokenizer *t, int32_t id) {
    return t && id >= 0 && (size_t)id < t->vocab_size && t->special[id];
}

bool tok_is_added(const tok_tokenizer *t, int32_t id) {
    return t && id >= 0 && (size_t)id < t->vocab_size && t->is_added[id];
}

/* ---- streaming ---- */

/* Text that ends in U+FFFD is held back: the next id may complete a UTF-8 sequence.
 * A real U+FFFD is held too, until any other text follows. Past this many held ids the
 * text is emitted anyway so that a run of garbage cannot grow the window forever.
 *
 * A piece is what the new ids add to the decode of the context before them: the tail of
 * what was emitted, or of the ids a caller set as context (a prompt). The tail must hold
 * enough ids that the decoders see the new ones as a continuation: Metaspace and Strip
 * act on the start of the text (the leading space of its first piece), and a skipped
 * special token decodes to nothing, so the tail reaches back until it holds
 * STREAM_CTX_VISIBLE ids that decode to something (at most STREAM_CTX_MAX ids). */
enum { STREAM_MAX_PENDING = 64, STREAM_CTX_VISIBLE = 4, STREAM_CTX_MAX = 64, STREAM_CTX_RUN = 1024 };

struct tok_stream {
    const tok_tokenizer *tok;
    bool skip;
    int32_t *ids; /* context ids (already emitted) followed by pending ones */
    size_t n, cap, n_ctx;
    tok_buf ctx_text; /* decode of the context ids */
    tok_buf full, piece;
};

og_status *tok_stream_new(const tok_tokenizer *tok, bool skip, tok_stream **out) {
    if (!tok || !out) return og_errorf(OG_ERR_INVALID_ARGUMENT, "tok_stream_new: NULL argument");
    tok_stream *s = calloc(1, sizeof *s);
    if (!s) return og_oom();
    s->tok = tok;
    s->skip = skip;
    *out = s;
    return NULL;
}

void tok_stream_free(tok_stream *s) {
    if (!s) return;
    free(s->ids);
    tok_buf_free(&s->ctx_text);
    tok_buf_free(&s->full);
    tok_buf_free(&s->piece);
    free(s);
}

static bool ends_with_replacement(const tok_buf *b) {
    return b->n >= 3 && !memcmp(b->p + b->n - 3, "\xEF\xBF\xBD", 3);
}

/* Whether id decodes to some text in this stream. */
static bool stream_visible(const tok_stream *s, int32_t id) {
    const tok_tokenizer *t = s->tok;
    return id >= 0 && (size_t)id < t->vocab_size && t->id_tok[id] && t->id_tok[id][0] &&
           !(s->skip && t->special[id]);
}

/* The byte of a byte token "<0xNN>", or -1. */
static int stream_byte(const tok_stream *s, int32_t id) {
    const char *t = tok_id_to_token(s->tok, id);
    return t ? tok_byte_token(t, strlen(t)) : -1;
}

static bool stream_continuation_byte(const tok_stream *s, int32_t id) {
    int b = stream_byte(s, id);
    return b >= 0x80 && b < 0xC0;
}

/* How many of the last ids of ids[0..n) the context keeps. The ByteFallback decoder
 * checks a run of byte tokens as a whole (an invalid run becomes one U+FFFD per byte), so
 * the tail does not start on the continuation bytes of a character: it reaches back to
 * the character's first byte (up to 3 ids more). */
static size_t stream_ctx_tail(const tok_stream *s, const int32_t *ids, size_t n) {
    size_t k = 0, seen = 0;
    while (k < n && k < STREAM_CTX_MAX && seen < STREAM_CTX_VISIBLE)
        if (stream_visible(s, ids[n - 1 - k++])) seen++;
    for (int more = 0; more < 3 && k < n && stream_continuation_byte(s, ids[n - k]); more++) k++;
    return k;
}

/* Emits full[ctx_text.n..] as the piece; the tail of context and emitted ids becomes the
 * context. */
static og_status *stream_emit(tok_stream *s, bool reset) {
    const tok_buf *f = &s->full;
    size_t from = s->ctx_text.n;
    if (from > f->n || (from && memcmp(f->p, s->ctx_text.p, from) != 0)) {
        /* The decoder changed earlier text: emit from the first difference, at a
         * character boundary, rather than repeat or lose text. */
        size_t k = 0, lim = from < f->n ? from : f->n;
        while (k < lim && f->p[k] == s->ctx_text.p[k]) k++;
        while (k > 0 && ((unsigned char)f->p[k] & 0xC0) == 0x80) k--;
        from = k;
    }
    s->piece.n = 0;
    if (!tok_buf_put(&s->piece, f->p + from, f->n - from)) return og_oom();
    if (reset) {
        s->n = s->n_ctx = 0;
        s->ctx_text.n = 0;
        return NULL;
    }
    size_t keep = stream_ctx_tail(s, s->ids, s->n);
    memmove(s->ids, s->ids + (s->n - keep), keep * sizeof *s->ids);
    s->n = s->n_ctx = keep;
    return decode_into(s->tok, s->ids, s->n, s->skip, &s->ctx_text);
}

static bool stream_reserve(tok_stream *s, size_t need) {
    if (need <= s->cap) return true;
    size_t cap = s->cap ? s->cap : 16;
    while (cap < need) cap *= 2;
    int32_t *p = realloc(s->ids, cap * sizeof *p);
    if (!p) return false;
    s->ids = p;
    s->cap = cap;
    return true;
}

og_status *tok_stream_set_context(tok_stream *s, const int32_t *ids, size_t n) {
    if (!s || (!ids && n)) return og_errorf(OG_ERR_INVALID_ARGUMENT, "tok_stream_set_context: NULL argument");
    size_t keep = stream_ctx_tail(s, ids, n), run = 0;
    /* Ids that end in part of a character (split there by the caller) decode their whole
     * run of byte tokens as U+FFFD per byte; the context keeps that run (up to
     * STREAM_CTX_RUN ids), so that the ids completing the character give all of it. */
    while (run < n && run < STREAM_CTX_RUN && stream_byte(s, ids[n - 1 - run]) >= 0) run++;
    if (run > keep) keep = run;
    if (!stream_reserve(s, keep)) return og_oom();
    if (keep) memcpy(s->ids, ids + (n - keep), keep * sizeof *s->ids);
    s->n = s->n_ctx = keep;
    return decode_into(s->tok, s->ids, s->n, s->skip, &s->ctx_text);
}

og_status *tok_stream_feed(tok_stream *s, int32_t id, const char **piece, size_t *piece_len) {
    if (!s || !piece) return og_errorf(OG_ERR_INVALID_ARGUMENT, "tok_stream_feed: NULL argument");
    if (!stream_reserve(s, s->n + 1)) return og_oom();
    s->ids[s->n++] = id;
    OG_TRY(decode_into(s->tok, s->ids, s->n, s->skip, &s->full));
    s->piece.n = 0;
    bool incomplete = ends_with_replacement(&s->full) && s->n - s->n_ctx < STREAM_MAX_PENDING;
    /* (the text may have grown shorter: a context that ends in part of a character
     * decodes it as U+FFFD per byte, and the new id completes it) */
    bool changed = s->full.n != s->ctx_text.n || (s->full.n && memcmp(s->full.p, s->ctx_text.p, s->full.n) != 0);
    if (!incomplete && changed) OG_TRY(stream_emit(s, false));
    if (!tok_buf_put(&s->piece, "", 0)) return og_oom();
    *piece = s->piece.p;
    if (piece_len) *piece_len = s->piece.n;
    return NULL;
}

og_status *tok_stream_flush(tok_stream *s, const char **piece, size_t *piece_len) {
    if (!s || !piece) return og_errorf(OG_ERR_INVALID_ARGUMENT, "tok_stream_flush: NULL argument");
    s->piece.n = 0;
    if (s->n > s->n_ctx) {
        OG_TRY(decode_into(s->tok, s->ids, s->n, s->skip, &s->full));
        OG_TRY(stream_emit(s, true));
    } else {
        s->n = s->n_ctx = 0;
        s->ctx_text.n = 0;
    }
    if (!tok_buf_put(&s->piece, "", 0)) return og_oom();
    *piece = s->piece.p;
    if (piece_len) *piece_len = s->piece.n;
    return NULL;
}
