/* com.microsoft MultiHeadAttention: scaled dot-product attention of num_heads heads over
 * separately projected Q, K, V (plus their optional bias), with an optional key/value
 * cache (past_key/past_value (B, N, P, D); present = past followed by the new keys).
 *
 * Forms: query (B, S, N*D) or packed QKV (B, S, N, 3, D) with key/value omitted; key
 * (B, L, N*D), packed KV (B, L, N, 2, D) with value omitted, or already per head
 * (B, N, L, D) for cross attention (then used as is, without past).
 *
 * Masking as the reference CPU kernel: key_padding_mask entries that mask a key add
 * mask_filter_value to its score; with unidirectional=1 a key in the future of the query
 * gets the lowest float instead (replacing the score); attention_bias (B or 1, N or 1,
 * S, T) is added; the softmax runs over all T keys, so fully masked rows stay defined.
 * Mask layouts: (B) key lengths, (B, T) or (B, S, T) with 0 = masked. */
#include "backends/native/kernels/attention/attention.h"

#include <float.h>
#include <math.h>
#include <stdatomic.h>

enum { MK_NONE, MK_LEN, MK_2D, MK_3D };

typedef struct mha_job {
    int64_t B, N, S, T, P, Dk, Dv;
    const float *q, *k, *v;  /* (B, N, S, Dk), (B, N, T, Dk), (B, N, T, Dv) */
    float *out;              /* (B, S, N*Dv) */
    const int32_t *mask;
    int mask_kind;
    const float *abias;
    int64_t ab_b, ab_n;
    float scale, mfv;
    bool causal;
    float *wbuf;             /* T floats per worker */
    atomic_long next;
} mha_job;

static inline float mha_mask(const mha_job *j, int64_t b, int64_t i, int64_t t) {
    switch (j->mask_kind) {
    case MK_LEN:
        return t >= j->mask[b] ? j->mfv : 0.0f;
    case MK_2D:
        return j->mask[b * j->T + t] > 0 ? 0.0f : j->mfv;
    case MK_3D:
        return j->mask[(b * j->S + i) * j->T + t] > 0 ? 0.0f : j->mfv;
    default:
        return 0.0f;
    }
}

static void mha_row(const mha_job *j, int64_t b, int64_t n, int64_t i, float *s) {
    int64_t T = j->T, bn = b * j->N + n;
    const float *q = j->q + (bn * j->S + i) * j->Dk, *k = j->k + bn * T * j->Dk;
    const float *ab = j->abias ? j->abias + b * j->ab_b + n * j->ab_n + i * T : NULL;
    float mx = -INFINITY;
    for (int64_t t = 0; t < T; t++) {
        float x;
        if (j->causal && t > j->P + i) {
            x = -FLT_MAX;
        } else {
            x = j->scale * cpu_dot(q, k + t * j->Dk, j->Dk);
            if (j->mask_kind != MK_NONE) x += mha_mask(j, b, i, t);
        }
        if (ab) x += ab[t];
        s[t] = x;
        mx = x > mx ? x : mx;
    }
    float sum = 0;
    for (int64_t t = 0; t < T; t++) {
        s[t] = expf(s[t] - mx);
        sum += s[t];
    }
    float inv = 1.0f / sum, *o = j->out + ((b * j->S + i) * j->N + n) * j->Dv;
    const float *v = j->v + bn * T * j->Dv;
    for (int64_t d = 0; d < j->Dv; d++) o[d] = 0.0f;
    /* One key at a time, skipping keys of probability 0: a masked key then adds nothing
     * at all, so a row has the same bits whatever padding stands before it. A generator's
     * batch left-pads its shorter rows, and grouping keys (cpu_weighted_rows sums four
     * products before adding them to o) would shift the groups with the padding: in
     * bfloat16 that last-bit change flipped a near-tie (tiny nemotron, the builder's bf16
     * CPU package, row 3 of 8 tokens apart from its run alone at token 42). */
    for (int64_t t = 0; t < T; t++) {
        float p = s[t] * inv;
        if (p == 0.0f) continue;
        const float *vt = v + t * j->Dv;
        for (int64_t d = 0; d < j->Dv; d++) o[d] += p * vt[d];
    }
}

static void mha_worker(void *arg, int64_t begin, int64_t end) {
    mha_job *j = arg;
    (void)end;
    float *s = j->wbuf + begin * (j->T + 16);
    int64_t rows = j->B * j->N * j->S;
    for (;;) {
        long r = atomic_fetch_add(&j->next, 16);
        if (r >= rows) break;
        for (int64_t x = r; x < r + 16 && x < rows; x++)
            mha_row(j, x / (j->N * j->S), (x / j->S) % j->N, x % j->S, s);
    }
}

/* Copies rows of one projection into a per-head layout (B, N, rows, D) starting at row
 * `row0` of a buffer with `cap` rows per head: element (b, r, n, d) of the source is at
 * src + b * sb + r * sr + n * sn + d, plus bias[n * D + d] when bias is given. */
static void to_heads(const float *src, int64_t sb, int64_t sr, int64_t sn, const float *bias,
                     int64_t B, int64_t N, int64_t rows, int64_t D, float *dst, int64_t cap,
                     int64_t row0) {
    for (int64_t b = 0; b < B; b++)
        for (int64_t n = 0; n < N; n++)
            for (int64_t r = 0; r < rows; r++) {
                const float *s = src + b * sb + r * sr + n * sn;
                float *d = dst + ((b * N + n) * cap + row0 + r) * D;
                for (int64_t e = 0; e < D; e++) d[e] = s[e] + (bias ? bias[n * D + e] : 0.0f);
            }
}

static og_status *same_dt(kernel_ctx *ctx, int i, og_dtype dt) {
    const tensor *t = kernel_input(ctx, i);
    if (t && t->dtype != dt)
        return kernel_errorf(ctx, OG_ERR_INVALID_ARGUMENT, "input %d is %s, expected the "
                             "query's dtype %s", i, og_dtype_name(t->dtype), og_dtype_name(dt));
    return NULL;
}

og_status *cpu_contrib_mha(kernel_ctx *ctx) {
    OG_TRY(kernel_require_inputs(ctx, 1));
    const graph_node *node = ctx->node;
    const tensor *q = ctx->inputs[0], *key = kernel_input(ctx, 1), *val = kernel_input(ctx, 2);
    const tensor *bias = kernel_input(ctx, 3), *mask = kernel_input(ctx, 4);
    const tensor *ab = kernel_input(ctx, 5), *pk = kernel_input(ctx, 6), *pv = kernel_input(ctx, 7);
    og_dtype dt = q->dtype;
    char a[96];
    if (!cpu_is_f32able(dt)) return kernel_unsupported_dtype(ctx, 0, dt);
    for (int i = 1; i < 8; i++)
        if (i != 4) OG_TRY(same_dt(ctx, i, dt));
    if (kernel_input(ctx, 8) || kernel_input(ctx, 9))
        return kernel_error(ctx, OG_ERR_UNSUPPORTED, "past_sequence_length / cache_indirection "
                            "(inputs 8, 9: shared-buffer beam decoding) are not implemented");
    if (cpu_wants_output(ctx, 3))
        return kernel_error(ctx, OG_ERR_UNSUPPORTED, "output 3 (qk) is not implemented");
    int64_t N = graph_attr_int(node, "num_heads", 0);
    if (N <= 0)
        return kernel_errorf(ctx, OG_ERR_INVALID_MODEL, "num_heads is %lld, expected a positive "
                             "count", (long long)N);
    mha_job j = {.N = N, .causal = graph_attr_int(node, "unidirectional", 0) != 0,
                 .mfv = graph_attr_float(node, "mask_filter_value", -10000.0f)};
    /* the query and where K and V come from */
    int64_t B, S, L, Dk, Dv;
    const float *qf, *kf = NULL, *vf = NULL, *bf = NULL;
    OG_TRY(cpu_in_f32(ctx, 0, &qf));
    int64_t qsb, qsr, qsn;                 /* strides of the query rows */
    int64_t ksb = 0, ksr = 0, ksn = 0, vsb = 0, vsr = 0, vsn = 0;
    bool kv_heads = false;                 /* key/value given per head: (B, N, L, D) */
    if (q->rank == 5) {
        if (key || val || q->dims[2] != N || q->dims[3] != 3)
            return kernel_errorf(ctx, OG_ERR_INVALID_ARGUMENT, "packed QKV input 0 has shape %s, "
                                 "expected (B, S, %lld, 3, D) with key and value omitted",
                                 shape_str(q->dims, q->rank, a, sizeof a), (long long)N);
        B = q->dims[0], S = L = q->dims[1], Dk = Dv = q->dims[4];
        qsb = S * N * 3 * Dk, qsr = N * 3 * Dk, qsn = 3 * Dk;
        kf = qf + Dk, vf = qf + 2 * Dk;
        ksb = vsb = qsb, ksr = vsr = qsr, ksn = vsn = qsn;
    } else if (q->rank == 3) {
        B = q->dims[0], S = q->dims[1];
        if (q->dims[2] % N)
            return kernel_errorf(ctx, OG_ERR_INVALID_ARGUMENT, "query width %lld is not a "
                                 "multiple of num_heads %lld", (long long)q->dims[2], (long long)N);
        Dk = q->dims[2] / N;
        qsb = S * N * Dk, qsr = N * Dk, qsn = Dk;
        if (!key)
            return kernel_error(ctx, OG_ERR_INVALID_MODEL, "key (input 1) is required with a 3-D "
                                "query");
        OG_TRY(cpu_in_f32(ctx, 1, &kf));
        if (key->rank == 5 && !val && key->dims[0] == B && key->dims[2] == N && key->dims[3] == 2 &&
            key->dims[4] == Dk) {
            L = key->dims[1], Dv = Dk;
            vf = kf + Dk;
            ksb = vsb = L * N * 2 * Dk, ksr = vsr = N * 2 * Dk, ksn = vsn = 2 * Dk;
        } else if (key->rank == 3 && val && val->rank == 3 && key->dims[0] == B &&
                   key->dims[2] == N * Dk && val->dims[0] == B && val->dims[1] == key->dims[1] &&
                   val->dims[2] % N == 0) {
            L = key->dims[1], Dv = val->dims[2] / N;
            OG_TRY(cpu_in_f32(ctx, 2, &vf));
            ksb = L * N * Dk, ksr = N * Dk, ksn = Dk;
            vsb = L * N * Dv, vsr = N * Dv, vsn = Dv;
        } else if (key->rank == 4 && val && val->rank == 4 && key->dims[0] == B &&
                   key->dims[1] == N && key->dims[3] == Dk && val->dims[0] == B &&
                   val->dims[1] == N && val->dims[2] == key->dims[2]) {
            L = key->dims[2], Dv = val->dims[3];
            kv_heads = true;
            OG_TRY(cpu_in_f32(ctx, 2, &vf));
            if (pk || pv)
                return kernel_error(ctx, OG_ERR_INVALID_ARGUMENT, "past_key/past_value cannot "
                                    "be combined with per-head (B, N, L, D) key and value");
        } else {
            char b2[96];
            return kernel_errorf(ctx, OG_ERR_INVALID_ARGUMENT, "key %s and value %s do not match "
                                 "(B, L, N*D), packed (B, L, N, 2, D) or per-head (B, N, L, D) "
                                 "forms for query %s", shape_str(key->dims, key->rank, a, sizeof a),
                                 val ? shape_str(val->dims, val->rank, b2, sizeof b2) : "(none)",
                                 shape_str(q->dims, q->rank, b2, sizeof b2));
        }
    } else {
        return kernel_errorf(ctx, OG_ERR_INVALID_ARGUMENT, "input 0 (query) has shape %s, "
                             "expected (B, S, hidden) or (B, S, N, 3, D)",
                             shape_str(q->dims, q->rank, a, sizeof a));
    }
    if (bias) {
        int64_t want = N * (2 * Dk + Dv);
        if (bias->rank != 1 || bias->dims[0] != want)
            return kernel_errorf(ctx, OG_ERR_INVALID_ARGUMENT, "input 3 (bias) has shape %s, "
                                 "expected (%lld)", shape_str(bias->dims, bias->rank, a, sizeof a),
                                 (long long)want);
        OG_TRY(cpu_in_f32(ctx, 3, &bf));
    }
    int64_t P;
    OG_TRY(cpu_want_past_kv(ctx, 6, 7, B, N, Dk, Dv, &P));
    int64_t T = P + L;
    j.B = B, j.S = S, j.T = T, j.P = P, j.Dk = Dk, j.Dv = Dv;
    float sc = graph_attr_float(node, "scale", 0.0f);
    j.scale = sc != 0.0f ? sc : 1.0f / sqrtf((float)Dk);
    if (mask) {
        if (mask->dtype != OG_INT32)
            return kernel_errorf(ctx, OG_ERR_INVALID_ARGUMENT, "input 4 (key_padding_mask) is %s, "
                                 "expected int32", og_dtype_name(mask->dtype));
        j.mask = mask->data;
        if (mask->rank == 1 && mask->dims[0] == B) {
            j.mask_kind = MK_LEN;
        } else if (mask->rank == 2 && mask->dims[0] == B && mask->dims[1] == T) {
            j.mask_kind = MK_2D;
        } else if (mask->rank == 3 && mask->dims[0] == B && mask->dims[1] == S && mask->dims[2] == T) {
            j.mask_kind = MK_3D;
        } else {
            return kernel_errorf(ctx, OG_ERR_UNSUPPORTED, "input 4 (key_padding_mask) of shape %s "
                                 "is not implemented (supported: (B), (B, T), (B, S, T))",
                                 shape_str(mask->dims, mask->rank, a, sizeof a));
        }
    }
    if (ab) {
        if (ab->rank != 4 || (ab->dims[0] != B && ab->dims[0] != 1) ||
            (ab->dims[1] != N && ab->dims[1] != 1) || ab->dims[2] != S || ab->dims[3] != T)
            return kernel_errorf(ctx, OG_ERR_INVALID_ARGUMENT, "input 5 (attention_bias) has shape "
                                 "%s, expected (%lld or 1, %lld or 1, %lld, %lld)",
                                 shape_str(ab->dims, ab->rank, a, sizeof a), (long long)B,
                                 (long long)N, (long long)S, (long long)T);
        j.ab_n = ab->dims[1] == 1 ? 0 : S * T;
        j.ab_b = ab->dims[0] == 1 ? 0 : ab->dims[1] * S * T;
        OG_TRY(cpu_in_f32(ctx, 5, &j.abias));
    }

    int64_t od[3] = {B, S, N * Dv}, kd[4] = {B, N, T, Dk}, vd[4] = {B, N, T, Dv};
    tensor *out, *prk = NULL, *prv = NULL;
    OG_TRY(kernel_output(ctx, 0, dt, 3, od, &out));
    if (cpu_wants_output(ctx, 1)) OG_TRY(kernel_output(ctx, 1, dt, 4, kd, &prk));
    if (cpu_wants_output(ctx, 2)) OG_TRY(kernel_output(ctx, 2, dt, 4, vd, &prv));

    /* per-head float32 Q, K (past then new), V */
    float *qh, *kh, *vh;
    OG_TRY(kernel_scratch(ctx, sizeof(float) * (size_t)(B * N * S * Dk) + 1, (void **)&qh));
    OG_TRY(kernel_scratch(ctx, sizeof(float) * (size_t)(B * N * T * Dk) + 1, (void **)&kh));
    OG_TRY(kernel_scratch(ctx, sizeof(float) * (size_t)(B * N * T * Dv) + 1, (void **)&vh));
    to_heads(qf, qsb, qsr, qsn, bf, B, N, S, Dk, qh, S, 0);
    if (kv_heads) {
        memcpy(kh, kf, sizeof(float) * (size_t)(B * N * T * Dk));
        memcpy(vh, vf, sizeof(float) * (size_t)(B * N * T * Dv));
    } else {
        if (pk) {
            const float *pkf, *pvf;
            OG_TRY(cpu_in_f32(ctx, 6, &pkf));
            OG_TRY(cpu_in_f32(ctx, 7, &pvf));
            for (int64_t bn = 0; bn < B * N; bn++) {
                memcpy(kh + bn * T * Dk, pkf + bn * P * Dk, sizeof(float) * (size_t)(P * Dk));
                memcpy(vh + bn * T * Dv, pvf + bn * P * Dv, sizeof(float) * (size_t)(P * Dv));
            }
        }
        to_heads(kf, ksb, ksr, ksn, bf ? bf + N * Dk : NULL, B, N, L, Dk, kh, T, P);
        to_heads(vf, vsb, vsr, vsn, bf ? bf + 2 * N * Dk : NULL, B, N, L, Dv, vh, T, P);
    }
    if (prk) {
        cpu_store_f32(dt, prk->data, B * N * T * Dk, kh);
        if (dt != OG_FLOAT32) cpu_load_f32(dt, prk->data, B * N * T * Dk, kh);
    }
    if (prv) {
        cpu_store_f32(dt, prv->data, B * N * T * Dv, vh);
        if (dt != OG_FLOAT32) cpu_load_f32(dt, prv->data, B * N * T * Dv, vh);
    }
    if (B * N * S == 0 || T == 0) {
        memset(out->data, 0, out->nbytes);
        return NULL;
    }
    j.q = qh, j.k = kh, j.v = vh;
    OG_TRY(cpu_out_f32(ctx, out, &j.out));
    int64_t workers = threadpool_size(ctx->pool);
    OG_TRY(kernel_scratch(ctx, sizeof(float) * (size_t)(workers * (T + 16)), (void **)&j.wbuf));
    atomic_init(&j.next, 0);
    threadpool_parallel_for(ctx->pool, workers, 1, mha_worker, &j);
    cpu_out_f32_done(out, j.out);
    return NULL;
}
