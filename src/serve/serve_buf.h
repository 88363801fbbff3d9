/* A growable byte buffer (serve_buf.c). */
#ifndef OG_SERVE_SERVE_BUF_H
#define OG_SERVE_SERVE_BUF_H

#include <stdbool.h>
#include <stddef.h>

typedef struct srv_buf {
    char *p; /* NUL-terminated when not NULL */
    size_t n, cap;
    bool oom;
} srv_buf;

void srv_buf_add(srv_buf *b, const char *s, size_t n);
void srv_buf_str(srv_buf *b, const char *s);
void srv_buf_printf(srv_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Hands the bytes over (malloc'd, NUL-terminated; NULL when out of memory) and empties b. */
char *srv_buf_take(srv_buf *b, size_t *n);
void srv_buf_free(srv_buf *b);
/* Empties b, keeping its memory. */
void srv_buf_clear(srv_buf *b);
/* s[0, n) as a JSON string, quotes included (json_str_write: a NUL byte becomes \u0000). */
void srv_buf_json_string(srv_buf *b, const char *s, size_t n);
/* A cJSON node that prints as the JSON string of s[0, n) (a raw node holding that text):
 * model text may hold NUL bytes, where cJSON's own strings would end. Every place the
 * server puts decoded text into JSON uses it. NULL when out of memory. */
struct cJSON;
struct cJSON *srv_json_text(const char *s, size_t n);

#endif
