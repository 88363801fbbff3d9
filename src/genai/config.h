/* genai_config.json: the file that describes an onnxruntime-genai model package (which
 * ONNX files make up the model, the names of their inputs and outputs, the token ids and
 * the default search options). gen_config_load parses and validates it into plain
 * structs; nothing here opens a model file.
 *
 * Ownership: gen_config_load allocates one gen_config; every string, array and table in
 * it belongs to it and is released by gen_config_free. Callers read fields directly and
 * must not free or keep them past gen_config_free.
 *
 * Errors: a missing or unreadable file is OG_ERR_NOT_FOUND / OG_ERR_IO; malformed JSON,
 * a value of the wrong type or an impossible value is OG_ERR_INVALID_MODEL, with a
 * message naming the file and the key path, e.g.
 *   "<dir>/genai_config.json: search.top_p is 1.5, expected a number in [0, 1]".
 * A key this parser does not know is not an error: it becomes a warning in
 * gen_config.warnings ("model.decoder.foo: unknown key, ignored"; an unknown input or
 * output name is kept in its table all the same). The library never
 * prints them; the CLI may. Keys that onnxruntime-genai knows but this runtime does not
 * use (audio-model settings, speculative decoding, runtime profiles, ...) are kept
 * silently as raw JSON text in the `extra` tables. */
#ifndef OG_GENAI_CONFIG_H
#define OG_GENAI_CONFIG_H

#include "base/status.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* An ordered key -> string table. Used for input/output name maps (nominal name ->
 * graph name, layer templates keep their "%d"), run options, session config entries,
 * provider options and raw JSON of known-but-unused keys. */
typedef struct gen_kv {
    char *key;
    char *value;
    bool is_default; /* filled in by the parser with onnxruntime-genai's default */
} gen_kv;

typedef struct gen_kvs {
    gen_kv *items;
    int n, cap;
} gen_kvs;

/* The value for key, or NULL when absent. */
const char *gen_kvs_get(const gen_kvs *t, const char *key);
/* The value for key only if it came from the file (not a filled-in default). */
const char *gen_kvs_get_explicit(const gen_kvs *t, const char *key);

/* One entry of session_options.provider_options: {"cuda": {"enable_cuda_graph": "1"}}. */
typedef struct gen_provider {
    char *name;
    gen_kvs options;
} gen_provider;

/* Tri-state for optional booleans. */
enum { GEN_UNSET = -1 };

typedef struct gen_session_options {
    bool present;
    char *log_id;                   /* NULL when absent */
    int intra_op_num_threads;       /* GEN_UNSET when absent */
    int inter_op_num_threads;       /* GEN_UNSET when absent */
    int log_severity_level;         /* GEN_UNSET when absent */
    int log_verbosity_level;        /* GEN_UNSET when absent */
    int enable_cpu_mem_arena;       /* GEN_UNSET, 0 or 1 */
    int enable_mem_pattern;         /* GEN_UNSET, 0 or 1 */
    char *graph_optimization_level; /* NULL or ORT_{DISABLE_ALL,ENABLE_BASIC,ENABLE_EXTENDED,ENABLE_ALL} */
    char *enable_profiling;         /* NULL or the profile file prefix */
    char *custom_ops_library;       /* NULL when absent */
    /* Every other "key": "string" pair (ORT session config entries such as
     * "session.use_device_allocator_for_initializers", and the string-valued options
     * disable_cpu_ep_fallback, ep_context_enable, use_env_allocators, ...). */
    gen_kvs config_entries;
    gen_provider *providers;
    int n_providers;
} gen_session_options;

/* A model file with its session: embedding, vision, speech, encoder (and the decoder's
 * common part). `inputs`/`outputs` map nominal names to graph names; known nominal
 * names absent from the file are filled in with onnxruntime-genai's defaults
 * (is_default = true), so gen_kvs_get(&c->inputs, "attention_mask") always answers
 * for known keys. Whether the graph really has such an input is for the caller to
 * check. */
typedef struct gen_component {
    bool present; /* the block appears in the file */
    char *filename;
    gen_session_options session_options;
    gen_kvs run_options;
    gen_kvs inputs, outputs;
    char *config_filename;  /* vision / speech: processor config file */
    char *adapter_filename; /* vision / speech: NULL when absent */
    int prefault;           /* embedding: GEN_UNSET, 0 or 1 */
    /* encoder */
    int hidden_size, num_attention_heads, num_key_value_heads, num_hidden_layers, head_size;
    /* vision (0 when absent) */
    int spatial_merge_size, patch_size, window_size, max_num_patches, num_visual_tokens;
    double tokens_per_second;
    gen_kvs extra; /* known but unused keys (vision.pipeline, ...) as raw JSON */
} gen_component;

/* model.decoder.sliding_window (onnxruntime-genai's defaults when a key is absent). */
typedef struct gen_sliding_window {
    bool present;
    int window_size;            /* 0 */
    int pad_value;              /* 0 */
    char *alignment;            /* "right" (or "left") */
    bool slide_key_value_cache; /* true */
    bool slide_inputs;          /* true */
    int cache_slack;            /* 0 */
    int *layers;                /* layer indices using the window; NULL/0 when absent */
    int n_layers;
} gen_sliding_window;

/* One model of a decoder-pipeline: decoder.pipeline is a list of objects each holding
 * one {stage name: stage} pair (several pairs per object are allowed). */
typedef struct gen_pipeline_stage {
    char *name; /* the stage's key, e.g. "transformer" */
    char *filename;
    gen_session_options session_options; /* .present false: use the decoder's */
    gen_kvs run_options;
    char **inputs;
    int n_inputs;
    char **outputs;
    int n_outputs;
    bool run_on_prompt;     /* true */
    bool run_on_token_gen;  /* true */
    int reset_session_idx;  /* -1 */
    bool is_lm_head;        /* false */
    bool inherit_session_options; /* false */
} gen_pipeline_stage;

typedef struct gen_decoder {
    gen_component c; /* filename, session_options, run_options, inputs, outputs */
    int hidden_size, num_attention_heads, num_key_value_heads, num_hidden_layers, head_size;
    int conv_cache_size;       /* hybrid models' conv state length; 0 when absent */
    int state_update_capacity; /* 0 when absent */
    gen_sliding_window sliding_window;
    char **layer_types; /* per layer ("full_attention", "linear_attention", ...) */
    int n_layer_types;
    gen_pipeline_stage *pipeline;
    int n_pipeline;
    gen_kvs extra; /* state_groups, shared_initializers as raw JSON */
} gen_decoder;

typedef struct gen_model {
    char *type; /* "gpt2", "llama", "phi3v", "decoder-pipeline", ... */
    /* Token ids: 0 when absent (onnxruntime-genai's default). */
    int bos_token_id, pad_token_id, sep_token_id, decoder_start_token_id;
    int32_t *eos_token_ids; /* eos_token_id as a list (a single int becomes one entry) */
    int n_eos_token_ids;
    int eos_token_id; /* the first of them, 0 when the list is empty */
    int vocab_size;
    int context_length;
    /* Multimodal token ids: -1 when absent. */
    int image_token_id, video_token_id, vision_start_token_id, audio_token_id;
    char *tokenizer_dir; /* NULL when absent */
    gen_decoder decoder;
    gen_component embedding, vision, speech, encoder;
    /* Known keys this runtime does not use (audio-model settings, draft/mtp models, ...)
     * as raw JSON text. */
    gen_kvs extra;
} gen_model;

typedef struct gen_search {
    bool do_sample;
    int min_length;
    int max_length; /* model.context_length when absent or 0 */
    int batch_size;
    int num_beams;
    int num_return_sequences;
    int top_k;
    float top_p; /* 0 or >= 1: no top-p filtering */
    float temperature;
    float repetition_penalty;
    float length_penalty;
    float diversity_penalty;
    int no_repeat_ngram_size;
    bool early_stopping;
    bool past_present_share_buffer;
    int64_t random_seed; /* -1: seed from the system */
    int chunk_size;      /* prompt processing chunk; 0 = whole prompt */
    gen_kvs extra;       /* audio search settings as raw JSON */
} gen_search;

typedef struct gen_engine {
    bool present;
    bool has_dynamic_batching;
    int block_size, num_blocks, max_batch_size; /* 0 when absent */
    /* the other dynamic_batching settings (prefix_caching, max_scheduled_tokens,
     * gpu_utilization_factor, dflash2_max_snapshots) as raw JSON */
    gen_kvs extra;
} gen_engine;

typedef struct gen_config {
    char *path; /* the genai_config.json that was read */
    char *dir;  /* its folder: model filenames are relative to it */
    gen_model model;
    gen_search search;
    gen_engine engine;
    gen_kvs extra; /* top-level "speculative", "runtime_profiles" as raw JSON */
    char **warnings;
    int n_warnings;
} gen_config;

/* Reads dir_or_file (a package folder holding genai_config.json, or the file itself).
 * On success *out owns everything; on failure *out is NULL. */
og_status *gen_config_load(const char *dir_or_file, gen_config **out);
/* Parses JSON text as if read from `path` (which only names it in messages and sets
 * dir). */
og_status *gen_config_parse(const char *json, size_t len, const char *path, gen_config **out);
void gen_config_free(gen_config *cfg);

/* api_config.c: the config an og_config describes now, parsed anew (the caller owns it). */
og_status *gen_config_of(const og_config *config, gen_config **out);
/* The device execution provider appended to the config ("cuda"), or NULL for the CPU. */
const char *gen_config_provider(const og_config *config);
/* A token id under model.<key> (og_model_token_id's rules); -1 when there is none. */
int32_t gen_config_token_id(const gen_config *cfg, const char *key);

/* Writes template with its single "%d" replaced by layer into buf. A template without
 * "%d" is copied as is. Fails (OG_ERR_INVALID_ARGUMENT) on any other conversion, a
 * second "%d", a negative layer or a result that does not fit in size bytes. "%%" is a
 * literal '%'. */
og_status *gen_config_format_name(const char *template_, int layer, char *buf, size_t size);

/* NULL when template_ is usable with gen_config_format_name (at most one "%d"),
 * otherwise a message saying why (static string). */
const char *gen_config_check_template(const char *template_);

#endif
