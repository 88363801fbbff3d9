/* Batch invariance of the kernels on a decoder's path: a row of the output (a token of a
 * serving batch) must have the same bits whatever else runs with it: computed alone
 * (M = 1), in any batch size, on one thread or several. The serving engine promises
 * greedy results that do not depend on batch-mates and equal `generate`'s; these tests
 * hold the kernels to it (see ARCHITECTURE.md, "Batch invariance"). */
#include "testing.h"

#include "base/isa.h"
#include "base/threadpool.h"
#include "kernel_harness.h"
#include "backends/native/kernels/attention/attention.h"
#include "backends/native/kernels/matmul/gemm_f32.h"
#include "backends/native/kernels/matmul/matmul_nbits.h"
#include "backends/native/kernels/matmul/matmul_nbits_pack.h"

#include <stdlib.h>

static uint32_t bi_lcg = 777;
static float bi_rand(void) {
    bi_lcg = bi_lcg * 1664525u + 1013904223u;
    return (float)((bi_lcg >> 8) % 20001) / 10000.0f - 1.0f;
}

static const int64_t bi_rows[] = {1, 2, 3, 4, 5, 7, 8, 9, 12, 15, 16, 17, 33, 47, 48, 64};
enum { BI_NROWS = sizeof bi_rows / sizeof bi_rows[0], BI_MAXM = 64 };

/* gemm_f32 with B as given, or prepacked once (a session's constant weights) when pb. */
static og_status *gemm_run(threadpool *pool, const gemm_f32_args *g, const gemm_f32_packed *pb) {
    return pb ? gemm_f32_packed_run(pool, g, pb, NULL) : gemm_f32(pool, g, NULL);
}

/* gemm_f32: every row of C for M rows equals the row computed alone. */
static bool gemm_case(int64_t N, int64_t K, bool ta, bool tb, float alpha, float beta,
                      threadpool *pool, bool packed) {
    int64_t M = BI_MAXM;
    float *A = malloc(sizeof(float) * (size_t)(M * K)), *B = malloc(sizeof(float) * (size_t)(K * N));
    float *C = malloc(sizeof(float) * (size_t)(M * N)), *C0 = malloc(sizeof(float) * (size_t)(M * N));
    float *one = malloc(sizeof(float) * (size_t)N), *arow = malloc(sizeof(float) * (size_t)K);
    for (int64_t i = 0; i < M * K; i++) A[i] = bi_rand();
    for (int64_t i = 0; i < K * N; i++) B[i] = bi_rand();
    for (int64_t i = 0; i < M * N; i++) C0[i] = bi_rand();
    bool ok = true;
    gemm_f32_packed *pb = NULL;
    if (packed) {
        og_status *st = gemm_f32_pack_b(B, tb ? K : N, tb, K, N, &pb);
        if (st) {
            og_status_free(st);
            return false;
        }
    }
    /* op(A) row i: A[i, :] or A^T stored as [K, M] */
    for (int r = 0; r < BI_NROWS && ok; r++) {
        int64_t m = bi_rows[r];
        memcpy(C, C0, sizeof(float) * (size_t)(M * N));
        gemm_f32_args g = {ta, tb, m, N, K, alpha, beta, A, ta ? M : K, B, tb ? K : N, C, N};
        og_status *st = gemm_run(pool, &g, pb);
        if (st) {
            og_status_free(st);
            return false;
        }
        for (int64_t i = 0; i < m && ok; i++) {
            for (int64_t k = 0; k < K; k++) arow[k] = ta ? A[k * M + i] : A[i * K + k];
            memcpy(one, C0 + i * N, sizeof(float) * (size_t)N);
            /* the same layout, one row: A^T alone is [K, 1] */
            gemm_f32_args g1 = {ta, tb, 1, N, K, alpha, beta, arow, ta ? 1 : K, B, tb ? K : N, one, N};
            st = gemm_run(NULL, &g1, pb);
            if (st) {
                og_status_free(st);
                return false;
            }
            if (memcmp(one, C + i * N, sizeof(float) * (size_t)N) != 0) {
                fprintf(stderr, "    gemm (%s, B %s) N=%lld K=%lld ta=%d tb=%d alpha=%g beta=%g: "
                        "row %lld of M=%lld differs from the row alone\n", gemm_f32_isa(),
                        pb ? "prepacked" : "as given", (long long)N, (long long)K, ta, tb, alpha,
                        beta, (long long)i, (long long)m);
                ok = false;
            }
        }
    }
    gemm_f32_packed_free(pb);
    free(A), free(B), free(C), free(C0), free(one), free(arow);
    return ok;
}

TEST(batch_invariance_gemm_f32_rows_do_not_depend_on_m) {
    threadpool *pool;
    CHECK_OK(threadpool_create(2, &pool));
    static const int64_t shapes[][2] = {{64, 64}, {172, 64}, {512, 300}, {33, 600}, {1, 70}, {97, 7}};
    /* every kernel set this CPU has (each is chosen at run time) */
    isa_level saved = isa_active();
    for (int level = ISA_GENERIC; level <= (int)isa_supported(); level++) {
        isa_set((isa_level)level);
        for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
            for (int t = 0; t < 8; t++) {
                bool ta = t & 1, tb = t & 2, packed = t & 4;
                int64_t N = shapes[s][0], K = shapes[s][1];
                CHECK(gemm_case(N, K, ta, tb, 1.0f, 0.0f, NULL, packed));
                CHECK(gemm_case(N, K, ta, tb, 1.0f, 0.0f, pool, packed));
                CHECK(gemm_case(N, K, ta, tb, 0.5f, 1.0f, pool, packed));
                CHECK(gemm_case(N, K, ta, tb, 1.5f, 0.25f, NULL, packed));
            }
    }
    isa_set(saved);
    threadpool_free(pool);
}

/* MatMulNBits: every row of Y for M rows equals the row computed alone. */
typedef struct bi_mnb {
    int bits, bs;
    int64_t N, K;
    bool int8;
    int zp; /* 0 none, 1 packed, 2 float */
    bool pack; /* through the prepacked int8 GEMM (4 bits, int8 arithmetic) */
} bi_mnb;

static bool mnb_case(const bi_mnb *c, threadpool *pool) {
    int64_t M = BI_MAXM, kb = (c->K + c->bs - 1) / c->bs, blob = c->bs * c->bits / 8;
    int64_t zstride = (kb * c->bits + 7) / 8;
    uint8_t *B = malloc((size_t)(c->N * kb * blob)), *zp = malloc((size_t)(c->N * zstride));
    float *S = malloc(sizeof(float) * (size_t)(c->N * kb)), *zf = malloc(sizeof(float) * (size_t)(c->N * kb));
    float *bias = malloc(sizeof(float) * (size_t)c->N), *A = malloc(sizeof(float) * (size_t)(M * c->K));
    float *Y = malloc(sizeof(float) * (size_t)(M * c->N)), *one = malloc(sizeof(float) * (size_t)c->N);
    for (int64_t i = 0; i < c->N * kb * blob; i++) B[i] = (uint8_t)((bi_rand() + 1.0f) * 127.5f);
    for (int64_t i = 0; i < c->N * zstride; i++) zp[i] = (uint8_t)((bi_rand() + 1.0f) * 127.5f);
    for (int64_t i = 0; i < c->N * kb; i++) {
        S[i] = 0.01f + 0.05f * (bi_rand() + 1.0f);
        zf[i] = (bi_rand() + 1.0f) * 0.5f * (float)((1 << c->bits) - 1);
    }
    for (int64_t i = 0; i < c->N; i++) bias[i] = bi_rand();
    for (int64_t i = 0; i < M * c->K; i++) A[i] = 3.0f * bi_rand();
    mnb_problem p = {.N = c->N, .K = c->K, .bits = c->bits, .block_size = c->bs, .k_blocks = kb,
                     .blob = blob, .B = B, .scales = S, .zp_packed = c->zp == 1 ? zp : NULL,
                     .zp_stride = zstride, .zp_float = c->zp == 2 ? zf : NULL, .bias = bias,
                     .int8 = c->int8};
    bool ok = true;
    mnb_pack *pk = NULL;
    if (c->pack) {
        p.M = 1;
        og_status *st = mnb_pack_create(&p, &pk);
        if (st) {
            og_status_free(st);
            return false;
        }
    }
    for (int r = 0; r < BI_NROWS && ok; r++) {
        p.M = bi_rows[r];
        /* the documented exception (matmul_nbits.c): float arithmetic switches to the
         * sgemm over dequantized panels at 16 rows; invariance holds below that */
        if (!c->int8 && !c->pack && p.M >= 16) continue;
        p.A = A;
        p.Y = Y;
        if (pk) { /* the prepacked int8 GEMM the session prepares for these weights */
            /* each row in its form (kernel_ctx.row_forms): tokens of runs of several, a
             * decode step's, a run's last of 128k + 1, mixed as a flat batch mixes them */
            uint8_t forms[BI_MAXM];
            for (int64_t i = 0; i < p.M; i++)
                forms[i] = (uint8_t)(i % 3 == 0 ? BACKEND_ROW_ALONE
                                                : i % 5 == 1 ? BACKEND_ROW_LAST : BACKEND_ROW_MANY);
            int threads = threadpool_size(pool);
            void *w = aligned_alloc(64, (mnb_pack_work_size(pk, p.M, threads) + 127) / 64 * 64);
            mnb_pack_run(pool, pk, A, p.M, forms, bias, Y, w);
            free(w);
            for (int64_t i = 0; i < p.M && ok; i++) {
                void *w1 = aligned_alloc(64, (mnb_pack_work_size(pk, 1, 1) + 127) / 64 * 64);
                /* the row alone on the same pool (BACKEND_ROW_LAST's form depends on it) */
                mnb_pack_run(pool, pk, A + i * c->K, 1, forms + i, bias, one, w1);
                free(w1);
                if (memcmp(one, Y + i * c->N, sizeof(float) * (size_t)c->N) != 0) {
                    fprintf(stderr, "    packed MatMulNBits bs=%d N=%lld K=%lld zp=%d: row %lld of "
                            "M=%lld differs from the row alone (kernels %s / %s)\n", c->bs,
                            (long long)c->N, (long long)c->K, c->zp, (long long)i, (long long)p.M,
                            mnb_pack_kernel_name(p.M), mnb_pack_kernel_name(1));
                    ok = false;
                }
            }
            continue;
        }
        void *work = aligned_alloc(64, (mnb_work_size(&p) + 127) / 64 * 64);
        og_status *st = mnb_run(pool, &p, work);
        free(work);
        if (st) {
            og_status_free(st);
            return false;
        }
        for (int64_t i = 0; i < p.M && ok; i++) {
            mnb_problem q = p;
            q.M = 1;
            q.A = A + i * c->K;
            q.Y = one;
            work = aligned_alloc(64, (mnb_work_size(&q) + 127) / 64 * 64);
            st = mnb_run(NULL, &q, work);
            free(work);
            if (st) {
                og_status_free(st);
                return false;
            }
            if (memcmp(one, Y + i * c->N, sizeof(float) * (size_t)c->N) != 0) {
                fprintf(stderr, "    MatMulNBits bits=%d bs=%d N=%lld K=%lld int8=%d zp=%d: row %lld "
                        "of M=%lld differs from the row alone\n", c->bits, c->bs, (long long)c->N,
                        (long long)c->K, c->int8, c->zp, (long long)i, (long long)p.M);
                ok = false;
            }
        }
    }
    mnb_pack_free(pk);
    free(B), free(zp), free(S), free(zf), free(bias), free(A), free(Y), free(one);
    return ok;
}

TEST(batch_invariance_matmul_nbits_rows_do_not_depend_on_m) {
    threadpool *pool;
    CHECK_OK(threadpool_create(2, &pool));
    static const bi_mnb cases[] = {
        {4, 32, 67, 128, true, 0},  {4, 32, 64, 896, true, 0}, {4, 16, 70, 96, true, 1},
        {4, 64, 33, 200, true, 2},  {8, 32, 45, 160, true, 0}, {4, 32, 67, 128, false, 0},
        {4, 16, 70, 96, false, 1},  {4, 128, 19, 300, false, 2}, {8, 32, 45, 160, false, 1},
        {2, 32, 21, 64, false, 0},  {4, 32, 67, 128, true, 0, true}, {4, 32, 64, 896, true, 1, true},
        {4, 16, 70, 96, true, 0, true}, {4, 128, 40, 512, true, 1, true},
        /* block 32 in onnxruntime's order with 1 to 3 blocks after the last four (kb 5,
         * 7, 30): a decode batch's row groups against the row streamed alone */
        {4, 32, 45, 160, true, 1, true}, {4, 32, 67, 200, true, 0, true},
        {4, 32, 33, 960, true, 1, true},
        /* float arithmetic on the packs (three int8 digits of A) */
        {4, 32, 67, 128, false, 0, true}, {4, 32, 64, 896, false, 1, true},
    };
    isa_level saved = isa_active();
    for (int level = ISA_GENERIC; level <= (int)isa_supported(); level++) {
        isa_set((isa_level)level);
        for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
            CHECK(mnb_case(&cases[i], NULL));
            CHECK(mnb_case(&cases[i], pool));
        }
    }
    isa_set(saved);
    threadpool_free(pool);
}

/* MultiHeadAttention (the builder's fp16/bf16 CPU attention): a query's output has the
 * same bits whether its keys stand alone or after masked padding keys, as a generator's
 * left-padded batch puts them (the shorter rows of a batch equal their runs alone). */
TEST(batch_invariance_mha_output_does_not_depend_on_left_padding) {
    enum { N = 2, D = 8, H = N * D, REAL = 5, PAD = 3, T = REAL + PAD };
    float q[H], k[T * H], v[T * H];
    for (int i = 0; i < H; i++) q[i] = bi_rand();
    for (int i = 0; i < T * H; i++) k[i] = bi_rand(), v[i] = bi_rand();
    int32_t mask_alone[REAL], mask_padded[T];
    for (int t = 0; t < T; t++) mask_padded[t] = t >= PAD;
    for (int t = 0; t < REAL; t++) mask_alone[t] = 1;
    graph_attr heads = {.name = "num_heads", .type = ATTR_INT, .i = N};
    float out[2][H];
    for (int padded = 0; padded < 2; padded++) {
        int64_t L = padded ? T : REAL, off = padded ? 0 : PAD * H;
        int64_t qd[3] = {1, 1, H}, kd[3] = {1, L, H}, md[2] = {1, L};
        tensor tq = kh_tensor(OG_FLOAT32, 3, qd, q), tk = kh_tensor(OG_FLOAT32, 3, kd, k + off),
               tv = kh_tensor(OG_FLOAT32, 3, kd, v + off),
               tm = kh_tensor(OG_INT32, 2, md, padded ? mask_padded : mask_alone);
        const tensor *in[5] = {&tq, &tk, &tv, NULL, &tm};
        kh_run r;
        CHECK_OK(kh_call(&r, cpu_contrib_mha, 1, &heads, 1, in, 5, 1));
        memcpy(out[padded], r.out[0].data, sizeof out[padded]);
        kh_free(&r);
    }
    CHECK(memcmp(out[0], out[1], sizeof out[0]) == 0);
}
