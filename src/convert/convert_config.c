/* The model's shape from a GGUF file's metadata (architecture, sizes, rope and norm
 * keys, special token ids), and genai_config.json as the model builder writes it. */
#include "convert/convert_internal.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

typedef struct arch_info {
    const char *gguf, *genai;
    bool qkv_bias, qk_norm, unpermute, fused;
    int gemma; /* 2 or 3: Gemma's sandwich norms, GELU, scaled embedding, sliding layers */
    bool moe;  /* experts (expert_count, expert_used_count, expert_feed_forward_length) */
} arch_info;

/* llama.cpp's "llama" covers Llama and Mistral checkpoints (convert_hf_to_gguf writes
 * both so, told apart by general.name: model.type follows it); their q/k rows come
 * permuted for its interleaved rotary. Qwen's do not. */
static const arch_info archs[] = {
    {"llama", "llama", false, false, true, false, 0},
    {"qwen2", "qwen2", true, false, false, false, 0},
    {"qwen3", "qwen3", false, true, false, false, 0},
    /* Qwen3-MoE: Qwen3's attention, experts as com.microsoft MoE / QMoE; onnxruntime-genai
     * has no model type of its own for it and runs it as the qwen3 decoder it is */
    {"qwen3moe", "qwen3", false, true, false, false, 0, true},
    {"phi3", "phi3", false, false, false, true, 0},
    {"gemma2", "gemma2", false, false, false, false, 2},
    {"gemma3", "gemma3_text", false, true, false, false, 3},
};

static og_status *key_i64(const cv_model *m, const char *suffix, int64_t dflt, bool required,
                          int64_t *out) {
    char key[128];
    snprintf(key, sizeof key, "%s.%s", m->arch, suffix);
    if (required) return gguf_get_i64(m->g, key, out);
    return gguf_get_i64_or(m->g, key, dflt, out);
}

static og_status *positive(const cv_model *m, const char *suffix, int64_t v, int64_t max) {
    if (v <= 0 || v > max)
        return og_errorf(OG_ERR_INVALID_MODEL, "%s: key '%s.%s' is %" PRId64
                         ", expected 1 to %" PRId64, m->path, m->arch, suffix, v, max);
    return NULL;
}

/* Gemma 2/3: the window of the sliding layers and which they are (llama.cpp's pattern:
 * layer i slides unless i % pattern == pattern - 1), Gemma 2's soft caps, Gemma 3's
 * local rotary base (llama.cpp's 10000 unless the file says) and per-head norms. The
 * embedding is scaled by sqrt(hidden) in float32, as llama.cpp does. */
static og_status *read_gemma(cv_model *m) {
    char key[128];
    m->sandwich = m->gelu = true;
    m->emb_scale = sqrtf((float)m->hidden);
    OG_TRY(key_i64(m, "attention.sliding_window", 0, true, &m->window));
    OG_TRY(positive(m, "attention.sliding_window", m->window, (int64_t)1 << 22));
    /* the pattern: a period n (layer i slides unless i % n == n - 1), or one flag per
     * layer (true: sliding); by default Gemma 2's 2 and Gemma 3's 6, as llama.cpp's */
    snprintf(key, sizeof key, "%s.attention.sliding_window_pattern", m->arch);
    const gguf_kv *pat = gguf_find(m->g, key);
    if (pat && pat->type == GGUF_ARRAY) {
        OG_TRY(gguf_expect_array(pat, GGUF_I32, (uint64_t)m->layers));
        for (int64_t i = 0; i < m->layers; i++) m->swa[i] = gguf_arr_int(pat, (uint64_t)i) != 0;
    } else {
        int64_t n;
        OG_TRY(key_i64(m, "attention.sliding_window_pattern", m->gemma == 2 ? 2 : 6, false, &n));
        OG_TRY(positive(m, "attention.sliding_window_pattern", n, 1 << 16));
        for (int64_t i = 0; i < m->layers; i++) m->swa[i] = i % n != n - 1;
    }
    if (m->gemma == 2) {
        snprintf(key, sizeof key, "%s.attn_logit_softcapping", m->arch);
        OG_TRY(gguf_get_f64_or(m->g, key, 0.0, &m->softcap));
        snprintf(key, sizeof key, "%s.final_logit_softcapping", m->arch);
        OG_TRY(gguf_get_f64_or(m->g, key, 0.0, &m->final_softcap));
    } else {
        snprintf(key, sizeof key, "%s.rope.freq_base_swa", m->arch);
        OG_TRY(gguf_get_f64_or(m->g, key, 10000.0, &m->local_theta));
    }
    return NULL;
}

bool cv_sliding(const cv_model *m, int64_t i) { return m->window > 0 && m->swa[i]; }

og_status *cv_read_shape(cv_model *m, const convert_options *opt) {
    const char *s;
    size_t len;
    OG_TRY(gguf_get_str(m->g, "general.architecture", &s, &len));
    const arch_info *a = NULL;
    for (size_t i = 0; i < sizeof archs / sizeof archs[0]; i++)
        if (strlen(archs[i].gguf) == len && !memcmp(archs[i].gguf, s, len)) a = &archs[i];
    if (!a)
        return og_errorf(OG_ERR_UNSUPPORTED,
                         "%s: general.architecture '%.*s' is not converted (llama, qwen2, "
                         "qwen3, qwen3moe, phi3, gemma2 and gemma3 are)", m->path, (int)(len > 64 ? 64 : len), s);
    snprintf(m->arch, sizeof m->arch, "%s", a->gguf);
    m->type = a->genai;
    if (!strcmp(a->gguf, "llama") && gguf_find(m->g, "general.name")) {
        const char *nm;
        size_t nlen;
        OG_TRY(gguf_get_str(m->g, "general.name", &nm, &nlen));
        for (size_t i = 0; i + 7 <= nlen; i++)
            if (!strncasecmp(nm + i, "mistral", 7)) m->type = "mistral";
    }
    m->qkv_bias = a->qkv_bias;
    m->qk_norm = a->qk_norm;
    m->unpermute_qk = a->unpermute;
    m->fused_qkv = m->fused_gate_up = a->fused;
    m->gemma = a->gemma;
    const int64_t big = (int64_t)1 << 24;
    OG_TRY(key_i64(m, "block_count", 0, true, &m->layers));
    OG_TRY(positive(m, "block_count", m->layers, CV_MAX_LAYERS));
    OG_TRY(key_i64(m, "embedding_length", 0, true, &m->hidden));
    OG_TRY(positive(m, "embedding_length", m->hidden, big));
    if ((m->moe = a->moe)) {
        OG_TRY(key_i64(m, "expert_count", 0, true, &m->experts));
        OG_TRY(positive(m, "expert_count", m->experts, 1 << 16));
        OG_TRY(key_i64(m, "expert_used_count", 0, true, &m->top_k));
        OG_TRY(positive(m, "expert_used_count", m->top_k, m->experts));
        OG_TRY(key_i64(m, "expert_feed_forward_length", 0, true, &m->expert_inter));
        OG_TRY(positive(m, "expert_feed_forward_length", m->expert_inter, big));
    }
    /* a dense layer's width (MoE files: of layers without experts, if any) */
    OG_TRY(key_i64(m, "feed_forward_length", m->expert_inter, !a->moe, &m->inter));
    OG_TRY(positive(m, "feed_forward_length", m->inter, big));
    OG_TRY(key_i64(m, "attention.head_count", 0, true, &m->heads));
    OG_TRY(positive(m, "attention.head_count", m->heads, 4096));
    OG_TRY(key_i64(m, "attention.head_count_kv", m->heads, false, &m->kv_heads));
    OG_TRY(positive(m, "attention.head_count_kv", m->kv_heads, m->heads));
    if (m->heads % m->kv_heads)
        return og_errorf(OG_ERR_UNSUPPORTED, "%s: %" PRId64 " heads over %" PRId64
                         " KV heads", m->path, m->heads, m->kv_heads);
    OG_TRY(key_i64(m, "attention.key_length", m->hidden / m->heads, false, &m->head_dim));
    OG_TRY(positive(m, "attention.key_length", m->head_dim, 65536));
    int64_t vlen;
    OG_TRY(key_i64(m, "attention.value_length", m->head_dim, false, &vlen));
    if (vlen != m->head_dim)
        return og_errorf(OG_ERR_UNSUPPORTED, "%s: %s.attention.value_length %" PRId64
                         " differs from key_length %" PRId64, m->path, m->arch, vlen, m->head_dim);
    OG_TRY(key_i64(m, "rope.dimension_count", m->head_dim, false, &m->rot_dim));
    if (m->rot_dim != m->head_dim || m->head_dim % 2)
        return og_errorf(OG_ERR_UNSUPPORTED, "%s: %s.rope.dimension_count %" PRId64
                         ": partial rotary (head size %" PRId64 ") is not converted",
                         m->path, m->arch, m->rot_dim, m->head_dim);
    OG_TRY(key_i64(m, "context_length", 0, true, &m->context));
    OG_TRY(positive(m, "context_length", m->context, (int64_t)1 << 22));
    if (opt->context > 0) m->context = opt->context;
    char key[128];
    snprintf(key, sizeof key, "%s.attention.layer_norm_rms_epsilon", m->arch);
    if (!gguf_find(m->g, key))
        return og_errorf(OG_ERR_INVALID_MODEL, "%s: key '%s' is missing", m->path, key);
    OG_TRY(gguf_get_f64_or(m->g, key, 0, &m->eps));
    snprintf(key, sizeof key, "%s.rope.freq_base", m->arch);
    OG_TRY(gguf_get_f64_or(m->g, key, 10000.0, &m->theta));
    if (!(m->theta > 1.0))
        return og_errorf(OG_ERR_INVALID_MODEL, "%s: %s is %g", m->path, key, m->theta);
    snprintf(key, sizeof key, "%s.rope.scaling.type", m->arch);
    if (gguf_find(m->g, key)) {
        OG_TRY(gguf_get_str(m->g, key, &s, &len));
        if (len == 6 && !memcmp(s, "linear", 6)) {
            snprintf(key, sizeof key, "%s.rope.scaling.factor", m->arch);
            OG_TRY(gguf_get_f64_or(m->g, key, 1.0, &m->rope_linear));
            if (!(m->rope_linear > 0))
                return og_errorf(OG_ERR_INVALID_MODEL, "%s: %s is %g", m->path, key,
                                 m->rope_linear);
        } else if (!(len == 4 && !memcmp(s, "none", 4))) {
            return og_errorf(OG_ERR_UNSUPPORTED, "%s: %s '%.*s' is not converted (none and "
                             "linear are)", m->path, key, (int)(len > 32 ? 32 : len), s);
        }
    }
    if (m->gemma) OG_TRY(read_gemma(m));
    const gguf_tensor *emb = gguf_tensor_find(m->g, "token_embd.weight");
    if (!emb || emb->n_dims != 2 || (int64_t)emb->ne[0] != m->hidden)
        return og_errorf(OG_ERR_INVALID_MODEL, "%s: tensor 'token_embd.weight' is %s, "
                         "expected [%" PRId64 ", vocab]", m->path, emb ? "of another shape" :
                         "missing", m->hidden);
    m->vocab = (int64_t)emb->ne[1];
    if (m->head_dim % 2 || (m->head_dim / 2) % 8)
        return og_errorf(OG_ERR_UNSUPPORTED, "%s: head size %" PRId64 ": GroupQueryAttention "
                         "needs head_size/2 a multiple of 8", m->path, m->head_dim);
    OG_TRY(gguf_get_i64_or(m->g, "tokenizer.ggml.bos_token_id", 1, &m->bos));
    OG_TRY(gguf_get_i64_or(m->g, "tokenizer.ggml.eos_token_id", 2, &m->eos));
    OG_TRY(gguf_get_i64_or(m->g, "tokenizer.ggml.padding_token_id", m->eos, &m->pad));
    /* chat models end a turn with <|eot_id|> / <|im_end|>-like tokens that llama.cpp keeps
     * apart from eos: generation stops at any of them (genai_config's eos list) */
    m->stop[m->n_stop++] = m->eos;
    static const char *const turn_keys[] = {"tokenizer.ggml.eot_token_id",
                                            "tokenizer.ggml.eom_token_id"};
    for (int i = 0; i < 2; i++) {
        int64_t id;
        OG_TRY(gguf_get_i64_or(m->g, turn_keys[i], -1, &id));
        bool seen = id < 0;
        for (int j = 0; j < m->n_stop; j++) seen |= m->stop[j] == id;
        if (!seen && id >= m->vocab)
            return og_errorf(OG_ERR_INVALID_MODEL, "%s: %s is %" PRId64 ", outside the vocabulary "
                             "of %" PRId64, m->path, turn_keys[i], id, m->vocab);
        if (!seen) m->stop[m->n_stop++] = id;
    }
    return NULL;
}

og_status *cv_write_json(const char *dir, const char *file, cJSON *j, bool pretty) {
    char *text = pretty ? cJSON_Print(j) : cJSON_PrintUnformatted(j);
    cJSON_Delete(j);
    if (!text) return og_oom();
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, file);
    FILE *f = fopen(path, "w");
    og_status *st = NULL;
    if (!f || fputs(text, f) < 0 || fputc('\n', f) < 0)
        st = og_errorf(OG_ERR_IO, "%s: cannot write: %s", path, strerror(errno));
    if (f && fclose(f) != 0 && !st)
        st = og_errorf(OG_ERR_IO, "%s: cannot write: %s", path, strerror(errno));
    free(text);
    return st;
}

og_status *cv_write_genai_config(const cv_model *m, const char *dir) {
    cJSON *root = cJSON_CreateObject(), *model = cJSON_AddObjectToObject(root, "model");
    cJSON_AddNumberToObject(model, "bos_token_id", (double)m->bos);
    cJSON_AddNumberToObject(model, "context_length", (double)m->context);
    cJSON *dec = cJSON_AddObjectToObject(model, "decoder");
    cJSON *so = cJSON_AddObjectToObject(dec, "session_options");
    cJSON_AddStringToObject(so, "log_id", "onnxruntime-genai");
    cJSON_AddArrayToObject(so, "provider_options");
    cJSON_AddStringToObject(dec, "filename", "model.onnx");
    cJSON_AddNumberToObject(dec, "head_size", (double)m->head_dim);
    cJSON_AddNumberToObject(dec, "hidden_size", (double)m->hidden);
    cJSON *in = cJSON_AddObjectToObject(dec, "inputs");
    cJSON_AddStringToObject(in, "input_ids", "input_ids");
    cJSON_AddStringToObject(in, "attention_mask", "attention_mask");
    cJSON_AddStringToObject(in, "past_key_names", "past_key_values.%d.key");
    cJSON_AddStringToObject(in, "past_value_names", "past_key_values.%d.value");
    cJSON *out = cJSON_AddObjectToObject(dec, "outputs");
    cJSON_AddStringToObject(out, "logits", "logits");
    cJSON_AddStringToObject(out, "present_key_names", "present.%d.key");
    cJSON_AddStringToObject(out, "present_value_names", "present.%d.value");
    cJSON_AddNumberToObject(dec, "num_attention_heads", (double)m->heads);
    cJSON_AddNumberToObject(dec, "num_hidden_layers", (double)m->layers);
    cJSON_AddNumberToObject(dec, "num_key_value_heads", (double)m->kv_heads);
    if (m->window > 0) { /* the builder's windowed KV buffers of the sliding layers */
        cJSON *sw = cJSON_AddObjectToObject(dec, "sliding_window");
        cJSON_AddNumberToObject(sw, "window_size", (double)m->window);
        cJSON_AddBoolToObject(sw, "slide_key_value_cache", 0);
        cJSON_AddBoolToObject(sw, "slide_inputs", 0);
        cJSON *layers = cJSON_AddArrayToObject(sw, "layers");
        for (int64_t i = 0; i < m->layers; i++)
            if (cv_sliding(m, i)) cJSON_AddItemToArray(layers, cJSON_CreateNumber((double)i));
        cJSON_AddNumberToObject(sw, "cache_slack", 0);
    }
    if (m->n_stop == 1) {
        cJSON_AddNumberToObject(model, "eos_token_id", (double)m->eos);
    } else {
        cJSON *eos = cJSON_AddArrayToObject(model, "eos_token_id");
        for (int i = 0; i < m->n_stop; i++)
            cJSON_AddItemToArray(eos, cJSON_CreateNumber((double)m->stop[i]));
    }
    cJSON_AddNumberToObject(model, "pad_token_id", (double)m->pad);
    cJSON_AddStringToObject(model, "type", m->type);
    cJSON_AddNumberToObject(model, "vocab_size", (double)m->vocab);
    cJSON *s = cJSON_AddObjectToObject(root, "search");
    cJSON_AddNumberToObject(s, "diversity_penalty", 0.0);
    cJSON_AddBoolToObject(s, "do_sample", 0);
    cJSON_AddBoolToObject(s, "early_stopping", 1);
    cJSON_AddNumberToObject(s, "length_penalty", 1.0);
    cJSON_AddNumberToObject(s, "max_length", (double)m->context);
    cJSON_AddNumberToObject(s, "min_length", 0);
    cJSON_AddNumberToObject(s, "no_repeat_ngram_size", 0);
    cJSON_AddNumberToObject(s, "num_beams", 1);
    cJSON_AddNumberToObject(s, "num_return_sequences", 1);
    cJSON_AddBoolToObject(s, "past_present_share_buffer", 1);
    cJSON_AddNumberToObject(s, "repetition_penalty", 1.0);
    cJSON_AddNumberToObject(s, "temperature", 1.0);
    cJSON_AddNumberToObject(s, "top_k", 50);
    cJSON_AddNumberToObject(s, "top_p", 1.0);
    return cv_write_json(dir, "genai_config.json", root, true);
}
