/* Helpers shared by the kernel families: axis checks, dims arithmetic, and moving data
 * between a tensor's storage type and float32/float64 working copies, so that each
 * kernel's hot loop is written once, for one type. */
#ifndef OG_NATIVE_KERNELS_KERNEL_UTIL_H
#define OG_NATIVE_KERNELS_KERNEL_UTIL_H

#include "backends/native/kernels/kernel.h"
#include "base/half.h"

#include <stdbool.h>
#include <string.h>
#ifdef __F16C__
#include <immintrin.h>
#endif

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

/* double -> integer dtype dt as numpy's astype does on x86-64, as the result's bits, for
 * ops whose reference converts a float result back to an integer type (Pow, Shrink,
 * ReduceL2, ReduceMean of nothing): truncation, and for NaN or a value outside the
 * conversion's range the "integer indefinite" of the instruction numpy's scalar loop
 * uses. int8/16/32 and uint8/16 convert through int32 (0x80000000, then wrapped to the
 * type: int8 of 2^31 is 0); uint32 and int64 through int64 (INT64_MIN: uint32 of 2^40
 * is 0, of -1 is 2^32 - 1); uint64 through int64 below 2^63 and as v - 2^63 with the
 * top bit set above it (2^64 is 0, -1e20 and NaN are 2^63). C leaves these cases
 * undefined; this pins one answer without undefined behaviour. (numpy's vector loop
 * converts out-of-range values to uint32 otherwise, -1e10 to 2^31: which one runs
 * depends on the array's length, so no case pins that.) */
static inline int64_t cpu_f2i64_x86(double v) {
    return v >= -9.2233720368547758e18 && v < 9.2233720368547758e18 ? (int64_t)v : INT64_MIN;
}
static inline uint64_t cpu_f2int_numpy(double v, og_dtype dt) {
    switch (dt) {
    case OG_UINT32: case OG_INT64: return (uint64_t)cpu_f2i64_x86(v);
    case OG_UINT64:
        return v >= 9.2233720368547758e18 ? (uint64_t)cpu_f2i64_x86(v - 9.2233720368547758e18) ^
                                                (1ull << 63)
                                          : (uint64_t)cpu_f2i64_x86(v);
    default:
        return (uint64_t)(int64_t)(v > -2147483649.0 && v < 2147483648.0 ? (int32_t)v
                                                                          : INT32_MIN);
    }
}

/* Element i of an integer run of dtype dt set to the low bits of v (wraps to the type). */
static inline void cpu_store_int_bits(og_dtype dt, void *p, int64_t i, uint64_t v) {
    switch (dtype_size(dt)) {
    case 1: ((uint8_t *)p)[i] = (uint8_t)v; break;
    case 2: ((uint16_t *)p)[i] = (uint16_t)v; break;
    case 4: ((uint32_t *)p)[i] = (uint32_t)v; break;
    default: ((uint64_t *)p)[i] = v; break;
    }
}

/* Reads a scalar or 1-element integer input (axis, k) as int64. */
og_status *cpu_scalar_i64(const kernel_ctx *ctx, int index, int64_t *out);

/* True for the storage types computed through float32 (f32, f16, bf16). */
bool cpu_is_f32able(og_dtype dt);

/* NULL when input i has exactly this shape, else an error naming the input (`what`), its
 * shape and the expected one. */
og_status *cpu_want_shape(const kernel_ctx *ctx, int i, const char *what, int rank,
                          const int64_t *dims);
/* Input i (named `what` in the error), when given, has dtype dt. */
og_status *cpu_want_dtype(const kernel_ctx *ctx, int i, const char *what, og_dtype dt);

/* The key/value cache of an attention node (MultiHeadAttention, GroupQueryAttention,
 * Attention of opset 23+): past_key (input ik) and past_value (input iv) both given or
 * both omitted, past_key (B, H, P, Dk) for some past length P (for GroupQueryAttention
 * the buffer's capacity) and past_value (B, H, P, Dv) with the same P. *P gets it (0
 * without a cache). An error names the node, the input (index, role and the graph's
 * tensor) and the shape expected against the one given. */
og_status *cpu_want_past_kv(const kernel_ctx *ctx, int ik, int iv, int64_t B, int64_t H,
                            int64_t Dk, int64_t Dv, int64_t *P);

/* Whether the node declares output i (present and not omitted). */
bool cpu_wants_output(const kernel_ctx *ctx, int i);

/* ---- rows between storage (f32, f16, bf16) and float32 ------------------------ */

/* Converts n elements of storage type dt (f32, f16, bf16) at src into float32. */
static inline void cpu_load_f32(og_dtype dt, const void *src, int64_t n, float *dst) {
    if (dt == OG_FLOAT32) {
        memcpy(dst, src, sizeof(float) * (size_t)n);
        return;
    }
    const uint16_t *s = src;
    int64_t i = 0;
    if (dt == OG_FLOAT16) {
#ifdef __F16C__
        for (; i + 8 <= n; i += 8)
            _mm256_storeu_ps(dst + i, _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(s + i))));
#endif
        for (; i < n; i++) dst[i] = f16_to_f32(s[i]);
    } else {
        for (; i < n; i++) dst[i] = bf16_to_f32(s[i]);
    }
}

/* Converts n float32 values into storage type dt at dst. */
static inline void cpu_store_f32(og_dtype dt, void *dst, int64_t n, const float *src) {
    if (dt == OG_FLOAT32) {
        memcpy(dst, src, sizeof(float) * (size_t)n);
        return;
    }
    uint16_t *d = dst;
    int64_t i = 0;
    if (dt == OG_FLOAT16) {
#ifdef __F16C__
        for (; i + 8 <= n; i += 8)
            _mm_storeu_si128((__m128i *)(d + i),
                             _mm256_cvtps_ph(_mm256_loadu_ps(src + i), _MM_FROUND_TO_NEAREST_INT));
#endif
        for (; i < n; i++) d[i] = f32_to_f16(src[i]);
    } else {
        for (; i < n; i++) d[i] = f32_to_bf16(src[i]);
    }
}

/* x rounded to storage type dt and back (identity for float32). */
static inline float cpu_round_to(og_dtype dt, float x) {
    if (dt == OG_FLOAT16) return f16_to_f32(f32_to_f16(x));
    if (dt == OG_BFLOAT16) return bf16_to_f32(f32_to_bf16(x));
    return x;
}

/* Converts n elements of any float or integer dtype at src[off..] into doubles. */
void cpu_load_f64(og_dtype dt, const void *src, int64_t off, int64_t n, double *dst);
/* Writes n doubles into elements dst[off..] of dtype dt; integers are rounded half to
 * even and saturated (numpy's rint + clip, what resampling ops store), NaN as 0. */
void cpu_store_f64_rounded(og_dtype dt, void *dst, int64_t off, int64_t n, const double *src);

#endif
