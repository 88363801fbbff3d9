/* Conv for 1, 2 or 3 spatial dimensions (fewer are padded to 3 with size-1 dims), with
 * groups, strides, pads, dilations and auto_pad. Direct method, parallel over (batch,
 * output channel): for each input channel and kernel tap, one weight is multiplied into
 * the output plane along whole rows, whose valid range is computed once per tap, so the
 * innermost loop is a branch-free strided axpy. Convolutions with several output channels
 * per group instead gather input patches into columns (im2col, in slabs of output rows
 * to bound memory) and multiply them with the weights through gemm_f32. float64 runs
 * the direct method in double. */
#include "backends/native/kernels/spatial/spatial.h"
#include "backends/native/kernels/kernel_util.h"
#include "backends/native/kernels/matmul/gemm_f32.h"
#include "backends/native/kernels/spatial/window.h"

#include <string.h>

typedef struct conv_job {
    const float *x, *w, *b;
    float *y;
    const double *xd, *wd, *bd; /* float64 inputs, computed in double by the direct path */
    double *yd;
    int64_t c_in, m_out, cg, mg;      /* channels in/out, per group */
    int64_t in[3], out[3], k[3], s[3], d[3], p[3];
    cpu_window win; /* the same geometry, for im2col */
} conv_job;

/* Outputs o in [lo, hi) read input o*s - p + t*d inside [0, n). */
static void conv_range(int64_t n_out, int64_t n_in, int64_t s, int64_t p, int64_t off,
                       int64_t *lo, int64_t *hi) {
    int64_t a = p - off; /* need o*s >= a */
    *lo = a > 0 ? (a + s - 1) / s : 0;
    int64_t b = n_in + p - off; /* need o*s < b */
    *hi = b > 0 ? (b + s - 1) / s : 0;
    if (*hi > n_out) *hi = n_out;
    if (*lo > *hi) *lo = *hi;
}

#define CONV_PLANES(NAME, T, X, W, B, Y)                                                 \
    static void NAME(void *arg, int64_t b, int64_t e) {                                  \
        const conv_job *j = arg;                                                         \
        int64_t osz = j->out[0] * j->out[1] * j->out[2];                                 \
        int64_t isz = j->in[0] * j->in[1] * j->in[2];                                    \
        int64_t ksz = j->k[0] * j->k[1] * j->k[2];                                       \
        for (int64_t pl = b; pl < e; pl++) {                                             \
            int64_t n = pl / j->m_out, m = pl % j->m_out, g = m / j->mg;                 \
            T *y = j->Y + pl * osz;                                                      \
            T bias = j->B ? j->B[m] : 0;                                                 \
            for (int64_t i = 0; i < osz; i++) y[i] = bias;                               \
            for (int64_t c = 0; c < j->cg; c++) {                                        \
                const T *x = j->X + (n * j->c_in + g * j->cg + c) * isz;                 \
                const T *w = j->W + (m * j->cg + c) * ksz;                               \
                for (int64_t t0 = 0; t0 < j->k[0]; t0++) {                               \
                    int64_t l0, h0, l1, h1, l2, h2;                                      \
                    conv_range(j->out[0], j->in[0], j->s[0], j->p[0],                    \
                               t0 * j->d[0], &l0, &h0);                                  \
                    for (int64_t t1 = 0; t1 < j->k[1]; t1++) {                           \
                        conv_range(j->out[1], j->in[1], j->s[1], j->p[1],                \
                                   t1 * j->d[1], &l1, &h1);                              \
                        for (int64_t t2 = 0; t2 < j->k[2]; t2++) {                       \
                            T wv = w[(t0 * j->k[1] + t1) * j->k[2] + t2];                \
                            int64_t off2 = t2 * j->d[2] - j->p[2];                       \
                            conv_range(j->out[2], j->in[2], j->s[2], j->p[2],            \
                                       t2 * j->d[2], &l2, &h2);                          \
                            for (int64_t o0 = l0; o0 < h0; o0++)                         \
                                for (int64_t o1 = l1; o1 < h1; o1++) {                   \
                                    int64_t i0 = o0 * j->s[0] - j->p[0] + t0 * j->d[0];  \
                                    int64_t i1 = o1 * j->s[1] - j->p[1] + t1 * j->d[1];  \
                                    const T *xr = x + (i0 * j->in[1] + i1) * j->in[2];   \
                                    T *yr = y + (o0 * j->out[1] + o1) * j->out[2];       \
                                    int64_t s2 = j->s[2];                                \
                                    for (int64_t o2 = l2; o2 < h2; o2++)                 \
                                        yr[o2] += wv * xr[o2 * s2 + off2];               \
                                }                                                        \
                        }                                                                \
                    }                                                                    \
                }                                                                        \
            }                                                                            \
        }                                                                                \
    }
CONV_PLANES(conv_planes, float, x, w, b, y)
CONV_PLANES(conv_planes_f64, double, xd, wd, bd, yd)

typedef struct col_job {
    const conv_job *j;
    const float *x; /* the group's first input channel */
    float *col;     /* K rows of (o0 range) x out[1] x out[2] */
    int64_t o0a, o0b;
} col_job;

static void im2col_rows(void *arg, int64_t b, int64_t e) {
    const col_job *cj = arg;
    cpu_window_im2col32(&cj->j->win, cj->x, cj->col, cj->o0a, cj->o0b, b, e);
}

/* Y[n, group] = W[group] (mg x K) * columns (K x out); bias added after. */
static og_status *conv_gemm(kernel_ctx *ctx, const conv_job *j, int64_t n_batch) {
    int64_t ksz = j->k[0] * j->k[1] * j->k[2], K = j->cg * ksz;
    int64_t osz = j->out[0] * j->out[1] * j->out[2], isz = j->in[0] * j->in[1] * j->in[2];
    int64_t plane = j->out[1] * j->out[2];
    int64_t slab = (int64_t)(8u << 20) / (K * plane + 1); /* o0 rows per ~32 MB of columns */
    if (slab < 1) slab = 1;
    if (slab > j->out[0]) slab = j->out[0];
    float *col;
    OG_TRY(kernel_scratch(ctx, (size_t)(K * plane * slab) * sizeof(float), (void **)&col));
    gemm_f32_args g = {.M = j->mg, .K = K, .alpha = 1, .lda = K, .ldc = osz};
    void *work = NULL;
    g.N = slab * plane, g.ldb = g.N;
    size_t need = gemm_f32_work_size(&g);
    if (need) OG_TRY(kernel_scratch(ctx, need, &work));
    for (int64_t n = 0; n < n_batch; n++)
        for (int64_t gr = 0; gr < j->m_out / j->mg; gr++) {
            col_job cj = {.j = j, .x = j->x + (n * j->c_in + gr * j->cg) * isz, .col = col};
            for (cj.o0a = 0; cj.o0a < j->out[0]; cj.o0a = cj.o0b) {
                cj.o0b = cj.o0a + slab < j->out[0] ? cj.o0a + slab : j->out[0];
                threadpool_parallel_for(ctx->pool, K, 1, im2col_rows, &cj);
                g.A = j->w + gr * j->mg * K;
                g.B = col, g.N = g.ldb = (cj.o0b - cj.o0a) * plane;
                g.C = j->y + (n * j->m_out + gr * j->mg) * osz + cj.o0a * plane;
                OG_TRY(gemm_f32(ctx->pool, &g, work));
            }
        }
    for (int64_t pl = 0; j->b && pl < n_batch * j->m_out; pl++) {
        float bias = j->b[pl % j->m_out], *y = j->y + pl * osz;
        for (int64_t i = 0; i < osz; i++) y[i] += bias;
    }
    return NULL;
}

og_status *cpu_conv(kernel_ctx *ctx) {
    OG_TRY(kernel_require_inputs(ctx, 2));
    const tensor *x = ctx->inputs[0], *w = ctx->inputs[1], *b = kernel_input(ctx, 2);
    int64_t group, od[OG_MAX_RANK];
    conv_job j = {0};
    OG_TRY(cpu_conv_window(ctx, 0, 1, &group, &j.win, od));
    j.c_in = x->dims[1], j.m_out = w->dims[0];
    if (b && (b->rank != 1 || b->dims[0] != j.m_out))
        return kernel_errorf(ctx, OG_ERR_INVALID_ARGUMENT, "input 2 (bias) must have shape "
                             "[%lld]", (long long)j.m_out);
    j.cg = j.c_in / group, j.mg = j.m_out / group;
    for (int q = 0; q < 3; q++) {
        j.in[q] = j.win.in[q], j.out[q] = j.win.out[q], j.k[q] = j.win.k[q];
        j.s[q] = j.win.s[q], j.d[q] = j.win.d[q], j.p[q] = j.win.pb[q];
    }
    tensor *y;
    if (x->dtype == OG_FLOAT64) {
        for (int i = 1; i < 3; i++)
            if (kernel_input(ctx, i) && ctx->inputs[i]->dtype != OG_FLOAT64)
                return kernel_errorf(ctx, OG_ERR_INVALID_MODEL, "input %d is %s, input 0 "
                                     "float64", i, og_dtype_name(ctx->inputs[i]->dtype));
        OG_TRY(kernel_output(ctx, 0, x->dtype, x->rank, od, &y));
        j.xd = x->data, j.wd = w->data, j.bd = b ? b->data : NULL, j.yd = y->data;
        if (tensor_count(y))
            threadpool_parallel_for(ctx->pool, x->dims[0] * j.m_out, 1, conv_planes_f64, &j);
        return NULL;
    }
    OG_TRY(cpu_in_f32(ctx, 0, &j.x));
    OG_TRY(cpu_in_f32(ctx, 1, &j.w));
    if (b) OG_TRY(cpu_in_f32(ctx, 2, &j.b));
    OG_TRY(kernel_output(ctx, 0, x->dtype, x->rank, od, &y));
    float *yb;
    OG_TRY(cpu_out_f32(ctx, y, &yb));
    j.y = yb;
    if (tensor_count(y) == 0) return NULL;
    if (j.mg >= 4 && j.cg * j.k[0] * j.k[1] * j.k[2] >= 4)
        OG_TRY(conv_gemm(ctx, &j, x->dims[0]));
    else
        threadpool_parallel_for(ctx->pool, x->dims[0] * j.m_out, 1, conv_planes, &j);
    cpu_out_f32_done(y, yb);
    return NULL;
}
