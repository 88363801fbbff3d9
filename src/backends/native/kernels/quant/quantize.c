/* QuantizeLinear and DequantizeLinear: per-tensor, per-axis and blocked (opset 21)
 * scales; int8/uint8/int16/uint16/int32, packed int4/uint4, float8 (e4m3fn, e4m3fnuz,
 * e5m2, e5m2fnuz) and packed float4e2m1. The tensor is walked as rows [outer, axis] of
 * `inner` elements; a row's scale index is fixed except in blocked mode, where it steps
 * with the inner index. Small floats are encoded by searching the code whose value is
 * nearest (ties to the even code), which is exact round-to-nearest-even. */
#include "backends/native/kernels/quant/quant.h"
#include "backends/native/kernels/kernel_util.h"

#include "base/half.h"

#include <math.h>
#include <string.h>

enum { MF_FN, MF_IEEE, MF_FNUZ }; /* no inf / with inf / unsigned-zero NaN at 0x80 */

typedef struct mf_fmt {
    og_dtype dt;
    int ebits, mbits, bias, maxcode, kind;
} mf_fmt;

static const mf_fmt mf_fmts[] = {
    {OG_FLOAT8E4M3FN, 4, 3, 7, 0x7e, MF_FN},   {OG_FLOAT8E4M3FNUZ, 4, 3, 8, 0x7f, MF_FNUZ},
    {OG_FLOAT8E5M2, 5, 2, 15, 0x7b, MF_IEEE},  {OG_FLOAT8E5M2FNUZ, 5, 2, 16, 0x7f, MF_FNUZ},
    {OG_FLOAT4E2M1, 2, 1, 1, 0x7, MF_FN},
};

static const mf_fmt *mf_find(og_dtype dt) {
    for (size_t i = 0; i < sizeof mf_fmts / sizeof mf_fmts[0]; i++)
        if (mf_fmts[i].dt == dt) return &mf_fmts[i];
    return NULL;
}

static float mf_decode(const mf_fmt *f, unsigned c) {
    unsigned sbit = 1u << (f->ebits + f->mbits), mag = c & (sbit - 1);
    if (f->kind == MF_FNUZ && c == sbit) return NAN;
    if ((int)mag > f->maxcode) {
        if (f->kind != MF_IEEE || (int)mag != f->maxcode + 1) return NAN;
        return c & sbit ? -INFINITY : INFINITY;
    }
    unsigned e = mag >> f->mbits, m = mag & ((1u << f->mbits) - 1);
    float v = e ? ldexpf(1.0f + (float)m / (float)(1u << f->mbits), (int)e - f->bias)
                : ldexpf((float)m, 1 - f->bias - f->mbits);
    return c & sbit ? -v : v;
}

static unsigned mf_encode(const mf_fmt *f, const float *lut, float v, bool saturate) {
    unsigned sbit = 1u << (f->ebits + f->mbits);
    bool four = f->dt == OG_FLOAT4E2M1;
    unsigned nan = f->kind == MF_FNUZ ? sbit : four ? (unsigned)f->maxcode : 0x7f;
    if (isnan(v)) return nan;
    unsigned sign = signbit(v) ? sbit : 0, code;
    float a = fabsf(v), top = lut[f->maxcode], ulp = top - lut[f->maxcode - 1];
    if (a > top) {
        bool over = a > top + ulp / 2 || (a == top + ulp / 2 && (f->maxcode & 1));
        if (!over || saturate || four) return sign | (unsigned)f->maxcode;
        return f->kind == MF_IEEE ? sign | (unsigned)(f->maxcode + 1) : nan;
    }
    int lo = 0, hi = f->maxcode; /* largest code with lut[code] <= a */
    while (lo < hi) {
        int mid = (lo + hi + 1) / 2;
        if (lut[mid] <= a) lo = mid;
        else hi = mid - 1;
    }
    code = (unsigned)lo;
    if (lo < f->maxcode) {
        float dl = a - lut[lo], dh = lut[lo + 1] - a;
        if (dh < dl || (dh == dl && (lo & 1))) code++;
    }
    if (code == 0 && f->kind == MF_FNUZ) return 0;
    return sign | code;
}

typedef struct q_job {
    const void *x, *zp;
    const float *scale, *xf;
    void *y;
    float *yf;
    og_dtype xdt, zdt, ydt;
    const mf_fmt *mf;
    float lut[256], zlut[256];
    int64_t rows, len, inner, sa, bs, nscale, nzp;
    int mode; /* 0 per-tensor, 1 per-axis, 2 blocked */
    bool saturate;
} q_job;

static inline bool is_packed(og_dtype dt) {
    return dt == OG_INT4 || dt == OG_UINT4 || dt == OG_FLOAT4E2M1;
}

/* Element i of a quantized tensor as float (float8/float4 through lut). */
static inline float q_ld(const void *p, og_dtype dt, int64_t i, const float *lut) {
    const uint8_t *u = p;
    unsigned nib = (u[i >> 1] >> ((i & 1) * 4)) & 15;
    switch (dt) {
    case OG_INT8: return ((const int8_t *)p)[i];
    case OG_UINT8: return u[i];
    case OG_INT16: return ((const int16_t *)p)[i];
    case OG_UINT16: return ((const uint16_t *)p)[i];
    case OG_INT32: return (float)((const int32_t *)p)[i];
    case OG_UINT4: return (float)nib;
    case OG_INT4: return (float)((int)nib - (nib & 8 ? 16 : 0));
    case OG_FLOAT4E2M1: return lut[nib];
    default: return lut[u[i]];
    }
}

static void q_range(og_dtype dt, float *lo, float *hi) {
    switch (dt) {
    case OG_INT8: *lo = -128, *hi = 127; break;
    case OG_UINT8: *lo = 0, *hi = 255; break;
    case OG_INT16: *lo = -32768, *hi = 32767; break;
    case OG_UINT16: *lo = 0, *hi = 65535; break;
    case OG_INT4: *lo = -8, *hi = 7; break;
    default: *lo = 0, *hi = 15; break; /* uint4 */
    }
}

/* Scale (and zero-point) index of row r's element 0, and its step along the row. */
static inline int64_t q_sbase(const q_job *j, int64_t r, int64_t *step) {
    *step = j->mode == 2;
    if (j->mode == 0) return 0;
    if (j->mode == 1) return r % j->len;
    return ((r / j->len) * j->sa + (r % j->len) / j->bs) * j->inner;
}

static inline float q_zero(const q_job *j, int64_t s) {
    if (!j->zp) return 0;
    return q_ld(j->zp, j->zdt, j->nzp == 1 ? 0 : s, j->zlut);
}

static void deq_rows(void *arg, int64_t b, int64_t e) {
    const q_job *j = arg;
    bool use_zp = !j->mf; /* float8/float4 zero points carry no offset */
    for (int64_t r = b; r < e; r++) {
        int64_t step, s0 = q_sbase(j, r, &step);
        for (int64_t i = 0; i < j->inner; i++) {
            int64_t k = r * j->inner + i, s = s0 + i * step;
            float v = q_ld(j->x, j->xdt, k, j->lut);
            j->yf[k] = (v - (use_zp ? q_zero(j, s) : 0.0f)) * j->scale[s];
        }
    }
}

static void q_rows(void *arg, int64_t b, int64_t e) {
    const q_job *j = arg;
    float lo = 0, hi = 0;
    if (!j->mf) q_range(j->ydt, &lo, &hi);
    uint8_t *u = j->y;
    for (int64_t r = b; r < e; r++) {
        int64_t step, s0 = q_sbase(j, r, &step);
        for (int64_t i = 0; i < j->inner; i++) {
            int64_t k = r * j->inner + i, s = s0 + i * step;
            float v = j->xf[k] / j->scale[s];
            unsigned code;
            if (j->mf) {
                if (j->ydt == OG_FLOAT4E2M1) v += q_zero(j, s);
                code = mf_encode(j->mf, j->lut, v, j->saturate);
            } else {
                v = rintf(v) + q_zero(j, s);
                v = v < lo ? lo : v > hi ? hi : v;
                int iv = (int)v;
                switch (j->ydt) {
                case OG_INT16: case OG_UINT16: ((uint16_t *)j->y)[k] = (uint16_t)iv; continue;
                default: code = (unsigned)iv & 0xff;
                }
            }
            if (!is_packed(j->ydt)) u[k] = (uint8_t)code;
            else if (k & 1) u[k >> 1] |= (uint8_t)((code & 15) << 4);
            else u[k >> 1] = (uint8_t)(code & 15);
        }
    }
}

/* Checks scale (input 1) and zero point (input 2) against x and fills the row layout. */
static og_status *q_layout(kernel_ctx *ctx, q_job *j) {
    const tensor *x = ctx->inputs[0], *s = ctx->inputs[1], *z = kernel_input(ctx, 2);
    int axis = 0;
    j->bs = ctx->opset >= 21 ? graph_attr_int(ctx->node, "block_size", 0) : 0;
    j->nscale = tensor_count(s);
    /* axis matters only for per-axis and blocked scales; per-tensor splits at dim 0 */
    if (x->rank && (j->bs || j->nscale != 1 || s->rank > 1))
        OG_TRY(cpu_axis(ctx, graph_attr_int(ctx->node, "axis", 1), x->rank, "axis", &axis));
    j->len = x->rank ? x->dims[axis] : 1;
    j->inner = cpu_dims_prod(x->dims, axis + 1, x->rank);
    j->rows = cpu_dims_prod(x->dims, 0, x->rank ? axis + 1 : 0);
    char a[96], b[96];
    bool ok = true;
    if (j->bs > 0) {
        j->mode = 2;
        ok = s->rank == x->rank && x->rank > 0;
        for (int i = 0; ok && i < x->rank; i++)
            ok = s->dims[i] == (i == axis ? (x->dims[i] + j->bs - 1) / j->bs : x->dims[i]);
        j->sa = ok ? s->dims[axis] : 0;
    } else if (j->nscale != 1 || s->rank > 1) {
        j->mode = 1;
        ok = s->rank == 1 && x->rank > 0 && s->dims[0] == j->len;
    }
    if (!ok || j->bs < 0)
        return kernel_errorf(ctx, OG_ERR_INVALID_ARGUMENT, "input 1 (scale) has shape %s, which "
                             "fits neither per-tensor, per-axis (axis %d) nor blocked "
                             "(block_size %lld) quantization of shape %s",
                             shape_str(s->dims, s->rank, a, sizeof a), axis, (long long)j->bs,
                             shape_str(x->dims, x->rank, b, sizeof b));
    if (z) {
        j->zp = z->data, j->zdt = z->dtype, j->nzp = tensor_count(z);
        if (j->nzp != 1 && j->nzp != j->nscale)
            return kernel_errorf(ctx, OG_ERR_INVALID_ARGUMENT, "input 2 (zero point) has %lld "
                                 "elements; expected 1 or %lld like the scale",
                                 (long long)j->nzp, (long long)j->nscale);
        const mf_fmt *zf = mf_find(z->dtype);
        for (unsigned c = 0; zf && c < (1u << (zf->ebits + zf->mbits + 1)); c++)
            j->zlut[c] = mf_decode(zf, c);
    }
    OG_TRY(cpu_in_f32(ctx, 1, &j->scale));
    return NULL;
}

static bool q_type_ok(og_dtype dt) {
    return dt == OG_INT8 || dt == OG_UINT8 || dt == OG_INT16 || dt == OG_UINT16 ||
           dt == OG_INT4 || dt == OG_UINT4 || mf_find(dt);
}

static void q_fill_lut(q_job *j, og_dtype dt) {
    j->mf = mf_find(dt);
    for (unsigned c = 0; j->mf && c < (1u << (j->mf->ebits + j->mf->mbits + 1)); c++)
        j->lut[c] = mf_decode(j->mf, c);
}

og_status *cpu_dequantize_linear(kernel_ctx *ctx) {
    OG_TRY(kernel_require_inputs(ctx, 2));
    const tensor *x = ctx->inputs[0];
    if (!q_type_ok(x->dtype) && x->dtype != OG_INT32)
        return kernel_unsupported_dtype(ctx, 0, x->dtype);
    q_job *j;
    OG_TRY(kernel_scratch(ctx, sizeof *j, (void **)&j));
    memset(j, 0, sizeof *j);
    j->x = x->data, j->xdt = x->dtype;
    q_fill_lut(j, x->dtype);
    OG_TRY(q_layout(ctx, j));
    og_dtype ydt = ctx->inputs[1]->dtype;
    int64_t odt = ctx->opset >= 23 ? graph_attr_int(ctx->node, "output_dtype", 0) : 0;
    if (odt) ydt = (og_dtype)odt;
    if (ydt != OG_FLOAT32 && ydt != OG_FLOAT16 && ydt != OG_BFLOAT16)
        return kernel_errorf(ctx, OG_ERR_INVALID_MODEL, "output dtype %s is not float32, "
                             "float16 or bfloat16", og_dtype_name(ydt));
    tensor *y;
    OG_TRY(kernel_output(ctx, 0, ydt, x->rank, x->dims, &y));
    OG_TRY(cpu_out_f32(ctx, y, &j->yf));
    threadpool_parallel_for(ctx->pool, j->rows, 1 + 16384 / (j->inner + 1), deq_rows, j);
    cpu_out_f32_done(y, j->yf);
    return NULL;
}

og_status *cpu_quantize_linear(kernel_ctx *ctx) {
    OG_TRY(kernel_require_inputs(ctx, 2));
    const tensor *x = ctx->inputs[0], *z = kernel_input(ctx, 2);
    int64_t odt = ctx->opset >= 21 ? graph_attr_int(ctx->node, "output_dtype", 0) : 0;
    og_dtype ydt = z ? z->dtype : odt ? (og_dtype)odt : OG_UINT8;
    if (z && odt && odt != z->dtype)
        return kernel_errorf(ctx, OG_ERR_INVALID_MODEL, "output_dtype %lld differs from the "
                             "zero point's dtype %s", (long long)odt, og_dtype_name(z->dtype));
    if (!q_type_ok(ydt))
        return kernel_errorf(ctx, OG_ERR_UNSUPPORTED, "quantizing to %s is not implemented",
                             og_dtype_name(ydt));
    q_job *j;
    OG_TRY(kernel_scratch(ctx, sizeof *j, (void **)&j));
    memset(j, 0, sizeof *j);
    j->ydt = ydt;
    j->saturate = ctx->opset < 19 || graph_attr_int(ctx->node, "saturate", 1) != 0;
    q_fill_lut(j, ydt);
    OG_TRY(q_layout(ctx, j));
    OG_TRY(cpu_in_f32(ctx, 0, &j->xf));
    tensor *y;
    OG_TRY(kernel_output(ctx, 0, ydt, x->rank, x->dims, &y));
    j->y = y->data;
    /* Packed outputs share bytes between neighbours: one thread writes them. */
    if (is_packed(ydt)) q_rows(j, 0, j->rows);
    else threadpool_parallel_for(ctx->pool, j->rows, 1 + 16384 / (j->inner + 1), q_rows, j);
    return NULL;
}
