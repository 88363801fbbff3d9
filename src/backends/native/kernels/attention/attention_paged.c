/* GroupQueryAttention over a paged KV cache (see paged_kv.h for the contract).
 *
 * Phase 1 rotates the queries and writes each sequence's new keys (rotated, rounded to
 * the storage type) and values into its blocks; the attention itself is the tile
 * arithmetic the contiguous kernel uses too (attention_tiles.h), with each sequence's
 * keys found through its block table. So a token's output does not depend on what else
 * runs, how the work is split, or which thread took it, and equals what `generate`
 * computes over a contiguous cache: the batch invariance the engine promises.
 *
 * A pool of the builder's codes (paged_kv.codes: the node's k_quant_type with its k_scale /
 * v_scale) is written and read as the contiguous kernel does (kv_fixed.h): a new row
 * stored as codes of the node's scales, the tiles loading codes times the scales. */
#include "backends/native/kernels/attention/attention.h"
#include "backends/native/kernels/attention/attention_paged.h"
#include "backends/native/kernels/attention/attention_tiles.h"
#include "backends/native/kernels/attention/kv_rows.h"

#include <math.h>
#include <string.h>

typedef struct pg_job {
    const paged_kv *pk;
    og_dtype dt, qdt; /* the pool's storage (kv_rows.h); the query's */
    const kv_fixed *fixed; /* [2] keys', values' fixed scales with a pool of codes, or NULL */
    int64_t B, S, N, KV, D, half;
    bool causal, rotary, interleaved;
    int64_t window;
    const float *q, *k, *v;
    int64_t q_ld, k_ld, v_ld;
    const float *cos, *sin;
    char *kpool, *vpool;
    size_t block_bytes, row_bytes; /* one block of one layer; one position of one kv head */
    float *qrot;                   /* [B * S][N * D] rotated queries */
} pg_job;

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

/* Phase 1, per (sequence, kv head): the new keys and values into the blocks, and the
 * group's queries rotated (and rounded to the storage type, as the keys are). */
static void pg_write_fn(void *arg, int64_t begin, int64_t end) {
    pg_job *j = arg;
    float tmp[1024];
    int64_t R = j->N / j->KV, D = j->D;
    for (int64_t sg = begin; sg < end; sg++) {
        const paged_kv_seq *s = &j->pk->seqs[sg / j->KV];
        int64_t g = sg % j->KV;
        for (int64_t t = 0; t < s->n; t++) {
            int64_t tok = pg_token(j, s, t), p = s->past + t;
            memcpy(tmp, j->k + tok * j->k_ld + g * D, sizeof(float) * (size_t)D);
            if (j->rotary)
                cpu_rope(tmp, j->cos + p * j->half, j->sin + p * j->half, j->half, j->interleaved);
            const float *v = j->v + tok * j->v_ld + g * D;
            if (j->fixed) {
                kv_fixed_store(&j->fixed[0], g, pg_row(j, j->kpool, s, g, p), tmp, D);
                kv_fixed_store(&j->fixed[1], g, pg_row(j, j->vpool, s, g, p), v, D);
            } else {
                kv_row_store(j->dt, pg_row(j, j->kpool, s, g, p), tmp, D);
                kv_row_store(j->dt, pg_row(j, j->vpool, s, g, p), v, D);
            }
            for (int64_t r = 0; r < R; r++) {
                int64_t h = g * R + r;
                float *q = j->qrot + tok * j->N * D + h * D;
                memcpy(q, j->q + tok * j->q_ld + h * D, sizeof(float) * (size_t)D);
                if (j->rotary) {
                    cpu_rope(q, j->cos + p * j->half, j->sin + p * j->half, j->half, j->interleaved);
                    if (j->qdt != OG_FLOAT32)
                        for (int64_t d = 0; d < D; d++) q[d] = cpu_round_to(j->qdt, q[d]);
                }
            }
        }
    }
}

/* The key positions a token sees: causal up to its own, within the local window. */
static void pg_range(const void *arg, int seq, int64_t i, int64_t *lo, int64_t *hi) {
    const pg_job *j = arg;
    const paged_kv_seq *s = &j->pk->seqs[seq];
    int64_t p = (int64_t)s->past + i, last = j->causal ? p : (int64_t)s->past + s->n - 1;
    *hi = last;
    *lo = j->window > 0 && last + 1 > j->window ? last - j->window + 1 : 0;
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

og_status *cpu_gqa_paged(kernel_ctx *ctx, int layer, const kv_fixed *fixed) {
    const paged_kv *pk = ctx->paged_kv;
    og_dtype qdt = ctx->inputs[0]->dtype;
    float *outf;
    if (pk->codes != (fixed != NULL))
        return kernel_errorf(ctx, OG_ERR_INVALID_ARGUMENT, "paged KV: %s", pk->codes
                             ? "the pool holds the codes of a node's own scales, the node has "
                               "no k_quant_type"
                             : "the node quantizes its cache with its own scales (k_quant_type), "
                               "the pool's rows are not its codes");
    og_dtype code_dt = fixed && fixed[0].bits == 4 ? OG_UINT8 : OG_INT8;
    if (fixed ? pk->dtype != code_dt : !kv_storable(pk->dtype))
        return kernel_errorf(ctx, OG_ERR_INVALID_ARGUMENT, "paged KV: a pool of %s%s",
                             og_dtype_name(pk->dtype), fixed ? " for the node's codes" : "");
    if (kernel_input(ctx, 10))
        return kernel_error(ctx, OG_ERR_UNSUPPORTED, "paged KV: attention_bias (input 10) is "
                            "not supported over a paged cache");
    gqa_node g;
    OG_TRY(gqa_read_node(ctx, &g));
    int64_t B = g.B, S = g.S, N = g.N, KV = g.KV, D = g.D;
    int64_t W = fixed ? (int64_t)kv_fixed_row_bytes(fixed, D) : kv_stored_width(pk->dtype, D);
    if (KV != pk->kv_heads || W != pk->head_size || D > 1024)
        return kernel_errorf(ctx, OG_ERR_INVALID_ARGUMENT, "paged KV: the node has %lld kv heads "
                             "of size %lld (%lld stored as %s), the pool %d of %d", (long long)KV,
                             (long long)D, (long long)W, og_dtype_name(pk->dtype), pk->kv_heads,
                             pk->head_size);
    pg_job j = {.pk = pk, .dt = pk->dtype, .qdt = qdt, .fixed = fixed, .B = B, .S = S, .N = N,
                .KV = KV, .D = D, .half = g.half,
                .causal = g.causal, .rotary = g.rotary, .interleaved = g.interleaved,
                .window = g.window, .cos = g.cos, .sin = g.sin};
    int64_t max_pos = g.rotary ? g.max_pos : INT64_MAX;
    OG_TRY(pg_check_seqs(ctx, &j, max_pos));
    if (pk->layer_runs) pk->layer_runs[layer]++;

    int64_t od[3] = {B, S, N * D}, pd[4] = {B, KV, 0, W};
    tensor *out, *unused;
    OG_TRY(kernel_output(ctx, 0, qdt, 3, od, &out));
    for (int i = 1; i < 3; i++) /* the cache lives in the pool: present comes out empty */
        if (cpu_wants_output(ctx, i)) OG_TRY(kernel_output(ctx, i, j.dt, 4, pd, &unused));
    OG_TRY(cpu_out_f32(ctx, out, &outf));
    memset(outf, 0, sizeof(float) * (size_t)(B * S * N * D)); /* padding tokens */
    if (B * S * N * D == 0 || pk->n_seqs == 0) {
        cpu_out_f32_done(out, outf);
        return NULL;
    }
    gqa_rows nr;
    OG_TRY(gqa_bind_rows(ctx, &g, &nr));
    j.q = nr.q, j.k = nr.k, j.v = nr.v;
    j.q_ld = nr.q_ld, j.k_ld = nr.k_ld, j.v_ld = nr.v_ld;
    j.kpool = pk->k[layer];
    j.vpool = pk->v[layer];
    j.row_bytes = fixed ? kv_fixed_row_bytes(fixed, D) : kv_row_bytes(j.dt, D);
    j.block_bytes = j.row_bytes * (size_t)pk->block_size * (size_t)KV;
    OG_TRY(kernel_scratch(ctx, sizeof(float) * (size_t)(B * S * N * D) + 64, (void **)&j.qrot));
    int64_t tokens = 0;
    for (int i = 0; i < pk->n_seqs; i++) tokens += pk->seqs[i].n;
    double write_ns = (double)(tokens * D) * (double)(2 + N / KV) / (double)pk->n_seqs + 50.0;
    threadpool_parallel_for_cost(ctx->pool, (int64_t)pk->n_seqs * KV, write_ns, pg_write_fn, &j);

    gqa_tiles_seq *ts;
    OG_TRY(kernel_scratch(ctx, sizeof *ts * (size_t)pk->n_seqs + 1, (void **)&ts));
    for (int i = 0; i < pk->n_seqs; i++) {
        const paged_kv_seq *s = &pk->seqs[i];
        ts[i] = (gqa_tiles_seq){.tok0 = pg_token(&j, s, 0), .n = s->n, .key0 = 0,
                                .keys = (int64_t)s->past + s->n, .kbase = j.kpool,
                                .swc_cap = pk->layer_swc_caps ? pk->layer_swc_caps[layer] : 0,
                                .swc_window = j.window,
                                .vbase = j.vpool, .blocks = s->blocks,
                                .block_size = pk->block_size, .block_bytes = j.block_bytes};
    }
    gqa_tiles tl = {.dt = j.dt, .fixed = fixed, .N = N, .KV = KV, .D = D, .scale = g.scale,
                    .softcap = g.softcap, .smooth = g.smooth, .sink = g.sink, .q = j.qrot,
                    .q_ld = N * D, .out = outf, .n_tokens = j.B * j.S, .n_seqs = pk->n_seqs, .seqs = ts,
                    .range = pg_range, .arg = &j};
    OG_TRY(gqa_tiles_run(ctx, &tl));
    cpu_out_f32_done(out, outf);
    return NULL;
}
