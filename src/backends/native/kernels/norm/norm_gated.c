/* com.microsoft GatedRMSNorm (the output norm of gated DeltaNet and Mamba2 layers):
 *     y = x / sqrt(mean(x^2) + epsilon) * scale * act(gate)
 * over each group of C = len(scale) trailing elements (x is (..., H * C), so a per-head
 * norm needs no reshape), act silu / swish (z * sigmoid(z)) or sigmoid, everything in
 * float32 as onnxruntime computes it (the squares summed in order, each rounded;
 * 1 / sqrtf(sum / C + epsilon); (x * inv) * scale times z * logistic(z) or logistic(z),
 * MLAS's logistic: vsigmoid_f32; this file is compiled without contraction), rounded
 * once to the output type. Groups are split over the pool. */
#include "backends/native/kernels/norm/norm.h"

#include "base/vmath.h"

#include <math.h>
#include <string.h>

typedef struct grms_job {
    og_dtype dt;
    const void *x, *gate;
    void *y;
    const float *scale;
    int64_t C;
    float eps;
    bool silu;
    float *buf; /* per chunk: 3 * C floats */
    int64_t groups, grain;
} grms_job;

static void grms_fn(void *arg, int64_t cb, int64_t ce) {
    const grms_job *j = arg;
    int64_t C = j->C, begin = cb * j->grain, end = ce * j->grain < j->groups ? ce * j->grain : j->groups;
    size_t es = j->dt == OG_FLOAT32 ? 4 : 2;
    float *row = j->buf + cb * 3 * C, *g = row + C, *s = g + C;
    for (int64_t r = begin; r < end; r++) {
        size_t off = (size_t)(r * C) * es;
        cpu_load_f32(j->dt, (const char *)j->x + off, C, row);
        cpu_load_f32(j->dt, (const char *)j->gate + off, C, g);
        float sq = 0.0f;
        for (int64_t i = 0; i < C; i++) sq += row[i] * row[i];
        float inv = 1.0f / sqrtf(sq / (float)C + j->eps);
        vsigmoid_f32(g, s, C);
        for (int64_t i = 0; i < C; i++) {
            float act = j->silu ? g[i] * s[i] : s[i];
            row[i] = row[i] * inv * j->scale[i] * act;
        }
        cpu_store_f32(j->dt, (char *)j->y + off, C, row);
    }
}

og_status *cpu_contrib_gated_rms_norm(kernel_ctx *ctx) {
    OG_TRY(kernel_require_inputs(ctx, 3));
    const tensor *x = ctx->inputs[0], *s = ctx->inputs[1], *gate = ctx->inputs[2];
    og_dtype dt = x->dtype;
    char a[96], b[96];
    if (!cpu_is_f32able(dt)) return kernel_unsupported_dtype(ctx, 0, dt);
    const char *act = graph_attr_string(ctx->node, "activation", "silu");
    bool silu = strcmp(act, "silu") == 0 || strcmp(act, "swish") == 0;
    if (!silu && strcmp(act, "sigmoid") != 0)
        return kernel_errorf(ctx, OG_ERR_INVALID_MODEL, "activation '%s' is not one of silu, "
                             "swish, sigmoid", act);
    int64_t C = s->rank == 1 ? s->dims[0] : 0, last = x->rank ? x->dims[x->rank - 1] : 0;
    if (s->dtype != dt || C <= 0 || x->rank == 0 || last % C)
        return kernel_errorf(ctx, OG_ERR_INVALID_ARGUMENT, "input 1 (scale) is %s %s; expected "
                             "%s (C) with C dividing the last dimension of input 0 %s",
                             og_dtype_name(s->dtype), shape_str(s->dims, s->rank, a, sizeof a),
                             og_dtype_name(dt), shape_str(x->dims, x->rank, b, sizeof b));
    if (gate->dtype != dt)
        return kernel_errorf(ctx, OG_ERR_INVALID_ARGUMENT, "input 2 (gate) is %s, expected %s",
                             og_dtype_name(gate->dtype), og_dtype_name(dt));
    OG_TRY(cpu_want_shape(ctx, 2, "gate", x->rank, x->dims));
    tensor *y;
    OG_TRY(kernel_output(ctx, 0, dt, x->rank, x->dims, &y));
    grms_job j = {.dt = dt, .x = x->data, .gate = gate->data, .y = y->data, .C = C,
                  .eps = graph_attr_float(ctx->node, "epsilon", 1e-5f), .silu = silu,
                  .groups = tensor_count(x) / C};
    if (j.groups == 0) return NULL;
    OG_TRY(cpu_in_f32(ctx, 1, &j.scale));
    j.grain = 1 + 16384 / (C + 1);
    int64_t chunks = (j.groups + j.grain - 1) / j.grain;
    OG_TRY(kernel_scratch(ctx, sizeof(float) * (size_t)(3 * C * chunks) + 1, (void **)&j.buf));
    threadpool_parallel_for(ctx->pool, chunks, 1, grms_fn, &j);
    return NULL;
}
