/* Float unary ops (float16/bfloat16 widened to float32 in blocks and rounded once) and
 * the integer forms of Abs, Neg and Sign. */
#include "backends/native/kernels/elementwise/elementwise.h"

#include "base/vmath.h"

#include <tgmath.h>

enum { BLOCK = 256 };

static void run_f32(char *const *p, const int64_t *s, int64_t n, const void *param) {
    (void)s;
    const unary_op *op = param;
    op->f32((const float *)p[1], (float *)p[0], n, op);
}

static void run_f64(char *const *p, const int64_t *s, int64_t n, const void *param) {
    (void)s;
    const unary_op *op = param;
    op->f64((const double *)p[1], (double *)p[0], n, op);
}

#define HALF_RUNNER(S, LD, ST)                                                           \
    static void run_##S(char *const *p, const int64_t *s, int64_t n, const void *param) { \
        (void)s;                                                                         \
        const unary_op *op = param;                                                      \
        const uint16_t *x = (const uint16_t *)p[1];                                      \
        uint16_t *y = (uint16_t *)p[0];                                                  \
        float buf[BLOCK];                                                                \
        for (int64_t i = 0; i < n; i += BLOCK) {                                         \
            int64_t m = n - i < BLOCK ? n - i : BLOCK;                                   \
            for (int64_t k = 0; k < m; k++) buf[k] = LD(x[i + k]);                       \
            op->f32(buf, buf, m, op);                                                    \
            for (int64_t k = 0; k < m; k++) y[i + k] = ST(buf[k]);                       \
        }                                                                                \
    }
HALF_RUNNER(f16, mk_h2f, mk_f2h)
HALF_RUNNER(bf16, bf16_to_f32, f32_to_bf16)

og_status *cpu_unary_loop(kernel_ctx *ctx, og_dtype out_dtype, ew_loop_fn fn,
                          const void *param, int64_t grain) {
    OG_TRY(kernel_require_inputs(ctx, 1));
    const tensor *x = ctx->inputs[0];
    tensor *y;
    OG_TRY(kernel_output(ctx, 0, out_dtype, x->rank, x->dims, &y));
    return cpu_ew_run(ctx, y, 1, &x, fn, param, grain);
}

og_status *cpu_unary_float(kernel_ctx *ctx, const unary_op *op) {
    OG_TRY(kernel_require_inputs(ctx, 1));
    og_dtype dt = ctx->inputs[0]->dtype;
    ew_loop_fn fn = dt == OG_FLOAT32   ? run_f32
                    : dt == OG_FLOAT16 ? run_f16
                    : dt == OG_BFLOAT16 ? run_bf16
                    : dt == OG_FLOAT64 ? run_f64
                                       : NULL;
    if (!fn) return kernel_unsupported_dtype(ctx, 0, dt);
    return cpu_unary_loop(ctx, dt, fn, op, op->grain);
}

/* Integer Abs / Neg / Sign wrap instead of overflowing (Abs(INT_MIN) == INT_MIN). */
#define NEG(v) (0 - (uint64_t)(v))
#define SINT_UNARY(T, DT, S, C, LD, ST)                                                  \
    MK_UN_LOOP(abs_##S, T, C, LD, T, (T), v < 0 ? NEG(v) : (uint64_t)v)                 \
    MK_UN_LOOP(neg_##S, T, C, LD, T, (T), NEG(v))                                        \
    MK_UN_LOOP(sign_##S, T, C, LD, T, (T), v > 0 ? 1 : v < 0 ? -1 : 0)
#define UINT_UNARY(T, DT, S, C, LD, ST)                                                  \
    MK_UN_LOOP(abs_##S, T, C, LD, T, (T), v)                                             \
    MK_UN_LOOP(neg_##S, T, C, LD, T, (T), NEG(v))                                        \
    MK_UN_LOOP(sign_##S, T, C, LD, T, (T), v != 0)
MK_SINT_TYPES(SINT_UNARY)
MK_UINT_TYPES(UINT_UNARY)

enum { I_ABS, I_NEG, I_SIGN, I_COUNT };
#define INT_ENTRIES(T, DT, S, C, LD, ST)                                                 \
    [I_ABS][DT] = abs_##S, [I_NEG][DT] = neg_##S, [I_SIGN][DT] = sign_##S,
static const ew_loop_fn int_loops[I_COUNT][OG_DTYPE_COUNT] = {
    MK_SINT_TYPES(INT_ENTRIES) MK_UINT_TYPES(INT_ENTRIES)};

static og_status *float_or_int(kernel_ctx *ctx, const unary_op *op, int iop) {
    OG_TRY(kernel_require_inputs(ctx, 1));
    og_dtype dt = ctx->inputs[0]->dtype;
    if (!mk_is_float(dt) && (int)dt >= 0 && dt < OG_DTYPE_COUNT && int_loops[iop][dt])
        return cpu_unary_loop(ctx, dt, int_loops[iop][dt], NULL, EW_GRAIN);
    return cpu_unary_float(ctx, op);
}

MK_UNARY_FLOAT(u_sqrt, sqrt(v))
MK_UNARY_FLOAT(u_reciprocal, (R)1 / v)
MK_UNARY_FLOAT(u_neg, -v)
MK_UNARY_FLOAT(u_abs, fabs(v))
MK_UNARY_FLOAT(u_exp, exp(v))
MK_UNARY_FLOAT(u_log, log(v))
MK_UNARY_FLOAT(u_erf, erf(v))
MK_UNARY_FLOAT(u_tanh, tanh(v))
MK_UNARY_FLOAT(u_sin, sin(v))
MK_UNARY_FLOAT(u_cos, cos(v))
MK_UNARY_FLOAT(u_floor, floor(v))
MK_UNARY_FLOAT(u_ceil, ceil(v))
MK_UNARY_FLOAT(u_round, nearbyint(v)) /* the default rounding mode: half to even */
MK_UNARY_FLOAT(u_sign, v > 0 ? (R)1 : v < 0 ? (R)-1 : v)
MK_UNARY_FLOAT(u_tan, tan(v))
MK_UNARY_FLOAT(u_acos, acos(v))
MK_UNARY_FLOAT(u_asin, asin(v))
MK_UNARY_FLOAT(u_atan, atan(v))
MK_UNARY_FLOAT(u_cosh, cosh(v))
MK_UNARY_FLOAT(u_sinh, sinh(v))
MK_UNARY_FLOAT(u_acosh, acosh(v))
MK_UNARY_FLOAT(u_asinh, asinh(v))
MK_UNARY_FLOAT(u_atanh, atanh(v))

#define FLOAT_KERNEL(name, grain)                                                        \
    og_status *cpu_##name(kernel_ctx *ctx) {                                             \
        unary_op op = MK_UNARY_OP(u_##name, grain);                                      \
        return cpu_unary_float(ctx, &op);                                                \
    }
FLOAT_KERNEL(sqrt, EW_GRAIN)
FLOAT_KERNEL(reciprocal, EW_GRAIN)
FLOAT_KERNEL(log, EW_GRAIN_HEAVY)

/* float32 (and the widened float16/bfloat16 blocks) through the vectorized vmath.h */
#define VEC_KERNEL(name)                                                                 \
    static void vec_##name(const float *x, float *y, int64_t n, const unary_op *op) {    \
        (void)op;                                                                        \
        v##name##_f32(x, y, n);                                                          \
    }                                                                                    \
    og_status *cpu_##name(kernel_ctx *ctx) {                                             \
        unary_op op = MK_UNARY_OP(u_##name, EW_GRAIN_HEAVY);                             \
        op.f32 = vec_##name;                                                             \
        return cpu_unary_float(ctx, &op);                                                \
    }
VEC_KERNEL(exp)
VEC_KERNEL(erf)
VEC_KERNEL(tanh)
FLOAT_KERNEL(sin, EW_GRAIN_HEAVY)
FLOAT_KERNEL(cos, EW_GRAIN_HEAVY)
FLOAT_KERNEL(tan, EW_GRAIN_HEAVY)
FLOAT_KERNEL(acos, EW_GRAIN_HEAVY)
FLOAT_KERNEL(asin, EW_GRAIN_HEAVY)
FLOAT_KERNEL(atan, EW_GRAIN_HEAVY)
FLOAT_KERNEL(cosh, EW_GRAIN_HEAVY)
FLOAT_KERNEL(sinh, EW_GRAIN_HEAVY)
FLOAT_KERNEL(acosh, EW_GRAIN_HEAVY)
FLOAT_KERNEL(asinh, EW_GRAIN_HEAVY)
FLOAT_KERNEL(atanh, EW_GRAIN_HEAVY)
FLOAT_KERNEL(floor, EW_GRAIN)
FLOAT_KERNEL(ceil, EW_GRAIN)
FLOAT_KERNEL(round, EW_GRAIN)

#define MIXED_KERNEL(name, iop)                                                          \
    og_status *cpu_##name(kernel_ctx *ctx) {                                             \
        unary_op op = MK_UNARY_OP(u_##name, EW_GRAIN);                                   \
        return float_or_int(ctx, &op, iop);                                              \
    }
MIXED_KERNEL(abs, I_ABS)
MIXED_KERNEL(neg, I_NEG)
MIXED_KERNEL(sign, I_SIGN)
