/* The cast family: Cast and CastLike between every numeric dtype, bool, the float8
 * formats, float4e2m1, packed int4/uint4 and strings; and the element conversions other
 * families use to read or write any numeric dtype through double. */
#ifndef OG_NATIVE_KERNELS_CAST_H
#define OG_NATIVE_KERNELS_CAST_H

#include "backends/native/kernels/dtype_lists.h"
#include "backends/native/kernels/kernel.h"

og_status *cpu_cast(kernel_ctx *ctx);
og_status *cpu_castlike(kernel_ctx *ctx);

/* Element i of a numeric tensor's data as double, and a double stored into element i
 * with Cast's rules (float->int truncates; NaN and out-of-range are defined, no UB). */
double cpu_math_load_f64(og_dtype dt, const void *data, int64_t i);
void cpu_math_store_f64(og_dtype dt, void *data, int64_t i, double v);
/* Cast to or from OG_STRING (cast_string.c): output 0 of ctx. */
og_status *cpu_cast_string(kernel_ctx *ctx, const tensor *x, og_dtype to);

#endif
