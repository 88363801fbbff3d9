/* What the control-flow kernels share: subgraph attributes, carried state, output
 * copies, declared shapes for zero iterations, scalar condition inputs. */
#include "backends/native/kernels/control/control.h"

#include <string.h>

og_status *cf_graph_attr(kernel_ctx *ctx, const char *name, const graph **out) {
    const graph_attr *a = graph_attr_find(ctx->node, name);
    if (!a || a->type != ATTR_GRAPH || !a->g)
        return kernel_errorf(ctx, OG_ERR_INVALID_MODEL, "attribute '%s' (a graph) is missing",
                             name);
    if (!ctx->subgraph)
        return kernel_error(ctx, OG_ERR_UNSUPPORTED, "this executor cannot run subgraphs");
    *out = a->g;
    return NULL;
}

void cf_state_init(cf_state *st, const tensor *initial) {
    memset(st, 0, sizeof *st);
    st->cur = *initial;
    st->cur.owns_data = false;
    st->which = -1;
}

/* A buffer of at least `need` bytes for buffer b of st, grown by doubling. */
static og_status *state_room(kernel_ctx *ctx, cf_state *st, int b, size_t need) {
    if (st->cap[b] >= need) return NULL;
    size_t cap = st->cap[b] * 2 > need ? st->cap[b] * 2 : need;
    OG_TRY(kernel_scratch(ctx, cap, &st->buf[b]));
    st->cap[b] = cap;
    return NULL;
}

og_status *cf_state_update(kernel_ctx *ctx, cf_state *st, int n, const tensor *const *outs,
                           const char *what) {
    int target[64];
    if (n > 64) return kernel_errorf(ctx, OG_ERR_UNSUPPORTED, "%d %ss (at most 64)", n, what);
    /* Choose every destination before writing any: a buffer some output still reads
     * (another state's current value) must not be overwritten in this round. */
    for (int k = 0; k < n; k++) {
        const tensor *o = outs[k];
        target[k] = -2; /* -2: nothing to copy */
        if (o->dtype != st[k].cur.dtype)
            return kernel_errorf(ctx, OG_ERR_INVALID_MODEL, "%s %d changes dtype from %s to %s",
                                 what, k, og_dtype_name(st[k].cur.dtype), og_dtype_name(o->dtype));
        if (o->nbytes == 0 || (o->data == st[k].cur.data && o->nbytes == st[k].cur.nbytes))
            continue;
        bool read_elsewhere = false;
        for (int m = 0; m < n && !read_elsewhere; m++)
            read_elsewhere = m != k && outs[m]->nbytes && outs[m]->data == st[k].cur.data;
        target[k] = st[k].which >= 0 && !read_elsewhere ? st[k].which : st[k].which == 0;
    }
    for (int k = 0; k < n; k++) {
        const tensor *o = outs[k];
        int b = target[k];
        if (b >= 0) {
            OG_TRY(state_room(ctx, &st[k], b, o->nbytes));
            memcpy(st[k].buf[b], o->data, o->nbytes);
        }
        st[k].cur.rank = o->rank;
        memcpy(st[k].cur.dims, o->dims, sizeof(int64_t) * (size_t)o->rank);
        st[k].cur.nbytes = o->nbytes;
        if (b >= 0) {
            st[k].cur.data = st[k].buf[b];
            st[k].which = b;
        } else if (o->nbytes == 0) {
            st[k].cur.data = tensor_empty_data();
        }
    }
    return NULL;
}

og_status *cf_emit(kernel_ctx *ctx, int index, const tensor *src) {
    if (index >= ctx->n_outputs || ctx->node->outputs[index] < 0) return NULL;
    tensor *y;
    OG_TRY(kernel_output(ctx, index, src->dtype, src->rank, src->dims, &y));
    if (y->nbytes && y->data != src->data) memcpy(y->data, src->data, y->nbytes);
    return NULL;
}

og_status *cf_declared_slice(kernel_ctx *ctx, const graph *body, int out, og_dtype *dtype,
                             int *rank, int64_t *dims) {
    const graph_value *v = &body->values[body->outputs[out]];
    if (v->dtype == OG_UNDEFINED)
        return kernel_errorf(ctx, OG_ERR_UNSUPPORTED, "ran zero iterations and the body does "
                             "not declare the dtype of its output '%s'", v->name);
    *dtype = v->dtype;
    *rank = v->rank < 0 ? 0 : v->rank;
    for (int d = 0; d < *rank; d++) dims[d] = v->dims[d] < 0 ? 0 : v->dims[d];
    return NULL;
}

static og_status *scalar_input(kernel_ctx *ctx, int input, const char *what, og_dtype want) {
    const tensor *t = ctx->inputs[input];
    if (t->dtype != want)
        return kernel_errorf(ctx, OG_ERR_INVALID_MODEL, "input %d (%s) is %s, expected %s",
                             input, what, og_dtype_name(t->dtype), og_dtype_name(want));
    if (tensor_count(t) != 1) {
        char a[96];
        return kernel_errorf(ctx, OG_ERR_INVALID_ARGUMENT, "input %d (%s) has shape %s, "
                             "expected one element", input, what,
                             shape_str(t->dims, t->rank, a, sizeof a));
    }
    return NULL;
}

og_status *cf_read_bool(kernel_ctx *ctx, int input, const char *what, bool *out) {
    OG_TRY(scalar_input(ctx, input, what, OG_BOOL));
    *out = *(const uint8_t *)ctx->inputs[input]->data != 0;
    return NULL;
}

og_status *cf_read_int(kernel_ctx *ctx, int input, const char *what, int64_t *out) {
    OG_TRY(scalar_input(ctx, input, what, OG_INT64));
    *out = *(const int64_t *)ctx->inputs[input]->data;
    return NULL;
}
