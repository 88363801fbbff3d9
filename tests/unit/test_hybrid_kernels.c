/* The kernels of hybrid and mixture-of-experts decoders (CausalConvWithState,
 * LinearAttention, MoE, QMoE): the forms they refuse, and the messages that name what was
 * expected. Their values are checked against onnxruntime in tests/contrib_hybrid. */
#include "testing.h"

#include "kernel_harness.h"

#include "backends/native/kernels/moe/moe.h"
#include "backends/native/kernels/recurrent/recurrent.h"

#include <string.h>

TEST(hybrid_conv_refuses_ndim_and_state_window) {
    float x[2 * 3 * 4] = {0}, w[3 * 2] = {0};
    int64_t xd[3] = {2, 3, 4}, wd[3] = {3, 1, 2};
    tensor tx = kh_tensor(OG_FLOAT32, 3, xd, x), tw = kh_tensor(OG_FLOAT32, 3, wd, w);
    const tensor *in[2] = {&tx, &tw};
    kh_run r;
    graph_attr nd = {.name = "ndim", .type = ATTR_INT, .i = 2};
    CHECK_ERR(kh_call(&r, cpu_causal_conv_with_state, 1, &nd, 1, in, 2, 2), OG_ERR_UNSUPPORTED,
              "ndim=2");
    kh_free(&r);
    graph_attr sw = {.name = "state_window", .type = ATTR_INT, .i = 2};
    CHECK_ERR(kh_call(&r, cpu_causal_conv_with_state, 1, &sw, 1, in, 2, 2), OG_ERR_UNSUPPORTED,
              "state_window=2");
    kh_free(&r);
    graph_attr act = {.name = "activation", .type = ATTR_STRING, .s = {"relu", 4}};
    CHECK_ERR(kh_call(&r, cpu_causal_conv_with_state, 1, &act, 1, in, 2, 2), OG_ERR_INVALID_MODEL,
              "activation 'relu'");
    kh_free(&r);
    int64_t bad[3] = {3, 2, 2};
    tensor tb = kh_tensor(OG_FLOAT32, 3, bad, w);
    const tensor *in2[2] = {&tx, &tb};
    CHECK_ERR(kh_call(&r, cpu_causal_conv_with_state, 1, NULL, 0, in2, 2, 2),
              OG_ERR_INVALID_ARGUMENT, "expected (3, 1, k)");
    kh_free(&r);
    /* a past state of the wrong length names the expected shape */
    float p[2 * 3 * 2] = {0};
    int64_t pd[3] = {2, 3, 2};
    tensor tp = kh_tensor(OG_FLOAT32, 3, pd, p);
    const tensor *in3[4] = {&tx, &tw, NULL, &tp};
    CHECK_ERR(kh_call(&r, cpu_causal_conv_with_state, 1, NULL, 0, in3, 4, 2),
              OG_ERR_INVALID_ARGUMENT, "expected [2,3,1]");
    kh_free(&r);
}

TEST(hybrid_linear_attention_checks) {
    float q[1 * 2 * 8] = {0}, v[1 * 2 * 8] = {0}, g[4] = {0};
    int64_t qd[3] = {1, 2, 8}, gd[3] = {1, 2, 2};
    tensor tq = kh_tensor(OG_FLOAT32, 3, qd, q), tv = kh_tensor(OG_FLOAT32, 3, qd, v);
    tensor tg = kh_tensor(OG_FLOAT32, 3, gd, g);
    graph_attr at[3] = {{.name = "q_num_heads", .type = ATTR_INT, .i = 2},
                        {.name = "kv_num_heads", .type = ATTR_INT, .i = 2},
                        {.name = "update_rule", .type = ATTR_STRING, .s = {"gated_delta", 11}}};
    const tensor *in[5] = {&tq, &tq, &tv, NULL, &tg};
    kh_run r;
    CHECK_ERR(kh_call(&r, cpu_linear_attention, 1, at, 3, in, 5, 2), OG_ERR_INVALID_MODEL,
              "needs input 5 (beta)");
    kh_free(&r);
    at[2].s = (graph_bytes){"retention", 9};
    CHECK_ERR(kh_call(&r, cpu_linear_attention, 1, at, 3, in, 5, 2), OG_ERR_INVALID_MODEL,
              "update_rule 'retention'");
    kh_free(&r);
    at[2].s = (graph_bytes){"gated", 5};
    at[1].i = 3;
    CHECK_ERR(kh_call(&r, cpu_linear_attention, 1, at, 3, in, 5, 2), OG_ERR_INVALID_MODEL,
              "kv_num_heads 3");
    kh_free(&r);
    at[1].i = 2;
    int64_t pd[4] = {1, 2, 4, 3};
    float s[24] = {0};
    tensor tp = kh_tensor(OG_FLOAT32, 4, pd, s);
    const tensor *in2[5] = {&tq, &tq, &tv, &tp, &tg};
    CHECK_ERR(kh_call(&r, cpu_linear_attention, 1, at, 3, in2, 5, 2), OG_ERR_INVALID_ARGUMENT,
              "expected [1,2,4,4]");
    kh_free(&r);
    graph_attr at4[4] = {at[0], at[1], at[2], {.name = "state_window", .type = ATTR_INT, .i = 4}};
    CHECK_ERR(kh_call(&r, cpu_linear_attention, 1, at4, 4, in, 5, 2), OG_ERR_UNSUPPORTED,
              "state_window=4");
    kh_free(&r);
    /* gated with the decay present: runs, and a zero state stays zero under zero inputs */
    CHECK_OK(kh_call(&r, cpu_linear_attention, 1, at, 3, in, 5, 2));
    const float *st = r.out[1].data;
    for (int i = 0; i < 32; i++) CHECK(st[i] == 0.0f);
    kh_free(&r);
}

TEST(hybrid_moe_refusals_name_what_is_wrong) {
    float x[2 * 8] = {0}, r[2 * 4] = {0}, w1[4 * 6 * 8] = {0}, w2[4 * 8 * 6] = {0};
    int64_t xd[2] = {2, 8}, rd[2] = {2, 4}, w1d[3] = {4, 6, 8}, w2d[3] = {4, 8, 6};
    tensor tx = kh_tensor(OG_FLOAT32, 2, xd, x), tr = kh_tensor(OG_FLOAT32, 2, rd, r);
    tensor t1 = kh_tensor(OG_FLOAT32, 3, w1d, w1), t2 = kh_tensor(OG_FLOAT32, 3, w2d, w2);
    const tensor *in[5] = {&tx, &tr, &t1, NULL, &t2};
    kh_run run;
    graph_attr k5 = {.name = "k", .type = ATTR_INT, .i = 5};
    CHECK_ERR(kh_call(&run, cpu_contrib_moe, 1, &k5, 1, in, 5, 1), OG_ERR_INVALID_MODEL,
              "k=5 is not in [1, 4 experts]");
    kh_free(&run);
    graph_attr act = {.name = "activation_type", .type = ATTR_STRING, .s = {"tanh", 4}};
    CHECK_ERR(kh_call(&run, cpu_contrib_moe, 1, &act, 1, in, 5, 1), OG_ERR_INVALID_MODEL,
              "activation_type 'tanh'");
    kh_free(&run);
    graph_attr sw[2] = {{.name = "activation_type", .type = ATTR_STRING, .s = {"swiglu", 6}},
                        {.name = "swiglu_fusion", .type = ATTR_INT, .i = 0}};
    CHECK_ERR(kh_call(&run, cpu_contrib_moe, 1, sw, 2, in, 5, 1), OG_ERR_INVALID_MODEL,
              "needs fc3_experts_weights");
    kh_free(&run);
    /* relu experts of zeros give zeros */
    CHECK_OK(kh_call(&run, cpu_contrib_moe, 1, NULL, 0, in, 5, 1));
    const float *y = run.out[0].data;
    for (int i = 0; i < 16; i++) CHECK(y[i] == 0.0f);
    kh_free(&run);
    /* QMoE: float4 forms and CUDA's prepacked layout are refused */
    graph_attr fp4 = {.name = "quant_type", .type = ATTR_STRING, .s = {"fp4", 3}};
    CHECK_ERR(kh_call(&run, cpu_contrib_qmoe, 1, &fp4, 1, in, 5, 1), OG_ERR_UNSUPPORTED,
              "quant_type 'fp4'");
    kh_free(&run);
    graph_attr pre = {.name = "weights_prepacked", .type = ATTR_INT, .i = 1};
    CHECK_ERR(kh_call(&run, cpu_contrib_qmoe, 1, &pre, 1, in, 5, 1), OG_ERR_UNSUPPORTED,
              "weights_prepacked=1");
    kh_free(&run);
}
