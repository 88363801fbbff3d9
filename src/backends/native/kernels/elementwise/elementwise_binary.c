/* The elementwise driver (broadcasting, fast paths, threads) and the arithmetic binary
 * ops Add Sub Mul Div Pow Mod. */
#include "backends/native/kernels/broadcast.h"
#include "backends/native/kernels/cast/cast.h"
#include "backends/native/kernels/elementwise/elementwise.h"
#include "backends/native/kernels/kernel_util.h"

#include <string.h>
#include <tgmath.h>

/* ---- driver ---------------------------------------------------------------------- */

og_status *cpu_ew_shape(const kernel_ctx *ctx, int n, const tensor *const *in, int64_t *dims,
                        int *rank) {
    *rank = in[0]->rank;
    memcpy(dims, in[0]->dims, sizeof(int64_t) * (size_t)in[0]->rank);
    for (int k = 1; k < n; k++) {
        int64_t prev[OG_MAX_RANK];
        memcpy(prev, dims, sizeof prev);
        og_status *st = broadcast_shape(prev, *rank, in[k]->dims, in[k]->rank, dims, rank);
        if (st) return og_status_wrap(st, "%s: input %d", ctx->where, k);
    }
    return NULL;
}

typedef struct ew_job {
    ew_loop_fn fn;
    const void *param;
    int n;
    char *base[EW_MAX_INPUTS + 1];
    size_t esz[EW_MAX_INPUTS + 1];
    int64_t s[EW_MAX_INPUTS + 1];
    bcast_iter it;
} ew_job;

static void ew_flat(void *arg, int64_t begin, int64_t end) {
    const ew_job *j = arg;
    char *p[EW_MAX_INPUTS + 1];
    for (int k = 0; k <= j->n; k++) p[k] = j->base[k] + (j->s[k] ? (size_t)begin * j->esz[k] : 0);
    j->fn(p, j->s, end - begin, j->param);
}

static void ew_rows(void *arg, int64_t begin, int64_t end) {
    const ew_job *j = arg;
    char *p[EW_MAX_INPUTS + 1];
    int64_t off[BCAST_MAX_OPERANDS];
    for (int64_t row = begin; row < end; row++) {
        bcast_iter_row(&j->it, row, off);
        p[0] = j->base[0] + (size_t)(row * j->it.inner) * j->esz[0];
        for (int k = 1; k <= j->n; k++) p[k] = j->base[k] + (size_t)off[k - 1] * j->esz[k];
        j->fn(p, j->s, j->it.inner, j->param);
    }
}

og_status *cpu_ew_run(kernel_ctx *ctx, tensor *out, int n, const tensor *const *in,
                      ew_loop_fn fn, const void *param, int64_t grain) {
    int64_t total = tensor_count(out);
    if (total <= 0) return NULL;
    ew_job j;
    memset(&j, 0, sizeof j);
    j.fn = fn;
    j.param = param;
    j.n = n;
    j.base[0] = out->data;
    j.esz[0] = dtype_size(out->dtype);
    j.s[0] = 1;
    bool flat = true;
    for (int k = 0; k < n; k++) {
        j.base[k + 1] = in[k]->data;
        j.esz[k + 1] = dtype_size(in[k]->dtype);
        int64_t c = tensor_count(in[k]);
        j.s[k + 1] = c == 1 ? 0 : 1;
        if (c != 1 && c != total) flat = false;
    }
    if (flat) {
        threadpool_parallel_for(ctx->pool, total, grain, ew_flat, &j);
        return NULL;
    }
    const int64_t *dims[EW_MAX_INPUTS];
    int ranks[EW_MAX_INPUTS];
    for (int k = 0; k < n; k++) {
        dims[k] = in[k]->dims;
        ranks[k] = in[k]->rank;
    }
    bcast_iter_init(&j.it, n, dims, ranks, out->dims, out->rank);
    for (int k = 0; k < n; k++) {
        int64_t st = j.it.inner_stride[k];
        if (st != 0 && st != 1)
            return kernel_errorf(ctx, OG_ERR_RUNTIME, "internal: inner stride %lld",
                                 (long long)st);
        j.s[k + 1] = st;
    }
    int64_t row_grain = grain / (j.it.inner > 0 ? j.it.inner : 1);
    threadpool_parallel_for(ctx->pool, j.it.rows, row_grain > 0 ? row_grain : 1, ew_rows, &j);
    return NULL;
}

og_status *cpu_ew_op(kernel_ctx *ctx, int n, const tensor *const *in, og_dtype out_dtype,
                     ew_loop_fn fn, const void *param, int64_t grain) {
    int64_t dims[OG_MAX_RANK];
    int rank;
    tensor *out;
    OG_TRY(cpu_ew_shape(ctx, n, in, dims, &rank));
    OG_TRY(kernel_output(ctx, 0, out_dtype, rank, dims, &out));
    return cpu_ew_run(ctx, out, n, in, fn, param, grain);
}

/* ---- arithmetic loops -------------------------------------------------------------- */

/* Integer semantics without UB: wrap on overflow, x/0 and x%0 are 0, MIN/-1 wraps. */
static inline int64_t s_div(int64_t a, int64_t b) {
    return b == 0 ? 0 : b == -1 ? (int64_t)(0 - (uint64_t)a) : a / b;
}
static inline int64_t s_fmod(int64_t a, int64_t b) { return b == 0 || b == -1 ? 0 : a % b; }
static inline int64_t s_mod(int64_t a, int64_t b) {
    int64_t r = s_fmod(a, b);
    return r != 0 && ((r < 0) != (b < 0)) ? r + b : r;
}
static inline uint64_t u_div(uint64_t a, uint64_t b) { return b ? a / b : 0; }
static inline uint64_t u_mod(uint64_t a, uint64_t b) { return b ? a % b : 0; }
static inline uint64_t u_pow(uint64_t a, uint64_t e) {
    uint64_t r = 1;
    for (; e; e >>= 1, a *= a)
        if (e & 1) r *= a;
    return r;
}
/* cpu_pow refuses negative integer exponents before this runs; they give 0 here
 * rather than undefined behaviour. */
static inline int64_t s_pow(int64_t a, int64_t e) {
    return e < 0 ? 0 : (int64_t)u_pow((uint64_t)a, (uint64_t)e);
}
/* numpy's mod for floats: the sign of the divisor, zero carries it too. */
static inline double f_mod(double a, double b) {
    double r = fmod(a, b);
    if (r != 0) return (r < 0) != (b < 0) ? r + b : r;
    return copysign(0.0, b);
}
#define F_MAX(a, b) (((a) > (b) || (a) != (a)) ? (a) : (b))
#define F_MIN(a, b) (((a) < (b) || (a) != (a)) ? (a) : (b))
#define I_MAX(a, b) ((a) > (b) ? (a) : (b))
#define I_MIN(a, b) ((a) < (b) ? (a) : (b))
#define W(op) (uint64_t) a op (uint64_t) b

#define FLOAT_LOOPS(T, DT, S, C, LD, ST)                                                 \
    MK_BIN_LOOP(add_##S, T, C, LD, T, ST, a + b)                                         \
    MK_BIN_LOOP(sub_##S, T, C, LD, T, ST, a - b)                                         \
    MK_BIN_LOOP(mul_##S, T, C, LD, T, ST, a * b)                                         \
    MK_BIN_LOOP(div_##S, T, C, LD, T, ST, a / b)                                         \
    MK_BIN_LOOP(pow_##S, T, C, LD, T, ST, pow(a, b))                                     \
    MK_BIN_LOOP(mod_##S, T, C, LD, T, ST, (C)f_mod(a, b))                                \
    MK_BIN_LOOP(fmod_##S, T, C, LD, T, ST, fmod(a, b))                                   \
    MK_BIN_LOOP(max_##S, T, C, LD, T, ST, F_MAX(a, b))                                   \
    MK_BIN_LOOP(min_##S, T, C, LD, T, ST, F_MIN(a, b))
#define SINT_LOOPS(T, DT, S, C, LD, ST)                                                  \
    MK_BIN_LOOP(add_##S, T, C, LD, T, (T), W(+))                                         \
    MK_BIN_LOOP(sub_##S, T, C, LD, T, (T), W(-))                                         \
    MK_BIN_LOOP(mul_##S, T, C, LD, T, (T), W(*))                                         \
    MK_BIN_LOOP(div_##S, T, C, LD, T, (T), s_div(a, b))                                  \
    MK_BIN_LOOP(pow_##S, T, C, LD, T, (T), s_pow(a, b))                                  \
    MK_BIN_LOOP(mod_##S, T, C, LD, T, (T), s_mod(a, b))                                  \
    MK_BIN_LOOP(fmod_##S, T, C, LD, T, (T), s_fmod(a, b))                                \
    MK_BIN_LOOP(max_##S, T, C, LD, T, ST, I_MAX(a, b))                                   \
    MK_BIN_LOOP(min_##S, T, C, LD, T, ST, I_MIN(a, b))
#define UINT_LOOPS(T, DT, S, C, LD, ST)                                                  \
    MK_BIN_LOOP(add_##S, T, C, LD, T, (T), W(+))                                         \
    MK_BIN_LOOP(sub_##S, T, C, LD, T, (T), W(-))                                         \
    MK_BIN_LOOP(mul_##S, T, C, LD, T, (T), W(*))                                         \
    MK_BIN_LOOP(div_##S, T, C, LD, T, (T), u_div(a, b))                                  \
    MK_BIN_LOOP(pow_##S, T, C, LD, T, (T), u_pow(a, b))                                  \
    MK_BIN_LOOP(mod_##S, T, C, LD, T, (T), u_mod(a, b))                                  \
    MK_BIN_LOOP(max_##S, T, C, LD, T, ST, I_MAX(a, b))                                   \
    MK_BIN_LOOP(min_##S, T, C, LD, T, ST, I_MIN(a, b))
MK_FLOAT_TYPES(FLOAT_LOOPS)
MK_SINT_TYPES(SINT_LOOPS)
MK_UINT_TYPES(UINT_LOOPS)

#define COMMON_ENTRIES(T, DT, S, C, LD, ST)                                              \
    [BIN_ADD][DT] = add_##S, [BIN_SUB][DT] = sub_##S, [BIN_MUL][DT] = mul_##S,           \
    [BIN_DIV][DT] = div_##S, [BIN_POW][DT] = pow_##S, [BIN_MOD][DT] = mod_##S,           \
    [BIN_MAX][DT] = max_##S, [BIN_MIN][DT] = min_##S,
#define FMOD_ENTRY(T, DT, S, C, LD, ST) [BIN_FMOD][DT] = fmod_##S,
/* Unsigned values have one remainder: fmod and mod agree. */
#define UFMOD_ENTRY(T, DT, S, C, LD, ST) [BIN_FMOD][DT] = mod_##S,

static const ew_loop_fn binary_loops[BIN_COUNT][OG_DTYPE_COUNT] = {
    MK_NUM_TYPES(COMMON_ENTRIES) MK_FLOAT_TYPES(FMOD_ENTRY) MK_SINT_TYPES(FMOD_ENTRY)
    MK_UINT_TYPES(UFMOD_ENTRY)};

ew_loop_fn cpu_binary_loop(int op, og_dtype dtype) {
    if (op < 0 || op >= BIN_COUNT || (int)dtype < 0 || dtype >= OG_DTYPE_COUNT) return NULL;
    return binary_loops[op][dtype];
}

/* ---- kernels ----------------------------------------------------------------------- */

og_status *cpu_ew_binary(kernel_ctx *ctx, const ew_loop_fn *loops, og_dtype out_dtype,
                         int64_t grain) {
    OG_TRY(kernel_require_inputs(ctx, 2));
    const tensor *in[2] = {ctx->inputs[0], ctx->inputs[1]};
    og_dtype dt = in[0]->dtype;
    if (in[1]->dtype != dt)
        return kernel_errorf(ctx, OG_ERR_INVALID_MODEL, "input 1 has dtype %s, input 0 %s",
                             og_dtype_name(in[1]->dtype), og_dtype_name(dt));
    ew_loop_fn fn = (int)dt >= 0 && dt < OG_DTYPE_COUNT ? loops[dt] : NULL;
    if (!fn) return kernel_unsupported_dtype(ctx, 0, dt);
    return cpu_ew_op(ctx, 2, in, out_dtype ? out_dtype : dt, fn, NULL, grain);
}

static og_status *binary(kernel_ctx *ctx, int op) {
    return cpu_ew_binary(ctx, binary_loops[op], OG_UNDEFINED,
                         op == BIN_POW ? EW_GRAIN_HEAVY : EW_GRAIN);
}

og_status *cpu_add(kernel_ctx *ctx) { return binary(ctx, BIN_ADD); }
og_status *cpu_sub(kernel_ctx *ctx) { return binary(ctx, BIN_SUB); }
og_status *cpu_mul(kernel_ctx *ctx) { return binary(ctx, BIN_MUL); }
og_status *cpu_div(kernel_ctx *ctx) { return binary(ctx, BIN_DIV); }

og_status *cpu_mod(kernel_ctx *ctx) {
    int64_t f = graph_attr_int(ctx->node, "fmod", 0);
    if (f != 0 && f != 1)
        return kernel_errorf(ctx, OG_ERR_INVALID_MODEL, "fmod is %lld, expected 0 or 1",
                             (long long)f);
    return binary(ctx, f ? BIN_FMOD : BIN_MOD);
}

/* Pow follows onnx's reference, np.power(a, b).astype(a.dtype):
 *  - a float base is raised in double when the exponent has another dtype (numpy
 *    promotes the pairs that matter at least that far) and rounded to the base type;
 *  - an integer base with an integer exponent is an integer power by squaring in 64-bit
 *    unsigned arithmetic, wrapped to the base type, as numpy's integer power wraps
 *    (u_pow); a negative exponent is an error, as numpy refuses integers to negative
 *    integer powers;
 *  - an integer base with a float exponent, or a signed base with a uint64 exponent
 *    (numpy promotes that pair to float64), is raised in the float type numpy promotes
 *    the pair to (pow_compute_type) and converted back as numpy's astype does
 *    (cpu_f2int_numpy): int8 ** float32 is a float32 power, so 7 ** 11.0 is 1977326720,
 *    not 1977326743, and its int8 is -128. */
enum { POW_FLOAT, POW_INT, POW_INT_VIA_FLOAT };

typedef struct pow_mixed {
    og_dtype da, db, ct; /* base, exponent, the float type an integer base is raised in */
    int mode;
} pow_mixed;

/* numpy's result type of an integer base (8 or 16 bits: float16/bfloat16/float32; wider:
 * float64) with a float exponent e; float64 for a uint64 exponent. A float16 or bfloat16
 * power is computed in float32 and rounded, as numpy's and ml_dtypes' loops do. */
static og_dtype pow_compute_type(og_dtype base, og_dtype e) {
    if (!mk_is_float(e) || e == OG_FLOAT64 || dtype_size(base) > 2) return OG_FLOAT64;
    return dtype_size(base) == 1 && e != OG_FLOAT32 ? e : OG_FLOAT32;
}

static double pow_in(og_dtype ct, double a, double b) {
    if (ct == OG_FLOAT64) return pow(a, b);
    float f = powf((float)a, (float)b);
    if (ct == OG_FLOAT16) f = f16_to_f32(f32_to_f16(f));
    if (ct == OG_BFLOAT16) f = bf16_to_f32(f32_to_bf16(f));
    return f;
}

static bool pow_signed(og_dtype dt) {
    return dt == OG_INT8 || dt == OG_INT16 || dt == OG_INT32 || dt == OG_INT64;
}

/* Element i of an integer run as its bits widened to 64 (sign-extended when signed). */
static uint64_t pow_ld_int(og_dtype dt, const char *p, int64_t i) {
    switch (dt) {
    case OG_INT8: return (uint64_t)((const int8_t *)p)[i];
    case OG_INT16: return (uint64_t)((const int16_t *)p)[i];
    case OG_INT32: return (uint64_t)((const int32_t *)p)[i];
    case OG_INT64: return (uint64_t)((const int64_t *)p)[i];
    case OG_UINT8: return ((const uint8_t *)p)[i];
    case OG_UINT16: return ((const uint16_t *)p)[i];
    case OG_UINT32: return ((const uint32_t *)p)[i];
    default: return ((const uint64_t *)p)[i];
    }
}

static void pow_mixed_loop(char *const *p, const int64_t *s, int64_t n, const void *param) {
    const pow_mixed *m = param;
    for (int64_t i = 0; i < n; i++) {
        if (m->mode == POW_INT) {
            uint64_t a = pow_ld_int(m->da, p[1], i * s[1]), e = pow_ld_int(m->db, p[2], i * s[2]);
            cpu_store_int_bits(m->da, p[0], i, u_pow(a, e));
            continue;
        }
        double a = cpu_math_load_f64(m->da, p[1], i * s[1]),
               b = cpu_math_load_f64(m->db, p[2], i * s[2]);
        if (m->mode == POW_FLOAT) cpu_math_store_f64(m->da, p[0], i, pow(a, b));
        else cpu_store_int_bits(m->da, p[0], i, cpu_f2int_numpy(pow_in(m->ct, a, b), m->da));
    }
}

/* The first negative element of a signed integer exponent, as an error. */
static og_status *pow_check_exponent(kernel_ctx *ctx, const tensor *e) {
    if (!pow_signed(e->dtype)) return NULL;
    int64_t n = tensor_count(e);
    for (int64_t i = 0; i < n; i++) {
        int64_t v = tensor_get_i64(e, i);
        if (v < 0)
            return kernel_errorf(ctx, OG_ERR_INVALID_ARGUMENT, "input 1 (the exponent) element "
                                 "%lld is %lld: an integer base has no integer power below 0 "
                                 "(numpy, onnx's reference, refuses it too)", (long long)i,
                                 (long long)v);
    }
    return NULL;
}

og_status *cpu_pow(kernel_ctx *ctx) {
    OG_TRY(kernel_require_inputs(ctx, 2));
    const tensor *in[2] = {ctx->inputs[0], ctx->inputs[1]};
    for (int k = 0; k < 2; k++)
        if (!cpu_binary_loop(BIN_POW, in[k]->dtype))
            return kernel_unsupported_dtype(ctx, k, in[k]->dtype);
    pow_mixed m = {in[0]->dtype, in[1]->dtype, pow_compute_type(in[0]->dtype, in[1]->dtype),
                   POW_FLOAT};
    if (!mk_is_float(m.da)) {
        bool int_exp = !mk_is_float(m.db) && !(pow_signed(m.da) && m.db == OG_UINT64);
        m.mode = int_exp ? POW_INT : POW_INT_VIA_FLOAT;
        if (int_exp) OG_TRY(pow_check_exponent(ctx, in[1]));
    }
    if (m.da == m.db) return binary(ctx, BIN_POW);
    return cpu_ew_op(ctx, 2, in, m.da, pow_mixed_loop, &m, EW_GRAIN_HEAVY);
}
