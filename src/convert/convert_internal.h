/* What the parts of `convert` share: the source file, the model's shape as the GGUF
 * metadata gives it, and the ONNX model being written. */
#ifndef OG_CONVERT_INTERNAL_H
#define OG_CONVERT_INTERNAL_H

#include "convert/convert.h"
#include "convert/gguf.h"
#include "convert/gguf_blocks.h"
#include "convert/onnx_out.h"

#include <cjson/cJSON.h>

enum { CV_MAX_LAYERS = 4096 };

typedef struct cv_model {
    const gguf_file *g;
    const char *path;
    char arch[32];       /* general.architecture */
    const char *type;    /* genai model.type */
    int64_t layers, hidden, inter, heads, kv_heads, head_dim, rot_dim, vocab, context;
    double eps, theta, rope_linear; /* rope_linear: 0, or the linear scaling factor */
    bool qkv_bias, qk_norm;
    bool fused_qkv, fused_gate_up; /* Phi-3: attn_qkv, and ffn_up = [gate; up] */
    bool moe;            /* Qwen3-MoE: layers with ffn_gate_inp route over experts */
    int64_t experts, top_k, expert_inter;
    int gemma;           /* 2, 3: Gemma's layout (below), else 0 */
    bool sandwich, gelu; /* norms after attention and MLP too; GELU (tanh) MLP */
    float emb_scale;     /* embeddings * this, 0: none */
    int64_t window;      /* sliding layers' window (0: none) */
    bool swa[CV_MAX_LAYERS]; /* which layers slide */
    double softcap, final_softcap, local_theta; /* 0: none / the global base */
    bool unpermute_qk;   /* llama-family GGUFs store q/k rows in interleaved-rotary order */
    int64_t bos, eos, pad;
    int64_t stop[3];     /* eos, then end-of-turn / end-of-message ids that differ from it */
    int n_stop;
} cv_model;

/* The named tensor, or an error naming it (and the file) when it is absent or its shape
 * is not [rows, cols] (GGUF order: ne[0] = cols). rows 0: a vector of cols. */
og_status *cv_tensor(const cv_model *m, const char *name, int64_t rows, int64_t cols,
                     const gguf_tensor **out);

/* A MatMul weight of rows from up to three tensors stacked along N (q, k, v): `rows`
 * rows of t from row `row0` (Phi-3's ffn_up holds gate and up one after the other). */
typedef struct cv_src {
    const gguf_tensor *t;
    int64_t rows;
    int64_t unpermute_heads; /* >0: undo llama.cpp's q/k row permutation for these heads */
    int64_t row0;
} cv_src;

/* A projection's initializers as written: float [K, N] (bits 0, names[0]) or MatMulNBits
 * values [N, K/block, block*bits/8], scales and zero points (names[0..2]; none when the
 * format's zero point is the op's default 2^(bits-1), else uint8 or float). */
enum { CV_ZP_DEFAULT, CV_ZP_U8, CV_ZP_FLOAT };
typedef struct cv_written {
    int64_t n, k;
    int bits, block, zp;
    const char *names[3];
} cv_written;

/* Whether the sources share one tensor type (a fused projection needs it). */
bool cv_same_type(const cv_src *src, int n_src);
/* The initializers of the projection at node path base (their names follow it). */
og_status *cv_weight(onnx_out *o, const cv_model *m, const char *base, const cv_src *src,
                     int n_src, int64_t k, cv_written *w);
/* Its MatMul or MatMulNBits node (out NULL: base/output_0); returns the output. */
const char *cv_matmul_node(onnx_out *o, const char *base, const char *x, const cv_written *w,
                           const char *out);

/* Writes the projection at node path base (e.g. /model/layers.0/attn/qkv_proj/MatMul):
 * MatMulNBits for Q4_0/Q4_1/Q8_0 sources, else float MatMul; returns its output. */
og_status *cv_matmul(onnx_out *o, const cv_model *m, const char *base, const char *x,
                     const cv_src *src, int n_src, int64_t k, const char *out,
                     const char **result);
/* A float32 initializer of a whole tensor dequantized (embeddings, norms, biases). */
og_status *cv_float_init(onnx_out *o, const cv_model *m, const char *name,
                         const gguf_tensor *t, const int64_t *dims, int ndims);
/* Row r of t (cols elements) as float32, exactly as gguf's dequantize computes it. */
og_status *cv_dequant_row(const cv_model *m, const gguf_tensor *t, int64_t r, float *out);

/* The rows of src as they are, K values each: float32 (f NULL: dequantized), or a
 * block format's MatMulNBits values (what 0) or scales (what 1) (convert_weights.c). */
og_status *cv_write_rows(onnx_out *o, const cv_model *m, const gq_format *f,
                         const cv_src *src, int n_src, int64_t k, int what);
/* Layer i's mixture of experts after the norm's output h: the router, then MoE (float
 * experts) or QMoE (Q4_0 / Q8_0 experts as their blocks) (convert_moe.c). */
og_status *cv_moe(onnx_out *o, const cv_model *m, int64_t i, const char *h, const char **out);

/* Whether layer i attends over a sliding window (convert_config.c). */
bool cv_sliding(const cv_model *m, int64_t i);
/* The model's shape from the metadata; refuses what is not converted (convert_config.c). */
og_status *cv_read_shape(cv_model *m, const convert_options *opt);
/* genai_config.json in dir (convert_config.c). */
og_status *cv_write_genai_config(const cv_model *m, const char *dir);

/* Writes j (and frees it) as DIR/FILE; pretty: indented. */
og_status *cv_write_json(const char *dir, const char *file, cJSON *j, bool pretty);

/* tokenizer.json and tokenizer_config.json (convert_tokenizer.c). */
og_status *cv_write_tokenizer(const cv_model *m, const char *out_dir);

#endif
