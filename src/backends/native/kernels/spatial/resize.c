/* Resize (opsets 10 to 19+) and Upsample (7, 9).
 *
 * Every mode is separable, so each resized axis is described once by a table: for each
 * output index, the input indices it reads (clamped into the input: edge padding) and
 * their weights, or a flag that the output takes extrapolation_value (tf_crop_and_resize
 * outside the input). nearest reads one tap and copies elements byte for byte (any
 * dtype, exact); linear and cubic (with antialias, exclude_outside) run one pass per
 * resized axis over double rows, split over the pool, and store into the output dtype
 * (integers rounded half to even and saturated, as ONNX's reference does).
 *
 * The coordinate transforms and tap weights follow the spec's formulas. length_resized
 * there is scale * length_original, fractional when scales (not sizes) are given (the
 * spec defines scale = length_resized / length_original, and ONNX's expected outputs for
 * align_corners with scales use it so); the integer output length enters only through
 * half_pixel_symmetric's adjustment. Where the reference implementation reads otherwise:
 *  - pytorch_half_pixel with length_resized <= 1 maps to 0, as the spec writes; the
 *    reference gives -0.5 when the length is exactly 1 (onnxruntime gives 0). It matters
 *    only for cubic, where taps at -0.5 differ from taps at 0.
 *  - opsets 10 and Upsample have no coordinate or nearest attributes: asymmetric
 *    coordinates, and nearest takes ceil(x) when downsampling and floor(x) otherwise
 *    (onnxruntime's rule for these versions; no reference exists for them). */
#include "backends/native/kernels/spatial/spatial.h"

#include "backends/native/kernels/kernel_util.h"

#include <math.h>
#include <string.h>

typedef enum { RS_NEAREST, RS_LINEAR, RS_CUBIC } rs_mode;
typedef enum {
    RS_HALF_PIXEL, RS_HALF_PIXEL_SYMMETRIC, RS_PYTORCH_HALF_PIXEL, RS_ALIGN_CORNERS,
    RS_ASYMMETRIC, RS_TF_HALF_PIXEL_FOR_NN, RS_TF_CROP_AND_RESIZE
} rs_coord;
typedef enum { RS_ROUND_PREFER_FLOOR, RS_ROUND_PREFER_CEIL, RS_FLOOR, RS_CEIL, RS_SIMPLE } rs_nearest;

typedef struct rs_params {
    rs_mode mode;
    rs_coord coord;
    rs_nearest nearest;
    double cubic_a, extrapolation;
    bool exclude_outside, antialias;
} rs_params;

/* The resampling of one axis: out x taps (index, weight) pairs. */
typedef struct rs_axis {
    int axis;
    int64_t in, out;
    int taps;
    int64_t *idx;
    double *w;
    uint8_t *extrap; /* per output: 1 = extrapolation_value */
} rs_axis;

static const char *const rs_coord_names[] = {"half_pixel", "half_pixel_symmetric",
                                             "pytorch_half_pixel", "align_corners",
                                             "asymmetric", "tf_half_pixel_for_nn",
                                             "tf_crop_and_resize"};
static const char *const rs_nearest_names[] = {"round_prefer_floor", "round_prefer_ceil",
                                               "floor", "ceil"};

/* Index of s in names[0..n), or -1. */
static int rs_lookup(const char *s, const char *const *names, int n) {
    for (int i = 0; i < n; i++)
        if (!strcmp(s, names[i])) return i;
    return -1;
}

/* The input coordinate of output index o (before any clamping). */
static double rs_coordinate(const rs_params *p, int64_t o, int64_t in, int64_t out,
                            double scale, double r0, double r1) {
    double x = (double)o, len = scale * (double)in; /* length_resized, maybe fractional */
    switch (p->coord) {
    case RS_HALF_PIXEL: return (x + 0.5) / scale - 0.5;
    case RS_HALF_PIXEL_SYMMETRIC: {
        double adjustment = (double)out / len, center = (double)in / 2;
        return center * (1 - adjustment) + (x + 0.5) / scale - 0.5;
    }
    case RS_PYTORCH_HALF_PIXEL: return len > 1 ? (x + 0.5) / scale - 0.5 : 0;
    case RS_ALIGN_CORNERS: return len > 1 ? x * (double)(in - 1) / (len - 1) : 0;
    case RS_ASYMMETRIC: return x / scale;
    case RS_TF_HALF_PIXEL_FOR_NN: return (x + 0.5) / scale;
    case RS_TF_CROP_AND_RESIZE:
        return len > 1 ? r0 * (double)(in - 1) + x * (r1 - r0) * (double)(in - 1) / (len - 1)
                       : 0.5 * (r0 + r1) * (double)(in - 1);
    }
    return x;
}

static int64_t rs_nearest_index(rs_nearest m, double x, bool downsample) {
    double f = floor(x), r = x - f;
    switch (m) {
    case RS_ROUND_PREFER_FLOOR: return (int64_t)f + (r > 0.5);
    case RS_ROUND_PREFER_CEIL: return (int64_t)f + (r >= 0.5);
    case RS_FLOOR: return (int64_t)f;
    case RS_CEIL: return (int64_t)ceil(x);
    case RS_SIMPLE: return downsample ? (int64_t)ceil(x) : (int64_t)f;
    }
    return (int64_t)f;
}

/* The filter kernels at distance t (in input pixels, scaled for antialias). */
static double rs_kernel(const rs_params *p, double t) {
    t = fabs(t);
    if (p->mode == RS_LINEAR) return t < 1 ? 1 - t : 0;
    double a = p->cubic_a;
    if (t <= 1) return ((a + 2) * t - (a + 3)) * t * t + 1;
    if (t < 2) return ((a * t - 5 * a) * t + 8 * a) * t - 4 * a;
    return 0;
}

static og_status *rs_axis_init(kernel_ctx *ctx, const rs_params *p, rs_axis *ax, double scale,
                               double r0, double r1) {
    int64_t in = ax->in, out = ax->out;
    /* taps: 1 for nearest; linear 2 and cubic 4, or with antialias the kernel's support
     * stretched by 1 / scale when downsampling */
    double sa = p->antialias && scale < 1 ? scale : 1;
    int64_t start = 0;
    if (p->mode == RS_LINEAR) start = p->antialias ? (int64_t)floor(-1 / sa) + 1 : 0;
    if (p->mode == RS_CUBIC) start = p->antialias ? (int64_t)floor(-2 / sa) + 1 : -1;
    int64_t taps = p->mode == RS_NEAREST ? 1 : 2 - 2 * start;
    if (taps > (int64_t)1 << 20)
        return kernel_errorf(ctx, OG_ERR_INVALID_ARGUMENT, "axis %d: scale %g needs %lld "
                             "filter taps", ax->axis, scale, (long long)taps);
    ax->taps = (int)taps;
    OG_TRY(kernel_scratch(ctx, (size_t)(out * taps) * (sizeof(int64_t) + sizeof(double)) +
                                   (size_t)out + 1, (void **)&ax->idx));
    ax->w = (double *)(ax->idx + out * taps);
    ax->extrap = (uint8_t *)(ax->w + out * taps);
    for (int64_t o = 0; o < out; o++) {
        double x = rs_coordinate(p, o, in, out, scale, r0, r1);
        int64_t *idx = ax->idx + o * taps;
        double *w = ax->w + o * taps;
        ax->extrap[o] = p->coord == RS_TF_CROP_AND_RESIZE && (x < 0 || x > (double)(in - 1));
        if (ax->extrap[o]) {
            for (int64_t t = 0; t < taps; t++) idx[t] = 0, w[t] = 0;
            continue;
        }
        if (p->mode == RS_NEAREST) {
            int64_t i = rs_nearest_index(p->nearest, x, scale < 1);
            idx[0] = i < 0 ? 0 : i >= in ? in - 1 : i;
            w[0] = 1;
            continue;
        }
        /* f + r = x with r in (0, 1]: an integer x is the right end of [x - 1, x] */
        double f = floor(x), r = x - f;
        if (r == 0) f -= 1, r = 1;
        double sum = 0;
        for (int64_t t = 0; t < taps; t++) {
            w[t] = rs_kernel(p, ((double)(start + t) - r) * sa);
            int64_t i = (int64_t)f + start + t;
            if (p->exclude_outside && (i < 0 || i >= in)) w[t] = 0;
            idx[t] = i < 0 ? 0 : i >= in ? in - 1 : i;
            sum += w[t];
        }
        if ((p->antialias || p->exclude_outside) && sum != 0)
            for (int64_t t = 0; t < taps; t++) w[t] /= sum;
    }
    return NULL;
}

/* ---- nearest: a gather of whole elements --------------------------------------------- */

typedef struct rs_gather {
    const char *x;
    char *y;
    size_t esz;
    int rank;
    const int64_t *in_dims, *out_dims;
    const int64_t *const *map;   /* per dim: output index -> input index (NULL: identity) */
    const uint8_t *const *extrap; /* per dim, or NULL */
    const char *fill;             /* extrapolation value in the element type */
} rs_gather;

static void rs_gather_rows(void *arg, int64_t b, int64_t e) {
    const rs_gather *g = arg;
    int r = g->rank;
    int64_t last = g->out_dims[r - 1], in_str[OG_MAX_RANK];
    in_str[r - 1] = 1;
    for (int d = r - 2; d >= 0; d--) in_str[d] = in_str[d + 1] * g->in_dims[d + 1];
    for (int64_t row = b; row < e; row++) {
        int64_t off = 0, rem = row;
        bool ext = false;
        for (int d = r - 2; d >= 0; d--) {
            int64_t o = rem % g->out_dims[d];
            rem /= g->out_dims[d];
            off += (g->map[d] ? g->map[d][o] : o) * in_str[d];
            ext |= g->extrap[d] && g->extrap[d][o];
        }
        char *dst = g->y + (size_t)(row * last) * g->esz;
        for (int64_t o = 0; o < last; o++, dst += g->esz) {
            bool oe = ext || (g->extrap[r - 1] && g->extrap[r - 1][o]);
            const char *src = oe ? g->fill
                                 : g->x + (size_t)(off + (g->map[r - 1] ? g->map[r - 1][o] : o)) * g->esz;
            memcpy(dst, src, g->esz);
        }
    }
}

/* ---- linear and cubic: one pass per axis over double rows -------------------------- */

typedef struct rs_pass {
    const rs_axis *ax;
    const double *src;
    double *dst;
    int64_t inner;        /* elements after the axis */
    double fill;
} rs_pass;

/* Item = (outer block, output index along the axis): one output row of `inner`. */
static void rs_pass_rows(void *arg, int64_t b, int64_t e) {
    const rs_pass *p = arg;
    const rs_axis *ax = p->ax;
    int64_t inner = p->inner;
    for (int64_t it = b; it < e; it++) {
        int64_t outer = it / ax->out, o = it % ax->out;
        double *d = p->dst + it * inner;
        if (ax->extrap[o]) {
            for (int64_t i = 0; i < inner; i++) d[i] = p->fill;
            continue;
        }
        const double *s = p->src + outer * ax->in * inner;
        const int64_t *idx = ax->idx + o * ax->taps;
        const double *w = ax->w + o * ax->taps;
        if (inner == 1) {
            double acc = 0;
            for (int t = 0; t < ax->taps; t++) acc += w[t] * s[idx[t]];
            d[0] = acc;
            continue;
        }
        for (int64_t i = 0; i < inner; i++) d[i] = 0;
        for (int t = 0; t < ax->taps; t++) {
            if (w[t] == 0) continue;
            const double *sr = s + idx[t] * inner;
            for (int64_t i = 0; i < inner; i++) d[i] += w[t] * sr[i];
        }
    }
}

typedef struct rs_convert {
    const tensor *t;
    double *buf;
    int64_t n;
    bool load; /* load t into buf, else store buf into t */
} rs_convert;

enum { RS_CHUNK = 1 << 14 };

static void rs_convert_chunks(void *arg, int64_t b, int64_t e) {
    const rs_convert *c = arg;
    for (int64_t k = b; k < e; k++) {
        int64_t o = k * RS_CHUNK, n = c->n - o < RS_CHUNK ? c->n - o : RS_CHUNK;
        if (c->load) cpu_load_f64(c->t->dtype, c->t->data, o, n, c->buf + o);
        else cpu_store_f64_rounded(c->t->dtype, c->t->data, o, n, c->buf + o);
    }
}

static void rs_convert_run(threadpool *pool, const tensor *t, double *buf, bool load) {
    rs_convert c = {t, buf, tensor_count(t), load};
    threadpool_parallel_for(pool, (c.n + RS_CHUNK - 1) / RS_CHUNK, 1, rs_convert_chunks, &c);
}

/* ---- shared driver ------------------------------------------------------------------ */

/* Resizes X to out_dims along the axes described by ax[0..nax) (in processing order). */
static og_status *rs_run(kernel_ctx *ctx, const rs_params *p, rs_axis *ax, int nax,
                         const int64_t *out_dims) {
    const tensor *x = ctx->inputs[0];
    tensor *y;
    OG_TRY(kernel_output(ctx, 0, x->dtype, x->rank, out_dims, &y));
    if (tensor_count(y) == 0) return NULL;
    if (p->mode == RS_NEAREST || nax == 0) {
        size_t esz = dtype_size(x->dtype);
        if (esz == 0) return kernel_unsupported_dtype(ctx, 0, x->dtype);
        const int64_t *map[OG_MAX_RANK] = {0}; /* nearest tables have one tap per output */
        const uint8_t *ext[OG_MAX_RANK] = {0};
        for (int a = 0; a < nax; a++) {
            map[ax[a].axis] = ax[a].idx;
            if (p->coord == RS_TF_CROP_AND_RESIZE) ext[ax[a].axis] = ax[a].extrap;
        }
        double fv = p->extrapolation;
        char fill[16] = {0};
        cpu_store_f64_rounded(x->dtype, fill, 0, 1, &fv);
        if (x->rank == 0) {
            memcpy(y->data, x->data, esz);
            return NULL;
        }
        rs_gather g = {x->data, y->data, esz, x->rank, x->dims, out_dims, map, ext, fill};
        int64_t rows = tensor_count(y) / out_dims[x->rank - 1];
        threadpool_parallel_for(ctx->pool, rows, 64, rs_gather_rows, &g);
        return NULL;
    }
    if (!cpu_is_float(x->dtype) && !cpu_is_int(x->dtype))
        return kernel_unsupported_dtype(ctx, 0, x->dtype);
    int64_t cur[OG_MAX_RANK];
    memcpy(cur, x->dims, sizeof(int64_t) * (size_t)x->rank);
    double *src;
    OG_TRY(kernel_scratch(ctx, (size_t)tensor_count(x) * sizeof(double) + 1, (void **)&src));
    rs_convert_run(ctx->pool, x, src, true);
    for (int a = 0; a < nax; a++) {
        int d = ax[a].axis;
        int64_t outer = cpu_dims_prod(cur, 0, d), inner = cpu_dims_prod(cur, d + 1, x->rank);
        double *dst;
        OG_TRY(kernel_scratch(ctx, (size_t)(outer * ax[a].out * inner) * sizeof(double) + 1,
                              (void **)&dst));
        rs_pass ps = {&ax[a], src, dst, inner, p->extrapolation};
        int64_t grain = 4096 / (inner * ax[a].taps + 1) + 1;
        threadpool_parallel_for(ctx->pool, outer * ax[a].out, grain, rs_pass_rows, &ps);
        cur[d] = ax[a].out;
        src = dst;
    }
    rs_convert_run(ctx->pool, y, src, false);
    return NULL;
}

/* ---- Resize ------------------------------------------------------------------------- */

static og_status *rs_read_params(kernel_ctx *ctx, rs_params *p) {
    const graph_node *n = ctx->node;
    const char *mode = graph_attr_string(n, "mode", "nearest");
    if (!strcmp(mode, "nearest")) p->mode = RS_NEAREST;
    else if (!strcmp(mode, "linear") || !strcmp(mode, "bilinear")) p->mode = RS_LINEAR;
    else if (!strcmp(mode, "cubic") && ctx->opset >= 11) p->mode = RS_CUBIC;
    else
        return kernel_errorf(ctx, OG_ERR_INVALID_MODEL, "mode '%s' is not one of nearest, "
                             "linear%s", mode, ctx->opset >= 11 ? ", cubic" : "");
    p->coord = RS_ASYMMETRIC;
    p->nearest = RS_SIMPLE;
    p->cubic_a = graph_attr_float(n, "cubic_coeff_a", -0.75f);
    p->extrapolation = graph_attr_float(n, "extrapolation_value", 0.0f);
    p->exclude_outside = graph_attr_int(n, "exclude_outside", 0) != 0;
    p->antialias = graph_attr_int(n, "antialias", 0) != 0;
    if (!strcmp(ctx->node->op_type, "Resize") && ctx->opset >= 11) {
        const char *c = graph_attr_string(n, "coordinate_transformation_mode", "half_pixel");
        int ci = rs_lookup(c, rs_coord_names, 7);
        if (ci < 0 || (ci == RS_TF_HALF_PIXEL_FOR_NN && ctx->opset >= 13) ||
            (ci == RS_HALF_PIXEL_SYMMETRIC && ctx->opset < 19))
            return kernel_errorf(ctx, OG_ERR_INVALID_MODEL, "coordinate_transformation_mode "
                                 "'%s' is not defined at opset %lld", c, (long long)ctx->opset);
        p->coord = (rs_coord)ci;
        const char *nm = graph_attr_string(n, "nearest_mode", "round_prefer_floor");
        int ni = rs_lookup(nm, rs_nearest_names, 4);
        if (ni < 0)
            return kernel_errorf(ctx, OG_ERR_INVALID_MODEL, "nearest_mode '%s' is not one of "
                                 "round_prefer_floor, round_prefer_ceil, floor, ceil", nm);
        p->nearest = (rs_nearest)ni;
    }
    if (p->antialias && p->mode == RS_NEAREST)
        return kernel_error(ctx, OG_ERR_INVALID_MODEL, "antialias applies to the linear and "
                                                       "cubic modes, not nearest");
    return NULL;
}

/* A float vector input (scales, roi) as doubles; NULL and 0 when absent or empty. */
static og_status *rs_floats(kernel_ctx *ctx, int index, double **out, int64_t *n) {
    const tensor *t = kernel_input(ctx, index);
    *out = NULL, *n = 0;
    if (!t || tensor_count(t) == 0) return NULL;
    if (!cpu_is_float(t->dtype)) return kernel_unsupported_dtype(ctx, index, t->dtype);
    *n = tensor_count(t);
    return cpu_in_f64(ctx, t, index, out);
}

/* Resizes with per-axis output sizes out[], scales sc[] and roi (2 * rank, or NULL);
 * axes whose mapping is the identity are skipped. */
static og_status *rs_resize(kernel_ctx *ctx, const rs_params *p, const int *order, int norder,
                            const int64_t *out, const double *sc, const double *roi) {
    const tensor *x = ctx->inputs[0];
    rs_axis ax[OG_MAX_RANK];
    int nax = 0;
    for (int k = 0; k < norder; k++) {
        int d = order[k];
        double r0 = roi ? roi[d] : 0, r1 = roi ? roi[x->rank + d] : 1;
        bool identity = out[d] == x->dims[d] && sc[d] == 1 &&
                        (p->coord != RS_TF_CROP_AND_RESIZE || (r0 == 0 && r1 == 1));
        if (identity || out[d] == 0 || x->dims[d] == 0) continue;
        ax[nax] = (rs_axis){.axis = d, .in = x->dims[d], .out = out[d]};
        OG_TRY(rs_axis_init(ctx, p, &ax[nax], sc[d], r0, r1));
        nax++;
    }
    return rs_run(ctx, p, ax, nax, out);
}

og_status *cpu_resize(kernel_ctx *ctx) {
    OG_TRY(kernel_require_inputs(ctx, 1));
    const tensor *x = ctx->inputs[0];
    int r = x->rank;
    rs_params p;
    OG_TRY(rs_read_params(ctx, &p));
    /* inputs: opset 10 (X, scales); 11 on (X, roi, scales, sizes) */
    int i_roi = ctx->opset >= 11 ? 1 : -1, i_sc = ctx->opset >= 11 ? 2 : 1;
    int i_sz = ctx->opset >= 11 ? 3 : -1;
    double *scales, *roi_in = NULL;
    int64_t nsc, nroi = 0;
    OG_TRY(rs_floats(ctx, i_sc, &scales, &nsc));
    if (i_roi >= 0 && p.coord == RS_TF_CROP_AND_RESIZE) OG_TRY(rs_floats(ctx, i_roi, &roi_in, &nroi));
    const tensor *sizes = i_sz >= 0 ? kernel_input(ctx, i_sz) : NULL;
    if (sizes && tensor_count(sizes) == 0) sizes = NULL;
    if ((sizes != NULL) == (scales != NULL))
        return kernel_errorf(ctx, OG_ERR_INVALID_MODEL, "exactly one of scales (input %d) and "
                             "sizes (input %d) must be given", i_sc, i_sz);
    /* axes (opset 18): which dims scales/sizes/roi refer to, in that order */
    int order[OG_MAX_RANK], norder = r;
    for (int i = 0; i < r; i++) order[i] = i;
    const int64_t *axes;
    int64_t na = graph_attr_ints(ctx->node, "axes", &axes);
    if (na >= 0) {
        if (na > r)
            return kernel_errorf(ctx, OG_ERR_INVALID_MODEL, "attribute 'axes' has %lld values "
                                 "for rank %d", (long long)na, r);
        bool seen[OG_MAX_RANK] = {0};
        for (int i = 0; i < na; i++) {
            OG_TRY(cpu_axis(ctx, axes[i], r, "axes entry", &order[i]));
            if (seen[order[i]])
                return kernel_errorf(ctx, OG_ERR_INVALID_MODEL, "axes repeats axis %lld",
                                     (long long)axes[i]);
            seen[order[i]] = true;
        }
        norder = (int)na;
    }
    int64_t want = sizes ? tensor_count(sizes) : nsc;
    if (want != norder)
        return kernel_errorf(ctx, OG_ERR_INVALID_ARGUMENT, "%s has %lld values, expected %d "
                             "(one per %s)", sizes ? "sizes" : "scales", (long long)want,
                             norder, na >= 0 ? "entry of axes" : "input dimension");
    double sc[OG_MAX_RANK], roi[2 * OG_MAX_RANK];
    int64_t out[OG_MAX_RANK];
    for (int i = 0; i < r; i++) sc[i] = 1, out[i] = x->dims[i], roi[i] = 0, roi[r + i] = 1;
    if (roi_in) {
        if (nroi != 2 * norder)
            return kernel_errorf(ctx, OG_ERR_INVALID_ARGUMENT, "roi has %lld values, expected "
                                 "%d", (long long)nroi, 2 * norder);
        for (int k = 0; k < norder; k++) roi[order[k]] = roi_in[k], roi[r + order[k]] = roi_in[norder + k];
    }
    if (scales) {
        for (int k = 0; k < norder; k++) {
            int d = order[k];
            if (!(scales[k] > 0))
                return kernel_errorf(ctx, OG_ERR_INVALID_ARGUMENT, "scales[%d] is %g, expected "
                                     "> 0", k, scales[k]);
            sc[d] = scales[k];
            out[d] = (int64_t)floor(scales[k] * (double)x->dims[d]);
        }
    } else {
        if (sizes->dtype != OG_INT64) return kernel_unsupported_dtype(ctx, i_sz, sizes->dtype);
        const int64_t *sz = sizes->data;
        for (int k = 0; k < norder; k++) {
            int d = order[k];
            if (sz[k] < 0)
                return kernel_errorf(ctx, OG_ERR_INVALID_ARGUMENT, "sizes[%d] is %lld", k,
                                     (long long)sz[k]);
            out[d] = sz[k];
            sc[d] = x->dims[d] ? (double)sz[k] / (double)x->dims[d] : 1;
        }
        const char *pol = graph_attr_string(ctx->node, "keep_aspect_ratio_policy", "stretch");
        bool larger = !strcmp(pol, "not_larger"), smaller = !strcmp(pol, "not_smaller");
        if (!larger && !smaller && strcmp(pol, "stretch") != 0)
            return kernel_errorf(ctx, OG_ERR_INVALID_MODEL, "keep_aspect_ratio_policy '%s' is "
                                 "not one of stretch, not_larger, not_smaller", pol);
        if (larger || smaller) { /* one scale for all the axes; sizes rounded half up */
            double s = sc[order[0]];
            for (int k = 1; k < norder; k++)
                s = larger ? fmin(s, sc[order[k]]) : fmax(s, sc[order[k]]);
            for (int k = 0; k < norder; k++) {
                int d = order[k];
                sc[d] = s;
                out[d] = (int64_t)floor(s * (double)x->dims[d] + 0.5);
            }
        }
    }
    return rs_resize(ctx, &p, order, norder, out, sc, roi_in ? roi : NULL);
}

/* Upsample 7 (scales attribute) and 9 (scales input): floor(in * scale), asymmetric. */
og_status *cpu_upsample(kernel_ctx *ctx) {
    OG_TRY(kernel_require_inputs(ctx, 1));
    const tensor *x = ctx->inputs[0];
    rs_params p;
    OG_TRY(rs_read_params(ctx, &p));
    double sc[OG_MAX_RANK], *scv = NULL;
    int64_t n;
    if (ctx->opset >= 9) {
        OG_TRY(kernel_require_inputs(ctx, 2));
        OG_TRY(rs_floats(ctx, 1, &scv, &n));
    } else {
        const float *f;
        n = graph_attr_floats(ctx->node, "scales", &f);
        for (int64_t i = 0; i < n && i < OG_MAX_RANK; i++) sc[i] = f[i];
        scv = sc;
    }
    if (n != x->rank)
        return kernel_errorf(ctx, OG_ERR_INVALID_MODEL, "scales has %lld values, expected %d "
                             "(one per input dimension)", (long long)n, x->rank);
    int order[OG_MAX_RANK];
    int64_t out[OG_MAX_RANK];
    for (int d = 0; d < x->rank; d++) {
        if (!(scv[d] >= 1))
            return kernel_errorf(ctx, OG_ERR_INVALID_ARGUMENT, "scales[%d] is %g, expected "
                                 ">= 1", d, scv[d]);
        order[d] = d, sc[d] = scv[d];
        out[d] = (int64_t)floor(scv[d] * (double)x->dims[d]);
    }
    return rs_resize(ctx, &p, order, x->rank, out, sc, NULL);
}
