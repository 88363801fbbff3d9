/* Kernels with prepared state (kernel_def.prepare) on a session: MatMulNBits' prepacked
 * weights against the reference on the very initializers, nodes inside subgraphs
 * prepared too, a caller's own value for an initializer taking precedence over what was
 * prepared from it, and the accounting (bytes prepared, mapped pages released). Run
 * under ASan by `make test-sanitize`, this is also the lifetime test of the states. */
#include "testing.h"

#include "backends/native/kernels/matmul/gemm_f32.h"
#include "backends/native/kernels/matmul/matmul_nbits.h"
#include "backends/native/kernels/matmul/matmul_nbits_pack.h"
#include "runtime/og_session.h"

#include <stdlib.h>

static const tensor *init_of(const graph *g, const char *name) {
    int v = graph_find_value(g, name);
    return v >= 0 ? g->values[v].initializer : NULL;
}

/* The initializers of the MatMulNBits node `prefix`: weights, scales, zero points (NULL
 * when it has none). */
static void nbits_inits_of(const graph *g, const char *prefix, const tensor **B,
                           const tensor **S, const tensor **Z) {
    char name[64];
    snprintf(name, sizeof name, "%s_B", prefix);
    *B = init_of(g, name);
    snprintf(name, sizeof name, "%s_S", prefix);
    *S = init_of(g, name);
    snprintf(name, sizeof name, "%s_Z", prefix);
    *Z = init_of(g, name);
}

/* The reference product of the node `prefix` (4 bits, block 32, level 4) over rows A. */
static void reference(const graph *g, const char *prefix, const uint8_t *B_override, int64_t N,
                      int64_t K, const float *A, int64_t M, float *Y) {
    const tensor *B, *S, *Z;
    nbits_inits_of(g, prefix, &B, &S, &Z);
    CHECK(B && S);
    int64_t kb = (K + 31) / 32;
    mnb_problem p = {.M = M, .N = N, .K = K, .bits = 4, .block_size = 32, .k_blocks = kb,
                     .blob = 16, .B = B_override ? B_override : B->data, .scales = S->data,
                     .zp_packed = Z ? Z->data : NULL, .zp_stride = (kb + 1) / 2, .int8 = true,
                     .A = A, .Y = Y};
    mnb_ref(&p);
}

static void check_close(const char *what, const float *y, const float *r, int64_t n) {
    double big = 0;
    for (int64_t i = 0; i < n; i++) big = fmax(big, fabs(r[i]));
    for (int64_t i = 0; i < n; i++)
        if (!(fabs(y[i] - r[i]) <= 1e-5 * big + 1e-6)) {
            test_fail(__FILE__, __LINE__, "%s[%lld] = %.7g, reference %.7g", what, (long long)i,
                      y[i], r[i]);
            return;
        }
}

static const graph *then_branch(const graph *g) {
    for (int i = 0; i < g->n_nodes; i++)
        for (int a = 0; a < g->nodes[i].n_attrs; a++)
            if (strcmp(g->nodes[i].attrs[a].name, "then_branch") == 0) return g->nodes[i].attrs[a].g;
    return NULL;
}

static float *random_rows(int64_t M, int64_t K, unsigned seed) {
    float *a = malloc(sizeof(float) * (size_t)(M * K));
    for (int64_t i = 0; a && i < M * K; i++) {
        seed = seed * 1664525u + 1013904223u;
        a[i] = (float)((seed >> 9) % 20001) / 5000.0f - 2.0f;
    }
    return a;
}

/* One run with M rows; B_small, when given, is fed for the initializer small_B. */
static void run_and_check(og_session *s, int64_t M, const uint8_t *B_small) {
    const graph *g = runtime_session_graph(s);
    float *a = random_rows(M, 80, 11u + (unsigned)M), *a256 = random_rows(M, 256, 5u * (unsigned)M);
    CHECK(a && a256);
    int64_t da[2] = {M, 80}, db[2] = {M, 256}, dB[3] = {37, 3, 16};
    uint8_t cond = 1;
    og_tensor *ta, *tb, *tc, *tB = NULL;
    CHECK_OK(og_tensor_wrap(OG_FLOAT32, da, 2, a, sizeof(float) * (size_t)(M * 80), &ta));
    CHECK_OK(og_tensor_wrap(OG_FLOAT32, db, 2, a256, sizeof(float) * (size_t)(M * 256), &tb));
    CHECK_OK(og_tensor_wrap(OG_BOOL, NULL, 0, &cond, 1, &tc));
    if (B_small) CHECK_OK(og_tensor_wrap(OG_UINT8, dB, 3, (void *)B_small, 37 * 3 * 16, &tB));
    const char *in_names[] = {"a", "a256", "cond", "small_B"};
    og_tensor *ins[] = {ta, tb, tc, tB};
    const char *out_names[] = {"y_small", "y_big", "y_shared", "y_sub"};
    og_tensor *outs[4] = {0};
    CHECK_OK(og_session_run(s, in_names, ins, B_small ? 4 : 3, out_names, outs, 4));
    float *r = malloc(sizeof(float) * (size_t)(M * 300));
    CHECK(r);
    reference(g, "small", B_small, 37, 80, a, M, r);
    check_close("y_small", og_tensor_data(outs[0]), r, M * 37);
    reference(g, "big", NULL, 300, 256, a256, M, r);
    check_close("y_big", og_tensor_data(outs[1]), r, M * 300);
    reference(g, "shared", NULL, 40, 256, a256, M, r);
    check_close("y_shared", og_tensor_data(outs[2]), r, M * 40);
    reference(then_branch(g), "sub", NULL, 24, 80, a, M, r);
    check_close("y_sub", og_tensor_data(outs[3]), r, M * 24);
    for (int i = 0; i < 4; i++) og_tensor_free(outs[i]);
    og_tensor_free(ta);
    og_tensor_free(tb);
    og_tensor_free(tc);
    og_tensor_free(tB);
    free(r);
    free(a);
    free(a256);
}

TEST(prepared_state_matmulnbits_on_a_session) {
    NEED_TEST_MODEL(path, "nbits_prepared.onnx");
    og_session *s;
    CHECK_OK(og_session_open(path, NULL, &s));
    backend_prep_stats prep;
    runtime_session_prep_stats(s, &prep);
    /* small, big and shared in the main graph, sub in the If's then-branch */
    CHECK_EQ_INT(prep.nodes, 4);
    /* each pack holds 16 bytes of weights and a 4-byte scale per (column, block), and a
     * byte of zero point where the model has them, over columns padded to an even count
     * of 16-column panels: 64, 320, 64 and 32 columns */
    size_t want = 64 * 3 * 21 + 320 * 8 * 20 + 64 * 8 * 20 + 32 * 3 * 20;
    CHECK_EQ_INT(prep.bytes, want);
    /* big's weights went; shared_B stays (an Identity reads it), so at most the rest */
    const graph *g = runtime_session_graph(s);
    size_t bound = init_of(g, "big_B")->nbytes + init_of(g, "big_S")->nbytes + 4096 * 6;
    CHECK(prep.released >= 32768 && prep.released <= bound);
    for (int64_t M = 1; M <= 17; M += 8) run_and_check(s, M, NULL);
    /* the caller's own small_B: the prepacked one must not be used */
    uint8_t *other = malloc(37 * 3 * 16);
    CHECK(other);
    for (int i = 0; i < 37 * 3 * 16; i++) other[i] = (uint8_t)(i * 7 + 3);
    run_and_check(s, 3, other);
    run_and_check(s, 3, NULL); /* and the next run is back on the prepared state */
    free(other);
    og_session_close(s);
}

/* MatMul and Gemm with constant float32 weights packed at open, against the plain
 * product on the same initializers, and a MatMul whose B is computed at run time. */
static void gemm_ref(const float *A, const float *B, int64_t M, int64_t N, int64_t K, bool tb,
                     float alpha, float *C, float beta) {
    gemm_f32_args g = {false, tb, M, N, K, alpha, beta, A, K, B, tb ? K : N, C, N};
    gemm_f32_ref(&g);
}

TEST(prepared_state_matmul_and_gemm_weights) {
    NEED_TEST_MODEL(path, "gemm_prepared.onnx");
    og_session *s;
    CHECK_OK(og_session_open(path, NULL, &s));
    backend_prep_stats prep;
    runtime_session_prep_stats(s, &prep);
    CHECK_EQ_INT(prep.nodes, 2);
    /* two packs of 70 x 45, columns padded to the kernels' panel width (at most 64) */
    CHECK(prep.bytes >= 2 * 70 * 45 * 4 && prep.bytes <= 2 * 70 * 64 * 4);
    /* wg (12.6 kB) goes, wm stays (a Neg reads it too) */
    CHECK(prep.released >= 8192 && prep.released <= 70 * 45 * 4);
    const graph *g = runtime_session_graph(s);
    const float *wm = init_of(g, "wm")->data, *wg = init_of(g, "wg")->data,
                *cg = init_of(g, "cg")->data;
    for (int64_t M = 1; M <= 33; M += 16) {
        float *x = random_rows(2 * M, 70, 3u * (unsigned)M), *x2 = random_rows(M, 70, 9u);
        float *r = malloc(sizeof(float) * (size_t)(2 * M * 45));
        CHECK(x && x2 && r);
        int64_t dx[3] = {2, M, 70}, dx2[2] = {M, 70};
        og_tensor *tx, *tx2;
        CHECK_OK(og_tensor_wrap(OG_FLOAT32, dx, 3, x, sizeof(float) * (size_t)(2 * M * 70), &tx));
        CHECK_OK(og_tensor_wrap(OG_FLOAT32, dx2, 2, x2, sizeof(float) * (size_t)(M * 70), &tx2));
        const char *in_names[] = {"x", "x2"}, *out_names[] = {"ym", "yg", "yd"};
        og_tensor *ins[] = {tx, tx2}, *outs[3] = {0};
        CHECK_OK(og_session_run(s, in_names, ins, 2, out_names, outs, 3));
        gemm_ref(x, wm, 2 * M, 45, 70, false, 1.0f, r, 0.0f);
        check_close("ym", og_tensor_data(outs[0]), r, 2 * M * 45);
        for (int64_t i = 0; i < M; i++) memcpy(r + i * 45, cg, sizeof(float) * 45);
        gemm_ref(x2, wg, M, 45, 70, true, 0.5f, r, 2.0f);
        check_close("yg", og_tensor_data(outs[1]), r, M * 45);
        gemm_ref(x2, wm, M, 45, 70, false, -1.0f, r, 0.0f);
        check_close("yd", og_tensor_data(outs[2]), r, M * 45);
        for (int i = 0; i < 3; i++) og_tensor_free(outs[i]);
        og_tensor_free(tx);
        og_tensor_free(tx2);
        free(x);
        free(x2);
        free(r);
    }
    og_session_close(s);
}

/* ---- shared quantized activations (kernel_ctx.shared) ---------------------------------- */

/* The product of node `prefix` of g run alone on A (M rows): its own pack made from its
 * initializers, quantizing A itself (what every node did before sharing). */
static void nbits_alone(const graph *g, const char *prefix, int64_t N, int block, int level,
                        const float *A, int64_t M, float *Y, float *ref) {
    const tensor *B, *S, *Z;
    nbits_inits_of(g, prefix, &B, &S, &Z);
    CHECK(B && S);
    if (!B || !S) return;
    const int64_t K = 64, kb = K / block;
    mnb_problem p = {.M = M, .N = N, .K = K, .bits = 4, .block_size = block, .k_blocks = kb,
                     .blob = block / 2, .B = B->data, .scales = S->data,
                     .zp_packed = Z ? Z->data : NULL, .zp_stride = (kb + 1) / 2,
                     .int8 = level == 4, .A = A, .Y = ref};
    mnb_ref(&p);
    mnb_pack *pk;
    CHECK_OK(mnb_pack_create(&p, &pk));
    void *w = aligned_alloc(64, (mnb_pack_work_size(pk, M, 1) + 127) / 64 * 64);
    CHECK(w);
    mnb_pack_run(NULL, pk, A, M, NULL, NULL, Y, w);
    free(w);
    mnb_pack_free(pk);
}

/* y equals the product alone bit for bit, and the reference to float rounding */
static void check_alone(const graph *g, const char *prefix, int64_t N, int block, int level,
                        const float *A, int64_t M, const float *y) {
    float *want = malloc(sizeof(float) * (size_t)(M * N)), *ref = malloc(sizeof(float) * (size_t)(M * N));
    CHECK(want && ref);
    nbits_alone(g, prefix, N, block, level, A, M, want, ref);
    for (int64_t i = 0; i < M * N; i++)
        if (memcmp(&y[i], &want[i], sizeof(float)) != 0) {
            test_fail(__FILE__, __LINE__, "%s[%lld] (M=%lld) = %.9g, alone %.9g", prefix,
                      (long long)i, (long long)M, y[i], want[i]);
            break;
        }
    check_close(prefix, y, ref, M * N);
    free(want);
    free(ref);
}

TEST(prepared_matmulnbits_share_quantized_activations) {
    NEED_TEST_MODEL(path, "nbits_shared.onnx");
    og_session *s;
    CHECK_OK(og_session_open(path, NULL, &s));
    const graph *g = runtime_session_graph(s);
    const graph *body = NULL;
    for (int i = 0; i < g->n_nodes && !body; i++)
        if (!strcmp(g->nodes[i].op_type, "Loop")) body = g->nodes[i].attrs[0].g;
    CHECK(body);
    backend_prep_stats prep;
    runtime_session_prep_stats(s, &prep);
    CHECK_EQ_INT(prep.nodes, 9); /* p1..p7 and the body's l1, l2 */
    static const struct { const char *name; int64_t n; int block, level; } P[] = {
        {"p1", 40, 32, 4}, {"p2", 24, 32, 4}, {"p3", 24, 16, 4}, {"p4", 8, 32, 0},
        {"p5", 16, 32, 4}, {"p6", 24, 32, 4}, {"p7", 40, 32, 4}};
    const int64_t trips = 3;
    /* M = 1 and 5 (row kernels), 50 (tile kernels on AVX-512); each M twice with other
     * values in the same arena bytes: the second run must not take the first's copy */
    const int64_t Ms[] = {1, 1, 5, 50, 50, 5};
    for (size_t r = 0; r < sizeof Ms / sizeof *Ms; r++) {
        const int64_t M = Ms[r];
        float *x = random_rows(M, 64, 100u + (unsigned)r), *a = malloc(sizeof(float) * (size_t)(M * 64));
        CHECK(x && a);
        for (int64_t i = 0; i < M * 64; i++) a[i] = x[i] + x[i];
        int64_t dx[2] = {M, 64};
        og_tensor *tx, *tt;
        CHECK_OK(og_tensor_wrap(OG_FLOAT32, dx, 2, x, sizeof(float) * (size_t)(M * 64), &tx));
        CHECK_OK(og_tensor_wrap(OG_INT64, NULL, 0, (void *)&trips, sizeof trips, &tt));
        const char *in_names[] = {"x", "trips"};
        const char *out_names[] = {"y_p1", "y_p2", "y_p3", "y_p4", "y_p5", "y_p6", "y_p7",
                                   "z_l1", "z_l2"};
        og_tensor *ins[] = {tx, tt}, *outs[9] = {0};
        CHECK_OK(og_session_run(s, in_names, ins, 2, out_names, outs, 9));
        for (int k = 0; k < 7; k++)
            check_alone(g, P[k].name, P[k].n, P[k].block, P[k].level, a, M,
                        og_tensor_data(outs[k]));
        /* iteration t reads x * 2^(t+1) (exact) */
        for (int64_t t = 0; t < trips; t++) {
            for (int64_t i = 0; i < M * 64; i++) a[i] = x[i] * (float)(2 << t);
            check_alone(body, "l1", 24, 32, 4, a, M, (const float *)og_tensor_data(outs[7]) + t * M * 24);
            check_alone(body, "l2", 40, 32, 4, a, M, (const float *)og_tensor_data(outs[8]) + t * M * 40);
        }
        /* p2 and p7 take p1's and p6's quantization, each iteration's l2 takes l1's */
        backend_run_stats st;
        runtime_session_stats(s, &st);
        CHECK_EQ_INT(st.shared_reuses, 2 + trips);
        for (int k = 0; k < 9; k++) og_tensor_free(outs[k]);
        og_tensor_free(tx);
        og_tensor_free(tt);
        free(x);
        free(a);
    }
    og_session_close(s);
}
