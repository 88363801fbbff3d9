/* A session: one loaded graph, its kernels, and the execution plans made for it.
 *
 * Execution: nodes run in topological order. Every value has a last use (the last
 * step that reads it; graph outputs live to the end). The first run with a new
 * input-shape class records each value's byte size; from it a plan assigns every
 * intermediate value an offset in one arena so that values whose lifetimes do not
 * overlap share memory. Later runs of the same class allocate nothing for
 * intermediates. A value whose size at run time exceeds its planned size (a
 * data-dependent shape, e.g. NonZero) falls back to the heap for that run. */
#ifndef OG_RUNTIME_SESSION_H
#define OG_RUNTIME_SESSION_H

#include "base/threadpool.h"
#include "graph/graph.h"
#include "backends/native/kernels/kernel.h"

typedef struct exec_plan exec_plan;

enum { SESSION_MAX_PLANS = 16 };

struct og_session {
    model *model;
    const graph *graph;
    threadpool *pool;
    char *label;                  /* model file name for messages */
    int *order;                   /* [n_nodes] topological order */
    const kernel_def **kernels;   /* [n_nodes] indexed by node index */
    char **where;                 /* [n_nodes] "model.onnx: node 'X' (Op)", made once */
    int *last_use;                /* [n_values] step of last read; n_nodes for outputs */
    og_value_info *input_info, *output_info;
    exec_plan *plans[SESSION_MAX_PLANS];
    int n_plans;
    uint64_t run_count;
    /* per-run state */
    tensor *slots;                /* [n_values] produced tensors of the current run */
    const tensor **cur;           /* [n_values] what each value is bound to now */
    size_t *recorded;             /* [n_values] sizes seen while recording a plan */
    bool last_stats_used_plan;
    size_t last_stats_arena, last_stats_heap;
};

/* Open from an already loaded model; takes ownership of m on success and on failure. */
og_status *session_create(model *m, const og_session_options *options, og_session **out);

/* Statistics of the last run, for tests and benchmarks. */
typedef struct session_run_stats {
    bool used_plan;          /* true when a cached plan served the run */
    size_t arena_bytes;      /* size of that plan's arena */
    size_t heap_allocations; /* intermediate/scratch allocations made on the heap */
} session_run_stats;
void session_last_stats(const og_session *s, session_run_stats *out);

#endif
