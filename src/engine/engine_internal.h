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
    enum { THINK_MAY, THINK_IN, THINK_DONE } think; /* under guidance with
                            eng_sampling.think: before the first token, inside the
                            reasoning block, or past it (the grammar applies) */
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
    const char **layer_names;
    int32_t *layer_runs;
    paged_kv_seq *pseqs;
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
    float *row, *work, *lp; /* [vocab], [2 vocab], [vocab] */
    uint32_t *gmask;     /* a matcher's token mask, gmask_words words */
    size_t gmask_words;
    /* statistics */
    pthread_mutex_t stats_mu;
    eng_stats st;
};

double eng_now(void);
void eng_hist_add(eng_hist *h, double v);

/* engine.c: delivering results (engine thread) */
void eng_deliver(eng_engine *e, eng_seq *s, const eng_token *t);
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
