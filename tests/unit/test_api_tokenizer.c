/* The public tokenizer functions that report lengths: decoded text and stream pieces may
 * hold NUL characters (GPT-2's token "Ā", id 188, is the byte 0), which a NUL-terminated
 * string alone cannot carry. Expected text from HF tokenizers 0.23.3:
 *   Tokenizer.from_file(".../tiny-random-gpt2-fp32/tokenizer.json").decode([64, 188, 65])
 *   == "a\x00b" */
#include "testing.h"

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
