/* BitwiseAnd, BitwiseOr, BitwiseXor, BitwiseNot and BitShift on the integer types.
 *
 * BitShift follows opset 28's definition (earlier versions, unsigned only, agree where
 * they define a result): a signed right shift is arithmetic; bits shifted past the sign
 * bit are lost; a shift amount that is negative or at least the type's width gives what
 * the sign fill alone gives (-1 for a right shift of a negative value, else 0). Shifts
 * are done in uint64 (or by complement for negative right shifts), so none is undefined
 * behaviour in C. */
#include "backends/native/kernels/elementwise/elementwise.h"

#include <string.h>

#define B_AND(a, b) ((a) & (b))
#define B_OR(a, b) ((a) | (b))
#define B_XOR(a, b) ((a) ^ (b))

static inline uint64_t shl(uint64_t a, int64_t y, int bits) {
    return y < 0 || y >= bits ? 0 : a << y;
}
static inline int64_t shr_s(int64_t a, int64_t y, int bits) {
    if (y < 0 || y >= bits) return a < 0 ? -1 : 0;
    return a < 0 ? ~(~a >> y) : a >> y; /* ~a >= 0: a defined shift, then back */
}
static inline uint64_t shr_u(uint64_t a, int64_t y, int bits) {
    return y < 0 || y >= bits ? 0 : a >> y;
}

#define BITS(T) ((int)sizeof(T) * 8)
#define BIT_LOOPS(T, DT, S, C, LD, ST)                                                   \
    MK_BIN_LOOP(and_##S, T, C, LD, T, (T), B_AND(a, b))                                  \
    MK_BIN_LOOP(or_##S, T, C, LD, T, (T), B_OR(a, b))                                    \
    MK_BIN_LOOP(xor_##S, T, C, LD, T, (T), B_XOR(a, b))                                  \
    MK_BIN_LOOP(shl_##S, T, C, LD, T, (T), shl((uint64_t)a, (int64_t)b, BITS(T)))        \
    MK_UN_LOOP(not_##S, T, C, LD, T, (T), ~(uint64_t)v)
#define SHR_SIGNED(T, DT, S, C, LD, ST)                                                  \
    MK_BIN_LOOP(shr_##S, T, C, LD, T, (T), shr_s(a, b, BITS(T)))
#define SHR_UNSIGNED(T, DT, S, C, LD, ST)                                                \
    MK_BIN_LOOP(shr_##S, T, C, LD, T, (T), shr_u(a, (int64_t)b, BITS(T)))
MK_SINT_TYPES(BIT_LOOPS)
MK_UINT_TYPES(BIT_LOOPS)
MK_SINT_TYPES(SHR_SIGNED)
MK_UINT_TYPES(SHR_UNSIGNED)

enum { OP_AND, OP_OR, OP_XOR, OP_SHL, OP_SHR, OP_COUNT };
#define BIT_ENTRIES(T, DT, S, C, LD, ST)                                                 \
    [OP_AND][DT] = and_##S, [OP_OR][DT] = or_##S, [OP_XOR][DT] = xor_##S,                \
    [OP_SHL][DT] = shl_##S, [OP_SHR][DT] = shr_##S,
static const ew_loop_fn bit_loops[OP_COUNT][OG_DTYPE_COUNT] = {
    MK_SINT_TYPES(BIT_ENTRIES) MK_UINT_TYPES(BIT_ENTRIES)};
#define NOT_ENTRY(T, DT, S, C, LD, ST) [DT] = not_##S,
static const ew_loop_fn not_loops[OG_DTYPE_COUNT] = {MK_SINT_TYPES(NOT_ENTRY)
                                                         MK_UINT_TYPES(NOT_ENTRY)};

og_status *cpu_bitwise_and(kernel_ctx *ctx) {
    return cpu_ew_binary(ctx, bit_loops[OP_AND], OG_UNDEFINED, EW_GRAIN);
}
og_status *cpu_bitwise_or(kernel_ctx *ctx) {
    return cpu_ew_binary(ctx, bit_loops[OP_OR], OG_UNDEFINED, EW_GRAIN);
}
og_status *cpu_bitwise_xor(kernel_ctx *ctx) {
    return cpu_ew_binary(ctx, bit_loops[OP_XOR], OG_UNDEFINED, EW_GRAIN);
}

og_status *cpu_bitwise_not(kernel_ctx *ctx) {
    OG_TRY(kernel_require_inputs(ctx, 1));
    og_dtype dt = ctx->inputs[0]->dtype;
    ew_loop_fn fn = (int)dt >= 0 && dt < OG_DTYPE_COUNT ? not_loops[dt] : NULL;
    if (!fn) return kernel_unsupported_dtype(ctx, 0, dt);
    return cpu_unary_loop(ctx, dt, fn, NULL, EW_GRAIN);
}

og_status *cpu_bitshift(kernel_ctx *ctx) {
    const char *dir = graph_attr_string(ctx->node, "direction", NULL);
    if (!dir) return kernel_error(ctx, OG_ERR_INVALID_MODEL, "attribute 'direction' is missing");
    bool left = strcmp(dir, "LEFT") == 0;
    if (!left && strcmp(dir, "RIGHT") != 0)
        return kernel_errorf(ctx, OG_ERR_INVALID_MODEL, "direction is '%s', expected 'LEFT' "
                             "or 'RIGHT'", dir);
    return cpu_ew_binary(ctx, bit_loops[left ? OP_SHL : OP_SHR], OG_UNDEFINED, EW_GRAIN);
}
