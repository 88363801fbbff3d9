/* Row selection (og_session_run_rows) on rows.onnx (tests/models/make_test_models.py):
 * the selected rows equal the same rows of the whole output bit for bit (the same
 * kernels run the same rows: MatMul, the norm and the adds are row invariant), the pruned
 * set stops at the ReduceMean over the sequence and at a MatMul by a computed matrix, and
 * another requested output keeps its producer whole. */
#include "testing.h"

#include "backends/native/native_session.h"
#include "runtime/og_session.h"

#include <stdlib.h>
#include <string.h>

enum { B = 2, S = 5, H = 8, V = 6 };

static float xs[B * S * H];

static og_tensor *input_x(int seq) {
    for (int i = 0; i < B * S * H; i++) xs[i] = (float)((i * 37) % 23) / 11.0f - 1.0f;
    int64_t d[3] = {B, seq, H};
    og_tensor *t = NULL;
    og_status *st = og_tensor_wrap(OG_FLOAT32, d, 3, xs, sizeof(float) * (size_t)(B * seq * H), &t);
    og_status_free(st);
    return t;
}

/* Whether node `name` of the session's graph ran on the selected rows in the last run. */
static bool pruned(const og_session *s, const char *name) {
    if (runtime_session_ops(s) != &backend_native) return false;
    const native_session *ns = runtime_session_context(s);
    const graph *g = ns->main->graph;
    for (int i = 0; i < g->n_nodes; i++)
        if (!strcmp(g->nodes[i].name, name)) return ns->main->rnode && ns->main->rnode[i];
    return false;
}

static bool rows_equal(og_tensor *sel, og_tensor *full, const int64_t *rows, int n,
                       int X) {
    const float *a = og_tensor_data(sel), *b = og_tensor_data(full);
    for (int i = 0; i < n; i++)
        if (memcmp(a + (size_t)i * X, b + (size_t)rows[i] * X, sizeof(float) * (size_t)X)) {
            fprintf(stderr, "    selected row %d (row %lld) differs\n", i, (long long)rows[i]);
            return false;
        }
    return true;
}

TEST(rows_selected_equal_full_and_pruned_set) {
    NEED_TEST_MODEL(path, "rows.onnx");
    og_session *s;
    CHECK_OK(og_session_open(path, NULL, &s));
    og_tensor *x = input_x(S);
    const char *in[] = {"x"}, *outs[] = {"logits", "scores", "normed"};
    og_tensor *full[3] = {NULL, NULL, NULL};
    CHECK_OK(og_session_run(s, in, &x, 1, outs, full, 3));

    /* the last position of each sequence: [B, 1, V] */
    og_tensor *last = NULL;
    og_output_rows sel = {"logits", NULL, 0};
    CHECK_OK(og_session_run_rows(s, in, &x, 1, outs, &last, 1, &sel));
    CHECK_EQ_INT(og_tensor_rank(last), 3);
    CHECK_EQ_INT(og_tensor_dims(last)[0], B);
    CHECK_EQ_INT(og_tensor_dims(last)[1], 1);
    CHECK_EQ_INT(og_tensor_dims(last)[2], V);
    int64_t last_rows[B] = {S - 1, 2 * S - 1};
    CHECK(rows_equal(last, full[0], last_rows, B, V));
    CHECK(!pruned(s, "mm1") && !pruned(s, "mean") && !pruned(s, "scores"));
    CHECK(pruned(s, "add") && pruned(s, "norm") && pruned(s, "mm2") && pruned(s, "bias"));
    og_tensor_free(last);

    /* a list (any order, repeats), twice: the second run is planned and allocates nothing */
    int64_t list[4] = {7, 0, 7, 3};
    og_output_rows lsel = {"logits", list, 4};
    for (int rep = 0; rep < 2; rep++) {
        og_tensor *got = NULL;
        CHECK_OK(og_session_run_rows(s, in, &x, 1, outs, &got, 1, &lsel));
        CHECK_EQ_INT(og_tensor_rank(got), 2);
        CHECK_EQ_INT(og_tensor_dims(got)[0], 4);
        CHECK_EQ_INT(og_tensor_dims(got)[1], V);
        CHECK(rows_equal(got, full[0], list, 4, V));
        og_tensor_free(got);
    }
    backend_run_stats stats;
    runtime_session_stats(s, &stats);
    CHECK(stats.used_plan);
    CHECK_EQ_INT((int)stats.heap_allocations, 0);

    /* into a caller tensor of the selected shape; a wrong one is refused */
    float buf[4 * V];
    int64_t d2[2] = {4, V}, bad[2] = {3, V};
    og_tensor *mine;
    CHECK_OK(og_tensor_wrap(OG_FLOAT32, d2, 2, buf, sizeof buf, &mine));
    CHECK_OK(og_session_run_rows(s, in, &x, 1, outs, &mine, 1, &lsel));
    CHECK(rows_equal(mine, full[0], list, 4, V));
    og_tensor_free(mine);
    CHECK_OK(og_tensor_wrap(OG_FLOAT32, bad, 2, buf, sizeof(float) * 3 * V, &mine));
    CHECK_ERR(og_session_run_rows(s, in, &x, 1, outs, &mine, 1, &lsel), OG_ERR_INVALID_ARGUMENT,
              "caller's tensor");
    og_tensor_free(mine);

    /* normed requested whole too: the norm runs whole, only mm2 and bias are pruned */
    og_tensor *two[2] = {NULL, NULL};
    const char *outs2[] = {"logits", "normed"};
    CHECK_OK(og_session_run_rows(s, in, &x, 1, outs2, two, 2, &lsel));
    CHECK(rows_equal(two[0], full[0], list, 4, V));
    CHECK_EQ_INT(og_tensor_dims(two[1])[1], S);
    CHECK(memcmp(og_tensor_data(two[1]), og_tensor_data(full[2]), og_tensor_size_bytes(full[2])) == 0);
    CHECK(!pruned(s, "norm") && pruned(s, "mm2") && pruned(s, "bias"));
    og_tensor_free(two[0]);
    og_tensor_free(two[1]);

    /* scores: a MatMul by a computed matrix is not row-wise: computed whole, then gathered */
    og_tensor *sc = NULL;
    og_output_rows ssel = {"scores", list, 4};
    const char *outs3[] = {"scores"};
    CHECK_OK(og_session_run_rows(s, in, &x, 1, outs3, &sc, 1, &ssel));
    CHECK(rows_equal(sc, full[1], list, 4, S));
    CHECK(!pruned(s, "scores"));
    og_tensor_free(sc);

    /* raw declares no shape: computed whole, its rows copied at the end */
    og_tensor *raw_full = NULL, *raw = NULL;
    const char *outs4[] = {"raw"};
    og_output_rows rsel = {"raw", list, 4};
    CHECK_OK(og_session_run(s, in, &x, 1, outs4, &raw_full, 1));
    CHECK_OK(og_session_run_rows(s, in, &x, 1, outs4, &raw, 1, &rsel));
    CHECK_EQ_INT(og_tensor_dims(raw)[0], 4);
    CHECK(rows_equal(raw, raw_full, list, 4, H));
    CHECK(!pruned(s, "relu"));
    og_tensor_free(raw);
    og_tensor_free(raw_full);

    /* errors: a row outside the output, an output the run does not ask for */
    int64_t out_of[1] = {B * S};
    og_output_rows esel = {"logits", out_of, 1};
    og_tensor *e = NULL;
    CHECK_ERR(og_session_run_rows(s, in, &x, 1, outs, &e, 1, &esel), OG_ERR_INVALID_ARGUMENT,
              "row 10");
    og_output_rows nsel = {"normed", NULL, 0};
    CHECK_ERR(og_session_run_rows(s, in, &x, 1, outs, &e, 1, &nsel), OG_ERR_INVALID_ARGUMENT,
              "does not ask");
    CHECK(e == NULL);
    for (int i = 0; i < 3; i++) og_tensor_free(full[i]);
    og_tensor_free(x);

    /* one position per sequence: the selection is every row, nothing is pruned */
    x = input_x(1);
    og_tensor *one = NULL, *lone = NULL;
    CHECK_OK(og_session_run(s, in, &x, 1, outs, &one, 1));
    CHECK_OK(og_session_run_rows(s, in, &x, 1, outs, &lone, 1, &sel));
    CHECK_EQ_INT(og_tensor_dims(lone)[1], 1);
    CHECK(memcmp(og_tensor_data(one), og_tensor_data(lone), og_tensor_size_bytes(one)) == 0);
    CHECK(!pruned(s, "mm2"));
    og_tensor_free(one);
    og_tensor_free(lone);
    og_tensor_free(x);
    og_session_close(s);
}
