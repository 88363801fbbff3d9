/* Speculative decoding's drafting and its budget: which tokens to propose after a
 * sequence, and how many are worth verifying.
 *
 * The generator (generator.c) verifies a draft by running the target once on the pending
 * token and the K drafted ones with the forms of decode steps (step.h), so every
 * position's logits are the bits a one-token step gives, and then chooses each next token
 * exactly as a plain step would (guidance, processors, argmax or one draw from the seeded
 * generator). A draft token is kept while it equals that choice. Drafts here are
 * deterministic, so this is rejection sampling with a one-point proposal: a drafted d is
 * accepted with the target's probability of d and a rejected one is replaced by a draw from
 * the target without d. Output tokens, greedy or sampled, are those of plain decoding with
 * the same seed, bit for bit.
 *
 * Drafting (gen_spec_draft): prompt lookup, or a draft model (generator.c runs it). The last `ngram` tokens of the sequence are
 * looked for earlier in it (prompt and output alike); the latest earlier occurrence
 * proposes the tokens that followed it. With chained lookup a draft that runs out (the
 * match reached the end of the sequence) continues by looking up its own last tokens.
 *
 * The budget (gen_spec_choose): verifying K drafts costs one run of K + 1 tokens, which
 * reads the weights once but computes K + 1 rows. The planner keeps a running estimate of
 * the probability that a draft token is accepted and of the time of a run of n tokens
 * (measured), and drafts the K that maximises expected tokens per second, 0 when no K
 * beats a plain step. Drafts it does not verify are still scored against the tokens plain
 * decoding then chooses ("shadow" drafts), so the estimate follows the text at no cost
 * and speculation resumes when lookups start to hit. A draft model's tokens cost their
 * drafting time; with no free shadow, one short verification after 16 plain steps
 * measures its acceptance again (then after 32, 64, ... while it does not pay). */
#ifndef OG_GENAI_SPECULATIVE_H
#define OG_GENAI_SPECULATIVE_H

#include "base/status.h"

#include <stdbool.h>
#include <stdint.h>

enum { GEN_SPEC_MAX_DRAFT = 16 };

typedef struct gen_spec_options {
    int ngram;        /* n-gram lookup: tokens matched (>= 1), 0: off */
    int max_draft;    /* at most this many drafted tokens per verification */
    bool chained;     /* a draft that runs out looks up its own end again */
    int min_k;        /* a verification checks at least this many (when the draft has them) */
    bool draft_model; /* drafts come from a draft model (their time counts), not lookup */
    bool adaptive;    /* the budget picks K (otherwise always max_draft when a draft exists) */
} gen_spec_options;

typedef struct gen_spec_stats {
    int64_t passes;       /* verification runs */
    int64_t drafted;      /* tokens proposed to them */
    int64_t accepted;     /* of which equal to the target's choice */
    int64_t emitted;      /* tokens the verifications decided (accepted + one each) */
    int64_t plain_steps;  /* one-token steps taken instead */
} gen_spec_stats;

typedef struct gen_spec {
    gen_spec_options o;
    gen_spec_stats stats;
    /* acceptance: an estimate of the probability that a draft token is accepted given
     * that the ones before it were */
    double alpha;
    double succ, tries; /* decayed counts behind it */
    /* seconds per run of n tokens (n = 1 .. max_draft + 1), running averages of t_count
     * runs after the first (t_seen) */
    double t_run[GEN_SPEC_MAX_DRAFT + 2];
    int t_count[GEN_SPEC_MAX_DRAFT + 2];
    bool t_seen[GEN_SPEC_MAX_DRAFT + 2];
    /* the shadow draft: proposed but not verified, scored as the tokens come */
    int32_t shadow[GEN_SPEC_MAX_DRAFT];
    int n_shadow, shadow_at;
    double t_draft;    /* seconds per token a draft model drafts, running average */
    int plain_streak;  /* plain steps since the last verification (draft model) */
    int probe_every;   /* plain steps between probes (draft model) */
} gen_spec;

void gen_spec_init(gen_spec *s, const gen_spec_options *o);

/* Up to max_k tokens that might follow seq[0..len), into out; returns how many. */
int gen_spec_draft(const gen_spec_options *o, const int32_t *seq, int len, int max_k,
                   int32_t *out);

/* How many of k available draft tokens to verify (the cost model; k itself with a fixed
 * K), 0 for a plain step. A draft model asks before drafting (k: the most it may draft). */
int gen_spec_choose(gen_spec *s, int k);

/* After a choice of `best` drafts (0: a plain step): with a draft model, which has no free
 * shadow, a plain step after 16 of them (32, 64, ... while that does not pay) verifies lo
 * drafts instead (a probe of the acceptance). Returns the number to verify. */
int gen_spec_probe(gen_spec *s, int best, int lo);

/* Prompt lookup: the number of tokens to verify after seq[0..len) (at most max_k), with
 * the draft in out[0..K); 0: take a plain step (a draft, if any, becomes the shadow). */
int gen_spec_plan(gen_spec *s, const int32_t *seq, int len, int max_k, int32_t *out);

/* A draft of k tokens that a plain step follows instead of a verification: scored against
 * the tokens plain steps choose (gen_spec_plain_step), unless one is being scored. */
void gen_spec_shadow(gen_spec *s, const int32_t *draft, int k);

/* Adds pseudo-counts to the acceptance estimate: `succ` accepted of `tries` draft tokens
 * (a prior from elsewhere, such as other sequences of the same model). */
void gen_spec_seed(gen_spec *s, double succ, double tries);

/* Expected tokens decided by a verification of k drafts at acceptance a:
 * 1 + a + a^2 + ... + a^k. */
double gen_spec_expected(double a, int k);

/* A draft model drafted k tokens in `seconds`. */
void gen_spec_drafted(gen_spec *s, int k, double seconds);

/* A verification of k drafts ran in `seconds` and accepted `accepted` of them, deciding
 * `emitted` tokens. */
void gen_spec_verified(gen_spec *s, int k, int accepted, int emitted, double seconds);

/* A plain step ran in `seconds` and chose token t (scored against the shadow draft). */
void gen_spec_plain_step(gen_spec *s, int32_t t, double seconds);

/* Monotonic seconds. */
double gen_spec_now(void);

#endif
