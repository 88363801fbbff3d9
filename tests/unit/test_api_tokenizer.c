/* The public tokenizer functions that report lengths: decoded text and stream pieces may
 * hold NUL characters (GPT-2's token "Ā", id 188, is the byte 0), which a NUL-terminated
 * string alone cannot carry. Expected text from HF tokenizers 0.23.3:
 *   Tokenizer.from_file(".../tiny-random-gpt2-fp32/tokenizer.json").decode([64, 188, 65])
 *   == "a\x00b" */
#include "testing.h"

#include <stdio.h>
#include <string.h>

#define GPT2 "hf-internal-testing/tiny-random-gpt2-fp32"

TEST(tokenizer_api_lengths_carry_nul) {
    char dir[1024];
    if (!test_ortgenai_package(dir, sizeof dir, GPT2)) return;
    og_tokenizer *tok;
    CHECK_OK(og_tokenizer_open(dir, &tok));
    const int32_t ids[] = {64, 188, 65};
    char *text = NULL;
    size_t len = 99;
    CHECK_OK(og_tokenizer_decode_len(tok, ids, 3, 1, &text, &len));
    CHECK_EQ_INT(len, 3);
    CHECK(text && !memcmp(text, "a\0b", 4));
    og_free(text);
    CHECK_OK(og_tokenizer_decode_len(tok, ids, 0, 1, &text, &len));
    CHECK(len == 0 && text && !text[0]);
    og_free(text);

    og_tokenizer_stream *s;
    CHECK_OK(og_tokenizer_stream_create(tok, &s));
    const char *want[] = {"a", "", "b"};
    const size_t want_len[] = {1, 1, 1};
    for (int i = 0; i < 3; i++) {
        const char *piece = NULL;
        CHECK_OK(og_tokenizer_stream_decode_len(s, ids[i], &piece, &len));
        CHECK_EQ_INT(len, want_len[i]);
        CHECK(piece && !memcmp(piece, want[i], len));
    }
    const char *piece = NULL;
    CHECK_OK(og_tokenizer_stream_flush_len(s, &piece, &len));
    CHECK(len == 0 && piece && !piece[0]);
    og_status *st = og_tokenizer_stream_decode_len(NULL, 1, &piece, &len);
    CHECK(st && og_status_code(st) == OG_ERR_INVALID_ARGUMENT);
    og_status_free(st);
    og_tokenizer_stream_free(s);
    og_tokenizer_free(tok);
}

/* Feeds ids after a context; the pieces, joined, must be `want`. */
static void continuation_is(og_tokenizer *tok, const int32_t *ctx, size_t n_ctx,
                            const int32_t *ids, size_t n, const char *want) {
    og_tokenizer_stream *s;
    CHECK_OK(og_tokenizer_stream_create(tok, &s));
    CHECK_OK(og_tokenizer_stream_set_context(s, ctx, n_ctx));
    char out[256] = "";
    const char *piece = NULL;
    for (size_t i = 0; i <= n; i++) {
        if (i < n) CHECK_OK(og_tokenizer_stream_decode(s, ids[i], &piece));
        else CHECK_OK(og_tokenizer_stream_flush(s, &piece));
        strncat(out, piece, sizeof out - strlen(out) - 1);
    }
    if (strcmp(out, want)) fprintf(stderr, "  continuation: got '%s', want '%s'\n", out, want);
    CHECK(!strcmp(out, want));
    og_tokenizer_stream_free(s);
}

/* A stream with a context gives what the generated ids add to the decode of the context.
 * Expected text from HF tokenizers 0.23.3 on phi3-v's tokenizer.json (llama-style:
 * Replace ▁, ByteFallback, Fuse, Strip one leading space), t.decode(ctx + ids) beyond
 * t.decode(ctx), skipping special tokens; t.encode("Tom and Lily").ids ==
 * [1, 4335, 322, 365, 2354] ('<s>', '▁Tom', '▁and', '▁L', 'ily'). */
TEST(tokenizer_api_stream_continues_a_context) {
    char dir[1024];
    if (!test_ortgenai_package(dir, sizeof dir, "phi3-v")) return;
    og_tokenizer *tok;
    CHECK_OK(og_tokenizer_open(dir, &tok));
    const int32_t tom[] = {1, 4335}, rest[] = {322, 365, 2354};
    /* "Tom" + " and Lily": the first piece keeps its space */
    continuation_is(tok, tom, 2, rest, 3, " and Lily");
    /* after BOS alone the text starts there: decode([1, 322, 365, 2354]) == "and Lily" */
    continuation_is(tok, tom, 1, rest, 3, "and Lily");
    /* no context: a fresh stream, as before */
    continuation_is(tok, NULL, 0, rest, 3, "and Lily");
    /* a context that ends in skipped special tokens ("<s>Hi<|end|><|assistant|>"):
     * decode([1, 6324, 32007, 32001, 365, 2354]) == "Hi Lily" */
    const int32_t chat[] = {1, 6324, 32007, 32001};
    continuation_is(tok, chat, 4, rest + 1, 2, " Lily");
    og_tokenizer_stream *s;
    CHECK_OK(og_tokenizer_stream_create(tok, &s));
    og_status *st = og_tokenizer_stream_set_context(s, NULL, 2);
    CHECK(st && og_status_code(st) == OG_ERR_INVALID_ARGUMENT);
    og_status_free(st);
    og_tokenizer_stream_free(s);
    og_tokenizer_free(tok);
}
