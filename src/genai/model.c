/* og_model_open: a package folder -> config, the pipeline of sessions, and the inputs
 * and outputs of every session resolved against the graphs themselves.
 *
 * Two ways a package can fall short, kept apart for the caller:
 *   - incomplete (OG_ERR_INCOMPLETE_MODEL): a graph file it names is missing, or a graph
 *     input nothing in the package can feed. It cannot run at all.
 *   - text only: a vision (or audio) package whose image side this runtime cannot use
 *     (its processor config needs smart_resize, or images are not implemented). Its text
 *     decoder is whole, so it opens for text with a warning and og_model_text_only()
 *     says why; with og_model_options.allow_text_only = 0 it is refused instead
 *     (OG_ERR_UNSUPPORTED). */
#include "genai/model_internal.h"

#include "backends/profile.h"
#include "base/pkg_file.h"
#include "genai/config.h"
#include "genai/generator.h"
#include "genai/guidance.h"
#include "genai/mask_width.h"
#include "runtime/og_session.h"

#include <cjson/cJSON.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

og_model_options og_model_options_default(void) {
    og_model_options o;
    memset(&o, 0, sizeof o);
    o.struct_size = sizeof o;
    o.allow_text_only = 1;
    o.backend = OG_BACKEND_AUTO;
    o.graph_optimization_level = -1;
    o.plan_memory = OG_PLAN_MEMORY_DEFAULT;
    return o;
}

/* onnxruntime-genai's model types (model_type.h) that decode text with a decoder-only
 * graph. Whether a package of one of them runs is decided by its graphs: every input
 * must be one we feed, every op one we implement; otherwise opening names what is
 * missing. */
static const char *const llm_types[] = {
    "chatglm", "decoder", "ernie4_5", "gemma", "gemma2", "gemma3_text", "gemma4_text", "gpt2",
    "gptoss", "granite", "granitemoehybrid", "hunyuandensev1", "internlm2", "lfm2", "llama",
    "mistral", "nemotron", "olmo", "phi", "phimoe", "phi3", "phi3small", "qwen2", "qwen3",
    "qwen3_5_moe_text", "qwen3_5_text", "smollm3", "decoder-pipeline", NULL};
/* Vision-language types: their text decoder runs; images are fed to the Qwen ones
 * (qwen_vl_types), Phi-3-vision and Gemma 3 when the package has their vision graph
 * (genai/vision.c). */
static const char *const vlm_types[] = {"fara", "gemma3", "mistral3", "phi3v", "qwen2_5_vl",
                                        "qwen3_vl", "qwen3_5", "qwen3_5_moe",
                                        "videochat_flash_qwen", NULL};
static const char *const qwen_vl_types[] = {"fara", "qwen2_5_vl", "qwen3_vl", "qwen3_5",
                                            "qwen3_5_moe", NULL};

static bool in_list(const char *const *l, const char *t) {
    for (; *l; l++)
        if (strcmp(*l, t) == 0) return true;
    return false;
}

static og_status *add_warning(og_model *m, const char *text) {
    char **w = realloc(m->warnings, (size_t)(m->n_warnings + 1) * sizeof *w);
    if (!w) return og_oom();
    m->warnings = w;
    if (!(w[m->n_warnings] = strdup(text))) return og_oom();
    m->n_warnings++;
    return NULL;
}

/* "<dir>/<file>" after checking that the package may name it (base/pkg_file.h) and
 * has it. */
static og_status *package_file(const og_model *m, const char *key, const char *file, char *path,
                               size_t size) {
    if (!file || !*file)
        return og_errorf(OG_ERR_INCOMPLETE_MODEL, "%s: %s is missing (the package names no graph "
                         "file)", m->cfg->path, key);
    char *joined = NULL;
    OG_TRY(pkg_path_join(m->cfg->dir, file, m->cfg->path, key, &joined));
    snprintf(path, size, "%s", joined);
    free(joined);
    struct stat sb;
    if (stat(path, &sb) != 0)
        return og_errorf(OG_ERR_INCOMPLETE_MODEL, "%s: %s names '%s', which is not in the "
                         "package (%s)", m->cfg->path, key, file, path);
    return NULL;
}

/* genai_config's session_options.graph_optimization_level as onnxruntime's number. */
static int config_opt_level(const gen_session_options *so) {
    static const char *const names[] = {"ORT_DISABLE_ALL", "ORT_ENABLE_BASIC",
                                        "ORT_ENABLE_EXTENDED", "ORT_ENABLE_ALL"};
    static const int values[] = {0, 1, 2, 99};
    for (int i = 0; so && so->graph_optimization_level && i < 4; i++)
        if (!strcmp(so->graph_optimization_level, names[i])) return values[i];
    return -1;
}

static og_status *stage_session(const og_model_options *o, const gen_stage *st,
                                og_backend backend, og_session **out) {
    og_session_options so = og_session_options_default();
    so.num_threads = o->num_threads;
    if (so.num_threads == 0 && st->so_cfg && st->so_cfg->intra_op_num_threads > 0)
        so.num_threads = st->so_cfg->intra_op_num_threads;
    so.backend = backend;
    so.ort_library = o->ort_library;
    so.ort_provider = o->ort_provider;
    so.plan_memory = o->plan_memory;
    so.kv_dtype = o->kv_dtype;
    so.graph_optimization_level = o->graph_optimization_level != -1
                                      ? o->graph_optimization_level
                                      : config_opt_level(st->so_cfg);
    return og_session_open(st->path, &so, out);
}

/* Fills st (zeroed) with the session of the package's graph `file` (config key `key`). */
static og_status *init_stage(og_model *m, const og_model_options *o, gen_stage *st,
                             const char *name, const char *key, const char *file,
                             const gen_session_options *so_cfg) {
    char path[4096];
    OG_TRY(package_file(m, key, file, path, sizeof path));
    st->name = strdup(name);
    st->file = strdup(file);
    st->path = strdup(path);
    st->so_cfg = so_cfg;
    if (!st->name || !st->file || !st->path) return og_oom();
    og_status *e = stage_session(o, st, o->backend, &st->s);
    return e ? og_status_wrap(e, "%s: %s", m->cfg->path, key) : NULL;
}

static og_status *open_stage(og_model *m, const og_model_options *o, const char *name,
                             const char *key, const char *file, const gen_session_options *so_cfg) {
    gen_stage *st = realloc(m->stages, (size_t)(m->n_stages + 1) * sizeof *st);
    if (!st) return og_oom();
    m->stages = st;
    st = &m->stages[m->n_stages++];
    memset(st, 0, sizeof *st);
    st->on_prompt = st->on_token = true;
    return init_stage(m, o, st, name, key, file, so_cfg);
}

/* auto keeps a model on one backend: when a session fell back to onnxruntime (an op
 * without a native kernel), the others move there too. The fallback's warnings become
 * the model's. */
static og_status *one_backend(og_model *m, const og_model_options *o) {
    int on_ort = 0;
    for (int i = 0; i < m->n_stages; i++) {
        const char *w = og_session_warning(m->stages[i].s);
        if (w[0]) OG_TRY(add_warning(m, w));
        on_ort += runtime_session_ops(m->stages[i].s) == &backend_ort;
    }
    if (o->backend != OG_BACKEND_AUTO || on_ort == 0 || on_ort == m->n_stages) return NULL;
    for (int i = 0; i < m->n_stages; i++) {
        gen_stage *st = &m->stages[i];
        if (runtime_session_ops(st->s) == &backend_ort) continue;
        og_session *s;
        og_status *e = stage_session(o, st, OG_BACKEND_ORT, &s);
        if (e) return og_status_wrap(e, "%s: %s (moving it to onnxruntime with the rest of "
                                     "the model)", m->cfg->path, st->file);
        og_session_close(st->s);
        st->s = s;
        char w[600];
        snprintf(w, sizeof w, "%s: runs on onnxruntime too, with the rest of the model "
                 "(backend auto keeps a model on one backend)", st->file);
        OG_TRY(add_warning(m, w));
    }
    return NULL;
}

static bool has_input(const og_session *s, const char *name, og_value_info *out) {
    for (size_t i = 0; name && i < og_session_input_count(s); i++) {
        og_value_info v;
        if (!og_session_input_info(s, i, &v) && strcmp(v.name, name) == 0) {
            if (out) *out = v;
            return true;
        }
    }
    return false;
}

static bool has_output(const og_session *s, const char *name) {
    for (size_t i = 0; name && i < og_session_output_count(s); i++) {
        og_value_info v;
        if (!og_session_output_info(s, i, &v) && strcmp(v.name, name) == 0) return true;
    }
    return false;
}

static og_status *add_out(gen_stage *st, const char *name, gen_sink sink, int index) {
    for (int i = 0; i < st->n_outs; i++)
        if (strcmp(st->outs[i].name, name) == 0) return NULL;
    gen_out *o = realloc(st->outs, (size_t)(st->n_outs + 1) * sizeof *o);
    if (!o) return og_oom();
    st->outs = o;
    o[st->n_outs++] = (gen_out){name, sink, index};
    return NULL;
}

/* The nominal key of a decoder input name ("attention_mask" -> "attention_mask"), for
 * messages about inputs we know of but do not feed. */
static const char *nominal_key(const og_model *m, const char *name) {
    const gen_kvs *t = &m->cfg->model.decoder.c.inputs;
    for (int i = 0; i < t->n; i++)
        if (t->items[i].value && !strchr(t->items[i].value, '%') &&
            strcmp(t->items[i].value, name) == 0)
            return t->items[i].key;
    return NULL;
}

/* Where each graph input of stage `si` comes from. */
static og_status *resolve_feeds(og_model *m, int si, const char *ids_name,
                                const char *image_name, const char *embeds_from) {
    gen_stage *st = &m->stages[si];
    size_t n = og_session_input_count(st->s);
    st->feeds = calloc(n ? n : 1, sizeof *st->feeds);
    if (!st->feeds) return og_oom();
    const gen_decoder *d = &m->cfg->model.decoder;
    const char *embeds = gen_kvs_get(&d->c.inputs, "inputs_embeds");
    for (size_t i = 0; i < n; i++) {
        og_value_info v;
        OG_TRY(og_session_input_info(st->s, i, &v));
        gen_feed *f = &st->feeds[st->n_feeds++];
        f->name = v.name;
        f->dtype = v.dtype;
        f->index = f->out = -1;
        bool is_int = v.dtype == OG_INT32 || v.dtype == OG_INT64;
        if (ids_name && !strcmp(v.name, ids_name)) {
            f->src = GEN_SRC_IDS;
        } else if (m->attention_mask && !strcmp(v.name, m->attention_mask)) {
            f->src = GEN_SRC_MASK;
        } else if (m->position_ids && !strcmp(v.name, m->position_ids)) {
            f->src = GEN_SRC_POS;
            int rank = v.rank;
            if (rank != 2 && rank != 3)
                return og_errorf(OG_ERR_UNSUPPORTED, "%s: position_ids '%s' has rank %d (2: "
                                 "[batch, sequence] or 3: [3, batch, sequence] expected)",
                                 st->file, v.name, rank);
            if (rank == 3 && v.dims[0] > 0 && v.dims[0] != 3)
                return og_errorf(OG_ERR_UNSUPPORTED, "%s: position_ids '%s' has %lld sections "
                                 "(3 expected for mRoPE)", st->file, v.name, (long long)v.dims[0]);
            if (m->position_rank && m->position_rank != rank)
                return og_errorf(OG_ERR_INVALID_MODEL, "%s: position_ids has rank %d here and "
                                 "%d in another stage", st->file, rank, m->position_rank);
            m->position_rank = rank;
        } else if (image_name && !strcmp(v.name, image_name)) {
            f->src = GEN_SRC_IMAGE;
            /* no image: the first symbolic axis (image tokens) is 0, any other is hidden */
            bool first = true;
            for (int k = 0; k < v.rank; k++) {
                int64_t dim = v.dims[k];
                if (dim <= 0) {
                    dim = first ? 0 : d->hidden_size;
                    if (!first && dim <= 0)
                        return og_errorf(OG_ERR_INVALID_MODEL, "%s: cannot shape an empty '%s': "
                                         "model.decoder.hidden_size is not set", st->file, v.name);
                    first = false;
                }
                m->image_feature_dims[k] = dim;
            }
            if (first && v.rank > 0) m->image_feature_dims[0] = 0; /* all fixed: no tokens */
            m->image_feature_rank = v.rank;
            m->image_feature_dtype = v.dtype;
            m->image_features = v.name;
        } else {
            int c = -1;
            for (int k = 0; k < m->n_cache && c < 0; k++)
                if (!strcmp(m->cache[k].past, v.name)) c = k;
            if (c >= 0) {
                if (m->cache[c].stage != si)
                    return og_errorf(OG_ERR_UNSUPPORTED, "%s: '%s' is carried by another stage",
                                     st->file, v.name);
                f->src = GEN_SRC_PAST;
                f->index = c;
                continue;
            }
            for (int k = 0; k < m->n_cross && f->index < 0; k++)
                if (!strcmp(m->cross_in[k], v.name)) f->index = k;
            if (f->index >= 0) {
                f->src = GEN_SRC_CROSS;
                continue;
            }
            const char *want = (embeds_from && embeds && !strcmp(v.name, embeds)) ? embeds_from
                                                                                   : v.name;
            for (int s = si - 1; s >= 0 && f->index < 0; s--)
                for (int k = 0; k < m->stages[s].n_outs; k++)
                    if (!strcmp(m->stages[s].outs[k].name, want) &&
                        m->stages[s].outs[k].sink == GEN_SINK_VALUE) {
                        f->index = s;
                        f->out = k;
                        break;
                    }
            if (f->index >= 0) {
                f->src = GEN_SRC_VALUE;
                continue;
            }
            const og_tensor *dflt = runtime_session_input_default(st->s, i);
            if (dflt) { /* an overridable initializer: an adapter may feed it */
                f->src = GEN_SRC_PARAM;
                f->dflt = dflt;
                st->n_params++;
                continue;
            }
            const char *key = nominal_key(m, v.name);
            if (key && !strcmp(key, "hidden_states")) { /* an MTP head's (genai/mtp.c) */
                f->src = GEN_SRC_HIDDEN;
                continue;
            }
            if (key && embeds && !strcmp(v.name, embeds))
                return og_errorf(OG_ERR_INCOMPLETE_MODEL, "%s: the decoder takes inputs_embeds "
                                 "('%s'), but the package has no model.embedding to make them "
                                 "from token ids", m->cfg->path, v.name);
            if (key)
                return og_errorf(OG_ERR_UNSUPPORTED, "%s: graph input '%s' "
                                 "(model.decoder.inputs.%s) is not one this runtime feeds (it "
                                 "feeds input_ids, inputs_embeds, attention_mask, position_ids, "
                                 "the KV cache and conv/recurrent state)", st->file, v.name, key);
            return og_errorf(OG_ERR_INCOMPLETE_MODEL, "%s: graph input '%s' cannot be fed: it is "
                             "not an input the generator makes (%s), nor an output of an earlier "
                             "stage of the package", st->file, v.name,
                             is_int ? "ids, mask, positions" : "embeddings, cache, state");
        }
        if ((f->src == GEN_SRC_IDS || f->src == GEN_SRC_MASK || f->src == GEN_SRC_POS) &&
            v.dtype != OG_INT32 && v.dtype != OG_INT64)
            return og_errorf(OG_ERR_UNSUPPORTED, "%s: input '%s' has dtype %s (int32 or int64 "
                             "expected)", st->file, v.name, og_dtype_name(v.dtype));
    }
    return NULL;
}

/* The logits output: its dtype and vocabulary size. */
static og_status *check_logits(og_model *m, const gen_stage *st) {
    for (size_t i = 0; i < og_session_output_count(st->s); i++) {
        og_value_info lv;
        OG_TRY(og_session_output_info(st->s, i, &lv));
        if (strcmp(lv.name, m->logits.name) != 0) continue;
        m->logits.name = lv.name;
        m->logits.dtype = lv.dtype;
        if (lv.dtype != OG_FLOAT32 && lv.dtype != OG_FLOAT16 && lv.dtype != OG_BFLOAT16)
            return og_errorf(OG_ERR_UNSUPPORTED, "%s: output '%s' has dtype %s; logits must be "
                             "float32, float16 or bfloat16", st->file, lv.name,
                             og_dtype_name(lv.dtype));
        if (lv.rank == 3 && lv.dims[2] > 0 && lv.dims[2] != m->vocab_size)
            return og_errorf(OG_ERR_INVALID_MODEL, "%s: model.vocab_size is %d, but '%s' in %s "
                             "has %lld entries per token", m->cfg->path, m->vocab_size, lv.name,
                             st->file, (long long)lv.dims[2]);
        m->decoder = st->s;
        return NULL;
    }
    return og_errorf(OG_ERR_INVALID_MODEL, "%s: model.decoder.outputs.logits is '%s', but the "
                     "decoder graph %s has no such output", m->cfg->path, m->logits.name,
                     st->file);
}

/* The stages of a decoder-pipeline package, as genai_config.json lists them. */
static og_status *open_pipeline(og_model *m, const og_model_options *o) {
    const gen_decoder *d = &m->cfg->model.decoder;
    for (int i = 0; i < d->n_pipeline; i++) {
        const gen_pipeline_stage *p = &d->pipeline[i];
        char key[300];
        snprintf(key, sizeof key, "model.decoder.pipeline[%d].%s.filename", i, p->name);
        OG_TRY(open_stage(m, o, p->name, key, p->filename,
                          p->session_options.present ? &p->session_options
                                                     : &d->c.session_options));
        gen_stage *st = &m->stages[m->n_stages - 1];
        st->on_prompt = p->run_on_prompt;
        st->on_token = p->run_on_token_gen;
        for (int k = 0; k < p->n_inputs; k++)
            if (!has_input(st->s, p->inputs[k], NULL))
                return og_errorf(OG_ERR_INVALID_MODEL, "%s: model.decoder.pipeline[%d].%s.inputs "
                                 "names '%s', which %s does not take", m->cfg->path, i, p->name,
                                 p->inputs[k], p->filename);
        for (int k = 0; k < p->n_outputs; k++) {
            if (!has_output(st->s, p->outputs[k]))
                return og_errorf(OG_ERR_INVALID_MODEL, "%s: model.decoder.pipeline[%d].%s.outputs "
                                 "names '%s', which %s does not produce", m->cfg->path, i,
                                 p->name, p->outputs[k], p->filename);
        }
    }
    return NULL;
}

/* Requested outputs: the config's list (pipelines), the embeddings (embedding stage),
 * and for every stage the presents it carries and the logits if it makes them. */
static og_status *resolve_outs(og_model *m, int embedding_stage) {
    const gen_decoder *d = &m->cfg->model.decoder;
    for (int si = 0; si < m->n_stages; si++) {
        gen_stage *st = &m->stages[si];
        if (has_output(st->s, m->logits.name)) OG_TRY(add_out(st, m->logits.name, GEN_SINK_LOGITS, 0));
        for (int c = 0; c < m->n_cache; c++)
            if (m->cache[c].stage == si)
                OG_TRY(add_out(st, m->cache[c].present, GEN_SINK_PRESENT, c));
        if (si == embedding_stage) {
            const char *e = gen_kvs_get(&m->cfg->model.embedding.outputs, "inputs_embeds");
            if (!e || !has_output(st->s, e))
                return og_errorf(OG_ERR_INVALID_MODEL, "%s: model.embedding.outputs.inputs_embeds "
                                 "is '%s', but %s has no such output", m->cfg->path,
                                 e ? e : "(unset)", st->file);
            OG_TRY(add_out(st, e, GEN_SINK_VALUE, -1));
        }
        for (int p = 0; d->n_pipeline && p < d->pipeline[si].n_outputs; p++) {
            const char *name = d->pipeline[si].outputs[p];
            for (size_t k = 0; k < og_session_output_count(st->s); k++) {
                og_value_info ov;
                OG_TRY(og_session_output_info(st->s, k, &ov));
                if (!strcmp(ov.name, name)) OG_TRY(add_out(st, ov.name, GEN_SINK_VALUE, -1));
            }
        }
    }
    return NULL;
}

/* The encoder of an encoder-decoder package (model.type "whisper", as onnxruntime-genai's
 * builder writes it): model.encoder's graph takes the features (inputs.audio_features) and
 * returns every decoder layer's cross-attention keys and values
 * (outputs.cross_present_{key,value}_names), which the decoder takes unchanged at every
 * step as inputs.cross_past_{key,value}_names. The layers are counted from the decoder's
 * inputs; the encoder's other outputs (its hidden states) are not requested. */
static og_status *open_encoder(og_model *m, const og_model_options *o) {
    const gen_model *gm = &m->cfg->model;
    const gen_component *enc = &gm->encoder;
    if (!enc->present || !enc->filename)
        return og_errorf(OG_ERR_INCOMPLETE_MODEL, "%s: model.type '%s' needs a model.encoder "
                         "block naming its encoder graph", m->cfg->path, gm->type);
    gen_stage *st = calloc(1, sizeof *st);
    if (!st) return og_oom();
    m->encoder = st;
    char path[4096];
    OG_TRY(package_file(m, "model.encoder.filename", enc->filename, path, sizeof path));
    st->name = strdup("encoder");
    st->file = strdup(enc->filename);
    st->path = strdup(path);
    st->so_cfg = &enc->session_options;
    if (!st->name || !st->file || !st->path) return og_oom();
    og_status *e = stage_session(o, st, o->backend, &st->s);
    if (e) return og_status_wrap(e, "%s: model.encoder.filename", m->cfg->path);
    const char *feat = gen_kvs_get(&enc->inputs, "audio_features");
    og_value_info v;
    if (!has_input(st->s, feat, &v))
        return og_errorf(OG_ERR_INVALID_MODEL, "%s: model.encoder.inputs.audio_features is "
                         "'%s', but %s has no such input", m->cfg->path, feat ? feat : "(unset)",
                         enc->filename);
    if (og_session_input_count(st->s) != 1)
        return og_errorf(OG_ERR_UNSUPPORTED, "%s: the encoder graph %s takes %zu inputs; only "
                         "the features ('%s') are fed", m->cfg->path, enc->filename,
                         og_session_input_count(st->s), v.name);
    if (v.rank != 3 || (v.dtype != OG_FLOAT32 && v.dtype != OG_FLOAT16))
        return og_errorf(OG_ERR_UNSUPPORTED, "%s: %s's input '%s' is %s of rank %d (float32 or "
                         "float16 [batch, mels, frames] expected)", m->cfg->path, enc->filename,
                         v.name, og_dtype_name(v.dtype), v.rank);
    m->encoder_features = v.name;
    m->encoder_features_dtype = v.dtype;
    m->encoder_mels = v.dims[1] > 0 ? v.dims[1] : 0;
    const gen_kvs *din = &gm->decoder.c.inputs, *eout = &enc->outputs;
    const char *tin[2] = {gen_kvs_get(din, "cross_past_key_names"),
                          gen_kvs_get(din, "cross_past_value_names")};
    const char *tout[2] = {gen_kvs_get(eout, "cross_present_key_names"),
                           gen_kvs_get(eout, "cross_present_value_names")};
    if (!tin[0] || !tin[1] || !tout[0] || !tout[1])
        return og_errorf(OG_ERR_INVALID_MODEL, "%s: model.decoder.inputs.cross_past_key_names / "
                         "cross_past_value_names and model.encoder.outputs.cross_present_key_names"
                         " / cross_present_value_names must name the cross-attention caches",
                         m->cfg->path);
    const og_session *dec = m->stages[m->n_stages - 1].s;
    for (int layer = 0; layer < 4096; layer++) {
        char in[256], out[256];
        OG_TRY(gen_config_format_name(tin[0], layer, in, sizeof in));
        if (!has_input(dec, in, NULL)) break;
        for (int kv = 0; kv < 2; kv++) {
            OG_TRY(gen_config_format_name(tin[kv], layer, in, sizeof in));
            OG_TRY(gen_config_format_name(tout[kv], layer, out, sizeof out));
            if (!has_input(dec, in, NULL) || !has_output(st->s, out))
                return og_errorf(OG_ERR_INVALID_MODEL, "%s: layer %d: the decoder takes '%s' "
                                 "only if the encoder %s returns '%s'%s", m->cfg->path, layer,
                                 in, enc->filename, out, has_input(dec, in, NULL) ? ", which "
                                 "it does not" : " (the decoder lacks the input)");
            char **a = realloc(m->cross_in, (size_t)(m->n_cross + 1) * sizeof *a);
            if (!a) return og_oom();
            m->cross_in = a;
            char **b = realloc(m->cross_out, (size_t)(m->n_cross + 1) * sizeof *b);
            if (!b) return og_oom();
            m->cross_out = b;
            a[m->n_cross] = strdup(in);
            b[m->n_cross] = strdup(out);
            m->n_cross++;
            if (!a[m->n_cross - 1] || !b[m->n_cross - 1]) return og_oom();
        }
    }
    if (m->n_cross == 0)
        return og_errorf(OG_ERR_INVALID_MODEL, "%s: the decoder graph takes no cross-attention "
                         "input ('%s' for layer 0)", m->cfg->path, tin[0]);
    return NULL;
}

static void close_encoder(og_model *m) {
    for (int i = 0; i < m->n_cross; i++) {
        free(m->cross_in[i]);
        free(m->cross_out[i]);
    }
    free(m->cross_in);
    free(m->cross_out);
    if (!m->encoder) return;
    og_session_close(m->encoder->s);
    free(m->encoder->name);
    free(m->encoder->file);
    free(m->encoder->path);
    free(m->encoder);
}

/* Why a vision package decodes text only. NULL reason: it has no vision part. */
static og_status *text_only_reason(og_model *m, char *why, size_t size) {
    const gen_model *gm = &m->cfg->model;
    why[0] = '\0';
    bool vlm = in_list(vlm_types, gm->type);
    const gen_component *vis = &gm->vision;
    if (vis->present && vis->filename) {
        char path[4096];
        OG_TRY(package_file(m, "model.vision.filename", vis->filename, path, sizeof path));
    }
    if (gm->speech.present && gm->speech.filename) {
        char path[4096];
        OG_TRY(package_file(m, "model.speech.filename", gm->speech.filename, path, sizeof path));
    }
    if (!vlm && !vis->present && !gm->speech.present) return NULL;
    if (m->vision.s) return NULL; /* images are fed (open_vision) */
    const char *pc = vis->config_filename ? vis->config_filename : "processor_config.json";
    /* no processor config: nothing says how images are prepared, text decoding is whole */
    bool smart = false;
    char *path = NULL, *buf = NULL;
    size_t len = 0;
    OG_TRY(pkg_path_join(m->cfg->dir, pc, m->cfg->path, "model.vision.config_filename", &path));
    og_status *rs = pkg_read_file(path, PKG_MAX_JSON_BYTES, &buf, &len);
    free(path);
    if (rs && og_status_code(rs) != OG_ERR_NOT_FOUND) return rs;
    og_status_free(rs);
    if (buf) {
        /* a resize step that sets smart_resize: the size depends on the image in a way the
         * processor description cannot express for us */
        const char *p = strstr(buf, "\"smart_resize\"");
        if (p) {
            p += strlen("\"smart_resize\"");
            while (*p == ' ' || *p == ':' || *p == '\t' || *p == '\n' || *p == '\r') p++;
            smart = *p == 't' || (*p >= '1' && *p <= '9');
        }
        free(buf);
    }
    if ((in_list(qwen_vl_types, gm->type) || !strcmp(gm->type, "phi3v") ||
         !strcmp(gm->type, "gemma3")) && vis->present)
        snprintf(why, size, "%s: model.type '%s': %s; the package is opened for text decoding "
                 "only", m->cfg->path, gm->type, m->vision_why[0] ? m->vision_why
                 : "its vision graph cannot be fed");
    else if (smart)
        snprintf(why, size, "%s: its image preprocessing (%s: Resize with smart_resize) cannot be "
                 "represented yet, so images cannot be fed; the package is opened for text "
                 "decoding only", m->cfg->path, pc);
    else
        snprintf(why, size, "%s: model.type '%s' %s, and image/audio input is not implemented; "
                 "the package is opened for text decoding only", m->cfg->path, gm->type,
                 vis->present ? "has a vision model" : "is multimodal");
    return NULL;
}

/* The vision encoder of a Qwen vision-language package, when images can be fed: the
 * package names a vision graph taking pixel_values and image_grid_thw and returning
 * image_features, an embedding stage takes image_features, the decoder takes [3, B, S]
 * (mRoPE) positions, and the config has the image and vision-start token ids. Otherwise
 * m->vision_why says what is missing (the package decodes text only). */
static og_status *open_vision(og_model *m, const og_model_options *o) {
    const gen_model *gm = &m->cfg->model;
    const gen_component *vis = &gm->vision;
    char *why = m->vision_why;
    size_t wn = sizeof m->vision_why;
    if (!vis->present || !vis->filename) return NULL;
    if (!m->image_features) {
        snprintf(why, wn, "no embedding graph takes image_features");
        return NULL;
    }
    bool phi3 = !strcmp(gm->type, "phi3v"), gemma3 = !strcmp(gm->type, "gemma3");
    if (gemma3 && gm->image_token_id < 0) {
        snprintf(why, wn, "model.image_token_id (<image_soft_token>) is not set");
        return NULL;
    }
    if (phi3 || gemma3) {
        if (m->position_rank == 3) {
            snprintf(why, wn, "its decoder takes [3, batch, sequence] position_ids");
            return NULL;
        }
    } else if (m->position_rank != 3) {
        snprintf(why, wn, "its decoder takes no [3, batch, sequence] position_ids (mRoPE)");
        return NULL;
    }
    if (!phi3 && !gemma3 && (gm->image_token_id < 0 || gm->vision_start_token_id < 0)) {
        snprintf(why, wn, "model.image_token_id or model.vision_start_token_id is not set");
        return NULL;
    }
    gen_stage *st = &m->vision;
    og_status *e = init_stage(m, o, st, "vision", "model.vision.filename", vis->filename,
                              &vis->session_options);
    if (e && og_status_code(e) != OG_ERR_OUT_OF_MEMORY) {
        /* a vision graph this runtime cannot run leaves the text decoder usable */
        snprintf(why, wn, "its vision graph cannot be run: %s", og_status_message(e));
        og_status_free(e);
        og_session_close(st->s);
        st->s = NULL;
        return NULL;
    }
    OG_TRY(e);
    const char *second = phi3 ? "image_sizes" : "image_grid_thw";
    const char *names[3] = {gen_kvs_get(&vis->inputs, "pixel_values"),
                            gen_kvs_get(&vis->inputs, second),
                            gen_kvs_get(&vis->outputs, "image_features")};
    if (!names[1]) names[1] = second;
    for (int k = 0; k < 3; k++) {
        if (k == 1 && gemma3) continue; /* pixel_values alone */
        bool ok = k < 2 ? has_input(st->s, names[k], NULL) : has_output(st->s, names[k]);
        if (!ok) {
            snprintf(why, wn, "its vision graph %s has no %s '%s'", vis->filename,
                     k < 2 ? "input" : "output", names[k] ? names[k] : "(unset)");
            og_session_close(st->s);
            st->s = NULL;
            return NULL;
        }
    }
    m->vision_pixels = names[0];
    m->vision_grid = names[1];
    m->vision_features = names[2];
    m->vision_phi3 = phi3;
    m->vision_gemma3 = gemma3;
    m->spatial_merge = vis->spatial_merge_size > 0 ? vis->spatial_merge_size : 2;
    m->image_token_id = gm->image_token_id;
    m->video_token_id = gm->video_token_id;
    m->vision_start_id = gm->vision_start_token_id;
    return NULL;
}

static og_status *open_model(og_model *m, const og_model_options *o) {
    const gen_model *gm = &m->cfg->model;
    const gen_decoder *d = &gm->decoder;
    bool whisper = strcmp(gm->type, "whisper") == 0;
    if (!whisper && !in_list(llm_types, gm->type) && !in_list(vlm_types, gm->type))
        return og_errorf(OG_ERR_UNSUPPORTED, "%s: model.type '%s' is not supported (supported: "
                         "onnxruntime-genai's decoder-only language model types such as llama, "
                         "qwen2, qwen3_5_text, lfm2, decoder-pipeline, the text decoder of "
                         "its vision-language types such as qwen3_5, phi3v, and whisper)",
                         m->cfg->path, gm->type);
    m->vocab_size = gm->vocab_size;
    m->context_length = gm->context_length;
    m->pad_id = gm->pad_token_id;
    m->bos_id = gm->bos_token_id;
    m->n_eos = gm->n_eos_token_ids;
    m->eos_ids = calloc((size_t)m->n_eos + 1, sizeof *m->eos_ids);
    if (!m->eos_ids) return og_oom();
    memcpy(m->eos_ids, gm->eos_token_ids, sizeof(int32_t) * (size_t)m->n_eos);
    if (m->vocab_size <= 0)
        return og_errorf(OG_ERR_INVALID_MODEL, "%s: model.vocab_size is %d, expected > 0",
                         m->cfg->path, m->vocab_size);
    for (int i = 0; i < m->cfg->n_warnings; i++) OG_TRY(add_warning(m, m->cfg->warnings[i]));

    const gen_kvs *din = &d->c.inputs;
    m->attention_mask = gen_kvs_get(din, "attention_mask");
    m->position_ids = gen_kvs_get(din, "position_ids");
    m->logits.name = gen_kvs_get(&d->c.outputs, "logits");
    if (!m->logits.name)
        return og_errorf(OG_ERR_INVALID_MODEL, "%s: model.decoder.outputs.logits is not set",
                         m->cfg->path);
    int embedding_stage = -1;
    const char *embeds_from = NULL;
    if (d->n_pipeline > 0) {
        OG_TRY(open_pipeline(m, o));
    } else {
        OG_TRY(open_stage(m, o, "decoder", "model.decoder.filename", d->c.filename,
                          &d->c.session_options));
        const char *embeds = gen_kvs_get(din, "inputs_embeds");
        if (has_input(m->stages[0].s, embeds, NULL) && gm->embedding.present) {
            /* the split layout: the embedding runs first; put it in front */
            OG_TRY(open_stage(m, o, "embedding", "model.embedding.filename",
                              gm->embedding.filename, &gm->embedding.session_options));
            gen_stage t = m->stages[0];
            m->stages[0] = m->stages[1];
            m->stages[1] = t;
            embedding_stage = 0;
            embeds_from = gen_kvs_get(&gm->embedding.outputs, "inputs_embeds");
        }
    }
    OG_TRY(one_backend(m, o));
    if (whisper) OG_TRY(open_encoder(m, o));
    OG_TRY(gen_model_find_caches(m));
    OG_TRY(gen_model_check_kv_dtype(m, o->kv_dtype));
    OG_TRY(resolve_outs(m, embedding_stage));
    bool have_logits = false;
    for (int si = 0; si < m->n_stages; si++) {
        const gen_stage *st = &m->stages[si];
        for (int k = 0; k < st->n_outs; k++)
            if (st->outs[k].sink == GEN_SINK_LOGITS) {
                OG_TRY(check_logits(m, st));
                have_logits = true;
            }
    }
    if (!have_logits)
        return og_errorf(OG_ERR_INVALID_MODEL, "%s: model.decoder.outputs.logits is '%s', but "
                         "the decoder graph %s has no such output", m->cfg->path, m->logits.name,
                         m->stages[m->n_stages - 1].file);
    for (int si = 0; si < m->n_stages; si++) {
        bool emb = si == embedding_stage;
        const char *ids = gen_kvs_get(emb ? &gm->embedding.inputs : din, "input_ids");
        const char *img = emb ? gen_kvs_get(&gm->embedding.inputs, "image_features") : NULL;
        OG_TRY(resolve_feeds(m, si, ids, img, si > embedding_stage ? embeds_from : NULL));
    }
    m->input_ids = gen_kvs_get(din, "input_ids");
    bool takes_tokens = false;
    for (int si = 0; si < m->n_stages; si++)
        for (int k = 0; k < m->stages[si].n_feeds; k++)
            takes_tokens |= m->stages[si].feeds[k].src == GEN_SRC_IDS;
    if (!takes_tokens)
        return og_errorf(OG_ERR_INCOMPLETE_MODEL, "%s: no graph of the package takes token ids "
                         "(model.decoder.inputs.input_ids)", m->cfg->path);
    if (!m->position_rank) m->position_rank = 2;
    /* attention that reads each row's length from the mask keeps rows compact */
    for (int si = 0; si < m->n_stages; si++) {
        const graph *g = runtime_session_graph(m->stages[si].s);
        for (int k = 0; k < g->n_nodes; k++)
            if (!strcmp(g->nodes[k].op_type, "GroupQueryAttention")) m->compact = true;
    }
    m->width_threshold = -1;
    for (int si = 0; si < m->n_stages && m->width_threshold < 0; si++)
        m->width_threshold = gen_mask_width_threshold(runtime_session_graph(m->stages[si].s),
                                                      m->attention_mask);
    if (in_list(qwen_vl_types, gm->type) || !strcmp(gm->type, "phi3v") ||
        !strcmp(gm->type, "gemma3"))
        OG_TRY(open_vision(m, o));
    char why[1024];
    OG_TRY(text_only_reason(m, why, sizeof why));
    if (why[0]) {
        if (!o->allow_text_only)
            return og_errorf(OG_ERR_UNSUPPORTED, "%s (refused: allow_text_only is 0)", why);
        if (!(m->text_only = strdup(why))) return og_oom();
        OG_TRY(add_warning(m, why));
    }
    return NULL;
}

/* A file given where a package folder belongs: an .onnx name, or a ModelProto's first
 * byte (field 1, ir_version, as a varint: 0x08) where JSON would start with '{'. */
static bool looks_like_onnx(const char *path) {
    size_t n = strlen(path);
    if (n >= 5 && strcmp(path + n - 5, ".onnx") == 0) return true;
    int fd;
    size_t size;
    og_status *st = pkg_open_regular(path, &fd, &size);
    if (st) {
        og_status_free(st);
        return false;
    }
    unsigned char b = 0;
    bool onnx = read(fd, &b, 1) == 1 && b == 0x08;
    close(fd);
    return onnx;
}

static og_model_options read_options(const og_model_options *options) {
    og_model_options o = og_model_options_default();
    if (options) { /* the fields the caller's struct_size has */
        size_t n = options->struct_size;
#define TAKE(field)                                                                      \
    if (n >= offsetof(og_model_options, field) + sizeof o.field) o.field = options->field
        o.num_threads = options->num_threads; /* there since the first version */
        TAKE(allow_text_only);
        TAKE(backend);
        TAKE(ort_library);
        TAKE(ort_provider);
        TAKE(graph_optimization_level);
        TAKE(plan_memory);
        TAKE(kv_dtype);
#undef TAKE
    }
    return o;
}

og_status *og_model_open_config(const og_config *config, const og_model_options *options,
                                og_model **out) {
    if (!config || !out)
        return og_errorf(OG_ERR_INVALID_ARGUMENT, "og_model_open_config: NULL argument");
    og_model_options o = read_options(options);
    /* the config's provider, unless the options name one */
    if (!o.ort_provider) o.ort_provider = gen_config_provider(config);
    og_model *m = calloc(1, sizeof *m);
    if (!m) return og_oom();
    og_status *st = gen_config_of(config, &m->cfg);
    if (!st && !(m->dir = strdup(m->cfg->dir))) st = og_oom();
    if (!st) st = open_model(m, &o);
    if (st) {
        og_status *ctx = og_oom_context(st, "%s: opening the model", m->dir ? m->dir : "config");
        og_model_close(m);
        return ctx;
    }
    *out = m;
    return NULL;
}

/* The package's genai_config.json as a document (NULL when it does not parse). */
static og_status *config_doc(const og_model *m, cJSON **doc) {
    char *buf = NULL;
    size_t len = 0;
    OG_TRY(pkg_read_file(m->cfg->path, PKG_MAX_JSON_BYTES, &buf, &len));
    *doc = cJSON_ParseWithLength(buf, len);
    free(buf);
    return NULL;
}

/* A second model of the package, from its config text with another block as the decoder
 * (text is freed; NULL: out of memory): opened, its logits as wide as m's. */
static og_status *open_sibling(og_model *m, const og_model_options *o, char *text,
                               og_model **out) {
    *out = NULL;
    og_model *d = calloc(1, sizeof *d);
    og_status *st = text && d ? NULL : og_oom();
    if (!st && !(d->dir = strdup(m->dir))) st = og_oom();
    if (!st) st = gen_config_parse(text, strlen(text), m->cfg->path, &d->cfg);
    free(text);
    if (!st) st = open_model(d, o);
    if (!st && d->vocab_size != m->vocab_size)
        st = og_errorf(OG_ERR_INVALID_MODEL, "its logits are %d wide, the decoder's %d",
                       d->vocab_size, m->vocab_size);
    if (st) {
        og_model_close(d);
        return st;
    }
    *out = d;
    return NULL;
}

/* model.BLOCK cannot be opened: a warning (it would only have made decoding faster),
 * unless memory ran out. Takes st. */
static og_status *sibling_unused(og_model *m, const char *block, og_status *st) {
    if (og_status_code(st) == OG_ERR_OUT_OF_MEMORY) return st;
    char msg[1024];
    snprintf(msg, sizeof msg, "%s: model.%s is not used (decoding is plain): %s",
             m->cfg->path, block, og_status_message(st));
    og_status_free(st);
    return add_warning(m, msg);
}

/* A package whose genai_config.json has a model.draft block (a decoder block: its graph,
 * inputs and outputs) drafts for itself, as onnxruntime-genai has it: the same config
 * with the draft block as the decoder, opened as a second model. A draft that cannot be
 * opened leaves a warning, not an error (it would only have made decoding faster). */
static og_status *open_draft(og_model *m, const og_model_options *o) {
    if (!gen_kvs_get(&m->cfg->model.extra, "draft")) return NULL;
    cJSON *doc;
    OG_TRY(config_doc(m, &doc));
    cJSON *blk = doc ? cJSON_GetObjectItemCaseSensitive(doc, "model") : NULL;
    cJSON *draft = blk ? cJSON_DetachItemFromObjectCaseSensitive(blk, "draft") : NULL;
    char *text = NULL;
    if (draft && cJSON_IsObject(draft) && cJSON_ReplaceItemInObjectCaseSensitive(blk, "decoder", draft)) {
        draft = NULL; /* the document owns it now */
        text = cJSON_PrintUnformatted(doc);
    }
    cJSON_Delete(draft);
    cJSON_Delete(doc);
    og_model *d;
    og_status *st = open_sibling(m, o, text, &d);
    if (!st) {
        m->draft = d;
        return NULL;
    }
    return sibling_unused(m, "draft", st);
}

/* The output `name` (a stage's) becomes m->hidden_out, returned to runs that ask. */
static og_status *set_hidden_out(og_model *m, const char *name) {
    for (int si = 0; si < m->n_stages; si++) {
        gen_stage *st = &m->stages[si];
        for (size_t k = 0; k < og_session_output_count(st->s); k++) {
            og_value_info v;
            OG_TRY(og_session_output_info(st->s, k, &v));
            if (strcmp(v.name, name) != 0) continue;
            if (v.rank != 3 || v.dims[2] <= 0)
                return og_errorf(OG_ERR_INVALID_MODEL, "%s: output '%s' of %s is not [batch, "
                                 "sequence, hidden] with a fixed hidden size", m->cfg->path,
                                 name, st->file);
            OG_TRY(add_out(st, v.name, GEN_SINK_HIDDEN, 0));
            m->hidden_out = v.name;
            m->hidden_size = (int)v.dims[2];
            m->hidden_dtype = v.dtype;
            return NULL;
        }
    }
    return og_errorf(OG_ERR_INVALID_MODEL, "%s: no graph of the package has the output '%s'",
                     m->cfg->path, name);
}

/* A package whose genai_config.json has a model.mtp block (onnxruntime-genai's builder
 * writes one with mtp.onnx for a checkpoint with MTP layers) drafts with that head
 * (genai/mtp.c): the decoder block with the mtp block's keys over it (its graph, layers,
 * the hidden_states input, outputs) is opened as a second model, and the decoder's output
 * named by main_hidden_states becomes the hidden rows the head reads. A head that cannot
 * be opened leaves a warning and no head. */
static og_status *open_mtp(og_model *m, const og_model_options *o) {
    if (!gen_kvs_get(&m->cfg->model.extra, "mtp")) return NULL;
    cJSON *doc;
    OG_TRY(config_doc(m, &doc));
    cJSON *blk = doc ? cJSON_GetObjectItemCaseSensitive(doc, "model") : NULL;
    cJSON *mtp = blk ? cJSON_DetachItemFromObjectCaseSensitive(blk, "mtp") : NULL;
    cJSON *dec = blk ? cJSON_GetObjectItemCaseSensitive(blk, "decoder") : NULL;
    const cJSON *on = mtp ? cJSON_GetObjectItemCaseSensitive(mtp, "enabled") : NULL;
    const cJSON *mh = mtp ? cJSON_GetObjectItemCaseSensitive(mtp, "main_hidden_states") : NULL;
    char main_hidden[256];
    snprintf(main_hidden, sizeof main_hidden, "%s",
             cJSON_IsString(mh) ? mh->valuestring : "hidden_states");
    char *text = NULL;
    bool skip = cJSON_IsFalse(on);
    if (!skip && cJSON_IsObject(mtp) && cJSON_IsObject(dec)) {
        cJSON *item;
        cJSON_ArrayForEach(item, mtp) {
            if (!strcmp(item->string, "enabled") || !strcmp(item->string, "main_hidden_states"))
                continue;
            cJSON *copy = cJSON_Duplicate(item, 1);
            if (!copy) break;
            if (cJSON_GetObjectItemCaseSensitive(dec, item->string))
                cJSON_ReplaceItemInObjectCaseSensitive(dec, item->string, copy);
            else
                cJSON_AddItemToObject(dec, item->string, copy);
        }
        text = cJSON_PrintUnformatted(doc);
    }
    cJSON_Delete(mtp);
    cJSON_Delete(doc);
    if (skip) return NULL;
    og_model *d;
    og_status *st = open_sibling(m, o, text, &d);
    bool takes_hidden = false;
    for (int si = 0; !st && si < d->n_stages; si++)
        for (int k = 0; k < d->stages[si].n_feeds; k++)
            takes_hidden |= d->stages[si].feeds[k].src == GEN_SRC_HIDDEN;
    if (!st && !takes_hidden)
        st = og_errorf(OG_ERR_INVALID_MODEL, "its graph takes no hidden states "
                       "(model.mtp.inputs.hidden_states)");
    const char *head_hidden = st ? NULL : gen_kvs_get(&d->cfg->model.decoder.c.outputs,
                                                      "hidden_states");
    if (head_hidden) { /* (without it, one draft per verification) */
        og_status *hs = set_hidden_out(d, head_hidden);
        og_status_free(hs);
    }
    if (!st) st = set_hidden_out(m, main_hidden);
    if (!st && d->hidden_out && d->hidden_size != m->hidden_size)
        st = og_errorf(OG_ERR_INVALID_MODEL, "its hidden states are %d wide, the decoder's %d",
                       d->hidden_size, m->hidden_size);
    if (!st) {
        m->mtp = d;
        return NULL;
    }
    og_model_close(d);
    m->hidden_out = NULL;
    return sibling_unused(m, "mtp", st);
}

og_status *og_model_open(const char *dir, const og_model_options *options, og_model **out) {
    if (!dir || !out) return og_errorf(OG_ERR_INVALID_ARGUMENT, "og_model_open: NULL argument");
    og_model_options o = read_options(options);
    og_model *m = calloc(1, sizeof *m);
    if (!m) return og_oom();
    og_status *st = NULL;
    m->dir = strdup(dir);
    if (!m->dir) {
        st = og_oom();
        goto fail;
    }
    struct stat sb;
    if (stat(dir, &sb) != 0) {
        st = og_errorf(OG_ERR_NOT_FOUND, "%s: no such model folder (expected a package with "
                       "genai_config.json)", dir);
        goto fail;
    }
    if (!S_ISDIR(sb.st_mode) && looks_like_onnx(dir)) {
        st = og_errorf(OG_ERR_INVALID_ARGUMENT, "%s: this is an ONNX graph, not a model "
                       "package: give the package folder (the one holding genai_config.json "
                       "and the graph); a single graph runs with og_session_open (the CLI's "
                       "'infer')", dir);
        goto fail;
    }
    if ((st = gen_config_load(dir, &m->cfg))) goto fail;
    if ((st = open_model(m, &o))) goto fail;
    if ((st = open_draft(m, &o))) goto fail;
    if ((st = open_mtp(m, &o))) goto fail;
    *out = m;
    return NULL;
fail:
    og_model_close(m);
    return og_oom_context(st, "%s: opening the model", dir);
}

void og_model_close(og_model *m) {
    if (!m) return;
    og_model_close(m->draft);
    og_model_close(m->mtp);
    profiler_free(m->prof);
    gen_guidance_free(m->guidance);
    for (int i = 0; i < m->n_cache; i++) {
        free(m->cache[i].past);
        free(m->cache[i].present);
    }
    free(m->cache);
    close_encoder(m);
    for (int i = 0; i < m->n_stages; i++) {
        og_session_close(m->stages[i].s);
        free(m->stages[i].name);
        free(m->stages[i].file);
        free(m->stages[i].path);
        free(m->stages[i].feeds);
        free(m->stages[i].outs);
    }
    free(m->stages);
    og_session_close(m->vision.s);
    free(m->vision.name);
    free(m->vision.file);
    free(m->vision.path);
    for (int i = 0; i < m->n_warnings; i++) free(m->warnings[i]);
    free(m->warnings);
    free(m->text_only);
    free(m->eos_ids);
    gen_config_free(m->cfg);
    free(m->dir);
    free(m);
}

const char *og_model_backend(const og_model *m) {
    return m && m->n_stages ? og_session_backend(m->stages[0].s) : "";
}

const char *og_model_type(const og_model *m) { return m ? m->cfg->model.type : ""; }
int og_model_vocab_size(const og_model *m) { return m ? m->vocab_size : 0; }
int32_t og_model_pad_token_id(const og_model *m) { return m ? m->pad_id : 0; }

int og_model_text_only(const og_model *m, const char **reason) {
    if (reason) *reason = m && m->text_only ? m->text_only : "";
    return m && m->text_only ? 1 : 0;
}

size_t og_model_warning_count(const og_model *m) { return m ? (size_t)m->n_warnings : 0; }

const char *og_model_warning(const og_model *m, size_t i) {
    return m && i < (size_t)m->n_warnings ? m->warnings[i] : "";
}

/* The package's speculative settings: genai_config's top-level "speculative" section
 * (onnxruntime-genai's option names; values are checked when a generator is made) and its
 * draft model. */
static void speculative_defaults(const og_model *m, og_generator_params *p) {
    const char *raw = gen_kvs_get(&m->cfg->extra, "speculative");
    cJSON *sec = raw ? cJSON_Parse(raw) : NULL;
    static const struct {
        const char *key;
        size_t off;
    } nums[] = {{"ngram_size", offsetof(og_generator_params, speculative_ngram_size)},
                {"max_draft_tokens", offsetof(og_generator_params, speculative_max_draft_tokens)},
                {"min_adaptive_k", offsetof(og_generator_params, speculative_min_adaptive_k)},
                {"ngram_chained_lookup",
                 offsetof(og_generator_params, speculative_ngram_chained_lookup)},
                {"cooldown", offsetof(og_generator_params, speculative_cooldown)}};
    for (size_t i = 0; sec && i < sizeof nums / sizeof nums[0]; i++) {
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(sec, nums[i].key);
        int *f = (int *)(void *)((char *)p + nums[i].off);
        if (cJSON_IsBool(v)) *f = cJSON_IsTrue(v);
        else if (cJSON_IsNumber(v) && v->valuedouble >= -1e9 && v->valuedouble <= 1e9)
            *f = (int)v->valuedouble;
    }
    cJSON_Delete(sec);
    if (m->draft && !p->speculative_ngram_size) p->speculative_draft_model = m->draft;
}

og_generator_params og_generator_params_default(const og_model *m) {
    og_generator_params p;
    memset(&p, 0, sizeof p);
    p.struct_size = sizeof p;
    const gen_search *s = m ? &m->cfg->search : NULL;
    p.batch_size = s ? s->batch_size : 1;
    p.max_length = s ? s->max_length : 0;
    p.min_length = s ? s->min_length : 0;
    p.do_sample = s ? s->do_sample : 0;
    p.top_k = s ? s->top_k : 50;
    p.top_p = s ? s->top_p : 1.0f;
    p.temperature = s ? s->temperature : 1.0f;
    p.repetition_penalty = s ? s->repetition_penalty : 1.0f;
    p.no_repeat_ngram_size = s ? s->no_repeat_ngram_size : 0;
    p.num_beams = s ? s->num_beams : 1;
    p.num_return_sequences = s ? s->num_return_sequences : 1;
    p.length_penalty = s ? s->length_penalty : 1.0f;
    p.early_stopping = s ? s->early_stopping : 1;
    p.random_seed = s ? s->random_seed : -1;
    p.all_logits = 1;
    p.speculative_max_draft_tokens = 4;
    if (m) speculative_defaults(m, &p);
    if (p.batch_size < 1) p.batch_size = 1;
    return p;
}

/* ---- profiling ---------------------------------------------------------------------- */

og_status *og_model_profile_start(og_model *m) {
    if (!m) return og_errorf(OG_ERR_INVALID_ARGUMENT, "og_model_profile_start: NULL model");
    if (!m->prof) OG_TRY(profiler_create(&m->prof));
    for (int i = 0; i < m->n_stages; i++) {
        og_status *st = runtime_session_set_profiler(m->stages[i].s, m->prof);
        if (st) {
            for (int k = 0; k < i; k++) og_status_free(runtime_session_set_profiler(m->stages[k].s, NULL));
            profiler_free(m->prof);
            m->prof = NULL;
            return st;
        }
    }
    return NULL;
}

og_status *og_model_profile_write(og_model *m, const char *path) {
    if (!m || !path) return og_errorf(OG_ERR_INVALID_ARGUMENT, "og_model_profile_write: NULL argument");
    if (!m->prof)
        return og_errorf(OG_ERR_INVALID_ARGUMENT, "og_model_profile_write: profiling was not "
                         "started (og_model_profile_start)");
    og_status *st = profiler_write_trace(m->prof, path);
    for (int i = 0; i < m->n_stages; i++) og_status_free(runtime_session_set_profiler(m->stages[i].s, NULL));
    profiler_free(m->prof);
    m->prof = NULL;
    return st;
}

void gen_model_plan_mem(const og_model *m, gen_plan_mem *out) {
    memset(out, 0, sizeof *out);
    for (int i = 0; m && i < m->n_stages; i++) {
        if (!m->stages[i].s) continue;
        backend_run_stats st;
        runtime_session_stats(m->stages[i].s, &st);
        out->bytes += st.plan_bytes;
        out->peak += st.plan_bytes_peak;
        out->plans += st.plans;
        out->evicted += st.plans_evicted;
        if (st.plan_budget > out->budget) out->budget = st.plan_budget;
    }
}

void og_model_plan_stats(const og_model *m, og_plan_stats *out) {
    gen_plan_mem full;
    gen_model_plan_mem(m, &full);
    full.struct_size = sizeof full;
    plan_stats_copy_out(&full, out);
}
