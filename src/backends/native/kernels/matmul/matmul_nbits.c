/* com.microsoft MatMulNBits (see matmul_nbits.h for the arithmetic): the kernel entry,
 * the per-call preparation of A, the thread split and the portable column loop.
 *
 * Constant 4-bit weights (without float zero points) are prepacked when the session
 * opens and run on matmul_nbits_pack.c, float arithmetic there through three int8 digits
 * of A. Otherwise the weights are read as stored (row per output
 * column, the order an M=1 product streams best): that path is below. Short A
 * (decode) runs column kernels over ranges of N on the pool, each column's bytes read
 * once for up to four rows of A. Long A in float arithmetic runs the sgemm with the
 * weights dequantized straight into its B panels; in int8 arithmetic the column kernels
 * run over row tiles with the column block kept in L1.
 *
 * Batch invariance: the packed path and the column kernels each compute an element of Y
 * with one arithmetic whatever M is (the column kernels: the same chunk order, products
 * and final reduction for one row or a tile of four). The one exception is float
 * arithmetic on weights as stored (levels 0-3, not prepacked): from MNB_GEMM_MIN_M rows on,
 * the sgemm over dequantized panels sums in another order than the column kernels below
 * it (ARCHITECTURE.md, "Batch invariance"). */
#include "backends/native/kernels/matmul/gemm_f32.h"
#include "backends/native/kernels/matmul/matmul_nbits.h"
#include "backends/native/kernels/matmul/matmul_nbits_pack.h"
#include "backends/native/kernels/matmul/matmul.h"

#include "base/half.h"
#include "base/pack_cache.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

enum {
    MR = 4,          /* rows of A per column kernel call */
    NB = 16,         /* columns per L1 block in the row-tile loop */
    MAX_BLOCK = 256, /* onnxruntime's limit too */
};

static int64_t round_up(int64_t v, int64_t to) { return (v + to - 1) / to * to; }

static bool use_gemm(const mnb_problem *p) { return !p->int8 && p->M >= MNB_GEMM_MIN_M; }

static int64_t a_stride(const mnb_problem *p) { return round_up(p->k_blocks * p->block_size, 128); }
static int64_t s_stride(const mnb_problem *p) { return round_up(p->k_blocks, 16) + 16; }
/* The float product of long A: its B comes panel by panel (dequant_panel). */
static gemm_f32_args panel_gemm(const mnb_problem *p) {
    gemm_f32_args g = {false, false, p->M, p->N, p->K, 1.0f, 0.0f, p->A, p->K, NULL, 0,
                       p->Y, p->N};
    return g;
}

size_t mnb_work_size(const mnb_problem *p) {
    if (use_gemm(p)) {
        gemm_f32_args g = panel_gemm(p);
        return gemm_f32_panels_work_size(&g);
    }
    size_t a = (size_t)(p->M * a_stride(p)) * (p->int8 ? 1 : sizeof(float));
    size_t lanes = p->int8 ? (size_t)(p->M * a_stride(p) / 4) * sizeof(int32_t) : 0;
    return (size_t)round_up((int64_t)a, 64) + 2 * (size_t)(p->M * s_stride(p)) * sizeof(float) +
           lanes;
}

/* ---- A preparation --------------------------------------------------------------- */

typedef struct prep_job {
    const mnb_problem *p;
    mnb_job *j;
} prep_job;

static void prep_rows(void *arg, int64_t r0, int64_t r1) {
    const prep_job *pj = arg;
    const mnb_problem *p = pj->p;
    const mnb_job *j = pj->j;
    int64_t bs = p->block_size;
    for (int64_t m = r0; m < r1; m++) {
        const float *a = p->A + m * p->K;
        float *sc = (float *)j->a_scale + m * j->s_stride, *corr = (float *)j->a_corr + m * j->s_stride;
        memset(sc, 0, sizeof(float) * (size_t)j->s_stride);
        memset(corr, 0, sizeof(float) * (size_t)j->s_stride);
        if (p->int8) {
            int8_t *row = (int8_t *)j->aq + m * j->a_stride, q[MAX_BLOCK];
            int64_t lanes = j->a_stride / j->lane_values;
            int32_t *lane = (int32_t *)j->a_lane + m * lanes;
            int32_t zdef = 1 << (p->bits - 1);
            memset(row, 0, (size_t)j->a_stride);
            memset(lane, 0, sizeof(int32_t) * (size_t)lanes);
            const int64_t lv = j->lane_values;
            const bool permute = mnb_a_pos(p, 1, j->x512) != 1;
            if (permute) { /* the ISA kernels' 4-bit order: quantize in K order, then reorder */
                for (int64_t b = 0; b < p->k_blocks; b++) {
                    int64_t k0 = b * bs, len = p->K - k0 < bs ? p->K - k0 : bs;
                    int32_t sum;
                    mnb_x512_quantize_block(a + k0, len, row + k0, &sc[b], &sum);
                    corr[b] = sc[b] * (float)sum;
                }
                mnb_x512_finish_row4(row, j->a_stride, zdef, lane);
                continue;
            }
            for (int64_t b = 0; b < p->k_blocks; b++) {
                int64_t k0 = b * bs, len = p->K - k0 < bs ? p->K - k0 : bs;
                int32_t sum;
                if (j->x512)
                    mnb_x512_quantize_block(a + k0, len, q, &sc[b], &sum);
                else
                    mnb_quantize_block(a + k0, len, q, &sc[b], &sum);
                corr[b] = sc[b] * (float)sum;
                if (permute)
                    for (int64_t i = 0; i < len; i++) row[mnb_a_pos(p, k0 + i, j->x512)] = q[i];
                else
                    memcpy(row + k0, q, (size_t)len);
                /* lanes never straddle blocks: k0 and block sizes are multiples of lv */
                for (int64_t i = 0; i < len; i += lv) {
                    int32_t ls = 0;
                    for (int64_t t = i; t < i + lv && t < len; t++) ls += q[t];
                    lane[(k0 + i) / lv] = -zdef * ls;
                }
            }
        } else {
            float *row = (float *)j->af + m * j->a_stride;
            memset(row, 0, sizeof(float) * (size_t)j->a_stride);
            for (int64_t k = 0; k < p->K; k++) row[mnb_a_pos(p, k, j->x512)] = a[k];
            /* block sums serve zero points (for 4 bits the default one is in the table) */
            if (p->zp_float || p->zp_packed || p->bits != 4)
                for (int64_t b = 0; b < p->k_blocks; b++) {
                    float t = 0.0f;
                    for (int64_t k = b * bs; k < (b + 1) * bs && k < p->K; k++) t += a[k];
                    corr[b] = t;
                }
        }
    }
}

/* ---- the portable column loop (any bits; the reference's arithmetic, in float) --- */

static void generic_column(const mnb_job *j, int64_t m, int64_t n) {
    const mnb_problem *p = j->p;
    int64_t bs = p->block_size;
    float acc = 0.0f;
    for (int64_t b = 0; b < p->k_blocks; b++) {
        int64_t k0 = b * bs, len = p->K - k0 < bs ? p->K - k0 : bs;
        float z = mnb_zero_point(p, n, b), s = p->scales[n * p->k_blocks + b];
        if (p->int8) {
            const int8_t *q = j->aq + m * j->a_stride + k0;
            int32_t dot = 0, zi = (int32_t)z;
            for (int64_t i = 0; i < len; i++) dot += q[i] * (mnb_weight(p, n, k0 + i) - zi);
            acc += j->a_scale[m * j->s_stride + b] * s * (float)dot;
        } else {
            const float *a = j->af + m * j->a_stride + k0;
            float d = 0.0f;
            for (int64_t i = 0; i < len; i++) d += a[i] * ((float)mnb_weight(p, n, k0 + i) - z);
            acc += d * s;
        }
    }
    p->Y[m * p->N + n] = acc + (p->bias ? p->bias[n] : 0.0f);
}

static void columns(void *arg, int64_t n0, int64_t n1) {
    const mnb_job *j = arg;
    const mnb_problem *p = j->p;
    bool fast = j->x512;
    if (fast && p->M <= MR) { /* one row tile: no column blocking needed */
        mnb_x512_columns(j, 0, (int)p->M, n0, n1);
        return;
    }
    for (int64_t nb = n0; nb < n1; nb += NB) {
        int64_t ne = nb + NB < n1 ? nb + NB : n1;
        for (int64_t m = 0; m < p->M; m += MR) {
            int mr = p->M - m < MR ? (int)(p->M - m) : MR;
            if (fast) {
                mnb_x512_columns(j, m, mr, nb, ne);
                continue;
            }
            for (int r = 0; r < mr; r++)
                for (int64_t n = nb; n < ne; n++) generic_column(j, m + r, n);
        }
    }
}

/* Short A (decode) hands out ranges of columns by guided self-scheduling: each claim
 * takes a share of what is left (down to a few KiB of weights), so the first pieces are
 * long runs the prefetch streams well and the last ones short, and neither thread waits
 * long on the other's final piece (the pool's fixed 4 chunks per thread left one
 * thread idle for up to an eighth of the product). Every piece starts at a multiple of
 * 4 columns, the 4-column kernels' step. */
typedef struct col_sched {
    const mnb_job *j;
    atomic_llong next;
    int64_t n, min_piece, parts;
} col_sched;

static void guided_columns(void *arg, int64_t t0, int64_t t1) {
    col_sched *cs = arg;
    (void)t0, (void)t1; /* one call per thread; the pieces come from cs->next */
    for (;;) {
        long long cur = atomic_load_explicit(&cs->next, memory_order_relaxed);
        int64_t end;
        do {
            if (cur >= cs->n) return;
            int64_t take = (cs->n - cur) / cs->parts & ~(int64_t)3;
            take = take < cs->min_piece ? cs->min_piece : take;
            end = cur + take < cs->n ? cur + take : cs->n;
        } while (!atomic_compare_exchange_weak_explicit(&cs->next, &cur, (long long)end,
                                                        memory_order_relaxed,
                                                        memory_order_relaxed));
        columns((void *)cs->j, cur, end);
    }
}

/* ---- long A, float arithmetic: the sgemm, B dequantized panel by panel ------------- */

/* The sgemm asks for op(B)[p0 .. p0 + kc) x [j0 .. j0 + n) as a panel (gemm_f32.h): the
 * weights are dequantized straight into it, (q - zero_point) * scale in float as the
 * reference does, so no dequantized copy of B is ever made. */
static void dequant_panel(void *arg, int64_t j0, int64_t n, int64_t p0, int64_t kc, int nr,
                          float *dst) {
    const mnb_problem *p = arg;
    if (mnb_x512_handles(p) && p->bits == 4 && nr % 16 == 0) {
        mnb_x512_dequant_panel(p, j0, n, p0, kc, nr, dst);
        return;
    }
    for (int j = 0; j < nr; j++) {
        int64_t col = j0 + j;
        for (int64_t k = 0; k < kc; k++) {
            float w = 0.0f;
            if (j < n) {
                int64_t b = (p0 + k) / p->block_size;
                w = ((float)mnb_weight(p, col, p0 + k) - mnb_zero_point(p, col, b)) *
                    p->scales[col * p->k_blocks + b];
            }
            dst[k * nr + j] = w;
        }
    }
}

static void add_bias(void *arg, int64_t r0, int64_t r1) {
    const mnb_problem *p = arg;
    for (int64_t m = r0; m < r1; m++)
        for (int64_t n = 0; n < p->N; n++) p->Y[m * p->N + n] += p->bias[n];
}

static og_status *run_gemm(threadpool *pool, const mnb_problem *p, void *work) {
    gemm_f32_args g = panel_gemm(p);
    OG_TRY(gemm_f32_panels_run(pool, &g, dequant_panel, (void *)p, work));
    if (p->bias) threadpool_parallel_for(pool, p->M, 16, add_bias, (void *)p);
    return NULL;
}

og_status *mnb_run(threadpool *pool, const mnb_problem *p, void *work) {
    if (p->M == 0 || p->N == 0) return NULL;
    if (use_gemm(p)) return run_gemm(pool, p, work);
    mnb_job j = {.p = p, .a_stride = a_stride(p), .s_stride = s_stride(p),
                 .x512 = mnb_x512_handles(p)};
    size_t a_bytes = (size_t)round_up((int64_t)((size_t)(p->M * j.a_stride) * (p->int8 ? 1 : sizeof(float))), 64);
    if (p->int8)
        j.aq = work;
    else
        j.af = work;
    j.a_scale = (const float *)((char *)work + a_bytes);
    j.a_corr = j.a_scale + p->M * j.s_stride;
    j.a_lane = (const int32_t *)(j.a_corr + p->M * j.s_stride);
    j.lane_values = p->bits == 4 ? 8 : 4;
    prep_job pj = {p, &j};
    threadpool_parallel_for(pool, p->M, 4, prep_rows, &pj);
    /* each column costs about K*M/4 byte-steps; hand out pieces worth splitting */
    int64_t grain = 1 + 65536 / (p->K * (p->M < MR ? p->M : MR) + 1);
    int threads = threadpool_size(pool);
    if (p->M <= MR && threads > 1 && p->N > grain) {
        int64_t col_bytes = p->k_blocks * (p->blob + 4);
        col_sched cs = {.j = &j, .n = p->N, .parts = 2 * (int64_t)threads,
                        .min_piece = round_up(4096 / col_bytes + 1, 4)};
        atomic_init(&cs.next, 0);
        threadpool_parallel_for(pool, threads, 1, guided_columns, &cs);
        return NULL;
    }
    threadpool_parallel_for(pool, p->N, grain, columns, &j);
    return NULL;
}

const char *mnb_isa(void) {
#if defined(__x86_64__)
    if (isa_active() >= ISA_AVX512) return "avx512-vnni";
#endif
    return "generic";
}

/* ---- the kernel ------------------------------------------------------------------ */

static bool float_like(og_dtype dt) {
    return dt == OG_FLOAT32 || dt == OG_FLOAT16 || dt == OG_BFLOAT16;
}

/* Float32 view of input i (n elements): its data, or a converted copy in scratch. */
static og_status *f32_view(kernel_ctx *ctx, const tensor *t, int64_t n, const float **out) {
    if (t->dtype == OG_FLOAT32) {
        *out = t->data;
        return NULL;
    }
    float *buf;
    OG_TRY(kernel_scratch(ctx, (size_t)n * sizeof(float) + 64, (void **)&buf));
    half_array_to_f32(t->data, buf, n, t->dtype == OG_BFLOAT16);
    *out = buf;
    return NULL;
}

static og_status *check_count(kernel_ctx *ctx, int i, const char *name, const tensor *t,
                              int64_t want, const char *shape) {
    if (tensor_count(t) == want) return NULL;
    char got[96];
    return kernel_errorf(ctx, OG_ERR_INVALID_ARGUMENT,
                         "input %d (%s) has shape %s, expected %s (%lld elements)", i, name,
                         shape_str(t->dims, t->rank, got, sizeof got), shape, (long long)want);
}

/* The node's attributes, checked (shared by preparation and runs). */
typedef struct mnb_attrs {
    int64_t K, N, bits, bs, level, kb, blob;
} mnb_attrs;

static og_status *read_attrs(const graph_node *node, const char *where, mnb_attrs *a) {
    a->K = graph_attr_int(node, "K", -1);
    a->N = graph_attr_int(node, "N", -1);
    a->bits = graph_attr_int(node, "bits", 4);
    a->bs = graph_attr_int(node, "block_size", -1);
    a->level = graph_attr_int(node, "accuracy_level", 0);
    if (a->K < 1 || a->N < 1)
        return og_errorf(OG_ERR_INVALID_MODEL, "%s: attributes K=%lld and N=%lld must be "
                         "positive", where, (long long)a->K, (long long)a->N);
    if (a->bits != 2 && a->bits != 4 && a->bits != 8)
        return og_errorf(OG_ERR_UNSUPPORTED, "%s: bits=%lld is not implemented (2, 4, 8 are)",
                         where, (long long)a->bits);
    if (a->bs < 16 || a->bs > MAX_BLOCK || (a->bs & (a->bs - 1)))
        return og_errorf(OG_ERR_INVALID_MODEL, "%s: block_size=%lld must be a power of two "
                         "in [16, %d]", where, (long long)a->bs, MAX_BLOCK);
    if (graph_attr_int(node, "weight_prepacked", 0) != 0)
        return og_errorf(OG_ERR_UNSUPPORTED, "%s: weight_prepacked (a CUDA layout) is not "
                         "supported on the CPU", where);
    a->kb = (a->K + a->bs - 1) / a->bs;
    a->blob = a->bs * a->bits / 8;
    return NULL;
}

/* onnxruntime quantizes A only at level 4, only with integer zero points, and for
 * 2 bits only with blocks of 32 to 128 */
static bool int8_math(const mnb_attrs *a, bool zp_float) {
    return a->level == 4 && !zp_float && (a->bits != 2 || (a->bs >= 32 && a->bs <= 128));
}

/* Preparation: 4-bit weights are packed for the int8 GEMM (matmul_nbits_pack.h), in
 * int8 or (three digits of A) float arithmetic; the pack replaces B, the scales and the
 * zero points. */
og_status *cpu_matmul_nbits_prepare(kernel_prep *kp) {
    if (kp->n_inputs < 3) return NULL;
    const tensor *B = kp->inputs[1], *S = kp->inputs[2];
    const tensor *Z = kp->n_inputs > 3 ? kp->inputs[3] : NULL;
    const tensor *G = kp->n_inputs > 4 ? kp->inputs[4] : NULL;
    bool z_given = kp->n_inputs > 3 && kp->node->inputs[3] >= 0;
    mnb_attrs a;
    og_status *bad = read_attrs(kp->node, kp->where, &a);
    if (bad) { /* the run reports it */
        og_status_free(bad);
        return NULL;
    }
    if (!B || !S || (z_given && !Z) || B->dtype != OG_UINT8 || !float_like(S->dtype) ||
        (G && tensor_count(G) > 0) || (kp->n_inputs > 4 && kp->node->inputs[4] >= 0 && !G))
        return NULL;
    if (tensor_count(B) != a.N * a.kb * a.blob || tensor_count(S) != a.N * a.kb) return NULL;
    mnb_problem p = {.M = 1, .N = a.N, .K = a.K, .bits = (int)a.bits, .block_size = (int)a.bs,
                     .k_blocks = a.kb, .blob = a.blob, .B = B->data};
    if (Z) {
        if (Z->dtype != OG_UINT8) return NULL; /* float zero points: float arithmetic */
        p.zp_stride = (a.kb * a.bits + 7) / 8;
        if (tensor_count(Z) != a.N * p.zp_stride) return NULL;
        p.zp_packed = Z->data;
    }
    p.int8 = int8_math(&a, false);
    if (!mnb_pack_handles(&p)) return NULL;
    /* the pack cache: the node and its inputs (cache_id) and the pack's shape */
    int64_t shape[8] = {p.N, p.K, p.bits, p.block_size, p.k_blocks, p.blob, p.zp_packed != NULL,
                        p.int8};
    uint64_t id = pack_cache_hash(kp->cache_id, shape, sizeof shape);
    size_t file_bytes = kp->cache ? mnb_pack_file_size(&p) : 0;
    const void *cached = file_bytes ? pack_cache_find(kp->cache, id, file_bytes) : NULL;
    pack_writer *w = file_bytes && !cached ? pack_writer_begin(kp->cache, id, file_bytes) : NULL;
    if (cached) {
        mnb_pack *pk;
        OG_TRY(mnb_pack_from_file(&p, cached, &pk));
        kp->state = pk;
        kp->bytes = pk->bytes;
        kp->consumed = KERNEL_INPUT(1) | KERNEL_INPUT(2) | (Z ? KERNEL_INPUT(3) : 0);
        return NULL;
    }
    float *conv = NULL;
    if (S->dtype == OG_FLOAT32) {
        p.scales = S->data;
    } else {
        if (!(conv = malloc(sizeof(float) * (size_t)(a.N * a.kb))))
            return og_oom_for(sizeof(float) * (size_t)(a.N * a.kb), "converted scales");
        half_array_to_f32(S->data, conv, a.N * a.kb, S->dtype == OG_BFLOAT16);
        p.scales = conv;
    }
    if (w) { /* prepared again, from the file, once it is complete */
        mnb_pack_write(&p, w);
        pack_writer_end(w); /* a failure leaves the cache FAILED: then computed as usual */
        free(conv);
        kp->deferred = true;
        return NULL;
    }
    mnb_pack *pk;
    og_status *st = mnb_pack_create(&p, &pk);
    free(conv);
    if (st) return st;
    kp->state = pk;
    kp->bytes = pk->bytes;
    kp->consumed = KERNEL_INPUT(1) | KERNEL_INPUT(2) | (Z ? KERNEL_INPUT(3) : 0);
    return NULL;
}

void cpu_matmul_nbits_release(void *state) { mnb_pack_free(state); }

og_status *cpu_matmul_nbits(kernel_ctx *ctx) {
    OG_TRY(kernel_require_inputs(ctx, 3));
    const tensor *A = ctx->inputs[0], *B = ctx->inputs[1], *S = ctx->inputs[2];
    const tensor *Z = kernel_input(ctx, 3), *G = kernel_input(ctx, 4), *bias = kernel_input(ctx, 5);
    mnb_attrs at;
    OG_TRY(read_attrs(ctx->node, ctx->where, &at));
    int64_t K = at.K, N = at.N, bits = at.bits, bs = at.bs, kb = at.kb, blob = at.blob;
    if (G && tensor_count(G) > 0)
        return kernel_error(ctx, OG_ERR_UNSUPPORTED, "input 4 (g_idx, deprecated) is not "
                            "supported");
    og_dtype dt = A->dtype;
    if (!float_like(dt)) return kernel_unsupported_dtype(ctx, 0, dt);
    if (B->dtype != OG_UINT8) return kernel_unsupported_dtype(ctx, 1, B->dtype);
    if (S->dtype != dt)
        return kernel_errorf(ctx, OG_ERR_INVALID_ARGUMENT, "input 2 (scales) is %s, but A is %s",
                             og_dtype_name(S->dtype), og_dtype_name(dt));
    if (A->rank < 1 || A->dims[A->rank - 1] != K) {
        char a[96];
        return kernel_errorf(ctx, OG_ERR_INVALID_ARGUMENT, "input 0 (A) has shape %s, expected "
                             "[..., K=%lld]", shape_str(A->dims, A->rank, a, sizeof a),
                             (long long)K);
    }
    const mnb_pack *pk = ctx->prepared;
    mnb_problem p = {.M = tensor_count(A) / K, .N = N, .K = K, .bits = (int)bits,
                     .block_size = (int)bs, .k_blocks = kb, .blob = blob, .B = B->data};
    OG_TRY(check_count(ctx, 1, "B", B, N * kb * blob, "[N, k_blocks, blob_size]"));
    OG_TRY(check_count(ctx, 2, "scales", S, N * kb, "[N, k_blocks]"));
    if (Z) {
        if (Z->dtype == OG_UINT8) {
            p.zp_stride = (kb * bits + 7) / 8;
            OG_TRY(check_count(ctx, 3, "zero_points", Z, N * p.zp_stride,
                               "[N, ceil(k_blocks * bits / 8)]"));
            p.zp_packed = Z->data;
        } else if (Z->dtype == dt) {
            OG_TRY(check_count(ctx, 3, "zero_points", Z, N * kb, "[N, k_blocks]"));
            OG_TRY(f32_view(ctx, Z, N * kb, &p.zp_float));
        } else {
            return kernel_errorf(ctx, OG_ERR_INVALID_ARGUMENT, "input 3 (zero_points) is %s; "
                                 "expected uint8 (packed) or %s like A",
                                 og_dtype_name(Z->dtype), og_dtype_name(dt));
        }
    }
    if (bias) {
        if (bias->dtype != dt)
            return kernel_errorf(ctx, OG_ERR_INVALID_ARGUMENT, "input 5 (bias) is %s, but A is %s",
                                 og_dtype_name(bias->dtype), og_dtype_name(dt));
        OG_TRY(check_count(ctx, 5, "bias", bias, N, "[N]"));
        OG_TRY(f32_view(ctx, bias, N, &p.bias));
    }
    p.int8 = int8_math(&at, p.zp_float != NULL);
    int64_t dims[OG_MAX_RANK];
    memcpy(dims, A->dims, sizeof(int64_t) * (size_t)A->rank);
    dims[A->rank - 1] = N;
    tensor *Y;
    OG_TRY(kernel_output(ctx, 0, dt, A->rank, dims, &Y));
    if (p.M == 0) return NULL;
    if (!pk) OG_TRY(f32_view(ctx, S, N * kb, &p.scales)); /* the pack holds its own */
    OG_TRY(f32_view(ctx, A, p.M * K, &p.A));
    if (dt == OG_FLOAT32)
        p.Y = Y->data;
    else
        OG_TRY(kernel_scratch(ctx, (size_t)(p.M * N) * sizeof(float) + 64, (void **)&p.Y));
    void *work;
    if (pk) {
        /* A's quantization is shared with the other products that read it alike */
        int threads = threadpool_size(ctx->pool);
        size_t qa_size = mnb_pack_qa_size(pk, p.M);
        size_t rest = mnb_pack_work_size(pk, p.M, threads) - qa_size;
        int64_t key[MNB_QA_KEY];
        void *qa;
        bool ready;
        OG_TRY(kernel_shared(ctx, 0, key, mnb_pack_qa_key(pk, p.M, key), qa_size, &qa, &ready));
        OG_TRY(kernel_scratch(ctx, rest + (qa ? 0 : qa_size) + 64, &work));
        if (!qa) {
            qa = work;
            work = (char *)work + qa_size;
        }
        /* the rows' forms when the executor has them for these rows (the tokens) */
        const uint8_t *forms = ctx->row_forms && ctx->n_row_forms == p.M ? ctx->row_forms : NULL;
        mnb_pack_run_qa(ctx->pool, pk, p.A, p.M, forms, p.bias, p.Y, qa, ready, work);
    } else {
        OG_TRY(kernel_scratch(ctx, mnb_work_size(&p) + 64, &work));
        OG_TRY(mnb_run(ctx->pool, &p, work));
    }
    if (dt != OG_FLOAT32) {
        uint16_t *y = Y->data;
        int64_t n = p.M * N;
        if (dt == OG_FLOAT16)
            for (int64_t i = 0; i < n; i++) y[i] = f32_to_f16(p.Y[i]);
        else
            for (int64_t i = 0; i < n; i++) y[i] = f32_to_bf16(p.Y[i]);
    }
    return NULL;
}
