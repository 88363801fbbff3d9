/* JSON string literals of (pointer, length) byte strings (json_str.h). */
#include "base/json_str.h"

#include <stdlib.h>
#include <string.h>

void json_str_write(const char *s, size_t n, json_str_sink put, void *ctx) {
    static const char hex[] = "0123456789abcdef";
    put(ctx, "\"", 1);
    size_t run = 0; /* bytes from here to i go out as they are */
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c >= 0x20 && c != '"' && c != '\\') continue;
        if (i > run) put(ctx, s + run, i - run);
        run = i + 1;
        char e[6] = {'\\', (char)c};
        size_t k = 2;
        switch (c) {
        case '"': case '\\': break;
        case '\b': e[1] = 'b'; break;
        case '\f': e[1] = 'f'; break;
        case '\n': e[1] = 'n'; break;
        case '\r': e[1] = 'r'; break;
        case '\t': e[1] = 't'; break;
        default:
            memcpy(e + 1, "u00", 3);
            e[4] = hex[c >> 4];
            e[5] = hex[c & 15];
            k = 6;
        }
        put(ctx, e, k);
    }
    if (n > run) put(ctx, s + run, n - run);
    put(ctx, "\"", 1);
}

static void put_file(void *ctx, const char *p, size_t n) { fwrite(p, 1, n, (FILE *)ctx); }

void json_str_fwrite(FILE *f, const char *s, size_t n) { json_str_write(s, n, put_file, f); }

typedef struct counted {
    char *p; /* NULL while only counting */
    size_t n;
} counted;

static void put_counted(void *ctx, const char *p, size_t n) {
    counted *c = ctx;
    if (c->p) memcpy(c->p + c->n, p, n);
    c->n += n;
}

char *json_str_dup(const char *s, size_t n, size_t *len) {
    counted c = {NULL, 0};
    json_str_write(s, n, put_counted, &c); /* the length first */
    char *out = malloc(c.n + 1);
    if (!out) return NULL;
    c = (counted){out, 0};
    json_str_write(s, n, put_counted, &c);
    out[c.n] = 0;
    if (len) *len = c.n;
    return out;
}
