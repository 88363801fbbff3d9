/* Rotary position embeddings: rotate the first rotary_dim elements of every head vector
 * by its token's angles (cos/sin rows of rotary_dim / 2); the rest of the head is copied.
 * Pairs are (x[j], x[j + rotary_dim / 2]), or (x[2j], x[2j + 1]) with interleaved=1. The
 * input is (B, S, num_heads * head_size) (num_heads from the attribute, or head_size =
 * rotary_dim when it is absent) or (B, num_heads, S, head_size).
 *
 *  - com.microsoft RotaryEmbedding: position_ids (B, S), or (1) holding the position of
 *    every sequence's first token; rows of cos_cache/sin_cache (max_position, rotary/2).
 *  - RotaryEmbedding (default domain, opset 23): inputs X, cos, sin, optional position_ids
 *    (B, S); without them cos and sin are already per token, (B, S, rotary/2).
 *  - com.microsoft MRotaryEmbedding (multimodal RoPE, Qwen2-VL on): position_ids
 *    (3, B, S) holds temporal, height and width positions; element j of a token's angle
 *    row comes from one of the three: with mrope_layout 0 (sectioned) the first
 *    mrope_section[0] elements from T, the next [1] from H, the last [2] from W; with
 *    layout 1 (interleaved) from T except j % 3 == 1, j < 3 * section[1] (H) and
 *    j % 3 == 2, j < 3 * section[2] (W). The rotated part is multiplied by `scale`
 *    (default 1), as onnxruntime does.
 * Work is split over head vectors; the rotation runs in float32. */
#include "backends/native/kernels/attention/attention.h"

typedef struct rope_job {
    og_dtype dt;
    const void *x;
    void *y;
    /* a token's angle row: tok_cos/tok_sin + (b * S + s) * half when set, else row
     * pos[b * S + s] (pos[0] + s when pos_scalar) of cos/sin */
    const float *cos, *sin, *tok_cos, *tok_sin;
    const int64_t *pos;
    bool pos_scalar, interleaved, bnsh;
    int64_t B, S, N, D, half, max_pos;
    float scale;
    int bad;
} rope_job;

static void rope_fn(void *arg, int64_t begin, int64_t end) {
    rope_job *j = arg;
    size_t es = j->dt == OG_FLOAT32 ? 4 : 2;
    float row[1024];
    for (int64_t r = begin; r < end; r++) {
        /* r enumerates the input's head vectors in memory order */
        int64_t b, s;
        if (j->bnsh) {
            b = r / (j->N * j->S);
            s = r % j->S;
        } else {
            b = r / (j->S * j->N);
            s = (r / j->N) % j->S;
        }
        size_t off = (size_t)(r * j->D) * es;
        const float *c, *sn;
        if (j->tok_cos) {
            c = j->tok_cos + (b * j->S + s) * j->half;
            sn = j->tok_sin + (b * j->S + s) * j->half;
        } else {
            int64_t p = j->pos_scalar ? j->pos[0] + s : j->pos[b * j->S + s];
            if (p < 0 || p >= j->max_pos) {
                __atomic_store_n(&j->bad, 1, __ATOMIC_RELAXED);
                memset((char *)j->y + off, 0, (size_t)j->D * es);
                continue;
            }
            c = j->cos + p * j->half;
            sn = j->sin + p * j->half;
        }
        for (int64_t d0 = 0; d0 < j->D; d0 += 1024) {
            /* head sizes beyond 1024 go in pieces; the rotated part must fit the first */
            int64_t n = j->D - d0 < 1024 ? j->D - d0 : 1024;
            cpu_load_f32(j->dt, (const char *)j->x + off + (size_t)d0 * es, n, row);
            if (d0 == 0) {
                cpu_rope(row, c, sn, j->half, j->interleaved);
                if (j->scale != 1.0f)
                    for (int64_t e = 0; e < 2 * j->half; e++) row[e] *= j->scale;
            }
            cpu_store_f32(j->dt, (char *)j->y + off + (size_t)d0 * es, n, row);
        }
    }
}

/* The shape of input 0 (B, S, N, D and the layout) and the rotated half, from the
 * attributes and the angle rows' width `half`; errors name what does not fit. */
static og_status *rope_shape(kernel_ctx *ctx, rope_job *j, int64_t half) {
    const tensor *x = ctx->inputs[0];
    int64_t nh = graph_attr_int(ctx->node, "num_heads", 0);
    int64_t rdim = graph_attr_int(ctx->node, "rotary_embedding_dim", 0);
    char a[96];
    if (graph_attr_int(ctx->node, "is_packed_batching", 0) != 0)
        return kernel_error(ctx, OG_ERR_UNSUPPORTED, "is_packed_batching=1 is not implemented");
    if (x->rank == 4) {
        j->bnsh = true;
        j->B = x->dims[0], j->N = x->dims[1], j->S = x->dims[2], j->D = x->dims[3];
    } else if (x->rank == 3) {
        j->B = x->dims[0], j->S = x->dims[1];
        int64_t H = x->dims[2];
        j->D = nh > 0 ? H / nh : 2 * half;
        if (rdim > 0 && nh <= 0)
            return kernel_error(ctx, OG_ERR_INVALID_MODEL, "num_heads is required with "
                                "rotary_embedding_dim for a 3-D input");
        if (j->D <= 0 || H % j->D)
            return kernel_errorf(ctx, OG_ERR_INVALID_ARGUMENT, "hidden size %lld does not split "
                                 "into heads of %lld", (long long)H, (long long)j->D);
        j->N = H / j->D;
    } else {
        return kernel_errorf(ctx, OG_ERR_INVALID_ARGUMENT, "input 0 has shape %s, expected "
                             "(B, S, hidden) or (B, num_heads, S, head_size)",
                             shape_str(x->dims, x->rank, a, sizeof a));
    }
    int64_t r = rdim > 0 ? rdim : j->D;
    if (2 * half != r || r > j->D)
        return kernel_errorf(ctx, OG_ERR_INVALID_ARGUMENT, "the cos/sin rows have %lld "
                             "columns; expected rotary_dim / 2 = %lld with rotary_dim <= head "
                             "size %lld", (long long)half, (long long)(r / 2), (long long)j->D);
    if (half > 512)
        return kernel_errorf(ctx, OG_ERR_UNSUPPORTED, "rotary_dim %lld above 1024", (long long)r);
    j->half = half;
    j->interleaved = graph_attr_int(ctx->node, "interleaved", 0) != 0;
    j->scale = 1.0f;
    return NULL;
}

static og_status *rope_run(kernel_ctx *ctx, rope_job *j) {
    const tensor *x = ctx->inputs[0];
    tensor *y;
    OG_TRY(kernel_output(ctx, 0, x->dtype, x->rank, x->dims, &y));
    j->dt = x->dtype;
    j->x = x->data;
    j->y = y->data;
    int64_t vecs = j->B * j->S * j->N;
    threadpool_parallel_for(ctx->pool, vecs, 1 + 8192 / (j->D + 1), rope_fn, j);
    if (j->bad)
        return kernel_errorf(ctx, OG_ERR_INVALID_ARGUMENT, "a position id is outside the cos/sin "
                             "caches (%lld rows)", (long long)j->max_pos);
    return NULL;
}

static og_status *rope_caches(kernel_ctx *ctx, int ic, int is, int rank, const char *expect) {
    const tensor *x = ctx->inputs[0], *c = ctx->inputs[ic], *s = ctx->inputs[is];
    char a[96];
    if (!cpu_is_f32able(x->dtype)) return kernel_unsupported_dtype(ctx, 0, x->dtype);
    if (c->dtype != x->dtype || s->dtype != x->dtype)
        return kernel_errorf(ctx, OG_ERR_INVALID_ARGUMENT, "cos_cache and sin_cache must have "
                             "the input's dtype %s", og_dtype_name(x->dtype));
    if (c->rank != rank || s->rank != rank ||
        memcmp(c->dims, s->dims, sizeof(int64_t) * (size_t)rank) != 0)
        return kernel_errorf(ctx, OG_ERR_INVALID_ARGUMENT, "cos_cache %s and sin_cache must both "
                             "be %s", shape_str(c->dims, c->rank, a, sizeof a), expect);
    return NULL;
}

static og_status *want_positions(kernel_ctx *ctx, int i, const rope_job *j, bool scalar_ok,
                                 bool *scalar) {
    const tensor *p = ctx->inputs[i];
    char a[96];
    if (p->dtype != OG_INT64)
        return kernel_errorf(ctx, OG_ERR_INVALID_ARGUMENT, "input %d (position_ids) is %s, "
                             "expected int64", i, og_dtype_name(p->dtype));
    *scalar = scalar_ok && p->rank == 1 && p->dims[0] == 1;
    if (!*scalar && !(p->rank == 2 && p->dims[0] == j->B && p->dims[1] == j->S))
        return kernel_errorf(ctx, OG_ERR_INVALID_ARGUMENT, "input %d (position_ids) has shape %s, "
                             "expected (%lld, %lld)%s", i, shape_str(p->dims, p->rank, a, sizeof a),
                             (long long)j->B, (long long)j->S, scalar_ok ? " or (1)" : "");
    return NULL;
}

og_status *cpu_contrib_rotary(kernel_ctx *ctx) {
    OG_TRY(kernel_require_inputs(ctx, 4));
    OG_TRY(rope_caches(ctx, 2, 3, 2, "(max_position, rotary_dim / 2)"));
    const tensor *cosc = ctx->inputs[2];
    rope_job j = {.max_pos = cosc->dims[0]};
    OG_TRY(rope_shape(ctx, &j, cosc->dims[1]));
    OG_TRY(want_positions(ctx, 1, &j, true, &j.pos_scalar));
    j.pos = ctx->inputs[1]->data;
    OG_TRY(cpu_in_f32(ctx, 2, &j.cos));
    OG_TRY(cpu_in_f32(ctx, 3, &j.sin));
    return rope_run(ctx, &j);
}

og_status *cpu_rotary(kernel_ctx *ctx) {
    OG_TRY(kernel_require_inputs(ctx, 3));
    bool with_pos = kernel_input(ctx, 3) != NULL;
    OG_TRY(rope_caches(ctx, 1, 2, with_pos ? 2 : 3,
                       with_pos ? "(max_position, rotary_dim / 2)" : "(B, S, rotary_dim / 2)"));
    const tensor *cosc = ctx->inputs[1];
    rope_job j = {.max_pos = cosc->dims[0]};
    OG_TRY(rope_shape(ctx, &j, cosc->dims[cosc->rank - 1]));
    const float *c, *s;
    OG_TRY(cpu_in_f32(ctx, 1, &c));
    OG_TRY(cpu_in_f32(ctx, 2, &s));
    if (with_pos) {
        bool scalar;
        OG_TRY(want_positions(ctx, 3, &j, false, &scalar));
        j.pos = ctx->inputs[3]->data;
        j.cos = c, j.sin = s;
    } else {
        if (cosc->dims[0] != j.B || cosc->dims[1] != j.S)
            return kernel_errorf(ctx, OG_ERR_INVALID_ARGUMENT, "without position_ids cos_cache "
                                 "must be (%lld, %lld, rotary_dim / 2)", (long long)j.B,
                                 (long long)j.S);
        j.tok_cos = c, j.tok_sin = s;
    }
    return rope_run(ctx, &j);
}

og_status *cpu_contrib_mrotary(kernel_ctx *ctx) {
    OG_TRY(kernel_require_inputs(ctx, 4));
    OG_TRY(rope_caches(ctx, 2, 3, 2, "(max_position, rotary_dim / 2)"));
    const tensor *x = ctx->inputs[0], *pid = ctx->inputs[1], *cosc = ctx->inputs[2];
    char a[96];
    if (x->rank == 3 && graph_attr_int(ctx->node, "num_heads", 0) <= 0)
        return kernel_error(ctx, OG_ERR_INVALID_MODEL, "num_heads is required for a 3-D input");
    rope_job j = {.max_pos = cosc->dims[0]};
    OG_TRY(rope_shape(ctx, &j, cosc->dims[1]));
    j.scale = graph_attr_float(ctx->node, "scale", 1.0f);
    const int64_t *sec;
    int64_t layout = graph_attr_int(ctx->node, "mrope_layout", 0);
    if (graph_attr_ints(ctx->node, "mrope_section", &sec) != 3 || sec[0] < 0 || sec[1] < 0 ||
        sec[2] < 0 || sec[0] + sec[1] + sec[2] != j.half)
        return kernel_errorf(ctx, OG_ERR_INVALID_MODEL, "mrope_section must be 3 non-negative "
                             "values summing to rotary_dim / 2 = %lld", (long long)j.half);
    if (layout != 0 && layout != 1)
        return kernel_errorf(ctx, OG_ERR_INVALID_MODEL, "mrope_layout %lld is not 0 "
                             "(sectioned) or 1 (interleaved)", (long long)layout);
    if (pid->dtype != OG_INT64 || pid->rank != 3 || pid->dims[0] != 3 || pid->dims[1] != j.B ||
        pid->dims[2] != j.S)
        return kernel_errorf(ctx, OG_ERR_INVALID_ARGUMENT, "input 1 (position_ids) is %s %s, "
                             "expected int64 (3, %lld, %lld)", og_dtype_name(pid->dtype),
                             shape_str(pid->dims, pid->rank, a, sizeof a), (long long)j.B,
                             (long long)j.S);
    /* stream of element i of a row: T, H or W */
    int stream[512];
    for (int64_t i = 0; i < j.half; i++) {
        if (layout == 0)
            stream[i] = i < sec[0] ? 0 : i < sec[0] + sec[1] ? 1 : 2;
        else
            stream[i] = (i % 3 == 1 && i < 3 * sec[1]) ? 1 : (i % 3 == 2 && i < 3 * sec[2]) ? 2 : 0;
    }
    const float *c, *s;
    OG_TRY(cpu_in_f32(ctx, 2, &c));
    OG_TRY(cpu_in_f32(ctx, 3, &s));
    float *tc, *ts;
    size_t n = (size_t)(j.B * j.S * j.half);
    OG_TRY(kernel_scratch(ctx, sizeof(float) * n + 1, (void **)&tc));
    OG_TRY(kernel_scratch(ctx, sizeof(float) * n + 1, (void **)&ts));
    const int64_t *p = pid->data;
    int64_t BS = j.B * j.S;
    for (int64_t t = 0; t < BS; t++)
        for (int64_t i = 0; i < j.half; i++) {
            int64_t pos = p[stream[i] * BS + t];
            if (pos < 0 || pos >= j.max_pos)
                return kernel_errorf(ctx, OG_ERR_INVALID_ARGUMENT, "position_ids[%d][%lld][%lld] "
                                     "= %lld is outside the cos/sin caches (%lld rows)", stream[i],
                                     (long long)(t / j.S), (long long)(t % j.S), (long long)pos,
                                     (long long)j.max_pos);
            tc[t * j.half + i] = c[pos * j.half + i];
            ts[t * j.half + i] = s[pos * j.half + i];
        }
    j.tok_cos = tc, j.tok_sin = ts;
    return rope_run(ctx, &j);
}
