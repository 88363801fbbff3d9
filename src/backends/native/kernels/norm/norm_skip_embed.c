/* com.microsoft SkipLayerNormalization and EmbedLayerNormalization: a residual sum or an
 * embedding sum followed by layer normalization over the last dimension, with the sum
 * itself as an optional extra output. Statistics are accumulated in double per row. */
#include "backends/native/kernels/norm/norm.h"

#include <string.h>

/* ---------- SkipLayerNormalization ---------- */

typedef struct skip_job {
    const float *x, *skip, *gamma, *beta, *bias;
    float *sum, *y, *mean, *inv;
    int64_t h, skip_rows;
    float eps;
} skip_job;

static void skip_rows_fn(void *arg, int64_t b, int64_t e) {
    const skip_job *j = arg;
    int64_t h = j->h;
    for (int64_t r = b; r < e; r++) {
        const float *x = j->x + r * h, *s = j->skip + (r % j->skip_rows) * h;
        float *sum = j->sum + r * h;
        cpu_row_add(sum, x, s, j->bias, h);
        cpu_layer_norm_row(sum, h, j->gamma, j->beta, j->eps, j->y + r * h,
                          j->mean ? j->mean + r : NULL, j->inv ? j->inv + r : NULL);
    }
}

/* A 1-D parameter of length h of the same dtype as the input, or absent. */
static og_status *vec_param(kernel_ctx *ctx, int index, const char *what, og_dtype dt,
                            int64_t h, bool required, const float **out) {
    const tensor *p = kernel_input(ctx, index);
    *out = NULL;
    if (!p) {
        if (required)
            return kernel_errorf(ctx, OG_ERR_INVALID_MODEL, "required input %d (%s) is "
                                 "missing", index, what);
        return NULL;
    }
    if (p->dtype != dt)
        return kernel_errorf(ctx, OG_ERR_INVALID_ARGUMENT, "input %d (%s) is %s, expected %s",
                             index, what, og_dtype_name(p->dtype), og_dtype_name(dt));
    if (p->rank != 1 || p->dims[0] != h) {
        char a[96];
        return kernel_errorf(ctx, OG_ERR_INVALID_ARGUMENT, "input %d (%s) has shape %s, "
                             "expected [%lld]", index, what,
                             shape_str(p->dims, p->rank, a, sizeof a), (long long)h);
    }
    return cpu_in_f32(ctx, index, out);
}

og_status *cpu_contrib_skip_layer_norm(kernel_ctx *ctx) {
    OG_TRY(kernel_require_inputs(ctx, 3));
    const tensor *x = ctx->inputs[0], *skip = ctx->inputs[1];
    og_dtype dt = x->dtype;
    if (!cpu_is_f32able(dt)) return kernel_unsupported_dtype(ctx, 0, dt);
    char a[96], b[96];
    if (x->rank != 2 && x->rank != 3)
        return kernel_errorf(ctx, OG_ERR_INVALID_ARGUMENT, "input 0 has shape %s, expected "
                             "rank 3 (batch, sequence, hidden) or 2",
                             shape_str(x->dims, x->rank, a, sizeof a));
    if (skip->dtype != dt)
        return kernel_errorf(ctx, OG_ERR_INVALID_ARGUMENT, "input 1 (skip) is %s, but input "
                             "is %s", og_dtype_name(skip->dtype), og_dtype_name(dt));
    int64_t h = x->dims[x->rank - 1], rows = tensor_count(x) / (h ? h : 1);
    if (h == 0) rows = shape_count(x->dims, x->rank - 1);
    /* skip is the input's shape, or one batch of it: (1, S, H) or (S, H) */
    int64_t skip_rows = 0;
    bool same = skip->rank == x->rank &&
                memcmp(skip->dims, x->dims, sizeof(int64_t) * (size_t)x->rank) == 0;
    if (same) {
        skip_rows = rows;
    } else if (x->rank == 3 &&
               ((skip->rank == 3 && skip->dims[0] == 1 && skip->dims[1] == x->dims[1] &&
                 skip->dims[2] == h) ||
                (skip->rank == 2 && skip->dims[0] == x->dims[1] && skip->dims[1] == h))) {
        skip_rows = x->dims[1];
    } else {
        return kernel_errorf(ctx, OG_ERR_INVALID_ARGUMENT, "input 1 (skip) has shape %s, "
                             "expected the input's shape %s, or (1, S, H) or (S, H)",
                             shape_str(skip->dims, skip->rank, a, sizeof a),
                             shape_str(x->dims, x->rank, b, sizeof b));
    }
    skip_job j = {.h = h, .skip_rows = skip_rows,
                  .eps = graph_attr_float(ctx->node, "epsilon", 1e-12f)};
    OG_TRY(vec_param(ctx, 2, "gamma", dt, h, true, &j.gamma));
    OG_TRY(vec_param(ctx, 3, "beta", dt, h, false, &j.beta));
    OG_TRY(vec_param(ctx, 4, "bias", dt, h, false, &j.bias));

    tensor *y, *mean = NULL, *inv = NULL, *sum = NULL;
    OG_TRY(kernel_output(ctx, 0, dt, x->rank, x->dims, &y));
    int64_t sdims[OG_MAX_RANK];
    memcpy(sdims, x->dims, sizeof(int64_t) * (size_t)x->rank);
    sdims[x->rank - 1] = 1;
    if (cpu_wants_output(ctx, 1)) OG_TRY(kernel_output(ctx, 1, OG_FLOAT32, x->rank, sdims, &mean));
    if (cpu_wants_output(ctx, 2)) OG_TRY(kernel_output(ctx, 2, OG_FLOAT32, x->rank, sdims, &inv));
    if (cpu_wants_output(ctx, 3)) OG_TRY(kernel_output(ctx, 3, dt, x->rank, x->dims, &sum));
    if (rows == 0) return NULL;
    OG_TRY(cpu_in_f32(ctx, 0, &j.x));
    OG_TRY(cpu_in_f32(ctx, 1, &j.skip));
    OG_TRY(cpu_out_f32(ctx, y, &j.y));
    if (sum)
        OG_TRY(cpu_out_f32(ctx, sum, &j.sum));
    else
        OG_TRY(kernel_scratch(ctx, (size_t)(rows * h) * sizeof(float) + 1, (void **)&j.sum));
    j.mean = mean ? mean->data : NULL;
    j.inv = inv ? inv->data : NULL;
    threadpool_parallel_for(ctx->pool, rows, h > 0 ? 1 + 16384 / (h + 1) : rows, skip_rows_fn, &j);
    cpu_out_f32_done(y, j.y);
    if (sum) cpu_out_f32_done(sum, j.sum);
    return NULL;
}

/* ---------- EmbedLayerNormalization ---------- */

typedef struct embed_job {
    const void *ids, *seg, *pos;
    bool ids64, seg64, pos64;
    int64_t pos_batch;    /* rows of position_ids: B, or 1 (shared), or 0 (use s) */
    const float *word, *position, *segment, *gamma, *beta;
    int64_t n_word, n_pos, n_seg, s, h;
    float *sum, *y, eps;
    int bad;              /* set when an index was out of range */
} embed_job;

static inline int64_t id_at(const void *p, bool is64, int64_t i) {
    return is64 ? ((const int64_t *)p)[i] : ((const int32_t *)p)[i];
}

static void embed_rows_fn(void *arg, int64_t b, int64_t e) {
    embed_job *j = arg;
    int64_t h = j->h;
    for (int64_t r = b; r < e; r++) {
        int64_t w = id_at(j->ids, j->ids64, r), bi = r / j->s, si = r % j->s;
        int64_t p = j->pos_batch == 0 ? si
                    : id_at(j->pos, j->pos64, (j->pos_batch == 1 ? 0 : bi) * j->s + si);
        int64_t g = j->seg ? id_at(j->seg, j->seg64, r) : 0;
        float *sum = j->sum + r * h;
        if (w < 0 || w >= j->n_word || p < 0 || p >= j->n_pos || (j->seg && (g < 0 || g >= j->n_seg))) {
            __atomic_store_n(&j->bad, 1, __ATOMIC_RELAXED);
            for (int64_t i = 0; i < h; i++) sum[i] = j->y[r * h + i] = 0.0f;
            continue;
        }
        const float *wv = j->word + w * h, *pv = j->position + p * h;
        cpu_row_add(sum, wv, pv, j->seg ? j->segment + g * h : NULL, h);
        cpu_layer_norm_row(sum, h, j->gamma, j->beta, j->eps, j->y + r * h, NULL, NULL);
    }
}

static og_status *ids_input(kernel_ctx *ctx, int index, const char *what, const tensor **out) {
    const tensor *t = kernel_input(ctx, index);
    *out = t;
    if (t && t->dtype != OG_INT32 && t->dtype != OG_INT64)
        return kernel_errorf(ctx, OG_ERR_INVALID_ARGUMENT, "input %d (%s) is %s, expected "
                             "int32", index, what, og_dtype_name(t->dtype));
    return NULL;
}

static og_status *table_input(kernel_ctx *ctx, int index, const char *what, og_dtype dt,
                              int64_t h, int64_t *rows) {
    const tensor *t = kernel_input(ctx, index);
    char a[96];
    if (t->dtype != dt)
        return kernel_errorf(ctx, OG_ERR_INVALID_ARGUMENT, "input %d (%s) is %s, expected %s",
                             index, what, og_dtype_name(t->dtype), og_dtype_name(dt));
    if (t->rank != 2 || t->dims[1] != h)
        return kernel_errorf(ctx, OG_ERR_INVALID_ARGUMENT, "input %d (%s) has shape %s, "
                             "expected (rows, %lld)", index, what,
                             shape_str(t->dims, t->rank, a, sizeof a), (long long)h);
    *rows = t->dims[0];
    return NULL;
}

og_status *cpu_contrib_embed_layer_norm(kernel_ctx *ctx) {
    if (!kernel_input(ctx, 0) || !kernel_input(ctx, 2) || !kernel_input(ctx, 3) ||
        !kernel_input(ctx, 5))
        return kernel_error(ctx, OG_ERR_INVALID_MODEL, "input_ids (input 0), word_embedding "
                            "(2), position_embedding (3) and gamma (5) are required");
    const tensor *ids, *seg, *mask, *pos;
    OG_TRY(ids_input(ctx, 0, "input_ids", &ids));
    OG_TRY(ids_input(ctx, 1, "segment_ids", &seg));
    OG_TRY(ids_input(ctx, 7, "mask", &mask));
    OG_TRY(ids_input(ctx, 8, "position_ids", &pos));
    const tensor *word = ctx->inputs[2];
    og_dtype dt = word->dtype;
    if (!cpu_is_f32able(dt)) return kernel_unsupported_dtype(ctx, 2, dt);
    char a[96], b[96];
    if (ids->rank != 2)
        return kernel_errorf(ctx, OG_ERR_INVALID_ARGUMENT, "input 0 (input_ids) has shape %s, "
                             "expected (batch, sequence)",
                             shape_str(ids->dims, ids->rank, a, sizeof a));
    int64_t B = ids->dims[0], S = ids->dims[1], h = word->rank == 2 ? word->dims[1] : -1;
    embed_job j = {.ids = ids->data, .ids64 = ids->dtype == OG_INT64, .s = S, .h = h,
                   .eps = graph_attr_float(ctx->node, "epsilon", 1e-12f)};
    OG_TRY(table_input(ctx, 2, "word_embedding", dt, h, &j.n_word));
    OG_TRY(table_input(ctx, 3, "position_embedding", dt, h, &j.n_pos));
    const tensor *segemb = kernel_input(ctx, 4);
    if ((seg != NULL) != (segemb != NULL))
        return kernel_error(ctx, OG_ERR_INVALID_MODEL, "segment_ids (input 1) and "
                            "segment_embedding (input 4) must be given together");
    if (seg) {
        OG_TRY(table_input(ctx, 4, "segment_embedding", dt, h, &j.n_seg));
        if (seg->rank != 2 || seg->dims[0] != B || seg->dims[1] != S)
            return kernel_errorf(ctx, OG_ERR_INVALID_ARGUMENT, "input 1 (segment_ids) has "
                                 "shape %s, expected input_ids' shape %s",
                                 shape_str(seg->dims, seg->rank, a, sizeof a),
                                 shape_str(ids->dims, ids->rank, b, sizeof b));
        j.seg = seg->data;
        j.seg64 = seg->dtype == OG_INT64;
    }
    if (mask && (mask->rank != 2 || mask->dims[0] != B || mask->dims[1] != S))
        return kernel_errorf(ctx, OG_ERR_INVALID_ARGUMENT, "input 7 (mask) has shape %s, "
                             "expected input_ids' shape %s",
                             shape_str(mask->dims, mask->rank, a, sizeof a),
                             shape_str(ids->dims, ids->rank, b, sizeof b));
    if (pos) {
        if (pos->rank != 2 || (pos->dims[0] != B && pos->dims[0] != 1) || pos->dims[1] != S)
            return kernel_errorf(ctx, OG_ERR_INVALID_ARGUMENT, "input 8 (position_ids) has "
                                 "shape %s, expected (%lld, %lld) or (1, %lld)",
                                 shape_str(pos->dims, pos->rank, a, sizeof a), (long long)B,
                                 (long long)S, (long long)S);
        j.pos = pos->data;
        j.pos64 = pos->dtype == OG_INT64;
        j.pos_batch = pos->dims[0] == B ? B : 1;
        if (B == 1) j.pos_batch = 1;
    }
    OG_TRY(vec_param(ctx, 5, "gamma", dt, h, true, &j.gamma));
    OG_TRY(vec_param(ctx, 6, "beta", dt, h, false, &j.beta));

    int64_t odims[3] = {B, S, h};
    tensor *y, *mi = NULL, *sum = NULL;
    OG_TRY(kernel_output(ctx, 0, dt, 3, odims, &y));
    if (cpu_wants_output(ctx, 1)) OG_TRY(kernel_output(ctx, 1, OG_INT32, 1, &B, &mi));
    if (cpu_wants_output(ctx, 2)) OG_TRY(kernel_output(ctx, 2, dt, 3, odims, &sum));
    if (mi) {
        /* the count of mask entries equal to 1 per sequence (0 without a mask), as the
         * reference runtime computes it */
        int32_t *m = mi->data;
        for (int64_t bi = 0; bi < B; bi++) {
            int32_t c = 0;
            for (int64_t si = 0; mask && si < S; si++)
                c += id_at(mask->data, mask->dtype == OG_INT64, bi * S + si) == 1;
            m[bi] = c;
        }
    }
    int64_t rows = B * S;
    if (rows == 0) return NULL;
    OG_TRY(cpu_in_f32(ctx, 2, &j.word));
    OG_TRY(cpu_in_f32(ctx, 3, &j.position));
    if (seg) OG_TRY(cpu_in_f32(ctx, 4, &j.segment));
    OG_TRY(cpu_out_f32(ctx, y, &j.y));
    if (sum)
        OG_TRY(cpu_out_f32(ctx, sum, &j.sum));
    else
        OG_TRY(kernel_scratch(ctx, (size_t)(rows * h) * sizeof(float) + 1, (void **)&j.sum));
    threadpool_parallel_for(ctx->pool, rows, 1 + 16384 / (h + 1), embed_rows_fn, &j);
    if (j.bad)
        return kernel_errorf(ctx, OG_ERR_INVALID_ARGUMENT, "an input_ids, position or "
                             "segment id is out of range (tables have %lld words, %lld "
                             "positions, %lld segments)", (long long)j.n_word,
                             (long long)j.n_pos, (long long)j.n_seg);
    cpu_out_f32_done(y, j.y);
    if (sum) cpu_out_f32_done(sum, j.sum);
    return NULL;
}
