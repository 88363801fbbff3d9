#include "backends/native/kernels/kernel.h"

og_status *kernel_require_inputs(const kernel_ctx *ctx, int min_count) {
    if (ctx->n_inputs < min_count)
        return kernel_errorf(ctx, OG_ERR_INVALID_MODEL, "has %d inputs, expected at least %d",
                             ctx->n_inputs, min_count);
    for (int i = 0; i < min_count; i++)
        if (!ctx->inputs[i])
            return kernel_errorf(ctx, OG_ERR_INVALID_MODEL, "required input %d is missing", i);
    return NULL;
}

og_status *kernel_unsupported_dtype(const kernel_ctx *ctx, int input, og_dtype dtype) {
    return kernel_errorf(ctx, OG_ERR_UNSUPPORTED, "input %d has dtype %s, which this op does "
                         "not implement", input, og_dtype_name(dtype));
}

og_status *kernel_hold(kernel_ctx *ctx, size_t size, void **out) {
    if (!ctx->hold)
        return kernel_error(ctx, OG_ERR_UNSUPPORTED, "makes new strings, which need memory "
                            "held for the run; this executor holds none");
    return ctx->hold(ctx, size, out);
}
