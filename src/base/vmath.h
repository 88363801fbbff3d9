/* Vectorized float32 exp, sigmoid, tanh, erf and the GELU / SiLU forms built on them.
 * Each takes n elements of x and writes y (x == y is allowed). AVX-512 or AVX2+FMA when
 * the build targets them, portable scalar code otherwise. Accuracy: within 2 ulp of the
 * correctly rounded result over the whole float range (measured bounds in
 * tests/unit/test_vmath.c); inf, NaN, overflow to inf and underflow to 0 (through the
 * subnormals) come out as from libm, with no errno and no slow paths. */
#ifndef OG_BASE_VMATH_H
#define OG_BASE_VMATH_H

#include <stdint.h>

void vexp_f32(const float *x, float *y, int64_t n);
/* y = exp(x - shift): the shifted exponentials of a softmax row. */
void vexp_shift_f32(const float *x, float *y, int64_t n, float shift);
/* The same, returning the sum of the y: summed in W lanes, then the lanes in order and
 * the tail after them; AVX-512 builds take the tail into the lanes and add the lanes as
 * a fixed tree. Either way the sum depends only on x, n and shift. */
float vexp_shift_sum_f32(const float *x, float *y, int64_t n, float shift);
/* The largest of x[0..n) (n >= 1); a NaN is passed over as x86's max does. */
float vmax_f32(const float *x, int64_t n);
void vsigmoid_f32(const float *x, float *y, int64_t n);
void vtanh_f32(const float *x, float *y, int64_t n);
void verf_f32(const float *x, float *y, int64_t n);
/* y = x * sigmoid(alpha * x): SiLU (alpha 1) and QuickGelu. */
void vsilu_f32(const float *x, float *y, int64_t n, float alpha);
/* y = (x * sigmoid(x)) * u, each product rounded to float: a gated MLP's SiLU gate, the
 * same bits as vsigmoid_f32 followed by the two products (y may be x or u). */
void vsilu_mul_f32(const float *x, const float *u, float *y, int64_t n);
/* y = 0.5 x (1 + erf(x / sqrt(2))): the exact GELU. */
void vgelu_erf_f32(const float *x, float *y, int64_t n);
/* y = 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))): the tanh-approximated GELU. */
void vgelu_tanh_f32(const float *x, float *y, int64_t n);
/* Which implementation was compiled in: "avx512", "avx2" or "scalar". */
const char *vmath_isa(void);

#endif
