/* Shared helpers of the contrib kernels (see contrib.h). */
#include "kernels/cpu/contrib.h"

#include "base/half.h"

#include <math.h>
#include <string.h>

bool ct_is_f32able(og_dtype dt) {
    return dt == OG_FLOAT32 || dt == OG_FLOAT16 || dt == OG_BFLOAT16;
}

og_status *ct_in_f32(kernel_ctx *ctx, int index, const float **out) {
    const tensor *t = kernel_input(ctx, index);
    if (!t) return kernel_errorf(ctx, OG_ERR_INVALID_MODEL, "input %d is missing", index);
    if (t->dtype == OG_FLOAT32) {
        *out = t->data;
        return NULL;
    }
    if (t->dtype != OG_FLOAT16 && t->dtype != OG_BFLOAT16)
        return kernel_unsupported_dtype(ctx, index, t->dtype);
    int64_t n = tensor_count(t);
    float *buf;
    OG_TRY(kernel_scratch(ctx, (size_t)n * sizeof(float) + 1, (void **)&buf));
    half_array_to_f32(t->data, buf, n, t->dtype == OG_BFLOAT16);
    *out = buf;
    return NULL;
}

og_status *ct_out_f32(kernel_ctx *ctx, tensor *t, float **out) {
    if (t->dtype == OG_FLOAT32) {
        *out = t->data;
        return NULL;
    }
    return kernel_scratch(ctx, (size_t)tensor_count(t) * sizeof(float) + 1, (void **)out);
}

void ct_out_done(tensor *t, const float *buf) {
    if ((const void *)buf == t->data) return;
    int64_t n = tensor_count(t);
    uint16_t *dst = t->data;
    if (t->dtype == OG_FLOAT16)
        for (int64_t i = 0; i < n; i++) dst[i] = f32_to_f16(buf[i]);
    else if (t->dtype == OG_BFLOAT16)
        for (int64_t i = 0; i < n; i++) dst[i] = f32_to_bf16(buf[i]);
}

bool ct_wants_output(const kernel_ctx *ctx, int i) {
    return i < ctx->n_outputs && i < ctx->node->n_outputs && ctx->node->outputs[i] >= 0;
}

void ct_layer_norm_row(const float *x, int64_t n, const float *gamma, const float *beta,
                       float eps, float *y, float *mean, float *inv) {
    double sum = 0, sq = 0;
    for (int64_t i = 0; i < n; i++) sum += x[i];
    double mu = n ? sum / (double)n : 0;
    for (int64_t i = 0; i < n; i++) sq += (x[i] - mu) * (x[i] - mu);
    float m = (float)mu, is = (float)(1.0 / sqrt((n ? sq / (double)n : 0) + eps));
    for (int64_t i = 0; i < n; i++)
        y[i] = (x[i] - m) * is * gamma[i] + (beta ? beta[i] : 0.0f);
    if (mean) *mean = m;
    if (inv) *inv = is;
}
