/* What the chat layer needs from an opened package (the chat layer itself knows nothing
 * of models): its chat template, and the token ids genai_config.json gives for chat. */
#include "genai/config.h"
#include "genai/model.h"

#include <stdlib.h>
#include <string.h>

og_status *og_chat_template_create(const og_model *model, og_chat_template **out) {
    if (!model || !out) return og_errorf(OG_ERR_INVALID_ARGUMENT, "og_chat_template_create: NULL argument");
    return og_chat_template_open(model->cfg->dir, out);
}

int32_t og_model_token_id(const og_model *model, const char *key) {
    if (!model || !key) return -1;
    const gen_model *gm = &model->cfg->model;
    if (!strcmp(key, "bos_token_id")) return gm->bos_token_id;
    if (!strcmp(key, "pad_token_id")) return gm->pad_token_id;
    if (!strcmp(key, "eos_token_id")) return gm->n_eos_token_ids ? gm->eos_token_ids[0] : -1;
    /* model-level keys this runtime keeps as raw JSON (bot/eot/bor/eor_token_id, ...) */
    const char *raw = gen_kvs_get(&gm->extra, key);
    if (!raw) return -1;
    char *end;
    long v = strtol(raw, &end, 10);
    return (*end || end == raw || v < 0 || v > INT32_MAX) ? -1 : (int32_t)v;
}
