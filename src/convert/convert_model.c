/* The driver of `convert` and the decoder graph in the model builder's layout, as
 * tools/model_maker/transformer.py writes it for llama, qwen2, qwen3, phi3, gemma2 and
 * gemma3 (sandwich norms, GELU, scaled embeddings, sliding layers, soft caps). */
#include "convert/convert_internal.h"

#include "convert/gguf_blocks.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define MS "com.microsoft"

/* ---- the graph ------------------------------------------------------------------- */

typedef struct gb {
    onnx_out *o;
    const cv_model *m;
} gb;

static const char *node1(gb *b, const char *op, const char *dom, const char *name,
                         const char *const *ins, int n_in, const onnx_attr *at, int n_at) {
    const char *out = onnx_fmt(b->o, "%s/output_0", name);
    return onnx_node(b->o, op, dom, name, ins, n_in, &out, 1, at, n_at);
}

static void io(gb *b) {
    const cv_model *m = b->m;
    onnx_out *o = b->o;
    const char *bs_seq[] = {"batch_size", "sequence_length"};
    const char *bs_tot[] = {"batch_size", "total_sequence_length"};
    onnx_io(o, false, "input_ids", OX_INT64, 2, NULL, bs_seq);
    onnx_io(o, false, "attention_mask", OX_INT64, 2, NULL, bs_tot);
    int64_t ld[3] = {0, 0, m->vocab};
    const char *ln[3] = {"batch_size", "sequence_length", NULL};
    onnx_io(o, true, "logits", OX_FLOAT, 3, ld, ln);
    int64_t kd[4] = {0, m->kv_heads, 0, 0};
    const char *past[4] = {"batch_size", NULL, "past_sequence_length", "kv_cache_dim"};
    const char *pres[4] = {"batch_size", NULL, "total_sequence_length", "kv_cache_dim"};
    for (int kv = 0; kv < 2; kv++)
        for (int64_t i = 0; i < m->layers; i++) {
            const char *w = kv ? "value" : "key";
            /* sliding layers keep window-sized buffers (the builder's sliding_window_cache) */
            bool win = cv_sliding(m, i);
            past[2] = win ? "past_sliding_length" : "past_sequence_length";
            pres[2] = win ? "total_sliding_length" : "total_sequence_length";
            onnx_io(o, false, onnx_fmt(o, "past_key_values.%" PRId64 ".%s", i, w), OX_FLOAT, 4,
                    kd, past);
            onnx_io(o, true, onnx_fmt(o, "present.%" PRId64 ".%s", i, w), OX_FLOAT, 4, kd, pres);
        }
}

static void mask_subgraph(gb *b, const char **seqlens, const char **total) {
    onnx_out *o = b->o;
    const char *p = "/model/attn_mask_reformat/attn_mask_subgraph";
    int64_t one_v = 1;
    const char *one = onnx_const_i64(o, &one_v, 1, false);
    const char *in1[] = {"attention_mask", one};
    onnx_attr kd = ATTR_I("keepdims", 0);
    const char *rs = node1(b, "ReduceSum", "", onnx_fmt(o, "%s/ReduceSum", p), in1, 2, &kd, 1);
    const char *in2[] = {rs, one};
    const char *sub = node1(b, "Sub", "", onnx_fmt(o, "%s/Sub", p), in2, 2, NULL, 0);
    onnx_attr to = ATTR_I("to", OX_INT32);
    *seqlens = node1(b, "Cast", "", onnx_fmt(o, "%s/Sub/Cast", p), &sub, 1, &to, 1);
    const char *am = "attention_mask";
    const char *shp = node1(b, "Shape", "", onnx_fmt(o, "%s/Shape", p), &am, 1, NULL, 0);
    const char *in3[] = {shp, onnx_const_i64(o, &one_v, 1, true)};
    onnx_attr ax = ATTR_I("axis", 0);
    const char *gat = node1(b, "Gather", "", onnx_fmt(o, "%s/Gather", p), in3, 2, &ax, 1);
    *total = node1(b, "Cast", "", onnx_fmt(o, "%s/Gather/Cast", p), &gat, 1, &to, 1);
}

/* cos/sin [context, head_dim/2]: the rotation of pair j at position t is t * inv_freq[j],
 * inv_freq as the model builder computes it (float64 powers rounded to float32, then
 * float32 products), with llama.cpp's linear scaling and per-pair factors (rope_freqs). */
/* `suffix` "" or "_local" / "_global" (Gemma 3's two bases); local caches take neither
 * scaling nor factors, as the builder's. */
static og_status *rope_caches(gb *b, const char *suffix, double theta, bool scaled,
                              const char **cos_name, const char **sin_name) {
    const cv_model *m = b->m;
    int64_t half = m->head_dim / 2;
    float *inv = malloc((size_t)half * sizeof *inv);
    float *row = malloc((size_t)half * sizeof *row);
    og_status *st = NULL;
    if (!inv || !row) {
        st = og_oom();
        goto done;
    }
    /* Phi-3's LongRoPE (two cache sets switched on the sequence length, an If in the
     * builder's graph) is not written here */
    static const char *const longrope[] = {"rope_factors_long.weight", "rope_factors_short.weight"};
    for (int i = 0; i < 2; i++)
        if (gguf_tensor_find(m->g, longrope[i])) {
            st = og_errorf(OG_ERR_UNSUPPORTED, "%s: tensor '%s': LongRoPE scaling is not "
                           "converted", m->path, longrope[i]);
            goto done;
        }
    const gguf_tensor *ff = scaled ? gguf_tensor_find(m->g, "rope_freqs.weight") : NULL;
    if (ff && (ff->type != GGML_F32 || ff->n_dims != 1 || (int64_t)ff->ne[0] != half)) {
        st = og_errorf(OG_ERR_INVALID_MODEL, "%s: tensor 'rope_freqs.weight' must be F32 [%"
                       PRId64 "]", m->path, half);
        goto done;
    }
    for (int64_t j = 0; j < half; j++) {
        double f = 1.0 / pow(theta, (double)(2 * j) / (double)m->head_dim);
        if (m->rope_linear && scaled) f /= m->rope_linear;
        if (ff) {
            float factor;
            memcpy(&factor, ff->data + 4 * j, 4);
            f /= factor;
        }
        inv[j] = (float)f;
    }
    int64_t dims[2] = {m->context, half};
    for (int which = 0; which < 2; which++) {
        onnx_init_begin(b->o, onnx_fmt(b->o, "%s_cache%s", which ? "sin" : "cos", suffix), OX_FLOAT,
                        dims, 2);
        for (int64_t t = 0; t < m->context; t++) {
            for (int64_t j = 0; j < half; j++) {
                float a = (float)t * inv[j];
                row[j] = (float)(which ? sin((double)a) : cos((double)a));
            }
            onnx_init_write(b->o, row, (size_t)half * 4);
        }
        *(which ? sin_name : cos_name) = onnx_init_end(b->o);
    }
done:
    free(inv);
    free(row);
    return st;
}

static og_status *vec_init(gb *b, const char *tensor, const char *init, int64_t n,
                           const char **name) {
    const gguf_tensor *t;
    OG_TRY(cv_tensor(b->m, tensor, 0, n, &t));
    OG_TRY(cv_float_init(b->o, b->m, init, t, &n, 1));
    *name = init;
    return NULL;
}

static og_status *plain_norm(gb *b, const char *base, const char *x, const char *tensor,
                             const char *prefix, const char **out) {
    const char *w;
    OG_TRY(vec_init(b, tensor, onnx_fmt(b->o, "%s.weight", prefix), b->m->hidden, &w));
    const char *ins[] = {x, w};
    onnx_attr at[] = {ATTR_F("epsilon", b->m->eps), ATTR_I("axis", -1), ATTR_I("stash_type", 1)};
    *out = node1(b, "SimplifiedLayerNormalization", "", onnx_fmt(b->o, "%s/LayerNorm", base),
                 ins, 2, at, 3);
    return NULL;
}

static og_status *skip_norm(gb *b, const char *base, const char *res, const char *skip,
                            const char *tensor, const char *prefix, bool final,
                            const char **out, const char **res_out) {
    onnx_out *o = b->o;
    const char *w;
    OG_TRY(vec_init(b, tensor, onnx_fmt(o, "%s.weight", prefix), b->m->hidden, &w));
    const char *ins[] = {res, skip, w};
    const char *outs[4] = {onnx_fmt(o, "%s/output_0", base), "", "",
                           onnx_fmt(o, "%s/output_3", base)};
    onnx_attr eps = ATTR_F("epsilon", b->m->eps);
    onnx_node(o, "SkipSimplifiedLayerNormalization", MS, onnx_fmt(o, "%s/SkipLayerNorm", base),
              ins, 3, outs, final ? 1 : 4, &eps, 1);
    *out = outs[0];
    if (res_out) *res_out = outs[3];
    return NULL;
}

/* Per-head RMS norm of a packed [B, S, width] tensor (Qwen3's q_norm / k_norm). */
static og_status *head_norm(gb *b, const char *base, const char *x, const char *tensor,
                            const char *init, int64_t width, const char **out) {
    onnx_out *o = b->o;
    int64_t s1[3] = {0, -1, b->m->head_dim}, s2[3] = {0, -1, width};
    const char *in1[] = {x, onnx_const_i64(o, s1, 3, false)};
    const char *r1 = node1(b, "Reshape", "", onnx_fmt(o, "%s/Reshape_1", base), in1, 2, NULL, 0);
    const char *w;
    OG_TRY(vec_init(b, tensor, init, b->m->head_dim, &w));
    const char *in2[] = {r1, w};
    onnx_attr at[] = {ATTR_F("epsilon", b->m->eps), ATTR_I("axis", -1), ATTR_I("stash_type", 1)};
    const char *ln = node1(b, "SimplifiedLayerNormalization", "",
                           onnx_fmt(o, "%s/SimplifiedLayerNormalization", base), in2, 2, at, 3);
    const char *in3[] = {ln, onnx_const_i64(o, s2, 3, false)};
    *out = node1(b, "Reshape", "", onnx_fmt(o, "%s/Reshape_2", base), in3, 2, NULL, 0);
    return NULL;
}

static const char *tname(gb *b, int64_t i, const char *what) {
    return onnx_fmt(b->o, "blk.%" PRId64 ".%s", i, what);
}

/* The biases of q, k, v from `first`, `count` of them back to back, as one float
 * initializer (no architecture with biases has permuted q/k rows: see archs). */
static og_status *bias_init(gb *b, int64_t i, int first, int count, const char *name) {
    const cv_model *m = b->m;
    static const char *const bn[3] = {"attn_q.bias", "attn_k.bias", "attn_v.bias"};
    int64_t rows[3] = {m->heads * m->head_dim, m->kv_heads * m->head_dim,
                       m->kv_heads * m->head_dim};
    int64_t n = 0;
    for (int j = first; j < first + count; j++) n += rows[j];
    float *row = malloc((size_t)rows[0] * sizeof *row);
    if (!row) return og_oom();
    onnx_init_begin(b->o, name, OX_FLOAT, &n, 1);
    og_status *st = NULL;
    for (int j = first; j < first + count && !st; j++) {
        const gguf_tensor *t;
        st = cv_tensor(m, tname(b, i, bn[j]), 0, rows[j], &t);
        if (!st && t->type != GGML_F32 && t->type != GGML_F16 && t->type != GGML_BF16)
            st = og_errorf(OG_ERR_UNSUPPORTED, "%s: tensor '%s' is %s, expected a float type",
                           m->path, t->name, gguf_type_name(t->type));
        if (!st) st = cv_dequant_row(m, t, 0, row);
        if (!st) onnx_init_write(b->o, row, (size_t)rows[j] * 4);
    }
    free(row);
    if (!st) onnx_init_end(b->o);
    return st;
}

static og_status *attention(gb *b, int64_t i, const char *h, const char *seqlens,
                            const char *total, const char *cos, const char *sin,
                            const char **out) {
    const cv_model *m = b->m;
    onnx_out *o = b->o;
    const char *p = onnx_fmt(o, "/model/layers.%" PRId64 "/attn", i);
    int64_t qw = m->heads * m->head_dim, kvw = m->kv_heads * m->head_dim;
    cv_src src[3] = {{0}};
    const char *names[3] = {"attn_q.weight", "attn_k.weight", "attn_v.weight"};
    int64_t rows[3] = {qw, kvw, kvw}, heads[3] = {m->heads, m->kv_heads, 0};
    for (int j = 0; j < 3; j++) {
        if (m->fused_qkv) { /* Phi-3 keeps [q; k; v] in one tensor, row ranges of it */
            OG_TRY(cv_tensor(m, tname(b, i, "attn_qkv.weight"), qw + 2 * kvw, m->hidden, &src[j].t));
            src[j].row0 = j ? qw + (j - 1) * kvw : 0;
        } else {
            OG_TRY(cv_tensor(m, tname(b, i, names[j]), rows[j], m->hidden, &src[j].t));
        }
        src[j].rows = rows[j];
        src[j].unpermute_heads = m->unpermute_qk ? heads[j] : 0;
    }
    /* one qkv_proj as the builder writes it; three projections where llama.cpp's
     * quantization mixes gave q, k and v different types (a fused MatMulNBits has one) */
    bool fused = cv_same_type(src, 3);
    const char *parts[3], *proj[3] = {"q_proj", "k_proj", "v_proj"};
    for (int j = 0; j < (fused ? 1 : 3); j++) {
        const char *base = onnx_fmt(o, "%s/%s", p, fused ? "qkv_proj" : proj[j]);
        OG_TRY(cv_matmul(o, m, onnx_fmt(o, "%s/MatMul", base), h, src + j, fused ? 3 : 1,
                         m->hidden, NULL, &parts[j]));
        if (m->qkv_bias) {
            const char *bname = onnx_fmt(o, "%s.Add.bias", base + 1);
            for (char *c = (char *)bname; *c; c++)
                if (*c == '/') *c = '.';
            OG_TRY(bias_init(b, i, j, fused ? 3 : 1, bname));
            const char *ins[] = {parts[j], bname};
            parts[j] = node1(b, "Add", "", onnx_fmt(o, "%s/Add", base), ins, 2, NULL, 0);
        }
    }
    if (fused && m->qk_norm) {
        const char *sp = onnx_fmt(o, "%s/qkv_proj/Split", p);
        int64_t split[3] = {qw, kvw, kvw};
        const char *ins[] = {parts[0], onnx_const_i64(o, split, 3, false)};
        const char *outs[3] = {onnx_fmt(o, "%s/output_0", sp), onnx_fmt(o, "%s/output_1", sp),
                               onnx_fmt(o, "%s/output_2", sp)};
        onnx_attr ax = ATTR_I("axis", -1);
        onnx_node(o, "Split", "", sp, ins, 2, outs, 3, &ax, 1);
        for (int j = 0; j < 3; j++) parts[j] = outs[j];
    }
    const char *q = parts[0], *k = "", *v = "";
    if (!fused || m->qk_norm) {
        k = parts[1];
        v = parts[2];
    }
    if (m->qk_norm) {
        OG_TRY(head_norm(b, onnx_fmt(o, "%s/q_norm", p), q, tname(b, i, "attn_q_norm.weight"),
                         onnx_fmt(o, "model.layers.%" PRId64 ".attn.q_norm.layernorm.weight", i),
                         qw, &q));
        OG_TRY(head_norm(b, onnx_fmt(o, "%s/k_norm", p), k, tname(b, i, "attn_k_norm.weight"),
                         onnx_fmt(o, "model.layers.%" PRId64 ".attn.k_norm.layernorm.weight", i),
                         kvw, &k));
    }
    const char *an = onnx_fmt(o, "%s/GroupQueryAttention", p);
    const char *ins[] = {q, k, v,
                         onnx_fmt(o, "past_key_values.%" PRId64 ".key", i),
                         onnx_fmt(o, "past_key_values.%" PRId64 ".value", i),
                         seqlens, total, cos, sin, "", "", ""};
    const char *outs[] = {onnx_fmt(o, "%s/output_0", an), onnx_fmt(o, "present.%" PRId64 ".key", i),
                          onnx_fmt(o, "present.%" PRId64 ".value", i)};
    bool win = cv_sliding(m, i);
    onnx_attr at[] = {ATTR_I("num_heads", m->heads), ATTR_I("kv_num_heads", m->kv_heads),
                      ATTR_F("scale", 1.0 / sqrt((double)m->head_dim)),
                      ATTR_I("local_window_size", win ? m->window : -1),
                      ATTR_F("softcap", m->softcap), ATTR_I("do_rotary", 1),
                      ATTR_I("rotary_interleaved", 0), ATTR_I("sliding_window_cache", 1)};
    /* the three absent inputs after sin_cache (position_ids, attention_bias, sinks) are
     * written as the builder writes them */
    const char *att = onnx_node(o, "GroupQueryAttention", MS, an, ins, 12, outs, 3, at,
                                win ? 8 : 7);
    const gguf_tensor *wo;
    OG_TRY(cv_tensor(m, tname(b, i, "attn_output.weight"), m->hidden, qw, &wo));
    cv_src s = {wo, m->hidden, 0};
    return cv_matmul(o, m, onnx_fmt(o, "%s/o_proj/MatMul", p), att, &s, 1, qw, NULL, out);
}

static og_status *mlp(gb *b, int64_t i, const char *h, const char **out) {
    const cv_model *m = b->m;
    onnx_out *o = b->o;
    if (m->moe && gguf_tensor_find(m->g, tname(b, i, "ffn_gate_inp.weight")))
        return cv_moe(o, m, i, h, out);
    const char *p = onnx_fmt(o, "/model/layers.%" PRId64 "/mlp", i);
    cv_src g = {0}, u = {0}, d = {0};
    if (m->fused_gate_up) { /* Phi-3's ffn_up is [gate; up] */
        OG_TRY(cv_tensor(m, tname(b, i, "ffn_up.weight"), 2 * m->inter, m->hidden, &g.t));
        u.t = g.t;
        u.row0 = m->inter;
    } else {
        OG_TRY(cv_tensor(m, tname(b, i, "ffn_gate.weight"), m->inter, m->hidden, &g.t));
        OG_TRY(cv_tensor(m, tname(b, i, "ffn_up.weight"), m->inter, m->hidden, &u.t));
    }
    OG_TRY(cv_tensor(m, tname(b, i, "ffn_down.weight"), m->hidden, m->inter, &d.t));
    g.rows = u.rows = m->inter;
    d.rows = m->hidden;
    const char *gate, *up;
    OG_TRY(cv_matmul(o, m, onnx_fmt(o, "%s/gate_proj/MatMul", p), h, &g, 1, m->hidden, NULL,
                     &gate));
    OG_TRY(cv_matmul(o, m, onnx_fmt(o, "%s/up_proj/MatMul", p), h, &u, 1, m->hidden, NULL, &up));
    const char *act;
    if (m->gelu) {
        onnx_attr tanh_approx = ATTR_S("approximate", "tanh");
        act = node1(b, "Gelu", "", onnx_fmt(o, "%s/act_fn/FastGelu", p), &gate, 1, &tanh_approx, 1);
    } else {
        const char *sg = node1(b, "Sigmoid", "", onnx_fmt(o, "%s/act_fn/Sigmoid", p), &gate, 1,
                               NULL, 0);
        const char *in1[] = {gate, sg};
        act = node1(b, "Mul", "", onnx_fmt(o, "%s/act_fn/Mul", p), in1, 2, NULL, 0);
    }
    const char *in2[] = {act, up};
    const char *mul = node1(b, "Mul", "", onnx_fmt(o, "%s/Mul", p), in2, 2, NULL, 0);
    return cv_matmul(o, m, onnx_fmt(o, "%s/down_proj/MatMul", p), mul, &d, 1, m->inter, NULL,
                     out);
}

/* The embedding rows read from symmetric blocks as they are (the builder's
 * shared_embeddings form): Reshape to [vocab, hidden * bits / 8] bytes, then
 * GatherBlockQuantized with the blocks' scales and (Q5_0, Q6_K) uint8 zero points. */
static const char *gather_blocks(gb *b, const cv_written *w) {
    onnx_out *o = b->o;
    int64_t shape[2] = {w->n, w->k * w->bits / 8};
    const char *rin[] = {w->names[0], onnx_const_i64(o, shape, 2, false)};
    const char *r = node1(b, "Reshape", "", "/model/embed_tokens/Reshape", rin, 2, NULL, 0);
    const char *gin[] = {r, "input_ids", w->names[1], w->names[2]};
    onnx_attr at[] = {ATTR_I("bits", w->bits), ATTR_I("block_size", w->block),
                      ATTR_I("gather_axis", 0), ATTR_I("quantize_axis", 1)};
    return node1(b, "GatherBlockQuantized", MS, "/model/embed_tokens/GatherBlockQuantized", gin,
                 w->zp == CV_ZP_U8 ? 4 : 3, at, 4);
}

/* Python's repr() of a float (the shortest text that reads back as the same double,
 * with ".0" on whole numbers): how the builder spells float constants in their names. */
static const char *py_repr(double v, char *buf) {
    for (int prec = 1; prec <= 17; prec++) {
        snprintf(buf, 40, "%.*g", prec, v);
        if (strtod(buf, NULL) == v) break;
    }
    if (!strpbrk(buf, ".eni")) strcat(buf, ".0");
    return buf;
}

static void progress(const convert_options *opt, int64_t done, int64_t total) {
    if (!opt->progress) return;
    int width = 30, fill = (int)(done * width / (total ? total : 1));
    fprintf(stderr, "\rconvert: [%.*s%*s] %" PRId64 "/%" PRId64 " layers", fill,
            "##############################", width - fill, "", done, total);
    if (done == total) fputc('\n', stderr);
}

static og_status *build(gb *b, const convert_options *opt) {
    const cv_model *m = b->m;
    onnx_out *o = b->o;
    io(b);
    const char *seqlens, *total, *cos_c = NULL, *sin_c = NULL;
    mask_subgraph(b, &seqlens, &total);
    const gguf_tensor *emb;
    OG_TRY(cv_tensor(m, "token_embd.weight", m->vocab, m->hidden, &emb));
    /* tied models (no output.weight) read the embedding table as their lm_head: written
     * first, as the builder does, so that a block-quantized table serves both */
    const gguf_tensor *head = gguf_tensor_find(m->g, "output.weight");
    if (head) OG_TRY(cv_tensor(m, "output.weight", m->vocab, m->hidden, &head));
    cv_src hs = {head ? head : emb, m->vocab, 0};
    cv_written lm;
    if (!head) OG_TRY(cv_weight(o, m, "/lm_head/MatMul", &hs, 1, m->hidden, &lm));
    const char *res;
    const gq_format *ef = gq_format_of(emb->type);
    if (ef && !ef->affine) {
        cv_written ew = lm;
        cv_src es = {emb, m->vocab, 0};
        if (head) OG_TRY(cv_weight(o, m, "/model/embed_tokens", &es, 1, m->hidden, &ew));
        res = gather_blocks(b, &ew);
    } else {
        int64_t ed[2] = {m->vocab, m->hidden};
        OG_TRY(cv_float_init(o, m, "model.embed_tokens.weight", emb, ed, 2));
        const char *gin[] = {"model.embed_tokens.weight", "input_ids"};
        res = node1(b, "Gather", "", "/model/embed_tokens/Gather", gin, 2, NULL, 0);
    }
    if (m->emb_scale) {
        char text[40];
        const char *in[] = {res, onnx_const_f32(o, m->emb_scale, py_repr(m->emb_scale, text))};
        res = node1(b, "Mul", "", "/model/embed_tokens/Mul", in, 2, NULL, 0);
    }
    /* Gemma 3's sliding layers rotate with a base of their own: two sets of caches */
    const char *cos_l = NULL, *sin_l = NULL;
    if (m->local_theta) {
        OG_TRY(rope_caches(b, "_local", m->local_theta, false, &cos_l, &sin_l));
        OG_TRY(rope_caches(b, "_global", m->theta, true, &cos_c, &sin_c));
    } else {
        OG_TRY(rope_caches(b, "", m->theta, true, &cos_c, &sin_c));
    }
    const char *skip = NULL, *h;
    for (int64_t i = 0; i < m->layers; i++) {
        progress(opt, i, m->layers);
        const char *base = onnx_fmt(o, "/model/layers.%" PRId64, i);
        if (i == 0)
            OG_TRY(plain_norm(b, onnx_fmt(o, "%s/input_layernorm", base), res,
                              tname(b, 0, "attn_norm.weight"),
                              "model.layers.0.input_layernorm", &h));
        else
            OG_TRY(skip_norm(b, onnx_fmt(o, "%s/input_layernorm", base), res, skip,
                             tname(b, i, "attn_norm.weight"),
                             onnx_fmt(o, "model.layers.%" PRId64 ".input_layernorm", i), false,
                             &h, &res));
        const char *att;
        bool local = m->local_theta && cv_sliding(m, i);
        OG_TRY(attention(b, i, h, seqlens, total, local ? cos_l : cos_c, local ? sin_l : sin_c,
                         &att));
        if (m->sandwich) { /* Gemma: a norm after attention, and after the MLP */
            OG_TRY(plain_norm(b, onnx_fmt(o, "%s/post_attention_layernorm", base), att,
                              tname(b, i, "post_attention_norm.weight"),
                              onnx_fmt(o, "model.layers.%" PRId64 ".post_attention_layernorm", i),
                              &att));
            OG_TRY(skip_norm(b, onnx_fmt(o, "%s/pre_feedforward_layernorm", base), res, att,
                             tname(b, i, "ffn_norm.weight"),
                             onnx_fmt(o, "model.layers.%" PRId64 ".pre_feedforward_layernorm", i),
                             false, &h, &res));
            const char *mo;
            OG_TRY(mlp(b, i, h, &mo));
            OG_TRY(plain_norm(b, onnx_fmt(o, "%s/post_feedforward_layernorm", base), mo,
                              tname(b, i, "post_ffw_norm.weight"),
                              onnx_fmt(o, "model.layers.%" PRId64 ".post_feedforward_layernorm", i),
                              &skip));
            continue;
        }
        OG_TRY(skip_norm(b, onnx_fmt(o, "%s/post_attention_layernorm", base), res, att,
                         tname(b, i, "ffn_norm.weight"),
                         onnx_fmt(o, "model.layers.%" PRId64 ".post_attention_layernorm", i),
                         false, &h, &res));
        OG_TRY(mlp(b, i, h, &skip));
    }
    progress(opt, m->layers, m->layers);
    const char *fb = onnx_fmt(o, "/model/layers.%" PRId64 "/final_norm_layernorm", m->layers);
    OG_TRY(skip_norm(b, fb, res, skip, "output_norm.weight",
                     onnx_fmt(o, "model.layers.%" PRId64 ".final_norm_layernorm", m->layers), true,
                     &h, NULL));
    if (head) OG_TRY(cv_weight(o, m, "/lm_head/MatMul", &hs, 1, m->hidden, &lm));
    if (!m->final_softcap) {
        cv_matmul_node(o, "/lm_head/MatMul", h, &lm, "logits");
        return NULL;
    }
    /* Gemma 2: logits = c * tanh(logits / c) */
    const char *x = cv_matmul_node(o, "/lm_head/MatMul", h, &lm, NULL);
    char text[40];
    const char *c = onnx_const_f32(o, (float)m->final_softcap, py_repr(m->final_softcap, text));
    const char *din[] = {x, c};
    const char *d = node1(b, "Div", "", "/lm_head/softcap/Div", din, 2, NULL, 0);
    const char *t = node1(b, "Tanh", "", "/lm_head/softcap/Tanh", &d, 1, NULL, 0);
    const char *min[] = {t, c}, *logits = "logits";
    onnx_node(o, "Mul", "", "/lm_head/softcap/Mul", min, 2, &logits, 1, NULL, 0);
    return NULL;
}

og_status *convert_gguf(const char *gguf_path, const char *out_dir,
                        const convert_options *opt) {
    gguf_file g;
    OG_TRY(gguf_open(gguf_path, &g));
    cv_model m = {.g = &g, .path = gguf_path};
    og_status *st = cv_read_shape(&m, opt);
    if (!st && mkdir(out_dir, 0777) != 0 && errno != EEXIST)
        st = og_errorf(OG_ERR_IO, "%s: cannot create: %s", out_dir, strerror(errno));
    onnx_out o;
    if (!st) st = onnx_out_open(&o, out_dir, "model.onnx");
    if (!st) {
        gb b = {&o, &m};
        st = build(&b, opt);
        if (st) onnx_out_abort(&o);
        else st = onnx_out_finish(&o, "onnx-genai convert");
    }
    if (!st) st = cv_write_genai_config(&m, out_dir);
    if (!st) st = cv_write_tokenizer(&m, out_dir);
    gguf_close(&g);
    return st;
}
