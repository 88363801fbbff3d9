/* RNN, GRU and LSTM (opsets 1 to 22+): forward, reverse and bidirectional, the layout
 * attribute, sequence_lens, initial states, LSTM peepholes and input_forget, GRU's
 * linear_before_reset both ways, clip, and the activation list with its alpha/beta.
 *
 * Per direction: the input projection X W^T of every time step is one product
 * [T*B, I] x [I, G*H] (G gates); then each step multiplies the previous hidden state by
 * R^T ([B, H] x [H, G*H]) and applies the cell. Float32, float16 and bfloat16 run their
 * products on gemm_f32 (the pool splits them); float64 runs them in double on the pool.
 * The cell arithmetic is double for every dtype, so there is one copy of it.
 *
 * Semantics that the reference implementation leaves out, checked against onnxruntime
 * (tests/vision_seq/make_cases.py):
 *  - sequence_lens: batch entry b runs its first L_b steps; a reverse direction runs them
 *    from step L_b - 1 down to 0. Y is zero at steps >= L_b and Y_h (Y_c) is the state
 *    after the entry's last step.
 *  - clip bounds every gate's input (after peephole terms) to [-clip, clip] before its
 *    activation.
 *  - activation_alpha / activation_beta are consumed in order by the activations that
 *    take them (Affine, LeakyRelu, ThresholdedRelu, ScaledTanh, HardSigmoid, Elu); an
 *    activation left without a value takes onnxruntime's default. */
#include "backends/native/kernels/recurrent/recurrent.h"

#include "backends/native/kernels/matmul/gemm_f32.h"
#include "backends/native/kernels/kernel_util.h"

#include <ctype.h>
#include <math.h>
#include <string.h>

typedef enum { RN_RNN, RN_GRU, RN_LSTM } rn_kind;

/* ---- activations ------------------------------------------------------------------ */

typedef enum {
    ACT_RELU, ACT_TANH, ACT_SIGMOID, ACT_AFFINE, ACT_LEAKYRELU, ACT_THRESHOLDEDRELU,
    ACT_SCALEDTANH, ACT_HARDSIGMOID, ACT_ELU, ACT_SOFTSIGN, ACT_SOFTPLUS, ACT_COUNT
} rn_act_kind;

static const struct {
    const char *name;
    int n_params;         /* how many of alpha, beta it takes */
    double alpha, beta;   /* defaults */
} rn_acts[ACT_COUNT] = {
    [ACT_RELU] = {"relu", 0, 0, 0},           [ACT_TANH] = {"tanh", 0, 0, 0},
    [ACT_SIGMOID] = {"sigmoid", 0, 0, 0},     [ACT_AFFINE] = {"affine", 2, 1, 0},
    [ACT_LEAKYRELU] = {"leakyrelu", 1, 0.01, 0},
    [ACT_THRESHOLDEDRELU] = {"thresholdedrelu", 1, 1, 0},
    [ACT_SCALEDTANH] = {"scaledtanh", 2, 1, 1},
    [ACT_HARDSIGMOID] = {"hardsigmoid", 2, 0.2, 0.5},
    [ACT_ELU] = {"elu", 1, 1, 0},             [ACT_SOFTSIGN] = {"softsign", 0, 0, 0},
    [ACT_SOFTPLUS] = {"softplus", 0, 0, 0},
};

typedef struct rn_act {
    rn_act_kind kind;
    double alpha, beta;
} rn_act;

static double rn_apply(const rn_act *a, double x) {
    switch (a->kind) {
    case ACT_RELU: return x > 0 ? x : 0;
    case ACT_TANH: return tanh(x);
    case ACT_SIGMOID: return 1 / (1 + exp(-x));
    case ACT_AFFINE: return a->alpha * x + a->beta;
    case ACT_LEAKYRELU: return x >= 0 ? x : a->alpha * x;
    case ACT_THRESHOLDEDRELU: return x > a->alpha ? x : 0;
    case ACT_SCALEDTANH: return a->alpha * tanh(a->beta * x);
    case ACT_HARDSIGMOID: {
        double v = a->alpha * x + a->beta;
        return v < 0 ? 0 : v > 1 ? 1 : v;
    }
    case ACT_ELU: return x >= 0 ? x : a->alpha * (exp(x) - 1);
    case ACT_SOFTSIGN: return x / (1 + fabs(x));
    case ACT_SOFTPLUS: return x > 30 ? x : log1p(exp(x));
    default: return x;
    }
}

/* Reads `activations` (nper per direction, defaults dflt) with their alpha/beta into
 * acts[dirs * nper]. A list of nper names serves both directions. */
static og_status *rn_read_acts(const kernel_ctx *ctx, int dirs, int nper,
                               const rn_act_kind *dflt, rn_act *acts) {
    const graph_attr *names = graph_attr_find(ctx->node, "activations");
    const float *al, *be;
    int64_t nal = graph_attr_floats(ctx->node, "activation_alpha", &al);
    int64_t nbe = graph_attr_floats(ctx->node, "activation_beta", &be);
    int64_t ia = 0, ib = 0, n = names && names->type == ATTR_STRINGS ? names->n : 0;
    if (n && n != nper && n != (int64_t)nper * dirs)
        return kernel_errorf(ctx, OG_ERR_INVALID_MODEL, "attribute 'activations' has %lld "
                             "names, expected %d per direction (%d directions)", (long long)n,
                             nper, dirs);
    for (int k = 0; k < dirs * nper; k++) {
        rn_act *a = &acts[k];
        if (!n) {
            a->kind = dflt[k % nper];
        } else {
            const graph_bytes *s = &names->strings[k % n];
            char low[32];
            size_t len = s->len < sizeof low - 1 ? s->len : sizeof low - 1;
            for (size_t i = 0; i < len; i++) low[i] = (char)tolower((unsigned char)s->s[i]);
            low[len] = 0;
            int found = -1;
            for (int t = 0; t < ACT_COUNT; t++)
                if (!strcmp(low, rn_acts[t].name)) found = t;
            if (found < 0 || s->len >= sizeof low)
                return kernel_errorf(ctx, OG_ERR_UNSUPPORTED, "activation '%.*s' is not one of "
                                     "Relu, Tanh, Sigmoid, Affine, LeakyRelu, ThresholdedRelu, "
                                     "ScaledTanh, HardSigmoid, Elu, Softsign, Softplus",
                                     (int)(s->len < 64 ? s->len : 64), s->s);
            a->kind = (rn_act_kind)found;
        }
        a->alpha = rn_acts[a->kind].alpha, a->beta = rn_acts[a->kind].beta;
        if (n && rn_acts[a->kind].n_params >= 1 && ia < nal) a->alpha = al[ia++];
        if (n && rn_acts[a->kind].n_params >= 2 && ib < nbe) a->beta = be[ib++];
    }
    return NULL;
}

/* ---- typed matrices and their products --------------------------------------------- */

/* A row-major matrix in the compute type: float (f32/f16/bf16 inputs) or double. */
typedef struct rn_mat {
    float *f;
    double *d;
} rn_mat;

static inline double rn_get(rn_mat m, int64_t i) { return m.f ? (double)m.f[i] : m.d[i]; }
static inline void rn_set(rn_mat m, int64_t i, double v) {
    if (m.f) m.f[i] = (float)v;
    else m.d[i] = v;
}
static inline rn_mat rn_at(rn_mat m, int64_t off) {
    return (rn_mat){m.f ? m.f + off : NULL, m.d ? m.d + off : NULL};
}

typedef struct rn_mm_f64 {
    const double *a, *w; /* a [M, K] with row stride lda; w [N, K] */
    double *c;           /* [M, N] with row stride ldc */
    int64_t M, N, K, lda, ldc;
} rn_mm_f64;

static void rn_mm_f64_cols(void *arg, int64_t b, int64_t e) {
    const rn_mm_f64 *j = arg;
    for (int64_t m = 0; m < j->M; m++) {
        const double *a = j->a + m * j->lda;
        for (int64_t n = b; n < e; n++) {
            const double *w = j->w + n * j->K;
            double s0 = 0, s1 = 0, s2 = 0, s3 = 0;
            int64_t k = 0;
            for (; k + 4 <= j->K; k += 4) {
                s0 += a[k] * w[k], s1 += a[k + 1] * w[k + 1];
                s2 += a[k + 2] * w[k + 2], s3 += a[k + 3] * w[k + 3];
            }
            for (; k < j->K; k++) s0 += a[k] * w[k];
            j->c[m * j->ldc + n] = (s0 + s1) + (s2 + s3);
        }
    }
}

/* c[M, N] = a[M, K] (row stride lda) x w[N, K]^T, c with row stride ldc. */
static og_status *rn_mm(kernel_ctx *ctx, rn_mat a, int64_t lda, rn_mat w, rn_mat c,
                        int64_t ldc, int64_t M, int64_t N, int64_t K) {
    if (M == 0 || N == 0) return NULL;
    if (c.f) {
        if (K == 0) {
            for (int64_t m = 0; m < M; m++) memset(c.f + m * ldc, 0, sizeof(float) * (size_t)N);
            return NULL;
        }
        gemm_f32_args g = {false, true, M, N, K, 1.0f, 0.0f, a.f, lda, w.f, K, c.f, ldc};
        void *work = NULL;
        size_t need = gemm_f32_work_size(&g);
        if (need) OG_TRY(kernel_scratch(ctx, need, &work));
        return gemm_f32(ctx->pool, &g, work);
    }
    rn_mm_f64 j = {a.d, w.d, c.d, M, N, K, lda, ldc};
    int64_t grain = (1 << 14) / (M * K + 1) + 1;
    threadpool_parallel_for(ctx->pool, N, grain, rn_mm_f64_cols, &j);
    return NULL;
}

/* ---- the op --------------------------------------------------------------------------- */

typedef struct rn_op {
    rn_kind kind;
    int G;                 /* gates: 1, 3, 4 */
    int dirs;
    bool reverse_only, layout1, lbr, input_forget, has_clip;
    double clip;
    int64_t T, B, I, H;
    rn_act acts[6];        /* per direction: nper activations */
    int nper;
    const int32_t *seq;    /* [B] or NULL */
    bool f32;              /* compute products in float (else double) */
} rn_op;

/* Buffers of one direction's run. */
typedef struct rn_dir {
    rn_mat x, w, r;        /* X [T*B rows in X's order, I]; W [G*H, I]; R [G*H, H] */
    const double *wb, *rb; /* biases [G*H] each */
    const double *p;       /* peepholes [3H] (i, o, f) or NULL */
    rn_mat xw;             /* [T*B, G*H], rows in X's order */
    rn_mat hprev;          /* [B, H], the state fed to the products */
    rn_mat rec;            /* [B, G*H] */
    rn_mat rh, rhr;        /* GRU: r * H_prev [B, H] and its product with Rh [B, H] */
    double *h, *c;         /* [B, H] state in double */
    double *gates;         /* [G*H] one entry's pre-activations */
} rn_dir;

static inline double rn_clip(const rn_op *op, double v) {
    if (!op->has_clip) return v;
    return v < -op->clip ? -op->clip : v > op->clip ? op->clip : v;
}

/* Row of X (and of xw) holding time t of batch entry b. */
static inline int64_t rn_row(const rn_op *op, int64_t t, int64_t b) {
    return op->layout1 ? b * op->T + t : t * op->B + b;
}

/* Output offsets. Y: layout 0 [T, dirs, B, H], 1 [B, T, dirs, H]; Y_h/Y_c: layout 0
 * [dirs, B, H], 1 [B, dirs, H]. */
static inline int64_t rn_y_off(const rn_op *op, int64_t t, int d, int64_t b) {
    return op->layout1 ? ((b * op->T + t) * op->dirs + d) * op->H
                       : ((t * op->dirs + d) * op->B + b) * op->H;
}
static inline int64_t rn_state_off(const rn_op *op, int d, int64_t b) {
    return op->layout1 ? (b * op->dirs + d) * op->H : ((int64_t)d * op->B + b) * op->H;
}

/* One cell update of entry b at time t: gates[] holds X W^T + H R^T + biases (for GRU's
 * h gate without the recurrent term unless linear_before_reset). */
static void rn_cell(const rn_op *op, rn_dir *dr, const rn_act *act, int64_t b) {
    int64_t H = op->H;
    double *g = dr->gates, *h = dr->h + b * H;
    if (op->kind == RN_RNN) {
        for (int64_t k = 0; k < H; k++) h[k] = rn_apply(&act[0], rn_clip(op, g[k]));
    } else if (op->kind == RN_LSTM) {
        double *c = dr->c + b * H;
        const double *p = dr->p;
        for (int64_t k = 0; k < H; k++) {
            double cp = c[k];
            double gi = rn_apply(&act[0], rn_clip(op, g[k] + (p ? p[k] * cp : 0)));
            double gf = op->input_forget
                            ? 1 - gi
                            : rn_apply(&act[0], rn_clip(op, g[2 * H + k] + (p ? p[2 * H + k] * cp : 0)));
            double gc = rn_apply(&act[1], rn_clip(op, g[3 * H + k]));
            double cn = gf * cp + gi * gc;
            double go = rn_apply(&act[0], rn_clip(op, g[H + k] + (p ? p[H + k] * cn : 0)));
            c[k] = cn;
            h[k] = go * rn_apply(&act[2], cn);
        }
    } else { /* GRU: z = g[0..H), r = g[H..2H) already activated; h gate at g[2H..3H) */
        for (int64_t k = 0; k < H; k++) {
            double z = g[k], hh = rn_apply(&act[1], rn_clip(op, g[2 * H + k]));
            h[k] = (1 - z) * hh + z * h[k];
        }
    }
}

/* Runs direction d (reverse when `rev`) over all steps. Y, Y_h, Y_c may be NULL. */
static og_status *rn_direction(kernel_ctx *ctx, const rn_op *op, rn_dir *dr, int d, bool rev,
                               tensor *y, tensor *yh, tensor *yc) {
    int64_t T = op->T, B = op->B, H = op->H, GH = op->G * H;
    const rn_act *act = op->acts + d * op->nper;
    OG_TRY(rn_mm(ctx, dr->x, op->I, dr->w, dr->xw, GH, T * B, GH, op->I));
    for (int64_t s = 0; s < T; s++) {
        /* the previous state, in the products' type */
        for (int64_t i = 0; i < B * H; i++) rn_set(dr->hprev, i, dr->h[i]);
        OG_TRY(rn_mm(ctx, dr->hprev, H, dr->r, dr->rec, GH, B, GH, H));
        bool any_r = false;
        for (int64_t b = 0; b < B; b++) {
            int64_t len = op->seq ? op->seq[b] : T;
            if (s >= len) continue;
            int64_t t = rev ? len - 1 - s : s;
            rn_mat xw = rn_at(dr->xw, rn_row(op, t, b) * GH), rec = rn_at(dr->rec, b * GH);
            double *g = dr->gates;
            for (int64_t k = 0; k < GH; k++)
                g[k] = rn_get(xw, k) + dr->wb[k] + rn_get(rec, k) + dr->rb[k];
            if (op->kind == RN_GRU) {
                for (int64_t k = 0; k < 2 * H; k++) g[k] = rn_apply(&act[0], rn_clip(op, g[k]));
                if (op->lbr) { /* h gate: X Wh + Wbh + r * (H Rh + Rbh) */
                    for (int64_t k = 0; k < H; k++) {
                        int64_t q = 2 * H + k;
                        g[q] = rn_get(xw, q) + dr->wb[q] + g[H + k] * (rn_get(rec, q) + dr->rb[q]);
                    }
                } else { /* h gate: X Wh + Wbh + (r * H) Rh + Rbh; the product comes next */
                    any_r = true;
                    for (int64_t k = 0; k < H; k++) {
                        int64_t q = 2 * H + k;
                        g[q] = rn_get(xw, q) + dr->wb[q] + dr->rb[q];
                        rn_set(dr->rh, b * H + k, g[H + k] * dr->h[b * H + k]);
                    }
                    /* keep z and the partial h gate until the product is known */
                    memcpy(dr->gates + GH + b * 3 * H, g, sizeof(double) * (size_t)(3 * H));
                    continue;
                }
            }
            rn_cell(op, dr, act, b);
        }
        if (any_r) {
            for (int64_t b = 0; b < B; b++) { /* rows of idle entries: any finite value */
                int64_t len = op->seq ? op->seq[b] : T;
                if (s >= len)
                    for (int64_t k = 0; k < H; k++) rn_set(dr->rh, b * H + k, 0);
            }
            OG_TRY(rn_mm(ctx, dr->rh, H, rn_at(dr->r, 2 * H * H), dr->rhr, H, B, H, H));
            for (int64_t b = 0; b < B; b++) {
                int64_t len = op->seq ? op->seq[b] : T;
                if (s >= len) continue;
                memcpy(dr->gates, dr->gates + GH + b * 3 * H, sizeof(double) * (size_t)(3 * H));
                for (int64_t k = 0; k < H; k++) dr->gates[2 * H + k] += rn_get(dr->rhr, b * H + k);
                rn_cell(op, dr, act, b);
            }
        }
        if (y)
            for (int64_t b = 0; b < B; b++) {
                int64_t len = op->seq ? op->seq[b] : T;
                if (s >= len) continue;
                int64_t t = rev ? len - 1 - s : s;
                cpu_store_f64_rounded(y->dtype, y->data, rn_y_off(op, t, d, b), H, dr->h + b * H);
            }
    }
    for (int64_t b = 0; b < B; b++) {
        if (yh) cpu_store_f64_rounded(yh->dtype, yh->data, rn_state_off(op, d, b), H, dr->h + b * H);
        if (yc) cpu_store_f64_rounded(yc->dtype, yc->data, rn_state_off(op, d, b), H, dr->c + b * H);
    }
    return NULL;
}

/* Input `index` as a typed matrix for the products (float copy for f16/bf16). */
static og_status *rn_typed(kernel_ctx *ctx, const rn_op *op, int index, rn_mat *m) {
    const tensor *t = ctx->inputs[index];
    *m = (rn_mat){0};
    if (op->f32) {
        const float *f;
        OG_TRY(cpu_in_f32(ctx, index, &f));
        m->f = (float *)f; /* only read */
    } else {
        m->d = t->data;
    }
    return NULL;
}

static og_status *rn_alloc(kernel_ctx *ctx, const rn_op *op, int64_t n, rn_mat *m) {
    *m = (rn_mat){0};
    if (op->f32) return kernel_scratch(ctx, (size_t)n * sizeof(float) + 1, (void **)&m->f);
    return kernel_scratch(ctx, (size_t)n * sizeof(double) + 1, (void **)&m->d);
}

/* Checks that input `index` (optional when !required) has the given shape. */
static og_status *rn_check(const kernel_ctx *ctx, int index, const char *what, int rank,
                           const int64_t *dims, og_dtype dt, bool required) {
    const tensor *t = kernel_input(ctx, index);
    if (!t) {
        if (!required) return NULL;
        return kernel_errorf(ctx, OG_ERR_INVALID_MODEL, "input %d (%s) is missing", index, what);
    }
    bool ok = t->rank == rank && t->dtype == dt;
    for (int i = 0; ok && i < rank; i++) ok = t->dims[i] == dims[i];
    if (!ok) {
        char a[96], b[96];
        return kernel_errorf(ctx, OG_ERR_INVALID_ARGUMENT, "input %d (%s) is %s %s, expected "
                             "%s %s", index, what, og_dtype_name(t->dtype),
                             shape_str(t->dims, t->rank, a, sizeof a), og_dtype_name(dt),
                             shape_str(dims, rank, b, sizeof b));
    }
    return NULL;
}

static og_status *rn_run(kernel_ctx *ctx, rn_kind kind) {
    OG_TRY(kernel_require_inputs(ctx, 3));
    const tensor *x = ctx->inputs[0], *r = ctx->inputs[2];
    rn_op op = {.kind = kind, .G = kind == RN_RNN ? 1 : kind == RN_GRU ? 3 : 4};
    if (!cpu_is_float(x->dtype)) return kernel_unsupported_dtype(ctx, 0, x->dtype);
    op.f32 = x->dtype != OG_FLOAT64;
    const char *dir = graph_attr_string(ctx->node, "direction", "forward");
    if (!strcmp(dir, "bidirectional")) op.dirs = 2;
    else if (!strcmp(dir, "forward") || !strcmp(dir, "reverse")) op.dirs = 1;
    else
        return kernel_errorf(ctx, OG_ERR_INVALID_MODEL, "direction '%s' is not one of forward, "
                             "reverse, bidirectional", dir);
    op.reverse_only = !strcmp(dir, "reverse");
    op.layout1 = graph_attr_int(ctx->node, "layout", 0) != 0;
    if (x->rank != 3)
        return kernel_errorf(ctx, OG_ERR_INVALID_ARGUMENT, "input 0 (X) has rank %d, expected 3",
                             x->rank);
    op.T = x->dims[op.layout1 ? 1 : 0], op.B = x->dims[op.layout1 ? 0 : 1], op.I = x->dims[2];
    op.H = r->rank == 3 ? r->dims[2] : 0;
    int64_t hs = graph_attr_int(ctx->node, "hidden_size", op.H);
    if (hs != op.H || op.H <= 0)
        return kernel_errorf(ctx, OG_ERR_INVALID_ARGUMENT, "hidden_size %lld does not match input "
                             "2 (R), whose last dim is %lld", (long long)hs, (long long)op.H);
    int64_t GH = op.G * op.H;
    int64_t wd[3] = {op.dirs, GH, op.I}, rd[3] = {op.dirs, GH, op.H}, bd[2] = {op.dirs, 2 * GH};
    int64_t sd[1] = {op.B}, hd[3] = {op.dirs, op.B, op.H}, pd[2] = {op.dirs, 3 * op.H};
    if (op.layout1) hd[0] = op.B, hd[1] = op.dirs;
    OG_TRY(rn_check(ctx, 1, "W", 3, wd, x->dtype, true));
    OG_TRY(rn_check(ctx, 2, "R", 3, rd, x->dtype, true));
    OG_TRY(rn_check(ctx, 3, "B", 2, bd, x->dtype, false));
    OG_TRY(rn_check(ctx, 4, "sequence_lens", 1, sd, OG_INT32, false));
    OG_TRY(rn_check(ctx, 5, "initial_h", 3, hd, x->dtype, false));
    if (kind == RN_LSTM) {
        OG_TRY(rn_check(ctx, 6, "initial_c", 3, hd, x->dtype, false));
        OG_TRY(rn_check(ctx, 7, "P", 2, pd, x->dtype, false));
    }
    const tensor *seq = kernel_input(ctx, 4);
    if (seq) {
        op.seq = seq->data;
        for (int64_t b = 0; b < op.B; b++)
            if (op.seq[b] < 0 || op.seq[b] > op.T)
                return kernel_errorf(ctx, OG_ERR_INVALID_ARGUMENT, "sequence_lens[%lld] is %d, "
                                     "expected 0 to %lld", (long long)b, op.seq[b], (long long)op.T);
    }
    const graph_attr *ca = graph_attr_find(ctx->node, "clip");
    op.has_clip = ca != NULL;
    op.clip = graph_attr_float(ctx->node, "clip", 0);
    if (op.has_clip && !(op.clip > 0))
        return kernel_errorf(ctx, OG_ERR_INVALID_MODEL, "clip is %g, expected > 0", op.clip);
    op.lbr = graph_attr_int(ctx->node, "linear_before_reset", 0) != 0;
    op.input_forget = graph_attr_int(ctx->node, "input_forget", 0) != 0;
    static const rn_act_kind d_rnn[1] = {ACT_TANH}, d_gru[2] = {ACT_SIGMOID, ACT_TANH},
                             d_lstm[3] = {ACT_SIGMOID, ACT_TANH, ACT_TANH};
    op.nper = kind == RN_RNN ? 1 : kind == RN_GRU ? 2 : 3;
    OG_TRY(rn_read_acts(ctx, op.dirs, op.nper, kind == RN_RNN ? d_rnn : kind == RN_GRU ? d_gru : d_lstm,
                        op.acts));

    /* outputs */
    tensor *y = NULL, *yh = NULL, *yc = NULL;
    int64_t yd[4] = {op.T, op.dirs, op.B, op.H};
    if (op.layout1) yd[0] = op.B, yd[1] = op.T, yd[2] = op.dirs;
    if (cpu_wants_output(ctx, 0)) OG_TRY(kernel_output(ctx, 0, x->dtype, 4, yd, &y));
    if (cpu_wants_output(ctx, 1)) OG_TRY(kernel_output(ctx, 1, x->dtype, 3, hd, &yh));
    if (kind == RN_LSTM && cpu_wants_output(ctx, 2)) OG_TRY(kernel_output(ctx, 2, x->dtype, 3, hd, &yc));
    if (y && y->nbytes) memset(y->data, 0, y->nbytes); /* steps past sequence_lens stay 0 */

    /* inputs in the products' type and in double */
    rn_dir dr = {0};
    rn_mat xm, wm, rm;
    OG_TRY(rn_typed(ctx, &op, 0, &xm));
    OG_TRY(rn_typed(ctx, &op, 1, &wm));
    OG_TRY(rn_typed(ctx, &op, 2, &rm));
    double *bias = NULL, *init_h = NULL, *init_c = NULL, *peep = NULL;
    if (kernel_input(ctx, 3)) OG_TRY(cpu_in_f64(ctx, ctx->inputs[3], 3, &bias));
    if (kernel_input(ctx, 5)) OG_TRY(cpu_in_f64(ctx, ctx->inputs[5], 5, &init_h));
    if (kind == RN_LSTM && kernel_input(ctx, 6)) OG_TRY(cpu_in_f64(ctx, ctx->inputs[6], 6, &init_c));
    if (kind == RN_LSTM && kernel_input(ctx, 7)) OG_TRY(cpu_in_f64(ctx, ctx->inputs[7], 7, &peep));
    double *zeros;
    OG_TRY(kernel_scratch(ctx, sizeof(double) * (size_t)(2 * GH) + 1, (void **)&zeros));
    memset(zeros, 0, sizeof(double) * (size_t)(2 * GH));
    OG_TRY(rn_alloc(ctx, &op, op.T * op.B * GH, &dr.xw));
    OG_TRY(rn_alloc(ctx, &op, op.B * op.H, &dr.hprev));
    OG_TRY(rn_alloc(ctx, &op, op.B * GH, &dr.rec));
    if (kind == RN_GRU && !op.lbr) {
        OG_TRY(rn_alloc(ctx, &op, op.B * op.H, &dr.rh));
        OG_TRY(rn_alloc(ctx, &op, op.B * op.H, &dr.rhr));
    }
    size_t sz = sizeof(double) * (size_t)(op.B * op.H);
    OG_TRY(kernel_scratch(ctx, 2 * sz + 1, (void **)&dr.h));
    dr.c = dr.h + op.B * op.H;
    /* gates: one entry's [G*H], then GRU's per-entry stash of 3H */
    OG_TRY(kernel_scratch(ctx, sizeof(double) * (size_t)(GH + op.B * 3 * op.H) + 1,
                          (void **)&dr.gates));
    dr.x = xm;
    for (int d = 0; d < op.dirs; d++) {
        dr.w = rn_at(wm, d * GH * op.I);
        dr.r = rn_at(rm, d * GH * op.H);
        dr.wb = bias ? bias + d * 2 * GH : zeros;
        dr.rb = bias ? bias + d * 2 * GH + GH : zeros;
        dr.p = peep ? peep + d * 3 * op.H : NULL;
        for (int64_t b = 0; b < op.B; b++)
            for (int64_t k = 0; k < op.H; k++) {
                int64_t so = rn_state_off(&op, d, b) + k;
                dr.h[b * op.H + k] = init_h ? init_h[so] : 0;
                dr.c[b * op.H + k] = init_c ? init_c[so] : 0;
            }
        bool rev = op.reverse_only || d == 1;
        OG_TRY(rn_direction(ctx, &op, &dr, d, rev, y, yh, yc));
    }
    return NULL;
}

og_status *cpu_rnn(kernel_ctx *ctx) { return rn_run(ctx, RN_RNN); }
og_status *cpu_gru(kernel_ctx *ctx) { return rn_run(ctx, RN_GRU); }
og_status *cpu_lstm(kernel_ctx *ctx) { return rn_run(ctx, RN_LSTM); }
