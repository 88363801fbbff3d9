/* com.microsoft GatedAdd (a MoE layer's shared expert added under its gate):
 *     y = x + round_to_T(s * gate)
 * x and s are (..., C), gate (..., 1) with the same leading dimensions. The product is
 * rounded to the storage type before the sum, as the separate Mul and Add it replaces
 * would round it. Rows are split over the pool. */
#include "backends/native/kernels/elementwise/elementwise.h"
#include "backends/native/kernels/kernel_util.h"

#include <string.h>

typedef struct gadd_job {
    og_dtype dt;
    const void *x, *s, *gate;
    void *y;
    int64_t C;
} gadd_job;

static void gadd_rows(void *arg, int64_t begin, int64_t end) {
    const gadd_job *j = arg;
    size_t es = j->dt == OG_FLOAT32 ? 4 : 2;
    float x[256], s[256], g;
    for (int64_t r = begin; r < end; r++) {
        cpu_load_f32(j->dt, (const char *)j->gate + (size_t)r * es, 1, &g);
        for (int64_t c0 = 0; c0 < j->C; c0 += 256) {
            int64_t n = j->C - c0 < 256 ? j->C - c0 : 256;
            size_t off = (size_t)(r * j->C + c0) * es;
            cpu_load_f32(j->dt, (const char *)j->x + off, n, x);
            cpu_load_f32(j->dt, (const char *)j->s + off, n, s);
            for (int64_t i = 0; i < n; i++) x[i] += cpu_round_to(j->dt, s[i] * g);
            cpu_store_f32(j->dt, (char *)j->y + off, n, x);
        }
    }
}

og_status *cpu_contrib_gated_add(kernel_ctx *ctx) {
    OG_TRY(kernel_require_inputs(ctx, 3));
    const tensor *x = ctx->inputs[0], *s = ctx->inputs[1], *g = ctx->inputs[2];
    og_dtype dt = x->dtype;
    if (!cpu_is_f32able(dt)) return kernel_unsupported_dtype(ctx, 0, dt);
    if (x->rank < 1)
        return kernel_error(ctx, OG_ERR_INVALID_ARGUMENT, "input 0 must be (..., C)");
    for (int i = 1; i < 3; i++)
        if (ctx->inputs[i]->dtype != dt)
            return kernel_errorf(ctx, OG_ERR_INVALID_ARGUMENT, "input %d is %s, expected %s", i,
                                 og_dtype_name(ctx->inputs[i]->dtype), og_dtype_name(dt));
    OG_TRY(cpu_want_shape(ctx, 1, "Y", x->rank, x->dims));
    int64_t gd[OG_MAX_RANK];
    memcpy(gd, x->dims, sizeof(int64_t) * (size_t)x->rank);
    gd[x->rank - 1] = 1;
    OG_TRY(cpu_want_shape(ctx, 2, "gate", x->rank, gd));
    tensor *y;
    OG_TRY(kernel_output(ctx, 0, dt, x->rank, x->dims, &y));
    gadd_job j = {.dt = dt, .x = x->data, .s = s->data, .gate = g->data, .y = y->data,
                  .C = x->dims[x->rank - 1]};
    int64_t rows = j.C ? tensor_count(x) / j.C : 0;
    if (rows == 0) return NULL;
    threadpool_parallel_for(ctx->pool, rows, 1 + 16384 / (j.C + 1), gadd_rows, &j);
    return NULL;
}
