/* Softmax and LogSoftmax. Before opset 13 the input is seen as 2-D [prod(dims[:axis]),
 * prod(dims[axis:])] and each row is normalized; from 13 on only dimension `axis` is.
 * Both are lines of `len` elements `inner` apart. Rows are shifted by their maximum so
 * exp never overflows; sums accumulate in double. */
#include "backends/native/kernels/reduce.h"

#include "base/vmath.h"

#include <math.h>

typedef struct sm_job {
    const float *x;
    float *y;
    int64_t len, inner;
    bool log;
} sm_job;

static void sm_lines(void *arg, int64_t b, int64_t e) {
    const sm_job *j = arg;
    int64_t st = j->inner;
    for (int64_t l = b; l < e; l++) {
        int64_t base = (l / st) * j->len * st + l % st;
        const float *x = j->x + base;
        float *y = j->y + base;
        float m = -INFINITY;
        for (int64_t i = 0; i < j->len; i++) m = x[i * st] > m ? x[i * st] : m;
        if (isinf(m)) m = 0; /* all -inf (or +inf present): let exp give 0/nan as numpy does */
        double sum = 0;
        if (st == 1) { /* contiguous rows: vectorized exp into y, which is rewritten below */
            vexp_shift_f32(x, y, j->len, m);
            for (int64_t i = 0; i < j->len; i++) sum += y[i];
        } else {
            for (int64_t i = 0; i < j->len; i++) {
                float v = expf(x[i * st] - m);
                sum += v;
                if (!j->log) y[i * st] = v;
            }
        }
        if (j->log) {
            float ls = (float)log(sum) + m;
            for (int64_t i = 0; i < j->len; i++) y[i * st] = x[i * st] - ls;
        } else {
            float inv = (float)(1.0 / sum);
            for (int64_t i = 0; i < j->len; i++) y[i * st] *= inv;
        }
    }
}

static og_status *softmax_run(kernel_ctx *ctx, bool log) {
    OG_TRY(kernel_require_inputs(ctx, 1));
    const tensor *x = ctx->inputs[0];
    bool v13 = ctx->opset >= 13;
    int axis;
    OG_TRY(cpu_axis(ctx, graph_attr_int(ctx->node, "axis", v13 ? -1 : 1), x->rank, "axis",
                    &axis));
    sm_job j = {.log = log};
    OG_TRY(cpu_in_f32(ctx, 0, &j.x));
    tensor *y;
    OG_TRY(kernel_output(ctx, 0, x->dtype, x->rank, x->dims, &y));
    OG_TRY(cpu_out_f32(ctx, y, &j.y));
    int64_t n = tensor_count(x);
    j.inner = v13 ? cpu_dims_prod(x->dims, axis + 1, x->rank) : 1;
    j.len = x->rank == 0 ? 1 : cpu_dims_prod(x->dims, axis, v13 ? axis + 1 : x->rank);
    if (n == 0 || j.len == 0) return NULL;
    threadpool_parallel_for(ctx->pool, n / j.len, 1 + 8192 / j.len, sm_lines, &j);
    cpu_out_f32_done(y, j.y);
    return NULL;
}

og_status *cpu_softmax(kernel_ctx *ctx) { return softmax_run(ctx, false); }
og_status *cpu_log_softmax(kernel_ctx *ctx) { return softmax_run(ctx, true); }
