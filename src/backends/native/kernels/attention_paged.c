/* GroupQueryAttention over a paged KV cache (see paged_kv.h for the contract).
 *
 * Phase 1 writes each sequence's new keys (rotated, rounded to the storage type) and
 * values into its blocks. Phase 2 computes, for every (sequence, kv head, block of QB
 * query rows, tile of TK key positions), the partial softmax of all query heads of the
 * group over the keys of that tile: its maximum m, its sum of exponentials l and its
 * weighted value sum o. Phase 3 merges the tiles of each (token, head) in tile order:
 * out = sum_c e^(m_c - M) o_c / (sum_c e^(m_c - M) l_c [+ e^(sink - M)]).
 *
 * Tiles are fixed ranges of absolute positions ([c TK, (c + 1) TK)) and every token's
 * partials are written to their own slot, so a token's result does not depend on what
 * else runs, how the work is split, or which thread took it: the batch invariance the
 * engine promises rests on this. A tile is gathered from its blocks into float32 rows
 * once per task and read by every query head of the group and every row of the block. */
#include "backends/native/kernels/attention.h"
#include "backends/native/kernels/attention_paged.h"

#include "base/vmath.h"

#include <math.h>
#include <stdatomic.h>
#include <string.h>

enum { QB = 16, TK = 256 };

typedef struct pg_task {
    int32_t seq, g, i0, i1, tile;
} pg_task;

typedef struct pg_job {
    const paged_kv *pk;
    int layer;
    og_dtype dt;
    int64_t B, S, N, KV, D, R, half;
    bool causal, rotary, interleaved, smooth;
    int64_t window;
    float scale, softcap;
    const float *q, *k, *v;
    int64_t q_ld, k_ld, v_ld;
    const float *cos, *sin;
    const float *sink;
    char *kpool, *vpool;
    size_t block_bytes, row_bytes; /* one block of one layer; one position of one kv head */
    int64_t *part_base;            /* [n_seqs] first partial of each sequence */
    int64_t *tok_base;             /* [n_seqs] its first token in the flat order */
    int64_t *ntiles;               /* [n_seqs] key tiles: ceil((past + n) / TK) */
    float *part;                   /* per (token, head, tile): m, l, o[D] */
    pg_task *tasks;
    int64_t ntasks;
    float *out;                    /* [B, S, N * D] float32 */
    float *wbuf;
    int64_t per_worker;
    atomic_long next;
} pg_job;

static inline size_t pg_esz(og_dtype dt) { return dt == OG_FLOAT32 ? 4 : 2; }

/* Position p of kv head g of sequence s in a pool. */
static inline char *pg_row(const pg_job *j, char *pool, const paged_kv_seq *s, int64_t g,
                           int64_t p) {
    int64_t bs = j->pk->block_size;
    return pool + (size_t)s->blocks[p / bs] * j->block_bytes +
           ((size_t)g * (size_t)bs + (size_t)(p % bs)) * j->row_bytes;
}

static inline int64_t pg_token(const pg_job *j, const paged_kv_seq *s, int64_t t) {
    return (int64_t)s->row * j->S + s->q_off + t;
}

/* Phase 1, per (sequence, kv head): the new keys and values into the blocks. */
static void pg_write_fn(void *arg, int64_t begin, int64_t end) {
    pg_job *j = arg;
    float tmp[1024];
    for (int64_t sg = begin; sg < end; sg++) {
        const paged_kv_seq *s = &j->pk->seqs[sg / j->KV];
        int64_t g = sg % j->KV, D = j->D;
        for (int64_t t = 0; t < s->n; t++) {
            int64_t tok = pg_token(j, s, t), p = s->past + t;
            memcpy(tmp, j->k + tok * j->k_ld + g * D, sizeof(float) * (size_t)D);
            if (j->rotary)
                cpu_rope(tmp, j->cos + p * j->half, j->sin + p * j->half, j->half, j->interleaved);
            cpu_store_f32(j->dt, pg_row(j, j->kpool, s, g, p), D, tmp);
            cpu_store_f32(j->dt, pg_row(j, j->vpool, s, g, p), D, j->v + tok * j->v_ld + g * D);
        }
    }
}

/* The key positions [lo, hi] the token at position p of a sequence of total length T
 * attends to. */
static inline void pg_range(const pg_job *j, int64_t p, int64_t T, int64_t *lo, int64_t *hi) {
    int64_t last = j->causal ? p : T - 1;
    *hi = last;
    *lo = j->window > 0 && last + 1 > j->window ? last - j->window + 1 : 0;
}

static void pg_task_run(pg_job *j, const pg_task *tk, float *slice) {
    const paged_kv_seq *s = &j->pk->seqs[tk->seq];
    int64_t D = j->D, R = j->R, g = tk->g, T = (int64_t)s->past + s->n;
    int64_t c0 = (int64_t)tk->tile * TK, c1 = c0 + TK < T ? c0 + TK : T;
    float *qbuf = slice, *kbuf = qbuf + QB * R * D, *vbuf = kbuf + TK * D, *sc = vbuf + TK * D;
    /* the tile's keys and values as float32 rows */
    for (int64_t p = c0; p < c1; p++) {
        cpu_load_f32(j->dt, pg_row(j, j->kpool, s, g, p), D, kbuf + (p - c0) * D);
        cpu_load_f32(j->dt, pg_row(j, j->vpool, s, g, p), D, vbuf + (p - c0) * D);
    }
    int64_t nt = j->ntiles[tk->seq];
    for (int64_t i = tk->i0; i < tk->i1; i++) {
        int64_t tok = pg_token(j, s, i), p = s->past + i, lo, hi;
        pg_range(j, p, T, &lo, &hi);
        int64_t a = lo > c0 ? lo : c0, b = hi < c1 - 1 ? hi : c1 - 1, n = b - a + 1;
        for (int64_t r = 0; r < R; r++) {
            int64_t h = g * R + r;
            float *part = j->part + (j->part_base[tk->seq] + (i * j->N + h) * nt + tk->tile) * (D + 2);
            float *o = part + 2;
            for (int64_t d = 0; d < D; d++) o[d] = 0.0f;
            if (n <= 0) {
                part[0] = -INFINITY;
                part[1] = 0.0f;
                continue;
            }
            float *q = qbuf + ((i - tk->i0) * R + r) * D;
            memcpy(q, j->q + tok * j->q_ld + h * D, sizeof(float) * (size_t)D);
            if (j->rotary) {
                cpu_rope(q, j->cos + p * j->half, j->sin + p * j->half, j->half, j->interleaved);
                if (j->dt != OG_FLOAT32)
                    for (int64_t d = 0; d < D; d++) q[d] = cpu_round_to(j->dt, q[d]);
            }
            for (int64_t t = a; t <= b; t++) sc[t - a] = j->scale * cpu_dot(q, kbuf + (t - c0) * D, D);
            if (j->softcap > 0) {
                float cap = j->softcap, ic = 1.0f / j->softcap;
                for (int64_t t = 0; t < n; t++) sc[t] *= ic;
                vtanh_f32(sc, sc, n);
                for (int64_t t = 0; t < n; t++) sc[t] *= cap;
            }
            float mx = sc[0], sum = 0.0f;
            for (int64_t t = 1; t < n; t++) mx = sc[t] > mx ? sc[t] : mx;
            vexp_shift_f32(sc, sc, n, mx);
            for (int64_t t = 0; t < n; t++) sum += sc[t];
            part[0] = mx;
            part[1] = sum;
            cpu_weighted_rows(o, sc, vbuf + (a - c0) * D, D, n, D);
        }
    }
}

static void pg_worker(void *arg, int64_t begin, int64_t end) {
    pg_job *j = arg;
    (void)end;
    float *slice = j->wbuf + begin * j->per_worker;
    for (;;) {
        long t = atomic_fetch_add(&j->next, 1);
        if (t >= j->ntasks) break;
        pg_task_run(j, &j->tasks[t], slice);
    }
}

/* Phase 3, per (sequence, token): merge the tiles of every head in order. */
static void pg_merge_fn(void *arg, int64_t begin, int64_t end) {
    pg_job *j = arg;
    int64_t D = j->D;
    bool has_sink = j->sink || j->smooth;
    for (int64_t si = 0; si < j->pk->n_seqs; si++) {
        const paged_kv_seq *s = &j->pk->seqs[si];
        int64_t first = j->tok_base[si], nt = j->ntiles[si], T = (int64_t)s->past + s->n;
        if (first >= end || first + s->n <= begin) continue;
        for (int64_t t = 0; t < s->n; t++) {
            if (first + t < begin || first + t >= end) continue;
            int64_t lo, hi;
            pg_range(j, s->past + t, T, &lo, &hi);
            int64_t ca = lo / TK, cb = hi / TK; /* the tiles holding visible keys */
            for (int64_t h = 0; h < j->N; h++) {
                const float *base = j->part + (j->part_base[si] + (t * j->N + h) * nt) * (D + 2);
                float sk = j->sink ? j->sink[h] : 0.0f;
                float M = has_sink ? sk : -INFINITY;
                for (int64_t c = ca; c <= cb; c++) M = base[c * (D + 2)] > M ? base[c * (D + 2)] : M;
                float den = has_sink ? expf(sk - M) : 0.0f;
                float *o = j->out + pg_token(j, s, t) * j->N * D + h * D;
                for (int64_t d = 0; d < D; d++) o[d] = 0.0f;
                for (int64_t c = ca; c <= cb; c++) {
                    const float *pc = base + c * (D + 2);
                    if (pc[1] == 0.0f) continue; /* no key of this tile is visible */
                    float w = expf(pc[0] - M);
                    den += w * pc[1];
                    for (int64_t d = 0; d < D; d++) o[d] += w * pc[2 + d];
                }
                float inv = den > 0 ? 1.0f / den : 0.0f;
                for (int64_t d = 0; d < D; d++) o[d] *= inv;
            }
        }
    }
}

int paged_kv_layer_of(const kernel_ctx *ctx) {
    const paged_kv *pk = ctx->paged_kv;
    if (!pk || !ctx->graph || ctx->n_inputs < 4 || ctx->node->inputs[3] < 0) return -1;
    const char *name = ctx->graph->values[ctx->node->inputs[3]].name;
    for (int l = 0; l < pk->n_layers; l++)
        if (strcmp(pk->layer_names[l], name) == 0) return l;
    return -1;
}

/* The sequences: in range, tokens owned once, blocks and rotary positions that exist. */
static og_status *pg_check_seqs(kernel_ctx *ctx, pg_job *j, int64_t max_pos) {
    const paged_kv *pk = j->pk;
    uint8_t *owned;
    OG_TRY(kernel_scratch(ctx, (size_t)(j->B * j->S) + 1, (void **)&owned));
    memset(owned, 0, (size_t)(j->B * j->S));
    for (int i = 0; i < pk->n_seqs; i++) {
        const paged_kv_seq *s = &pk->seqs[i];
        if (s->row < 0 || s->row >= j->B || s->q_off < 0 || s->n < 1 || s->past < 0 ||
            (int64_t)s->q_off + s->n > j->S || !s->blocks)
            return kernel_errorf(ctx, OG_ERR_INVALID_ARGUMENT, "paged KV: sequence %d (row %d, "
                                 "tokens [%d, +%d), past %d) does not fit the query [%lld, %lld]",
                                 i, s->row, s->q_off, s->n, s->past, (long long)j->B,
                                 (long long)j->S);
        for (int64_t t = 0; t < s->n; t++) {
            uint8_t *o = &owned[pg_token(j, s, t)];
            if (*o)
                return kernel_errorf(ctx, OG_ERR_INVALID_ARGUMENT, "paged KV: token %lld of "
                                     "row %d belongs to two sequences", (long long)(s->q_off + t),
                                     s->row);
            *o = 1;
        }
        int64_t T = (int64_t)s->past + s->n, nb = (T + pk->block_size - 1) / pk->block_size;
        for (int64_t b = 0; b < nb; b++)
            if (s->blocks[b] < 0 || s->blocks[b] >= pk->n_blocks)
                return kernel_errorf(ctx, OG_ERR_INVALID_ARGUMENT, "paged KV: sequence %d "
                                     "names block %d, the pool has %lld", i, s->blocks[b],
                                     (long long)pk->n_blocks);
        if (j->rotary && T > max_pos)
            return kernel_errorf(ctx, OG_ERR_INVALID_ARGUMENT, "paged KV: sequence %d reaches "
                                 "position %lld, outside the cos/sin caches (%lld rows)", i,
                                 (long long)(T - 1), (long long)max_pos);
    }
    return NULL;
}

og_status *cpu_gqa_paged(kernel_ctx *ctx, int layer) {
    const paged_kv *pk = ctx->paged_kv;
    const graph_node *node = ctx->node;
    const tensor *q = ctx->inputs[0], *key = kernel_input(ctx, 1), *val = kernel_input(ctx, 2);
    const tensor *cosc = kernel_input(ctx, 7), *sinc = kernel_input(ctx, 8);
    const tensor *sink = kernel_input(ctx, 11);
    char a[96];
    pg_job j = {.pk = pk, .layer = layer, .dt = q->dtype,
                .N = graph_attr_int(node, "num_heads", 0),
                .KV = graph_attr_int(node, "kv_num_heads", 0),
                .causal = graph_attr_int(node, "causal", 1) != 0,
                .rotary = graph_attr_int(node, "do_rotary", 0) != 0,
                .interleaved = graph_attr_int(node, "rotary_interleaved", 0) != 0,
                .smooth = graph_attr_int(node, "smooth_softmax", 0) != 0,
                .window = graph_attr_int(node, "local_window_size", -1),
                .softcap = graph_attr_float(node, "softcap", 0.0f)};
    if (j.dt != pk->dtype)
        return kernel_errorf(ctx, OG_ERR_INVALID_ARGUMENT, "paged KV: the query is %s, the "
                             "pool holds %s", og_dtype_name(j.dt), og_dtype_name(pk->dtype));
    if (kernel_input(ctx, 10))
        return kernel_error(ctx, OG_ERR_UNSUPPORTED, "paged KV: attention_bias (input 10) is "
                            "not supported over a paged cache");
    for (int i = 1; i < 4; i++)
        if (cpu_wants_output(ctx, i))
            return kernel_errorf(ctx, OG_ERR_INVALID_ARGUMENT, "paged KV: output %d is "
                                 "requested, but the cache lives in the pool", i);
    if (j.N <= 0 || j.KV <= 0 || j.N % j.KV || q->rank != 3)
        return kernel_error(ctx, OG_ERR_INVALID_MODEL, "paged KV: needs num_heads a positive "
                            "multiple of kv_num_heads and a (batch, sequence, hidden) query");
    int64_t B = q->dims[0], S = q->dims[1], H = q->dims[2], N = j.N, KV = j.KV, D;
    bool packed = key == NULL;
    if (packed != (val == NULL))
        return kernel_error(ctx, OG_ERR_INVALID_MODEL, "key and value must be given together");
    D = packed ? H / (N + 2 * KV) : H / N;
    if (packed ? H % (N + 2 * KV) != 0 : H % N != 0)
        return kernel_errorf(ctx, OG_ERR_INVALID_ARGUMENT, "query width %lld does not split "
                             "into the heads", (long long)H);
    if (!packed) {
        int64_t kd[3] = {B, S, KV * D};
        OG_TRY(cpu_want_shape(ctx, 1, "key", 3, kd));
        OG_TRY(cpu_want_shape(ctx, 2, "value", 3, kd));
    }
    if (KV != pk->kv_heads || D != pk->head_size || D > 1024)
        return kernel_errorf(ctx, OG_ERR_INVALID_ARGUMENT, "paged KV: the node has %lld kv heads "
                             "of size %lld, the pool %d of size %d", (long long)KV, (long long)D,
                             pk->kv_heads, pk->head_size);
    j.B = B, j.S = S, j.D = D, j.R = N / KV;
    float sc = graph_attr_float(node, "scale", 0.0f);
    j.scale = sc != 0.0f ? sc : 1.0f / sqrtf((float)D);
    int64_t max_pos = INT64_MAX;
    if (j.rotary) {
        if (!cosc || !sinc || cosc->rank != 2)
            return kernel_error(ctx, OG_ERR_INVALID_MODEL, "do_rotary=1 needs cos_cache (input 7) "
                                "and sin_cache (input 8)");
        j.half = cosc->dims[1];
        if (j.half <= 0 || 2 * j.half > D)
            return kernel_errorf(ctx, OG_ERR_INVALID_ARGUMENT, "input 7 (cos_cache) has shape %s",
                                 shape_str(cosc->dims, cosc->rank, a, sizeof a));
        OG_TRY(cpu_want_shape(ctx, 8, "sin_cache", 2, cosc->dims));
        max_pos = cosc->dims[0];
        OG_TRY(cpu_in_f32(ctx, 7, &j.cos));
        OG_TRY(cpu_in_f32(ctx, 8, &j.sin));
    }
    if (sink) {
        OG_TRY(cpu_want_shape(ctx, 11, "head_sink", 1, &N));
        OG_TRY(cpu_in_f32(ctx, 11, &j.sink));
    }
    OG_TRY(pg_check_seqs(ctx, &j, max_pos));

    int64_t od[3] = {B, S, N * D};
    tensor *out;
    OG_TRY(kernel_output(ctx, 0, j.dt, 3, od, &out));
    OG_TRY(cpu_out_f32(ctx, out, &j.out));
    memset(j.out, 0, sizeof(float) * (size_t)(B * S * N * D)); /* padding tokens */
    if (B * S * N * D == 0 || pk->n_seqs == 0) {
        cpu_out_f32_done(out, j.out);
        return NULL;
    }
    const float *qf;
    OG_TRY(cpu_in_f32(ctx, 0, &qf));
    j.q = qf;
    if (packed) {
        j.q_ld = j.k_ld = j.v_ld = H;
        j.k = qf + N * D;
        j.v = qf + (N + KV) * D;
    } else {
        j.q_ld = N * D;
        j.k_ld = j.v_ld = KV * D;
        OG_TRY(cpu_in_f32(ctx, 1, &j.k));
        OG_TRY(cpu_in_f32(ctx, 2, &j.v));
    }
    j.kpool = pk->k[layer];
    j.vpool = pk->v[layer];
    j.row_bytes = pg_esz(j.dt) * (size_t)D;
    j.block_bytes = j.row_bytes * (size_t)pk->block_size * (size_t)KV;
    threadpool_parallel_for(ctx->pool, (int64_t)pk->n_seqs * KV, 1, pg_write_fn, &j);

    /* partials and tasks: a task is (sequence, kv head, QB query rows, key tile), and
     * only tiles that hold a key some of its rows see */
    int ns = pk->n_seqs;
    OG_TRY(kernel_scratch(ctx, sizeof(int64_t) * (size_t)ns * 3 + 1, (void **)&j.part_base));
    j.tok_base = j.part_base + ns;
    j.ntiles = j.tok_base + ns;
    int64_t nparts = 0, tokens = 0, ntasks = 0;
    for (int i = 0; i < ns; i++) {
        const paged_kv_seq *s = &pk->seqs[i];
        j.ntiles[i] = ((int64_t)s->past + s->n + TK - 1) / TK;
        j.part_base[i] = nparts;
        j.tok_base[i] = tokens;
        nparts += (int64_t)s->n * N * j.ntiles[i];
        tokens += s->n;
        ntasks += KV * ((s->n + QB - 1) / QB) * j.ntiles[i];
    }
    OG_TRY(kernel_scratch(ctx, sizeof(float) * (size_t)(nparts * (D + 2)) + 1, (void **)&j.part));
    OG_TRY(kernel_scratch(ctx, sizeof(pg_task) * (size_t)ntasks + 1, (void **)&j.tasks));
    ntasks = 0;
    for (int i = 0; i < ns; i++) {
        const paged_kv_seq *s = &pk->seqs[i];
        int64_t T = (int64_t)s->past + s->n;
        for (int64_t i0 = 0; i0 < s->n; i0 += QB) {
            int64_t i1 = i0 + QB < s->n ? i0 + QB : s->n, lo, hi, lo1, hi1;
            pg_range(&j, s->past + i0, T, &lo, &hi);
            pg_range(&j, s->past + i1 - 1, T, &lo1, &hi1);
            for (int64_t c = lo / TK; c <= hi1 / TK; c++)
                for (int64_t g = 0; g < KV; g++)
                    j.tasks[ntasks++] = (pg_task){i, (int32_t)g, (int32_t)i0, (int32_t)i1, (int32_t)c};
        }
    }
    j.ntasks = ntasks;
    int64_t workers = threadpool_size(ctx->pool);
    if (workers > ntasks) workers = ntasks;
    j.per_worker = (QB * j.R * D + 2 * TK * D + TK + 16 + 15) / 16 * 16;
    OG_TRY(kernel_scratch(ctx, sizeof(float) * (size_t)(workers * j.per_worker), (void **)&j.wbuf));
    atomic_init(&j.next, 0);
    threadpool_parallel_for(ctx->pool, workers, 1, pg_worker, &j);
    threadpool_parallel_for(ctx->pool, tokens, 16, pg_merge_fn, &j);
    cpu_out_f32_done(out, j.out);
    return NULL;
}
