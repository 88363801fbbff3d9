/* Qwen3-MoE's mixture of experts, as tools/model_maker/transformer.py writes MoE layers
 * (the builder's form): router MatMul -> Reshape [-1, E] -> com.microsoft MoE (float
 * experts) or QMoE (block-quantized experts), SwiGLU experts with swiglu_fusion 1.
 *
 * GGUF keeps each layer's experts as three 3-D tensors: ffn_gate_exps and ffn_up_exps
 * [E, F, H] and ffn_down_exps [E, H, F] (rows of K values, as MatMulNBits' rows). MoE's
 * fc1 is [E, 2F, H] with each gate row followed by its up row (swiglu_fusion 1: the pair
 * (gate, linear) interleaved), fc2 is ffn_down_exps as it is. Routing as llama.cpp runs
 * qwen3moe and Hugging Face's Qwen3-MoE (norm_topk_prob): softmax over the router's
 * logits, the top expert_used_count, their weights divided by their sum
 * (normalize_routing_weights 1); the experts' SiLU is swiglu with alpha 1, beta 0.
 *
 * Q4_0 experts become QMoE's 4-bit blocks of 32 with the file's scales (the op's
 * default zero point 8): llama.cpp's values exactly. Every other type becomes float32
 * MoE weights, dequantized exactly: QMoE takes no float zero points (Q4_1, Q4_K), runs
 * blocks of 32 or more only, and onnxruntime 1.31's CPU kernel computes 8-bit blocks
 * with int8-quantized activations (measured: 1.4% off float32 on random data, 0.0115
 * apart in the first logits of a tiny model), which our QMoE, in float32, does not:
 * Q8_0 experts as QMoE would give two runtimes two answers. */
#include "convert/convert_internal.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#define MS "com.microsoft"

/* Layer i's experts tensor `what`, checked to be [E, rows, cols] (GGUF order reversed). */
static og_status *experts_tensor(const cv_model *m, int64_t i, const char *what, int64_t rows,
                                 int64_t cols, const gguf_tensor **out) {
    char name[96];
    snprintf(name, sizeof name, "blk.%" PRId64 ".%s", i, what);
    const gguf_tensor *t = gguf_tensor_find(m->g, name);
    if (!t) return og_errorf(OG_ERR_INVALID_MODEL, "%s: tensor '%s' is missing", m->path, name);
    if (t->n_dims != 3 || (int64_t)t->ne[0] != cols || (int64_t)t->ne[1] != rows ||
        (int64_t)t->ne[2] != m->experts)
        return og_errorf(OG_ERR_INVALID_MODEL,
                         "%s: tensor '%s' has shape [%" PRIu64 ", %" PRIu64 ", %" PRIu64 "] "
                         "(%u dims), expected [%" PRId64 ", %" PRId64 ", %" PRId64 "] (GGUF "
                         "order: columns first)",
                         m->path, name, t->ne[0], t->ne[1], t->ne[2], t->n_dims, cols, rows,
                         m->experts);
    *out = t;
    return NULL;
}

/* The block format QMoE takes the experts in, or NULL for float32. */
static const gq_format *qmoe_format(const gguf_tensor *const *t, int n) {
    for (int i = 1; i < n; i++)
        if (t[i]->type != t[0]->type) return NULL;
    if (t[0]->type != GGML_Q4_0) return NULL;
    return gq_format_of(t[0]->type);
}

/* One expert initializer (values, scales or float rows): fc1's rows interleaved from
 * gate and up, or down's as they are. Its dims: [E, N, last]. */
static og_status *experts_init(onnx_out *o, const cv_model *m, const char *name, int dtype,
                               const gguf_tensor *gate, const gguf_tensor *up,
                               const gguf_tensor *down, const gq_format *f, int what,
                               const char **written) {
    bool fc1 = gate != NULL;
    int64_t n = fc1 ? 2 * m->expert_inter : m->hidden, k = fc1 ? m->hidden : m->expert_inter;
    int64_t last = !f ? k : what ? k / f->sub : k / f->sub * (f->bits <= 4 ? f->sub / 2 : f->sub);
    /* fc1: one source a row (gate row j, then up row j); fc2: one a expert */
    int64_t n_src = fc1 ? m->experts * n : m->experts;
    if (n_src > (int64_t)1 << 30) return og_errorf(OG_ERR_UNSUPPORTED, "%s: too many experts", m->path);
    cv_src *src = calloc((size_t)n_src, sizeof *src);
    if (!src) return og_oom_for((size_t)n_src * sizeof *src, "the rows of %s", name);
    for (int64_t e = 0, s = 0; e < m->experts; e++) {
        if (!fc1) {
            src[s++] = (cv_src){down, m->hidden, 0, e * m->hidden};
            continue;
        }
        for (int64_t j = 0; j < m->expert_inter; j++) {
            src[s++] = (cv_src){gate, 1, 0, e * m->expert_inter + j};
            src[s++] = (cv_src){up, 1, 0, e * m->expert_inter + j};
        }
    }
    int64_t dims[3] = {m->experts, n, last};
    onnx_init_begin(o, name, dtype, dims, 3);
    og_status *st = cv_write_rows(o, m, f, src, (int)n_src, k, what);
    free(src);
    if (st) return st;
    *written = onnx_init_end(o);
    return NULL;
}

og_status *cv_moe(onnx_out *o, const cv_model *m, int64_t i, const char *h, const char **out) {
    const char *b = onnx_fmt(o, "/model/layers.%" PRId64 "/moe", i);
    const char *p = onnx_fmt(o, "model.layers.%" PRId64 ".moe.experts", i);
    const int64_t E = m->experts, H = m->hidden, F = m->expert_inter;
    cv_src rs = {0};
    char name[96];
    snprintf(name, sizeof name, "blk.%" PRId64 ".ffn_gate_inp.weight", i);
    OG_TRY(cv_tensor(m, name, E, H, &rs.t));
    rs.rows = E;
    const char *r;
    OG_TRY(cv_matmul(o, m, onnx_fmt(o, "%s/router/MatMul", b), h, &rs, 1, H, NULL, &r));
    int64_t shape[2] = {-1, E};
    const char *rin[] = {r, onnx_const_i64(o, shape, 2, false)};
    const char *rout = onnx_fmt(o, "%s/router/Reshape/output_0", b);
    r = onnx_node(o, "Reshape", "", onnx_fmt(o, "%s/router/Reshape", b), rin, 2, &rout, 1, NULL, 0);
    const gguf_tensor *t[3];
    OG_TRY(experts_tensor(m, i, "ffn_gate_exps.weight", F, H, &t[0]));
    OG_TRY(experts_tensor(m, i, "ffn_up_exps.weight", F, H, &t[1]));
    OG_TRY(experts_tensor(m, i, "ffn_down_exps.weight", H, F, &t[2]));
    const gq_format *f = qmoe_format(t, 3);
    if (f && (H % f->sub || F % f->sub)) f = NULL;
    onnx_attr at[9] = {ATTR_F("activation_alpha", 1.0), ATTR_F("activation_beta", 0.0),
                       ATTR_S("activation_type", "swiglu"), ATTR_I("k", m->top_k),
                       ATTR_I("normalize_routing_weights", 1), ATTR_I("swiglu_fusion", 1),
                       ATTR_I("use_sparse_mixer", 0)};
    const char *w1, *w2, *s1 = NULL, *s2 = NULL;
    if (!f) {
        OG_TRY(experts_init(o, m, onnx_fmt(o, "%s.gate_up_proj.weight", p), OX_FLOAT, t[0], t[1],
                            NULL, NULL, 0, &w1));
        OG_TRY(experts_init(o, m, onnx_fmt(o, "%s.down_proj.weight", p), OX_FLOAT, NULL, NULL,
                            t[2], NULL, 0, &w2));
        const char *ins[] = {h, r, w1, "", w2, "", "", ""};
        const char *mo = onnx_fmt(o, "%s/MoE/output_0", b);
        *out = onnx_node(o, "MoE", MS, onnx_fmt(o, "%s/MoE", b), ins, 8, &mo, 1, at, 7);
        return NULL;
    }
    OG_TRY(experts_init(o, m, onnx_fmt(o, "%s.gate_up_proj.qweight", p), OX_UINT8, t[0], t[1],
                        NULL, f, 0, &w1));
    OG_TRY(experts_init(o, m, onnx_fmt(o, "%s.gate_up_proj.scales", p), OX_FLOAT, t[0], t[1],
                        NULL, f, 1, &s1));
    OG_TRY(experts_init(o, m, onnx_fmt(o, "%s.down_proj.qweight", p), OX_UINT8, NULL, NULL, t[2],
                        f, 0, &w2));
    OG_TRY(experts_init(o, m, onnx_fmt(o, "%s.down_proj.scales", p), OX_FLOAT, NULL, NULL, t[2],
                        f, 1, &s2));
    at[7] = ATTR_I("expert_weight_bits", f->bits <= 4 ? 4 : 8);
    at[8] = ATTR_I("block_size", f->sub);
    const char *ins[] = {h, r, w1, s1, "", w2, s2, "", "", "", "", "", "", ""};
    const char *mo = onnx_fmt(o, "%s/QMoE/output_0", b);
    *out = onnx_node(o, "QMoE", MS, onnx_fmt(o, "%s/QMoE", b), ins, 14, &mo, 1, at, 9);
    return NULL;
}
