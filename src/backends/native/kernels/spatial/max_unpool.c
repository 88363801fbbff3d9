/* MaxUnpool (opsets 9, 11 on): scatters X into a zero tensor at the flat positions that
 * MaxPool's Indices output recorded. The unpooled shape per spatial dim is
 * (in - 1) * stride + kernel - pad_begin - pad_end; indices address that shape. With
 * output_shape (input 2) the result has that shape and the unpooled block sits at its
 * start (ONNX's reference places it so; the extra positions are zeros). */
#include "backends/native/kernels/spatial/spatial.h"

#include "backends/native/kernels/kernel_util.h"
#include "backends/native/kernels/spatial/window.h"

#include <string.h>

og_status *cpu_max_unpool(kernel_ctx *ctx) {
    OG_TRY(kernel_require_inputs(ctx, 2));
    const tensor *x = ctx->inputs[0], *ind = ctx->inputs[1], *oshape = kernel_input(ctx, 2);
    int r = x->rank, sp = r - 2;
    if (sp < 1 || sp > 3)
        return kernel_errorf(ctx, OG_ERR_UNSUPPORTED, "input 0 has rank %d; ranks 3 to 5 are "
                             "implemented", r);
    if (ind->dtype != OG_INT64 || tensor_count(ind) != tensor_count(x))
        return kernel_errorf(ctx, OG_ERR_INVALID_ARGUMENT, "input 1 (indices) must be int64 "
                             "with as many elements as input 0 (%lld)",
                             (long long)tensor_count(x));
    size_t esz = dtype_size(x->dtype);
    if (esz == 0) return kernel_unsupported_dtype(ctx, 0, x->dtype);
    const int64_t *ks;
    if (graph_attr_ints(ctx->node, "kernel_shape", &ks) != sp)
        return kernel_errorf(ctx, OG_ERR_INVALID_MODEL, "attribute 'kernel_shape' must have %d "
                             "values", sp);
    int64_t st[3], pads[6], inner[OG_MAX_RANK] = {x->dims[0], x->dims[1]};
    OG_TRY(cpu_attr_ints(ctx, "strides", sp, 1, st));
    OG_TRY(cpu_attr_ints(ctx, "pads", 2 * sp, 0, pads));
    for (int i = 0; i < sp; i++) {
        inner[2 + i] = (x->dims[2 + i] - 1) * st[i] + ks[i] - pads[i] - pads[sp + i];
        if (inner[2 + i] < 0)
            return kernel_errorf(ctx, OG_ERR_INVALID_ARGUMENT, "spatial dim %d: the unpooled "
                                 "extent is %lld", i, (long long)inner[2 + i]);
    }
    int64_t od[OG_MAX_RANK];
    memcpy(od, inner, sizeof od);
    if (oshape) {
        if (oshape->dtype != OG_INT64 || tensor_count(oshape) != r)
            return kernel_errorf(ctx, OG_ERR_INVALID_ARGUMENT, "input 2 (output_shape) must be "
                                 "%d int64 values", r);
        for (int i = 0; i < r; i++) {
            od[i] = ((const int64_t *)oshape->data)[i];
            if (od[i] < inner[i])
                return kernel_errorf(ctx, OG_ERR_INVALID_ARGUMENT, "output_shape[%d] is %lld, "
                                     "smaller than the unpooled extent %lld", i,
                                     (long long)od[i], (long long)inner[i]);
        }
    }
    tensor *y;
    OG_TRY(kernel_output(ctx, 0, x->dtype, r, od, &y));
    if (y->nbytes) memset(y->data, 0, y->nbytes);
    int64_t n = tensor_count(x), total = cpu_dims_prod(inner, 0, r);
    const int64_t *iv = ind->data;
    int64_t ostr[OG_MAX_RANK];
    ostr[r - 1] = 1;
    for (int d = r - 2; d >= 0; d--) ostr[d] = ostr[d + 1] * od[d + 1];
    for (int64_t i = 0; i < n; i++) {
        if (iv[i] < 0 || iv[i] >= total)
            return kernel_errorf(ctx, OG_ERR_INVALID_ARGUMENT, "indices[%lld] is %lld, outside "
                                 "the %lld unpooled positions", (long long)i, (long long)iv[i],
                                 (long long)total);
        int64_t off = cpu_offset_of(iv[i], r, inner, ostr); /* position in the output */
        memcpy((char *)y->data + (size_t)off * esz, (const char *)x->data + (size_t)i * esz, esz);
    }
    return NULL;
}
