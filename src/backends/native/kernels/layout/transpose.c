/* Transpose: one strided copy. layout_strided_copy merges dims that stay adjacent (so a
 * permutation that keeps the last dim becomes row memcpys) and tiles (batched) 2-D
 * transposes. */
#include "backends/native/kernels/layout/layout.h"
#include "backends/native/kernels/layout/layout_util.h"

og_status *cpu_transpose(kernel_ctx *ctx) {
    const tensor *x;
    size_t es;
    OG_TRY(layout_data(ctx, 1, &x, &es));
    int r = x->rank;
    int64_t perm[OG_MAX_RANK], dims[OG_MAX_RANK], in_st[OG_MAX_RANK], src_st[OG_MAX_RANK],
        dst_st[OG_MAX_RANK];
    const int64_t *p;
    int64_t n = graph_attr_ints(ctx->node, "perm", &p);
    if (n < 0)
        for (int i = 0; i < r; i++) perm[i] = r - 1 - i;
    else if (n != r)
        return kernel_errorf(ctx, OG_ERR_INVALID_ARGUMENT, "perm has %lld entries for input "
                             "rank %d", (long long)n, r);
    bool seen[OG_MAX_RANK] = {false};
    for (int i = 0; i < r; i++) {
        if (n >= 0) perm[i] = p[i];
        if (perm[i] < 0 || perm[i] >= r || seen[perm[i]])
            return kernel_errorf(ctx, OG_ERR_INVALID_ARGUMENT, "perm[%d] = %lld is not part "
                                 "of a permutation of [0, %d)", i, (long long)perm[i], r);
        seen[perm[i]] = true;
    }
    layout_strides(x->dims, r, in_st);
    for (int i = 0; i < r; i++) {
        dims[i] = x->dims[perm[i]];
        src_st[i] = in_st[perm[i]];
    }
    layout_strides(dims, r, dst_st);
    tensor *y;
    OG_TRY(kernel_output(ctx, 0, x->dtype, r, dims, &y));
    layout_strided_copy(ctx->pool, y->data, x->data, es, r, dims, dst_st, src_st);
    return NULL;
}
