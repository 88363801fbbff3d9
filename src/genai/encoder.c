/* Encoder-decoder generation (model.type "whisper"): the encoder runs once per request on
 * the features the caller sets, and its outputs, every decoder layer's cross-attention
 * keys and values, are fed unchanged to every decoder run (GEN_SRC_CROSS feeds, model.h).
 *
 * The generator holds them as [rows, heads, frames, head_size] tensors, one row per
 * sequence (a batch entry's beams share its audio's values); a run of rows [r0, r0 + nr)
 * gets a view of its rows. The decoder's self-attention cache is the generator's ordinary
 * KV cache (past_key_self_%d / present_key_self_%d). The builder's decoder takes no
 * attention mask, so a batch's prompts must be as long as each other. */
#include "base/half.h"
#include "base/tensor.h"
#include "genai/config.h"
#include "genai/generator.h"
#include "genai/model.h"

#include <stdlib.h>
#include <string.h>

void gen_encoder_free(og_generator *g) {
    for (int i = 0; g->cross && i < g->m->n_cross; i++) og_tensor_free(g->cross[i]);
    free(g->cross);
    g->cross = NULL;
}

og_status *gen_encoder_cross(const og_generator *g, int i, int r0, int nr, og_tensor *slot,
                             og_tensor **out) {
    const og_model *m = g->m;
    if (!g->cross)
        return og_errorf(OG_ERR_INVALID_ARGUMENT, "%s: a %s model needs its encoder's input "
                         "first: og_generator_set_model_input(gen, \"audio_features\", "
                         "features), then the decoder prompt", m->dir, m->cfg->model.type);
    const og_tensor *t = g->cross[i];
    int64_t dims[OG_MAX_RANK];
    memcpy(dims, t->dims, sizeof dims);
    dims[0] = nr;
    size_t row = t->nbytes / (size_t)t->dims[0];
    return gen_step_view(t->dtype, dims, t->rank, (char *)t->data + (size_t)r0 * row, slot, out);
}

/* Every encoder output repeated for each beam of its batch entry: [batch * beams, ...]. */
static og_status *beam_rows(const og_tensor *t, int beams, og_tensor **out) {
    int64_t dims[OG_MAX_RANK];
    memcpy(dims, t->dims, sizeof dims);
    dims[0] = t->dims[0] * beams;
    OG_TRY(og_tensor_create(t->dtype, dims, t->rank, out));
    size_t row = t->nbytes / (size_t)t->dims[0];
    for (int64_t b = 0; b < t->dims[0]; b++)
        for (int k = 0; k < beams; k++)
            memcpy((char *)(*out)->data + ((size_t)b * (size_t)beams + (size_t)k) * row,
                   (const char *)t->data + (size_t)b * row, row);
    return NULL;
}

/* Runs the encoder on the features and keeps its cross-attention outputs. */
static og_status *encode(og_generator *g, const og_tensor *f) {
    og_model *m = g->m;
    int B = g->p.batch_size;
    for (int r = 0; r < g->rows; r++)
        if (g->len[r] != 0)
            return og_errorf(OG_ERR_INVALID_ARGUMENT, "generator: the audio features come before "
                             "the decoder prompt (rewind_to(0) to start a new request)");
    /* float32 features for a float16 encoder (a builder's fp16 package): converted, as
     * onnxruntime-genai's processor makes them float16 for it */
    bool half = f->dtype == OG_FLOAT32 && m->encoder_features_dtype == OG_FLOAT16;
    if ((f->dtype != m->encoder_features_dtype && !half) || f->rank != 3 || f->dims[0] != B ||
        (m->encoder_mels && f->dims[1] != m->encoder_mels))
        return og_errorf(OG_ERR_INVALID_ARGUMENT, "generator: %s's '%s' takes %s [%d, %lld, "
                         "frames] (batch_size, mel bins); got %s of rank %d, [%lld, %lld, ...]",
                         m->encoder->file, m->encoder_features,
                         og_dtype_name(m->encoder_features_dtype), B, (long long)m->encoder_mels,
                         og_dtype_name(f->dtype), f->rank, (long long)f->dims[0],
                         (long long)(f->rank > 1 ? f->dims[1] : 0));
    og_tensor *in = (og_tensor *)f, *conv = NULL;
    if (half) {
        OG_TRY(og_tensor_create(OG_FLOAT16, f->dims, f->rank, &conv));
        const float *src = f->data;
        uint16_t *dst = conv->data;
        for (int64_t i = 0, n = tensor_count(f); i < n; i++) dst[i] = f32_to_f16(src[i]);
        in = conv;
    }
    og_tensor **outs = calloc((size_t)m->n_cross, sizeof *outs);
    if (!outs) {
        og_tensor_free(conv);
        return og_oom();
    }
    const char *in_name = m->encoder_features;
    og_status *st = og_session_run(m->encoder->s, &in_name, &in, 1,
                                   (const char *const *)m->cross_out, outs, (size_t)m->n_cross);
    og_tensor_free(conv);
    int beams = g->rows / B;
    for (int i = 0; !st && i < m->n_cross; i++) {
        if (outs[i]->rank < 1 || outs[i]->dims[0] != B || outs[i]->nbytes == 0)
            st = og_errorf(OG_ERR_INVALID_MODEL, "%s: output '%s' has no batch of %d", m->dir,
                           m->cross_out[i], B);
        else if (beams > 1) {
            og_tensor *e = NULL;
            st = beam_rows(outs[i], beams, &e);
            og_tensor_free(outs[i]);
            outs[i] = e;
        }
    }
    if (st) {
        for (int i = 0; i < m->n_cross; i++) og_tensor_free(outs[i]);
        free(outs);
        return st;
    }
    gen_encoder_free(g);
    g->cross = outs;
    return NULL;
}

/* The decoder prompt: int32 or int64, [n] (batch_size 1) or [batch_size, n]. */
static og_status *append_ids(og_generator *g, const og_tensor *t) {
    int B = g->p.batch_size;
    int64_t n = tensor_count(t);
    if ((t->dtype != OG_INT32 && t->dtype != OG_INT64) || t->rank < 1 || t->rank > 2 ||
        (t->rank == 2 && t->dims[0] != B) || (t->rank == 1 && B != 1) || n < 1)
        return og_errorf(OG_ERR_INVALID_ARGUMENT, "generator: input_ids must be int32 or int64 "
                         "[batch_size %d, n] with n >= 1", B);
    int32_t *ids = malloc((size_t)n * sizeof *ids);
    if (!ids) return og_oom();
    for (int64_t i = 0; i < n; i++)
        ids[i] = t->dtype == OG_INT32 ? ((const int32_t *)t->data)[i]
                                      : (int32_t)((const int64_t *)t->data)[i];
    og_status *st = NULL;
    if (g->m->encoder && B > 1) { /* no attention mask: every row's prompt as long */
        int64_t per = n / B;
        for (int b = 0; b < B && !st; b++)
            if (ids[b * per + per - 1] == g->m->pad_id)
                st = og_errorf(OG_ERR_UNSUPPORTED, "generator: decoder prompt %d is padded; the "
                               "decoder takes no attention mask, so a batch's prompts must "
                               "have the same length", b);
    }
    if (!st) st = og_generator_append_tokens(g, ids, (size_t)n);
    free(ids);
    return st;
}

og_status *og_generator_set_model_input(og_generator *g, const char *name,
                                        const og_tensor *value) {
    if (!g || !name || !value)
        return og_errorf(OG_ERR_INVALID_ARGUMENT, "og_generator_set_model_input: NULL argument");
    const og_model *m = g->m;
    if (!strcmp(name, "input_ids")) return append_ids(g, value);
    if (m->encoder && (!strcmp(name, "audio_features") || !strcmp(name, m->encoder_features)))
        return encode(g, value);
    return og_errorf(OG_ERR_UNSUPPORTED, "generator: model input '%s' is not taken (%s)", name,
                     m->encoder ? "an encoder-decoder model takes audio_features, then "
                                  "input_ids"
                                : "this model takes input_ids");
}

og_status *gen_encoder_set_inputs(og_generator *g, const char *const *names,
                                  const og_tensor *const *tensors, size_t count) {
    const og_tensor *feats = NULL, *ids = NULL;
    for (size_t i = 0; i < count; i++) {
        const char *n = names[i] ? names[i] : "(null)";
        if (!strcmp(n, "input_ids")) {
            ids = tensors[i];
        } else if (!strcmp(n, "audio_features") || !strcmp(n, g->m->encoder_features)) {
            feats = tensors[i];
        } else {
            return og_errorf(OG_ERR_UNSUPPORTED, "generator: input '%s' is not taken (an "
                             "encoder-decoder model takes audio_features and input_ids)", n);
        }
    }
    if (!feats || !ids)
        return og_errorf(OG_ERR_INVALID_ARGUMENT, "generator: set_inputs needs audio_features "
                         "and input_ids (the decoder prompt)");
    OG_TRY(encode(g, feats));
    return append_ids(g, ids);
}
