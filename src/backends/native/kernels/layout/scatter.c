/* ScatterND, ScatterElements (and the deprecated Scatter): output = copy of data, then
 * each update is written (or combined by `reduction`, opset 16+: add, mul; 18+: max,
 * min) in index order, so duplicate indices behave as the reference's loop does. */
#include "backends/native/kernels/layout/layout.h"
#include "backends/native/kernels/layout/layout_util.h"

#include <string.h>

/* Copies data into the output and picks the combiner; *es is the element size. */
static og_status *scatter_begin(kernel_ctx *ctx, tensor **y, size_t *es,
                                layout_combine_fn *fn) {
    const tensor *x, *upd;
    OG_TRY(layout_data(ctx, 3, &x, es));
    upd = ctx->inputs[2];
    if (upd->dtype != x->dtype)
        return kernel_errorf(ctx, OG_ERR_INVALID_ARGUMENT, "updates have dtype %s, data %s",
                             og_dtype_name(upd->dtype), og_dtype_name(x->dtype));
    const char *red = ctx->opset >= 16 ? graph_attr_string(ctx->node, "reduction", "none")
                                       : "none";
    if (ctx->opset < 18 && (strcmp(red, "max") == 0 || strcmp(red, "min") == 0))
        return kernel_errorf(ctx, OG_ERR_INVALID_MODEL, "reduction '%s' needs opset 18", red);
    OG_TRY(layout_combiner(ctx, x->dtype, red, fn));
    OG_TRY(kernel_output(ctx, 0, x->dtype, x->rank, x->dims, y));
    layout_memcpy(ctx->pool, (*y)->data, x->data, x->nbytes);
    return NULL;
}

/* Writes update block b (n elements) at element offset off[b] * n. */
static void scatter_blocks(tensor *y, const tensor *upd, const int64_t *off, int64_t count,
                           int64_t n, size_t es, layout_combine_fn fn) {
    char *dst = y->data;
    const char *src = upd->data;
    size_t bytes = (size_t)n * es;
    for (int64_t b = 0; b < count; b++) {
        char *d = dst + (size_t)off[b] * bytes;
        const char *s = src + (size_t)b * bytes;
        if (!fn) memcpy(d, s, bytes);
        else
            for (int64_t i = 0; i < n; i++) fn(d + (size_t)i * es, s + (size_t)i * es);
    }
}

og_status *cpu_scatter_nd(kernel_ctx *ctx) {
    tensor *y;
    size_t es;
    layout_combine_fn fn;
    OG_TRY(scatter_begin(ctx, &y, &es, &fn));
    const tensor *x = ctx->inputs[0], *ind = ctx->inputs[1], *upd = ctx->inputs[2];
    int64_t *off, count, slice;
    OG_TRY(layout_nd_offsets(ctx, x, ind, 0, &off, &count, &slice));
    /* updates shape = indices.shape[:-1] + data.shape[k:] */
    int k = (int)ind->dims[ind->rank - 1], q = ind->rank;
    bool ok = upd->rank == q - 1 + x->rank - k;
    for (int i = 0; ok && i < upd->rank; i++)
        ok = upd->dims[i] == (i < q - 1 ? ind->dims[i] : x->dims[k + i - (q - 1)]);
    if (!ok) {
        char a[160];
        return kernel_errorf(ctx, OG_ERR_INVALID_ARGUMENT, "updates %s do not match "
                             "indices.shape[:-1] + data.shape[%d:]",
                             shape_str(upd->dims, upd->rank, a, sizeof a), k);
    }
    if (slice > 0) scatter_blocks(y, upd, off, count, slice, es, fn);
    return NULL;
}

og_status *cpu_scatter_elements(kernel_ctx *ctx) {
    tensor *y;
    size_t es;
    layout_combine_fn fn;
    OG_TRY(scatter_begin(ctx, &y, &es, &fn));
    const tensor *x = ctx->inputs[0], *ind = ctx->inputs[1], *upd = ctx->inputs[2];
    bool same = upd->rank == ind->rank;
    for (int i = 0; same && i < ind->rank; i++) same = upd->dims[i] == ind->dims[i];
    if (!same) {
        char a[160], b[160];
        return kernel_errorf(ctx, OG_ERR_INVALID_ARGUMENT, "updates %s and indices %s differ "
                             "in shape", shape_str(upd->dims, upd->rank, a, sizeof a),
                             shape_str(ind->dims, ind->rank, b, sizeof b));
    }
    int axis;
    int64_t *off;
    OG_TRY(layout_axis(ctx, graph_attr_int(ctx->node, "axis", 0), x->rank, "axis", &axis));
    OG_TRY(layout_elements_offsets(ctx, x, ind, axis, &off));
    scatter_blocks(y, upd, off, tensor_count(ind), 1, es, fn);
    return NULL;
}
