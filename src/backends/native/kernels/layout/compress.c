/* Compress: the slices along `axis` (of the flattened input when there is no axis) whose
 * condition entry is true, as numpy.compress: a condition shorter than the axis selects
 * from its length only; a true entry beyond the axis is an error. */
#include "backends/native/kernels/layout/layout.h"
#include "backends/native/kernels/layout/layout_util.h"

#include <string.h>

og_status *cpu_compress(kernel_ctx *ctx) {
    const tensor *x;
    size_t es;
    OG_TRY(layout_data(ctx, 2, &x, &es));
    const tensor *cond = ctx->inputs[1];
    if (cond->dtype != OG_BOOL || cond->rank != 1) {
        char a[96];
        return kernel_errorf(ctx, OG_ERR_INVALID_ARGUMENT, "input 1 (condition) is %s %s, "
                             "expected a 1-D bool tensor", og_dtype_name(cond->dtype),
                             shape_str(cond->dims, cond->rank, a, sizeof a));
    }
    bool flat = !graph_attr_find(ctx->node, "axis");
    int axis = 0;
    if (!flat) OG_TRY(layout_axis(ctx, graph_attr_int(ctx->node, "axis", 0), x->rank, "axis", &axis));
    int64_t len = flat ? tensor_count(x) : x->dims[axis];
    int64_t outer = flat ? 1 : shape_count(x->dims, axis);
    int64_t inner = flat ? 1 : shape_count(x->dims + axis + 1, x->rank - axis - 1);
    const uint8_t *c = cond->data;
    int64_t nc = tensor_count(cond), kept = 0;
    for (int64_t i = 0; i < nc; i++) {
        if (!c[i]) continue;
        if (i >= len)
            return kernel_errorf(ctx, OG_ERR_INVALID_ARGUMENT, "input 1 (condition) is true at "
                                 "%lld, beyond the %lld slices along the axis", (long long)i,
                                 (long long)len);
        kept++;
    }
    int64_t dims[OG_MAX_RANK];
    int rank = flat ? 1 : x->rank;
    for (int i = 0; i < rank; i++) dims[i] = flat ? kept : i == axis ? kept : x->dims[i];
    tensor *y;
    OG_TRY(kernel_output(ctx, 0, x->dtype, rank, dims, &y));
    size_t block = (size_t)inner * es;
    char *dst = y->data;
    const char *src = x->data;
    for (int64_t o = 0; o < outer && kept; o++)
        for (int64_t i = 0; i < nc && i < len; i++)
            if (c[i]) {
                memcpy(dst, src + ((size_t)(o * len + i)) * block, block);
                dst += block;
            }
    return NULL;
}
