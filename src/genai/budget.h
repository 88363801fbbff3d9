/* What a generation will cost, estimated from the model and the search options before
 * anything is allocated, and the limits it must stay within (README, "Limits"):
 *
 *  - rows: batch_size x num_beams is at most GEN_MAX_ROWS;
 *  - memory: the KV cache (both buffers of a pair where past and present differ), the
 *    per-row sequences, masks and input staging, the logits and the beam scratch must
 *    fit in the memory available now (MemAvailable, the cgroup's memory.max, RLIMIT_AS);
 *  - time: the search's own work over max_length steps (logits processing, sampling
 *    sorts, beam selection, beam cache reordering) may not exceed GEN_SEARCH_ALLOWANCE_S
 *    seconds unless the model's own work is larger still: a search that would run far
 *    longer than the model it drives is a mistake (--num-beams 1024 on a 260K-parameter
 *    model), while a long generation on a large model is not.
 * Estimates use double arithmetic, so absurd options (2^31 beams) cannot overflow
 * them; the allocations that follow are only reached for sizes that fit in memory. */
#ifndef OG_GENAI_BUDGET_H
#define OG_GENAI_BUDGET_H

#include "genai/model.h"

#include <stdbool.h>

enum { GEN_MAX_ROWS = 4096 };

/* Nominal rates that turn operation counts into seconds (messages, the time limit):
 * the model's products with its weights, its attention (scores and weighted values over
 * the cache: small heads, far below the products' rate), scalar search steps (compares,
 * moves), and memory copies, at the cache's rate while a step's copies fit in
 * GEN_COPY_CACHE_BYTES and at memory's beyond. Calibrated with bench-beam-budget on
 * stories260K (bench/bench_beam_budget.c: num_beams 4 to 256, max_length 64 to 512, one
 * and two threads) in Release on a 2-vCPU Intel Xeon VM (avx512, 4 MiB L2, a shared L3)
 * and split by perf: beam searches spend 50-63% in memmove (the cache's reordering and
 * GroupQueryAttention's past -> present copy), 25-30% in attention, under 3% in the
 * search itself. The estimate held within 2x of the measured time there. */
#define GEN_RATE_MODEL_FLOPS 5e10
#define GEN_RATE_ATTN_FLOPS 8e9
#define GEN_RATE_SEARCH_OPS 1.5e9
#define GEN_RATE_COPY_BYTES 1.2e10
#define GEN_RATE_COPY_MEM_BYTES 6.5e9
#define GEN_COPY_CACHE_BYTES (128.0 * 1024 * 1024)
#define GEN_SEARCH_ALLOWANCE_S 60.0

typedef struct gen_budget {
    double rows;          /* batch_size x num_beams */
    double kv_bytes;      /* all cache buffers (KV and states) */
    double state_bytes;   /* sequences, masks, input staging, logits, beam scratch */
    double model_flops;   /* the decoder over rows x max_length positions */
    double attn_flops;    /* the part of model_flops that attention's scores and weighted
                           * values take (it runs at GEN_RATE_ATTN_FLOPS) */
    double model_copy_bytes; /* attention copying past into a separate present */
    double search_ops;    /* logits processing, sampling, beam selection */
    double copy_bytes;    /* beams: reordering of the cache, and the past->present copies
                           * that beams force (no shared buffer) */
    double model_s, search_s; /* the above at the nominal rates */
} gen_budget;

/* Whether og_generator_create makes KV past and present one buffer for p. */
bool gen_shares_kv(const og_model *m, const og_generator_params *p);

/* The bytes a generator of p holds, estimated as og_generator_create checks them: the
 * caches (KV at max_length, both buffers of fixed-size states), sequences, masks, input
 * staging, logits and search scratch, plus `snapshots` copies of the fixed-size caches
 * (a stateful model's prompt keeps one per prompt chunk, GEN_MAX_SNAPSHOTS at most),
 * and an allowance for its bookkeeping.
 * Not the activations of its runs: those are the sessions' plans and scratch, shared by
 * every generator of the model (og_session_options.plan_memory bounds the plans). Nor,
 * with p->all_logits, a prompt's logits at every position ([rows, prompt, vocab]), which
 * the generator keeps until its next step: they depend on a prompt not known here. */
double gen_generator_bytes(const og_model *m, const og_generator_params *p, int snapshots);

/* share_kv: KV past and present are one buffer (as the generator will decide). */
void gen_budget_estimate(const og_model *m, const og_generator_params *p, bool share_kv,
                         gen_budget *out);

/* OG_ERR_INVALID_ARGUMENT naming the options, the estimate and the limit when a limit is
 * exceeded; NULL otherwise. `p` has positive sizes (batch, beams, max_length). */
og_status *gen_budget_check(const og_model *m, const og_generator_params *p, bool share_kv);

/* The search options that have no meaning, whether in use or not: NaN or negative
 * temperature, top_p outside [0, 1], negative top_k, repetition_penalty <= 0, a
 * non-finite length_penalty, more return sequences than beams, sampling with beams,
 * min_length above max_length (when max_length is set, > 0). */
og_status *gen_check_search_options(const og_generator_params *p);

/* Bytes of memory this process may still allocate (an estimate; SIZE_MAX if unknown). */
double gen_available_memory(void);

/* "1.50 GiB" into buf. */
const char *gen_human_bytes(double bytes, char *buf, size_t size);

#endif
