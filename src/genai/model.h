/* An opened package: its config, the decoder session, and what the generator needs to
 * know about the decoder graph's inputs and outputs (read from the graph itself, as
 * onnxruntime-genai does: which inputs exist and their dtypes decide what is fed). */
#ifndef OG_GENAI_MODEL_H
#define OG_GENAI_MODEL_H

#include "onnx_genai.h"

#include <stdbool.h>

struct gen_config;

typedef enum gen_kv_layout {
    GEN_KV_NONE,     /* a graph without a cache (engine/dummy-decoder) */
    GEN_KV_COMBINED, /* one tensor per layer: [2, batch, heads, seq, head_size] (gpt2 past_%d) */
    GEN_KV_SEPARATE  /* key and value per layer: [batch, kv_heads, seq, head_size] */
} gen_kv_layout;

typedef struct gen_io {
    const char *name; /* graph name, NULL when the graph lacks this input */
    og_dtype dtype;
} gen_io;

struct og_model {
    struct gen_config *cfg;
    char *dir;
    og_session *decoder;
    gen_io input_ids, attention_mask, position_ids, logits;
    gen_kv_layout kv;
    int n_layers;
    og_dtype kv_dtype;
    int kv_heads, head_size; /* per layer cache dims, read from the graph's past input */
    char **past_names;       /* [n_layers] (COMBINED) or [2*n_layers] key,value (SEPARATE) */
    char **present_names;
    int n_past;              /* entries in past_names / present_names */
    int vocab_size;
    int32_t *eos_ids;
    int n_eos;
    int32_t pad_id, bos_id;
    int context_length;
};

#endif
