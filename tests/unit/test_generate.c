/* Generation on onnxruntime-genai's own test packages, against the values its tests
 * assert (../shared/models/README.md). */
#include "testing.h"

#include "base/status.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static bool package(char *buf, size_t size, const char *name) {
    snprintf(buf, size, "%s/models/ortgenai/hf-internal-testing/%s", test_shared_dir(), name);
    struct stat st;
    char cfg[1100];
    snprintf(cfg, sizeof cfg, "%s/genai_config.json", buf);
    if (stat(cfg, &st) != 0) {
        test_skip("%s is missing: the shared test models are not beside the project", cfg);
        return false;
    }
    return true;
}

#define OPEN(model, name)                                                                \
    char dir_[1024];                                                                     \
    if (!package(dir_, sizeof dir_, name)) return;                                       \
    og_model *model;                                                                     \
    CHECK_OK(og_model_open(dir_, NULL, &model))

static bool seq_equals(og_generator *g, size_t i, const int32_t *want, size_t n) {
    const int32_t *ids;
    size_t len;
    og_status *st = og_generator_get_sequence(g, i, &ids, &len);
    if (st) {
        og_status_free(st);
        return false;
    }
    if (len != n) {
        fprintf(stderr, "    sequence %zu has length %zu, expected %zu\n", i, len, n);
        return false;
    }
    for (size_t k = 0; k < n; k++)
        if (ids[k] != want[k]) {
            fprintf(stderr, "    sequence %zu differs at %zu: %d vs %d\n", i, k, ids[k], want[k]);
            return false;
        }
    return true;
}

static og_status *run_to_end(og_generator *g) {
    while (!og_generator_is_done(g)) OG_TRY(og_generator_generate_next_token(g));
    return NULL;
}

static const int32_t batch2_in[] = {0, 0, 0, 52, 0, 0, 195, 731};
static const int32_t batch2_out0[] = {0, 0, 0, 52, 204, 204, 204, 204, 204, 204};
static const int32_t batch2_out1[] = {0, 0, 195, 731, 731, 114, 114, 114, 114, 114};

static void greedy_batch2(const char *name) {
    OPEN(m, name);
    og_generator_params p = og_generator_params_default(m);
    p.batch_size = 2;
    p.max_length = 10;
    og_generator *g;
    CHECK_OK(og_generator_create(m, &p, &g));
    CHECK_OK(og_generator_append_tokens(g, batch2_in, 8));
    CHECK_OK(run_to_end(g));
    CHECK(seq_equals(g, 0, batch2_out0, 10));
    CHECK(seq_equals(g, 1, batch2_out1, 10));
    og_generator_destroy(g);
    og_model_close(m);
}

TEST(generate_gpt2_fp32_greedy_batch2) { greedy_batch2("tiny-random-gpt2-fp32"); }
TEST(generate_gpt2_fp16_greedy_batch2) { greedy_batch2("tiny-random-gpt2-fp16-cuda"); }

static void greedy_rewind(const char *name) {
    OPEN(m, name);
    og_generator_params p = og_generator_params_default(m);
    p.max_length = 10;
    og_generator *g;
    CHECK_OK(og_generator_create(m, &p, &g));
    CHECK_OK(og_generator_append_tokens(g, batch2_in + 4, 4));
    CHECK_OK(run_to_end(g));
    CHECK(seq_equals(g, 0, batch2_out1, 10));
    /* rewind to 5 and continue */
    CHECK_OK(og_generator_rewind_to(g, 5));
    CHECK(seq_equals(g, 0, batch2_out1, 5));
    CHECK_OK(run_to_end(g));
    CHECK(seq_equals(g, 0, batch2_out1, 10));
    /* rewind to 3, append [731, 731], continue */
    CHECK_OK(og_generator_rewind_to(g, 3));
    int32_t more[] = {731, 731};
    CHECK_OK(og_generator_append_tokens(g, more, 2));
    CHECK_OK(run_to_end(g));
    CHECK(seq_equals(g, 0, batch2_out1, 10));
    /* rewinding past the end is an error */
    CHECK_ERR(og_generator_rewind_to(g, 11), OG_ERR_INVALID_ARGUMENT, "cannot rewind to 11");
    og_generator_destroy(g);
    og_model_close(m);
}

TEST(generate_gpt2_fp32_greedy_rewind) { greedy_rewind("tiny-random-gpt2-fp32"); }
TEST(generate_gpt2_fp16_greedy_rewind) { greedy_rewind("tiny-random-gpt2-fp16-cuda"); }

static const int32_t beam_in[] = {0, 0, 0, 0, 0, 52, 195, 731, 321, 301, 734, 620,
                                  41, 554, 74, 622, 206, 222, 75, 223, 221, 198, 224, 572,
                                  0, 0, 0, 52, 328, 219, 328, 206, 288, 227, 896, 328};
static const int32_t beam_out[3][20] = {
    {0, 0, 0, 0, 0, 52, 195, 731, 321, 301, 734, 620, 131, 131, 131, 181, 638, 638, 638, 638},
    {41, 554, 74, 622, 206, 222, 75, 223, 221, 198, 224, 572, 292, 292, 292, 292, 292, 292, 292, 292},
    {0, 0, 0, 52, 328, 219, 328, 206, 288, 227, 896, 328, 328, 669, 669, 669, 669, 669, 669, 669}};

/* Beam search, batch 3, 4 beams (the README's case 3): the oracle's sequences. */
static void beam_search_case(og_model *m) {
    og_generator_params p = og_generator_params_default(m);
    p.batch_size = 3;
    p.num_beams = 4;
    p.length_penalty = 1.0f;
    p.max_length = 20;
    p.early_stopping = 1;
    og_generator *g;
    CHECK_OK(og_generator_create(m, &p, &g));
    CHECK_OK(og_generator_append_tokens(g, beam_in, 36));
    CHECK_OK(run_to_end(g));
    for (int b = 0; b < 3; b++) CHECK(seq_equals(g, (size_t)b, beam_out[b], 20));
    og_generator_destroy(g);
}

TEST(generate_gpt2_fp32_beam_search) {
    OPEN(m, "tiny-random-gpt2-fp32");
    beam_search_case(m);
    og_model_close(m);
}

/* Two threads with the pool's own inline threshold (the unit tests otherwise force every
 * split, OG_INLINE_NS=0, which also keeps the executor from running steps on one
 * thread): the executor times the decode steps with the workers and without and runs
 * the faster way; four beam searches in one session (32 decode steps of one plan, so
 * several tries of each way) give the oracle's tokens every time. */
TEST(generate_gpt2_fp32_beam_search_steps_timed) {
    char dir[1024];
    if (!package(dir, sizeof dir, "tiny-random-gpt2-fp32")) return;
    const char *was = getenv("OG_INLINE_NS");
    char *saved = was ? strdup(was) : NULL;
    setenv("OG_INLINE_NS", "20000", 1);
    og_model_options mo = og_model_options_default();
    mo.num_threads = 2;
    og_model *m;
    og_status *st = og_model_open(dir, &mo, &m);
    if (saved) setenv("OG_INLINE_NS", saved, 1);
    else unsetenv("OG_INLINE_NS");
    free(saved);
    CHECK_OK(st);
    for (int round = 0; round < 4; round++) beam_search_case(m);
    og_model_close(m);
}

TEST(generate_gpt2_fp32_logits) {
    OPEN(m, "tiny-random-gpt2-fp32");
    og_generator_params p = og_generator_params_default(m);
    p.batch_size = 2;
    p.max_length = 10;
    og_generator *g;
    CHECK_OK(og_generator_create(m, &p, &g));
    CHECK_OK(og_generator_append_tokens(g, batch2_in, 8));
    og_tensor *lt;
    CHECK_OK(og_generator_get_output(g, "logits", &lt));
    CHECK_EQ_INT(og_tensor_rank(lt), 3);
    CHECK_EQ_INT(og_tensor_dims(lt)[0], 2);
    CHECK_EQ_INT(og_tensor_dims(lt)[1], 4);
    CHECK_EQ_INT(og_tensor_dims(lt)[2], 1000);
    static const float prompt[2][4][5] = {
        {{0.29694548f, 0.00955007f, 0.0430819f, 0.10063869f, 0.0437237f},
         {0.27329233f, 0.00841076f, -0.1060291f, 0.11328877f, 0.13369876f},
         {0.30323744f, 0.0545997f, 0.03894716f, 0.11702324f, 0.0410665f},
         {-0.12675379f, -0.04443946f, 0.14492269f, 0.03021223f, -0.03212897f}},
        {{0.29694548f, 0.00955007f, 0.0430819f, 0.10063869f, 0.0437237f},
         {0.27329233f, 0.00841076f, -0.1060291f, 0.11328877f, 0.13369876f},
         {-0.04699047f, 0.17915794f, 0.20838135f, 0.10888482f, -0.00277808f},
         {0.2938929f, -0.10538938f, -0.00226692f, 0.12050669f, -0.10622668f}}};
    const float *l = og_tensor_data(lt);
    for (int b = 0; b < 2; b++)
        for (int t = 0; t < 4; t++)
            for (int k = 0; k < 5; k++)
                CHECK_NEAR(l[(b * 4 + t) * 1000 + k * 200], prompt[b][t][k], 1e-3);
    og_tensor_free(lt);
    /* after two generated tokens, the logits output of the last run (the step that fed
     * the first generated token), [2, 1, 1000] */
    CHECK_OK(og_generator_generate_next_token(g));
    CHECK_OK(og_generator_generate_next_token(g));
    CHECK_OK(og_generator_get_output(g, "logits", &lt));
    CHECK_EQ_INT(og_tensor_dims(lt)[1], 1);
    og_tensor *present;
    CHECK_OK(og_generator_get_output(g, "present_0", &present));
    CHECK_EQ_INT(og_tensor_rank(present), 5); /* [2, batch 2, 4 heads, 5 tokens, 8] */
    CHECK_EQ_INT(og_tensor_dims(present)[1], 2);
    CHECK_EQ_INT(og_tensor_dims(present)[3], 5);
    og_tensor_free(present);
    CHECK_ERR(og_generator_get_output(g, "nope", &present), OG_ERR_NOT_FOUND, "'nope'");
    static const float step[2][5] = {
        {0.03742531f, -0.05752287f, 0.14159015f, 0.04210977f, -0.1484456f},
        {0.3041716f, -0.08701379f, -0.03778192f, 0.07471392f, -0.02049096f}};
    l = og_tensor_data(lt);
    for (int b = 0; b < 2; b++)
        for (int k = 0; k < 5; k++) CHECK_NEAR(l[b * 1000 + k * 200], step[b][k], 1e-3);
    og_tensor_free(lt);
    og_generator_destroy(g);
    og_model_close(m);
}

static og_status *sample_run(og_model *m, int64_t seed, int top_k, float top_p, float temp,
                             int32_t *out) {
    og_generator_params p = og_generator_params_default(m);
    p.max_length = 20;
    p.do_sample = 1;
    p.top_k = top_k;
    p.top_p = top_p;
    p.temperature = temp;
    p.random_seed = seed;
    og_generator *g;
    OG_TRY(og_generator_create(m, &p, &g));
    og_status *st = og_generator_append_tokens(g, batch2_in + 4, 4);
    if (!st) st = run_to_end(g);
    const int32_t *ids;
    size_t len = 0;
    if (!st) st = og_generator_get_sequence(g, 0, &ids, &len);
    if (!st) memcpy(out, ids, len * sizeof *ids);
    og_generator_destroy(g);
    return st;
}

TEST(generate_gpt2_sampling_seeded) {
    OPEN(m, "tiny-random-gpt2-fp32");
    int32_t a[20] = {0}, b[20] = {0}, c[20] = {0}, greedy[20] = {0};
    CHECK_OK(sample_run(m, 5, 0, 0.9f, 1.5f, a));
    CHECK_OK(sample_run(m, 5, 0, 0.9f, 1.5f, b));
    CHECK(memcmp(a, b, sizeof a) == 0);            /* same seed, same tokens */
    CHECK_OK(sample_run(m, 6, 0, 0.9f, 1.5f, c));
    CHECK(memcmp(a, c, sizeof a) != 0);            /* another seed: another sample */
    CHECK_OK(sample_run(m, 5, 1, 1.0f, 1.0f, greedy)); /* top_k 1 is greedy */
    og_generator_params p = og_generator_params_default(m);
    p.max_length = 20;
    og_generator *g;
    CHECK_OK(og_generator_create(m, &p, &g));
    CHECK_OK(og_generator_append_tokens(g, batch2_in + 4, 4));
    CHECK_OK(run_to_end(g));
    CHECK(seq_equals(g, 0, greedy, 20));
    og_generator_destroy(g);
    og_model_close(m);
}

TEST(generate_rejects_bad_input) {
    OPEN(m, "tiny-random-gpt2-fp32");
    og_generator_params p = og_generator_params_default(m);
    p.max_length = 6;
    og_generator *g;
    CHECK_OK(og_generator_create(m, &p, &g));
    int32_t longp[7] = {1, 2, 3, 4, 5, 6, 7};
    CHECK_ERR(og_generator_append_tokens(g, longp, 7), OG_ERR_INVALID_ARGUMENT,
              "7 prompt tokens + 0 already in the sequence exceed max_length 6");
    int32_t big[2] = {5, 1000};
    CHECK_ERR(og_generator_append_tokens(g, big, 2), OG_ERR_INVALID_ARGUMENT,
              "token 1000 at position 1 is outside the vocabulary [0, 1000)");
    CHECK_ERR(og_generator_generate_next_token(g), OG_ERR_INVALID_ARGUMENT, "append prompt");
    og_generator_destroy(g);
    og_model_close(m);

    /* broken packages, written next to the real one */
    char dir[1100], cmd[4096];
    const char *tmp = test_tmp_dir();
    og_model *bad = NULL;
    snprintf(dir, sizeof dir, "%s/no_config", tmp);
    mkdir(dir, 0700);
    CHECK_ERR(og_model_open(dir, NULL, &bad), OG_ERR_NOT_FOUND, "genai_config.json");
    snprintf(dir, sizeof dir, "%s/no_graph", tmp);
    snprintf(cmd, sizeof cmd, "mkdir -p %s && cp %s/genai_config.json %s/", dir, dir_, dir);
    CHECK(system(cmd) == 0);
    CHECK_ERR(og_model_open(dir, NULL, &bad), OG_ERR_INCOMPLETE_MODEL,
              "model.decoder.filename names 'past.onnx', which is not in the package");
    snprintf(dir, sizeof dir, "%s/bad_names", tmp);
    snprintf(cmd, sizeof cmd,
             "mkdir -p %s && ln -sf %s/past.onnx %s/past.onnx && sed 's/\"past_%%d\"/\"cache_%%d\"/' "
             "%s/genai_config.json > %s/genai_config.json", dir, dir_, dir, dir_, dir);
    CHECK(system(cmd) == 0);
    CHECK_ERR(og_model_open(dir, NULL, &bad), OG_ERR_INVALID_MODEL,
              "model.decoder.inputs.past_names names 'cache_0' for layer 0, but the decoder "
              "graph past.onnx has no such input");
    CHECK(bad == NULL);
}
