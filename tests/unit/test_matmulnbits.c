/* MatMulNBits: the fast path (ISA column kernels, row tiles, dequantize + sgemm,
 * threaded) against the plain reference loops, and the A quantizer's rounding. */
#include "testing.h"

#include "base/threadpool.h"
#include "backends/native/kernels/matmul/matmul_nbits.h"
#include "backends/native/kernels/matmul/matmul_nbits_pack.h"

#include <stdlib.h>

static uint32_t lcg = 12345;
static uint32_t next_u32(void) {
    lcg = lcg * 1664525u + 1013904223u;
    return lcg >> 8;
}
static float next_f(void) { return (float)(next_u32() % 20001) / 10000.0f - 1.0f; }

TEST(mnb_quantize_rounds_half_to_even_with_127_over_amax) {
    /* amax 127: the multiplier is exactly 1, so the halves decide the rounding */
    float a[16] = {127, 2.5f, 3.5f, -2.5f, -0.5f, 0.5f, 1.5f, 126.5f};
    int8_t q[16];
    float scale;
    int32_t sum;
    mnb_quantize_block(a, 16, q, &scale, &sum);
    CHECK_EQ_INT(q[0], 127);
    CHECK_EQ_INT(q[1], 2);
    CHECK_EQ_INT(q[2], 4);
    CHECK_EQ_INT(q[3], -2);
    CHECK_EQ_INT(q[4], 0);
    CHECK_EQ_INT(q[5], 0);
    CHECK_EQ_INT(q[6], 2);
    CHECK_EQ_INT(q[7], 126);
    CHECK_EQ_INT(sum, 127 + 2 + 4 - 2 + 2 + 126);
    CHECK_NEAR(scale, 1.0, 0);
    /* measured against onnxruntime: a * (127/amax) gives 111 where a / (amax/127) gives 112 */
    float b[16] = {1.1659795f, 1.0236748f};
    mnb_quantize_block(b, 2, q, &scale, &sum);
    CHECK_EQ_INT(q[1], 111);
    float z[16] = {0};
    mnb_quantize_block(z, 16, q, &scale, &sum);
    CHECK_EQ_INT(q[3], 0);
    CHECK_NEAR(scale, 0, 0);
}

typedef struct config {
    int bits, bs;
    int64_t M, N, K;
    bool int8;
    int zp; /* 0 none, 1 packed, 2 float */
    bool bias;
} config;

static void check_config(const config *c, threadpool *pool) {
    int64_t kb = (c->K + c->bs - 1) / c->bs, blob = c->bs * c->bits / 8;
    int64_t zstride = (kb * c->bits + 7) / 8;
    uint8_t *B = malloc((size_t)(c->N * kb * blob));
    uint8_t *zp = malloc((size_t)(c->N * zstride));
    float *S = malloc(sizeof(float) * (size_t)(c->N * kb));
    float *zf = malloc(sizeof(float) * (size_t)(c->N * kb));
    float *bias = malloc(sizeof(float) * (size_t)c->N);
    float *A = malloc(sizeof(float) * (size_t)(c->M * c->K));
    float *Y = malloc(sizeof(float) * (size_t)(c->M * c->N));
    float *R = malloc(sizeof(float) * (size_t)(c->M * c->N));
    void *work = NULL;
    CHECK(B && zp && S && zf && bias && A && Y && R);
    for (int64_t i = 0; i < c->N * kb * blob; i++) B[i] = (uint8_t)next_u32();
    for (int64_t i = 0; i < c->N * zstride; i++) zp[i] = (uint8_t)next_u32();
    for (int64_t i = 0; i < c->N * kb; i++) {
        S[i] = 0.01f + 0.05f * (next_f() + 1.0f);
        zf[i] = (float)(next_u32() % 1000) / 1000.0f * (float)((1 << c->bits) - 1);
    }
    for (int64_t i = 0; i < c->N; i++) bias[i] = next_f();
    for (int64_t i = 0; i < c->M * c->K; i++) A[i] = next_f() * 3.0f;
    if (c->M > 1) A[c->K + 1] = 0; /* a block of zeros would have amax 0: keep one sane */
    mnb_problem p = {.M = c->M, .N = c->N, .K = c->K, .bits = c->bits, .block_size = c->bs,
                     .k_blocks = kb, .blob = blob, .B = B, .scales = S,
                     .zp_packed = c->zp == 1 ? zp : NULL, .zp_stride = zstride,
                     .zp_float = c->zp == 2 ? zf : NULL, .bias = c->bias ? bias : NULL,
                     .int8 = c->int8, .A = A, .Y = R};
    mnb_ref(&p);
    p.Y = Y;
    double big = 0;
    for (int64_t i = 0; i < c->M * c->N; i++) big = fmax(big, fabs(R[i]));
    /* the unprepared path under every instruction set this CPU has */
    isa_level saved = isa_active();
    for (int level = ISA_GENERIC; level <= (int)isa_supported(); level++) {
        isa_set((isa_level)level);
        size_t ws = (mnb_work_size(&p) + 63) / 64 * 64 + 64;
        work = aligned_alloc(64, ws);
        CHECK(work);
        CHECK_OK(mnb_run(pool, &p, work));
        free(work);
        for (int64_t i = 0; i < c->M * c->N; i++)
            if (!(fabs(Y[i] - R[i]) <= 1e-5 * big + 1e-6)) {
                test_fail(__FILE__, __LINE__, "%s: bits %d bs %d M %lld N %lld K %lld int8 %d "
                          "zp %d: Y[%lld] = %.7g, reference %.7g", isa_name((isa_level)level),
                          c->bits, c->bs, (long long)c->M, (long long)c->N, (long long)c->K,
                          c->int8, c->zp, (long long)i, Y[i], R[i]);
                break;
            }
    }
    isa_set(saved);
    free(B);
    free(zp);
    free(S);
    free(zf);
    free(bias);
    free(A);
    free(Y);
    free(R);
}

static void sweep(threadpool *pool) {
    static const int bss[] = {16, 32, 64, 128, 256};
    static const int64_t ms[] = {1, 3, 6, 17};
    int i = 0;
    for (int bits = 2; bits <= 8; bits *= 2)
        for (int b = 0; b < 5; b++)
            for (int mode = 0; mode < 2; mode++)
                for (int zp = 0; zp < 3; zp++, i++) {
                    if (mode == 1 && zp == 2) continue; /* int8 never has float zero points */
                    int bs = bss[b];
                    config c = {bits, bs, ms[i % 4], 5 + i % 37, 2 * bs + (i % 3 ? bs / 2 + 8 : 0),
                                mode == 1, zp, i % 2 == 0};
                    check_config(&c, pool);
                }
    /* a decode-sized product split over many columns */
    config big = {4, 32, 1, 300, 896, true, 0, false};
    check_config(&big, pool);
    big.int8 = false;
    check_config(&big, pool);
    /* float prefill: the sgemm's panels (32 or 16 columns) dequantized from 4 bits, K
     * blocks of the sgemm not on multiples of 8, zero points of every kind */
    for (int zp = 0; zp < 3; zp++) {
        config f = {4, 32, 40, 75, 900, false, zp, zp == 1};
        check_config(&f, pool);
        config g = {4, 16, 19, 33, 517, false, zp, false};
        check_config(&g, pool);
    }
}

/* One row of A (decode): the 4-column kernels, whose scale products serve runs of
 * chunks, over every block size, with K ending inside a run and inside a block; on a
 * pool the columns (more than one thread's grain, not a multiple of 4) go out in
 * guided pieces. */
static void decode_sweep(threadpool *pool) {
    static const int bss[] = {16, 32, 64, 128, 256};
    for (int bits = 4; bits <= 8; bits *= 4)
        for (int b = 0; b < 5; b++)
            for (int mode = 0; mode < 2; mode++)
                for (int zp = 0; zp < 3; zp++) {
                    if (mode == 1 && zp == 2) continue;
                    int bs = bss[b];
                    int64_t Ks[] = {896, 4864, 7 * bs + bs / 2 + 8};
                    for (int k = 0; k < 3; k++) {
                        config c = {bits, bs, 1, 203, Ks[k], mode == 1, zp, k == 1};
                        check_config(&c, pool);
                    }
                }
}

TEST(mnb_decode_kernels_match_reference) {
    threadpool *pool = NULL;
    decode_sweep(NULL);
    CHECK_OK(threadpool_create(2, &pool));
    decode_sweep(pool);
    threadpool_free(pool);
}

TEST(mnb_fast_path_matches_reference_inline) { sweep(NULL); }

TEST(mnb_fast_path_matches_reference_on_pool) {
    threadpool *pool = NULL;
    CHECK_OK(threadpool_create(3, &pool));
    sweep(pool);
    threadpool_free(pool);
}

TEST(mnb_vector_quantizer_matches_scalar_bit_for_bit) {
    if (isa_supported() < ISA_AVX512) {
        test_skip("this CPU has no AVX-512 VNNI: the vector quantizer cannot run here");
        return;
    }
    float a[256];
    int8_t q1[256], q2[256];
    for (int t = 0; t < 400; t++) {
        int len = 16 + (int)(next_u32() % 241);
        for (int i = 0; i < len; i++) /* halves at amax 127 make ties; others random */
            a[i] = t % 2 ? (float)((int)(next_u32() % 509) - 254) * 0.5f : next_f() * 7.0f;
        if (t % 2) a[0] = 127.0f;
        if (t == 10) memset(a, 0, sizeof a);
        float s1, s2;
        int32_t u1, u2;
        mnb_quantize_block(a, len, q1, &s1, &u1);
        mnb_x512_quantize_block(a, len, q2, &s2, &u2);
        CHECK(memcmp(q1, q2, (size_t)len) == 0);
        CHECK_EQ_INT(u1, u2);
        CHECK(s1 == s2);
    }
}

/* Three int8 digits stand for a float value of A to 2^-17 of the block scale, plus the
 * rounding of a * (127/amax) (so float arithmetic on the int8 kernels is float32's to
 * its rounding), and the vector version gives the same digits, scale and sums as the
 * portable one. Halves at amax 127 make the ties that carry into the digit before. */
TEST(mnb_digits_represent_a_and_match_vector) {
    float a[256];
    int8_t d1[3 * 256], d2[3 * 256];
    for (int t = 0; t < 400; t++) {
        int len = 16 + (int)(next_u32() % 241);
        for (int i = 0; i < len; i++)
            a[i] = t % 3 == 0 ? (float)((int)(next_u32() % 509) - 254) * 0.5f
                              : next_f() * (t % 3 == 1 ? 7.0f : 1e-20f);
        if (t % 3 == 0) a[0] = 127.0f;
        if (t == 10) memset(a, 0, sizeof a);
        float s1;
        int32_t u1[3];
        mnb_digits_block(a, len, d1, 256, &s1, u1);
        float amax = 0;
        for (int i = 0; i < len; i++) amax = fmaxf(amax, fabsf(a[i]));
        CHECK(s1 == amax / 127.0f);
        for (int r = 0; r < 3; r++) {
            int32_t sum = 0;
            for (int i = 0; i < len; i++) sum += d1[r * 256 + i];
            CHECK_EQ_INT(sum, u1[r]);
        }
        for (int i = 0; i < len; i++) {
            double v = (double)s1 * (d1[i] + d1[256 + i] / 256.0 + d1[512 + i] / 65536.0);
            if (!(fabs(v - a[i]) <= (double)s1 * 0x1p-17 + fabs(a[i]) * 0x1p-22 + 1e-45)) {
                test_fail(__FILE__, __LINE__, "case %d: a[%d] = %.9g, digits give %.9g (scale %g)",
                          t, i, a[i], v, s1);
                return;
            }
        }
        if (isa_supported() >= ISA_AVX512) {
            float s2;
            int32_t u2[3];
            memset(d2, 0x55, sizeof d2);
            mnb_x512_digits_block(a, len, d2, 256, &s2, u2);
            for (int r = 0; r < 3; r++) {
                CHECK(memcmp(d1 + r * 256, d2 + r * 256, (size_t)len) == 0);
                CHECK_EQ_INT(u1[r], u2[r]);
            }
            CHECK(s1 == s2);
        }
    }
    if (isa_supported() < ISA_AVX512)
        test_skip("this CPU has no AVX-512: the vector digits were not compared");
}

/* ---- the prepacked int8 GEMM (matmul_nbits_pack.c) -------------------------------- */

/* Every ISA level this CPU has (OG_ISA's levels, forced with isa_set) against the
 * double reference, and bit for bit against the first level of its class: the kernels
 * of a class run the same float operations in the same order (matmul_nbits_pack.h: at
 * block size 32 in int8 arithmetic the portable and AVX2 kernels take onnxruntime's
 * AVX2 order, the AVX-512 and AMX kernels the exact one; elsewhere all take the exact
 * order). int8: accuracy_level 4's arithmetic (reference:
 * int8 A in double); otherwise float arithmetic through the digits (reference: float A
 * and weights in double), within a few float32 roundings of the largest output. */
static void check_pack_as(int bs, int64_t M, int64_t N, int64_t K, bool zp, bool bias,
                          threadpool *pool, bool int8) {
    int64_t kb = (K + bs - 1) / bs, blob = bs / 2, zstride = (kb + 1) / 2;
    uint8_t *B = malloc((size_t)(N * kb * blob)), *Z = malloc((size_t)(N * zstride));
    float *S = malloc(sizeof(float) * (size_t)(N * kb)), *bv = malloc(sizeof(float) * (size_t)N);
    float *A = malloc(sizeof(float) * (size_t)(M * K)), *R = malloc(sizeof(float) * (size_t)(M * N));
    float *Y = malloc(sizeof(float) * (size_t)(M * N)), *G = malloc(sizeof(float) * (size_t)(M * N));
    float *G2 = malloc(sizeof(float) * (size_t)(M * N));
    CHECK(B && Z && S && bv && A && R && Y && G && G2);
    for (int64_t i = 0; i < N * kb * blob; i++) B[i] = (uint8_t)next_u32();
    for (int64_t i = 0; i < N * zstride; i++) Z[i] = (uint8_t)next_u32();
    for (int64_t i = 0; i < N * kb; i++) S[i] = 0.01f + 0.05f * (next_f() + 1.0f);
    for (int64_t i = 0; i < N; i++) bv[i] = next_f();
    for (int64_t i = 0; i < M * K; i++) A[i] = next_f() * 3.0f;
    if (M > 1) for (int64_t k = 0; k < K && k < bs; k++) A[K + k] = 0; /* a block of zeros */
    mnb_problem p = {.M = M, .N = N, .K = K, .bits = 4, .block_size = bs, .k_blocks = kb,
                     .blob = blob, .B = B, .scales = S, .zp_packed = zp ? Z : NULL,
                     .zp_stride = zstride, .bias = bias ? bv : NULL, .int8 = int8, .A = A,
                     .Y = R};
    mnb_ref(&p);
    CHECK(mnb_pack_handles(&p));
    mnb_pack *pk;
    CHECK_OK(mnb_pack_create(&p, &pk));
    isa_level saved = isa_active();
    bool split = int8 && bs == 32; /* two classes of arithmetic */
    for (int level = ISA_GENERIC; level <= (int)isa_supported(); level++) {
        isa_set((isa_level)level);
        size_t ws = mnb_pack_work_size(pk, M, threadpool_size(pool));
        void *work = aligned_alloc(64, (ws + 63) / 64 * 64);
        CHECK(work);
        bool first = level == ISA_GENERIC || (split && level == ISA_AVX512);
        float *cls = split && level >= ISA_AVX512 ? G2 : G;
        float *out = first ? cls : Y;
        for (int64_t i = 0; i < M * N; i++) out[i] = NAN; /* every element must be written */
        mnb_pack_run(pool, pk, A, M, NULL, p.bias, out, work);
        free(work);
        double big = 0;
        for (int64_t i = 0; i < M * N; i++) big = fmax(big, fabs(R[i]));
        double tol = int8 ? 1e-5 * big + 1e-6 : 1e-6 * big + 1e-7;
        for (int64_t i = 0; i < M * N; i++) {
            if (!(fabs(out[i] - R[i]) <= tol) || (!first && memcmp(&out[i], &cls[i], 4) != 0)) {
                test_fail(__FILE__, __LINE__, "%s (%s, %s): bs %d M %lld N %lld K %lld zp %d: "
                          "Y[%lld] = %.9g, portable %.9g, reference %.9g",
                          isa_name((isa_level)level), mnb_pack_kernel_name(M),
                          int8 ? "int8" : "float", bs, (long long)M, (long long)N,
                          (long long)K, zp, (long long)i, out[i], cls[i], R[i]);
                break;
            }
        }
    }
    isa_set(saved);
    mnb_pack_free(pk);
    free(B);
    free(Z);
    free(S);
    free(bv);
    free(A);
    free(R);
    free(Y);
    free(G);
    free(G2);
}

static void check_pack(int bs, int64_t M, int64_t N, int64_t K, bool zp, bool bias,
                       threadpool *pool) {
    check_pack_as(bs, M, N, K, zp, bias, pool, true);
    check_pack_as(bs, M, N, K, zp, bias, pool, false);
}

/* M = 1, 2, 3 (the streaming row kernels; float arithmetic runs 3M digit rows), 5 to 17
 * (decode batches: row groups over each panel pair), 17 and
 * 20 (register tiles with a ragged last strip, or the row kernels over several row
 * groups where the ISA's tiles start at 48 rows), 49 and 512; K ending inside a block; N leaving
 * a partial panel and an odd panel count; every block size; with and without zero
 * points and bias; int8 and float arithmetic. */
static void pack_sweep(threadpool *pool) {
    static const int bss[] = {16, 32, 64, 128, 256};
    static const int64_t ms[] = {1, 2, 3, 17};
    static const int64_t ns[] = {5, 21, 40, 67};
    int i = 0;
    for (int b = 0; b < 5; b++)
        for (int zp = 0; zp < 2; zp++)
            for (int m = 0; m < 4; m++, i++) {
                int bs = bss[b];
                int64_t K = i % 3 ? 2 * bs + bs / 2 + 8 : 3 * bs;
                check_pack(bs, ms[m], ns[i % 4], K, zp, i % 2 == 0, pool);
            }
    check_pack(32, 512, 67, 200, false, true, pool);
    check_pack(64, 20, 40, 160, false, true, pool);
    check_pack(32, 49, 67, 200, true, false, pool);
    check_pack(32, 512, 40, 96, true, false, pool);
    check_pack(128, 512, 21, 300, false, false, pool);
    check_pack(32, 4, 300, 896, false, false, pool); /* decode-like: many panels */
    check_pack(32, 1, 300, 896, false, true, pool);
    /* decode batches: AVX-512 runs them in groups of up to 8 rows over each panel pair
     * (5..8 in one group, then a ragged last group of 1..8) */
    static const int64_t batch[] = {5, 6, 7, 8, 9, 12, 13, 16, 17};
    for (int j = 0; j < 9; j++) {
        int bs = bss[j % 3];
        int64_t K = j % 2 ? 3 * bs + bs / 2 + 8 : 4 * bs;
        check_pack(bs, batch[j], ns[j % 4], K, j % 3 == 1, j % 2 == 0, pool);
    }
    check_pack(32, 8, 300, 896, false, true, pool);
    check_pack(32, 16, 300, 896, true, false, pool);
}

TEST(mnb_pack_every_isa_matches_reference_inline) { pack_sweep(NULL); }

TEST(mnb_pack_every_isa_matches_reference_on_pool) {
    threadpool *pool = NULL;
    CHECK_OK(threadpool_create(3, &pool));
    pack_sweep(pool);
    threadpool_free(pool);
}

/* The pack's bytes against the layout that matmul_nbits_pack.h writes down, value by
 * value from the original MatMulNBits inputs: K over several of packing's runs with a
 * partial last one, a partial last panel and the even panel count's padding panel. */
static void check_pack_layout(int bs, int64_t N, int64_t K, bool zp) {
    int64_t kb = (K + bs - 1) / bs, blob = bs / 2, zstride = (kb + 1) / 2;
    uint8_t *B = malloc((size_t)(N * kb * blob)), *Z = malloc((size_t)(N * zstride));
    float *S = malloc(sizeof(float) * (size_t)(N * kb));
    CHECK(B && Z && S);
    for (int64_t i = 0; i < N * kb * blob; i++) B[i] = (uint8_t)next_u32();
    for (int64_t i = 0; i < N * zstride; i++) Z[i] = (uint8_t)next_u32();
    for (int64_t i = 0; i < N * kb; i++) S[i] = next_f();
    mnb_problem p = {.M = 1, .N = N, .K = K, .bits = 4, .block_size = bs, .k_blocks = kb,
                     .blob = blob, .B = B, .scales = S, .zp_packed = zp ? Z : NULL,
                     .zp_stride = zstride, .int8 = true};
    mnb_pack *pk;
    CHECK_OK(mnb_pack_create(&p, &pk));
    CHECK_EQ_INT(pk->panels, ((N + 15) / 16 + 1) / 2 * 2);
    CHECK(zp == (pk->zp != NULL));
    int64_t bad = 0;
    for (int64_t pn = 0; pn < pk->panels; pn++)
        for (int c = 0; c < 16; c++) {
            int64_t n = pn * 16 + c;
            for (int64_t k = 0; k < kb * bs; k++) {
                int want = n < N ? (B[n * kb * blob + k / 2] >> (4 * (k & 1))) & 15 : 0;
                uint8_t byte = pk->B[pn * pk->panel_bytes + (k / 8) * 64 + 4 * c + (k & 3)];
                int got = (k & 4) ? byte >> 4 : byte & 15;
                bad += got != want;
            }
            for (int64_t b = 0; b < kb; b++) {
                size_t at = (size_t)((pn * kb + b) * 16 + c);
                float ws = n < N ? S[n * kb + b] : 0.0f;
                bad += memcmp(&pk->scales[at], &ws, 4) != 0;
                if (zp) bad += pk->zp[at] != (n < N ? (Z[n * zstride + b / 2] >> (4 * (b & 1))) & 15 : 0);
            }
        }
    if (bad)
        test_fail(__FILE__, __LINE__, "bs %d N %lld K %lld zp %d: %lld packed values differ "
                  "from the layout", bs, (long long)N, (long long)K, zp, (long long)bad);
    mnb_pack_free(pk);
    free(B);
    free(Z);
    free(S);
}

TEST(mnb_pack_bytes_follow_the_documented_layout) {
    check_pack_layout(32, 37, 1100, true);  /* 140 groups: two runs of 64 and one of 12 */
    check_pack_layout(32, 37, 1100, false);
    check_pack_layout(16, 5, 40, true);     /* one panel and its padding panel */
    check_pack_layout(128, 64, 1024, false); /* exactly two runs, whole panels */
    check_pack_layout(256, 17, 300, true);
}

/* A decode product runs on its caller when its work, by the pool's cost model
 * (threadpool_work_ns: the weights streamed once, two operations per weight), is below
 * the pool's inline threshold, and is split over the workers when above it; the outputs
 * are the same bits either way. K 256 x N 512 (80 KiB of weights and scales, about 13 us
 * by the model) was handed out in two pieces before; K 2048 x N 2048 (2.5 MiB) is split. */
TEST(mnb_pack_decode_split_follows_work) {
    threadpool *pool;
    CHECK_OK(threadpool_create(2, &pool));
    threadpool_set_inline_ns(pool, THREADPOOL_INLINE_NS); /* the suite sets 0 */
    const int64_t shapes[2][2] = {{256, 512}, {2048, 2048}};
    for (int s = 0; s < 2; s++) {
        int64_t K = shapes[s][0], N = shapes[s][1], kb = K / 32;
        uint8_t *B = malloc((size_t)(N * kb * 16));
        float *S = malloc(sizeof(float) * (size_t)(N * kb)), *A = malloc(sizeof(float) * (size_t)K);
        float *Y0 = malloc(sizeof(float) * (size_t)N), *Y1 = malloc(sizeof(float) * (size_t)N);
        CHECK(B && S && A && Y0 && Y1);
        for (int64_t i = 0; i < N * kb * 16; i++) B[i] = (uint8_t)next_u32();
        for (int64_t i = 0; i < N * kb; i++) S[i] = 0.01f + 0.05f * (next_f() + 1.0f);
        for (int64_t i = 0; i < K; i++) A[i] = next_f();
        mnb_problem p = {.M = 1, .N = N, .K = K, .bits = 4, .block_size = 32, .k_blocks = kb,
                         .blob = 16, .B = B, .scales = S, .int8 = true};
        mnb_pack *pk;
        CHECK_OK(mnb_pack_create(&p, &pk));
        size_t ws = mnb_pack_work_size(pk, 1, 2);
        void *work = aligned_alloc(64, (ws + 63) / 64 * 64);
        CHECK(work);
        mnb_pack_run(NULL, pk, A, 1, NULL, NULL, Y0, work);
        uint64_t jobs0 = threadpool_jobs(pool);
        mnb_pack_run(pool, pk, A, 1, NULL, NULL, Y1, work);
        uint64_t jobs = threadpool_jobs(pool) - jobs0;
        double ns = threadpool_work_ns((double)pk->bytes, 2.0 * (double)(N * K));
        if (s == 0) CHECK(ns < THREADPOOL_INLINE_NS && jobs == 0);
        else CHECK(ns > THREADPOOL_INLINE_NS && jobs > 0);
        CHECK(memcmp(Y0, Y1, sizeof(float) * (size_t)N) == 0);
        free(work);
        mnb_pack_free(pk);
        free(B);
        free(S);
        free(A);
        free(Y0);
        free(Y1);
    }
    threadpool_free(pool);
}
