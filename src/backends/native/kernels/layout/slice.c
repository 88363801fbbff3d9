/* Slice (opset 10+: starts/ends/axes/steps as inputs): a strided copy whose source
 * strides are step * stride, negative steps included. */
#include "backends/native/kernels/layout/layout.h"
#include "backends/native/kernels/layout/layout_util.h"

#include <string.h>

static int64_t clamp64(int64_t v, int64_t lo, int64_t hi) { return v < lo ? lo : v > hi ? hi : v; }

og_status *cpu_slice(kernel_ctx *ctx) {
    const tensor *x;
    size_t es;
    OG_TRY(layout_data(ctx, 3, &x, &es));
    int r = x->rank;
    int64_t starts[OG_MAX_RANK], ends[OG_MAX_RANK], axes[OG_MAX_RANK], steps[OG_MAX_RANK];
    int ns, ne, na, nst;
    OG_TRY(layout_read_ints(ctx, 1, "starts", starts, OG_MAX_RANK, &ns));
    OG_TRY(layout_read_ints(ctx, 2, "ends", ends, OG_MAX_RANK, &ne));
    na = nst = ns;
    if (kernel_input(ctx, 3)) OG_TRY(layout_read_ints(ctx, 3, "axes", axes, OG_MAX_RANK, &na));
    else for (int i = 0; i < ns; i++) axes[i] = i;
    if (kernel_input(ctx, 4)) OG_TRY(layout_read_ints(ctx, 4, "steps", steps, OG_MAX_RANK, &nst));
    else for (int i = 0; i < ns; i++) steps[i] = 1;
    if (ne != ns || na != ns || nst != ns)
        return kernel_errorf(ctx, OG_ERR_INVALID_ARGUMENT, "starts, ends, axes and steps have "
                             "%d, %d, %d and %d values; they must match", ns, ne, na, nst);
    int64_t dims[OG_MAX_RANK], st[OG_MAX_RANK], src_st[OG_MAX_RANK], first[OG_MAX_RANK] = {0};
    for (int i = 0; i < r; i++) dims[i] = x->dims[i];
    layout_strides(x->dims, r, st);
    memcpy(src_st, st, sizeof st);
    bool seen[OG_MAX_RANK] = {false};
    for (int k = 0; k < ns; k++) {
        int a;
        OG_TRY(layout_axis(ctx, axes[k], r, "axis", &a));
        if (seen[a]) return kernel_errorf(ctx, OG_ERR_INVALID_ARGUMENT, "axis %d is repeated", a);
        seen[a] = true;
        int64_t d = x->dims[a], step = steps[k], s = starts[k], e = ends[k], n = 0;
        if (step == 0) return kernel_errorf(ctx, OG_ERR_INVALID_ARGUMENT, "steps[%d] is 0", k);
        if (step == INT64_MIN) step = -INT64_MAX; /* same result, and -step is defined */
        if (s < 0) s += d;
        if (e < 0) e += d;
        if (step > 0) {
            s = clamp64(s, 0, d);
            e = clamp64(e, 0, d);
            if (e > s) n = (e - s - 1) / step + 1;
        } else {
            s = clamp64(s, 0, d - 1);
            e = clamp64(e, -1, d - 1);
            if (s > e) n = (s - e - 1) / -step + 1;
        }
        dims[a] = n;
        first[a] = s;
        src_st[a] = st[a] * step;
    }
    int64_t off = 0, dst_st[OG_MAX_RANK];
    for (int i = 0; i < r; i++) off += first[i] * st[i];
    layout_strides(dims, r, dst_st);
    tensor *y;
    OG_TRY(kernel_output(ctx, 0, x->dtype, r, dims, &y));
    if (tensor_count(y) > 0)
        layout_strided_copy(ctx->pool, y->data, (const char *)x->data + off * (int64_t)es, es,
                            r, dims, dst_st, src_st);
    return NULL;
}
