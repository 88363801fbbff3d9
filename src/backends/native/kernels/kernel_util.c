#include "backends/native/kernels/kernel_util.h"

#include "base/half.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

og_status *cpu_axis(const kernel_ctx *ctx, int64_t axis, int rank, const char *what, int *out) {
    int64_t a = axis < 0 ? axis + rank : axis;
    if (a < 0 || a >= (rank ? rank : 1))
        return kernel_errorf(ctx, OG_ERR_INVALID_ARGUMENT, "%s %lld is out of range for "
                             "rank %d (expected [%d, %d])", what, (long long)axis, rank,
                             -rank, rank ? rank - 1 : 0);
    *out = (int)a;
    return NULL;
}

int64_t cpu_dims_prod(const int64_t *dims, int b, int e) {
    int64_t p = 1;
    for (int i = b; i < e; i++) p *= dims[i];
    return p;
}

int64_t cpu_offset_of(int64_t o, int n, const int64_t *dims, const int64_t *strides) {
    int64_t off = 0;
    for (int d = n - 1; d >= 0; d--) {
        off += (o % dims[d]) * strides[d];
        o /= dims[d];
    }
    return off;
}

bool cpu_is_float(og_dtype dt) {
    return dt == OG_FLOAT32 || dt == OG_FLOAT16 || dt == OG_BFLOAT16 || dt == OG_FLOAT64;
}

bool cpu_is_int(og_dtype dt) {
    switch (dt) {
    case OG_INT8: case OG_UINT8: case OG_INT16: case OG_UINT16: case OG_INT32:
    case OG_UINT32: case OG_INT64: case OG_UINT64: case OG_BOOL: return true;
    default: return false;
    }
}

og_status *cpu_in_f32(kernel_ctx *ctx, int index, const float **out) {
    const tensor *t = kernel_input(ctx, index);
    if (!t) return kernel_errorf(ctx, OG_ERR_INVALID_MODEL, "input %d is missing", index);
    if (t->dtype == OG_FLOAT32) {
        *out = t->data;
        return NULL;
    }
    if (!cpu_is_float(t->dtype)) return kernel_unsupported_dtype(ctx, index, t->dtype);
    int64_t n = tensor_count(t);
    float *buf;
    OG_TRY(kernel_scratch(ctx, (size_t)n * sizeof(float) + 1, (void **)&buf));
    const uint16_t *h = t->data;
    const double *d = t->data;
    for (int64_t i = 0; i < n; i++)
        buf[i] = t->dtype == OG_FLOAT16    ? f16_to_f32(h[i])
                 : t->dtype == OG_BFLOAT16 ? bf16_to_f32(h[i])
                                           : (float)d[i];
    *out = buf;
    return NULL;
}

og_status *cpu_out_f32(kernel_ctx *ctx, tensor *t, float **out) {
    if (t->dtype == OG_FLOAT32) {
        *out = t->data;
        return NULL;
    }
    return kernel_scratch(ctx, (size_t)tensor_count(t) * sizeof(float) + 1, (void **)out);
}

void cpu_out_f32_done(tensor *t, const float *buf) {
    int64_t n = tensor_count(t);
    uint16_t *h = t->data;
    double *d = t->data;
    switch (t->dtype) {
    case OG_FLOAT16: for (int64_t i = 0; i < n; i++) h[i] = f32_to_f16(buf[i]); break;
    case OG_BFLOAT16: for (int64_t i = 0; i < n; i++) h[i] = f32_to_bf16(buf[i]); break;
    case OG_FLOAT64: for (int64_t i = 0; i < n; i++) d[i] = buf[i]; break;
    default: break;
    }
}

og_status *cpu_in_f64(kernel_ctx *ctx, const tensor *t, int index, double **out) {
    if (!cpu_is_float(t->dtype) && !cpu_is_int(t->dtype))
        return kernel_unsupported_dtype(ctx, index, t->dtype);
    int64_t n = tensor_count(t);
    double *buf;
    OG_TRY(kernel_scratch(ctx, (size_t)n * sizeof(double) + 1, (void **)&buf));
    if (t->dtype == OG_FLOAT32)
        for (int64_t i = 0; i < n; i++) buf[i] = ((const float *)t->data)[i];
    else
        for (int64_t i = 0; i < n; i++) buf[i] = tensor_get_f64(t, i);
    *out = buf;
    return NULL;
}

void cpu_store_f64(tensor *t, const double *src) {
    int64_t n = tensor_count(t);
    void *p = t->data;
    switch (t->dtype) {
#define ST(DT, T, EXPR)                                                                  \
    case DT:                                                                             \
        for (int64_t i = 0; i < n; i++) ((T *)p)[i] = EXPR;                              \
        break;
        ST(OG_FLOAT32, float, (float)src[i])
        ST(OG_FLOAT64, double, src[i])
        ST(OG_FLOAT16, uint16_t, f32_to_f16((float)src[i]))
        ST(OG_BFLOAT16, uint16_t, f32_to_bf16((float)src[i]))
        ST(OG_INT8, int8_t, (int8_t)cpu_f2i(src[i]))
        ST(OG_UINT8, uint8_t, (uint8_t)cpu_f2i(src[i]))
        ST(OG_INT16, int16_t, (int16_t)cpu_f2i(src[i]))
        ST(OG_UINT16, uint16_t, (uint16_t)cpu_f2i(src[i]))
        ST(OG_INT32, int32_t, (int32_t)cpu_f2i(src[i]))
        ST(OG_UINT32, uint32_t, (uint32_t)cpu_f2i(src[i]))
        ST(OG_INT64, int64_t, cpu_f2i(src[i]))
        ST(OG_UINT64, uint64_t, src[i] >= 9.2233720368547758e18 && src[i] < 1.8446744073709552e19
                                         ? (uint64_t)src[i] : (uint64_t)cpu_f2i(src[i]))
        ST(OG_BOOL, uint8_t, src[i] != 0)
#undef ST
    default: break;
    }
}

og_status *cpu_scalar_i64(const kernel_ctx *ctx, int index, int64_t *out) {
    const tensor *t = kernel_input(ctx, index);
    if (!t) return kernel_errorf(ctx, OG_ERR_INVALID_MODEL, "input %d is missing", index);
    if ((t->dtype != OG_INT64 && t->dtype != OG_INT32) || tensor_count(t) != 1)
        return kernel_errorf(ctx, OG_ERR_INVALID_ARGUMENT, "input %d must be one int32 or "
                             "int64 value (got %s with %lld elements)", index,
                             og_dtype_name(t->dtype), (long long)tensor_count(t));
    *out = tensor_get_i64(t, 0);
    return NULL;
}

bool cpu_is_f32able(og_dtype dt) {
    return dt == OG_FLOAT32 || dt == OG_FLOAT16 || dt == OG_BFLOAT16;
}

bool cpu_wants_output(const kernel_ctx *ctx, int i) {
    return i < ctx->n_outputs && i < ctx->node->n_outputs && ctx->node->outputs[i] >= 0;
}

void cpu_load_f64(og_dtype dt, const void *src, int64_t off, int64_t n, double *dst) {
    switch (dt) {
#define LD(DT, T, EXPR)                                                                  \
    case DT: {                                                                           \
        const T *s = (const T *)src + off;                                               \
        for (int64_t i = 0; i < n; i++) dst[i] = EXPR;                                   \
        break;                                                                           \
    }
        LD(OG_FLOAT32, float, s[i])
        LD(OG_FLOAT64, double, s[i])
        LD(OG_FLOAT16, uint16_t, f16_to_f32(s[i]))
        LD(OG_BFLOAT16, uint16_t, bf16_to_f32(s[i]))
        LD(OG_INT8, int8_t, s[i])
        LD(OG_UINT8, uint8_t, s[i])
        LD(OG_INT16, int16_t, s[i])
        LD(OG_UINT16, uint16_t, s[i])
        LD(OG_INT32, int32_t, s[i])
        LD(OG_UINT32, uint32_t, s[i])
        LD(OG_INT64, int64_t, (double)s[i])
        LD(OG_UINT64, uint64_t, (double)s[i])
        LD(OG_BOOL, uint8_t, s[i] != 0)
#undef LD
    default:
        for (int64_t i = 0; i < n; i++) dst[i] = 0;
        break;
    }
}

/* rint then clamp into [lo, hi]; NaN becomes 0. */
static inline double cpu_round_clamp(double v, double lo, double hi) {
    if (!(v == v)) return 0;
    v = nearbyint(v);
    return v < lo ? lo : v > hi ? hi : v;
}

void cpu_store_f64_rounded(og_dtype dt, void *dst, int64_t off, int64_t n, const double *src) {
    switch (dt) {
#define ST(DT, T, EXPR)                                                                  \
    case DT: {                                                                           \
        T *d = (T *)dst + off;                                                           \
        for (int64_t i = 0; i < n; i++) d[i] = EXPR;                                     \
        break;                                                                           \
    }
        ST(OG_FLOAT32, float, (float)src[i])
        ST(OG_FLOAT64, double, src[i])
        ST(OG_FLOAT16, uint16_t, f32_to_f16((float)src[i]))
        ST(OG_BFLOAT16, uint16_t, f32_to_bf16((float)src[i]))
        ST(OG_INT8, int8_t, (int8_t)cpu_round_clamp(src[i], INT8_MIN, INT8_MAX))
        ST(OG_UINT8, uint8_t, (uint8_t)cpu_round_clamp(src[i], 0, UINT8_MAX))
        ST(OG_INT16, int16_t, (int16_t)cpu_round_clamp(src[i], INT16_MIN, INT16_MAX))
        ST(OG_UINT16, uint16_t, (uint16_t)cpu_round_clamp(src[i], 0, UINT16_MAX))
        ST(OG_INT32, int32_t, (int32_t)cpu_round_clamp(src[i], INT32_MIN, INT32_MAX))
        ST(OG_UINT32, uint32_t, (uint32_t)cpu_round_clamp(src[i], 0, UINT32_MAX))
        ST(OG_INT64, int64_t, cpu_f2i(nearbyint(src[i])))
        ST(OG_UINT64, uint64_t, src[i] >= 1.8446744073709552e19 ? UINT64_MAX
                                : src[i] >= 9.2233720368547758e18
                                    ? (uint64_t)nearbyint(src[i])
                                    : (uint64_t)(src[i] > 0 ? cpu_f2i(nearbyint(src[i])) : 0))
        ST(OG_BOOL, uint8_t, src[i] != 0)
#undef ST
    default: break;
    }
}

og_status *cpu_want_dtype(const kernel_ctx *ctx, int i, const char *what, og_dtype dt) {
    const tensor *t = kernel_input(ctx, i);
    if (t && t->dtype != dt)
        return kernel_errorf(ctx, OG_ERR_INVALID_ARGUMENT, "input %d (%s) is %s, expected %s",
                             i, what, og_dtype_name(t->dtype), og_dtype_name(dt));
    return NULL;
}

og_status *cpu_want_shape(const kernel_ctx *ctx, int i, const char *what, int rank,
                          const int64_t *dims) {
    const tensor *t = kernel_input(ctx, i);
    bool ok = t->rank == rank;
    for (int d = 0; ok && d < rank; d++) ok = t->dims[d] == dims[d];
    if (ok) return NULL;
    char a[96], b[96];
    return kernel_errorf(ctx, OG_ERR_INVALID_ARGUMENT, "input %d (%s) has shape %s, expected %s",
                         i, what, shape_str(t->dims, t->rank, a, sizeof a),
                         shape_str(dims, rank, b, sizeof b));
}

/* "past_key 'name'": an input's role and, where the node belongs to a graph, its tensor. */
static const char *input_label(const kernel_ctx *ctx, int i, const char *role, char *buf,
                               size_t size) {
    int v = ctx->graph && i < ctx->node->n_inputs ? ctx->node->inputs[i] : -1;
    if (v < 0) snprintf(buf, size, "%s", role);
    else snprintf(buf, size, "%s '%s'", role, ctx->graph->values[v].name);
    return buf;
}

og_status *cpu_want_past_kv(const kernel_ctx *ctx, int ik, int iv, int64_t B, int64_t H,
                            int64_t Dk, int64_t Dv, int64_t *P) {
    const tensor *pk = kernel_input(ctx, ik), *pv = kernel_input(ctx, iv);
    char la[160], lb[160], a[96], b[96];
    *P = 0;
    if (!pk && !pv) return NULL;
    if (!pk || !pv)
        return kernel_errorf(ctx, OG_ERR_INVALID_MODEL, "past_key (input %d) and past_value "
                             "(input %d) must be given together; only %s is", ik, iv,
                             pk ? input_label(ctx, ik, "past_key", la, sizeof la)
                                : input_label(ctx, iv, "past_value", la, sizeof la));
    if (pk->rank != 4 || pk->dims[0] != B || pk->dims[1] != H || pk->dims[3] != Dk)
        return kernel_errorf(ctx, OG_ERR_INVALID_ARGUMENT, "input %d (%s) has shape %s, "
                             "expected [%lld,%lld,past_length,%lld] (batch, kv heads, past "
                             "length, head size)", ik,
                             input_label(ctx, ik, "past_key", la, sizeof la),
                             shape_str(pk->dims, pk->rank, a, sizeof a), (long long)B,
                             (long long)H, (long long)Dk);
    const int64_t want[4] = {B, H, pk->dims[2], Dv};
    bool ok = pv->rank == 4;
    for (int d = 0; ok && d < 4; d++) ok = pv->dims[d] == want[d];
    if (!ok)
        return kernel_errorf(ctx, OG_ERR_INVALID_ARGUMENT, "input %d (%s) has shape %s, "
                             "expected %s (batch, kv heads, the past length of %s, head size)",
                             iv, input_label(ctx, iv, "past_value", la, sizeof la),
                             shape_str(pv->dims, pv->rank, a, sizeof a),
                             shape_str(want, 4, b, sizeof b),
                             input_label(ctx, ik, "past_key", lb, sizeof lb));
    *P = pk->dims[2];
    return NULL;
}
