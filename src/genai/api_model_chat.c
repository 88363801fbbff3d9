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
    return model ? gen_config_token_id(model->cfg, key) : -1;
}

size_t og_model_eos_token_ids(const og_model *model, const int32_t **ids) {
    if (ids) *ids = model ? model->cfg->model.eos_token_ids : NULL;
    return model ? (size_t)model->cfg->model.n_eos_token_ids : 0;
}
