/* The elementwise table (see registry.h). One implementation serves every version
 * listed: the versions in between only widened type lists (and Clip moved its bounds
 * from attributes to inputs at 11, which cpu_clip handles). */
#include "backends/native/kernels/registry.h"
#include "backends/native/kernels/elementwise/elementwise.h"

#define LAST 28 /* the newest default-domain opset onnx 1.23 defines */

/* In place (kernel_def.inplace): every kernel marked here computes output element i from
 * the input elements at position i only, or stages blocks through a buffer, so the
 * output may be written over a full-size input (a broadcast operand of the same element
 * count as the output has the output's layout). Not marked: IsNaN and IsInf (the output
 * element size always differs). */
#define IN0 KERNEL_INPLACE(0)
#define IN1 KERNEL_INPLACE(1)
#define IN2 KERNEL_INPLACE(2)

const kernel_def cpu_elementwise_kernels[] = {
    {"", "Add", 7, LAST, cpu_add, .inplace = IN0 | IN1},
    {"", "Sub", 7, LAST, cpu_sub, .inplace = IN0 | IN1},
    {"", "Mul", 7, LAST, cpu_mul, .inplace = IN0 | IN1},
    {"", "Div", 7, LAST, cpu_div, .inplace = IN0 | IN1},
    {"", "Pow", 7, LAST, cpu_pow, .inplace = IN0 | IN1},
    {"", "Mod", 10, LAST, cpu_mod, .inplace = IN0 | IN1},
    {"", "Sqrt", 6, LAST, cpu_sqrt, .inplace = IN0},
    {"", "Reciprocal", 6, LAST, cpu_reciprocal, .inplace = IN0},
    {"", "Neg", 6, LAST, cpu_neg, .inplace = IN0},
    {"", "Abs", 6, LAST, cpu_abs, .inplace = IN0},
    {"", "Exp", 6, LAST, cpu_exp, .inplace = IN0},
    {"", "Log", 6, LAST, cpu_log, .inplace = IN0},
    {"", "Erf", 9, LAST, cpu_erf, .inplace = IN0},
    {"", "Tanh", 6, LAST, cpu_tanh, .inplace = IN0},
    {"", "Sin", 7, LAST, cpu_sin, .inplace = IN0},
    {"", "Cos", 7, LAST, cpu_cos, .inplace = IN0},
    {"", "Tan", 7, LAST, cpu_tan, .inplace = IN0},
    {"", "Acos", 7, LAST, cpu_acos, .inplace = IN0},
    {"", "Asin", 7, LAST, cpu_asin, .inplace = IN0},
    {"", "Atan", 7, LAST, cpu_atan, .inplace = IN0},
    {"", "Cosh", 9, LAST, cpu_cosh, .inplace = IN0},
    {"", "Sinh", 9, LAST, cpu_sinh, .inplace = IN0},
    {"", "Acosh", 9, LAST, cpu_acosh, .inplace = IN0},
    {"", "Asinh", 9, LAST, cpu_asinh, .inplace = IN0},
    {"", "Atanh", 9, LAST, cpu_atanh, .inplace = IN0},
    {"", "Floor", 6, LAST, cpu_floor, .inplace = IN0},
    {"", "Ceil", 6, LAST, cpu_ceil, .inplace = IN0},
    {"", "Round", 11, LAST, cpu_round, .inplace = IN0},
    {"", "Sign", 9, LAST, cpu_sign, .inplace = IN0},
    {"", "IsNaN", 9, LAST, cpu_isnan},
    {"", "IsInf", 10, LAST, cpu_isinf},
    {"", "Sigmoid", 6, LAST, cpu_sigmoid, .inplace = IN0},
    {"", "Relu", 6, LAST, cpu_relu, .inplace = IN0},
    {"", "LeakyRelu", 6, LAST, cpu_leakyrelu, .inplace = IN0},
    {"", "Softplus", 1, LAST, cpu_softplus, .inplace = IN0},
    {"", "Gelu", 20, LAST, cpu_gelu, .inplace = IN0},
    {"", "HardSigmoid", 6, LAST, cpu_hardsigmoid, .inplace = IN0},
    {"", "HardSwish", 14, LAST, cpu_hardswish, .inplace = IN0},
    {"", "Elu", 6, LAST, cpu_elu, .inplace = IN0},
    {"", "Selu", 6, LAST, cpu_selu, .inplace = IN0},
    {"", "Celu", 12, LAST, cpu_celu, .inplace = IN0},
    {"", "Softsign", 1, LAST, cpu_softsign, .inplace = IN0},
    {"", "ThresholdedRelu", 10, LAST, cpu_thresholded_relu, .inplace = IN0},
    {"", "Mish", 18, LAST, cpu_mish, .inplace = IN0},
    {"", "Shrink", 9, LAST, cpu_shrink, .inplace = IN0},
    {"", "Clip", 6, LAST, cpu_clip, .inplace = IN0},
    {"", "Equal", 7, LAST, cpu_equal, .inplace = IN0 | IN1},
    {"", "Less", 7, LAST, cpu_less, .inplace = IN0 | IN1},
    {"", "Greater", 7, LAST, cpu_greater, .inplace = IN0 | IN1},
    {"", "LessOrEqual", 12, LAST, cpu_less_equal, .inplace = IN0 | IN1},
    {"", "GreaterOrEqual", 12, LAST, cpu_greater_equal, .inplace = IN0 | IN1},
    {"", "Not", 1, LAST, cpu_not, .inplace = IN0},
    {"", "And", 7, LAST, cpu_and, .inplace = IN0 | IN1},
    {"", "Or", 7, LAST, cpu_or, .inplace = IN0 | IN1},
    {"", "Xor", 7, LAST, cpu_xor, .inplace = IN0 | IN1},
    {"", "Where", 9, LAST, cpu_where, .inplace = IN0 | IN1 | IN2},
    {"", "BitwiseAnd", 18, LAST, cpu_bitwise_and, .inplace = IN0 | IN1},
    {"", "BitwiseOr", 18, LAST, cpu_bitwise_or, .inplace = IN0 | IN1},
    {"", "BitwiseXor", 18, LAST, cpu_bitwise_xor, .inplace = IN0 | IN1},
    {"", "BitwiseNot", 18, LAST, cpu_bitwise_not, .inplace = IN0},
    {"", "BitShift", 11, LAST, cpu_bitshift, .inplace = IN0 | IN1},
    {"", "Max", 6, LAST, cpu_max, .inplace = IN0 | IN1},
    {"", "Min", 6, LAST, cpu_min, .inplace = IN0 | IN1},
    {"", "Sum", 6, LAST, cpu_sum, .inplace = IN0 | IN1},
    {"", "Mean", 6, LAST, cpu_mean, .inplace = IN0 | IN1},
    {"", "StringConcat", 20, LAST, cpu_string_concat},
    /* com.microsoft fused activations (that domain is at version 1). */
    {"com.microsoft", "FastGelu", 1, 1, cpu_contrib_fast_gelu, .inplace = IN0},
    {"com.microsoft", "QuickGelu", 1, 1, cpu_contrib_quick_gelu, .inplace = IN0},
    {"com.microsoft", "BiasGelu", 1, 1, cpu_contrib_bias_gelu, .inplace = IN0},
    {"com.microsoft", "BiasAdd", 1, 1, cpu_contrib_bias_add, .inplace = IN0 | IN2},
    {"com.microsoft", "GatedAdd", 1, 1, cpu_contrib_gated_add},
    /* The executor's fused nodes (backends/native/fuse.h): a gated MLP's Sigmoid, Mul
     * and Mul as one pass. */
    {KERNEL_FUSED_DOMAIN, "SiluMul", 1, 1, cpu_silu_mul, .inplace = IN0 | IN1},
    {0},
};
