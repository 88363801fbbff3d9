/* The kernels of tests/vision_seq (pools, Resize, GridSample, the recurrent ops, the
 * integer convolutions and matmuls) and Conv's window geometry, through the stand-in
 * executor: the threaded paths equal the inline ones, and the behaviours where ONNX's
 * reference and onnxruntime disagree with each other or with the spec are pinned here
 * with the reasoning. Values are checked against the oracles in
 * tests/vision_seq/make_cases.py. */
#include "testing.h"

#include "kernel_harness.h"

#include "backends/native/kernels/matmul/matmul.h"
#include "backends/native/kernels/quant/quant.h"
#include "backends/native/kernels/recurrent/recurrent.h"
#include "backends/native/kernels/spatial/spatial.h"
#include "base/threadpool.h"

#include <stdlib.h>

static float sk_rand(unsigned *s) {
    *s = *s * 1103515245u + 12345u;
    return (float)((*s >> 8) & 0xffff) / 32768.0f - 1.0f;
}

/* Runs fn once inline and once on a pool of 4; every output must match bit for bit. */
static void sk_same_threaded(kernel_fn fn, int64_t opset, graph_attr *a, int na,
                             const tensor *const *in, int nin, int nout) {
    kh_run r1, r2;
    CHECK_OK(kh_call(&r1, fn, opset, a, na, in, nin, nout));
    CHECK_OK(threadpool_create(4, &kh_pool));
    og_status *st = kh_call(&r2, fn, opset, a, na, in, nin, nout);
    threadpool_free(kh_pool);
    kh_pool = NULL;
    CHECK_OK(st);
    for (int i = 0; i < nout; i++) {
        CHECK(r1.out[i].nbytes == r2.out[i].nbytes && r1.out[i].nbytes > 0);
        CHECK(memcmp(r1.out[i].data, r2.out[i].data, r1.out[i].nbytes) == 0);
    }
    kh_free(&r1);
    kh_free(&r2);
}

TEST(spatial_pools_threaded_match_inline) {
    enum { N = 3, C = 5, H = 23, W = 21 };
    static float x[N * C * H * W];
    unsigned s = 5;
    for (size_t i = 0; i < sizeof x / 4; i++) x[i] = sk_rand(&s);
    int64_t d[4] = {N, C, H, W}, k[2] = {3, 2}, st[2] = {2, 1}, pads[4] = {1, 0, 1, 1};
    int64_t dil[2] = {1, 2};
    tensor t = kh_tensor(OG_FLOAT32, 4, d, x);
    const tensor *in[1] = {&t};
    graph_attr a[6] = {{.name = "kernel_shape", .type = ATTR_INTS, .ints = k, .n = 2},
                       {.name = "strides", .type = ATTR_INTS, .ints = st, .n = 2},
                       {.name = "pads", .type = ATTR_INTS, .ints = pads, .n = 4},
                       {.name = "dilations", .type = ATTR_INTS, .ints = dil, .n = 2},
                       {.name = "ceil_mode", .type = ATTR_INT, .i = 1},
                       {.name = "count_include_pad", .type = ATTR_INT, .i = 1}};
    sk_same_threaded(cpu_max_pool, 22, a, 5, in, 1, 2);
    sk_same_threaded(cpu_average_pool, 22, a, 6, in, 1, 1);
    sk_same_threaded(cpu_lp_pool, 22, a, 5, in, 1, 1);
    sk_same_threaded(cpu_global_average_pool, 22, NULL, 0, in, 1, 1);
}

/* MaxPool's NaN and empty-window answers (see pool.c): a NaN wins its window, as numpy's
 * max and PyTorch's max_pool give; ONNX's reference drops a NaN that is not the first
 * tap and onnxruntime ignores NaN, so neither is an oracle here. A window wholly in the
 * padding (pads as large as the window) is -inf with index -1: the max of no values. */
TEST(spatial_maxpool_nan_wins_and_empty_window_is_minus_inf) {
    float x[6] = {1, NAN, 3, -2, 5, 4};
    int64_t d[3] = {1, 1, 6}, k[1] = {2}, st[1] = {2}, pads[2] = {0, 0};
    tensor t = kh_tensor(OG_FLOAT32, 3, d, x);
    const tensor *in[1] = {&t};
    graph_attr a[3] = {{.name = "kernel_shape", .type = ATTR_INTS, .ints = k, .n = 1},
                       {.name = "strides", .type = ATTR_INTS, .ints = st, .n = 1},
                       {.name = "pads", .type = ATTR_INTS, .ints = pads, .n = 2}};
    kh_run r;
    CHECK_OK(kh_call(&r, cpu_max_pool, 22, a, 3, in, 1, 2));
    const float *y = r.out[0].data;
    const int64_t *ix = r.out[1].data;
    CHECK(isnan(y[0]));
    CHECK_EQ_INT(ix[0], 1);
    CHECK_NEAR(y[1], 3, 0);
    CHECK_EQ_INT(ix[1], 2);
    CHECK_NEAR(y[2], 5, 0);
    CHECK_EQ_INT(ix[2], 4);
    kh_free(&r);
    k[0] = 1, st[0] = 1, pads[0] = pads[1] = 1; /* the first and last windows see only padding */
    CHECK_OK(kh_call(&r, cpu_max_pool, 22, a, 3, in, 1, 2));
    CHECK_EQ_INT(r.out[0].dims[2], 8);
    y = r.out[0].data, ix = r.out[1].data;
    CHECK(isinf(y[0]) && y[0] < 0);
    CHECK_EQ_INT(ix[0], -1);
    CHECK(isinf(y[7]) && y[7] < 0);
    CHECK_NEAR(y[5], 5, 0);
    CHECK_EQ_INT(ix[5], 4);
    kh_free(&r);
}

/* auto_pad SAME with dilation: the output extent is ceil(in / stride) and the padding
 * is computed from the dilated kernel extent, dilation * (k - 1) + 1, as the spec's
 * formula for the pools states and as SAME ("output size equals input size / stride")
 * requires. ONNX's reference evaluator pads for the undilated kernel instead and so
 * returns a smaller output (for Conv: in 9, kernel 3, dilation 2 gives 7 there rather
 * than 9), onnxruntime's Conv refuses dilation with SAME, and onnxruntime's pools pad
 * like the reference. Our answer for Conv and the pools is the spec's; here it must
 * equal the same op with the explicit pads SAME stands for. */
TEST(spatial_same_auto_pad_with_dilation_keeps_ceil_in_over_stride) {
    enum { H = 9, W = 10 };
    float x[H * W], w[9];
    unsigned s = 9;
    for (int i = 0; i < H * W; i++) x[i] = sk_rand(&s);
    for (int i = 0; i < 9; i++) w[i] = sk_rand(&s);
    int64_t xd[4] = {1, 1, H, W}, wd[4] = {1, 1, 3, 3}, dil[2] = {2, 2}, st[2] = {1, 2};
    int64_t pads[4] = {2, 1, 2, 2}; /* SAME_UPPER: totals (9-1)*1+5-9 = 4 and (5-1)*2+5-10 = 3 */
    tensor tx = kh_tensor(OG_FLOAT32, 4, xd, x), tw = kh_tensor(OG_FLOAT32, 4, wd, w);
    const tensor *in[2] = {&tx, &tw};
    graph_attr same[3] = {{.name = "auto_pad", .type = ATTR_STRING, .s = {"SAME_UPPER", 10}},
                          {.name = "dilations", .type = ATTR_INTS, .ints = dil, .n = 2},
                          {.name = "strides", .type = ATTR_INTS, .ints = st, .n = 2}};
    graph_attr expl[3] = {{.name = "pads", .type = ATTR_INTS, .ints = pads, .n = 4},
                          {.name = "dilations", .type = ATTR_INTS, .ints = dil, .n = 2},
                          {.name = "strides", .type = ATTR_INTS, .ints = st, .n = 2}};
    kernel_fn fns[3] = {cpu_conv, cpu_max_pool, cpu_average_pool};
    int64_t k[2] = {3, 3};
    graph_attr ks = {.name = "kernel_shape", .type = ATTR_INTS, .ints = k, .n = 2};
    for (int f = 0; f < 3; f++) {
        graph_attr a1[4] = {same[0], same[1], same[2], ks}, a2[4] = {expl[0], expl[1], expl[2], ks};
        kh_run r1, r2;
        CHECK_OK(kh_call(&r1, fns[f], 22, a1, f ? 4 : 3, in, f ? 1 : 2, 1));
        CHECK_EQ_INT(r1.out[0].dims[2], H);         /* ceil(9 / 1) */
        CHECK_EQ_INT(r1.out[0].dims[3], (W + 1) / 2); /* ceil(10 / 2) */
        CHECK_OK(kh_call(&r2, fns[f], 22, a2, f ? 4 : 3, in, f ? 1 : 2, 1));
        CHECK(r1.out[0].nbytes == r2.out[0].nbytes);
        CHECK(memcmp(r1.out[0].data, r2.out[0].data, r1.out[0].nbytes) == 0);
        kh_free(&r1);
        kh_free(&r2);
    }
}

TEST(vision_seq_integer_conv_threaded_matches_inline) {
    enum { N = 2, C = 32, H = 13, W = 11, M = 8 }; /* K = 144: the product splits */
    static uint8_t x[N * C * H * W];
    static int8_t w[M * (C / 2) * 3 * 3];
    unsigned s = 3;
    for (size_t i = 0; i < sizeof x; i++) x[i] = (uint8_t)(sk_rand(&s) * 127 + 128);
    for (size_t i = 0; i < sizeof w; i++) w[i] = (int8_t)(sk_rand(&s) * 127);
    uint8_t xz = 131;
    int8_t wz[M] = {0, 1, -2, 3, -4, 5, -6, 7};
    int64_t xd[4] = {N, C, H, W}, wd[4] = {M, C / 2, 3, 3}, zd[1] = {M}, pads[4] = {1, 0, 1, 1};
    tensor tx = kh_tensor(OG_UINT8, 4, xd, x), tw = kh_tensor(OG_INT8, 4, wd, w);
    tensor txz = kh_tensor(OG_UINT8, 0, NULL, &xz), twz = kh_tensor(OG_INT8, 1, zd, wz);
    const tensor *in[4] = {&tx, &tw, &txz, &twz};
    graph_attr a[2] = {{.name = "group", .type = ATTR_INT, .i = 2},
                       {.name = "pads", .type = ATTR_INTS, .ints = pads, .n = 4}};
    sk_same_threaded(cpu_conv_integer, 10, a, 2, in, 4, 1);
}

/* QLinearMatMul at a rounding tie: acc = 125 * 70 = 8750, scales 0.02, 0.03, 0.7
 * (float32). The multiplier in float32 is 0.00085714285 and acc times it in double is
 * 7.49999992, which rounds to 7; onnxruntime multiplies in float32, where the product
 * rounds to exactly 7.5, and returns 8 (ties to even). ONNX's reference computes as we
 * do (quant_integer.c), and exact arithmetic on the float32 scales gives 7.4999998. */
TEST(vision_seq_qlinear_matmul_requantizes_like_the_reference_at_a_tie) {
    int8_t a = 125, b = 70, zp = 0;
    float as = 0.02f, bs = 0.03f, ys = 0.7f;
    int64_t d[2] = {1, 1};
    tensor ta = kh_tensor(OG_INT8, 2, d, &a), tb = kh_tensor(OG_INT8, 2, d, &b);
    tensor tas = kh_tensor(OG_FLOAT32, 0, NULL, &as), tbs = kh_tensor(OG_FLOAT32, 0, NULL, &bs);
    tensor tys = kh_tensor(OG_FLOAT32, 0, NULL, &ys), tz = kh_tensor(OG_INT8, 0, NULL, &zp);
    const tensor *in[8] = {&ta, &tas, &tz, &tb, &tbs, &tz, &tys, &tz};
    kh_run r;
    CHECK_OK(kh_call(&r, cpu_qlinear_matmul, 10, NULL, 0, in, 8, 1));
    CHECK_EQ_INT(((const int8_t *)r.out[0].data)[0], 7);
    kh_free(&r);
}

TEST(vision_seq_resize_threaded_matches_inline) {
    enum { N = 2, C = 3, H = 37, W = 29 };
    static float x[N * C * H * W];
    unsigned s = 17;
    for (size_t i = 0; i < sizeof x / 4; i++) x[i] = sk_rand(&s);
    int64_t d[4] = {N, C, H, W}, sd[1] = {4};
    float sc[4] = {1, 1, 1.75f, 0.45f};
    tensor t = kh_tensor(OG_FLOAT32, 4, d, x), ts = kh_tensor(OG_FLOAT32, 1, sd, sc);
    const tensor *in[3] = {&t, NULL, &ts};
    const char *modes[3] = {"nearest", "linear", "cubic"};
    for (int m = 0; m < 3; m++) {
        graph_attr a[2] = {{.name = "mode", .type = ATTR_STRING, .s = {modes[m], strlen(modes[m])}},
                           {.name = "antialias", .type = ATTR_INT, .i = m > 0}};
        sk_same_threaded(cpu_resize, 19, a, 2, in, 3, 1);
    }
}

/* pytorch_half_pixel with an output length of 1: the spec maps the one output to
 * x_original = 0 ("length_resized > 1 ? ... : 0"), as onnxruntime does; ONNX's reference
 * maps it to -0.5. For cubic that moves the taps: at 0 the weights are (0, 0, 1, 0) and
 * the output is exactly the first input element, at -0.5 it would blend in the second. */
TEST(vision_seq_resize_pytorch_half_pixel_length_one_is_zero) {
    float x[4] = {1, 5, -2, 7};
    int64_t d[2] = {1, 4}, sz[2] = {1, 1}, szd[1] = {2};
    tensor t = kh_tensor(OG_FLOAT32, 2, d, x), ts = kh_tensor(OG_INT64, 1, szd, sz);
    const tensor *in[4] = {&t, NULL, NULL, &ts};
    graph_attr a[2] = {{.name = "mode", .type = ATTR_STRING, .s = {"cubic", 5}},
                       {.name = "coordinate_transformation_mode", .type = ATTR_STRING,
                        .s = {"pytorch_half_pixel", 18}}};
    kh_run r;
    CHECK_OK(kh_call(&r, cpu_resize, 19, a, 2, in, 4, 1));
    CHECK_EQ_INT(tensor_count(&r.out[0]), 1);
    CHECK_NEAR(((const float *)r.out[0].data)[0], 1, 0);
    kh_free(&r);
}

TEST(vision_seq_grid_sample_threaded_matches_inline) {
    enum { N = 2, C = 5, H = 19, W = 23, HO = 17, WO = 13 };
    static float x[N * C * H * W], g[N * HO * WO * 2];
    unsigned s = 23;
    for (size_t i = 0; i < sizeof x / 4; i++) x[i] = sk_rand(&s);
    for (size_t i = 0; i < sizeof g / 4; i++) g[i] = sk_rand(&s) * 1.3f;
    int64_t xd[4] = {N, C, H, W}, gd[4] = {N, HO, WO, 2};
    tensor tx = kh_tensor(OG_FLOAT32, 4, xd, x), tg = kh_tensor(OG_FLOAT32, 4, gd, g);
    const tensor *in[2] = {&tx, &tg};
    const char *modes[3] = {"nearest", "linear", "cubic"};
    for (int m = 0; m < 3; m++) {
        graph_attr a[2] = {{.name = "mode", .type = ATTR_STRING, .s = {modes[m], strlen(modes[m])}},
                           {.name = "padding_mode", .type = ATTR_STRING, .s = {"reflection", 10}}};
        sk_same_threaded(cpu_grid_sample, 20, a, 2, in, 2, 1);
    }
}

/* Cubic with border padding: the sampling point stays where the grid puts it and each
 * tap is clamped to the border, as PyTorch's grid_sample (cited by the spec) and
 * onnxruntime compute. Row [1, 2, 4, 8], align_corners, x = 1.5 -> 3.75: taps 2, 3, 4, 5
 * clamp to 2, 3, 3, 3 and the result is 8 + W(1.75) * (4 - 8) = 8.140625 with Keys'
 * W(1.75) = -0.03515625. ONNX's reference clamps the point to 3 first and returns 8. */
TEST(vision_seq_grid_sample_cubic_border_clamps_taps_not_the_point) {
    float x[4] = {1, 2, 4, 8}, g[2] = {1.5f, 0};
    int64_t xd[4] = {1, 1, 1, 4}, gd[4] = {1, 1, 1, 2};
    tensor tx = kh_tensor(OG_FLOAT32, 4, xd, x), tg = kh_tensor(OG_FLOAT32, 4, gd, g);
    const tensor *in[2] = {&tx, &tg};
    graph_attr a[3] = {{.name = "mode", .type = ATTR_STRING, .s = {"cubic", 5}},
                       {.name = "padding_mode", .type = ATTR_STRING, .s = {"border", 6}},
                       {.name = "align_corners", .type = ATTR_INT, .i = 1}};
    kh_run r;
    CHECK_OK(kh_call(&r, cpu_grid_sample, 20, a, 3, in, 2, 1));
    CHECK_NEAR(((const float *)r.out[0].data)[0], 8.140625, 1e-6);
    kh_free(&r);
}

/* The recurrent products split over the pool (gemm_f32 for float32, the double loop for
 * float64) and must give the same bits as inline. */
TEST(vision_seq_rnn_family_threaded_matches_inline) {
    enum { T = 4, B = 3, I = 40, H = 48, D = 2 };
    static float xf[T * B * I], wf[D * 4 * H * I], rf[D * 4 * H * H], bf[D * 8 * H];
    static double xd[T * B * I], wd[D * 4 * H * I], rd[D * 4 * H * H], bd[D * 8 * H];
    unsigned s = 29;
    for (int i = 0; i < T * B * I; i++) xd[i] = xf[i] = sk_rand(&s);
    for (int i = 0; i < D * 4 * H * I; i++) wd[i] = wf[i] = sk_rand(&s) * 0.2f;
    for (int i = 0; i < D * 4 * H * H; i++) rd[i] = rf[i] = sk_rand(&s) * 0.2f;
    for (int i = 0; i < D * 8 * H; i++) bd[i] = bf[i] = sk_rand(&s) * 0.2f;
    kernel_fn fns[3] = {cpu_rnn, cpu_gru, cpu_lstm};
    for (int k = 0; k < 3; k++) {
        int64_t G = k == 0 ? 1 : k == 1 ? 3 : 4;
        int64_t xdm[3] = {T, B, I}, wdm[3] = {D, G * H, I}, rdm[3] = {D, G * H, H};
        int64_t bdm[2] = {D, 2 * G * H};
        for (int f64 = 0; f64 < 2; f64++) {
            og_dtype dt = f64 ? OG_FLOAT64 : OG_FLOAT32;
            tensor tx = kh_tensor(dt, 3, xdm, f64 ? (void *)xd : (void *)xf);
            tensor tw = kh_tensor(dt, 3, wdm, f64 ? (void *)wd : (void *)wf);
            tensor tr = kh_tensor(dt, 3, rdm, f64 ? (void *)rd : (void *)rf);
            tensor tb = kh_tensor(dt, 2, bdm, f64 ? (void *)bd : (void *)bf);
            const tensor *in[4] = {&tx, &tw, &tr, &tb};
            graph_attr a[2] = {{.name = "direction", .type = ATTR_STRING, .s = {"bidirectional", 13}},
                               {.name = "hidden_size", .type = ATTR_INT, .i = H}};
            sk_same_threaded(fns[k], 14, a, 2, in, 4, k == 2 ? 3 : 2);
        }
    }
}

TEST(vision_seq_conv_transpose_threaded_matches_inline) {
    enum { N = 2, C = 8, H = 11, W = 9, MG = 6, G = 2 };
    static float x[N * C * H * W], w[C * MG * 3 * 3], b[MG * G];
    unsigned s = 31;
    for (size_t i = 0; i < sizeof x / 4; i++) x[i] = sk_rand(&s);
    for (size_t i = 0; i < sizeof w / 4; i++) w[i] = sk_rand(&s);
    for (size_t i = 0; i < sizeof b / 4; i++) b[i] = sk_rand(&s);
    int64_t xd[4] = {N, C, H, W}, wd[4] = {C, MG, 3, 3}, bd[1] = {MG * G}, st[2] = {2, 3};
    tensor tx = kh_tensor(OG_FLOAT32, 4, xd, x), tw = kh_tensor(OG_FLOAT32, 4, wd, w);
    tensor tb = kh_tensor(OG_FLOAT32, 1, bd, b);
    const tensor *in[3] = {&tx, &tw, &tb};
    graph_attr a[2] = {{.name = "group", .type = ATTR_INT, .i = G},
                       {.name = "strides", .type = ATTR_INTS, .ints = st, .n = 2}};
    sk_same_threaded(cpu_conv_transpose, 22, a, 2, in, 3, 1);
}

/* ConvTranspose with auto_pad SAME: the output extent is in * stride, as the spec states
 * ("pad the input so that output_shape[i] = input_shape[i] * strides[i]"), even where
 * the kernel's full extent stride * (in - 1) + kernel is shorter: in 6, stride 3,
 * kernel 2 reach 17 positions and the 18th is zero (a negative pad). ONNX's reference
 * agrees; onnxruntime clamps the padding at 0 and returns 17. */
TEST(vision_seq_conv_transpose_same_is_in_times_stride) {
    float x[6] = {1, 2, 3, 4, 5, 6}, w[2] = {1, 10};
    int64_t xd[3] = {1, 1, 6}, wd[3] = {1, 1, 2}, st[1] = {3};
    tensor tx = kh_tensor(OG_FLOAT32, 3, xd, x), tw = kh_tensor(OG_FLOAT32, 3, wd, w);
    const tensor *in[2] = {&tx, &tw};
    graph_attr a[2] = {{.name = "auto_pad", .type = ATTR_STRING, .s = {"SAME_UPPER", 10}},
                       {.name = "strides", .type = ATTR_INTS, .ints = st, .n = 1}};
    kh_run r;
    CHECK_OK(kh_call(&r, cpu_conv_transpose, 22, a, 2, in, 2, 1));
    CHECK_EQ_INT(r.out[0].dims[2], 18);
    const float *y = r.out[0].data; /* total pad -1: SAME_UPPER puts floor(-1/2) = -1 first */
    CHECK_NEAR(y[0], 0, 0);          /* position -1 + 1: before the first tap */
    CHECK_NEAR(y[1], 1, 0);
    CHECK_NEAR(y[2], 10, 0);
    CHECK_NEAR(y[17], 60, 0);
    kh_free(&r);
}
