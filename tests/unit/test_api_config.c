/* og_config (overlays, providers, token ids), og_generator_get_next_tokens and the padded
 * batch layout, on the tiny gpt2 package. The expected sequences and next tokens are
 * onnxruntime-genai 0.18.0's, from
 *   c = og.Config(pkg); c.overlay('{"model": {"eos_token_id": 114}}'); m = og.Model(c)
 *   params.set_search_options(max_length=9, batch_size=2); append_tokens(rows)
 *   while not is_done(): generate_next_token(); get_next_tokens()
 * (tests/python checks the same against the live package for every script case). */
#include "testing.h"

#include "base/status.h"
#include "genai/generator.h"

#include <stdlib.h>
#include <string.h>

#define GPT2 "hf-internal-testing/tiny-random-gpt2-fp32"

static bool has_words(og_status *st, og_code code, const char *a, const char *b) {
    bool ok = st && og_status_code(st) == code && strstr(og_status_message(st), a) &&
              (!b || strstr(og_status_message(st), b));
    if (!ok) fprintf(stderr, "    got %s: %s\n", og_code_name(og_status_code(st)), og_status_message(st));
    og_status_free(st);
    return ok;
}

TEST(config_open_overlay_tokens) {
    char dir[1024];
    if (!test_ortgenai_package(dir, sizeof dir, GPT2)) return;
    og_config *c;
    CHECK_OK(og_config_open(dir, &c));
    const int32_t *ids;
    CHECK_EQ_INT(og_config_eos_token_ids(c, &ids), 1);
    CHECK_EQ_INT(ids[0], 98);
    CHECK_EQ_INT(og_config_token_id(c, "pad_token_id"), 98);
    CHECK_OK(og_config_overlay(c, "{\"model\": {\"eos_token_id\": [114, 7]}, "
                                  "\"search\": {\"max_length\": 12}}"));
    CHECK_EQ_INT(og_config_eos_token_ids(c, &ids), 2);
    CHECK(ids[0] == 114 && ids[1] == 7);
    CHECK_EQ_INT(og_config_token_id(c, "eos_token_id"), 114);
    /* a bad overlay fails where it is made and leaves the config as it was */
    CHECK(has_words(og_config_overlay(c, "{\"search\": {\"max_length\": \"long\"}}"),
                    OG_ERR_INVALID_MODEL, "search.max_length", NULL));
    CHECK(has_words(og_config_overlay(c, "{\"search\": "), OG_ERR_INVALID_ARGUMENT,
                    "malformed JSON", NULL));
    CHECK(has_words(og_config_overlay(c, "[1]"), OG_ERR_INVALID_ARGUMENT, "JSON object", NULL));
    CHECK_EQ_INT(og_config_eos_token_ids(c, &ids), 2);
    /* the model sees the overlays: eos ids and the search block */
    og_model *m;
    CHECK_OK(og_model_open_config(c, NULL, &m));
    og_config_free(c);
    CHECK_EQ_INT(og_model_eos_token_ids(m, &ids), 2);
    CHECK(ids[0] == 114 && ids[1] == 7);
    CHECK_EQ_INT(og_generator_params_default(m).max_length, 12);
    CHECK_EQ_INT(og_generator_params_default(m).padded_batch, 0);
    og_model_close(m);
}

TEST(config_providers_and_missing_folder) {
    char dir[1024];
    if (!test_ortgenai_package(dir, sizeof dir, GPT2)) return;
    og_config *c;
    CHECK_OK(og_config_open(dir, &c));
    CHECK_OK(og_config_clear_providers(c));
    CHECK_OK(og_config_append_provider(c, "cpu"));
    CHECK_OK(og_config_append_provider(c, "CPU"));
    CHECK(has_words(og_config_append_provider(c, "dml"), OG_ERR_UNSUPPORTED, "'dml'", "cuda"));
    CHECK(has_words(og_config_set_provider_option(c, "cuda", "enable_cuda_graph", "1"),
                    OG_ERR_UNSUPPORTED, "enable_cuda_graph", "'cuda'"));
    CHECK(has_words(og_config_set_provider_option(c, "cpu", "x", "1"), OG_ERR_UNSUPPORTED,
                    "'x'", NULL));
    /* "cuda" is onnxruntime's provider: the native backend refuses it, and auto takes
     * onnxruntime, which (this machine's build or none at all) cannot give it */
    CHECK_OK(og_config_append_provider(c, "CUDA"));
    og_model_options mo = og_model_options_default();
    mo.backend = OG_BACKEND_NATIVE;
    og_model *m = NULL;
    CHECK(has_words(og_model_open_config(c, &mo, &m), OG_ERR_INVALID_ARGUMENT, "'cuda'",
                    "the native backend runs on the CPU only"));
    CHECK(m == NULL);
    mo.backend = OG_BACKEND_AUTO;
    mo.ort_library = "/nonexistent/libonnxruntime.so";
#ifdef OG_TEST_HAVE_ORT_HEADER
    CHECK(has_words(og_model_open_config(c, &mo, &m), OG_ERR_NOT_FOUND,
                    "onnxruntime is not available", "/nonexistent/libonnxruntime.so"));
#else /* the backend is compiled out: the error says so */
    CHECK(has_words(og_model_open_config(c, &mo, &m), OG_ERR_NOT_FOUND,
                    "onnxruntime is not available", "without onnxruntime's C API header"));
#endif
    CHECK(m == NULL);
    /* the options' provider wins over the config's */
    mo.ort_provider = "cpu";
    CHECK_OK(og_model_open_config(c, &mo, &m));
    CHECK(strcmp(og_model_backend(m), "native") == 0);
    og_model_close(m);
    /* cleared: the CPU again */
    CHECK_OK(og_config_clear_providers(c));
    CHECK_OK(og_model_open_config(c, NULL, &m));
    CHECK(strcmp(og_model_backend(m), "native") == 0);
    og_model_close(m);
    og_config_free(c);
    og_config *none = NULL;
    CHECK(has_words(og_config_open("/nonexistent/onnx-genai-package", &none), OG_ERR_NOT_FOUND,
                    "/nonexistent/onnx-genai-package", "no such model folder"));
    CHECK(none == NULL);
}

typedef struct {
    int32_t rows[8];
    int32_t seq[2][9];
    size_t len[2];
    int32_t next[5][2];
    int steps;
} batch_case;

/* Runs a batch of two 4-token rows with eos 114 and max_length 9; checks every step's
 * next tokens and the final sequences. */
static void run_case(og_model *m, int padded_batch, const batch_case *k) {
    og_generator_params p = og_generator_params_default(m);
    p.batch_size = 2;
    p.max_length = 9;
    p.padded_batch = padded_batch;
    og_generator *g;
    CHECK_OK(og_generator_create(m, &p, &g));
    const int32_t *ids;
    size_t n;
    og_status *st = og_generator_get_next_tokens(g, &ids, &n);
    CHECK(has_words(st, OG_ERR_INVALID_ARGUMENT, "no next tokens", NULL));
    CHECK_OK(og_generator_append_tokens(g, k->rows, 8));
    int steps = 0;
    while (!og_generator_is_done(g)) {
        CHECK(steps < k->steps);
        CHECK_OK(og_generator_generate_next_token(g));
        CHECK_OK(og_generator_get_next_tokens(g, &ids, &n));
        CHECK_EQ_INT(n, 2);
        CHECK_EQ_INT(ids[0], k->next[steps][0]);
        CHECK_EQ_INT(ids[1], k->next[steps][1]);
        steps++;
    }
    CHECK_EQ_INT(steps, k->steps);
    for (size_t r = 0; r < 2; r++) {
        CHECK_OK(og_generator_get_sequence(g, r, &ids, &n));
        CHECK_EQ_INT(n, k->len[r]);
        for (size_t i = 0; i < n; i++) CHECK_EQ_INT(ids[i], k->seq[r][i]);
    }
    CHECK_OK(og_generator_rewind_to(g, 0));
    CHECK(has_words(og_generator_get_next_tokens(g, &ids, &n), OG_ERR_INVALID_ARGUMENT,
                    "no next tokens", NULL));
    og_generator_destroy(g);
}

TEST(generator_padded_batch_as_ortgenai) {
    char dir[1024];
    if (!test_ortgenai_package(dir, sizeof dir, GPT2)) return;
    og_config *c;
    CHECK_OK(og_config_open(dir, &c));
    CHECK_OK(og_config_overlay(c, "{\"model\": {\"eos_token_id\": 114}}"));
    og_model *m;
    CHECK_OK(og_model_open_config(c, NULL, &m));
    og_config_free(c);
    /* row 1 is [0, 195, 731] padded with 98: its padding counts toward max_length, it
     * keeps the EOS it stops on, then gets a pad per step */
    static const batch_case padded1 = {
        {0, 0, 0, 52, 0, 195, 731, 98},
        {{0, 0, 0, 52, 204, 204, 204, 204, 204}, {0, 195, 731, 98, 731, 731, 114, 98, 98}},
        {9, 9},
        {{204, 731}, {204, 731}, {204, 114}, {204, 98}, {204, 98}},
        5};
    /* both rows stop on EOS in the same step: that step is not appended */
    static const batch_case padded2 = {
        {0, 0, 195, 731, 0, 0, 195, 731},
        {{0, 0, 195, 731, 731}, {0, 0, 195, 731, 731}},
        {5, 5},
        {{731, 731}, {114, 114}},
        2};
    static const batch_case padded3 = {
        {0, 0, 0, 52, 0, 0, 195, 731},
        {{0, 0, 0, 52, 204, 204, 204, 204, 204}, {0, 0, 195, 731, 731, 114, 98, 98, 98}},
        {9, 9},
        {{204, 731}, {204, 114}, {204, 98}, {204, 98}, {204, 98}},
        5};
    run_case(m, 1, &padded1);
    run_case(m, 1, &padded2);
    run_case(m, 1, &padded3);
    /* this runtime's own layout: rows are their prompts without padding, the EOS is never
     * appended, and each row may reach max_length by itself (row 1 would go on to 9
     * tokens but stops on EOS first) */
    static const batch_case own1 = {
        {0, 0, 0, 52, 0, 195, 731, 98},
        {{0, 0, 0, 52, 204, 204, 204, 204, 204}, {0, 195, 731, 731, 731}},
        {9, 5},
        {{204, 731}, {204, 731}, {204, 114}, {204, 98}, {204, 98}},
        5};
    run_case(m, 0, &own1);
    og_model_close(m);
}

/* A template given as text takes the package's special tokens (what the Python
 * Tokenizer.apply_chat_template(template_str=...) does): tiny gpt2 has no chat template
 * but a tokenizer_config.json with bos_token. */
TEST(chat_template_load_tokens) {
    char dir[1024];
    if (!test_ortgenai_package(dir, sizeof dir, GPT2)) return;
    const char *src = "{{ bos_token }}|{% for m in messages %}{{ m.content }}{% endfor %}";
    og_chat_template *ct;
    CHECK_OK(og_chat_template_from_string(src, strlen(src), &ct));
    CHECK(og_chat_template_token(ct, "bos_token") == NULL);
    og_status *st = og_chat_template_load_tokens(ct, dir);
    char *text = NULL;
    if (!st) st = og_chat_template_apply(ct, "[{\"role\": \"user\", \"content\": \"hi\"}]", NULL, &text);
    bool ok = !st && !strcmp(text, "<|endoftext|>|hi");
    if (!ok) fprintf(stderr, "    got '%s' (%s)\n", text ? text : "", og_status_message(st));
    og_free(text);
    og_status_free(st);
    CHECK(ok);
    CHECK(has_words(og_chat_template_load_tokens(ct, "/nonexistent/pkg"), OG_ERR_NOT_FOUND,
                    "/nonexistent/pkg", NULL));
    og_chat_template_free(ct);
}

/* gen_kv_reserve grows the KV buffers of the shared-column layout; an entry written in
 * place has one buffer for both halves of its pair and must be grown once (it was copied
 * from after being freed, then freed twice: found by tests/python's same-script run on
 * qwen3-5, a batch of prompts of different lengths, under AddressSanitizer). */
TEST(generator_kv_reserve_grows_an_in_place_buffer_once) {
    char dir[1024];
    if (!test_ortgenai_package(dir, sizeof dir, "qwen3-5")) return;
    og_model *m;
    CHECK_OK(og_model_open(dir, NULL, &m));
    og_generator_params p = og_generator_params_default(m);
    p.max_length = 17;
    og_generator *g;
    CHECK_OK(og_generator_create(m, &p, &g));
    int shared = -1;
    for (int i = 0; i < m->n_cache && shared < 0; i++)
        if (m->cache[i].kind == GEN_CACHE_KV && g->buf[0][i] == g->buf[1][i]) shared = i;
    og_status *st = NULL;
    if (shared >= 0) {
        memset(g->buf[0][shared], 0x5a, g->bytes[shared]);
        size_t before = g->bytes[shared];
        st = gen_kv_reserve(g, g->col_cap + 4);
        bool ok = !st && g->buf[0][shared] == g->buf[1][shared] && g->bytes[shared] > before &&
                  ((unsigned char *)g->buf[0][shared])[before - 1] == 0x5a;
        if (!st && !ok) st = og_errorf(OG_ERR_RUNTIME, "the in-place buffer was not grown as one");
    }
    og_generator_destroy(g);
    og_model_close(m);
    if (shared < 0) {
        test_skip("qwen3-5 has no KV entry written in place with this runtime's choices");
        return;
    }
    CHECK_OK(st);
}
