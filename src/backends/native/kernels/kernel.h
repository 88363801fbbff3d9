/* The contract between the executor and an op implementation.
 *
 * A kernel is one function per (domain, op type, opset range). It reads its node's
 * attributes, checks its inputs, asks the executor for each output buffer with
 * kernel_output() once the output shape is known, and fills it. The executor decides
 * where output memory comes from (planned arena, caller buffer, heap); a kernel never
 * allocates outputs itself. Dtype dispatch happens inside the kernel: an input dtype it
 * does not implement is an OG_ERR_UNSUPPORTED error naming the dtype.
 *
 * A kernel may also prepare per-node state once, when the session opens, from the
 * node's constant inputs (prepacked weights, precomputed sums and scales), and receive
 * it on every run as ctx->prepared; the executor owns its lifetime (kernel_def.prepare
 * and .release below). */
#ifndef OG_NATIVE_KERNELS_KERNEL_H
#define OG_NATIVE_KERNELS_KERNEL_H

#include "base/status.h"
#include "base/tensor.h"
#include "base/threadpool.h"
#include "backends/backend.h"
#include "graph/graph.h"

typedef struct kernel_ctx kernel_ctx;
struct paged_kv;

/* Output allocator supplied by the executor. */
typedef og_status *(*kernel_output_fn)(kernel_ctx *ctx, int index, og_dtype dtype,
                                       int rank, const int64_t *dims, tensor **out);
/* Scratch memory valid until the kernel returns (64-byte aligned, uninitialized). */
typedef og_status *(*kernel_scratch_fn)(kernel_ctx *ctx, size_t size, void **out);
/* Runs g, one of the node's graph attributes, with inputs[i] bound to g's i-th input
 * (n_inputs == g->n_inputs); values g reads from enclosing graphs are bound by the
 * executor. On success outputs[i] is g's i-th output: read-only, valid until the next
 * run of g or until the kernel returns. The executor prepares every subgraph when the
 * session opens and plans it per shape class like a graph, so repeated runs of one
 * shape (loop iterations) allocate nothing. */
typedef og_status *(*kernel_subgraph_fn)(kernel_ctx *ctx, const graph *g, int n_inputs,
                                         const tensor *const *inputs, const tensor **outputs);

/* Memory valid until the run ends (64-byte aligned, uninitialized): the bytes of strings
 * a kernel makes (Cast to string), which its string outputs point to. */
typedef og_status *(*kernel_hold_fn)(kernel_ctx *ctx, size_t size, void **out);

/* A form of one input that the kernels reading that value all derive from it alike
 * (MatMulNBits' int8 copy of its activation, which a decoder's gate and up projections
 * both quantize), made once per run of the graph and shared. `key` (n_key words, at most
 * KERNEL_SHARED_KEY) says which form, besides the input's data; the kernel that makes
 * it puts first a word of its own (its kind). *out gets size bytes (64-byte aligned)
 * for the form, or NULL when the executor offers none (no later node reads the value,
 * or no executor: kernel tests): the kernel then makes the form in its own scratch.
 * *ready: an earlier node of this run made the form with the same key and size from
 * the same value, and it is there: read it, do not write it. Otherwise the kernel writes
 * all of it before it returns successfully (a node that fails leaves nothing shared).
 * Valid until the kernel returns. */
enum { KERNEL_SHARED_KEY = 8 };
typedef og_status *(*kernel_shared_fn)(kernel_ctx *ctx, int input, const int64_t *key,
                                       int n_key, size_t size, void **out, bool *ready);

struct kernel_ctx {
    const graph_node *node;
    int64_t opset;                  /* version of the node's domain the model imports */
    int n_inputs;
    const tensor *const *inputs;    /* inputs[i] NULL for an omitted optional input */
    int n_outputs;                  /* as the node declares (omitted ones included) */
    threadpool *pool;               /* may be NULL: run inline */
    kernel_output_fn output;
    kernel_scratch_fn scratch;
    void *exec;                     /* the executor's private state */
    const char *where;              /* "model.onnx: node 'X' (Op)", for messages */
    kernel_hold_fn hold;            /* may be NULL: kernel_hold() then fails */
    kernel_subgraph_fn subgraph;    /* NULL where subgraphs cannot run (kernel tests) */
    /* What kernel_def.prepare made for this node, or NULL: nothing was prepared, or this
     * run binds a value of its own to an input that was constant at preparation (a
     * caller may feed an initializer by name). With NULL the kernel computes from its
     * inputs as if it had no preparation. */
    void *prepared;
    const graph *graph;             /* the graph the node belongs to (may be NULL) */
    const struct paged_kv *paged_kv; /* a paged KV cache lent for this run (paged_kv.h), or
                                        NULL: GroupQueryAttention reads its layers from it */
    kernel_shared_fn shared;        /* may be NULL: kernel_shared() then offers nothing */
    /* Per token row of the run (n_row_forms rows, in the flat order of a [batch,
     * sequence, ...] activation; NULL: not given), how onnxruntime would compute that
     * token had it run alone (backends/backend.h's BACKEND_ROW_*: ALONE in a run of that
     * one token, LAST as the last of a run of 128k + 1 tokens, k >= 1, else MANY). A kernel
     * whose arithmetic onnxruntime varies with the rows of a call (MatMulNBits at
     * accuracy_level 4) computes each row in its own form, so that a token's bits do not
     * depend on what it is batched with. Where a node computes only selected rows, these
     * are the selected rows' forms. */
    const uint8_t *row_forms;
    int64_t n_row_forms;
};


/* Preparation of one node when its session opens (kernel_def.prepare). The executor
 * fills the first fields; prepare sets the results. Nodes are prepared in parallel
 * (each prepare on one thread, never two for the same node). */
typedef struct kernel_prep {
    const graph_node *node;
    int64_t opset;
    int n_inputs;
    const tensor *const *inputs;  /* the constant inputs (initializers of the node's own
                                     graph); NULL for inputs given at run time and omitted ones */
    const char *where;            /* as kernel_ctx.where */
    /* A file of prepared states kept between runs (base/pack_cache.h), or NULL. A kernel
     * that keeps its state there looks it up (pack_cache_find) by an id derived from
     * cache_id, which names the node and its constant inputs in this model's files;
     * while the cache is being written it writes its entry instead, sets `deferred` and
     * no state, and is called again once the file is complete. */
    struct pack_cache *cache;
    uint64_t cache_id;
    /* results */
    void *state;                  /* given to every run as kernel_ctx.prepared; NULL: none */
    size_t bytes;                 /* memory the state holds (`show` and `bench` report it) */
    unsigned consumed;            /* bit i (KERNEL_INPUT(i)): runs given the state never read
                                     input i's data, so once no other reader needs it the
                                     executor releases its pages from the file mapping */
    bool deferred;                /* its entry was written to `cache`: prepare again */
} kernel_prep;

/* Names the layout of every state a kernel keeps in the pack cache: change it whenever
 * one changes (a file of another tag is never read). */
#define KERNEL_PREP_CACHE_TAG "onnx-genai prepared states 1: MatMulNBits 4-bit panels of 16"

/* Returns an error only for what makes the session unusable (out of memory). A node the
 * kernel cannot prepare (an input shape or attribute it does not handle, which the run
 * will report) leaves state NULL. */
typedef og_status *(*kernel_prepare_fn)(kernel_prep *prep);
/* Frees a state made by prepare (called once, when the session closes). */
typedef void (*kernel_release_fn)(void *state);

#define KERNEL_INPUT(i) (1u << (i))

/* The domain of the nodes the executor makes when it fuses several of a graph's nodes
 * into one (backends/native/fuse.h); no exporter writes it. */
#define KERNEL_FUSED_DOMAIN "onnx_genai.fused"

typedef og_status *(*kernel_fn)(kernel_ctx *ctx);
/* Declares a family's kernel `name` as og_status *cpu_<name>(kernel_ctx *ctx): a family
 * header lists its kernels in an X macro (FAMILY_KERNELS(X)) expanded with this. */
#define KERNEL_DECLARE(name) og_status *cpu_##name(kernel_ctx *ctx);

typedef struct kernel_def {
    const char *domain;  /* "" or "com.microsoft" */
    const char *op_type;
    int since;           /* first opset version this implementation covers */
    int until;           /* last one (inclusive) */
    kernel_fn run;
    /* Optional fields follow; table entries leave out those they do not set. */
    /* In-place: bit i set (KERNEL_INPLACE(i)) says output 0 may be given input i's buffer.
     * The executor does so only when input i is an intermediate whose last reader is
     * this node, and output 0 has the same element count and element size; the kernel
     * must then be correct with the two aliased: it reads each element of input i before
     * it writes the output element at the same position, and writes no other position
     * of the output before it has read input i there (elementwise loops, block-wise
     * conversions, copies that skip dst == src). */
    unsigned inplace;
    /* Output 0 is input 0's bytes unchanged under another shape (Reshape, Squeeze, ...).
     * When input 0 is an initializer (constant for the session's life) the executor gives
     * output 0 those very bytes, so the kernel's copy is skipped: a tied model's int4
     * embedding table reshaped from lm_head's weight is not copied every step. */
    bool same_bytes;
    /* Preparation (see kernel_prep); release is required when prepare is set. */
    kernel_prepare_fn prepare;
    kernel_release_fn release;
} kernel_def;

#define KERNEL_INPLACE(i) (1u << (i))

/* Convenience wrappers. */
static inline og_status *kernel_output(kernel_ctx *ctx, int index, og_dtype dtype, int rank,
                                       const int64_t *dims, tensor **out) {
    return ctx->output(ctx, index, dtype, rank, dims, out);
}

static inline og_status *kernel_scratch(kernel_ctx *ctx, size_t size, void **out) {
    return ctx->scratch(ctx, size, out);
}

/* String tensors hold og_string views (see tensor.h); a kernel that only moves elements
 * moves the views, and the bytes stay where they are (the model, the caller's inputs,
 * or memory held for the run). */
og_status *kernel_hold(kernel_ctx *ctx, size_t size, void **out);

static inline og_status *kernel_shared(kernel_ctx *ctx, int input, const int64_t *key,
                                       int n_key, size_t size, void **out, bool *ready) {
    *out = NULL;
    *ready = false;
    return ctx->shared ? ctx->shared(ctx, input, key, n_key, size, out, ready) : NULL;
}

static inline const tensor *kernel_input(const kernel_ctx *ctx, int i) {
    return i < ctx->n_inputs ? ctx->inputs[i] : NULL;
}

/* Errors with the node's location prefixed: "model.onnx: node 'X' (Op): ..." */
#define kernel_errorf(ctx, code, fmt, ...)                                               \
    og_errorf((code), "%s: " fmt, (ctx)->where, __VA_ARGS__)
#define kernel_error(ctx, code, msg) og_errorf((code), "%s: %s", (ctx)->where, (msg))

/* Common checks, each returning an error that names the node and the input. */
og_status *kernel_require_inputs(const kernel_ctx *ctx, int min_count);
og_status *kernel_unsupported_dtype(const kernel_ctx *ctx, int input, og_dtype dtype);

/* Looks up the implementation of (domain, op_type) at opset `version`. Returns NULL
 * when none exists; then *known_op says whether any version of the op is implemented
 * (so that the error can say "op X is not implemented" vs "opset N of X is not"). */
const kernel_def *kernel_find(const char *domain, const char *op_type, int64_t version,
                              bool *known_op);

/* Calls visit for every registered kernel (for `show` and the node-test report). */
void kernel_each(void (*visit)(const kernel_def *def, void *arg), void *arg);

#endif
