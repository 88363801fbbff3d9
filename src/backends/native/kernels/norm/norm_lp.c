/* LpNormalization (opset 1 on): y = x / ||x||_p along `axis` (default -1), p 1 (sum of
 * absolute values) or 2 (default); a zero norm gives 0, as onnx's reference does.
 * float32 is computed as onnxruntime computes it: the norm summed in float32 in axis
 * order, each square rounded before it is added (no fused multiply-add: this file is
 * compiled without contraction), sqrtf, then one division per value. Its bits matter:
 * Qwen3.5's q/k l2norm feeds MatMulNBits' int8 quantization at accuracy_level 4. Other
 * types sum in double. Work is split over the outer dimensions. */
#include "backends/native/kernels/norm/norm.h"

#include <math.h>

typedef struct lp_job {
    og_dtype dt;
    const void *x;
    void *y;
    int64_t n, inner; /* the normalized axis, the dimensions after it */
    bool l1;
    double *buf;      /* per outer row: `width` doubles */
    int64_t width;    /* n when inner is 1, else 2 * inner */
} lp_job;

/* float32: onnxruntime's arithmetic (the header); x and y may be one buffer. */
static void lp_rows_f32(const lp_job *j, int64_t begin, int64_t end) {
    const int64_t n = j->n, in = j->inner;
    const float *x = j->x;
    float *y = j->y;
    for (int64_t o = begin; o < end; o++)
        for (int64_t i = 0; i < in; i++) {
            const float *xr = x + o * n * in + i;
            float *yr = y + o * n * in + i, norm = 0.0f;
            for (int64_t a = 0; a < n; a++) {
                float v = xr[a * in];
                norm += j->l1 ? fabsf(v) : v * v;
            }
            if (!j->l1) norm = sqrtf(norm);
            for (int64_t a = 0; a < n; a++) yr[a * in] = norm == 0 ? 0.0f : xr[a * in] / norm;
        }
}

static void lp_rows(void *arg, int64_t begin, int64_t end) {
    const lp_job *j = arg;
    int64_t n = j->n, in = j->inner;
    if (j->dt == OG_FLOAT32) {
        lp_rows_f32(j, begin, end);
        return;
    }
    if (in == 1) {
        /* the last axis (Qwen3.5's q/k l2norm): a row is contiguous, so it is converted
         * in one call instead of one call per element; the same sums in the same order */
        double *row = j->buf + begin * j->width;
        for (int64_t o = begin; o < end; o++) {
            cpu_load_f64(j->dt, j->x, o * n, n, row);
            double sum = 0;
            for (int64_t a = 0; a < n; a++) sum += j->l1 ? fabs(row[a]) : row[a] * row[a];
            if (!j->l1) sum = sqrt(sum);
            for (int64_t a = 0; a < n; a++) row[a] = sum == 0 ? 0 : row[a] / sum;
            cpu_store_f64_rounded(j->dt, j->y, o * n, n, row);
        }
        return;
    }
    double *sum = j->buf + begin * j->width, *row = sum + in;
    for (int64_t o = begin; o < end; o++) {
        for (int64_t i = 0; i < in; i++) sum[i] = 0;
        for (int64_t a = 0; a < n; a++) {
            cpu_load_f64(j->dt, j->x, (o * n + a) * in, in, row);
            for (int64_t i = 0; i < in; i++) sum[i] += j->l1 ? fabs(row[i]) : row[i] * row[i];
        }
        if (!j->l1)
            for (int64_t i = 0; i < in; i++) sum[i] = sqrt(sum[i]);
        for (int64_t a = 0; a < n; a++) {
            cpu_load_f64(j->dt, j->x, (o * n + a) * in, in, row);
            for (int64_t i = 0; i < in; i++) row[i] = sum[i] == 0 ? 0 : row[i] / sum[i];
            cpu_store_f64_rounded(j->dt, j->y, (o * n + a) * in, in, row);
        }
    }
}

og_status *cpu_lp_normalization(kernel_ctx *ctx) {
    OG_TRY(kernel_require_inputs(ctx, 1));
    const tensor *x = ctx->inputs[0];
    if (!cpu_is_float(x->dtype)) return kernel_unsupported_dtype(ctx, 0, x->dtype);
    int64_t p = graph_attr_int(ctx->node, "p", 2);
    if (p != 1 && p != 2)
        return kernel_errorf(ctx, OG_ERR_INVALID_MODEL, "p %lld is not 1 or 2", (long long)p);
    int axis;
    OG_TRY(cpu_axis(ctx, graph_attr_int(ctx->node, "axis", -1), x->rank, "axis", &axis));
    tensor *y;
    OG_TRY(kernel_output(ctx, 0, x->dtype, x->rank, x->dims, &y));
    int64_t outer = cpu_dims_prod(x->dims, 0, axis);
    lp_job j = {.dt = x->dtype, .x = x->data, .y = y->data, .l1 = p == 1,
                .n = x->rank ? x->dims[axis] : 1, .inner = cpu_dims_prod(x->dims, axis + 1, x->rank)};
    if (tensor_count(x) == 0) return NULL;
    j.width = j.inner == 1 ? j.n : 2 * j.inner;
    OG_TRY(kernel_scratch(ctx, sizeof(double) * (size_t)(outer * j.width) + 1, (void **)&j.buf));
    threadpool_parallel_for(ctx->pool, outer, 1 + 16384 / (j.n * j.inner + 1), lp_rows, &j);
    return NULL;
}
