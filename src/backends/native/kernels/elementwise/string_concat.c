/* StringConcat: X[i] followed by Y[i], broadcast as the arithmetic ops are. The new
 * strings are written into memory held for the run: one pass sizes every output
 * string, a prefix sum places them, a second pass copies the bytes (in parallel: each
 * element owns its place). */
#include "backends/native/kernels/elementwise/elementwise.h"

#include <string.h>

static void concat_sizes(char *const *p, const int64_t *s, int64_t n, const void *param) {
    (void)param;
    const og_string *x = (const og_string *)p[1], *y = (const og_string *)p[2];
    og_string *o = (og_string *)p[0];
    for (int64_t i = 0; i < n; i++) o[i] = (og_string){NULL, x[i * s[1]].size + y[i * s[2]].size};
}

static void concat_bytes(char *const *p, const int64_t *s, int64_t n, const void *param) {
    (void)param;
    const og_string *x = (const og_string *)p[1], *y = (const og_string *)p[2];
    og_string *o = (og_string *)p[0];
    for (int64_t i = 0; i < n; i++) {
        const og_string *a = &x[i * s[1]], *b = &y[i * s[2]];
        char *d = (char *)o[i].data;
        if (a->size) memcpy(d, a->data, a->size);
        if (b->size) memcpy(d + a->size, b->data, b->size);
    }
}

og_status *cpu_string_concat(kernel_ctx *ctx) {
    OG_TRY(kernel_require_inputs(ctx, 2));
    const tensor *in[2] = {ctx->inputs[0], ctx->inputs[1]};
    for (int k = 0; k < 2; k++)
        if (in[k]->dtype != OG_STRING) return kernel_unsupported_dtype(ctx, k, in[k]->dtype);
    int64_t dims[OG_MAX_RANK];
    int rank;
    tensor *y;
    OG_TRY(cpu_ew_shape(ctx, 2, in, dims, &rank));
    OG_TRY(kernel_output(ctx, 0, OG_STRING, rank, dims, &y));
    OG_TRY(cpu_ew_run(ctx, y, 2, in, concat_sizes, NULL, EW_GRAIN));
    int64_t n = tensor_count(y);
    og_string *v = y->data;
    size_t total = 0;
    for (int64_t i = 0; i < n; i++) {
        if (v[i].size > SIZE_MAX - total)
            return kernel_error(ctx, OG_ERR_INVALID_ARGUMENT, "the joined strings exceed the "
                                "address space");
        total += v[i].size;
    }
    char *bytes;
    OG_TRY(kernel_hold(ctx, total, (void **)&bytes));
    for (int64_t i = 0; i < n; i++) {
        v[i].data = v[i].size ? bytes : NULL;
        bytes += v[i].size;
    }
    return cpu_ew_run(ctx, y, 2, in, concat_bytes, NULL, EW_GRAIN);
}
