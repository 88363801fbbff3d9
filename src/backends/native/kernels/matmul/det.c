/* Det: the determinant of each [M, M] matrix of a [*, M, M] input, by LU decomposition
 * with partial pivoting in double (numpy.linalg.det, the reference, factors with
 * LAPACK's getrf the same way), rounded once to the element type. A 0x0 matrix has
 * determinant 1. */
#include "backends/native/kernels/matmul/matmul.h"
#include "backends/native/kernels/kernel_util.h"

#include <math.h>
#include <string.h>

typedef struct det_job {
    const double *a; /* batches of m*m, row-major */
    double *work;    /* one m*m matrix per batch */
    double *det;
    int64_t m;
} det_job;

static void det_batches(void *arg, int64_t b, int64_t e) {
    const det_job *j = arg;
    int64_t m = j->m;
    for (int64_t t = b; t < e; t++) {
        double *a = j->work + t * m * m, d = 1;
        memcpy(a, j->a + t * m * m, sizeof *a * (size_t)(m * m));
        for (int64_t k = 0; k < m && d != 0; k++) {
            int64_t p = k;
            for (int64_t i = k + 1; i < m; i++)
                if (fabs(a[i * m + k]) > fabs(a[p * m + k])) p = i;
            if (a[p * m + k] == 0) {
                d = 0;
                break;
            }
            if (p != k) {
                for (int64_t c = 0; c < m; c++) {
                    double v = a[k * m + c];
                    a[k * m + c] = a[p * m + c], a[p * m + c] = v;
                }
                d = -d;
            }
            double piv = a[k * m + k];
            d *= piv;
            for (int64_t i = k + 1; i < m; i++) {
                double f = a[i * m + k] / piv;
                for (int64_t c = k + 1; c < m; c++) a[i * m + c] -= f * a[k * m + c];
            }
        }
        j->det[t] = d;
    }
}

og_status *cpu_det(kernel_ctx *ctx) {
    OG_TRY(kernel_require_inputs(ctx, 1));
    const tensor *x = ctx->inputs[0];
    if (!cpu_is_float(x->dtype)) return kernel_unsupported_dtype(ctx, 0, x->dtype);
    int r = x->rank;
    if (r < 2 || x->dims[r - 1] != x->dims[r - 2]) {
        char a[96];
        return kernel_errorf(ctx, OG_ERR_INVALID_ARGUMENT, "input 0 has shape %s, expected "
                             "[*, M, M]", shape_str(x->dims, r, a, sizeof a));
    }
    tensor *y;
    OG_TRY(kernel_output(ctx, 0, x->dtype, r - 2, x->dims, &y));
    det_job j = {.m = x->dims[r - 1]};
    int64_t batch = tensor_count(y);
    if (batch == 0) return NULL;
    double *a;
    OG_TRY(cpu_in_f64(ctx, x, 0, &a));
    j.a = a;
    OG_TRY(kernel_scratch(ctx, sizeof(double) * (size_t)(batch * (j.m * j.m + 1)),
                          (void **)&j.work));
    j.det = j.work + batch * j.m * j.m;
    threadpool_parallel_for(ctx->pool, batch, 1 + 4096 / (j.m * j.m * j.m + 1), det_batches, &j);
    cpu_store_f64(y, j.det);
    return NULL;
}
