/* genai_config.json parser: every shared package loads with the values its file holds,
 * the defaults match onnxruntime-genai 0.18.0's, and each kind of bad input gives
 * INVALID_MODEL (or a warning for an unknown key) with a message naming file and key. */
#include "testing.h"

#include "genai/config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const shared_packages[] = {
    "hf-internal-testing/tiny-random-gpt2-fp32",
    "hf-internal-testing/tiny-random-gpt2-fp16-cuda",
    "hf-internal-testing/tiny-qwen35-cuda",
    "engine/dummy-decoder",
    "engine/synthetic-paged",
    "multimodal-decoder-no-input-ids",
    "multimodal-decoder-with-input-ids",
    "phi3-v",
    "pipeline-model",
    "qwen2-5-vl",
    "qwen3-5",
    NULL,
};

/* Loads shared/models/ortgenai/<rel>; NULL (after a loud skip) when shared/ is absent. */
static og_status *load_shared(const char *rel, gen_config **cfg, bool *skipped) {
    char dir[2048];
    snprintf(dir, sizeof dir, "%s/models/ortgenai/%s", test_shared_dir(), rel);
    char probe[2100];
    snprintf(probe, sizeof probe, "%s/genai_config.json", dir);
    FILE *f = fopen(probe, "rb");
    *skipped = !f;
    *cfg = NULL;
    if (!f) {
        test_skip("%s not found (shared/ missing)", probe);
        return NULL;
    }
    fclose(f);
    return gen_config_load(dir, cfg);
}

#define LOAD_SHARED(rel, cfg)                                                            \
    gen_config *cfg;                                                                     \
    do {                                                                                 \
        bool skipped_;                                                                   \
        CHECK_OK(load_shared(rel, &cfg, &skipped_));                                     \
        if (skipped_) return;                                                            \
    } while (0)

TEST(genai_config_all_shared_load) {
    for (int i = 0; shared_packages[i]; i++) {
        gen_config *cfg;
        bool skipped;
        og_status *st = load_shared(shared_packages[i], &cfg, &skipped);
        if (skipped) return;
        if (st) {
            test_fail(__FILE__, __LINE__, "%s: %s", shared_packages[i], og_status_message(st));
            og_status_free(st);
            return;
        }
        /* the shared packages use only keys onnxruntime-genai knows */
        for (int w = 0; w < cfg->n_warnings; w++)
            if (strstr(cfg->warnings[w], "unknown key")) {
                test_fail(__FILE__, __LINE__, "%s: unexpected warning: %s", shared_packages[i],
                          cfg->warnings[w]);
                gen_config_free(cfg);
                return;
            }
        CHECK(cfg->model.type && cfg->model.context_length > 0);
        CHECK(cfg->search.max_length > 0);
        gen_config_free(cfg);
    }
}

TEST(genai_config_gpt2) {
    LOAD_SHARED("hf-internal-testing/tiny-random-gpt2-fp32", cfg);
    const gen_model *m = &cfg->model;
    CHECK(strcmp(m->type, "gpt2") == 0);
    CHECK_EQ_INT(m->eos_token_id, 98);
    CHECK_EQ_INT(m->n_eos_token_ids, 1);
    CHECK_EQ_INT(m->bos_token_id, 98);
    CHECK_EQ_INT(m->pad_token_id, 98);
    CHECK_EQ_INT(m->vocab_size, 1000);
    CHECK_EQ_INT(m->context_length, 512);
    CHECK(strcmp(m->decoder.c.filename, "past.onnx") == 0);
    CHECK_EQ_INT(m->decoder.num_hidden_layers, 5);
    CHECK_EQ_INT(m->decoder.num_key_value_heads, 4);
    CHECK_EQ_INT(m->decoder.head_size, 8);
    CHECK(strcmp(gen_kvs_get(&m->decoder.c.inputs, "past_names"), "past_%d") == 0);
    CHECK(strcmp(gen_kvs_get(&m->decoder.c.outputs, "present_names"), "present_%d") == 0);
    /* absent names come back as onnxruntime-genai's defaults, marked as such */
    CHECK(strcmp(gen_kvs_get(&m->decoder.c.inputs, "input_ids"), "input_ids") == 0);
    CHECK(gen_kvs_get_explicit(&m->decoder.c.inputs, "input_ids") == NULL);
    CHECK(strcmp(gen_kvs_get(&m->decoder.c.outputs, "logits"), "logits") == 0);
    CHECK(gen_kvs_get(&m->decoder.c.inputs, "no_such_name") == NULL);
    /* session options: a config entry and no providers */
    const gen_session_options *so = &m->decoder.c.session_options;
    CHECK(so->present);
    CHECK(strcmp(gen_kvs_get(&so->config_entries,
                             "session.use_device_allocator_for_initializers"),
                 "0") == 0);
    CHECK_EQ_INT(so->n_providers, 0);
    CHECK(so->log_id == NULL);
    CHECK_EQ_INT(so->intra_op_num_threads, GEN_UNSET);
    CHECK(gen_kvs_get(&m->decoder.c.run_options, "memory.enable_memory_arena_shrinkage"));
    CHECK(!m->embedding.present && !m->vision.present);

    char name[64];
    CHECK_OK(gen_config_format_name(gen_kvs_get(&m->decoder.c.inputs, "past_names"), 3, name,
                                    sizeof name));
    CHECK(strcmp(name, "past_3") == 0);
    gen_config_free(cfg);
}

/* No "search" block: every search option is onnxruntime-genai 0.18.0's default, as
 * printed by GeneratorParams.get_search_options() for this package. */
TEST(genai_config_search_defaults) {
    LOAD_SHARED("hf-internal-testing/tiny-random-gpt2-fp32", cfg);
    const gen_search *s = &cfg->search;
    CHECK(!s->do_sample);
    CHECK_EQ_INT(s->min_length, 0);
    CHECK_EQ_INT(s->max_length, 512); /* = model.context_length */
    CHECK_EQ_INT(s->batch_size, 1);
    CHECK_EQ_INT(s->num_beams, 1);
    CHECK_EQ_INT(s->num_return_sequences, 1);
    CHECK_EQ_INT(s->top_k, 50);
    CHECK_NEAR(s->top_p, 0.0, 0);
    CHECK_NEAR(s->temperature, 1.0, 0);
    CHECK_NEAR(s->repetition_penalty, 1.0, 0);
    CHECK_NEAR(s->length_penalty, 1.0, 0);
    CHECK_NEAR(s->diversity_penalty, 0.0, 0);
    CHECK_EQ_INT(s->no_repeat_ngram_size, 0);
    CHECK(s->early_stopping);
    CHECK(!s->past_present_share_buffer);
    CHECK_EQ_INT(s->random_seed, -1);
    CHECK_EQ_INT(s->chunk_size, 0);
    gen_config_free(cfg);
}

TEST(genai_config_qwen2_and_engine) {
    {
        LOAD_SHARED("hf-internal-testing/tiny-qwen35-cuda", cfg);
        const gen_decoder *d = &cfg->model.decoder;
        CHECK(strcmp(cfg->model.type, "qwen2") == 0);
        CHECK_EQ_INT(d->num_key_value_heads, 2);
        CHECK_EQ_INT(d->num_attention_heads, 4);
        CHECK_EQ_INT(d->hidden_size, 64);
        CHECK_EQ_INT(d->c.session_options.n_providers, 1);
        CHECK(strcmp(d->c.session_options.providers[0].name, "cuda") == 0);
        CHECK(strcmp(gen_kvs_get(&d->c.session_options.providers[0].options,
                                 "enable_cuda_graph"),
                     "1") == 0);
        CHECK(strcmp(d->c.session_options.log_id, "onnxruntime-genai") == 0);
        CHECK(cfg->search.past_present_share_buffer);
        CHECK_EQ_INT(cfg->search.max_length, 128);
        gen_config_free(cfg);
    }
    {
        LOAD_SHARED("engine/synthetic-paged", cfg);
        CHECK(strcmp(cfg->model.type, "decoder") == 0);
        CHECK(cfg->engine.present && cfg->engine.has_dynamic_batching);
        CHECK_EQ_INT(cfg->engine.block_size, 4);
        CHECK_EQ_INT(cfg->engine.num_blocks, 128);
        CHECK_EQ_INT(cfg->engine.max_batch_size, 8);
        const gen_kvs *in = &cfg->model.decoder.c.inputs;
        CHECK(strcmp(gen_kvs_get_explicit(in, "block_table"), "block_table") == 0);
        CHECK(gen_kvs_get_explicit(in, "cumulative_sequence_lengths"));
        CHECK(gen_kvs_get_explicit(in, "past_sequence_lengths"));
        CHECK(gen_kvs_get_explicit(in, "attention_metadata"));
        CHECK(!cfg->search.do_sample);
        gen_config_free(cfg);
    }
}

TEST(genai_config_multimodal) {
    {
        LOAD_SHARED("phi3-v", cfg);
        const gen_model *m = &cfg->model;
        CHECK(strcmp(m->type, "phi3v") == 0);
        CHECK(m->embedding.present && m->vision.present && !m->speech.present);
        CHECK(strcmp(m->embedding.filename, "dummy_embedding.onnx") == 0);
        CHECK(strcmp(m->vision.filename, "dummy_vision.onnx") == 0);
        CHECK(strcmp(m->decoder.c.filename, "dummy_text.onnx") == 0);
        CHECK(strcmp(gen_kvs_get(&m->vision.inputs, "image_sizes"), "image_sizes") == 0);
        CHECK(strcmp(gen_kvs_get(&m->embedding.outputs, "inputs_embeds"), "inputs_embeds") == 0);
        CHECK(strcmp(m->vision.config_filename, "processor_config.json") == 0);
        CHECK_EQ_INT(m->eos_token_id, 32007);
        CHECK_EQ_INT(m->vocab_size, 32064);
        CHECK_EQ_INT(m->image_token_id, -1);
        CHECK_EQ_INT(cfg->search.top_k, 1);
        CHECK_NEAR(cfg->search.top_p, 1.0, 0);
        gen_config_free(cfg);
    }
    {
        LOAD_SHARED("qwen2-5-vl", cfg);
        const gen_model *m = &cfg->model;
        CHECK_EQ_INT(m->n_eos_token_ids, 2);
        CHECK_EQ_INT(m->eos_token_ids[0], 151645);
        CHECK_EQ_INT(m->eos_token_ids[1], 151643);
        CHECK_EQ_INT(m->eos_token_id, 151645);
        CHECK_EQ_INT(m->image_token_id, 151655);
        CHECK_EQ_INT(m->video_token_id, 151656);
        CHECK_EQ_INT(m->vision_start_token_id, 151652);
        CHECK_EQ_INT(m->vision.spatial_merge_size, 2);
        CHECK_EQ_INT(m->vision.patch_size, 14);
        CHECK_EQ_INT(m->vision.window_size, 56);
        CHECK_NEAR(m->vision.tokens_per_second, 2.0, 0);
        CHECK(strcmp(gen_kvs_get(&m->vision.inputs, "image_grid_thw"), "image_grid_thw") == 0);
        CHECK(cfg->search.do_sample);
        gen_config_free(cfg);
    }
    {
        LOAD_SHARED("qwen3-5", cfg);
        const gen_model *m = &cfg->model;
        CHECK(strcmp(m->type, "qwen3_5") == 0);
        CHECK_EQ_INT(m->vocab_size, 248320);
        CHECK_EQ_INT(m->decoder.head_size, 256);
        CHECK(strcmp(gen_kvs_get(&m->decoder.c.inputs, "position_ids"), "position_ids") == 0);
        CHECK(gen_kvs_get_explicit(&m->decoder.c.inputs, "inputs_embeds"));
        CHECK(gen_kvs_get_explicit(&m->decoder.c.inputs, "input_ids") == NULL);
        /* this package's decoder has no conv/recurrent state names */
        CHECK(gen_kvs_get(&m->decoder.c.inputs, "past_conv_names") == NULL);
        CHECK_EQ_INT(m->vision_start_token_id, 151652);
        gen_config_free(cfg);
    }
}

TEST(genai_config_pipeline) {
    LOAD_SHARED("pipeline-model", cfg);
    const gen_decoder *d = &cfg->model.decoder;
    CHECK(strcmp(cfg->model.type, "decoder-pipeline") == 0);
    CHECK(d->c.filename == NULL);
    CHECK_EQ_INT(d->n_pipeline, 3);
    CHECK(strcmp(d->pipeline[0].name, "embeddings") == 0);
    CHECK(strcmp(d->pipeline[0].filename, "embeds.onnx") == 0);
    CHECK_EQ_INT(d->pipeline[0].n_inputs, 1);
    CHECK(strcmp(d->pipeline[0].inputs[0], "input_ids") == 0);
    CHECK(!d->pipeline[0].session_options.present);
    CHECK(strcmp(d->pipeline[1].name, "transformer") == 0);
    CHECK_EQ_INT(d->pipeline[1].n_inputs, 4);
    CHECK_EQ_INT(d->pipeline[1].n_outputs, 3);
    CHECK(strcmp(d->pipeline[1].outputs[2], "present.0.value") == 0);
    CHECK(d->pipeline[1].session_options.present);
    CHECK_EQ_INT(d->pipeline[1].session_options.n_providers, 1);
    CHECK(d->pipeline[1].run_on_prompt && d->pipeline[1].run_on_token_gen);
    CHECK_EQ_INT(d->pipeline[1].reset_session_idx, -1);
    CHECK(strcmp(d->pipeline[2].filename, "lm_head.onnx") == 0);
    /* "provider_options": [{}] is an entry with no provider */
    CHECK_EQ_INT(d->c.session_options.n_providers, 0);
    gen_config_free(cfg);
}

TEST(genai_config_format_name) {
    char buf[32];
    CHECK_OK(gen_config_format_name("past_key_values.%d.key", 12, buf, sizeof buf));
    CHECK(strcmp(buf, "past_key_values.12.key") == 0);
    CHECK_OK(gen_config_format_name("logits", 3, buf, sizeof buf));
    CHECK(strcmp(buf, "logits") == 0);
    CHECK_OK(gen_config_format_name("a%%b_%d", 0, buf, sizeof buf));
    CHECK(strcmp(buf, "a%b_0") == 0);
    CHECK_ERR(gen_config_format_name("a.%d.%d", 1, buf, sizeof buf), OG_ERR_INVALID_ARGUMENT,
              "more than one %d");
    CHECK_ERR(gen_config_format_name("a.%s", 1, buf, sizeof buf), OG_ERR_INVALID_ARGUMENT,
              "'%' must be followed");
    CHECK_ERR(gen_config_format_name("a.%", 1, buf, sizeof buf), OG_ERR_INVALID_ARGUMENT,
              "'%' must be followed");
    CHECK_ERR(gen_config_format_name("a.%d", -1, buf, sizeof buf), OG_ERR_INVALID_ARGUMENT,
              "negative");
    CHECK_ERR(gen_config_format_name("past_key_values.%d.key", 1000000, buf, 12),
              OG_ERR_INVALID_ARGUMENT, "does not fit");
    CHECK_OK(gen_config_format_name("x%d", 99, buf, 4)); /* "x99" + NUL fits exactly */
    CHECK(strcmp(buf, "x99") == 0);
    CHECK_ERR(gen_config_format_name("x%d", 100, buf, 4), OG_ERR_INVALID_ARGUMENT,
              "does not fit");
}

/* ---- bad input ----------------------------------------------------------------------- */

static char *write_tmp(const char *name, const char *text) {
    static char path[2048];
    snprintf(path, sizeof path, "%s/%s", test_tmp_dir(), name);
    FILE *f = fopen(path, "wb");
    if (!f) return NULL;
    fputs(text, f);
    fclose(f);
    return path;
}

/* A valid config with two slots: extra decoder keys and extra top-level blocks. */
static const char *base_fmt =
    "{\"model\": {\"type\": \"llama\", \"context_length\": 64, \"vocab_size\": 100,\n"
    " \"eos_token_id\": 2, \"decoder\": {\"filename\": \"m.onnx\", \"num_hidden_layers\": 2,\n"
    " \"num_attention_heads\": 4, \"num_key_value_heads\": 2%s}}%s}";

static og_status *load_text(const char *decoder_extra, const char *top_extra,
                            gen_config **cfg) {
    char text[4096];
    snprintf(text, sizeof text, base_fmt, decoder_extra, top_extra);
    const char *path = write_tmp("genai_config.json", text);
    if (!path) return og_errorf(OG_ERR_IO, "cannot write the test config");
    return gen_config_load(test_tmp_dir(), cfg);
}

TEST(genai_config_base_and_defaults) {
    gen_config *cfg;
    CHECK_OK(load_text("", "", &cfg));
    CHECK_EQ_INT(cfg->n_warnings, 0);
    CHECK_EQ_INT(cfg->search.max_length, 64);
    CHECK_EQ_INT(cfg->search.top_k, 50);
    CHECK(!cfg->model.decoder.sliding_window.present);
    CHECK(strstr(cfg->path, "genai_config.json") != NULL);
    CHECK(strcmp(cfg->dir, test_tmp_dir()) == 0);
    gen_config_free(cfg);

    /* the file itself may be named too */
    char path[2048];
    snprintf(path, sizeof path, "%s/genai_config.json", test_tmp_dir());
    CHECK_OK(gen_config_load(path, &cfg));
    gen_config_free(cfg);
}

TEST(genai_config_sliding_window_and_layers) {
    gen_config *cfg;
    CHECK_OK(load_text(", \"sliding_window\": {\"window_size\": 16, \"pad_value\": -1,"
                       " \"alignment\": \"left\", \"slide_inputs\": false, \"layers\": [0, 1]},"
                       " \"layer_types\": [\"linear_attention\", \"full_attention\"],"
                       " \"conv_cache_size\": 3,"
                       " \"inputs\": {\"past_conv_names\": \"past_conv.%d\","
                       " \"past_recurrent_names\": \"past_recurrent.%d\"},"
                       " \"outputs\": {\"present_conv_names\": \"present_conv.%d\"}",
                       ", \"search\": {\"num_beams\": 4, \"num_return_sequences\": 4,"
                       " \"random_seed\": 42, \"top_p\": 0.9, \"temperature\": 0}",
                       &cfg));
    const gen_decoder *d = &cfg->model.decoder;
    CHECK(d->sliding_window.present);
    CHECK_EQ_INT(d->sliding_window.window_size, 16);
    CHECK_EQ_INT(d->sliding_window.pad_value, -1);
    CHECK(strcmp(d->sliding_window.alignment, "left") == 0);
    CHECK(d->sliding_window.slide_key_value_cache);
    CHECK(!d->sliding_window.slide_inputs);
    CHECK_EQ_INT(d->sliding_window.n_layers, 2);
    CHECK_EQ_INT(d->n_layer_types, 2);
    CHECK(strcmp(d->layer_types[0], "linear_attention") == 0);
    CHECK_EQ_INT(d->conv_cache_size, 3);
    CHECK(strcmp(gen_kvs_get(&d->c.inputs, "past_conv_names"), "past_conv.%d") == 0);
    CHECK(strcmp(gen_kvs_get(&d->c.outputs, "present_conv_names"), "present_conv.%d") == 0);
    CHECK_EQ_INT(cfg->search.num_beams, 4);
    CHECK_EQ_INT(cfg->search.random_seed, 42);
    CHECK_NEAR(cfg->search.top_p, 0.9, 1e-7);
    CHECK_NEAR(cfg->search.temperature, 0.0, 0);
    CHECK_EQ_INT(cfg->n_warnings, 0);
    gen_config_free(cfg);
}

TEST(genai_config_unknown_keys_warn) {
    gen_config *cfg;
    CHECK_OK(load_text(", \"foo\": 1, \"inputs\": {\"brand_new_input\": \"bni\"}",
                       ", \"search\": {\"bar\": true}, \"baz\": {}", &cfg));
    CHECK_EQ_INT(cfg->n_warnings, 4);
    const char *want[] = {"model.decoder.foo", "model.decoder.inputs.brand_new_input",
                          "search.bar", "baz"};
    for (int i = 0; i < 4; i++) {
        bool found = false;
        for (int w = 0; w < cfg->n_warnings; w++)
            if (strstr(cfg->warnings[w], want[i]) && strstr(cfg->warnings[w], "unknown key") &&
                strstr(cfg->warnings[w], "genai_config.json"))
                found = true;
        if (!found) {
            test_fail(__FILE__, __LINE__, "no warning naming %s", want[i]);
            gen_config_free(cfg);
            return;
        }
    }
    /* an unknown name is still usable: new names need no code */
    for (int w = 0; w < cfg->n_warnings; w++)
        if (strstr(cfg->warnings[w], "brand_new_input")) CHECK(strstr(cfg->warnings[w], "kept"));
    CHECK(strcmp(gen_kvs_get(&cfg->model.decoder.c.inputs, "brand_new_input"), "bni") == 0);
    gen_config_free(cfg);
}

TEST(genai_config_known_unused_keys_kept_raw) {
    gen_config *cfg;
    CHECK_OK(load_text(", \"state_groups\": [1, 2]",
                       ", \"speculative\": {\"x\": 1}, \"engine\": {\"dynamic_batching\":"
                       " {\"prefix_caching\": true}}",
                       &cfg));
    CHECK_EQ_INT(cfg->n_warnings, 0);
    CHECK(strcmp(gen_kvs_get(&cfg->model.decoder.extra, "state_groups"), "[1,2]") == 0);
    CHECK(strcmp(gen_kvs_get(&cfg->extra, "speculative"), "{\"x\":1}") == 0);
    CHECK(strcmp(gen_kvs_get(&cfg->engine.extra, "prefix_caching"), "true") == 0);
    gen_config_free(cfg);
}

TEST(genai_config_missing_file) {
    gen_config *cfg = (gen_config *)1;
    char path[2048];
    snprintf(path, sizeof path, "%s/no_such_dir", test_tmp_dir());
    CHECK_ERR(gen_config_load(path, &cfg), OG_ERR_NOT_FOUND, "no_such_dir");
    CHECK(cfg == NULL);
}

TEST(genai_config_malformed_json) {
    const char *path = write_tmp("broken.json", "{\"model\": {\n  \"type\": \"gpt2\",,\n}}");
    CHECK(path);
    gen_config *cfg;
    CHECK_ERR(gen_config_load(path, &cfg), OG_ERR_INVALID_MODEL, "broken.json: malformed JSON");
    CHECK_ERR(gen_config_load(path, &cfg), OG_ERR_INVALID_MODEL, "line 2");
    path = write_tmp("empty.json", "");
    CHECK_ERR(gen_config_load(path, &cfg), OG_ERR_INVALID_MODEL, "empty.json: malformed JSON");
    path = write_tmp("array.json", "[1, 2]");
    CHECK_ERR(gen_config_load(path, &cfg), OG_ERR_INVALID_MODEL, "not a JSON object");
}

typedef struct bad_case {
    const char *decoder_extra, *top_extra, *needle;
} bad_case;

TEST(genai_config_bad_values) {
    static const bad_case cases[] = {
        {"", ", \"search\": {\"max_length\": \"5\"}",
         "search.max_length is \"5\", expected an integer >= 0"},
        {"", ", \"search\": {\"max_length\": -5}", "search.max_length is -5"},
        {"", ", \"search\": {\"max_length\": 5.5}", "search.max_length is 5.5, expected an integer"},
        {"", ", \"search\": {\"max_length\": 1e12}",
         "search.max_length is 1e+12, too large: at most 2147483647"},
        {", \"num_hidden_layers\": 4294967296", "",
         "model.decoder.num_hidden_layers is 4294967296, too large: at most 2147483647"},
        {"", ", \"search\": {\"top_p\": 1.5}", "search.top_p is 1.5, expected a number in [0, 1]"},
        {"", ", \"search\": {\"top_p\": -0.1}", "search.top_p is -0.1"},
        {"", ", \"search\": {\"temperature\": -1}", "search.temperature is -1, expected a number >= 0"},
        {"", ", \"search\": {\"top_k\": -1}", "search.top_k is -1"},
        {"", ", \"search\": {\"num_beams\": 0}", "search.num_beams is 0, expected an integer >= 1"},
        {"", ", \"search\": {\"repetition_penalty\": 0}", "search.repetition_penalty is 0, expected a number > 0"},
        {"", ", \"search\": {\"do_sample\": 1}", "search.do_sample is 1, expected true or false"},
        {"", ", \"search\": {\"num_beams\": 2, \"num_return_sequences\": 3}",
         "search.num_return_sequences is 3, expected at most search.num_beams (2)"},
        {"", ", \"search\": {\"min_length\": 10, \"max_length\": 5}", "search.min_length is 10"},
        {"", ", \"search\": {\"random_seed\": -2}", "search.random_seed is -2"},
        {"", ", \"search\": {\"random_seed\": 9223372036854775808}",
         "search.random_seed is 9.223372036854776e+18, too large: at most 9223372036854775807"},
        {"", ", \"search\": []", "search is an array, expected an object"},
        {", \"inputs\": {\"past_key_names\": \"past.%d.%d\"}", "",
         "model.decoder.inputs.past_key_names is \"past.%d.%d\": it has more than one %d"},
        {", \"outputs\": {\"logits\": 3}", "", "model.decoder.outputs.logits is 3, expected a string"},
        {", \"num_hidden_layers\": -1", "", "model.decoder.num_hidden_layers is -1"},
        {", \"num_attention_heads\": 5", "", "num_attention_heads (5) is not a multiple"},
        {", \"layer_types\": [\"full_attention\"]", "", "model.decoder.layer_types has 1 entries, expected 2"},
        {", \"layer_types\": [1, 2]", "", "model.decoder.layer_types[0] is 1, expected a string"},
        {", \"sliding_window\": {\"alignment\": \"middle\"}", "",
         "model.decoder.sliding_window.alignment is \"middle\""},
        {", \"sliding_window\": {\"window_size\": 0}", "", "model.decoder.sliding_window.window_size is 0"},
        {", \"sliding_window\": {\"layers\": [5]}", "", "sliding_window.layers[0] is 5"},
        {", \"session_options\": {\"intra_op_num_threads\": 2.5}", "",
         "model.decoder.session_options.intra_op_num_threads is 2.5"},
        {", \"session_options\": {\"graph_optimization_level\": \"bogus\"}", "",
         "graph_optimization_level is \"bogus\""},
        {", \"session_options\": {\"provider_options\": [{\"cuda\": {\"a\": 1}}]}", "",
         "model.decoder.session_options.provider_options[0].cuda.a is 1, expected a string"},
        {", \"session_options\": {\"x\": 1}", "", "model.decoder.session_options.x is 1"},
        {", \"pipeline\": [{\"s\": {\"inputs\": [\"a\"]}}]", "", "model.decoder.pipeline[0].s.filename is missing"},
        {"", ", \"engine\": {\"dynamic_batching\": {\"block_size\": 0}}",
         "engine.dynamic_batching.block_size is 0"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        gen_config *cfg = NULL;
        og_status *st = load_text(cases[i].decoder_extra, cases[i].top_extra, &cfg);
        const char *msg = st ? og_status_message(st) : "";
        if (!st || og_status_code(st) != OG_ERR_INVALID_MODEL || !strstr(msg, cases[i].needle) ||
            !strstr(msg, "genai_config.json: ")) {
            test_fail(__FILE__, __LINE__, "case %zu: got [%s] '%s', expected INVALID_MODEL with '%s'",
                      i, st ? og_code_name(og_status_code(st)) : "ok", msg, cases[i].needle);
            og_status_free(st);
            gen_config_free(cfg);
            return;
        }
        CHECK(cfg == NULL);
        og_status_free(st);
    }
}

TEST(genai_config_bad_model_level) {
    static const struct {
        const char *text, *needle;
    } cases[] = {
        {"{}", "\"model\" is missing"},
        {"{\"model\": {\"type\": \"gpt2\", \"decoder\": {\"filename\": \"a\"}}}",
         "model.context_length is missing"},
        {"{\"model\": {\"context_length\": 8, \"decoder\": {\"filename\": \"a\"}}}",
         "model.type is missing"},
        {"{\"model\": {\"type\": \"gpt2\", \"context_length\": 8}}", "model.decoder is missing"},
        {"{\"model\": {\"type\": \"gpt2\", \"context_length\": 8, \"decoder\": {}}}",
         "model.decoder.filename is missing"},
        {"{\"model\": {\"type\": \"decoder-pipeline\", \"context_length\": 8, \"decoder\": {}}}",
         "model.decoder.pipeline is missing or empty"},
        {"{\"model\": {\"type\": \"gpt2\", \"context_length\": -8, \"decoder\": {\"filename\": \"a\"}}}",
         "model.context_length is -8"},
        {"{\"model\": {\"type\": \"gpt2\", \"context_length\": 8, \"eos_token_id\": \"2\","
         " \"decoder\": {\"filename\": \"a\"}}}",
         "model.eos_token_id is \"2\", expected a token id or an array of token ids"},
        {"{\"model\": {\"type\": \"gpt2\", \"context_length\": 8, \"eos_token_id\": [1, 2.5],"
         " \"decoder\": {\"filename\": \"a\"}}}",
         "model.eos_token_id[1] is 2.5"},
        {"{\"model\": {\"type\": \"gpt2\", \"context_length\": 8, \"vision\": {},"
         " \"decoder\": {\"filename\": \"a\"}}}",
         "model.vision.filename is missing"},
        {"{\"model\": {\"type\": 5}}", "model.type is 5, expected a string"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const char *path = write_tmp("genai_config.json", cases[i].text);
        CHECK(path);
        gen_config *cfg = NULL;
        og_status *st = gen_config_load(path, &cfg);
        const char *msg = st ? og_status_message(st) : "";
        if (!st || og_status_code(st) != OG_ERR_INVALID_MODEL || !strstr(msg, cases[i].needle)) {
            test_fail(__FILE__, __LINE__, "case %zu: got [%s] '%s', expected INVALID_MODEL with '%s'",
                      i, st ? og_code_name(og_status_code(st)) : "ok", msg, cases[i].needle);
            og_status_free(st);
            gen_config_free(cfg);
            return;
        }
        og_status_free(st);
    }
}

TEST(genai_config_warnings_for_odd_values) {
    gen_config *cfg;
    CHECK_OK(load_text("", ", \"search\": {\"max_length\": 100}", &cfg));
    CHECK_EQ_INT(cfg->n_warnings, 1);
    CHECK(strstr(cfg->warnings[0], "search.max_length 100 exceeds model.context_length 64"));
    gen_config_free(cfg);
}
