/* Max Min Sum Mean over any number of broadcast inputs: folded left into the output,
 * rounding after each step as the reference does in the input dtype. */
#include "backends/native/kernels/cast/cast.h"
#include "backends/native/kernels/elementwise/elementwise.h"

static og_status *fold(kernel_ctx *ctx, int op, bool mean) {
    OG_TRY(kernel_require_inputs(ctx, 1));
    int n = ctx->n_inputs;
    og_dtype dt = ctx->inputs[0]->dtype;
    for (int k = 1; k < n; k++) {
        if (!ctx->inputs[k])
            return kernel_errorf(ctx, OG_ERR_INVALID_MODEL, "input %d is missing", k);
        if (ctx->inputs[k]->dtype != dt)
            return kernel_errorf(ctx, OG_ERR_INVALID_MODEL, "input %d has dtype %s, input 0 %s",
                                 k, og_dtype_name(ctx->inputs[k]->dtype), og_dtype_name(dt));
    }
    ew_loop_fn fn = cpu_binary_loop(op, dt);
    if (!fn || (mean && !mk_is_float(dt))) return kernel_unsupported_dtype(ctx, 0, dt);
    int64_t dims[OG_MAX_RANK];
    int rank;
    tensor *out;
    OG_TRY(cpu_ew_shape(ctx, n, ctx->inputs, dims, &rank));
    OG_TRY(kernel_output(ctx, 0, dt, rank, dims, &out));
    /* A single input is copied: Max(x, x) == x for every dtype, NaN included. */
    const tensor *first[2] = {ctx->inputs[0], ctx->inputs[n > 1]};
    OG_TRY(cpu_ew_run(ctx, out, 2, first, n > 1 ? fn : cpu_binary_loop(BIN_MAX, dt), NULL,
                      EW_GRAIN));
    for (int k = 2; k < n; k++) {
        const tensor *step[2] = {out, ctx->inputs[k]};
        OG_TRY(cpu_ew_run(ctx, out, 2, step, fn, NULL, EW_GRAIN));
    }
    if (!mean || n == 1) return NULL;
    uint64_t count;
    cpu_math_store_f64(dt, &count, 0, (double)n);
    tensor divisor = {.dtype = dt, .rank = 0, .data = &count, .nbytes = dtype_size(dt)};
    const tensor *div[2] = {out, &divisor};
    return cpu_ew_run(ctx, out, 2, div, cpu_binary_loop(BIN_DIV, dt), NULL, EW_GRAIN);
}

og_status *cpu_max(kernel_ctx *ctx) { return fold(ctx, BIN_MAX, false); }
og_status *cpu_min(kernel_ctx *ctx) { return fold(ctx, BIN_MIN, false); }
og_status *cpu_sum(kernel_ctx *ctx) { return fold(ctx, BIN_ADD, false); }
og_status *cpu_mean(kernel_ctx *ctx) { return fold(ctx, BIN_ADD, true); }
