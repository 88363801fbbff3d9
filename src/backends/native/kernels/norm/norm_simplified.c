/* RMS normalization: SimplifiedLayerNormalization (default domain, version 1, where
 * onnxruntime registers it) and com.microsoft SkipSimplifiedLayerNormalization.
 * y = x / sqrt(mean(x^2) + epsilon) * scale over the normalized dimensions.
 * Float32 rows with a scale as long as the row take onnxruntime's own float32
 * arithmetic, bit for bit (cpu_rms_f32_row, norm_rms_f32.c: at MatMulNBits
 * accuracy_level 4 one ulp here can move a product by a quantization step); other
 * dtypes and a repeating scale accumulate the mean of squares in double per row.
 * SimplifiedLayerNormalization's scale may be of another float type than X (the output
 * takes the scale's type, as onnxruntime does) and may cover only the trailing
 * normalized dimensions (it then repeats). */
#include "backends/native/kernels/norm/norm.h"

#include <math.h>

typedef struct rms_job {
    og_dtype xdt, ydt, sdt;
    const void *x, *skip, *bias; /* skip: rows indexed modulo skip_rows; bias (h) */
    const float *scale;          /* float32, length sc (h a multiple of it) */
    void *y, *sum;               /* sum: the skip/bias sum output, or NULL */
    float *inv;                  /* (rows) or NULL */
    int64_t h, sc, skip_rows;
    float eps;
    bool ort_f32;                /* float32 X, scale and Y, scale as long as the row */
    float *buf;                  /* (GROUP + 1) * h floats per chunk */
    int64_t rows, grain;
} rms_job;

enum { GROUP = 8 }; /* rows formed before their sums: the ordered sums run 8 at once */

/* Chunks [cb, ce) of grain rows each; the first chunk's buffer serves the call. */
static void rms_fn(void *arg, int64_t cb, int64_t ce) {
    const rms_job *j = arg;
    int64_t h = j->h, begin = cb * j->grain, end = ce * j->grain < j->rows ? ce * j->grain : j->rows;
    size_t xs = j->xdt == OG_FLOAT32 ? 4 : 2, ys = j->ydt == OG_FLOAT32 ? 4 : 2;
    float *rows = j->buf + cb * (GROUP + 1) * h, *tmp = rows + GROUP * h;
    const float *scale = j->scale;
    const bool lanes = cpu_rms_f32_lanes(h, j->skip != NULL);
    for (int64_t r0 = begin; r0 < end; r0 += GROUP) {
        int g = end - r0 < GROUP ? (int)(end - r0) : GROUP;
        for (int k = 0; k < g; k++) {
            int64_t r = r0 + k;
            float *row = rows + k * h;
            cpu_load_f32(j->xdt, (const char *)j->x + (size_t)(r * h) * xs, h, row);
            if (j->skip) {
                cpu_load_f32(j->xdt, (const char *)j->skip + (size_t)((r % j->skip_rows) * h) * xs, h, tmp);
                cpu_row_add(row, row, tmp, NULL, h);
                if (j->bias) {
                    cpu_load_f32(j->xdt, j->bias, h, tmp);
                    cpu_row_add(row, row, tmp, NULL, h);
                }
                if (j->sum) cpu_store_f32(j->xdt, (char *)j->sum + (size_t)(r * h) * xs, h, row);
            }
        }
        float sums[GROUP];
        if (j->ort_f32 && lanes) cpu_rms_f32_sumsq_lanes_rows(rows, h, g, h, sums);
        else if (j->ort_f32) cpu_rms_f32_sumsq_ordered_rows(rows, h, g, h, sums);
        for (int k = 0; k < g; k++) {
            int64_t r = r0 + k;
            float *row = rows + k * h, inv;
            if (j->ort_f32) {
                inv = cpu_rms_f32_apply(row, h, scale, j->eps, lanes, sums[k], row);
            } else {
                double sq = cpu_row_sum_f64(row, h, 0, true);
                inv = (float)(1.0 / sqrt((h ? sq / (double)h : 0) + j->eps));
                for (int64_t i0 = 0; i0 < h; i0 += j->sc) /* the scale repeats every sc */
                    cpu_row_scale(row + i0, row + i0, inv, scale, j->sc);
            }
            cpu_store_f32(j->ydt, (char *)j->y + (size_t)(r * h) * ys, h, row);
            if (j->inv) j->inv[r] = inv;
        }
    }
}

/* Runs rows over the pool in chunks of about 16K elements, each with its own buffer. */
static og_status *rms_run(kernel_ctx *ctx, rms_job *j, int64_t rows) {
    if (rows == 0 || j->h == 0) {
        if (j->inv)
            for (int64_t r = 0; r < rows; r++) j->inv[r] = (float)(1.0 / sqrt(j->eps));
        return NULL;
    }
    j->rows = rows;
    j->grain = 1 + 16384 / (j->h + 1);
    int64_t chunks = (rows + j->grain - 1) / j->grain;
    OG_TRY(kernel_scratch(ctx, sizeof(float) * (size_t)((GROUP + 1) * j->h * chunks) + 1,
                          (void **)&j->buf));
    threadpool_parallel_for(ctx->pool, chunks, 1, rms_fn, j);
    return NULL;
}

og_status *cpu_simplified_layer_norm(kernel_ctx *ctx) {
    OG_TRY(kernel_require_inputs(ctx, 2));
    const tensor *x = ctx->inputs[0], *s = ctx->inputs[1];
    if (!cpu_is_f32able(x->dtype)) return kernel_unsupported_dtype(ctx, 0, x->dtype);
    if (!cpu_is_f32able(s->dtype)) return kernel_unsupported_dtype(ctx, 1, s->dtype);
    int64_t axis = graph_attr_int(ctx->node, "axis", -1);
    if (axis < 0) axis += x->rank;
    if (axis < 0 || axis >= x->rank || x->rank == 0)
        return kernel_errorf(ctx, OG_ERR_INVALID_ARGUMENT, "axis %lld is out of range for rank %d",
                             (long long)graph_attr_int(ctx->node, "axis", -1), x->rank);
    int64_t rows = shape_count(x->dims, (int)axis), h = shape_count(x->dims + axis, x->rank - (int)axis);
    int64_t sc = tensor_count(s);
    if (sc == 0 ? h != 0 : h % sc != 0) {
        char a[96], b[96];
        return kernel_errorf(ctx, OG_ERR_INVALID_ARGUMENT, "input 1 (scale) has shape %s, which "
                             "does not broadcast to the normalized shape %s", shape_str(s->dims, s->rank, a, sizeof a),
                             shape_str(x->dims + axis, x->rank - (int)axis, b, sizeof b));
    }
    rms_job j = {.xdt = x->dtype, .ydt = s->dtype, .x = x->data, .h = h, .sc = sc ? sc : 1,
                 .eps = graph_attr_float(ctx->node, "epsilon", 1e-5f)};
    tensor *y, *inv = NULL;
    OG_TRY(kernel_output(ctx, 0, s->dtype, x->rank, x->dims, &y));
    if (cpu_wants_output(ctx, 1)) {
        int64_t d[OG_MAX_RANK];
        for (int i = 0; i < x->rank; i++) d[i] = i < axis ? x->dims[i] : 1;
        OG_TRY(kernel_output(ctx, 1, OG_FLOAT32, x->rank, d, &inv));
        j.inv = inv->data;
    }
    j.y = y->data;
    j.ort_f32 = x->dtype == OG_FLOAT32 && s->dtype == OG_FLOAT32 && sc == h;
    OG_TRY(cpu_in_f32(ctx, 1, &j.scale));
    return rms_run(ctx, &j, rows);
}

og_status *cpu_contrib_skip_simplified_layer_norm(kernel_ctx *ctx) {
    OG_TRY(kernel_require_inputs(ctx, 3));
    const tensor *x = ctx->inputs[0], *skip = ctx->inputs[1], *g = ctx->inputs[2];
    const tensor *bias = kernel_input(ctx, 3);
    og_dtype dt = x->dtype;
    if (!cpu_is_f32able(dt)) return kernel_unsupported_dtype(ctx, 0, dt);
    char a[96], b[96];
    if (x->rank != 2 && x->rank != 3)
        return kernel_errorf(ctx, OG_ERR_INVALID_ARGUMENT, "input 0 has shape %s, expected rank "
                             "3 (batch, sequence, hidden) or 2", shape_str(x->dims, x->rank, a, sizeof a));
    int64_t h = x->dims[x->rank - 1], rows = shape_count(x->dims, x->rank - 1), skip_rows;
    if (skip->dtype != dt || (g->dtype != dt) || (bias && bias->dtype != dt))
        return kernel_errorf(ctx, OG_ERR_INVALID_ARGUMENT, "skip, gamma and bias must have the "
                             "input's dtype %s", og_dtype_name(dt));
    if (skip->rank == x->rank && memcmp(skip->dims, x->dims, sizeof(int64_t) * (size_t)x->rank) == 0)
        skip_rows = rows;
    else if (x->rank == 3 &&
             ((skip->rank == 3 && skip->dims[0] == 1 && skip->dims[1] == x->dims[1] && skip->dims[2] == h) ||
              (skip->rank == 2 && skip->dims[0] == x->dims[1] && skip->dims[1] == h)))
        skip_rows = x->dims[1];
    else
        return kernel_errorf(ctx, OG_ERR_INVALID_ARGUMENT, "input 1 (skip) has shape %s, expected "
                             "the input's shape %s, or (1, S, H) or (S, H)",
                             shape_str(skip->dims, skip->rank, a, sizeof a),
                             shape_str(x->dims, x->rank, b, sizeof b));
    if (g->rank != 1 || g->dims[0] != h || (bias && (bias->rank != 1 || bias->dims[0] != h)))
        return kernel_errorf(ctx, OG_ERR_INVALID_ARGUMENT, "gamma (input 2) and bias (input 3) "
                             "must have shape (%lld)", (long long)h);
    rms_job j = {.xdt = dt, .ydt = dt, .x = x->data, .skip = skip->data,
                 .bias = bias ? bias->data : NULL, .h = h, .sc = h ? h : 1,
                 .skip_rows = skip_rows ? skip_rows : 1,
                 .eps = graph_attr_float(ctx->node, "epsilon", 1e-12f)};
    tensor *y, *mean = NULL, *inv = NULL, *sum = NULL;
    int64_t sd[3];
    memcpy(sd, x->dims, sizeof(int64_t) * (size_t)x->rank);
    sd[x->rank - 1] = 1;
    OG_TRY(kernel_output(ctx, 0, dt, x->rank, x->dims, &y));
    if (cpu_wants_output(ctx, 1)) OG_TRY(kernel_output(ctx, 1, OG_FLOAT32, x->rank, sd, &mean));
    if (cpu_wants_output(ctx, 2)) OG_TRY(kernel_output(ctx, 2, OG_FLOAT32, x->rank, sd, &inv));
    if (cpu_wants_output(ctx, 3)) OG_TRY(kernel_output(ctx, 3, dt, x->rank, x->dims, &sum));
    if (mean) memset(mean->data, 0, mean->nbytes); /* RMS norm has no mean; the reference writes 0 */
    j.y = y->data;
    j.inv = inv ? inv->data : NULL;
    j.sum = sum ? sum->data : NULL;
    j.ort_f32 = dt == OG_FLOAT32;
    OG_TRY(cpu_in_f32(ctx, 2, &j.scale));
    return rms_run(ctx, &j, rows);
}
