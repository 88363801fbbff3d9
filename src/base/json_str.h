/* JSON string literals of byte strings given with their length: model text, which may
 * hold NUL bytes (a byte-fallback token such as <0x00> decodes to one), is never cut.
 * The one escaper for JSON the runtime and the CLI write themselves (serve's responses,
 * generate --json, generate --chat --json, profile traces, bench reports). */
#ifndef OG_BASE_JSON_STR_H
#define OG_BASE_JSON_STR_H

#include <stddef.h>
#include <stdio.h>

/* Receives the literal's bytes, in order, in pieces. */
typedef void (*json_str_sink)(void *ctx, const char *p, size_t n);

/* s[0, n) as a JSON string, quotes included: '"' and '\\' escaped, bytes below 0x20 as
 * cJSON escapes them (\b \f \n \r \t, the others \u00XX: a NUL byte is \u0000); every
 * other byte as it is (UTF-8 passes through; the text is not checked). */
void json_str_write(const char *s, size_t n, json_str_sink put, void *ctx);
/* The same onto a stream. */
void json_str_fwrite(FILE *f, const char *s, size_t n);
/* The same as a malloc'd, NUL-terminated string; *len (when not NULL) its length. NULL
 * when out of memory. */
char *json_str_dup(const char *s, size_t n, size_t *len);

#endif
