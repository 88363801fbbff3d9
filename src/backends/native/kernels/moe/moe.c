/* com.microsoft MoE and QMoE: a mixture of experts over token rows.
 *
 * Routing, as onnxruntime's CPU kernels do it: per token, softmax over router_probs'
 * row (in float32), the k largest probabilities (ties to the higher expert index), and
 * as mixing weights those probabilities, divided by their sum when
 * normalize_routing_weights is 1. QMoE always divides by the sum unless router_weights
 * (input 14) is given; then it mixes with router_weights' values at the chosen experts,
 * divided by their sum when normalize_routing_weights is 1. use_sparse_mixer does not
 * change the result on onnxruntime's CPU, and is accepted and ignored here alike.
 *
 * Each expert e: h = x W1[e]^T + b1[e]; a = act(h); y = a W2[e]^T + b2[e]; the output is
 * the weighted sum of the chosen experts' y. W1 is (E, F * I, H), W2 (E, H, I). act is
 * relu, gelu (tanh form), silu, identity, or swiglu: G * sigmoid(alpha G) * (L + beta)
 * with G = min(g, limit), L = clamp(l, -limit, limit) and the pair (g, l) interleaved in
 * h (swiglu_fusion 1), its two halves (2), or h and h3 = x W3[e]^T + b3[e] (0, FC3). With
 * another act and FC3 present, a = act(h) * h3 (the gated form of Mixtral's experts).
 * onnxruntime's CPU implements swiglu_fusion 1 only and no FC3; those forms follow the
 * operator description and are checked against numpy.
 *
 * QMoE's weights are quantized per row of W (one row per output, K values packed from the
 * low bits of each byte up, like MatMulNBits): w = (q - zero_point) * scale per block of
 * block_size along K, or per row without block_size; zero points default to 2^(bits-1).
 * The products run in float32 (onnxruntime 1.31's CPU QMoE does so at every
 * accuracy_level): block-wise through the MatMulNBits kernels, other layouts by
 * dequantizing the expert's rows first.
 *
 * Tokens are grouped by expert; experts run one after another, each product split over
 * the pool. Weights that are float16, and every QMoE scale, are converted per call: a
 * per-node prepared state could hold them once. */
#include "backends/native/kernels/moe/moe.h"
#include "backends/native/kernels/matmul/gemm_f32.h"
#include "backends/native/kernels/kernel_util.h"
#include "backends/native/kernels/matmul/matmul_nbits.h"

#include "base/half.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

enum { ACT_RELU, ACT_GELU, ACT_SILU, ACT_IDENTITY, ACT_SWIGLU };

/* One projection (FC1, FC2 or FC3): N outputs from K inputs per expert. */
typedef struct moe_fc {
    const tensor *w, *scales, *bias, *zp; /* scales / zp: QMoE only */
    int64_t N, K;
    int bits;       /* 0: float weights */
    int64_t kb;     /* blocks per row (1 without block_size) */
    int64_t bs;     /* block size (K without block_size) */
    bool blockwise; /* block_size given: scales and zero points per (row, block) */
} moe_fc;

typedef struct moe_cfg {
    int64_t T, H, I, E, k, F; /* tokens, hidden, inter, experts, top k, 1 or 2 (fused) */
    int act, fusion;
    float alpha, beta, limit;
    bool normalize, qmoe;
    moe_fc fc[3];   /* fc[2].w NULL without FC3 */
} moe_cfg;

static og_status *fc_err(kernel_ctx *ctx, int i, const char *what, const tensor *t,
                         const char *expect) {
    char a[96];
    return kernel_errorf(ctx, OG_ERR_INVALID_ARGUMENT, "input %d (%s) has shape %s, expected %s",
                         i, what, t ? shape_str(t->dims, t->rank, a, sizeof a) : "(none)", expect);
}

/* Checks projection f's inputs (weight at input iw, then its scales, bias, zero points
 * at is, ib, iz; -1 where the op has none). */
static og_status *fc_setup(kernel_ctx *ctx, moe_cfg *c, moe_fc *f, int iw, int is, int ib,
                           int iz, int bits, int64_t block, const char *name) {
    og_dtype dt = ctx->inputs[0]->dtype;
    char want[128];
    f->w = kernel_input(ctx, iw);
    f->scales = is >= 0 ? kernel_input(ctx, is) : NULL;
    f->bias = ib >= 0 ? kernel_input(ctx, ib) : NULL;
    f->zp = iz >= 0 ? kernel_input(ctx, iz) : NULL;
    f->bits = c->qmoe ? bits : 0;
    int64_t rowlen = c->qmoe ? f->K * bits / 8 : f->K;
    snprintf(want, sizeof want, "(%lld, %lld, %lld) %s for %s", (long long)c->E,
             (long long)f->N, (long long)rowlen, c->qmoe ? "uint8" : og_dtype_name(dt), name);
    const tensor *w = f->w;
    if (!w || w->rank != 3 || w->dims[0] != c->E || w->dims[1] != f->N || w->dims[2] != rowlen ||
        w->dtype != (c->qmoe ? OG_UINT8 : dt) || (c->qmoe && (f->K * bits) % 8))
        return fc_err(ctx, iw, name, w, want);
    if (f->bias) {
        if (f->bias->dtype != dt || tensor_count(f->bias) != c->E * f->N) {
            snprintf(want, sizeof want, "%s (%lld, %lld)", og_dtype_name(dt), (long long)c->E,
                     (long long)f->N);
            return fc_err(ctx, ib, "bias", f->bias, want);
        }
    }
    if (!c->qmoe) return NULL;
    f->blockwise = block > 0;
    f->bs = block > 0 ? block : f->K;
    f->kb = block > 0 ? f->K / block : 1;
    if (block > 0 && f->K % block)
        return kernel_errorf(ctx, OG_ERR_INVALID_ARGUMENT, "%s: %lld inputs do not split into "
                             "blocks of %lld", name, (long long)f->K, (long long)block);
    const tensor *s = f->scales;
    if (!s || !cpu_is_f32able(s->dtype) || tensor_count(s) != c->E * f->N * f->kb) {
        snprintf(want, sizeof want, "float (%lld, %lld, %lld) or, without block_size, (%lld, "
                 "%lld)", (long long)c->E, (long long)f->N, (long long)f->kb, (long long)c->E,
                 (long long)f->N);
        return fc_err(ctx, is, "scales", s, want);
    }
    if (f->zp) {
        int64_t per = block > 0 ? f->N * ((f->kb * bits + 7) / 8) : (f->N * bits + 7) / 8;
        if (f->zp->dtype != OG_UINT8 || tensor_count(f->zp) != c->E * per) {
            snprintf(want, sizeof want, "uint8 with %lld packed zero points per expert",
                     (long long)per);
            return fc_err(ctx, iz, "zero_points", f->zp, want);
        }
    }
    return NULL;
}

/* Expert e's rows of f as float32 (N x K) into W: the float weights converted, or the
 * quantized ones dequantized. */
static void fc_dequant(const moe_fc *f, int64_t e, float *W, float *scratch_scales) {
    int64_t N = f->N, K = f->K;
    if (!f->bits) {
        size_t es = f->w->dtype == OG_FLOAT32 ? 4 : 2;
        cpu_load_f32(f->w->dtype, (const char *)f->w->data + (size_t)(e * N * K) * es, N * K, W);
        return;
    }
    size_t ss = f->scales->dtype == OG_FLOAT32 ? 4 : 2;
    cpu_load_f32(f->scales->dtype, (const char *)f->scales->data + (size_t)(e * N * f->kb) * ss,
                 N * f->kb, scratch_scales);
    int per = 8 / f->bits, mask = (1 << f->bits) - 1;
    int64_t rowbytes = K * f->bits / 8;
    const uint8_t *base = (const uint8_t *)f->w->data + e * N * rowbytes;
    for (int64_t n = 0; n < N; n++) {
        const uint8_t *row = base + n * rowbytes;
        for (int64_t b = 0; b < f->kb; b++) {
            float z = (float)(1 << (f->bits - 1)), s = scratch_scales[n * f->kb + b];
            if (f->zp) {
                /* block-wise (E, N, ceil(kb * bits / 8)); per row (E, ceil(N * bits / 8)),
                 * packed along N */
                const uint8_t *zp = f->zp->data;
                int64_t i = f->blockwise ? b : n;
                const uint8_t *zrow = f->blockwise ? zp + (e * N + n) * ((f->kb * f->bits + 7) / 8)
                                                   : zp + e * ((N * f->bits + 7) / 8);
                z = (float)((zrow[i / per] >> (f->bits * (i % per))) & mask);
            }
            for (int64_t k = b * f->bs; k < (b + 1) * f->bs; k++)
                W[n * K + k] = ((float)((row[k / per] >> (f->bits * (k % per))) & mask) - z) * s;
        }
    }
}

/* Whether expert products of f go through the MatMulNBits kernels. */
static bool fc_nbits(const moe_fc *f) {
    return f->bits && f->blockwise && f->bs >= 16 && f->bs <= 256 && !(f->bs & (f->bs - 1)) &&
           f->bs * f->bits % 8 == 0;
}

typedef struct moe_scratch {
    float *W;       /* N x K floats for the dequantized / converted path */
    float *scales;  /* N x kb */
    float *bias;    /* N */
    void *work;     /* gemm or MatMulNBits working memory */
    size_t work_size;
} moe_scratch;

/* Elements [off, off + n) of t as float32: in place for float32, else converted into buf. */
static const float *f32_slice(const tensor *t, int64_t off, int64_t n, float *buf) {
    if (t->dtype == OG_FLOAT32) return (const float *)t->data + off;
    cpu_load_f32(t->dtype, (const char *)t->data + (size_t)off * 2, n, buf);
    return buf;
}

/* Y (M x N) = A (M x K) W[e]^T + b[e]. */
static og_status *fc_run(threadpool *pool, const moe_fc *f, int64_t e, const float *A, int64_t M,
                         float *Y, moe_scratch *s) {
    const float *bias = f->bias ? f32_slice(f->bias, e * f->N, f->N, s->bias) : NULL;
    if (fc_nbits(f)) {
        int64_t rowbytes = f->K * f->bits / 8, zstride = (f->kb * f->bits + 7) / 8;
        mnb_problem p = {.M = M, .N = f->N, .K = f->K, .bits = f->bits, .block_size = (int)f->bs,
                         .k_blocks = f->kb, .blob = f->bs * f->bits / 8,
                         .B = (const uint8_t *)f->w->data + e * f->N * rowbytes,
                         .scales = f32_slice(f->scales, e * f->N * f->kb, f->N * f->kb, s->scales),
                         .bias = bias, .A = A, .Y = Y};
        if (f->zp) {
            p.zp_packed = (const uint8_t *)f->zp->data + e * f->N * zstride;
            p.zp_stride = zstride;
        }
        /* an expert's rows in pieces below the sgemm path's threshold, so that a token's
         * bits do not depend on how many others its batch sends to the same expert (the
         * engine's decode rows against a run alone) */
        for (int64_t r0 = 0; r0 < M; r0 += MNB_GEMM_MIN_M - 1) {
            p.M = M - r0 < MNB_GEMM_MIN_M - 1 ? M - r0 : MNB_GEMM_MIN_M - 1;
            p.A = A + r0 * f->K;
            p.Y = Y + r0 * f->N;
            if (mnb_work_size(&p) > s->work_size)
                return og_errorf(OG_ERR_RUNTIME, "MoE: MatMulNBits working memory undersized");
            OG_TRY(mnb_run(pool, &p, s->work));
        }
        return NULL;
    }
    const float *W = s->W;
    if (!f->bits && f->w->dtype == OG_FLOAT32)
        W = (const float *)f->w->data + e * f->N * f->K;
    else
        fc_dequant(f, e, s->W, s->scales);
    gemm_f32_args g = {.trans_b = true, .M = M, .N = f->N, .K = f->K, .alpha = 1.0f,
                       .A = A, .lda = f->K, .B = W, .ldb = f->K, .C = Y, .ldc = f->N};
    if (gemm_f32_work_size(&g) > s->work_size)
        return og_errorf(OG_ERR_RUNTIME, "MoE: gemm working memory undersized");
    OG_TRY(gemm_f32(pool, &g, s->work));
    if (bias)
        for (int64_t m = 0; m < M; m++)
            for (int64_t n = 0; n < f->N; n++) Y[m * f->N + n] += bias[n];
    return NULL;
}

static float sigmoidf(float x) {
    return x >= 0 ? 1.0f / (1.0f + expf(-x)) : expf(x) / (1.0f + expf(x));
}

static float act1(int act, float x) {
    switch (act) {
    case ACT_RELU: return x > 0 ? x : 0.0f;
    case ACT_GELU: return 0.5f * x * (1.0f + tanhf(0.7978845608f * (x + 0.044715f * x * x * x)));
    case ACT_SILU: return x * sigmoidf(x);
    default: return x;
    }
}

/* out (M x I) = act of h (M x F*I), with h3 (M x I) for FC3. */
static void moe_act(const moe_cfg *c, const float *h, const float *h3, int64_t M, float *out) {
    int64_t I = c->I, W1 = c->F * I;
    for (int64_t m = 0; m < M; m++) {
        const float *r = h + m * W1, *r3 = h3 ? h3 + m * I : NULL;
        float *o = out + m * I;
        for (int64_t i = 0; i < I; i++) {
            if (c->act == ACT_SWIGLU) {
                float g, l;
                if (c->fusion == 1)
                    g = r[2 * i], l = r[2 * i + 1];
                else if (c->fusion == 2)
                    g = r[i], l = r[I + i];
                else
                    g = r[i], l = r3[i];
                g = g < c->limit ? g : c->limit;
                l = l < -c->limit ? -c->limit : l > c->limit ? c->limit : l;
                o[i] = g * sigmoidf(c->alpha * g) * (l + c->beta);
            } else {
                o[i] = act1(c->act, r[i]) * (r3 ? r3[i] : 1.0f);
            }
        }
    }
}

/* Routing (see the top): each token's k experts and weights. */
static void moe_route(const moe_cfg *c, const float *logits, const float *rw, bool qmoe_rule,
                      int32_t *sel, float *wt, float *prob) {
    int64_t E = c->E, k = c->k;
    for (int64_t t = 0; t < c->T; t++) {
        const float *z = logits + t * E;
        float mx = z[0], sum = 0.0f;
        for (int64_t e = 1; e < E; e++) mx = z[e] > mx ? z[e] : mx;
        for (int64_t e = 0; e < E; e++) sum += prob[e] = expf(z[e] - mx);
        for (int64_t e = 0; e < E; e++) prob[e] /= sum;
        float tot = 0.0f;
        for (int64_t j = 0; j < k; j++) {
            int64_t best = -1;
            for (int64_t e = 0; e < E; e++)
                if (prob[e] >= 0 && (best < 0 || prob[e] >= prob[best])) best = e;
            sel[t * k + j] = (int32_t)best;
            wt[t * k + j] = rw ? rw[t * E + best] : prob[best];
            tot += wt[t * k + j];
            prob[best] = -1.0f; /* taken */
        }
        bool norm = rw ? c->normalize : (qmoe_rule || c->normalize);
        if (norm)
            for (int64_t j = 0; j < k; j++) wt[t * k + j] /= tot;
    }
}

static og_status *moe_run(kernel_ctx *ctx, moe_cfg *c) {
    const tensor *x = ctx->inputs[0];
    const tensor *rwt = c->qmoe ? kernel_input(ctx, 14) : NULL;
    og_dtype dt = x->dtype;
    tensor *out;
    OG_TRY(kernel_output(ctx, 0, dt, x->rank, x->dims, &out));
    if (c->T == 0 || c->H == 0) return NULL;
    const float *xf, *logits, *rw = NULL;
    OG_TRY(cpu_in_f32(ctx, 0, &xf));
    OG_TRY(cpu_in_f32(ctx, 1, &logits));
    if (rwt) OG_TRY(cpu_in_f32(ctx, 14, &rw));
    int64_t T = c->T, k = c->k, E = c->E, H = c->H, I = c->I, W1 = c->F * I;
    int32_t *sel, *order, *count;
    float *wt, *prob, *acc;
    OG_TRY(kernel_scratch(ctx, sizeof(int32_t) * (size_t)(T * k) + 1, (void **)&sel));
    OG_TRY(kernel_scratch(ctx, sizeof(int32_t) * (size_t)(T * k) + 1, (void **)&order));
    OG_TRY(kernel_scratch(ctx, sizeof(int32_t) * (size_t)(E + 1), (void **)&count));
    OG_TRY(kernel_scratch(ctx, sizeof(float) * (size_t)(T * k) + 1, (void **)&wt));
    OG_TRY(kernel_scratch(ctx, sizeof(float) * (size_t)E + 1, (void **)&prob));
    OG_TRY(cpu_out_f32(ctx, out, &acc));
    moe_route(c, logits, rw, c->qmoe, sel, wt, prob);
    /* routes grouped by expert, tokens in order within each */
    memset(count, 0, sizeof(int32_t) * (size_t)(E + 1));
    int64_t maxM = 0;
    for (int64_t r = 0; r < T * k; r++) count[sel[r] + 1]++;
    for (int64_t e = 0; e < E; e++) {
        maxM = count[e + 1] > maxM ? count[e + 1] : maxM;
        count[e + 1] += count[e];
    }
    for (int64_t r = 0; r < T * k; r++) order[count[sel[r]]++] = (int32_t)r;
    for (int64_t e = E; e > 0; e--) count[e] = count[e - 1];
    count[0] = 0;

    /* scratch for the largest expert batch */
    moe_scratch s = {0};
    int64_t maxN = 0, maxNK = 0, maxS = 0;
    for (int i = 0; i < 3; i++) {
        const moe_fc *f = &c->fc[i];
        if (!f->w) continue;
        maxN = f->N > maxN ? f->N : maxN;
        maxS = f->N * (f->kb ? f->kb : 1) > maxS ? f->N * (f->kb ? f->kb : 1) : maxS;
        if (!fc_nbits(f)) {
            maxNK = f->N * f->K > maxNK ? f->N * f->K : maxNK;
            gemm_f32_args g = {.trans_b = true, .M = maxM, .N = f->N, .K = f->K};
            size_t ws = gemm_f32_work_size(&g);
            s.work_size = ws > s.work_size ? ws : s.work_size;
        } else {
            /* fc_run hands mnb_run at most MNB_GEMM_MIN_M - 1 rows at a time */
            static float none[1]; /* the sizing reads no data but wants pointers */
            mnb_problem p = {.M = maxM < MNB_GEMM_MIN_M - 1 ? maxM : MNB_GEMM_MIN_M - 1,
                             .N = f->N, .K = f->K, .bits = f->bits,
                             .block_size = (int)f->bs, .k_blocks = f->kb,
                             .blob = f->bs * f->bits / 8,
                             .zp_packed = f->zp ? f->zp->data : NULL, .A = none, .Y = none};
            size_t ws = mnb_work_size(&p);
            s.work_size = ws > s.work_size ? ws : s.work_size;
        }
    }
    float *A, *h, *h3 = NULL, *a, *y;
    OG_TRY(kernel_scratch(ctx, sizeof(float) * (size_t)(maxM * H) + 64, (void **)&A));
    OG_TRY(kernel_scratch(ctx, sizeof(float) * (size_t)(maxM * W1) + 64, (void **)&h));
    if (c->fc[2].w) OG_TRY(kernel_scratch(ctx, sizeof(float) * (size_t)(maxM * I) + 64, (void **)&h3));
    OG_TRY(kernel_scratch(ctx, sizeof(float) * (size_t)(maxM * I) + 64, (void **)&a));
    OG_TRY(kernel_scratch(ctx, sizeof(float) * (size_t)(maxM * H) + 64, (void **)&y));
    OG_TRY(kernel_scratch(ctx, sizeof(float) * (size_t)maxNK + 64, (void **)&s.W));
    OG_TRY(kernel_scratch(ctx, sizeof(float) * (size_t)maxS + 64, (void **)&s.scales));
    OG_TRY(kernel_scratch(ctx, sizeof(float) * (size_t)maxN + 64, (void **)&s.bias));
    OG_TRY(kernel_scratch(ctx, s.work_size + 64, &s.work));

    memset(acc, 0, sizeof(float) * (size_t)(T * H));
    for (int64_t e = 0; e < E; e++) {
        int64_t M = count[e + 1] - count[e];
        if (M == 0) continue;
        const int32_t *routes = order + count[e];
        for (int64_t m = 0; m < M; m++)
            memcpy(A + m * H, xf + (routes[m] / k) * H, sizeof(float) * (size_t)H);
        OG_TRY(fc_run(ctx->pool, &c->fc[0], e, A, M, h, &s));
        if (c->fc[2].w) OG_TRY(fc_run(ctx->pool, &c->fc[2], e, A, M, h3, &s));
        moe_act(c, h, h3, M, a);
        OG_TRY(fc_run(ctx->pool, &c->fc[1], e, a, M, y, &s));
        for (int64_t m = 0; m < M; m++) {
            float w = wt[routes[m]], *o = acc + (routes[m] / k) * H;
            const float *ym = y + m * H;
            for (int64_t d = 0; d < H; d++) o[d] += w * ym[d];
        }
    }
    if (dt != OG_FLOAT32) cpu_out_f32_done(out, acc);
    return NULL;
}

/* Attributes and shapes shared by MoE and QMoE; fills c but the projections. */
static og_status *moe_common(kernel_ctx *ctx, moe_cfg *c, int iw2) {
    const graph_node *n = ctx->node;
    const tensor *x = ctx->inputs[0], *r = ctx->inputs[1];
    char a[96];
    og_dtype dt = x->dtype;
    if (!cpu_is_f32able(dt)) return kernel_unsupported_dtype(ctx, 0, dt);
    if (x->rank != 2 && x->rank != 3)
        return kernel_errorf(ctx, OG_ERR_INVALID_ARGUMENT, "input 0 has shape %s, expected "
                             "(tokens, hidden) or (batch, sequence, hidden)",
                             shape_str(x->dims, x->rank, a, sizeof a));
    c->H = x->dims[x->rank - 1];
    c->T = shape_count(x->dims, x->rank - 1);
    if (r->dtype != dt || r->rank != 2 || r->dims[0] != c->T || r->dims[1] < 1)
        return kernel_errorf(ctx, OG_ERR_INVALID_ARGUMENT, "input 1 (router_probs) is %s %s, "
                             "expected %s (%lld, num_experts)", og_dtype_name(r->dtype),
                             shape_str(r->dims, r->rank, a, sizeof a), og_dtype_name(dt),
                             (long long)c->T);
    c->E = r->dims[1];
    c->k = graph_attr_int(n, "k", 1);
    if (c->k < 1 || c->k > c->E)
        return kernel_errorf(ctx, OG_ERR_INVALID_MODEL, "k=%lld is not in [1, %lld experts]",
                             (long long)c->k, (long long)c->E);
    const char *act = graph_attr_string(n, "activation_type", "relu");
    static const char *acts[] = {"relu", "gelu", "silu", "identity", "swiglu"};
    c->act = -1;
    for (int i = 0; i < 5; i++)
        if (!strcmp(act, acts[i])) c->act = i;
    if (c->act < 0)
        return kernel_errorf(ctx, OG_ERR_INVALID_MODEL, "activation_type '%s' is not one of "
                             "relu, gelu, silu, identity, swiglu", act);
    c->fusion = (int)graph_attr_int(n, "swiglu_fusion", 0);
    if (c->fusion < 0 || c->fusion > 2)
        return kernel_errorf(ctx, OG_ERR_INVALID_MODEL, "swiglu_fusion=%d is not 0, 1 or 2",
                             c->fusion);
    c->alpha = graph_attr_float(n, "activation_alpha", 1.0f);
    c->beta = graph_attr_float(n, "activation_beta", 0.0f);
    c->limit = graph_attr_float(n, "swiglu_limit", INFINITY);
    c->normalize = graph_attr_int(n, "normalize_routing_weights", 0) != 0;
    c->F = c->act == ACT_SWIGLU && c->fusion != 0 ? 2 : 1;
    /* the inter size from FC2's weight (E, H, I or I * bits / 8) */
    const tensor *w2 = kernel_input(ctx, iw2);
    if (!w2 || w2->rank != 3)
        return fc_err(ctx, iw2, "fc2_experts_weights", w2, "(num_experts, hidden, inter)");
    c->I = c->qmoe ? -1 : w2->dims[2];
    return NULL;
}

og_status *cpu_contrib_moe(kernel_ctx *ctx) {
    OG_TRY(kernel_require_inputs(ctx, 3)); /* and input 4, checked with the others */
    moe_cfg c = {0};
    OG_TRY(moe_common(ctx, &c, 4));
    c.fc[0] = (moe_fc){.N = c.F * c.I, .K = c.H};
    c.fc[1] = (moe_fc){.N = c.H, .K = c.I};
    OG_TRY(fc_setup(ctx, &c, &c.fc[0], 2, -1, 3, -1, 0, 0, "fc1_experts_weights"));
    OG_TRY(fc_setup(ctx, &c, &c.fc[1], 4, -1, 5, -1, 0, 0, "fc2_experts_weights"));
    if (kernel_input(ctx, 6)) {
        c.fc[2] = (moe_fc){.N = c.I, .K = c.H};
        OG_TRY(fc_setup(ctx, &c, &c.fc[2], 6, -1, 7, -1, 0, 0, "fc3_experts_weights"));
    }
    if (c.act == ACT_SWIGLU && c.fusion == 0 && !c.fc[2].w)
        return kernel_error(ctx, OG_ERR_INVALID_MODEL, "swiglu with swiglu_fusion=0 needs "
                            "fc3_experts_weights (input 6) for the linear half");
    return moe_run(ctx, &c);
}

og_status *cpu_contrib_qmoe(kernel_ctx *ctx) {
    OG_TRY(kernel_require_inputs(ctx, 3)); /* and input 5, checked with the others */
    const graph_node *n = ctx->node;
    const char *qt = graph_attr_string(n, "quant_type", "int");
    if (strcmp(qt, "int") != 0)
        return kernel_errorf(ctx, OG_ERR_UNSUPPORTED, "quant_type '%s' is not implemented "
                             "(only 'int')", qt);
    if (graph_attr_int(n, "weights_prepacked", -1) == 1)
        return kernel_error(ctx, OG_ERR_UNSUPPORTED, "weights_prepacked=1 (a CUDA layout) is "
                            "not supported on the CPU");
    for (int i = 15; i < ctx->n_inputs; i++)
        if (kernel_input(ctx, i))
            return kernel_errorf(ctx, OG_ERR_UNSUPPORTED, "input %d (global / activation "
                                 "scales of the float4/float8 forms) is not implemented", i);
    moe_cfg c = {.qmoe = true};
    OG_TRY(moe_common(ctx, &c, 5));
    int64_t bits = graph_attr_int(n, "expert_weight_bits", 4), block = graph_attr_int(n, "block_size", 0);
    int64_t b1 = graph_attr_int(n, "fc1_expert_weight_bits", bits);
    int64_t b2 = graph_attr_int(n, "fc2_expert_weight_bits", bits);
    int64_t b3 = graph_attr_int(n, "fc3_expert_weight_bits", b1);
    int64_t bl[3] = {b1, b2, b3};
    for (int i = 0; i < 3; i++)
        if (bl[i] != 2 && bl[i] != 4 && bl[i] != 8)
            return kernel_errorf(ctx, OG_ERR_UNSUPPORTED, "%lld-bit expert weights are not "
                                 "implemented (2, 4 and 8 are)", (long long)bl[i]);
    const tensor *w2 = ctx->inputs[5];
    c.I = w2->dims[2] * 8 / b2;
    c.fc[0] = (moe_fc){.N = c.F * c.I, .K = c.H};
    c.fc[1] = (moe_fc){.N = c.H, .K = c.I};
    OG_TRY(fc_setup(ctx, &c, &c.fc[0], 2, 3, 4, 11, (int)b1, block, "fc1_experts_weights"));
    OG_TRY(fc_setup(ctx, &c, &c.fc[1], 5, 6, 7, 12, (int)b2, block, "fc2_experts_weights"));
    if (kernel_input(ctx, 8)) {
        c.fc[2] = (moe_fc){.N = c.I, .K = c.H};
        OG_TRY(fc_setup(ctx, &c, &c.fc[2], 8, 9, 10, 13, (int)b3, block, "fc3_experts_weights"));
    }
    if (c.act == ACT_SWIGLU && c.fusion == 0 && !c.fc[2].w)
        return kernel_error(ctx, OG_ERR_INVALID_MODEL, "swiglu with swiglu_fusion=0 needs "
                            "fc3_experts_weights (input 8) for the linear half");
    const tensor *rw = kernel_input(ctx, 14);
    if (rw && (rw->dtype != ctx->inputs[0]->dtype || tensor_count(rw) != c.T * c.E))
        return fc_err(ctx, 14, "router_weights", rw, "like router_probs");
    return moe_run(ctx, &c);
}
