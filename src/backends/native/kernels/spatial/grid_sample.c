/* GridSample: opset 16 (4-D input; modes bilinear, nearest, bicubic) and 20 on (1 to 3
 * spatial dims; modes linear, nearest, cubic), padding zeros, border or reflection,
 * align_corners.
 *
 * grid[n, o..., :] holds normalized coordinates in [-1, 1], innermost spatial dim first
 * (x for width). Each is denormalized (align_corners: -1 and 1 are the centers of the
 * corner pixels; otherwise their outer edges), then per dim the taps are formed: one
 * for nearest (rounded half to even), two for linear, four for cubic (Keys' kernel with
 * a = -0.75). For nearest and linear a coordinate outside the border range is first
 * moved in (clamped to [0, len - 1] for border, reflected for reflection); then each tap
 * outside the input reads 0 (zeros), the clamped pixel (border) or the reflected pixel
 * (reflection). For cubic the coordinate stays where it is and only the taps are padded:
 * PyTorch's grid_sample (which the spec refers to) and onnxruntime do so. ONNX's
 * reference moves the cubic coordinate too; with reflection both give the same result
 * (the fold is symmetric about each border), with border they differ near the edges
 * (tests/unit/test_vision_seq_kernels.c pins ours). The taps of every dim are computed once per output point and
 * applied to all channels; points are split over the pool. Arithmetic is double;
 * integer outputs are truncated toward zero as the reference's assignment does. */
#include "backends/native/kernels/spatial/spatial.h"

#include "backends/native/kernels/kernel_util.h"

#include <math.h>
#include <string.h>

typedef enum { GS_NEAREST, GS_LINEAR, GS_CUBIC } gs_mode;
typedef enum { GS_ZEROS, GS_BORDER, GS_REFLECTION } gs_pad;

typedef struct gs_job {
    gs_mode mode;
    gs_pad pad;
    bool align;
    int sp;                      /* spatial dims */
    int64_t N, C, in[3], npts;   /* npts: output points per batch */
    int64_t in_sz;               /* elements per input plane */
    const double *x, *grid;      /* X as [N, C, in...], grid as [N, npts, sp] */
    double *y;                   /* [N, C, npts] */
} gs_job;

/* Reflects x into [lo, hi] by folding at the borders until it lies inside. */
static double gs_reflect(double x, double lo, double hi) {
    double rng = hi - lo;
    if (rng <= 0) return lo;
    if (x < lo) {
        double dx = lo - x, n = floor(dx / rng), r = dx - n * rng;
        return fmod(n, 2) == 0 ? lo + r : hi - r;
    }
    if (x > hi) {
        double dx = x - hi, n = floor(dx / rng), r = dx - n * rng;
        return fmod(n, 2) == 0 ? hi - r : lo + r;
    }
    return x;
}

static double gs_cubic(double t) { /* Keys' kernel, a = -0.75 */
    const double a = -0.75;
    t = fabs(t);
    if (t <= 1) return ((a + 2) * t - (a + 3)) * t * t + 1;
    if (t < 2) return ((a * t - 5 * a) * t + 8 * a) * t - 4 * a;
    return 0;
}

/* The taps of one coordinate along a dim of length len: up to 4 (index, weight) pairs;
 * index -1 reads zero. */
static int gs_taps(const gs_job *j, double g, int64_t len, int64_t *idx, double *w) {
    double lo = j->align ? 0 : -0.5, hi = j->align ? (double)len - 1 : (double)len - 0.5;
    double x = j->align ? (g + 1) / 2 * (double)(len - 1) : ((g + 1) * (double)len - 1) / 2;
    if (j->mode == GS_NEAREST) x = nearbyint(x);
    if ((x < lo || x > hi) && j->mode != GS_CUBIC) {
        if (j->pad == GS_BORDER) x = x < 0 ? 0 : x > (double)(len - 1) ? (double)(len - 1) : x;
        else if (j->pad == GS_REFLECTION) x = gs_reflect(x, lo, hi);
    }
    int n;
    int64_t base;
    if (j->mode == GS_NEAREST) {
        n = 1, base = (int64_t)x; /* x is integral here, or reflected into range */
        w[0] = 1;
    } else {
        double f = floor(x), t = x - f;
        if (j->mode == GS_LINEAR) {
            n = 2, base = (int64_t)f;
            w[0] = 1 - t, w[1] = t;
        } else {
            n = 4, base = (int64_t)f - 1;
            for (int k = 0; k < 4; k++) w[k] = gs_cubic(t + 1 - k);
        }
    }
    for (int k = 0; k < n; k++) {
        int64_t i = base + k;
        if (i < 0 || i >= len) {
            if (j->pad == GS_ZEROS) i = -1;
            else if (j->pad == GS_BORDER) i = i < 0 ? 0 : len - 1;
            else i = (int64_t)gs_reflect((double)i, lo, hi);
            if (i >= len) i = len - 1; /* reflection of an index can land on hi = len - 0.5 */
        }
        idx[k] = i;
    }
    return n;
}

static void gs_points(void *arg, int64_t b, int64_t e) {
    const gs_job *j = arg;
    int sp = j->sp;
    for (int64_t it = b; it < e; it++) {
        int64_t n = it / j->npts, pt = it % j->npts;
        const double *g = j->grid + it * sp;
        int64_t idx[3][4];
        double w[3][4];
        int nt[3] = {1, 1, 1};
        int64_t str[3] = {0, 0, 0};
        /* dim d of X (0 = outermost spatial) takes grid component sp - 1 - d */
        for (int d = 0; d < sp; d++) nt[d] = gs_taps(j, g[sp - 1 - d], j->in[d], idx[d], w[d]);
        for (int d = sp; d < 3; d++) idx[d][0] = 0, w[d][0] = 1;
        str[sp - 1] = 1;
        for (int d = sp - 2; d >= 0; d--) str[d] = str[d + 1] * j->in[d + 1];
        for (int64_t c = 0; c < j->C; c++) {
            const double *xp = j->x + (n * j->C + c) * j->in_sz;
            double acc = 0;
            for (int a = 0; a < nt[0]; a++) {
                if (idx[0][a] < 0) continue;
                for (int bb = 0; bb < nt[1]; bb++) {
                    if (idx[1][bb] < 0) continue;
                    for (int cc = 0; cc < nt[2]; cc++) {
                        if (idx[2][cc] < 0) continue;
                        int64_t off = idx[0][a] * str[0] + idx[1][bb] * str[1] + idx[2][cc] * str[2];
                        acc += w[0][a] * w[1][bb] * w[2][cc] * xp[off];
                    }
                }
            }
            j->y[(n * j->C + c) * j->npts + pt] = acc;
        }
    }
}

og_status *cpu_grid_sample(kernel_ctx *ctx) {
    OG_TRY(kernel_require_inputs(ctx, 2));
    const tensor *x = ctx->inputs[0], *grid = ctx->inputs[1];
    bool v16 = ctx->opset < 20;
    int sp = x->rank - 2;
    if (sp < 1 || sp > 3 || (v16 && sp != 2))
        return kernel_errorf(ctx, OG_ERR_UNSUPPORTED, "input 0 has rank %d; opset %lld takes "
                             "%s", x->rank, (long long)ctx->opset,
                             v16 ? "rank 4" : "ranks 3 to 5 (1 to 3 spatial dims)");
    if (grid->rank != x->rank || grid->dims[0] != x->dims[0] || grid->dims[grid->rank - 1] != sp) {
        char a[96], b[96];
        return kernel_errorf(ctx, OG_ERR_INVALID_ARGUMENT, "grid (input 1) has shape %s; for X "
                             "of shape %s it must be [N, out..., %d]",
                             shape_str(grid->dims, grid->rank, a, sizeof a),
                             shape_str(x->dims, x->rank, b, sizeof b), sp);
    }
    if (!cpu_is_float(grid->dtype)) return kernel_unsupported_dtype(ctx, 1, grid->dtype);
    gs_job j = {.sp = sp, .N = x->dims[0], .C = x->dims[1]};
    const char *mode = graph_attr_string(ctx->node, "mode", v16 ? "bilinear" : "linear");
    const char *lin = v16 ? "bilinear" : "linear", *cub = v16 ? "bicubic" : "cubic";
    if (!strcmp(mode, "nearest")) j.mode = GS_NEAREST;
    else if (!strcmp(mode, lin)) j.mode = GS_LINEAR;
    else if (!strcmp(mode, cub)) j.mode = GS_CUBIC;
    else
        return kernel_errorf(ctx, OG_ERR_INVALID_MODEL, "mode '%s' is not one of %s, nearest, "
                             "%s (opset %lld)", mode, lin, cub, (long long)ctx->opset);
    const char *pad = graph_attr_string(ctx->node, "padding_mode", "zeros");
    if (!strcmp(pad, "zeros")) j.pad = GS_ZEROS;
    else if (!strcmp(pad, "border")) j.pad = GS_BORDER;
    else if (!strcmp(pad, "reflection")) j.pad = GS_REFLECTION;
    else
        return kernel_errorf(ctx, OG_ERR_INVALID_MODEL, "padding_mode '%s' is not one of zeros, "
                             "border, reflection", pad);
    j.align = graph_attr_int(ctx->node, "align_corners", 0) != 0;
    int64_t od[OG_MAX_RANK] = {j.N, j.C};
    for (int d = 0; d < sp; d++) od[2 + d] = grid->dims[1 + d];
    tensor *y;
    OG_TRY(kernel_output(ctx, 0, x->dtype, x->rank, od, &y));
    if (!cpu_is_float(x->dtype) && !cpu_is_int(x->dtype))
        return kernel_unsupported_dtype(ctx, 0, x->dtype);
    j.npts = cpu_dims_prod(grid->dims, 1, grid->rank - 1);
    for (int d = 0; d < 3; d++) j.in[d] = d < sp ? x->dims[2 + d] : 1;
    j.in_sz = cpu_dims_prod(x->dims, 2, x->rank);
    if (tensor_count(y) == 0) return NULL;
    if (j.in_sz == 0)
        return kernel_errorf(ctx, OG_ERR_INVALID_ARGUMENT, "input 0 has an empty spatial "
                             "extent but the grid asks for %lld points", (long long)j.npts);
    double *xd, *gd;
    OG_TRY(cpu_in_f64(ctx, x, 0, &xd));
    OG_TRY(cpu_in_f64(ctx, grid, 1, &gd));
    j.x = xd, j.grid = gd;
    OG_TRY(kernel_scratch(ctx, (size_t)tensor_count(y) * sizeof(double), (void **)&j.y));
    threadpool_parallel_for(ctx->pool, j.N * j.npts, 16, gs_points, &j);
    cpu_store_f64(y, j.y);
    return NULL;
}
