#include "chat/ustr.h"

#include <string.h>
#include <utf8proc.h>

size_t u8_next(const char *s, size_t len, size_t i, int32_t *cp) {
    const unsigned char *p = (const unsigned char *)s + i;
    unsigned char c = p[0];
    if (c < 0x80) {
        *cp = c;
        return 1;
    }
    size_t n = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC0 ? 2 : 1;
    if (n == 1 || i + n > len) {
        *cp = c;
        return 1;
    }
    int32_t v = c & (0x7F >> n);
    for (size_t k = 1; k < n; k++) {
        if ((p[k] & 0xC0) != 0x80) {
            *cp = c;
            return 1;
        }
        v = (v << 6) | (p[k] & 0x3F);
    }
    *cp = v;
    return n;
}

int u8_put(int32_t cp, char *out) {
    unsigned char *o = (unsigned char *)out;
    if (cp < 0x80) {
        o[0] = (unsigned char)cp;
        return 1;
    }
    if (cp < 0x800) {
        o[0] = (unsigned char)(0xC0 | (cp >> 6));
        o[1] = (unsigned char)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp < 0x10000) {
        o[0] = (unsigned char)(0xE0 | (cp >> 12));
        o[1] = (unsigned char)(0x80 | ((cp >> 6) & 0x3F));
        o[2] = (unsigned char)(0x80 | (cp & 0x3F));
        return 3;
    }
    o[0] = (unsigned char)(0xF0 | (cp >> 18));
    o[1] = (unsigned char)(0x80 | ((cp >> 12) & 0x3F));
    o[2] = (unsigned char)(0x80 | ((cp >> 6) & 0x3F));
    o[3] = (unsigned char)(0x80 | (cp & 0x3F));
    return 4;
}

/* Bytes from i on that are ASCII, eight at a time (most template text is ASCII). */
static size_t ascii_run(const char *s, size_t len, size_t i) {
    while (i + 8 <= len) {
        uint64_t w;
        memcpy(&w, s + i, 8);
        if (w & 0x8080808080808080ull) break;
        i += 8;
    }
    while (i < len && !((unsigned char)s[i] & 0x80)) i++;
    return i;
}

size_t u8_count(const char *s, size_t len) {
    size_t i = ascii_run(s, len, 0), n = i;
    for (; i < len; i++) n += ((unsigned char)s[i] & 0xC0) != 0x80;
    return n;
}

bool u8_valid(const char *s, size_t len) {
    size_t i = 0;
    while (i < len) {
        i = ascii_run(s, len, i);
        if (i >= len) break;
        utf8proc_int32_t cp;
        utf8proc_ssize_t k = utf8proc_iterate((const utf8proc_uint8_t *)s + i,
                                              (utf8proc_ssize_t)(len - i), &cp);
        if (k <= 0) return false;
        i += (size_t)k;
    }
    return true;
}

size_t u8_offset(const char *s, size_t len, bool ascii, size_t index) {
    if (ascii) return index < len ? index : len;
    size_t i = 0, k = 0;
    while (i < len && k < index) {
        i++;
        while (i < len && ((unsigned char)s[i] & 0xC0) == 0x80) i++;
        k++;
    }
    return i;
}

static int cat(int32_t cp) { return (int)utf8proc_category(cp); }

bool py_isspace(int32_t cp) {
    if (cp < 0x80) return cp == ' ' || (cp >= 0x09 && cp <= 0x0D) || (cp >= 0x1C && cp <= 0x1F);
    if (cat(cp) == UTF8PROC_CATEGORY_ZS) return true;
    int b = (int)utf8proc_get_property(cp)->bidi_class;
    return b == UTF8PROC_BIDI_CLASS_WS || b == UTF8PROC_BIDI_CLASS_B || b == UTF8PROC_BIDI_CLASS_S;
}

bool py_isalpha(int32_t cp) {
    if (cp < 0x80) return (cp | 0x20) >= 'a' && (cp | 0x20) <= 'z';
    int c = cat(cp);
    return c >= UTF8PROC_CATEGORY_LU && c <= UTF8PROC_CATEGORY_LO;
}

bool py_isdecimal(int32_t cp) {
    if (cp < 0x80) return cp >= '0' && cp <= '9';
    return cat(cp) == UTF8PROC_CATEGORY_ND;
}

/* Code points outside Nd that Python counts as digits (Numeric_Type=Digit):
 * superscripts, subscripts, circled and parenthesized digits. */
static const int32_t digit_ranges[][2] = {
    {0xB2, 0xB3}, {0xB9, 0xB9}, {0x1369, 0x1371}, {0x19DA, 0x19DA}, {0x2070, 0x2070},
    {0x2074, 0x2079}, {0x2080, 0x2089}, {0x2460, 0x2468}, {0x2474, 0x247C},
    {0x2488, 0x2490}, {0x24EA, 0x24EA}, {0x24F5, 0x24FD}, {0x24FF, 0x24FF},
    {0x2776, 0x277E}, {0x2780, 0x2788}, {0x278A, 0x2792}, {0x10A40, 0x10A43},
    {0x1F100, 0x1F10A}};

bool py_isdigit(int32_t cp) {
    if (py_isdecimal(cp)) return true;
    for (size_t i = 0; i < sizeof digit_ranges / sizeof digit_ranges[0]; i++)
        if (cp >= digit_ranges[i][0] && cp <= digit_ranges[i][1]) return true;
    return false;
}

/* CJK ideographs with a numeric value (Python: '一'.isnumeric() is True). */
static const int32_t cjk_numerals[] = {0x3007, 0x4E00, 0x4E03, 0x4E07, 0x4E09, 0x4E5D,
                                       0x4E8C, 0x4E94, 0x4EBF, 0x5104, 0x5146, 0x516B,
                                       0x516D, 0x5341, 0x5343, 0x56DB, 0x767E, 0x96F6};

bool py_isnumeric(int32_t cp) {
    if (cp < 0x80) return cp >= '0' && cp <= '9';
    int c = cat(cp);
    if (c == UTF8PROC_CATEGORY_ND || c == UTF8PROC_CATEGORY_NL || c == UTF8PROC_CATEGORY_NO)
        return true;
    for (size_t i = 0; i < sizeof cjk_numerals / sizeof cjk_numerals[0]; i++)
        if (cp == cjk_numerals[i]) return true;
    return false;
}

bool py_isalnum(int32_t cp) {
    return py_isalpha(cp) || py_isdigit(cp) || py_isnumeric(cp);
}

bool py_isword(int32_t cp) { return cp == '_' || py_isalnum(cp); }

bool py_islower(int32_t cp) {
    if (cp < 0x80) return cp >= 'a' && cp <= 'z';
    return cat(cp) == UTF8PROC_CATEGORY_LL;
}

bool py_isupper(int32_t cp) {
    if (cp < 0x80) return cp >= 'A' && cp <= 'Z';
    return cat(cp) == UTF8PROC_CATEGORY_LU;
}

bool py_istitle(int32_t cp) { return cp >= 0x80 && cat(cp) == UTF8PROC_CATEGORY_LT; }

bool py_iscased(int32_t cp) { return py_islower(cp) || py_isupper(cp) || py_istitle(cp); }

bool py_isprintable(int32_t cp) {
    if (cp < 0x80) return cp >= 0x20 && cp < 0x7F;
    int c = cat(cp);
    return !(c == UTF8PROC_CATEGORY_CN || c == UTF8PROC_CATEGORY_CC || c == UTF8PROC_CATEGORY_CF ||
             c == UTF8PROC_CATEGORY_CS || c == UTF8PROC_CATEGORY_CO || c == UTF8PROC_CATEGORY_ZL ||
             c == UTF8PROC_CATEGORY_ZP || c == UTF8PROC_CATEGORY_ZS);
}

bool py_islinebreak(int32_t cp) {
    return cp == '\n' || cp == '\r' || cp == 0x0B || cp == 0x0C || cp == 0x1C || cp == 0x1D ||
           cp == 0x1E || cp == 0x85 || cp == 0x2028 || cp == 0x2029;
}

/* SpecialCasing.txt's unconditional mappings that Python applies: upper, then title. */
typedef struct special_case {
    int32_t cp;
    int32_t upper[3], title[3];
} special_case;

static const special_case specials[] = {
    {0x00DF, {'S', 'S', 0}, {'S', 's', 0}},
    {0x0149, {0x02BC, 'N', 0}, {0x02BC, 'N', 0}},
    {0x01F0, {'J', 0x030C, 0}, {'J', 0x030C, 0}},
    {0x0390, {0x0399, 0x0308, 0x0301}, {0x0399, 0x0308, 0x0301}},
    {0x03B0, {0x03A5, 0x0308, 0x0301}, {0x03A5, 0x0308, 0x0301}},
    {0x0587, {0x0535, 0x0552, 0}, {0x0535, 0x0582, 0}},
    {0x1E96, {'H', 0x0331, 0}, {'H', 0x0331, 0}},
    {0x1E97, {'T', 0x0308, 0}, {'T', 0x0308, 0}},
    {0x1E98, {'W', 0x030A, 0}, {'W', 0x030A, 0}},
    {0x1E99, {'Y', 0x030A, 0}, {'Y', 0x030A, 0}},
    {0x1E9A, {'A', 0x02BE, 0}, {'A', 0x02BE, 0}},
    {0xFB00, {'F', 'F', 0}, {'F', 'f', 0}},
    {0xFB01, {'F', 'I', 0}, {'F', 'i', 0}},
    {0xFB02, {'F', 'L', 0}, {'F', 'l', 0}},
    {0xFB03, {'F', 'F', 'I'}, {'F', 'f', 'i'}},
    {0xFB04, {'F', 'F', 'L'}, {'F', 'f', 'l'}},
    {0xFB05, {'S', 'T', 0}, {'S', 't', 0}},
    {0xFB06, {'S', 'T', 0}, {'S', 't', 0}},
    {0xFB13, {0x0544, 0x0546, 0}, {0x0544, 0x0576, 0}},
    {0xFB14, {0x0544, 0x0535, 0}, {0x0544, 0x0565, 0}},
    {0xFB15, {0x0544, 0x053B, 0}, {0x0544, 0x056B, 0}},
    {0xFB16, {0x054E, 0x0546, 0}, {0x054E, 0x0576, 0}},
    {0xFB17, {0x0544, 0x053D, 0}, {0x0544, 0x056D, 0}},
};

static const special_case *find_special(int32_t cp) {
    if (cp < 0xDF) return NULL;
    for (size_t i = 0; i < sizeof specials / sizeof specials[0]; i++)
        if (specials[i].cp == cp) return &specials[i];
    return NULL;
}

static int copy_seq(const int32_t *seq, int32_t out[3]) {
    int n = 0;
    while (n < 3 && seq[n]) {
        out[n] = seq[n];
        n++;
    }
    return n;
}

int py_upper(int32_t cp, int32_t out[3]) {
    if (cp < 0x80) {
        out[0] = (cp >= 'a' && cp <= 'z') ? cp - 32 : cp;
        return 1;
    }
    const special_case *sc = find_special(cp);
    if (sc) return copy_seq(sc->upper, out);
    out[0] = utf8proc_toupper(cp);
    return 1;
}

int py_lower(int32_t cp, int32_t out[3]) {
    if (cp < 0x80) {
        out[0] = (cp >= 'A' && cp <= 'Z') ? cp + 32 : cp;
        return 1;
    }
    if (cp == 0x0130) { /* İ lowercases to i + combining dot above */
        out[0] = 'i';
        out[1] = 0x0307;
        return 2;
    }
    out[0] = utf8proc_tolower(cp);
    return 1;
}

int py_title(int32_t cp, int32_t out[3]) {
    if (cp < 0x80) return py_upper(cp, out);
    const special_case *sc = find_special(cp);
    if (sc) return copy_seq(sc->title, out);
    out[0] = utf8proc_totitle(cp);
    return 1;
}
