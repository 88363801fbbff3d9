/* Pad (opset 11+: pads, constant_value and, from 18, axes as inputs; modes constant,
 * reflect, edge and, from 19, wrap). Each axis gets a map from output to source index
 * (-1 = the constant); rows whose outer position maps to -1 are all constant, the rest
 * copy their interior with one memcpy and map the borders element by element. Negative
 * pads crop. */
#include "backends/native/kernels/layout/layout.h"
#include "backends/native/kernels/layout/layout_util.h"

#include <string.h>

enum { PAD_CONSTANT, PAD_REFLECT, PAD_EDGE, PAD_WRAP };

static int64_t pad_source(int mode, int64_t i, int64_t d) {
    if (i >= 0 && i < d) return i;
    switch (mode) {
    case PAD_EDGE: return i < 0 ? 0 : d - 1;
    case PAD_WRAP: return ((i % d) + d) % d;
    case PAD_REFLECT: {
        if (d == 1) return 0;
        int64_t p = 2 * (d - 1);
        i = ((i % p) + p) % p;
        return i < d ? i : p - i;
    }
    default: return -1;
    }
}

typedef struct pad_job {
    char *dst;
    const char *src;
    size_t es;
    int r;
    int64_t odims[OG_MAX_RANK], ist[OG_MAX_RANK], pb_last;
    int64_t *map[OG_MAX_RANK];
    const void *value;
} pad_job;

static void pad_rows(void *arg, int64_t begin, int64_t end) {
    const pad_job *j = arg;
    int last = j->r - 1;
    int64_t n = j->odims[last], es = (int64_t)j->es;
    /* interior of the last axis: output [lo, hi) reads source [lo - pb, hi - pb) */
    int64_t lo = -1, hi = -1;
    for (int64_t o = 0; o < n; o++)
        if (j->map[last][o] >= 0 && j->map[last][o] == o - j->pb_last) {
            if (lo < 0) lo = o;
            hi = o + 1;
        }
    for (int64_t row = begin; row < end; row++) {
        char *out = j->dst + row * n * es;
        int64_t off = 0, u = row;
        for (int i = last - 1; i >= 0 && off >= 0; i--) {
            int64_t s = j->map[i][u % j->odims[i]];
            u /= j->odims[i];
            off = s < 0 ? -1 : off + s * j->ist[i];
        }
        if (off < 0) {
            layout_fill(out, j->value, j->es, n);
            continue;
        }
        const char *in = j->src + off * es;
        for (int64_t o = 0; o < n; o++) {
            if (o == lo) {
                memcpy(out + o * es, in + (o - j->pb_last) * es, (size_t)((hi - lo) * es));
                o = hi - 1;
                continue;
            }
            int64_t s = j->map[last][o];
            memcpy(out + o * es, s < 0 ? j->value : in + s * es, j->es);
        }
    }
}

og_status *cpu_pad(kernel_ctx *ctx) {
    const tensor *x;
    size_t es;
    OG_TRY(layout_data(ctx, 2, &x, &es));
    const tensor *cv = kernel_input(ctx, 2);
    int r = x->rank;
    if (r == 0) return layout_copy_as(ctx, 0, x->dims);
    const char *mode_s = graph_attr_string(ctx->node, "mode", "constant");
    static const char *const modes[] = {"constant", "reflect", "edge", "wrap"};
    int mode = -1;
    for (int i = 0; i < 4; i++)
        if (strcmp(mode_s, modes[i]) == 0) mode = i;
    if (mode < 0 || (mode == PAD_WRAP && ctx->opset < 19))
        return kernel_errorf(ctx, OG_ERR_INVALID_MODEL, "mode '%s' is not defined at opset %lld",
                             mode_s, (long long)ctx->opset);
    int64_t pads[2 * OG_MAX_RANK], axes[OG_MAX_RANK];
    int np, na = r;
    OG_TRY(layout_read_ints(ctx, 1, "pads", pads, 2 * OG_MAX_RANK, &np));
    if (ctx->opset >= 18 && kernel_input(ctx, 3))
        OG_TRY(layout_read_ints(ctx, 3, "axes", axes, OG_MAX_RANK, &na));
    else
        for (int i = 0; i < r; i++) axes[i] = i;
    if (np != 2 * na)
        return kernel_errorf(ctx, OG_ERR_INVALID_ARGUMENT, "pads has %d values for %d axes",
                             np, na);
    int64_t pb[OG_MAX_RANK] = {0}, pe[OG_MAX_RANK] = {0};
    for (int k = 0; k < na; k++) {
        int a;
        OG_TRY(layout_axis(ctx, axes[k], r, "axis", &a));
        pb[a] = pads[k];
        pe[a] = pads[na + k];
    }
    pad_job j = {.src = x->data, .es = es, .r = r};
    int64_t zero[2] = {0, 0};
    j.value = zero;
    if (cv && tensor_count(cv) > 0) {
        if (cv->dtype != x->dtype)
            return kernel_errorf(ctx, OG_ERR_INVALID_ARGUMENT, "constant_value has dtype %s, "
                                 "data %s", og_dtype_name(cv->dtype), og_dtype_name(x->dtype));
        j.value = cv->data;
    }
    layout_strides(x->dims, r, j.ist);
    for (int i = 0; i < r; i++) {
        int64_t d = x->dims[i], o = d + pb[i] + pe[i];
        if (o < 0)
            return kernel_errorf(ctx, OG_ERR_INVALID_ARGUMENT, "pads %lld, %lld on axis %d of "
                                 "size %lld give a negative size", (long long)pb[i],
                                 (long long)pe[i], i, (long long)d);
        if (d == 0 && o > 0 && mode != PAD_CONSTANT)
            return kernel_errorf(ctx, OG_ERR_INVALID_ARGUMENT, "mode '%s' cannot pad the empty "
                                 "axis %d", mode_s, i);
        j.odims[i] = o;
    }
    tensor *y;
    OG_TRY(kernel_output(ctx, 0, x->dtype, r, j.odims, &y));
    if (tensor_count(y) == 0) return NULL;
    for (int i = 0; i < r; i++) {
        OG_TRY(kernel_scratch(ctx, sizeof(int64_t) * (size_t)j.odims[i], (void **)&j.map[i]));
        for (int64_t o = 0; o < j.odims[i]; o++)
            j.map[i][o] = pad_source(mode, o - pb[i], x->dims[i]);
    }
    j.pb_last = pb[r - 1];
    j.dst = y->data;
    int64_t rows = tensor_count(y) / j.odims[r - 1];
    threadpool_parallel_for(ctx->pool, rows, 1 + 16384 / (j.odims[r - 1] * (int64_t)es),
                            pad_rows, &j);
    return NULL;
}
