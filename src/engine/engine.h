/* The serving engine: many generation requests on one model at once, with continuous
 * batching over a paged KV cache.
 *
 * A thread of its own runs steps. Each step takes the running sequences' next token
 * (decode) and chunks of prompts being prefilled, up to a token budget, as ONE model run
 * in which the weights are read once for all of them; a request joins between steps and
 * leaves as soon as it is done or cancelled, giving its KV blocks back at once. KV lives
 * in fixed-size blocks of one pool (kv_pool.h) which GroupQueryAttention reads through
 * the run's block tables (backends/paged_kv.h); a prompt that starts with blocks already
 * in the prefix cache prefills only the rest. When the pool runs out, the most recently
 * admitted sequence is preempted (its blocks freed, its tokens recomputed later).
 *
 * Results never depend on batch-mates: every token is run through kernels whose per-token
 * arithmetic does not depend on the other tokens of the run (see ARCHITECTURE.md,
 * "Serving"), so greedy decoding gives each request the tokens it gets alone.
 *
 * Hybrid models (conv / recurrent states beside the KV: Qwen3.5, LFM2) are batched too:
 * each running sequence holds a slot of every state, decoding sequences run together as
 * rows of one run over their slots, prompt chunks run apart (a state consumes a
 * sequence's tokens in order), and the prefix cache keeps state snapshots at block
 * boundaries (engine_state.c). Models whose attention cannot read a paged cache (gpt2's
 * Attention, a graph that does not take past_key as an input of its GroupQueryAttention
 * nodes) are served one generator per sequence instead, stepped in turn ("per-sequence
 * mode"): the same API, no shared batch.
 *
 * Requests are reference counted: the engine holds one reference until it has delivered
 * the end, the submitter the other. */
#ifndef OG_ENGINE_ENGINE_H
#define OG_ENGINE_ENGINE_H

#include "onnx_genai.h"
#include "guide/guide.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct eng_engine eng_engine;
typedef struct eng_request eng_request;

/* The default step budget (eng_create says why it is fixed). */
enum { ENG_STEP_TOKENS_DEFAULT = 256 };

typedef struct eng_options {
    size_t kv_memory;   /* bytes for the KV pool (a hybrid's state slots and snapshots,
                           eng_state_bytes, included); 0: enough for max_batch full
                           contexts, at most a quarter of the memory available, plus the
                           state slots and snapshots. In per-sequence
                           mode the same budget bounds the running generators: each is
                           charged its estimated bytes (KV cache at its max_length,
                           recurrent and conv states, a prompt snapshot, sequences,
                           logits) from admission to its end, requests wait in order
                           while the next does not fit, and one that cannot fit alone is
                           refused at submission */
    int block_size;     /* positions per KV block (16) */
    int max_batch;      /* sequences running at once (32) */
    int max_queue;      /* requests waiting to start (256); more are refused */
    int step_tokens;    /* tokens per step, decode and prefill chunks together (0:
                           ENG_STEP_TOKENS_DEFAULT; at least max_batch) */
    int threads;        /* compute threads (0: all cores) */
    bool prefix_cache;  /* reuse cached prompt blocks (true) */
    bool per_sequence;  /* force per-sequence mode (tests, comparisons) */
    /* Speculative decoding by prompt lookup or the package's MTP head
     * (og_generator_params' speculative_* fields; ngram 0 and mtp false: off). Batched
     * mode verifies the drafts inside its steps, beside the other sequences' rows
     * (engine_spec.c; a hybrid's in a run over its state slot; an MTP head drafts from the
     * hidden rows the steps return for each sequence); per-sequence mode, each request's
     * generator verifies its own drafts. */
    int spec_ngram, spec_max_draft;
    bool spec_chained, spec_fixed, spec_mtp;
    /* Batched mode: drafts from this function instead of prompt lookup (NULL: lookup),
     * which speculates also with spec_ngram 0: up to max_k tokens that might follow
     * seq[0..len) into out, returning how many (tests give drafts that are right or wrong
     * where they choose). Per-sequence mode does not call it. */
    int (*spec_drafter)(void *ctx, const int32_t *seq, int len, int max_k, int32_t *out);
    void *spec_drafter_ctx;
    /* Drafts from a draft model (borrowed: it must outlive the engine; it must share the
     * model's tokenizer, which eng_create checks): each sequence's own generator of it,
     * kept in step with the sequence, drafts greedily (batched mode), or each request's
     * generator uses it (per-sequence mode). Speculates also with spec_ngram 0. */
    og_model *spec_draft_model;
} eng_options;

eng_options eng_options_default(void);

/* How one request chooses tokens. */
typedef struct eng_sampling {
    int max_tokens;     /* new tokens at most (>= 1) */
    bool sample;        /* false: greedy */
    float temperature;  /* > 0 when sampling */
    int top_k;          /* 0: all */
    float top_p;        /* 1: all */
    uint64_t seed;
    int logprobs;       /* -1: none; else the chosen token's log-probability and this many
                           alternatives (<= ENG_MAX_LOGPROBS) */
    bool ignore_eos;    /* an EOS id is a token like any other (delivered, fed back): the
                           request ends at max_tokens or the context, in both modes */
    bool no_cache;      /* batched mode: the prompt is not looked up in the prefix cache
                           (all of it is computed; its blocks are still left there for
                           later requests): llama-server's "cache_prompt": false */
    /* Constrained decoding: the output is a string of this grammar's language (NULL: no
     * constraint). The engine takes its own reference at submission and runs a matcher
     * of its own for the request: before each choice the tokens the matcher does not
     * allow get no probability (greedy and sampling alike; the reported log-probabilities
     * stay the model's), the model's EOS ids are allowed only where the output is
     * complete, and once nothing but EOS can follow the request ends (ENG_FINISH_STOP)
     * without running the model for it. max_tokens still ends it (ENG_FINISH_LENGTH),
     * also mid-string. guide_tokens is the size of the grammar's vocabulary (tokens from
     * there up to the model's vocabulary are never chosen). */
    guide_grammar *guide;
    size_t guide_tokens;
    /* Under guidance, a reasoning block before the constrained output (a chat model's
     * bor/eor tokens, as vLLM's reasoning parsers have it): with `think`, the first token
     * may be think_open (beside what the grammar allows), or the prompt left a block open
     * (think_in); inside it the model writes freely but for EOS, and the grammar applies
     * from the token after think_close. */
    bool think, think_in;
    int32_t think_open, think_close;
    /* A LoRA adapter of `adapters` (loaded over the engine's model) active for this request,
     * NULL: none; it must stay loaded while the request runs. An adapter's weights are
     * inputs of a whole run, so a batched step runs the sequences of one adapter (or of
     * none): the groups with work take turns, a step each, and each group is batched; in
     * per-sequence mode the request's generator feeds it. The name must outlive the
     * request. */
    og_adapters *adapters;
    const char *adapter;
} eng_sampling;

enum { ENG_MAX_LOGPROBS = 20 };

typedef enum eng_finish {
    ENG_RUNNING = 0,
    ENG_FINISH_STOP,      /* an EOS token (not part of the output) */
    ENG_FINISH_LENGTH,    /* max_tokens or the context length */
    ENG_FINISH_CANCELLED, /* eng_request_cancel */
    ENG_FINISH_ERROR
} eng_finish;

/* One generated token. */
typedef struct eng_token {
    int32_t id;
    float logprob;                       /* when logprobs >= 0 */
    int n_top;
    int32_t top_ids[ENG_MAX_LOGPROBS];
    float top_logprobs[ENG_MAX_LOGPROBS];
} eng_token;

/* Starts the engine of an opened model (borrowed: it must outlive the engine). The
 * first run is a check that the model runs over the paged cache; when it cannot, the
 * engine uses per-sequence mode and eng_mode_note says why. */
og_status *eng_create(og_model *model, const eng_options *o, eng_engine **out);
/* Cancels everything, stops the thread, frees the engine. Requests still held by their
 * submitters stay valid (finished as cancelled) until released. */
void eng_destroy(eng_engine *e);
/* Why the engine serves one generator per sequence ("" in batched mode). */
const char *eng_mode_note(const eng_engine *e);
bool eng_batched(const eng_engine *e);
/* The context length (positions per sequence, prompt included). */
int eng_context_length(const eng_engine *e);

typedef enum eng_submit_code {
    ENG_SUBMIT_OK = 0,
    ENG_SUBMIT_INVALID,    /* the request can never run: empty, too long, ids out of range */
    ENG_SUBMIT_QUEUE_FULL, /* max_queue requests are waiting */
    ENG_SUBMIT_STOPPED,    /* the engine is shutting down or failed */
    ENG_SUBMIT_NO_MEMORY
} eng_submit_code;

/* Queues a request: prompt[0..n) (copied). On success *out holds the submitter's
 * reference. On failure msg (size bytes) says why. */
eng_submit_code eng_submit(eng_engine *e, const int32_t *prompt, int n, const eng_sampling *s,
                           eng_request **out, char *msg, size_t size);

/* As eng_submit, with a prompt that carries encoder inputs: images (pixel_values,
 * image_grid_thw) or audio (audio_features) from a package's processor, names[0..count)
 * as og_generator_set_inputs takes them (the prompt is its input_ids; at most
 * ENG_MAX_INPUTS; the engine copies them). Such a request runs as one generator of its
 * own (per-sequence mode): a batched engine refuses it (ENG_SUBMIT_INVALID), its steps
 * having no encoder outputs or image positions to feed. */
enum { ENG_MAX_INPUTS = 4 };
eng_submit_code eng_submit_inputs(eng_engine *e, const int32_t *prompt, int n,
                                  const char *const *names, const og_tensor *const *tensors,
                                  int count, const eng_sampling *s, eng_request **out,
                                  char *msg, size_t size);

/* Bytes the batched engine sets aside within kv_memory for a hybrid model's states: one
 * slot of every conv / recurrent state per max_batch sequence, and as many snapshots for
 * the prefix cache (at least 8; when it is on); 0 for a model without states. */
size_t eng_state_bytes(const og_model *m, const eng_options *o);

/* The bytes a request is charged against kv_memory: in per-sequence mode its generator's
 * estimate (see eng_options.kv_memory); in batched mode the KV blocks of its prompt and
 * max_tokens (within the context), and a hybrid model's state slot. */
size_t eng_request_bytes(const eng_engine *e, int n_prompt, const eng_sampling *s);

/* Waits until the request has more than `have` tokens or has finished, at most
 * timeout_s seconds. Returns the number of tokens it has now. */
int eng_request_wait(eng_request *r, int have, double timeout_s);
/* Copies tokens [from, from + n) (n <= what eng_request_wait returned - from). */
void eng_request_tokens(eng_request *r, int from, int n, eng_token *out);
/* ENG_RUNNING while it runs; else how it ended (*error: the message of an error, owned
 * by the request). */
eng_finish eng_request_finish(eng_request *r, const char **error);
/* Prompt tokens that came from the prefix cache (known once the request started). */
int eng_request_cached_tokens(eng_request *r);
/* Asks the engine to stop the request. It ends when the step in flight ends (or before
 * the next one, if it is not part of it) without another token; its KV blocks are back
 * in the pool (and the KV gauges say so) before eng_request_finish reports
 * ENG_FINISH_CANCELLED. A request that finished already is not changed. */
void eng_request_cancel(eng_request *r);
void eng_request_release(eng_request *r);

/* Counters and gauges for /metrics. Histograms have ENG_HIST_BUCKETS upper bounds
 * (seconds) in eng_hist_bounds, and a count per bucket (not cumulative) plus the sum. */
enum { ENG_HIST_BUCKETS = 14 };
extern const double eng_hist_bounds[ENG_HIST_BUCKETS];

typedef struct eng_hist {
    uint64_t count[ENG_HIST_BUCKETS + 1]; /* the last one: above every bound */
    double sum;
    uint64_t n;
} eng_hist;

/* A snapshot (eng_get_stats). Counters only grow; once a request has finished, the
 * counters and gauges include its end. */
typedef struct eng_stats {
    uint64_t requests;       /* submitted (accepted) */
    uint64_t finished, cancelled, failed; /* ended: by EOS or length / cancelled / error */
    uint64_t preempted;      /* sequences preempted (each time) */
    uint64_t prompt_tokens;  /* of accepted requests */
    uint64_t generated_tokens; /* delivered */
    uint64_t cached_prompt_tokens; /* prompt tokens served from the prefix cache */
    uint64_t steps;          /* engine steps (model runs, in batched mode) */
    int queue_depth;         /* requests waiting to start (preempted ones included) */
    int running;             /* sequences admitted and not yet ended */
    int last_batch;          /* sequences in the last step */
    int64_t kv_blocks_total, kv_blocks_used, kv_blocks_cached; /* batched mode; used: held
                                by sequences; cached: free but holding a cached prefix */
    int block_size;          /* positions per KV block (batched mode) */
    eng_hist ttft;           /* submission to first token */
    eng_hist inter_token;    /* between a request's consecutive tokens */
    eng_hist step_time;      /* one engine step */
    /* added after the first API (engine_api_changes.md) */
    uint64_t prefix_lookups; /* admissions that looked their prompt up in the prefix cache */
    uint64_t prefix_hits;    /* ... and found at least one block there */
    int last_step_tokens;    /* tokens run in the last step (decode + prefill chunks;
                                per-sequence mode: sequences stepped) */
    /* the model's cached execution plans after the last step (gen_model_plan_mem) */
    uint64_t plan_bytes, plan_bytes_peak, plans_evicted;
    /* the KV budget in bytes (kv_memory or its default) and the part in use: batched
     * mode, the pool's blocks held by sequences; per-sequence mode, the running
     * generators' charges */
    uint64_t kv_bytes_total, kv_bytes_used;
    /* a hybrid model in batched mode (0 otherwise): its state slots (at most this many
     * sequences run), those held by sequences, the state snapshots the prefix cache holds,
     * and the snapshots taken so far */
    int64_t state_slots_total, state_slots_used, state_snapshots;
    uint64_t state_snapshots_taken;
    /* speculative decoding: verifications, the tokens they drafted and those of them
     * kept (batched mode: as the steps run them; per-sequence mode: each request's
     * generator's, counted when the request ends) */
    uint64_t spec_verifications, spec_drafted, spec_accepted;
} eng_stats;

void eng_get_stats(eng_engine *e, eng_stats *out);

/* A cached prefix to a file and back (engine_prefix.c; serve's /slots save, restore and
 * erase). Batched mode with the prefix cache only (else OG_ERR_UNSUPPORTED saying why); safe from
 * any thread (the pool is touched on the engine's thread, between steps).
 * eng_prefix_save writes the positions of tokens[0..n) the prefix cache holds (its full
 * blocks; a hybrid's up to the last one with a state snapshot, and that snapshot) to
 * path: *n_saved positions, *bytes bytes. eng_prefix_restore reads such a file and puts
 * its whole blocks into the prefix cache as cached blocks (a hybrid's snapshot with them),
 * where requests starting with its tokens find them: *tokens (malloc'd, n_tokens) the
 * file's tokens, *n_restored the positions now cached, *bytes read. A file of another
 * model (a fingerprint of the weight files' names, sizes and sampled bytes, and the KV
 * layout) or a damaged one is OG_ERR_INVALID_ARGUMENT naming why; no room in the pool
 * too. eng_prefix_erase takes the cached blocks of tokens' prefix out of the cache (those
 * a running request holds stay): *n_erased the positions freed. */
og_status *eng_prefix_save(eng_engine *e, const int32_t *tokens, int n, const char *path,
                           int *n_saved, size_t *bytes);
og_status *eng_prefix_restore(eng_engine *e, const char *path, int32_t **tokens, int *n_tokens,
                              int *n_restored, size_t *bytes);
og_status *eng_prefix_erase(eng_engine *e, const int32_t *tokens, int n, int *n_erased);

#endif
