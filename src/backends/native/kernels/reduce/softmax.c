/* Softmax and LogSoftmax. Before opset 13 the input is seen as 2-D [prod(dims[:axis]),
 * prod(dims[axis:])] and each row is normalized; from 13 on only dimension `axis` is.
 * Both are lines of `len` elements `inner` apart. Rows are shifted by their maximum so
 * exp never overflows. float32/float16/bfloat16 compute in float32 with sums in double;
 * float64 computes in double throughout (a float32 round trip would turn |x| > 3.4e38
 * into infinities and lose half the digits).
 *
 * A row whose maximum is not finite (a NaN, +inf, or every element -inf) is all NaN:
 * onnx's reference computes exp(x - max) / sum, where x - max is NaN for such rows. */
#include "backends/native/kernels/reduce/reduce.h"

#include "base/vmath.h"

#include <math.h>

typedef struct sm_job {
    const float *x;
    float *y;
    const double *xd;
    double *yd;
    int64_t len, inner;
    bool log;
} sm_job;

#define SM_MAX(x, len, st, m)                                                            \
    do {                                                                                 \
        m = x[0];                                                                        \
        for (int64_t i = 1; i < len && m == m; i++)                                      \
            if (!(x[i * st] <= m)) m = x[i * st]; /* a NaN wins and stops the scan */    \
    } while (0)

static void sm_lines_f32(void *arg, int64_t b, int64_t e) {
    const sm_job *j = arg;
    int64_t st = j->inner;
    for (int64_t l = b; l < e; l++) {
        int64_t base = (l / st) * j->len * st + l % st;
        const float *x = j->x + base;
        float *y = j->y + base;
        float m;
        SM_MAX(x, j->len, st, m);
        if (!isfinite(m)) {
            for (int64_t i = 0; i < j->len; i++) y[i * st] = NAN;
            continue;
        }
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
        if (j->log) { /* (x - m) - log(sum): m + log(sum) would lose log(sum) to a large m */
            float ls = (float)log(sum);
            for (int64_t i = 0; i < j->len; i++) y[i * st] = (x[i * st] - m) - ls;
        } else {
            float inv = (float)(1.0 / sum);
            for (int64_t i = 0; i < j->len; i++) y[i * st] *= inv;
        }
    }
}

static void sm_lines_f64(void *arg, int64_t b, int64_t e) {
    const sm_job *j = arg;
    int64_t st = j->inner;
    for (int64_t l = b; l < e; l++) {
        int64_t base = (l / st) * j->len * st + l % st;
        const double *x = j->xd + base;
        double *y = j->yd + base;
        double m, sum = 0;
        SM_MAX(x, j->len, st, m);
        if (!isfinite(m)) {
            for (int64_t i = 0; i < j->len; i++) y[i * st] = NAN;
            continue;
        }
        for (int64_t i = 0; i < j->len; i++) {
            double v = exp(x[i * st] - m);
            sum += v;
            if (!j->log) y[i * st] = v;
        }
        if (j->log) {
            double ls = log(sum);
            for (int64_t i = 0; i < j->len; i++) y[i * st] = (x[i * st] - m) - ls;
        } else {
            for (int64_t i = 0; i < j->len; i++) y[i * st] /= sum;
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
    if (!cpu_is_float(x->dtype)) return kernel_unsupported_dtype(ctx, 0, x->dtype);
    sm_job j = {.log = log};
    tensor *y;
    OG_TRY(kernel_output(ctx, 0, x->dtype, x->rank, x->dims, &y));
    int64_t n = tensor_count(x);
    j.inner = v13 ? cpu_dims_prod(x->dims, axis + 1, x->rank) : 1;
    j.len = x->rank == 0 ? 1 : cpu_dims_prod(x->dims, axis, v13 ? axis + 1 : x->rank);
    if (n == 0 || j.len == 0) return NULL;
    int64_t grain = 1 + 8192 / j.len;
    if (x->dtype == OG_FLOAT64) {
        j.xd = x->data;
        j.yd = y->data;
        threadpool_parallel_for(ctx->pool, n / j.len, grain, sm_lines_f64, &j);
        return NULL;
    }
    OG_TRY(cpu_in_f32(ctx, 0, &j.x));
    OG_TRY(cpu_out_f32(ctx, y, &j.y));
    threadpool_parallel_for(ctx->pool, n / j.len, grain, sm_lines_f32, &j);
    cpu_out_f32_done(y, j.y);
    return NULL;
}

og_status *cpu_softmax(kernel_ctx *ctx) { return softmax_run(ctx, false); }
og_status *cpu_log_softmax(kernel_ctx *ctx) { return softmax_run(ctx, true); }
