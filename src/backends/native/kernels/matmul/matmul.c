/* MatMul and Gemm. float32 runs on the blocked sgemm core (gemm_f32.c), with a constant
 * float32 B packed once when the session opens; float16 and bfloat16 are widened to
 * float32 and rounded back once at the end; float64 and the integer types (shape
 * arithmetic, rarely big) take a plain loop. */
#include "backends/native/kernels/matmul/matmul.h"

#include "backends/native/kernels/broadcast.h"
#include "backends/native/kernels/kernel_util.h"
#include "backends/native/kernels/matmul/gemm_f32.h"

#include <string.h>

typedef cpu_mm_shape mm_shape;

og_status *cpu_matmul_plan(const kernel_ctx *ctx, const tensor *a, const tensor *b,
                           mm_shape *s) {
    for (int i = 0; i < 2; i++) {
        const tensor *t = i ? b : a;
        if (t->rank < 1)
            return kernel_errorf(ctx, OG_ERR_INVALID_ARGUMENT,
                                 "input %d is a scalar, expected rank >= 1", i);
    }
    int64_t ad[OG_MAX_RANK + 1], bd[OG_MAX_RANK + 1];
    int ra = a->rank, rb = b->rank;
    if (ra == 1) {
        ad[0] = 1;
        ad[1] = a->dims[0];
        ra = 2;
    } else {
        memcpy(ad, a->dims, sizeof(int64_t) * (size_t)ra);
    }
    if (rb == 1) {
        bd[0] = b->dims[0];
        bd[1] = 1;
        rb = 2;
    } else {
        memcpy(bd, b->dims, sizeof(int64_t) * (size_t)rb);
    }
    s->M = ad[ra - 2];
    s->K = ad[ra - 1];
    s->N = bd[rb - 1];
    if (bd[rb - 2] != s->K) {
        char sa[128], sb[128];
        return kernel_errorf(ctx, OG_ERR_INVALID_ARGUMENT,
                             "input 0 has shape %s and input 1 has shape %s: inner dimensions "
                             "%lld and %lld differ",
                             shape_str(a->dims, a->rank, sa, sizeof sa),
                             shape_str(b->dims, b->rank, sb, sizeof sb), (long long)s->K,
                             (long long)bd[rb - 2]);
    }
    og_status *st = broadcast_shape(ad, ra - 2, bd, rb - 2, s->bdims, &s->brank);
    if (st) return og_status_wrap(st, "%s: batch dimensions", ctx->where);
    broadcast_strides(ad, ra - 2, s->bdims, s->brank, s->a_str);
    broadcast_strides(bd, rb - 2, s->bdims, s->brank, s->b_str);
    s->batch = shape_count(s->bdims, s->brank);
    s->out_rank = s->brank;
    memcpy(s->out_dims, s->bdims, sizeof(int64_t) * (size_t)s->brank);
    if (a->rank > 1) s->out_dims[s->out_rank++] = s->M;
    if (b->rank > 1) s->out_dims[s->out_rank++] = s->N;
    return NULL;
}

void cpu_matmul_offsets(const mm_shape *s, int64_t t, int64_t *ao, int64_t *bo) {
    int64_t a = 0, b = 0;
    for (int i = s->brank - 1; i >= 0; i--) {
        int64_t idx = t % s->bdims[i];
        t /= s->bdims[i];
        a += idx * s->a_str[i];
        b += idx * s->b_str[i];
    }
    *ao = a * s->M * s->K;
    *bo = b * s->K * s->N;
}

/* ---- float32 ---------------------------------------------------------------------- */

typedef struct mm_batches {
    const mm_shape *s;
    const float *a, *b;
    float *c;
    char *work;
    size_t work_size; /* per item */
    int64_t items;
} mm_batches;

/* Item i runs its share of the batches one after another, each single-threaded, on its
 * own slice of working memory. */
static void mm_batch_items(void *arg, int64_t begin, int64_t end) {
    const mm_batches *J = arg;
    const mm_shape *s = J->s;
    for (int64_t it = begin; it < end; it++) {
        int64_t t0 = s->batch * it / J->items, t1 = s->batch * (it + 1) / J->items;
        for (int64_t t = t0; t < t1; t++) {
            int64_t ao, bo;
            cpu_matmul_offsets(s, t, &ao, &bo);
            gemm_f32_args g = {false, false, s->M, s->N, s->K, 1.0f, 0.0f, J->a + ao, s->K,
                               J->b + bo, s->N, J->c + t * s->M * s->N, s->N};
            og_status *st = gemm_f32(NULL, &g, J->work ? J->work + it * J->work_size : NULL);
            og_status_free(st); /* only possible error is a bad size, excluded by the plan */
        }
    }
}

/* ---- a constant B, packed when the session opens ---------------------------------- */

og_status *cpu_matmul_prepare(kernel_prep *kp) {
    const tensor *b = kp->n_inputs >= 2 ? kp->inputs[1] : NULL;
    if (!b || b->dtype != OG_FLOAT32 || b->rank < 2) return NULL;
    for (int i = 0; i < b->rank - 2; i++) /* one matrix, shared by every batch of A */
        if (b->dims[i] != 1) return NULL;
    int64_t K = b->dims[b->rank - 2], N = b->dims[b->rank - 1];
    if (K < 1 || N < 1) return NULL;
    gemm_f32_packed *pb;
    OG_TRY(gemm_f32_pack_b(b->data, N, false, K, N, &pb));
    kp->state = pb;
    kp->bytes = pb->bytes;
    kp->consumed = KERNEL_INPUT(1);
    return NULL;
}

og_status *cpu_gemm_prepare(kernel_prep *kp) {
    const tensor *b = kp->n_inputs >= 2 ? kp->inputs[1] : NULL;
    if (!b || b->dtype != OG_FLOAT32 || b->rank != 2) return NULL;
    bool tb = graph_attr_int(kp->node, "transB", 0) != 0;
    int64_t K = b->dims[tb ? 1 : 0], N = b->dims[tb ? 0 : 1];
    if (K < 1 || N < 1) return NULL;
    gemm_f32_packed *pb;
    OG_TRY(gemm_f32_pack_b(b->data, b->dims[1], tb, K, N, &pb));
    kp->state = pb;
    kp->bytes = pb->bytes;
    kp->consumed = KERNEL_INPUT(1);
    return NULL;
}

void cpu_gemm_release(void *state) { gemm_f32_packed_free(state); }

/* The packed B when it serves this product: made from this node's B (the executor
 * checked the binding), for the kernels in use now, of the product's K and N. */
static const gemm_f32_packed *packed_for(const kernel_ctx *ctx, int64_t K, int64_t N) {
    const gemm_f32_packed *pb = ctx->prepared;
    return pb && gemm_f32_packed_usable(pb) && pb->K == K && pb->N == N ? pb : NULL;
}

static og_status *gemm_maybe_packed(kernel_ctx *ctx, const gemm_f32_args *g) {
    const gemm_f32_packed *pb = packed_for(ctx, g->K, g->N);
    void *work = NULL;
    size_t need = pb ? gemm_f32_packed_work_size(g) : gemm_f32_work_size(g);
    if (need) OG_TRY(kernel_scratch(ctx, need, &work));
    return pb ? gemm_f32_packed_run(ctx->pool, g, pb, work) : gemm_f32(ctx->pool, g, work);
}

static og_status *matmul_f32(kernel_ctx *ctx, const mm_shape *s, const float *a,
                             const float *b, float *c) {
    if (s->batch == 0 || s->M == 0 || s->N == 0) return NULL;
    bool b_shared = true;
    for (int i = 0; i < s->brank; i++)
        if (s->b_str[i] != 0) b_shared = false;
    /* One weight matrix for every batch: the batches stack into one tall product. */
    if (b_shared) {
        gemm_f32_args g = {false, false, s->batch * s->M, s->N, s->K, 1.0f, 0.0f,
                           a, s->K, b, s->N, c, s->N};
        return gemm_maybe_packed(ctx, &g);
    }
    gemm_f32_args g1 = {false, false, s->M, s->N, s->K, 1.0f, 0.0f, a, s->K, b, s->N, c, s->N};
    size_t per = (gemm_f32_work_size(&g1) + 63) / 64 * 64;
    int threads = threadpool_size(ctx->pool);
    bool small = (double)s->M * (double)s->N * (double)s->K < (double)(1 << 20);
    mm_batches J = {s, a, b, c, NULL, per, 1};
    /* Many small products (attention heads) are split by batch; a few big ones are
     * split inside the gemm. */
    if (threads > 1 && (s->batch >= 2 * threads || (small && s->batch >= 2)))
        J.items = s->batch < threads ? s->batch : threads;
    if (per) OG_TRY(kernel_scratch(ctx, per * (size_t)J.items, (void **)&J.work));
    if (J.items > 1) {
        /* every product's A, B and C streamed once, a multiply-add per M N K */
        double mnk = (double)s->M * (double)s->N * (double)s->K;
        double ns = threadpool_work_ns(4.0 * (double)s->batch *
                                           (double)(s->M * s->K + s->K * s->N + s->M * s->N),
                                       2.0 * (double)s->batch * mnk);
        threadpool_parallel_for_cost(ctx->pool, J.items, ns / (double)J.items, mm_batch_items, &J);
        return NULL;
    }
    for (int64_t t = 0; t < s->batch; t++) {
        int64_t ao, bo;
        cpu_matmul_offsets(s, t, &ao, &bo);
        gemm_f32_args g = g1;
        g.A = a + ao;
        g.B = b + bo;
        g.C = c + t * s->M * s->N;
        OG_TRY(gemm_f32(ctx->pool, &g, J.work));
    }
    return NULL;
}

static bool is_f32_family(og_dtype dt) {
    return dt == OG_FLOAT32 || dt == OG_FLOAT16 || dt == OG_BFLOAT16;
}

/* ---- float64 and integers: a plain loop ------------------------------------------- */

/* Signed products accumulate in uint64 so that overflow wraps instead of being UB. */
#define MM_LOOP(T, ACC)                                                                  \
    do {                                                                                 \
        const T *pa = a->data, *pb = b->data;                                            \
        T *pc = y->data;                                                                 \
        for (int64_t t = 0; t < s->batch; t++) {                                         \
            int64_t ao, bo;                                                              \
            cpu_matmul_offsets(s, t, &ao, &bo);                                                  \
            const T *ma = pa + ao, *mb = pb + bo;                                        \
            T *mc = pc + t * s->M * s->N;                                                \
            for (int64_t i = 0; i < s->M; i++)                                           \
                for (int64_t j = 0; j < s->N; j++) {                                     \
                    ACC acc = 0;                                                         \
                    for (int64_t k = 0; k < s->K; k++)                                   \
                        acc += (ACC)ma[i * s->K + k] * (ACC)mb[k * s->N + j];            \
                    mc[i * s->N + j] = (T)acc;                                           \
                }                                                                        \
        }                                                                                \
    } while (0)

static bool matmul_generic(const mm_shape *s, const tensor *a, const tensor *b, tensor *y) {
    switch (a->dtype) {
    case OG_FLOAT64: MM_LOOP(double, double); return true;
    case OG_INT32: MM_LOOP(int32_t, uint64_t); return true;
    case OG_INT64: MM_LOOP(int64_t, uint64_t); return true;
    case OG_UINT32: MM_LOOP(uint32_t, uint64_t); return true;
    case OG_UINT64: MM_LOOP(uint64_t, uint64_t); return true;
    default: return false;
    }
}

og_status *cpu_matmul(kernel_ctx *ctx) {
    OG_TRY(kernel_require_inputs(ctx, 2));
    const tensor *a = ctx->inputs[0], *b = ctx->inputs[1];
    if (b->dtype != a->dtype)
        return kernel_errorf(ctx, OG_ERR_INVALID_MODEL, "input 1 has dtype %s, input 0 %s",
                             og_dtype_name(b->dtype), og_dtype_name(a->dtype));
    bool generic = a->dtype == OG_FLOAT64 || a->dtype == OG_INT32 || a->dtype == OG_INT64 ||
                   a->dtype == OG_UINT32 || a->dtype == OG_UINT64;
    if (!is_f32_family(a->dtype) && !generic)
        return kernel_unsupported_dtype(ctx, 0, a->dtype);
    mm_shape s;
    OG_TRY(cpu_matmul_plan(ctx, a, b, &s));
    tensor *y;
    OG_TRY(kernel_output(ctx, 0, a->dtype, s.out_rank, s.out_dims, &y));
    if (generic) {
        matmul_generic(&s, a, b, y);
        return NULL;
    }
    const float *fa, *fb;
    float *fy;
    OG_TRY(cpu_in_f32(ctx, 0, &fa));
    OG_TRY(cpu_in_f32(ctx, 1, &fb));
    OG_TRY(cpu_out_f32(ctx, y, &fy));
    int64_t count = s.batch * s.M * s.N;
    if (s.K == 0) {
        if (count > 0) memset(fy, 0, sizeof(float) * (size_t)count);
    } else {
        OG_TRY(matmul_f32(ctx, &s, fa, fb, fy));
    }
    cpu_out_f32_done(y, fy);
    return NULL;
}

/* ---- Gemm ------------------------------------------------------------------------- */

og_status *cpu_gemm(kernel_ctx *ctx) {
    OG_TRY(kernel_require_inputs(ctx, 2));
    const tensor *a = ctx->inputs[0], *b = ctx->inputs[1], *c = kernel_input(ctx, 2);
    for (int i = 0; i < 2; i++) {
        const tensor *t = i ? b : a;
        if (t->rank != 2)
            return kernel_errorf(ctx, OG_ERR_INVALID_ARGUMENT, "input %d has rank %d, expected 2",
                                 i, t->rank);
    }
    for (int i = 1; i < 3; i++) {
        const tensor *t = i == 1 ? b : c;
        if (t && t->dtype != a->dtype)
            return kernel_errorf(ctx, OG_ERR_INVALID_MODEL, "input %d has dtype %s, input 0 %s",
                                 i, og_dtype_name(t->dtype), og_dtype_name(a->dtype));
    }
    if (!is_f32_family(a->dtype) && a->dtype != OG_FLOAT64)
        return kernel_unsupported_dtype(ctx, 0, a->dtype);
    bool ta = graph_attr_int(ctx->node, "transA", 0) != 0;
    bool tb = graph_attr_int(ctx->node, "transB", 0) != 0;
    float alpha = graph_attr_float(ctx->node, "alpha", 1.0f);
    float beta = graph_attr_float(ctx->node, "beta", 1.0f);
    int64_t M = a->dims[ta ? 1 : 0], K = a->dims[ta ? 0 : 1];
    int64_t Kb = b->dims[tb ? 1 : 0], N = b->dims[tb ? 0 : 1];
    if (K != Kb)
        return kernel_errorf(ctx, OG_ERR_INVALID_ARGUMENT,
                             "op(A) is [%lld,%lld] but op(B) is [%lld,%lld] (transA=%d, transB=%d)",
                             (long long)M, (long long)K, (long long)Kb, (long long)N, ta, tb);
    /* C broadcasts one way to [M, N]: each of its (right-aligned) dims is 1 or equal. */
    int64_t cm = 1, cn = 1;
    if (c) {
        if (c->rank > 2)
            return kernel_errorf(ctx, OG_ERR_INVALID_ARGUMENT, "input 2 has rank %d, expected <= 2",
                                 c->rank);
        if (c->rank >= 1) cn = c->dims[c->rank - 1];
        if (c->rank == 2) cm = c->dims[0];
        if ((cm != 1 && cm != M) || (cn != 1 && cn != N)) {
            char sc[128];
            return kernel_errorf(ctx, OG_ERR_INVALID_ARGUMENT,
                                 "input 2 has shape %s, which does not broadcast to [%lld,%lld]",
                                 shape_str(c->dims, c->rank, sc, sizeof sc), (long long)M,
                                 (long long)N);
        }
    }
    int64_t dims[2] = {M, N};
    tensor *y;
    OG_TRY(kernel_output(ctx, 0, a->dtype, 2, dims, &y));
    if (M == 0 || N == 0) return NULL;
    bool use_c = c && beta != 0;
    int64_t lda = a->dims[1], ldb = b->dims[1];
    int64_t csm = cm == 1 ? 0 : cn, csn = cn == 1 ? 0 : 1; /* C strides (0: broadcast) */
    if (a->dtype == OG_FLOAT64) {
        const double *pa = a->data, *pb = b->data, *pc = c ? c->data : NULL;
        double *py = y->data;
        for (int64_t i = 0; i < M; i++)
            for (int64_t j = 0; j < N; j++) {
                double acc = 0;
                for (int64_t k = 0; k < K; k++)
                    acc += (ta ? pa[k * lda + i] : pa[i * lda + k]) *
                           (tb ? pb[j * ldb + k] : pb[k * ldb + j]);
                double v = (double)alpha * acc;
                if (use_c) v += (double)beta * pc[i * csm + j * csn];
                py[i * N + j] = v;
            }
        return NULL;
    }
    const float *fa, *fb, *fc = NULL;
    float *fy;
    OG_TRY(cpu_in_f32(ctx, 0, &fa));
    OG_TRY(cpu_in_f32(ctx, 1, &fb));
    if (use_c) OG_TRY(cpu_in_f32(ctx, 2, &fc));
    OG_TRY(cpu_out_f32(ctx, y, &fy));
    if (use_c)
        for (int64_t i = 0; i < M; i++)
            for (int64_t j = 0; j < N; j++) fy[i * N + j] = fc[i * csm + j * csn];
    gemm_f32_args g = {ta, tb, M, N, K, alpha, use_c ? beta : 0.0f, fa, lda, fb, ldb, fy, N};
    OG_TRY(gemm_maybe_packed(ctx, &g));
    cpu_out_f32_done(y, fy);
    return NULL;
}
