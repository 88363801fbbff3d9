/* The session API and the executor on small graphs written by
 * tests/models/make_test_models.py (directory in $OG_TEST_MODELS). */
#include "testing.h"

#include "runtime/og_session.h"

#include <stdlib.h>

static og_status *run_chain(og_session *s, float *x, float *z, int64_t batch, og_tensor **y) {
    int64_t dims[2] = {batch, 4};
    og_tensor *tx, *tz;
    OG_TRY(og_tensor_wrap(OG_FLOAT32, dims, 2, x, (size_t)batch * 16, &tx));
    og_status *st = og_tensor_wrap(OG_FLOAT32, dims, 2, z, (size_t)batch * 16, &tz);
    if (st) {
        og_tensor_free(tx);
        return st;
    }
    const char *in_names[] = {"x", "z"}, *out_names[] = {"y"};
    og_tensor *ins[] = {tx, tz};
    st = og_session_run(s, in_names, ins, 2, out_names, y, 1);
    og_tensor_free(tx);
    og_tensor_free(tz);
    return st;
}

TEST(session_runs_chain_and_reuses_plan) {
    NEED_TEST_MODEL(path, "chain.onnx");
    og_session *s;
    CHECK_OK(og_session_open(path, NULL, &s));
    CHECK_EQ_INT(og_session_input_count(s), 2);
    og_value_info info;
    CHECK_OK(og_session_input_info(s, 0, &info));
    CHECK(strcmp(info.name, "x") == 0);
    CHECK_EQ_INT(info.rank, 2);
    CHECK_EQ_INT(info.dims[0], -1);
    CHECK(strcmp(info.dim_names[0], "batch") == 0);
    float x[12], z[12];
    for (int i = 0; i < 12; i++) {
        x[i] = (float)i;
        z[i] = 0.5f * (float)i;
    }
    for (int round = 0; round < 3; round++) {
        og_tensor *y = NULL;
        CHECK_OK(run_chain(s, x, z, 3, &y));
        CHECK_EQ_INT(og_tensor_rank(y), 2);
        CHECK_EQ_INT(og_tensor_dims(y)[0], 3);
        const float *py = og_tensor_data(y);
        for (int i = 0; i < 12; i++) CHECK_NEAR(py[i], (x[i] + (float)(i % 4)) * 2 - 1 + z[i], 0);
        og_tensor_free(y);
        backend_run_stats stats;
        runtime_session_stats(s, &stats);
        CHECK_EQ_INT(stats.used_plan, round > 0); /* the first run records, later ones reuse */
        if (round > 0) CHECK_EQ_INT(stats.heap_allocations, 0);
    }
    /* a new shape class records a new plan */
    og_tensor *y = NULL;
    CHECK_OK(run_chain(s, x, z, 2, &y));
    CHECK_EQ_INT(og_tensor_dims(y)[0], 2);
    og_tensor_free(y);
    og_session_close(s);
}

TEST(session_writes_into_caller_output) {
    NEED_TEST_MODEL(path, "chain.onnx");
    og_session *s;
    CHECK_OK(og_session_open(path, NULL, &s));
    float x[4] = {1, 2, 3, 4}, z[4] = {0}, out[4] = {0};
    int64_t dims[2] = {1, 4};
    og_tensor *ty;
    CHECK_OK(og_tensor_wrap(OG_FLOAT32, dims, 2, out, sizeof out, &ty));
    og_tensor *res = ty;
    CHECK_OK(run_chain(s, x, z, 1, &res));
    CHECK(res == ty);
    CHECK_NEAR(out[3], (4 + 3) * 2 - 1, 0);
    /* a caller tensor of the wrong shape is an error naming the output */
    float small[2];
    int64_t d2[2] = {1, 2};
    og_tensor *bad;
    CHECK_OK(og_tensor_wrap(OG_FLOAT32, d2, 2, small, sizeof small, &bad));
    og_tensor *r2 = bad;
    CHECK_ERR(run_chain(s, x, z, 1, &r2), OG_ERR_INVALID_ARGUMENT, "output 'y'");
    og_tensor_free(bad);
    og_tensor_free(ty);
    og_session_close(s);
}

TEST(session_rejects_bad_inputs) {
    NEED_TEST_MODEL(path, "chain.onnx");
    og_session *s;
    CHECK_OK(og_session_open(path, NULL, &s));
    float buf[16] = {0};
    int64_t d24[2] = {2, 4}, d34[2] = {3, 4}, d3[1] = {4}, d25[2] = {2, 5};
    og_tensor *x, *z, *zr, *zc, *xi;
    CHECK_OK(og_tensor_wrap(OG_FLOAT32, d24, 2, buf, 32, &x));
    CHECK_OK(og_tensor_wrap(OG_FLOAT32, d34, 2, buf, 48, &z));
    CHECK_OK(og_tensor_wrap(OG_FLOAT32, d3, 1, buf, 16, &zr));
    CHECK_OK(og_tensor_wrap(OG_FLOAT32, d25, 2, buf, 40, &zc));
    CHECK_OK(og_tensor_create(OG_INT64, d24, 2, &xi));
    const char *names[] = {"x", "z"}, *outn[] = {"y"};
    og_tensor *y = NULL;
    og_tensor *in1[] = {x, z};
    CHECK_ERR(og_session_run(s, names, in1, 2, outn, &y, 1), OG_ERR_INVALID_ARGUMENT,
              "dim 0 ('batch') is 3, but input 'x' set 'batch' to 2");
    og_tensor *in2[] = {x, zr};
    CHECK_ERR(og_session_run(s, names, in2, 2, outn, &y, 1), OG_ERR_INVALID_ARGUMENT,
              "input 'z' has shape [4] (rank 1), expected rank 2");
    og_tensor *in3[] = {x, zc};
    CHECK_ERR(og_session_run(s, names, in3, 2, outn, &y, 1), OG_ERR_INVALID_ARGUMENT,
              "expected dim 1 to be 4");
    og_tensor *in4[] = {xi, x};
    CHECK_ERR(og_session_run(s, names, in4, 2, outn, &y, 1), OG_ERR_INVALID_ARGUMENT,
              "input 'x' has dtype int64, expected float32");
    CHECK_ERR(og_session_run(s, names, in1, 1, outn, &y, 1), OG_ERR_INVALID_ARGUMENT,
              "input 'z' was not given");
    const char *wrong[] = {"x", "q"};
    CHECK_ERR(og_session_run(s, wrong, in1, 2, outn, &y, 1), OG_ERR_NOT_FOUND,
              "no input named 'q'");
    const char *badout[] = {"nope"};
    og_tensor *in5[] = {x, x};
    CHECK_ERR(og_session_run(s, names, in5, 2, badout, &y, 1), OG_ERR_NOT_FOUND,
              "no output named 'nope'");
    CHECK(y == NULL);
    og_tensor_free(x);
    og_tensor_free(z);
    og_tensor_free(zr);
    og_tensor_free(zc);
    og_tensor_free(xi);
    og_session_close(s);
}

TEST(session_open_errors_name_the_node) {
    NEED_TEST_MODEL(path, "cycle.onnx");
    og_session *s = NULL;
    CHECK_ERR(og_session_open(path, NULL, &s), OG_ERR_INVALID_MODEL, "cycle through node 'first'");
    snprintf(path, sizeof path, "%s/unknown_op.onnx", test_models_dir());
    CHECK_ERR(og_session_open(path, NULL, &s), OG_ERR_UNSUPPORTED,
              "node 'weird' (FrobnicateX): op FrobnicateX is not implemented");
    snprintf(path, sizeof path, "%s/unknown_domain.onnx", test_models_dir());
    CHECK_ERR(og_session_open(path, NULL, &s), OG_ERR_UNSUPPORTED, "op org.example.Foo");
    snprintf(path, sizeof path, "%s/dangling.onnx", test_models_dir());
    CHECK_ERR(og_session_open(path, NULL, &s), OG_ERR_INVALID_MODEL,
              "input 'nowhere' is not a graph input");
    snprintf(path, sizeof path, "%s/does_not_exist.onnx", test_models_dir());
    CHECK_ERR(og_session_open(path, NULL, &s), OG_ERR_NOT_FOUND, "does_not_exist.onnx");
    CHECK(s == NULL);
}

TEST(session_runs_external_data_out_of_order) {
    NEED_TEST_MODEL(path, "external.onnx");
    og_session *s;
    CHECK_OK(og_session_open(path, NULL, &s));
    CHECK_EQ_INT(runtime_session_model(s)->n_external_files, 1);
    CHECK_EQ_INT(runtime_session_model(s)->copied_bytes, 0);
    float x[4] = {1, 0, 0, 0};
    int64_t d[2] = {1, 4};
    og_tensor *tx, *y = NULL;
    CHECK_OK(og_tensor_wrap(OG_FLOAT32, d, 2, x, sizeof x, &tx));
    const char *in[] = {"x"}, *out[] = {"y"};
    CHECK_OK(og_session_run(s, in, &tx, 1, out, &y, 1));
    /* big = linspace(-1, 1, 1024).reshape(256, 4); y[j] = big[j][0] */
    const float *py = og_tensor_data(y);
    for (int j = 0; j < 256; j++) CHECK_NEAR(py[j], -1.0 + 2.0 * (4 * j) / 1023.0, 1e-6);
    og_tensor_free(y);
    og_tensor_free(tx);
    og_session_close(s);
}
