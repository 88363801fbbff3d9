#include "backends/native/kernels/spatial/window.h"

#include <string.h>

og_status *cpu_attr_ints(const kernel_ctx *ctx, const char *name, int n, int64_t dflt,
                         int64_t *out) {
    const int64_t *v;
    int64_t cnt = graph_attr_ints(ctx->node, name, &v);
    if (cnt < 0) {
        for (int i = 0; i < n; i++) out[i] = dflt;
        return NULL;
    }
    if (cnt != n)
        return kernel_errorf(ctx, OG_ERR_INVALID_MODEL, "attribute '%s' has %lld values, "
                             "expected %d", name, (long long)cnt, n);
    for (int i = 0; i < n; i++) out[i] = v[i];
    return NULL;
}

og_status *cpu_window_init(const kernel_ctx *ctx, int sp, const int64_t *in,
                           const int64_t *k, bool ceil_mode, cpu_window *w) {
    if (sp < 1 || sp > 3)
        return kernel_errorf(ctx, OG_ERR_UNSUPPORTED, "%d spatial dimensions; 1 to 3 are "
                             "implemented", sp);
    int64_t st[3], dl[3], pads[6];
    OG_TRY(cpu_attr_ints(ctx, "strides", sp, 1, st));
    OG_TRY(cpu_attr_ints(ctx, "dilations", sp, 1, dl));
    OG_TRY(cpu_attr_ints(ctx, "pads", 2 * sp, 0, pads));
    const char *ap = graph_attr_string(ctx->node, "auto_pad", "NOTSET");
    bool same = !strcmp(ap, "SAME_UPPER") || !strcmp(ap, "SAME_LOWER");
    bool valid = !strcmp(ap, "VALID");
    if (!same && !valid && strcmp(ap, "NOTSET") != 0)
        return kernel_errorf(ctx, OG_ERR_INVALID_MODEL, "auto_pad '%s' is not one of NOTSET, "
                             "SAME_UPPER, SAME_LOWER, VALID", ap);
    for (int i = 0; i < 3; i++) {
        w->in[i] = w->out[i] = w->k[i] = w->s[i] = w->d[i] = 1;
        w->pb[i] = w->pe[i] = 0;
    }
    for (int i = 0; i < sp; i++) {
        int q = 3 - sp + i;
        if (k[i] < 1 || st[i] < 1 || dl[i] < 1 || pads[i] < 0 || pads[sp + i] < 0)
            return kernel_errorf(ctx, OG_ERR_INVALID_MODEL, "spatial dim %d: kernel %lld, "
                                 "stride %lld, dilation %lld, pads %lld/%lld (expected "
                                 "kernel, stride, dilation >= 1 and pads >= 0)", i,
                                 (long long)k[i], (long long)st[i], (long long)dl[i],
                                 (long long)pads[i], (long long)pads[sp + i]);
        int64_t ext = dl[i] * (k[i] - 1) + 1, pb = pads[i], pe = pads[sp + i], out;
        if (same) {
            out = (in[i] + st[i] - 1) / st[i];
            int64_t tot = (out - 1) * st[i] + ext - in[i];
            if (tot < 0) tot = 0;
            pb = ap[5] == 'U' ? tot / 2 : tot - tot / 2;
            pe = tot - pb;
        } else {
            if (valid) pb = pe = 0;
            int64_t span = in[i] + pb + pe - ext; /* room for the window past its first place */
            if (span < 0) {
                out = 0;
            } else {
                out = span / st[i] + 1;
                if (ceil_mode && !valid && span % st[i]) {
                    out++;
                    if ((out - 1) * st[i] >= in[i] + pb) out--;
                }
            }
        }
        w->in[q] = in[i], w->k[q] = k[i], w->s[q] = st[i], w->d[q] = dl[i];
        w->pb[q] = pb, w->pe[q] = pe, w->out[q] = out;
    }
    return NULL;
}

og_status *cpu_conv_window(const kernel_ctx *ctx, int ix, int iw, int64_t *group,
                           cpu_window *w, int64_t *y_dims) {
    const tensor *x = ctx->inputs[ix], *wt = ctx->inputs[iw];
    int sp = x->rank - 2;
    if (sp < 1 || sp > 3 || wt->rank != x->rank)
        return kernel_errorf(ctx, OG_ERR_INVALID_ARGUMENT, "input %d has rank %d and input %d "
                             "rank %d; expected equal ranks of 3 to 5", ix, x->rank, iw,
                             wt->rank);
    int64_t g = graph_attr_int(ctx->node, "group", 1), C = x->dims[1], M = wt->dims[0];
    if (g < 1 || C % g || M % g || wt->dims[1] * g != C)
        return kernel_errorf(ctx, OG_ERR_INVALID_ARGUMENT, "input %d has shape [%lld,%lld,...] "
                             "which does not fit %lld input channels in %lld groups", iw,
                             (long long)M, (long long)wt->dims[1], (long long)C, (long long)g);
    int64_t ks[3];
    OG_TRY(cpu_attr_ints(ctx, "kernel_shape", sp, 0, ks));
    for (int i = 0; i < sp; i++)
        if (ks[i] && ks[i] != wt->dims[2 + i])
            return kernel_errorf(ctx, OG_ERR_INVALID_MODEL, "spatial dim %d: kernel_shape "
                                 "%lld but the weight has %lld", i, (long long)ks[i],
                                 (long long)wt->dims[2 + i]);
    OG_TRY(cpu_window_init(ctx, sp, x->dims + 2, wt->dims + 2, false, w));
    *group = g;
    y_dims[0] = x->dims[0], y_dims[1] = M;
    for (int i = 0; i < sp; i++) y_dims[2 + i] = w->out[3 - sp + i];
    return NULL;
}

void cpu_window_im2col32(const cpu_window *w, const void *x, void *col, int64_t o0a,
                         int64_t o0b, int64_t b, int64_t e) {
    int64_t ksz = w->k[0] * w->k[1] * w->k[2], isz = w->in[0] * w->in[1] * w->in[2];
    int64_t width = (o0b - o0a) * w->out[1] * w->out[2];
    const char *xb = x;
    for (int64_t r = b; r < e; r++) {
        int64_t c = r / ksz, t = r % ksz, t2 = t % w->k[2], t1 = t / w->k[2] % w->k[1];
        int64_t t0 = t / (w->k[2] * w->k[1]);
        const char *xc = xb + 4 * c * isz;
        char *out = (char *)col + 4 * r * width;
        for (int64_t o0 = o0a; o0 < o0b; o0++) {
            int64_t i0 = o0 * w->s[0] - w->pb[0] + t0 * w->d[0];
            for (int64_t o1 = 0; o1 < w->out[1]; o1++, out += 4 * w->out[2]) {
                int64_t i1 = o1 * w->s[1] - w->pb[1] + t1 * w->d[1];
                if (i0 < 0 || i0 >= w->in[0] || i1 < 0 || i1 >= w->in[1]) {
                    memset(out, 0, 4 * (size_t)w->out[2]);
                    continue;
                }
                const char *xr = xc + 4 * (i0 * w->in[1] + i1) * w->in[2];
                for (int64_t o2 = 0; o2 < w->out[2]; o2++) {
                    int64_t i2 = o2 * w->s[2] - w->pb[2] + t2 * w->d[2];
                    if (i2 >= 0 && i2 < w->in[2]) memcpy(out + 4 * o2, xr + 4 * i2, 4);
                    else memset(out + 4 * o2, 0, 4);
                }
            }
        }
    }
}
