#include "backends/native/kernels/window.h"

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
