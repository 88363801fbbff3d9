/* com.microsoft GatherBlockQuantized: Gather on block-quantized data, dequantized on
 * the way out: out = (q - zero_point) * scale, the scale and zero point of the block
 * (block_size along quantize_axis) the element falls in. Output dtype = scales' dtype.
 *
 * data may be uint8 holding `bits`-bit values packed along its last dimension (low bits
 * first; the logical last dimension is then 8/bits times the stored one; default zero
 * point 2^(bits-1); zero points packed the same way), int4/uint4 (default zero point 0;
 * zero points of the same dtype), or a float8/float4 type (no zero points; a scale
 * dimension of 1 broadcasts). Unlike Gather, an out-of-range index yields zeros, as
 * onnxruntime does. The hot case, an embedding table quantized along its rows, walks
 * rows; everything else goes element by element. */
#include "backends/native/kernels/quant/quant.h"

#include "base/half.h"
#include "backends/native/kernels/cast/cast.h"

#include <string.h>

typedef struct gbq {
    og_dtype dt, out_dt;
    int bits, per;           /* bits per value; values per byte for packed uint8 */
    int rank, gaxis, qaxis;
    int64_t block;
    int64_t dims[OG_MAX_RANK];  /* logical data dims */
    int64_t sdims[OG_MAX_RANK]; /* scale dims */
    int64_t sstride[OG_MAX_RANK];
    int64_t zlast;           /* uint8 zero points: logical last dim rounded to bytes */
    const void *data, *zp, *scales;
    og_dtype sdt;
    const int64_t *idx64;
    const int32_t *idx32;
    int64_t n_idx, inner; /* inner = elements after gather_axis */
    void *out;
    bool fp;                 /* float8/float4 data */
} gbq;

static float q_value(const gbq *g, const void *base, og_dtype dt, int64_t i) {
    const uint8_t *d = base;
    switch (dt) {
    case OG_UINT8: return (float)((d[i / g->per] >> (g->bits * (int)(i % g->per))) & ((1 << g->bits) - 1));
    case OG_UINT4: return (float)((d[i >> 1] >> ((i & 1) * 4)) & 15);
    case OG_INT4: {
        int v = (d[i >> 1] >> ((i & 1) * 4)) & 15;
        return (float)(v >= 8 ? v - 16 : v);
    }
    default: return (float)cpu_math_load_f64(dt, base, i);
    }
}

static float scale_at(const gbq *g, int64_t i) {
    switch (g->sdt) {
    case OG_FLOAT16: return f16_to_f32(((const uint16_t *)g->scales)[i]);
    case OG_BFLOAT16: return bf16_to_f32(((const uint16_t *)g->scales)[i]);
    default: return ((const float *)g->scales)[i];
    }
}

static void store(const gbq *g, int64_t i, float v) {
    switch (g->out_dt) {
    case OG_FLOAT16: ((uint16_t *)g->out)[i] = f32_to_f16(v); break;
    case OG_BFLOAT16: ((uint16_t *)g->out)[i] = f32_to_bf16(v); break;
    default: ((float *)g->out)[i] = v;
    }
}

/* Dequantized element at logical data coordinates c. */
static float element(const gbq *g, const int64_t *c) {
    int64_t flat = 0, sflat = 0, zflat = 0;
    for (int a = 0; a < g->rank; a++) {
        flat = flat * g->dims[a] + c[a];
        int64_t sc = a == g->qaxis ? c[a] / g->block : c[a];
        if (g->sdims[a] == 1) sc = 0;
        sflat += sc * g->sstride[a];
        zflat = zflat * (a == g->rank - 1 && g->dt == OG_UINT8 ? g->zlast : g->sdims[a]) + sc;
    }
    float q = q_value(g, g->data, g->dt, flat), s = scale_at(g, sflat);
    if (g->fp) return q * s;
    float z = g->zp ? q_value(g, g->zp, g->dt, zflat)
                    : g->dt == OG_UINT8 ? (float)(1 << (g->bits - 1)) : 0.0f;
    return (q - z) * s;
}

static int64_t index_at(const gbq *g, int64_t i) {
    int64_t v = g->idx64 ? g->idx64[i] : g->idx32[i];
    int64_t n = g->dims[g->gaxis];
    if (v < 0) v += n;
    return v < 0 || v >= n ? -1 : v;
}

/* Output element o -> data coordinates (or index -1: out of range). */
static void gather_range(void *arg, int64_t o0, int64_t o1) {
    const gbq *g = arg;
    int64_t c[OG_MAX_RANK];
    int64_t last = g->dims[g->rank - 1];
    bool rows = g->gaxis != g->rank - 1; /* runs along the last axis */
    for (int64_t o = o0; o < o1;) {
        /* o = ((outer * n_idx) + j) * inner + rest */
        int64_t rest = o % g->inner, oj = o / g->inner, j = oj % g->n_idx, out_i = oj / g->n_idx;
        int64_t v = index_at(g, j);
        int64_t run = rows ? last - rest % last : 1;
        if (o + run > o1) run = o1 - o;
        if (v < 0) {
            for (int64_t t = 0; t < run; t++) store(g, o + t, 0.0f);
            o += run;
            continue;
        }
        int64_t r = out_i;
        for (int a = g->gaxis - 1; a >= 0; a--) {
            c[a] = r % g->dims[a];
            r /= g->dims[a];
        }
        c[g->gaxis] = v;
        r = rest;
        for (int a = g->rank - 1; a > g->gaxis; a--) {
            c[a] = r % g->dims[a];
            r /= g->dims[a];
        }
        for (int64_t t = 0; t < run; t++) {
            store(g, o + t, element(g, c));
            c[g->rank - 1]++;
        }
        o += run;
    }
}

static bool is_fp(og_dtype dt) {
    return dt == OG_FLOAT8E4M3FN || dt == OG_FLOAT8E4M3FNUZ || dt == OG_FLOAT8E5M2 ||
           dt == OG_FLOAT8E5M2FNUZ || dt == OG_FLOAT4E2M1;
}

og_status *cpu_gather_block_quantized(kernel_ctx *ctx) {
    OG_TRY(kernel_require_inputs(ctx, 3));
    const tensor *data = ctx->inputs[0], *ind = ctx->inputs[1], *sc = ctx->inputs[2];
    const tensor *zp = kernel_input(ctx, 3);
    gbq g = {.dt = data->dtype, .sdt = sc->dtype, .out_dt = sc->dtype, .data = data->data,
             .scales = sc->data, .rank = data->rank};
    g.bits = (int)graph_attr_int(ctx->node, "bits", 4);
    g.block = graph_attr_int(ctx->node, "block_size", 128);
    int64_t ga = graph_attr_int(ctx->node, "gather_axis", 0);
    int64_t qa = graph_attr_int(ctx->node, "quantize_axis", 1);
    g.fp = is_fp(g.dt);
    if (g.dt != OG_UINT8 && g.dt != OG_INT4 && g.dt != OG_UINT4 && !g.fp)
        return kernel_unsupported_dtype(ctx, 0, g.dt);
    if (g.sdt != OG_FLOAT32 && g.sdt != OG_FLOAT16 && g.sdt != OG_BFLOAT16)
        return kernel_unsupported_dtype(ctx, 2, g.sdt);
    if (ind->dtype != OG_INT64 && ind->dtype != OG_INT32)
        return kernel_unsupported_dtype(ctx, 1, ind->dtype);
    int r = data->rank;
    if (r < 1)
        return kernel_error(ctx, OG_ERR_INVALID_ARGUMENT, "input 0 (data) must have rank >= 1");
    if (ga < -r || ga >= r || qa < -r || qa >= r)
        return kernel_errorf(ctx, OG_ERR_INVALID_MODEL, "gather_axis %lld or quantize_axis %lld "
                             "is outside [-%d, %d]", (long long)ga, (long long)qa, r, r - 1);
    g.gaxis = (int)(ga < 0 ? ga + r : ga);
    g.qaxis = (int)(qa < 0 ? qa + r : qa);
    if (g.fp ? (g.block != 0 && (g.block < 16 || (g.block & (g.block - 1))))
             : (g.block < 16 || (g.block & (g.block - 1))))
        return kernel_errorf(ctx, OG_ERR_INVALID_MODEL, "block_size %lld must be a power of two "
                             ">= 16", (long long)g.block);
    memcpy(g.dims, data->dims, sizeof(int64_t) * (size_t)r);
    g.per = 1;
    if (g.dt == OG_UINT8) {
        if (g.bits != 2 && g.bits != 4 && g.bits != 8)
            return kernel_errorf(ctx, OG_ERR_INVALID_MODEL, "bits=%d must be 2, 4 or 8", g.bits);
        g.per = 8 / g.bits;
        if (g.gaxis != 0)
            return kernel_error(ctx, OG_ERR_INVALID_MODEL, "uint8 data needs gather_axis 0");
        if (g.per > 1 && g.gaxis == g.qaxis)
            return kernel_error(ctx, OG_ERR_INVALID_MODEL, "packed uint8 data needs gather_axis "
                                "!= quantize_axis");
        g.dims[r - 1] *= g.per;
    } else if (!g.fp) {
        g.bits = 4;
    }
    if (g.fp && g.block == 0) g.block = g.dims[g.qaxis] ? g.dims[g.qaxis] : 1;
    /* scales: same rank, ceil(dim/block) along quantize_axis, equal (or 1 for fp) elsewhere */
    if (sc->rank != r)
        return kernel_errorf(ctx, OG_ERR_INVALID_ARGUMENT, "input 2 (scales) has rank %d, "
                             "expected %d like data", sc->rank, r);
    for (int a = 0; a < r; a++) {
        int64_t want = a == g.qaxis ? (g.dims[a] + g.block - 1) / g.block : g.dims[a];
        if (sc->dims[a] != want && !(g.fp && sc->dims[a] == 1 && a != g.qaxis)) {
            char s1[96], s2[96];
            return kernel_errorf(ctx, OG_ERR_INVALID_ARGUMENT, "input 2 (scales) has shape %s; "
                                 "with data %s, block_size %lld and quantize_axis %d it must "
                                 "have %lld at axis %d", shape_str(sc->dims, r, s1, sizeof s1),
                                 shape_str(g.dims, r, s2, sizeof s2), (long long)g.block,
                                 g.qaxis, (long long)want, a);
        }
        g.sdims[a] = sc->dims[a];
    }
    int64_t st = 1;
    for (int a = r - 1; a >= 0; a--) {
        g.sstride[a] = st;
        st *= g.sdims[a];
    }
    if (zp) {
        if (g.fp)
            return kernel_error(ctx, OG_ERR_INVALID_MODEL, "input 3 (zero_points) is not allowed "
                                "for float8/float4 data");
        if (zp->dtype != g.dt)
            return kernel_errorf(ctx, OG_ERR_INVALID_ARGUMENT, "input 3 (zero_points) is %s, but "
                                 "data is %s", og_dtype_name(zp->dtype), og_dtype_name(g.dt));
        int64_t count = 1;
        g.zlast = g.sdims[r - 1];
        if (g.dt == OG_UINT8) g.zlast = (g.zlast + g.per - 1) / g.per * g.per;
        for (int a = 0; a < r; a++) count *= a == r - 1 ? g.zlast : g.sdims[a];
        int64_t have = g.dt == OG_UINT8 ? tensor_count(zp) * g.per : tensor_count(zp);
        if (have != count)
            return kernel_errorf(ctx, OG_ERR_INVALID_ARGUMENT, "input 3 (zero_points) has %lld "
                                 "elements, expected %lld (the scales' shape%s)",
                                 (long long)tensor_count(zp),
                                 (long long)(g.dt == OG_UINT8 ? count / g.per : count),
                                 g.per > 1 ? ", packed along the last axis" : "");
        g.zp = zp->data;
    }
    int out_rank = r - 1 + ind->rank;
    if (out_rank > OG_MAX_RANK)
        return kernel_errorf(ctx, OG_ERR_UNSUPPORTED, "output rank %d exceeds %d", out_rank,
                             OG_MAX_RANK);
    int64_t od[OG_MAX_RANK];
    int k = 0;
    for (int a = 0; a < g.gaxis; a++) od[k++] = g.dims[a];
    for (int a = 0; a < ind->rank; a++) od[k++] = ind->dims[a];
    for (int a = g.gaxis + 1; a < r; a++) od[k++] = g.dims[a];
    tensor *out;
    OG_TRY(kernel_output(ctx, 0, g.out_dt, out_rank, od, &out));
    int64_t total = tensor_count(out);
    if (total == 0) return NULL;
    g.out = out->data;
    g.n_idx = tensor_count(ind);
    g.inner = 1;
    for (int a = g.gaxis + 1; a < r; a++) g.inner *= g.dims[a];
    if (ind->dtype == OG_INT64)
        g.idx64 = ind->data;
    else
        g.idx32 = ind->data;
    threadpool_parallel_for(ctx->pool, total, 4096, gather_range, &g);
    return NULL;
}
