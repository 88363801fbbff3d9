/* Loop: inputs M (trip count, optional), cond (optional), N loop-carried values; the body
 * takes (iteration number, cond, N values) and returns (cond, N values, K scan outputs).
 * It runs while i < M (when M is given) and cond is true. The body's cond output ends the
 * loop even when the node has no cond input: the spec's table says it is ignored then,
 * but onnxruntime (1.31) and onnx's reference evaluator both stop on it, and models are
 * made to run there. Node outputs: the N final values, then the K scan outputs stacked
 * on a new leading axis.
 *
 * Memory: carried values live in cf_state buffers. A scan output goes straight into the
 * node's output when the iteration count is known up front (M given and the body passes
 * its cond input through unchanged), otherwise into a buffer that doubles as it fills
 * and is copied once at the end. */
#include "backends/native/kernels/control/control.h"

#include <string.h>

/* The stacked iterations of one scan output. */
typedef struct stack {
    og_dtype dtype;
    int rank;                /* of one iteration's value */
    int64_t dims[OG_MAX_RANK];
    size_t slice;            /* bytes of one iteration's value */
    char *data;
    int64_t n, cap;          /* iterations stored, room */
    tensor *direct;          /* the node's output, when the count is known */
} stack;

static og_status *stack_push(kernel_ctx *ctx, stack *s, int out_index, int64_t exact,
                             const tensor *v, int64_t iter) {
    char a[160], b[160];
    if (out_index >= ctx->n_outputs || ctx->node->outputs[out_index] < 0) return NULL;
    if (s->n == 0) {
        s->dtype = v->dtype;
        s->rank = v->rank;
        memcpy(s->dims, v->dims, sizeof(int64_t) * (size_t)v->rank);
        s->slice = v->nbytes;
        if (v->rank >= OG_MAX_RANK)
            return kernel_errorf(ctx, OG_ERR_UNSUPPORTED, "scan output %d has rank %d; stacked "
                                 "it would exceed %d", out_index, v->rank, OG_MAX_RANK);
        if (exact >= 0) {
            int64_t dims[OG_MAX_RANK];
            dims[0] = exact;
            memcpy(dims + 1, v->dims, sizeof(int64_t) * (size_t)v->rank);
            OG_TRY(kernel_output(ctx, out_index, v->dtype, v->rank + 1, dims, &s->direct));
            s->data = s->direct->data;
            s->cap = exact;
        }
    } else if (v->dtype != s->dtype || v->rank != s->rank ||
               memcmp(v->dims, s->dims, sizeof(int64_t) * (size_t)v->rank)) {
        return kernel_errorf(ctx, OG_ERR_INVALID_MODEL, "scan output %d is %s %s at iteration "
                             "%lld but was %s %s before: iterations must agree", out_index,
                             og_dtype_name(v->dtype), shape_str(v->dims, v->rank, a, sizeof a),
                             (long long)iter, og_dtype_name(s->dtype),
                             shape_str(s->dims, s->rank, b, sizeof b));
    }
    if (s->n == s->cap) {
        int64_t cap = s->cap ? s->cap * 2 : 16;
        size_t bytes;
        if (__builtin_mul_overflow((size_t)cap, s->slice, &bytes))
            return kernel_errorf(ctx, OG_ERR_OUT_OF_MEMORY, "scan output %d: %lld iterations of "
                                 "%zu bytes overflow", out_index, (long long)cap, s->slice);
        void *grown;
        OG_TRY(kernel_scratch(ctx, bytes ? bytes : 1, &grown));
        if (s->n) memcpy(grown, s->data, (size_t)s->n * s->slice);
        s->data = grown;
        s->cap = cap;
    }
    if (s->slice) memcpy(s->data + (size_t)s->n * s->slice, v->data, s->slice);
    s->n++;
    return NULL;
}

/* Node output `index` from a stack that did not write into it directly. */
static og_status *stack_emit(kernel_ctx *ctx, stack *s, const graph *body, int body_out,
                             int index) {
    if (s->direct || index >= ctx->n_outputs || ctx->node->outputs[index] < 0) return NULL;
    og_dtype dt = s->dtype;
    int rank = s->rank;
    int64_t dims[OG_MAX_RANK];
    if (s->n == 0) {
        OG_TRY(cf_declared_slice(ctx, body, body_out, &dt, &rank, dims + 1));
        if (rank >= OG_MAX_RANK)
            return kernel_errorf(ctx, OG_ERR_UNSUPPORTED, "scan output rank %d", rank + 1);
    } else {
        memcpy(dims + 1, s->dims, sizeof(int64_t) * (size_t)rank);
    }
    dims[0] = s->n;
    tensor *y;
    OG_TRY(kernel_output(ctx, index, dt, rank + 1, dims, &y));
    if (y->nbytes) memcpy(y->data, s->data, y->nbytes);
    return NULL;
}

/* Whether the body's cond output is its cond input, directly or through Identity: then
 * only M ends the loop. */
static bool cond_passes_through(const graph *body) {
    int in = body->inputs[1], v = body->outputs[0];
    for (int hops = 0; hops < 8 && v != in; hops++) {
        int p = body->values[v].producer;
        if (p < 0 || strcmp(body->nodes[p].op_type, "Identity") != 0 ||
            body->nodes[p].n_inputs < 1)
            return false;
        v = body->nodes[p].inputs[0];
    }
    return v == in;
}

og_status *cpu_loop(kernel_ctx *ctx) {
    const graph *body;
    OG_TRY(cf_graph_attr(ctx, "body", &body));
    int n_carried = ctx->n_inputs - 2;
    if (n_carried < 0)
        return kernel_errorf(ctx, OG_ERR_INVALID_MODEL, "has %d inputs, expected M, cond and "
                             "the loop-carried values", ctx->n_inputs);
    int n_scan = body->n_outputs - 1 - n_carried;
    if (body->n_inputs != 2 + n_carried || n_scan < 0 || ctx->n_outputs != n_carried + n_scan)
        return kernel_errorf(ctx, OG_ERR_INVALID_MODEL, "the body takes %d inputs and returns "
                             "%d outputs; with %d loop-carried values it must take %d and "
                             "return 1 + %d + the node's %d - %d scan outputs",
                             body->n_inputs, body->n_outputs, n_carried, 2 + n_carried,
                             n_carried, ctx->n_outputs, n_carried);
    if (n_carried > 62 || n_scan > 16)
        return kernel_errorf(ctx, OG_ERR_UNSUPPORTED, "%d loop-carried values and %d scan "
                             "outputs (at most 62 and 16)", n_carried, n_scan);
    const tensor *m_in = ctx->inputs[0], *cond_in = ctx->inputs[1];
    if (!m_in && !cond_in)
        return kernel_error(ctx, OG_ERR_INVALID_MODEL, "neither a trip count (M) nor a "
                                                       "condition is given: the loop would "
                                                       "never end");
    int64_t trip = INT64_MAX;
    bool cond = true;
    if (m_in) OG_TRY(cf_read_int(ctx, 0, "M", &trip));
    if (cond_in) OG_TRY(cf_read_bool(ctx, 1, "cond", &cond));
    int64_t exact = !cond ? 0 : m_in && cond_passes_through(body) ? (trip > 0 ? trip : 0) : -1;

    cf_state st[62];
    for (int k = 0; k < n_carried; k++) {
        if (!ctx->inputs[2 + k])
            return kernel_errorf(ctx, OG_ERR_UNSUPPORTED, "loop-carried input %d is omitted "
                                 "(optional values are not implemented)", k);
        cf_state_init(&st[k], ctx->inputs[2 + k]);
    }
    stack stacks[16];
    memset(stacks, 0, sizeof stacks);

    /* The body's first two inputs: the iteration number and the condition, as scalars. */
    int64_t iter_val = 0;
    uint8_t cond_val = 1;
    tensor iter_t = {.dtype = OG_INT64, .rank = 0, .data = &iter_val, .nbytes = 8};
    tensor cond_t = {.dtype = OG_BOOL, .rank = 0, .data = &cond_val, .nbytes = 1};
    const tensor *ins[64], *outs[1 + 62 + 16];
    ins[0] = &iter_t;
    ins[1] = &cond_t;
    int64_t i = 0;
    for (; i < trip && cond; i++) {
        iter_val = i;
        cond_val = 1;
        for (int k = 0; k < n_carried; k++) ins[2 + k] = &st[k].cur;
        OG_TRY(ctx->subgraph(ctx, body, 2 + n_carried, ins, outs));
        const tensor *c = outs[0];
        if (c->dtype != OG_BOOL || tensor_count(c) != 1)
            return kernel_errorf(ctx, OG_ERR_INVALID_MODEL, "the body's cond output is %s with "
                                 "%lld elements, expected one bool", og_dtype_name(c->dtype),
                                 (long long)tensor_count(c));
        cond = *(const uint8_t *)c->data != 0;
        for (int k = 0; k < n_scan; k++)
            OG_TRY(stack_push(ctx, &stacks[k], n_carried + k, exact, outs[1 + n_carried + k], i));
        OG_TRY(cf_state_update(ctx, st, n_carried, outs + 1, "loop-carried value"));
    }
    for (int k = 0; k < n_carried; k++) OG_TRY(cf_emit(ctx, k, &st[k].cur));
    for (int k = 0; k < n_scan; k++)
        OG_TRY(stack_emit(ctx, &stacks[k], body, 1 + n_carried + k, n_carried + k));
    return NULL;
}
