/* com.microsoft LinearAttentionGate: the per-head gates of gated DeltaNet in one pass,
 *     decay = decay_scale * softplus(a + dt_bias)     (decay_scale = -exp(A_log))
 *     beta  = sigmoid(b)                              (when output 1 is requested)
 * a and b are (..., H) of the activation type; dt_bias and decay_scale are float32 (H).
 * Everything is computed in float32 as onnxruntime computes it (its softplus,
 * base/ort_math.h; MLAS's logistic, vsigmoid_f32) and rounded once to the output type. */
#include "backends/native/kernels/recurrent/recurrent.h"

#include "base/ort_math.h"
#include "base/vmath.h"

typedef struct gate_job {
    og_dtype dt;
    const void *a, *b;
    void *decay, *beta;
    const float *dt_bias, *scale;
    int64_t H;
} gate_job;

static void gate_rows(void *arg, int64_t begin, int64_t end) {
    const gate_job *j = arg;
    size_t es = j->dt == OG_FLOAT32 ? 4 : 2;
    float buf[256];
    for (int64_t r = begin; r < end; r++)
        for (int64_t h0 = 0; h0 < j->H; h0 += 256) {
            int64_t n = j->H - h0 < 256 ? j->H - h0 : 256;
            size_t off = (size_t)(r * j->H + h0) * es;
            cpu_load_f32(j->dt, (const char *)j->a + off, n, buf);
            for (int64_t i = 0; i < n; i++)
                buf[i] = j->scale[h0 + i] * ort_softplus(buf[i] + j->dt_bias[h0 + i]);
            cpu_store_f32(j->dt, (char *)j->decay + off, n, buf);
            if (!j->beta) continue;
            cpu_load_f32(j->dt, (const char *)j->b + off, n, buf);
            vsigmoid_f32(buf, buf, n);
            cpu_store_f32(j->dt, (char *)j->beta + off, n, buf);
        }
}

og_status *cpu_contrib_linear_attention_gate(kernel_ctx *ctx) {
    OG_TRY(kernel_require_inputs(ctx, 3));
    const tensor *a = ctx->inputs[0], *bias = ctx->inputs[1], *scale = ctx->inputs[2];
    const tensor *b = kernel_input(ctx, 3);
    og_dtype dt = a->dtype;
    char s1[96], s2[96];
    if (!cpu_is_f32able(dt)) return kernel_unsupported_dtype(ctx, 0, dt);
    if (a->rank < 1)
        return kernel_error(ctx, OG_ERR_INVALID_ARGUMENT, "input 0 (a) must be (..., heads)");
    int64_t H = a->dims[a->rank - 1];
    for (int i = 1; i <= 2; i++) {
        const tensor *t = ctx->inputs[i];
        if (t->dtype != OG_FLOAT32 || t->rank != 1 || t->dims[0] != H)
            return kernel_errorf(ctx, OG_ERR_INVALID_ARGUMENT, "input %d (%s) is %s %s, expected "
                                 "float32 (%lld)", i, i == 1 ? "dt_bias" : "decay_scale",
                                 og_dtype_name(t->dtype), shape_str(t->dims, t->rank, s1, sizeof s1),
                                 (long long)H);
    }
    bool want_beta = cpu_wants_output(ctx, 1);
    if (want_beta && !b)
        return kernel_error(ctx, OG_ERR_INVALID_MODEL, "output 1 (beta) needs input 3 (b)");
    if (want_beta && (b->dtype != dt || b->rank != a->rank ||
                      memcmp(b->dims, a->dims, sizeof(int64_t) * (size_t)a->rank) != 0))
        return kernel_errorf(ctx, OG_ERR_INVALID_ARGUMENT, "input 3 (b) is %s %s, expected the "
                             "shape and dtype of input 0 (%s %s)", og_dtype_name(b->dtype),
                             shape_str(b->dims, b->rank, s1, sizeof s1), og_dtype_name(dt),
                             shape_str(a->dims, a->rank, s2, sizeof s2));
    tensor *decay, *beta = NULL;
    OG_TRY(kernel_output(ctx, 0, dt, a->rank, a->dims, &decay));
    if (want_beta) OG_TRY(kernel_output(ctx, 1, dt, a->rank, a->dims, &beta));
    int64_t rows = H ? tensor_count(a) / H : 0;
    if (rows == 0) return NULL;
    gate_job j = {.dt = dt, .a = a->data, .b = want_beta ? b->data : NULL, .decay = decay->data,
                  .beta = beta ? beta->data : NULL, .dt_bias = bias->data, .scale = scale->data,
                  .H = H};
    threadpool_parallel_for(ctx->pool, rows, 1 + 4096 / (H + 1), gate_rows, &j);
    return NULL;
}
