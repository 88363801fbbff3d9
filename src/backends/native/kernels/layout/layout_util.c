#include "backends/native/kernels/layout/layout_util.h"

#include "base/half.h"

#include <math.h>
#include <string.h>

og_status *layout_data(const kernel_ctx *ctx, int min_inputs, const tensor **x, size_t *es) {
    OG_TRY(kernel_require_inputs(ctx, min_inputs));
    *x = ctx->inputs[0];
    *es = dtype_size((*x)->dtype);
    if (*es == 0) return kernel_unsupported_dtype(ctx, 0, (*x)->dtype);
    return NULL;
}

og_status *layout_check_index_dtype(const kernel_ctx *ctx, int input, const char *what) {
    og_dtype dt = ctx->inputs[input]->dtype;
    if (dt == OG_INT32 || dt == OG_INT64) return NULL;
    return kernel_errorf(ctx, OG_ERR_UNSUPPORTED, "input %d (%s) has dtype %s, expected int32 "
                         "or int64", input, what, og_dtype_name(dt));
}

og_status *layout_read_ints(const kernel_ctx *ctx, int input, const char *what, int64_t *vals,
                            int max, int *n) {
    const tensor *t = ctx->inputs[input];
    OG_TRY(layout_check_index_dtype(ctx, input, what));
    if (t->rank > 1)
        return kernel_errorf(ctx, OG_ERR_INVALID_ARGUMENT, "input %d (%s) has rank %d, expected "
                             "a 1-D tensor", input, what, t->rank);
    int64_t count = tensor_count(t);
    if (count > max)
        return kernel_errorf(ctx, OG_ERR_UNSUPPORTED, "input %d (%s) has %lld values, at most "
                             "%d are supported", input, what, (long long)count, max);
    for (int64_t i = 0; i < count; i++) vals[i] = layout_index_at(t, i);
    *n = (int)count;
    return NULL;
}

og_status *layout_axis(const kernel_ctx *ctx, int64_t axis, int rank, const char *what,
                       int *out) {
    if (axis < -rank || axis >= rank)
        return kernel_errorf(ctx, OG_ERR_INVALID_ARGUMENT, "%s %lld is outside [%d, %d) for "
                             "rank %d", what, (long long)axis, -rank, rank, rank);
    *out = (int)(axis < 0 ? axis + rank : axis);
    return NULL;
}

og_status *layout_fix_index(const kernel_ctx *ctx, int input, int64_t pos, int64_t *idx,
                            int64_t bound) {
    int64_t v = *idx;
    if (v < -bound || v >= bound)
        return kernel_errorf(ctx, OG_ERR_INVALID_ARGUMENT, "input %d holds index %lld at "
                             "position %lld, outside the bound [-%lld, %lld)", input,
                             (long long)v, (long long)pos, (long long)bound, (long long)bound);
    if (v < 0) *idx = v + bound;
    return NULL;
}

og_status *layout_indices(kernel_ctx *ctx, int input, int64_t bound, int64_t **out) {
    const tensor *idx = ctx->inputs[input];
    OG_TRY(layout_check_index_dtype(ctx, input, "indices"));
    int64_t n = tensor_count(idx);
    OG_TRY(kernel_scratch(ctx, sizeof(int64_t) * (size_t)(n ? n : 1), (void **)out));
    for (int64_t i = 0; i < n; i++) {
        (*out)[i] = layout_index_at(idx, i);
        OG_TRY(layout_fix_index(ctx, input, i, &(*out)[i], bound));
    }
    return NULL;
}

void layout_strides(const int64_t *dims, int rank, int64_t *strides) {
    int64_t s = 1;
    for (int i = rank - 1; i >= 0; i--) {
        strides[i] = s;
        s *= dims[i];
    }
}

void layout_fill(void *dst, const void *val, size_t es, int64_t n) {
#define FILL_AS(T)                                                                       \
    {                                                                                    \
        T v;                                                                             \
        memcpy(&v, val, sizeof v);                                                       \
        T *d = (T *)dst;                                                                 \
        for (int64_t i = 0; i < n; i++) d[i] = v;                                        \
        return;                                                                          \
    }
    switch (es) {
    case 1: memset(dst, *(const uint8_t *)val, (size_t)n); return;
    case 2: FILL_AS(uint16_t)
    case 4: FILL_AS(uint32_t)
    case 8: FILL_AS(uint64_t)
    default:
        for (int64_t i = 0; i < n; i++) memcpy((char *)dst + (size_t)i * es, val, es);
    }
#undef FILL_AS
}

/* One innermost run: n elements, strides in elements. */
static void copy_run(char *d, const char *s, size_t es, int64_t n, int64_t ds, int64_t ss) {
    if (ds == 1 && ss == 1) {
        memcpy(d, s, (size_t)n * es);
        return;
    }
    if (ds == 1 && ss == 0) {
        layout_fill(d, s, es, n);
        return;
    }
#define RUN_AS(T)                                                                        \
    {                                                                                    \
        T *D = (T *)d;                                                                   \
        const T *S = (const T *)s;                                                       \
        for (int64_t i = 0; i < n; i++) D[i * ds] = S[i * ss];                           \
        return;                                                                          \
    }
    switch (es) {
    case 1: RUN_AS(uint8_t)
    case 2: RUN_AS(uint16_t)
    case 4: RUN_AS(uint32_t)
    case 8: RUN_AS(uint64_t)
    default:
        for (int64_t i = 0; i < n; i++)
            memcpy(d + i * ds * (int64_t)es, s + i * ss * (int64_t)es, es);
    }
#undef RUN_AS
}

enum { SC_MAX = 16, SC_BLOCK = 32 };

typedef struct sc_job {
    char *dst;
    const char *src;
    size_t es;
    int rank, outer_rank; /* outer_rank: dims enumerated per work unit */
    int64_t dims[SC_MAX], dst_st[SC_MAX], src_st[SC_MAX];
    int64_t blocks; /* transpose mode: row blocks per outer position */
    int64_t chunk;  /* row mode: elements of the innermost run per work unit */
} sc_job;

/* Byte offsets of outer position u (over dims[0..outer_rank)). */
static void sc_offsets(const sc_job *j, int64_t u, int64_t *doff, int64_t *soff) {
    int64_t d = 0, s = 0;
    for (int i = j->outer_rank - 1; i >= 0; i--) {
        int64_t k = u % j->dims[i];
        u /= j->dims[i];
        d += k * j->dst_st[i];
        s += k * j->src_st[i];
    }
    *doff = d * (int64_t)j->es;
    *soff = s * (int64_t)j->es;
}

/* Work unit u = (row, chunk of the innermost run), so that a few long rows (Concat
 * along axis 0, Expand of a scalar) still spread over the pool. */
static void sc_rows(void *arg, int64_t begin, int64_t end) {
    const sc_job *j = arg;
    int r = j->rank - 1;
    int64_t chunks = (j->dims[r] + j->chunk - 1) / j->chunk, es = (int64_t)j->es;
    for (int64_t u = begin; u < end; u++) {
        int64_t d, s, c0 = (u % chunks) * j->chunk;
        int64_t n = j->dims[r] - c0 < j->chunk ? j->dims[r] - c0 : j->chunk;
        sc_offsets(j, u / chunks, &d, &s);
        copy_run(j->dst + d + c0 * j->dst_st[r] * es, j->src + s + c0 * j->src_st[r] * es,
                 j->es, n, j->dst_st[r], j->src_st[r]);
    }
}

/* (Batched) 2-D transpose: the last dim is contiguous in dst, the one before it in
 * src. Copy in SC_BLOCK x SC_BLOCK tiles so both sides stay in cache; the element loop
 * is typed per size (a generic call per tile row costs 3x). */
#define TILE_AS(T)                                                                       \
    for (int64_t c0 = 0; c0 < cols; c0 += SC_BLOCK) {                                    \
        int64_t c1 = c0 + SC_BLOCK < cols ? c0 + SC_BLOCK : cols;                        \
        for (int64_t i = i0; i < i1; i++) {                                              \
            T *D = (T *)(j->dst + d) + i * drs;                                          \
            const T *S = (const T *)(j->src + s) + i;                                    \
            for (int64_t c = c0; c < c1; c++) D[c] = S[c * scs];                         \
        }                                                                                \
    }                                                                                    \
    break;

static void sc_tiles(void *arg, int64_t begin, int64_t end) {
    const sc_job *j = arg;
    int r = j->rank;
    int64_t rows = j->dims[r - 2], cols = j->dims[r - 1];
    int64_t drs = j->dst_st[r - 2], scs = j->src_st[r - 1];
    int64_t es = (int64_t)j->es;
    for (int64_t u = begin; u < end; u++) {
        int64_t d, s;
        sc_offsets(j, u / j->blocks, &d, &s);
        int64_t i0 = (u % j->blocks) * SC_BLOCK, i1 = i0 + SC_BLOCK < rows ? i0 + SC_BLOCK : rows;
        switch (es) {
        case 1: TILE_AS(uint8_t)
        case 2: TILE_AS(uint16_t)
        case 4: TILE_AS(uint32_t)
        case 8: TILE_AS(uint64_t)
        default:
            for (int64_t i = i0; i < i1; i++)
                copy_run(j->dst + d + i * drs * es, j->src + s + i * es, j->es, cols, 1, scs);
        }
    }
}
#undef TILE_AS

void layout_strided_copy(threadpool *pool, void *dst, const void *src, size_t es, int rank,
                         const int64_t *dims, const int64_t *dst_st, const int64_t *src_st) {
    sc_job j = {.dst = dst, .src = src, .es = es};
    int r = 0;
    for (int i = 0; i < rank; i++) {
        if (dims[i] == 0) return;
        if (dims[i] == 1) continue;
        if (r > 0 && j.dst_st[r - 1] == dst_st[i] * dims[i] &&
            j.src_st[r - 1] == src_st[i] * dims[i]) {
            j.dims[r - 1] *= dims[i];
            j.dst_st[r - 1] = dst_st[i];
            j.src_st[r - 1] = src_st[i];
            continue;
        }
        j.dims[r] = dims[i];
        j.dst_st[r] = dst_st[i];
        j.src_st[r] = src_st[i];
        r++;
    }
    if (r == 0) {
        memcpy(dst, src, es);
        return;
    }
    j.rank = r;
    if (r >= 2 && j.dst_st[r - 1] == 1 && j.src_st[r - 2] == 1 && j.src_st[r - 1] != 0 &&
        j.dims[r - 1] >= 8 && j.dims[r - 2] >= 8) {
        j.outer_rank = r - 2;
        j.blocks = (j.dims[r - 2] + SC_BLOCK - 1) / SC_BLOCK;
        int64_t units = j.blocks;
        for (int i = 0; i < r - 2; i++) units *= j.dims[i];
        int64_t unit_bytes = SC_BLOCK * j.dims[r - 1] * (int64_t)es;
        threadpool_parallel_for(pool, units, 1 + 65536 / unit_bytes, sc_tiles, &j);
        return;
    }
    j.outer_rank = r - 1;
    int64_t rows = 1;
    for (int i = 0; i < r - 1; i++) rows *= j.dims[i];
    j.chunk = 1 + (1 << 20) / (int64_t)es;
    int64_t chunks = (j.dims[r - 1] + j.chunk - 1) / j.chunk;
    int64_t unit_bytes = (chunks > 1 ? j.chunk : j.dims[r - 1]) * (int64_t)es;
    threadpool_parallel_for(pool, rows * chunks, 1 + 65536 / unit_bytes, sc_rows, &j);
}

typedef struct memcpy_job {
    char *dst;
    const char *src;
    size_t n, chunk;
} memcpy_job;

static void memcpy_chunks(void *arg, int64_t begin, int64_t end) {
    const memcpy_job *j = arg;
    for (int64_t c = begin; c < end; c++) {
        size_t off = (size_t)c * j->chunk;
        size_t len = j->n - off < j->chunk ? j->n - off : j->chunk;
        memcpy(j->dst + off, j->src + off, len);
    }
}

void layout_memcpy(threadpool *pool, void *dst, const void *src, size_t n) {
    if (n == 0 || dst == src) return;
    enum { CHUNK = 1 << 20 };
    if (n < 4 * (size_t)CHUNK || !pool) {
        memcpy(dst, src, n);
        return;
    }
    memcpy_job j = {dst, src, n, CHUNK};
    threadpool_parallel_for(pool, (int64_t)((n + CHUNK - 1) / CHUNK), 1, memcpy_chunks, &j);
}

og_status *layout_copy_as(kernel_ctx *ctx, int rank, const int64_t *dims) {
    const tensor *x = ctx->inputs[0];
    tensor *y;
    OG_TRY(kernel_output(ctx, 0, x->dtype, rank, dims, &y));
    if (y->nbytes != x->nbytes)
        return kernel_errorf(ctx, OG_ERR_RUNTIME, "output holds %zu bytes, input %zu",
                             y->nbytes, x->nbytes);
    /* the generator may bind an output over its input (a loop-carried value written in
     * place): nothing to move then */
    if (y->data != x->data) layout_memcpy(ctx->pool, y->data, x->data, x->nbytes);
    return NULL;
}

/* ---- Scatter reductions ---------------------------------------------------------- */

/* Integer arithmetic wraps (through uint64) instead of overflowing. */
#define INT_COMBINERS(sfx, T)                                                            \
    static void add_##sfx(void *d, const void *s) {                                      \
        *(T *)d = (T)((uint64_t) * (T *)d + (uint64_t) * (const T *)s);                  \
    }                                                                                    \
    static void mul_##sfx(void *d, const void *s) {                                      \
        *(T *)d = (T)((uint64_t) * (T *)d * (uint64_t) * (const T *)s);                  \
    }                                                                                    \
    static void max_##sfx(void *d, const void *s) {                                      \
        if (*(const T *)s > *(T *)d) *(T *)d = *(const T *)s;                            \
    }                                                                                    \
    static void min_##sfx(void *d, const void *s) {                                      \
        if (*(const T *)s < *(T *)d) *(T *)d = *(const T *)s;                            \
    }

/* Floats go through `W` (float or double); LOAD/STORE convert the storage type. NaN
 * propagates through max/min as numpy's maximum/minimum do. */
#define FLOAT_COMBINERS(sfx, T, W, LOAD, STORE)                                          \
    static void add_##sfx(void *d, const void *s) {                                      \
        *(T *)d = STORE(LOAD(*(T *)d) + LOAD(*(const T *)s));                            \
    }                                                                                    \
    static void mul_##sfx(void *d, const void *s) {                                      \
        *(T *)d = STORE(LOAD(*(T *)d) * LOAD(*(const T *)s));                            \
    }                                                                                    \
    static void max_##sfx(void *d, const void *s) {                                      \
        W a = LOAD(*(T *)d), b = LOAD(*(const T *)s);                                    \
        if (b > a || isnan(b)) *(T *)d = *(const T *)s;                                  \
    }                                                                                    \
    static void min_##sfx(void *d, const void *s) {                                      \
        W a = LOAD(*(T *)d), b = LOAD(*(const T *)s);                                    \
        if (b < a || isnan(b)) *(T *)d = *(const T *)s;                                  \
    }

#define SAME(x) (x)
INT_COMBINERS(i8, int8_t)
INT_COMBINERS(u8, uint8_t)
INT_COMBINERS(i16, int16_t)
INT_COMBINERS(u16, uint16_t)
INT_COMBINERS(i32, int32_t)
INT_COMBINERS(u32, uint32_t)
INT_COMBINERS(i64, int64_t)
INT_COMBINERS(u64, uint64_t)
FLOAT_COMBINERS(f32, float, float, SAME, SAME)
FLOAT_COMBINERS(f64, double, double, SAME, SAME)
FLOAT_COMBINERS(f16, uint16_t, float, f16_to_f32, f32_to_f16)
FLOAT_COMBINERS(bf16, uint16_t, float, bf16_to_f32, f32_to_bf16)

#define COMBINER_ROW(dt, sfx) {dt, {add_##sfx, mul_##sfx, max_##sfx, min_##sfx}}
static const struct {
    og_dtype dtype;
    layout_combine_fn fn[4];
} combiners[] = {
    COMBINER_ROW(OG_INT8, i8),     COMBINER_ROW(OG_UINT8, u8),    COMBINER_ROW(OG_INT16, i16),
    COMBINER_ROW(OG_UINT16, u16),  COMBINER_ROW(OG_INT32, i32),   COMBINER_ROW(OG_UINT32, u32),
    COMBINER_ROW(OG_INT64, i64),   COMBINER_ROW(OG_UINT64, u64),  COMBINER_ROW(OG_FLOAT32, f32),
    COMBINER_ROW(OG_FLOAT64, f64), COMBINER_ROW(OG_FLOAT16, f16), COMBINER_ROW(OG_BFLOAT16, bf16),
};

og_status *layout_combiner(const kernel_ctx *ctx, og_dtype dtype, const char *reduction,
                           layout_combine_fn *fn) {
    static const char *const names[4] = {"add", "mul", "max", "min"};
    *fn = NULL;
    if (strcmp(reduction, "none") == 0) return NULL;
    int op = -1;
    for (int i = 0; i < 4; i++)
        if (strcmp(reduction, names[i]) == 0) op = i;
    if (op < 0)
        return kernel_errorf(ctx, OG_ERR_INVALID_MODEL, "reduction '%s' is not one of none, "
                             "add, mul, max, min", reduction);
    for (size_t i = 0; i < sizeof combiners / sizeof combiners[0]; i++)
        if (combiners[i].dtype == dtype) {
            *fn = combiners[i].fn[op];
            return NULL;
        }
    return kernel_errorf(ctx, OG_ERR_UNSUPPORTED, "reduction '%s' on dtype %s is not "
                         "implemented", reduction, og_dtype_name(dtype));
}
