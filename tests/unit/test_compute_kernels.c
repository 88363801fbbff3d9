/* Compute kernels (reduce, softmax, einsum, conv, quantize) through a minimal stand-in
 * executor, on cases ONNX's node tests do not cover: pre-13 Softmax semantics, the gemm
 * paths against naive loops, rounding and float8 encoding, threaded TopK, error messages. */
#include "testing.h"

#include "kernel_harness.h"

#include "base/threadpool.h"
#include "backends/native/kernels/matmul/matmul.h"
#include "backends/native/kernels/quant/quant.h"
#include "backends/native/kernels/spatial/spatial.h"
#include "backends/native/kernels/reduce/reduce.h"

#include <stdlib.h>


static float ck_rand(unsigned *s) {
    *s = *s * 1103515245u + 12345u;
    return (float)((*s >> 8) & 0xffff) / 32768.0f - 1.0f;
}

TEST(compute_softmax_opset11_coerces_to_2d) {
    float x[12];
    for (int i = 0; i < 12; i++) x[i] = (float)(i % 5) * 0.7f - 1.0f;
    int64_t d[3] = {2, 3, 2};
    tensor t = kh_tensor(OG_FLOAT32, 3, d, x);
    const tensor *in[1] = {&t};
    graph_attr ax = {.name = "axis", .type = ATTR_INT, .i = 1};
    kh_run r;
    CHECK_OK(kh_call(&r, cpu_softmax, 11, &ax, 1, in, 1, 1));
    const float *y = r.out[0].data;
    for (int row = 0; row < 2; row++) { /* rows of 6: axis 1 onward flattened */
        double s = 0;
        for (int i = 0; i < 6; i++) s += exp(x[row * 6 + i]);
        for (int i = 0; i < 6; i++) CHECK_NEAR(y[row * 6 + i], exp(x[row * 6 + i]) / s, 1e-6);
    }
    kh_free(&r);
    CHECK_OK(kh_call(&r, cpu_softmax, 13, &ax, 1, in, 1, 1)); /* along dim 1 only */
    y = r.out[0].data;
    for (int o = 0; o < 2; o++)
        for (int k = 0; k < 2; k++) {
            double s = 0;
            for (int i = 0; i < 3; i++) s += exp(x[o * 6 + i * 2 + k]);
            for (int i = 0; i < 3; i++)
                CHECK_NEAR(y[o * 6 + i * 2 + k], exp(x[o * 6 + i * 2 + k]) / s, 1e-6);
        }
    kh_free(&r);
}

TEST(compute_reduce_axes_attribute_vs_input) {
    float x[6] = {1, 2, 3, 4, 5, 6};
    int64_t d[2] = {2, 3}, axes[1] = {-1}, ad[1] = {1};
    tensor t = kh_tensor(OG_FLOAT32, 2, d, x), ta = kh_tensor(OG_INT64, 1, ad, axes);
    graph_attr a11[2] = {{.name = "axes", .type = ATTR_INTS, .ints = axes, .n = 1},
                         {.name = "keepdims", .type = ATTR_INT, .i = 0}};
    const tensor *in1[1] = {&t}, *in2[2] = {&t, &ta};
    kh_run r;
    CHECK_OK(kh_call(&r, cpu_reduce_sum, 11, a11, 2, in1, 1, 1));
    CHECK_EQ_INT(r.out[0].rank, 1);
    CHECK_NEAR(((float *)r.out[0].data)[1], 15, 0);
    kh_free(&r);
    CHECK_OK(kh_call(&r, cpu_reduce_sum, 13, a11 + 1, 1, in2, 2, 1));
    CHECK_NEAR(((float *)r.out[0].data)[0], 6, 0);
    kh_free(&r);
    graph_attr noop = {.name = "noop_with_empty_axes", .type = ATTR_INT, .i = 1};
    CHECK_OK(kh_call(&r, cpu_reduce_sumsq, 18, &noop, 1, in1, 1, 1)); /* elementwise square */
    CHECK_EQ_INT(tensor_count(&r.out[0]), 6);
    CHECK_NEAR(((float *)r.out[0].data)[5], 36, 0);
    kh_free(&r);
    axes[0] = 2;
    CHECK_ERR(kh_call(&r, cpu_reduce_max, 18, NULL, 0, in2, 2, 1), OG_ERR_INVALID_ARGUMENT,
              "axes entry 2 is out of range");
    kh_free(&r);
}

TEST(compute_topk_threaded_matches_naive) {
    enum { ROWS = 40, LEN = 3000, K = 7 };
    static float x[ROWS * LEN];
    unsigned s = 7;
    for (int i = 0; i < ROWS * LEN; i++) x[i] = (float)(int)(ck_rand(&s) * 50); /* many ties */
    int64_t d[2] = {ROWS, LEN}, kd[1] = {1}, kv[1] = {K};
    tensor t = kh_tensor(OG_FLOAT32, 2, d, x), tk = kh_tensor(OG_INT64, 1, kd, kv);
    const tensor *in[2] = {&t, &tk};
    CHECK_OK(threadpool_create(4, &kh_pool));
    kh_run r;
    og_status *st = kh_call(&r, cpu_topk, 11, NULL, 0, in, 2, 2);
    threadpool_free(kh_pool);
    kh_pool = NULL;
    CHECK_OK(st);
    const float *v = r.out[0].data;
    const int64_t *ix = r.out[1].data;
    for (int row = 0; row < ROWS; row++) {
        int64_t prev = -1;
        for (int k = 0; k < K; k++) { /* the k-th: largest value below the previous pick */
            int64_t best = -1;
            for (int64_t i = 0; i < LEN; i++) {
                float xi = x[row * LEN + i];
                bool after = prev < 0 || xi < x[row * LEN + prev] ||
                             (xi == x[row * LEN + prev] && i > prev);
                if (after && (best < 0 || xi > x[row * LEN + best])) best = i;
            }
            CHECK_EQ_INT(ix[row * K + k], best);
            CHECK_NEAR(v[row * K + k], x[row * LEN + best], 0);
            prev = best;
        }
    }
    kh_free(&r);
}

TEST(compute_quantize_rounds_half_even_and_encodes_float8) {
    float x[6] = {2.5f, 3.5f, -0.5f, 300, -7, 0.49f};
    float sc = 1;
    int64_t d[1] = {6};
    tensor t = kh_tensor(OG_FLOAT32, 1, d, x), ts = kh_tensor(OG_FLOAT32, 0, NULL, &sc);
    const tensor *in[2] = {&t, &ts};
    kh_run r;
    CHECK_OK(kh_call(&r, cpu_quantize_linear, 13, NULL, 0, in, 2, 1));
    const uint8_t *q = r.out[0].data, want[6] = {2, 4, 0, 255, 0, 0};
    for (int i = 0; i < 6; i++) CHECK_EQ_INT(q[i], want[i]);
    kh_free(&r);
    float f8[5] = {448, 464, 480, 1e9f, -0.001953125f}; /* e4m3fn: max, tie->even, over */
    tensor t8 = kh_tensor(OG_FLOAT32, 1, (int64_t[]){5}, f8);
    const tensor *in8[2] = {&t8, &ts};
    graph_attr a[2] = {{.name = "output_dtype", .type = ATTR_INT, .i = OG_FLOAT8E4M3FN},
                       {.name = "saturate", .type = ATTR_INT, .i = 0}};
    CHECK_OK(kh_call(&r, cpu_quantize_linear, 21, a, 2, in8, 2, 1));
    const uint8_t *e = r.out[0].data, want8[5] = {0x7e, 0x7e, 0x7f, 0x7f, 0x81};
    for (int i = 0; i < 5; i++) CHECK_EQ_INT(e[i], want8[i]);
    kh_free(&r);
}

TEST(compute_conv_gemm_and_direct_match_naive) {
    enum { N = 2, C = 4, H = 9, W = 8, M = 8, KH = 3, KW = 2, G = 2 };
    static float x[N * C * H * W], w[M * (C / G) * KH * KW], b[M];
    unsigned s = 3;
    for (size_t i = 0; i < sizeof x / 4; i++) x[i] = ck_rand(&s);
    for (size_t i = 0; i < sizeof w / 4; i++) w[i] = ck_rand(&s);
    for (int i = 0; i < M; i++) b[i] = ck_rand(&s);
    int64_t xd[4] = {N, C, H, W}, wd[4] = {M, C / G, KH, KW}, bd[1] = {M};
    int64_t pads[4] = {1, 0, 2, 1}, strides[2] = {2, 1}, dil[2] = {1, 2};
    tensor tx = kh_tensor(OG_FLOAT32, 4, xd, x), tw = kh_tensor(OG_FLOAT32, 4, wd, w);
    tensor tb = kh_tensor(OG_FLOAT32, 1, bd, b);
    const tensor *in[3] = {&tx, &tw, &tb};
    graph_attr a[4] = {{.name = "group", .type = ATTR_INT, .i = G},
                       {.name = "pads", .type = ATTR_INTS, .ints = pads, .n = 4},
                       {.name = "strides", .type = ATTR_INTS, .ints = strides, .n = 2},
                       {.name = "dilations", .type = ATTR_INTS, .ints = dil, .n = 2}};
    kh_run r;
    CHECK_OK(kh_call(&r, cpu_conv, 11, a, 4, in, 3, 1)); /* 4 outputs per group: gemm */
    int64_t oh = r.out[0].dims[2], ow = r.out[0].dims[3];
    CHECK_EQ_INT(oh, (H + 3 - 3) / 2 + 1);
    CHECK_EQ_INT(ow, (W + 1 - 3) / 1 + 1);
    const float *y = r.out[0].data;
    for (int n = 0; n < N; n++)
        for (int m = 0; m < M; m++)
            for (int i = 0; i < oh; i++)
                for (int j = 0; j < ow; j++) {
                    double acc = b[m];
                    for (int c = 0; c < C / G; c++)
                        for (int p = 0; p < KH; p++)
                            for (int q = 0; q < KW; q++) {
                                int ih = i * 2 - 1 + p, iw = j - 0 + q * 2;
                                if (ih < 0 || ih >= H || iw < 0 || iw >= W) continue;
                                acc += (double)w[((m * (C / G) + c) * KH + p) * KW + q] *
                                       x[((n * C + (m / (M / G)) * (C / G) + c) * H + ih) * W + iw];
                            }
                    CHECK_NEAR(y[((n * M + m) * oh + i) * ow + j], acc, 1e-4);
                }
    kh_free(&r);
}

TEST(compute_einsum_gemm_path_matches_generic) {
    enum { B = 3, I = 5, J = 7, K = 4 };
    static float a[B * I * J], b[B * K * J];
    static double ad[B * I * J], bd[B * K * J];
    unsigned s = 11;
    for (int i = 0; i < B * I * J; i++) ad[i] = a[i] = ck_rand(&s);
    for (int i = 0; i < B * K * J; i++) bd[i] = b[i] = ck_rand(&s);
    int64_t da[3] = {B, I, J}, db[3] = {B, K, J};
    tensor ta = kh_tensor(OG_FLOAT32, 3, da, a), tb = kh_tensor(OG_FLOAT32, 3, db, b);
    tensor tad = kh_tensor(OG_FLOAT64, 3, da, ad), tbd = kh_tensor(OG_FLOAT64, 3, db, bd);
    const tensor *inf[2] = {&ta, &tb}, *ind[2] = {&tad, &tbd};
    graph_attr eq = {.name = "equation", .type = ATTR_STRING, .s = {"bij,bkj->kbi", 12}};
    kh_run rf, rd;
    CHECK_OK(kh_call(&rf, cpu_einsum, 12, &eq, 1, inf, 2, 1));  /* gemm path */
    CHECK_OK(kh_call(&rd, cpu_einsum, 12, &eq, 1, ind, 2, 1));  /* generic (float64) */
    CHECK_EQ_INT(rf.out[0].dims[0], K);
    CHECK_EQ_INT(rf.out[0].dims[2], I);
    for (int i = 0; i < K * B * I; i++)
        CHECK_NEAR(((float *)rf.out[0].data)[i], ((double *)rd.out[0].data)[i], 1e-5);
    kh_free(&rf);
    kh_free(&rd);
}
