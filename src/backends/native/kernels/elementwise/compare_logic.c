/* Comparisons (to bool; Equal also on strings), logic on bool, Where (any element type,
 * strings included), IsNaN and IsInf. */
#include "backends/native/kernels/elementwise/elementwise.h"

#include <math.h>

enum { CMP_EQ, CMP_LT, CMP_GT, CMP_LE, CMP_GE, CMP_AND, CMP_OR, CMP_XOR, CMP_COUNT };

#define B8 (uint8_t)
#define CMP_LOOPS(T, DT, S, C, LD, ST)                                                   \
    MK_BIN_LOOP(eq_##S, T, C, LD, uint8_t, B8, a == b)                                   \
    MK_BIN_LOOP(lt_##S, T, C, LD, uint8_t, B8, a < b)                                    \
    MK_BIN_LOOP(gt_##S, T, C, LD, uint8_t, B8, a > b)                                    \
    MK_BIN_LOOP(le_##S, T, C, LD, uint8_t, B8, a <= b)                                   \
    MK_BIN_LOOP(ge_##S, T, C, LD, uint8_t, B8, a >= b)
MK_NUM_TYPES(CMP_LOOPS)
/* bool bytes other than 0/1 still mean true */
MK_BIN_LOOP(eq_bool, uint8_t, uint8_t, MK_ID, uint8_t, B8, !a == !b)
MK_BIN_LOOP(and_bool, uint8_t, uint8_t, MK_ID, uint8_t, B8, a && b)
MK_BIN_LOOP(or_bool, uint8_t, uint8_t, MK_ID, uint8_t, B8, a || b)
MK_BIN_LOOP(xor_bool, uint8_t, uint8_t, MK_ID, uint8_t, B8, !a != !b)
/* strings are equal when their bytes are */
MK_BIN_LOOP(eq_string, og_string, og_string, MK_ID, uint8_t, B8, og_string_eq(a, b))

#define CMP_ENTRIES(T, DT, S, C, LD, ST)                                                 \
    [CMP_EQ][DT] = eq_##S, [CMP_LT][DT] = lt_##S, [CMP_GT][DT] = gt_##S,                 \
    [CMP_LE][DT] = le_##S, [CMP_GE][DT] = ge_##S,
static const ew_loop_fn cmp_loops[CMP_COUNT][OG_DTYPE_COUNT] = {
    MK_NUM_TYPES(CMP_ENTRIES)[CMP_EQ][OG_BOOL] = eq_bool,
    [CMP_EQ][OG_STRING] = eq_string,
    [CMP_AND][OG_BOOL] = and_bool,
    [CMP_OR][OG_BOOL] = or_bool,
    [CMP_XOR][OG_BOOL] = xor_bool,
};

static og_status *compare(kernel_ctx *ctx, int op) {
    return cpu_ew_binary(ctx, cmp_loops[op], OG_BOOL, EW_GRAIN);
}

og_status *cpu_equal(kernel_ctx *ctx) { return compare(ctx, CMP_EQ); }
og_status *cpu_less(kernel_ctx *ctx) { return compare(ctx, CMP_LT); }
og_status *cpu_greater(kernel_ctx *ctx) { return compare(ctx, CMP_GT); }
og_status *cpu_less_equal(kernel_ctx *ctx) { return compare(ctx, CMP_LE); }
og_status *cpu_greater_equal(kernel_ctx *ctx) { return compare(ctx, CMP_GE); }
og_status *cpu_and(kernel_ctx *ctx) { return compare(ctx, CMP_AND); }
og_status *cpu_or(kernel_ctx *ctx) { return compare(ctx, CMP_OR); }
og_status *cpu_xor(kernel_ctx *ctx) { return compare(ctx, CMP_XOR); }

MK_UN_LOOP(not_bool, uint8_t, uint8_t, MK_ID, uint8_t, B8, !v)

og_status *cpu_not(kernel_ctx *ctx) {
    OG_TRY(kernel_require_inputs(ctx, 1));
    if (ctx->inputs[0]->dtype != OG_BOOL)
        return kernel_unsupported_dtype(ctx, 0, ctx->inputs[0]->dtype);
    return cpu_unary_loop(ctx, OG_BOOL, not_bool, NULL, EW_GRAIN);
}

/* IsInf's param is {detect_negative, detect_positive}. */
#define INF_SIDE(v) (((const int *)param)[(v) > 0])
#define FLOAT_TESTS(T, DT, S, C, LD, ST)                                                 \
    MK_UN_LOOP(isnan_##S, T, C, LD, uint8_t, B8, isnan(v))                               \
    MK_UN_LOOP(isinf_##S, T, C, LD, uint8_t, B8, isinf(v) && INF_SIDE(v))
MK_FLOAT_TYPES(FLOAT_TESTS)
#define TEST_ENTRIES(T, DT, S, C, LD, ST) [DT] = {isnan_##S, isinf_##S},
static const ew_loop_fn float_tests[OG_DTYPE_COUNT][2] = {MK_FLOAT_TYPES(TEST_ENTRIES)};

static og_status *float_test(kernel_ctx *ctx, int which, const void *param) {
    OG_TRY(kernel_require_inputs(ctx, 1));
    og_dtype dt = ctx->inputs[0]->dtype;
    if (!mk_is_float(dt)) return kernel_unsupported_dtype(ctx, 0, dt);
    return cpu_unary_loop(ctx, OG_BOOL, float_tests[dt][which], param, EW_GRAIN);
}

og_status *cpu_isnan(kernel_ctx *ctx) { return float_test(ctx, 0, NULL); }

og_status *cpu_isinf(kernel_ctx *ctx) {
    int detect[2] = {graph_attr_int(ctx->node, "detect_negative", 1) != 0,
                     graph_attr_int(ctx->node, "detect_positive", 1) != 0};
    return float_test(ctx, 1, detect);
}

/* Where only moves elements, so one loop per element size serves every dtype. */
#define WHERE_LOOP(T)                                                                    \
    static void where_##T(char *const *p, const int64_t *s, int64_t n, const void *param) { \
        (void)param;                                                                     \
        const uint8_t *c = (const uint8_t *)p[1];                                        \
        const T *x = (const T *)p[2], *y = (const T *)p[3];                              \
        T *o = (T *)p[0];                                                                \
        if (s[1] && s[2] && s[3])                                                        \
            for (int64_t i = 0; i < n; i++) o[i] = c[i] ? x[i] : y[i];                   \
        else                                                                             \
            for (int64_t i = 0; i < n; i++) o[i] = c[i * s[1]] ? x[i * s[2]] : y[i * s[3]]; \
    }
WHERE_LOOP(uint8_t)
WHERE_LOOP(uint16_t)
WHERE_LOOP(uint32_t)
WHERE_LOOP(uint64_t)
WHERE_LOOP(og_string)

og_status *cpu_where(kernel_ctx *ctx) {
    OG_TRY(kernel_require_inputs(ctx, 3));
    const tensor *in[3] = {ctx->inputs[0], ctx->inputs[1], ctx->inputs[2]};
    if (in[0]->dtype != OG_BOOL) return kernel_unsupported_dtype(ctx, 0, in[0]->dtype);
    og_dtype dt = in[1]->dtype;
    if (in[2]->dtype != dt)
        return kernel_errorf(ctx, OG_ERR_INVALID_MODEL, "input 2 has dtype %s, input 1 %s",
                             og_dtype_name(in[2]->dtype), og_dtype_name(dt));
    size_t es = dtype_size(dt);
    ew_loop_fn fn = es == 1 ? where_uint8_t
                    : es == 2 ? where_uint16_t
                    : es == 4 ? where_uint32_t
                    : es == 8 ? where_uint64_t
                    : es == 16 ? where_og_string /* strings' views (and complex128) */
                               : NULL;
    if (!fn) return kernel_unsupported_dtype(ctx, 1, dt);
    return cpu_ew_op(ctx, 3, in, dt, fn, NULL, EW_GRAIN);
}
