/* The execution seam: what og_session needs from whatever runs a graph.
 *
 * The public og_session_* functions (src/runtime/og_session.c) load our IR of the graph
 * (always: the generation layer reads it, and `auto` decides from it), pick a backend,
 * and dispatch through its table. A backend is a table of functions and a context
 * pointer of its own. Members after `free` are optional: NULL means the default stated
 * beside each. Inputs and outputs are described from the IR for every backend, so the
 * generation layer's decisions (which input gets which feed, which present may share
 * past's buffer) are the same whatever runs the graph.
 *
 * The run contract is og_session_run's (include/onnx_genai.h): named input tensors,
 * borrowed; for each requested output either a caller tensor (dtype and shape must
 * match; the result is written into its memory) or NULL, for which the backend returns
 * a new tensor the caller owns. A caller tensor may be an input's memory too (past and
 * present bound to one buffer, when the op writes present over past in place). */
#ifndef OG_BACKENDS_BACKEND_H
#define OG_BACKENDS_BACKEND_H

#include "graph/graph.h"

#include <stdbool.h>
#include <stddef.h>

struct og_profiler;
struct paged_kv;

/* What a backend opens. */
typedef struct backend_open_args {
    const model *model;        /* our IR of the graph; outlives the backend's context */
    const char *path;          /* the .onnx file, or NULL for a graph in memory */
    const void *bytes;         /* the graph in memory (path == NULL) */
    size_t n_bytes;
    const char *base_dir;      /* external data folder for a graph in memory, or NULL */
    const char *label;         /* the graph's name in messages ("model.onnx") */
    const og_session_options *options; /* every field filled */
} backend_open_args;

/* Counters of the last run, for tests and benchmarks. */
typedef struct backend_run_stats {
    bool used_plan;          /* native: a cached plan served the run */
    size_t arena_bytes;      /* native: that plan's arena */
    size_t heap_allocations; /* native: intermediate/scratch heap allocations, subgraphs
                                included */
    size_t peak_bytes;       /* native: the most the executor held during the run */
    size_t copied_bytes;     /* bytes copied between the backend's memory and the
                                caller's (onnxruntime: outputs it allocated itself,
                                string tensors) */
    size_t copies;           /* how many such copies */
    /* native: the cached execution plans (native/native_session.h) after the run, all graphs */
    size_t plan_bytes;       /* their tables and arenas */
    size_t plan_bytes_peak;  /* the most they held since the session opened */
    size_t plans;            /* how many */
    size_t plans_evicted;    /* evicted for the byte budget since the session opened */
    size_t plan_budget;      /* og_session_options.plan_memory */
    size_t shared_reuses;    /* native: kernels that read a form of an input another node
                                made in the run (kernel_ctx.shared: MatMulNBits' quantized
                                activations), subgraphs included */
} backend_run_stats;

/* What a backend prepared when the session opened (kernels' prepacked weights). */
typedef struct backend_prep_stats {
    size_t bytes;     /* held by prepared states */
    size_t released;  /* mapped weight pages given back (a prepared copy replaced them) */
    int nodes;
    double secs;      /* spent preparing (wall) */
    double cpu_secs;  /* CPU time of all threads meanwhile */
    const char *cache; /* the pack cache's outcome: "off", "hit", "written", "rebuilt",
                          "failed" (base/pack_cache.h); NULL: the backend has none */
} backend_prep_stats;

/* How far a backend gets with an op (backend_ops.op_support). */
typedef enum backend_op_support {
    BACKEND_OP_UNKNOWN = 0,  /* no kernel for the op at any opset */
    BACKEND_OP_OTHER_OPSET,  /* a kernel for other opsets of it, not this one */
    BACKEND_OP_RUNS,
} backend_op_support;

/* The kernels a backend's hot ops run on this CPU (at the instruction set allowed now),
 * for `bench`'s report. */
typedef struct backend_kernel_names {
    const char *matmulnbits_short; /* int8 MatMulNBits, decode-sized rows (M < 16) */
    const char *matmulnbits_long;  /* the same, prompt-sized rows */
    const char *gemm_f32;          /* the float32 GEMM */
} backend_kernel_names;

/* Row forms (backend_ops.set_row_forms): a token's run alone, in onnxruntime, gives the
 * product of its rows to kernels whose arithmetic depends on the rows of a call (MLAS's
 * int8 MatMulNBits takes another kernel for one row). Per token: */
enum {
    BACKEND_ROW_MANY = 0,  /* one of several tokens of its sequence's run */
    BACKEND_ROW_ALONE = 1, /* the only token of its run (a decode step) */
    BACKEND_ROW_LAST = 2,  /* the last of a run of 128k + 1 tokens, k >= 1 (onnxruntime
                              splits such a run into 128-row tiles when it has threads) */
};

typedef struct backend_ops {
    const char *name; /* "native", "onnxruntime" */
    og_status *(*open)(const backend_open_args *args, void **ctx);
    og_status *(*run)(void *ctx, const char *const *input_names, og_tensor *const *inputs,
                      size_t n_inputs, const char *const *output_names, og_tensor **outputs,
                      size_t n_outputs);
    void (*free)(void *ctx);
    /* Optional. og_session_run_rows: only the selected rows of rows->output (a caller
     * tensor for it has the selection's shape). Default: the whole output is computed
     * (run) and the rows gathered from it (base/rows.h, rows_sel_take). */
    og_status *(*run_rows)(void *ctx, const char *const *input_names,
                           og_tensor *const *inputs, size_t n_inputs,
                           const char *const *output_names, og_tensor **outputs,
                           size_t n_outputs, const og_output_rows *rows);
    /* Optional. Whether the backend can run this node (its op, domain and opset; the
     * node's subgraphs are asked about separately). Default: every node. `auto` asks
     * the native backend. */
    bool (*supports_node)(const graph_node *node);
    /* Optional. Whether the backend has a kernel for an op (domain "" is ONNX's) at an
     * opset, for `show`'s table of a graph's ops. Default: unknown (NULL member). */
    backend_op_support (*op_support)(const char *domain, const char *op_type, int64_t opset);
    /* Optional. The counters of the last run. Default: all zero. */
    void (*stats)(const void *ctx, backend_run_stats *out);
    /* Optional. Compute threads the backend uses. Default: 0 (unknown). */
    int (*threads)(const void *ctx);
    /* Optional. Records every node run into p from now on (NULL: stops; profile.h
     * beside this header). Default: profiling is refused for the session. */
    void (*set_profiler)(void *ctx, struct og_profiler *p);
    /* Optional. What the session prepared when it opened. Default: nothing. */
    void (*prep_stats)(const void *ctx, backend_prep_stats *out);
    /* Optional. Lends the serving engine's paged KV cache (backends/paged_kv.h) to
     * the kernels of the following runs (NULL: none). Default: the backend cannot read
     * one (the engine then serves the model per sequence). */
    void (*set_paged_kv)(void *ctx, const struct paged_kv *kv);
    /* Optional. Tells the kernels of the following runs, per token row of the run's
     * activations (n rows; NULL: none), how onnxruntime computes that token in a run of
     * its sequence alone (BACKEND_ROW_*; kernel_ctx.row_forms). Default: ignored. */
    void (*set_row_forms)(void *ctx, const uint8_t *forms, int64_t n);
    /* Optional. The kernels its hot ops use. Default: not reported (NULL member). */
    void (*kernel_names)(backend_kernel_names *out);
} backend_ops;

extern const backend_ops backend_native;
extern const backend_ops backend_ort;

#endif
