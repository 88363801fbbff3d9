/* Gather, GatherElements and GatherND. Indices (int32 or int64, negative counting from
 * the end) are validated up front into an int64 scratch array, so the copy loops can
 * never read outside the data. */
#include "backends/native/kernels/layout/layout.h"
#include "backends/native/kernels/layout/layout_util.h"

#include <string.h>

/* Copies `count` blocks of `bytes`: dst block b <- src + off[b] * bytes. */
typedef struct block_job {
    char *dst;
    const char *src;
    const int64_t *off;
    size_t bytes;
} block_job;

static void copy_blocks(void *arg, int64_t begin, int64_t end) {
    const block_job *j = arg;
    for (int64_t b = begin; b < end; b++)
        memcpy(j->dst + (size_t)b * j->bytes, j->src + (size_t)j->off[b] * j->bytes, j->bytes);
}

static void run_blocks(kernel_ctx *ctx, void *dst, const void *src, const int64_t *off,
                       int64_t count, size_t bytes) {
    block_job j = {dst, src, off, bytes};
    threadpool_parallel_for(ctx->pool, count, 1 + (int64_t)(32768 / (bytes + 1)), copy_blocks, &j);
}

og_status *cpu_gather(kernel_ctx *ctx) {
    const tensor *x;
    size_t es;
    int axis;
    int64_t *idx;
    OG_TRY(layout_data(ctx, 2, &x, &es));
    const tensor *ind = ctx->inputs[1];
    int64_t n = tensor_count(ind);
    OG_TRY(layout_axis(ctx, graph_attr_int(ctx->node, "axis", 0), x->rank, "axis", &axis));
    OG_TRY(layout_indices(ctx, 1, x->dims[axis], &idx));
    int r = x->rank - 1 + ind->rank;
    if (r > OG_MAX_RANK)
        return kernel_errorf(ctx, OG_ERR_UNSUPPORTED, "output rank %d exceeds %d", r, OG_MAX_RANK);
    int64_t dims[OG_MAX_RANK];
    int k = 0;
    for (int i = 0; i < axis; i++) dims[k++] = x->dims[i];
    for (int i = 0; i < ind->rank; i++) dims[k++] = ind->dims[i];
    for (int i = axis + 1; i < x->rank; i++) dims[k++] = x->dims[i];
    tensor *y;
    OG_TRY(kernel_output(ctx, 0, x->dtype, r, dims, &y));
    int64_t outer = shape_count(x->dims, axis);
    int64_t inner = shape_count(x->dims + axis + 1, x->rank - axis - 1), d = x->dims[axis];
    if (outer * n * inner == 0) return NULL;
    /* Block offsets (in units of one inner row) for every (outer, index) pair. */
    int64_t *off = idx;
    if (outer > 1) {
        OG_TRY(kernel_scratch(ctx, sizeof(int64_t) * (size_t)(outer * n), (void **)&off));
        for (int64_t o = 0; o < outer; o++)
            for (int64_t j = 0; j < n; j++) off[o * n + j] = o * d + idx[j];
    }
    run_blocks(ctx, y->data, x->data, off, outer * n, (size_t)inner * es);
    return NULL;
}

/* Shared by GatherElements and ScatterElements: the element offset into data of each
 * index position (indices rank == data rank, dims within data's outside `axis`). */
og_status *layout_elements_offsets(kernel_ctx *ctx, const tensor *data, const tensor *ind,
                                   int axis, int64_t **off) {
    int r = data->rank;
    bool ok = ind->rank == r;
    for (int i = 0; ok && i < r; i++) ok = i == axis || ind->dims[i] <= data->dims[i];
    if (!ok) {
        char a[160], b[160];
        return kernel_errorf(ctx, OG_ERR_INVALID_ARGUMENT, "indices %s do not fit data %s",
                             shape_str(ind->dims, ind->rank, a, sizeof a),
                             shape_str(data->dims, r, b, sizeof b));
    }
    int64_t n = tensor_count(ind), st[OG_MAX_RANK];
    OG_TRY(layout_indices(ctx, 1, data->dims[axis], off));
    layout_strides(data->dims, r, st);
    for (int64_t p = 0; p < n; p++) {
        int64_t o = 0, u = p;
        for (int i = r - 1; i >= 0; i--) {
            int64_t c = u % ind->dims[i];
            u /= ind->dims[i];
            o += (i == axis ? (*off)[p] : c) * st[i];
        }
        (*off)[p] = o;
    }
    return NULL;
}

og_status *cpu_gather_elements(kernel_ctx *ctx) {
    const tensor *x;
    size_t es;
    int axis;
    int64_t *off;
    OG_TRY(layout_data(ctx, 2, &x, &es));
    const tensor *ind = ctx->inputs[1];
    OG_TRY(layout_axis(ctx, graph_attr_int(ctx->node, "axis", 0), x->rank, "axis", &axis));
    OG_TRY(layout_elements_offsets(ctx, x, ind, axis, &off));
    tensor *y;
    OG_TRY(kernel_output(ctx, 0, x->dtype, ind->rank, ind->dims, &y));
    run_blocks(ctx, y->data, x->data, off, tensor_count(ind), es);
    return NULL;
}

/* Shared by GatherND and ScatterND: the element offset into data of each index tuple
 * (indices [..., k] over data dims [b, b + k) within batch (tuple / per_batch)). */
og_status *layout_nd_offsets(kernel_ctx *ctx, const tensor *data, const tensor *ind, int b,
                             int64_t **off, int64_t *count, int64_t *slice) {
    int q = ind->rank, r = data->rank;
    if (q < 1) return kernel_error(ctx, OG_ERR_INVALID_ARGUMENT, "indices must have rank >= 1");
    int64_t k = ind->dims[q - 1];
    if (b < 0 || b >= q || b > r || k > r - b)
        return kernel_errorf(ctx, OG_ERR_INVALID_ARGUMENT, "index tuples of length %lld with "
                             "batch_dims %d do not fit data of rank %d and indices of rank %d",
                             (long long)k, b, r, q);
    for (int i = 0; i < b; i++)
        if (ind->dims[i] != data->dims[i])
            return kernel_errorf(ctx, OG_ERR_INVALID_ARGUMENT, "batch dim %d is %lld in indices "
                                 "but %lld in data", i, (long long)ind->dims[i],
                                 (long long)data->dims[i]);
    OG_TRY(layout_check_index_dtype(ctx, 1, "indices"));
    int64_t st[OG_MAX_RANK];
    layout_strides(data->dims, r, st);
    *count = shape_count(ind->dims, q - 1);
    *slice = shape_count(data->dims + b + k, r - b - (int)k);
    int64_t per_batch = shape_count(ind->dims + b, q - 1 - b);
    int64_t batch_st = b > 0 ? st[b - 1] : 0;
    OG_TRY(kernel_scratch(ctx, sizeof(int64_t) * (size_t)(*count ? *count : 1), (void **)off));
    for (int64_t t = 0; t < *count; t++) {
        int64_t o = (t / per_batch) * batch_st;
        for (int64_t i = 0; i < k; i++) {
            int64_t v = layout_index_at(ind, t * k + i);
            OG_TRY(layout_fix_index(ctx, 1, t * k + i, &v, data->dims[b + i]));
            o += v * st[b + i];
        }
        (*off)[t] = o / (*slice ? *slice : 1);
    }
    return NULL;
}

og_status *cpu_gather_nd(kernel_ctx *ctx) {
    const tensor *x;
    size_t es;
    OG_TRY(layout_data(ctx, 2, &x, &es));
    const tensor *ind = ctx->inputs[1];
    int b = ctx->opset >= 12 ? (int)graph_attr_int(ctx->node, "batch_dims", 0) : 0;
    int64_t *off, count, slice;
    OG_TRY(layout_nd_offsets(ctx, x, ind, b, &off, &count, &slice));
    int64_t dims[OG_MAX_RANK];
    int r = 0, k = (int)ind->dims[ind->rank - 1];
    for (int i = 0; i < ind->rank - 1; i++) dims[r++] = ind->dims[i];
    for (int i = b + k; i < x->rank; i++) {
        if (r == OG_MAX_RANK) return kernel_error(ctx, OG_ERR_UNSUPPORTED, "output rank too large");
        dims[r++] = x->dims[i];
    }
    tensor *y;
    OG_TRY(kernel_output(ctx, 0, x->dtype, r, dims, &y));
    if (slice > 0) run_blocks(ctx, y->data, x->data, off, count, (size_t)slice * es);
    return NULL;
}
