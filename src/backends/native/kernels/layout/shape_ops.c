/* Ops that change only the shape (data copied unchanged) or report it: Reshape, Squeeze,
 * Unsqueeze, Flatten, Identity, Dropout (inference), Shape, Size. */
#include "backends/native/kernels/layout/layout.h"
#include "backends/native/kernels/layout/layout_util.h"

#include <string.h>

og_status *cpu_reshape(kernel_ctx *ctx) {
    OG_TRY(kernel_require_inputs(ctx, 2));
    const tensor *x = ctx->inputs[0];
    int64_t shape[OG_MAX_RANK];
    int n;
    OG_TRY(layout_read_ints(ctx, 1, "shape", shape, OG_MAX_RANK, &n));
    bool allowzero = ctx->opset >= 14 && graph_attr_int(ctx->node, "allowzero", 0) != 0;
    int infer = -1;
    int64_t known = 1, total = tensor_count(x);
    for (int i = 0; i < n; i++) {
        if (shape[i] == 0 && !allowzero) {
            if (i >= x->rank)
                return kernel_errorf(ctx, OG_ERR_INVALID_ARGUMENT, "shape[%d] is 0 (copy the "
                                     "input dim) but the input has rank %d", i, x->rank);
            shape[i] = x->dims[i];
        }
        if (shape[i] == -1) {
            if (infer >= 0)
                return kernel_error(ctx, OG_ERR_INVALID_ARGUMENT, "shape has more than one -1");
            infer = i;
            continue;
        }
        if (shape[i] < 0)
            return kernel_errorf(ctx, OG_ERR_INVALID_ARGUMENT, "shape[%d] is %lld", i,
                                 (long long)shape[i]);
        if (__builtin_mul_overflow(known, shape[i], &known))
            return kernel_error(ctx, OG_ERR_INVALID_ARGUMENT, "shape overflows int64");
    }
    if (infer >= 0) {
        if (known == 0 || total % known != 0) {
            char b[160];
            return kernel_errorf(ctx, OG_ERR_INVALID_ARGUMENT, "cannot infer the -1 in the "
                                 "shape for %lld elements of input %s", (long long)total,
                                 shape_str(x->dims, x->rank, b, sizeof b));
        }
        shape[infer] = total / known;
    } else if (known != total) {
        char a[160], b[160];
        return kernel_errorf(ctx, OG_ERR_INVALID_ARGUMENT, "cannot reshape %s to %s",
                             shape_str(x->dims, x->rank, a, sizeof a),
                             shape_str(shape, n, b, sizeof b));
    }
    return layout_copy_as(ctx, n, shape);
}

/* Axes of Squeeze/Unsqueeze: the attribute before opset 13, input 1 from 13. Returns
 * *n = -1 when neither is given. */
static og_status *read_axes(kernel_ctx *ctx, int64_t *axes, int *n) {
    *n = -1;
    if (ctx->opset < 13) {
        const int64_t *v;
        int64_t c = graph_attr_ints(ctx->node, "axes", &v);
        if (c > OG_MAX_RANK)
            return kernel_errorf(ctx, OG_ERR_INVALID_ARGUMENT, "%lld axes", (long long)c);
        if (c >= 0) memcpy(axes, v, sizeof *axes * (size_t)c);
        *n = (int)c;
        return NULL;
    }
    if (!kernel_input(ctx, 1)) return NULL;
    return layout_read_ints(ctx, 1, "axes", axes, OG_MAX_RANK, n);
}

/* Marks axes (normalised against rank) in seen[]; duplicates are an error. */
static og_status *mark_axes(kernel_ctx *ctx, const int64_t *axes, int n, int rank,
                            bool *seen) {
    memset(seen, 0, sizeof(bool) * OG_MAX_RANK);
    for (int i = 0; i < n; i++) {
        int a;
        OG_TRY(layout_axis(ctx, axes[i], rank, "axis", &a));
        if (seen[a])
            return kernel_errorf(ctx, OG_ERR_INVALID_ARGUMENT, "axis %d is repeated", a);
        seen[a] = true;
    }
    return NULL;
}

og_status *cpu_squeeze(kernel_ctx *ctx) {
    OG_TRY(kernel_require_inputs(ctx, 1));
    const tensor *x = ctx->inputs[0];
    int64_t axes[OG_MAX_RANK], dims[OG_MAX_RANK];
    int n, r = 0;
    bool drop[OG_MAX_RANK];
    OG_TRY(read_axes(ctx, axes, &n));
    OG_TRY(mark_axes(ctx, axes, n < 0 ? 0 : n, x->rank, drop));
    for (int i = 0; i < x->rank; i++) {
        if (n < 0) drop[i] = x->dims[i] == 1;
        if (drop[i] && x->dims[i] != 1)
            return kernel_errorf(ctx, OG_ERR_INVALID_ARGUMENT, "cannot squeeze axis %d of "
                                 "size %lld", i, (long long)x->dims[i]);
        if (!drop[i]) dims[r++] = x->dims[i];
    }
    return layout_copy_as(ctx, r, dims);
}

og_status *cpu_unsqueeze(kernel_ctx *ctx) {
    OG_TRY(kernel_require_inputs(ctx, 1));
    const tensor *x = ctx->inputs[0];
    int64_t axes[OG_MAX_RANK], dims[OG_MAX_RANK];
    int n;
    bool ins[OG_MAX_RANK];
    OG_TRY(read_axes(ctx, axes, &n));
    if (n < 0) return kernel_error(ctx, OG_ERR_INVALID_MODEL, "axes are required");
    int r = x->rank + n;
    if (r > OG_MAX_RANK)
        return kernel_errorf(ctx, OG_ERR_UNSUPPORTED, "output rank %d exceeds %d", r,
                             OG_MAX_RANK);
    OG_TRY(mark_axes(ctx, axes, n, r, ins));
    for (int i = 0, k = 0; i < r; i++) dims[i] = ins[i] ? 1 : x->dims[k++];
    return layout_copy_as(ctx, r, dims);
}

og_status *cpu_flatten(kernel_ctx *ctx) {
    OG_TRY(kernel_require_inputs(ctx, 1));
    const tensor *x = ctx->inputs[0];
    int64_t axis = graph_attr_int(ctx->node, "axis", 1);
    if (axis < -x->rank || axis > x->rank)
        return kernel_errorf(ctx, OG_ERR_INVALID_ARGUMENT, "axis %lld is outside [%d, %d]",
                             (long long)axis, -x->rank, x->rank);
    if (axis < 0) axis += x->rank;
    int64_t dims[2] = {shape_count(x->dims, (int)axis),
                       shape_count(x->dims + axis, x->rank - (int)axis)};
    return layout_copy_as(ctx, 2, dims);
}

og_status *cpu_identity(kernel_ctx *ctx) {
    OG_TRY(kernel_require_inputs(ctx, 1));
    return layout_copy_as(ctx, ctx->inputs[0]->rank, ctx->inputs[0]->dims);
}

/* Inference only: the output is the input and the optional mask is all true. Training
 * with a zero ratio is the same; a random drop is not implemented. */
og_status *cpu_dropout(kernel_ctx *ctx) {
    OG_TRY(kernel_require_inputs(ctx, 1));
    const tensor *x = ctx->inputs[0];
    const tensor *ratio = kernel_input(ctx, 1), *training = kernel_input(ctx, 2);
    if (ctx->opset >= 12 && training && tensor_count(training) > 0 &&
        tensor_get_i64(training, 0) != 0) {
        double r = ratio && tensor_count(ratio) > 0 ? tensor_get_f64(ratio, 0) : 0.5;
        if (r != 0)
            return kernel_errorf(ctx, OG_ERR_UNSUPPORTED, "training_mode with ratio %g (a "
                                 "random drop) is not implemented", r);
    }
    OG_TRY(layout_copy_as(ctx, x->rank, x->dims));
    if (layout_output_wanted(ctx, 1)) {
        tensor *mask;
        OG_TRY(kernel_output(ctx, 1, OG_BOOL, x->rank, x->dims, &mask));
        if (mask->nbytes) memset(mask->data, 1, mask->nbytes);
    }
    return NULL;
}

og_status *cpu_shape(kernel_ctx *ctx) {
    OG_TRY(kernel_require_inputs(ctx, 1));
    const tensor *x = ctx->inputs[0];
    int64_t r = x->rank, start = 0, end = r;
    if (ctx->opset >= 15) {
        start = graph_attr_int(ctx->node, "start", 0);
        end = graph_attr_int(ctx->node, "end", r);
    }
    if (start < 0) start += r;
    if (end < 0) end += r;
    start = start < 0 ? 0 : start > r ? r : start;
    end = end < 0 ? 0 : end > r ? r : end;
    int64_t n = end > start ? end - start : 0;
    tensor *y;
    OG_TRY(kernel_output(ctx, 0, OG_INT64, 1, &n, &y));
    if (n) memcpy(y->data, x->dims + start, sizeof(int64_t) * (size_t)n);
    return NULL;
}

og_status *cpu_size(kernel_ctx *ctx) {
    OG_TRY(kernel_require_inputs(ctx, 1));
    tensor *y;
    OG_TRY(kernel_output(ctx, 0, OG_INT64, 0, NULL, &y));
    *(int64_t *)y->data = tensor_count(ctx->inputs[0]);
    return NULL;
}
