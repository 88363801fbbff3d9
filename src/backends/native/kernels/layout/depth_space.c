/* DepthToSpace and SpaceToDepth: a reshape to 6-D, a transpose and a reshape back to
 * 4-D, as the spec writes them, done as one strided copy (any element type). DCR and
 * CRD are the two orders of (block row, block column, channel) within the depth. */
#include "backends/native/kernels/layout/layout.h"
#include "backends/native/kernels/layout/layout_util.h"

#include <string.h>

/* y (dims od, 4-D) = transpose(x viewed as vd, perm) reshaped. */
static og_status *view_transpose(kernel_ctx *ctx, const tensor *x, size_t es,
                                 const int64_t vd[6], const int perm[6], const int64_t od[4]) {
    int64_t vst[6], dims[6], src[6], dst[6];
    layout_strides(vd, 6, vst);
    for (int i = 0; i < 6; i++) dims[i] = vd[perm[i]], src[i] = vst[perm[i]];
    layout_strides(dims, 6, dst);
    tensor *y;
    OG_TRY(kernel_output(ctx, 0, x->dtype, 4, od, &y));
    if (tensor_count(y)) layout_strided_copy(ctx->pool, y->data, x->data, es, 6, dims, dst, src);
    return NULL;
}

/* Input 0 as [b, c, h, w], the blocksize and whether mode is CRD (else DCR). */
static og_status *block_args(kernel_ctx *ctx, const tensor **x, size_t *es, int64_t *bs,
                             bool *crd) {
    OG_TRY(layout_data(ctx, 1, x, es));
    if ((*x)->rank != 4) {
        char a[96];
        return kernel_errorf(ctx, OG_ERR_INVALID_ARGUMENT, "input 0 has shape %s, expected "
                             "[N, C, H, W]", shape_str((*x)->dims, (*x)->rank, a, sizeof a));
    }
    *bs = graph_attr_int(ctx->node, "blocksize", 0);
    if (*bs < 1)
        return kernel_errorf(ctx, OG_ERR_INVALID_MODEL, "blocksize is %lld, expected >= 1",
                             (long long)*bs);
    const char *mode = graph_attr_string(ctx->node, "mode", "DCR");
    *crd = strcmp(mode, "CRD") == 0;
    if (!*crd && strcmp(mode, "DCR") != 0)
        return kernel_errorf(ctx, OG_ERR_INVALID_MODEL, "mode is '%s', expected 'DCR' or 'CRD'",
                             mode);
    return NULL;
}

og_status *cpu_depth_to_space(kernel_ctx *ctx) {
    const tensor *x;
    size_t es;
    int64_t bs;
    bool crd;
    OG_TRY(block_args(ctx, &x, &es, &bs, &crd));
    int64_t b = x->dims[0], c = x->dims[1], h = x->dims[2], w = x->dims[3];
    if (c % (bs * bs))
        return kernel_errorf(ctx, OG_ERR_INVALID_ARGUMENT, "input 0 has %lld channels, not a "
                             "multiple of blocksize^2 = %lld", (long long)c, (long long)(bs * bs));
    int64_t cc = c / (bs * bs), od[4] = {b, cc, h * bs, w * bs};
    int64_t dcr[6] = {b, bs, bs, cc, h, w}, crdv[6] = {b, cc, bs, bs, h, w};
    static const int p_dcr[6] = {0, 3, 4, 1, 5, 2}, p_crd[6] = {0, 1, 4, 2, 5, 3};
    return view_transpose(ctx, x, es, crd ? crdv : dcr, crd ? p_crd : p_dcr, od);
}

og_status *cpu_space_to_depth(kernel_ctx *ctx) {
    const tensor *x;
    size_t es;
    int64_t bs;
    bool crd;
    OG_TRY(block_args(ctx, &x, &es, &bs, &crd));
    int64_t b = x->dims[0], c = x->dims[1], h = x->dims[2], w = x->dims[3];
    if (h % bs || w % bs)
        return kernel_errorf(ctx, OG_ERR_INVALID_ARGUMENT, "input 0 has spatial size %lldx%lld, "
                             "not a multiple of blocksize %lld", (long long)h, (long long)w,
                             (long long)bs);
    int64_t vd[6] = {b, c, h / bs, bs, w / bs, bs}, od[4] = {b, c * bs * bs, h / bs, w / bs};
    static const int p_dcr[6] = {0, 3, 5, 1, 2, 4}, p_crd[6] = {0, 1, 3, 5, 2, 4};
    return view_transpose(ctx, x, es, vd, crd ? p_crd : p_dcr, od);
}
