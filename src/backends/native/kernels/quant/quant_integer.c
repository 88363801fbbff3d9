/* The integer products over 8-bit tensors: MatMulInteger and ConvInteger (int32 results)
 * and their requantizing forms QLinearMatMul and QLinearConv.
 *
 * Both operands are widened to int32 with their zero points subtracted, so the products
 * are exact; sums wrap modulo 2^32 as the spec allows ("accumulation may overflow if and
 * only if in 32 bits"), computed in uint32 so that the wrap is defined behaviour. The
 * product is a plain int32 loop split over the pool by (row, column block); the
 * convolutions gather input patches into int32 columns first (im2col) over the window
 * geometry Conv uses (window.c).
 *
 * Requantization (QLinear*): y = saturate(rint(acc * m) + y_zero_point), ties to even,
 * with the multiplier m = a_scale * b_scale / y_scale formed in the scales' own type
 * (each step rounded to float32, or to float16 for float16 scales) and the product
 * acc * m in double: ONNX's reference arithmetic, step for step. onnxruntime forms m the
 * same way but multiplies in float32, so where acc * m lies within float32's rounding
 * error of a .5 tie it can round the other way (tests/unit/test_vision_seq_kernels.c pins
 * one such case); exact arithmetic on the scales' values can differ from both there too.
 * We follow the reference, which the backend node tests are written from. */
#include "backends/native/kernels/quant/quant.h"

#include "backends/native/kernels/broadcast.h"
#include "backends/native/kernels/kernel_util.h"
#include "backends/native/kernels/matmul/matmul.h"
#include "backends/native/kernels/spatial/window.h"

#include <math.h>
#include <string.h>

static bool qi_is_8bit(og_dtype dt) { return dt == OG_INT8 || dt == OG_UINT8; }

/* Reads input `index` (an 8-bit tensor) as int32 minus its zero point, input `zp_index`
 * (absent: 0). A zero point is a scalar, a 1-D vector of length x->dims[vec_axis]
 * (per row of A, per column of B, per output channel of W), or a tensor that broadcasts
 * to x's shape. */
static og_status *qi_widen(kernel_ctx *ctx, int index, int zp_index, int vec_axis,
                           int32_t **out) {
    const tensor *x = ctx->inputs[index], *zp = kernel_input(ctx, zp_index);
    if (!qi_is_8bit(x->dtype)) return kernel_unsupported_dtype(ctx, index, x->dtype);
    int64_t n = tensor_count(x);
    int32_t *w;
    OG_TRY(kernel_scratch(ctx, (size_t)n * sizeof(int32_t) + 1, (void **)&w));
    *out = w;
    for (int64_t i = 0; i < n; i++)
        w[i] = x->dtype == OG_INT8 ? ((const int8_t *)x->data)[i] : ((const uint8_t *)x->data)[i];
    if (!zp || tensor_count(zp) == 0) return NULL;
    if (!cpu_is_int(zp->dtype)) return kernel_unsupported_dtype(ctx, zp_index, zp->dtype);
    int64_t zd[OG_MAX_RANK];
    int zr = zp->rank;
    memcpy(zd, zp->dims, sizeof(int64_t) * (size_t)zr);
    if (zr == 1 && x->rank > 1 && zd[0] == x->dims[vec_axis] && zd[0] != 1) {
        zr = x->rank; /* a vector along vec_axis */
        for (int i = 0; i < zr; i++) zd[i] = i == vec_axis ? zp->dims[0] : 1;
    }
    bool fits = zr <= x->rank;
    for (int i = 0; fits && i < zr; i++) {
        int64_t xd = x->dims[x->rank - zr + i];
        fits = zd[i] == 1 || zd[i] == xd;
    }
    if (!fits) {
        char a[96], b[96];
        return kernel_errorf(ctx, OG_ERR_INVALID_ARGUMENT, "input %d (zero point) has shape "
                             "%s, which is neither a scalar, a vector of %lld nor broadcastable "
                             "to input %d's shape %s", zp_index,
                             shape_str(zp->dims, zp->rank, a, sizeof a),
                             (long long)x->dims[vec_axis], index,
                             shape_str(x->dims, x->rank, b, sizeof b));
    }
    int64_t str[OG_MAX_RANK];
    broadcast_strides(zd, zr, x->dims, x->rank, str);
    for (int64_t i = 0; i < n; i++)
        w[i] -= (int32_t)tensor_get_i64(zp, cpu_offset_of(i, x->rank, x->dims, str));
    return NULL;
}

/* ---- C[M,N] = A[M,K] * B[K,N] in int32 ---------------------------------------------- */

enum { QI_NB = 256 }; /* columns per work item */

typedef struct qi_gemm {
    int64_t M, N, K, lda, ldb, ldc;
    const int32_t *a, *b;
    int32_t *c;
} qi_gemm;

static void qi_gemm_items(void *arg, int64_t begin, int64_t end) {
    const qi_gemm *g = arg;
    int64_t nblk = (g->N + QI_NB - 1) / QI_NB;
    for (int64_t it = begin; it < end; it++) {
        int64_t m = it / nblk, n0 = it % nblk * QI_NB;
        int64_t n1 = n0 + QI_NB < g->N ? n0 + QI_NB : g->N;
        uint32_t acc[QI_NB] = {0};
        for (int64_t k = 0; k < g->K; k++) {
            uint32_t av = (uint32_t)g->a[m * g->lda + k];
            if (!av) continue;
            const int32_t *brow = g->b + k * g->ldb;
            for (int64_t n = n0; n < n1; n++) acc[n - n0] += av * (uint32_t)brow[n];
        }
        for (int64_t n = n0; n < n1; n++) g->c[m * g->ldc + n] = (int32_t)acc[n - n0];
    }
}

static void qi_gemm_run(threadpool *pool, const qi_gemm *g) {
    if (g->M == 0 || g->N == 0) return;
    int64_t items = g->M * ((g->N + QI_NB - 1) / QI_NB);
    int64_t grain = (1 << 16) / (g->K * QI_NB + 1) + 1;
    threadpool_parallel_for(pool, items, grain, qi_gemm_items, (void *)g);
}

/* ---- requantization --------------------------------------------------------------- */

/* m = a * b / c in the scales' type dt: float32 steps, rounded to dt after each. */
static inline float qi_mult(og_dtype dt, float a, float b, float c) {
    return cpu_round_to(dt, cpu_round_to(dt, a * b) / c);
}

/* A float scale input as float32 (scalar or vector), in scratch. */
static og_status *qi_scale(kernel_ctx *ctx, int index, const float **out) {
    const tensor *t = kernel_input(ctx, index);
    if (!t) return kernel_errorf(ctx, OG_ERR_INVALID_MODEL, "input %d (scale) is missing", index);
    if (!cpu_is_float(t->dtype)) return kernel_unsupported_dtype(ctx, index, t->dtype);
    return cpu_in_f32(ctx, index, out);
}

/* Saturating store of rint(v) + zp into element i of an int8/uint8 tensor (rounded
 * before the zero point is added, so that no fused multiply-add can move a tie). */
static inline void qi_store(tensor *y, int64_t i, double v, int32_t zp) {
    v = nearbyint(v) + zp;
    if (y->dtype == OG_INT8)
        ((int8_t *)y->data)[i] = (int8_t)(v < -128 ? -128 : v > 127 ? 127 : v);
    else
        ((uint8_t *)y->data)[i] = (uint8_t)(v < 0 ? 0 : v > 255 ? 255 : v);
}

/* Output dtype and zero point of the quantized output (input zp_index, or x's type). */
static og_status *qi_out_zp(kernel_ctx *ctx, int zp_index, og_dtype dflt, og_dtype *dt,
                            int32_t *zp) {
    const tensor *t = kernel_input(ctx, zp_index);
    *dt = t ? t->dtype : dflt;
    *zp = 0;
    if (!t) return NULL;
    if (!qi_is_8bit(t->dtype)) return kernel_unsupported_dtype(ctx, zp_index, t->dtype);
    if (tensor_count(t) != 1)
        return kernel_errorf(ctx, OG_ERR_UNSUPPORTED, "input %d (output zero point) has %lld "
                             "elements; a per-tensor zero point is implemented", zp_index,
                             (long long)tensor_count(t));
    *zp = (int32_t)tensor_get_i64(t, 0);
    return NULL;
}

/* ---- MatMulInteger / QLinearMatMul ------------------------------------------------ */

/* acc = (A - a_zp) x (B - b_zp) over the broadcast batches; acc has s->out_dims. */
static og_status *qi_matmul(kernel_ctx *ctx, int ia, int iza, int ib, int izb,
                            cpu_mm_shape *s, int32_t *acc_out, int32_t **acc_scratch) {
    const tensor *a = ctx->inputs[ia], *b = ctx->inputs[ib];
    OG_TRY(cpu_matmul_plan(ctx, a, b, s));
    int32_t *wa, *wb;
    OG_TRY(qi_widen(ctx, ia, iza, a->rank >= 2 ? a->rank - 2 : 0, &wa));
    OG_TRY(qi_widen(ctx, ib, izb, b->rank - 1, &wb));
    int32_t *acc = acc_out;
    if (!acc) {
        OG_TRY(kernel_scratch(ctx, (size_t)(s->batch * s->M * s->N) * sizeof(int32_t) + 1,
                              (void **)&acc));
        *acc_scratch = acc;
    }
    for (int64_t t = 0; t < s->batch; t++) {
        int64_t ao, bo;
        cpu_matmul_offsets(s, t, &ao, &bo);
        qi_gemm g = {s->M, s->N, s->K, s->K, s->N, s->N, wa + ao, wb + bo,
                     acc + t * s->M * s->N};
        qi_gemm_run(ctx->pool, &g);
    }
    return NULL;
}

og_status *cpu_matmul_integer(kernel_ctx *ctx) {
    OG_TRY(kernel_require_inputs(ctx, 2));
    cpu_mm_shape s;
    OG_TRY(cpu_matmul_plan(ctx, ctx->inputs[0], ctx->inputs[1], &s));
    tensor *y;
    OG_TRY(kernel_output(ctx, 0, OG_INT32, s.out_rank, s.out_dims, &y));
    return qi_matmul(ctx, 0, 2, 1, 3, &s, y->data, NULL);
}

/* Scale tensor of input `index` laid out for the output [batch..., M, N]: a vector of
 * `vec_len` along output axis `vec_axis` (rows for A, columns for B) or a shape that
 * broadcasts to the operand. Returns its strides over the output dims. */
static og_status *qi_scale_strides(kernel_ctx *ctx, int index, const cpu_mm_shape *s,
                                   int vec_axis, int64_t *str) {
    const tensor *t = ctx->inputs[index];
    int r = s->out_rank;
    int64_t d[OG_MAX_RANK];
    int rank = t->rank;
    memcpy(d, t->dims, sizeof(int64_t) * (size_t)rank);
    if (tensor_count(t) == 1) {
        rank = 0;
    } else if (rank == 1 && vec_axis >= 0 && vec_axis < r) {
        rank = r;
        for (int i = 0; i < r; i++) d[i] = i == vec_axis ? t->dims[0] : 1;
    }
    bool fits = rank <= r;
    for (int i = 0; fits && i < rank; i++)
        fits = d[i] == 1 || d[i] == s->out_dims[r - rank + i];
    if (!fits) {
        char a[96];
        return kernel_errorf(ctx, OG_ERR_INVALID_ARGUMENT, "input %d (scale) has shape %s, "
                             "which does not broadcast to the output", index,
                             shape_str(t->dims, t->rank, a, sizeof a));
    }
    broadcast_strides(d, rank, s->out_dims, r, str);
    return NULL;
}

og_status *cpu_qlinear_matmul(kernel_ctx *ctx) {
    OG_TRY(kernel_require_inputs(ctx, 8));
    cpu_mm_shape s;
    int32_t *acc;
    OG_TRY(qi_matmul(ctx, 0, 2, 3, 5, &s, NULL, &acc));
    const float *as, *bs, *ys;
    OG_TRY(qi_scale(ctx, 1, &as));
    OG_TRY(qi_scale(ctx, 4, &bs));
    OG_TRY(qi_scale(ctx, 6, &ys));
    int r = s.out_rank;
    /* the output axes of A's rows and B's columns (absent when an operand was 1-D) */
    int row_ax = ctx->inputs[0]->rank > 1 ? r - (ctx->inputs[3]->rank > 1 ? 2 : 1) : -1;
    int col_ax = ctx->inputs[3]->rank > 1 ? r - 1 : -1;
    int64_t sa[OG_MAX_RANK], sb[OG_MAX_RANK], sy[OG_MAX_RANK];
    OG_TRY(qi_scale_strides(ctx, 1, &s, row_ax, sa));
    OG_TRY(qi_scale_strides(ctx, 4, &s, col_ax, sb));
    OG_TRY(qi_scale_strides(ctx, 6, &s, -1, sy));
    og_dtype dt;
    int32_t zp;
    OG_TRY(qi_out_zp(ctx, 7, ctx->inputs[0]->dtype, &dt, &zp));
    tensor *y;
    OG_TRY(kernel_output(ctx, 0, dt, s.out_rank, s.out_dims, &y));
    og_dtype sdt = ctx->inputs[1]->dtype;
    int64_t n = tensor_count(y);
    for (int64_t i = 0; i < n; i++) {
        float m = qi_mult(sdt, as[cpu_offset_of(i, r, s.out_dims, sa)],
                          bs[cpu_offset_of(i, r, s.out_dims, sb)],
                          ys[cpu_offset_of(i, r, s.out_dims, sy)]);
        qi_store(y, i, (double)acc[i] * m, zp);
    }
    return NULL;
}

/* ---- ConvInteger / QLinearConv ---------------------------------------------------- */

typedef struct qi_col_job {
    const cpu_window *w;
    const int32_t *x; /* the group's first input channel */
    int32_t *col;     /* K rows of P = prod(out) */
} qi_col_job;

static void qi_im2col_rows(void *arg, int64_t b, int64_t e) {
    const qi_col_job *cj = arg;
    cpu_window_im2col32(cj->w, cj->x, cj->col, 0, cj->w->out[0], b, e);
}

/* A convolution of x (input ix, zero point izx) with w (iw, izw): geometry first, so
 * that the caller can ask for its output, then qi_conv_run. */
typedef struct qi_conv_plan {
    int ix, izx, iw, izw;
    cpu_window win;
    int64_t N, C, M, group;
    int64_t y_dims[OG_MAX_RANK];
} qi_conv_plan;

static og_status *qi_conv_plan_init(kernel_ctx *ctx, int ix, int izx, int iw, int izw,
                                    qi_conv_plan *p) {
    const tensor *x = ctx->inputs[ix], *w = ctx->inputs[iw];
    *p = (qi_conv_plan){.ix = ix, .izx = izx, .iw = iw, .izw = izw};
    const tensor *zx = kernel_input(ctx, izx);
    if (zx && tensor_count(zx) > 1)
        return kernel_errorf(ctx, OG_ERR_INVALID_ARGUMENT, "input %d (x zero point) has %lld "
                             "elements, expected a scalar", izx, (long long)tensor_count(zx));
    OG_TRY(cpu_conv_window(ctx, ix, iw, &p->group, &p->win, p->y_dims));
    p->N = x->dims[0], p->C = x->dims[1], p->M = w->dims[0];
    return NULL;
}

/* acc[n, m, out...] = conv(x - x_zp, w - w_zp), int32. */
static og_status *qi_conv_run(kernel_ctx *ctx, const qi_conv_plan *p, int32_t *acc) {
    const cpu_window *win = &p->win;
    int64_t cg = p->C / p->group, mg = p->M / p->group, ksz = win->k[0] * win->k[1] * win->k[2];
    int64_t K = cg * ksz, P = win->out[0] * win->out[1] * win->out[2];
    int64_t isz = win->in[0] * win->in[1] * win->in[2];
    if (P == 0 || p->N == 0 || p->M == 0) return NULL;
    int32_t *xw, *ww, *col;
    OG_TRY(qi_widen(ctx, p->ix, p->izx, 1, &xw));
    OG_TRY(qi_widen(ctx, p->iw, p->izw, 0, &ww));
    OG_TRY(kernel_scratch(ctx, (size_t)(K * P) * sizeof(int32_t) + 1, (void **)&col));
    for (int64_t n = 0; n < p->N; n++)
        for (int64_t g = 0; g < p->group; g++) {
            qi_col_job cj = {win, xw + (n * p->C + g * cg) * isz, col};
            threadpool_parallel_for(ctx->pool, K, 1, qi_im2col_rows, &cj);
            qi_gemm gm = {mg, P, K, K, P, P, ww + g * mg * K, col, acc + (n * p->M + g * mg) * P};
            qi_gemm_run(ctx->pool, &gm);
        }
    return NULL;
}

og_status *cpu_conv_integer(kernel_ctx *ctx) {
    OG_TRY(kernel_require_inputs(ctx, 2));
    qi_conv_plan p;
    OG_TRY(qi_conv_plan_init(ctx, 0, 2, 1, 3, &p));
    tensor *y;
    OG_TRY(kernel_output(ctx, 0, OG_INT32, ctx->inputs[0]->rank, p.y_dims, &y));
    return qi_conv_run(ctx, &p, y->data);
}

og_status *cpu_qlinear_conv(kernel_ctx *ctx) {
    OG_TRY(kernel_require_inputs(ctx, 8));
    const tensor *x = ctx->inputs[0], *bias = kernel_input(ctx, 8);
    qi_conv_plan p;
    OG_TRY(qi_conv_plan_init(ctx, 0, 2, 3, 5, &p));
    int64_t M = p.M;
    if (bias && (bias->dtype != OG_INT32 || tensor_count(bias) != M))
        return kernel_errorf(ctx, OG_ERR_INVALID_ARGUMENT, "input 8 (bias) must be int32 with "
                             "%lld elements", (long long)M);
    const float *xs, *ws, *ys;
    OG_TRY(qi_scale(ctx, 1, &xs));
    OG_TRY(qi_scale(ctx, 4, &ws));
    OG_TRY(qi_scale(ctx, 6, &ys));
    int64_t nws = tensor_count(ctx->inputs[4]);
    if (tensor_count(ctx->inputs[1]) != 1 || tensor_count(ctx->inputs[6]) != 1 ||
        (nws != 1 && nws != M))
        return kernel_errorf(ctx, OG_ERR_INVALID_ARGUMENT, "x_scale and y_scale must be "
                             "scalars and w_scale a scalar or %lld values", (long long)M);
    og_dtype dt;
    int32_t zp;
    OG_TRY(qi_out_zp(ctx, 7, x->dtype, &dt, &zp));
    tensor *y;
    OG_TRY(kernel_output(ctx, 0, dt, x->rank, p.y_dims, &y));
    int64_t P = cpu_dims_prod(p.y_dims, 2, x->rank);
    int32_t *acc;
    OG_TRY(kernel_scratch(ctx, (size_t)(p.N * M * P) * sizeof(int32_t) + 1, (void **)&acc));
    OG_TRY(qi_conv_run(ctx, &p, acc));
    const int32_t *b = bias ? bias->data : NULL;
    for (int64_t n = 0; n < p.N; n++)
        for (int64_t m = 0; m < M; m++) {
            float mult = qi_mult(ctx->inputs[1]->dtype, xs[0], ws[nws == 1 ? 0 : m], ys[0]);
            int64_t base = (n * M + m) * P;
            uint32_t bm = b ? (uint32_t)b[m] : 0;
            for (int64_t q = 0; q < P; q++)
                qi_store(y, base + q, (double)(int32_t)((uint32_t)acc[base + q] + bm) * mult, zp);
        }
    return NULL;
}
