#include "testing.h"

#include "backends/native/kernels/matmul/gemm_f32.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static uint64_t gemm_rng = 0x9e3779b97f4a7c15ull;
static float rand_unit(void) {
    gemm_rng ^= gemm_rng << 13;
    gemm_rng ^= gemm_rng >> 7;
    gemm_rng ^= gemm_rng << 17;
    return (float)((gemm_rng >> 40) & 0xffff) / 32768.0f - 1.0f;
}

/* How B reaches the kernels: as given, prepacked once (gemm_f32_pack_b), or panel by
 * panel from a callback (gemm_f32_panels_run). */
enum { B_PLAIN, B_PACKED, B_PANELS, B_MODES };

typedef struct panel_src {
    const float *B;
    int64_t ldb;
    bool tb;
} panel_src;

static void panel_from(void *arg, int64_t j0, int64_t n, int64_t p0, int64_t kc, int nr,
                       float *dst) {
    const panel_src *ps = arg;
    for (int64_t k = 0; k < kc; k++)
        for (int j = 0; j < nr; j++)
            dst[k * nr + j] = j >= n ? 0.0f
                              : ps->tb ? ps->B[(j0 + j) * ps->ldb + p0 + k]
                                       : ps->B[(p0 + k) * ps->ldb + j0 + j];
}

static og_status *run_mode(threadpool *pool, const gemm_f32_args *g, int mode) {
    if (mode == B_PLAIN) return gemm_f32(pool, g, NULL);
    if (mode == B_PANELS) {
        panel_src ps = {g->B, g->ldb, g->trans_b};
        return gemm_f32_panels_run(pool, g, panel_from, &ps, NULL);
    }
    gemm_f32_packed *pb;
    OG_TRY(gemm_f32_pack_b(g->B, g->ldb, g->trans_b, g->K, g->N, &pb));
    og_status *s = gemm_f32_packed_run(pool, g, pb, NULL);
    gemm_f32_packed_free(pb);
    return s;
}

/* Runs the fast gemm on `pool` under every instruction set this CPU has (forced with
 * isa_set) and every way of giving B, and the reference once on the same operands,
 * and compares element by element with a tolerance that grows with K. Leading
 * dimensions are padded past the logical width so that stride handling is exercised.
 * Returns false (after reporting) on mismatch. */
static bool check_shape(threadpool *pool, int64_t M, int64_t N, int64_t K, bool ta, bool tb,
                        float alpha, float beta, int line) {
    int64_t ar = ta ? K : M, ac = ta ? M : K, br = tb ? N : K, bc = tb ? K : N;
    int64_t lda = ac + 3, ldb = bc + 1, ldc = N + 2;
    float *A = malloc(sizeof(float) * (size_t)(ar * lda + 1));
    float *B = malloc(sizeof(float) * (size_t)(br * ldb + 1));
    float *C0 = malloc(sizeof(float) * (size_t)(M * ldc + 1));
    float *C = malloc(sizeof(float) * (size_t)(M * ldc + 1));
    float *R = malloc(sizeof(float) * (size_t)(M * ldc + 1));
    bool ok = A && B && C0 && C && R;
    if (!ok) test_fail(__FILE__, line, "out of memory");
    for (int64_t i = 0; ok && i < ar * lda; i++) A[i] = rand_unit();
    for (int64_t i = 0; ok && i < br * ldb; i++) B[i] = rand_unit();
    for (int64_t i = 0; ok && i < M * ldc; i++) C0[i] = R[i] = rand_unit();
    gemm_f32_args r = {ta, tb, M, N, K, alpha, beta, A, lda, B, ldb, R, ldc};
    if (ok) gemm_f32_ref(&r);
    isa_level saved = isa_active();
    for (int level = ISA_GENERIC; ok && level <= (int)isa_supported(); level++)
        for (int mode = 0; ok && mode < B_MODES; mode++) {
            isa_set((isa_level)level);
            memcpy(C, C0, sizeof(float) * (size_t)(M * ldc));
            /* beta == 0 must ignore C, even NaN */
            if (beta == 0)
                for (int64_t i = 0; i < M * ldc; i++) C[i] = NAN;
            gemm_f32_args g = r;
            g.C = C;
            og_status *s = run_mode(pool, &g, mode);
            if (s) {
                test_fail(__FILE__, line, "gemm_f32 failed: %s", og_status_message(s));
                og_status_free(s);
                ok = false;
            }
            for (int64_t i = 0; ok && i < M; i++)
                for (int64_t j = 0; ok && j < N; j++) {
                    double want = R[i * ldc + j], got = C[i * ldc + j];
                    double tol = 1e-5 * (double)(K + 1) * (fabs(alpha) + 1) + 1e-6 * fabs(want);
                    if (!(fabs(want - got) <= tol)) {
                        test_fail(__FILE__, line,
                                  "%s, B mode %d: M=%lld N=%lld K=%lld ta=%d tb=%d alpha=%g "
                                  "beta=%g threads=%d: C[%lld,%lld] = %.8g, reference %.8g",
                                  gemm_f32_isa(), mode, (long long)M, (long long)N,
                                  (long long)K, ta, tb, alpha, beta, threadpool_size(pool),
                                  (long long)i, (long long)j, got, want);
                        ok = false;
                    }
                }
            /* padding columns of C must be untouched */
            for (int64_t i = 0; ok && i < M; i++)
                for (int64_t j = N; j < ldc; j++)
                    if (!(C[i * ldc + j] == C0[i * ldc + j] ||
                          (beta == 0 && isnan(C[i * ldc + j])))) {
                        test_fail(__FILE__, line, "%s, B mode %d: padding C[%lld,%lld] was "
                                  "written", gemm_f32_isa(), mode, (long long)i, (long long)j);
                        ok = false;
                        break;
                    }
        }
    isa_set(saved);
    free(A);
    free(B);
    free(C0);
    free(C);
    free(R);
    return ok;
}

static const int64_t sizes[] = {1, 2, 3, 5, 7, 12, 13, 16, 17, 31, 33, 47, 64, 100};

static void sweep(threadpool *pool) {
    int n = (int)(sizeof sizes / sizeof sizes[0]);
    for (int mi = 0; mi < n; mi++)
        for (int ni = 0; ni < n; ni += 2)
            for (int ki = 0; ki < n; ki += 3)
                for (int t = 0; t < 4; t++) {
                    float alpha = (mi + ni) % 3 == 0 ? 1.0f : -0.5f;
                    float beta = t == 0 ? 0.0f : t == 1 ? 1.0f : 0.25f;
                    if (!check_shape(pool, sizes[mi], sizes[ni], sizes[ki], t & 1, t >> 1,
                                     alpha, beta, __LINE__))
                        return;
                }
}

TEST(gemm_f32_matches_reference_single_thread) { sweep(NULL); }

TEST(gemm_f32_matches_reference_two_threads) {
    threadpool *pool = NULL;
    CHECK_OK(threadpool_create(3, &pool));
    sweep(pool);
    threadpool_free(pool);
}

TEST(gemm_f32_large_and_edge_shapes) {
    threadpool *pool = NULL;
    CHECK_OK(threadpool_create(2, &pool));
    static const int64_t shapes[][3] = {
        {1, 896, 896},  {1, 4864, 896}, {1, 1000, 3},  {1, 3, 1000}, {300, 1, 700},
        {257, 300, 513}, {1600, 40, 20}, {40, 4200, 20}, {5, 300, 3},  {2, 2, 600},
        {0, 5, 5},      {5, 0, 5},      {5, 5, 0},     {1, 1, 1},    {64, 5000, 8},
    };
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
        for (int t = 0; t < 4; t++)
            for (int p = 0; p < 2; p++)
                CHECK(check_shape(p ? pool : NULL, shapes[s][0], shapes[s][1], shapes[s][2],
                                  t & 1, t >> 1, t == 3 ? 2.0f : 1.0f, t == 2 ? 0.5f : 0.0f,
                                  __LINE__));
    threadpool_free(pool);
}

/* The sgemm's split follows its work (threadpool_work_ns: bytes and multiply-adds): at
 * the pool's default threshold a small prompt product (M 64, N 64, K 32: a tiny model's,
 * about 11 us by the model) runs on its caller, where the blocked path handed its packing
 * and its two tiles to the worker before; a large one (256 x 512 x 512) is split. Same
 * bits either way. */
TEST(gemm_f32_split_follows_work) {
    threadpool *pool = NULL;
    CHECK_OK(threadpool_create(2, &pool));
    threadpool_set_inline_ns(pool, THREADPOOL_INLINE_NS); /* the suite sets 0 */
    static const int64_t shapes[2][3] = {{64, 64, 32}, {256, 512, 512}};
    for (int s = 0; s < 2; s++) {
        int64_t M = shapes[s][0], N = shapes[s][1], K = shapes[s][2];
        float *A = malloc(sizeof(float) * (size_t)(M * K)), *B = malloc(sizeof(float) * (size_t)(K * N));
        float *C0 = malloc(sizeof(float) * (size_t)(M * N)), *C1 = malloc(sizeof(float) * (size_t)(M * N));
        CHECK(A && B && C0 && C1);
        for (int64_t i = 0; i < M * K; i++) A[i] = (float)((i * 7919) % 13) - 6.0f;
        for (int64_t i = 0; i < K * N; i++) B[i] = (float)((i * 104729) % 11) * 0.25f - 1.0f;
        gemm_f32_args g = {false, false, M, N, K, 1.0f, 0.0f, A, K, B, N, C0, N};
        void *work = malloc(gemm_f32_work_size(&g) + 64);
        CHECK(work);
        CHECK_OK(gemm_f32(NULL, &g, work));
        g.C = C1;
        uint64_t jobs0 = threadpool_jobs(pool);
        CHECK_OK(gemm_f32(pool, &g, work));
        uint64_t jobs = threadpool_jobs(pool) - jobs0;
        if (s == 0) CHECK(jobs == 0);
        else CHECK(jobs > 0);
        CHECK(memcmp(C0, C1, sizeof(float) * (size_t)(M * N)) == 0);
        free(A);
        free(B);
        free(C0);
        free(C1);
        free(work);
    }
    threadpool_free(pool);
}

TEST(gemm_f32_rejects_negative_sizes) {
    float x = 0;
    gemm_f32_args g = {false, false, -1, 1, 1, 1.0f, 0.0f, &x, 1, &x, 1, &x, 1};
    CHECK_ERR(gemm_f32(NULL, &g, NULL), OG_ERR_INVALID_ARGUMENT, "negative");
}

/* ---- the MatMul kernel on a thread pool (the node-test runner uses one thread) ---- */

#include "backends/native/kernels/matmul/matmul.h"

typedef struct fake_exec {
    tensor out;
    void *scratch[16];
    int n_scratch;
} fake_exec;

static og_status *fake_output(kernel_ctx *ctx, int index, og_dtype dtype, int rank,
                              const int64_t *dims, tensor **out) {
    fake_exec *e = ctx->exec;
    OG_TRY(tensor_set_shape(&e->out, dtype, rank, dims));
    OG_TRY(tensor_alloc_data(&e->out));
    *out = &e->out;
    return NULL;
}

static og_status *fake_scratch(kernel_ctx *ctx, size_t size, void **out) {
    fake_exec *e = ctx->exec;
    if (e->n_scratch == 16) return og_oom();
    void *p = aligned_alloc(64, (size + 63) / 64 * 64);
    if (!p) return og_oom();
    e->scratch[e->n_scratch++] = *out = p;
    return NULL;
}

/* MatMul of [batch..., M, K] x [bbatch..., K, N] through cpu_matmul on `pool`, checked
 * against gemm_f32_ref per batch (B's batch broadcast when it is 1). */
static bool check_matmul(threadpool *pool, int64_t batch, int64_t bbatch, int64_t M,
                         int64_t N, int64_t K, int line) {
    tensor a = {0}, b = {0};
    int64_t ad[3] = {batch, M, K}, bd[3] = {bbatch, K, N};
    bool ok = !tensor_set_shape(&a, OG_FLOAT32, 3, ad) && !tensor_set_shape(&b, OG_FLOAT32, 3, bd) &&
              !tensor_alloc_data(&a) && !tensor_alloc_data(&b);
    fake_exec e = {0};
    float *ref = malloc(sizeof(float) * (size_t)(batch * M * N + 1));
    if (!ok || !ref) {
        test_fail(__FILE__, line, "setup failed");
        ok = false;
    }
    if (ok) {
        for (int64_t i = 0; i < batch * M * K; i++) ((float *)a.data)[i] = rand_unit();
        for (int64_t i = 0; i < bbatch * K * N; i++) ((float *)b.data)[i] = rand_unit();
        const tensor *ins[2] = {&a, &b};
        graph_node node = {.name = "mm", .op_type = "MatMul", .domain = ""};
        kernel_ctx ctx = {.node = &node, .opset = 13, .n_inputs = 2, .inputs = ins,
                          .n_outputs = 1, .pool = pool, .output = fake_output,
                          .scratch = fake_scratch, .exec = &e, .where = "test"};
        og_status *s = cpu_matmul(&ctx);
        if (s) {
            test_fail(__FILE__, line, "cpu_matmul: %s", og_status_message(s));
            og_status_free(s);
            ok = false;
        }
    }
    for (int64_t t = 0; ok && t < batch; t++) {
        const float *pb = (const float *)b.data + (bbatch == 1 ? 0 : t) * K * N;
        gemm_f32_args g = {false, false, M, N, K, 1.0f, 0.0f, (const float *)a.data + t * M * K,
                           K, pb, N, ref + t * M * N, N};
        gemm_f32_ref(&g);
    }
    for (int64_t i = 0; ok && i < batch * M * N; i++) {
        float got = ((float *)e.out.data)[i];
        if (!(fabs(got - ref[i]) <= 1e-5 * (double)(K + 1))) {
            test_fail(__FILE__, line, "batch=%lld/%lld M=%lld N=%lld K=%lld: y[%lld] = %.8g, "
                      "reference %.8g", (long long)batch, (long long)bbatch, (long long)M,
                      (long long)N, (long long)K, (long long)i, got, ref[i]);
            ok = false;
        }
    }
    for (int i = 0; i < e.n_scratch; i++) free(e.scratch[i]);
    tensor_release(&e.out);
    tensor_release(&a);
    tensor_release(&b);
    free(ref);
    return ok;
}

TEST(matmul_kernel_batches_on_a_pool) {
    threadpool *pool = NULL;
    CHECK_OK(threadpool_create(3, &pool));
    /* many small products (split by batch), a few big ones (split inside the gemm),
     * a shared B (folded into one tall product), decode-like M = 1 */
    static const int64_t cases[][5] = {
        {12, 12, 7, 9, 5}, {2, 2, 130, 70, 90}, {3, 3, 150, 100, 120}, {5, 1, 33, 47, 20},
        {14, 14, 1, 40, 64}, {7, 7, 40, 1, 64}, {1, 1, 1, 1, 1},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        for (int p = 0; p < 2; p++)
            CHECK(check_matmul(p ? pool : NULL, cases[i][0], cases[i][1], cases[i][2],
                               cases[i][3], cases[i][4], __LINE__));
    threadpool_free(pool);
}
