/* Multi-token prediction: drafting with the MTP head onnxruntime-genai's builder writes
 * beside a decoder (mtp.onnx: one decoder layer fed the main model's final hidden state
 * and the next token, the package's model.mtp block; model.c opens it as og_model.mtp).
 *
 * The head predicts the token after next. Its cache holds one entry per generated
 * position p, made from (the main model's hidden state at p - 1, the token at p), at its
 * own positions 0, 1, ... from the first generated token on, as onnxruntime-genai's
 * MtpGenerator keeps it. To draft K tokens after the pending token t (the head is first
 * brought to the sequence: rewound to the longest prefix it holds that was made from
 * main-model rows, then fed the rest), the head's argmax after t is the first draft;
 * each further draft feeds the previous one with the head's own final hidden state
 * (outputs.hidden_states) in place of the main model's. The drafts are verified as every
 * other drafter's are (generator.c), so the output is plain decoding's, token for token.
 *
 * A generator that drafts this way (og_generator_params.speculative_mtp), and the head's
 * own generator, keep the hidden rows their runs return (og_model.hidden_out) in a ring
 * by position; the head's runs read theirs from the feed made here (GEN_SRC_HIDDEN).
 *
 * The serving engine drafts for each sequence of its batched steps with a drafter of its
 * own (gen_mtp_new): it keeps the rows its runs return for the sequence's positions and
 * drafts after the sequence's tokens (gen_mtp_draft_seq), as the generator does. */
#ifndef OG_GENAI_MTP_H
#define OG_GENAI_MTP_H

#include "base/status.h"
#include "onnx_genai.h"

#include <stdint.h>

struct gen_mtp;

/* Refuses what MTP drafting cannot do: a package without a head, another drafter with
 * it, beam search. */
og_status *gen_mtp_check(const og_model *m, const og_generator_params *p);

/* A drafter for main model m: a ring of its hidden rows by position (none when m has no
 * og_model.hidden_out: it never drafts), and the head's generator, made at its first
 * drafting. */
og_status *gen_mtp_new(const og_model *m, struct gen_mtp **out);
void gen_mtp_delete(struct gen_mtp *t);
/* The head's generator goes (after a failure of it): the next drafting starts it again. */
void gen_mtp_forget_head(struct gen_mtp *t);
/* Rows [row0, row0 + n) of a run's hidden output [rows, n, hidden] (flat over its leading
 * axes) kept for positions first_pos .. first_pos + n - 1. */
void gen_mtp_keep_rows(struct gen_mtp *t, const og_tensor *hidden, int64_t row0, int n,
                       int first_pos);
/* Up to k drafts for the token after seq[L - 1] (the pending token, whose row is not
 * needed: those of seq[.. L - 2] are) into out (*got of them; 0 when the rows the head
 * needs are gone). max_len bounds the head's generator when it is made. */
og_status *gen_mtp_draft_seq(struct gen_mtp *t, og_model *m, const int32_t *seq, int L,
                             int max_len, int k, int32_t *out, int *got);

/* The ring of hidden rows of a generator whose model has og_model.hidden_out. */
og_status *gen_mtp_init(og_generator *g);
void gen_mtp_free(og_generator *g);

/* Row 0 of a run's hidden output ([rows, n, hidden]) kept for positions first_pos ..
 * first_pos + n - 1. */
void gen_mtp_keep(og_generator *g, const og_tensor *hidden, int first_pos);

/* The hidden rows of a run of n tokens from position first_pos (a view in slot), NULL
 * when this generator has none to feed. */
const og_tensor *gen_mtp_feed(og_generator *g, int first_pos, int n,
                               og_tensor *slot);

/* Up to k drafts for the token after the pending one into g->spec_draft (*got of them;
 * 0 when the hidden rows the head needs are gone: a plain step). */
og_status *gen_mtp_draft(og_generator *g, int k, int *got);

#endif
