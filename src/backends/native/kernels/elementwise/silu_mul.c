/* The SiLU-gated product y = (x * sigmoid(x)) * u: the one node the executor makes of a
 * decoder MLP's Sigmoid, Mul and Mul (backends/native/fuse.c), op SiluMul of the domain
 * KERNEL_FUSED_DOMAIN.
 *
 * It gives exactly the three nodes' bits: the sigmoid is the Sigmoid kernel's (vsigmoid_f32
 * on float32 and on float16/bfloat16 widened to float32; cpu_sigmoid_f64 on float64),
 * and the sigmoid and the first product are rounded to the dtype as the separate nodes
 * store them. (One exception: when x is NaN and the model wrote Mul(s, x) or Mul(u, g),
 * x86 keeps the first NaN operand's sign and payload, so the NaN may differ in sign.)
 * What it saves is memory traffic: x and u are read once and y written once,
 * where the three nodes write and read back two tensors of y's size (at prefill, a
 * tensor of prompt x intermediate size per layer: more than the caches hold). x and u
 * broadcast as Mul's inputs do. */
#include "backends/native/kernels/elementwise/elementwise.h"

#include "base/vmath.h"

enum { RUN = 256 };

/* Operand runs are contiguous or a broadcast value (stride 1 or 0): each case gets its
 * own loop, plain enough for the compiler to vectorize. */
#define SILU_MUL_LOOP(T, DT, S, C, LD, ST)                                                 \
    static void silu_mul_##S(char *const *p, const int64_t *s, int64_t n, const void *param) { \
        (void)param;                                                                       \
        const T *x = (const T *)p[1], *u = (const T *)p[2];                                \
        T *y = (T *)p[0];                                                                  \
        float xf[RUN], sf[RUN];                                                            \
        for (int64_t i0 = 0; i0 < n; i0 += RUN) {                                          \
            const int64_t m = n - i0 < RUN ? n - i0 : RUN;                                 \
            if (s[1])                                                                      \
                for (int64_t i = 0; i < m; i++) xf[i] = LD(x[i0 + i]);                     \
            else                                                                           \
                for (int64_t i = 0; i < m; i++) xf[i] = LD(x[0]);                          \
            vsigmoid_f32(xf, sf, m);                                                       \
            for (int64_t i = 0; i < m; i++) sf[i] = LD(ST(xf[i] * LD(ST(sf[i]))));         \
            T *yo = y + i0;                                                                \
            if (s[2]) {                                                                    \
                const T *ui = u + i0;                                                      \
                for (int64_t i = 0; i < m; i++) yo[i] = ST(sf[i] * LD(ui[i]));             \
            } else {                                                                       \
                const float uv = LD(u[0]);                                                 \
                for (int64_t i = 0; i < m; i++) yo[i] = ST(sf[i] * uv);                    \
            }                                                                              \
        }                                                                                  \
    }
SILU_MUL_LOOP(float, OG_FLOAT32, f32_runs, float, MK_ID, MK_ID)
/* float32 with both operands contiguous (a decoder's case): one vector pass. */
static void silu_mul_f32(char *const *p, const int64_t *s, int64_t n, const void *param) {
    if (s[1] && s[2])
        vsilu_mul_f32((const float *)p[1], (const float *)p[2], (float *)p[0], n);
    else
        silu_mul_f32_runs(p, s, n, param);
}
SILU_MUL_LOOP(uint16_t, OG_FLOAT16, f16, float, mk_h2f, mk_f2h)
SILU_MUL_LOOP(uint16_t, OG_BFLOAT16, bf16, float, bf16_to_f32, f32_to_bf16)

/* float64: in double throughout, the sigmoid as the Sigmoid kernel computes it. */
static void silu_mul_f64(char *const *p, const int64_t *s, int64_t n, const void *param) {
    (void)param;
    const double *x = (const double *)p[1], *u = (const double *)p[2];
    double *y = (double *)p[0];
    double xd[RUN], sd[RUN];
    for (int64_t i0 = 0; i0 < n; i0 += RUN) {
        const int64_t m = n - i0 < RUN ? n - i0 : RUN;
        for (int64_t i = 0; i < m; i++) xd[i] = x[(i0 + i) * s[1]];
        cpu_sigmoid_f64(xd, sd, m);
        for (int64_t i = 0; i < m; i++) y[i0 + i] = (xd[i] * sd[i]) * u[(i0 + i) * s[2]];
    }
}

static const ew_loop_fn silu_mul_loops[OG_DTYPE_COUNT] = {
    [OG_FLOAT32] = silu_mul_f32,
    [OG_FLOAT16] = silu_mul_f16,
    [OG_BFLOAT16] = silu_mul_bf16,
    [OG_FLOAT64] = silu_mul_f64,
};

og_status *cpu_silu_mul(kernel_ctx *ctx) {
    return cpu_ew_binary(ctx, silu_mul_loops, OG_UNDEFINED, EW_GRAIN_HEAVY);
}
