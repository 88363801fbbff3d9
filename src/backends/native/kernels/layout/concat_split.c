/* Concat and Split: every input (output) is a block of rows [outer, dim * inner] placed
 * at a column offset of the joined tensor, copied with one strided copy each. */
#include "backends/native/kernels/layout/layout.h"
#include "backends/native/kernels/layout/layout_util.h"

/* Copies block [outer, cols] between a part and the joined tensor of row length
 * `row` at element column `col`. */
static void copy_block(kernel_ctx *ctx, char *joined, char *part, bool into_joined,
                       size_t es, int64_t outer, int64_t cols, int64_t row, int64_t col) {
    int64_t dims[2] = {outer, cols}, jst[2] = {row, 1}, pst[2] = {cols, 1};
    char *j = joined + col * (int64_t)es;
    if (into_joined) layout_strided_copy(ctx->pool, j, part, es, 2, dims, jst, pst);
    else layout_strided_copy(ctx->pool, part, j, es, 2, dims, pst, jst);
}

og_status *cpu_concat(kernel_ctx *ctx) {
    const tensor *x0;
    size_t es;
    OG_TRY(layout_data(ctx, 1, &x0, &es));
    if (!graph_attr_find(ctx->node, "axis"))
        return kernel_error(ctx, OG_ERR_INVALID_MODEL, "attribute 'axis' is required");
    int axis;
    OG_TRY(layout_axis(ctx, graph_attr_int(ctx->node, "axis", 0), x0->rank, "axis", &axis));
    int64_t dims[OG_MAX_RANK];
    for (int i = 0; i < x0->rank; i++) dims[i] = x0->dims[i];
    dims[axis] = 0;
    for (int k = 0; k < ctx->n_inputs; k++) {
        const tensor *x = ctx->inputs[k];
        if (!x) return kernel_errorf(ctx, OG_ERR_INVALID_MODEL, "input %d is missing", k);
        bool ok = x->dtype == x0->dtype && x->rank == x0->rank;
        for (int i = 0; ok && i < x->rank; i++) ok = i == axis || x->dims[i] == x0->dims[i];
        if (!ok) {
            char a[160], b[160];
            return kernel_errorf(ctx, OG_ERR_INVALID_ARGUMENT, "input %d (%s %s) does not "
                                 "match input 0 (%s %s) outside axis %d", k,
                                 og_dtype_name(x->dtype), shape_str(x->dims, x->rank, a, sizeof a),
                                 og_dtype_name(x0->dtype),
                                 shape_str(x0->dims, x0->rank, b, sizeof b), axis);
        }
        dims[axis] += x->dims[axis];
    }
    tensor *y;
    OG_TRY(kernel_output(ctx, 0, x0->dtype, x0->rank, dims, &y));
    int64_t outer = shape_count(dims, axis), inner = shape_count(dims + axis + 1, x0->rank - axis - 1);
    int64_t col = 0;
    for (int k = 0; k < ctx->n_inputs; k++) {
        int64_t cols = ctx->inputs[k]->dims[axis] * inner;
        copy_block(ctx, y->data, ctx->inputs[k]->data, true, es, outer, cols,
                   dims[axis] * inner, col);
        col += cols;
    }
    return NULL;
}

/* Sizes of the Split parts along an axis of length dim into sizes[n]. */
static og_status *split_sizes(kernel_ctx *ctx, int64_t dim, int n, int64_t *sizes) {
    int given = -1;
    if (ctx->opset >= 13 && kernel_input(ctx, 1)) {
        OG_TRY(layout_read_ints(ctx, 1, "split", sizes, n, &given));
    } else if (ctx->opset < 13) {
        const int64_t *v;
        int64_t c = graph_attr_ints(ctx->node, "split", &v);
        if (c > n)
            return kernel_errorf(ctx, OG_ERR_INVALID_ARGUMENT, "split has %lld sizes for %d "
                                 "outputs", (long long)c, n);
        for (int64_t i = 0; i < c; i++) sizes[i] = v[i];
        given = (int)c;
    }
    if (given >= 0) {
        int64_t sum = 0;
        for (int i = 0; i < given; i++) {
            if (sizes[i] < 0)
                return kernel_errorf(ctx, OG_ERR_INVALID_ARGUMENT, "split[%d] is %lld", i,
                                     (long long)sizes[i]);
            sum += sizes[i];
        }
        if (given != n || sum != dim)
            return kernel_errorf(ctx, OG_ERR_INVALID_ARGUMENT, "split has %d sizes summing to "
                                 "%lld for %d outputs and an axis of %lld", given,
                                 (long long)sum, n, (long long)dim);
        return NULL;
    }
    int64_t parts = n;
    if (ctx->opset >= 18 && graph_attr_find(ctx->node, "num_outputs")) {
        parts = graph_attr_int(ctx->node, "num_outputs", n);
        if (parts != n)
            return kernel_errorf(ctx, OG_ERR_INVALID_MODEL, "num_outputs is %lld but the node "
                                 "has %d outputs", (long long)parts, n);
    } else if (ctx->opset < 18 && dim % n != 0) {
        return kernel_errorf(ctx, OG_ERR_INVALID_ARGUMENT, "axis of size %lld does not split "
                             "into %d equal parts", (long long)dim, n);
    }
    /* From opset 18 the last chunk may be smaller. */
    int64_t chunk = (dim + parts - 1) / parts;
    for (int i = 0; i < n; i++) {
        int64_t left = dim - chunk * i;
        sizes[i] = left < 0 ? 0 : left < chunk ? left : chunk;
    }
    return NULL;
}

og_status *cpu_split(kernel_ctx *ctx) {
    const tensor *x;
    size_t es;
    OG_TRY(layout_data(ctx, 1, &x, &es));
    int axis, n = ctx->n_outputs;
    OG_TRY(layout_axis(ctx, graph_attr_int(ctx->node, "axis", 0), x->rank, "axis", &axis));
    if (n < 1) return kernel_error(ctx, OG_ERR_INVALID_MODEL, "has no outputs");
    int64_t *sizes;
    OG_TRY(kernel_scratch(ctx, sizeof *sizes * (size_t)n, (void **)&sizes));
    OG_TRY(split_sizes(ctx, x->dims[axis], n, sizes));
    int64_t outer = shape_count(x->dims, axis);
    int64_t inner = shape_count(x->dims + axis + 1, x->rank - axis - 1);
    int64_t dims[OG_MAX_RANK], col = 0;
    for (int i = 0; i < x->rank; i++) dims[i] = x->dims[i];
    for (int k = 0; k < n; k++) {
        if (layout_output_wanted(ctx, k)) {
            tensor *y;
            dims[axis] = sizes[k];
            OG_TRY(kernel_output(ctx, k, x->dtype, x->rank, dims, &y));
            copy_block(ctx, x->data, y->data, false, es, outer, sizes[k] * inner,
                       x->dims[axis] * inner, col);
        }
        col += sizes[k] * inner;
    }
    return NULL;
}
