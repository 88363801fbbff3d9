/* The executor's SiLU-gate fusion (backends/native/fuse.h): the fused kernel against the
 * three kernels it replaces, bit for bit, and the rewrite on a graph with fusable and
 * unfusable patterns (tests/models/make_test_models.py, silu_gate*.onnx). */
#include "testing.h"
#include "kernel_harness.h"

#include "backends/native/kernels/elementwise/elementwise.h"
#include "backends/native/native_session.h"
#include "base/half.h"
#include "runtime/og_session.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint32_t fz_state = 12345u;
static double fz_next(void) {
    fz_state = fz_state * 1103515245u + 12345u;
    return (double)((fz_state >> 8) & 0xffff) / 32768.0 - 1.0;
}

static size_t dt_size(og_dtype dt) { return dt == OG_FLOAT64 ? 8 : dt == OG_FLOAT32 ? 4 : 2; }

/* Random values in [-6, 6) of dtype dt (n elements). */
static void *fz_fill(og_dtype dt, int64_t n) {
    char *p = malloc((size_t)n * dt_size(dt));
    for (int64_t i = 0; i < n; i++) {
        double v = 6.0 * fz_next();
        if (dt == OG_FLOAT64) ((double *)p)[i] = v;
        else if (dt == OG_FLOAT32) ((float *)p)[i] = (float)v;
        else if (dt == OG_FLOAT16) ((uint16_t *)p)[i] = f32_to_f16((float)v);
        else ((uint16_t *)p)[i] = f32_to_bf16((float)v);
    }
    return p;
}

/* SiluMul(x, u) against Sigmoid, Mul(x, s), Mul(g, u) for one dtype and shape pair. */
static void check_kernel(og_dtype dt, int rx, const int64_t *dx, int ru, const int64_t *du) {
    int64_t nx = 1, nu = 1;
    for (int i = 0; i < rx; i++) nx *= dx[i];
    for (int i = 0; i < ru; i++) nu *= du[i];
    void *xd = fz_fill(dt, nx), *ud = fz_fill(dt, nu);
    tensor x = kh_tensor(dt, rx, dx, xd), u = kh_tensor(dt, ru, du, ud);
    kh_run rs, rg, ry, rf;
    const tensor *in_s[1] = {&x};
    CHECK_OK(kh_call(&rs, cpu_sigmoid, 13, NULL, 0, in_s, 1, 1));
    const tensor *in_g[2] = {&x, &rs.out[0]};
    CHECK_OK(kh_call(&rg, cpu_mul, 14, NULL, 0, in_g, 2, 1));
    const tensor *in_y[2] = {&rg.out[0], &u};
    CHECK_OK(kh_call(&ry, cpu_mul, 14, NULL, 0, in_y, 2, 1));
    const tensor *in_f[2] = {&x, &u};
    CHECK_OK(kh_call(&rf, cpu_silu_mul, 1, NULL, 0, in_f, 2, 1));
    const tensor *a = &ry.out[0], *b = &rf.out[0];
    CHECK_EQ_INT(a->rank, b->rank);
    for (int i = 0; i < a->rank && i < b->rank; i++) CHECK_EQ_INT(a->dims[i], b->dims[i]);
    CHECK_EQ_INT((int64_t)a->nbytes, (int64_t)b->nbytes);
    if (a->nbytes == b->nbytes && memcmp(a->data, b->data, a->nbytes) != 0)
        test_fail(__FILE__, __LINE__, "%s, x rank %d, u rank %d: SiluMul differs from "
                  "Sigmoid, Mul, Mul", og_dtype_name(dt), rx, ru);
    /* and the values are the product, not only the same bits (float32 against double) */
    if (dt == OG_FLOAT32 && rx == ru && a->nbytes == b->nbytes) {
        const float *xf = xd, *uf = ud, *yf = b->data;
        for (int64_t i = 0; i < nx; i++) {
            double want = xf[i] / (1.0 + exp(-(double)xf[i])) * uf[i];
            CHECK_NEAR(yf[i], want, 1e-5 * (1 + fabs(want)));
        }
    }
    kh_free(&rs);
    kh_free(&rg);
    kh_free(&ry);
    kh_free(&rf);
    free(xd);
    free(ud);
}

TEST(fuse_silu_mul_kernel_gives_the_three_nodes_bits) {
    static const og_dtype dts[] = {OG_FLOAT32, OG_FLOAT16, OG_BFLOAT16, OG_FLOAT64};
    const int64_t same[2] = {3, 517}, row[1] = {517}, one_row[2] = {1, 517}, big[2] = {9, 4099};
    for (int pass = 0; pass < 2; pass++) {
        if (pass == 1) CHECK_OK(threadpool_create(3, &kh_pool)); /* chunks split over threads */
        for (size_t d = 0; d < sizeof dts / sizeof dts[0]; d++) {
            check_kernel(dts[d], 2, same, 2, same);
            check_kernel(dts[d], 2, same, 1, row);     /* u broadcast over rows */
            check_kernel(dts[d], 2, one_row, 2, same); /* x broadcast */
            check_kernel(dts[d], 2, big, 2, big);
        }
        if (pass == 1) {
            threadpool_free(kh_pool);
            kh_pool = NULL;
        }
    }
}

/* Opens PATH with the rewrites on or off (OG_FUSE), returns the session and the number
 * of fused nodes. */
static og_session *open_fused(const char *path, bool fuse, int *fused) {
    if (fuse)
        unsetenv("OG_FUSE");
    else
        setenv("OG_FUSE", "0", 1);
    og_session *s = NULL;
    og_status *st = og_session_open(path, NULL, &s);
    unsetenv("OG_FUSE");
    if (st) {
        test_fail(__FILE__, __LINE__, "opening %s: %s", path, og_status_message(st));
        og_status_free(st);
        return NULL;
    }
    const native_session *ns = runtime_session_context(s);
    *fused = ns->fused_nodes;
    return s;
}

/* FILE of $OG_TEST_MODELS opened with the rewrites (expecting `fused` nodes made) and
 * without; false (both closed) when the models are missing or something failed. */
static bool open_pair(const char *file, int fused, og_session **on, og_session **off) {
    *on = *off = NULL;
    const char *dir = getenv("OG_TEST_MODELS");
    if (!dir) {
        test_skip("OG_TEST_MODELS is not set: run through ctest, which writes them");
        return false;
    }
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", dir, file);
    int fused_on = -1, fused_off = -1;
    *on = open_fused(path, true, &fused_on);
    *off = open_fused(path, false, &fused_off);
    if (*on && *off && fused_on == fused && fused_off == 0) return true;
    if (*on && *off)
        test_fail(__FILE__, __LINE__, "%s: %d and %d nodes fused, expected %d and 0", file,
                  fused_on, fused_off, fused);
    og_session_close(*on);
    og_session_close(*off);
    return false;
}

static void check_model(const char *file, og_dtype dt, int64_t rows) {
    og_session *on, *off;
    if (!open_pair(file, 2, &on, &off)) return; /* y1 and y2; not y3, y4, y5 */
    int64_t dims[2] = {rows, 37}, bdims[1] = {37};
    void *xd = fz_fill(dt, rows * 37), *ud = fz_fill(dt, rows * 37), *bd = fz_fill(dt, 37);
    size_t es = dt_size(dt);
    og_tensor *tx, *tu, *tb;
    CHECK_OK(og_tensor_wrap(dt, dims, 2, xd, (size_t)(rows * 37) * es, &tx));
    CHECK_OK(og_tensor_wrap(dt, dims, 2, ud, (size_t)(rows * 37) * es, &tu));
    CHECK_OK(og_tensor_wrap(dt, bdims, 1, bd, 37 * es, &tb));
    const char *in_names[] = {"x", "u", "ub"};
    const char *outs[] = {"y1", "y2", "y3", "s3", "y4", "z4", "y5"};
    og_tensor *ins[] = {tx, tu, tb}, *ya[7] = {0}, *yb[7] = {0};
    for (int round = 0; round < 2; round++) { /* recording a plan, then reusing it */
        CHECK_OK(og_session_run(on, in_names, ins, 3, outs, ya, 7));
        CHECK_OK(og_session_run(off, in_names, ins, 3, outs, yb, 7));
        for (int k = 0; k < 7; k++) {
            if (!ya[k] || !yb[k]) continue;
            size_t n = og_tensor_size_bytes(ya[k]);
            CHECK_EQ_INT((int64_t)n, (int64_t)og_tensor_size_bytes(yb[k]));
            if (n == og_tensor_size_bytes(yb[k]) &&
                memcmp(og_tensor_data(ya[k]), og_tensor_data(yb[k]), n) != 0)
                test_fail(__FILE__, __LINE__, "%s, %lld rows: output %s differs with the "
                          "rewrite", file, (long long)rows, outs[k]);
        }
        if (dt == OG_FLOAT32 && ya[0]) { /* y1 = x * sigmoid(x) * u */
            const float *x = xd, *u = ud, *y = og_tensor_data(ya[0]);
            for (int64_t i = 0; i < rows * 37; i++) {
                double want = x[i] / (1.0 + exp(-(double)x[i])) * u[i];
                CHECK_NEAR(y[i], want, 1e-5 * (1 + fabs(want)));
            }
        }
        for (int k = 0; k < 7; k++) {
            og_tensor_free(ya[k]);
            og_tensor_free(yb[k]);
            ya[k] = yb[k] = NULL;
        }
    }
    og_tensor_free(tx);
    og_tensor_free(tu);
    og_tensor_free(tb);
    free(xd);
    free(ud);
    free(bd);
    og_session_close(on);
    og_session_close(off);
}

TEST(fuse_rewrites_only_private_silu_gates_and_keeps_the_bits) {
    check_model("silu_gate.onnx", OG_FLOAT32, 5);
    check_model("silu_gate.onnx", OG_FLOAT32, 1);
    check_model("silu_gate_f16.onnx", OG_FLOAT16, 3);
}

/* The rewritten graph keeps the reads of its subgraphs: h is read only inside the If's
 * branches, so it must live until the If runs (it was retired at once when the copy lost
 * track of them). */
TEST(fuse_keeps_subgraph_reads_of_the_main_graph) {
    og_session *on, *off;
    if (!open_pair("silu_gate_if.onnx", 1, &on, &off)) return;
    enum { ROWS = 4 };
    float x[ROWS * 37], u[ROWS * 37];
    for (int i = 0; i < ROWS * 37; i++) x[i] = (float)(6.0 * fz_next()), u[i] = (float)(6.0 * fz_next());
    int64_t dims[2] = {ROWS, 37};
    for (int c = 0; c < 2; c++) {
        bool cond = c == 1;
        og_tensor *tx, *tu, *tc;
        CHECK_OK(og_tensor_wrap(OG_FLOAT32, dims, 2, x, sizeof x, &tx));
        CHECK_OK(og_tensor_wrap(OG_FLOAT32, dims, 2, u, sizeof u, &tu));
        CHECK_OK(og_tensor_wrap(OG_BOOL, NULL, 0, &cond, sizeof cond, &tc));
        const char *in_names[] = {"x", "u", "c"}, *outs[] = {"y1", "z"};
        og_tensor *ins[] = {tx, tu, tc}, *ya[2] = {0}, *yb[2] = {0};
        og_status *sa = og_session_run(on, in_names, ins, 3, outs, ya, 2);
        og_status *sb = og_session_run(off, in_names, ins, 3, outs, yb, 2);
        if (sa) test_fail(__FILE__, __LINE__, "fused run: %s", og_status_message(sa));
        if (sb) test_fail(__FILE__, __LINE__, "unfused run: %s", og_status_message(sb));
        if (!sa && !sb) {
            for (int k = 0; k < 2; k++)
                if (memcmp(og_tensor_data(ya[k]), og_tensor_data(yb[k]), sizeof x) != 0)
                    test_fail(__FILE__, __LINE__, "output %s differs with the rewrite", outs[k]);
            const float *z = og_tensor_data(ya[1]);
            for (int i = 0; i < ROWS * 37; i++) {
                float h = x[i] + u[i];
                CHECK_NEAR(z[i], cond ? h + h : h - u[i], 0);
            }
        }
        og_status_free(sa);
        og_status_free(sb);
        for (int k = 0; k < 2; k++) {
            og_tensor_free(ya[k]);
            og_tensor_free(yb[k]);
        }
        og_tensor_free(tx);
        og_tensor_free(tu);
        og_tensor_free(tc);
    }
    og_session_close(on);
    og_session_close(off);
}
