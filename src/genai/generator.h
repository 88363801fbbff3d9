/* The generator's state (see generator.c for the decode loop, generator_run.c for how
 * one step runs the pipeline, generator_cache.c for the loop-carried buffers). */
#ifndef OG_GENAI_GENERATOR_H
#define OG_GENAI_GENERATOR_H

#include "base/tensor.h"
#include "genai/adapters.h"
#include "genai/model.h"
#include "genai/search.h"
#include "genai/speculative.h"
#include "genai/step.h"
#include "guide/guide.h"

#include <stdbool.h>
#include <stdint.h>

/* The loop-carried tensors at one sequence length, kept so that rewind_to can go back
 * before it (a state cannot be cut back the way a KV cache can). */
typedef struct gen_snapshot {
    int fed;
    void **data; /* [n_cache] copies of the STATE entries (NULL for KV) */
} gen_snapshot;

enum { GEN_MAX_SNAPSHOTS = 8 };

struct og_generator {
    og_model *m;
    og_generator_params p;
    int rows;            /* batch_size * num_beams */
    int max_len;
    int32_t *seq;        /* [rows][max_len] each row's own tokens, no padding */
    int *len;            /* [rows] tokens in the row */
    int *fed;            /* [rows] of which the model has seen (in the cache/state) */
    bool *done;          /* [rows] stopped: an EOS id or max_length */
    /* KV columns. Compact layout (attention finds a row's length from the mask): row r's
     * entries are [0, fed[r]) and kv_len = the longest. Otherwise all rows share kv_len
     * columns and cmask says which hold a real token of the row. */
    int kv_len;
    int col_cap;         /* columns the KV buffers hold */
    uint8_t *cmask;      /* [rows][col_cap], the shared-column layout only */
    float *logits;       /* [rows][vocab] next-token logits, valid when has_logits */
    bool has_logits;
    float *work;         /* [2 * vocab] sampling scratch */
    int64_t *feed_ids, *feed_mask, *feed_pos; /* graph input staging */
    int32_t *feed_ids32, *feed_mask32, *feed_pos32;
    uint8_t *feed_forms; /* [rows * max_len] the row forms of a run (step.h) */
    /* The form each position of a row had when it was first computed ([rows * max_len]),
     * valid below form_len[row]: a position fed again after a rewind keeps it, so that it
     * gives the same bits. */
    uint8_t *pos_form;
    int *form_len;
    size_t mask_cap;     /* entries of feed_mask */
    int *start;          /* [rows] first position fed in a run */
    void *step_logits;   /* [rows][vocab] logits of a one-token step, bound each run so that
                            decode allocates nothing for them */
    /* Loop-carried buffers: buf[b][i] is buffer b of cache entry i (bytes[i] long). Past
     * is buf[cur[i]][i]; present goes to the other one (then cur flips) unless the entry
     * is written in place (inplace[i]: past and present are buf[cur[i]][i]). A shared KV
     * buffer ([rows, heads, max_length, head_size]) has only buf[0]. */
    void **buf[2];
    size_t *bytes;
    void *cache_block;   /* every buf[b][i], carved from one allocation (generator_cache.c) */
    size_t cache_block_bytes;
    int *cur;
    bool *inplace;
    bool share_kv;       /* KV past and present are one max_length buffer (gen_shares_kv) */
    gen_snapshot snaps[GEN_MAX_SNAPSHOTS];
    int n_snaps;
    /* logits of the last run, kept for og_generator_get_output: a tensor of its own after a
     * prompt, or step_logits_t (over step_logits) after a one-token step */
    og_tensor *last_logits;
    og_tensor step_logits_t;
    gen_step_io io;      /* what a run hands to og_session_run, made once (step.h) */
    gen_rng rng;
    gen_beam *beam;      /* NULL unless num_beams > 1 */
    gen_beam_options beam_opts;
    bool finalized;
    int32_t *final_seqs; /* [batch * num_return][max_len] after beam search */
    int *final_lens;
    /* What the last generate_next_token chose per row (og_generator_get_next_tokens) */
    int32_t *next;       /* [rows] */
    bool has_next;
    /* The padded batch layout (params.padded_batch with batch_size > 1): each row's
     * padding, prompt length and whether it keeps the EOS it stopped on; `steps` counts
     * the steps appended to the batch, which every row's view has. `view` holds the row
     * og_generator_get_sequence last assembled. */
    int *pads, *prompt_len;
    int32_t *eos_tok;    /* [rows] the EOS a row keeps, -1 for none */
    int steps;
    int32_t *view;       /* [max_len] */
    /* Guidance (generator_guidance.c), NULL without: the grammar, each row's matcher, where
     * each row's guided output begins (its length after its last append), the mask of the
     * row being chosen, and whether that mask allows a token other than the stop ids. */
    guide_grammar *grammar;
    guide_matcher **matchers; /* [rows] */
    int *gstart;              /* [rows] */
    uint32_t *gmask;          /* [guide_mask_words(vocab)] */
    bool guide_content;
    bool guide_can_stop;      /* some stop id is inside the vocabulary */
    /* Speculative decoding (speculative.h), NULL when off: the drafter and its budget, the
     * draft being verified, the tokens the last verification decided (handed out one per
     * step from spec_next on) and the logits of every position it ran ([K + 1][vocab]),
     * from which each handed-out token's successor logits are served. */
    gen_spec *spec;
    int32_t spec_draft[GEN_SPEC_MAX_DRAFT];
    int32_t spec_out[GEN_SPEC_MAX_DRAFT + 1];
    int spec_n_out, spec_next;
    float *spec_logits;
    /* a model with state: its fixed entries before the last verification, at spec_fed */
    void **spec_state;
    int spec_fed;
    og_generator *spec_gen; /* the draft model's generator (made on first use) */
    struct gen_mtp *mtp;    /* MTP drafting's hidden rows and head (mtp.h), NULL when off */
    void *steps_raw;   /* gen_compute_steps' logits before conversion to float32 */
    size_t steps_raw_bytes;
    /* Images of this request (og_generator_set_inputs, vision.h): the encoder's features
     * of the prompt's image tokens in order (NULL: none), the prompt's 3-D positions
     * ([3][media_len], NULL: positions are plain) and the offset of every later
     * position; img_view is the rows a run's image tokens take. */
    og_tensor *img_features;
    int64_t *mpos;
    int64_t media_len, rope_delta;
    /* Phi-3-vision: the prompt's ids with its image tokens' negative ids ([mids_len];
     * NULL: none), fed to the embedding where the sequence holds a stand-in */
    int32_t *mids;
    int64_t mids_len;
    og_tensor img_view;
    /* LoRA adapters active in this generator (adapters.h), all from one container */
    og_adapters *adapters;
    gen_adapter *active[GEN_MAX_ACTIVE_ADAPTERS];
    int n_active;
    /* An encoder-decoder model's encoder outputs for this request (genai/encoder.c):
     * [m->n_cross] tensors of [rows, ...], NULL until the features are set */
    og_tensor **cross;
};

/* The tokens row r may hold: max_length, less its padding in the padded layout. */
int gen_row_limit(const og_generator *g, int r);

og_status *gen_generator_alloc(og_generator *g);
void gen_generator_free(og_generator *g);

/* generator_cache.c */
og_status *gen_cache_alloc(og_generator *g);
void gen_cache_free(og_generator *g);
/* Views of cache entry i for a run of rows [r0, r0 + nr) (`alone`: one row run from the
 * empty cache, prompts of different lengths): what the run reads as the entry's past,
 * and what it writes its present into, holding `cols` columns (KV entries); *out NULL:
 * the present comes back as a new tensor, which gen_cache_place puts into row r. */
og_status *gen_cache_past(const og_generator *g, int i, int r0, int nr, bool alone,
                          og_tensor *slot, og_tensor **out);
og_status *gen_cache_present(const og_generator *g, int i, int r0, int nr, int cols, bool alone,
                             og_tensor *slot, og_tensor **out);
void gen_cache_place(og_generator *g, int i, int r, const og_tensor *t);
/* A copy of entry i as the last run left it, all rows, shaped as the package's config
 * describes its present (og_generator_get_output). */
og_status *gen_cache_output(const og_generator *g, int i, og_tensor **out);
/* Grows the KV buffers of the shared-column layout to hold `cols` columns. */
og_status *gen_kv_reserve(og_generator *g, int cols);
/* Cache rows follow the beams: row r takes parent[r]'s state and cache. */
og_status *gen_cache_reorder(og_generator *g, const int32_t *parents);
/* Cuts the KV cache of a single row back to `keep` positions. */
void gen_kv_truncate(og_generator *g, int keep);
/* Zero state (rows empty). */
void gen_cache_reset(og_generator *g);
og_status *gen_snapshot_take(og_generator *g);
/* The entries that cannot be cut back (states, window caches) as they stand, copied into
 * data[0..n_cache) (each allocated when NULL), and back (NULL: the empty state). */
og_status *gen_fixed_save(const og_generator *g, void **data);
void gen_fixed_load(og_generator *g, void *const *data);
/* Restores the latest snapshot at or before `keep` (or the empty state); returns its
 * length. */
int gen_snapshot_restore(og_generator *g, int keep);

/* generator_guidance.c. gen_guide_init (og_generator_create) compiles params' guidance
 * and makes the matchers; nothing when there is none. Per row and step: gen_guide_mask
 * sets the disallowed logits to -inf (and guide_content); gen_guide_any_allowed says
 * whether some allowed token is still above -inf after a processor; gen_guide_take
 * consumes the chosen token *t, first replacing it by the best allowed one if the choice
 * fell on a disallowed token (only when every allowed logit is -inf or NaN).
 * gen_guide_restart: tokens were appended, the guided output begins after them;
 * gen_guide_rewind: the sequences were cut to new_length. */
og_status *gen_guide_init(og_generator *g);
void gen_guide_free(og_generator *g);
og_status *gen_guide_mask(og_generator *g, int r, float *row);
bool gen_guide_any_allowed(const og_generator *g, const float *row);
og_status *gen_guide_take(og_generator *g, int r, const float *row, int32_t *t);
/* Row r's grammar is complete and nothing can follow, and the model has no stop id in its
 * vocabulary to end it with: the row ends here (with a stop id it ends on that, chosen
 * the next step as onnxruntime-genai chooses it). */
bool gen_guide_closed(const og_generator *g, int r);
og_status *gen_guide_restart(og_generator *g);
og_status *gen_guide_rewind(og_generator *g, int new_length);

/* encoder.c: the encoder outputs fed to cross feed i, a view of rows [r0, r0 + nr) in
 * slot (an error until the features are set); gen_encoder_free releases them. */
og_status *gen_encoder_cross(const og_generator *g, int i, int r0, int nr, og_tensor *slot,
                             og_tensor **out);
void gen_encoder_free(og_generator *g);
/* og_generator_set_inputs of an encoder-decoder model: its features, then input_ids. */
og_status *gen_encoder_set_inputs(og_generator *g, const char *const *names,
                                  const og_tensor *const *tensors, size_t count);

/* generator_run.c: runs the pending tokens of every row (prefill, decode, re-feed). */
og_status *gen_compute_logits(og_generator *g);
/* Runs the pending tokens of a lone row (a verification of drafted tokens) as one run
 * that gives each position the bits of a one-token step, and writes every position's
 * logits as float32 into out ([pending][vocab]); out NULL: the run is for the cache and
 * state only (the last position's logits are computed, none is copied). */
og_status *gen_compute_steps(og_generator *g, float *out);

#endif
