/* MaxPool (with its optional Indices output), AveragePool, LpPool and their Global forms,
 * for 1 to 3 spatial dimensions. Work is split over (batch, channel) planes on the pool;
 * each chunk of planes converts its input plane to double, pools it and stores the
 * result in the output dtype, so one loop serves float16/bfloat16/float32/float64 and
 * the 8-bit integers MaxPool accepts (exact in double).
 *
 * Semantics where the spec leaves room (each pinned in tests/unit/test_vision_seq_kernels.c):
 *  - MaxPool propagates NaN (the first NaN in a window wins, as numpy's max and PyTorch
 *    do); a window that lies wholly in the padding gives -inf (the lowest integer for
 *    integer types) and index -1. ONNX's reference implementation skips NaNs after the
 *    first tap, onnxruntime ignores them entirely.
 *  - AveragePool divides by the taps inside the input, or with count_include_pad by the
 *    taps inside the input and its explicit pads; taps of the extra window that
 *    ceil_mode adds past the end padding never count (PyTorch, onnxruntime).
 *  - LpPool is (sum of |x|^p over the taps inside the input)^(1/p): padding contributes
 *    zeros, whatever count_include_pad says.
 *  - Indices (MaxPool output 1) are flat offsets into X: plane * plane_size + the offset
 *    within the plane, row-major, or column-major over the spatial dims with
 *    storage_order 1; ties keep the first tap in row-major window order. */
#include "backends/native/kernels/spatial/spatial.h"

#include "backends/native/kernels/kernel_util.h"
#include "backends/native/kernels/spatial/window.h"

#include <math.h>
#include <string.h>

typedef enum { POOL_MAX, POOL_AVG, POOL_LP } pool_kind;

typedef struct pool_job {
    pool_kind kind;
    cpu_window w;
    bool include_pad, col_major;
    double p; /* LpPool's exponent */
    const tensor *x;
    tensor *y, *ind; /* ind: MaxPool's Indices, or NULL */
    int64_t planes, in_sz, out_sz;
    int64_t nchunk;
    double *work; /* nchunk * (in_sz + out_sz) doubles */
    double empty; /* MaxPool's value for a window wholly in the padding */
} pool_job;

/* Pools one plane xin (w.in extents) into yout (w.out extents); idx (may be NULL)
 * receives in-plane offsets of the maxima. */
static void pool_plane(const pool_job *j, const double *xin, double *yout, int64_t *idx) {
    const cpu_window *w = &j->w;
    int64_t o = 0;
    for (int64_t o0 = 0; o0 < w->out[0]; o0++) {
        int64_t l0, h0;
        cpu_window_taps(o0, w->s[0], w->pb[0], w->d[0], w->k[0], w->in[0], &l0, &h0);
        int64_t b0 = o0 * w->s[0] - w->pb[0];
        for (int64_t o1 = 0; o1 < w->out[1]; o1++) {
            int64_t l1, h1;
            cpu_window_taps(o1, w->s[1], w->pb[1], w->d[1], w->k[1], w->in[1], &l1, &h1);
            int64_t b1 = o1 * w->s[1] - w->pb[1];
            for (int64_t o2 = 0; o2 < w->out[2]; o2++, o++) {
                int64_t l2, h2;
                cpu_window_taps(o2, w->s[2], w->pb[2], w->d[2], w->k[2], w->in[2], &l2, &h2);
                int64_t b2 = o2 * w->s[2] - w->pb[2];
                double acc = j->kind == POOL_MAX ? j->empty : 0;
                int64_t best = -1;
                bool nan = false;
                for (int64_t t0 = l0; t0 < h0; t0++) {
                    int64_t i0 = b0 + t0 * w->d[0];
                    for (int64_t t1 = l1; t1 < h1; t1++) {
                        int64_t i1 = b1 + t1 * w->d[1];
                        const double *row = xin + (i0 * w->in[1] + i1) * w->in[2];
                        for (int64_t t2 = l2; t2 < h2; t2++) {
                            int64_t i2 = b2 + t2 * w->d[2];
                            double v = row[i2];
                            if (j->kind == POOL_AVG) {
                                acc += v;
                            } else if (j->kind == POOL_LP) {
                                acc += pow(fabs(v), j->p);
                            } else if (!nan && (v > acc || best < 0 || v != v)) {
                                acc = v, nan = v != v;
                                best = j->col_major
                                           ? i0 + (i1 + i2 * w->in[1]) * w->in[0]
                                           : (i0 * w->in[1] + i1) * w->in[2] + i2;
                            }
                        }
                    }
                }
                if (j->kind == POOL_AVG) {
                    int64_t n;
                    if (j->include_pad) { /* taps inside [-pb, in + pe) */
                        int64_t a, b, c, d0, d1, d2;
                        cpu_window_taps(o0, w->s[0], 0, w->d[0], w->k[0],
                                        w->in[0] + w->pb[0] + w->pe[0], &a, &d0);
                        cpu_window_taps(o1, w->s[1], 0, w->d[1], w->k[1],
                                        w->in[1] + w->pb[1] + w->pe[1], &b, &d1);
                        cpu_window_taps(o2, w->s[2], 0, w->d[2], w->k[2],
                                        w->in[2] + w->pb[2] + w->pe[2], &c, &d2);
                        n = (d0 - a) * (d1 - b) * (d2 - c);
                    } else {
                        n = (h0 - l0) * (h1 - l1) * (h2 - l2);
                    }
                    acc = n ? acc / (double)n : NAN;
                } else if (j->kind == POOL_LP) {
                    acc = pow(acc, 1.0 / j->p);
                }
                yout[o] = acc;
                if (idx) idx[o] = best;
            }
        }
    }
}

static void pool_chunks(void *arg, int64_t b, int64_t e) {
    const pool_job *j = arg;
    for (int64_t c = b; c < e; c++) {
        double *xin = j->work + c * (j->in_sz + j->out_sz), *yout = xin + j->in_sz;
        int64_t p0 = c * j->planes / j->nchunk, p1 = (c + 1) * j->planes / j->nchunk;
        for (int64_t pl = p0; pl < p1; pl++) {
            cpu_load_f64(j->x->dtype, j->x->data, pl * j->in_sz, j->in_sz, xin);
            int64_t *idx = j->ind ? (int64_t *)j->ind->data + pl * j->out_sz : NULL;
            pool_plane(j, xin, yout, idx);
            cpu_store_f64_rounded(j->y->dtype, j->y->data, pl * j->out_sz, j->out_sz, yout);
            if (idx)
                for (int64_t i = 0; i < j->out_sz; i++)
                    if (idx[i] >= 0) idx[i] += pl * j->in_sz;
        }
    }
}

static bool pool_dtype_ok(pool_kind kind, og_dtype dt) {
    if (cpu_is_float(dt)) return true;
    return kind == POOL_MAX && (dt == OG_INT8 || dt == OG_UINT8);
}

/* Runs a pool of `kind` over X (global: one window covering each whole plane). */
static og_status *pool_run(kernel_ctx *ctx, pool_kind kind, bool global) {
    OG_TRY(kernel_require_inputs(ctx, 1));
    const tensor *x = ctx->inputs[0];
    if (!pool_dtype_ok(kind, x->dtype)) return kernel_unsupported_dtype(ctx, 0, x->dtype);
    int sp = x->rank - 2;
    pool_job j = {.kind = kind, .x = x};
    int64_t od[OG_MAX_RANK] = {x->dims[0], x->dims[1]};
    if (global) { /* one window over all spatial dims, flattened into the last */
        if (sp < 0)
            return kernel_errorf(ctx, OG_ERR_INVALID_ARGUMENT, "input 0 has rank %d, expected "
                                 "at least 2 ([N, C, spatial...])", x->rank);
        int64_t n = cpu_dims_prod(x->dims, 2, x->rank);
        for (int i = 0; i < 3; i++) {
            j.w.in[i] = j.w.k[i] = j.w.out[i] = j.w.s[i] = j.w.d[i] = 1;
            j.w.pb[i] = j.w.pe[i] = 0;
        }
        j.w.in[2] = j.w.k[2] = n;
        if (n == 0) j.w.k[2] = 1, j.w.out[2] = 0;
        for (int i = 0; i < sp; i++) od[2 + i] = 1;
    } else {
        if (sp < 1 || sp > 3)
            return kernel_errorf(ctx, OG_ERR_UNSUPPORTED, "input 0 has rank %d; ranks 3 to 5 "
                                 "(1 to 3 spatial dimensions) are implemented", x->rank);
        int64_t k[3];
        const int64_t *ks;
        if (graph_attr_ints(ctx->node, "kernel_shape", &ks) != sp)
            return kernel_errorf(ctx, OG_ERR_INVALID_MODEL, "attribute 'kernel_shape' must "
                                 "have %d values (one per spatial dimension of input 0)", sp);
        memcpy(k, ks, sizeof(int64_t) * (size_t)sp);
        int64_t ceil_mode = graph_attr_int(ctx->node, "ceil_mode", 0);
        OG_TRY(cpu_window_init(ctx, sp, x->dims + 2, k, ceil_mode != 0, &j.w));
        for (int i = 0; i < sp; i++) od[2 + i] = j.w.out[3 - sp + i];
    }
    j.include_pad = graph_attr_int(ctx->node, "count_include_pad", 0) != 0;
    int64_t so = graph_attr_int(ctx->node, "storage_order", 0);
    if (so != 0 && so != 1)
        return kernel_errorf(ctx, OG_ERR_INVALID_MODEL, "storage_order %lld is not 0 or 1",
                             (long long)so);
    j.col_major = so == 1;
    if (kind == POOL_LP) {
        const graph_attr *pa = graph_attr_find(ctx->node, "p");
        /* LpPool-1 declared p a float; later versions an int. */
        j.p = !pa ? 2.0 : pa->type == ATTR_FLOAT ? pa->f : (double)pa->i;
        if (!(j.p > 0))
            return kernel_errorf(ctx, OG_ERR_INVALID_MODEL, "attribute 'p' is %g, expected "
                                 "a positive number", j.p);
    }
    j.empty = -INFINITY;
    if (x->dtype == OG_INT8) j.empty = INT8_MIN;
    if (x->dtype == OG_UINT8) j.empty = 0;
    OG_TRY(kernel_output(ctx, 0, x->dtype, x->rank, od, &j.y));
    if (kind == POOL_MAX && cpu_wants_output(ctx, 1))
        OG_TRY(kernel_output(ctx, 1, OG_INT64, x->rank, od, &j.ind));
    j.planes = x->dims[0] * x->dims[1];
    j.in_sz = j.w.in[0] * j.w.in[1] * j.w.in[2];
    j.out_sz = j.w.out[0] * j.w.out[1] * j.w.out[2];
    if (j.planes == 0 || j.out_sz == 0) return NULL;
    int64_t threads = threadpool_size(ctx->pool);
    j.nchunk = j.planes < 4 * threads ? j.planes : 4 * threads;
    OG_TRY(kernel_scratch(ctx, (size_t)(j.nchunk * (j.in_sz + j.out_sz)) * sizeof(double),
                          (void **)&j.work));
    threadpool_parallel_for(ctx->pool, j.nchunk, 1, pool_chunks, &j);
    return NULL;
}

og_status *cpu_max_pool(kernel_ctx *ctx) { return pool_run(ctx, POOL_MAX, false); }
og_status *cpu_average_pool(kernel_ctx *ctx) { return pool_run(ctx, POOL_AVG, false); }
og_status *cpu_lp_pool(kernel_ctx *ctx) { return pool_run(ctx, POOL_LP, false); }
og_status *cpu_global_max_pool(kernel_ctx *ctx) { return pool_run(ctx, POOL_MAX, true); }
og_status *cpu_global_average_pool(kernel_ctx *ctx) { return pool_run(ctx, POOL_AVG, true); }
og_status *cpu_global_lp_pool(kernel_ctx *ctx) { return pool_run(ctx, POOL_LP, true); }
