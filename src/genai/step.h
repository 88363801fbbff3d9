/* One run of a model's pipeline of stages: every stage's feeds bound, its outputs
 * requested, the stage run, the values later stages read handed on, the logits returned.
 *
 * The generator (generator_run.c: rows of a batch over its own KV and state buffers) and
 * the serving engine (engine_batch.c: a flat batch over the paged KV pool) run their
 * steps through gen_step_run, so that how a step is built cannot drift between them.
 * They differ in the tokens they stage (gen_step_tokens) and in where the loop-carried
 * tensors live (gen_step_cache). Nothing here allocates: inputs are views of the caller's
 * staging arrays, and the arrays handed to og_session_run are made once (gen_step_io). */
#ifndef OG_GENAI_STEP_H
#define OG_GENAI_STEP_H

#include "genai/model.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* A run's token inputs, staged by the caller: input_ids [rows, n], attention_mask
 * [rows, mask_cols], position_ids [rows, n], or [3, rows, n] for mRoPE (all three axes
 * staged: axis a at pos + a * rows * n). The int32 arrays, each as long as its int64
 * one, receive the values when a graph declares the input int32. */
typedef struct gen_step_tokens {
    int rows, n, mask_cols;
    int64_t *ids, *mask, *pos;
    int32_t *ids32, *mask32, *pos32;
    /* Per token (rows * n), how onnxruntime computes it in a run of its sequence alone
     * (BACKEND_ROW_*, backends/backend.h), handed to the kernels so that a token's bits do
     * not depend on its batch; NULL: none (each kernel computes as onnxruntime computes
     * this run's rows). */
    const uint8_t *forms;
    /* Hidden states fed to a GEN_SRC_HIDDEN input ([rows, n, hidden]: an MTP head's
     * main-model rows, genai/mtp.c); NULL when the model takes none. */
    const og_tensor *hidden;
    /* The image features of the run's image tokens, in order (vision.h), fed to the
     * embedding's image_features; NULL: an empty tensor. */
    const og_tensor *image_features;
} gen_step_tokens;

/* The form of token i of a run of L tokens of one sequence. */
uint8_t gen_step_form_in_run(int64_t i, int64_t L);
/* The form of the token at position p of a sequence whose prompt has P tokens, when its
 * run alone feeds the whole prompt at once and then one token per step. */
uint8_t gen_step_form_at(int64_t p, int64_t P);

/* Where the loop-carried tensors live; ctx is the caller's. */
typedef struct gen_step_cache {
    void *ctx;
    /* The past of cache entry i: *out = slot, made a view of the caller's buffer. */
    og_status *(*past)(void *ctx, int i, og_tensor *slot, og_tensor **out);
    /* The present of entry i: *out = slot made a view the run writes into, or NULL for
     * a new tensor; *skip: the output is not requested at all. */
    og_status *(*present)(void *ctx, int i, og_tensor *slot, og_tensor **out, bool *skip);
    /* Optional: the present the run returned for entry i (`view`: the caller's slot;
     * otherwise a new tensor, which is freed after the call). */
    void (*took_present)(void *ctx, int i, const og_tensor *t, bool view);
    /* Optional: called before and after each stage's run (the engine lends its paged
     * cache to the stage's session for the run). */
    og_status *(*stage_begin)(void *ctx, const gen_stage *sg);
    void (*stage_end)(void *ctx, const gen_stage *sg);
    /* Optional: the tensor fed to a graph input that has a default (GEN_SRC_PARAM: an
     * active adapter's parameter), or NULL for the graph's own value. */
    const og_tensor *(*param)(void *ctx, const char *name);
    /* The encoder output fed to the decoder input of GEN_SRC_CROSS feed `index`, made a
     * view for the run's rows (a Whisper decoder's cross-attention keys and values). */
    og_status *(*cross)(void *ctx, int index, og_tensor *slot, og_tensor **out);
} gen_step_cache;

/* The logits of a run. */
typedef struct gen_step_logits {
    og_tensor *into;        /* a view the logits are written into, or NULL: a new tensor */
    bool select;            /* only some rows are computed (og_session_run_rows) */
    const int64_t *rows;    /* with select: those rows, or NULL for the last position of
                               each row */
    size_t n_rows;
    og_tensor *out;         /* after the run: `into`, or a new tensor the caller frees */
    bool want_hidden;       /* the model's GEN_SINK_HIDDEN output is asked for */
    og_tensor *hidden;      /* after the run: that output ([rows, n, hidden]), a new tensor
                               the caller frees; NULL when not asked for */
} gen_step_logits;

/* The arrays a run hands to og_session_run, made once per generator or engine. */
typedef struct gen_step_io {
    int max_io;                   /* the most feeds or outputs of any stage */
    int max_outs;                 /* the most outputs of any stage: vals' stride */
    og_tensor *in_views, *out_views; /* [max_io] tensor structs that views are made in */
    og_tensor **ins, **outs;      /* [max_io] */
    bool *in_owned;               /* [max_io] ins[k] was made for this run: free it */
    const char **in_names, **out_names;
    int *out_of;                  /* [max_io] which of the stage's outputs outs[k] is */
    og_tensor **vals;             /* [n_stages * max_outs] values later stages read,
                                     (stage, output) at stage * max_outs + output */
    int n_stages;
} gen_step_io;

og_status *gen_step_io_init(gen_step_io *io, const og_model *m);
void gen_step_io_free(gen_step_io *io);

/* Runs the stages that take this kind of run (tk->n > 1: a prompt; 1: a token) in
 * order. On success lg->out holds the logits; on error nothing is left to free. */
og_status *gen_step_run(og_model *m, gen_step_io *io, const gen_step_tokens *tk,
                        const gen_step_cache *c, gen_step_logits *lg);

/* n logits of dtype dt (float32, float16 or bfloat16) at src as float32 in dst. */
void gen_logits_to_f32(og_dtype dt, const void *src, size_t n, float *dst);

/* *out = slot, made a view of data with the given dtype and shape (data NULL: empty). */
og_status *gen_step_view(og_dtype dt, const int64_t *dims, int rank, void *data,
                         og_tensor *slot, og_tensor **out);

#endif
