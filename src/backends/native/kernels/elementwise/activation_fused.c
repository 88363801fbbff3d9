/* com.microsoft QuickGelu (x * sigmoid(alpha * x)), BiasGelu (the erf Gelu of A + bias,
 * bias broadcast over the last dimension) and BiasAdd (X + bias + skip, X and skip
 * (N, S, C), bias (C)). Elementwise over chunks converted to float32 (float64 kept in
 * double), in parallel over the pool. */
#include "backends/native/kernels/elementwise/elementwise.h"
#include "backends/native/kernels/kernel_util.h"

#include "base/vmath.h"

#include <math.h>

enum { CHUNK = 512 };

typedef struct act_job {
    og_dtype dt;
    const void *x, *b, *skip; /* b: bias of length c (or NULL), skip like x (or NULL) */
    void *y;
    int64_t n, c;
    int op;                   /* 0 QuickGelu, 1 BiasGelu, 2 BiasAdd */
    float alpha;
} act_job;

static inline double act_d(const act_job *j, double x) {
    if (j->op == 0) return x / (1.0 + exp(-(double)j->alpha * x));
    if (j->op == 1) return 0.5 * x * (1.0 + erf(x * M_SQRT1_2));
    return x;
}

static void act_fn(void *arg, int64_t begin, int64_t end) {
    const act_job *j = arg;
    size_t es = j->dt == OG_FLOAT64 ? 8 : j->dt == OG_FLOAT32 ? 4 : 2;
    float xb[CHUNK], bb[CHUNK], sb[CHUNK];
    for (int64_t c0 = begin * CHUNK; c0 < end * CHUNK && c0 < j->n; c0 += CHUNK) {
        int64_t m = j->n - c0 < CHUNK ? j->n - c0 : CHUNK;
        if (j->dt == OG_FLOAT64) {
            const double *x = (const double *)j->x + c0, *b = j->b, *s = j->skip;
            double *y = (double *)j->y + c0;
            for (int64_t i = 0; i < m; i++) {
                double v = x[i] + (b ? b[(c0 + i) % j->c] : 0) + (s ? s[c0 + i] : 0);
                y[i] = act_d(j, v);
            }
            continue;
        }
        cpu_load_f32(j->dt, (const char *)j->x + (size_t)c0 * es, m, xb);
        if (j->skip) cpu_load_f32(j->dt, (const char *)j->skip + (size_t)c0 * es, m, sb);
        if (j->b) {
            /* the bias slice of this chunk, possibly wrapping around the last dimension */
            for (int64_t i = 0; i < m;) {
                int64_t k = (c0 + i) % j->c, run = j->c - k < m - i ? j->c - k : m - i;
                cpu_load_f32(j->dt, (const char *)j->b + (size_t)k * es, run, bb + i);
                i += run;
            }
        }
        for (int64_t i = 0; i < m; i++) {
            float v = xb[i];
            if (j->b) v += bb[i];
            if (j->skip) v += sb[i];
            xb[i] = v;
        }
        if (j->op == 0) vsilu_f32(xb, xb, m, j->alpha);
        if (j->op == 1) vgelu_erf_f32(xb, xb, m);
        cpu_store_f32(j->dt, (char *)j->y + (size_t)c0 * es, m, xb);
    }
}

static og_status *act_run(kernel_ctx *ctx, act_job *j) {
    const tensor *x = ctx->inputs[0];
    tensor *y;
    OG_TRY(kernel_output(ctx, 0, x->dtype, x->rank, x->dims, &y));
    j->dt = x->dtype;
    j->x = x->data;
    j->y = y->data;
    j->n = tensor_count(x);
    int64_t chunks = (j->n + CHUNK - 1) / CHUNK;
    threadpool_parallel_for(ctx->pool, chunks, 16, act_fn, j);
    return NULL;
}

static og_status *check_like(kernel_ctx *ctx, int i, const char *what, bool bias) {
    const tensor *x = ctx->inputs[0], *t = ctx->inputs[i];
    char a[96], b[96];
    if (t->dtype != x->dtype)
        return kernel_errorf(ctx, OG_ERR_INVALID_ARGUMENT, "input %d (%s) is %s, expected %s", i,
                             what, og_dtype_name(t->dtype), og_dtype_name(x->dtype));
    int64_t c = x->rank ? x->dims[x->rank - 1] : 1;
    bool ok = bias ? t->rank == 1 && t->dims[0] == c && x->rank >= 1
                   : t->rank == x->rank &&
                         memcmp(t->dims, x->dims, sizeof(int64_t) * (size_t)x->rank) == 0;
    if (!ok)
        return kernel_errorf(ctx, OG_ERR_INVALID_ARGUMENT, "input %d (%s) has shape %s, expected "
                             "%s%s", i, what, shape_str(t->dims, t->rank, a, sizeof a),
                             bias ? "the last dimension of " : "",
                             shape_str(x->dims, x->rank, b, sizeof b));
    return NULL;
}

og_status *cpu_contrib_quick_gelu(kernel_ctx *ctx) {
    OG_TRY(kernel_require_inputs(ctx, 1));
    og_dtype dt = ctx->inputs[0]->dtype;
    if (!cpu_is_f32able(dt) && dt != OG_FLOAT64) return kernel_unsupported_dtype(ctx, 0, dt);
    act_job j = {.op = 0, .alpha = graph_attr_float(ctx->node, "alpha", 1.702f), .c = 1};
    return act_run(ctx, &j);
}

og_status *cpu_contrib_bias_gelu(kernel_ctx *ctx) {
    OG_TRY(kernel_require_inputs(ctx, 2));
    og_dtype dt = ctx->inputs[0]->dtype;
    if (!cpu_is_f32able(dt) && dt != OG_FLOAT64) return kernel_unsupported_dtype(ctx, 0, dt);
    OG_TRY(check_like(ctx, 1, "bias", true));
    const tensor *x = ctx->inputs[0];
    act_job j = {.op = 1, .b = ctx->inputs[1]->data, .c = x->dims[x->rank - 1]};
    if (j.c == 0) j.c = 1;
    return act_run(ctx, &j);
}

og_status *cpu_contrib_bias_add(kernel_ctx *ctx) {
    OG_TRY(kernel_require_inputs(ctx, 3));
    const tensor *x = ctx->inputs[0];
    if (!cpu_is_f32able(x->dtype)) return kernel_unsupported_dtype(ctx, 0, x->dtype);
    if (x->rank != 3) {
        char a[96];
        return kernel_errorf(ctx, OG_ERR_INVALID_ARGUMENT, "input 0 has shape %s, expected "
                             "(N, S, C)", shape_str(x->dims, x->rank, a, sizeof a));
    }
    OG_TRY(check_like(ctx, 1, "bias", true));
    OG_TRY(check_like(ctx, 2, "skip", false));
    act_job j = {.op = 2, .b = ctx->inputs[1]->data, .skip = ctx->inputs[2]->data,
                 .c = x->dims[2] ? x->dims[2] : 1};
    return act_run(ctx, &j);
}
