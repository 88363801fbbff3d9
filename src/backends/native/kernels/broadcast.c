#include "backends/native/kernels/broadcast.h"

#include "base/tensor.h"

#include <string.h>

og_status *broadcast_shape(const int64_t *a, int ra, const int64_t *b, int rb, int64_t *out,
                           int *rout) {
    int r = ra > rb ? ra : rb;
    for (int i = 0; i < r; i++) {
        int ia = i - (r - ra), ib = i - (r - rb);
        int64_t da = ia >= 0 ? a[ia] : 1, db = ib >= 0 ? b[ib] : 1;
        if (da == db || db == 1) out[i] = da;
        else if (da == 1) out[i] = db;
        else {
            char sa[128], sb[128];
            return og_errorf(OG_ERR_INVALID_ARGUMENT, "shapes %s and %s cannot be broadcast",
                             shape_str(a, ra, sa, sizeof sa), shape_str(b, rb, sb, sizeof sb));
        }
    }
    *rout = r;
    return NULL;
}

void broadcast_strides(const int64_t *in, int rin, const int64_t *out, int rout,
                       int64_t *strides) {
    int64_t s = 1;
    for (int i = rout - 1; i >= 0; i--) {
        int k = i - (rout - rin);
        if (k < 0 || in[k] == 1) {
            strides[i] = 0;
            if (k >= 0) s *= in[k];
        } else {
            strides[i] = s;
            s *= in[k];
        }
        (void)out;
    }
}

void bcast_iter_init(bcast_iter *it, int n, const int64_t *const *in, const int *rin,
                     const int64_t *out, int rout) {
    memset(it, 0, sizeof *it);
    it->n = n;
    /* Merge adjacent output dimensions where every input is either contiguous across
     * both or broadcast across both: fewer, longer runs. */
    int64_t full[BCAST_MAX_OPERANDS][8];
    for (int k = 0; k < n; k++) broadcast_strides(in[k], rin[k], out, rout, full[k]);
    int r = 0;
    int64_t dims[8];
    int64_t st[BCAST_MAX_OPERANDS][8];
    for (int i = 0; i < rout; i++) {
        if (out[i] == 1 && rout > 1) continue; /* size-1 dims change nothing */
        bool merge = r > 0;
        for (int k = 0; merge && k < n; k++) {
            int64_t prev = st[k][r - 1], cur = full[k][i];
            if (!((prev == 0 && cur == 0) || (prev == cur * out[i] && cur != 0)))
                merge = false;
        }
        if (merge) {
            dims[r - 1] *= out[i];
            for (int k = 0; k < n; k++) st[k][r - 1] = full[k][i];
        } else {
            dims[r] = out[i];
            for (int k = 0; k < n; k++) st[k][r] = full[k][i];
            r++;
        }
    }
    if (r == 0) {
        dims[0] = 1;
        for (int k = 0; k < n; k++) st[k][0] = 0;
        r = 1;
    }
    it->rank = r;
    memcpy(it->dims, dims, sizeof(int64_t) * (size_t)r);
    for (int k = 0; k < n; k++) memcpy(it->strides[k], st[k], sizeof(int64_t) * (size_t)r);
    it->inner = dims[r - 1];
    for (int k = 0; k < n; k++) it->inner_stride[k] = st[k][r - 1];
    int64_t rows = 1;
    for (int i = 0; i < r - 1; i++) rows *= dims[i];
    it->rows = shape_count(out, rout) == 0 ? 0 : rows;
}

void bcast_iter_row(const bcast_iter *it, int64_t row, int64_t *offsets) {
    for (int k = 0; k < it->n; k++) offsets[k] = 0;
    for (int i = it->rank - 2; i >= 0; i--) {
        int64_t idx = row % it->dims[i];
        row /= it->dims[i];
        for (int k = 0; k < it->n; k++) offsets[k] += idx * it->strides[k][i];
    }
}
