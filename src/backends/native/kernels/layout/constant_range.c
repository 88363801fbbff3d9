/* Ops that make data: ConstantOfShape, Constant, Range, Trilu, NonZero. */
#include "backends/native/kernels/layout/layout.h"
#include "backends/native/kernels/layout/layout_util.h"

#include "base/half.h"

#include <math.h>
#include <string.h>

og_status *cpu_constant_of_shape(kernel_ctx *ctx) {
    OG_TRY(kernel_require_inputs(ctx, 1));
    int64_t dims[OG_MAX_RANK];
    int n;
    OG_TRY(layout_read_ints(ctx, 0, "shape", dims, OG_MAX_RANK, &n));
    const tensor *v = graph_attr_tensor(ctx->node, "value");
    float zero = 0;
    og_dtype dt = OG_FLOAT32;
    const void *val = &zero;
    if (v) {
        if (tensor_count(v) != 1 || dtype_size(v->dtype) == 0)
            return kernel_errorf(ctx, OG_ERR_UNSUPPORTED, "value must be one element of a "
                                 "byte-sized dtype (got %lld of %s)",
                                 (long long)tensor_count(v), og_dtype_name(v->dtype));
        dt = v->dtype;
        val = v->data;
    }
    tensor *y;
    OG_TRY(kernel_output(ctx, 0, dt, n, dims, &y));
    layout_fill(y->data, val, dtype_size(dt), tensor_count(y));
    return NULL;
}

og_status *cpu_constant(kernel_ctx *ctx) {
    const graph_node *node = ctx->node;
    const tensor *t = graph_attr_tensor(node, "value");
    const int64_t *ints;
    const float *floats;
    int64_t n;
    tensor *y;
    if (t) {
        OG_TRY(kernel_output(ctx, 0, t->dtype, t->rank, t->dims, &y));
        if (t->nbytes) memcpy(y->data, t->data, t->nbytes);
        return NULL;
    }
    if (graph_attr_find(node, "value_float") || graph_attr_find(node, "value_int")) {
        bool is_f = graph_attr_find(node, "value_float") != NULL;
        OG_TRY(kernel_output(ctx, 0, is_f ? OG_FLOAT32 : OG_INT64, 0, NULL, &y));
        if (is_f) *(float *)y->data = graph_attr_float(node, "value_float", 0);
        else *(int64_t *)y->data = graph_attr_int(node, "value_int", 0);
        return NULL;
    }
    if ((n = graph_attr_floats(node, "value_floats", &floats)) >= 0) {
        OG_TRY(kernel_output(ctx, 0, OG_FLOAT32, 1, &n, &y));
        if (n) memcpy(y->data, floats, sizeof(float) * (size_t)n);
        return NULL;
    }
    if ((n = graph_attr_ints(node, "value_ints", &ints)) >= 0) {
        OG_TRY(kernel_output(ctx, 0, OG_INT64, 1, &n, &y));
        if (n) memcpy(y->data, ints, sizeof(int64_t) * (size_t)n);
        return NULL;
    }
    return kernel_error(ctx, OG_ERR_UNSUPPORTED, "only the value, value_float(s) and "
                        "value_int(s) attributes are implemented (not sparse or string values)");
}

og_status *cpu_range(kernel_ctx *ctx) {
    OG_TRY(kernel_require_inputs(ctx, 3));
    og_dtype dt = ctx->inputs[0]->dtype;
    for (int i = 0; i < 3; i++) {
        if (ctx->inputs[i]->dtype != dt || tensor_count(ctx->inputs[i]) != 1)
            return kernel_errorf(ctx, OG_ERR_INVALID_ARGUMENT, "input %d must be a scalar of "
                                 "dtype %s", i, og_dtype_name(dt));
    }
    bool is_int = dt == OG_INT16 || dt == OG_INT32 || dt == OG_INT64;
    bool is_float = dt == OG_FLOAT32 || dt == OG_FLOAT64 || dt == OG_FLOAT16 || dt == OG_BFLOAT16;
    if (!is_int && !is_float) return kernel_unsupported_dtype(ctx, 0, dt);
    int64_t n = 0, s = 0, d = 0;
    double fs = 0, fd = 0;
    if (is_int) {
        s = tensor_get_i64(ctx->inputs[0], 0);
        int64_t l = tensor_get_i64(ctx->inputs[1], 0);
        d = tensor_get_i64(ctx->inputs[2], 0);
        if (d == 0) return kernel_error(ctx, OG_ERR_INVALID_ARGUMENT, "delta is 0");
        /* unsigned differences cannot overflow */
        if (d > 0 && l > s) n = (int64_t)(((uint64_t)l - (uint64_t)s - 1) / (uint64_t)d) + 1;
        if (d < 0 && l < s)
            n = (int64_t)(((uint64_t)s - (uint64_t)l - 1) / (0 - (uint64_t)d)) + 1;
    } else {
        fs = tensor_get_f64(ctx->inputs[0], 0);
        fd = tensor_get_f64(ctx->inputs[2], 0);
        double c = fd == 0 ? NAN : ceil((tensor_get_f64(ctx->inputs[1], 0) - fs) / fd);
        if (!(c < 9e15))
            return kernel_errorf(ctx, OG_ERR_INVALID_ARGUMENT, "start %g, limit %g, delta %g "
                                 "give no finite length", fs,
                                 tensor_get_f64(ctx->inputs[1], 0), fd);
        n = c > 0 ? (int64_t)c : 0;
    }
    tensor *y;
    OG_TRY(kernel_output(ctx, 0, dt, 1, &n, &y));
    for (int64_t i = 0; i < n; i++) {
        int64_t iv = (int64_t)((uint64_t)s + (uint64_t)i * (uint64_t)d);
        double fv = fs + (double)i * fd;
        switch (dt) {
        case OG_INT16: ((int16_t *)y->data)[i] = (int16_t)iv; break;
        case OG_INT32: ((int32_t *)y->data)[i] = (int32_t)iv; break;
        case OG_INT64: ((int64_t *)y->data)[i] = iv; break;
        case OG_FLOAT32: ((float *)y->data)[i] = (float)fv; break;
        case OG_FLOAT64: ((double *)y->data)[i] = fv; break;
        case OG_FLOAT16: ((uint16_t *)y->data)[i] = f32_to_f16((float)fv); break;
        default: ((uint16_t *)y->data)[i] = f32_to_bf16((float)fv); break;
        }
    }
    return NULL;
}

og_status *cpu_trilu(kernel_ctx *ctx) {
    const tensor *x;
    size_t es;
    OG_TRY(layout_data(ctx, 1, &x, &es));
    if (x->rank < 2)
        return kernel_errorf(ctx, OG_ERR_INVALID_ARGUMENT, "input 0 has rank %d, expected >= 2",
                             x->rank);
    int64_t k = 0, m = x->dims[x->rank - 2], nc = x->dims[x->rank - 1];
    if (kernel_input(ctx, 1)) {
        int nk;
        OG_TRY(layout_read_ints(ctx, 1, "k", &k, 1, &nk));
        if (nk != 1) return kernel_error(ctx, OG_ERR_INVALID_ARGUMENT, "k must be one value");
    }
    if (k > m + nc) k = m + nc;
    if (k < -(m + nc)) k = -(m + nc);
    bool upper = graph_attr_int(ctx->node, "upper", 1) != 0;
    tensor *y;
    OG_TRY(kernel_output(ctx, 0, x->dtype, x->rank, x->dims, &y));
    int64_t rows = m && nc ? tensor_count(x) / nc : 0;
    for (int64_t row = 0; row < rows; row++) {
        int64_t i = row % m;
        /* kept columns [a, b): upper keeps j >= i + k, lower keeps j <= i + k */
        int64_t a = upper ? i + k : 0, b = upper ? nc : i + k + 1;
        a = a < 0 ? 0 : a > nc ? nc : a;
        b = b < a ? a : b > nc ? nc : b;
        char *d = (char *)y->data + (size_t)(row * nc) * es;
        const char *s = (const char *)x->data + (size_t)(row * nc) * es;
        memset(d, 0, (size_t)a * es);
        memcpy(d + a * (int64_t)es, s + a * (int64_t)es, (size_t)(b - a) * es);
        memset(d + b * (int64_t)es, 0, (size_t)(nc - b) * es);
    }
    return NULL;
}

/* Non-zero test on raw bytes; for floats -0.0 counts as zero, NaN as non-zero; a string
 * is non-zero when it is not empty (numpy's truth of a str, as in the reference). */
static bool elem_nonzero(const char *p, size_t es, og_dtype dt) {
    if (dt == OG_STRING) return ((const og_string *)(const void *)p)->size != 0;
    bool is_f = dt == OG_FLOAT32 || dt == OG_FLOAT64 || dt == OG_FLOAT16 || dt == OG_BFLOAT16;
    uint64_t v = 0;
    memcpy(&v, p, es < 8 ? es : 8); /* little-endian */
    if (is_f) v &= ~((uint64_t)1 << (es * 8 - 1));
    return v != 0;
}

og_status *cpu_nonzero(kernel_ctx *ctx) {
    const tensor *x;
    size_t es;
    OG_TRY(layout_data(ctx, 1, &x, &es));
    if (es > 8 && x->dtype != OG_STRING) return kernel_unsupported_dtype(ctx, 0, x->dtype);
    int64_t n = tensor_count(x), nnz = 0;
    const char *p = x->data;
    for (int64_t i = 0; i < n; i++) nnz += elem_nonzero(p + (size_t)i * es, es, x->dtype);
    int64_t dims[2] = {x->rank, nnz}, c[OG_MAX_RANK] = {0};
    tensor *y;
    OG_TRY(kernel_output(ctx, 0, OG_INT64, 2, dims, &y));
    int64_t *out = y->data, k = 0;
    for (int64_t i = 0; i < n; i++) {
        if (elem_nonzero(p + (size_t)i * es, es, x->dtype)) {
            for (int a = 0; a < x->rank; a++) out[a * nnz + k] = c[a];
            k++;
        }
        for (int a = x->rank - 1; a >= 0; a--) {
            if (++c[a] < x->dims[a]) break;
            c[a] = 0;
        }
    }
    return NULL;
}
