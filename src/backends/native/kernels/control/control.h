/* The control-flow family (If, Loop, Scan; registered in control_table.c): the kernels
 * run their subgraphs through kernel_ctx.subgraph and share the handling of values
 * carried from one iteration to the next and of per-iteration outputs. */
#ifndef OG_NATIVE_KERNELS_CONTROL_H
#define OG_NATIVE_KERNELS_CONTROL_H

#include "backends/native/kernels/kernel.h"

og_status *cpu_if(kernel_ctx *ctx);
og_status *cpu_loop(kernel_ctx *ctx);
og_status *cpu_scan(kernel_ctx *ctx);

/* The graph attribute `name` of the node; an error naming it when absent, and when the
 * executor cannot run subgraphs. */
og_status *cf_graph_attr(kernel_ctx *ctx, const char *name, const graph **out);

/* A value carried between iterations (Loop's loop-carried values, Scan's state). The
 * first iteration reads the node's input itself; after each iteration the body's output
 * is copied into a buffer of the state (the body's outputs live in its own plan, which
 * the next iteration overwrites). One buffer suffices unless another output of the same
 * iteration is this state's current value (a body that swaps two values); then the
 * state's second buffer is used. Buffers grow by doubling: a value that grows every
 * iteration costs a logarithmic number of allocations. */
typedef struct cf_state {
    tensor cur;      /* what the next iteration reads */
    void *buf[2];
    size_t cap[2];
    int which;       /* buffer cur lives in, or -1 (the initial input, or empty) */
} cf_state;

void cf_state_init(cf_state *st, const tensor *initial);
/* Takes outs[k] as the new value of st[k] for k < n; `what` names the values in errors
 * ("loop-carried value", "state"). */
og_status *cf_state_update(kernel_ctx *ctx, cf_state *st, int n, const tensor *const *outs,
                           const char *what);

/* Output `index` of the node as a copy of src (nothing when the node omits it). */
og_status *cf_emit(kernel_ctx *ctx, int index, const tensor *src);

/* The dtype and one iteration's shape of body output `out`, as the body declares it,
 * for a node that ran zero iterations (unknown dims become 0: the result is empty
 * anyway). An error when the body does not declare the dtype. */
og_status *cf_declared_slice(kernel_ctx *ctx, const graph *body, int out, og_dtype *dtype,
                             int *rank, int64_t *dims);

/* Reads a scalar (one-element) bool or int64 input; `what` names it in errors. */
og_status *cf_read_bool(kernel_ctx *ctx, int input, const char *what, bool *out);
og_status *cf_read_int(kernel_ctx *ctx, int input, const char *what, int64_t *out);

#endif
