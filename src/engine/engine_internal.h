/* The engine's private state (engine.c: thread, queue, requests, statistics;
 * engine_batch.c: batched steps over the paged cache; engine_single.c: per-sequence
 * mode; engine_sample.c: choosing tokens). */
#ifndef OG_ENGINE_ENGINE_INTERNAL_H
#define OG_ENGINE_ENGINE_INTERNAL_H

#include "engine/engine.h"
#include "engine/kv_pool.h"

#include "backends/paged_kv.h"
#include "genai/model.h"
#include "genai/search.h"
#include "genai/speculative.h"
#include "genai/step.h"

#include <pthread.h>
#include <stdatomic.h>

typedef struct eng_seq eng_seq;

struct eng_request {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    atomic_int refs;
    atomic_bool cancel;
    eng_sampling s;
    int32_t *prompt;
    int n_prompt;
    /* encoder inputs beside the prompt (eng_submit_inputs): the request's copies, given
     * with input_ids to its generator's og_generator_set_inputs */
    int n_inputs;
    char *input_names[ENG_MAX_INPUTS];
    og_tensor *inputs[ENG_MAX_INPUTS];
    /* under mu */
    eng_token *out;
    int n_out, cap_out;
    eng_finish finish;
    char *error;
    int cached_tokens;
    /* engine thread only */
    eng_seq *seq;
    double t_submit, t_last;
};

/* A request as the engine runs it. */
struct eng_seq {
    eng_request *req;
    int32_t *tokens;     /* prompt, then generated tokens */
    int n_tokens, cap_tokens;
    int n_gen;           /* generated (delivered) */
    int n_cached;        /* positions whose keys and values are in the blocks */
    int32_t *blocks;     /* block table */
    int n_blocks, cap_blocks;
    int n_reg;           /* leading full blocks registered in the prefix cache (or matched) */
    uint64_t reg_hash;   /* chained hash of the last of them */
    bool matched;        /* the prefix cache was consulted for this admission */
    gen_rng rng;
    int step_n;          /* tokens in the current step */
    bool admitted;       /* counted in the running gauge: in running, or ending from there */
    int logit_row;       /* its row of e->logits after the step (its last token's, when
                            the step ends its pending tokens), else -1 */
    og_generator *gen;   /* per-sequence mode */
    size_t mem;          /* per-sequence mode: bytes charged to the memory budget while its
                            generator lives (eng_single_bytes) */
    guide_matcher *matcher; /* under guidance: the output's place in the grammar, advanced
                            by every delivered token. A preempted sequence keeps it: its
                            tokens are recomputed, never chosen again */
    int slot;            /* hybrid models: its state slot, or -1 (waiting, per-sequence) */
    int snap;            /* hybrid models: the snapshot its prefix match starts from, or -1 */
    int cut;             /* hybrid models: a snapshot boundary its prompt's chunks end at
                            (the end of the cached blocks it matched but could not use, for
                            lack of a snapshot there), or 0 */
    enum { THINK_MAY, THINK_IN, THINK_DONE } think; /* under guidance with
                            eng_sampling.think: before the first token, inside the
                            reasoning block, or past it (the grammar applies) */
    /* speculative decoding in batched mode (engine_spec.c): the acceptance estimate, the
     * shadow draft and the counts (made at its first decode step: spec_on), and the
     * tokens drafted after its pending one for this step (n_draft; step_n = 1 + n_draft) */
    bool spec_on;
    gen_spec spec;
    int32_t draft[GEN_SPEC_MAX_DRAFT];
    int n_draft;
    int spec_bak;        /* a hybrid's verification: its slot's copy in e->spec_bak */
    og_generator *dgen;  /* with a draft model: its generator of the sequence */
    struct gen_mtp *mtp; /* with an MTP head (genai/mtp.h): the main model's hidden rows at
                            its positions, as the steps return them, and the head's
                            generator of the sequence; made at its first run */
};

struct eng_engine {
    og_model *m;
    eng_options o;
    int context, vocab, step_tokens;
    int64_t width_threshold; /* the mask width a LongRoPE graph tests (original_max), or -1 */
    pthread_t thread;
    bool thread_started;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool stopping;       /* under mu */
    eng_seq **incoming;  /* under mu: submitted, not yet seen by the thread */
    int n_incoming, cap_incoming;
    int n_queued;        /* under mu: incoming + waiting */
    /* engine thread only */
    eng_seq **waiting;   /* admitted in order; a preempted sequence goes back to the front */
    int n_waiting, cap_waiting;
    eng_seq **running;   /* [max_batch] in admission order */
    int n_running;
    /* per-sequence mode: the generators' estimated bytes, bounded by kv_memory */
    size_t seq_budget, seq_used;
    /* batched mode */
    bool batched;
    char note[512];
    kv_pool *pool;
    bool kv_codes;       /* the pool holds the codes of the attention nodes' own scales */
    const char **layer_names;
    int32_t *layer_runs;
    int32_t *layer_swc_caps;  /* [layers]: the generator's window-sized cache capacity, or 0 */
    paged_kv_seq *pseqs;
    eng_seq **pseq_of;   /* [max_batch + 1] the sequence of each of a run's pseqs (with an
                            MTP head its hidden rows are kept for it) */
    int64_t *ids, *pos, *mask;
    int32_t *ids32, *pos32, *mask32;
    uint8_t *forms; /* the staged tokens' row forms (step.h) */
    int tok_cap;
    void *logits;        /* [max_batch + 1][vocab] in the logits dtype: the rows a step
                            samples from */
    int64_t *logit_rows; /* [max_batch + 1] their tokens in the step */
    /* LoRA adapters (eng_sampling.adapter): a step runs the sequences of one adapter, the
     * groups taking turns; step_group is a request of the step's group (NULL: no work) */
    const eng_sampling *step_group;
    const eng_sampling **groups; /* [max_batch + 1] the groups with work, this step */
    unsigned group_turn;
    gen_step_io io;      /* what a step hands to og_session_run, made once (genai/step.h) */
    /* Hybrid models (conv / recurrent states beside the paged KV; engine_state.c): one
     * state slot per running sequence, and snapshots of states at block boundaries for
     * the prefix cache. Entry k of the model's states (m->cache[state_idx[k]]) keeps its
     * slots as one [max_batch][row_bytes] array, so that contiguous slots are one
     * [B, ...] tensor; a snapshot holds every entry's row, one after the other.
     * eng_batch_init plans their number and fills n_slots, n_snaps and state_reserve. */
    bool hybrid;
    int n_state;
    int *state_idx;      /* [n_state] their indices in m->cache */
    int *state_of;       /* [m->n_cache] k, or -1 for a KV entry */
    char **slot_mem;     /* [n_state] each [n_slots][row_bytes] */
    char **pres_mem;     /* [n_state] the present of an entry whose op cannot write over
                            its past ([n_slots][row_bytes]), else NULL */
    char *state_tmp;     /* one row of the widest entry (swapping slots) */
    size_t slot_bytes;   /* one slot: every entry's row */
    int n_slots;         /* running sequences at most (<= max_batch: --kv-memory may hold
                            fewer slots) */
    eng_seq **slot_owner; /* [n_slots] */
    int n_slots_used;
    int n_snaps, snap_stride; /* snapshots; positions a snapshot boundary is a multiple of */
    char *snap_mem;      /* [n_snaps][slot_bytes] */
    uint64_t *snap_hash, *snap_used; /* [n_snaps] the chained hash of the prefix it ends
                            (kv_pool_hash; 0: free); last use (LRU) */
    uint64_t snap_tick;
    size_t state_reserve; /* bytes of the slots and snapshots, within kv_memory */
    int max_rows;        /* rows of one decode run of a hybrid (max_batch, or fewer) */
    eng_seq **state_rows; /* [max_batch] a decode run's sequences, by row */
    eng_seq **state_tmp_rows; /* [max_batch] scratch of eng_state_gather */
    bool *slot_mark;     /* [n_slots] scratch of eng_state_gather */
    int n_snaps_held;    /* snapshots in use (snap_hash != 0) */
    uint64_t snaps_taken;
    /* Speculative decoding in batched mode (engine_spec.c): prompt-lookup drafts verified
     * within the step. spec_rows: logits rows for drafted tokens beyond one per sequence;
     * the step's time as a function of its tokens, a decayed least-squares line over
     * timed runs (sums of weight, tokens, seconds, tokens^2, tokens*seconds), the first
     * run of each token count (which makes its plan) left out (spec_seen[tokens]). */
    bool spec;
    int spec_rows;
    double spec_w, spec_x, spec_y, spec_xx, spec_xy;
    /* drafted tokens kept and tried in verifications of all sequences (decayed): a new
     * sequence's acceptance starts from them (eng_spec_verified) */
    double spec_succ, spec_tries;
    uint8_t *spec_seen;  /* [tok_cap + 1] */
    /* a hybrid's verifications run apart, each over its sequence's slot, whose states are
     * copied first (spec_baks of them a step, slot_bytes each) to go back to when fewer
     * drafts are kept than ran; spec_scratch: a logits row no sequence reads */
    char *spec_bak;
    int spec_baks, spec_scratch;
    float *row, *work, *lp; /* [vocab], [2 vocab], [vocab] */
    uint32_t *gmask;     /* a matcher's token mask, gmask_words words */
    size_t gmask_words;
    /* a job the thread runs between steps (eng_on_thread; under mu), and its end */
    struct eng_ctl *ctl;
    pthread_cond_t ctl_cv;
    uint64_t fingerprint; /* of the model's weights (engine_prefix.c; 0: not read yet) */
    /* statistics */
    pthread_mutex_t stats_mu;
    eng_stats st;
};

double eng_now(void);
/* Runs fn(e, arg) on the engine's thread between two steps (nothing of a step in flight)
 * and waits for it; false, without running it, when the engine is stopping. */
bool eng_on_thread(eng_engine *e, void (*fn)(eng_engine *, void *), void *arg);
void eng_hist_add(eng_hist *h, double v);

/* engine.c: delivering results (engine thread) */
/* Hands a chosen token to the request; an error (out of memory) leaves the sequence
 * running for the caller to end on its own error path. */
og_status *eng_deliver(eng_engine *e, eng_seq *s, const eng_token *t);
void eng_finish_seq(eng_engine *e, eng_seq *s, eng_finish why, const char *error);
/* A sequence enters running / leaves it without ending (preempted): the running gauge. */
void eng_admit(eng_engine *e, eng_seq *s);
void eng_unadmit(eng_engine *e, eng_seq *s);

/* engine_batch.c */
og_status *eng_batch_init(eng_engine *e);
void eng_batch_free(eng_engine *e);
/* One step: schedule, run, deliver. */
void eng_batch_step(eng_engine *e);
/* Gives back a sequence's blocks (last first). */
void eng_batch_drop_blocks(eng_engine *e, eng_seq *s);

/* engine_spec.c: speculative decoding in batched mode */
/* Logits rows set aside for drafted tokens (0 without speculation). */
int eng_spec_rows(const eng_engine *e);
/* After the decode rows are scheduled (each running sequence with one pending token has
 * step_n 1): drafts for the decoding sequences of the step's group where the cost model
 * expects them to pay, within `budget` tokens; returns the tokens they take. */
int eng_spec_plan(eng_engine *e, int budget);
/* A run of T tokens took `seconds`. */
void eng_spec_timed(eng_engine *e, int T, double seconds);
/* A verification of k drafted tokens of s kept `kept` of them, deciding `emitted` tokens
 * (s's estimate, the engine's counts and statistics). */
void eng_spec_verified(eng_engine *e, eng_seq *s, int k, int kept, int emitted);

/* engine_state.c: state slots and snapshots of hybrid models. A hybrid's prompt chunks
 * end at multiples of ENG_SNAP_ALIGN tokens where they can (a kernel that runs a long
 * prompt in fixed pieces, LinearAttention's 64 tokens, then starts its pieces where a run
 * alone starts them), and snapshots are taken at multiples of snap_stride, the first
 * multiple of the block size that is one of ENG_SNAP_ALIGN. */
enum { ENG_SNAP_ALIGN = 64 };
og_status *eng_state_init(eng_engine *e);
void eng_state_free(eng_engine *e);
/* The slots (max_batch, or fewer down to one) and snapshots (max_batch with the prefix
 * cache, or fewer) whose bytes fit `limit`, snapshots given up first; returns their bytes
 * (0 without states). */
size_t eng_state_plan(const og_model *m, const eng_options *o, double limit, int *n_slots,
                      int *n_snaps);
/* Slots and snapshots as eng_batch_init planned them (e->n_slots, e->n_snaps). */
/* A slot for s (zeroed, or its matched snapshot copied in); false when none is free. */
bool eng_state_take(eng_engine *e, eng_seq *s);
void eng_state_drop(eng_engine *e, eng_seq *s);
/* The slots of the sequences seqs[0..n) made [0, n) (contents moved, the fewest moves),
 * and seqs reordered so that seqs[i] holds slot i. */
void eng_state_gather(eng_engine *e, eng_seq **seqs, int n);
/* Past and present views of every state entry for slots [r0, r0 + nr) (gen_step_cache). */
og_status *eng_state_past(eng_engine *e, int i, int r0, int nr, og_tensor *slot, og_tensor **out);
og_status *eng_state_present(eng_engine *e, int i, int r0, int nr, og_tensor *slot,
                             og_tensor **out);
/* After a run over slots [r0, r0 + nr): presents written apart copied into the slots. */
void eng_state_settle(eng_engine *e, int r0, int nr);
/* The longest usable prefix of blocks[0..got): the last block with a snapshot at its end,
 * its snapshot in *snap (-1: none, 0 blocks). */
int eng_state_match(eng_engine *e, const int32_t *blocks, int got, int *snap);
/* Slot `slot`'s states to buf (slot_bytes: every entry's row in order), or back from it
 * (into_slot). */
void eng_state_copy(eng_engine *e, int slot, void *buf, bool into_slot);
/* After a run: a snapshot of s's slot at its boundary, when it is one worth keeping. */
void eng_state_snapshot(eng_engine *e, eng_seq *s);
/* Snapshots by the chained hash of the prefix they end (engine_prefix.c): the one kept
 * under h (slot_bytes, every entry's row in order) or NULL; keeping state[0..slot_bytes)
 * under h (false without snapshots); dropping the one under h. */
const char *eng_state_kept(const eng_engine *e, uint64_t h);
bool eng_state_keep(eng_engine *e, uint64_t h, const void *state);
void eng_state_forget(eng_engine *e, uint64_t h);

/* engine_single.c */
/* Sets the memory budget of per-sequence mode (o.kv_memory, or its default). */
void eng_single_init(eng_engine *e);
/* What a request of n_tokens prompt tokens is charged in per-sequence mode: its
 * generator's estimated bytes (gen_generator_bytes, one prompt snapshot). */
size_t eng_single_bytes(const eng_engine *e, int n_tokens, const eng_sampling *sp);
void eng_single_step(eng_engine *e);

/* engine_sample.c: the next token from a row of float32 logits (scratch of the caller's:
 * under guidance the tokens the sequence's matcher does not allow are set to -inf in
 * place, so only allowed ones are chosen); fills t (id, log-probabilities of the row as
 * it came). An error of the matcher (nothing allowed, out of memory) is returned. */
og_status *eng_choose(eng_engine *e, eng_seq *s, float *logits, eng_token *t);
/* Under guidance, after t was chosen and is not an EOS that ends the request: the
 * matcher advances by it (or the reasoning block moves on); *done is true when nothing
 * but EOS can follow now. */
og_status *eng_guide_advance(eng_seq *s, int32_t id, bool *done);
/* The request's top log-probability alternatives from e->lp (log-softmax of the row). */
void eng_choose_top(eng_engine *e, const eng_seq *s, eng_token *t);
/* Whether id ends generation (an EOS id of the model, unless ignore_eos). */
bool eng_is_eos(const eng_engine *e, const eng_seq *s, int32_t id);

#endif
