/* CausalConvWithState (default domain from opset 27, com.microsoft version 1): a causal
 * depthwise 1-D convolution that carries its left context between runs.
 *
 * Per channel c, with S = (K - 1) * dilation and ext = concat(past_state[c], input[c])
 * (S + L values; zeros for an absent past):
 *     y[t] = act(bias[c] + sum over j < K of weight[c, 0, j] * ext[t + j * dilation])
 *     present_state[c] = ext[L, L + S), the last S values (so a run shorter than S keeps
 *                        part of the past).
 * act is none, or silu / swish (x * sigmoid(x)), computed as onnxruntime's kernel
 * computes it, x / (1 + expf(-x)), and the taps summed in its order (bias first, a
 * rounded product added per tap; this file is compiled without contraction to fused
 * multiply-adds): its bits feed MatMulNBits' int8 quantization at accuracy_level 4. The activations are (B, C, L) and the
 * state (B, C, S); with channels_last = 1 (com.microsoft) they are (B, L, d1..dn) and
 * (B, S, d1..dn) with C = d1 * ... * dn. ndim > 1 and state_window > 0 are refused.
 * Arithmetic is float32 whatever the storage type. Rows (batch, channel) are split over
 * the pool; the past is read into a row buffer before the present is written, so past
 * and present may be one buffer. */
#include "backends/native/kernels/recurrent/recurrent.h"

#include "base/ort_math.h"

#include <string.h>

typedef struct conv_job {
    og_dtype dt;
    const void *x, *past; /* past NULL: zeros */
    void *y, *pres;       /* pres NULL: not requested */
    const float *w, *bias;
    int64_t B, C, L, K, dil, S;
    bool last, silu;
    float *buf; /* per chunk: S + L ext values, then L outputs */
    int64_t rows, grain;
} conv_job;

/* onnxruntime's SiLU, in place */
static void silu_rows(float *y, int64_t n) {
    for (int64_t i = 0; i < n; i++) y[i] = ort_silu_div(y[i]);
}

static inline size_t esize(og_dtype dt) { return dt == OG_FLOAT32 ? 4 : 2; }

/* n values of storage type dt at base + off, every stride-th, into float32 dst. */
static void load_strided(og_dtype dt, const void *base, int64_t off, int64_t stride, int64_t n,
                         float *dst) {
    size_t es = esize(dt);
    if (stride == 1) {
        cpu_load_f32(dt, (const char *)base + (size_t)off * es, n, dst);
        return;
    }
    for (int64_t i = 0; i < n; i++)
        cpu_load_f32(dt, (const char *)base + (size_t)(off + i * stride) * es, 1, dst + i);
}

static void store_strided(og_dtype dt, void *base, int64_t off, int64_t stride, int64_t n,
                          const float *src) {
    size_t es = esize(dt);
    if (stride == 1) {
        cpu_store_f32(dt, (char *)base + (size_t)off * es, n, src);
        return;
    }
    for (int64_t i = 0; i < n; i++)
        cpu_store_f32(dt, (char *)base + (size_t)(off + i * stride) * es, 1, src + i);
}

/* float32 channels-first with a few new positions (decode): rows are contiguous in x, y
 * and the state, so each row's taps are read in place and the activation runs once over
 * the chunk's outputs. The present row is written after the row's outputs (it may be the
 * past row itself: its values move left, each read before it is overwritten). */
static void conv_rows_short(const conv_job *j, int64_t begin, int64_t end) {
    int64_t L = j->L, S = j->S, K = j->K, dil = j->dil, C = j->C;
    const float *x = j->x, *past = j->past;
    float *y = j->y, *pres = j->pres;
    for (int64_t r = begin; r < end; r++) {
        const float *xr = x + r * L, *pr = past ? past + r * S : NULL, *w = j->w + (r % C) * K;
        float *yr = y + r * L, b0 = j->bias ? j->bias[r % C] : 0.0f;
        for (int64_t t = 0; t < L; t++) {
            float acc = b0;
            for (int64_t k = 0; k < K; k++) {
                int64_t i = t + k * dil; /* into concat(past, x) */
                acc += w[k] * (i >= S ? xr[i - S] : pr ? pr[i] : 0.0f);
            }
            yr[t] = acc;
        }
        if (pres) {
            float *qr = pres + r * S;
            for (int64_t s2 = 0; s2 < S; s2++) {
                int64_t i = L + s2;
                qr[s2] = i >= S ? xr[i - S] : pr ? pr[i] : 0.0f;
            }
        }
    }
    if (j->silu) silu_rows(y + begin * L, (end - begin) * L);
}

static void conv_rows(void *arg, int64_t cb, int64_t ce) {
    const conv_job *j = arg;
    int64_t L = j->L, S = j->S, K = j->K, dil = j->dil, C = j->C;
    int64_t begin = cb * j->grain, end = ce * j->grain < j->rows ? ce * j->grain : j->rows;
    if (j->dt == OG_FLOAT32 && !j->last && L < 16) {
        conv_rows_short(j, begin, end);
        return;
    }
    float *ext = j->buf + cb * (2 * L + S), *y = ext + S + L;
    for (int64_t r = begin; r < end; r++) {
        int64_t b = r / C, c = r % C;
        /* element offsets and strides of this row in the activations and the state */
        int64_t xo = j->last ? b * L * C + c : r * L, so = j->last ? b * S * C + c : r * S;
        int64_t st = j->last ? C : 1;
        if (j->past)
            load_strided(j->dt, j->past, so, st, S, ext);
        else
            memset(ext, 0, sizeof(float) * (size_t)S);
        load_strided(j->dt, j->x, xo, st, L, ext + S);
        const float *w = j->w + c * K;
        float b0 = j->bias ? j->bias[c] : 0.0f;
        for (int64_t t = 0; t < L; t++) y[t] = b0;
        for (int64_t k = 0; k < K; k++) {
            const float *e = ext + k * dil;
            float wk = w[k];
            for (int64_t t = 0; t < L; t++) y[t] += wk * e[t];
        }
        if (j->silu) silu_rows(y, L);
        store_strided(j->dt, j->y, xo, st, L, y);
        if (j->pres) store_strided(j->dt, j->pres, so, st, S, ext + L);
    }
}

static og_status *want_like(kernel_ctx *ctx, int i, const char *what, og_dtype dt, int rank,
                            const int64_t *dims) {
    const tensor *t = kernel_input(ctx, i);
    if (t->dtype != dt)
        return kernel_errorf(ctx, OG_ERR_INVALID_ARGUMENT, "input %d (%s) is %s, expected the "
                             "input's dtype %s", i, what, og_dtype_name(t->dtype),
                             og_dtype_name(dt));
    return cpu_want_shape(ctx, i, what, rank, dims);
}

og_status *cpu_causal_conv_with_state(kernel_ctx *ctx) {
    OG_TRY(kernel_require_inputs(ctx, 2));
    const graph_node *node = ctx->node;
    const tensor *x = ctx->inputs[0], *w = ctx->inputs[1];
    const tensor *bias = kernel_input(ctx, 2), *past = kernel_input(ctx, 3);
    og_dtype dt = x->dtype;
    char a[96];
    if (!cpu_is_f32able(dt)) return kernel_unsupported_dtype(ctx, 0, dt);
    int64_t ndim = graph_attr_int(node, "ndim", 1), window = graph_attr_int(node, "state_window", 0);
    if (ndim != 1)
        return kernel_errorf(ctx, OG_ERR_UNSUPPORTED, "ndim=%lld is not implemented (only 1-D "
                             "causal convolutions)", (long long)ndim);
    if (window != 0)
        return kernel_errorf(ctx, OG_ERR_UNSUPPORTED, "state_window=%lld (per-position state "
                             "slots) is not implemented", (long long)window);
    const char *act = graph_attr_string(node, "activation", "none");
    bool silu = strcmp(act, "silu") == 0 || strcmp(act, "swish") == 0;
    if (!silu && strcmp(act, "none") != 0)
        return kernel_errorf(ctx, OG_ERR_INVALID_MODEL, "activation '%s' is not one of none, "
                             "silu, swish", act);
    conv_job j = {.dt = dt, .silu = silu, .dil = graph_attr_int(node, "dilation", 1),
                  .last = graph_attr_int(node, "channels_last", 0) != 0};
    if (j.dil < 1)
        return kernel_errorf(ctx, OG_ERR_INVALID_MODEL, "dilation %lld must be at least 1",
                             (long long)j.dil);
    if (x->rank < 3 || (!j.last && x->rank != 3))
        return kernel_errorf(ctx, OG_ERR_INVALID_ARGUMENT, "input 0 has shape %s, expected %s",
                             shape_str(x->dims, x->rank, a, sizeof a),
                             j.last ? "(batch, length, d1, ...)" : "(batch, channels, length)");
    j.B = x->dims[0];
    j.C = j.last ? shape_count(x->dims + 2, x->rank - 2) : x->dims[1];
    j.L = j.last ? x->dims[1] : x->dims[2];
    if (w->rank != 3 || w->dims[0] != j.C || w->dims[1] != 1 || w->dims[2] < 1)
        return kernel_errorf(ctx, OG_ERR_INVALID_ARGUMENT, "input 1 (weight) has shape %s, "
                             "expected (%lld, 1, k) with k >= 1",
                             shape_str(w->dims, w->rank, a, sizeof a), (long long)j.C);
    if (w->dtype != dt)
        return kernel_errorf(ctx, OG_ERR_INVALID_ARGUMENT, "input 1 (weight) is %s, expected the "
                             "input's dtype %s", og_dtype_name(w->dtype), og_dtype_name(dt));
    j.K = w->dims[2];
    j.S = (j.K - 1) * j.dil;
    if (bias) OG_TRY(want_like(ctx, 2, "bias", dt, 1, &j.C));
    int64_t sd[OG_MAX_RANK];
    memcpy(sd, x->dims, sizeof(int64_t) * (size_t)x->rank);
    sd[j.last ? 1 : 2] = j.S;
    if (past) OG_TRY(want_like(ctx, 3, "past_state", dt, x->rank, sd));

    tensor *y, *pres = NULL;
    OG_TRY(kernel_output(ctx, 0, dt, x->rank, x->dims, &y));
    if (cpu_wants_output(ctx, 1)) OG_TRY(kernel_output(ctx, 1, dt, x->rank, sd, &pres));
    j.rows = j.B * j.C;
    if (j.rows == 0 || (j.L == 0 && (!pres || j.S == 0))) return NULL;
    j.x = x->data;
    j.past = past ? past->data : NULL;
    j.y = y->data;
    j.pres = pres ? pres->data : NULL;
    OG_TRY(cpu_in_f32(ctx, 1, &j.w));
    if (bias) OG_TRY(cpu_in_f32(ctx, 2, &j.bias));
    j.grain = 1 + 16384 / (j.L * j.K + j.S + 1);
    int64_t chunks = (j.rows + j.grain - 1) / j.grain;
    OG_TRY(kernel_scratch(ctx, sizeof(float) * (size_t)(chunks * (2 * j.L + j.S)) + 1,
                          (void **)&j.buf));
    threadpool_parallel_for(ctx->pool, chunks, 1, conv_rows, &j);
    return NULL;
}
