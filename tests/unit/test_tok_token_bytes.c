/* tok_token_bytes against decoding itself: for every token, what it adds after another
 * token is exactly its bytes (decode([a, id]) == decode([a]) + bytes(id)) wherever those
 * bytes are whole UTF-8 (decoding turns a partial character into U+FFFD). On the shared
 * GPT-2 and phi3-v tokenizers and on phi3-v's vocabulary under other decoder chains:
 * Metaspace (which llguidance cannot read), and Strip before Fuse (per token). */
#include "testing.h"

#include "base/status.h"
#include "tokenizer/tokenizer.h"

#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>

/* The shared tokenizer `rel` with its decoder replaced by `decoder` (JSON; NULL: as is). */
static og_status *load_variant(const char *rel, const char *decoder, tok_tokenizer **out) {
    char path[1024];
    snprintf(path, sizeof path, "%s/models/ortgenai/%s", test_shared_dir(), rel);
    FILE *f = fopen(path, "rb");
    if (!f) return og_errorf(OG_ERR_NOT_FOUND, "%s", path);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *text = malloc((size_t)n + 1);
    size_t got = text ? fread(text, 1, (size_t)n, f) : 0;
    fclose(f);
    if (!text || got != (size_t)n) {
        free(text);
        return og_errorf(OG_ERR_IO, "%s: cannot read", path);
    }
    text[n] = 0;
    if (!decoder) {
        og_status *st = tok_tokenizer_parse(text, (size_t)n, path, out);
        free(text);
        return st;
    }
    cJSON *j = cJSON_Parse(text);
    free(text);
    cJSON *d = cJSON_Parse(decoder);
    if (!j || !d) {
        cJSON_Delete(j);
        cJSON_Delete(d);
        return og_errorf(OG_ERR_INVALID_ARGUMENT, "%s: bad JSON", path);
    }
    cJSON_ReplaceItemInObjectCaseSensitive(j, "decoder", d);
    char *s = cJSON_PrintUnformatted(j);
    cJSON_Delete(j);
    og_status *st = tok_tokenizer_parse(s, strlen(s), path, out);
    free(s);
    return st;
}

static bool whole_utf8(const uint8_t *s, size_t n) {
    for (size_t i = 0; i < n;) {
        uint8_t c = s[i];
        size_t k = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
        if (!k || i + k > n) return false;
        for (size_t j = 1; j < k; j++)
            if ((s[i + j] & 0xC0) != 0x80) return false;
        i += k;
    }
    return true;
}

/* Checks every id; *checked counts those compared (whole UTF-8, a token there). */
static int check_all(const tok_tokenizer *tok, const char *before, size_t *checked) {
    int32_t a = tok_token_to_id(tok, before, strlen(before));
    if (a < 0) return -1;
    char *base;
    size_t base_n;
    og_status *st = tok_decode(tok, &a, 1, false, &base, &base_n);
    if (st) {
        og_status_free(st);
        return -1;
    }
    int bad = 0;
    uint8_t buf[256];
    *checked = 0;
    for (size_t id = 0; id < tok_vocab_size(tok); id++) {
        size_t n;
        st = tok_token_bytes(tok, (int32_t)id, buf, sizeof buf, &n);
        if (st || n > sizeof buf) {
            og_status_free(st);
            bad++;
            continue;
        }
        if (!tok_id_to_token(tok, (int32_t)id) || !whole_utf8(buf, n)) continue;
        int32_t pair[2] = {a, (int32_t)id};
        char *text;
        size_t text_n;
        st = tok_decode(tok, pair, 2, false, &text, &text_n);
        if (st) {
            og_status_free(st);
            bad++;
            continue;
        }
        bool same = text_n == base_n + n && !memcmp(text, base, base_n) &&
                    !memcmp(text + base_n, buf, n);
        if (!same && bad++ < 5)
            fprintf(stderr, "    id %zu '%s': decodes after '%s' to '%s', bytes '%.*s'\n", id,
                    tok_id_to_token(tok, (int32_t)id), before, text, (int)n, (const char *)buf);
        free(text);
        ++*checked;
    }
    free(base);
    return bad;
}

static void check_variant(const char *rel, const char *decoder, const char *before,
                          size_t min_checked) {
    tok_tokenizer *tok;
    og_status *st = load_variant(rel, decoder, &tok);
    if (st && og_status_code(st) == OG_ERR_NOT_FOUND) {
        test_skip("%s (the shared test models are not beside the project)", og_status_message(st));
        og_status_free(st);
        return;
    }
    CHECK_OK(st);
    size_t checked;
    int bad = check_all(tok, before, &checked);
    tok_tokenizer_free(tok);
    CHECK_EQ_INT(bad, 0);
    CHECK(checked >= min_checked);
}

#define GPT2 "hf-internal-testing/tiny-random-gpt2-fp32/tokenizer.json"
#define PHI3 "phi3-v/tokenizer.json"

TEST(tok_token_bytes_gpt2_as_decoded) { check_variant(GPT2, NULL, "a", 49900); }
TEST(tok_token_bytes_phi3_as_decoded) { check_variant(PHI3, NULL, "a", 31000); }
TEST(tok_token_bytes_metaspace_as_decoded) {
    check_variant(PHI3, "{\"type\": \"Sequence\", \"decoders\": [{\"type\": \"Metaspace\", "
                        "\"replacement\": \"\\u2581\", \"prepend_scheme\": \"always\", "
                        "\"split\": false}, {\"type\": \"ByteFallback\"}, {\"type\": \"Fuse\"}]}",
                  "a", 31000);
}
TEST(tok_token_bytes_strip_per_token_as_decoded) {
    /* Strip before Fuse applies to every token: "▁▁x" loses one space wherever it is */
    check_variant(PHI3, "{\"type\": \"Sequence\", \"decoders\": [{\"type\": \"Replace\", "
                        "\"pattern\": {\"String\": \"\\u2581\"}, \"content\": \" \"}, "
                        "{\"type\": \"Strip\", \"content\": \" \", \"start\": 1, \"stop\": 0}, "
                        "{\"type\": \"ByteFallback\"}, {\"type\": \"Fuse\"}]}",
                  "a", 31000);
}

TEST(tok_token_bytes_edges) {
    tok_tokenizer *tok;
    og_status *st = load_variant(PHI3, NULL, &tok);
    if (st && og_status_code(st) == OG_ERR_NOT_FOUND) {
        test_skip("%s (the shared test models are not beside the project)", og_status_message(st));
        og_status_free(st);
        return;
    }
    CHECK_OK(st);
    uint8_t buf[8];
    size_t n;
    /* "▁▁" is two spaces, also as the first token (start-of-text rules are left out) */
    CHECK_OK(tok_token_bytes(tok, tok_token_to_id(tok, "\xe2\x96\x81\xe2\x96\x81", 6), buf, 8, &n));
    CHECK(n == 2 && !memcmp(buf, "  ", 2));
    /* <0xE2> is the byte, not U+FFFD */
    CHECK_OK(tok_token_bytes(tok, tok_token_to_id(tok, "<0xE2>", 6), buf, 8, &n));
    CHECK(n == 1 && buf[0] == 0xE2);
    /* a buffer too small gets what fits and the full length */
    int32_t end = tok_token_to_id(tok, "<|endoftext|>", 13);
    CHECK_OK(tok_token_bytes(tok, end, buf, 4, &n));
    CHECK(n == 13 && !memcmp(buf, "<|en", 4));
    CHECK_OK(tok_token_bytes(tok, end, NULL, 0, &n));
    CHECK_EQ_INT(n, 13);
    /* ids that name no token have no bytes */
    CHECK_OK(tok_token_bytes(tok, -1, buf, 8, &n));
    CHECK_EQ_INT(n, 0);
    CHECK_OK(tok_token_bytes(tok, (int32_t)tok_vocab_size(tok), buf, 8, &n));
    CHECK_EQ_INT(n, 0);
    CHECK(tok_is_added(tok, end) && !tok_is_added(tok, 300));
    tok_tokenizer_free(tok);
}
