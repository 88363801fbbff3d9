/* com.microsoft Attention (opset 1 of that domain): a fused QKV projection followed by
 * multi-head scaled dot-product attention, optionally causal (GPT-2's "unidirectional"),
 * with a key/value cache: `past` is (2, B, N, P, D), keys then values, and `present`
 * is the same with the new sequence appended, (2, B, N, P + S, D).
 *
 * Masking follows the reference runtime exactly, because fully masked rows (left padding
 * in a batch) are visible in the outputs: a masked key gets `mask_filter_value` added to
 * its score, a key in the future of a causal query gets the lowest float instead (it
 * replaces, not adds), and the softmax then runs over all keys. mask_index may be
 * (B, T) or (B, S, T) with 0 = masked, (B) right-padding ends or (2B) ends then starts.
 *
 * Computation is float32 whatever the storage type: the projected Q, K and V stay in
 * float32 for this step (only `present` is rounded to the storage type), which is what
 * the reference runtime's CPU kernel does too. */
#include "base/vmath.h"
#include "backends/native/kernels/attention/attention.h"
#include "backends/native/kernels/norm/norm.h"
#include "backends/native/kernels/matmul/gemm_f32.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

enum { MASK_NONE, MASK_END, MASK_END_START, MASK_2D, MASK_3D };

typedef struct attn_job {
    const float *qkv;     /* (B*S, ld) projected rows: Q at column q_off, K at k_off, V at v_off */
    int64_t ld, q_off, k_off, v_off;
    const float *past;    /* (2, B, N, P, Dk) or NULL */
    float *kbuf, *vbuf;   /* (B, N, T, Dk) and (B, N, T, Dv) */
    float *out;           /* (B, S, N*Dv) */
    const float *abias;   /* attention_bias or NULL */
    int64_t ab_b, ab_n;   /* its batch and head strides (0 when broadcast) */
    const int32_t *mask;
    int mask_kind;
    int64_t B, N, S, P, T, Dk, Dv;
    float scale, mfv;
    bool causal;
    int failed;           /* out of memory in a worker */
    float *scores;        /* n_slots buffers of S * T + 16 scores */
    float *kts;           /* n_slots buffers of the keys across the lanes (kt_floats) */
    int64_t kt_floats;    /* 0: rows do not take that path */
    int *busy;            /* [n_slots] a call is using that buffer */
    int n_slots;
} attn_job;

/* Products small enough that a plain loop beats packing for the blocked sgemm. */
static bool small_product(int64_t m, int64_t n, int64_t k) { return m * n * k < 16384; }

/* C[m, n] = alpha * A[m, k] * op(B) with op(B) = B^T (B is n x k) when trans_b. */
static bool matmul(bool trans_b, int64_t m, int64_t n, int64_t k, float alpha,
                   const float *a, int64_t lda, const float *b, int64_t ldb, float *c,
                   int64_t ldc) {
    if (small_product(m, n, k)) {
        for (int64_t i = 0; i < m; i++) {
            const float *ar = a + i * lda;
            float *cr = c + i * ldc;
            if (trans_b) {
                for (int64_t j = 0; j < n; j++) {
                    const float *br = b + j * ldb;
                    float acc = 0;
                    for (int64_t p = 0; p < k; p++) acc += ar[p] * br[p];
                    cr[j] = alpha * acc;
                }
            } else {
                for (int64_t j = 0; j < n; j++) cr[j] = 0;
                for (int64_t p = 0; p < k; p++) {
                    float av = alpha * ar[p];
                    const float *br = b + p * ldb;
                    for (int64_t j = 0; j < n; j++) cr[j] += av * br[j];
                }
            }
        }
        return true;
    }
    gemm_f32_args g = {.trans_a = false, .trans_b = trans_b, .M = m, .N = n, .K = k,
                       .alpha = alpha, .beta = 0, .A = a, .lda = lda, .B = b, .ldb = ldb,
                       .C = c, .ldc = ldc};
    og_status *st = gemm_f32(NULL, &g, NULL);
    if (st) {
        og_status_free(st);
        return false;
    }
    return true;
}

static inline float mask_value(const attn_job *j, int64_t b, int64_t i, int64_t t) {
    if (j->causal && t > j->P + i) return -FLT_MAX;
    switch (j->mask_kind) {
    case MASK_END:
        return t >= j->mask[b] ? j->mfv : 0.0f;
    case MASK_END_START:
        return t >= j->mask[b] || t < j->mask[j->B + b] ? j->mfv : 0.0f;
    case MASK_2D:
        return j->mask[b * j->T + t] > 0 ? 0.0f : j->mfv;
    case MASK_3D:
        return j->mask[(b * j->S + i) * j->T + t] > 0 ? 0.0f : j->mfv;
    default:
        return 0.0f;
    }
}

/* s[0..n) += the mask's additive values for query i of entry b (no causal part). */
static void add_mask(const attn_job *j, int64_t b, int64_t i, float *s, int64_t n) {
    const int32_t *m = j->mask;
    switch (j->mask_kind) {
    case MASK_END:
        for (int64_t t = m[b] < 0 ? 0 : m[b]; t < n; t++) s[t] += j->mfv;
        return;
    case MASK_END_START:
        for (int64_t t = 0; t < n; t++)
            if (t >= m[b] || t < m[j->B + b]) s[t] += j->mfv;
        return;
    case MASK_2D:
        m += b * j->T;
        break;
    case MASK_3D:
        m += (b * j->S + i) * j->T;
        break;
    default:
        return;
    }
    for (int64_t t = 0; t < n; t++) /* adding 0 to the kept keys would change nothing */
        if (m[t] <= 0) s[t] += j->mfv;
}

/* Per query row, over the keys it may see only: a causal query's future keys get the
 * lowest float as their score in the reference, so their probabilities are exactly 0
 * whenever a visible key scores above about half the lowest float, and skipping them
 * changes nothing. A row whose visible keys are all masked that far down (a padded
 * query under a mask_filter_value of the lowest float) takes the future keys back in,
 * as the reference has them. Taken without attention_bias. */
static void attn_head_rows(const attn_job *j, int64_t b, int64_t n, const float *kh,
                           const float *vh, float *s, float *kt) {
    int64_t S = j->S, Dk = j->Dk, Dv = j->Dv;
    /* many rows against the same keys: the keys across the lanes once (same scores) */
    bool across = false;
    if (j->kt_floats) {
        const float *rows[256];
        across = true;
        for (int64_t t0 = 0; t0 < j->T && across; t0 += 256) {
            int64_t m = j->T - t0 < 256 ? j->T - t0 : 256;
            for (int64_t t = 0; t < m; t++) rows[t] = kh + (t0 + t) * Dk;
            across = cpu_attn_keys_t(rows, m, Dk, kt + t0 * Dk);
        }
    }
    for (int64_t i = 0; i < S; i++) {
        const float *q = j->qkv + (b * S + i) * j->ld + j->q_off + n * Dk;
        int64_t keys = j->causal && j->P + i + 1 < j->T ? j->P + i + 1 : j->T;
        if (across)
            cpu_attn_scores_t(q, kt, (keys + 15) / 16, Dk, j->scale, s);
        else
            cpu_attn_scores(q, kh, keys, Dk, j->scale, s);
        add_mask(j, b, i, s, keys);
        float mx = vmax_f32(s, keys);
        if (keys < j->T && !(mx > -FLT_MAX / 2)) {
            for (int64_t t = keys; t < j->T; t++) s[t] = -FLT_MAX;
            keys = j->T;
            mx = vmax_f32(s, keys);
        }
        float inv = 1.0f / vexp_shift_sum_f32(s, s, keys, mx);
        /* the exponentials weigh the values, and the row is divided by their sum after */
        float *o = j->out + (b * S + i) * (j->N * Dv) + n * Dv;
        memset(o, 0, sizeof(float) * (size_t)Dv);
        cpu_attn_weighted(o, s, vh, keys, Dv);
        for (int64_t d = 0; d < Dv; d++) o[d] *= inv;
    }
}

static void attn_head(const attn_job *j, int64_t bn, float *scores, float *kt) {
    int64_t b = bn / j->N, n = bn % j->N, S = j->S, P = j->P, T = j->T;
    int64_t Dk = j->Dk, Dv = j->Dv;
    float *kh = j->kbuf + bn * T * Dk, *vh = j->vbuf + bn * T * Dv;
    if (P > 0) {
        memcpy(kh, j->past + bn * P * Dk, sizeof(float) * (size_t)(P * Dk));
        memcpy(vh, j->past + (j->B * j->N + bn) * P * Dv, sizeof(float) * (size_t)(P * Dv));
    }
    for (int64_t i = 0; i < S; i++) {
        const float *row = j->qkv + (b * S + i) * j->ld;
        memcpy(kh + (P + i) * Dk, row + j->k_off + n * Dk, sizeof(float) * (size_t)Dk);
        memcpy(vh + (P + i) * Dv, row + j->v_off + n * Dv, sizeof(float) * (size_t)Dv);
    }
    if (S == 0) return;
    /* the sgemm packs K = Dk for the scores and N = Dv for the values: short heads, or
     * little work, go row by row on the vectorized loops */
    if (!j->abias && !isnan(j->mfv) && (Dk < 32 || Dv < 32 || small_product(S, T, Dk))) {
        attn_head_rows(j, b, n, kh, vh, scores, kt);
        return;
    }
    const float *q = j->qkv + b * S * j->ld + j->q_off + n * Dk;
    if (!matmul(true, S, T, Dk, j->scale, q, j->ld, kh, Dk, scores, T)) {
        __atomic_store_n((int *)&j->failed, 1, __ATOMIC_RELAXED);
        return;
    }
    for (int64_t i = 0; i < S; i++) {
        float *s = scores + i * T;
        if (j->mask_kind != MASK_NONE || j->causal)
            for (int64_t t = 0; t < T; t++) s[t] += mask_value(j, b, i, t);
        if (j->abias) {
            const float *ab = j->abias + b * j->ab_b + n * j->ab_n + i * T;
            for (int64_t t = 0; t < T; t++) s[t] += ab[t];
        }
        float mx = vmax_f32(s, T);
        float inv = 1.0f / vexp_shift_sum_f32(s, s, T, mx);
        for (int64_t t = 0; t < T; t++) s[t] *= inv;
    }
    float *o = j->out + b * S * (j->N * Dv) + n * Dv;
    if (!matmul(false, S, Dv, T, 1.0f, scores, T, vh, Dv, o, j->N * Dv))
        __atomic_store_n((int *)&j->failed, 1, __ATOMIC_RELAXED);
}

/* Runs heads [b, e) with one of the score buffers: at most one call per pool thread
 * runs at a time, so a free one is always there to claim. */
static void attn_heads_fn(void *arg, int64_t b, int64_t e) {
    attn_job *j = arg;
    int slot = 0;
    for (;; slot = (slot + 1) % j->n_slots) {
        int free_ = 0;
        if (__atomic_compare_exchange_n(&j->busy[slot], &free_, 1, false, __ATOMIC_ACQUIRE,
                                        __ATOMIC_RELAXED))
            break;
    }
    float *scores = j->scores + (size_t)slot * (size_t)(j->S * j->T + 16);
    float *kt = j->kts + (size_t)slot * (size_t)j->kt_floats;
    for (int64_t bn = b; bn < e; bn++) attn_head(j, bn, scores, kt);
    __atomic_store_n(&j->busy[slot], 0, __ATOMIC_RELEASE);
}

/* Reads mask_index (int32, or int64 converted) and classifies its layout. */
static og_status *attn_mask(kernel_ctx *ctx, attn_job *j) {
    const tensor *m = kernel_input(ctx, 3);
    if (!m) return NULL;
    char a[96];
    if (m->dtype == OG_INT32) {
        j->mask = m->data;
    } else if (m->dtype == OG_INT64) {
        int64_t n = tensor_count(m);
        int32_t *buf;
        OG_TRY(kernel_scratch(ctx, (size_t)n * sizeof(int32_t) + 1, (void **)&buf));
        const int64_t *src = m->data;
        for (int64_t i = 0; i < n; i++)
            buf[i] = src[i] > INT32_MAX ? INT32_MAX : src[i] < INT32_MIN ? INT32_MIN : (int32_t)src[i];
        j->mask = buf;
    } else {
        return kernel_errorf(ctx, OG_ERR_INVALID_ARGUMENT, "input 3 (mask_index) is %s, "
                             "expected int32", og_dtype_name(m->dtype));
    }
    if (m->rank == 1 && m->dims[0] == j->B) {
        j->mask_kind = MASK_END;
    } else if (m->rank == 1 && m->dims[0] == 2 * j->B) {
        j->mask_kind = MASK_END_START;
    } else if (m->rank == 2 && m->dims[0] == j->B && m->dims[1] == j->T) {
        j->mask_kind = MASK_2D;
    } else if (m->rank == 3 && m->dims[0] == j->B && m->dims[1] == j->S && m->dims[2] == j->T) {
        j->mask_kind = MASK_3D;
    } else if (m->rank == 4 || (m->rank == 1 && m->dims[0] == 3 * j->B + 2)) {
        return kernel_errorf(ctx, OG_ERR_UNSUPPORTED, "input 3 (mask_index) of shape %s "
                             "(the 4-D Megatron mask or the 3B+2 index form) is not "
                             "implemented on CPU", shape_str(m->dims, m->rank, a, sizeof a));
    } else {
        return kernel_errorf(ctx, OG_ERR_INVALID_ARGUMENT, "input 3 (mask_index) has shape "
                             "%s; expected (%lld), (%lld), (%lld, %lld) or (%lld, %lld, %lld)",
                             shape_str(m->dims, m->rank, a, sizeof a), (long long)j->B,
                             (long long)(2 * j->B), (long long)j->B, (long long)j->T,
                             (long long)j->B, (long long)j->S, (long long)j->T);
    }
    return NULL;
}

static og_status *same_dtype(kernel_ctx *ctx, int index, const char *what, og_dtype dt) {
    const tensor *t = kernel_input(ctx, index);
    if (t && t->dtype != dt)
        return kernel_errorf(ctx, OG_ERR_INVALID_ARGUMENT, "input %d (%s) is %s, but input "
                             "is %s", index, what, og_dtype_name(t->dtype), og_dtype_name(dt));
    return NULL;
}

og_status *cpu_contrib_attention(kernel_ctx *ctx) {
    OG_TRY(kernel_require_inputs(ctx, 2));
    const tensor *x = ctx->inputs[0], *w = ctx->inputs[1], *bias = kernel_input(ctx, 2);
    const tensor *past = kernel_input(ctx, 4), *abias = kernel_input(ctx, 5);
    og_dtype dt = x->dtype;
    if (!cpu_is_f32able(dt)) return kernel_unsupported_dtype(ctx, 0, dt);
    OG_TRY(same_dtype(ctx, 1, "weights", dt));
    OG_TRY(same_dtype(ctx, 2, "bias", dt));
    OG_TRY(same_dtype(ctx, 4, "past", dt));
    OG_TRY(same_dtype(ctx, 5, "attention_bias", dt));
    const graph_node *node = ctx->node;
    if (graph_attr_int(node, "past_present_share_buffer", 0) != 0)
        return kernel_error(ctx, OG_ERR_UNSUPPORTED, "past_present_share_buffer=1 is not "
                            "implemented on CPU");
    if (graph_attr_int(node, "do_rotary", 0) != 0)
        return kernel_error(ctx, OG_ERR_UNSUPPORTED, "do_rotary=1 is not implemented");
    int64_t N = graph_attr_int(node, "num_heads", 0);
    if (N <= 0)
        return kernel_errorf(ctx, OG_ERR_INVALID_MODEL, "num_heads is %lld, expected a "
                             "positive count", (long long)N);
    char a[96], b2[96];
    if (x->rank != 3)
        return kernel_errorf(ctx, OG_ERR_INVALID_ARGUMENT, "input 0 has shape %s, expected "
                             "(batch, sequence, hidden)", shape_str(x->dims, x->rank, a, sizeof a));
    int64_t B = x->dims[0], S = x->dims[1], Hin = x->dims[2];
    if (w->rank != 2 || w->dims[0] != Hin)
        return kernel_errorf(ctx, OG_ERR_INVALID_ARGUMENT, "input 1 (weights) has shape %s, "
                             "expected (%lld, Hq + Hk + Hv)",
                             shape_str(w->dims, w->rank, a, sizeof a), (long long)Hin);
    int64_t Htot = w->dims[1], Hq, Hk, Hv;
    const int64_t *qkvs;
    int64_t nq = graph_attr_ints(node, "qkv_hidden_sizes", &qkvs);
    if (nq >= 0) {
        if (nq != 3)
            return kernel_errorf(ctx, OG_ERR_INVALID_MODEL, "qkv_hidden_sizes has %lld values, "
                                 "expected 3", (long long)nq);
        Hq = qkvs[0], Hk = qkvs[1], Hv = qkvs[2];
    } else {
        Hq = Hk = Hv = Htot / 3;
    }
    if (Hq <= 0 || Hk != Hq || Hv <= 0 || Hq + Hk + Hv != Htot || Hq % N || Hv % N)
        return kernel_errorf(ctx, OG_ERR_INVALID_ARGUMENT, "weights have %lld columns; the "
                             "Q/K/V sizes %lld/%lld/%lld must add up to it, Q and K must "
                             "agree and each must divide among %lld heads", (long long)Htot,
                             (long long)Hq, (long long)Hk, (long long)Hv, (long long)N);
    if (bias && (bias->rank != 1 || bias->dims[0] != Htot))
        return kernel_errorf(ctx, OG_ERR_INVALID_ARGUMENT, "input 2 (bias) has shape %s, "
                             "expected (%lld)", shape_str(bias->dims, bias->rank, a, sizeof a),
                             (long long)Htot);
    int64_t Dk = Hq / N, Dv = Hv / N, P = 0;
    if (past) {
        if (past->rank != 5 || past->dims[0] != 2 || past->dims[1] != B || past->dims[2] != N ||
            past->dims[4] != Dk || Dk != Dv)
            return kernel_errorf(ctx, OG_ERR_INVALID_ARGUMENT, "input 4 (past) has shape %s, "
                                 "expected (2, %lld, %lld, past_length, %lld) with equal Q/K/V "
                                 "sizes", shape_str(past->dims, past->rank, a, sizeof a),
                                 (long long)B, (long long)N, (long long)Dk);
        P = past->dims[3];
    }
    int64_t T = P + S;
    attn_job j = {.ld = Htot, .q_off = 0, .k_off = Hq, .v_off = Hq + Hk, .B = B, .N = N,
                  .S = S, .P = P, .T = T, .Dk = Dk, .Dv = Dv,
                  .causal = graph_attr_int(node, "unidirectional", 0) != 0,
                  .mfv = graph_attr_float(node, "mask_filter_value", -10000.0f)};
    float sc = graph_attr_float(node, "scale", 0.0f);
    j.scale = sc != 0.0f ? sc : 1.0f / sqrtf((float)Dk);
    OG_TRY(attn_mask(ctx, &j));
    if (abias) {
        if (abias->rank != 4 || (abias->dims[0] != B && abias->dims[0] != 1) ||
            (abias->dims[1] != N && abias->dims[1] != 1) || abias->dims[2] != S ||
            abias->dims[3] != T)
            return kernel_errorf(ctx, OG_ERR_INVALID_ARGUMENT, "input 5 (attention_bias) has "
                                 "shape %s, expected (%lld or 1, %lld or 1, %lld, %lld)",
                                 shape_str(abias->dims, abias->rank, a, sizeof a),
                                 (long long)B, (long long)N, (long long)S, (long long)T);
        j.ab_n = abias->dims[1] == 1 ? 0 : S * T;
        j.ab_b = abias->dims[0] == 1 ? 0 : abias->dims[1] * S * T;
    }

    bool want_present = cpu_wants_output(ctx, 1);
    if (want_present && Dk != Dv)
        return kernel_errorf(ctx, OG_ERR_INVALID_ARGUMENT, "present needs equal K and V "
                             "sizes, got %lld and %lld", (long long)Hk, (long long)Hv);
    int64_t odims[3] = {B, S, Hv}, pdims[5] = {2, B, N, T, Dk};
    tensor *out, *present = NULL;
    OG_TRY(kernel_output(ctx, 0, dt, 3, odims, &out));
    if (want_present) OG_TRY(kernel_output(ctx, 1, dt, 5, pdims, &present));
    (void)b2;
    if (B * N == 0) return NULL;

    /* the fused projection, (B*S, Hin) x (Hin, Htot) + bias */
    const float *xf, *wf, *bf = NULL;
    float *qkv;
    OG_TRY(cpu_in_f32(ctx, 0, &xf));
    OG_TRY(cpu_in_f32(ctx, 1, &wf));
    if (bias) OG_TRY(cpu_in_f32(ctx, 2, &bf));
    int64_t M = B * S;
    OG_TRY(kernel_scratch(ctx, sizeof(float) * (size_t)(M * Htot) + 1, (void **)&qkv));
    if (M > 0) {
        gemm_f32_args g = {.M = M, .N = Htot, .K = Hin, .alpha = 1, .beta = 0, .A = xf,
                           .lda = Hin, .B = wf, .ldb = Htot, .C = qkv, .ldc = Htot};
        void *work;
        OG_TRY(kernel_scratch(ctx, gemm_f32_work_size(&g) + 64, &work));
        OG_TRY(gemm_f32(ctx->pool, &g, work));
        if (bf)
            for (int64_t r = 0; r < M; r++)
                for (int64_t c = 0; c < Htot; c++) qkv[r * Htot + c] += bf[c];
    }
    j.qkv = qkv;
    if (past) OG_TRY(cpu_in_f32(ctx, 4, &j.past));
    if (abias) OG_TRY(cpu_in_f32(ctx, 5, &j.abias));
    float *kv;
    if (present && dt == OG_FLOAT32)
        kv = present->data;
    else
        OG_TRY(kernel_scratch(ctx, sizeof(float) * (size_t)(B * N * T * (Dk + Dv)) + 1,
                              (void **)&kv));
    j.kbuf = kv;
    j.vbuf = kv + B * N * T * Dk;
    OG_TRY(cpu_out_f32(ctx, out, &j.out));
    j.n_slots = threadpool_size(ctx->pool);
    OG_TRY(kernel_scratch(ctx, sizeof(float) * (size_t)(j.n_slots * (S * T + 16)) + 1, (void **)&j.scores));
    /* keys across the lanes pay for their transposition from about four rows on */
    if (S >= 4 && Dk % 8 == 0 && Dk <= 256) j.kt_floats = (T + 15) / 16 * 16 * Dk;
    OG_TRY(kernel_scratch(ctx, sizeof(float) * (size_t)(j.n_slots * j.kt_floats) + 1, (void **)&j.kts));
    OG_TRY(kernel_scratch(ctx, sizeof(int) * (size_t)j.n_slots, (void **)&j.busy));
    memset(j.busy, 0, sizeof(int) * (size_t)j.n_slots);
    /* per head: the past copied, S x T scores and weighted values (short plain loops,
     * about two multiply-adds a nanosecond), an exponential per score */
    double head_ns = (double)(P * (Dk + Dv)) * 0.4 + (double)(S * T) * ((double)(Dk + Dv) * 0.5 + 2);
    threadpool_parallel_for_cost(ctx->pool, B * N, head_ns, attn_heads_fn, &j);
    if (j.failed) return og_oom();
    cpu_out_f32_done(out, j.out);
    if (present) cpu_out_f32_done(present, kv);
    return NULL;
}
