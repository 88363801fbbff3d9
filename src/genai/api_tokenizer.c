/* The public og_tokenizer functions over the tokenizer layer. */
#include "genai/api_tokenizer.h"
#include "genai/model.h"
#include "genai/config.h"
#include "tokenizer/tokenizer.h"

#include <stdlib.h>
#include <string.h>

struct og_tokenizer {
    tok_tokenizer *t;
};

struct og_tokenizer_stream {
    tok_stream *s;
};

og_status *gen_tokenizer_token_bytes(const og_tokenizer *tok, int32_t id, uint8_t *buf,
                                     size_t cap, size_t *len) {
    return tok_token_bytes(tok->t, id, buf, cap, len);
}

og_status *og_tokenizer_open(const char *path, og_tokenizer **out) {
    if (!path || !out) return og_errorf(OG_ERR_INVALID_ARGUMENT, "og_tokenizer_open: NULL argument");
    og_tokenizer *t = calloc(1, sizeof *t);
    if (!t) return og_oom_context(og_oom(), "%s: the tokenizer", path);
    og_status *st = tok_tokenizer_load(path, &t->t);
    if (st) {
        free(t);
        return st;
    }
    *out = t;
    return NULL;
}

og_status *og_tokenizer_create(const og_model *model, og_tokenizer **out) {
    if (!model) return og_errorf(OG_ERR_INVALID_ARGUMENT, "og_tokenizer_create: NULL model");
    return og_tokenizer_open(model->cfg->dir, out);
}

void og_tokenizer_free(og_tokenizer *tok) {
    if (!tok) return;
    tok_tokenizer_free(tok->t);
    free(tok);
}

og_status *og_tokenizer_encode(const og_tokenizer *tok, const char *text, size_t len,
                               int add_special_tokens, int32_t **ids, size_t *n) {
    if (!tok || (!text && len) || !ids || !n)
        return og_errorf(OG_ERR_INVALID_ARGUMENT, "og_tokenizer_encode: NULL argument");
    return og_oom_context(tok_encode(tok->t, text ? text : "", len, add_special_tokens != 0, ids, n),
                          "tokenizer: encoding %zu bytes of text", len);
}

og_status *og_tokenizer_decode_len(const og_tokenizer *tok, const int32_t *ids, size_t n,
                                   int skip_special_tokens, char **text, size_t *len) {
    if (!tok || (!ids && n) || !text)
        return og_errorf(OG_ERR_INVALID_ARGUMENT, "og_tokenizer_decode: NULL argument");
    return og_oom_context(tok_decode(tok->t, ids, n, skip_special_tokens != 0, text, len),
                          "tokenizer: decoding %zu tokens", n);
}

og_status *og_tokenizer_decode(const og_tokenizer *tok, const int32_t *ids, size_t n,
                               int skip_special_tokens, char **text) {
    return og_tokenizer_decode_len(tok, ids, n, skip_special_tokens, text, NULL);
}

int32_t og_tokenizer_token_to_id(const og_tokenizer *tok, const char *token) {
    return tok && token ? tok_token_to_id(tok->t, token, strlen(token)) : -1;
}

void og_free(void *p) { free(p); }

og_status *og_tokenizer_stream_create(const og_tokenizer *tok, og_tokenizer_stream **out) {
    if (!tok || !out) return og_errorf(OG_ERR_INVALID_ARGUMENT, "og_tokenizer_stream_create: NULL");
    og_tokenizer_stream *s = calloc(1, sizeof *s);
    if (!s) return og_oom_context(og_oom(), "tokenizer: a streaming decoder");
    og_status *st = tok_stream_new(tok->t, true, &s->s);
    if (st) {
        free(s);
        return st;
    }
    *out = s;
    return NULL;
}

og_status *og_tokenizer_stream_decode_len(og_tokenizer_stream *s, int32_t id,
                                          const char **piece, size_t *len) {
    if (!s || !piece) return og_errorf(OG_ERR_INVALID_ARGUMENT, "og_tokenizer_stream_decode: NULL");
    return og_oom_context(tok_stream_feed(s->s, id, piece, len), "tokenizer: decoding token %d",
                          (int)id);
}

og_status *og_tokenizer_stream_set_context(og_tokenizer_stream *s, const int32_t *ids, size_t n) {
    if (!s || (!ids && n)) return og_errorf(OG_ERR_INVALID_ARGUMENT, "og_tokenizer_stream_set_context: NULL");
    return og_oom_context(tok_stream_set_context(s->s, ids, n), "tokenizer: a stream's context of %zu ids", n);
}

og_status *og_tokenizer_stream_decode(og_tokenizer_stream *s, int32_t id, const char **piece) {
    return og_tokenizer_stream_decode_len(s, id, piece, NULL);
}

og_status *og_tokenizer_stream_flush_len(og_tokenizer_stream *s, const char **piece,
                                         size_t *len) {
    if (!s || !piece) return og_errorf(OG_ERR_INVALID_ARGUMENT, "og_tokenizer_stream_flush: NULL");
    return tok_stream_flush(s->s, piece, len);
}

og_status *og_tokenizer_stream_flush(og_tokenizer_stream *s, const char **piece) {
    return og_tokenizer_stream_flush_len(s, piece, NULL);
}

void og_tokenizer_stream_free(og_tokenizer_stream *s) {
    if (!s) return;
    tok_stream_free(s->s);
    free(s);
}
