/* Inside the JSON Schema front end: a growable text buffer for the regular expressions
 * it writes, and the regex builders of its scalar lexemes (strings in json_strings.c,
 * numbers in json_numbers.c). Each builder writes `re`-syntax text (lexer.h) whose
 * language is exactly what llguidance's JSON compiler (default options) allows for that
 * JSON value; json_schema.c turns it into one lexeme. */
#ifndef OG_GUIDE_JSON_INTERNAL_H
#define OG_GUIDE_JSON_INTERNAL_H

#include "base/status.h"
#include "guide/lexer.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct jbuf {
    char *s;
    size_t len, cap;
    bool oom; /* an append failed: the text is incomplete, report og_oom() */
} jbuf;

void jbuf_put(jbuf *b, const char *s, size_t n);
void jbuf_puts(jbuf *b, const char *s);
void jbuf_putc(jbuf *b, char c);
void jbuf_printf(jbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void jbuf_free(jbuf *b);

/* One character of a JSON string body as llguidance writes it: any code point but '"',
 * '\\' and the controls U+0000-U+001F, U+007F; or the escapes \" \\ \b \f \n \r \t;
 * or \u00XX for a control only (hex digits of either case). */
extern const char JSON_CHAR_RE[];

/* One character of an extra object key where the object names some keys (llguidance
 * builds that lexeme, a string other than the named keys, with every \uXXXX escape:
 * any code unit but a surrogate, or a surrogate pair). */
extern const char JSON_KEY_CHAR_RE[];

/* The body (between the quotes) of a JSON string whose decoded text is exactly `s`
 * (UTF-8): each character that JSON must escape becomes the alternatives of its
 * escapes. */
void json_re_literal_body(jbuf *out, const uint8_t *s, size_t n);

/* The body of a JSON string whose decoded text contains a match of `pattern` (JSON
 * Schema's unanchored search; a top-level alternative's leading '^' and trailing '$'
 * anchor it). The pattern's characters are code points; each that JSON must escape is
 * rewritten to its escapes. `scratch` is a lexer used to evaluate which special
 * characters a class holds. Errors name `where` (a JSON pointer) and the column. */
og_status *json_re_pattern_body(jbuf *out, const char *pattern, size_t n, glex *scratch,
                                const char *where);

/* The body of a JSON string that holds a match of `pattern` and has between lo and hi
 * characters (hi UINT32_MAX: no upper bound), for the shapes of pattern where that is a
 * regex (see json_strings.c); *handled false, writing nothing, for the others. */
og_status *json_re_pattern_sized(jbuf *out, const char *pattern, size_t n, glex *scratch,
                                 const char *where, unsigned lo, unsigned hi, bool *handled);

/* The body for `format` (date, time, date-time, duration, email, hostname, ipv4, ipv6,
 * uuid, uri, unknown); OG_ERR_INVALID_ARGUMENT "Unknown format" otherwise. */
og_status *json_re_format_body(jbuf *out, const char *format, const char *where);

/* Whether json_re_format_body knows `format`. */
bool json_format_known(const char *format);

/* A number's bounds as the schema gives them; has_* false when absent. */
typedef struct json_bounds {
    bool has_min, has_max, min_excl, max_excl;
    double min, max;
} json_bounds;

/* An integer lexeme within the bounds. Unsatisfiable bounds are
 * OG_ERR_INVALID_ARGUMENT naming `where`. */
og_status *json_re_integer(jbuf *out, const json_bounds *b, const char *where);
/* A number lexeme within the bounds (no bounds: the full JSON number grammar with
 * exponents; with a bound: decimals without exponent, as llguidance). */
og_status *json_re_number(jbuf *out, const json_bounds *b, const char *where);
/* The shortest decimal text that reads back as `v` (JSON's rendering of an enum's or
 * const's number: 100.0 -> "100", 0.1 -> "0.1"). */
void json_number_text(jbuf *out, double v);

#endif
