/* Tokenizer unit tests: exact encodings (ids taken from HF tokenizers 0.23.3), the
 * streaming decoder on characters split across tokens, invalid UTF-8 input, and load
 * errors. The broad comparison with HF is tests/tokenizer/check_parity.py. */
#include "testing.h"

#include "tokenizer/tokenizer.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

/* A SentencePiece-style BPE small enough to write out: Metaspace, byte fallback, fused
 * unk, merges as pairs. */
static const char *TINY_JSON =
    "{\"version\": \"1.0\", \"truncation\": null, \"padding\": null,"
    " \"added_tokens\": ["
    "  {\"id\": 0, \"content\": \"<unk>\", \"single_word\": false, \"lstrip\": false, \"rstrip\": false, \"normalized\": false, \"special\": true},"
    "  {\"id\": 9, \"content\": \"<eos>\", \"single_word\": false, \"lstrip\": false, \"rstrip\": false, \"normalized\": false, \"special\": true}],"
    " \"normalizer\": null,"
    " \"pre_tokenizer\": {\"type\": \"Metaspace\", \"replacement\": \"\\u2581\", \"prepend_scheme\": \"always\", \"split\": true},"
    " \"post_processor\": null,"
    " \"decoder\": {\"type\": \"Sequence\", \"decoders\": [{\"type\": \"Metaspace\", \"replacement\": \"\\u2581\", \"prepend_scheme\": \"always\", \"split\": true}, {\"type\": \"ByteFallback\"}, {\"type\": \"Fuse\"}]},"
    " \"model\": {\"type\": \"BPE\", \"dropout\": null, \"unk_token\": \"<unk>\", \"continuing_subword_prefix\": null, \"end_of_word_suffix\": null, \"fuse_unk\": true, \"byte_fallback\": true, \"ignore_merges\": false,"
    "  \"vocab\": {\"<unk>\": 0, \"\\u2581\": 1, \"a\": 2, \"b\": 3, \"\\u2581a\": 4, \"ab\": 5, \"\\u2581ab\": 6, \"<0xC3>\": 7, \"<0xA9>\": 8, \"<eos>\": 9},"
    "  \"merges\": [[\"\\u2581\", \"a\"], [\"a\", \"b\"], [\"\\u2581a\", \"b\"]]}}";

static const char *write_file(const char *name, const char *text) {
    static char path[512];
    snprintf(path, sizeof path, "%s/%s", test_tmp_dir(), name);
    FILE *f = fopen(path, "wb");
    if (!f) return NULL;
    fputs(text, f);
    fclose(f);
    return path;
}

static int ids_equal(const int32_t *a, size_t n, const int32_t *b, size_t m) {
    return n == m && (n == 0 || !memcmp(a, b, n * sizeof *a));
}

static og_status *encode_cmp(tok_tokenizer *t, const char *text, size_t len, bool special,
                             const int32_t *want, size_t n_want, int *same) {
    int32_t *ids = NULL;
    size_t n = 0;
    og_status *st = tok_encode(t, text, len, special, &ids, &n);
    if (st) return st;
    *same = ids_equal(ids, n, want, n_want);
    if (!*same) {
        fprintf(stderr, "    got:");
        for (size_t i = 0; i < n; i++) fprintf(stderr, " %d", ids[i]);
        fprintf(stderr, "\n");
    }
    free(ids);
    return NULL;
}

#define CHECK_ENCODE(t, text, special, ...)                                               \
    do {                                                                                 \
        static const int32_t want_[] = {__VA_ARGS__};                                    \
        int same_ = 0;                                                                   \
        CHECK_OK(encode_cmp((t), (text), sizeof(text) - 1, (special), want_,            \
                            sizeof want_ / sizeof want_[0], &same_));                    \
        if (!same_) {                                                                    \
            test_fail(__FILE__, __LINE__, "encoding of \"%s\" differs", (text));         \
            return;                                                                      \
        }                                                                                \
    } while (0)

static tok_tokenizer *load_tiny(void) {
    const char *dir = test_tmp_dir();
    char path[512];
    snprintf(path, sizeof path, "%s/tiny_tokenizer.json", dir);
    FILE *f = fopen(path, "wb");
    if (!f) return NULL;
    fputs(TINY_JSON, f);
    fclose(f);
    tok_tokenizer *t = NULL;
    og_status *st = tok_tokenizer_load(path, &t);
    if (st) {
        fprintf(stderr, "    %s\n", og_status_message(st));
        og_status_free(st);
        return NULL;
    }
    return t;
}

TEST(tokenizer_tiny_sentencepiece) {
    tok_tokenizer *t = load_tiny();
    CHECK(t);
    /* Merge order by rank, byte fallback for é, fused unknowns, an added token. */
    CHECK_ENCODE(t, "ab \xC3\xA9", true, 6, 1, 7, 8);
    CHECK_ENCODE(t, "aab<eos>b", true, 4, 5, 9, 1, 3);
    CHECK_ENCODE(t, "zz ab", true, 1, 0, 6);
    CHECK_EQ_INT(tok_vocab_size(t), 10);
    CHECK_EQ_INT(tok_token_to_id(t, "<eos>", 5), 9);
    CHECK_EQ_INT(tok_token_to_id(t, "nope", 4), -1);
    CHECK(!strcmp(tok_id_to_token(t, 6), "\xE2\x96\x81" "ab"));
    CHECK(tok_id_to_token(t, 10) == NULL);
    CHECK(tok_is_special(t, 9) && !tok_is_special(t, 6));

    int32_t ids[] = {4, 5, 9, 1, 3};
    char *text = NULL;
    CHECK_OK(tok_decode(t, ids, 5, false, &text, NULL));
    CHECK(!strcmp(text, "aab<eos> b"));
    free(text);
    CHECK_OK(tok_decode(t, ids, 5, true, &text, NULL));
    CHECK(!strcmp(text, "aab b"));
    free(text);
    tok_tokenizer_free(t);
}

TEST(tokenizer_invalid_utf8_is_replaced) {
    tok_tokenizer *t = load_tiny();
    CHECK(t);
    /* A stray continuation byte reads as U+FFFD, which has neither a token nor byte
     * tokens here, so it becomes <unk> -- exactly what HF gives for "ab\uFFFD". */
    CHECK_ENCODE(t, "ab\x80", false, 6, 0);
    CHECK_ENCODE(t, "ab\xEF\xBF\xBD", false, 6, 0);
    tok_tokenizer_free(t);
}

/* Feeds ids one at a time; checks every piece is whole UTF-8 and the total is `want`. */
static og_status *stream_all(tok_tokenizer *t, const int32_t *ids, size_t n, const char *want,
                             int *held, int *ok) {
    tok_stream *s;
    og_status *st = tok_stream_new(t, true, &s);
    if (st) return st;
    char out[256] = "";
    *held = 0;
    *ok = 1;
    for (size_t i = 0; i <= n && !st; i++) {
        const char *piece;
        size_t len;
        st = i < n ? tok_stream_feed(s, ids[i], &piece, &len) : tok_stream_flush(s, &piece, &len);
        if (st) break;
        if (i < n && len == 0) (*held)++;
        /* A piece never ends inside a character. */
        if (len && ((unsigned char)piece[len - 1] & 0x80)) {
            size_t k = len - 1;
            while (k > 0 && ((unsigned char)piece[k] & 0xC0) == 0x80) k--;
            unsigned lead = (unsigned char)piece[k];
            size_t need = lead >= 0xF0 ? 4 : lead >= 0xE0 ? 3 : 2;
            if (len - k != need) *ok = 0;
        }
        strncat(out, piece, sizeof out - strlen(out) - 1);
    }
    tok_stream_free(s);
    if (strcmp(out, want)) *ok = 0;
    return st;
}

TEST(tokenizer_stream_holds_split_characters) {
    tok_tokenizer *t = load_tiny();
    CHECK(t);
    int held, ok;
    int32_t ids[] = {6, 1, 7, 8, 1, 3};
    CHECK_OK(stream_all(t, ids, 6, "ab \xC3\xA9 b", &held, &ok));
    CHECK(ok);
    CHECK(held >= 1); /* <0xC3> alone must not produce text */
    /* Bytes that never complete come out at the flush, as U+FFFD. */
    int32_t cut[] = {6, 7};
    CHECK_OK(stream_all(t, cut, 2, "ab\xEF\xBF\xBD", &held, &ok));
    CHECK(ok);
    tok_tokenizer_free(t);
}

static tok_tokenizer *load_shared(const char *rel) {
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", test_shared_dir(), rel);
    FILE *f = fopen(path, "rb");
    if (!f) {
        test_skip("%s is missing", path);
        return NULL;
    }
    fclose(f);
    tok_tokenizer *t = NULL;
    og_status *st = tok_tokenizer_load(path, &t);
    if (st) {
        test_fail(__FILE__, __LINE__, "load %s: %s", path, og_status_message(st));
        og_status_free(st);
        return NULL;
    }
    return t;
}

TEST(tokenizer_gpt2_exact) {
    tok_tokenizer *t = load_shared("models/ortgenai/hf-internal-testing/tiny-random-gpt2-fp32/tokenizer.json");
    if (!t) return;
    CHECK_ENCODE(t, "Hello world", true, 15496, 995);
    /* Four spaces are an added ("normalized") token in this vocabulary. */
    CHECK_ENCODE(t, "    x = 1\n", true, 50284, 87, 796, 352, 198);
    CHECK_ENCODE(t, "a<|endoftext|>b", true, 64, 50256, 65);
    CHECK_ENCODE(t, "abc\xEF\xBF\xBD" "def", true, 39305, 4210, 4299);
    CHECK_ENCODE(t, "abc\xFF" "def", true, 39305, 4210, 4299);
    CHECK_EQ_INT(tok_bos_id(t), 50256);
    CHECK_EQ_INT(tok_eos_id(t), 50256);
    /* "é😀" is three byte-level tokens; the emoji's four bytes straddle two of them. */
    int32_t ids[] = {2634, 47249, 222};
    int held, ok;
    CHECK_OK(stream_all(t, ids, 3, "\xC3\xA9\xF0\x9F\x98\x80", &held, &ok));
    CHECK(ok);
    CHECK_EQ_INT(held, 1);
    tok_tokenizer_free(t);
}

TEST(tokenizer_phi3_exact) {
    tok_tokenizer *t = load_shared("models/ortgenai/phi3-v/tokenizer.json");
    if (!t) return;
    /* rstrip on </s>, a special token inside text, the BOS template. */
    CHECK_ENCODE(t, "Hello <|user|>  world</s>  x", true, 1, 15043, 29871, 32010, 259, 3186, 2, 921);
    CHECK_ENCODE(t, "Hello <|user|>  world</s>  x", false, 15043, 29871, 32010, 259, 3186, 2, 921);
    CHECK_ENCODE(t, "\xF0\x9F\x98\x80 ok", true, 1, 29871, 243, 162, 155, 131, 3431);
    CHECK_EQ_INT(tok_bos_id(t), 1);
    CHECK_EQ_INT(tok_eos_id(t), 32000);
    int32_t ids[] = {29871, 243, 162, 155, 131, 3431};
    int held, ok;
    /* The decoder strips the leading space of the whole text. */
    CHECK_OK(stream_all(t, ids, 6, "\xF0\x9F\x98\x80 ok", &held, &ok));
    CHECK(ok);
    CHECK(held >= 3);
    tok_tokenizer_free(t);
}

TEST(tokenizer_load_errors) {
    tok_tokenizer *t = NULL;
    CHECK_ERR(tok_tokenizer_load("/nonexistent/dir/tokenizer.json", &t), OG_ERR_NOT_FOUND, "/nonexistent/dir");
    const char *p = write_file("bad_tokenizer.json", "{\"model\": {\"type\": \"BPE\", ");
    CHECK(p);
    CHECK_ERR(tok_tokenizer_load(p, &t), OG_ERR_INVALID_MODEL, "bad_tokenizer.json: malformed JSON");
    p = write_file("foo_tokenizer.json",
                   "{\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0}, \"merges\": []},"
                   " \"pre_tokenizer\": {\"type\": \"Sequence\", \"pretokenizers\": ["
                   "{\"type\": \"ByteLevel\"}, {\"type\": \"Foo\"}]}}");
    CHECK(p);
    CHECK_ERR(tok_tokenizer_load(p, &t), OG_ERR_UNSUPPORTED,
              "foo_tokenizer.json: pre_tokenizer.pretokenizers[1].type 'Foo' is not supported");
    p = write_file("unigram_tokenizer.json", "{\"model\": {\"type\": \"Unigram\", \"vocab\": []}}");
    CHECK(p);
    CHECK_ERR(tok_tokenizer_load(p, &t), OG_ERR_UNSUPPORTED, "model.type 'Unigram' is not supported");
    p = write_file("merge_tokenizer.json",
                   "{\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0, \"b\": 1}, \"merges\": [\"a b\"]}}");
    CHECK(p);
    CHECK_ERR(tok_tokenizer_load(p, &t), OG_ERR_INVALID_MODEL, "model.merges[0]: merged token 'ab'");
    p = write_file("regex_tokenizer.json",
                   "{\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0}, \"merges\": []},"
                   " \"normalizer\": {\"type\": \"Replace\", \"pattern\": {\"Regex\": \"(\"}, \"content\": \"\"}}");
    CHECK(p);
    CHECK_ERR(tok_tokenizer_load(p, &t), OG_ERR_UNSUPPORTED, "normalizer.pattern: regex '(' does not compile");
    CHECK(t == NULL);
}

/* Encoding shares one word cache between threads: results must not depend on it. */
typedef struct enc_job {
    tok_tokenizer *t;
    int errors;
} enc_job;

static void *encode_many(void *arg) {
    enc_job *job = arg;
    static const char *texts[] = {"aab<eos>b", "ab \xC3\xA9", "zz ab", "ab ab ab aab", "b a ba ab"};
    static const int32_t want0[] = {4, 5, 9, 1, 3};
    for (int r = 0; r < 2000; r++) {
        const char *s = texts[r % 5];
        int32_t *ids = NULL;
        size_t n = 0;
        og_status *st = tok_encode(job->t, s, strlen(s), false, &ids, &n);
        if (st) {
            og_status_free(st);
            job->errors++;
            continue;
        }
        if (r % 5 == 0 && !ids_equal(ids, n, want0, 5)) job->errors++;
        free(ids);
    }
    return NULL;
}

TEST(tokenizer_concurrent_encode) {
    tok_tokenizer *t = load_tiny();
    CHECK(t);
    pthread_t th[4];
    enc_job jobs[4];
    for (int i = 0; i < 4; i++) {
        jobs[i] = (enc_job){t, 0};
        CHECK(pthread_create(&th[i], NULL, encode_many, &jobs[i]) == 0);
    }
    int errors = 0;
    for (int i = 0; i < 4; i++) {
        pthread_join(th[i], NULL);
        errors += jobs[i].errors;
    }
    tok_tokenizer_free(t);
    CHECK_EQ_INT(errors, 0);
}
