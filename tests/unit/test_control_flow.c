/* Control flow through the executor (loop.onnx, loop_forever.onnx from
 * tests/models/make_test_models.py): a Loop's iterations reuse the body's plan, so the
 * heap allocations of a run do not grow with the iteration count; a Loop that could
 * never end is refused. Values against onnxruntime: tests/control_flow. */
#include "testing.h"

#include "runtime/og_session.h"

#include <stdlib.h>

/* Runs loop.onnx for m iterations; checks v and the scan output against the recurrence
 * v <- v * w + i, scan[i] = relu(v) in double; returns the run's heap allocations. */
static og_status *run_loop(og_session *s, int64_t m, size_t *allocs, bool *values_ok) {
    float v0[4] = {1, -2, 0.5f, 3}, w[4] = {0.5f, 0.9f, -1, 0.25f};
    int64_t d4[1] = {4};
    og_tensor *tm, *tv, *tw;
    OG_TRY(og_tensor_wrap(OG_INT64, NULL, 0, &m, sizeof m, &tm));
    OG_TRY(og_tensor_wrap(OG_FLOAT32, d4, 1, v0, sizeof v0, &tv));
    OG_TRY(og_tensor_wrap(OG_FLOAT32, d4, 1, w, sizeof w, &tw));
    const char *in_names[] = {"M", "v0", "w"}, *out_names[] = {"v", "scan"};
    og_tensor *ins[] = {tm, tv, tw}, *outs[2] = {NULL, NULL};
    og_status *st = og_session_run(s, in_names, ins, 3, out_names, outs, 2);
    og_tensor_free(tm);
    og_tensor_free(tv);
    og_tensor_free(tw);
    if (st) return st;
    backend_run_stats stats;
    runtime_session_stats(s, &stats);
    *allocs = stats.heap_allocations;
    double v[4];
    for (int k = 0; k < 4; k++) v[k] = v0[k];
    const float *pv = og_tensor_data(outs[0]), *ps = og_tensor_data(outs[1]);
    *values_ok = og_tensor_rank(outs[1]) == 2 && og_tensor_dims(outs[1])[0] == m &&
                 og_tensor_dims(outs[1])[1] == 4;
    for (int64_t i = 0; i < m && *values_ok; i++)
        for (int k = 0; k < 4; k++) {
            v[k] = (double)(float)(v[k] * w[k]) + (double)i;
            double r = v[k] > 0 ? v[k] : 0;
            if (fabs(ps[i * 4 + k] - r) > 1e-5 * (1 + fabs(r))) *values_ok = false;
        }
    for (int k = 0; k < 4 && *values_ok; k++)
        if (fabs(pv[k] - v[k]) > 1e-5 * (1 + fabs(v[k]))) *values_ok = false;
    og_tensor_free(outs[0]);
    og_tensor_free(outs[1]);
    return NULL;
}

TEST(loop_iterations_reuse_the_body_plan) {
    NEED_TEST_MODEL(path, "loop.onnx");
    og_session *s;
    CHECK_OK(og_session_open(path, NULL, &s));
    size_t cold, warm5, warm60;
    bool ok;
    CHECK_OK(run_loop(s, 5, &cold, &ok));
    CHECK(ok);
    CHECK_OK(run_loop(s, 5, &warm5, &ok));
    CHECK(ok);
    CHECK_OK(run_loop(s, 60, &warm60, &ok));
    CHECK(ok);
    /* the body records its plan in the first iteration of the first run; after that a
     * run allocates only the loop-carried buffer, however many iterations it makes */
    CHECK(cold > warm5);
    CHECK_EQ_INT(warm60, warm5);
    CHECK(warm5 <= 2);
    CHECK_OK(run_loop(s, 0, &warm5, &ok)); /* zero iterations: v0, and an empty [0, 4] */
    CHECK(ok);
    og_session_close(s);
}

/* With no plan memory, every plan (the body's too) goes when the main run ends; the body's
 * plan still serves the iterations of the run that made it. */
TEST(loop_with_no_plan_memory_keeps_no_plan) {
    NEED_TEST_MODEL(path, "loop.onnx");
    og_session_options o = og_session_options_default();
    o.plan_memory = 0;
    og_session *s;
    CHECK_OK(og_session_open(path, &o, &s));
    size_t allocs5, allocs60;
    bool ok;
    for (int round = 0; round < 3; round++) {
        CHECK_OK(run_loop(s, 5, &allocs5, &ok));
        CHECK(ok);
        CHECK_OK(run_loop(s, 60, &allocs60, &ok));
        CHECK(ok);
        backend_run_stats st;
        runtime_session_stats(s, &st);
        CHECK_EQ_INT(st.plans, 0);
        CHECK_EQ_INT(st.plan_bytes, 0);
        CHECK_EQ_INT(st.used_plan, 0);
        CHECK(st.plans_evicted > 0);
        CHECK(allocs60 < allocs5 + 55); /* not one recording per iteration */
    }
    og_session_close(s);
}

TEST(loop_without_bound_is_refused) {
    NEED_TEST_MODEL(path, "loop_forever.onnx");
    og_session *s;
    CHECK_OK(og_session_open(path, NULL, &s));
    float v0[4] = {0}, w[4] = {0};
    int64_t d4[1] = {4};
    og_tensor *tv, *tw;
    CHECK_OK(og_tensor_wrap(OG_FLOAT32, d4, 1, v0, sizeof v0, &tv));
    CHECK_OK(og_tensor_wrap(OG_FLOAT32, d4, 1, w, sizeof w, &tw));
    const char *in_names[] = {"v0", "w"}, *out_names[] = {"v"};
    og_tensor *ins[] = {tv, tw}, *out = NULL;
    og_status *st = og_session_run(s, in_names, ins, 2, out_names, &out, 1);
    og_tensor_free(tv);
    og_tensor_free(tw);
    CHECK_ERR(st, OG_ERR_INVALID_MODEL, "node 'forever' (Loop): neither a trip count");
    CHECK(out == NULL);
    og_session_close(s);
}
