/* com.microsoft RotaryEmbedding: rotates the first rotary_dim elements of every head
 * vector by the angle of its token's position (cos_cache/sin_cache rows, (max_position,
 * rotary_dim / 2)); the rest of the head is copied. The input is (B, S, num_heads *
 * head_size) or (B, num_heads, S, head_size). position_ids is (B, S), or (1) holding the
 * position of the first token of every sequence. Pairs are (x[j], x[j + rotary_dim / 2])
 * or, with interleaved=1, (x[2j], x[2j + 1]). */
#include "backends/native/kernels/attention.h"

typedef struct rope_job {
    og_dtype dt;
    const void *x;
    void *y;
    const float *cos, *sin;
    const int64_t *pos;
    bool pos_scalar, interleaved, bnsh;
    int64_t B, S, N, D, half, max_pos;
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
        int64_t p = j->pos_scalar ? j->pos[0] + s : j->pos[b * j->S + s];
        size_t off = (size_t)(r * j->D) * es;
        if (p < 0 || p >= j->max_pos) {
            __atomic_store_n(&j->bad, 1, __ATOMIC_RELAXED);
            memset((char *)j->y + off, 0, (size_t)j->D * es);
            continue;
        }
        for (int64_t d0 = 0; d0 < j->D; d0 += 1024) {
            /* head sizes beyond 1024 go in pieces; the rotated part must fit the first */
            int64_t n = j->D - d0 < 1024 ? j->D - d0 : 1024;
            cpu_load_f32(j->dt, (const char *)j->x + off + (size_t)d0 * es, n, row);
            if (d0 == 0)
                cpu_rope(row, j->cos + p * j->half, j->sin + p * j->half, j->half, j->interleaved);
            cpu_store_f32(j->dt, (char *)j->y + off + (size_t)d0 * es, n, row);
        }
    }
}

og_status *cpu_contrib_rotary(kernel_ctx *ctx) {
    OG_TRY(kernel_require_inputs(ctx, 4));
    const tensor *x = ctx->inputs[0], *pid = ctx->inputs[1], *cosc = ctx->inputs[2],
                 *sinc = ctx->inputs[3];
    const graph_node *node = ctx->node;
    og_dtype dt = x->dtype;
    char a[96];
    if (!cpu_is_f32able(dt)) return kernel_unsupported_dtype(ctx, 0, dt);
    if (cosc->dtype != dt || sinc->dtype != dt)
        return kernel_errorf(ctx, OG_ERR_INVALID_ARGUMENT, "cos_cache and sin_cache must have "
                             "the input's dtype %s", og_dtype_name(dt));
    if (pid->dtype != OG_INT64)
        return kernel_errorf(ctx, OG_ERR_INVALID_ARGUMENT, "input 1 (position_ids) is %s, "
                             "expected int64", og_dtype_name(pid->dtype));
    if (graph_attr_int(node, "is_packed_batching", 0) != 0)
        return kernel_error(ctx, OG_ERR_UNSUPPORTED, "is_packed_batching=1 is not implemented");
    if (cosc->rank != 2 || sinc->rank != 2 || sinc->dims[0] != cosc->dims[0] ||
        sinc->dims[1] != cosc->dims[1])
        return kernel_errorf(ctx, OG_ERR_INVALID_ARGUMENT, "cos_cache %s and sin_cache must both "
                             "be (max_position, rotary_dim / 2)",
                             shape_str(cosc->dims, cosc->rank, a, sizeof a));
    int64_t nh = graph_attr_int(node, "num_heads", 0), rdim = graph_attr_int(node, "rotary_embedding_dim", 0);
    rope_job j = {.dt = dt, .half = cosc->dims[1], .max_pos = cosc->dims[0],
                  .interleaved = graph_attr_int(node, "interleaved", 0) != 0};
    if (x->rank == 4) {
        j.bnsh = true;
        j.B = x->dims[0], j.N = x->dims[1], j.S = x->dims[2], j.D = x->dims[3];
    } else if (x->rank == 3) {
        j.B = x->dims[0], j.S = x->dims[1];
        int64_t H = x->dims[2];
        j.D = nh > 0 ? H / nh : 2 * j.half;
        if (rdim > 0 && nh <= 0)
            return kernel_error(ctx, OG_ERR_INVALID_MODEL, "num_heads is required with "
                                "rotary_embedding_dim for a 3-D input");
        if (j.D <= 0 || H % j.D)
            return kernel_errorf(ctx, OG_ERR_INVALID_ARGUMENT, "hidden size %lld does not split "
                                 "into heads of %lld", (long long)H, (long long)j.D);
        j.N = H / j.D;
    } else {
        return kernel_errorf(ctx, OG_ERR_INVALID_ARGUMENT, "input 0 has shape %s, expected "
                             "(B, S, hidden) or (B, num_heads, S, head_size)",
                             shape_str(x->dims, x->rank, a, sizeof a));
    }
    int64_t r = rdim > 0 ? rdim : j.D;
    if (2 * j.half != r || r > j.D)
        return kernel_errorf(ctx, OG_ERR_INVALID_ARGUMENT, "cos_cache has %lld columns; expected "
                             "rotary_dim / 2 = %lld with rotary_dim <= head size %lld",
                             (long long)j.half, (long long)(r / 2), (long long)j.D);
    if (j.half > 512)
        return kernel_errorf(ctx, OG_ERR_UNSUPPORTED, "rotary_dim %lld above 1024", (long long)r);
    if (pid->rank == 1 && pid->dims[0] == 1) {
        j.pos_scalar = true;
    } else if (!(pid->rank == 2 && pid->dims[0] == j.B && pid->dims[1] == j.S)) {
        return kernel_errorf(ctx, OG_ERR_INVALID_ARGUMENT, "input 1 (position_ids) has shape %s, "
                             "expected (%lld, %lld) or (1)",
                             shape_str(pid->dims, pid->rank, a, sizeof a), (long long)j.B,
                             (long long)j.S);
    }
    tensor *y;
    OG_TRY(kernel_output(ctx, 0, dt, x->rank, x->dims, &y));
    j.x = x->data;
    j.y = y->data;
    j.pos = pid->data;
    OG_TRY(cpu_in_f32(ctx, 2, &j.cos));
    OG_TRY(cpu_in_f32(ctx, 3, &j.sin));
    int64_t vecs = j.B * j.S * j.N;
    threadpool_parallel_for(ctx->pool, vecs, 1 + 8192 / (j.D + 1), rope_fn, &j);
    if (j.bad)
        return kernel_errorf(ctx, OG_ERR_INVALID_ARGUMENT, "a position id is outside the cos/sin "
                             "caches (%lld rows)", (long long)j.max_pos);
    return NULL;
}
