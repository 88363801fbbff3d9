/* String tensors through the public API: creating them, running a graph that moves,
 * compares and makes strings (tests/models strings.onnx), outputs that own their bytes
 * after the inputs are gone, the caller-buffer refusal, and the .pb tensor file round
 * trip. */
#include "testing.h"

#include "kernel_harness.h"

#include "base/tensor.h"
#include "backends/native/kernels/cast/cast.h"
#include "backends/native/kernels/elementwise/elementwise.h"
#include "onnx/loader.h"

#include <stdlib.h>

static bool str_is(const og_string *s, const char *want) {
    size_t n = strlen(want);
    return s->size == n && (n == 0 || memcmp(s->data, want, n) == 0);
}

TEST(strings_create_copies_and_empty_defaults) {
    char buf[8] = "abc";
    og_string in[2] = {{buf, 3}, {NULL, 0}};
    int64_t d[1] = {2};
    og_tensor *t;
    CHECK_OK(og_tensor_create_strings(d, 1, in, &t));
    buf[0] = 'X'; /* the tensor holds its own copy */
    const og_string *v = og_tensor_data(t);
    CHECK(str_is(&v[0], "abc"));
    CHECK(str_is(&v[1], ""));
    CHECK_EQ_INT(og_tensor_size_bytes(t), 2 * sizeof(og_string));
    og_tensor_free(t);
    CHECK_OK(og_tensor_create(OG_STRING, d, 1, &t));
    v = og_tensor_data(t);
    CHECK(str_is(&v[0], "") && str_is(&v[1], ""));
    og_tensor_free(t);
    og_string bad[1] = {{NULL, 4}};
    int64_t d1[1] = {1};
    CHECK_ERR(og_tensor_create_strings(d1, 1, bad, &t), OG_ERR_INVALID_ARGUMENT, "NULL");
    CHECK_ERR(og_tensor_wrap(OG_STRING, d1, 1, bad, sizeof bad, &t), OG_ERR_INVALID_ARGUMENT,
              "NULL");
}

TEST(strings_run_through_a_graph) {
    const char *dir = getenv("OG_TEST_MODELS");
    if (!dir || !*dir) {
        test_skip("OG_TEST_MODELS is not set: run through ctest, which writes them");
        return;
    }
    char path[1024];
    snprintf(path, sizeof path, "%s/strings.onnx", dir);
    og_session *s;
    CHECK_OK(og_session_open(path, NULL, &s));
    for (int round = 0; round < 2; round++) { /* the second run reuses the plan */
        og_string w[3] = {{"zero", 4}, {"<unk>", 5}, {"\xc4\x89u two", 7}};
        int64_t dw[1] = {3}, di[1] = {2}, dx[1] = {3};
        int64_t idx[2] = {2, 1};
        float x[3] = {0.1f, -2.0f, 1e-5f};
        og_tensor *tw, *ti, *tx;
        CHECK_OK(og_tensor_create_strings(dw, 1, w, &tw));
        CHECK_OK(og_tensor_wrap(OG_INT64, di, 1, idx, sizeof idx, &ti));
        CHECK_OK(og_tensor_wrap(OG_FLOAT32, dx, 1, x, sizeof x, &tx));
        const char *in_names[] = {"words", "idx", "x"};
        const char *out_names[] = {"joined", "same", "text", "words"};
        og_tensor *ins[] = {tw, ti, tx}, *outs[4] = {NULL, NULL, NULL, NULL};
        CHECK_OK(og_session_run(s, in_names, ins, 3, out_names, outs, 4));
        og_tensor_free(tw); /* the outputs own their bytes */
        og_tensor_free(ti);
        og_tensor_free(tx);
        const og_string *j = og_tensor_data(outs[0]);
        CHECK_EQ_INT(og_tensor_element_count(outs[0]), 5);
        CHECK(str_is(&j[0], "\xc4\x89u two") && str_is(&j[1], "<unk>"));
        CHECK(str_is(&j[2], "<unk>") && str_is(&j[3], "\xc4\x89u") && str_is(&j[4], ""));
        const uint8_t *same = og_tensor_data(outs[1]);
        CHECK(!same[0] && same[1]);
        const og_string *t = og_tensor_data(outs[2]);
        CHECK(str_is(&t[0], "0.1") && str_is(&t[1], "-2.0") && str_is(&t[2], "1e-05"));
        const og_string *p = og_tensor_data(outs[3]);
        CHECK(str_is(&p[0], "zero") && str_is(&p[2], "\xc4\x89u two"));
        for (int k = 0; k < 4; k++) og_tensor_free(outs[k]);
    }
    /* a caller tensor for a string output is refused, naming the output */
    og_string w[1] = {{"a", 1}};
    int64_t d1[1] = {1};
    int64_t idx[1] = {0};
    float x[3] = {0};
    og_string mine[4] = {{NULL, 0}};
    og_tensor *tw, *ti, *tx, *tj;
    CHECK_OK(og_tensor_wrap(OG_STRING, d1, 1, w, sizeof w, &tw));
    CHECK_OK(og_tensor_wrap(OG_INT64, d1, 1, idx, sizeof idx, &ti));
    int64_t dx[1] = {3}, dj[1] = {4};
    CHECK_OK(og_tensor_wrap(OG_FLOAT32, dx, 1, x, sizeof x, &tx));
    CHECK_OK(og_tensor_wrap(OG_STRING, dj, 1, mine, sizeof mine, &tj));
    const char *in_names[] = {"words", "idx", "x"}, *out_names[] = {"joined"};
    og_tensor *ins[] = {tw, ti, tx}, *outs[1] = {tj};
    CHECK_ERR(og_session_run(s, in_names, ins, 3, out_names, outs, 1), OG_ERR_INVALID_ARGUMENT,
              "output 'joined' is a string tensor");
    og_tensor_free(tw);
    og_tensor_free(ti);
    og_tensor_free(tx);
    og_tensor_free(tj);
    og_session_close(s);
}

TEST(strings_tensor_file_round_trip) {
    og_string in[3] = {{"", 0}, {"x\0y", 3}, {"\xe6\x97\xa5", 3}};
    int64_t d[2] = {1, 3};
    og_tensor *t;
    CHECK_OK(og_tensor_create_strings(d, 2, in, &t));
    char path[1024];
    snprintf(path, sizeof path, "%s/strings.pb", test_tmp_dir());
    CHECK_OK(onnx_write_tensor_file(path, t, "s"));
    tensor back;
    char *name = NULL;
    CHECK_OK(onnx_read_tensor_file(path, &back, &name));
    CHECK(strcmp(name, "s") == 0);
    CHECK_EQ_INT(back.dtype, OG_STRING);
    CHECK_EQ_INT(back.rank, 2);
    const og_string *v = back.data, *w = og_tensor_data(t);
    for (int i = 0; i < 3; i++) CHECK(og_string_eq(v[i], w[i]));
    free(name);
    tensor_release(&back);
    og_tensor_free(t);
}

/* Text that is not a number of the target type is an error naming the element (ONNX
 * leaves it undefined; the reference raises). */
TEST(strings_cast_rejects_what_is_not_a_number) {
    og_string text[3] = {{"12", 2}, {"100.5", 5}, {"0x10", 4}};
    int64_t d[1] = {3};
    tensor x = kh_tensor(OG_STRING, 1, d, text);
    const tensor *in[1] = {&x};
    graph_attr to = {.name = "to", .type = ATTR_INT, .i = OG_INT32};
    kh_run r;
    CHECK_ERR(kh_call(&r, cpu_cast, 19, &to, 1, in, 1, 1), OG_ERR_INVALID_ARGUMENT,
              "element 1, \"100.5\", is not an integer in the range of int32");
    kh_free(&r);
    to.i = OG_FLOAT32;
    CHECK_ERR(kh_call(&r, cpu_cast, 19, &to, 1, in, 1, 1), OG_ERR_INVALID_ARGUMENT,
              "element 2, \"0x10\", is not a number for float32");
    kh_free(&r);
    og_string big[1] = {{"128", 3}};
    int64_t d1[1] = {1};
    tensor xb = kh_tensor(OG_STRING, 1, d1, big);
    const tensor *inb[1] = {&xb};
    to.i = OG_INT8;
    CHECK_ERR(kh_call(&r, cpu_cast, 19, &to, 1, inb, 1, 1), OG_ERR_INVALID_ARGUMENT, "int8");
    kh_free(&r);
}
