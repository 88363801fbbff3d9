/* Private helpers of the compute2 kernels (reduce, softmax, norms, einsum, conv,
 * quantize): axis checks and dtype conversion to/from float32 or double working copies,
 * so that each kernel's hot loop is written once, for one type. */
#ifndef OG_KERNELS_CPU_COMPUTE2_H
#define OG_KERNELS_CPU_COMPUTE2_H

#include "kernels/kernel.h"

/* Normalizes `axis` (negative counts from the end) into [0, rank); error names `what`. */
og_status *cpu_axis(const kernel_ctx *ctx, int64_t axis, int rank, const char *what, int *out);
/* Product of dims[b..e). */
int64_t cpu_dims_prod(const int64_t *dims, int b, int e);

/* Offset of flat index o over dims[0..n) when dimension d advances by strides[d]. */
int64_t cpu_offset_of(int64_t o, int n, const int64_t *dims, const int64_t *strides);

/* True for float32, float16, bfloat16 and float64. */
bool cpu_is_float(og_dtype dt);
/* True for the integer types and bool that the generic paths read. */
bool cpu_is_int(og_dtype dt);

/* Float32 view of a floating input: the data itself for float32, else a converted copy
 * in scratch. Other dtypes are OG_ERR_UNSUPPORTED naming input `index`. */
og_status *cpu_in_f32(kernel_ctx *ctx, int index, const float **out);
/* A float32 buffer for output `t`: its data when it is float32, else scratch that
 * cpu_out_f32_done converts into it. */
og_status *cpu_out_f32(kernel_ctx *ctx, tensor *t, float **out);
void cpu_out_f32_done(tensor *t, const float *buf);

/* Double copy of any float or integer tensor (in scratch); ints above 2^53 round. */
og_status *cpu_in_f64(kernel_ctx *ctx, const tensor *t, int index, double **out);
/* Writes n doubles into t's elements, converting (integers truncate toward zero). */
void cpu_store_f64(tensor *t, const double *src);

/* double -> int64 without undefined behaviour: NaN is 0, out-of-range saturates. */
static inline int64_t cpu_f2i(double v) {
    if (!(v == v)) return 0;
    if (v >= 9.2233720368547758e18) return INT64_MAX;
    if (v <= -9.2233720368547758e18) return INT64_MIN;
    return (int64_t)v;
}

/* Reads a scalar or 1-element integer input (axis, k) as int64. */
og_status *cpu_scalar_i64(const kernel_ctx *ctx, int index, int64_t *out);

/* Kernels (see table_compute2.c). */
og_status *cpu_reduce_sum(kernel_ctx *ctx);
og_status *cpu_reduce_mean(kernel_ctx *ctx);
og_status *cpu_reduce_max(kernel_ctx *ctx);
og_status *cpu_reduce_min(kernel_ctx *ctx);
og_status *cpu_reduce_prod(kernel_ctx *ctx);
og_status *cpu_reduce_l1(kernel_ctx *ctx);
og_status *cpu_reduce_l2(kernel_ctx *ctx);
og_status *cpu_reduce_sumsq(kernel_ctx *ctx);
og_status *cpu_reduce_logsum(kernel_ctx *ctx);
og_status *cpu_reduce_lse(kernel_ctx *ctx);
og_status *cpu_argmax(kernel_ctx *ctx);
og_status *cpu_argmin(kernel_ctx *ctx);
og_status *cpu_cumsum(kernel_ctx *ctx);
og_status *cpu_topk(kernel_ctx *ctx);
og_status *cpu_softmax(kernel_ctx *ctx);
og_status *cpu_log_softmax(kernel_ctx *ctx);
og_status *cpu_layer_norm(kernel_ctx *ctx);
og_status *cpu_rms_norm(kernel_ctx *ctx);
og_status *cpu_einsum(kernel_ctx *ctx);
og_status *cpu_conv(kernel_ctx *ctx);
og_status *cpu_quantize_linear(kernel_ctx *ctx);
og_status *cpu_dequantize_linear(kernel_ctx *ctx);

#endif
