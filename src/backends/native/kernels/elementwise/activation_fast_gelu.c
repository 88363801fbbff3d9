/* com.microsoft FastGelu: the tanh approximation of GELU,
 * y = 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))), on x + bias when the optional bias
 * (one value per element of the last dimension) is given. */
#include "backends/native/kernels/elementwise/elementwise.h"
#include "backends/native/kernels/kernel_util.h"

#include "base/vmath.h"

#include <math.h>

typedef struct gelu_job {
    const float *x, *bias;
    float *y;
    const double *xd, *biasd;
    double *yd;
    int64_t cols; /* bias length (1 when there is no bias) */
} gelu_job;

static const double GELU_A = 0.7978845608028654; /* sqrt(2/pi) */
static const double GELU_B = 0.044715;

static void gelu_f32(void *arg, int64_t b, int64_t e) {
    const gelu_job *j = arg;
    const float *x = j->x + b;
    if (j->bias) { /* x + bias staged in y, then the vectorized GELU in place */
        int64_t i = b, c = b % j->cols; /* one division, then runs along the bias */
        while (i < e) {
            int64_t run = j->cols - c < e - i ? j->cols - c : e - i;
            const float *xs = j->x + i, *bs = j->bias + c;
            float *ys = j->y + i;
            for (int64_t k = 0; k < run; k++) ys[k] = xs[k] + bs[k];
            i += run;
            c = 0;
        }
        x = j->y + b;
    }
    vgelu_tanh_f32(x, j->y + b, e - b);
}

static void gelu_f64(void *arg, int64_t b, int64_t e) {
    const gelu_job *j = arg;
    for (int64_t i = b; i < e; i++) {
        double v = j->xd[i] + (j->biasd ? j->biasd[i % j->cols] : 0.0);
        j->yd[i] = 0.5 * v * (1.0 + tanh(GELU_A * v * (1.0 + GELU_B * v * v)));
    }
}

og_status *cpu_contrib_fast_gelu(kernel_ctx *ctx) {
    OG_TRY(kernel_require_inputs(ctx, 1));
    const tensor *x = ctx->inputs[0], *bias = kernel_input(ctx, 1);
    og_dtype dt = x->dtype;
    if (!cpu_is_f32able(dt) && dt != OG_FLOAT64) return kernel_unsupported_dtype(ctx, 0, dt);
    gelu_job j = {.cols = 1};
    if (bias) {
        if (bias->dtype != dt)
            return kernel_errorf(ctx, OG_ERR_INVALID_ARGUMENT, "input 1 (bias) is %s, but X "
                                 "is %s", og_dtype_name(bias->dtype), og_dtype_name(dt));
        int64_t last = x->rank ? x->dims[x->rank - 1] : 1;
        if (bias->rank != 1 || bias->dims[0] != last) {
            char a[96], b[96];
            return kernel_errorf(ctx, OG_ERR_INVALID_ARGUMENT, "input 1 (bias) has shape %s, "
                                 "expected 1-D of X's last dimension (X is %s)",
                                 shape_str(bias->dims, bias->rank, a, sizeof a),
                                 shape_str(x->dims, x->rank, b, sizeof b));
        }
        j.cols = last;
    }
    tensor *y;
    OG_TRY(kernel_output(ctx, 0, dt, x->rank, x->dims, &y));
    int64_t n = tensor_count(x);
    if (n == 0) return NULL;
    if (bias && j.cols == 0) return NULL;
    if (dt == OG_FLOAT64) {
        j.xd = x->data;
        j.biasd = bias ? bias->data : NULL;
        j.yd = y->data;
        threadpool_parallel_for(ctx->pool, n, 4096, gelu_f64, &j);
        return NULL;
    }
    OG_TRY(cpu_in_f32(ctx, 0, &j.x));
    if (bias) OG_TRY(cpu_in_f32(ctx, 1, &j.bias));
    OG_TRY(cpu_out_f32(ctx, y, &j.y));
    threadpool_parallel_for(ctx->pool, n, 4096, gelu_f32, &j);
    cpu_out_f32_done(y, j.y);
    return NULL;
}
