/* ConvTranspose for 1 to 3 spatial dimensions: groups, strides, dilations, pads,
 * output_padding, output_shape and auto_pad.
 *
 * Input position i and kernel tap t of W[c, m, ...] add x[c, i] * w[c, m, t] into output
 * position i * stride + t * dilation - pad_begin. Float32, float16 and bfloat16 form, per
 * image and group, the columns W_g^T X_g ([M/group * taps] x [input positions]) on
 * gemm_f32 and then add each column into its output positions (col2im), in parallel over
 * output channels (each channel's plane is written by one thread). Float64 runs the same
 * scatter directly in double, in parallel over (image, output channel).
 *
 * Output size per spatial dim, ext = dilation * (k - 1) + 1:
 *   stride * (in - 1) + output_padding + ext - pad_begin - pad_end
 * With output_shape given (or auto_pad SAME_*, where it is in * stride) the pads are
 * derived from it as the spec says: total = stride * (in - 1) + output_padding + ext -
 * out, pad_begin = floor(total / 2) for SAME_UPPER and total - floor(total / 2)
 * otherwise; explicit pads are then ignored. A negative pad extends the output. */
#include "backends/native/kernels/spatial/spatial.h"

#include "backends/native/kernels/matmul/gemm_f32.h"
#include "backends/native/kernels/kernel_util.h"
#include "backends/native/kernels/spatial/window.h"

#include <string.h>

typedef struct ct_job {
    int64_t N, C, M, group, cg, mg, ksz, isz, osz;
    int64_t in[3], out[3], k[3], s[3], d[3], pb[3];
    const float *col;      /* f32: [mg * ksz, isz] of the current (image, group) */
    float *y;              /* f32: the group's first output plane of the current image */
    const double *xd, *wd, *bd;
    double *yd;
} ct_job;

/* Adds wv * src[i] (one value per input position) into plane y where tap (t0, t1, t2)
 * of input position i lands. */
#define CT_SCATTER(T, y, src, wv, j, t0, t1, t2)                                         \
    do {                                                                                 \
        for (int64_t i0 = 0; i0 < (j)->in[0]; i0++) {                                    \
            int64_t o0 = i0 * (j)->s[0] - (j)->pb[0] + (t0) * (j)->d[0];                 \
            if (o0 < 0 || o0 >= (j)->out[0]) continue;                                   \
            for (int64_t i1 = 0; i1 < (j)->in[1]; i1++) {                                \
                int64_t o1 = i1 * (j)->s[1] - (j)->pb[1] + (t1) * (j)->d[1];             \
                if (o1 < 0 || o1 >= (j)->out[1]) continue;                               \
                const T *sr = (src) + (i0 * (j)->in[1] + i1) * (j)->in[2];               \
                T *yr = (y) + (o0 * (j)->out[1] + o1) * (j)->out[2];                     \
                for (int64_t i2 = 0; i2 < (j)->in[2]; i2++) {                            \
                    int64_t o2 = i2 * (j)->s[2] - (j)->pb[2] + (t2) * (j)->d[2];         \
                    if (o2 >= 0 && o2 < (j)->out[2]) yr[o2] += (wv) * sr[i2];            \
                }                                                                        \
            }                                                                            \
        }                                                                                \
    } while (0)

/* f32: output channel m of the group takes rows m * ksz .. of the columns. */
static void ct_col2im(void *arg, int64_t b, int64_t e) {
    const ct_job *j = arg;
    for (int64_t m = b; m < e; m++) {
        float *y = j->y + m * j->osz;
        for (int64_t t = 0; t < j->ksz; t++) {
            int64_t t2 = t % j->k[2], t1 = t / j->k[2] % j->k[1], t0 = t / (j->k[2] * j->k[1]);
            const float *src = j->col + (m * j->ksz + t) * j->isz;
            CT_SCATTER(float, y, src, 1.0f, j, t0, t1, t2);
        }
    }
}

/* f64: plane (n, m) directly. */
static void ct_planes_f64(void *arg, int64_t b, int64_t e) {
    const ct_job *j = arg;
    for (int64_t pl = b; pl < e; pl++) {
        int64_t n = pl / j->M, m = pl % j->M, g = m / j->mg, mm = m % j->mg;
        double *y = j->yd + pl * j->osz;
        for (int64_t o = 0; o < j->osz; o++) y[o] = j->bd ? j->bd[m] : 0;
        for (int64_t c = 0; c < j->cg; c++) {
            int64_t ci = g * j->cg + c;
            const double *x = j->xd + (n * j->C + ci) * j->isz;
            const double *w = j->wd + (ci * j->mg + mm) * j->ksz;
            for (int64_t t = 0; t < j->ksz; t++) {
                int64_t t2 = t % j->k[2], t1 = t / j->k[2] % j->k[1], t0 = t / (j->k[2] * j->k[1]);
                CT_SCATTER(double, y, x, w[t], j, t0, t1, t2);
            }
        }
    }
}

og_status *cpu_conv_transpose(kernel_ctx *ctx) {
    OG_TRY(kernel_require_inputs(ctx, 2));
    const tensor *x = ctx->inputs[0], *w = ctx->inputs[1], *b = kernel_input(ctx, 2);
    int sp = x->rank - 2;
    if (sp < 1 || sp > 3 || w->rank != x->rank)
        return kernel_errorf(ctx, OG_ERR_INVALID_ARGUMENT, "input 0 has rank %d and input 1 "
                             "rank %d; expected equal ranks of 3 to 5", x->rank, w->rank);
    if (!cpu_is_float(x->dtype)) return kernel_unsupported_dtype(ctx, 0, x->dtype);
    for (int i = 1; i < 3; i++)
        if (kernel_input(ctx, i) && ctx->inputs[i]->dtype != x->dtype)
            return kernel_errorf(ctx, OG_ERR_INVALID_MODEL, "input %d is %s, input 0 %s", i,
                                 og_dtype_name(ctx->inputs[i]->dtype), og_dtype_name(x->dtype));
    ct_job j = {.N = x->dims[0], .C = x->dims[1]};
    j.group = graph_attr_int(ctx->node, "group", 1);
    if (j.group < 1 || j.C % j.group || w->dims[0] != j.C)
        return kernel_errorf(ctx, OG_ERR_INVALID_ARGUMENT, "input 1 has shape [%lld,%lld,...]: "
                             "expected %lld input channels, divisible by group %lld",
                             (long long)w->dims[0], (long long)w->dims[1], (long long)j.C,
                             (long long)j.group);
    j.cg = j.C / j.group, j.mg = w->dims[1], j.M = j.mg * j.group;
    if (b && (b->rank != 1 || b->dims[0] != j.M))
        return kernel_errorf(ctx, OG_ERR_INVALID_ARGUMENT, "input 2 (bias) must have shape "
                             "[%lld]", (long long)j.M);
    int64_t ks[3], st[3], dl[3], opad[3], pads[6], os[5];
    OG_TRY(cpu_attr_ints(ctx, "kernel_shape", sp, 0, ks));
    OG_TRY(cpu_attr_ints(ctx, "strides", sp, 1, st));
    OG_TRY(cpu_attr_ints(ctx, "dilations", sp, 1, dl));
    OG_TRY(cpu_attr_ints(ctx, "output_padding", sp, 0, opad));
    OG_TRY(cpu_attr_ints(ctx, "pads", 2 * sp, 0, pads));
    const int64_t *osv;
    int64_t nos = graph_attr_ints(ctx->node, "output_shape", &osv);
    if (nos >= 0 && nos != sp && nos != sp + 2)
        return kernel_errorf(ctx, OG_ERR_INVALID_MODEL, "attribute 'output_shape' has %lld "
                             "values, expected %d (or %d)", (long long)nos, sp, sp + 2);
    for (int i = 0; nos >= 0 && i < sp; i++) os[i] = osv[nos - sp + i];
    const char *ap = graph_attr_string(ctx->node, "auto_pad", "NOTSET");
    bool same = !strcmp(ap, "SAME_UPPER") || !strcmp(ap, "SAME_LOWER");
    if (!same && strcmp(ap, "VALID") != 0 && strcmp(ap, "NOTSET") != 0)
        return kernel_errorf(ctx, OG_ERR_INVALID_MODEL, "auto_pad '%s' is not one of NOTSET, "
                             "SAME_UPPER, SAME_LOWER, VALID", ap);
    int64_t od[OG_MAX_RANK] = {j.N, j.M};
    for (int q = 0; q < 3; q++) j.in[q] = j.out[q] = j.k[q] = j.s[q] = j.d[q] = 1, j.pb[q] = 0;
    for (int i = 0; i < sp; i++) {
        int q = 3 - sp + i;
        int64_t in = x->dims[2 + i], k = w->dims[2 + i];
        if ((ks[i] && ks[i] != k) || st[i] < 1 || dl[i] < 1 || opad[i] < 0)
            return kernel_errorf(ctx, OG_ERR_INVALID_MODEL, "spatial dim %d: kernel_shape %lld "
                                 "vs weight %lld, stride %lld, dilation %lld, output_padding "
                                 "%lld", i, (long long)ks[i], (long long)k, (long long)st[i],
                                 (long long)dl[i], (long long)opad[i]);
        int64_t full = st[i] * (in - 1) + opad[i] + dl[i] * (k - 1) + 1, out, pb;
        if (nos >= 0 || same) {
            out = nos >= 0 ? os[i] : in * st[i];
            int64_t total = full - out, half = total >= 0 ? total / 2 : -((1 - total) / 2);
            /* half = floor(total / 2): an output_shape one larger than the full extent
             * (total -1) adds the extra position at the end (ONNX's expected outputs) */
            pb = !strcmp(ap, "SAME_UPPER") ? half : total - half;
        } else {
            pb = strcmp(ap, "VALID") ? pads[i] : 0;
            out = full - pb - (strcmp(ap, "VALID") ? pads[sp + i] : 0);
        }
        if (out < 0)
            return kernel_errorf(ctx, OG_ERR_INVALID_ARGUMENT, "spatial dim %d: the output "
                                 "extent is %lld", i, (long long)out);
        j.in[q] = in, j.k[q] = k, j.s[q] = st[i], j.d[q] = dl[i], j.pb[q] = pb;
        j.out[q] = od[2 + i] = out;
    }
    j.ksz = j.k[0] * j.k[1] * j.k[2];
    j.isz = j.in[0] * j.in[1] * j.in[2];
    j.osz = j.out[0] * j.out[1] * j.out[2];
    tensor *y;
    OG_TRY(kernel_output(ctx, 0, x->dtype, x->rank, od, &y));
    if (tensor_count(y) == 0) return NULL;
    if (x->dtype == OG_FLOAT64) {
        j.xd = x->data, j.wd = w->data, j.bd = b ? b->data : NULL, j.yd = y->data;
        threadpool_parallel_for(ctx->pool, j.N * j.M, 1, ct_planes_f64, &j);
        return NULL;
    }
    const float *xf, *wf, *bf = NULL;
    float *yf, *col;
    OG_TRY(cpu_in_f32(ctx, 0, &xf));
    OG_TRY(cpu_in_f32(ctx, 1, &wf));
    if (b) OG_TRY(cpu_in_f32(ctx, 2, &bf));
    OG_TRY(cpu_out_f32(ctx, y, &yf));
    for (int64_t pl = 0; pl < j.N * j.M; pl++) {
        float bias = bf ? bf[pl % j.M] : 0.0f, *yp = yf + pl * j.osz;
        for (int64_t o = 0; o < j.osz; o++) yp[o] = bias;
    }
    int64_t rows = j.mg * j.ksz;
    OG_TRY(kernel_scratch(ctx, (size_t)(rows * j.isz) * sizeof(float) + 1, (void **)&col));
    gemm_f32_args g = {.trans_a = true, .M = rows, .N = j.isz, .K = j.cg, .alpha = 1,
                       .lda = rows, .ldb = j.isz, .C = col, .ldc = j.isz};
    void *work = NULL;
    size_t need = gemm_f32_work_size(&g);
    if (need) OG_TRY(kernel_scratch(ctx, need, &work));
    j.col = col;
    for (int64_t n = 0; n < j.N; n++)
        for (int64_t gr = 0; gr < j.group; gr++) {
            g.A = wf + gr * j.cg * rows;
            g.B = xf + (n * j.C + gr * j.cg) * j.isz;
            if (j.cg == 0) memset(col, 0, (size_t)(rows * j.isz) * sizeof(float));
            else OG_TRY(gemm_f32(ctx->pool, &g, work));
            j.y = yf + (n * j.M + gr * j.mg) * j.osz;
            threadpool_parallel_for(ctx->pool, j.mg, 1, ct_col2im, &j);
        }
    cpu_out_f32_done(y, yf);
    return NULL;
}
