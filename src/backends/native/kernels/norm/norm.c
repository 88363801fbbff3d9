/* LayerNormalization (17) and RMSNormalization (23) over dimensions [axis, rank).
 * Statistics are computed in double per row, the rest in float32 (float64 inputs in
 * double). Scale and B broadcast unidirectionally to X, so each is read at (row base +
 * a fixed per-column offset) from precomputed tables. */
#include "backends/native/kernels/broadcast.h"
#include "backends/native/kernels/norm/norm.h"

#include "base/half.h"

#include <math.h>

typedef struct norm_job {
    const void *x, *scale, *bias; /* float, or double on the float64 path */
    void *y;
    float *mean, *inv;
    int64_t cols;
    int axis;
    const int64_t *dims;                       /* X's outer dims [0, axis) */
    int64_t sstr[OG_MAX_RANK], bstr[OG_MAX_RANK]; /* outer strides of Scale / B */
    const int64_t *scol, *bcol;                /* per-column offsets of Scale / B */
    float eps;
    bool rms;
} norm_job;

/* Rows in T (float, or double for float64 inputs, as the reference computes in X's
 * type); statistics in double either way. */
#define NORM_ROWS(NAME, T)                                                               \
    static void NAME(void *arg, int64_t b, int64_t e) {                                  \
        const norm_job *j = arg;                                                         \
        int64_t n = j->cols;                                                             \
        for (int64_t r = b; r < e; r++) {                                                \
            const T *x = (const T *)j->x + r * n;                                        \
            T *y = (T *)j->y + r * n;                                                    \
            double mean = 0, var = 0;                                                    \
            if (!j->rms) {                                                               \
                for (int64_t i = 0; i < n; i++) mean += x[i];                            \
                mean /= (double)n;                                                       \
            }                                                                            \
            for (int64_t i = 0; i < n; i++) var += (x[i] - mean) * (x[i] - mean);        \
            T inv = (T)(1.0 / sqrt(var / (double)n + j->eps)), mf = (T)mean;             \
            const T *s = (const T *)j->scale + cpu_offset_of(r, j->axis, j->dims, j->sstr); \
            const T *bb = j->bias ? (const T *)j->bias +                                 \
                                        cpu_offset_of(r, j->axis, j->dims, j->bstr)      \
                                  : NULL;                                                \
            for (int64_t i = 0; i < n; i++)                                              \
                y[i] = (x[i] - mf) * inv * s[j->scol[i]] + (bb ? bb[j->bcol[i]] : (T)0); \
            if (j->mean) j->mean[r] = (float)mf;                                         \
            if (j->inv) j->inv[r] = (float)inv;                                          \
        }                                                                                \
    }
NORM_ROWS(norm_rows, float)
NORM_ROWS(norm_rows_f64, double)

/* Outer strides and per-column offsets of input `index` broadcast onto X's shape. */
static og_status *norm_param(kernel_ctx *ctx, int index, bool f64, const void **data,
                             int64_t *outer, const int64_t **cols, int axis, int64_t ncols) {
    const tensor *x = ctx->inputs[0], *p = kernel_input(ctx, index);
    if (!p) return NULL;
    int64_t bshape[OG_MAX_RANK], str[OG_MAX_RANK];
    int brank;
    og_status *err = broadcast_shape(x->dims, x->rank, p->dims, p->rank, bshape, &brank);
    bool ok = !err && brank == x->rank;
    for (int i = 0; ok && i < brank; i++) ok = bshape[i] == x->dims[i];
    if (!ok) {
        og_status_free(err);
        char a[96], b[96];
        return kernel_errorf(ctx, OG_ERR_INVALID_ARGUMENT, "input %d has shape %s, which does "
                             "not broadcast to X's shape %s", index,
                             shape_str(p->dims, p->rank, a, sizeof a),
                             shape_str(x->dims, x->rank, b, sizeof b));
    }
    if (f64) {
        *data = p->data;
    } else {
        const float *f;
        OG_TRY(cpu_in_f32(ctx, index, &f));
        *data = f;
    }
    broadcast_strides(p->dims, p->rank, x->dims, x->rank, str);
    for (int i = 0; i < axis; i++) outer[i] = str[i];
    int64_t *c;
    OG_TRY(kernel_scratch(ctx, (size_t)ncols * sizeof(int64_t) + 1, (void **)&c));
    for (int64_t k = 0; k < ncols; k++)
        c[k] = cpu_offset_of(k, x->rank - axis, x->dims + axis, str + axis);
    *cols = c;
    return NULL;
}

static og_status *norm_run(kernel_ctx *ctx, bool rms) {
    OG_TRY(kernel_require_inputs(ctx, 2));
    const tensor *x = ctx->inputs[0];
    int axis;
    OG_TRY(cpu_axis(ctx, graph_attr_int(ctx->node, "axis", -1), x->rank, "axis", &axis));
    int64_t stash = graph_attr_int(ctx->node, "stash_type", 1);
    if (stash != OG_FLOAT32 && stash != OG_BFLOAT16 && stash != OG_FLOAT16 && stash != OG_FLOAT64)
        return kernel_errorf(ctx, OG_ERR_INVALID_ARGUMENT, "stash_type %lld is not a float type",
                             (long long)stash);
    norm_job j = {.axis = axis, .dims = x->dims, .rms = rms,
                  .eps = graph_attr_float(ctx->node, "epsilon", 1e-5f),
                  .cols = cpu_dims_prod(x->dims, axis, x->rank)};
    int64_t rows = cpu_dims_prod(x->dims, 0, axis);
    /* float64 in double when every float input is float64 (RMSNormalization's Scale
     * may have another type; then all go through float32) */
    const tensor *bias = rms ? NULL : kernel_input(ctx, 2);
    bool f64 = x->dtype == OG_FLOAT64 && ctx->inputs[1]->dtype == OG_FLOAT64 &&
               (!bias || bias->dtype == OG_FLOAT64);
    if (f64) {
        j.x = x->data;
    } else {
        const float *xf;
        OG_TRY(cpu_in_f32(ctx, 0, &xf));
        j.x = xf;
    }
    OG_TRY(norm_param(ctx, 1, f64, &j.scale, j.sstr, &j.scol, axis, j.cols));
    if (!rms) OG_TRY(norm_param(ctx, 2, f64, &j.bias, j.bstr, &j.bcol, axis, j.cols));
    /* RMSNormalization's Y takes Scale's type (V); LayerNormalization's takes X's. */
    tensor *y, *stats[2] = {NULL, NULL};
    OG_TRY(kernel_output(ctx, 0, rms ? ctx->inputs[1]->dtype : x->dtype, x->rank, x->dims, &y));
    float *yf = NULL;
    if (!f64) OG_TRY(cpu_out_f32(ctx, y, &yf));
    j.y = f64 ? y->data : (void *)yf;
    int64_t sd[OG_MAX_RANK];
    for (int i = 0; i < x->rank; i++) sd[i] = i < axis ? x->dims[i] : 1;
    og_dtype sdt = stash == OG_BFLOAT16 ? OG_BFLOAT16 : OG_FLOAT32;
    for (int k = 0; !rms && k < 2 && k + 1 < ctx->n_outputs; k++)
        if (ctx->node->outputs[k + 1] >= 0) {
            OG_TRY(kernel_output(ctx, k + 1, sdt, x->rank, sd, &stats[k]));
            OG_TRY(cpu_out_f32(ctx, stats[k], k ? &j.inv : &j.mean));
        }
    if (rows > 0 && j.cols > 0)
        threadpool_parallel_for(ctx->pool, rows, 1 + 8192 / j.cols,
                                f64 ? norm_rows_f64 : norm_rows, &j);
    if (!f64) cpu_out_f32_done(y, yf);
    if (stats[0]) cpu_out_f32_done(stats[0], j.mean);
    if (stats[1]) cpu_out_f32_done(stats[1], j.inv);
    return NULL;
}

og_status *cpu_layer_norm(kernel_ctx *ctx) { return norm_run(ctx, false); }
og_status *cpu_rms_norm(kernel_ctx *ctx) { return norm_run(ctx, true); }

void cpu_layer_norm_row(const float *x, int64_t n, const float *gamma, const float *beta,
                       float eps, float *y, float *mean, float *inv) {
    double mu = n ? cpu_row_sum_f64(x, n, 0, false) / (double)n : 0;
    double sq = cpu_row_sum_f64(x, n, mu, true);
    float m = (float)mu, is = (float)(1.0 / sqrt((n ? sq / (double)n : 0) + eps));
    int64_t i = 0; /* blocks of eight, read whole before written, vectorize at -O2 */
    for (; i + 8 <= n; i += 8) {
        float t[8];
        for (int e = 0; e < 8; e++) t[e] = (x[i + e] - m) * is * gamma[i + e];
        if (beta)
            for (int e = 0; e < 8; e++) t[e] += beta[i + e];
        else
            for (int e = 0; e < 8; e++) t[e] += 0.0f;
        for (int e = 0; e < 8; e++) y[i + e] = t[e];
    }
    for (; i < n; i++) y[i] = (x[i] - m) * is * gamma[i] + (beta ? beta[i] : 0.0f);
    if (mean) *mean = m;
    if (inv) *inv = is;
}
