/* og_model_open: a package folder -> config, decoder session, and the decoder's
 * inputs and outputs resolved against the graph itself. */
#include "genai/model.h"

#include "base/pkg_file.h"

#include "genai/config.h"
#include "genai/generator.h"
#include "backends/native/session.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

og_model_options og_model_options_default(void) {
    og_model_options o;
    memset(&o, 0, sizeof o);
    o.struct_size = sizeof o;
    return o;
}

/* Model types whose decoder takes input_ids and a KV cache, as onnxruntime-genai's
 * decoder-only models do. */
static const char *const decoder_types[] = {
    "gpt2", "llama", "mistral", "phi", "phi3", "phi3small", "phimoe", "qwen2", "qwen3",
    "gemma", "gemma2", "gemma3_text", "granite", "smollm3", "olmo", "nemotron", "chatglm",
    "ernie4_5", "gptoss", "decoder", NULL};

static bool is_decoder_type(const char *t) {
    for (int i = 0; decoder_types[i]; i++)
        if (strcmp(decoder_types[i], t) == 0) return true;
    return false;
}

/* Index of a graph input by name, or -1. */
static int find_input(const og_session *s, const char *name) {
    for (size_t i = 0; i < og_session_input_count(s); i++) {
        og_value_info v;
        if (!og_session_input_info(s, i, &v) && strcmp(v.name, name) == 0) return (int)i;
    }
    return -1;
}

static int find_output(const og_session *s, const char *name) {
    for (size_t i = 0; i < og_session_output_count(s); i++) {
        og_value_info v;
        if (!og_session_output_info(s, i, &v) && strcmp(v.name, name) == 0) return (int)i;
    }
    return -1;
}

/* Binds an optional nominal input to the graph's input of the configured name. */
static void bind_optional(og_model *m, gen_io *io, const char *nominal) {
    const char *name = gen_kvs_get(&m->cfg->model.decoder.c.inputs, nominal);
    int i = name ? find_input(m->decoder, name) : -1;
    if (i < 0) return;
    og_value_info v;
    og_session_input_info(m->decoder, (size_t)i, &v);
    io->name = v.name;
    io->dtype = v.dtype;
}

static og_status *name_list(og_model *m, const char *tmpl, const char *key, bool input,
                            char **names, int stride, int offset) {
    for (int l = 0; l < m->n_layers; l++) {
        char buf[512];
        og_status *st = gen_config_format_name(tmpl, l, buf, sizeof buf);
        if (st)
            return og_status_wrap(st, "%s: model.decoder.%s.%s", m->cfg->path,
                                  input ? "inputs" : "outputs", key);
        int idx = input ? find_input(m->decoder, buf) : find_output(m->decoder, buf);
        if (idx < 0)
            return og_errorf(OG_ERR_INVALID_MODEL, "%s: model.decoder.%s.%s names '%s' for "
                             "layer %d, but the decoder graph %s has no such %s", m->cfg->path,
                             input ? "inputs" : "outputs", key, buf, l,
                             m->cfg->model.decoder.c.filename, input ? "input" : "output");
        names[l * stride + offset] = strdup(buf);
        if (!names[l * stride + offset]) return og_oom();
    }
    return NULL;
}

/* Reads heads and head size of the cache from the past input's declared shape, falling
 * back to the config where the graph leaves them symbolic. */
static og_status *cache_shape(og_model *m) {
    int i = find_input(m->decoder, m->past_names[0]);
    og_value_info v;
    OG_TRY(og_session_input_info(m->decoder, (size_t)i, &v));
    int want = m->kv == GEN_KV_COMBINED ? 5 : 4;
    if (v.rank != want)
        return og_errorf(OG_ERR_INVALID_MODEL, "%s: cache input '%s' has rank %d, expected %d",
                         m->cfg->model.decoder.c.filename, v.name, v.rank, want);
    m->kv_dtype = v.dtype;
    const gen_decoder *d = &m->cfg->model.decoder;
    int64_t heads = v.dims[want - 3], hs = v.dims[want - 1];
    m->kv_heads = heads > 0 ? (int)heads
                            : (d->num_key_value_heads > 0 ? d->num_key_value_heads
                                                          : d->num_attention_heads);
    m->head_size = hs > 0 ? (int)hs : d->head_size;
    if (m->kv_heads <= 0 || m->head_size <= 0)
        return og_errorf(OG_ERR_INVALID_MODEL, "%s: cannot tell the cache's heads and head size: "
                         "input '%s' leaves them symbolic and the config lacks "
                         "model.decoder.num_key_value_heads / head_size",
                         m->cfg->path, v.name);
    if (m->kv_dtype != OG_FLOAT32 && m->kv_dtype != OG_FLOAT16 && m->kv_dtype != OG_BFLOAT16)
        return og_errorf(OG_ERR_UNSUPPORTED, "%s: cache input '%s' has dtype %s",
                         m->cfg->model.decoder.c.filename, v.name, og_dtype_name(v.dtype));
    return NULL;
}

/* Every graph input must be one the generator feeds. */
static og_status *check_all_inputs_known(og_model *m) {
    for (size_t i = 0; i < og_session_input_count(m->decoder); i++) {
        og_value_info v;
        OG_TRY(og_session_input_info(m->decoder, i, &v));
        bool known = (m->input_ids.name && !strcmp(v.name, m->input_ids.name)) ||
                     (m->attention_mask.name && !strcmp(v.name, m->attention_mask.name)) ||
                     (m->position_ids.name && !strcmp(v.name, m->position_ids.name));
        for (int k = 0; !known && k < m->n_past; k++) known = !strcmp(v.name, m->past_names[k]);
        if (!known)
            return og_errorf(OG_ERR_UNSUPPORTED, "%s: decoder input '%s' is not one the generator "
                             "knows how to feed (input_ids, attention_mask, position_ids and the "
                             "KV cache named in genai_config.json)",
                             m->cfg->model.decoder.c.filename, v.name);
    }
    return NULL;
}

static og_status *resolve_io(og_model *m) {
    const gen_decoder *d = &m->cfg->model.decoder;
    const char *ids = gen_kvs_get(&d->c.inputs, "input_ids");
    if (!ids || find_input(m->decoder, ids) < 0) {
        const char *emb = gen_kvs_get(&d->c.inputs, "inputs_embeds");
        if (emb && find_input(m->decoder, emb) >= 0)
            return og_errorf(OG_ERR_UNSUPPORTED, "%s: the decoder takes inputs_embeds, which needs "
                             "the package's embedding model; not supported yet", m->cfg->path);
        return og_errorf(OG_ERR_INVALID_MODEL, "%s: model.decoder.inputs.input_ids is '%s', but "
                         "the decoder graph %s has no such input", m->cfg->path,
                         ids ? ids : "(unset)", d->c.filename);
    }
    bind_optional(m, &m->input_ids, "input_ids");
    bind_optional(m, &m->attention_mask, "attention_mask");
    bind_optional(m, &m->position_ids, "position_ids");
    const char *logits = gen_kvs_get(&d->c.outputs, "logits");
    int lo = logits ? find_output(m->decoder, logits) : -1;
    if (lo < 0)
        return og_errorf(OG_ERR_INVALID_MODEL, "%s: model.decoder.outputs.logits is '%s', but "
                         "the decoder graph %s has no such output", m->cfg->path,
                         logits ? logits : "(unset)", d->c.filename);
    og_value_info lv;
    OG_TRY(og_session_output_info(m->decoder, (size_t)lo, &lv));
    m->logits.name = lv.name;
    m->logits.dtype = lv.dtype;
    if (lv.dtype != OG_FLOAT32 && lv.dtype != OG_FLOAT16 && lv.dtype != OG_BFLOAT16)
        return og_errorf(OG_ERR_UNSUPPORTED, "%s: output '%s' has dtype %s; logits must be "
                         "float32, float16 or bfloat16", d->c.filename, lv.name,
                         og_dtype_name(lv.dtype));
    if (lv.rank == 3 && lv.dims[2] > 0 && lv.dims[2] != m->vocab_size)
        return og_errorf(OG_ERR_INVALID_MODEL, "%s: model.vocab_size is %d, but the decoder's "
                         "'%s' has %lld entries per token", m->cfg->path, m->vocab_size, lv.name,
                         (long long)lv.dims[2]);

    m->n_layers = d->num_hidden_layers;
    const char *past = gen_kvs_get_explicit(&d->c.inputs, "past_names");
    const char *past_k = gen_kvs_get(&d->c.inputs, "past_key_names");
    bool combined = past || strcmp(m->cfg->model.type, "gpt2") == 0;
    if (combined && !past) past = gen_kvs_get(&d->c.inputs, "past_names");
    if (m->n_layers <= 0) {
        m->kv = GEN_KV_NONE;
    } else if (combined && past && find_input(m->decoder, past) < 0) {
        /* a template: past_%d */
        m->kv = GEN_KV_COMBINED;
    } else {
        m->kv = combined ? GEN_KV_COMBINED : GEN_KV_SEPARATE;
    }
    if (m->kv != GEN_KV_NONE) {
        int per = m->kv == GEN_KV_COMBINED ? 1 : 2;
        m->n_past = per * m->n_layers;
        m->past_names = calloc((size_t)m->n_past, sizeof(char *));
        m->present_names = calloc((size_t)m->n_past, sizeof(char *));
        if (!m->past_names || !m->present_names) return og_oom();
        if (m->kv == GEN_KV_COMBINED) {
            const char *pres = gen_kvs_get(&d->c.outputs, "present_names");
            OG_TRY(name_list(m, past, "past_names", true, m->past_names, 1, 0));
            OG_TRY(name_list(m, pres, "present_names", false, m->present_names, 1, 0));
        } else {
            const char *pv = gen_kvs_get(&d->c.inputs, "past_value_names");
            const char *ok = gen_kvs_get(&d->c.outputs, "present_key_names");
            const char *ov = gen_kvs_get(&d->c.outputs, "present_value_names");
            OG_TRY(name_list(m, past_k, "past_key_names", true, m->past_names, 2, 0));
            OG_TRY(name_list(m, pv, "past_value_names", true, m->past_names, 2, 1));
            OG_TRY(name_list(m, ok, "present_key_names", false, m->present_names, 2, 0));
            OG_TRY(name_list(m, ov, "present_value_names", false, m->present_names, 2, 1));
        }
        OG_TRY(cache_shape(m));
    }
    return check_all_inputs_known(m);
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

og_status *og_model_open(const char *dir, const og_model_options *options, og_model **out) {
    if (!dir || !out) return og_errorf(OG_ERR_INVALID_ARGUMENT, "og_model_open: NULL argument");
    og_model_options o = og_model_options_default();
    if (options) o.num_threads = options->num_threads;
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
    const gen_model *gm = &m->cfg->model;
    if (!is_decoder_type(gm->type)) {
        st = og_errorf(OG_ERR_UNSUPPORTED, "%s: model.type '%s' is not supported yet (supported: "
                       "decoder-only models such as gpt2, llama, qwen2, phi3)", m->cfg->path,
                       gm->type);
        goto fail;
    }
    if (!gm->decoder.c.filename) {
        st = og_errorf(OG_ERR_INVALID_MODEL, "%s: model.decoder.filename is missing", m->cfg->path);
        goto fail;
    }
    m->vocab_size = gm->vocab_size;
    m->context_length = gm->context_length;
    m->pad_id = gm->pad_token_id;
    m->bos_id = gm->bos_token_id;
    m->n_eos = gm->n_eos_token_ids;
    m->eos_ids = calloc((size_t)m->n_eos + 1, sizeof *m->eos_ids);
    if (!m->eos_ids) {
        st = og_oom();
        goto fail;
    }
    memcpy(m->eos_ids, gm->eos_token_ids, sizeof(int32_t) * (size_t)m->n_eos);
    if (m->vocab_size <= 0) {
        st = og_errorf(OG_ERR_INVALID_MODEL, "%s: model.vocab_size is %d, expected > 0",
                       m->cfg->path, m->vocab_size);
        goto fail;
    }
    char *path = NULL;
    if ((st = pkg_path_join(m->cfg->dir, gm->decoder.c.filename, m->cfg->path,
                            "model.decoder.filename", &path)))
        goto fail;
    og_session_options so = og_session_options_default();
    so.num_threads = o.num_threads;
    if (so.num_threads == 0 && gm->decoder.c.session_options.intra_op_num_threads > 0)
        so.num_threads = gm->decoder.c.session_options.intra_op_num_threads;
    st = og_session_open(path, &so, &m->decoder);
    free(path);
    if (st) {
        st = og_status_wrap(st, "%s: model.decoder.filename", m->cfg->path);
        goto fail;
    }
    if ((st = resolve_io(m))) goto fail;
    *out = m;
    return NULL;
fail:
    og_model_close(m);
    return st;
}

void og_model_close(og_model *m) {
    if (!m) return;
    for (int i = 0; i < m->n_past; i++) {
        if (m->past_names) free(m->past_names[i]);
        if (m->present_names) free(m->present_names[i]);
    }
    free(m->past_names);
    free(m->present_names);
    free(m->eos_ids);
    og_session_close(m->decoder);
    gen_config_free(m->cfg);
    free(m->dir);
    free(m);
}

const char *og_model_type(const og_model *m) { return m ? m->cfg->model.type : ""; }
int og_model_vocab_size(const og_model *m) { return m ? m->vocab_size : 0; }
int32_t og_model_pad_token_id(const og_model *m) { return m ? m->pad_id : 0; }

size_t og_model_warning_count(const og_model *m) {
    return m ? (size_t)m->cfg->n_warnings : 0;
}

const char *og_model_warning(const og_model *m, size_t i) {
    return m && i < (size_t)m->cfg->n_warnings ? m->cfg->warnings[i] : "";
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
    if (p.batch_size < 1) p.batch_size = 1;
    return p;
}

og_status *og_generator_create(og_model *m, const og_generator_params *params,
                               og_generator **out) {
    if (!m || !out) return og_errorf(OG_ERR_INVALID_ARGUMENT, "og_generator_create: NULL argument");
    og_generator_params p = params ? *params : og_generator_params_default(m);
    if (params && params->struct_size < sizeof p)
        return og_errorf(OG_ERR_INVALID_ARGUMENT, "og_generator_params.struct_size is %zu; fill "
                         "params from og_generator_params_default()", params->struct_size);
    if (p.max_length <= 0) p.max_length = m->context_length;
    if (p.batch_size < 1 || p.num_beams < 1 || p.max_length < 1)
        return og_errorf(OG_ERR_INVALID_ARGUMENT, "generator: batch_size %d, num_beams %d and "
                         "max_length %d must be >= 1", p.batch_size, p.num_beams, p.max_length);
    if (m->context_length > 0 && p.max_length > m->context_length)
        return og_errorf(OG_ERR_INVALID_ARGUMENT, "generator: max_length %d exceeds the model's "
                         "context_length %d", p.max_length, m->context_length);
    if (p.num_return_sequences < 1 || (p.num_beams > 1 && p.num_return_sequences > p.num_beams))
        return og_errorf(OG_ERR_INVALID_ARGUMENT, "generator: num_return_sequences %d must be in "
                         "[1, num_beams %d]", p.num_return_sequences, p.num_beams);
    if (p.num_beams > 1 && p.do_sample)
        return og_errorf(OG_ERR_INVALID_ARGUMENT, "generator: sampling cannot be combined with "
                         "beam search (num_beams %d)", p.num_beams);
    if (p.do_sample && (p.top_p < 0 || p.top_p > 1 || p.top_k < 0 || p.temperature < 0))
        return og_errorf(OG_ERR_INVALID_ARGUMENT, "generator: top_p %g must be in [0, 1], top_k "
                         "%d and temperature %g >= 0", p.top_p, p.top_k, p.temperature);
    og_generator *g = calloc(1, sizeof *g);
    if (!g) return og_oom();
    g->m = m;
    g->p = p;
    if (g->p.top_p <= 0) g->p.top_p = 1.0f; /* 0 means no top-p filtering */
    if (p.num_beams == 1) g->p.num_return_sequences = 1;
    g->rows = p.batch_size * p.num_beams;
    g->max_len = p.max_length;
    g->share_buffer = m->cfg->search.past_present_share_buffer && p.num_beams == 1 &&
                      m->kv == GEN_KV_SEPARATE;
    og_status *st = gen_generator_alloc(g);
    if (!st && p.num_beams > 1) {
        g->beam_opts = (gen_beam_options){
            .batch = p.batch_size, .num_beams = p.num_beams, .vocab = m->vocab_size,
            .max_length = p.max_length, .num_return_sequences = p.num_return_sequences,
            .length_penalty = p.length_penalty, .early_stopping = p.early_stopping != 0,
            .eos_ids = m->eos_ids, .n_eos = m->n_eos, .pad_id = m->pad_id};
        st = gen_beam_create(&g->beam_opts, &g->beam);
    }
    if (st) {
        gen_generator_free(g);
        return st;
    }
    uint64_t seed = p.random_seed >= 0 ? (uint64_t)p.random_seed
                                       : (uint64_t)time(NULL) ^ (uint64_t)(uintptr_t)g;
    gen_rng_seed(&g->rng, seed);
    *out = g;
    return NULL;
}

void og_generator_destroy(og_generator *g) { gen_generator_free(g); }
