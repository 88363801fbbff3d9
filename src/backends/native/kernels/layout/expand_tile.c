/* Expand (bidirectional broadcast to a shape) and Tile: both are strided copies whose
 * source strides are 0 along repeated dimensions. */
#include "backends/native/kernels/broadcast.h"
#include "backends/native/kernels/layout/layout.h"
#include "backends/native/kernels/layout/layout_util.h"

og_status *cpu_expand(kernel_ctx *ctx) {
    const tensor *x;
    size_t es;
    OG_TRY(layout_data(ctx, 2, &x, &es));
    int64_t shape[OG_MAX_RANK], dims[OG_MAX_RANK], src_st[OG_MAX_RANK], dst_st[OG_MAX_RANK];
    int n, r;
    OG_TRY(layout_read_ints(ctx, 1, "shape", shape, OG_MAX_RANK, &n));
    og_status *st = broadcast_shape(x->dims, x->rank, shape, n, dims, &r);
    if (st) return og_status_wrap(st, "%s: input 0 and input 1 (shape)", ctx->where);
    broadcast_strides(x->dims, x->rank, dims, r, src_st);
    layout_strides(dims, r, dst_st);
    tensor *y;
    OG_TRY(kernel_output(ctx, 0, x->dtype, r, dims, &y));
    layout_strided_copy(ctx->pool, y->data, x->data, es, r, dims, dst_st, src_st);
    return NULL;
}

og_status *cpu_tile(kernel_ctx *ctx) {
    const tensor *x;
    size_t es;
    OG_TRY(layout_data(ctx, 2, &x, &es));
    int r = x->rank;
    int64_t reps[OG_MAX_RANK], dims[OG_MAX_RANK], ist[OG_MAX_RANK], ost[OG_MAX_RANK];
    int n;
    OG_TRY(layout_read_ints(ctx, 1, "repeats", reps, OG_MAX_RANK, &n));
    if (n != r)
        return kernel_errorf(ctx, OG_ERR_INVALID_ARGUMENT, "repeats has %d values for input "
                             "rank %d", n, r);
    for (int i = 0; i < r; i++) {
        if (reps[i] < 0)
            return kernel_errorf(ctx, OG_ERR_INVALID_ARGUMENT, "repeats[%d] is %lld", i,
                                 (long long)reps[i]);
        if (__builtin_mul_overflow(x->dims[i], reps[i], &dims[i]))
            return kernel_error(ctx, OG_ERR_INVALID_ARGUMENT, "output shape overflows");
    }
    tensor *y;
    OG_TRY(kernel_output(ctx, 0, x->dtype, r, dims, &y));
    /* Output axis i splits into (repeat, original) with source strides (0, stride). */
    layout_strides(x->dims, r, ist);
    layout_strides(dims, r, ost);
    int64_t d2[2 * OG_MAX_RANK], dst2[2 * OG_MAX_RANK], src2[2 * OG_MAX_RANK];
    for (int i = 0; i < r; i++) {
        d2[2 * i] = reps[i];
        d2[2 * i + 1] = x->dims[i];
        dst2[2 * i] = ost[i] * x->dims[i];
        dst2[2 * i + 1] = ost[i];
        src2[2 * i] = 0;
        src2[2 * i + 1] = ist[i];
    }
    layout_strided_copy(ctx->pool, y->data, x->data, es, 2 * r, d2, dst2, src2);
    return NULL;
}
