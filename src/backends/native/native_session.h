/* A session: one loaded graph, its kernels, and the execution plans made for it.
 *
 * Execution: nodes run in topological order. Every value has a last use (the last
 * step that reads it, explicitly or through a subgraph; graph outputs live to the end).
 * The first run with a new input-shape class records each value's byte size, freeing
 * each buffer after its last use; from it a plan assigns every intermediate value an
 * offset in one arena so that values whose lifetimes do not overlap share memory. A
 * kernel that declares it (kernel_def.inplace) writes its output over an input that
 * dies at its node, and the plan keeps that sharing. Later runs of the same class
 * allocate nothing for intermediates. A value whose size at run time exceeds its
 * planned size (a data-dependent shape, e.g. NonZero) falls back to the heap for that
 * run.
 *
 * Subgraphs (If, Loop, Scan bodies) get the same machinery: an exec_graph each, made
 * when the session opens, with its own plans keyed by the shapes of its inputs and of
 * the enclosing values it reads. */
#ifndef OG_BACKENDS_NATIVE_NATIVE_SESSION_H
#define OG_BACKENDS_NATIVE_NATIVE_SESSION_H

#include "backends/backend.h"
#include "base/threadpool.h"
#include "graph/graph.h"
#include "backends/native/kernels/kernel.h"

typedef struct exec_plan exec_plan;
typedef struct exec_graph exec_graph;
/* The native backend's context behind an og_session (backend.h). */
typedef struct native_session native_session;

enum { SESSION_MAX_PLANS = 16 };

/* One graph attribute of a node, prepared for execution. */
typedef struct exec_sub {
    const graph *graph;
    exec_graph *exec;
} exec_sub;

/* A graph prepared for execution: the session's graph or one of its subgraphs. */
struct exec_graph {
    native_session *session;
    const graph *graph;
    exec_graph *parent;           /* the graph whose node owns this one; NULL for the main */
    char *label;                  /* "model.onnx", or "model.onnx: node 'L' (Loop): body" */
    int *order;                   /* [n_nodes] topological order */
    const kernel_def **kernels;   /* [n_nodes] indexed by node index */
    char **where;                 /* [n_nodes] "<label>: node 'X' (Op)", made once */
    int *imp_start, *imp_vals;    /* implicit inputs per node (graph_implicit_inputs) */
    int *last_use;                /* [n_values] step of last read; n_nodes for outputs */
    int n_outer;                  /* values this graph reads from enclosing graphs */
    int *outer;                   /* [n_outer] their indices here */
    exec_graph **outer_from;      /* [n_outer] the nearest enclosing graph defining each */
    int *outer_index;             /* [n_outer] the index there */
    int *sub_start;               /* [n_nodes + 1] node i's subgraphs: subs[sub_start[i]..) */
    exec_sub *subs;
    exec_plan *plans[SESSION_MAX_PLANS];
    int n_plans;
    /* per-run state, allocated once */
    const tensor **bound;         /* [n_inputs + n_outer] what the run's key is made of */
    int64_t *key;                 /* [PLAN_KEY_MAX(n_inputs + n_outer)] the run's key */
    tensor *slots;                /* [n_values] produced tensors of the current run */
    tensor *temp;                 /* [cap_temp] omitted optional outputs of the current node */
    int cap_temp;
    const tensor **cur;           /* [n_values] what each value is bound to now */
    size_t *recorded;             /* [n_values] sizes seen while recording a plan */
    int *alias;                   /* [n_values] in-place source seen while recording, or -1 */
    struct og_tensor **user_out;  /* [n_values] (main graph) caller tensors of requested outputs */
    bool *want_out;               /* [n_values] (main graph) value is a requested output */
    void **prepared;              /* [n_nodes] kernel_def.prepare's state, or NULL */
    unsigned *prep_const;         /* [n_nodes] inputs that were constant when prepared */
    bool running;
    /* Row selection (rows_plan.h; main graph only, made by the first run that selects
     * rows): consumers of each value (CSR: node and input slot, -1 for a subgraph's
     * implicit read); per run, the pruned nodes and values, and the gathered rows of
     * full values that pruned nodes read (data in the session's scratch). */
    int *cons_start, *cons_node, *cons_slot;
    uint8_t *rnode, *rkind, *rval; /* rkind: how each node's inputs relate to rows */
    tensor *gath;
    uint8_t *has_gath;
};

/* Kernel scratch memory, a stack of chunks kept from run to run (executor.c). */
typedef struct scratch_chunk {
    char *base;
    size_t size, used;
} scratch_chunk;
typedef struct native_scratch {
    scratch_chunk *chunks;
    int n, cap, cur;
    size_t live;                  /* bytes handed out now */
} native_scratch;

/* The one shared input form the session holds (kernel_ctx.shared): the form most
 * recently made for a value that later nodes read, and what it was made from. Its
 * buffer is kept from run to run like scratch (a decode step needs the same size every
 * time); the form itself belongs to one run of one graph (`gen`) and is forgotten when
 * another form takes its place or the run ends. */
typedef struct shared_form {
    char *buf;
    size_t cap;                   /* bytes of buf */
    size_t size;                  /* the form's bytes (counted in mem_live); 0: none */
    const exec_graph *eg;         /* the graph run that made it, and the value */
    uint64_t gen;
    int value;
    const void *data;             /* the value's tensor as the maker saw it */
    int rank;
    int64_t dims[OG_MAX_RANK];
    int n_key;
    int64_t key[KERNEL_SHARED_KEY];
    const graph_node *writer;     /* the node making it */
    bool ready;                   /* the writer returned successfully */
} shared_form;

struct native_session {
    const model *model;           /* borrowed from the og_session */
    const graph *graph;           /* the graph run: the model's, or its rewrite (fuse.h) */
    graph *fused;                 /* that rewrite, owned, or NULL */
    int fused_nodes;              /* nodes the rewrite made */
    threadpool *pool;
    char *label;                  /* model file name for messages */
    exec_graph *main;
    /* Bytes the executor holds now (plan arenas, heap tensors, scratch) and the most it
     * held during the current or last run. */
    size_t mem_live, mem_peak;
    bool last_stats_used_plan;
    size_t last_stats_arena, last_stats_heap;
    struct og_profiler *prof;     /* times every node while set (backends/profile.h); not owned */
    native_scratch scratch;
    /* Preparation at open (subgraphs included). */
    size_t prepared_bytes;        /* held by prepared states */
    int prepared_nodes;           /* nodes with a state */
    size_t released_bytes;        /* mapped pages of consumed initializers given back */
    double prepare_s;             /* wall time spent preparing */
    double prepare_cpu_s;         /* CPU time of the process meanwhile (all threads) */
    struct pack_cache *pack_cache; /* the main graph's prepared states kept between runs
                                      (base/pack_cache.h), or NULL; closed after them */
    const char *pack_cache_outcome; /* pack_cache_outcome(): "off", "hit", "written"... */
    const struct paged_kv *paged_kv; /* lent to the kernels of every run (see below) */
    const uint8_t *row_forms;        /* kernel_ctx.row_forms of every run, n_row_forms rows */
    int64_t n_row_forms;
    /* The cached plans of all its graphs (subgraphs included), bounded by count per graph
     * (SESSION_MAX_PLANS) and by bytes per session: plan_budget (og_session_options.
     * plan_memory). A plan's bytes are its tables and, once allocated, its arena. Before
     * the main graph's plan allocates its arena, and when a run ends, the least recently
     * used plans go until the rest fit in the budget (a plan larger than the budget alone
     * goes first when its run ends); the plan of the run in progress is never evicted.
     * Plans are only evicted between runs of the main graph, so subgraph plans in use
     * inside a run are safe too. */
    size_t plan_budget;
    size_t plan_bytes, plan_bytes_peak; /* now, and the most since the session opened */
    int n_plans;                  /* cached now, all graphs */
    size_t plans_evicted;         /* for the byte budget, since the session opened */
    uint64_t plan_clock;          /* stamps exec_plan.last_used */
    uint64_t run_gen;             /* counts graph runs (subgraph runs too): shared_form.gen */
    shared_form shared;
    size_t shared_reuses;         /* kernels given a ready shared form in the current run */
    size_t last_stats_shared;
};

/* Prepares an already loaded model, which must outlive the session. */
og_status *native_session_create(const model *m, const og_session_options *options,
                                 native_session **out);
void native_session_close(native_session *s);
/* og_session_run_rows's contract (onnx_genai.h; rows NULL: og_session_run's), on a
 * native session; the arguments are checked for NULL by the caller (runtime/og_session.c). */
og_status *native_session_run_rows(native_session *s, const char *const *input_names,
                                   og_tensor *const *inputs, size_t n_inputs,
                                   const char *const *output_names, og_tensor **outputs,
                                   size_t n_outputs, const og_output_rows *rows);

/* Frees a prepared graph and its subgraphs (NULL is fine). */
void exec_graph_free(exec_graph *eg);
/* Frees the heap buffers a graph's last run left in its slots. */
void exec_graph_release(exec_graph *eg);
/* Frees a plan and takes it off the session's byte counts. */
void native_plan_free(native_session *s, exec_plan *p);
/* Caches a plan just built for eg (its count limit evicts eg's least recently used). */
void native_plan_store(exec_graph *eg, exec_plan *p);
/* Allocates p's arena if it has none; when eg is the main graph, first evicts least
 * recently used plans other than p so that the cache with the arena fits the budget. */
og_status *native_plan_arena(exec_graph *eg, exec_plan *p);
/* Evicts least recently used plans until the cache fits the budget (between runs). */
void native_plans_trim(native_session *s);

/* Attaches a profiler (NULL detaches): every later node run is recorded in it. */
void native_session_set_profiler(native_session *s, struct og_profiler *p);
/* Lends a paged KV cache (backends/paged_kv.h) to the kernels of the following runs, until
 * set again (NULL: none). The caller owns it and keeps it valid while runs use it. */
void native_session_set_paged_kv(native_session *s, const struct paged_kv *kv);
/* Row forms (kernel_ctx.row_forms) for the kernels of the following runs, until set
 * again (NULL: none); the caller keeps the array alive meanwhile. */
void native_session_set_row_forms(native_session *s, const uint8_t *forms, int64_t n);

/* Statistics of the last run (backend.h). */
void native_session_last_stats(const native_session *s, backend_run_stats *out);

/* The state node n of eg runs with (kernel_ctx.prepared): its prepared state when the
 * run's inputs ins bind every input that was constant at preparation to that same
 * initializer, else NULL. */
static inline void *native_prepared(const exec_graph *eg, const graph_node *n,
                                    const tensor *const *ins) {
    void *st = eg->prepared[n->index];
    if (!st) return NULL;
    unsigned c = eg->prep_const[n->index];
    for (int k = 0; c && k < n->n_inputs && k < 32; k++, c >>= 1)
        if ((c & 1) && ins[k] != eg->graph->values[n->inputs[k]].initializer) return NULL;
    return st;
}

#endif
