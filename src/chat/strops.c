/* Python's str operations that filters and methods share: strip, case mapping, replace,
 * split, splitlines, join, padding, and markupsafe's escape. All count code points. */
#include "chat/eval.h"

#include "chat/ustr.h"

#include <string.h>

#define ADD(b, s, n)                                                                     \
    do {                                                                                 \
        if (!sbuf_add((b), (s), (n))) {                                                  \
            st = sbuf_err(rt, (b));                                                      \
            goto done;                                                                   \
        }                                                                                \
    } while (0)

static og_status *finish(crt *rt, sbuf *b, og_status *st, cv *out) {
    if (!st) st = cv_make_str(rt, b->p ? b->p : "", b->n, out);
    sbuf_free(b);
    return st;
}

static og_status *need_str(crt *rt, cv v, const char *what) {
    if (v.kind == CV_UNDEF) return cv_undef_error(rt, v);
    if (v.kind != CV_STR)
        return chat_type_err(rt, "%s must be str, not %s", what, cv_type_name(v));
    return NULL;
}

static bool in_chars(const cv_str *chars, int32_t cp) {
    if (!chars) return py_isspace(cp);
    for (size_t i = 0; i < chars->len;) {
        int32_t c;
        i += u8_next(chars->s, chars->len, i, &c);
        if (c == cp) return true;
    }
    return false;
}

og_status *chat_str_strip(crt *rt, cv s, cv chars, int which, cv *out) {
    const cv_str *set = NULL;
    if (chars.kind == CV_STR) set = chars.s;
    else if (chars.kind != CV_NONE && chars.kind != CV_UNDEF)
        return chat_type_err(rt, "strip arg must be None or str");
    const char *p = s.s->s;
    size_t from = 0, to = s.s->len;
    if (which & 1)
        while (from < to) {
            int32_t cp;
            size_t k = u8_next(p, to, from, &cp);
            if (!in_chars(set, cp)) break;
            from += k;
        }
    if (which & 2)
        while (to > from) {
            size_t k = to - 1;
            while (k > from && ((unsigned char)p[k] & 0xC0) == 0x80) k--;
            int32_t cp;
            u8_next(p, to, k, &cp);
            if (!in_chars(set, cp)) break;
            to = k;
        }
    if (from == 0 && to == s.s->len) {
        *out = s;
        out->flags = 0;
        return NULL;
    }
    return cv_make_str(rt, p + from, to - from, out);
}

static bool put_cps(sbuf *b, const int32_t *cps, int n) {
    char tmp[12];
    size_t k = 0;
    for (int i = 0; i < n; i++) k += (size_t)u8_put(cps[i], tmp + k);
    return sbuf_add(b, tmp, k);
}

/* Whether the sigma at byte i is final: a cased letter before it (skipping nothing
 * fancier than Python's case-ignorable run) and none after. */
static bool final_sigma(const char *s, size_t len, size_t i, size_t k) {
    bool before = false;
    size_t j = i;
    while (j > 0) {
        size_t q = j - 1;
        while (q > 0 && ((unsigned char)s[q] & 0xC0) == 0x80) q--;
        int32_t c;
        u8_next(s, len, q, &c);
        if (py_iscased(c)) {
            before = true;
            break;
        }
        if (c != '\'' && c != 0x2019 && c != '.' && c != ':' && c != 0xAD) break;
        j = q;
    }
    if (!before) return false;
    for (size_t q = i + k; q < len;) {
        int32_t c;
        q += u8_next(s, len, q, &c);
        if (py_iscased(c)) return false;
        if (c != '\'' && c != 0x2019 && c != '.' && c != ':' && c != 0xAD) break;
    }
    return true;
}

og_status *chat_str_case(crt *rt, cv s, int how, cv *out) {
    og_status *st = NULL;
    sbuf b;
    sbuf_init(&b, rt->lim.max_output);
    const char *p = s.s->s;
    size_t len = s.s->len;
    bool prev_cased = false;
    for (size_t i = 0, n = 0; i < len; n++) {
        int32_t cp, m[3];
        size_t k = u8_next(p, len, i, &cp);
        int nm;
        switch (how) {
        case 0:
            if (cp == 0x03A3 && final_sigma(p, len, i, k)) {
                m[0] = 0x03C2;
                nm = 1;
            } else {
                nm = py_lower(cp, m);
            }
            break;
        case 1: nm = py_upper(cp, m); break;
        case 2: nm = n == 0 ? py_title(cp, m) : py_lower(cp, m); break;
        case 3:
            nm = prev_cased ? py_lower(cp, m) : py_title(cp, m);
            prev_cased = py_iscased(cp);
            break;
        case 5: /* jinja2's |title: words start after runs of [-\s({[<]; upper, then lower */
            if (cp == '-' || cp == '(' || cp == '{' || cp == '[' || cp == '<' || py_isspace(cp)) {
                m[0] = cp;
                nm = 1;
                prev_cased = false;
            } else {
                nm = prev_cased ? py_lower(cp, m) : py_upper(cp, m);
                prev_cased = true;
            }
            break;
        default:
            if (py_isupper(cp)) nm = py_lower(cp, m);
            else if (py_islower(cp)) nm = py_upper(cp, m);
            else {
                m[0] = cp;
                nm = 1;
            }
        }
        if (!put_cps(&b, m, nm)) {
            st = sbuf_err(rt, &b);
            goto done;
        }
        i += k;
    }
done:
    return finish(rt, &b, st, out);
}

og_status *chat_str_replace(crt *rt, cv s, cv old, cv rep, int64_t count, cv *out) {
    OG_TRY(need_str(rt, old, "replace() argument 1"));
    OG_TRY(need_str(rt, rep, "replace() argument 2"));
    og_status *st = NULL;
    sbuf b;
    sbuf_init(&b, rt->lim.max_output);
    const char *p = s.s->s;
    size_t len = s.s->len, ol = old.s->len;
    int64_t done_n = 0;
    if (ol == 0) { /* "" is found before every character and at the end */
        size_t i = 0;
        while (count < 0 || done_n < count) {
            ADD(&b, rep.s->s, rep.s->len);
            done_n++;
            if (i >= len) break;
            int32_t cp;
            size_t k = u8_next(p, len, i, &cp);
            ADD(&b, p + i, k);
            i += k;
        }
        if (i < len) ADD(&b, p + i, len - i);
        goto done;
    }
    size_t i = 0;
    while (i < len) {
        const char *hit = (count < 0 || done_n < count) ? memmem(p + i, len - i, old.s->s, ol) : NULL;
        if (!hit) break;
        size_t at = (size_t)(hit - p);
        ADD(&b, p + i, at - i);
        ADD(&b, rep.s->s, rep.s->len);
        i = at + ol;
        done_n++;
    }
    ADD(&b, p + i, len - i);
done:
    return finish(rt, &b, st, out);
}

static og_status *push_piece(crt *rt, cv_list *l, const char *s, size_t len) {
    cv v;
    OG_TRY(cv_make_str(rt, s, len, &v));
    return cv_list_push(rt, l, v);
}

static size_t skip_ws_fwd(const char *p, size_t len, size_t i) {
    while (i < len) {
        int32_t cp;
        size_t k = u8_next(p, len, i, &cp);
        if (!py_isspace(cp)) break;
        i += k;
    }
    return i;
}

static size_t prev_cp(const char *p, size_t i) {
    size_t q = i - 1;
    while (q > 0 && ((unsigned char)p[q] & 0xC0) == 0x80) q--;
    return q;
}

/* Moves i back over code points that are (space true) or are not whitespace. */
static size_t skip_back(const char *p, size_t len, size_t i, bool space) {
    while (i > 0) {
        size_t q = prev_cp(p, i);
        int32_t cp;
        u8_next(p, len, q, &cp);
        if (py_isspace(cp) != space) break;
        i = q;
    }
    return i;
}

og_status *chat_str_split(crt *rt, cv s, cv sep, int64_t maxsplit, bool right, cv *out) {
    cv_list *l = cv_list_new(rt, 4, CV_SEQ_LIST);
    if (!l) return crt_mem_err(rt);
    const char *p = s.s->s;
    size_t len = s.s->len;
    int64_t splits = 0;
    if (sep.kind == CV_NONE || sep.kind == CV_UNDEF) {
        if (!right) {
            size_t i = skip_ws_fwd(p, len, 0);
            while (i < len) {
                if (maxsplit >= 0 && splits >= maxsplit) {
                    OG_TRY(push_piece(rt, l, p + i, len - i));
                    break;
                }
                size_t j = i;
                while (j < len) {
                    int32_t cp;
                    size_t k = u8_next(p, len, j, &cp);
                    if (py_isspace(cp)) break;
                    j += k;
                }
                OG_TRY(push_piece(rt, l, p + i, j - i));
                splits++;
                i = skip_ws_fwd(p, len, j);
            }
        } else {
            /* from the right: collect pieces in reverse, then flip */
            size_t end = skip_back(p, len, len, true);
            while (end > 0) {
                if (maxsplit >= 0 && splits >= maxsplit) {
                    OG_TRY(push_piece(rt, l, p, end));
                    break;
                }
                size_t start = skip_back(p, len, end, false);
                OG_TRY(push_piece(rt, l, p + start, end - start));
                splits++;
                end = skip_back(p, len, start, true);
            }
            for (size_t a = 0, z = l->n ? l->n - 1 : 0; a < z; a++, z--) {
                cv t = l->v[a];
                l->v[a] = l->v[z];
                l->v[z] = t;
            }
        }
        *out = cv_of_list(l);
        return NULL;
    }
    if (sep.kind != CV_STR) return chat_type_err(rt, "must be str or None, not %s", cv_type_name(sep));
    size_t sl = sep.s->len;
    if (sl == 0) return crt_err(rt, OG_ERR_RUNTIME, "ValueError: empty separator");
    if (!right) {
        size_t i = 0;
        for (;;) {
            const char *hit = (maxsplit < 0 || splits < maxsplit) ? memmem(p + i, len - i, sep.s->s, sl) : NULL;
            if (!hit) break;
            size_t at = (size_t)(hit - p);
            OG_TRY(push_piece(rt, l, p + i, at - i));
            splits++;
            i = at + sl;
        }
        OG_TRY(push_piece(rt, l, p + i, len - i));
    } else {
        size_t end = len;
        for (;;) {
            if (maxsplit >= 0 && splits >= maxsplit) break;
            /* the last occurrence ending at or before end */
            size_t at = SIZE_MAX;
            for (size_t j = end >= sl ? end - sl + 1 : 0; j-- > 0;)
                if (memcmp(p + j, sep.s->s, sl) == 0) {
                    at = j;
                    break;
                }
            if (at == SIZE_MAX) break;
            OG_TRY(push_piece(rt, l, p + at + sl, end - at - sl));
            splits++;
            end = at;
        }
        OG_TRY(push_piece(rt, l, p, end));
        for (size_t a = 0, z = l->n - 1; a < z; a++, z--) {
            cv t = l->v[a];
            l->v[a] = l->v[z];
            l->v[z] = t;
        }
    }
    *out = cv_of_list(l);
    return NULL;
}

og_status *chat_str_splitlines(crt *rt, cv s, bool keepends, cv *out) {
    cv_list *l = cv_list_new(rt, 4, CV_SEQ_LIST);
    if (!l) return crt_mem_err(rt);
    const char *p = s.s->s;
    size_t len = s.s->len, start = 0, i = 0;
    while (i < len) {
        int32_t cp;
        size_t k = u8_next(p, len, i, &cp);
        if (py_islinebreak(cp)) {
            size_t eol = i + k;
            if (cp == '\r' && eol < len && p[eol] == '\n') eol++;
            OG_TRY(push_piece(rt, l, p + start, (keepends ? eol : i) - start));
            start = i = eol;
            continue;
        }
        i += k;
    }
    if (start < len) OG_TRY(push_piece(rt, l, p + start, len - start));
    *out = cv_of_list(l);
    return NULL;
}

og_status *chat_str_join(crt *rt, cv sep, cv items, cv *out) {
    cv_list *l;
    OG_TRY(cv_iterate(rt, items, &l));
    og_status *st = NULL;
    sbuf b;
    sbuf_init(&b, rt->lim.max_output);
    for (size_t i = 0; i < l->n; i++) {
        if (l->v[i].kind != CV_STR) {
            st = chat_type_err(rt, "sequence item %zu: expected str instance, %s found", i,
                               cv_type_name(l->v[i]));
            goto done;
        }
        if (i) ADD(&b, sep.s->s, sep.s->len);
        ADD(&b, l->v[i].s->s, l->v[i].s->len);
    }
done:
    return finish(rt, &b, st, out);
}

og_status *chat_str_slice_cp(crt *rt, const cv_str *s, size_t from, size_t to, cv *out) {
    bool ascii = s->len == s->ncp;
    size_t a = u8_offset(s->s, s->len, ascii, from), z = u8_offset(s->s, s->len, ascii, to);
    return cv_make_str(rt, s->s + a, z - a, out);
}

og_status *chat_str_pad(crt *rt, sbuf *b, const char *s, size_t len, size_t ncp, int64_t width,
                        char align, const char *fill, size_t fill_len) {
    og_status *st = NULL;
    size_t pad = width > 0 && (uint64_t)width > ncp ? (size_t)width - ncp : 0;
    if (pad > rt->lim.max_output) return sbuf_err(rt, b);
    size_t left = 0;
    if (align == '>') left = pad;
    else if (align == '^') left = pad / 2;
    else if (align == 'c') left = pad / 2 + (pad & (size_t)width & 1);
    for (size_t i = 0; i < left; i++) ADD(b, fill, fill_len);
    ADD(b, s, len);
    for (size_t i = left; i < pad; i++) ADD(b, fill, fill_len);
done:
    return st;
}

og_status *chat_escape(crt *rt, cv v, cv *out) {
    if (v.kind == CV_STR && (v.flags & CVF_MARKUP)) {
        *out = v;
        return NULL;
    }
    cv s;
    OG_TRY(cv_to_str(rt, v, &s));
    og_status *st = NULL;
    sbuf b;
    sbuf_init(&b, rt->lim.max_output);
    size_t run = 0;
    for (size_t i = 0; i < s.s->len; i++) {
        const char *e = NULL;
        switch (s.s->s[i]) {
        case '&': e = "&amp;"; break;
        case '<': e = "&lt;"; break;
        case '>': e = "&gt;"; break;
        case '"': e = "&#34;"; break;
        case '\'': e = "&#39;"; break;
        default: continue;
        }
        ADD(&b, s.s->s + run, i - run);
        ADD(&b, e, strlen(e));
        run = i + 1;
    }
    ADD(&b, s.s->s + run, s.s->len - run);
done:
    st = finish(rt, &b, st, out);
    if (!st) out->flags = CVF_MARKUP;
    return st;
}
