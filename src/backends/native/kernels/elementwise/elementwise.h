/* The elementwise family: the driver shared by unary, binary, ternary and variadic ops,
 * the loop macros that expand over the dtype lists (kernels/dtype_lists.h), and the
 * kernels elementwise_table.c registers. */
#ifndef OG_NATIVE_KERNELS_ELEMENTWISE_H
#define OG_NATIVE_KERNELS_ELEMENTWISE_H

#include "backends/native/kernels/dtype_lists.h"
#include "backends/native/kernels/kernel.h"

#include <stdint.h>

/* ---- the elementwise driver ------------------------------------------------------
 * A loop gets p[0] = output run, p[1..k] = input runs and s[1..k] the input strides in
 * elements, each 0 (a broadcast value) or 1 (contiguous); the output is contiguous. */
typedef void (*ew_loop_fn)(char *const *p, const int64_t *s, int64_t n, const void *param);

enum { EW_MAX_INPUTS = 3, EW_GRAIN = 32768, EW_GRAIN_HEAVY = 8192 };

/* The broadcast of n input shapes into dims/rank, errors naming the node. */
og_status *cpu_ew_shape(const kernel_ctx *ctx, int n, const tensor *const *in, int64_t *dims,
                        int *rank);
/* Runs fn over out (whose shape every input must broadcast to), with same-shape and
 * scalar operands as one flat run and other broadcasts as rows; splits across
 * ctx->pool in chunks of about `grain` elements. Byte-addressable dtypes only. */
og_status *cpu_ew_run(kernel_ctx *ctx, tensor *out, int n, const tensor *const *in,
                      ew_loop_fn fn, const void *param, int64_t grain);
/* Shape + output + run, for ops whose output has the broadcast shape. */
og_status *cpu_ew_op(kernel_ctx *ctx, int n, const tensor *const *in, og_dtype out_dtype,
                     ew_loop_fn fn, const void *param, int64_t grain);

/* A binary op on two inputs of one dtype, loops[dtype] (NULL: unsupported), output of
 * out_dtype (OG_UNDEFINED: the input dtype). */
og_status *cpu_ew_binary(kernel_ctx *ctx, const ew_loop_fn *loops, og_dtype out_dtype,
                         int64_t grain);

/* A binary loop: O[i] = STO(EXPR) with a, b the loaded operands. Operand runs are
 * contiguous or broadcast, so four plain loops the compiler can vectorize. */
#define MK_BIN_LOOP(NAME, T, C, LD, TO, STO, EXPR)                                       \
    static void NAME(char *const *p, const int64_t *s, int64_t n, const void *param) {   \
        (void)param;                                                                     \
        const T *A = (const T *)p[1], *B = (const T *)p[2];                              \
        TO *O = (TO *)p[0];                                                              \
        if (s[1] && s[2]) {                                                              \
            for (int64_t i = 0; i < n; i++) {                                            \
                C a = LD(A[i]), b = LD(B[i]);                                            \
                O[i] = STO(EXPR);                                                        \
            }                                                                            \
        } else if (s[2]) {                                                               \
            C a = LD(A[0]);                                                              \
            for (int64_t i = 0; i < n; i++) {                                            \
                C b = LD(B[i]);                                                          \
                O[i] = STO(EXPR);                                                        \
            }                                                                            \
        } else if (s[1]) {                                                               \
            C b = LD(B[0]);                                                              \
            for (int64_t i = 0; i < n; i++) {                                            \
                C a = LD(A[i]);                                                          \
                O[i] = STO(EXPR);                                                        \
            }                                                                            \
        } else {                                                                         \
            C a = LD(A[0]), b = LD(B[0]);                                                \
            TO v = STO(EXPR);                                                            \
            for (int64_t i = 0; i < n; i++) O[i] = v;                                    \
        }                                                                                \
    }

/* A unary loop: O[i] = STO(EXPR) with v the loaded input. */
#define MK_UN_LOOP(NAME, T, C, LD, TO, STO, EXPR)                                        \
    static void NAME(char *const *p, const int64_t *s, int64_t n, const void *param) {   \
        (void)param;                                                                     \
        (void)s;                                                                         \
        const T *X_ = (const T *)p[1];                                                   \
        TO *O = (TO *)p[0];                                                              \
        for (int64_t i = 0; i < n; i++) {                                                \
            C v = LD(X_[i]);                                                             \
            O[i] = STO(EXPR);                                                            \
        }                                                                                \
    }

/* ---- binary arithmetic (elementwise_binary.c) ------------------------------------ */
enum { BIN_ADD, BIN_SUB, BIN_MUL, BIN_DIV, BIN_POW, BIN_MOD, BIN_FMOD, BIN_MAX, BIN_MIN,
       BIN_COUNT };
/* The same-dtype loop of op for dtype, or NULL. */
ew_loop_fn cpu_binary_loop(int op, og_dtype dtype);

/* ---- float unary ops (elementwise_unary.c) --------------------------------------- */
typedef struct unary_op unary_op;
struct unary_op {
    void (*f32)(const float *x, float *y, int64_t n, const unary_op *op);
    void (*f64)(const double *x, double *y, int64_t n, const unary_op *op);
    double alpha, beta; /* op parameters (LeakyRelu alpha, HardSigmoid alpha/beta, ...) */
    int64_t grain;
};
/* Defines NAME##_f32 / NAME##_f64 computing y = EXPR of v (of type R, the compute type);
 * the body may use op->alpha / op->beta. <tgmath.h> picks float or double math. */
#define MK_UNARY_FLOAT(NAME, EXPR)                                                       \
    static void NAME##_f32(const float *x, float *y, int64_t n, const unary_op *op) {    \
        typedef float R;                                                                 \
        (void)op;                                                                        \
        for (int64_t i = 0; i < n; i++) {                                                \
            R v = x[i];                                                                  \
            y[i] = (R)(EXPR);                                                            \
        }                                                                                \
    }                                                                                    \
    static void NAME##_f64(const double *x, double *y, int64_t n, const unary_op *op) {  \
        typedef double R;                                                                \
        (void)op;                                                                        \
        for (int64_t i = 0; i < n; i++) {                                                \
            R v = x[i];                                                                  \
            y[i] = (R)(EXPR);                                                            \
        }                                                                                \
    }
#define MK_UNARY_OP(NAME, GRAIN) ((unary_op){NAME##_f32, NAME##_f64, 0, 0, (GRAIN)})

/* Output = op(input 0) for float32/16/bf16/64 inputs (f16/bf16 computed in float32);
 * OG_ERR_UNSUPPORTED for other dtypes. */
og_status *cpu_unary_float(kernel_ctx *ctx, const unary_op *op);
/* Output = fn(input 0) for any byte-addressable dtype, same shape, out_dtype. */
og_status *cpu_unary_loop(kernel_ctx *ctx, og_dtype out_dtype, ew_loop_fn fn,
                          const void *param, int64_t grain);

/* ---- kernels ---------------------------------------------------------------------- */
#define MK_KERNELS(X)                                                                    \
    X(add) X(sub) X(mul) X(div) X(pow) X(mod)                                            \
    X(sqrt) X(reciprocal) X(neg) X(abs) X(exp) X(log) X(erf) X(tanh) X(sin) X(cos)       \
    X(tan) X(acos) X(asin) X(atan) X(cosh) X(sinh) X(acosh) X(asinh) X(atanh)           \
    X(floor) X(ceil) X(round) X(sign) X(isnan) X(isinf)                                  \
    X(sigmoid) X(relu) X(leakyrelu) X(softplus) X(gelu) X(hardsigmoid) X(hardswish)      \
    X(elu) X(selu) X(celu) X(softsign) X(thresholded_relu) X(mish) X(shrink)             \
    X(clip)                                                                              \
    X(equal) X(less) X(greater) X(less_equal) X(greater_equal)                           \
    X(not) X(and) X(or) X(xor) X(where)                                                  \
    X(bitwise_and) X(bitwise_or) X(bitwise_xor) X(bitwise_not) X(bitshift)               \
    X(max) X(min) X(sum) X(mean)                                                         \
    X(string_concat)
MK_KERNELS(KERNEL_DECLARE)

/* com.microsoft fused activations (activation_fast_gelu.c, activation_fused.c). */
KERNEL_DECLARE(contrib_fast_gelu) KERNEL_DECLARE(contrib_quick_gelu)
KERNEL_DECLARE(contrib_bias_gelu) KERNEL_DECLARE(contrib_bias_add) KERNEL_DECLARE(contrib_gated_add)

/* The Sigmoid kernel's float64 arithmetic (activation.c; float32 is vsigmoid_f32). */
void cpu_sigmoid_f64(const double *x, double *y, int64_t n);
/* The executor's fused SiLU-gated product, (x * sigmoid(x)) * u (silu_mul.c; made by
 * backends/native/fuse.c). */
og_status *cpu_silu_mul(kernel_ctx *ctx);

#endif
