/* AffineGrid (opset 20): the sampling grid of an affine transform, for GridSample.
 * theta [N, 2, 3] and size [N, C, H, W] give grid [N, H, W, 2]; theta [N, 3, 4] and size
 * [N, C, D, H, W] give [N, D, H, W, 3]. Position (d, h, w) has normalized base
 * coordinates (x, y, z) = (u(w, W), u(h, H), u(d, D)), u(i, n) = -1 + 2i / (n - 1) with
 * align_corners (0 when n == 1) and -1 + (2i + 1) / n without, and the grid holds
 * theta[n] (x, y, [z,] 1). Computed in double, stored in theta's dtype. */
#include "backends/native/kernels/spatial/spatial.h"

#include "backends/native/kernels/kernel_util.h"

static double ag_base(int64_t i, int64_t n, bool align) {
    if (align) return n > 1 ? -1 + 2.0 * (double)i / (double)(n - 1) : 0;
    return -1 + (2.0 * (double)i + 1) / (double)n;
}

og_status *cpu_affine_grid(kernel_ctx *ctx) {
    OG_TRY(kernel_require_inputs(ctx, 2));
    const tensor *theta = ctx->inputs[0], *size = ctx->inputs[1];
    if (!cpu_is_float(theta->dtype)) return kernel_unsupported_dtype(ctx, 0, theta->dtype);
    int64_t ns = tensor_count(size);
    if (size->dtype != OG_INT64 || (ns != 4 && ns != 5))
        return kernel_errorf(ctx, OG_ERR_INVALID_ARGUMENT, "input 1 (size) must be 4 or 5 "
                             "int64 values, got %lld", (long long)ns);
    const int64_t *sz = size->data;
    int sp = (int)ns - 2;
    if (theta->rank != 3 || theta->dims[0] != sz[0] || theta->dims[1] != sp ||
        theta->dims[2] != sp + 1) {
        char a[96];
        return kernel_errorf(ctx, OG_ERR_INVALID_ARGUMENT, "input 0 (theta) has shape %s, "
                             "expected [%lld, %d, %d]",
                             shape_str(theta->dims, theta->rank, a, sizeof a), (long long)sz[0],
                             sp, sp + 1);
    }
    for (int i = 0; i < (int)ns; i++)
        if (sz[i] < 0)
            return kernel_errorf(ctx, OG_ERR_INVALID_ARGUMENT, "size[%d] is %lld", i,
                                 (long long)sz[i]);
    bool align = graph_attr_int(ctx->node, "align_corners", 0) != 0;
    int64_t od[5] = {sz[0]};
    for (int i = 0; i < sp; i++) od[1 + i] = sz[2 + i];
    od[1 + sp] = sp;
    tensor *y;
    OG_TRY(kernel_output(ctx, 0, theta->dtype, sp + 2, od, &y));
    int64_t n = tensor_count(y);
    if (n == 0) return NULL;
    double *th, *out;
    OG_TRY(cpu_in_f64(ctx, theta, 0, &th));
    OG_TRY(kernel_scratch(ctx, (size_t)n * sizeof(double), (void **)&out));
    int64_t D = sp == 3 ? sz[2] : 1, H = sz[ns - 2], W = sz[ns - 1];
    double *o = out;
    for (int64_t b = 0; b < sz[0]; b++) {
        const double *t = th + b * sp * (sp + 1);
        for (int64_t d = 0; d < D; d++)
            for (int64_t h = 0; h < H; h++)
                for (int64_t w = 0; w < W; w++) {
                    /* (x, y, 1) or (x, y, z, 1) */
                    double base[4] = {ag_base(w, W, align), ag_base(h, H, align),
                                      sp == 3 ? ag_base(d, D, align) : 1, 1};
                    for (int r = 0; r < sp; r++) {
                        double acc = 0;
                        for (int c = 0; c <= sp; c++) acc += t[r * (sp + 1) + c] * base[c];
                        *o++ = acc;
                    }
                }
    }
    cpu_store_f64(y, out);
    return NULL;
}
