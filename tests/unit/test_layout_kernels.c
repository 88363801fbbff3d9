/* Layout kernels run through a minimal stand-in executor (outputs and scratch on the
 * heap), checked against naive index arithmetic. */
#include "testing.h"

#include "kernel_harness.h"

#include "base/threadpool.h"
#include "backends/native/kernels/layout/layout.h"

#include <stdlib.h>


static graph_attr lk_int(const char *name, int64_t v) {
    return (graph_attr){.name = name, .type = ATTR_INT, .i = v};
}
static graph_attr lk_ints(const char *name, int64_t *v, int64_t n) {
    return (graph_attr){.name = name, .type = ATTR_INTS, .ints = v, .n = n};
}

TEST(layout_transpose_matches_naive) {
    /* 2-D (tiled path) and two 4-D permutations, on 4- and 2-byte elements */
    static float a[37 * 45];
    for (int i = 0; i < 37 * 45; i++) a[i] = (float)i;
    int64_t d2[2] = {37, 45};
    tensor x = kh_tensor(OG_FLOAT32, 2, d2, a);
    const tensor *in[1] = {&x};
    kh_run r;
    CHECK_OK(kh_call(&r, cpu_transpose, 21, NULL, 0, in, 1, 1));
    CHECK_EQ_INT(r.out[0].dims[0], 45);
    const float *y = r.out[0].data;
    for (int i = 0; i < 37; i++)
        for (int j = 0; j < 45; j++) CHECK_EQ_INT(y[j * 37 + i], a[i * 45 + j]);
    kh_free(&r);

    static int16_t b[2 * 9 * 10 * 3];
    for (int i = 0; i < 540; i++) b[i] = (int16_t)i;
    int64_t d4[4] = {2, 9, 10, 3}, perms[2][4] = {{0, 2, 1, 3}, {3, 1, 0, 2}};
    tensor x4 = kh_tensor(OG_INT16, 4, d4, b);
    const tensor *in4[1] = {&x4};
    for (int p = 0; p < 2; p++) {
        graph_attr at = lk_ints("perm", perms[p], 4);
        CHECK_OK(kh_call(&r, cpu_transpose, 13, &at, 1, in4, 1, 1));
        int64_t od[4], c[4], ist[4] = {270, 30, 3, 1};
        for (int i = 0; i < 4; i++) od[i] = d4[perms[p][i]];
        const int16_t *o = r.out[0].data;
        for (int64_t k = 0; k < 540; k++) {
            int64_t u = k, off = 0;
            for (int i = 3; i >= 0; i--) {
                c[i] = u % od[i];
                u /= od[i];
                off += c[i] * ist[perms[p][i]];
            }
            CHECK_EQ_INT(o[k], b[off]);
        }
        kh_free(&r);
    }
}

TEST(layout_slice_negative_step_and_clamp) {
    int64_t a[10] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9}, d = 10, one = 1;
    int64_t st = -2, en = INT64_MIN, sp = -3;
    tensor x = kh_tensor(OG_INT64, 1, &d, a), s = kh_tensor(OG_INT64, 1, &one, &st),
           e = kh_tensor(OG_INT64, 1, &one, &en), p = kh_tensor(OG_INT64, 1, &one, &sp);
    const tensor *in[5] = {&x, &s, &e, NULL, &p};
    kh_run r;
    CHECK_OK(kh_call(&r, cpu_slice, 13, NULL, 0, in, 5, 1));
    CHECK_EQ_INT(r.out[0].dims[0], 3);
    const int64_t *y = r.out[0].data;
    CHECK(y[0] == 8 && y[1] == 5 && y[2] == 2);
    kh_free(&r);
}

TEST(layout_pad_reflect_and_constant) {
    float a[3] = {1, 2, 3};
    int64_t d = 3, two = 2, pads[2] = {2, 2};
    tensor x = kh_tensor(OG_FLOAT32, 1, &d, a), p = kh_tensor(OG_INT64, 1, &two, pads);
    const tensor *in[2] = {&x, &p};
    graph_attr mode = {.name = "mode", .type = ATTR_STRING, .s = {"reflect", 7}};
    kh_run r;
    CHECK_OK(kh_call(&r, cpu_pad, 18, &mode, 1, in, 2, 1));
    float want[7] = {3, 2, 1, 2, 3, 2, 1};
    for (int i = 0; i < 7; i++) CHECK_EQ_INT(((float *)r.out[0].data)[i], want[i]);
    kh_free(&r);
    pads[0] = -1; /* crop one in front, two zeros after */
    CHECK_OK(kh_call(&r, cpu_pad, 18, NULL, 0, in, 2, 1));
    float want2[4] = {2, 3, 0, 0};
    CHECK_EQ_INT(r.out[0].dims[0], 4);
    for (int i = 0; i < 4; i++) CHECK_EQ_INT(((float *)r.out[0].data)[i], want2[i]);
    kh_free(&r);
}

TEST(layout_gather_rejects_out_of_range) {
    float a[4] = {1, 2, 3, 4};
    int32_t idx[2] = {-4, 4};
    int64_t d = 4, two = 2;
    tensor x = kh_tensor(OG_FLOAT32, 1, &d, a), i = kh_tensor(OG_INT32, 1, &two, idx);
    const tensor *in[2] = {&x, &i};
    kh_run r;
    CHECK_ERR(kh_call(&r, cpu_gather, 13, NULL, 0, in, 2, 1), OG_ERR_INVALID_ARGUMENT,
              "index 4 at position 1");
    kh_free(&r);
    idx[1] = 3;
    CHECK_OK(kh_call(&r, cpu_gather, 13, NULL, 0, in, 2, 1));
    CHECK(((float *)r.out[0].data)[0] == 1 && ((float *)r.out[0].data)[1] == 4);
    kh_free(&r);
}

TEST(layout_split_uneven_num_outputs) {
    uint8_t a[7] = {0, 1, 2, 3, 4, 5, 6};
    int64_t d = 7;
    tensor x = kh_tensor(OG_UINT8, 1, &d, a);
    const tensor *in[1] = {&x};
    graph_attr at = lk_int("num_outputs", 3);
    kh_run r;
    CHECK_OK(kh_call(&r, cpu_split, 18, &at, 1, in, 1, 3));
    CHECK(r.out[0].dims[0] == 3 && r.out[1].dims[0] == 3 && r.out[2].dims[0] == 1);
    CHECK_EQ_INT(((uint8_t *)r.out[2].data)[0], 6);
    CHECK_EQ_INT(((uint8_t *)r.out[1].data)[0], 3);
    kh_free(&r);
}

TEST(layout_tile_and_expand) {
    int32_t a[6] = {1, 2, 3, 4, 5, 6};
    int64_t d[2] = {2, 3}, two = 2, reps[2] = {2, 2};
    tensor x = kh_tensor(OG_INT32, 2, d, a), p = kh_tensor(OG_INT64, 1, &two, reps);
    const tensor *in[2] = {&x, &p};
    kh_run r;
    CHECK_OK(kh_call(&r, cpu_tile, 13, NULL, 0, in, 2, 1));
    const int32_t *y = r.out[0].data;
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 6; j++) CHECK_EQ_INT(y[i * 6 + j], a[(i % 2) * 3 + j % 3]);
    kh_free(&r);
    int64_t shape[2] = {2, 1}; /* [2,3] with [2,1] broadcasts to [2,3] */
    p.data = shape;
    CHECK_OK(kh_call(&r, cpu_expand, 13, NULL, 0, in, 2, 1));
    CHECK(r.out[0].dims[0] == 2 && r.out[0].dims[1] == 3);
    CHECK_EQ_INT(((int32_t *)r.out[0].data)[5], 6);
    kh_free(&r);
}

TEST(layout_scatter_nd_add_duplicates) {
    float a[4] = {1, 1, 1, 1}, u[3] = {5, 7, 2};
    int64_t d = 4, id[2] = {3, 1}, ix[3] = {1, 1, 3};
    tensor x = kh_tensor(OG_FLOAT32, 1, &d, a), i = kh_tensor(OG_INT64, 2, id, ix),
           up = kh_tensor(OG_FLOAT32, 1, id, u);
    const tensor *in[3] = {&x, &i, &up};
    graph_attr at = {.name = "reduction", .type = ATTR_STRING, .s = {"add", 3}};
    kh_run r;
    CHECK_OK(kh_call(&r, cpu_scatter_nd, 18, &at, 1, in, 3, 1));
    const float *y = r.out[0].data;
    CHECK(y[0] == 1 && y[1] == 13 && y[2] == 1 && y[3] == 3);
    kh_free(&r);
}

TEST(layout_reshape_zero_and_infer) {
    float a[24] = {0};
    int64_t d[3] = {2, 3, 4}, three = 3, shape[3] = {0, -1, 2};
    tensor x = kh_tensor(OG_FLOAT32, 3, d, a), s = kh_tensor(OG_INT64, 1, &three, shape);
    const tensor *in[2] = {&x, &s};
    kh_run r;
    CHECK_OK(kh_call(&r, cpu_reshape, 14, NULL, 0, in, 2, 1));
    CHECK(r.out[0].rank == 3 && r.out[0].dims[0] == 2 && r.out[0].dims[1] == 6);
    kh_free(&r);
    shape[2] = 5;
    CHECK_ERR(kh_call(&r, cpu_reshape, 14, NULL, 0, in, 2, 1), OG_ERR_INVALID_ARGUMENT, "-1");
    kh_free(&r);
}

TEST(layout_parallel_concat_and_transpose) {
    /* long rows (chunked across the pool) and a tiled transpose, with 4 threads */
    enum { N = 700000 };
    float *a = malloc(sizeof(float) * N), *b = malloc(sizeof(float) * N);
    CHECK(a && b);
    for (int i = 0; i < N; i++) a[i] = (float)i, b[i] = (float)-i;
    CHECK_OK(threadpool_create(4, &kh_pool));
    int64_t d = N;
    tensor x = kh_tensor(OG_FLOAT32, 1, &d, a), y = kh_tensor(OG_FLOAT32, 1, &d, b);
    const tensor *in[2] = {&x, &y};
    graph_attr axis = lk_int("axis", 0);
    kh_run r;
    og_status *st = kh_call(&r, cpu_concat, 13, &axis, 1, in, 2, 1);
    bool ok = !st && r.out[0].dims[0] == 2 * N;
    for (int i = 0; ok && i < N; i++)
        ok = ((float *)r.out[0].data)[i] == a[i] && ((float *)r.out[0].data)[N + i] == b[i];
    kh_free(&r);
    int64_t d2[2] = {700, 1000};
    tensor m = kh_tensor(OG_FLOAT32, 2, d2, a);
    const tensor *in2[1] = {&m};
    if (!st) st = kh_call(&r, cpu_transpose, 13, NULL, 0, in2, 1, 1);
    for (int i = 0; ok && !st && i < 700; i++)
        for (int j = 0; ok && j < 1000; j++) ok = ((float *)r.out[0].data)[j * 700 + i] == a[i * 1000 + j];
    kh_free(&r);
    threadpool_free(kh_pool);
    kh_pool = NULL;
    free(a);
    free(b);
    CHECK_OK(st);
    CHECK(ok);
}
