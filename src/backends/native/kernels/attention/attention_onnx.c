/* The default domain's Attention (opsets 23 to 25): scaled dot-product attention of
 * q_num_heads query heads over kv_num_heads key/value heads (grouped: query head h reads
 * key/value head h / (q_num_heads / kv_num_heads)).
 *
 * Forms: Q, K, V all 3-D (B, S, heads * D) with the q_num_heads / kv_num_heads
 * attributes, or all 4-D (B, heads, S, D). past_key / past_value (B, kv heads, P, D) come
 * before the new keys; present_key / present_value are that concatenation.
 *
 * Per score row (b, h, i) over the T = P + L keys: s = scale * q . k (scale defaults to
 * 1 / sqrt(D)), then softcap * tanh(s / softcap) when softcap > 0, then the additive bias:
 * attn_mask broadcast right-aligned to (B, q heads, S, T) (bool: false masks; float:
 * added; a last dimension shorter than T masks the keys past it), is_causal (key t is
 * allowed iff t <= i + offset, offset = P, or nonpad_kv_seqlen[b] - S with an external
 * cache), the opset-25 window (left_window_size / right_window_size around the same
 * absolute position) and nonpad_kv_seqlen (keys from nonpad_kv_seqlen[b] on are masked).
 * A row whose bias masks every key has all-zero probabilities (so Y is 0 there).
 * qk_matmul_output: 0 and 1 the scores after softcap (as the ONNX reference computes
 * them), 2 with the bias, 3 the probabilities. Computed in float32 whatever the storage
 * type is, rounding to the storage type where the reference's steps do: Q and K each
 * times sqrt(scale), the products, softcap, the biased scores, exp, their sum and the
 * probabilities. */
#include "backends/native/kernels/attention/attention.h"

#include <math.h>
#include <stdatomic.h>

typedef struct onnx_attn_job {
    int64_t B, Hq, Hkv, S, T, P, Dk, Dv;
    const float *q;             /* element (b, h, i, d) at q + b*qsb + h*qsh + i*qsi + d */
    int64_t qsb, qsh, qsi;
    const float *k, *v;         /* (B, Hkv, T, Dk), (B, Hkv, T, Dv) */
    float *y;                   /* (b, h, i, d) at y + b*ysb + h*ysh + i*ysi + d */
    int64_t ysb, ysh, ysi;
    float *qk;                  /* (B, Hq, S, T) or NULL */
    int qk_mode;
    const float *mask_f;        /* float mask, or */
    const uint8_t *mask_b;      /* bool mask; strides over (B, Hq, S, Tm), 0 where broadcast */
    int64_t ms[3], Tm;
    const int64_t *nonpad;      /* (B) or NULL */
    bool causal;
    int64_t left, right;        /* window bounds, -1 = unbounded */
    float scale, softcap;
    og_dtype dt;
    float *wbuf;                /* 2 * (T + 16) floats per worker */
    atomic_long next;
} onnx_attn_job;

/* The additive bias of row (b, h, i) into bias[0..T); returns whether any key is allowed. */
static bool onnx_attn_bias(const onnx_attn_job *j, int64_t b, int64_t h, int64_t i,
                           float *bias) {
    int64_t T = j->T, off = j->P;
    if (j->nonpad && j->P == 0) off = j->nonpad[b] - j->S;
    int64_t mo = b * j->ms[0] + h * j->ms[1] + i * j->ms[2];
    bool any = false;
    for (int64_t t = 0; t < T; t++) {
        float x = 0.0f;
        if (j->mask_f || j->mask_b) {
            if (t >= j->Tm) x = -INFINITY;
            else if (j->mask_b) x = j->mask_b[mo + t] ? 0.0f : -INFINITY;
            else x = j->mask_f[mo + t];
        }
        int64_t diff = i + off - t; /* how far key t lies left of the query's position */
        if (j->causal && diff < 0) x = -INFINITY;
        if (j->left >= 0 && diff > j->left) x = -INFINITY;
        if (j->right >= 0 && -diff > j->right) x = -INFINITY;
        if (j->nonpad && t >= j->nonpad[b]) x = -INFINITY;
        bias[t] = x;
        any |= x != -INFINITY;
    }
    return any;
}

static void onnx_attn_row(const onnx_attn_job *j, int64_t b, int64_t h, int64_t i, float *s,
                          float *bias) {
    int64_t T = j->T, kh = b * j->Hkv + h / (j->Hq / j->Hkv);
    const float *q = j->q + b * j->qsb + h * j->qsh + i * j->qsi;
    const float *k = j->k + kh * T * j->Dk, *v = j->v + kh * T * j->Dv;
    float *y = j->y + b * j->ysb + h * j->ysh + i * j->ysi;
    float *qk = j->qk ? j->qk + ((b * j->Hq + h) * j->S + i) * T : NULL;
    bool any = onnx_attn_bias(j, b, h, i, bias);
    float mx = -INFINITY;
    for (int64_t t = 0; t < T; t++) {
        float x = cpu_round_to(j->dt, cpu_dot(q, k + t * j->Dk, j->Dk));
        if (j->softcap > 0.0f)
            x = cpu_round_to(j->dt, j->softcap * cpu_round_to(j->dt, tanhf(x / j->softcap)));
        if (qk && j->qk_mode < 2) qk[t] = x;
        x = cpu_round_to(j->dt, x + bias[t]);
        if (qk && j->qk_mode == 2) qk[t] = x;
        s[t] = x;
        mx = x > mx ? x : mx;
    }
    for (int64_t d = 0; d < j->Dv; d++) y[d] = 0.0f;
    if (!any) {
        if (qk && j->qk_mode == 3)
            for (int64_t t = 0; t < T; t++) qk[t] = 0.0f;
        return;
    }
    /* the reference sums float16 in float32 but bfloat16 one rounded addition at a time */
    float sum = 0.0f;
    bool bf = j->dt == OG_BFLOAT16;
    for (int64_t t = 0; t < T; t++) {
        float e = s[t] == -INFINITY ? 0.0f : expf(cpu_round_to(j->dt, s[t] - mx));
        s[t] = cpu_round_to(j->dt, e);
        sum = bf ? cpu_round_to(j->dt, sum + s[t]) : sum + s[t];
    }
    sum = cpu_round_to(j->dt, sum);
    for (int64_t t = 0; t < T; t++) s[t] = cpu_round_to(j->dt, s[t] / sum);
    if (qk && j->qk_mode == 3)
        for (int64_t t = 0; t < T; t++) qk[t] = s[t];
    cpu_weighted_rows(y, s, v, j->Dv, T, j->Dv);
}

static void onnx_attn_worker(void *arg, int64_t begin, int64_t end) {
    onnx_attn_job *j = arg;
    (void)end;
    float *s = j->wbuf + begin * 2 * (j->T + 16), *bias = s + j->T + 16;
    int64_t rows = j->B * j->Hq * j->S;
    for (;;) {
        long r = atomic_fetch_add(&j->next, 16);
        if (r >= rows) break;
        for (int64_t x = r; x < r + 16 && x < rows; x++)
            onnx_attn_row(j, x / (j->Hq * j->S), (x / j->S) % j->Hq, x % j->S, s, bias);
    }
}

/* Copies L new rows of one projection per kv head into (B, H, T, D) after P past rows:
 * element (b, h, r, d) of the source is at src + b*sb + h*sh + r*sr + d. */
static void onnx_attn_cache(const float *past, const float *src, int64_t sb, int64_t sh,
                            int64_t sr, int64_t B, int64_t H, int64_t P, int64_t L, int64_t D,
                            float *dst) {
    int64_t T = P + L;
    for (int64_t b = 0; b < B; b++)
        for (int64_t h = 0; h < H; h++) {
            float *d = dst + (b * H + h) * T * D;
            if (P) memcpy(d, past + (b * H + h) * P * D, sizeof(float) * (size_t)(P * D));
            for (int64_t r = 0; r < L; r++)
                memcpy(d + (P + r) * D, src + b * sb + h * sh + r * sr, sizeof(float) * (size_t)D);
        }
}

/* An error naming Q, K and V's shapes after `why`. */
static og_status *onnx_attn_shapes(kernel_ctx *ctx, og_code code, const char *why) {
    char a[96], b[96], c[96];
    const tensor *q = ctx->inputs[0], *k = ctx->inputs[1], *v = ctx->inputs[2];
    return kernel_errorf(ctx, code, "%s (Q %s, K %s, V %s)", why,
                         shape_str(q->dims, q->rank, a, sizeof a),
                         shape_str(k->dims, k->rank, b, sizeof b),
                         shape_str(v->dims, v->rank, c, sizeof c));
}

og_status *cpu_onnx_attention(kernel_ctx *ctx) {
    OG_TRY(kernel_require_inputs(ctx, 3));
    const graph_node *node = ctx->node;
    const tensor *q = ctx->inputs[0], *key = ctx->inputs[1], *val = ctx->inputs[2];
    const tensor *mask = kernel_input(ctx, 3), *pk = kernel_input(ctx, 4);
    const tensor *pv = kernel_input(ctx, 5), *np = kernel_input(ctx, 6);
    og_dtype dt = q->dtype;
    char a[96];
    if (!cpu_is_f32able(dt)) return kernel_unsupported_dtype(ctx, 0, dt);
    const tensor *same[] = {key, val, pk, pv};
    const int same_i[] = {1, 2, 4, 5};
    for (int x = 0; x < 4; x++)
        if (same[x] && same[x]->dtype != dt)
            return kernel_errorf(ctx, OG_ERR_INVALID_ARGUMENT, "input %d is %s, expected Q's "
                                 "dtype %s", same_i[x], og_dtype_name(same[x]->dtype),
                                 og_dtype_name(dt));
    if (q->rank != key->rank || q->rank != val->rank || (q->rank != 3 && q->rank != 4))
        return onnx_attn_shapes(ctx, OG_ERR_INVALID_ARGUMENT, "Q, K and V must all be 3-D "
                                "(B, S, hidden) or all 4-D (B, heads, S, head_size)");
    int64_t B = q->dims[0], Hq, Hkv, S, L, Dk, Dv;
    int64_t qsb, qsh, qsi, ksb, ksh, ksr, vsb, vsh, vsr;
    bool three = q->rank == 3;
    if (three) {
        Hq = graph_attr_int(node, "q_num_heads", 0);
        Hkv = graph_attr_int(node, "kv_num_heads", 0);
        if (Hq <= 0 || Hkv <= 0 || q->dims[2] % Hq || key->dims[2] % Hkv || val->dims[2] % Hkv)
            return onnx_attn_shapes(ctx, OG_ERR_INVALID_MODEL, "3-D inputs need positive "
                                    "q_num_heads and kv_num_heads attributes dividing their widths");
        S = q->dims[1], L = key->dims[1], Dk = q->dims[2] / Hq, Dv = val->dims[2] / Hkv;
        qsb = S * Hq * Dk, qsh = Dk, qsi = Hq * Dk;
        ksb = L * Hkv * Dk, ksh = Dk, ksr = Hkv * Dk;
        vsb = L * Hkv * Dv, vsh = Dv, vsr = Hkv * Dv;
        if (key->dims[2] / Hkv != Dk || val->dims[1] != L)
            return onnx_attn_shapes(ctx, OG_ERR_INVALID_ARGUMENT, "K's head size or V's "
                                    "length does not match Q's with q_num_heads / kv_num_heads");
    } else {
        Hq = q->dims[1], Hkv = key->dims[1], S = q->dims[2], L = key->dims[2];
        Dk = q->dims[3], Dv = val->dims[3];
        qsb = Hq * S * Dk, qsh = S * Dk, qsi = Dk;
        ksb = Hkv * L * Dk, ksh = L * Dk, ksr = Dk;
        vsb = Hkv * L * Dv, vsh = L * Dv, vsr = Dv;
        if (key->dims[3] != Dk || val->dims[1] != Hkv || val->dims[2] != L)
            return onnx_attn_shapes(ctx, OG_ERR_INVALID_ARGUMENT, "K's head size or V's heads "
                                    "or length do not match");
    }
    if (key->dims[0] != B || val->dims[0] != B || Hkv <= 0 || Hq % Hkv)
        return onnx_attn_shapes(ctx, OG_ERR_INVALID_ARGUMENT, "K and V need Q's batch, and "
                                "the kv heads must divide the query heads");
    int64_t P;
    OG_TRY(cpu_want_past_kv(ctx, 4, 5, B, Hkv, Dk, Dv, &P));
    int64_t T = P + L;
    onnx_attn_job j = {.B = B, .Hq = Hq, .Hkv = Hkv, .S = S, .T = T, .P = P, .Dk = Dk, .Dv = Dv,
                       .dt = dt,
                       .causal = graph_attr_int(node, "is_causal", 0) != 0,
                       .left = graph_attr_int(node, "left_window_size", -1),
                       .right = graph_attr_int(node, "right_window_size", -1),
                       .softcap = graph_attr_float(node, "softcap", 0.0f),
                       .qk_mode = (int)graph_attr_int(node, "qk_matmul_output_mode", 0)};
    j.scale = graph_attr_find(node, "scale") ? graph_attr_float(node, "scale", 0.0f)
                                             : 1.0f / sqrtf((float)Dk);
    if (j.qk_mode < 0 || j.qk_mode > 3)
        return kernel_errorf(ctx, OG_ERR_INVALID_MODEL, "qk_matmul_output_mode is %d, expected "
                             "0 to 3", j.qk_mode);
    if (j.left < -1 || j.right < -1)
        return kernel_errorf(ctx, OG_ERR_INVALID_MODEL, "left_window_size %lld / right_window_size "
                             "%lld must be -1 or at least 0", (long long)j.left,
                             (long long)j.right);
    if (np) {
        if (np->dtype != OG_INT64 || np->rank != 1 || np->dims[0] != B)
            return kernel_errorf(ctx, OG_ERR_INVALID_ARGUMENT, "input 6 (nonpad_kv_seqlen) is %s "
                                 "%s, expected int64 (%lld)", og_dtype_name(np->dtype),
                                 shape_str(np->dims, np->rank, a, sizeof a), (long long)B);
        if (pk)
            return kernel_error(ctx, OG_ERR_INVALID_MODEL, "nonpad_kv_seqlen (input 6) cannot be "
                                "combined with past_key/past_value");
        j.nonpad = np->data;
    }
    if (mask) {
        int r = mask->rank;
        const int64_t full[4] = {B, Hq, S, T};
        bool ok = r >= 1 && r <= 4 && mask->dims[r - 1] <= T;
        int64_t st = 1, strides[4] = {0, 0, 0, 0};
        for (int d = r - 1; ok && d >= 0; d--) {
            int64_t want = full[4 - r + d], got = mask->dims[d];
            if (d == r - 1) {
                j.Tm = got, st = got;
                continue;
            }
            if (got != 1 && got != want) ok = false;
            strides[4 - r + d] = got == 1 ? 0 : st;
            st *= got;
        }
        if (!ok)
            return kernel_errorf(ctx, OG_ERR_INVALID_ARGUMENT, "input 3 (attn_mask) has shape %s, "
                                 "expected one broadcastable to (%lld, %lld, %lld, %lld) (the "
                                 "last dimension may be shorter)",
                                 shape_str(mask->dims, r, a, sizeof a), (long long)B,
                                 (long long)Hq, (long long)S, (long long)T);
        j.ms[0] = strides[0], j.ms[1] = strides[1], j.ms[2] = strides[2];
        if (mask->dtype == OG_BOOL) j.mask_b = mask->data;
        else if (cpu_is_f32able(mask->dtype)) OG_TRY(cpu_in_f32(ctx, 3, &j.mask_f));
        else
            return kernel_errorf(ctx, OG_ERR_INVALID_ARGUMENT, "input 3 (attn_mask) is %s, "
                                 "expected bool or a float type", og_dtype_name(mask->dtype));
    }

    int64_t yd[4] = {B, Hq, S, Dv}, y3[3] = {B, S, Hq * Dv};
    int64_t kd[4] = {B, Hkv, T, Dk}, vd[4] = {B, Hkv, T, Dv}, qkd[4] = {B, Hq, S, T};
    tensor *out, *prk = NULL, *prv = NULL, *qko = NULL;
    OG_TRY(kernel_output(ctx, 0, dt, three ? 3 : 4, three ? y3 : yd, &out));
    if (cpu_wants_output(ctx, 1)) OG_TRY(kernel_output(ctx, 1, dt, 4, kd, &prk));
    if (cpu_wants_output(ctx, 2)) OG_TRY(kernel_output(ctx, 2, dt, 4, vd, &prv));
    if (cpu_wants_output(ctx, 3)) OG_TRY(kernel_output(ctx, 3, dt, 4, qkd, &qko));

    const float *qf, *kf, *vf, *pkf = NULL, *pvf = NULL;
    OG_TRY(cpu_in_f32(ctx, 0, &qf));
    OG_TRY(cpu_in_f32(ctx, 1, &kf));
    OG_TRY(cpu_in_f32(ctx, 2, &vf));
    if (pk) {
        OG_TRY(cpu_in_f32(ctx, 4, &pkf));
        OG_TRY(cpu_in_f32(ctx, 5, &pvf));
    }
    float *kh, *vh;
    OG_TRY(kernel_scratch(ctx, sizeof(float) * (size_t)(B * Hkv * T * Dk) + 1, (void **)&kh));
    OG_TRY(kernel_scratch(ctx, sizeof(float) * (size_t)(B * Hkv * T * Dv) + 1, (void **)&vh));
    onnx_attn_cache(pkf, kf, ksb, ksh, ksr, B, Hkv, P, L, Dk, kh);
    onnx_attn_cache(pvf, vf, vsb, vsh, vsr, B, Hkv, P, L, Dv, vh);
    if (prk) cpu_store_f32(dt, prk->data, B * Hkv * T * Dk, kh);
    if (prv) cpu_store_f32(dt, prv->data, B * Hkv * T * Dv, vh);
    /* Q and K each times sqrt(scale), rounded to the storage type, as the reference scales
     * them before the product (after the present outputs took the unscaled keys) */
    float *qs, rs = cpu_round_to(dt, sqrtf(j.scale));
    OG_TRY(kernel_scratch(ctx, sizeof(float) * (size_t)(B * Hq * S * Dk) + 1, (void **)&qs));
    for (int64_t b = 0; b < B; b++)
        for (int64_t h = 0; h < Hq; h++)
            for (int64_t i = 0; i < S; i++) {
                const float *src = qf + b * qsb + h * qsh + i * qsi;
                float *d = qs + ((b * Hq + h) * S + i) * Dk;
                for (int64_t e = 0; e < Dk; e++) d[e] = cpu_round_to(dt, src[e] * rs);
            }
    for (int64_t e = 0; e < B * Hkv * T * Dk; e++) kh[e] = cpu_round_to(dt, kh[e] * rs);
    j.qsb = Hq * S * Dk, j.qsh = S * Dk, j.qsi = Dk;
    j.q = qs, j.k = kh, j.v = vh;
    if (three) j.ysb = S * Hq * Dv, j.ysh = Dv, j.ysi = Hq * Dv;
    else j.ysb = Hq * S * Dv, j.ysh = S * Dv, j.ysi = Dv;
    OG_TRY(cpu_out_f32(ctx, out, &j.y));
    if (qko) OG_TRY(cpu_out_f32(ctx, qko, &j.qk));
    if (B * Hq * S > 0) {
        if (T == 0) {
            memset(j.y, 0, sizeof(float) * (size_t)(B * Hq * S * Dv));
        } else {
            int64_t workers = threadpool_size(ctx->pool);
            OG_TRY(kernel_scratch(ctx, sizeof(float) * (size_t)(workers * 2 * (T + 16)),
                                  (void **)&j.wbuf));
            atomic_init(&j.next, 0);
            threadpool_parallel_for(ctx->pool, workers, 1, onnx_attn_worker, &j);
        }
    }
    cpu_out_f32_done(out, j.y);
    if (qko) cpu_out_f32_done(qko, j.qk);
    return NULL;
}
