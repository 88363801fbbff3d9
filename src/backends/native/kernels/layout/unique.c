/* Unique: the distinct elements of the flattened input, or the distinct slices along
 * `axis`, as numpy.unique (onnx's reference) finds them: ascending order (or, with
 * sorted = 0, order of first occurrence), with each one's first index, the inverse map
 * and the counts.
 *
 * The items (elements, or slices gathered into contiguous rows) are sorted by a stable
 * merge sort on their indices, compared element by element in the element type: floats
 * numerically with -0 == 0 and every NaN equal and after all numbers (numpy 2's
 * equal_nan), strings by their bytes (UTF-8 byte order is code point order). */
#include "backends/native/kernels/layout/layout.h"
#include "backends/native/kernels/layout/layout_util.h"

#include "base/half.h"

#include <math.h>
#include <string.h>

typedef struct uq_ctx {
    og_dtype dt;
    size_t es;
    int64_t row;       /* elements per item */
    const char *items; /* n items of row elements, contiguous */
} uq_ctx;

static int cmp_f(double a, double b) {
    bool na = isnan(a), nb = isnan(b);
    if (na || nb) return na - nb;
    return a < b ? -1 : a > b;
}

#define CMP_AS(T) return *(const T *)a < *(const T *)b ? -1 : *(const T *)a > *(const T *)b

static int cmp_elem(og_dtype dt, const void *a, const void *b) {
    switch (dt) {
    case OG_FLOAT32: return cmp_f(*(const float *)a, *(const float *)b);
    case OG_FLOAT64: return cmp_f(*(const double *)a, *(const double *)b);
    case OG_FLOAT16:
        return cmp_f(f16_to_f32(*(const uint16_t *)a), f16_to_f32(*(const uint16_t *)b));
    case OG_BFLOAT16:
        return cmp_f(bf16_to_f32(*(const uint16_t *)a), bf16_to_f32(*(const uint16_t *)b));
    case OG_INT8: CMP_AS(int8_t);
    case OG_INT16: CMP_AS(int16_t);
    case OG_INT32: CMP_AS(int32_t);
    case OG_INT64: CMP_AS(int64_t);
    case OG_UINT16: CMP_AS(uint16_t);
    case OG_UINT32: CMP_AS(uint32_t);
    case OG_UINT64: CMP_AS(uint64_t);
    case OG_STRING: {
        const og_string *p = a, *q = b;
        size_t n = p->size < q->size ? p->size : q->size;
        int c = n ? memcmp(p->data, q->data, n) : 0;
        if (c) return c < 0 ? -1 : 1;
        return p->size < q->size ? -1 : p->size > q->size;
    }
    default: CMP_AS(uint8_t); /* uint8, bool */
    }
}

static bool uq_dtype_ok(og_dtype dt) {
    return dt == OG_FLOAT32 || dt == OG_FLOAT64 || dt == OG_FLOAT16 || dt == OG_BFLOAT16 ||
           dt == OG_INT8 || dt == OG_INT16 || dt == OG_INT32 || dt == OG_INT64 ||
           dt == OG_UINT8 || dt == OG_UINT16 || dt == OG_UINT32 || dt == OG_UINT64 ||
           dt == OG_BOOL || dt == OG_STRING;
}

static int cmp_items(const void *arg, int64_t i, int64_t j) {
    const uq_ctx *c = arg;
    size_t bytes = (size_t)c->row * c->es;
    const char *a = c->items + (size_t)i * bytes, *b = c->items + (size_t)j * bytes;
    for (int64_t k = 0; k < c->row; k++) {
        int r = cmp_elem(c->dt, a + (size_t)k * c->es, b + (size_t)k * c->es);
        if (r) return r;
    }
    return 0;
}

/* first[i] order, for sorted = 0 */
static int cmp_first(const void *arg, int64_t i, int64_t j) {
    const int64_t *first = arg;
    return first[i] < first[j] ? -1 : first[i] > first[j];
}

/* Stable bottom-up merge sort of idx[0..n) by cmp (tmp: n entries). */
static void uq_sort(int (*cmp)(const void *, int64_t, int64_t), const void *c, int64_t *idx,
                    int64_t *tmp, int64_t n) {
    for (int64_t w = 1; w < n; w *= 2) {
        for (int64_t lo = 0; lo < n; lo += 2 * w) {
            int64_t mid = lo + w < n ? lo + w : n, hi = lo + 2 * w < n ? lo + 2 * w : n;
            int64_t a = lo, b = mid, o = lo;
            while (a < mid && b < hi) tmp[o++] = cmp(c, idx[b], idx[a]) < 0 ? idx[b++] : idx[a++];
            while (a < mid) tmp[o++] = idx[a++];
            while (b < hi) tmp[o++] = idx[b++];
        }
        memcpy(idx, tmp, sizeof *idx * (size_t)n);
    }
}

og_status *cpu_unique(kernel_ctx *ctx) {
    const tensor *x;
    size_t es;
    OG_TRY(layout_data(ctx, 1, &x, &es));
    if (!uq_dtype_ok(x->dtype)) return kernel_unsupported_dtype(ctx, 0, x->dtype);
    bool flat = !graph_attr_find(ctx->node, "axis");
    bool sorted = graph_attr_int(ctx->node, "sorted", 1) != 0;
    int axis = 0;
    if (!flat) OG_TRY(layout_axis(ctx, graph_attr_int(ctx->node, "axis", 0), x->rank, "axis", &axis));
    int64_t total = tensor_count(x), n = flat ? total : x->dims[axis];
    int64_t outer = flat ? 1 : shape_count(x->dims, axis);
    int64_t inner = flat ? 1 : shape_count(x->dims + axis + 1, x->rank - axis - 1);
    uq_ctx c = {x->dtype, es, outer * inner, x->data};
    /* slices along an axis: gathered into rows [n, outer, inner] */
    int64_t vd[3] = {outer, n, inner}, vst[3], td[3] = {n, outer, inner}, tst[3], src[3];
    if (!flat && outer > 1 && total) {
        char *rows;
        OG_TRY(kernel_scratch(ctx, (size_t)total * es, (void **)&rows));
        layout_strides(vd, 3, vst);
        layout_strides(td, 3, tst);
        src[0] = vst[1], src[1] = vst[0], src[2] = vst[2];
        layout_strided_copy(ctx->pool, rows, x->data, es, 3, td, tst, src);
        c.items = rows;
    }
    int64_t *idx, *tmp, *first, *inv, *cnt, *rank_of;
    size_t sz = sizeof(int64_t) * (size_t)(n ? n : 1);
    OG_TRY(kernel_scratch(ctx, 6 * sz, (void **)&idx));
    tmp = idx + n, first = tmp + n, inv = first + n, cnt = inv + n, rank_of = cnt + n;
    for (int64_t i = 0; i < n; i++) idx[i] = i;
    uq_sort(cmp_items, &c, idx, tmp, n);
    /* groups of equal items: first index (the smallest, the sort being stable), count */
    int64_t u = 0;
    for (int64_t k = 0; k < n; k++) {
        if (k == 0 || cmp_items(&c, idx[k - 1], idx[k]) != 0) first[u] = idx[k], cnt[u++] = 0;
        cnt[u - 1]++;
        inv[idx[k]] = u - 1;
    }
    /* order of the outputs (tmp): sorted, or by first occurrence (idx is free now) */
    for (int64_t g = 0; g < u; g++) tmp[g] = g;
    if (!sorted) uq_sort(cmp_first, first, tmp, idx, u);
    for (int64_t o = 0; o < u; o++) rank_of[tmp[o]] = o;
    int64_t dims[OG_MAX_RANK];
    int rank = flat ? 1 : x->rank;
    for (int i = 0; i < rank; i++) dims[i] = flat || i == axis ? u : x->dims[i];
    tensor *y;
    OG_TRY(kernel_output(ctx, 0, x->dtype, rank, dims, &y));
    size_t row_bytes = (size_t)inner * es;
    for (int64_t o = 0; o < u; o++) {
        int64_t it = first[tmp[o]];
        for (int64_t q = 0; q < outer; q++) /* slice `it` of x into position o along axis */
            memcpy((char *)y->data + ((size_t)(q * u + o)) * row_bytes,
                   (const char *)x->data + ((size_t)(q * n + it)) * row_bytes, row_bytes);
    }
    tensor *t;
    if (layout_output_wanted(ctx, 1)) {
        OG_TRY(kernel_output(ctx, 1, OG_INT64, 1, &u, &t));
        for (int64_t o = 0; o < u; o++) ((int64_t *)t->data)[o] = first[tmp[o]];
    }
    if (layout_output_wanted(ctx, 2)) {
        OG_TRY(kernel_output(ctx, 2, OG_INT64, 1, &n, &t));
        for (int64_t i = 0; i < n; i++) ((int64_t *)t->data)[i] = rank_of[inv[i]];
    }
    if (layout_output_wanted(ctx, 3)) {
        OG_TRY(kernel_output(ctx, 3, OG_INT64, 1, &u, &t));
        for (int64_t o = 0; o < u; o++) ((int64_t *)t->data)[o] = cnt[tmp[o]];
    }
    return NULL;
}
