/* The seam under og_session (src/backends/backend.h): options, the backend a session
 * runs on, and the onnxruntime backend's binding on chain.onnx (tests/models): results
 * equal the native backend's, outputs given by the caller are written in place, and the
 * outputs onnxruntime allocates are the copies it counts. */
#include "testing.h"

#include "runtime/og_session.h"

#include <stddef.h>
#include <stdlib.h>

/* chain.onnx: y = (x + w) * 2 - 1 + z, x and z [batch, 4]. */
static og_status *run_chain(og_session *s, float *x, float *z, og_tensor **y) {
    int64_t dims[2] = {3, 4};
    og_tensor *tx = NULL, *tz = NULL;
    og_status *st = og_tensor_wrap(OG_FLOAT32, dims, 2, x, 48, &tx);
    if (!st) st = og_tensor_wrap(OG_FLOAT32, dims, 2, z, 48, &tz);
    const char *in_names[] = {"x", "z"}, *out_names[] = {"y"};
    og_tensor *ins[] = {tx, tz};
    if (!st) st = og_session_run(s, in_names, ins, 2, out_names, y, 1);
    og_tensor_free(tx);
    og_tensor_free(tz);
    return st;
}

TEST(backend_options_and_choice) {
    NEED_TEST_MODEL(path, "chain.onnx");
    og_session_options o = og_session_options_default();
    CHECK_EQ_INT(o.backend, OG_BACKEND_AUTO);
    CHECK_EQ_INT(o.graph_optimization_level, -1);
    og_session *s;
    /* auto with a kernel for every node: native, no warning */
    CHECK_OK(og_session_open(path, &o, &s));
    CHECK(strcmp(og_session_backend(s), "native") == 0);
    CHECK(strcmp(og_session_warning(s), "") == 0);
    CHECK(runtime_session_ops(s) == &backend_native);
    og_session_close(s);
    /* a caller built against the first version of the struct (no backend fields) */
    og_session_options old = o;
    old.struct_size = offsetof(og_session_options, backend);
    old.backend = (og_backend)77; /* beyond its struct_size: never read */
    CHECK_OK(og_session_open(path, &old, &s));
    CHECK(strcmp(og_session_backend(s), "native") == 0);
    og_session_close(s);
    o.backend = (og_backend)77;
    s = NULL;
    CHECK_ERR(og_session_open(path, &o, &s), OG_ERR_INVALID_ARGUMENT,
              "og_session_options.backend is 77");
    CHECK(s == NULL);
    /* onnxruntime asked for and absent: a clear error, and no session */
    o.backend = OG_BACKEND_ORT;
    o.ort_library = "/nonexistent/libonnxruntime.so";
#ifdef OG_TEST_HAVE_ORT_HEADER
    CHECK_ERR(og_session_open(path, &o, &s), OG_ERR_NOT_FOUND,
              "chain.onnx: onnxruntime is not available: cannot load "
              "'/nonexistent/libonnxruntime.so'");
#else /* the backend is compiled out: the error says so */
    CHECK_ERR(og_session_open(path, &o, &s), OG_ERR_NOT_FOUND,
              "chain.onnx: onnxruntime is not available: this build of onnx-genai was made "
              "without onnxruntime's C API header");
#endif
    CHECK(s == NULL);
    /* a device provider is onnxruntime's: auto goes there (absent here: its error), native
     * refuses it */
    o.backend = OG_BACKEND_AUTO;
    o.ort_provider = "cuda";
    CHECK_ERR(og_session_open(path, &o, &s), OG_ERR_NOT_FOUND,
              "chain.onnx: onnxruntime is not available");
    o.backend = OG_BACKEND_NATIVE;
    CHECK_ERR(og_session_open(path, &o, &s), OG_ERR_INVALID_ARGUMENT,
              "execution provider 'cuda': the native backend runs on the CPU only");
    CHECK(s == NULL);
    o.ort_provider = "CPU"; /* the CPU, any case: native as asked */
    CHECK_OK(og_session_open(path, &o, &s));
    CHECK(strcmp(og_session_backend(s), "native") == 0);
    og_session_close(s);
    og_model_options mo = og_model_options_default();
    CHECK_EQ_INT(mo.backend, OG_BACKEND_AUTO);
    CHECK_EQ_INT(mo.graph_optimization_level, -1);
}

TEST(backend_ort_binding_matches_native) {
    NEED_TEST_MODEL(path, "chain.onnx");
    og_session_options o = og_session_options_default();
    o.backend = OG_BACKEND_ORT;
    o.num_threads = 1;
    og_session *ort = NULL, *nat = NULL;
    og_status *st = og_session_open(path, &o, &ort);
    if (st && strstr(og_status_message(st), "is not available")) {
        test_skip("no onnxruntime library to load: %s", og_status_message(st));
        og_status_free(st);
        return;
    }
    CHECK_OK(st);
    if (!ort) return;
    CHECK(strcmp(og_session_backend(ort), "onnxruntime") == 0);
    o.backend = OG_BACKEND_NATIVE;
    CHECK_OK(og_session_open(path, &o, &nat));
    /* described from our IR either way */
    og_value_info a, b;
    CHECK_OK(og_session_input_info(ort, 0, &a));
    CHECK_OK(og_session_input_info(nat, 0, &b));
    CHECK(strcmp(a.name, b.name) == 0 && a.rank == b.rank);
    float x[12], z[12];
    for (int i = 0; i < 12; i++) {
        x[i] = 0.25f * (float)i - 1;
        z[i] = (float)(i % 3);
    }
    og_tensor *yn = NULL, *yo = NULL;
    CHECK_OK(run_chain(nat, x, z, &yn));
    /* an output left to the backend: onnxruntime allocates it; the copy is counted */
    CHECK_OK(run_chain(ort, x, z, &yo));
    backend_run_stats stats;
    runtime_session_stats(ort, &stats);
    CHECK_EQ_INT(stats.copies, 1);
    CHECK_EQ_INT(stats.copied_bytes, 48);
    if (yn && yo) {
        CHECK_EQ_INT(og_tensor_rank(yo), 2);
        CHECK_EQ_INT(og_tensor_dims(yo)[0], 3);
        CHECK(memcmp(og_tensor_data(yn), og_tensor_data(yo), 48) == 0);
    }
    /* a caller output: written into the caller's memory, nothing copied */
    float mem[12] = {0};
    int64_t dims[2] = {3, 4};
    og_tensor *yc = NULL;
    CHECK_OK(og_tensor_wrap(OG_FLOAT32, dims, 2, mem, sizeof mem, &yc));
    og_tensor *given = yc;
    CHECK_OK(run_chain(ort, x, z, &given));
    CHECK(given == yc);
    runtime_session_stats(ort, &stats);
    CHECK_EQ_INT(stats.copies, 0);
    CHECK_EQ_INT(stats.copied_bytes, 0);
    if (yn) CHECK(memcmp(og_tensor_data(yn), mem, sizeof mem) == 0);
    /* a caller output of the wrong shape: onnxruntime's refusal, as a status */
    int64_t wrong[2] = {3, 3};
    og_tensor *yw = NULL;
    CHECK_OK(og_tensor_wrap(OG_FLOAT32, wrong, 2, mem, 36, &yw));
    og_tensor *w = yw;
    CHECK_ERR(run_chain(ort, x, z, &w), OG_ERR_INVALID_ARGUMENT, "chain.onnx: onnxruntime: ");
    og_tensor_free(yw);
    og_tensor_free(yc);
    og_tensor_free(yn);
    og_tensor_free(yo);
    og_session_close(ort);
    og_session_close(nat);
}
