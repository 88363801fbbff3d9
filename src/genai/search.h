/* Choosing the next token from logits: logits processors (repetition penalty, repeated
 * n-gram blocking, min_length), greedy choice, sampling (temperature, top-k, top-p with
 * a seeded generator) and beam search. Everything here works on plain float rows; the
 * generator owns the sequences and calls in. */
#ifndef OG_GENAI_SEARCH_H
#define OG_GENAI_SEARCH_H

#include "base/status.h"

#include <stdbool.h>
#include <stdint.h>

/* xoshiro256** seeded through splitmix64: the same seed gives the same stream on every
 * platform. */
typedef struct gen_rng {
    uint64_t s[4];
} gen_rng;

void gen_rng_seed(gen_rng *r, uint64_t seed);
uint64_t gen_rng_next(gen_rng *r);
double gen_rng_uniform(gen_rng *r); /* [0, 1) with 53 random bits */

/* logit -> logit / penalty when positive, logit * penalty when negative, once for every
 * distinct token in seq[0..len). */
void gen_repetition_penalty(float *logits, int vocab, const int32_t *seq, int len,
                            float penalty);
/* Sets to -inf every token that would complete an n-gram already present in seq. */
void gen_block_repeated_ngrams(float *logits, int vocab, const int32_t *seq, int len, int n);
/* Sets every listed token to -inf (the EOS ids while below min_length). */
void gen_block_tokens(float *logits, int vocab, const int32_t *ids, int n);

/* The index of the largest logit (the first one on ties). */
int32_t gen_argmax(const float *logits, int vocab);

/* Samples from softmax(logits / temperature) restricted to the top_k largest (top_k <= 0:
 * all) and then to the smallest prefix whose probability reaches top_p (top_p >= 1: all).
 * `scratch` holds at least 2 * vocab floats. */
int32_t gen_sample(const float *logits, int vocab, int top_k, float top_p, float temperature,
                   gen_rng *rng, float *scratch);

/* In place: row = log(softmax(row)). */
void gen_log_softmax(float *row, int vocab);

/* Beam search over batch x num_beams hypotheses (the scheme of HF transformers'
 * BeamSearchScorer, which onnxruntime-genai follows). */
typedef struct gen_beam gen_beam;

typedef struct gen_beam_options {
    int batch, num_beams, vocab, max_length, num_return_sequences;
    float length_penalty;
    bool early_stopping;
    const int32_t *eos_ids;
    int n_eos;
    int32_t pad_id;
} gen_beam_options;

og_status *gen_beam_create(const gen_beam_options *o, gen_beam **out);
/* Elementary operations (compares, moves) of one gen_beam_step for one batch entry, as
 * the step below does them: kept next to it so that the generation limits
 * (genai/budget.c) estimate the algorithm that really runs. */
double gen_beam_step_ops(int num_beams, int vocab);
void gen_beam_free(gen_beam *b);
/* One step. logprobs: [batch*num_beams, vocab] log-probabilities of the next token
 * (after processors); seqs[i] / cur_len: the current tokens of beam i. Writes for each
 * of the batch*num_beams next beams its parent beam and its new token. */
og_status *gen_beam_step(gen_beam *b, const float *logprobs, const int32_t *const *seqs,
                         int cur_len, int32_t *parents, int32_t *tokens);
/* True when every batch entry has finished (early stopping or enough hypotheses). */
bool gen_beam_done(const gen_beam *b);
/* Running score of beam i (sum of log-probabilities of its generated tokens). */
float gen_beam_score(const gen_beam *b, int i);
/* After the last step: adds the live beams as hypotheses and writes, for batch entry b
 * and rank r < num_return_sequences, the best sequence into out (padded with pad_id to
 * max_length). out: [batch * num_return_sequences][max_length]; lens: its lengths. */
og_status *gen_beam_finalize(gen_beam *b, const int32_t *const *seqs, int cur_len,
                             int32_t *out, int *lens);

#endif
