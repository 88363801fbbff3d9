/* src/base/vmath.c against libm in double: a sweep over every 97th float bit pattern
 * (all signs and exponents, NaNs and infinities included) with a stated ulp bound, plus
 * the special values. The ulp is that of the correctly rounded float result (the
 * subnormal spacing 2^-149 at the bottom). */
#include "testing.h"

#include "base/vmath.h"

#include <float.h>
#include <stdint.h>
#include <stdlib.h>

/* every 97th pattern (~44M points, ~1 s per function optimized); sanitized or -O0
 * builds, 40x slower here, sweep every 997th */
#if defined(__SANITIZE_ADDRESS__) || !defined(__OPTIMIZE__)
#define VM_SLOW_BUILD 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define VM_SLOW_BUILD 1
#endif
#endif
#ifdef VM_SLOW_BUILD
enum { STRIDE = 997, BATCH = 4096 };
#else
enum { STRIDE = 97, BATCH = 4096 };
#endif

typedef void (*vfn)(const float *, float *, int64_t);

static double ref_exp(double x) { return exp(x); }
static double ref_sigmoid(double x) { return 1.0 / (1.0 + exp(-x)); }
static double ref_tanh(double x) { return tanh(x); }
static double ref_erf(double x) { return erf(x); }
static double ref_gelu_erf(double x) { return 0.5 * x * (1.0 + erf(x * M_SQRT1_2)); }
static void silu1(const float *x, float *y, int64_t n) { vsilu_f32(x, y, n, 1.0f); }
static double ref_silu(double x) { return x / (1.0 + exp(-x)); }

/* ulp error of y against the exact r; a huge value when y is not the right inf/NaN */
static double ulp_err(float y, double r) {
    if (isnan(r)) return isnan(y) ? 0 : 1e30;
    float rf = (float)r;
    if (isinf(rf)) return y == rf ? 0 : 1e30;
    if (!isfinite(y)) return 1e30;
    int e = rf == 0 ? -126 : ilogbf(rf);
    double ulp = ldexp(1.0, (e < -126 ? -126 : e) - 23);
    return fabs((double)y - r) / ulp;
}

static double abs_err(float y, double r) {
    if (isnan(r)) return isnan(y) ? 0 : 1e30;
    return isnan(y) ? 1e30 : fabs((double)y - r);
}

/* max ulp error (or absolute error, `absolute`) over the sweep, only where
 * lo <= |x| <= hi (NaN x always counts) */
static double sweep_as(vfn f, double (*ref)(double), double lo, double hi, float *worst,
                       bool absolute) {
    float *x = malloc(sizeof(float) * BATCH), *y = malloc(sizeof(float) * BATCH);
    double maxe = 0;
    if (!x || !y) {
        free(x);
        free(y);
        return 1e30;
    }
    uint64_t bits = 0;
    while (bits <= UINT32_MAX) {
        int m = 0;
        for (; m < BATCH && bits <= UINT32_MAX; bits += STRIDE) {
            uint32_t b = (uint32_t)bits;
            float v;
            memcpy(&v, &b, sizeof v);
            if (isnan(v) || (fabsf(v) >= lo && fabsf(v) <= hi)) x[m++] = v;
        }
        f(x, y, m);
        for (int i = 0; i < m; i++) {
            double e = absolute ? abs_err(y[i], ref((double)x[i])) : ulp_err(y[i], ref((double)x[i]));
            if (e > maxe) {
                maxe = e;
                *worst = x[i];
            }
        }
    }
    free(x);
    free(y);
    return maxe;
}

static double sweep(vfn f, double (*ref)(double), double lo, double hi, float *worst) {
    return sweep_as(f, ref, lo, hi, worst, false);
}

#define SWEEP(name, f, ref, lo, hi, bound)                                               \
    do {                                                                                 \
        float w_ = 0;                                                                    \
        double e_ = sweep(f, ref, lo, hi, &w_);                                          \
        printf("  vmath[%s] %-10s max %.3f ulp (at %.9g)\n", vmath_isa(), name, e_,       \
               (double)w_);                                                              \
        if (!(e_ <= (bound))) {                                                          \
            test_fail(__FILE__, __LINE__, "%s: %.3f ulp at x = %.9g, bound %g", name, e_, \
                      (double)w_, (double)(bound));                                      \
            return;                                                                      \
        }                                                                                \
    } while (0)

TEST(vmath_exp_sweep) { SWEEP("exp", vexp_f32, ref_exp, 0, INFINITY, 1.5); }
/* The sigmoid is onnxruntime's (MLAS's rational approximation, vmath.c), not a fit of
 * ours: its bound is an absolute one (it is exactly 0 below -18, where the logistic is
 * still 1.5e-8), and its bits are held to onnxruntime's by the contrib_hybrid cases. */
TEST(vmath_sigmoid_sweep) {
    float w = 0;
    double e = sweep_as(vsigmoid_f32, ref_sigmoid, 0, INFINITY, &w, true);
    printf("  vmath[%s] sigmoid    max abs error %.3g (at %.9g)\n", vmath_isa(), e, (double)w);
    CHECK(e <= 2e-7);
}
/* The tanh is onnxruntime's too (MLAS's rational approximation, vmath.c): a few ulp over
 * the normal range; near the smallest normals the odd polynomial's product underflows,
 * so there the bound is an absolute one. Its bits are held to onnxruntime's by the
 * contrib_llm ort-order cases. */
TEST(vmath_tanh_sweep) {
    SWEEP("tanh", vtanh_f32, ref_tanh, 1e-30, INFINITY, 6.0);
    float w = 0;
    double e = sweep_as(vtanh_f32, ref_tanh, 0, 1e-30, &w, true);
    printf("  vmath[%s] tanh tiny  max abs error %.3g (at %.9g)\n", vmath_isa(), e, (double)w);
    CHECK(e <= 1e-37);
}
TEST(vmath_erf_sweep) { SWEEP("erf", verf_f32, ref_erf, 0, INFINITY, 2.0); }
/* SiLU and GELU: x * f(x) adds a rounding (and below -87 SiLU scales a subnormal
 * sigmoid up, so the bound holds to |x| <= 80); GELU's 1 + erf cancels for x below about -1,
 * so the bound is stated where it is a relative one. */
TEST(vmath_silu_sweep) {
    float w = 0;
    double e = sweep_as(silu1, ref_silu, 0, 80, &w, true);
    printf("  vmath[%s] silu       max abs error %.3g (at %.9g)\n", vmath_isa(), e, (double)w);
    CHECK(e <= 2e-7 * 80);
}
TEST(vmath_gelu_sweep) {
    SWEEP("gelu_erf", vgelu_erf_f32, ref_gelu_erf, 0, 0.5, 3.0);
}

TEST(vmath_special_values) {
    const float x[] = {0.0f, -0.0f, INFINITY, -INFINITY, NAN, 88.7f, 89.0f, -87.5f,
                       -103.0f, -104.0f, -200.0f, 1e-40f, -1e-40f, FLT_MAX, -FLT_MAX};
    enum { N = sizeof x / sizeof x[0] };
    float y[N];
    vexp_f32(x, y, N);
    CHECK(y[0] == 1 && y[1] == 1 && isinf(y[2]) && y[3] == 0 && isnan(y[4]));
    CHECK(isfinite(y[5]) && isinf(y[6]) && y[7] > 0 && y[7] < FLT_MIN && y[8] > 0);
    CHECK(y[9] == 0 && y[10] == 0 && y[11] == 1 && isinf(y[13]) && y[14] == 0);
    vtanh_f32(x, y, N);
    CHECK(y[0] == 0 && !signbit(y[0]) && y[1] == 0 && signbit(y[1]));
    CHECK(y[2] == 1 && y[3] == -1 && isnan(y[4]));
    /* a subnormal: MLAS's polynomial rounds in the subnormals (within 1e-43 of x) */
    CHECK(fabsf(y[11] - 1e-40f) < 1e-43f && y[12] == -y[11]);
    CHECK(y[13] == 1 && y[14] == -1);
    verf_f32(x, y, N);
    CHECK(y[0] == 0 && signbit(y[1]) && y[2] == 1 && y[3] == -1 && isnan(y[4]));
    CHECK(y[13] == 1 && y[14] == -1);
    vsigmoid_f32(x, y, N);
    CHECK(y[0] == 0.5f && y[2] == 1 && y[3] == 0 && isnan(y[4]) && y[10] == 0);
    CHECK(y[8] == 0 && y[13] == 1 && y[14] == 0); /* 0 below -18, as onnxruntime's */
    /* odd lengths and in place: the tail path */
    float a[37], b[37];
    for (int i = 0; i < 37; i++) a[i] = b[i] = (float)i * 0.1f - 1.8f;
    vexp_shift_f32(a, a, 37, 0.5f);
    for (int i = 0; i < 37; i++) CHECK_NEAR(a[i], exp((double)b[i] - 0.5), 1e-6 * a[i]);
    vgelu_tanh_f32(b, a, 37);
    for (int i = 0; i < 37; i++) {
        double v = b[i];
        double r = 0.5 * v * (1 + tanh(0.7978845608028654 * (v + 0.044715 * v * v * v)));
        CHECK_NEAR(a[i], r, 1e-6);
    }
}

/* The softmax helpers: the largest value, and the shifted exponentials with their sum,
 * against plain loops, for every length around the vector width. */
TEST(vmath_softmax_helpers) {
    float x[70], y[70];
    for (int n = 1; n <= 70; n++) {
        for (int i = 0; i < n; i++) x[i] = (float)((i * 37) % 23) * 0.37f - 4.0f;
        x[(n * 5) % n] = 3.75f; /* the maximum somewhere */
        float ref_max = x[0];
        for (int i = 1; i < n; i++) ref_max = x[i] > ref_max ? x[i] : ref_max;
        CHECK(vmax_f32(x, n) == ref_max);
        float sum = vexp_shift_sum_f32(x, y, n, ref_max);
        double ref = 0;
        for (int i = 0; i < n; i++) {
            double e = exp((double)x[i] - (double)ref_max);
            CHECK_NEAR(y[i], e, 3e-7 * e);
            ref += y[i];
        }
        CHECK_NEAR(sum, ref, 1e-6 * ref);
    }
}
