/* Cast and CastLike between every numeric dtype, bool, the float8 formats, float4e2m1
 * and packed int4/uint4. Blocks of elements are staged through double (when either
 * side is a float type) or int64 (integer/bool to integer/bool, so 64-bit values stay
 * exact); a few hot pairs have direct loops. */
#include "backends/native/kernels/cast/cast.h"

#include <math.h>
#include <string.h>

enum { BLOCK = 512, BLOCKS_PER_TASK = 32 };

/* ---- minifloats (float8 variants, float4e2m1) ------------------------------------ */

typedef struct minifloat {
    int bits, mbits, bias;
    double maxv;
    uint8_t max_code; /* largest finite magnitude */
    int kind;         /* MF_FN (nan = all ones), MF_UZ (nan = 0x80, no -0), MF_IEEE, MF_NONE */
} minifloat;
enum { MF_FN, MF_UZ, MF_IEEE, MF_NONE };

static const minifloat *minifloat_of(og_dtype dt) {
    static const minifloat e4m3fn = {8, 3, 7, 448, 0x7e, MF_FN},
                           e4m3fnuz = {8, 3, 8, 240, 0x7f, MF_UZ},
                           e5m2 = {8, 2, 15, 57344, 0x7b, MF_IEEE},
                           e5m2fnuz = {8, 2, 16, 57344, 0x7f, MF_UZ},
                           e2m1 = {4, 1, 1, 6, 0x7, MF_NONE};
    switch (dt) {
    case OG_FLOAT8E4M3FN: return &e4m3fn;
    case OG_FLOAT8E4M3FNUZ: return &e4m3fnuz;
    case OG_FLOAT8E5M2: return &e5m2;
    case OG_FLOAT8E5M2FNUZ: return &e5m2fnuz;
    case OG_FLOAT4E2M1: return &e2m1;
    default: return NULL;
    }
}

static double mf_decode(const minifloat *f, unsigned b) {
    unsigned sign = b >> (f->bits - 1) & 1, mmask = (1u << f->mbits) - 1;
    unsigned e = (b >> f->mbits) & ((1u << (f->bits - 1 - f->mbits)) - 1), m = b & mmask;
    if (f->kind == MF_UZ && b == 0x80) return NAN;
    if (f->kind == MF_FN && (b & 0x7f) == 0x7f) return NAN;
    if (f->kind == MF_IEEE && e == 31) return m ? NAN : sign ? -INFINITY : INFINITY;
    double v = e == 0 ? ldexp(m, 1 - f->bias - f->mbits)
                      : ldexp(m + (1u << f->mbits), (int)e - f->bias - f->mbits);
    return sign ? -v : v;
}

/* Round to nearest even; beyond the largest finite value saturate, or (saturate off)
 * give infinity or NaN as the format has them, as the Cast spec's tables say. */
static unsigned mf_encode(const minifloat *f, double x, int saturate) {
    unsigned sign = signbit(x) ? 1u << (f->bits - 1) : 0;
    /* NaN codes as ml_dtypes (the reference) writes them; float4 has no NaN. */
    unsigned nan = f->kind == MF_UZ     ? 0x80
                   : f->kind == MF_NONE ? (sign ? 0 : 8)
                   : f->kind == MF_IEEE ? 0x7e | sign
                                        : 0x7f | sign;
    if (isnan(x)) return nan;
    double a = fabs(x);
    int emin = 1 - f->bias, e;
    if (!isinf(a)) {
        frexp(a, &e);
        e = e - 1 < emin ? emin : e - 1;
        a = nearbyint(ldexp(a, f->mbits - e));
        a = ldexp(a, e - f->mbits);
    }
    if (a > f->maxv) {
        if (saturate || f->kind == MF_NONE) return sign | f->max_code;
        return f->kind == MF_IEEE ? (sign | 0x7c) : nan;
    }
    if (a == 0) return f->kind == MF_UZ ? 0 : sign;
    frexp(a, &e);
    e -= 1;
    if (e < emin) return sign | (unsigned)ldexp(a, f->mbits - emin); /* subnormal */
    unsigned m = (unsigned)ldexp(a, f->mbits - e) - (1u << f->mbits);
    return sign | (unsigned)(e + f->bias) << f->mbits | m;
}

/* ---- scalar conversions without UB ------------------------------------------------- */

/* float -> integer: truncation; NaN gives 0 and out-of-range saturates at int64. */
static inline int64_t f_to_i64(double v) {
    if (v != v) return 0;
    if (v >= 9223372036854775808.0) return INT64_MAX;
    if (v <= -9223372036854775808.0) return INT64_MIN;
    return (int64_t)v;
}
static inline uint64_t f_to_u64(double v) {
    if (v >= 18446744073709551616.0) return UINT64_MAX;
    if (v >= 9223372036854775808.0) return (uint64_t)v;
    return (uint64_t)f_to_i64(v);
}
/* double -> float rounding to odd, so that a second rounding (to float16/bfloat16)
 * gives the correctly rounded result. */
static inline float narrow_odd(double v) {
    float f = (float)v;
    if ((double)f != v && isfinite(f)) {
        if (fabs((double)f) > fabs(v)) f = nextafterf(f, 0.0f);
        f = f32_from_bits(f32_to_bits(f) | 1);
    }
    return f;
}

static inline int nibble(const uint8_t *d, int64_t i) { return d[i >> 1] >> ((i & 1) * 4) & 15; }
static inline void set_nibble(uint8_t *d, int64_t i, unsigned v) {
    if (i & 1) d[i >> 1] = (uint8_t)(d[i >> 1] | (v & 15) << 4);
    else d[i >> 1] = (uint8_t)(v & 15); /* the even element comes first: clears the byte */
}

/* ---- block loads and stores --------------------------------------------------------- */

#define LOAD_CASE(T, DT, S, C, LD, ST)                                                   \
    case DT:                                                                             \
        for (int64_t k = 0; k < m; k++) buf[k] = (B)LD(((const T *)src)[first + k]);     \
        break;

static void load_f64(og_dtype dt, const void *src, int64_t first, int64_t m, double *buf) {
    typedef double B;
    const minifloat *f = minifloat_of(dt);
    switch (dt) {
        MK_NUM_TYPES(LOAD_CASE)
    case OG_BOOL:
        for (int64_t k = 0; k < m; k++) buf[k] = ((const uint8_t *)src)[first + k] != 0;
        break;
    case OG_INT4:
        for (int64_t k = 0; k < m; k++) buf[k] = (nibble(src, first + k) ^ 8) - 8;
        break;
    case OG_UINT4:
        for (int64_t k = 0; k < m; k++) buf[k] = nibble(src, first + k);
        break;
    case OG_FLOAT4E2M1:
        for (int64_t k = 0; k < m; k++) buf[k] = mf_decode(f, (unsigned)nibble(src, first + k));
        break;
    default: /* float8 */
        for (int64_t k = 0; k < m; k++) buf[k] = mf_decode(f, ((const uint8_t *)src)[first + k]);
    }
}

static void load_i64(og_dtype dt, const void *src, int64_t first, int64_t m, int64_t *buf) {
    typedef int64_t B;
    switch (dt) {
        MK_SINT_TYPES(LOAD_CASE)
        MK_UINT_TYPES(LOAD_CASE)
    default: { /* bool, int4, uint4: small values, exact in double */
        double tmp[BLOCK];
        load_f64(dt, src, first, m, tmp);
        for (int64_t k = 0; k < m; k++) buf[k] = (int64_t)tmp[k];
    }
    }
}

#define STORE_LOOP(T, EXPR)                                                              \
    for (int64_t k = 0; k < m; k++) ((T *)dst)[first + k] = (T)(EXPR);                   \
    break;
#define STORE_F_SINT(T, DT, S, C, LD, ST) case DT: STORE_LOOP(T, f_to_i64(buf[k]))
#define STORE_F_UINT(T, DT, S, C, LD, ST) case DT: STORE_LOOP(T, f_to_u64(buf[k]))
#define STORE_I(T, DT, S, C, LD, ST) case DT: STORE_LOOP(T, buf[k])

static void store_f64(og_dtype dt, void *dst, int64_t first, int64_t m, const double *buf,
                      int saturate) {
    const minifloat *f = minifloat_of(dt);
    switch (dt) {
    case OG_FLOAT32: STORE_LOOP(float, buf[k])
    case OG_FLOAT64: STORE_LOOP(double, buf[k])
    case OG_FLOAT16: STORE_LOOP(uint16_t, f32_to_f16(narrow_odd(buf[k])))
    case OG_BFLOAT16: STORE_LOOP(uint16_t, f32_to_bf16(narrow_odd(buf[k])))
    case OG_BOOL: STORE_LOOP(uint8_t, buf[k] != 0)
        MK_SINT_TYPES(STORE_F_SINT)
        MK_UINT_TYPES(STORE_F_UINT)
    /* The reference gives 0 for values outside the 4-bit ranges. */
    case OG_INT4:
        for (int64_t k = 0; k < m; k++) {
            int64_t v = f_to_i64(buf[k]);
            set_nibble(dst, first + k, v < -8 || v > 7 ? 0 : (unsigned)v);
        }
        break;
    case OG_UINT4:
        for (int64_t k = 0; k < m; k++) {
            int64_t v = f_to_i64(buf[k]);
            set_nibble(dst, first + k, v < 0 || v > 15 ? 0 : (unsigned)v);
        }
        break;
    case OG_FLOAT4E2M1:
        for (int64_t k = 0; k < m; k++) set_nibble(dst, first + k, mf_encode(f, buf[k], 1));
        break;
    default: /* float8 */
        STORE_LOOP(uint8_t, mf_encode(f, buf[k], saturate))
    }
}

/* Integer to integer keeps the low bits (two's complement), as the spec says. */
static void store_i64(og_dtype dt, void *dst, int64_t first, int64_t m, const int64_t *buf) {
    switch (dt) {
        MK_SINT_TYPES(STORE_I)
        MK_UINT_TYPES(STORE_I)
    case OG_BOOL: STORE_LOOP(uint8_t, buf[k] != 0)
    default: /* int4 / uint4 */
        for (int64_t k = 0; k < m; k++) set_nibble(dst, first + k, (unsigned)(uint64_t)buf[k]);
    }
}

static bool castable(og_dtype dt) {
    return dt != OG_STRING && dt != OG_COMPLEX64 && dt != OG_COMPLEX128 && dt > OG_UNDEFINED &&
           dt < OG_DTYPE_COUNT;
}
static bool int_like(og_dtype dt) {
    return !mk_is_float(dt) && !minifloat_of(dt);
}

double cpu_math_load_f64(og_dtype dt, const void *data, int64_t i) {
    double v = 0;
    if (castable(dt)) load_f64(dt, data, i, 1, &v);
    return v;
}

void cpu_math_store_f64(og_dtype dt, void *data, int64_t i, double v) {
    if (castable(dt)) store_f64(dt, data, i, 1, &v, 1);
}

/* ---- the kernel --------------------------------------------------------------------- */

typedef struct cast_job {
    og_dtype sd, dd;
    const void *src;
    void *dst;
    int64_t n;
    int saturate;
} cast_job;

#define DIRECT(SD, DD, TS, TD, EXPR)                                                     \
    if (j->sd == SD && j->dd == DD) {                                                    \
        const TS *s = (const TS *)j->src + first;                                        \
        TD *d = (TD *)j->dst + first;                                                    \
        for (int64_t k = 0; k < m; k++) d[k] = EXPR(s[k]);                               \
        return;                                                                          \
    }

static void cast_block(const cast_job *j, int64_t first, int64_t m) {
    DIRECT(OG_FLOAT32, OG_FLOAT16, float, uint16_t, mk_f2h)
    DIRECT(OG_FLOAT16, OG_FLOAT32, uint16_t, float, mk_h2f)
    DIRECT(OG_FLOAT32, OG_BFLOAT16, float, uint16_t, f32_to_bf16)
    DIRECT(OG_BFLOAT16, OG_FLOAT32, uint16_t, float, bf16_to_f32)
    DIRECT(OG_INT64, OG_INT32, int64_t, int32_t, (int32_t))
    DIRECT(OG_INT32, OG_INT64, int32_t, int64_t, (int64_t))
    if (int_like(j->sd) && int_like(j->dd)) {
        int64_t buf[BLOCK];
        load_i64(j->sd, j->src, first, m, buf);
        store_i64(j->dd, j->dst, first, m, buf);
    } else {
        double buf[BLOCK];
        load_f64(j->sd, j->src, first, m, buf);
        store_f64(j->dd, j->dst, first, m, buf, j->saturate);
    }
}

static void cast_task(void *arg, int64_t begin, int64_t end) {
    const cast_job *j = arg;
    for (int64_t b = begin; b < end; b++) {
        int64_t first = b * BLOCK;
        cast_block(j, first, j->n - first < BLOCK ? j->n - first : BLOCK);
    }
}

static og_status *cast_to(kernel_ctx *ctx, og_dtype to) {
    const tensor *x = ctx->inputs[0];
    if (x->dtype == OG_STRING || to == OG_STRING) return cpu_cast_string(ctx, x, to);
    if (!castable(x->dtype)) return kernel_unsupported_dtype(ctx, 0, x->dtype);
    if (!castable(to))
        return kernel_errorf(ctx, OG_ERR_UNSUPPORTED, "casting to dtype %s is not implemented",
                             og_dtype_name(to));
    tensor *y;
    OG_TRY(kernel_output(ctx, 0, to, x->rank, x->dims, &y));
    if (x->dtype == to) {
        if (y->nbytes && y->data != x->data) memcpy(y->data, x->data, y->nbytes);
        return NULL;
    }
    cast_job j = {x->dtype, to, x->data, y->data, tensor_count(x),
                  (int)graph_attr_int(ctx->node, "saturate", 1)};
    threadpool_parallel_for(ctx->pool, (j.n + BLOCK - 1) / BLOCK, BLOCKS_PER_TASK, cast_task, &j);
    return NULL;
}

og_status *cpu_cast(kernel_ctx *ctx) {
    OG_TRY(kernel_require_inputs(ctx, 1));
    const graph_attr *to = graph_attr_find(ctx->node, "to");
    if (!to) return kernel_error(ctx, OG_ERR_INVALID_MODEL, "attribute 'to' is missing");
    if (to->i <= OG_UNDEFINED || to->i >= OG_DTYPE_COUNT)
        return kernel_errorf(ctx, OG_ERR_UNSUPPORTED, "casting to dtype %lld is not implemented",
                             (long long)to->i);
    return cast_to(ctx, (og_dtype)to->i);
}

og_status *cpu_castlike(kernel_ctx *ctx) {
    OG_TRY(kernel_require_inputs(ctx, 2));
    return cast_to(ctx, ctx->inputs[1]->dtype);
}
