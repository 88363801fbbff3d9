/* Vectorized float32 transcendental functions (see vmath.h). Each function is written
 * once over a tiny set of vector operations (V* macros) that map to AVX-512, AVX2+FMA or
 * plain scalar float code, so the three builds share one algorithm and one error budget.
 * Polynomial coefficients are minimax-style fits (relative error, Lawson-weighted least
 * squares in double) made for this file. */
#include "base/vmath.h"

#include <math.h>
#include <string.h>

#if defined(__AVX512F__)
#include <immintrin.h>
#define W 16
#define ISA "avx512"
typedef __m512 vf;
typedef __m512i vi;
typedef __mmask16 vm;
#define VLOAD(p) _mm512_loadu_ps(p)
#define VSTORE(p, v) _mm512_storeu_ps(p, v)
#define VSET(c) _mm512_set1_ps(c)
#define VADD(a, b) _mm512_add_ps(a, b)
#define VSUB(a, b) _mm512_sub_ps(a, b)
#define VMUL(a, b) _mm512_mul_ps(a, b)
#define VDIV(a, b) _mm512_div_ps(a, b)
#define VFMA(a, b, c) _mm512_fmadd_ps(a, b, c)
#define VFNMA(a, b, c) _mm512_fnmadd_ps(a, b, c) /* c - a*b */
#define VMIN(a, b) _mm512_min_ps(a, b)           /* b where either is NaN */
#define VMAX(a, b) _mm512_max_ps(a, b)
#define VABS(a) _mm512_abs_ps(a)
#define VLT(a, b) _mm512_cmp_ps_mask(a, b, _CMP_LT_OQ)
#define VISNAN(a) _mm512_cmp_ps_mask(a, a, _CMP_UNORD_Q)
#define VSEL(m, a, b) _mm512_mask_blend_ps(m, b, a) /* m ? a : b */
#define VROUND(a) _mm512_roundscale_ps(a, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC)
#define VCVTI(a) _mm512_cvtps_epi32(a)
#define VHALFI(k) _mm512_srai_epi32(k, 1)
#define VSUBI(a, b) _mm512_sub_epi32(a, b)
#define VPOW2I(k) \
    _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_add_epi32(k, _mm512_set1_epi32(127)), 23))
#define VCOPYSIGN(mag, sgn)                                                              \
    _mm512_castsi512_ps(_mm512_or_si512(                                                 \
        _mm512_castps_si512(mag),                                                        \
        _mm512_and_si512(_mm512_castps_si512(sgn), _mm512_set1_epi32(INT32_MIN))))
#elif defined(__AVX2__) && defined(__FMA__)
#include <immintrin.h>
#define W 8
#define ISA "avx2"
typedef __m256 vf;
typedef __m256i vi;
typedef __m256 vm;
#define VLOAD(p) _mm256_loadu_ps(p)
#define VSTORE(p, v) _mm256_storeu_ps(p, v)
#define VSET(c) _mm256_set1_ps(c)
#define VADD(a, b) _mm256_add_ps(a, b)
#define VSUB(a, b) _mm256_sub_ps(a, b)
#define VMUL(a, b) _mm256_mul_ps(a, b)
#define VDIV(a, b) _mm256_div_ps(a, b)
#define VFMA(a, b, c) _mm256_fmadd_ps(a, b, c)
#define VFNMA(a, b, c) _mm256_fnmadd_ps(a, b, c)
#define VMIN(a, b) _mm256_min_ps(a, b)
#define VMAX(a, b) _mm256_max_ps(a, b)
#define VABS(a) _mm256_andnot_ps(_mm256_set1_ps(-0.0f), a)
#define VLT(a, b) _mm256_cmp_ps(a, b, _CMP_LT_OQ)
#define VISNAN(a) _mm256_cmp_ps(a, a, _CMP_UNORD_Q)
#define VSEL(m, a, b) _mm256_blendv_ps(b, a, m)
#define VROUND(a) _mm256_round_ps(a, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC)
#define VCVTI(a) _mm256_cvtps_epi32(a)
#define VHALFI(k) _mm256_srai_epi32(k, 1)
#define VSUBI(a, b) _mm256_sub_epi32(a, b)
#define VPOW2I(k) \
    _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(k, _mm256_set1_epi32(127)), 23))
#define VCOPYSIGN(mag, sgn) \
    _mm256_or_ps(mag, _mm256_and_ps(sgn, _mm256_set1_ps(-0.0f)))
#else
#define W 1
#define ISA "scalar"
typedef float vf;
typedef int32_t vi;
typedef int vm;
static inline float s_load(const float *p) { return *p; }
static inline void s_store(float *p, float v) { *p = v; }
/* min/max return b when either is NaN, as the x86 instructions do */
static inline float s_min(float a, float b) { return a < b ? a : b; }
static inline float s_max(float a, float b) { return a > b ? a : b; }
static inline int32_t s_cvti(float a) { return a == a ? (int32_t)a : 0; }
static inline float s_pow2i(int32_t k) {
    uint32_t u = (uint32_t)(k + 127) << 23;
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}
#define VLOAD(p) s_load(p)
#define VSTORE(p, v) s_store(p, v)
#define VSET(c) (c)
#define VADD(a, b) ((a) + (b))
#define VSUB(a, b) ((a) - (b))
#define VMUL(a, b) ((a) * (b))
#define VDIV(a, b) ((a) / (b))
/* a true fused multiply-add even where it is emulated: the error budget relies on it */
#define VFMA(a, b, c) fmaf(a, b, c)
#define VFNMA(a, b, c) fmaf(-(a), b, c)
#define VMIN(a, b) s_min(a, b)
#define VMAX(a, b) s_max(a, b)
#define VABS(a) fabsf(a)
#define VLT(a, b) ((a) < (b))
#define VISNAN(a) ((a) != (a))
#define VSEL(m, a, b) ((m) ? (a) : (b))
#define VROUND(a) nearbyintf(a)
#define VCVTI(a) s_cvti(a)
#define VHALFI(k) ((k) >> 1)
#define VSUBI(a, b) ((a) - (b))
#define VPOW2I(k) s_pow2i(k)
#define VCOPYSIGN(mag, sgn) copysignf(mag, sgn)
#endif

const char *vmath_isa(void) { return ISA; }

/* exp(x) = 2^n e^r, n = round(x / ln2), |r| <= ln2/2, ln2 split in two so n*LN2_HI is
 * exact. x is clamped to [-110, 89]: beyond those exp is 0 or inf in float anyway, and
 * 2^n is applied as two halves so both the overflow to inf near 88.7 and the gradual
 * underflow below -87.3 round once, from an exact normal intermediate. */
static inline vf v_exp(vf x) {
    x = VMIN(VSET(89.0f), VMAX(VSET(-110.0f), x)); /* NaN passes through */
    vf n = VROUND(VMUL(x, VSET(1.44269504088896341f)));
    vf r = VFNMA(n, VSET(0.693359375f), x);
    r = VFNMA(n, VSET(-2.12194440e-4f), r);
    vf p = VSET(1.383682946e-03f);
    p = VFMA(p, r, VSET(8.374822326e-03f));
    p = VFMA(p, r, VSET(4.166822508e-02f));
    p = VFMA(p, r, VSET(1.666641980e-01f));
    p = VFMA(p, r, VSET(4.999999106e-01f));
    p = VFMA(p, r, VSET(1.0f));
    p = VFMA(p, r, VSET(1.0f));
    vi k = VCVTI(n);
    vi k1 = VHALFI(k);
    return VMUL(VMUL(p, VPOW2I(k1)), VPOW2I(VSUBI(k, k1)));
}

/* 1 / (1 + e^-|x|) or e^-|x| / (1 + e^-|x|): the exponent is never positive, so tiny
 * results for very negative x keep their subnormal value instead of 1/inf. */
/* The logistic function as onnxruntime computes it (MLAS's FMA3 kernel, the rational
 * approximation MLAS took from Eigen; its coefficients): x clamped to [-18, 18], odd
 * polynomial p over even q by fused multiply-adds, p / q + 1/2 clamped to [0, 1]. Not
 * this file's own fit: Sigmoid is onnxruntime's, and at accuracy_level 4 a decoder's
 * SiLU gate feeds MatMulNBits' int8 quantization, where one ulp can move a product by a
 * quantization step. Within 1.6e-7 of the exact value everywhere; exactly 0 below -18
 * (about 1.5e-8 there) and NaN for NaN. */
static inline vf v_sigmoid(vf x) {
    vf v = VMIN(VSET(18.0f), VMAX(VSET(-18.0f), x)); /* NaN passes through */
    vf v2 = VMUL(v, v);
    vf p = VFMA(v2, VSET(4.37031012579801e-11f), VSET(1.15627324459942e-07f));
    p = VFMA(p, v2, VSET(6.08574864600143e-05f));
    p = VFMA(p, v2, VSET(8.51377133304701e-03f));
    p = VFMA(p, v2, VSET(2.48287947061529e-01f));
    p = VMUL(p, v);
    vf q = VFMA(v2, VSET(6.10247389755681e-13f), VSET(5.76102136993427e-09f));
    q = VFMA(q, v2, VSET(6.29106785017040e-06f));
    q = VFMA(q, v2, VSET(1.70198817374094e-03f));
    q = VFMA(q, v2, VSET(1.16817656904453e-01f));
    q = VFMA(q, v2, VSET(9.93151921023180e-01f));
    vf r = VADD(VDIV(p, q), VSET(0.5f));
    return VMIN(VSET(1.0f), VMAX(VSET(0.0f), r));
}

/* The hyperbolic tangent as onnxruntime computes it (MLAS's FMA3 / AVX-512 kernels, the
 * rational approximation MLAS took from Eigen; its coefficients): x clamped to [-9, 9],
 * odd polynomial p over even q by fused multiply-adds, then p / q. Like the sigmoid, not
 * a fit of ours: Tanh, the tanh GELU and attention softcaps are onnxruntime's, whose bits
 * an int8-quantizing MatMulNBits after them amplifies. NaN stays NaN. */
static inline vf v_tanh(vf x) {
    vf v = VMIN(VSET(9.0f), VMAX(VSET(-9.0f), x));
    vf v2 = VMUL(v, v);
    vf p = VFMA(v2, VSET(-2.76076847742355e-16f), VSET(2.00018790482477e-13f));
    p = VFMA(p, v2, VSET(-8.60467152213735e-11f));
    p = VFMA(p, v2, VSET(5.12229709037114e-08f));
    p = VFMA(p, v2, VSET(1.48572235717979e-05f));
    p = VFMA(p, v2, VSET(6.37261928875436e-04f));
    p = VFMA(p, v2, VSET(4.89352455891786e-03f));
    p = VMUL(p, v);
    vf q = VFMA(v2, VSET(1.19825839466702e-06f), VSET(1.18534705686654e-04f));
    q = VFMA(q, v2, VSET(2.26843463243900e-03f));
    q = VFMA(q, v2, VSET(4.89352518554385e-03f));
    return VDIV(p, q);
}

/* |x| < 1: x (2/sqrt(pi) + x^2 P(x^2)). Above: 1 - e^-x^2 Q(|x| - 2.4), Q fitted to erfc(x) e^(x^2) on
 * [1, 3.93]; erf rounds to 1 beyond 3.93. The rounding of x^2 is compensated. */
static inline vf v_erf(vf x) {
    vf a = VMIN(VABS(x), VSET(3.93f)), u = VMUL(a, a);
    vf p = VSET(8.358919149e-05f);
    p = VFMA(p, u, VSET(-8.156735566e-04f));
    p = VFMA(p, u, VSET(5.204114597e-03f));
    p = VFMA(p, u, VSET(-2.686153166e-02f));
    p = VFMA(p, u, VSET(1.128375158e-01f));
    p = VFMA(p, u, VSET(-3.761263788e-01f));
    /* 2/sqrt(pi) carried as float + remainder so it costs no rounding */
    p = VFMA(p, u, VSET(-5.863538344e-08f));
    vf ys = VFMA(a, VSET(1.128379226e+00f), VMUL(a, p));
    vf t = VSUB(a, VSET(2.4f));
    vf q = VSET(1.091278108e-07f);
    q = VFMA(q, t, VSET(-5.493549793e-07f));
    q = VFMA(q, t, VSET(1.473883572e-06f));
    q = VFMA(q, t, VSET(-4.986923159e-06f));
    q = VFMA(q, t, VSET(2.009748823e-05f));
    q = VFMA(q, t, VSET(-7.387921505e-05f));
    q = VFMA(q, t, VSET(2.573267848e-04f));
    q = VFMA(q, t, VSET(-8.731739945e-04f));
    q = VFMA(q, t, VSET(2.867534291e-03f));
    q = VFMA(q, t, VSET(-9.066264145e-03f));
    q = VFMA(q, t, VSET(2.749417722e-02f));
    q = VFMA(q, t, VSET(-7.958523184e-02f));
    q = VFMA(q, t, VSET(2.184987366e-01f));
    vf ulo = VFMA(a, a, VSUB(VSET(0.0f), u)); /* a*a - u: exact with FMA, else 0 */
    vf e = v_exp(VSUB(VSET(0.0f), u));
    e = VFNMA(e, ulo, e);
    vf yb = VFNMA(e, q, VSET(1.0f));
    vf y = VCOPYSIGN(VSEL(VLT(a, VSET(1.0f)), ys, yb), x);
    return VSEL(VISNAN(x), x, y);
}

static inline vf silu_one(vf x, vf alpha) { return VMUL(x, v_sigmoid(VMUL(alpha, x))); }

static inline vf gelu_erf_one(vf x) {
    vf h = VMUL(VSET(0.5f), x);
    return VFMA(h, v_erf(VMUL(x, VSET(0.70710678118654752f))), h);
}

/* onnxruntime's tanh GELU: u = x (C x x + B) with each product and the sum rounded
 * (B = sqrt(2/pi), C = 0.044715 B), then (x / 2) (tanh(u) + 1). */
static inline vf gelu_tanh_one(vf x) {
    vf u = VMUL(x, VADD(VMUL(VMUL(VSET(0.035677408136300125f), x), x),
                        VSET(0.7978845608028654f)));
    return VMUL(VMUL(VSET(0.5f), x), VADD(v_tanh(u), VSET(1.0f)));
}

/* Applies F (a macro of one vf) to n floats: whole vectors, then the tail through a
 * padded buffer. */
#define MAP(X, Y, N, F)                                                                  \
    do {                                                                                 \
        int64_t i_ = 0;                                                                  \
        for (; i_ + W <= (N); i_ += W) VSTORE((Y) + i_, F(VLOAD((X) + i_)));             \
        if (i_ < (N)) {                                                                  \
            float b_[W] = {0};                                                           \
            size_t m_ = (size_t)((N) - i_);                                              \
            memcpy(b_, (X) + i_, sizeof(float) * m_);                                    \
            VSTORE(b_, F(VLOAD(b_)));                                                    \
            memcpy((Y) + i_, b_, sizeof(float) * m_);                                    \
        }                                                                                \
    } while (0)

void vexp_f32(const float *x, float *y, int64_t n) { MAP(x, y, n, v_exp); }
void vsigmoid_f32(const float *x, float *y, int64_t n) { MAP(x, y, n, v_sigmoid); }
void vtanh_f32(const float *x, float *y, int64_t n) { MAP(x, y, n, v_tanh); }
void verf_f32(const float *x, float *y, int64_t n) { MAP(x, y, n, v_erf); }

void vgelu_erf_f32(const float *x, float *y, int64_t n) { MAP(x, y, n, gelu_erf_one); }
void vgelu_tanh_f32(const float *x, float *y, int64_t n) { MAP(x, y, n, gelu_tanh_one); }

void vsilu_mul_f32(const float *x, const float *u, float *y, int64_t n) {
    int64_t i = 0;
    for (; i + W <= n; i += W) {
        vf v = VLOAD(x + i);
        VSTORE(y + i, VMUL(VMUL(v, v_sigmoid(v)), VLOAD(u + i)));
    }
    if (i < n) {
        float bx[W] = {0}, bu[W] = {0};
        size_t m = (size_t)(n - i);
        memcpy(bx, x + i, sizeof(float) * m);
        memcpy(bu, u + i, sizeof(float) * m);
        vf v = VLOAD(bx);
        VSTORE(bx, VMUL(VMUL(v, v_sigmoid(v)), VLOAD(bu)));
        memcpy(y + i, bx, sizeof(float) * m);
    }
}

void vexp_shift_f32(const float *x, float *y, int64_t n, float shift) {
    vf s = VSET(shift);
#define F_SHIFT(v) v_exp(VSUB(v, s))
    MAP(x, y, n, F_SHIFT);
#undef F_SHIFT
}

/* The W lanes of v added in order (the same sum on every run and thread). */
static inline float lanes_sum(vf v) {
    float b[W];
    VSTORE(b, v);
    float s = 0.0f;
    for (int i = 0; i < W; i++) s += b[i];
    return s;
}

float vexp_shift_sum_f32(const float *x, float *y, int64_t n, float shift) {
    vf s = VSET(shift), acc = VSET(0.0f);
    int64_t i = 0;
    for (; i + W <= n; i += W) {
        vf e = v_exp(VSUB(VLOAD(x + i), s));
        VSTORE(y + i, e);
        acc = VADD(acc, e);
    }
#if W == 16
    /* the tail through masked lanes, summed with the rest as one vector */
    if (i < n) {
        __mmask16 m = (__mmask16)((1u << (n - i)) - 1);
        vf e = v_exp(VSUB(_mm512_maskz_loadu_ps(m, x + i), s));
        _mm512_mask_storeu_ps(y + i, m, e);
        acc = _mm512_mask_add_ps(acc, m, acc, e);
    }
    return _mm512_reduce_add_ps(acc);
#endif
    float total = lanes_sum(acc);
    if (i < n) { /* the tail through a padded vector; only its first m lanes count */
        float b[W] = {0};
        size_t m = (size_t)(n - i);
        memcpy(b, x + i, sizeof(float) * m);
        VSTORE(b, v_exp(VSUB(VLOAD(b), s)));
        memcpy(y + i, b, sizeof(float) * m);
        for (size_t k = 0; k < m; k++) total += b[k];
    }
    return total;
}

float vmax_f32(const float *x, int64_t n) {
    float m = x[0];
    int64_t i = 0;
    if (n >= W) {
        vf a = VLOAD(x);
        for (i = W; i + W <= n; i += W) a = VMAX(VLOAD(x + i), a);
#if W == 16
        if (i < n) { /* the tail's lanes, the others keep a's */
            a = VMAX(_mm512_mask_loadu_ps(a, (__mmask16)((1u << (n - i)) - 1), x + i), a);
            i = n;
        }
#endif
        float b[W];
        VSTORE(b, a);
        m = b[0];
        for (int k = 1; k < W; k++) m = b[k] > m ? b[k] : m;
    }
    for (; i < n; i++) m = x[i] > m ? x[i] : m;
    return m;
}

void vsilu_f32(const float *x, float *y, int64_t n, float alpha) {
    vf al = VSET(alpha);
#define F_SILU(v) silu_one(v, al)
    MAP(x, y, n, F_SILU);
#undef F_SILU
}
