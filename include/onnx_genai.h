/*
 * onnx_genai.h — the public C API of onnx-genai.
 *
 * Conventions, for every function in this header:
 *   - A function that can fail returns `og_status *`. NULL means success; a non-NULL
 *     status carries a code and a message and is owned by the caller, who frees it with
 *     og_status_free(). Nothing in this library aborts the process on bad input.
 *   - Every constructor names its destructor. Passing NULL to a destructor is a no-op.
 *   - Output parameters are written only on success. Who owns what they point to is
 *     stated at each function.
 *   - Option structs carry `struct_size` so that they can grow: fill them from the
 *     matching *_default() function, then change fields.
 */
#ifndef ONNX_GENAI_H
#define ONNX_GENAI_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------------------------
 * Status
 * --------------------------------------------------------------------------------- */

typedef enum og_code {
    OG_OK = 0,
    OG_ERR_INVALID_ARGUMENT = 1, /* the caller passed something wrong */
    OG_ERR_INVALID_MODEL = 2,    /* a model file or config is malformed */
    OG_ERR_NOT_FOUND = 3,        /* a file, input or output name does not exist */
    OG_ERR_IO = 4,               /* reading or writing a file failed */
    OG_ERR_UNSUPPORTED = 5,      /* valid ONNX, but an op / dtype / attribute we do not implement */
    OG_ERR_OUT_OF_MEMORY = 6,
    OG_ERR_RUNTIME = 7,          /* anything else that went wrong while running */
    OG_ERR_INCOMPLETE_MODEL = 8  /* a package lacks a piece it needs to run: a graph file it
                                    names, or a graph input nothing in it can feed. (A package
                                    whose vision/audio part cannot be used is not incomplete:
                                    it opens for text only, see og_model_text_only.) */
} og_code;

typedef struct og_status og_status;

/* The code of a status; OG_OK for NULL. */
og_code og_status_code(const og_status *status);
/* The message of a status ("" for NULL). Owned by the status. */
const char *og_status_message(const og_status *status);
/* Frees a status. NULL is a no-op. */
void og_status_free(og_status *status);
/* A short name for a code ("invalid model", ...). Static storage. */
const char *og_code_name(og_code code);

/* ---------------------------------------------------------------------------------
 * Data types (the values are ONNX's TensorProto.DataType numbers)
 * --------------------------------------------------------------------------------- */

typedef enum og_dtype {
    OG_UNDEFINED = 0,
    OG_FLOAT32 = 1,
    OG_UINT8 = 2,
    OG_INT8 = 3,
    OG_UINT16 = 4,
    OG_INT16 = 5,
    OG_INT32 = 6,
    OG_INT64 = 7,
    OG_STRING = 8,
    OG_BOOL = 9,
    OG_FLOAT16 = 10,
    OG_FLOAT64 = 11,
    OG_UINT32 = 12,
    OG_UINT64 = 13,
    OG_COMPLEX64 = 14,
    OG_COMPLEX128 = 15,
    OG_BFLOAT16 = 16,
    OG_FLOAT8E4M3FN = 17,
    OG_FLOAT8E4M3FNUZ = 18,
    OG_FLOAT8E5M2 = 19,
    OG_FLOAT8E5M2FNUZ = 20,
    OG_UINT4 = 21, /* two elements per byte, the first in the low nibble */
    OG_INT4 = 22,  /* two elements per byte, the first in the low nibble */
    OG_FLOAT4E2M1 = 23,
    OG_DTYPE_COUNT
} og_dtype;

/* "float32", "int4", ...; "unknown" for values outside the enum. Static storage. */
const char *og_dtype_name(og_dtype dtype);
/* Bits per element (4 for the packed types, 0 for string/unknown). */
int og_dtype_bits(og_dtype dtype);

/* The largest rank a tensor may have. */
#define OG_MAX_RANK 8

/* ---------------------------------------------------------------------------------
 * Tensors
 * --------------------------------------------------------------------------------- */

typedef struct og_tensor og_tensor;

/* A tensor that owns zero-filled memory for dims[0..rank). Free with og_tensor_free. */
og_status *og_tensor_create(og_dtype dtype, const int64_t *dims, int rank, og_tensor **out);
/* A tensor over caller memory: `data` (nbytes long, which must equal the size that
 * dtype and dims imply) is not copied and must outlive the tensor. og_tensor_free frees
 * only the handle. */
og_status *og_tensor_wrap(og_dtype dtype, const int64_t *dims, int rank, void *data,
                          size_t nbytes, og_tensor **out);
/* Frees the handle and, if the tensor owns it, its memory. NULL is a no-op. */
void og_tensor_free(og_tensor *tensor);

og_dtype og_tensor_dtype(const og_tensor *tensor);
int og_tensor_rank(const og_tensor *tensor);
/* rank entries, owned by the tensor. */
const int64_t *og_tensor_dims(const og_tensor *tensor);
int64_t og_tensor_element_count(const og_tensor *tensor);
size_t og_tensor_size_bytes(const og_tensor *tensor);
/* The element bytes, owned by the tensor (or the caller, for a wrapped tensor). */
void *og_tensor_data(og_tensor *tensor);

/* String tensors (OG_STRING). Each element is an og_string: `size` bytes at `data`, not
 * NUL-terminated, any bytes (ONNX strings are UTF-8 by convention; nothing checks it);
 * `data` may be NULL when `size` is 0. og_tensor_data() of a string tensor is its
 * og_string array and og_tensor_size_bytes() that array's size.
 *  - og_tensor_create(OG_STRING, ...) gives empty strings;
 *  - og_tensor_create_strings copies the strings into the tensor, which then owns one
 *    block holding the array and the bytes;
 *  - og_tensor_wrap(OG_STRING, ...) takes the caller's og_string array as is: the array
 *    and the bytes it points to must outlive the tensor;
 *  - string outputs of og_session_run are always new tensors that own their bytes (a
 *    caller-given output tensor is refused for a string output). */
typedef struct og_string {
    const char *data;
    size_t size;
} og_string;

/* A string tensor of dims[0..rank) holding copies of strings[0..element count). */
og_status *og_tensor_create_strings(const int64_t *dims, int rank, const og_string *strings,
                                    og_tensor **out);

/* ---------------------------------------------------------------------------------
 * Sessions: one ONNX graph, run by a backend
 * --------------------------------------------------------------------------------- */

typedef struct og_session og_session;

/* What runs a graph. The library needs no onnxruntime to build or to run natively: the
 * onnxruntime backend loads libonnxruntime.so when a session asks for it. */
typedef enum og_backend {
    OG_BACKEND_AUTO = 0,   /* native when it has a kernel for every node (subgraphs
                              included); otherwise onnxruntime, with a warning naming the
                              ops (og_session_warning); without a usable onnxruntime, the
                              native error naming the op */
    OG_BACKEND_NATIVE = 1, /* this library's own CPU executor */
    OG_BACKEND_ORT = 2     /* onnxruntime through its C API */
} og_backend;

typedef struct og_session_options {
    size_t struct_size; /* sizeof(og_session_options), set by og_session_options_default */
    int num_threads;    /* 0: one per online CPU core */
    og_backend backend; /* OG_BACKEND_AUTO */
    /* onnxruntime only (ignored by the native backend): */
    const char *ort_library; /* the libonnxruntime.so to load; NULL: $OG_ORT_LIB, else the
                                one in the onnxruntime Python package's capi/ folder
                                (python3 on PATH finds it) */
    const char *ort_provider; /* execution provider: NULL or "cpu", or "cuda"; one the
                                 loaded library lacks is an error naming those it has.
                                 A device provider ("cuda") is onnxruntime's: with
                                 OG_BACKEND_AUTO it selects onnxruntime, with
                                 OG_BACKEND_NATIVE it is an error */
    int graph_optimization_level; /* -1: onnxruntime's default (all); 0 none, 1 basic,
                                     2 extended, 99 all */
    /* native only: the most bytes the session keeps in cached execution plans between
     * runs. The executor makes a plan per input-shape class (its buffer offsets and one
     * arena holding the intermediate values of a run of that class) and reuses it for
     * later runs of the class; at most 16 per graph are cached, and beyond this many
     * bytes the least recently used go (a later run of that class records a new one,
     * allocating its intermediates on the heap once). The plan a run uses is never
     * evicted during it; a plan larger than the budget alone still runs and is dropped
     * when its run ends. Default OG_PLAN_MEMORY_DEFAULT; SIZE_MAX: bounded by count
     * only; 0: no plan is kept between runs. */
    size_t plan_memory;
    /* native only: how GroupQueryAttention's past/present caches are stored, whatever the
     * graph declares: OG_UNDEFINED (0) as declared; OG_FLOAT32, OG_FLOAT16, OG_BFLOAT16;
     * OG_INT8 or OG_FLOAT8E4M3FN, quantized per position and kv head when written (a
     * float32 scale after each row's codes, so their inputs and outputs are int8 /
     * float8 with a last dimension of head_size + 4). The session then describes those
     * inputs and outputs so. A graph whose caches cannot be stored so is an error naming
     * the cache; with OG_BACKEND_AUTO the session runs natively (onnxruntime is refused). */
    og_dtype kv_dtype;
} og_session_options;

#define OG_PLAN_MEMORY_DEFAULT ((size_t)64 << 20)

og_session_options og_session_options_default(void);

/* Opens an .onnx file. External-data files are looked up relative to its folder. The
 * file and its external data are memory-mapped; weights are not copied. `options` may
 * be NULL for defaults. Free with og_session_close. */
og_status *og_session_open(const char *path, const og_session_options *options,
                           og_session **out);
/* Opens a model held in memory. `data` is not copied and must outlive the session.
 * `base_dir` (may be NULL: no external data allowed) locates external-data files. */
og_status *og_session_open_bytes(const void *data, size_t size, const char *base_dir,
                                 const og_session_options *options, og_session **out);
/* Frees a session. NULL is a no-op. */
void og_session_close(og_session *session);

/* A graph input or output as declared. All pointers are owned by the session and live
 * as long as it does. dims[i] is -1 where the dimension is symbolic or unknown, and then
 * dim_names[i] is its symbol (e.g. "batch") or NULL. rank is -1 if unknown. */
typedef struct og_value_info {
    const char *name;
    og_dtype dtype;
    int rank;
    const int64_t *dims;
    const char *const *dim_names;
} og_value_info;

size_t og_session_input_count(const og_session *session);
size_t og_session_output_count(const og_session *session);
og_status *og_session_input_info(const og_session *session, size_t index, og_value_info *out);
og_status *og_session_output_info(const og_session *session, size_t index, og_value_info *out);

/* The backend that runs the session: "native" or "onnxruntime". Static storage. */
const char *og_session_backend(const og_session *session);
/* Why the session runs on the backend it does when that was not the one asked for (auto
 * fell back to onnxruntime: the ops without a native kernel), else "". Owned by the
 * session. */
const char *og_session_warning(const og_session *session);

/* The execution plans a native session caches (og_session_options.plan_memory), its
 * subgraphs' included; all zeros for a session on onnxruntime. The caller sets
 * struct_size = sizeof(og_plan_stats) before the call; the library writes only the
 * fields that fit in that size (so the struct can grow), nothing when it is 0. */
typedef struct og_plan_stats {
    size_t struct_size; /* set by the caller: sizeof(og_plan_stats) */
    size_t bytes;   /* held now: the plans' tables and arenas */
    size_t peak;    /* the most held since the session opened */
    size_t plans;   /* cached now */
    size_t evicted; /* evicted for the byte budget since the session opened */
    size_t budget;  /* the session's plan_memory */
} og_plan_stats;

/* The session's plans as of now (between runs: what the budget left). */
void og_session_plan_stats(const og_session *session, og_plan_stats *out);

/* Runs the graph.
 * Inputs: n_inputs named tensors, borrowed for the call. Every graph input without an
 * initializer must be given; an input that has an initializer may be overridden.
 * Outputs: n_outputs names; for each i, if outputs[i] is non-NULL on entry it is a
 * caller tensor (e.g. from og_tensor_wrap) that must have the output's dtype and shape,
 * and the result is written into its memory; if NULL, a new tensor owned by the caller
 * (free with og_tensor_free) is stored there. On failure no new tensor is returned. */
og_status *og_session_run(og_session *session, const char *const *input_names,
                          og_tensor *const *inputs, size_t n_inputs,
                          const char *const *output_names, og_tensor **outputs,
                          size_t n_outputs);

/* Some rows of one output. A row is one position of every axis but the last: an output
 * [d0, .., dk, X] (rank >= 2) has d0 * .. * dk rows of X values, numbered row-major
 * (logits [batch, sequence, vocab] have batch * sequence rows, row b * sequence + s). */
typedef struct og_output_rows {
    const char *output;   /* the output's name; it must be one the run asks for */
    const int64_t *rows;  /* NULL: the last position of every sequence (along the
                             second-to-last axis): [d0, .., dk-1, S, X] comes back as
                             [d0, .., dk-1, 1, X]. Otherwise n_rows >= 1 flat row indices
                             (any order, repeats allowed): the output comes back as
                             [n_rows, X], row i holding row rows[i] of the full output */
    size_t n_rows;
} og_output_rows;

/* og_session_run, returning only the selected rows of one output (rows may be NULL: a
 * plain run). The values are those rows of the full output: the graph computes only the
 * selected rows from the last point where positions mix (e.g. after a decoder's last
 * attention: the last layer's MLP, the final norm and the lm_head run on the selected
 * rows only) with the same kernels, so a caller that needs the last position's logits
 * of a long prompt saves the lm_head's arithmetic and the [batch, sequence, vocab]
 * tensor. Every other output is whole. A caller tensor for the selected output must have
 * the selected shape. */
og_status *og_session_run_rows(og_session *session, const char *const *input_names,
                               og_tensor *const *inputs, size_t n_inputs,
                               const char *const *output_names, og_tensor **outputs,
                               size_t n_outputs, const og_output_rows *rows);


/* ---------------------------------------------------------------------------------
 * Model packages and generation
 *
 * A package is a folder as onnxruntime-genai reads it: genai_config.json, the decoder
 * graph(s), tokenizer.json. A generator holds the state of one generation (sequences,
 * KV cache, attention mask, positions) and is driven one token at a time:
 *
 *     og_generator_append_tokens(g, prompt, n);     // runs the prompt (prefill)
 *     while (!og_generator_is_done(g))
 *         og_generator_generate_next_token(g);      // one decode step + choice
 *     og_generator_get_sequence(g, 0, &ids, &len);
 * --------------------------------------------------------------------------------- */

typedef struct og_model og_model;
typedef struct og_generator og_generator;

typedef struct og_model_options {
    size_t struct_size; /* sizeof(og_model_options) */
    int num_threads;    /* 0: one per online core (the config's intra_op_num_threads wins
                           when set and this is 0) */
    int allow_text_only; /* 1 (default): a vision/audio package whose image or audio side
                            cannot be used opens for text decoding, with a warning and
                            og_model_text_only() saying why; 0: such a package is refused
                            with OG_ERR_UNSUPPORTED */
    /* The backend of every session, as og_session_options: with OG_BACKEND_AUTO the whole
     * model runs natively when every node of every session has a native kernel, else on
     * onnxruntime with a warning (og_model_warning) naming the ops. */
    og_backend backend;
    const char *ort_library;
    const char *ort_provider;
    int graph_optimization_level; /* -1: the config's session_options, else onnxruntime's */
    size_t plan_memory; /* each session's og_session_options.plan_memory
                           (OG_PLAN_MEMORY_DEFAULT) */
    /* The KV cache's storage (og_session_options.kv_dtype): OG_UNDEFINED as the package
     * declares, else every KV cache of the model in that dtype (OG_INT8 and
     * OG_FLOAT8E4M3FN: about a quarter of float32's bytes). A package whose KV caches are
     * not all GroupQueryAttention's fails to open with that option, naming the cache. */
    og_dtype kv_dtype;
} og_model_options;

og_model_options og_model_options_default(void);

/* A package's genai_config.json held in memory, to be changed before the model opens
 * (onnxruntime-genai's OgaConfig): overlays of JSON, and the execution providers.
 * Free with og_config_free. */
typedef struct og_config og_config;

/* Reads DIR/genai_config.json (DIR may also name the file itself) and checks it as
 * og_model_open does. */
og_status *og_config_open(const char *dir, og_config **out);
void og_config_free(og_config *config);
/* Merges a JSON object into the config: an object merges into the object of the same key
 * (recursively), any other value replaces the key's value (arrays whole), e.g.
 * {"search": {"max_length": 64}} or {"model": {"eos_token_id": [2, 7]}}. The result is
 * checked as a whole; on failure the config is unchanged. */
og_status *og_config_overlay(og_config *config, const char *json);
/* Execution providers. The config's provider_options are never read: clearing them
 * (onnxruntime-genai's way to ask for the CPU) selects the CPU, and "cpu" (any case) may
 * be appended, changing nothing. "cuda" (any case) is onnxruntime's CUDA provider:
 * og_model_open_config passes it to every session as og_model_options.ort_provider
 * (unless the options name a provider), so the model runs on onnxruntime under
 * OG_BACKEND_AUTO and fails to open under OG_BACKEND_NATIVE, and an onnxruntime without
 * CUDA is an error naming the providers it has. Any other provider, and any provider
 * option, is OG_ERR_UNSUPPORTED naming it. */
/* A token id under model.<key>, as og_model_token_id; and every id of model.eos_token_id
 * (an id or a list), *ids owned by the config and valid until its next change. */
int32_t og_config_token_id(const og_config *config, const char *key);
size_t og_config_eos_token_ids(const og_config *config, const int32_t **ids);
og_status *og_config_clear_providers(og_config *config);
og_status *og_config_append_provider(og_config *config, const char *provider);
og_status *og_config_set_provider_option(og_config *config, const char *provider,
                                         const char *key, const char *value);
/* Opens the package the config describes, as og_model_open opens its folder (the graphs
 * and tokenizer are found beside the config's file). The config may be freed after. */
og_status *og_model_open_config(const og_config *config, const og_model_options *options,
                                 og_model **out);

/* Opens a package folder. Free with og_model_close. Fails with OG_ERR_INCOMPLETE_MODEL
 * when the package lacks a piece (a graph file, a graph input nothing can feed), with
 * OG_ERR_UNSUPPORTED when it needs something this runtime does not implement (an op, a
 * model type, a graph input kind), naming it. */
og_status *og_model_open(const char *dir, const og_model_options *options, og_model **out);
void og_model_close(og_model *model);
/* The backend the model's sessions run on: "native" or "onnxruntime". */
const char *og_model_backend(const og_model *model);
/* The config's model.type ("gpt2", "qwen2", ...). Owned by the model. */
const char *og_model_type(const og_model *model);
int og_model_vocab_size(const og_model *model);
/* model.pad_token_id: the id that right-pads shorter prompts of a batch given to
 * og_generator_append_tokens. */
int32_t og_model_pad_token_id(const og_model *model);
/* 1 when the package was opened for text decoding only: it is a vision (or audio)
 * package whose image/audio side this runtime cannot use (e.g. its processor config
 * resizes with smart_resize, which cannot be represented yet). *reason (may be NULL)
 * gets the sentence saying why, owned by the model ("" when 0). The same sentence is
 * among the warnings. */
int og_model_text_only(const og_model *model, const char **reason);
/* A token id genai_config.json gives under model.<key>: "bos_token_id", "eos_token_id"
 * (the first), "pad_token_id", and for chat "bot_token_id" / "eot_token_id" (a tool
 * call's start and end) and "bor_token_id" / "eor_token_id" (reasoning's start and end).
 * -1 when the config has none. */
int32_t og_model_token_id(const og_model *model, const char *key);
/* Every id of model.eos_token_id (an id or a list), in order; *ids owned by the model. */
size_t og_model_eos_token_ids(const og_model *model, const int32_t **ids);
/* Warnings about genai_config.json (unknown keys, odd values), one sentence each naming
 * the key path. Owned by the model. */
size_t og_model_warning_count(const og_model *model);
const char *og_model_warning(const og_model *model, size_t index);
/* The plans the model's sessions cache (og_session_plan_stats), summed over its sessions:
 * bytes, peak, plans and evicted are sums, budget is each session's plan_memory. */
void og_model_plan_stats(const og_model *model, og_plan_stats *out);

/* Profiling. From og_model_profile_start on, every node run of every stage of the model
 * is timed (op, node, input and output shapes, thread) and every graph run is one
 * enclosing slice. og_model_profile_write writes what was recorded as a Chrome/Perfetto
 * trace (JSON; open it in https://ui.perfetto.dev or chrome://tracing) and stops
 * profiling. Costs two clock reads per node while on, nothing when off. */
og_status *og_model_profile_start(og_model *model);
og_status *og_model_profile_write(og_model *model, const char *path);

/* Search options. Fill with og_generator_params_default(model), which takes the
 * package's search block (and onnxruntime-genai's defaults where it is silent). */
typedef struct og_generator_params {
    size_t struct_size;
    int batch_size;
    int max_length;          /* total tokens per sequence, prompt included */
    int min_length;          /* EOS is blocked while shorter */
    int do_sample;
    int top_k;               /* sampling: keep the k most likely (0: all) */
    float top_p;             /* sampling: keep the smallest set reaching p (1: all) */
    float temperature;
    float repetition_penalty;
    int no_repeat_ngram_size;
    int num_beams;
    int num_return_sequences;
    float length_penalty;
    int early_stopping;
    int64_t random_seed;     /* -1: seed from the clock */
    int padded_batch;        /* 0 (default): each row of a batch is its own sequence (see
                                og_generator_append_tokens). 1: rows are laid out as
                                onnxruntime-genai lays out a batch, with the same tokens
                                chosen: a row's padding counts toward max_length and is
                                part of its sequence (after the prompt), a row that stops
                                on EOS while others go on keeps the EOS and then gets a
                                pad token per step, so all rows have one length. */
    int all_logits;          /* 1 (default): every run computes the logits of every new
                                position, as onnxruntime-genai does, so that
                                og_generator_get_output("logits") after a prompt is
                                [batch, prompt tokens, vocab]. 0: only the last position of
                                each row is computed (og_session_run_rows): the same tokens
                                with less arithmetic and memory for prompts (the rows after
                                the last attention, the final norm and the lm_head run on
                                one position; a 512-token prompt of a 0.5B model needs a
                                [1, 1, vocab] tensor instead of 311 MB), and get_output
                                ("logits") is then [batch, 1, vocab] */
    /* Set through og_generator_params_set_guidance (NULL: no guidance); borrowed. */
    const char *guidance_type;
    const char *guidance_data;
    /* Speculative decoding by prompt lookup or a draft model, onnxruntime-genai's options
     * (its set_speculative_options names without the prefix). Drafts are verified in one
     * run that gives every position a decode step's bits, and each token is still chosen
     * as a plain step chooses it, so the output (greedy, or sampled with a seed) is plain
     * decoding's, token for token; only the speed changes. Applies to batch_size 1
     * without beams (models with conv/recurrent state included); elsewhere the options
     * are accepted and decoding is plain. og_generator_get_speculative_stats says what
     * happened. */
    int speculative_ngram_size;        /* 0 (default): off. 2..16: a draft continues the
                                          latest earlier occurrence of the last
                                          ngram_size - 1 tokens (prompt and output) */
    int speculative_max_draft_tokens;  /* 1..16 (default 4): the most drafted tokens one
                                          verification checks */
    int speculative_ngram_chained_lookup; /* 1: a draft that reaches the end of the
                                          sequence goes on by looking up its own end */
    int speculative_min_adaptive_k;    /* 0..16 (default 0). >0: verifications check at
                                          least this many tokens (when the draft has them) */
    int speculative_cooldown;          /* accepted for onnxruntime-genai's option; the cost
                                          model below already steps plainly while drafts
                                          fail */
    og_model *speculative_draft_model; /* NULL (default). A draft model: a second package
                                          with the same tokenizer, run greedily by the
                                          generator to draft (its cache kept in step with
                                          the accepted tokens); not with ngram_size.
                                          Borrowed: it must outlive the generator */
    int speculative_fixed_k;           /* 0 (default): a cost model (measured run times and
                                          the running acceptance rate) picks how many
                                          drafted tokens to verify, none when verifying
                                          would be slower than a plain step. 1: always
                                          max_draft_tokens (onnxruntime-genai's fixed K) */
    int speculative_mtp;               /* 0 (default). 1: the package's MTP head drafts
                                          (model.mtp: the mtp.onnx onnxruntime-genai's
                                          builder exports, what its MtpGenerator runs):
                                          greedy drafts chained through the head's own
                                          hidden state. Not with ngram_size or a draft
                                          model; a package without a head is refused */
} og_generator_params;

og_generator_params og_generator_params_default(const og_model *model);

/* Constrained decoding (structured output): every generated sequence is a string of the
 * language `data` describes, as onnxruntime-genai's SetGuidance has it. `type` is one of
 *   "json_schema"   data is a JSON Schema; the output is JSON valid against it
 *   "json_object"   the output is any JSON object (data ignored, may be NULL)
 *   "regex"         data is a regular expression the whole output matches
 *   "lark_grammar"  data is a Lark grammar (its start rule)
 * An unknown type is OG_ERR_INVALID_ARGUMENT naming the four; NULL clears the guidance.
 * Both strings are BORROWED: they must stay valid until og_generator_create, which
 * compiles them (a bad schema, regex or grammar is its OG_ERR_INVALID_ARGUMENT, with the
 * place named, before any token is generated; compiled grammars are cached per model)
 * and keeps no pointer to them.
 *
 * At each step the tokens the grammar does not allow get -inf logits before min_length,
 * the repetition penalty, n-gram blocking and the choice (greedy or sampling: before
 * top-k / top-p / temperature), and the chosen token advances the row's matcher (one per
 * batch row). The model's EOS ids are allowed only where the output is complete; once
 * nothing but EOS can follow, EOS is chosen (the row ends as on EOS; without an EOS id
 * inside the vocabulary the row ends on the grammar's last token); max_length cuts a
 * row as it does unguided. Where the grammar allows only EOS, it wins over min_length;
 * n-gram blocking that would leave no allowed token is not applied at that step.
 * og_generator_rewind_to rolls the matchers back with the sequence, and tokens appended
 * after generation start a new guided output (as a new turn). The output under guidance
 * is what follows the prompt; prompt tokens are not matched. Beam search (num_beams > 1)
 * with guidance is OG_ERR_UNSUPPORTED. The package's tokenizer gives the tokens' bytes
 * (its special tokens are never chosen under guidance). */
og_status *og_generator_params_set_guidance(og_generator_params *params, const char *type,
                                            const char *data);

/* What speculative decoding did in a generator (og_generator_params' speculative_*
 * fields). A verification runs the pending token and `drafted` tokens of a draft once and
 * keeps the drafted tokens the target agrees with, plus one token of its own. */
typedef struct og_speculative_stats {
    size_t struct_size;
    int enabled;           /* speculation applies to this generator */
    int64_t verifications; /* target runs that checked a draft */
    int64_t drafted;       /* drafted tokens they checked */
    int64_t accepted;      /* of which the target agreed with */
    int64_t emitted;       /* tokens the verifications decided */
    int64_t plain_steps;   /* one-token steps (no draft, or the cost model chose none) */
    double acceptance;     /* the cost model's running estimate of a draft token's
                              acceptance */
} og_speculative_stats;
og_status *og_generator_get_speculative_stats(const og_generator *gen, og_speculative_stats *out);

/* Free with og_generator_destroy. */
og_status *og_generator_create(og_model *model, const og_generator_params *params,
                               og_generator **out);
void og_generator_destroy(og_generator *gen);

/* Appends tokens to every sequence and runs them through the model. For batch_size 1,
 * ids holds n tokens. For batch_size B > 1, ids holds B rows of n / B tokens each
 * (row-major), shorter prompts right-padded with the model's pad token: a row's trailing
 * pad tokens are padding, as onnxruntime-genai reads such a batch (any other token,
 * leading pad tokens too, is part of the prompt). With B > 1 this may be called only
 * while the sequences are empty.
 *
 * Every row of a batch gives exactly the tokens its prompt gives alone: padding never
 * reaches the model (prompts of different lengths are run row by row, then decoded
 * together). Sequences keep their own lengths: og_generator_get_sequence returns a
 * row's prompt without padding, then its generated tokens. */
og_status *og_generator_append_tokens(og_generator *gen, const int32_t *ids, size_t n);
/* A request's inputs by name, as onnxruntime-genai's Generator.set_inputs: "input_ids"
 * (int32 or int64 [1, n], the prompt with each image's tokens expanded) and, for a Qwen
 * vision-language package (qwen2_5_vl, qwen3_vl, qwen3_5 whose og_model_text_only is 0),
 * "pixel_values" and "image_grid_thw" as og_image_processor_process gives them
 * ("num_image_tokens" is accepted and not needed). The vision encoder runs once on the
 * images (an image repeated in the call once), its features replace the image tokens'
 * embeddings, and positions are mRoPE's 3-D rope index over each image's grid. Then the
 * prompt is appended as og_generator_append_tokens appends it. A Phi-3-vision package
 * (phi3v) takes "pixel_values" and "image_sizes" instead: image k's tokens are the
 * prompt's ids -k (as its processor writes them) and positions are plain. batch_size 1,
 * an empty generator; images not with beam search. The tensors are borrowed for the call. */
og_status *og_generator_set_inputs(og_generator *gen, const char *const *names,
                                   const og_tensor *const *tensors, size_t count);
/* One model input by name, as onnxruntime-genai's Generator.set_model_input. An
 * encoder-decoder package (model.type "whisper") takes "audio_features" (its encoder's
 * input, float32 [batch_size, mel bins, 3000] as og_audios_whisper_features gives it): the
 * encoder runs once, and its cross-attention keys and values feed every decoder run of
 * this request; then "input_ids" (int32 or int64 [batch_size, n], the decoder prompt:
 * <|startoftranscript|>, language, task, <|notimestamps|>), appended as
 * og_generator_append_tokens appends it (a batch's prompts of one length). Features come
 * into an empty generator (rewind_to(0) starts a new request). og_generator_set_inputs
 * takes the two together for such a package. Other models take "input_ids" only. The
 * tensor is borrowed for the call. */
og_status *og_generator_set_model_input(og_generator *gen, const char *name,
                                        const og_tensor *value);
/* Appends batch_size prompts of any lengths: rows[b] holds lens[b] >= 1 tokens. Only
 * while the sequences are empty (or for batch_size 1, as og_generator_append_tokens). */
og_status *og_generator_append_token_rows(og_generator *gen, const int32_t *const *rows,
                                          const size_t *lens);
/* Runs the model if needed, applies the logits processors and picks the next token of
 * every sequence. */
og_status *og_generator_generate_next_token(og_generator *gen);
/* True once every sequence has hit an EOS id or max_length. A sequence that stops on
 * an EOS id does not include it (as onnxruntime-genai returns a lone sequence), and a
 * sequence that stopped gets no further tokens while its batch-mates go on. */
int og_generator_is_done(const og_generator *gen);
/* Sequence `index` (< batch_size * num_return_sequences once done with beam search;
 * else < batch_size). *ids is owned by the generator and valid until its next call. */
og_status *og_generator_get_sequence(const og_generator *gen, size_t index,
                                     const int32_t **ids, size_t *len);
/* The tokens the last og_generator_generate_next_token chose, one per sequence
 * (batch_size * num_beams; with beam search the beams' tokens after reordering), as
 * onnxruntime-genai's GetNextTokens gives them: the EOS id a sequence stopped on is
 * included, and a sequence that had stopped before that call gets the pad token. *ids is
 * owned by the generator and valid until its next call. OG_ERR_INVALID_ARGUMENT before a
 * token is generated, and after tokens are appended or the sequences rewound. */
og_status *og_generator_get_next_tokens(const og_generator *gen, const int32_t **ids,
                                        size_t *n);
/* Cuts every sequence back to new_length tokens (batch_size 1, or new_length 0);
 * generation may then continue or more tokens be appended. Models that carry a state
 * (conv / recurrent) restore it from the latest snapshot at or before new_length - 1
 * (one is taken before the last token of every appended prompt, and the empty state
 * always exists) and run the tokens after it again. */
og_status *og_generator_rewind_to(og_generator *gen, size_t new_length);
/* A copy of the logits for the next token, [batch*beams, vocab] float32 (computed first
 * if needed). The caller frees *out with og_tensor_free. */
og_status *og_generator_get_logits(og_generator *gen, og_tensor **out);
/* A copy of an output of the last model run, by graph name: the logits (e.g. "logits",
 * [batch, new_tokens, vocab]; [batch, 1, vocab] after a prompt when the generator was made
 * with all_logits = 0) or a present key/value output (the KV cache as it stands:
 * [.., tokens so far, ..], or the whole max_length buffer when past and present share
 * it). The caller frees *out with og_tensor_free. */
og_status *og_generator_get_output(og_generator *gen, const char *name, og_tensor **out);


/* ---------------------------------------------------------------------------------
 * LoRA adapters (onnxruntime-genai's Adapters)
 *
 * An adapter-ready package declares the LoRA weights as graph inputs that carry a default
 * (initializers listed among the graph inputs: with the defaults, e.g. a LoRA rank of 0,
 * the model is the base model). An adapter is an `.onnx_adapter` file (onnxruntime's
 * adapter format, written by onnxruntime.AdapterFormat or Olive) whose parameters are
 * tensors of those inputs' names; a generator with the adapter active feeds them in place
 * of the defaults.
 * --------------------------------------------------------------------------------- */

typedef struct og_adapters og_adapters;

/* An empty container of adapters for `model`, which must outlive it. Free with
 * og_adapters_free. The container is reference-counted: generators using one of its
 * adapters keep it alive, so it and they may be freed in any order. */
og_status *og_adapters_create(og_model *model, og_adapters **out);
/* Drops the caller's reference. NULL is a no-op. */
void og_adapters_free(og_adapters *adapters);
/* Loads an .onnx_adapter file under `name` (copied). Every parameter must name a graph
 * input of the model that has a default, with the same dtype and a shape the input admits;
 * otherwise OG_ERR_INVALID_ARGUMENT naming the parameter (an adapter for another base
 * model). A malformed file is OG_ERR_INVALID_MODEL naming the file and what was read. The
 * file is memory-mapped while the adapter is loaded. */
og_status *og_adapters_load(og_adapters *adapters, const char *path, const char *name);
/* Unloads adapter `name`; OG_ERR_INVALID_ARGUMENT while a generator has it active. */
og_status *og_adapters_unload(og_adapters *adapters, const char *name);
/* Makes adapter `name` of `adapters` active in `gen` from its next model run on, until the
 * generator is destroyed. Several may be active when their parameters do not overlap
 * (at most 8); a generator takes adapters from one container only. Inputs no active
 * adapter sets get the graph's defaults. */
og_status *og_generator_set_active_adapter(og_generator *gen, og_adapters *adapters,
                                           const char *name);

/* ---------------------------------------------------------------------------------
 * Tokenizers (tokenizer.json, BPE in byte-level and SentencePiece style)
 * --------------------------------------------------------------------------------- */

typedef struct og_tokenizer og_tokenizer;
typedef struct og_tokenizer_stream og_tokenizer_stream;

/* Loads the tokenizer of a package (tokenizer.json and tokenizer_config.json in its
 * folder). Free with og_tokenizer_free. */
og_status *og_tokenizer_create(const og_model *model, og_tokenizer **out);
/* Loads a tokenizer from a folder or a tokenizer.json path. */
og_status *og_tokenizer_open(const char *path, og_tokenizer **out);
void og_tokenizer_free(og_tokenizer *tok);

/* Text (UTF-8, len bytes) -> ids, with the post-processor's special tokens (e.g. BOS)
 * when add_special_tokens is non-zero. *ids is owned by the caller: free with og_free. */
og_status *og_tokenizer_encode(const og_tokenizer *tok, const char *text, size_t len,
                               int add_special_tokens, int32_t **ids, size_t *n);
/* Ids -> text, NUL-terminated. *text is owned by the caller: free with og_free. */
og_status *og_tokenizer_decode(const og_tokenizer *tok, const int32_t *ids, size_t n,
                               int skip_special_tokens, char **text);
/* As og_tokenizer_decode, and *len gets the text's length in bytes (without the final
 * NUL): the text may hold NUL characters (a token of the byte 0), which only the length
 * tells from its end. */
og_status *og_tokenizer_decode_len(const og_tokenizer *tok, const int32_t *ids, size_t n,
                                   int skip_special_tokens, char **text, size_t *len);
/* The id of a token given by its text (a vocabulary entry as tokenizer.json spells it, or
 * an added token such as "<|im_end|>"); -1 when the tokenizer has no such token. */
int32_t og_tokenizer_token_to_id(const og_tokenizer *tok, const char *token);
/* Frees memory that this API handed to the caller (ids, text). NULL is a no-op. */
void og_free(void *p);

/* Streaming decode: feed generated ids one at a time; each call yields only complete
 * text (never a broken UTF-8 sequence). Free with og_tokenizer_stream_free. The stream
 * borrows tok, which must outlive it. */
og_status *og_tokenizer_stream_create(const og_tokenizer *tok, og_tokenizer_stream **out);
/* Sets the ids that the next ones continue (the prompt; n = 0 for none) and drops what
 * the stream held back. Each piece is then the text the new ids add to the decode of the
 * context, as decode(context + generated) has it beyond decode(context): with a
 * SentencePiece-style tokenizer the first piece keeps its leading space ("Tom" then
 * " and"), where a stream without context decodes its first id as the start of a text
 * ("and"). Use it whenever the generated text is shown after the prompt. */
og_status *og_tokenizer_stream_set_context(og_tokenizer_stream *s, const int32_t *ids,
                                           size_t n);
/* *piece is owned by the stream and valid until its next call. */
og_status *og_tokenizer_stream_decode(og_tokenizer_stream *s, int32_t id, const char **piece);
/* Whatever is still held back at the end of generation. */
og_status *og_tokenizer_stream_flush(og_tokenizer_stream *s, const char **piece);
/* As the two above, with the piece's length in bytes (it may hold NUL characters). */
og_status *og_tokenizer_stream_decode_len(og_tokenizer_stream *s, int32_t id,
                                          const char **piece, size_t *len);
og_status *og_tokenizer_stream_flush_len(og_tokenizer_stream *s, const char **piece,
                                         size_t *len);
void og_tokenizer_stream_free(og_tokenizer_stream *s);

/* ---------------------------------------------------------------------------------
 * Chat templates: the Jinja program a model ships to turn a conversation into its
 * prompt, rendered byte for byte as Hugging Face transformers' apply_chat_template
 * renders it (jinja2's sandbox with trim_blocks and lstrip_blocks, transformers'
 * globals and tojson).
 *
 *     og_chat_template *ct;
 *     og_chat_template_open("path/to/package", &ct);
 *     og_chat_options o = og_chat_options_default();
 *     o.add_generation_prompt = 1;
 *     char *prompt;
 *     og_chat_template_apply(ct, "[{\"role\": \"user\", \"content\": \"Hi\"}]", &o, &prompt);
 *     ... og_free(prompt); og_chat_template_free(ct);
 *
 * Errors: a template with a syntax error is OG_ERR_INVALID_MODEL (reported when that
 * template is applied); a construct the engine does not implement OG_ERR_UNSUPPORTED,
 * naming it and its line; the template's own raise_exception() (e.g. "System role not
 * supported") OG_ERR_INVALID_ARGUMENT; bad JSON OG_ERR_INVALID_ARGUMENT; anything else
 * the template does wrong at render time (Python's TypeError, UndefinedError, a limit)
 * OG_ERR_RUNTIME. Rendering is bounded (output 32 MiB, 10 million loop iterations,
 * 128 nested macro calls) and reaches no file or environment variable except
 * CHAT_TEMPLATE_NOW (YYYY-MM-DDTHH:MM:SS), which fixes what strftime_now() sees.
 * --------------------------------------------------------------------------------- */

typedef struct og_chat_template og_chat_template;

/* Loads the chat template(s) of path:
 *   - a package folder: chat_template.jinja, else tokenizer_config.json "chat_template"
 *     (a string, or a list of {"name", "template"}), else chat_template.json; plus
 *     additional_chat_templates/NAME.jinja as named templates;
 *   - a tokenizer_config.json (or any .json with "chat_template");
 *   - any other file: its text is the template.
 * The special tokens (bos_token, eos_token, unk_token, sep_token, pad_token, cls_token,
 * mask_token, additional_special_tokens) come from tokenizer_config.json (beside a
 * template file too), as transformers passes them. Free with og_chat_template_free. */
og_status *og_chat_template_open(const char *path, og_chat_template **out);
/* The chat template of an opened package (its folder, as og_chat_template_open). */
og_status *og_chat_template_create(const og_model *model, og_chat_template **out);
/* A template from its text (len bytes, UTF-8), without special tokens. */
og_status *og_chat_template_from_string(const char *source, size_t len, og_chat_template **out);
void og_chat_template_free(og_chat_template *t);

/* Sets the variable `name` (e.g. "bos_token") that every render sees; value NULL removes
 * it. The value is copied. */
og_status *og_chat_template_set_token(og_chat_template *t, const char *name, const char *value);
/* Sets the special-token variables og_chat_template_open reads for path (a package
 * folder's tokenizer_config.json, or that file) on t, replacing those of the same name:
 * e.g. a template from og_chat_template_from_string gets its package's bos_token. A
 * folder without tokenizer_config.json sets nothing. */
og_status *og_chat_template_load_tokens(og_chat_template *t, const char *path);
/* A special-token variable's value, or NULL. Owned by t. */
const char *og_chat_template_token(const og_chat_template *t, const char *name);

/* The templates t holds: their names ("default", "tool_use", ...) and where each came
 * from (a file, or "FILE chat_template['NAME']"). Owned by t; NULL past the end. */
size_t og_chat_template_count(const og_chat_template *t);
const char *og_chat_template_name(const og_chat_template *t, size_t index);
const char *og_chat_template_origin(const og_chat_template *t, size_t index);

typedef struct og_chat_options {
    size_t struct_size;          /* sizeof(og_chat_options), set by og_chat_options_default */
    const char *tools_json;      /* a JSON array of tool schemas, or NULL (tools=None) */
    const char *documents_json;  /* a JSON array of documents, or NULL (documents=None) */
    int add_generation_prompt;   /* end with the assistant's turn header */
    const char *extra_json;      /* a JSON object of more variables, e.g.
                                    {"enable_thinking": false}; NULL for none. They replace
                                    special tokens of the same name. */
    const char *template_name;   /* NULL: transformers' choice ("tool_use" when tools are
                                    given and the package has it, else "default") */
} og_chat_options;

og_chat_options og_chat_options_default(void);

/* Renders messages_json (a JSON array of {"role", "content", ...}: string content or
 * content parts, tool_calls, "tool" messages, reasoning_content) with options (NULL for
 * defaults). Keys whose value is null are dropped and reasoning_content / thinking /
 * reasoning are aliased, as transformers does. *text (NUL-terminated UTF-8) is the
 * caller's: free with og_free. */
og_status *og_chat_template_apply(const og_chat_template *t, const char *messages_json,
                                  const og_chat_options *options, char **text);

/* ---------------------------------------------------------------------------------
 * Audio: WAV files and Whisper's input features
 * --------------------------------------------------------------------------------- */

typedef struct og_audios og_audios;

/* Reads `count` WAV files (RIFF/WAVE: PCM 8/16/24/32-bit or IEEE float 32/64-bit, plain
 * or WAVE_FORMAT_EXTENSIBLE, 1 to 8 channels averaged to mono). A malformed or truncated
 * file is OG_ERR_INVALID_ARGUMENT naming the file and the reason; another format
 * (compressed WAV, MP3, FLAC) OG_ERR_UNSUPPORTED. Free *out with og_audios_free. */
og_status *og_audios_open(const char *const *paths, size_t count, og_audios **out);
/* count WAV files held in memory (data[i], sizes[i] bytes; not kept after the call).
 * Free *out with og_audios_free. */
og_status *og_audios_load(const void *const *data, const size_t *sizes, size_t count,
                         og_audios **out);
/* NULL is a no-op. */
void og_audios_free(og_audios *audios);
size_t og_audios_count(const og_audios *audios);
/* Audio `index`'s mono samples in [-1, 1] at the file's rate (*count samples, *sample_rate
 * Hz; either may be NULL). Owned by audios; NULL past the end. */
const float *og_audios_samples(const og_audios *audios, size_t index, size_t *count,
                               int *sample_rate);

/* Whisper's input_features for every audio: float32 (count, n_mels, 3000), as the Hugging
 * Face WhisperFeatureExtractor computes them (the first 30 s, zero-padded; n_mels 80, or
 * 128 for large-v3). Audio above 16000 Hz is first down-sampled as onnxruntime-genai 0.18
 * does (a Butterworth low-pass, then Kaiser-windowed sinc interpolation); audio below it
 * is OG_ERR_UNSUPPORTED, as there. Free *out with og_tensor_free. */
og_status *og_audios_whisper_features(const og_audios *audios, int n_mels, og_tensor **out);
/* Every audio whole, for Whisper's sequential long-form decoding: not cut to 30 s but
 * zero-padded to the longest audio's length L (at 16 kHz), float32 (count, n_mels, L / 160),
 * as WhisperFeatureExtractor(truncation=False, padding="longest") computes them (the clamp
 * to max - 8 over each whole audio). L must exceed 200. Free *out with og_tensor_free. */
og_status *og_audios_whisper_features_whole(const og_audios *audios, int n_mels,
                                            og_tensor **out);
/* The same for `count` mono samples at 16 kHz into the caller's out[n_mels * 3000]. */
og_status *og_whisper_log_mel(const float *samples, size_t count, int n_mels, float *out);

/* ---------------------------------------------------------------------------------
 * Images: PNG and JPEG files decoded to RGB, and a package's image preprocessing
 * (processor_config.json) turning them into a vision encoder's inputs, computed as
 * onnxruntime-genai 0.18's processors compute them.
 *
 *     og_images *im;            og_images_open(paths, 2, &im);
 *     og_image_processor *p;    og_image_processor_open("path/to/package", &p);
 *     og_named_tensors *nt;     og_image_processor_process(p, im, &nt);
 *     og_tensor *pv = og_named_tensors_find(nt, "pixel_values");
 *     ... og_named_tensors_free(nt); og_image_processor_free(p); og_images_free(im);
 *
 * Errors: a corrupt or truncated file is OG_ERR_INVALID_ARGUMENT naming the file and
 * what the decoder found; a format other than PNG/JPEG (or a CMYK JPEG)
 * OG_ERR_UNSUPPORTED; an image over 16384 pixels a side or 100 million pixels
 * OG_ERR_INVALID_ARGUMENT, refused before its pixels are allocated.
 * --------------------------------------------------------------------------------- */

typedef struct og_images og_images;

/* Reads and decodes paths[0..count). Free with og_images_free. */
og_status *og_images_open(const char *const *paths, size_t count, og_images **out);
/* Decodes count encoded images held in memory (data[i], sizes[i] bytes; not kept). */
og_status *og_images_load(const void *const *data, const size_t *sizes, size_t count,
                          og_images **out);
void og_images_free(og_images *images);
size_t og_images_count(const og_images *images);
/* The decoded pixels of image index: (height, width, 3) bytes, R, G, B. Owned by
 * images; NULL past the end. */
const uint8_t *og_images_pixels(const og_images *images, size_t index, int *width,
                                int *height);

/* Tensors by name, as a processor returns them. */
typedef struct og_named_tensors og_named_tensors;
size_t og_named_tensors_count(const og_named_tensors *t);
/* The name of entry index; NULL past the end. Owned by t. */
const char *og_named_tensors_name(const og_named_tensors *t, size_t index);
/* The tensor of entry index, or the one named `name`; NULL when absent. Owned by t. */
og_tensor *og_named_tensors_at(const og_named_tensors *t, size_t index);
og_tensor *og_named_tensors_find(const og_named_tensors *t, const char *name);
void og_named_tensors_free(og_named_tensors *t);

typedef struct og_image_processor og_image_processor;

/* Reads path: a package folder (the file its genai_config.json names in
 * model.vision.config_filename, else processor_config.json) or a processor_config.json.
 * Ops: DecodeImage, ConvertRGB, Resize (Qwen's smart resize too), Rescale, Normalize,
 * PatchImage (Qwen2.5-VL, Qwen3-VL, Qwen3.5), Phi3ImageTransform (Phi-3-vision) and
 * Permute3D to channels first (Gemma 3); another op is OG_ERR_UNSUPPORTED naming it.
 * Free with og_image_processor_free. */
og_status *og_image_processor_open(const char *path, og_image_processor **out);
void og_image_processor_free(og_image_processor *p);
/* The config's processor name ("qwen2_5_image_processor", ...). Owned by p. */
const char *og_image_processor_name(const og_image_processor *p);
/* Preprocesses every image of images. *out (free with og_named_tensors_free) holds, as
 * onnxruntime-genai names them:
 *  - Qwen (PatchImage): pixel_values float32 (patches of all images, C*2*P*P),
 *    image_grid_thw int64 (images, 3), num_image_tokens int64 (1): all images' merged
 *    tokens. Images of different sizes are concatenated, as the vision encoder reads
 *    them (onnxruntime-genai 0.18 pads every image to the largest one's patches);
 *  - Phi-3-vision: pixel_values float32 (images, 17, 3, 336, 336), image_sizes int64
 *    (images, 2), num_image_tokens int64 (images, 1);
 *  - Gemma 3 (Permute3D): pixel_values float32 (images, 3, height, width).
 * pixel_values is float32 whatever the vision graph takes (onnxruntime-genai casts it to
 * the graph's input type). */
og_status *og_image_processor_process(const og_image_processor *p, const og_images *images,
                                      og_named_tensors **out);

#ifdef __cplusplus
}
#endif

#endif /* ONNX_GENAI_H */
