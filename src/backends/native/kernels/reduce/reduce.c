/* Reductions (ReduceSum ... ReduceLogSumExp), ArgMax/ArgMin, CumSum and TopK.
 *
 * A reduction is planned as: every output element reads the same set of input offsets
 * (the reduced sub-box: a table of run starts, precomputed once, each run a strided
 * walk of the innermost reduced dimensions) from its own base offset (from the kept
 * dimensions). That is one code path for any set of axes, parallel over outputs, and
 * one contiguous run when the reduced axes are the trailing ones. Floats accumulate in
 * double, but for SumSquare and L2, whose squares of float32/float16/bfloat16 elements
 * are float32 arithmetic (see RED_FN); integers as numpy does (see RED_INT_FN). */
#include "backends/native/kernels/reduce/reduce.h"

#include "base/half.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

enum { R_SUM, R_MEAN, R_MAX, R_MIN, R_PROD, R_L1, R_L2, R_SUMSQ, R_LOGSUM, R_LSE };

typedef struct red_job {
    const void *x;
    void *y;
    int op, nk;
    int64_t kdims[OG_MAX_RANK], kstr[OG_MAX_RANK];
    /* The reduced sub-box of one output: ntab table offsets, each the start of a run of
     * `inner` elements `istr` apart (the innermost reduced dimension, merged with the
     * ones contiguous with it); nred = ntab * inner. */
    const int64_t *roff;
    int64_t ntab, inner, istr, nred;
} red_job;

#define ID(v) (v)
#define F16IN(v) f16_to_f32(v)
#define BF16IN(v) bf16_to_f32(v)
#define F16OUT(v) f32_to_f16((float)(v))
#define BF16OUT(v) f32_to_bf16((float)(v))
#define NOT_NAN(v) 0
#define IS_NAN(v) isnan(v)
#define S_NEG(v) ((v) < 0)
#define U_NEG(v) 0

/* Runs the statement(s) for every reduced element E_ (of type T) of the output whose
 * sub-box starts at p, in row-major order. */
#define RED_EACH(T, ...)                                                                 \
    for (int64_t t_ = 0; t_ < j->ntab; t_++) {                                           \
        const T *q_ = p + j->roff[t_];                                                   \
        for (int64_t i_ = 0; i_ < j->inner; i_++) {                                      \
            const T E_ = q_[i_ * j->istr];                                               \
            __VA_ARGS__                                                                  \
        }                                                                                \
    }

/* One reduction loop per float type, accumulating in double; SumSquare and L2 square
 * and sum in SQ, float for the float32-computed types: a float32 square overflows to inf
 * (ReduceL2 of 1e20 is inf) and rounds into the subnormals or to 0 as numpy's and
 * onnxruntime's float32 arithmetic does, where a double one kept digits that they do
 * not have (ReduceSumSquare of 1e-20 and 3e-22 was 1.00090545e-40, their 1.00089144e-40;
 * ReduceL2 of 1e-39 was 1e-39, theirs 0). */
#define RED_FN(NAME, T, IN, OUT, SQ)                                                     \
    static void NAME(void *arg, int64_t b, int64_t e) {                                  \
        const red_job *j = arg;                                                          \
        const T *x = j->x;                                                               \
        T *y = j->y;                                                                     \
        int64_t n = j->nred;                                                             \
        for (int64_t o = b; o < e; o++) {                                                \
            const T *p = x + cpu_offset_of(o, j->nk, j->kdims, j->kstr);                 \
            double acc = 0, m = 0;                                                       \
            switch (j->op) {                                                             \
            case R_SUM: case R_MEAN: case R_LOGSUM:                                      \
                RED_EACH(T, acc += IN(E_);)                                              \
                break;                                                                   \
            case R_PROD:                                                                 \
                acc = 1;                                                                 \
                RED_EACH(T, acc *= IN(E_);)                                              \
                break;                                                                   \
            case R_MAX: case R_MIN: case R_LSE:                                          \
                acc = IN(p[j->roff[0]]);                                                 \
                RED_EACH(T, { /* the first NaN wins and stays */                         \
                    double v = IN(E_);                                                   \
                    if (!isnan(acc) && (isnan(v) || (j->op == R_MIN ? v < acc : v > acc))) \
                        acc = v;                                                         \
                })                                                                       \
                if (j->op != R_LSE) break;                                               \
                m = isfinite(acc) ? acc : 0;                                             \
                acc = 0;                                                                 \
                RED_EACH(T, acc += exp(IN(E_) - m);)                                     \
                break;                                                                   \
            case R_L1:                                                                   \
                RED_EACH(T, acc += fabs(IN(E_));)                                        \
                break;                                                                   \
            default: { /* L2, SUMSQ */                                                   \
                SQ sq = 0;                                                               \
                RED_EACH(T, {                                                            \
                    SQ v = IN(E_);                                                       \
                    sq += v * v;                                                         \
                })                                                                       \
                acc = sq;                                                                \
            }                                                                            \
            }                                                                            \
            if (j->op == R_MEAN) acc /= (double)n;                                       \
            if (j->op == R_L2) acc = sqrt(acc);                                          \
            if (j->op == R_LOGSUM) acc = log(acc);                                       \
            if (j->op == R_LSE) acc = log(acc) + m;                                      \
            y[o] = OUT(acc);                                                             \
        }                                                                                \
    }

RED_FN(red_f32, float, ID, (float), float)
RED_FN(red_f64, double, ID, ID, double)
RED_FN(red_f16, uint16_t, F16IN, F16OUT, float)
RED_FN(red_bf16, uint16_t, BF16IN, BF16OUT, float)

/* v (within the range of the element type) truncated toward zero, as its bits. */
static inline uint64_t red_trunc(double v, bool is_signed) {
    if (is_signed) return (uint64_t)cpu_f2i(v);
    return v >= 18446744073709551615.0 ? UINT64_MAX : (uint64_t)v;
}

/* Integer reductions compute as onnx's reference (numpy) does: in the element type with
 * wraparound (Sum, Prod, and the squares of SumSquare and L2; unsigned arithmetic, so
 * no undefined behaviour), the sums of L1/SumSquare/L2 terms wrapped to 64 bits; Mean
 * truncates the wrapped sum divided by n; L2 takes the square root of the 64-bit sum
 * (signed for signed types); LogSum and LogSumExp go through double. */
#define RED_INT_FN(NAME, T, DT, SIGNED, NEG)                                                 \
    static void NAME(void *arg, int64_t b, int64_t e) {                                  \
        const red_job *j = arg;                                                          \
        const T *x = j->x;                                                               \
        T *y = j->y;                                                                     \
        int64_t n = j->nred;                                                             \
        for (int64_t o = b; o < e; o++) {                                                \
            const T *p = x + cpu_offset_of(o, j->nk, j->kdims, j->kstr);                 \
            uint64_t acc = 0;                                                            \
            double d = 0, m = 0;                                                         \
            T v, best;                                                                   \
            switch (j->op) {                                                             \
            case R_SUM: case R_MEAN:                                                     \
                RED_EACH(T, acc += (uint64_t)E_;)                                        \
                if (j->op == R_MEAN) acc = red_trunc((double)(T)acc / (double)n, SIGNED); \
                break;                                                                   \
            case R_PROD:                                                                 \
                acc = 1;                                                                 \
                RED_EACH(T, acc *= (uint64_t)E_;)                                        \
                break;                                                                   \
            case R_MAX: case R_MIN:                                                      \
                best = p[j->roff[0]];                                                    \
                RED_EACH(T, {                                                            \
                    v = E_;                                                              \
                    if (j->op == R_MIN ? v < best : v > best) best = v;                  \
                })                                                                       \
                acc = (uint64_t)best;                                                    \
                break;                                                                   \
            case R_L1:                                                                   \
                RED_EACH(T, {                                                            \
                    v = E_;                                                              \
                    acc += (uint64_t)(T)(NEG(v) ? 0 - (uint64_t)v : (uint64_t)v);        \
                })                                                                       \
                break;                                                                   \
            case R_SUMSQ: case R_L2:                                                     \
                RED_EACH(T, acc += (uint64_t)(T)((uint64_t)E_ * (uint64_t)E_);)          \
                if (j->op == R_SUMSQ) break;                                             \
                d = sqrt(SIGNED ? (double)(int64_t)acc : (double)acc);                   \
                acc = cpu_f2int_numpy(d, DT);                                             \
                break;                                                                   \
            default: /* LogSum, LogSumExp */                                             \
                m = (double)p[j->roff[0]];                                               \
                RED_EACH(T, m = m > E_ ? m : (double)E_;)                                \
                RED_EACH(T, d += j->op == R_LSE ? exp((double)E_ - m) : (double)E_;)     \
                d = log(d) + (j->op == R_LSE ? m : 0);                                   \
                acc = (uint64_t)cpu_f2i(d);                                              \
            }                                                                            \
            y[o] = (T)acc;                                                               \
        }                                                                                \
    }
RED_INT_FN(red_i8, int8_t, OG_INT8, 1, S_NEG)
RED_INT_FN(red_u8, uint8_t, OG_UINT8, 0, U_NEG)
RED_INT_FN(red_i16, int16_t, OG_INT16, 1, S_NEG)
RED_INT_FN(red_u16, uint16_t, OG_UINT16, 0, U_NEG)
RED_INT_FN(red_i32, int32_t, OG_INT32, 1, S_NEG)
RED_INT_FN(red_u32, uint32_t, OG_UINT32, 0, U_NEG)
RED_INT_FN(red_i64, int64_t, OG_INT64, 1, S_NEG)
RED_INT_FN(red_u64, uint64_t, OG_UINT64, 0, U_NEG)

static const struct {
    og_dtype dt;
    parallel_fn fn;
} red_fns[] = {
    {OG_FLOAT32, red_f32}, {OG_FLOAT64, red_f64}, {OG_FLOAT16, red_f16},
    {OG_BFLOAT16, red_bf16}, {OG_INT8, red_i8}, {OG_UINT8, red_u8}, {OG_BOOL, red_u8},
    {OG_INT16, red_i16}, {OG_UINT16, red_u16}, {OG_INT32, red_i32}, {OG_UINT32, red_u32},
    {OG_INT64, red_i64}, {OG_UINT64, red_u64},
};

/* The value of a float reduction over no elements. */
static double red_identity(int op) {
    switch (op) {
    case R_PROD: return 1;
    case R_MEAN: return NAN;
    case R_LOGSUM: case R_LSE: return -INFINITY;
    case R_MAX: return -INFINITY;
    case R_MIN: return INFINITY;
    default: return 0;
    }
}

/* The same for an integer type, as its bits: Max of nothing is the type's least value,
 * Min its greatest (exact: INT64_MAX through double was 2^63 - 1024), and a NaN or -inf
 * (Mean, LogSum) is what numpy's conversion makes of it, as the reference's astype. */
static uint64_t red_int_identity(int op, og_dtype dt) {
    int bits = 8 * (int)dtype_size(dt);
    bool is_signed = dt == OG_INT8 || dt == OG_INT16 || dt == OG_INT32 || dt == OG_INT64;
    uint64_t umax = bits == 64 ? UINT64_MAX : (1ull << bits) - 1;
    uint64_t least = is_signed ? ~(umax >> 1) : 0, greatest = is_signed ? umax >> 1 : umax;
    if (dt == OG_BOOL) least = 0, greatest = 1;
    switch (op) {
    case R_MAX: return least;
    case R_MIN: return greatest;
    case R_PROD: return 1;
    case R_MEAN: case R_LOGSUM: case R_LSE: return cpu_f2int_numpy(red_identity(op), dt);
    default: return 0;
    }
}

/* Reads the axes to reduce into mask; *all when every axis is reduced. */
static og_status *red_axes(kernel_ctx *ctx, int input_since, int rank, bool *mask) {
    const int64_t *ax = NULL;
    int64_t n = -1;
    bool noop = false;
    const tensor *at = NULL;
    if (ctx->opset >= input_since) {
        noop = graph_attr_int(ctx->node, "noop_with_empty_axes", 0) != 0;
        at = kernel_input(ctx, 1);
        if (at && at->dtype != OG_INT64)
            return kernel_errorf(ctx, OG_ERR_INVALID_ARGUMENT, "input 1 (axes) has dtype %s, "
                                 "expected int64", og_dtype_name(at->dtype));
        if (at) ax = at->data, n = tensor_count(at);
    } else {
        n = graph_attr_ints(ctx->node, "axes", &ax);
    }
    for (int i = 0; i < rank; i++) mask[i] = n <= 0 && !noop;
    for (int64_t i = 0; i < n; i++) {
        int a;
        OG_TRY(cpu_axis(ctx, ax[i], rank, "axes entry", &a));
        if (mask[a])
            return kernel_errorf(ctx, OG_ERR_INVALID_ARGUMENT, "axes lists axis %d twice", a);
        mask[a] = true;
    }
    return NULL;
}

static og_status *reduce_run(kernel_ctx *ctx, int op, int input_since) {
    OG_TRY(kernel_require_inputs(ctx, 1));
    const tensor *x = ctx->inputs[0];
    int rank = x->rank, orank = 0;
    bool mask[OG_MAX_RANK];
    OG_TRY(red_axes(ctx, input_since, rank, mask));
    bool keep = graph_attr_int(ctx->node, "keepdims", 1) != 0;
    red_job j = {.x = x->data, .op = op, .nred = 1};
    int64_t odims[OG_MAX_RANK], str[OG_MAX_RANK], rdims[OG_MAX_RANK], rstr[OG_MAX_RANK];
    int nr = 0;
    int64_t s = 1;
    for (int i = rank - 1; i >= 0; i--) str[i] = s, s *= x->dims[i];
    for (int i = 0; i < rank; i++) {
        if (mask[i]) {
            if (keep) odims[orank++] = 1;
            rdims[nr] = x->dims[i], rstr[nr++] = str[i];
            j.nred *= x->dims[i];
        } else {
            odims[orank++] = x->dims[i];
            j.kdims[j.nk] = x->dims[i], j.kstr[j.nk++] = str[i];
        }
    }
    parallel_fn fn = NULL;
    for (size_t i = 0; i < sizeof red_fns / sizeof red_fns[0]; i++)
        if (red_fns[i].dt == x->dtype) fn = red_fns[i].fn;
    if (!fn) return kernel_unsupported_dtype(ctx, 0, x->dtype);
    tensor *y;
    OG_TRY(kernel_output(ctx, 0, x->dtype, orank, odims, &y));
    int64_t nout = tensor_count(y);
    if (nout == 0) return NULL;
    if (j.nred == 0 && !cpu_is_float(x->dtype)) {
        uint64_t id = red_int_identity(op, x->dtype);
        for (int64_t i = 0; i < nout; i++) cpu_store_int_bits(x->dtype, y->data, i, id);
        return NULL;
    }
    if (j.nred == 0) {
        double *v;
        OG_TRY(kernel_scratch(ctx, (size_t)nout * sizeof(double), (void **)&v));
        double id = red_identity(op);
        for (int64_t i = 0; i < nout; i++) v[i] = id;
        cpu_store_f64(y, v);
        return NULL;
    }
    /* Merge reduced dimensions that are contiguous with the next one: a full or trailing
     * reduction becomes one run, and the offset table covers only what is left (a table
     * per element took 8 bytes per input element: 2 GiB for a 1 GiB float tensor). */
    if (nr == 0) { /* nothing reduced: each output reads its own element */
        rdims[0] = 1;
        rstr[0] = 1;
        nr = 1;
    }
    int m = 0;
    for (int d = 0; d < nr; d++) {
        if (m > 0 && rstr[m - 1] == rstr[d] * rdims[d]) {
            rdims[m - 1] *= rdims[d];
            rstr[m - 1] = rstr[d];
        } else {
            rdims[m] = rdims[d];
            rstr[m++] = rstr[d];
        }
    }
    nr = m - 1; /* the table walks the dims before the inner run */
    j.inner = rdims[nr];
    j.istr = rstr[nr];
    j.ntab = j.nred / j.inner;
    int64_t small[64], *roff = small; /* most tables are tiny: no allocation */
    if (j.ntab > 64)
        OG_TRY(kernel_scratch(ctx, (size_t)j.ntab * sizeof(int64_t), (void **)&roff));
    int64_t idx[OG_MAX_RANK] = {0}, off = 0;
    for (int64_t k = 0; k < j.ntab; k++) {
        roff[k] = off;
        for (int d = nr - 1; d >= 0; d--) {
            off += rstr[d];
            if (++idx[d] < rdims[d]) break;
            off -= rstr[d] * rdims[d];
            idx[d] = 0;
        }
    }
    j.roff = roff;
    j.y = y->data;
    threadpool_parallel_for(ctx->pool, nout, 1 + 32768 / j.nred, fn, &j);
    return NULL;
}

#define REDUCE_OP(NAME, OP, SINCE)                                                       \
    og_status *NAME(kernel_ctx *ctx) { return reduce_run(ctx, OP, SINCE); }
REDUCE_OP(cpu_reduce_sum, R_SUM, 13)
REDUCE_OP(cpu_reduce_mean, R_MEAN, 18)
REDUCE_OP(cpu_reduce_max, R_MAX, 18)
REDUCE_OP(cpu_reduce_min, R_MIN, 18)
REDUCE_OP(cpu_reduce_prod, R_PROD, 18)
REDUCE_OP(cpu_reduce_l1, R_L1, 18)
REDUCE_OP(cpu_reduce_l2, R_L2, 18)
REDUCE_OP(cpu_reduce_sumsq, R_SUMSQ, 18)
REDUCE_OP(cpu_reduce_logsum, R_LOGSUM, 18)
REDUCE_OP(cpu_reduce_lse, R_LSE, 18)

/* ---- element access for the per-line ops below (ArgMax, CumSum, TopK) ---- */

static inline double ld_f64(const void *p, og_dtype dt, int64_t i) {
    switch (dt) {
    case OG_FLOAT32: return ((const float *)p)[i];
    case OG_FLOAT64: return ((const double *)p)[i];
    case OG_FLOAT16: return f16_to_f32(((const uint16_t *)p)[i]);
    case OG_BFLOAT16: return bf16_to_f32(((const uint16_t *)p)[i]);
    case OG_INT32: return ((const int32_t *)p)[i];
    case OG_INT64: return (double)((const int64_t *)p)[i];
    case OG_INT8: return ((const int8_t *)p)[i];
    case OG_UINT8: return ((const uint8_t *)p)[i];
    case OG_INT16: return ((const int16_t *)p)[i];
    case OG_UINT16: return ((const uint16_t *)p)[i];
    case OG_UINT32: return ((const uint32_t *)p)[i];
    case OG_UINT64: return (double)((const uint64_t *)p)[i];
    default: return 0;
    }
}

static bool line_dtype_ok(og_dtype dt) {
    return cpu_is_float(dt) || (cpu_is_int(dt) && dt != OG_BOOL);
}

/* A tensor seen as [outer, len, inner] around one axis. */
typedef struct line_job {
    const kernel_ctx *ctx;
    const void *x;
    void *y, *yi;
    og_dtype dt;
    int64_t len, inner, k;
    int flag_a, flag_b; /* per op: (max?, last?) (exclusive, reverse) (largest, -) */
    int64_t lines, slots; /* TopK: lines split over `slots` tasks */
    void *keys;           /* TopK: slots rows of len (key, index) pairs */
} line_job;

/* ArgMax/ArgMin of each line in the element type itself (int64 beyond 2^53 stays
 * exact). A NaN wins, as in numpy: the first NaN's index, or the last one's with
 * select_last_index (the reference flips the axis and takes the first). */
#define ARGM_FN(NAME, T, C, LD, NANQ)                                                    \
    static void NAME(void *arg, int64_t b, int64_t e) {                                  \
        const line_job *j = arg;                                                         \
        const T *x = j->x;                                                               \
        int64_t *y = j->y;                                                               \
        bool is_max = j->flag_a, last = j->flag_b;                                       \
        for (int64_t l = b; l < e; l++) {                                                \
            int64_t base = (l / j->inner) * j->len * j->inner + l % j->inner, best = 0;  \
            C bv = LD(x[base]);                                                          \
            bool nan = NANQ(bv);                                                         \
            for (int64_t i = 1; i < j->len && (last || !nan); i++) {                     \
                C v = LD(x[base + i * j->inner]);                                        \
                if (NANQ(v)) {                                                           \
                    best = i, nan = true;                                                \
                } else if (!nan && ((is_max ? v > bv : v < bv) || (last && v == bv))) {  \
                    bv = v, best = i;                                                    \
                }                                                                        \
            }                                                                            \
            y[l] = best;                                                                 \
        }                                                                                \
    }
ARGM_FN(argm_f32, float, float, ID, IS_NAN)
ARGM_FN(argm_f64, double, double, ID, IS_NAN)
ARGM_FN(argm_f16, uint16_t, float, F16IN, IS_NAN)
ARGM_FN(argm_bf16, uint16_t, float, BF16IN, IS_NAN)
ARGM_FN(argm_i8, int8_t, int8_t, ID, NOT_NAN)
ARGM_FN(argm_u8, uint8_t, uint8_t, ID, NOT_NAN)
ARGM_FN(argm_i16, int16_t, int16_t, ID, NOT_NAN)
ARGM_FN(argm_u16, uint16_t, uint16_t, ID, NOT_NAN)
ARGM_FN(argm_i32, int32_t, int32_t, ID, NOT_NAN)
ARGM_FN(argm_u32, uint32_t, uint32_t, ID, NOT_NAN)
ARGM_FN(argm_i64, int64_t, int64_t, ID, NOT_NAN)
ARGM_FN(argm_u64, uint64_t, uint64_t, ID, NOT_NAN)

static parallel_fn argm_fn(og_dtype dt) {
    switch (dt) {
    case OG_FLOAT32: return argm_f32;
    case OG_FLOAT64: return argm_f64;
    case OG_FLOAT16: return argm_f16;
    case OG_BFLOAT16: return argm_bf16;
    case OG_INT8: return argm_i8;
    case OG_UINT8: return argm_u8;
    case OG_INT16: return argm_i16;
    case OG_UINT16: return argm_u16;
    case OG_INT32: return argm_i32;
    case OG_UINT32: return argm_u32;
    case OG_INT64: return argm_i64;
    case OG_UINT64: return argm_u64;
    default: return NULL;
    }
}

static og_status *argm_run(kernel_ctx *ctx, bool is_max) {
    OG_TRY(kernel_require_inputs(ctx, 1));
    const tensor *x = ctx->inputs[0];
    parallel_fn fn = argm_fn(x->dtype);
    if (!fn) return kernel_unsupported_dtype(ctx, 0, x->dtype);
    int axis;
    OG_TRY(cpu_axis(ctx, graph_attr_int(ctx->node, "axis", 0), x->rank, "axis", &axis));
    if (x->rank == 0 || x->dims[axis] == 0)
        return kernel_errorf(ctx, OG_ERR_INVALID_ARGUMENT, "input 0 must have a non-empty "
                             "axis %d to take the %s of", axis, is_max ? "argmax" : "argmin");
    bool keep = graph_attr_int(ctx->node, "keepdims", 1) != 0;
    int64_t od[OG_MAX_RANK];
    int orank = 0;
    for (int i = 0; i < x->rank; i++)
        if (i != axis || keep) od[orank++] = i == axis ? 1 : x->dims[i];
    tensor *y;
    OG_TRY(kernel_output(ctx, 0, OG_INT64, orank, od, &y));
    line_job j = {.ctx = ctx, .x = x->data, .y = y->data, .dt = x->dtype,
                  .len = x->dims[axis], .inner = cpu_dims_prod(x->dims, axis + 1, x->rank),
                  .flag_a = is_max,
                  .flag_b = graph_attr_int(ctx->node, "select_last_index", 0) != 0};
    threadpool_parallel_for(ctx->pool, tensor_count(y), 1 + 16384 / j.len, fn, &j);
    return NULL;
}

og_status *cpu_argmax(kernel_ctx *ctx) { return argm_run(ctx, true); }
og_status *cpu_argmin(kernel_ctx *ctx) { return argm_run(ctx, false); }

static inline void st_num(void *p, og_dtype dt, int64_t i, double d, int64_t v) {
    switch (dt) {
    case OG_FLOAT32: ((float *)p)[i] = (float)d; break;
    case OG_FLOAT64: ((double *)p)[i] = d; break;
    case OG_FLOAT16: ((uint16_t *)p)[i] = f32_to_f16((float)d); break;
    case OG_BFLOAT16: ((uint16_t *)p)[i] = f32_to_bf16((float)d); break;
    case OG_INT32: ((int32_t *)p)[i] = (int32_t)v; break;
    case OG_INT64: ((int64_t *)p)[i] = v; break;
    case OG_UINT64: ((uint64_t *)p)[i] = (uint64_t)v; break;
    case OG_UINT32: ((uint32_t *)p)[i] = (uint32_t)v; break;
    case OG_INT16: ((int16_t *)p)[i] = (int16_t)v; break;
    case OG_UINT16: ((uint16_t *)p)[i] = (uint16_t)v; break;
    case OG_INT8: ((int8_t *)p)[i] = (int8_t)v; break;
    default: ((uint8_t *)p)[i] = (uint8_t)v; break;
    }
}

static void cumsum_lines(void *arg, int64_t b, int64_t e) {
    const line_job *j = arg;
    bool excl = j->flag_a, rev = j->flag_b, fl = cpu_is_float(j->dt);
    tensor src = {.dtype = j->dt, .data = (void *)j->x};
    for (int64_t l = b; l < e; l++) {
        int64_t base = (l / j->inner) * j->len * j->inner + l % j->inner;
        double sd = 0;
        int64_t si = 0;
        for (int64_t t = 0; t < j->len; t++) {
            int64_t i = base + (rev ? j->len - 1 - t : t) * j->inner;
            double vd = fl ? ld_f64(j->x, j->dt, i) : 0;
            int64_t vi = fl ? 0 : tensor_get_i64(&src, i);
            if (!excl) sd += vd, si += vi;
            st_num(j->y, j->dt, i, sd, si);
            if (excl) sd += vd, si += vi;
        }
    }
}

og_status *cpu_cumsum(kernel_ctx *ctx) {
    OG_TRY(kernel_require_inputs(ctx, 2));
    const tensor *x = ctx->inputs[0];
    if (!line_dtype_ok(x->dtype)) return kernel_unsupported_dtype(ctx, 0, x->dtype);
    int64_t a;
    int axis;
    OG_TRY(cpu_scalar_i64(ctx, 1, &a));
    OG_TRY(cpu_axis(ctx, a, x->rank, "axis (input 1)", &axis));
    tensor *y;
    OG_TRY(kernel_output(ctx, 0, x->dtype, x->rank, x->dims, &y));
    if (tensor_count(y) == 0) return NULL;
    line_job j = {.ctx = ctx, .x = x->data, .y = y->data, .dt = x->dtype,
                  .len = x->rank ? x->dims[axis] : 1,
                  .inner = cpu_dims_prod(x->dims, axis + 1, x->rank),
                  .flag_a = graph_attr_int(ctx->node, "exclusive", 0) != 0,
                  .flag_b = graph_attr_int(ctx->node, "reverse", 0) != 0};
    threadpool_parallel_for(ctx->pool, tensor_count(y) / j.len, 1 + 16384 / j.len,
                            cumsum_lines, &j);
    return NULL;
}

/* TopK sorts (key, index) pairs where the key is an order-preserving uint64 image of the
 * value, so one comparison serves every dtype; ties go to the lower index. */
typedef struct topk_pair {
    uint64_t key;
    int64_t idx;
} topk_pair;

static uint64_t topk_key(const void *p, og_dtype dt, int64_t i) {
    if (dt == OG_UINT64) return ((const uint64_t *)p)[i];
    if (dt == OG_INT64) return (uint64_t)((const int64_t *)p)[i] ^ (1ull << 63);
    double v = ld_f64(p, dt, i);
    uint64_t u;
    memcpy(&u, &v, 8);
    return (u >> 63) ? ~u : u | (1ull << 63);
}

static int topk_cmp_large(const void *a, const void *b) {
    const topk_pair *p = a, *q = b;
    if (p->key != q->key) return p->key > q->key ? -1 : 1;
    return p->idx < q->idx ? -1 : p->idx > q->idx;
}

static int topk_cmp_small(const void *a, const void *b) {
    const topk_pair *p = a, *q = b;
    if (p->key != q->key) return p->key < q->key ? -1 : 1;
    return p->idx < q->idx ? -1 : p->idx > q->idx;
}

/* Keeps the k best of a line sorted in pairs[0..k): cheap when k is small, since most
 * values lose to the current k-th at once. */
static void topk_select(topk_pair *pairs, int64_t k, topk_pair p, int64_t *n, bool large) {
    int (*cmp)(const void *, const void *) = large ? topk_cmp_large : topk_cmp_small;
    if (*n == k && cmp(&p, &pairs[k - 1]) >= 0) return;
    int64_t i = *n < k ? (*n)++ : k - 1;
    for (; i > 0 && cmp(&p, &pairs[i - 1]) < 0; i--) pairs[i] = pairs[i - 1];
    pairs[i] = p;
}

static void topk_line(const line_job *j, topk_pair *pairs, int64_t l) {
    size_t es = dtype_size(j->dt);
    int64_t outer = l / j->inner, in = l % j->inner;
    int64_t base = outer * j->len * j->inner + in, obase = outer * j->k * j->inner + in;
    if (j->k <= 64 && j->k * 8 < j->len) {
        int64_t n = 0;
        for (int64_t i = 0; i < j->len; i++)
            topk_select(pairs, j->k, (topk_pair){topk_key(j->x, j->dt, base + i * j->inner), i},
                        &n, j->flag_a);
    } else {
        for (int64_t i = 0; i < j->len; i++)
            pairs[i] = (topk_pair){topk_key(j->x, j->dt, base + i * j->inner), i};
        qsort(pairs, (size_t)j->len, sizeof *pairs,
              j->flag_a ? topk_cmp_large : topk_cmp_small);
    }
    for (int64_t t = 0; t < j->k; t++) {
        int64_t o = obase + t * j->inner;
        memcpy((char *)j->y + o * es, (const char *)j->x + (base + pairs[t].idx * j->inner) * es,
               es);
        ((int64_t *)j->yi)[o] = pairs[t].idx;
    }
}

/* Tasks are slots, each owning a row of pairs in scratch and a share of the lines. */
static void topk_slots(void *arg, int64_t b, int64_t e) {
    const line_job *j = arg;
    int64_t per = (j->lines + j->slots - 1) / j->slots;
    for (int64_t s = b; s < e; s++)
        for (int64_t l = s * per; l < (s + 1) * per && l < j->lines; l++)
            topk_line(j, (topk_pair *)j->keys + s * j->len, l);
}

og_status *cpu_topk(kernel_ctx *ctx) {
    OG_TRY(kernel_require_inputs(ctx, 2));
    const tensor *x = ctx->inputs[0];
    if (!line_dtype_ok(x->dtype)) return kernel_unsupported_dtype(ctx, 0, x->dtype);
    int axis;
    int64_t k;
    OG_TRY(cpu_axis(ctx, graph_attr_int(ctx->node, "axis", -1), x->rank, "axis", &axis));
    OG_TRY(cpu_scalar_i64(ctx, 1, &k));
    if (x->rank == 0 || k < 0 || k > x->dims[axis])
        return kernel_errorf(ctx, OG_ERR_INVALID_ARGUMENT, "k (input 1) is %lld, expected "
                             "0..%lld (the size of axis %d of input 0)", (long long)k,
                             (long long)(x->rank ? x->dims[axis] : 0), axis);
    int64_t od[OG_MAX_RANK];
    memcpy(od, x->dims, sizeof od);
    od[axis] = k;
    tensor *y, *yi;
    OG_TRY(kernel_output(ctx, 0, x->dtype, x->rank, od, &y));
    OG_TRY(kernel_output(ctx, 1, OG_INT64, x->rank, od, &yi));
    int64_t lines = tensor_count(x) / (x->dims[axis] ? x->dims[axis] : 1);
    if (k == 0 || lines == 0) return NULL;
    line_job j = {.ctx = ctx, .x = x->data, .y = y->data, .yi = yi->data, .dt = x->dtype,
                  .len = x->dims[axis], .inner = cpu_dims_prod(x->dims, axis + 1, x->rank),
                  .k = k, .flag_a = graph_attr_int(ctx->node, "largest", 1) != 0,
                  .lines = lines};
    int64_t work = lines * j.len;
    j.slots = work < 65536 ? 1 : threadpool_size(ctx->pool);
    if (j.slots > lines) j.slots = lines;
    OG_TRY(kernel_scratch(ctx, (size_t)(j.slots * j.len) * sizeof(topk_pair), &j.keys));
    threadpool_parallel_for(ctx->pool, j.slots, 1, topk_slots, &j);
    return NULL;
}

/* Hardmax: 1 at each line's ArgMax (the first maximum, or the first NaN as numpy's
 * argmax in the reference), 0 elsewhere. Lines as Softmax's: before opset 13 the input
 * is seen as 2-D [prod(dims[:axis]), prod(dims[axis:])]; from 13 on, along axis. */
og_status *cpu_hardmax(kernel_ctx *ctx) {
    OG_TRY(kernel_require_inputs(ctx, 1));
    const tensor *x = ctx->inputs[0];
    if (!cpu_is_float(x->dtype)) return kernel_unsupported_dtype(ctx, 0, x->dtype);
    bool v13 = ctx->opset >= 13;
    int axis;
    OG_TRY(cpu_axis(ctx, graph_attr_int(ctx->node, "axis", v13 ? -1 : 1), x->rank, "axis",
                    &axis));
    tensor *y;
    OG_TRY(kernel_output(ctx, 0, x->dtype, x->rank, x->dims, &y));
    int64_t n = tensor_count(x);
    line_job j = {.ctx = ctx, .x = x->data, .dt = x->dtype, .flag_a = 1,
                  .inner = v13 ? cpu_dims_prod(x->dims, axis + 1, x->rank) : 1,
                  .len = x->rank == 0 ? 1 : cpu_dims_prod(x->dims, axis, v13 ? axis + 1 : x->rank)};
    if (n == 0 || j.len == 0) return NULL;
    int64_t lines = n / j.len, *best;
    OG_TRY(kernel_scratch(ctx, sizeof *best * (size_t)lines, (void **)&best));
    j.y = best;
    threadpool_parallel_for(ctx->pool, lines, 1 + 16384 / j.len, argm_fn(x->dtype), &j);
    memset(y->data, 0, y->nbytes);
    for (int64_t l = 0; l < lines; l++) {
        int64_t o = (l / j.inner) * j.len * j.inner + l % j.inner + best[l] * j.inner;
        st_num(y->data, x->dtype, o, 1.0, 1);
    }
    return NULL;
}
