/* The onnx-genai command-line tool: one file per command. */
#ifndef OG_TOOLS_CLI_H
#define OG_TOOLS_CLI_H

#include "onnx_genai.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

int cli_show(int argc, char **argv);
int cli_infer(int argc, char **argv);
int cli_bench_load(int argc, char **argv);
int cli_bench(int argc, char **argv);
int cli_generate(int argc, char **argv);
int cli_template(int argc, char **argv);
int cli_run(int argc, char **argv);
int cli_serve(int argc, char **argv);
int cli_parity(int argc, char **argv);
int cli_convert(int argc, char **argv);
int cli_pull(int argc, char **argv);
int cli_transcribe(int argc, char **argv);
/* Replaces each -m/--model value that names a hub repository (ORG/NAME[/SUBFOLDER], not a
 * path on disk) with its cached snapshot folder, pulling it first when not cached
 * (cli_model_ref.c); *argv may become a new array. Returns 0, or the exit status after
 * printing what is wrong. */
int cli_models_from_hub(int *argc, char ***argv);
/* The package converted from a GGUF file of the hub cache (a snapshot path), converting
 * it first unless repo_dir/onnx-genai/{its blob's sha256} has it (cli_gguf.c); NULL
 * after printing why not. quiet: no lines about the conversion. */
char *cli_gguf_package(const char *repo_dir, const char *gguf, bool quiet);
/* generate --chat: one turn of `run` (cli_run.c). */
int cli_chat_generate(int argc, char **argv);
/* The chat template part of `show` for a package folder (cli_run.c). */
void cli_show_chat(const char *dir);

/* What kernels prepared when sessions opened (cli_prep.c). */
#include <stddef.h>
typedef struct og_session og_session;
typedef struct og_model og_model;
typedef struct cli_prep {
    size_t bytes;    /* held by prepared states */
    size_t released; /* mapped weight pages given back (a prepared copy replaced them) */
    int nodes;
    double secs;     /* spent preparing (wall) */
    double cpu_secs; /* CPU time of all threads meanwhile */
    const char *cache; /* the pack cache's outcome of the sessions that used one, else "off" */
} cli_prep;
void cli_prep_add(const og_session *s, cli_prep *acc);
void cli_prep_of_model(const og_model *m, cli_prep *out);
/* The instruction set the GEMM kernels use, and why when OG_ISA changed it. */
const char *cli_isa_summary(char *buf, size_t size);

/* --ids: a comma-separated list of token ids into a new array (free with free());
 * returns 0, or the exit status after printing what is wrong (cli_generate.c). */
int cli_parse_ids(const char *s, int32_t **ids, size_t *n);

/* The whole of a file ('-': standard input), NUL-terminated, or NULL. Free with free(). */
char *cli_read_all(const char *path);

/* A decimal integer in [lo, hi], the whole string (cli_args.c). */
bool cli_parse_int(const char *s, long lo, long hi, int *out);
/* An integer option: the message says what is wrong with the value (not a number, not
 * an integer, too large or too small, with the limit); returns 0 or the exit status. */
int cli_int_option(const char *flag, const char *s, long lo, long hi, int *out);

/* Prints "onnx-genai: <message>" to stderr; returns the exit status to use. */
int cli_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* --backend, --ort-lib, --ep, --ort-opt-level, --kv-dtype (cli_backend.c). */
typedef struct cli_backend {
    og_backend backend;
    bool backend_given;
    const char *ort_lib, *ep;
    int opt_level; /* -1: onnxruntime's default */
    og_dtype kv_dtype; /* OG_UNDEFINED: as the package declares */
} cli_backend;
extern const char cli_backend_usage[]; /* the options' lines for a --help text */
void cli_backend_init(cli_backend *b);
/* Takes argv[*i] (and its value, advancing *i) when it is a backend option: returns 1,
 * 0 when it is not one, or minus the exit status after printing what is wrong. */
int cli_backend_arg(int argc, char **argv, int *i, cli_backend *b);
/* After parsing: an exit status when the options contradict each other, else 0. */
int cli_backend_check(const cli_backend *b);
og_backend cli_backend_choice(const cli_backend *b);
void cli_backend_session(const cli_backend *b, og_session_options *o);
void cli_backend_model(const cli_backend *b, og_model_options *o);
/* --kv-dtype's value (auto, f32, f16, bf16, int8, fp8) as a dtype (auto: OG_UNDEFINED);
 * else prints what is wrong and returns the exit status. */
int cli_kv_dtype(const char *v, og_dtype *out);

/* --json-schema FILE, --json-object, --regex RE, --lark FILE (cli_guidance.c): at most
 * one, for generate and run. */
typedef struct cli_guidance {
    const char *type; /* og_generator_params_set_guidance's type, NULL for none */
    char *data;       /* the file's text or the regex (owned), NULL for --json-object */
    const char *flag; /* the option given */
} cli_guidance;
extern const char cli_guidance_usage[]; /* the options' lines for a --help text */
/* As cli_backend_arg: 1 taken (with its value), 0 not a guidance option, or minus the
 * exit status after printing what is wrong (a file that cannot be read, a second one). */
int cli_guidance_arg(int argc, char **argv, int *i, cli_guidance *g);
/* Sets the guidance on p (nothing without one); g must outlive og_generator_create. */
og_status *cli_guidance_set(const cli_guidance *g, og_generator_params *p);
void cli_guidance_free(cli_guidance *g);

/* --speculative ngram|draft, --draft-model DIR, --ngram N, --draft-tokens K,
 * --ngram-chained, --draft-fixed (cli_speculative.c), for generate, run and bench. */
enum { CLI_SPEC_OFF, CLI_SPEC_NGRAM, CLI_SPEC_DRAFT, CLI_SPEC_MTP };
typedef struct cli_speculative {
    int method;
    bool chained, fixed;
    int ngram, draft_tokens;
    const char *draft_dir;
    og_model *draft; /* opened by cli_speculative_open */
} cli_speculative;
extern const char cli_speculative_usage[];
void cli_speculative_init(cli_speculative *s);
/* As cli_backend_arg. */
int cli_speculative_arg(int argc, char **argv, int *i, cli_speculative *s);
/* Opens the draft model (--speculative draft); close with cli_speculative_close. */
og_status *cli_speculative_open(cli_speculative *s, const og_model_options *mo);
void cli_speculative_close(cli_speculative *s);
void cli_speculative_set(const cli_speculative *s, og_generator_params *p);
/* --adapter FILE (cli_adapter.c), for generate and run: LoRA adapters over the model,
 * each loaded under its path as name and active in the generator. */
enum { CLI_MAX_ADAPTERS = 8 };
typedef struct cli_adapter {
    const char *files[CLI_MAX_ADAPTERS];
    int n;
    og_adapters *set; /* loaded by cli_adapter_open */
} cli_adapter;
extern const char cli_adapter_usage[];
/* As cli_backend_arg. */
int cli_adapter_arg(int argc, char **argv, int *i, cli_adapter *a);
/* Loads the files over m (nothing without --adapter); close with cli_adapter_close. */
og_status *cli_adapter_open(cli_adapter *a, og_model *m);
og_status *cli_adapter_activate(const cli_adapter *a, og_generator *g);
void cli_adapter_close(cli_adapter *a);

/* --image FILE (cli_image.c), for generate and run on a Qwen vision-language package: the
 * images through the package's processor and text's <|vision_start|>...<|vision_end|>
 * placeholders expanded for them (a text without any gets one per image in front);
 * *ids (freed with free()) becomes the expanded text's tokens, *out the processor's
 * tensors, which cli_images_set hands to the generator with the ids. */
enum { CLI_MAX_IMAGES = 16 };
og_status *cli_images_prepare(og_model *model, og_tokenizer *tok, const char *const *paths,
                              int n_paths, const char *text, int add_special, int32_t **ids,
                              size_t *n_ids, og_named_tensors **out);
og_status *cli_images_set(og_generator *gen, int32_t *ids, size_t n, og_named_tensors *nt);
/* --audio FILE (cli_audio.c): the WAV's Whisper features for a Whisper package (the first
 * 30 s, as the processor takes them), then handed to og_generator_set_inputs with the
 * decoder prompt's ids; cli_whisper_prompt is the prompt when none is given. */
extern const char cli_whisper_prompt[];
og_status *cli_audio_features(og_model *model, const char *path, og_tensor **out);
og_status *cli_audio_set(og_generator *gen, int32_t *ids, size_t n, og_tensor *features);

/* One line of what speculation did (nothing when it was off). */
#include <stdio.h>
void cli_speculative_report(FILE *f, const og_generator *g);

#endif
