/* Activations: Sigmoid Relu LeakyRelu Softplus Gelu HardSigmoid HardSwish Clip, the
 * exponential units Elu Selu Celu, Softsign ThresholdedRelu Mish, and Shrink. */
#include "backends/native/kernels/cast/cast.h"
#include "backends/native/kernels/elementwise/elementwise.h"
#include "backends/native/kernels/kernel_util.h"

#include "base/vmath.h"

#include <string.h>
#include <tgmath.h>

#define CLAMP01(x) ((x) < 0 ? (R)0 : (x) > 1 ? (R)1 : (x))

/* Both branches only ever exponentiate a non-positive number: no overflow. */
MK_UNARY_FLOAT(a_sigmoid, v >= 0 ? (R)1 / ((R)1 + exp(-v)) : exp(v) / ((R)1 + exp(v)))
MK_UNARY_FLOAT(a_softplus, v > 0 ? v + log1p(exp(-v)) : log1p(exp(v)))
MK_UNARY_FLOAT(a_relu, v < 0 ? (R)0 : v)
MK_UNARY_FLOAT(a_leakyrelu, v < 0 ? (R)op->alpha * v : v)
MK_UNARY_FLOAT(a_hardsigmoid, CLAMP01((R)op->alpha * v + (R)op->beta))
MK_UNARY_FLOAT(a_hardswish, v * CLAMP01(v * (R)(1.0 / 6.0) + (R)0.5))
MK_UNARY_FLOAT(a_gelu, (R)0.5 * v * ((R)1 + erf(v * (R)0.70710678118654752440)))
MK_UNARY_FLOAT(a_gelu_tanh, (R)0.5 * v *
                                ((R)1 + tanh((R)0.79788456080286535588 *
                                             (v + (R)0.044715 * v * v * v))))

/* expm1 keeps the small negative inputs' digits that exp(x) - 1 would cancel. */
MK_UNARY_FLOAT(a_elu, v < 0 ? (R)op->alpha * expm1(v) : v)
/* beta is gamma */
MK_UNARY_FLOAT(a_selu, v <= 0 ? (R)op->beta * ((R)op->alpha * expm1(v)) : (R)op->beta * v)
/* max(0, x) + min(0, alpha * expm1(x / alpha)) with one term zero on each side, so
 * one branch: a NaN stays NaN (fmin(0, NaN) is 0) and -0 stays -0, as the reference. */
MK_UNARY_FLOAT(a_celu, v > 0 ? v : (R)op->alpha * expm1(v / (R)op->alpha))
MK_UNARY_FLOAT(a_softsign, v / ((R)1 + fabs(v)))
MK_UNARY_FLOAT(a_thresholded_relu, v > (R)op->alpha ? v : (R)0)
/* x * tanh(softplus(x)), softplus without overflow as above */
MK_UNARY_FLOAT(a_mish, v * tanh(v > 0 ? v + log1p(exp(-v)) : log1p(exp(v))))
/* alpha is lambd, beta the bias */
MK_UNARY_FLOAT(a_shrink, v < -(R)op->alpha ? v + (R)op->beta
                                           : v > (R)op->alpha ? v - (R)op->beta : (R)0)

/* float32 paths (and the widened float16/bfloat16 blocks) of vmath.h */
static void vec_sigmoid(const float *x, float *y, int64_t n, const unary_op *op) {
    (void)op;
    vsigmoid_f32(x, y, n);
}
static void vec_gelu(const float *x, float *y, int64_t n, const unary_op *op) {
    (void)op;
    vgelu_erf_f32(x, y, n);
}
static void vec_gelu_tanh(const float *x, float *y, int64_t n, const unary_op *op) {
    (void)op;
    vgelu_tanh_f32(x, y, n);
}

void cpu_sigmoid_f64(const double *x, double *y, int64_t n) { a_sigmoid_f64(x, y, n, NULL); }

og_status *cpu_sigmoid(kernel_ctx *ctx) {
    unary_op op = MK_UNARY_OP(a_sigmoid, EW_GRAIN_HEAVY);
    op.f32 = vec_sigmoid;
    return cpu_unary_float(ctx, &op);
}

og_status *cpu_softplus(kernel_ctx *ctx) {
    unary_op op = MK_UNARY_OP(a_softplus, EW_GRAIN_HEAVY);
    return cpu_unary_float(ctx, &op);
}

#define RELU_INT(T, DT, S, C, LD, ST) MK_UN_LOOP(relu_##S, T, C, LD, T, (T), v < 0 ? 0 : v)
MK_SINT_TYPES(RELU_INT)
#define RELU_ENTRY(T, DT, S, C, LD, ST) [DT] = relu_##S,
static const ew_loop_fn relu_int[OG_DTYPE_COUNT] = {MK_SINT_TYPES(RELU_ENTRY)};

og_status *cpu_relu(kernel_ctx *ctx) {
    OG_TRY(kernel_require_inputs(ctx, 1));
    og_dtype dt = ctx->inputs[0]->dtype;
    if ((int)dt >= 0 && dt < OG_DTYPE_COUNT && relu_int[dt])
        return cpu_unary_loop(ctx, dt, relu_int[dt], NULL, EW_GRAIN);
    unary_op op = MK_UNARY_OP(a_relu, EW_GRAIN);
    return cpu_unary_float(ctx, &op);
}

/* op with its alpha and beta read from the named float attributes (NULL: none). */
static og_status *with_attrs(kernel_ctx *ctx, unary_op op, const char *a, float da,
                             const char *b, float db) {
    if (a) op.alpha = graph_attr_float(ctx->node, a, da);
    if (b) op.beta = graph_attr_float(ctx->node, b, db);
    return cpu_unary_float(ctx, &op);
}

og_status *cpu_leakyrelu(kernel_ctx *ctx) {
    return with_attrs(ctx, MK_UNARY_OP(a_leakyrelu, EW_GRAIN), "alpha", 0.01f, NULL, 0);
}
og_status *cpu_hardsigmoid(kernel_ctx *ctx) {
    return with_attrs(ctx, MK_UNARY_OP(a_hardsigmoid, EW_GRAIN), "alpha", 0.2f, "beta", 0.5f);
}
og_status *cpu_hardswish(kernel_ctx *ctx) {
    return with_attrs(ctx, MK_UNARY_OP(a_hardswish, EW_GRAIN), NULL, 0, NULL, 0);
}

og_status *cpu_gelu(kernel_ctx *ctx) {
    const char *approx = graph_attr_string(ctx->node, "approximate", "none");
    unary_op op = MK_UNARY_OP(a_gelu, EW_GRAIN_HEAVY);
    op.f32 = vec_gelu;
    if (strcmp(approx, "tanh") == 0) {
        op = MK_UNARY_OP(a_gelu_tanh, EW_GRAIN_HEAVY);
        op.f32 = vec_gelu_tanh;
    } else if (strcmp(approx, "none") != 0)
        return kernel_errorf(ctx, OG_ERR_INVALID_MODEL,
                             "approximate is '%s', expected 'none' or 'tanh'", approx);
    return cpu_unary_float(ctx, &op);
}

/* Clip = Min(Max(x, lo), hi), as np.clip, so hi wins where lo > hi. The bounds are
 * inputs from opset 11 on, float attributes before. */
og_status *cpu_clip(kernel_ctx *ctx) {
    OG_TRY(kernel_require_inputs(ctx, 1));
    const tensor *x = ctx->inputs[0];
    og_dtype dt = x->dtype;
    ew_loop_fn fmax_ = cpu_binary_loop(BIN_MAX, dt), fmin_ = cpu_binary_loop(BIN_MIN, dt);
    if (!fmax_) return kernel_unsupported_dtype(ctx, 0, dt);
    const tensor *bound[2] = {kernel_input(ctx, 1), kernel_input(ctx, 2)};
    tensor attr_bound[2];
    uint64_t attr_val[2];
    const char *names[2] = {"min", "max"};
    for (int k = 0; k < 2; k++) {
        if (ctx->opset < 11) {
            bound[k] = NULL;
            const graph_attr *a = graph_attr_find(ctx->node, names[k]);
            if (!a) continue;
            attr_bound[k] = (tensor){.dtype = dt, .rank = 0, .data = &attr_val[k],
                                     .nbytes = dtype_size(dt)};
            cpu_math_store_f64(dt, &attr_val[k], 0, a->f);
            bound[k] = &attr_bound[k];
        } else if (bound[k] && (bound[k]->dtype != dt || tensor_count(bound[k]) != 1)) {
            return kernel_errorf(ctx, OG_ERR_INVALID_ARGUMENT,
                                 "input %d (%s) must be a %s scalar", k + 1, names[k],
                                 og_dtype_name(dt));
        }
    }
    tensor *y;
    OG_TRY(kernel_output(ctx, 0, dt, x->rank, x->dims, &y));
    const tensor *pass1[2] = {x, bound[0] ? bound[0] : bound[1] ? bound[1] : x};
    OG_TRY(cpu_ew_run(ctx, y, 2, pass1, bound[0] || !bound[1] ? fmax_ : fmin_, NULL,
                      EW_GRAIN));
    if (!bound[0] || !bound[1]) return NULL;
    const tensor *pass2[2] = {y, bound[1]};
    return cpu_ew_run(ctx, y, 2, pass2, fmin_, NULL, EW_GRAIN);
}

og_status *cpu_elu(kernel_ctx *ctx) {
    return with_attrs(ctx, MK_UNARY_OP(a_elu, EW_GRAIN_HEAVY), "alpha", 1.0f, NULL, 0);
}
og_status *cpu_thresholded_relu(kernel_ctx *ctx) {
    return with_attrs(ctx, MK_UNARY_OP(a_thresholded_relu, EW_GRAIN), "alpha", 1.0f, NULL, 0);
}
/* The defaults are the float32 values the spec states. */
og_status *cpu_selu(kernel_ctx *ctx) {
    return with_attrs(ctx, MK_UNARY_OP(a_selu, EW_GRAIN_HEAVY), "alpha",
                      1.67326319217681884765625f, "gamma", 1.05070102214813232421875f);
}
og_status *cpu_softsign(kernel_ctx *ctx) {
    return with_attrs(ctx, MK_UNARY_OP(a_softsign, EW_GRAIN), NULL, 0, NULL, 0);
}
og_status *cpu_mish(kernel_ctx *ctx) {
    return with_attrs(ctx, MK_UNARY_OP(a_mish, EW_GRAIN_HEAVY), NULL, 0, NULL, 0);
}
og_status *cpu_celu(kernel_ctx *ctx) {
    if (graph_attr_float(ctx->node, "alpha", 1.0f) == 0)
        return kernel_error(ctx, OG_ERR_INVALID_MODEL, "alpha is 0");
    return with_attrs(ctx, MK_UNARY_OP(a_celu, EW_GRAIN_HEAVY), "alpha", 1.0f, NULL, 0);
}

/* Shrink on integers computes as the reference, np.where(...).astype(x.dtype): x and the
 * float attributes promote to double (numpy's weak Python floats), and the result goes
 * back as numpy's astype does (cpu_f2int_numpy): int64 2^63 - 2 minus 0.7 is 2^63 in
 * double, whose int64 is INT64_MIN, not INT64_MAX (saturation); int32 INT32_MIN plus
 * -3 is INT32_MIN, not INT32_MAX - 2 (wraparound). */
typedef struct shrink_param {
    og_dtype dt;
    double lambd, bias;
} shrink_param;

static void shrink_int(char *const *p, const int64_t *s, int64_t n, const void *param) {
    (void)s;
    const shrink_param *sp = param;
    for (int64_t i = 0; i < n; i++) {
        double v = cpu_math_load_f64(sp->dt, p[1], i);
        double r = v < -sp->lambd ? v + sp->bias : v > sp->lambd ? v - sp->bias : 0;
        cpu_store_int_bits(sp->dt, p[0], i, cpu_f2int_numpy(r, sp->dt));
    }
}

og_status *cpu_shrink(kernel_ctx *ctx) {
    OG_TRY(kernel_require_inputs(ctx, 1));
    og_dtype dt = ctx->inputs[0]->dtype;
    shrink_param sp = {dt, graph_attr_float(ctx->node, "lambd", 0.5f),
                       graph_attr_float(ctx->node, "bias", 0.0f)};
    if (!mk_is_float(dt)) {
        if (!cpu_binary_loop(BIN_ADD, dt)) return kernel_unsupported_dtype(ctx, 0, dt);
        return cpu_unary_loop(ctx, dt, shrink_int, &sp, EW_GRAIN);
    }
    unary_op op = MK_UNARY_OP(a_shrink, EW_GRAIN);
    op.alpha = sp.lambd, op.beta = sp.bias;
    return cpu_unary_float(ctx, &op);
}
