/* og_chat_template_create: the chat template of an opened package (the chat layer
 * itself knows nothing of models). */
#include "genai/config.h"
#include "genai/model.h"

og_status *og_chat_template_create(const og_model *model, og_chat_template **out) {
    if (!model || !out) return og_errorf(OG_ERR_INVALID_ARGUMENT, "og_chat_template_create: NULL argument");
    return og_chat_template_open(model->cfg->dir, out);
}
