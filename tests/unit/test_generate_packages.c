/* Packages beyond the classic decoder: split (embedding -> decoder fed inputs_embeds),
 * hybrid state (conv / recurrent), text-only admission of vision packages, incomplete
 * packages; and the generator's row rules: a row of a batch equals its single run, a
 * sequence that stops on EOS does not include it. Expected values are what
 * onnxruntime-genai 0.18 returns for the same calls (tests/parity checks them live). */
#include "testing.h"

#include "base/status.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static bool ortgenai(char *buf, size_t size, const char *name) {
    snprintf(buf, size, "%s/models/ortgenai/%s", test_shared_dir(), name);
    char cfg[1200];
    struct stat st;
    snprintf(cfg, sizeof cfg, "%s/genai_config.json", buf);
    if (stat(cfg, &st) != 0) {
        test_skip("%s is missing: the shared test models are not beside the project", cfg);
        return false;
    }
    return true;
}

/* Greedy from `prompt` to max_length; the sequence into out (len returned). */
static og_status *greedy(og_model *m, const int32_t *prompt, size_t n, int max_length,
                         int32_t *out, size_t *len) {
    og_generator_params p = og_generator_params_default(m);
    p.max_length = max_length;
    p.do_sample = 0;
    og_generator *g;
    OG_TRY(og_generator_create(m, &p, &g));
    og_status *st = og_generator_append_tokens(g, prompt, n);
    while (!st && !og_generator_is_done(g)) st = og_generator_generate_next_token(g);
    const int32_t *ids;
    if (!st) st = og_generator_get_sequence(g, 0, &ids, len);
    if (!st) memcpy(out, ids, *len * sizeof *ids);
    og_generator_destroy(g);
    return st;
}

static bool same(const int32_t *a, size_t na, const int32_t *b, size_t nb) {
    if (na != nb) {
        fprintf(stderr, "    lengths %zu and %zu\n", na, nb);
        return false;
    }
    for (size_t i = 0; i < na; i++)
        if (a[i] != b[i]) {
            fprintf(stderr, "    differ at %zu: %d vs %d\n", i, a[i], b[i]);
            return false;
        }
    return true;
}

TEST(package_qwen35_hybrid) {
    char dir[1024];
    if (!ortgenai(dir, sizeof dir, "qwen3-5")) return;
    og_model *m;
    CHECK_OK(og_model_open(dir, NULL, &m));
    CHECK(og_model_text_only(m, NULL) == 0); /* its vision graph takes images */
    /* the dummy decoder's logits are zeros: greedy picks token 0 (onnxruntime-genai gives
     * the same), through conv/recurrent state on layers 0-2, KV on layer 3 and rank-3
     * position ids */
    int32_t prompt[3] = {2, 3, 4}, out[8], want[8] = {2, 3, 4, 0, 0, 0, 0, 0};
    size_t n;
    CHECK_OK(greedy(m, prompt, 3, 8, out, &n));
    CHECK(same(out, n, want, 8));
    og_tensor *t;
    og_generator_params p = og_generator_params_default(m);
    p.max_length = 8;
    og_generator *g;
    CHECK_OK(og_generator_create(m, &p, &g));
    CHECK_OK(og_generator_append_tokens(g, prompt, 3));
    CHECK_OK(og_generator_get_output(g, "present.1.recurrent_state", &t));
    CHECK_EQ_INT(og_tensor_rank(t), 4);
    CHECK_EQ_INT(og_tensor_dims(t)[1], 16);
    og_tensor_free(t);
    CHECK_OK(og_generator_get_output(g, "present.3.key", &t));
    CHECK_EQ_INT(og_tensor_dims(t)[2], 8); /* past_present_share_buffer: max_length */
    og_tensor_free(t);
    og_generator_destroy(g);
    og_model_close(m);
    /* a whole package opens where text-only admission is refused */
    og_model_options o = og_model_options_default();
    o.allow_text_only = 0;
    og_model *r = NULL;
    CHECK_OK(og_model_open(dir, &o, &r));
    og_model_close(r);
}

static void split_package(const char *name) {
    char dir[1024];
    if (!ortgenai(dir, sizeof dir, name)) return;
    og_model *m;
    CHECK_OK(og_model_open(dir, NULL, &m));
    /* phi3v: its vision block (pixel_values, image_sizes) is taken as Phi-3-vision's, so
     * the package opens whole, and text decodes as before */
    CHECK(og_model_text_only(m, NULL) == 0);
    int32_t prompt[1] = {2}, out[5], want[5] = {2, 0, 0, 0, 0};
    size_t n;
    CHECK_OK(greedy(m, prompt, 1, 5, out, &n));
    CHECK(same(out, n, want, 5));
    og_model_close(m);
}

TEST(package_multimodal_decoder_no_input_ids) { split_package("multimodal-decoder-no-input-ids"); }
TEST(package_multimodal_decoder_with_input_ids) { split_package("multimodal-decoder-with-input-ids"); }

TEST(package_incomplete) {
    char src[1024], dir[1200], cmd[4096];
    if (!ortgenai(src, sizeof src, "multimodal-decoder-no-input-ids")) return;
    og_model *bad = NULL;
    /* a graph file the config names is missing */
    snprintf(dir, sizeof dir, "%s/no_embedding", test_tmp_dir());
    snprintf(cmd, sizeof cmd, "mkdir -p %s && cp %s/* %s/ && chmod u+w %s/* && rm %s/dummy_embedding.onnx",
             dir, src, dir, dir, dir);
    CHECK(system(cmd) == 0);
    CHECK_ERR(og_model_open(dir, NULL, &bad), OG_ERR_INCOMPLETE_MODEL,
              "model.embedding.filename names 'dummy_embedding.onnx', which is not in the package");
    /* the decoder takes inputs_embeds, and nothing makes them */
    snprintf(dir, sizeof dir, "%s/no_embedding_block", test_tmp_dir());
    snprintf(cmd, sizeof cmd, "mkdir -p %s && cp %s/* %s/ && chmod u+w %s/* && python3 -c \""
             "import json; p='%s/genai_config.json'; c=json.load(open(p)); "
             "del c['model']['embedding']; del c['model']['vision']; json.dump(c, open(p, 'w'))\"",
             dir, src, dir, dir, dir);
    CHECK(system(cmd) == 0);
    CHECK_ERR(og_model_open(dir, NULL, &bad), OG_ERR_INCOMPLETE_MODEL,
              "the decoder takes inputs_embeds ('inputs_embeds'), but the package has no "
              "model.embedding");
    /* a pipeline whose graphs are not there (onnxruntime-genai's own pipeline-model ships
     * its config only) */
    if (!ortgenai(src, sizeof src, "pipeline-model")) return;
    CHECK_ERR(og_model_open(src, NULL, &bad), OG_ERR_INCOMPLETE_MODEL,
              "model.decoder.pipeline[0].embeddings.filename names 'embeds.onnx'");
    CHECK(bad == NULL);
}

/* tiny-random-gpt2 with EOS 114, which greedy reaches from [0,0,195,731]. */
static bool gpt2_eos(char *dir, size_t size) {
    char src[1024], cmd[4096];
    if (!ortgenai(src, sizeof src, "hf-internal-testing/tiny-random-gpt2-fp32")) return false;
    snprintf(dir, size, "%s/gpt2_eos114", test_tmp_dir());
    snprintf(cmd, sizeof cmd, "mkdir -p %s && cp %s/* %s/ && chmod u+w %s/* && python3 -c \""
             "import json; p='%s/genai_config.json'; c=json.load(open(p)); "
             "c['model']['eos_token_id'] = [114]; json.dump(c, open(p, 'w'))\"",
             dir, src, dir, dir, dir);
    return system(cmd) == 0;
}

TEST(generate_eos_left_out) {
    char dir[1200];
    if (!gpt2_eos(dir, sizeof dir)) return;
    og_model *m;
    CHECK_OK(og_model_open(dir, NULL, &m));
    /* onnxruntime-genai 0.18: [0,0,195,731,731] (the step that picks EOS ends it) */
    int32_t prompt[4] = {0, 0, 195, 731}, out[10], want[5] = {0, 0, 195, 731, 731};
    size_t n;
    CHECK_OK(greedy(m, prompt, 4, 10, out, &n));
    CHECK(same(out, n, want, 5));
    /* in a batch the row that stops first ends the same way, and its batch-mate goes on */
    og_generator_params p = og_generator_params_default(m);
    p.batch_size = 2;
    p.max_length = 10;
    og_generator *g;
    CHECK_OK(og_generator_create(m, &p, &g));
    int32_t two[8] = {0, 0, 195, 731, 0, 0, 0, 52};
    CHECK_OK(og_generator_append_tokens(g, two, 8));
    while (!og_generator_is_done(g)) CHECK_OK(og_generator_generate_next_token(g));
    const int32_t *ids;
    CHECK_OK(og_generator_get_sequence(g, 0, &ids, &n));
    CHECK(same(ids, n, want, 5));
    int32_t want1[10] = {0, 0, 0, 52, 204, 204, 204, 204, 204, 204};
    CHECK_OK(og_generator_get_sequence(g, 1, &ids, &n));
    CHECK(same(ids, n, want1, 10));
    og_generator_destroy(g);
    og_model_close(m);
}

/* Every row of a batch of prompts of different lengths equals its single run. With
 * longest_last the last row reaches max_length first and goes on being fed while the
 * others generate (a stopped row of the shared-column layout is fed past its last
 * position: under AddressSanitizer this caught its row form written past the generator's
 * buffer). */
static void batch_equals_single_order(const char *name, bool longest_last) {
    char dir[1024];
    if (!ortgenai(dir, sizeof dir, name)) return;
    og_model *m;
    CHECK_OK(og_model_open(dir, NULL, &m));
    int32_t pad = og_model_pad_token_id(m);
    /* right-padded rows as onnxruntime-genai takes them */
    int32_t rows[3][6] = {{0, 0, 195, 731, 5, 9}, {41, 554, 74, pad, pad, pad}, {7, pad, pad, pad, pad, pad}};
    size_t lens[3] = {6, 3, 1};
    if (longest_last) {
        int32_t t[6];
        memcpy(t, rows[0], sizeof t);
        memcpy(rows[0], rows[2], sizeof t);
        memcpy(rows[2], t, sizeof t);
        lens[0] = 1;
        lens[2] = 6;
    }
    int32_t single[3][16];
    size_t nsingle[3];
    for (int b = 0; b < 3; b++) CHECK_OK(greedy(m, rows[b], lens[b], 16, single[b], &nsingle[b]));
    og_generator_params p = og_generator_params_default(m);
    p.batch_size = 3;
    p.max_length = 16;
    og_generator *g;
    CHECK_OK(og_generator_create(m, &p, &g));
    CHECK_OK(og_generator_append_tokens(g, &rows[0][0], 18));
    while (!og_generator_is_done(g)) CHECK_OK(og_generator_generate_next_token(g));
    for (int b = 0; b < 3; b++) {
        const int32_t *ids;
        size_t n;
        CHECK_OK(og_generator_get_sequence(g, (size_t)b, &ids, &n));
        CHECK(same(ids, n, single[b], nsingle[b]));
    }
    og_generator_destroy(g);
    og_model_close(m);
}

static void batch_equals_single(const char *name) { batch_equals_single_order(name, false); }

TEST(generate_batch_equals_single_gpt2) { batch_equals_single("hf-internal-testing/tiny-random-gpt2-fp32"); }
TEST(generate_batch_longest_last_gpt2) {
    batch_equals_single_order("hf-internal-testing/tiny-random-gpt2-fp32", true);
}
TEST(generate_batch_equals_single_qwen2_gqa_fp16) { batch_equals_single("hf-internal-testing/tiny-qwen35-cuda"); }
