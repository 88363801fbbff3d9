/* com.microsoft GroupQueryAttention: causal attention of num_heads query heads over
 * kv_num_heads key/value heads (query head h reads kv head h / (num_heads / kv_num_heads)),
 * with a BNSH key/value cache, as onnxruntime-genai's decoder graphs use it.
 *
 * Lengths. seqlens_k[b] + 1 = T_b is the valid total length of batch entry b and
 * total_sequence_length the batch maximum. When the new sequence length S equals
 * total_sequence_length the step is the first prompt: the S new rows go to cache rows
 * [0, S) (entries shorter than S are right-padded, their padded queries attend to the
 * T_b valid keys). Otherwise the S new rows of entry b go to rows [T_b - S, T_b), after
 * the T_b - S past rows. The present cache has max(past length, total_sequence_length)
 * rows; when it is the same memory as the past (the decode loop's shared buffer, sized
 * max_length) only the new rows are written, otherwise the past rows are copied and the
 * rows after the new ones are zeroed, as the reference runtime does.
 *
 * Positions for the rotary embedding: i (+ position_ids[0][0] when given) in the first
 * prompt, else T_b - S + i (or position_ids[b][i] when given). Rotated Q and K are
 * rounded to the storage type before the products, as the reference runtime keeps them.
 *
 * Scores: scale * q.k, then softcap * tanh(x / softcap), then + attention_bias, over
 * keys [lo, hi] only: hi = min(T_b - 1, past + i) when causal, lo = hi - window + 1 for
 * a local window. The softmax adds exp(sink - max) to its denominator with head_sink
 * (or a zero sink with smooth_softmax). Masked keys are never computed.
 *
 * Window-sized caches (sliding_window_cache=1, onnxruntime's contract): past and present
 * hold C rows (C >= local_window_size W) and rows [0, L) hold the L most recent positions
 * in order, L(T) = T for T <= C, else T - G ceil((T - C) / G) with G = C - W + 1, so that
 * eviction moves the rows only every G steps. The past's L(T - S) rows and the S new
 * ones are gathered into slabs first (float32 for a float32 cache; a narrower cache's rows
 * as it stores them, so that the tiles read them as they read the engine's paged cache);
 * attention indexes the slabs (row r is position base + r); then present rows [0, L(T))
 * are written (rows after them are zero, or untouched when present is the past's buffer). A first prompt shorter than the
 * batch's (right padding) keeps only its valid positions, which onnxruntime refuses.
 *
 * The attention itself (after the keys and values are in float32 slabs) is the tile
 * arithmetic of attention_tiles.h: fixed tiles of absolute key positions, each scored
 * for all query heads of a group at once, merged in order. A query's output therefore
 * does not depend on S, on the batch, or on the thread count: a prompt token, a decoded
 * token and a token of the serving engine's paged batch (attention_paged.c, the same
 * arithmetic over blocks) get the same bits. */
#include "base/vmath.h"
#include "backends/native/kernels/attention/attention.h"
#include "backends/native/kernels/attention/attention_paged.h"
#include "backends/native/kernels/attention/attention_tiles.h"
#include "backends/native/kernels/attention/kv_fixed.h"
#include "backends/native/kernels/attention/kv_rows.h"

#include <math.h>
#include <stdint.h>
#include <stdatomic.h>
#include <string.h>


typedef struct gqa_job {
    og_dtype dt, qdt;                   /* the cache's storage (kv_rows.h); the query's */
    int64_t B, S, N, KV, D, L, M, Tk, tsl, half;
    bool first, causal, interleaved, rotary, smooth;
    int64_t window;
    float scale, softcap;
    /* f32 views of the inputs: query rows have stride q_ld; K and V rows k_ld / v_ld */
    const float *q, *k, *v;
    int64_t q_ld, k_ld, v_ld;
    const void *past_k, *past_v;        /* storage rows, (B, KV, M) */
    void *pres_k, *pres_v;              /* storage rows, (B, KV, L) or NULL */
    bool shared_k, shared_v;
    size_t row;                         /* bytes of a stored row */
    const kv_fixed *fixed;              /* [2]: keys', values' fixed scales (kv_fixed.h), or
                                           NULL: rows as kv_rows.h stores them */
    float *ks, *vs;                     /* f32 keys/values (B*KV, Tk, D), or NULL: the tiles
                                           read the present cache as stored */
    bool slab_stored;                   /* ks / vs hold rows as the cache stores them
                                           ((B*KV, Tk) rows of `row` bytes), not float32 */
    const int64_t *pos;                 /* rotary positions (B*S) */
    const float *cos, *sin;
    const int32_t *seqlens;
    bool swc;                           /* window-sized caches */
    int64_t window_cap;                 /* C */
    const int64_t *base;                /* per batch: position of slab row 0 (swc), or NULL */
    const float *abias, *sink;
    int64_t ab_b, ab_n;                 /* batch and head strides of attention_bias */
    float *rowbuf;                      /* (B*KV, D) for phase 1 */
    float *qrot;                        /* (B*S, N*D) rotated queries for the tiles */
} gqa_job;

static inline int64_t past_len(const gqa_job *j, int64_t b) {
    return j->first ? 0 : (int64_t)j->seqlens[b] + 1 - j->S;
}

/* One row of kv head g stored, n rows loaded, one rounded: with the node's fixed scales
 * (pass 0 keys, 1 values) or in kv_rows.h's layout. */
static inline void row_store(const gqa_job *j, int pass, int64_t g, void *dst, const float *src) {
    if (j->fixed) kv_fixed_store(&j->fixed[pass], g, dst, src, j->D);
    else kv_row_store(j->dt, dst, src, j->D);
}

static inline void rows_load(const gqa_job *j, int pass, int64_t g, const void *src, int64_t n,
                             float *dst) {
    if (j->fixed) kv_fixed_load(&j->fixed[pass], g, src, n, j->D, dst);
    else kv_rows_load(j->dt, src, n, j->D, dst);
}

static inline void row_round(const gqa_job *j, int pass, int64_t g, float *x) {
    if (j->fixed) kv_fixed_round(&j->fixed[pass], g, x, j->D);
    else kv_row_round(j->dt, x, j->D);
}

/* Past rows before the new ones and valid rows of entry b, in slab rows (positions
 * minus base[b] with window-sized caches). */
static inline void slab_lengths(const gqa_job *j, int64_t b, int64_t *P, int64_t *T) {
    int64_t base = j->base ? j->base[b] : 0;
    *P = past_len(j, b) - base;
    *T = (int64_t)j->seqlens[b] + 1 - base;
}


/* The new row i of entry b, kv head g, as float32 (the key rotated) into r. */
static void gqa_new_row(const gqa_job *j, int pass, int64_t b, int64_t g, int64_t i, float *r) {
    const float *src = pass ? j->v : j->k;
    int64_t ld = pass ? j->v_ld : j->k_ld, D = j->D;
    memcpy(r, src + (b * j->S + i) * ld + g * D, sizeof(float) * (size_t)D);
    if (!pass && j->rotary) {
        int64_t p = j->pos[b * j->S + i];
        cpu_rope(r, j->cos + p * j->half, j->sin + p * j->half, j->half, j->interleaved);
    }
}

/* Phase 1 with window-sized caches, per (batch, kv head): the slabs hold the past's
 * resident rows then the S new ones; present rows [0, L(T)) are then written: the past
 * rows kept are moved as stored (a quantized row is never quantized twice), the new ones
 * stored from their float32 values. */
static void gqa_swc_kv_fn(void *arg, int64_t begin, int64_t end) {
    gqa_job *j = arg;
    int64_t D = j->D, S = j->S, C = j->window_cap, KV = j->KV;
    size_t row = j->row;
    for (int64_t bg = begin; bg < end; bg++) {
        int64_t b = bg / KV, g = bg % KV, T0 = past_len(j, b), T = j->seqlens[b] + 1;
        int64_t L0 = T0 - j->base[b], L1 = gqa_swc_resident(T, C, j->window);
        int64_t off = T - L1 - j->base[b]; /* slab row of present row 0 */
        float *tmp = j->rowbuf + bg * D;
        for (int pass = 0; pass < 2; pass++) {
            const char *past = (const char *)(pass ? j->past_v : j->past_k) + (size_t)(bg * C) * row;
            char *pres = pass ? j->pres_v : j->pres_k;
            bool shared = pass ? j->shared_v : j->shared_k;
            if (j->slab_stored) { /* the past's rows as stored, the new ones stored */
                char *sb = (char *)(pass ? j->vs : j->ks) + (size_t)(bg * j->Tk) * row;
                memcpy(sb, past, (size_t)L0 * row);
                for (int64_t i = 0; i < S; i++) {
                    gqa_new_row(j, pass, b, g, i, tmp);
                    row_store(j, pass, g, sb + (size_t)(L0 + i) * row, tmp);
                }
            } else {
                float *slab = (pass ? j->vs : j->ks) + bg * j->Tk * D;
                rows_load(j, pass, g, past, L0, slab);
                for (int64_t i = 0; i < S; i++) {
                    float *r = slab + (L0 + i) * D;
                    gqa_new_row(j, pass, b, g, i, r);
                    row_round(j, pass, g, r);
                }
            }
            if (!pres) continue;
            char *dst = pres + (size_t)(bg * C) * row;
            for (int64_t r = 0; r < L1 && off + r < L0; r++) /* forward: dst row <= src row */
                if (off != 0 || dst != past)
                    memmove(dst + (size_t)r * row, past + (size_t)(off + r) * row, row);
            for (int64_t i = 0; i < S; i++) {
                int64_t r = L0 + i - off;
                if (r < 0 || r >= L1) continue;
                gqa_new_row(j, pass, b, g, i, tmp);
                row_store(j, pass, g, dst + (size_t)r * row, tmp);
            }
            if (!shared && L1 < C) memset(dst + (size_t)L1 * row, 0, (size_t)(C - L1) * row);
        }
    }
}

/* Phase 1, per (batch, kv head): the new rows into the present cache as stored (the past
 * copied before them when present is not the past's buffer) and, when the tiles read
 * float32 slabs instead, the slabs. */
static void gqa_kv_fn(void *arg, int64_t begin, int64_t end) {
    gqa_job *j = arg;
    int64_t D = j->D, S = j->S, L = j->L, M = j->M, KV = j->KV;
    size_t row = j->row;
    for (int64_t bg = begin; bg < end; bg++) {
        int64_t b = bg / KV, g = bg % KV, P = past_len(j, b), T = j->seqlens[b] + 1;
        float *tmp = j->rowbuf + bg * D;
        for (int pass = 0; pass < 2; pass++) {
            const void *past = pass ? j->past_v : j->past_k;
            char *pres = pass ? j->pres_v : j->pres_k;
            bool shared = pass ? j->shared_v : j->shared_k;
            float *slab = j->ks && !j->slab_stored ? (pass ? j->vs : j->ks) + bg * j->Tk * D : NULL;
            char *sb = j->ks && j->slab_stored ? (char *)(pass ? j->vs : j->ks) + (size_t)(bg * j->Tk) * row
                                               : NULL;
            if (pres) {
                char *dst = pres + (size_t)(bg * L) * row;
                if (!shared && P > 0)
                    memcpy(dst, (const char *)past + (size_t)(bg * M) * row, (size_t)P * row);
                if (!shared && P + S < L) memset(dst + (size_t)(P + S) * row, 0, (size_t)(L - P - S) * row);
            }
            for (int64_t i = 0; i < S; i++) {
                gqa_new_row(j, pass, b, g, i, tmp);
                if (pres) row_store(j, pass, g, pres + (size_t)(bg * L + P + i) * row, tmp);
                if (slab && P + i < T) {
                    memcpy(slab + (P + i) * D, tmp, sizeof(float) * (size_t)D);
                    row_round(j, pass, g, slab + (P + i) * D);
                }
                if (sb && P + i < T) row_store(j, pass, g, sb + (size_t)(P + i) * row, tmp);
            }
            if ((slab || sb) && P > 0) {
                const char *from = pres ? pres + (size_t)(bg * L) * row
                                        : (const char *)past + (size_t)(bg * M) * row;
                if (sb)
                    memcpy(sb, from, (size_t)P * row);
                else
                    rows_load(j, pass, g, from, P, slab);
            }
        }
    }
}

/* The queries of batch entries [begin, end), rotated and rounded, into qrot. */
static void gqa_queries_fn(void *arg, int64_t begin, int64_t end) {
    gqa_job *j = arg;
    int64_t D = j->D;
    for (int64_t b = begin; b < end; b++)
        for (int64_t i = 0; i < j->S; i++)
            for (int64_t h = 0; h < j->N; h++) {
                float *q = j->qrot + ((b * j->S + i) * j->N + h) * D;
                memcpy(q, j->q + (b * j->S + i) * j->q_ld + h * D, sizeof(float) * (size_t)D);
                if (!j->rotary) continue;
                int64_t p = j->pos[b * j->S + i];
                cpu_rope(q, j->cos + p * j->half, j->sin + p * j->half, j->half, j->interleaved);
                if (j->qdt != OG_FLOAT32)
                    for (int64_t d = 0; d < D; d++) q[d] = cpu_round_to(j->qdt, q[d]);
            }
}

/* The key range [lo, hi] query i of entry b (past length P, total T) attends to, in slab
 * rows. Padded queries of a first prompt (i >= T) keep their unclamped window start, as
 * the reference does; its output there is zero when the window holds no valid key. */
static inline void key_range(const gqa_job *j, int64_t P, int64_t T, int64_t i, int64_t *lo,
                             int64_t *hi) {
    int64_t last = j->causal ? P + i : T - 1, h = last < T - 1 ? last : T - 1;
    int64_t l = j->window > 0 && last + 1 > j->window ? last - j->window + 1 : 0;
    *hi = h;
    *lo = l; /* past hi for a padded query whose whole window is padding: no keys */
}

/* attention_tiles callbacks: ranges and bias rows in absolute positions. */
static void gqa_tile_range(const void *arg, int b, int64_t i, int64_t *lo, int64_t *hi) {
    const gqa_job *j = arg;
    int64_t P, T, base = j->base ? j->base[b] : 0;
    slab_lengths(j, b, &P, &T);
    key_range(j, P, T, i, lo, hi);
    *lo += base;
    *hi += base;
}

static const float *gqa_tile_bias(const void *arg, int b, int64_t i, int64_t h) {
    const gqa_job *j = arg;
    return j->abias + b * j->ab_b + h * j->ab_n + i * j->tsl;
}

/* ---------- input checks ---------- */

static og_status *unsupported_inputs(kernel_ctx *ctx) {
    static const struct { int i; const char *name; } extra[] = {
        {14, "q_norm_weight"}, {15, "k_norm_weight"}};
    for (size_t e = 0; e < sizeof extra / sizeof extra[0]; e++)
        if (kernel_input(ctx, extra[e].i))
            return kernel_errorf(ctx, OG_ERR_UNSUPPORTED, "input %d (%s) is not implemented on "
                                 "CPU (fused Q-K norm)", extra[e].i, extra[e].name);
    const graph_node *n = ctx->node;
    if (graph_attr_int(n, "qk_output", 0) != 0 || cpu_wants_output(ctx, 3))
        return kernel_error(ctx, OG_ERR_UNSUPPORTED, "output 3 (output_qk) / qk_output is not "
                            "implemented");
    return NULL;
}

/* A quantization type attribute: 0 NONE, 1 PER_TENSOR, 2 PER_CHANNEL, -1 other. */
static int quant_mode(const char *v) {
    return !strcmp(v, "NONE") ? 0 : !strcmp(v, "PER_TENSOR") ? 1 : !strcmp(v, "PER_CHANNEL") ? 2 : -1;
}

/* The node's fixed-scale quantization (kv_fixed.h): k_quant_type / v_quant_type,
 * kv_cache_bit_width and the k_scale / v_scale inputs, checked; *on false when the node
 * has none (the cache is then stored as kv_rows.h says). */
static og_status *gqa_fixed_scales(kernel_ctx *ctx, int64_t KV, int64_t D, kv_fixed fx[2],
                                   bool *on) {
    const graph_node *n = ctx->node;
    static const char *const attr[2] = {"k_quant_type", "v_quant_type"};
    static const char *const name[2] = {"k_scale", "v_scale"};
    int mode[2];
    for (int p = 0; p < 2; p++) {
        const char *v = graph_attr_string(n, attr[p], "NONE");
        mode[p] = quant_mode(v);
        if (mode[p] < 0)
            return kernel_errorf(ctx, OG_ERR_INVALID_MODEL, "%s is '%s' (NONE, PER_TENSOR or "
                                 "PER_CHANNEL expected)", attr[p], v);
    }
    *on = mode[0] || mode[1];
    if (!*on) {
        for (int p = 0; p < 2; p++)
            if (kernel_input(ctx, 12 + p))
                return kernel_errorf(ctx, OG_ERR_INVALID_MODEL, "input %d (%s) is given but %s is "
                                     "NONE", 12 + p, name[p], attr[p]);
        return NULL;
    }
    if (mode[0] != mode[1])
        return kernel_errorf(ctx, OG_ERR_UNSUPPORTED, "k_quant_type %s and v_quant_type %s "
                             "differ (onnxruntime's CPU kernel requires them equal; so do we)",
                             graph_attr_string(n, attr[0], "NONE"),
                             graph_attr_string(n, attr[1], "NONE"));
    int64_t bits = graph_attr_int(n, "kv_cache_bit_width", 0);
    const tensor *pk = kernel_input(ctx, 3);
    if (pk && pk->dtype == OG_FLOAT8E4M3FN)
        return kernel_error(ctx, OG_ERR_UNSUPPORTED, "a float8e4m3fn cache with k_scale / v_scale "
                            "(kv_cache_quant_scheme fp8_*): onnxruntime's CPU kernel does not run "
                            "it either, so there is no reference to match");
    if (bits != 8 && bits != 4)
        return kernel_errorf(ctx, OG_ERR_INVALID_MODEL, "kv_cache_bit_width is %lld (8 or 4 "
                             "expected with k_quant_type %s)", (long long)bits,
                             graph_attr_string(n, attr[0], "NONE"));
    if (D > KV_FIXED_MAX_HEAD)
        return kernel_errorf(ctx, OG_ERR_UNSUPPORTED, "a quantized cache of head size %lld (at "
                             "most %d)", (long long)D, KV_FIXED_MAX_HEAD);
    for (int p = 0; p < 2; p++) {
        const tensor *t = kernel_input(ctx, 12 + p);
        if (!t)
            return kernel_errorf(ctx, OG_ERR_INVALID_MODEL, "%s is %s but input %d (%s) is absent",
                                 attr[p], mode[p] == 1 ? "PER_TENSOR" : "PER_CHANNEL", 12 + p,
                                 name[p]);
        OG_TRY(cpu_want_dtype(ctx, 12 + p, name[p], OG_FLOAT32));
        int64_t want = mode[p] == 2 ? KV * D : 1, have = tensor_count(t);
        if (have != want)
            return kernel_errorf(ctx, OG_ERR_INVALID_ARGUMENT, "input %d (%s) has %lld values, "
                                 "expected %lld (%s: %s)", 12 + p, name[p], (long long)have,
                                 (long long)want, attr[p],
                                 mode[p] == 2 ? "kv_num_heads * head_size" : "one");
        fx[p] = (kv_fixed){.bits = (int)bits, .per_channel = mode[p] == 2, .scale = t->data};
    }
    return NULL;
}

/* Window-sized caches: the capacity, the lengths' checks and each entry's slab base. */
static og_status *gqa_swc_setup(kernel_ctx *ctx, gqa_job *j, bool has_past) {
    if (!has_past || j->window <= 0 || j->M < j->window)
        return kernel_errorf(ctx, OG_ERR_INVALID_MODEL, "sliding_window_cache=1 needs past_key "
                             "and past_value of capacity C >= local_window_size (got %s, "
                             "local_window_size %lld)", has_past ? "a smaller C" : "no past",
                             (long long)j->window);
    j->window_cap = j->L = j->M;
    int64_t *base;
    OG_TRY(kernel_scratch(ctx, sizeof(int64_t) * (size_t)j->B + 1, (void **)&base));
    for (int64_t b = 0; b < j->B; b++) {
        int64_t T = (int64_t)j->seqlens[b] + 1;
        if (T < 1 || (j->first ? T > j->S : T < j->S))
            return kernel_errorf(ctx, OG_ERR_INVALID_ARGUMENT, "seqlens_k[%lld] = %d does not fit: "
                                 "total length must be at least 1 and %s the new sequence "
                                 "length %lld", (long long)b, j->seqlens[b],
                                 j->first ? "at most" : "at least", (long long)j->S);
        int64_t T0 = past_len(j, b);
        base[b] = T0 - gqa_swc_resident(T0, j->M, j->window);
    }
    j->base = base;
    return NULL;
}

/* Rotary positions per (batch, new row), checked against the cache length. */
static og_status *gqa_positions(kernel_ctx *ctx, gqa_job *j, int64_t max_pos) {
    const tensor *pid = kernel_input(ctx, 9);
    int64_t *pos;
    OG_TRY(kernel_scratch(ctx, sizeof(int64_t) * (size_t)(j->B * j->S) + 1, (void **)&pos));
    const int64_t *p = NULL;
    bool shared_row = false;
    if (pid) {
        if (pid->dtype != OG_INT64)
            return kernel_errorf(ctx, OG_ERR_INVALID_ARGUMENT, "input 9 (position_ids) is %s, "
                                 "expected int64", og_dtype_name(pid->dtype));
        if (pid->rank != 2 || (pid->dims[0] != j->B && pid->dims[0] != 1) || pid->dims[1] != j->S) {
            char a[96];
            return kernel_errorf(ctx, OG_ERR_INVALID_ARGUMENT, "input 9 (position_ids) has shape "
                                 "%s, expected (%lld, %lld)", shape_str(pid->dims, pid->rank, a, sizeof a),
                                 (long long)j->B, (long long)j->S);
        }
        p = pid->data;
        shared_row = pid->dims[0] == 1;
    }
    for (int64_t b = 0; b < j->B; b++)
        for (int64_t i = 0; i < j->S; i++) {
            int64_t v;
            if (j->first)
                v = (p ? p[0] : 0) + i;
            else
                v = p ? p[(shared_row ? 0 : b) * j->S + i] : past_len(j, b) + i;
            if (v < 0 || v >= max_pos)
                return kernel_errorf(ctx, OG_ERR_INVALID_ARGUMENT, "rotary position %lld of batch "
                                     "%lld, token %lld is outside the cos/sin caches (%lld rows)",
                                     (long long)v, (long long)b, (long long)i, (long long)max_pos);
            pos[b * j->S + i] = v;
        }
    j->pos = pos;
    return NULL;
}

/* The dtype the cache is stored in (kv_rows.h): the past's, else the one the graph
 * declares for present_key, else the query's. A cache narrower than the query (a float32
 * model's cache kept in float16 or quantized, onnx-genai's --kv-dtype) is read as stored. */
static og_status *gqa_storage(kernel_ctx *ctx, og_dtype qdt, int64_t D, const kv_fixed *fx,
                              og_dtype *kdt) {
    const tensor *pk = kernel_input(ctx, 3), *pv = kernel_input(ctx, 4);
    if (fx) { /* the builder's int8 / packed int4 caches */
        og_dtype want = fx->bits == 8 ? OG_INT8 : OG_UINT8;
        for (int p = 0; p < 2; p++) {
            const tensor *t = p ? pv : pk;
            if (t && t->dtype != want)
                return kernel_errorf(ctx, OG_ERR_INVALID_ARGUMENT, "input %d (%s) is %s, expected "
                                     "%s (kv_cache_bit_width %d)", 3 + p,
                                     p ? "past_value" : "past_key", og_dtype_name(t->dtype),
                                     og_dtype_name(want), fx->bits);
        }
        *kdt = want;
        return NULL;
    }
    og_dtype dt = qdt;
    if (pk) {
        dt = pk->dtype;
    } else if (ctx->graph && ctx->n_outputs > 1 && ctx->node->outputs[1] >= 0) {
        og_dtype declared = ctx->graph->values[ctx->node->outputs[1]].dtype;
        if (kv_storable(declared)) dt = declared;
    }
    if (!kv_storable(dt))
        return kernel_errorf(ctx, OG_ERR_INVALID_ARGUMENT, "input 3 (past_key) is %s: a cache "
                             "is stored as float32, float16, bfloat16, or int8 / float8e4m3fn "
                             "rows with a scale each (no k_scale input)", og_dtype_name(dt));
    if (pv && pv->dtype != dt)
        return kernel_errorf(ctx, OG_ERR_INVALID_ARGUMENT, "input 4 (past_value) is %s, past_key "
                             "%s: the two caches are stored alike", og_dtype_name(pv->dtype),
                             og_dtype_name(dt));
    if (kv_quantized(dt) && D > KV_MAX_HEAD)
        return kernel_errorf(ctx, OG_ERR_UNSUPPORTED, "a %s cache of head size %lld (at most %d)",
                             og_dtype_name(dt), (long long)D, KV_MAX_HEAD);
    *kdt = dt;
    return NULL;
}

og_status *cpu_contrib_gqa(kernel_ctx *ctx) {
    OG_TRY(kernel_require_inputs(ctx, 1));
    int paged_layer = paged_kv_layer_of(ctx);
    if (paged_layer >= 0) {
        OG_TRY(unsupported_inputs(ctx));
        if (!cpu_is_f32able(ctx->inputs[0]->dtype))
            return kernel_unsupported_dtype(ctx, 0, ctx->inputs[0]->dtype);
        /* the builder's quantized cache: the pool holds the codes, the node its scales */
        kv_fixed fixed[2];
        bool has_fixed = false;
        gqa_node g;
        OG_TRY(gqa_read_node(ctx, &g));
        OG_TRY(gqa_fixed_scales(ctx, g.KV, g.D, fixed, &has_fixed));
        return cpu_gqa_paged(ctx, paged_layer, has_fixed ? fixed : NULL);
    }
    const graph_node *node = ctx->node;
    const tensor *q = ctx->inputs[0];
    const tensor *pk = kernel_input(ctx, 3), *pv = kernel_input(ctx, 4);
    const tensor *sl = kernel_input(ctx, 5), *tl = kernel_input(ctx, 6);
    const tensor *ab = kernel_input(ctx, 10);
    og_dtype dt = q->dtype;
    if (!cpu_is_f32able(dt)) return kernel_unsupported_dtype(ctx, 0, dt);
    OG_TRY(unsupported_inputs(ctx));
    kv_fixed fixed[2];
    bool has_fixed = false;
    if (!sl || !tl)
        return kernel_error(ctx, OG_ERR_INVALID_MODEL, "inputs 5 (seqlens_k) and 6 "
                            "(total_sequence_length) are required");
    OG_TRY(cpu_want_dtype(ctx, 5, "seqlens_k", OG_INT32));
    OG_TRY(cpu_want_dtype(ctx, 6, "total_sequence_length", OG_INT32));
    gqa_node g;
    OG_TRY(gqa_read_node(ctx, &g));
    OG_TRY(gqa_fixed_scales(ctx, g.KV, g.D, fixed, &has_fixed));
    og_dtype kdt = OG_UNDEFINED;
    OG_TRY(gqa_storage(ctx, dt, g.D, has_fixed ? fixed : NULL, &kdt));
    size_t row = has_fixed ? kv_fixed_row_bytes(fixed, g.D) : kv_row_bytes(kdt, g.D);
    gqa_job j = {.dt = kdt, .qdt = dt, .row = row, .fixed = has_fixed ? fixed : NULL, .N = g.N, .KV = g.KV, .causal = g.causal, .rotary = g.rotary,
                 .interleaved = g.interleaved, .smooth = g.smooth, .window = g.window,
                 .softcap = g.softcap, .scale = g.scale, .half = g.half, .cos = g.cos,
                 .sin = g.sin, .sink = g.sink};
    char a[96];
    int64_t B = g.B, S = g.S, N = g.N, KV = g.KV, D = g.D;
    j.B = B, j.S = S, j.D = D;
    int64_t W = has_fixed ? (int64_t)row : kv_stored_width(kdt, D);
    OG_TRY(cpu_want_past_kv(ctx, 3, 4, B, KV, W, W, &j.M));
    int64_t one = 1;
    OG_TRY(cpu_want_shape(ctx, 5, "seqlens_k", 1, &B));
    if (tensor_count(tl) != 1 || tl->rank > 1)
        OG_TRY(cpu_want_shape(ctx, 6, "total_sequence_length", 1, &one));
    j.tsl = *(const int32_t *)tl->data;
    j.first = S == j.tsl;
    j.L = pk && j.M > j.tsl ? j.M : j.tsl;
    j.seqlens = sl->data;
    j.swc = graph_attr_int(node, "sliding_window_cache", 0) != 0;
    /* total_sequence_length is the attention mask's width: with a cache that grows by
     * the new rows it is past + new, with one of fixed capacity (the decode loop's shared
     * buffer) at most the capacity. Anything else is a past that disagrees with the mask,
     * refused as onnxruntime refuses it (a window-sized cache is exempt there too). */
    int64_t P = pk ? j.M : 0;
    if (!j.swc && j.tsl != P + S && j.tsl > P)
        return kernel_errorf(ctx, OG_ERR_INVALID_ARGUMENT, "total_sequence_length %lld disagrees "
                             "with the past: past_key has %lld rows and %lld are new, so it "
                             "must be %lld (a growing cache) or at most %lld (a cache of fixed "
                             "capacity)", (long long)j.tsl, (long long)P, (long long)S,
                             (long long)(P + S), (long long)P);
    if (j.swc) OG_TRY(gqa_swc_setup(ctx, &j, pk != NULL));
    for (int64_t b = 0; b < B && !j.swc; b++) {
        int64_t T = (int64_t)j.seqlens[b] + 1;
        bool ok = T >= 1 && T <= j.L && (j.first ? T <= S : T >= S);
        if (ok && !j.first && T - S > (pk ? j.M : 0)) ok = false;
        if (!ok)
            return kernel_errorf(ctx, OG_ERR_INVALID_ARGUMENT, "seqlens_k[%lld] = %d does not fit: "
                                 "total length must be in [1, %lld], %s the new sequence length "
                                 "%lld and leave at most %lld past rows (total_sequence_length %lld)",
                                 (long long)b, j.seqlens[b], (long long)j.L,
                                 j.first ? "at most" : "at least", (long long)S,
                                 (long long)(pk ? j.M : 0), (long long)j.tsl);
    }
    if (j.rotary) OG_TRY(gqa_positions(ctx, &j, g.max_pos));
    if (ab) {
        if (ab->rank != 4 || (ab->dims[0] != B && ab->dims[0] != 1) ||
            (ab->dims[1] != N && ab->dims[1] != 1) || ab->dims[2] != S || ab->dims[3] < j.tsl)
            return kernel_errorf(ctx, OG_ERR_INVALID_ARGUMENT, "input 10 (attention_bias) has shape "
                                 "%s, expected (%lld or 1, %lld or 1, %lld, %lld)",
                                 shape_str(ab->dims, ab->rank, a, sizeof a), (long long)B,
                                 (long long)N, (long long)S, (long long)j.tsl);
        for (int64_t b = 0; b < B; b++)
            if (j.seqlens[b] + 1 > ab->dims[3])
                return kernel_errorf(ctx, OG_ERR_INVALID_ARGUMENT, "seqlens_k[%lld] + 1 exceeds "
                                     "attention_bias' last dimension %lld", (long long)b,
                                     (long long)ab->dims[3]);
        j.tsl = ab->dims[3]; /* the row stride */
        j.ab_n = ab->dims[1] == 1 ? 0 : S * j.tsl;
        j.ab_b = ab->dims[0] == 1 ? 0 : ab->dims[1] * S * j.tsl;
        OG_TRY(cpu_in_f32(ctx, 10, &j.abias));
    }

    int64_t od[3] = {B, S, N * D}, pd[4] = {B, KV, j.L, W};
    tensor *out, *prk = NULL, *prv = NULL;
    OG_TRY(kernel_output(ctx, 0, dt, 3, od, &out));
    if (cpu_wants_output(ctx, 1)) OG_TRY(kernel_output(ctx, 1, kdt, 4, pd, &prk));
    if (cpu_wants_output(ctx, 2)) OG_TRY(kernel_output(ctx, 2, kdt, 4, pd, &prv));
    if (B * S * N * D == 0) {
        /* nothing new: present is still the past plus zeroed rows */
        for (int pass = 0; pass < 2; pass++) {
            tensor *pr = pass ? prv : prk;
            const tensor *pa = pass ? pv : pk;
            if (!pr || (pa && pa->data == pr->data)) continue;
            memset(pr->data, 0, pr->nbytes);
        }
        return NULL;
    }

    gqa_rows nr;
    OG_TRY(gqa_bind_rows(ctx, &g, &nr));
    j.q = nr.q, j.k = nr.k, j.v = nr.v;
    j.q_ld = nr.q_ld, j.k_ld = nr.k_ld, j.v_ld = nr.v_ld;
    j.past_k = pk ? pk->data : NULL;
    j.past_v = pv ? pv->data : NULL;
    j.pres_k = prk ? prk->data : NULL;
    j.pres_v = prv ? prv->data : NULL;
    j.shared_k = prk && pk && pk->data == prk->data;
    j.shared_v = prv && pv && pv->data == prv->data;

    /* The tiles read the present cache as stored; slabs only where there is no present to
     * read (window-sized caches: their slabs hold the past's rows and all new ones, the
     * present is written after; or a node that returns no present). A float32 cache's
     * slabs are float32 (onnxruntime's order reads them, attention_ort.h); a narrower
     * one's hold its rows as stored, read by the tiles as the engine's paged cache is, so
     * that a window-sized int8 / float8 / float16 cache gives the engine's bits. */
    bool direct = !j.swc && prk && prv;
    j.slab_stored = !direct && (j.fixed || kdt != OG_FLOAT32);
    int64_t Tk = 0;
    for (int64_t b = 0; b < B; b++) {
        int64_t rows = j.swc ? past_len(&j, b) - j.base[b] + S : j.seqlens[b] + 1;
        if (rows > Tk) Tk = rows;
    }
    j.Tk = direct ? j.L : Tk;
    if (!direct) {
        size_t slab = (j.slab_stored ? j.row : sizeof(float) * (size_t)D) * (size_t)(B * KV * j.Tk) + 64;
        OG_TRY(kernel_scratch(ctx, slab, (void **)&j.ks));
        OG_TRY(kernel_scratch(ctx, slab, (void **)&j.vs));
    }
    OG_TRY(kernel_scratch(ctx, sizeof(float) * (size_t)(B * KV * D) + 1, (void **)&j.rowbuf));
    /* per (batch, kv head): the new rows rotated and stored, the past copied or loaded
     * where it is not the present's buffer (about 1 ns per value moved) */
    bool past_moves = !direct || !(j.shared_k && j.shared_v);
    double kv_ns = (double)(S * D) * 4.0 + (past_moves ? (double)(Tk * D) * 2.0 : 0.0);
    threadpool_parallel_for_cost(ctx->pool, B * KV, kv_ns, j.swc ? gqa_swc_kv_fn : gqa_kv_fn, &j);

    /* phase 2: attention over fixed key tiles (attention_tiles.h) */
    float *outf;
    OG_TRY(cpu_out_f32(ctx, out, &outf));
    OG_TRY(kernel_scratch(ctx, sizeof(float) * (size_t)(B * S * N * D) + 64, (void **)&j.qrot));
    threadpool_parallel_for_cost(ctx->pool, B, (double)(S * N * D) * 2.0, gqa_queries_fn, &j);
    gqa_tiles_seq *ts;
    OG_TRY(kernel_scratch(ctx, sizeof *ts * (size_t)B + 1, (void **)&ts));
    for (int64_t b = 0; b < B; b++) {
        int64_t base = j.base ? j.base[b] : 0;
        size_t per_b = (direct || j.slab_stored ? j.row : sizeof(float) * (size_t)D) * (size_t)(KV * j.Tk);
        const char *kb = direct ? (const char *)j.pres_k : (const char *)j.ks;
        const char *vb = direct ? (const char *)j.pres_v : (const char *)j.vs;
        ts[b] = (gqa_tiles_seq){.tok0 = b * S, .n = S, .key0 = base,
                                .keys = (int64_t)j.seqlens[b] + 1,
                                .swc_cap = j.swc ? j.window_cap : 0, .swc_window = j.window,
                                .kbase = kb + (size_t)b * per_b, .vbase = vb + (size_t)b * per_b,
                                .block_size = j.Tk, .block_bytes = per_b};
    }
    bool as_stored = direct || j.slab_stored;
    gqa_tiles tiles = {.dt = as_stored ? kdt : OG_FLOAT32, .fixed = as_stored ? j.fixed : NULL, .N = N, .KV = KV, .D = D, .scale = j.scale,
                    .softcap = j.softcap, .smooth = j.smooth, .sink = j.sink, .q = j.qrot,
                    .q_ld = N * D, .out = outf, .n_tokens = B * S, .n_seqs = (int)B, .seqs = ts,
                    .range = gqa_tile_range, .bias = j.abias ? gqa_tile_bias : NULL, .arg = &j};
    OG_TRY(gqa_tiles_run(ctx, &tiles));
    cpu_out_f32_done(out, outf);
    return NULL;
}
