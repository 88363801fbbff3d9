/* An opened package: its config, the sessions that make up the model, and what the
 * generator needs to know about their inputs and outputs (read from the graphs
 * themselves, as onnxruntime-genai does: which inputs exist and their dtypes decide what
 * is fed, which layers carry a KV cache and which a fixed-size state).
 *
 * A model is a pipeline of stages run in order on every step; each stage is one
 * session. A classic package has one stage (the decoder). A split package (embedding +
 * text decoder fed `inputs_embeds`, as vision packages are laid out) has two: the
 * embedding turns ids into embeddings, the decoder takes them. A `decoder-pipeline`
 * package lists its stages in genai_config.json. Values flow between stages by name. */
#ifndef OG_GENAI_MODEL_H
#define OG_GENAI_MODEL_H

#include "onnx_genai.h"

#include <stdbool.h>
#include <stddef.h>

struct gen_config;

typedef enum gen_kv_layout {
    GEN_KV_NONE,     /* no KV cache (engine/dummy-decoder, a state-only model) */
    GEN_KV_COMBINED, /* one tensor per layer: [2, batch, heads, seq, head_size] (gpt2 past_%d) */
    GEN_KV_SEPARATE  /* key and value per layer: [batch, kv_heads, seq, head_size] */
} gen_kv_layout;

/* A loop-carried tensor: fed as `past`, returned as `present`, fed back next step. */
typedef enum gen_cache_kind {
    GEN_CACHE_KV,    /* grows along its sequence axis (key, value or gpt2's pair) */
    GEN_CACHE_STATE  /* fixed shape with a leading batch axis (conv / recurrent state) */
} gen_cache_kind;

typedef struct gen_cache {
    char *past, *present; /* graph names */
    const char *what;     /* "key", "value", "kv", "conv_state", "recurrent_state", "conv" */
    gen_cache_kind kind;
    int layer;
    og_dtype dtype;
    int heads, head_size; /* KV */
    int window;           /* KV: capacity of a window-sized cache (the op keeps the last
                             positions only: GroupQueryAttention's sliding_window_cache), 0 for
                             a cache that grows */
    bool fixed;           /* a fixed-shape [batch, ...] buffer: a STATE, or a window-sized KV
                             cache; rank, dims and row_bytes describe it */
    int rank;             /* fixed: its rank and dims, dims[0] (the batch) = -1 */
    int64_t dims[OG_MAX_RANK];
    size_t row_bytes;     /* fixed: bytes of one batch row */
    bool shareable;       /* the op that writes present may write it over past in place */
    int stage;            /* the stage whose session takes past and returns present */
} gen_cache;

typedef struct gen_io {
    const char *name; /* graph name, NULL when the graph lacks this input */
    og_dtype dtype;
} gen_io;

/* Where a stage's graph input comes from. */
typedef enum gen_src {
    GEN_SRC_HIDDEN, /* hidden states the caller hands in (gen_step_tokens.hidden: an MTP
                       head's input, the main model's final hidden state) */
    GEN_SRC_IDS,   /* the new tokens [B, S] */
    GEN_SRC_MASK,  /* attention mask [B, total] */
    GEN_SRC_POS,   /* positions [B, S] or [3, B, S] */
    GEN_SRC_IMAGE, /* an empty image_features tensor (text only: no image tokens) */
    GEN_SRC_PAST,  /* cache entry `index` */
    GEN_SRC_VALUE, /* output `out` of the earlier stage `index` */
    GEN_SRC_PARAM, /* an input with a default (an overridable initializer, e.g. a LoRA
                      weight): the active adapter's tensor of that name, else `dflt` */
    GEN_SRC_CROSS  /* the encoder's output `index` (og_model.cross_out), computed once per
                      request (a Whisper decoder's cross-attention keys and values) */
} gen_src;

typedef struct gen_feed {
    const char *name; /* the graph input */
    og_dtype dtype;
    gen_src src;
    int index, out;
    const og_tensor *dflt; /* GEN_SRC_PARAM: the graph's own value (owned by the session) */
} gen_feed;

/* Where a stage's requested output goes. */
typedef enum gen_sink {
    GEN_SINK_VALUE,   /* kept for later stages */
    GEN_SINK_PRESENT, /* cache entry `index` */
    GEN_SINK_LOGITS,
    GEN_SINK_HIDDEN   /* og_model.hidden_out, returned to a caller that asks for it
                         (gen_step_logits.want_hidden), else not computed */
} gen_sink;

typedef struct gen_out {
    const char *name;
    gen_sink sink;
    int index;
} gen_out;

/* One session of the pipeline: every graph input has a feed, and the outputs it must
 * produce have sinks. */
typedef struct gen_stage {
    char *name;   /* "decoder", "embedding" or the pipeline stage's key */
    char *file;   /* as genai_config.json names it */
    char *path;   /* the graph file */
    const struct gen_session_options *so_cfg; /* the config's session_options for it */
    og_session *s;
    gen_feed *feeds;
    int n_feeds;
    gen_out *outs;
    int n_outs;
    bool on_prompt, on_token; /* runs on a prompt (several new tokens) / a one-token step */
    int n_params;   /* feeds that are GEN_SRC_PARAM */
} gen_stage;

struct og_model {
    struct gen_config *cfg;
    char *dir;
    gen_stage *stages;
    int n_stages;
    og_session *decoder; /* the stage that returns the logits */
    /* nominal inputs: the graph name the generator feeds them under (any stage may take
     * them; the dtype is each stage's own) */
    const char *input_ids, *attention_mask, *position_ids, *image_features;
    int position_rank;           /* 2: [B, S]; 3: [3, B, S] (mRoPE) */
    int64_t image_feature_dims[OG_MAX_RANK]; /* the empty tensor fed when there is no image */
    int image_feature_rank;
    og_dtype image_feature_dtype;
    gen_io logits;
    gen_cache *cache;
    int n_cache;
    bool has_state;  /* some cache entry is a STATE */
    bool has_window; /* some KV entry is window-sized */
    bool snapshots;  /* some entry cannot be cut back (a state, a window): prompt chunks keep
                        snapshots and rewind restores them */
    bool compact;    /* attention finds each row's length from the mask (GroupQueryAttention):
                        a row's cache entries are [0, its length); otherwise rows share
                        columns and shorter rows are masked on the left */
    int64_t width_threshold; /* the mask width the builder's LongRoPE If tests
                                (original_max_position_embeddings), or -1 (mask_width.h) */
    /* summary of the KV entries for benchmarks (the first KV entry's shape) */
    gen_kv_layout kv;
    int n_layers;            /* layers that carry KV */
    og_dtype kv_dtype;
    int kv_heads, head_size;
    int vocab_size;
    int32_t *eos_ids;
    int n_eos;
    int32_t pad_id, bos_id;
    int context_length;
    char *text_only;         /* why the package decodes text only; NULL when it is whole */
    /* Images (genai/vision.c): the vision encoder of a Qwen vision-language package
     * (vision.s NULL: images are not taken; vision_why says why when it has a vision
     * graph), its graph names, and the config's values the rope index reads. */
    gen_stage vision;
    const char *vision_pixels, *vision_grid, *vision_features; /* vision_grid: image_sizes
                                for Phi-3-vision */
    bool vision_phi3;        /* Phi-3-vision: pixel_values [images, crops, 3, H, W] with
                                image_sizes; image tokens are negative ids (-k: image k) and
                                positions plain */
    bool vision_gemma3;      /* Gemma 3: pixel_values [images, 3, H, W] alone; image tokens
                                are image_token_id (<image_soft_token>), positions plain */
    int spatial_merge;
    int32_t image_token_id, video_token_id, vision_start_id;
    char vision_why[512];
    char **warnings;         /* the config's warnings, then the model's own */
    int n_warnings;
    struct og_profiler *prof; /* set by og_model_profile_start: times every stage's nodes */
    struct gen_guidance *guidance; /* guidance's vocabulary and grammar cache, made on first
                                      use (genai/guidance.c) */
    /* An encoder-decoder package (model.type "whisper"): the encoder, run once per request
     * on the features the caller sets (og_generator_set_model_input, genai/encoder.c), and
     * the decoder inputs fed from its outputs unchanged at every step: decoder input
     * cross_in[i] takes encoder output cross_out[i]. NULL / 0 for a decoder-only model. */
    gen_stage *encoder;
    const char *encoder_features; /* the encoder's features input (audio_features) */
    og_dtype encoder_features_dtype;
    int64_t encoder_mels;         /* its features' bins (dims[1]), 0 when symbolic */
    char **cross_in, **cross_out;
    int n_cross;
    og_model *draft;         /* the package's model.draft block opened as a model of its
                                own (onnxruntime-genai's draft-model speculation; the
                                generator's default draft), NULL when there is none */
    /* Multi-token prediction (genai/mtp.c): the package's model.mtp block (the builder's
     * mtp.onnx) opened as a model of its own, NULL when there is none; hidden_out is the
     * output of hidden states a head reads (the decoder's model.mtp.main_hidden_states,
     * the head's own outputs.hidden_states for chained drafts; NULL: none), hidden_size
     * and hidden_dtype its last axis and dtype. */
    og_model *mtp;
    const char *hidden_out;
    int hidden_size;
    og_dtype hidden_dtype;
};

/* Bytes of KV per cached position, all KV layers, batch 1. */
/* With a requested KV storage (og_model_options.kv_dtype; OG_UNDEFINED: none), every KV
 * cache the model found holds it (the sessions retyped them), else an error naming one. */
og_status *gen_model_check_kv_dtype(const og_model *m, og_dtype want);
double gen_model_kv_bytes_per_position(const og_model *m);

/* The execution plans the model's sessions cache (og_model_plan_stats, whose sums these
 * are; zeros for sessions on onnxruntime). */
typedef og_plan_stats gen_plan_mem;
void gen_model_plan_mem(const og_model *m, gen_plan_mem *out);

#endif
