/* libFuzzer target: any byte string given as tokenizer.json must load or fail with a
 * message, never crash, leak or run away; a tokenizer that loads must encode a fixed
 * text (ASCII, multi-byte UTF-8, invalid UTF-8, digits, spaces) and decode the ids back,
 * as a whole and through a stream. */
#include "tokenizer/tokenizer.h"

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char text[] = "Hello, world!  It's 2024 \xc3\xa9t\xc3\xa9 \xe4\xb8\xad\xe6\x96\x87 "
                           "\xf0\x9f\x98\x80 \xff\xfe tab\tnew\nline <s></s> aaaaaaaa";

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    tok_tokenizer *t = NULL;
    og_status *st = tok_tokenizer_parse((const char *)data, size, "fuzz/tokenizer.json", &t);
    if (st) {
        (void)og_status_message(st);
        og_status_free(st);
        return 0;
    }
    int32_t *ids = NULL;
    size_t n = 0;
    st = tok_encode(t, text, sizeof text - 1, true, &ids, &n);
    if (!st) {
        char *back = NULL;
        og_status_free(tok_decode(t, ids, n, false, &back, NULL));
        free(back);
        tok_stream *s = NULL;
        if (!(st = tok_stream_new(t, true, &s))) {
            const char *piece;
            for (size_t i = 0; i < n && !st; i++) st = tok_stream_feed(s, ids[i], &piece, NULL);
            if (!st) st = tok_stream_flush(s, &piece, NULL);
            tok_stream_free(s);
        }
    }
    og_status_free(st);
    free(ids);
    tok_tokenizer_free(t);
    return 0;
}
