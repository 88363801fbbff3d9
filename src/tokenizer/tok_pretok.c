/* Pre-tokenizers: split normalized text into words (and rewrite them, for ByteLevel and
 * Metaspace). Each split follows one of HF's delimiter behaviours over a list of
 * alternating matches and gaps. */
#include "tokenizer/tok_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const uint16_t tok_byte_to_cp[256] = {
    256, 257, 258, 259, 260, 261, 262, 263, 264, 265, 266, 267,
    268, 269, 270, 271, 272, 273, 274, 275, 276, 277, 278, 279,
    280, 281, 282, 283, 284, 285, 286, 287, 288, 33, 34, 35,
    36, 37, 38, 39, 40, 41, 42, 43, 44, 45, 46, 47,
    48, 49, 50, 51, 52, 53, 54, 55, 56, 57, 58, 59,
    60, 61, 62, 63, 64, 65, 66, 67, 68, 69, 70, 71,
    72, 73, 74, 75, 76, 77, 78, 79, 80, 81, 82, 83,
    84, 85, 86, 87, 88, 89, 90, 91, 92, 93, 94, 95,
    96, 97, 98, 99, 100, 101, 102, 103, 104, 105, 106, 107,
    108, 109, 110, 111, 112, 113, 114, 115, 116, 117, 118, 119,
    120, 121, 122, 123, 124, 125, 126, 289, 290, 291, 292, 293,
    294, 295, 296, 297, 298, 299, 300, 301, 302, 303, 304, 305,
    306, 307, 308, 309, 310, 311, 312, 313, 314, 315, 316, 317,
    318, 319, 320, 321, 322, 161, 162, 163, 164, 165, 166, 167,
    168, 169, 170, 171, 172, 323, 174, 175, 176, 177, 178, 179,
    180, 181, 182, 183, 184, 185, 186, 187, 188, 189, 190, 191,
    192, 193, 194, 195, 196, 197, 198, 199, 200, 201, 202, 203,
    204, 205, 206, 207, 208, 209, 210, 211, 212, 213, 214, 215,
    216, 217, 218, 219, 220, 221, 222, 223, 224, 225, 226, 227,
    228, 229, 230, 231, 232, 233, 234, 235, 236, 237, 238, 239,
    240, 241, 242, 243, 244, 245, 246, 247, 248, 249, 250, 251,
    252, 253, 254, 255,
};

int tok_cp_to_byte(int32_t cp) {
    if ((cp >= 33 && cp <= 126) || (cp >= 161 && cp <= 172) || (cp >= 174 && cp <= 255))
        return cp;
    if (cp >= 256 && cp <= 288) return cp - 256;
    if (cp >= 289 && cp <= 322) return cp - 289 + 127;
    if (cp == 323) return 173;
    return -1;
}

/* GPT-2's word pattern, which ByteLevel applies when use_regex is set. */
static const char *GPT2_PATTERN =
    "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+";
/* What Rust's Unicode \w+|[^\w\s]+ matches (Whitespace pre-tokenizer). */
static const char *WHITESPACE_PATTERN =
    "[\\p{Alphabetic}\\p{M}\\p{Nd}\\p{Pc}\\x{200C}\\x{200D}]+|"
    "[^\\p{Alphabetic}\\p{M}\\p{Nd}\\p{Pc}\\x{200C}\\x{200D}\\p{White_Space}]+";

static og_status *parse_behavior(const cJSON *j, const char *file, const char *path,
                                 tok_split_behavior dflt, tok_split_behavior *out) {
    const char *b = tok_json_str(j, "behavior");
    if (!b) {
        *out = dflt;
        return NULL;
    }
    static const struct {
        const char *name;
        tok_split_behavior b;
    } names[] = {{"Removed", TOK_SPLIT_REMOVED},
                 {"Isolated", TOK_SPLIT_ISOLATED},
                 {"MergedWithPrevious", TOK_SPLIT_MERGED_WITH_PREVIOUS},
                 {"MergedWithNext", TOK_SPLIT_MERGED_WITH_NEXT},
                 {"Contiguous", TOK_SPLIT_CONTIGUOUS}};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (!strcmp(b, names[i].name)) {
            *out = names[i].b;
            return NULL;
        }
    return og_errorf(OG_ERR_UNSUPPORTED, "%s: %s.behavior '%s' is not supported", file, path, b);
}

static int32_t first_char(const char *s) {
    int32_t cp = 0;
    if (s && *s) tok_utf8_next(s, strlen(s), &cp);
    return cp;
}

og_status *tok_pretok_parse(tok_pretok *pt, const cJSON *j, const char *file, const char *path) {
    memset(pt, 0, sizeof *pt);
    const char *t = tok_json_type(j);
    char sub[TOK_PATH_MAX];
    if (!t) return tok_unsupported(file, path, NULL);
    if (!strcmp(t, "Sequence")) {
        pt->kind = TOK_PRE_SEQUENCE;
        const cJSON *arr = cJSON_GetObjectItemCaseSensitive(j, "pretokenizers");
        if (!cJSON_IsArray(arr))
            return og_errorf(OG_ERR_INVALID_MODEL, "%s: %s.pretokenizers must be an array", file, path);
        int n = cJSON_GetArraySize(arr);
        pt->kids = calloc((size_t)(n ? n : 1), sizeof *pt->kids);
        if (!pt->kids) return og_oom();
        for (int i = 0; i < n; i++) {
            snprintf(sub, sizeof sub, "%s.pretokenizers[%d]", path, i);
            pt->n_kids = (size_t)i + 1;
            OG_TRY(tok_pretok_parse(&pt->kids[i], cJSON_GetArrayItem(arr, i), file, sub));
        }
    } else if (!strcmp(t, "ByteLevel")) {
        pt->kind = TOK_PRE_BYTELEVEL;
        pt->add_prefix_space = tok_json_bool(j, "add_prefix_space", true);
        pt->use_regex = tok_json_bool(j, "use_regex", true);
        if (pt->use_regex) OG_TRY(tok_pattern_regex(&pt->pat, GPT2_PATTERN, file, path));
    } else if (!strcmp(t, "Split")) {
        pt->kind = TOK_PRE_SPLIT;
        snprintf(sub, sizeof sub, "%s.pattern", path);
        OG_TRY(tok_pattern_parse(&pt->pat, cJSON_GetObjectItemCaseSensitive(j, "pattern"), file, sub));
        OG_TRY(parse_behavior(j, file, path, TOK_SPLIT_REMOVED, &pt->behavior));
        pt->invert = tok_json_bool(j, "invert", false);
    } else if (!strcmp(t, "Metaspace")) {
        pt->kind = TOK_PRE_METASPACE;
        pt->ch = tok_json_str(j, "replacement") ? first_char(tok_json_str(j, "replacement")) : 0x2581;
        pt->split = tok_json_bool(j, "split", true);
        const char *ps = tok_json_str(j, "prepend_scheme");
        if (!ps) pt->prepend = tok_json_bool(j, "add_prefix_space", true) ? TOK_PREPEND_ALWAYS : TOK_PREPEND_NEVER;
        else if (!strcmp(ps, "always")) pt->prepend = TOK_PREPEND_ALWAYS;
        else if (!strcmp(ps, "first")) pt->prepend = TOK_PREPEND_FIRST;
        else if (!strcmp(ps, "never")) pt->prepend = TOK_PREPEND_NEVER;
        else
            return og_errorf(OG_ERR_UNSUPPORTED, "%s: %s.prepend_scheme '%s' is not supported",
                             file, path, ps);
    } else if (!strcmp(t, "Digits")) {
        pt->kind = TOK_PRE_DIGITS;
        pt->individual_digits = tok_json_bool(j, "individual_digits", false);
    } else if (!strcmp(t, "Whitespace")) {
        pt->kind = TOK_PRE_WHITESPACE;
        OG_TRY(tok_pattern_regex(&pt->pat, WHITESPACE_PATTERN, file, path));
    } else if (!strcmp(t, "WhitespaceSplit")) {
        pt->kind = TOK_PRE_WHITESPACE_SPLIT;
    } else if (!strcmp(t, "Punctuation")) {
        pt->kind = TOK_PRE_PUNCTUATION;
        OG_TRY(parse_behavior(j, file, path, TOK_SPLIT_ISOLATED, &pt->behavior));
    } else if (!strcmp(t, "CharDelimiterSplit")) {
        pt->kind = TOK_PRE_CHAR_DELIMITER;
        const char *d = tok_json_str(j, "delimiter");
        if (!d || !*d)
            return og_errorf(OG_ERR_INVALID_MODEL, "%s: %s.delimiter must be a character", file, path);
        pt->ch = first_char(d);
    } else if (!strcmp(t, "BertPreTokenizer")) {
        pt->kind = TOK_PRE_BERT;
    } else {
        return tok_unsupported(file, path, t);
    }
    return NULL;
}

void tok_pretok_free(tok_pretok *pt) {
    if (!pt) return;
    for (size_t i = 0; i < pt->n_kids; i++) tok_pretok_free(&pt->kids[i]);
    free(pt->kids);
    tok_pattern_free(&pt->pat);
}

/* ---- splitting ---- */

typedef enum char_pred { PRED_NUMERIC, PRED_WHITESPACE, PRED_PUNCT, PRED_CHAR } char_pred;

/* Each matching character is a match of its own; gaps between them are merged. */
static bool char_matches(char_pred pred, int32_t ch, const char *s, size_t n, tok_plist *out) {
    if (n == 0) return tok_plist_push(out, 0, 0, 0, false);
    size_t last = 0;
    for (size_t i = 0; i < n;) {
        int32_t cp;
        size_t k = tok_utf8_next(s + i, n - i, &cp);
        bool m = pred == PRED_NUMERIC      ? tok_is_numeric(cp)
                 : pred == PRED_WHITESPACE ? tok_is_whitespace(cp)
                 : pred == PRED_PUNCT      ? tok_is_punctuation(cp)
                                           : cp == ch;
        if (m) {
            if (last < i && !tok_plist_push(out, last, i - last, 0, false)) return false;
            if (!tok_plist_push(out, i, k, 1, false)) return false;
            last = i + k;
        }
        i += k;
    }
    if (last < n && !tok_plist_push(out, last, n - last, 0, false)) return false;
    return true;
}

/* Turns matches/gaps (relative to piece `pc`) into the kept sub-pieces, per behaviour. */
static bool apply_behavior(const tok_piece *pc, tok_plist *m, tok_split_behavior b, bool invert,
                           tok_plist *out) {
    tok_piece *v = m->v;
    size_t n = m->n, k = 0;
    if (invert)
        for (size_t i = 0; i < n; i++) v[i].id = !v[i].id;
    /* Compact in place: v[0..k) are the resulting (range, remove) entries, where `id`
     * now means "remove". */
    bool prev_match = false;
    switch (b) {
    case TOK_SPLIT_ISOLATED:
        for (size_t i = 0; i < n; i++) v[i].id = 0;
        k = n;
        break;
    case TOK_SPLIT_REMOVED:
        k = n;
        break;
    case TOK_SPLIT_CONTIGUOUS:
        for (size_t i = 0; i < n; i++) {
            bool is_m = v[i].id;
            if (is_m == prev_match && k > 0) v[k - 1].len = v[i].off + v[i].len - v[k - 1].off;
            else v[k++] = (tok_piece){v[i].off, v[i].len, 0, 0};
            prev_match = is_m;
        }
        break;
    case TOK_SPLIT_MERGED_WITH_PREVIOUS:
        for (size_t i = 0; i < n; i++) {
            bool is_m = v[i].id;
            if (is_m && !prev_match && k > 0) v[k - 1].len = v[i].off + v[i].len - v[k - 1].off;
            else v[k++] = (tok_piece){v[i].off, v[i].len, 0, 0};
            prev_match = is_m;
        }
        break;
    case TOK_SPLIT_MERGED_WITH_NEXT: {
        /* Walk backwards, building the result from the end of the array. */
        size_t w = n;
        for (size_t i = n; i-- > 0;) {
            bool is_m = v[i].id;
            if (is_m && !prev_match && w < n) {
                size_t end = v[w].off + v[w].len;
                v[w].off = v[i].off;
                v[w].len = end - v[i].off;
            } else {
                v[--w] = (tok_piece){v[i].off, v[i].len, 0, 0};
            }
            prev_match = is_m;
        }
        for (size_t i = w; i < n; i++) v[k++] = v[i];
        break;
    }
    }
    for (size_t i = 0; i < k; i++) {
        if (v[i].id || v[i].len == 0) continue;
        if (!tok_plist_push(out, pc->off + v[i].off, v[i].len, -1, pc->at_start && v[i].off == 0))
            return false;
    }
    return true;
}

static og_status *split_by_pattern(const tok_pattern *p, const tok_buf *text, const tok_piece *pc,
                                   tok_split_behavior b, bool invert, tok_plist *m, tok_plist *out) {
    m->n = 0;
    OG_TRY(tok_pattern_find(p, text->p + pc->off, pc->len, m));
    return apply_behavior(pc, m, b, invert, out) ? NULL : og_oom();
}

static og_status *split_by_char(char_pred pred, int32_t ch, const tok_buf *text,
                                const tok_piece *pc, tok_split_behavior b, tok_plist *m,
                                tok_plist *out) {
    m->n = 0;
    if (!char_matches(pred, ch, text->p + pc->off, pc->len, m)) return og_oom();
    return apply_behavior(pc, m, b, false, out) ? NULL : og_oom();
}

/* Appends the byte-level spelling of text[off..off+len) and returns its new range. */
static bool to_byte_level(tok_buf *text, size_t off, size_t len, tok_piece *res) {
    if (!tok_buf_reserve(text, len * 2 + 1)) return false;
    const unsigned char *src = (const unsigned char *)text->p + off;
    char *dst = text->p + text->n;
    size_t o = 0;
    for (size_t i = 0; i < len; i++) {
        uint16_t cp = tok_byte_to_cp[src[i]];
        if (cp < 0x80) dst[o++] = (char)cp;
        else {
            dst[o++] = (char)(0xC0 | (cp >> 6));
            dst[o++] = (char)(0x80 | (cp & 0x3F));
        }
    }
    res->off = text->n;
    res->len = o;
    text->n += o;
    return true;
}

static og_status *apply_one(const tok_pretok *pt, tok_buf *text, const tok_piece *pc,
                            tok_plist *m, tok_plist *tmp, tok_plist *out) {
    switch (pt->kind) {
    case TOK_PRE_BYTELEVEL: {
        tok_piece p = *pc;
        if (pt->add_prefix_space && !(p.len > 0 && text->p[p.off] == ' ')) {
            if (!tok_buf_reserve(text, p.len + 2)) return og_oom();
            size_t off = text->n;
            text->p[text->n++] = ' ';
            memcpy(text->p + text->n, text->p + p.off, p.len);
            text->n += p.len;
            p.off = off;
            p.len += 1;
        }
        tmp->n = 0;
        if (pt->use_regex) OG_TRY(split_by_pattern(&pt->pat, text, &p, TOK_SPLIT_ISOLATED, false, m, tmp));
        else if (p.len && !tok_plist_push(tmp, p.off, p.len, -1, p.at_start)) return og_oom();
        for (size_t i = 0; i < tmp->n; i++) {
            tok_piece r = tmp->v[i];
            if (!to_byte_level(text, r.off, r.len, &r) || !tok_plist_push(out, r.off, r.len, -1, r.at_start))
                return og_oom();
        }
        return NULL;
    }
    case TOK_PRE_SPLIT:
        return split_by_pattern(&pt->pat, text, pc, pt->behavior, pt->invert, m, out);
    case TOK_PRE_WHITESPACE:
        return split_by_pattern(&pt->pat, text, pc, TOK_SPLIT_REMOVED, true, m, out);
    case TOK_PRE_DIGITS:
        return split_by_char(PRED_NUMERIC, 0, text, pc,
                             pt->individual_digits ? TOK_SPLIT_ISOLATED : TOK_SPLIT_CONTIGUOUS, m, out);
    case TOK_PRE_WHITESPACE_SPLIT:
        return split_by_char(PRED_WHITESPACE, 0, text, pc, TOK_SPLIT_REMOVED, m, out);
    case TOK_PRE_PUNCTUATION:
        return split_by_char(PRED_PUNCT, 0, text, pc, pt->behavior, m, out);
    case TOK_PRE_CHAR_DELIMITER:
        return split_by_char(PRED_CHAR, pt->ch, text, pc, TOK_SPLIT_REMOVED, m, out);
    case TOK_PRE_BERT: {
        tmp->n = 0;
        OG_TRY(split_by_char(PRED_WHITESPACE, 0, text, pc, TOK_SPLIT_REMOVED, m, tmp));
        for (size_t i = 0; i < tmp->n; i++) {
            tok_piece r = tmp->v[i];
            OG_TRY(split_by_char(PRED_PUNCT, 0, text, &r, TOK_SPLIT_ISOLATED, m, out));
        }
        return NULL;
    }
    case TOK_PRE_METASPACE: {
        char rep[4];
        size_t rl = tok_utf8_put(pt->ch, rep);
        if (!tok_buf_reserve(text, pc->len * 4 + 8)) return og_oom();
        const char *src = text->p + pc->off;
        char *dst = text->p + text->n;
        size_t o = 0;
        bool starts = pc->len >= rl && !memcmp(src, rep, rl);
        /* Spaces become the replacement first, so a leading space counts as one. */
        if (pc->len && src[0] == ' ') starts = true;
        bool prepend = pt->prepend == TOK_PREPEND_ALWAYS ||
                       (pt->prepend == TOK_PREPEND_FIRST && pc->at_start);
        if (prepend && !starts) {
            memcpy(dst, rep, rl);
            o += rl;
        }
        for (size_t i = 0; i < pc->len; i++) {
            if (src[i] == ' ') {
                memcpy(dst + o, rep, rl);
                o += rl;
            } else {
                dst[o++] = src[i];
            }
        }
        tok_piece p = {text->n, o, -1, pc->at_start};
        text->n += o;
        if (!pt->split) return tok_plist_push(out, p.off, p.len, -1, p.at_start) ? NULL : og_oom();
        return split_by_char(PRED_CHAR, pt->ch, text, &p, TOK_SPLIT_MERGED_WITH_NEXT, m, out);
    }
    case TOK_PRE_SEQUENCE: break;
    }
    return og_errorf(OG_ERR_RUNTIME, "tokenizer: bad pre-tokenizer kind");
}

og_status *tok_pretok_apply(const tok_pretok *pt, tok_buf *text, const tok_plist *in,
                            tok_plist *out) {
    out->n = 0;
    og_status *st = NULL;
    if (pt->kind == TOK_PRE_SEQUENCE) {
        tok_plist a = {0}, b = {0};
        for (size_t i = 0; i < in->n && !st; i++)
            if (!tok_plist_push(&a, in->v[i].off, in->v[i].len, in->v[i].id, in->v[i].at_start))
                st = og_oom();
        for (size_t k = 0; k < pt->n_kids && !st; k++) {
            st = tok_pretok_apply(&pt->kids[k], text, &a, &b);
            tok_plist t = a;
            a = b;
            b = t;
        }
        for (size_t i = 0; i < a.n && !st; i++)
            if (!tok_plist_push(out, a.v[i].off, a.v[i].len, a.v[i].id, a.v[i].at_start))
                st = og_oom();
        tok_plist_free(&a);
        tok_plist_free(&b);
        return st;
    }
    tok_plist m = {0}, tmp = {0};
    for (size_t i = 0; i < in->n && !st; i++) {
        const tok_piece *pc = &in->v[i];
        if (pc->id >= 0) {
            if (!tok_plist_push(out, pc->off, pc->len, pc->id, pc->at_start)) st = og_oom();
            continue;
        }
        tok_piece copy = *pc;
        st = apply_one(pt, text, &copy, &m, &tmp, out);
    }
    tok_plist_free(&m);
    tok_plist_free(&tmp);
    return st;
}
