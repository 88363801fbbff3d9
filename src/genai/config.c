/* genai_config.json parser. The schema (key names, value types, defaults) follows what
 * onnxruntime-genai 0.18.0 accepts; it was established by feeding the package's
 * Config.overlay() every candidate key under every block with a null, an object and an
 * array value and reading which keys it rejects as unknown and which type it expects,
 * plus the shared model packages. Where onnxruntime-genai rejects an unknown key we only
 * warn (a newer package should still load), and where it accepts impossible values
 * (negative lengths, top_p 1.5, ...) we reject them.
 *
 * Search defaults (verified with onnxruntime_genai 0.18.0: og.Config(dir) ->
 * og.Model -> og.GeneratorParams(model).get_search_options() on
 * shared/models/ortgenai/hf-internal-testing/tiny-random-gpt2-fp32, whose config has no
 * "search" block, and on engine/dummy-decoder, which only sets max_length):
 *   do_sample false, min_length 0, max_length = model.context_length (512 for gpt2),
 *   batch_size 1, num_beams 1, num_return_sequences 1, top_k 50, top_p 0.0 (= off),
 *   temperature 1.0, repetition_penalty 1.0, length_penalty 1.0, diversity_penalty 0.0,
 *   no_repeat_ngram_size 0, early_stopping true, past_present_share_buffer false,
 *   random_seed -1, chunk_size 0.
 * The same probe showed: integers written as 5.5 are rejected, a missing or zero
 * model.context_length is an error, eos_token_id may be an int or a list of ints,
 * session_options keys that are not known options are string config entries, and
 * graph_optimization_level is one of ORT_DISABLE_ALL / ORT_ENABLE_BASIC /
 * ORT_ENABLE_EXTENDED / ORT_ENABLE_ALL. */
#include "genai/config.h"

#include "base/pkg_file.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define CONFIG_NAME "genai_config.json"

/* ---- small owned-string helpers ---------------------------------------------------- */

static char *dup_str(const char *s) {
    size_t n = strlen(s) + 1;
    char *d = malloc(n);
    if (d) memcpy(d, s, n);
    return d;
}

static og_status *set_str(char **dst, const char *s) {
    char *d = dup_str(s);
    if (!d) return og_oom();
    free(*dst);
    *dst = d;
    return NULL;
}

static void free_strv(char **v, int n) {
    for (int i = 0; i < n; i++) free(v[i]);
    free(v);
}

/* ---- gen_kvs ----------------------------------------------------------------------- */

static gen_kv *kvs_find(const gen_kvs *t, const char *key) {
    for (int i = 0; i < t->n; i++)
        if (strcmp(t->items[i].key, key) == 0) return &t->items[i];
    return NULL;
}

const char *gen_kvs_get(const gen_kvs *t, const char *key) {
    const gen_kv *kv = t ? kvs_find(t, key) : NULL;
    return kv ? kv->value : NULL;
}

const char *gen_kvs_get_explicit(const gen_kvs *t, const char *key) {
    const gen_kv *kv = t ? kvs_find(t, key) : NULL;
    return kv && !kv->is_default ? kv->value : NULL;
}

/* Inserts or replaces; a default never replaces a value from the file. */
static og_status *kvs_set(gen_kvs *t, const char *key, const char *value, bool is_default) {
    gen_kv *kv = kvs_find(t, key);
    if (kv) {
        if (is_default && !kv->is_default) return NULL;
        OG_TRY(set_str(&kv->value, value));
        kv->is_default = is_default;
        return NULL;
    }
    if (t->n == t->cap) {
        int cap = t->cap ? t->cap * 2 : 8;
        gen_kv *items = realloc(t->items, (size_t)cap * sizeof *items);
        if (!items) return og_oom();
        t->items = items;
        t->cap = cap;
    }
    char *k = dup_str(key), *v = dup_str(value);
    if (!k || !v) {
        free(k);
        free(v);
        return og_oom();
    }
    t->items[t->n++] = (gen_kv){k, v, is_default};
    return NULL;
}

static void kvs_free(gen_kvs *t) {
    for (int i = 0; i < t->n; i++) {
        free(t->items[i].key);
        free(t->items[i].value);
    }
    free(t->items);
    memset(t, 0, sizeof *t);
}

/* ---- name templates ---------------------------------------------------------------- */

const char *gen_config_check_template(const char *t) {
    if (!t) return "the template is missing";
    int n_d = 0;
    for (const char *p = t; *p; p++) {
        if (*p != '%') continue;
        if (p[1] == '%') {
            p++;
        } else if (p[1] == 'd') {
            if (++n_d > 1) return "it has more than one %d";
            p++;
        } else {
            return "'%' must be followed by 'd' (the layer index) or '%'";
        }
    }
    return NULL;
}

og_status *gen_config_format_name(const char *t, int layer, char *buf, size_t size) {
    const char *why = gen_config_check_template(t);
    if (why)
        return og_errorf(OG_ERR_INVALID_ARGUMENT, "name template '%s': %s", t ? t : "(null)",
                         why);
    if (layer < 0)
        return og_errorf(OG_ERR_INVALID_ARGUMENT, "name template '%s': layer %d is negative", t,
                         layer);
    if (!buf || size == 0)
        return og_errorf(OG_ERR_INVALID_ARGUMENT, "name template '%s': no output buffer", t);
    size_t o = 0;
    char num[16];
    for (const char *p = t; *p; p++) {
        const char *piece = p;
        size_t len = 1;
        if (*p == '%' && p[1] == '%') {
            p++;
        } else if (*p == '%' && p[1] == 'd') {
            len = (size_t)snprintf(num, sizeof num, "%d", layer);
            piece = num;
            p++;
        }
        if (o + len >= size)
            return og_errorf(OG_ERR_INVALID_ARGUMENT,
                             "name template '%s' with layer %d does not fit in %zu bytes", t,
                             layer, size);
        memcpy(buf + o, piece, len);
        o += len;
    }
    buf[o] = '\0';
    return NULL;
}

/* ---- parse context ----------------------------------------------------------------- */

typedef struct pctx {
    const char *file;
    gen_config *cfg;
} pctx;

static og_status *warnf(pctx *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static og_status *warnf(pctx *c, const char *fmt, ...) {
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    char **w = realloc(c->cfg->warnings, (size_t)(c->cfg->n_warnings + 1) * sizeof *w);
    if (!w) return og_oom();
    c->cfg->warnings = w;
    if (!(w[c->cfg->n_warnings] = dup_str(msg))) return og_oom();
    c->cfg->n_warnings++;
    return NULL;
}

/* A short description of a JSON value for messages: 1.5, "abc", true, an array, ... */
static const char *describe(const cJSON *v, char *buf, size_t size) {
    if (cJSON_IsNumber(v)) {
        snprintf(buf, size, "%.17g", v->valuedouble);
        /* shortest form that reads back: try fewer digits first */
        for (int prec = 1; prec <= 17; prec++) {
            char tmp[64];
            snprintf(tmp, sizeof tmp, "%.*g", prec, v->valuedouble);
            if (strtod(tmp, NULL) == v->valuedouble) {
                snprintf(buf, size, "%s", tmp);
                break;
            }
        }
    } else if (cJSON_IsString(v)) {
        snprintf(buf, size, "\"%.40s%s\"", v->valuestring,
                 strlen(v->valuestring) > 40 ? "..." : "");
    } else if (cJSON_IsBool(v)) {
        snprintf(buf, size, "%s", cJSON_IsTrue(v) ? "true" : "false");
    } else if (cJSON_IsNull(v)) {
        snprintf(buf, size, "null");
    } else if (cJSON_IsArray(v)) {
        snprintf(buf, size, "an array");
    } else if (cJSON_IsObject(v)) {
        snprintf(buf, size, "an object");
    } else {
        snprintf(buf, size, "invalid");
    }
    return buf;
}

static og_status *bad_value(pctx *c, const char *path, const cJSON *v, const char *expected) {
    char d[96];
    return og_errorf(OG_ERR_INVALID_MODEL, "%s: %s is %s, expected %s", c->file, path,
                     describe(v, d, sizeof d), expected);
}

/* Child path "parent.key" (or "key" at the top). Truncates silently: paths are only used
 * in messages. */
static void child_path(char *out, size_t size, const char *parent, const char *key) {
    if (parent && *parent)
        snprintf(out, size, "%s.%s", parent, key);
    else
        snprintf(out, size, "%s", key);
}

#define PATH_MAX_LEN 320

static og_status *get_int_range(pctx *c, const char *path, const cJSON *v, long long lo,
                                long long hi, long long *out) {
    char what[96];
    if (lo <= INT_MIN)
        snprintf(what, sizeof what, "an integer");
    else if (hi == INT_MAX || hi == LLONG_MAX)
        snprintf(what, sizeof what, "an integer >= %lld", lo);
    else
        snprintf(what, sizeof what, "an integer in [%lld, %lld]", lo, hi);
    if (!cJSON_IsNumber(v)) return bad_value(c, path, v, what);
    double d = v->valuedouble;
    /* 2^63 itself does not fit: compare against it exactly */
    if (!isfinite(d) || d != floor(d) || d < -9223372036854775808.0 ||
        d >= 9223372036854775808.0)
        return bad_value(c, path, v, what);
    long long i = (long long)d;
    if (i < lo || i > hi) return bad_value(c, path, v, what);
    *out = i;
    return NULL;
}

/* Like get_int_range, but an integer above the range says so ("too large", with the
 * limit) rather than that an integer was expected. */
static og_status *get_int_limited(pctx *c, const char *path, const cJSON *v, long long lo,
                                  long long hi, long long *out) {
    if (cJSON_IsNumber(v) && isfinite(v->valuedouble) && v->valuedouble == floor(v->valuedouble)) {
        char d[96];
        if (v->valuedouble >= (double)hi + 1.0) /* exact for INT_MAX; 2^63 for LLONG_MAX */
            return og_errorf(OG_ERR_INVALID_MODEL, "%s: %s is %s, too large: at most %lld",
                             c->file, path, describe(v, d, sizeof d), hi);
    }
    return get_int_range(c, path, v, lo, hi, out);
}

static og_status *get_int(pctx *c, const char *path, const cJSON *v, int lo, int *out) {
    long long i = 0;
    OG_TRY(get_int_limited(c, path, v, lo, INT_MAX, &i));
    *out = (int)i;
    return NULL;
}

static og_status *get_num(pctx *c, const char *path, const cJSON *v, double *out) {
    if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble)) return bad_value(c, path, v, "a number");
    *out = v->valuedouble;
    return NULL;
}

static og_status *get_bool(pctx *c, const char *path, const cJSON *v, bool *out) {
    if (!cJSON_IsBool(v)) return bad_value(c, path, v, "true or false");
    *out = cJSON_IsTrue(v);
    return NULL;
}

static og_status *get_tri(pctx *c, const char *path, const cJSON *v, int *out) {
    bool b = false;
    OG_TRY(get_bool(c, path, v, &b));
    *out = b ? 1 : 0;
    return NULL;
}

static og_status *get_str(pctx *c, const char *path, const cJSON *v, char **out) {
    if (!cJSON_IsString(v)) return bad_value(c, path, v, "a string");
    return set_str(out, v->valuestring);
}

static og_status *get_object(pctx *c, const char *path, const cJSON *v) {
    return cJSON_IsObject(v) ? NULL : bad_value(c, path, v, "an object");
}

static og_status *get_strv(pctx *c, const char *path, const cJSON *v, char ***out, int *n) {
    if (!cJSON_IsArray(v)) return bad_value(c, path, v, "an array of strings");
    int count = cJSON_GetArraySize(v);
    char **arr = calloc((size_t)count + 1, sizeof *arr);
    if (!arr) return og_oom();
    int i = 0;
    const cJSON *e;
    cJSON_ArrayForEach(e, v) {
        if (!cJSON_IsString(e)) {
            char p[PATH_MAX_LEN];
            snprintf(p, sizeof p, "%s[%d]", path, i);
            free_strv(arr, i);
            return bad_value(c, p, e, "a string");
        }
        if (!(arr[i] = dup_str(e->valuestring))) {
            free_strv(arr, i);
            return og_oom();
        }
        i++;
    }
    free_strv(*out, *n);
    *out = arr;
    *n = count;
    return NULL;
}

/* Keeps a known-but-unused value as raw JSON text under its key. */
static og_status *keep_raw(gen_kvs *t, const cJSON *v) {
    char *text = cJSON_PrintUnformatted(v);
    if (!text) return og_oom();
    og_status *st = kvs_set(t, v->string, text, false);
    cJSON_free(text);
    return st;
}

static bool in_list(const char *key, const char *const *list) {
    for (; list && *list; list++)
        if (strcmp(key, *list) == 0) return true;
    return false;
}

static og_status *unknown_key(pctx *c, const char *path) {
    return warnf(c, "%s: %s: unknown key, ignored", c->file, path);
}

/* An unknown input/output name is still kept: a newer exporter's names need no code. */
static og_status *unknown_name(pctx *c, const char *path) {
    return warnf(c, "%s: %s: unknown key, kept as a name", c->file, path);
}

/* ---- name tables (inputs / outputs) ------------------------------------------------ */

/* Known nominal names and onnxruntime-genai's default graph names (NULL: no default). */
typedef struct name_default {
    const char *key, *dflt;
} name_default;

static const name_default decoder_inputs[] = {
    {"input_ids", "input_ids"},
    {"inputs_embeds", "inputs_embeds"},
    {"attention_mask", "attention_mask"},
    {"position_ids", "position_ids"},
    {"past_key_names", "past_key_values.%d.key"},
    {"past_value_names", "past_key_values.%d.value"},
    {"past_names", NULL},
    {"cross_past_key_names", NULL},
    {"cross_past_value_names", NULL},
    {"past_key_values_length", "past_key_values_length"},
    {"past_sequence_length", "past_sequence_length"},
    {"current_sequence_length", "current_sequence_length"},
    {"total_sequence_length", "total_sequence_length"},
    {"cache_indirection", "cache_indirection"},
    {"encoder_hidden_states", "encoder_hidden_states"},
    {"encoder_attention_mask", "encoder_attention_mask"},
    {"rnn_states_prev", "rnn_states_prev"},
    {"past_key_scale_names", NULL},
    {"past_value_scale_names", NULL},
    {"past_conv_names", NULL},
    {"past_recurrent_names", NULL},
    {"block_table", NULL},
    {"block_table_windowed", NULL},
    {"cumulative_sequence_lengths", NULL},
    {"past_sequence_lengths", NULL},
    {"attention_metadata", NULL},
    {"logits_indices", NULL},
    {"hidden_states", NULL},
    {"per_layer_inputs", NULL},
    {"state_update_active", NULL},
    {"state_update_capture_count", NULL},
    {"lstm_cell_state", NULL},
    {"lstm_hidden_state", NULL},
    {"targets", NULL},
    {"targets_length", NULL},
    {NULL, NULL},
};

static const name_default decoder_outputs[] = {
    {"logits", "logits"},
    {"present_key_names", "present.%d.key"},
    {"present_value_names", "present.%d.value"},
    {"present_names", NULL},
    {"output_cross_qk_names", "output_cross_qk_%d"},
    {"rnn_states", "rnn_states"},
    {"present_key_scale_names", NULL},
    {"present_value_scale_names", NULL},
    {"present_conv_names", NULL},
    {"present_recurrent_names", NULL},
    {"state_update_conv_value_names", NULL},
    {"state_update_recurrent_capsule_names", NULL},
    {"hidden_states", NULL},
    {"aux_hidden_states", NULL},
    {"lstm_cell_state", NULL},
    {"lstm_hidden_state", NULL},
    {"outputs", NULL},
    {"outputs_length", NULL},
    {NULL, NULL},
};

static const name_default embedding_inputs[] = {
    {"input_ids", "input_ids"},
    {"image_features", "image_features"},
    {"audio_features", "audio_features"},
    {NULL, NULL},
};
static const name_default embedding_outputs[] = {
    {"inputs_embeds", "inputs_embeds"},
    {"per_layer_inputs", NULL},
    {NULL, NULL},
};
static const name_default vision_inputs[] = {
    {"pixel_values", "pixel_values"},
    {"image_sizes", "image_sizes"},
    {"attention_mask", "image_attention_mask"},
    {"image_grid_thw", NULL},
    {"pixel_position_ids", NULL},
    {NULL, NULL},
};
static const name_default vision_outputs[] = {
    {"image_features", "image_features"},
    {NULL, NULL},
};
static const name_default speech_inputs[] = {
    {"audio_embeds", "audio_embeds"},
    {"attention_mask", "audio_attention_mask"},
    {"audio_sizes", "audio_sizes"},
    {"audio_projection_mode", "audio_projection_mode"},
    {"audio_lengths", NULL},
    {NULL, NULL},
};
static const name_default speech_outputs[] = {
    {"audio_features", "audio_features"},
    {NULL, NULL},
};
static const name_default encoder_inputs[] = {
    {"input_ids", "input_ids"},
    {"inputs_embeds", "inputs_embeds"},
    {"attention_mask", "attention_mask"},
    {"position_ids", "position_ids"},
    {"audio_features", "audio_features"},
    {"input_lengths", NULL},
    {"lang_id", NULL},
    {"cache_last_channel", NULL},
    {"cache_last_channel_len", NULL},
    {"cache_last_time", NULL},
    {NULL, NULL},
};
static const name_default encoder_outputs[] = {
    {"encoder_outputs", "encoder_outputs"},
    {"encoder_hidden_states", "encoder_hidden_states"},
    {"cross_present_key_names", "present_key_cross_%d"},
    {"cross_present_value_names", "present_value_cross_%d"},
    {"output_lengths", NULL},
    {"cache_last_channel_next", NULL},
    {"cache_last_time_next", NULL},
    {"cache_last_channel_len_next", NULL},
    {NULL, NULL},
};

static const name_default *find_name(const name_default *known, const char *key) {
    for (; known && known->key; known++)
        if (strcmp(known->key, key) == 0) return known;
    return NULL;
}

static og_status *parse_names(pctx *c, const char *path, const cJSON *obj,
                              const name_default *known, gen_kvs *out) {
    OG_TRY(get_object(c, path, obj));
    const cJSON *v;
    cJSON_ArrayForEach(v, obj) {
        char p[PATH_MAX_LEN];
        child_path(p, sizeof p, path, v->string);
        if (!cJSON_IsString(v)) return bad_value(c, p, v, "a string (a graph input/output name)");
        const char *why = gen_config_check_template(v->valuestring);
        if (why)
            return og_errorf(OG_ERR_INVALID_MODEL, "%s: %s is \"%s\": %s", c->file, p,
                             v->valuestring, why);
        if (!find_name(known, v->string)) OG_TRY(unknown_name(c, p));
        OG_TRY(kvs_set(out, v->string, v->valuestring, false));
    }
    return NULL;
}

static og_status *fill_name_defaults(gen_kvs *t, const name_default *known) {
    for (; known->key; known++)
        if (known->dflt) OG_TRY(kvs_set(t, known->key, known->dflt, true));
    return NULL;
}

static og_status *parse_string_table(pctx *c, const char *path, const cJSON *obj, gen_kvs *out) {
    OG_TRY(get_object(c, path, obj));
    const cJSON *v;
    cJSON_ArrayForEach(v, obj) {
        char p[PATH_MAX_LEN];
        child_path(p, sizeof p, path, v->string);
        if (!cJSON_IsString(v)) return bad_value(c, p, v, "a string");
        OG_TRY(kvs_set(out, v->string, v->valuestring, false));
    }
    return NULL;
}

/* ---- session options --------------------------------------------------------------- */

static void session_options_init(gen_session_options *s) {
    memset(s, 0, sizeof *s);
    s->intra_op_num_threads = GEN_UNSET;
    s->inter_op_num_threads = GEN_UNSET;
    s->log_severity_level = GEN_UNSET;
    s->log_verbosity_level = GEN_UNSET;
    s->enable_cpu_mem_arena = GEN_UNSET;
    s->enable_mem_pattern = GEN_UNSET;
}

static void session_options_free(gen_session_options *s) {
    free(s->log_id);
    free(s->graph_optimization_level);
    free(s->enable_profiling);
    free(s->custom_ops_library);
    kvs_free(&s->config_entries);
    for (int i = 0; i < s->n_providers; i++) {
        free(s->providers[i].name);
        kvs_free(&s->providers[i].options);
    }
    free(s->providers);
}

static og_status *add_provider(pctx *c, const char *path, const cJSON *v,
                               gen_session_options *s) {
    char p[PATH_MAX_LEN];
    child_path(p, sizeof p, path, v->string);
    OG_TRY(get_object(c, p, v));
    gen_provider *pr = realloc(s->providers, (size_t)(s->n_providers + 1) * sizeof *pr);
    if (!pr) return og_oom();
    s->providers = pr;
    gen_provider *np = &pr[s->n_providers];
    memset(np, 0, sizeof *np);
    if (!(np->name = dup_str(v->string))) return og_oom();
    s->n_providers++;
    return parse_string_table(c, p, v, &np->options);
}

static og_status *parse_session_options(pctx *c, const char *path, const cJSON *obj,
                                        gen_session_options *s) {
    OG_TRY(get_object(c, path, obj));
    s->present = true;
    static const char *const levels[] = {"ORT_DISABLE_ALL", "ORT_ENABLE_BASIC",
                                         "ORT_ENABLE_EXTENDED", "ORT_ENABLE_ALL", NULL};
    const cJSON *v;
    cJSON_ArrayForEach(v, obj) {
        char p[PATH_MAX_LEN];
        child_path(p, sizeof p, path, v->string);
        const char *k = v->string;
        if (!strcmp(k, "intra_op_num_threads")) {
            OG_TRY(get_int(c, p, v, 0, &s->intra_op_num_threads));
        } else if (!strcmp(k, "inter_op_num_threads")) {
            OG_TRY(get_int(c, p, v, 0, &s->inter_op_num_threads));
        } else if (!strcmp(k, "log_severity_level")) {
            OG_TRY(get_int(c, p, v, 0, &s->log_severity_level));
        } else if (!strcmp(k, "log_verbosity_level")) {
            OG_TRY(get_int(c, p, v, 0, &s->log_verbosity_level));
        } else if (!strcmp(k, "enable_cpu_mem_arena")) {
            OG_TRY(get_tri(c, p, v, &s->enable_cpu_mem_arena));
        } else if (!strcmp(k, "enable_mem_pattern")) {
            OG_TRY(get_tri(c, p, v, &s->enable_mem_pattern));
        } else if (!strcmp(k, "log_id")) {
            OG_TRY(get_str(c, p, v, &s->log_id));
        } else if (!strcmp(k, "enable_profiling")) {
            OG_TRY(get_str(c, p, v, &s->enable_profiling));
        } else if (!strcmp(k, "custom_ops_library")) {
            OG_TRY(get_str(c, p, v, &s->custom_ops_library));
        } else if (!strcmp(k, "graph_optimization_level")) {
            if (!cJSON_IsString(v) || !in_list(v->valuestring, levels))
                return bad_value(c, p, v,
                                 "one of ORT_DISABLE_ALL, ORT_ENABLE_BASIC, "
                                 "ORT_ENABLE_EXTENDED, ORT_ENABLE_ALL");
            OG_TRY(set_str(&s->graph_optimization_level, v->valuestring));
        } else if (!strcmp(k, "provider_options")) {
            if (!cJSON_IsArray(v)) return bad_value(c, p, v, "an array of objects");
            int i = 0;
            const cJSON *e;
            cJSON_ArrayForEach(e, v) {
                char pe[PATH_MAX_LEN];
                snprintf(pe, sizeof pe, "%s[%d]", p, i++);
                OG_TRY(get_object(c, pe, e));
                const cJSON *prov;
                cJSON_ArrayForEach(prov, e) OG_TRY(add_provider(c, pe, prov, s));
            }
        } else if (cJSON_IsString(v)) {
            OG_TRY(kvs_set(&s->config_entries, k, v->valuestring, false));
        } else {
            return bad_value(c, p, v, "a string (a session config entry)");
        }
    }
    return NULL;
}

/* ---- components -------------------------------------------------------------------- */

static void component_init(gen_component *m) {
    memset(m, 0, sizeof *m);
    session_options_init(&m->session_options);
    m->prefault = GEN_UNSET;
}

static void component_free(gen_component *m) {
    free(m->filename);
    free(m->config_filename);
    free(m->adapter_filename);
    session_options_free(&m->session_options);
    kvs_free(&m->run_options);
    kvs_free(&m->inputs);
    kvs_free(&m->outputs);
    kvs_free(&m->extra);
}

/* The keys shared by every component. Returns true in *handled when the key was one. */
static og_status *component_common(pctx *c, const char *p, const cJSON *v, gen_component *m,
                                   const name_default *ins, const name_default *outs,
                                   bool *handled) {
    const char *k = v->string;
    *handled = true;
    if (!strcmp(k, "filename")) return get_str(c, p, v, &m->filename);
    if (!strcmp(k, "session_options"))
        return parse_session_options(c, p, v, &m->session_options);
    if (!strcmp(k, "run_options")) return parse_string_table(c, p, v, &m->run_options);
    if (!strcmp(k, "inputs")) return parse_names(c, p, v, ins, &m->inputs);
    if (!strcmp(k, "outputs")) return parse_names(c, p, v, outs, &m->outputs);
    *handled = false;
    return NULL;
}

typedef enum { COMP_EMBEDDING, COMP_VISION, COMP_SPEECH, COMP_ENCODER } comp_kind;

static og_status *parse_component(pctx *c, const char *path, const cJSON *obj, comp_kind kind,
                                  gen_component *m) {
    static const name_default *const ins[] = {embedding_inputs, vision_inputs, speech_inputs,
                                              encoder_inputs};
    static const name_default *const outs[] = {embedding_outputs, vision_outputs,
                                               speech_outputs, encoder_outputs};
    OG_TRY(get_object(c, path, obj));
    m->present = true;
    if (kind == COMP_VISION) OG_TRY(set_str(&m->config_filename, "processor_config.json"));
    if (kind == COMP_SPEECH) OG_TRY(set_str(&m->config_filename, "audio_processor_config.json"));
    const cJSON *v;
    cJSON_ArrayForEach(v, obj) {
        char p[PATH_MAX_LEN];
        child_path(p, sizeof p, path, v->string);
        const char *k = v->string;
        bool handled;
        OG_TRY(component_common(c, p, v, m, ins[kind], outs[kind], &handled));
        if (handled) continue;
        bool vs = kind == COMP_VISION || kind == COMP_SPEECH;
        if (vs && !strcmp(k, "config_filename")) {
            OG_TRY(get_str(c, p, v, &m->config_filename));
        } else if (vs && !strcmp(k, "adapter_filename")) {
            OG_TRY(get_str(c, p, v, &m->adapter_filename));
        } else if (kind == COMP_EMBEDDING && !strcmp(k, "prefault")) {
            OG_TRY(get_tri(c, p, v, &m->prefault));
        } else if (kind == COMP_ENCODER && !strcmp(k, "hidden_size")) {
            OG_TRY(get_int(c, p, v, 0, &m->hidden_size));
        } else if (kind == COMP_ENCODER && !strcmp(k, "num_attention_heads")) {
            OG_TRY(get_int(c, p, v, 0, &m->num_attention_heads));
        } else if (kind == COMP_ENCODER && !strcmp(k, "num_key_value_heads")) {
            OG_TRY(get_int(c, p, v, 0, &m->num_key_value_heads));
        } else if (kind == COMP_ENCODER && !strcmp(k, "num_hidden_layers")) {
            OG_TRY(get_int(c, p, v, 0, &m->num_hidden_layers));
        } else if (kind == COMP_ENCODER && !strcmp(k, "head_size")) {
            OG_TRY(get_int(c, p, v, 0, &m->head_size));
        } else if (kind == COMP_VISION && !strcmp(k, "spatial_merge_size")) {
            OG_TRY(get_int(c, p, v, 0, &m->spatial_merge_size));
        } else if (kind == COMP_VISION && !strcmp(k, "patch_size")) {
            OG_TRY(get_int(c, p, v, 0, &m->patch_size));
        } else if (kind == COMP_VISION && !strcmp(k, "window_size")) {
            OG_TRY(get_int(c, p, v, 0, &m->window_size));
        } else if (kind == COMP_VISION && !strcmp(k, "max_num_patches")) {
            OG_TRY(get_int(c, p, v, 0, &m->max_num_patches));
        } else if (kind == COMP_VISION && !strcmp(k, "num_visual_tokens")) {
            OG_TRY(get_int(c, p, v, 0, &m->num_visual_tokens));
        } else if (kind == COMP_VISION && !strcmp(k, "tokens_per_second")) {
            OG_TRY(get_num(c, p, v, &m->tokens_per_second));
            if (m->tokens_per_second < 0) return bad_value(c, p, v, "a number >= 0");
        } else if (kind == COMP_VISION && !strcmp(k, "pipeline")) {
            OG_TRY(keep_raw(&m->extra, v));
        } else {
            OG_TRY(unknown_key(c, p));
        }
    }
    OG_TRY(fill_name_defaults(&m->inputs, ins[kind]));
    OG_TRY(fill_name_defaults(&m->outputs, outs[kind]));
    if (!m->filename)
        return og_errorf(OG_ERR_INVALID_MODEL, "%s: %s.filename is missing", c->file, path);
    return NULL;
}

/* ---- decoder ----------------------------------------------------------------------- */

static og_status *parse_sliding_window(pctx *c, const char *path, const cJSON *obj,
                                       gen_sliding_window *w) {
    OG_TRY(get_object(c, path, obj));
    w->present = true;
    w->slide_key_value_cache = true;
    w->slide_inputs = true;
    OG_TRY(set_str(&w->alignment, "right"));
    const cJSON *v;
    cJSON_ArrayForEach(v, obj) {
        char p[PATH_MAX_LEN];
        child_path(p, sizeof p, path, v->string);
        const char *k = v->string;
        if (!strcmp(k, "window_size")) {
            OG_TRY(get_int(c, p, v, 1, &w->window_size));
        } else if (!strcmp(k, "pad_value")) {
            OG_TRY(get_int(c, p, v, INT_MIN, &w->pad_value));
        } else if (!strcmp(k, "cache_slack")) {
            OG_TRY(get_int(c, p, v, 0, &w->cache_slack));
        } else if (!strcmp(k, "slide_key_value_cache")) {
            OG_TRY(get_bool(c, p, v, &w->slide_key_value_cache));
        } else if (!strcmp(k, "slide_inputs")) {
            OG_TRY(get_bool(c, p, v, &w->slide_inputs));
        } else if (!strcmp(k, "alignment")) {
            if (!cJSON_IsString(v) ||
                (strcmp(v->valuestring, "left") && strcmp(v->valuestring, "right")))
                return bad_value(c, p, v, "\"left\" or \"right\"");
            OG_TRY(set_str(&w->alignment, v->valuestring));
        } else if (!strcmp(k, "layers")) {
            if (!cJSON_IsArray(v)) return bad_value(c, p, v, "an array of layer indices");
            int n = cJSON_GetArraySize(v), i = 0;
            int *layers = malloc(((size_t)n + 1) * sizeof *layers);
            if (!layers) return og_oom();
            const cJSON *e;
            cJSON_ArrayForEach(e, v) {
                char pe[PATH_MAX_LEN];
                snprintf(pe, sizeof pe, "%s[%d]", p, i);
                og_status *st = get_int(c, pe, e, 0, &layers[i]);
                if (st) {
                    free(layers);
                    return st;
                }
                i++;
            }
            free(w->layers);
            w->layers = layers;
            w->n_layers = n;
        } else {
            OG_TRY(unknown_key(c, p));
        }
    }
    return NULL;
}

static void stage_free(gen_pipeline_stage *s) {
    free(s->name);
    free(s->filename);
    session_options_free(&s->session_options);
    kvs_free(&s->run_options);
    free_strv(s->inputs, s->n_inputs);
    free_strv(s->outputs, s->n_outputs);
}

static og_status *parse_stage(pctx *c, const char *path, const cJSON *obj,
                              gen_pipeline_stage *s) {
    OG_TRY(get_object(c, path, obj));
    const cJSON *v;
    cJSON_ArrayForEach(v, obj) {
        char p[PATH_MAX_LEN];
        child_path(p, sizeof p, path, v->string);
        const char *k = v->string;
        if (!strcmp(k, "filename")) {
            OG_TRY(get_str(c, p, v, &s->filename));
        } else if (!strcmp(k, "session_options")) {
            OG_TRY(parse_session_options(c, p, v, &s->session_options));
        } else if (!strcmp(k, "run_options")) {
            OG_TRY(parse_string_table(c, p, v, &s->run_options));
        } else if (!strcmp(k, "inputs")) {
            OG_TRY(get_strv(c, p, v, &s->inputs, &s->n_inputs));
        } else if (!strcmp(k, "outputs")) {
            OG_TRY(get_strv(c, p, v, &s->outputs, &s->n_outputs));
        } else if (!strcmp(k, "run_on_prompt")) {
            OG_TRY(get_bool(c, p, v, &s->run_on_prompt));
        } else if (!strcmp(k, "run_on_token_gen")) {
            OG_TRY(get_bool(c, p, v, &s->run_on_token_gen));
        } else if (!strcmp(k, "is_lm_head")) {
            OG_TRY(get_bool(c, p, v, &s->is_lm_head));
        } else if (!strcmp(k, "inherit_session_options")) {
            OG_TRY(get_bool(c, p, v, &s->inherit_session_options));
        } else if (!strcmp(k, "reset_session_idx")) {
            OG_TRY(get_int(c, p, v, -1, &s->reset_session_idx));
        } else {
            OG_TRY(unknown_key(c, p));
        }
    }
    if (!s->filename)
        return og_errorf(OG_ERR_INVALID_MODEL, "%s: %s.filename is missing", c->file, path);
    return NULL;
}

static og_status *parse_pipeline(pctx *c, const char *path, const cJSON *arr, gen_decoder *d) {
    if (!cJSON_IsArray(arr)) return bad_value(c, path, arr, "an array of objects");
    int i = 0;
    const cJSON *e;
    cJSON_ArrayForEach(e, arr) {
        char pe[PATH_MAX_LEN];
        snprintf(pe, sizeof pe, "%s[%d]", path, i++);
        OG_TRY(get_object(c, pe, e));
        const cJSON *st;
        cJSON_ArrayForEach(st, e) {
            gen_pipeline_stage *np =
                realloc(d->pipeline, (size_t)(d->n_pipeline + 1) * sizeof *np);
            if (!np) return og_oom();
            d->pipeline = np;
            gen_pipeline_stage *s = &np[d->n_pipeline++];
            memset(s, 0, sizeof *s);
            session_options_init(&s->session_options);
            s->run_on_prompt = true;
            s->run_on_token_gen = true;
            s->reset_session_idx = -1;
            if (!(s->name = dup_str(st->string))) return og_oom();
            char ps[PATH_MAX_LEN];
            child_path(ps, sizeof ps, pe, st->string);
            OG_TRY(parse_stage(c, ps, st, s));
        }
    }
    return NULL;
}

static og_status *parse_decoder(pctx *c, const char *path, const cJSON *obj, gen_decoder *d) {
    OG_TRY(get_object(c, path, obj));
    d->c.present = true;
    const cJSON *v;
    cJSON_ArrayForEach(v, obj) {
        char p[PATH_MAX_LEN];
        child_path(p, sizeof p, path, v->string);
        const char *k = v->string;
        bool handled;
        OG_TRY(component_common(c, p, v, &d->c, decoder_inputs, decoder_outputs, &handled));
        if (handled) continue;
        if (!strcmp(k, "hidden_size")) {
            OG_TRY(get_int(c, p, v, 0, &d->hidden_size));
        } else if (!strcmp(k, "num_attention_heads")) {
            OG_TRY(get_int(c, p, v, 0, &d->num_attention_heads));
        } else if (!strcmp(k, "num_key_value_heads")) {
            OG_TRY(get_int(c, p, v, 0, &d->num_key_value_heads));
        } else if (!strcmp(k, "num_hidden_layers")) {
            OG_TRY(get_int(c, p, v, 0, &d->num_hidden_layers));
        } else if (!strcmp(k, "head_size")) {
            OG_TRY(get_int(c, p, v, 0, &d->head_size));
        } else if (!strcmp(k, "conv_cache_size")) {
            OG_TRY(get_int(c, p, v, 0, &d->conv_cache_size));
        } else if (!strcmp(k, "state_update_capacity")) {
            OG_TRY(get_int(c, p, v, 0, &d->state_update_capacity));
        } else if (!strcmp(k, "sliding_window")) {
            OG_TRY(parse_sliding_window(c, p, v, &d->sliding_window));
        } else if (!strcmp(k, "layer_types")) {
            OG_TRY(get_strv(c, p, v, &d->layer_types, &d->n_layer_types));
        } else if (!strcmp(k, "pipeline")) {
            OG_TRY(parse_pipeline(c, p, v, d));
        } else if (!strcmp(k, "state_groups") || !strcmp(k, "shared_initializers")) {
            OG_TRY(keep_raw(&d->extra, v));
        } else {
            OG_TRY(unknown_key(c, p));
        }
    }
    OG_TRY(fill_name_defaults(&d->c.inputs, decoder_inputs));
    OG_TRY(fill_name_defaults(&d->c.outputs, decoder_outputs));
    return NULL;
}

static void decoder_free(gen_decoder *d) {
    component_free(&d->c);
    free(d->sliding_window.alignment);
    free(d->sliding_window.layers);
    free_strv(d->layer_types, d->n_layer_types);
    for (int i = 0; i < d->n_pipeline; i++) stage_free(&d->pipeline[i]);
    free(d->pipeline);
    kvs_free(&d->extra);
}

/* ---- model ------------------------------------------------------------------------- */

/* Model-level keys onnxruntime-genai knows for audio / speculative models that this
 * runtime does not use: kept raw, no warning. */
static const char *const model_raw_keys[] = {
    "audio_output", "blank_id", "boa_token_id", "bor_token_id", "bot_token_id",
    "chunk_samples", "conv_context", "dflash2", "draft", "dspark", "eor_token_id",
    "eot_token_id", "fft_size", "hop_length", "joiner", "left_context",
    "left_context_samples", "log_eps", "max_symbols_per_step", "moonshine", "mtp",
    "norm_eps", "num_mels", "pre_encode_cache_size", "preemph", "right_context_samples",
    "sample_rate", "subsampling_factor", "tdt_durations", "vad", "win_length", NULL};

static og_status *parse_eos(pctx *c, const char *p, const cJSON *v, gen_model *m) {
    int n = cJSON_IsArray(v) ? cJSON_GetArraySize(v) : 1;
    int32_t *ids = malloc(((size_t)n + 1) * sizeof *ids);
    if (!ids) return og_oom();
    og_status *st = NULL;
    if (cJSON_IsArray(v)) {
        int i = 0;
        const cJSON *e;
        cJSON_ArrayForEach(e, v) {
            char pe[PATH_MAX_LEN];
            snprintf(pe, sizeof pe, "%s[%d]", p, i);
            int id = 0;
            if ((st = get_int(c, pe, e, 0, &id))) break;
            ids[i++] = id;
        }
    } else if (cJSON_IsNumber(v)) {
        int id = 0;
        st = get_int(c, p, v, 0, &id);
        ids[0] = id;
    } else {
        st = bad_value(c, p, v, "a token id or an array of token ids");
    }
    if (st) {
        free(ids);
        return st;
    }
    free(m->eos_token_ids);
    m->eos_token_ids = ids;
    m->n_eos_token_ids = n;
    m->eos_token_id = n > 0 ? ids[0] : 0;
    return NULL;
}

static og_status *parse_model(pctx *c, const cJSON *obj, gen_model *m) {
    OG_TRY(get_object(c, "model", obj));
    const cJSON *v;
    cJSON_ArrayForEach(v, obj) {
        char p[PATH_MAX_LEN];
        child_path(p, sizeof p, "model", v->string);
        const char *k = v->string;
        if (!strcmp(k, "type")) {
            OG_TRY(get_str(c, p, v, &m->type));
        } else if (!strcmp(k, "bos_token_id")) {
            OG_TRY(get_int(c, p, v, 0, &m->bos_token_id));
        } else if (!strcmp(k, "pad_token_id")) {
            /* some exporters write -1 for "no padding token" */
            OG_TRY(get_int(c, p, v, -1, &m->pad_token_id));
        } else if (!strcmp(k, "sep_token_id")) {
            OG_TRY(get_int(c, p, v, -1, &m->sep_token_id));
        } else if (!strcmp(k, "decoder_start_token_id")) {
            OG_TRY(get_int(c, p, v, 0, &m->decoder_start_token_id));
        } else if (!strcmp(k, "eos_token_id")) {
            OG_TRY(parse_eos(c, p, v, m));
        } else if (!strcmp(k, "vocab_size")) {
            OG_TRY(get_int(c, p, v, 0, &m->vocab_size));
        } else if (!strcmp(k, "context_length")) {
            OG_TRY(get_int(c, p, v, 1, &m->context_length));
        } else if (!strcmp(k, "image_token_id")) {
            OG_TRY(get_int(c, p, v, 0, &m->image_token_id));
        } else if (!strcmp(k, "video_token_id")) {
            OG_TRY(get_int(c, p, v, 0, &m->video_token_id));
        } else if (!strcmp(k, "vision_start_token_id")) {
            OG_TRY(get_int(c, p, v, 0, &m->vision_start_token_id));
        } else if (!strcmp(k, "audio_token_id")) {
            OG_TRY(get_int(c, p, v, 0, &m->audio_token_id));
        } else if (!strcmp(k, "tokenizer_dir")) {
            OG_TRY(get_str(c, p, v, &m->tokenizer_dir));
        } else if (!strcmp(k, "decoder")) {
            OG_TRY(parse_decoder(c, p, v, &m->decoder));
        } else if (!strcmp(k, "embedding")) {
            OG_TRY(parse_component(c, p, v, COMP_EMBEDDING, &m->embedding));
        } else if (!strcmp(k, "vision")) {
            OG_TRY(parse_component(c, p, v, COMP_VISION, &m->vision));
        } else if (!strcmp(k, "speech")) {
            OG_TRY(parse_component(c, p, v, COMP_SPEECH, &m->speech));
        } else if (!strcmp(k, "encoder")) {
            OG_TRY(parse_component(c, p, v, COMP_ENCODER, &m->encoder));
        } else if (in_list(k, model_raw_keys)) {
            OG_TRY(keep_raw(&m->extra, v));
        } else {
            OG_TRY(unknown_key(c, p));
        }
    }
    return NULL;
}

/* ---- search ------------------------------------------------------------------------ */

static void search_defaults(gen_search *s) {
    memset(s, 0, sizeof *s);
    s->batch_size = 1;
    s->num_beams = 1;
    s->num_return_sequences = 1;
    s->top_k = 50;
    s->top_p = 0.0f;
    s->temperature = 1.0f;
    s->repetition_penalty = 1.0f;
    s->length_penalty = 1.0f;
    s->early_stopping = true;
    s->random_seed = -1;
}

static og_status *get_float_checked(pctx *c, const char *p, const cJSON *v, double lo,
                                    bool lo_open, double hi, const char *expected,
                                    float *out) {
    if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble)) return bad_value(c, p, v, expected);
    double d = v->valuedouble;
    if (d < lo || (lo_open && d == lo) || d > hi) return bad_value(c, p, v, expected);
    if (fabs(d) > FLT_MAX) /* stored as float: it would become infinite */
        return og_errorf(OG_ERR_INVALID_MODEL, "%s: %s is %g, too large: at most %g", c->file, p,
                         d, (double)FLT_MAX);
    *out = (float)d;
    return NULL;
}

static og_status *parse_search(pctx *c, const cJSON *obj, gen_search *s) {
    static const char *const raw_keys[] = {"audio_interleaved", "audio_temperature",
                                           "audio_top_k", "blank_penalty", NULL};
    OG_TRY(get_object(c, "search", obj));
    const cJSON *v;
    cJSON_ArrayForEach(v, obj) {
        char p[PATH_MAX_LEN];
        child_path(p, sizeof p, "search", v->string);
        const char *k = v->string;
        if (!strcmp(k, "do_sample")) {
            OG_TRY(get_bool(c, p, v, &s->do_sample));
        } else if (!strcmp(k, "early_stopping")) {
            OG_TRY(get_bool(c, p, v, &s->early_stopping));
        } else if (!strcmp(k, "past_present_share_buffer")) {
            OG_TRY(get_bool(c, p, v, &s->past_present_share_buffer));
        } else if (!strcmp(k, "min_length")) {
            OG_TRY(get_int(c, p, v, 0, &s->min_length));
        } else if (!strcmp(k, "max_length")) {
            OG_TRY(get_int(c, p, v, 0, &s->max_length));
        } else if (!strcmp(k, "batch_size")) {
            OG_TRY(get_int(c, p, v, 1, &s->batch_size));
        } else if (!strcmp(k, "num_beams")) {
            OG_TRY(get_int(c, p, v, 1, &s->num_beams));
        } else if (!strcmp(k, "num_return_sequences")) {
            OG_TRY(get_int(c, p, v, 1, &s->num_return_sequences));
        } else if (!strcmp(k, "top_k")) {
            OG_TRY(get_int(c, p, v, 0, &s->top_k));
        } else if (!strcmp(k, "no_repeat_ngram_size")) {
            OG_TRY(get_int(c, p, v, 0, &s->no_repeat_ngram_size));
        } else if (!strcmp(k, "chunk_size")) {
            OG_TRY(get_int(c, p, v, 0, &s->chunk_size));
        } else if (!strcmp(k, "random_seed")) {
            long long seed = -1;
            OG_TRY(get_int_limited(c, p, v, -1, INT64_MAX, &seed));
            s->random_seed = seed;
        } else if (!strcmp(k, "top_p")) {
            OG_TRY(get_float_checked(c, p, v, 0, false, 1, "a number in [0, 1]", &s->top_p));
        } else if (!strcmp(k, "temperature")) {
            OG_TRY(get_float_checked(c, p, v, 0, false, HUGE_VAL, "a number >= 0",
                                     &s->temperature));
        } else if (!strcmp(k, "repetition_penalty")) {
            OG_TRY(get_float_checked(c, p, v, 0, true, HUGE_VAL, "a number > 0",
                                     &s->repetition_penalty));
        } else if (!strcmp(k, "length_penalty")) {
            OG_TRY(get_float_checked(c, p, v, -HUGE_VAL, false, HUGE_VAL, "a number",
                                     &s->length_penalty));
        } else if (!strcmp(k, "diversity_penalty")) {
            OG_TRY(get_float_checked(c, p, v, 0, false, HUGE_VAL, "a number >= 0",
                                     &s->diversity_penalty));
        } else if (in_list(k, raw_keys)) {
            OG_TRY(keep_raw(&s->extra, v));
        } else {
            OG_TRY(unknown_key(c, p));
        }
    }
    return NULL;
}

/* ---- engine ------------------------------------------------------------------------ */

static og_status *parse_engine(pctx *c, const cJSON *obj, gen_engine *e) {
    static const char *const raw_keys[] = {"dflash2_max_snapshots", "gpu_utilization_factor",
                                           "max_scheduled_tokens", "prefix_caching", NULL};
    OG_TRY(get_object(c, "engine", obj));
    e->present = true;
    const cJSON *v;
    cJSON_ArrayForEach(v, obj) {
        char p[PATH_MAX_LEN];
        child_path(p, sizeof p, "engine", v->string);
        if (strcmp(v->string, "dynamic_batching") != 0) {
            OG_TRY(unknown_key(c, p));
            continue;
        }
        OG_TRY(get_object(c, p, v));
        e->has_dynamic_batching = true;
        const cJSON *f;
        cJSON_ArrayForEach(f, v) {
            char pf[PATH_MAX_LEN];
            child_path(pf, sizeof pf, p, f->string);
            if (!strcmp(f->string, "block_size")) {
                OG_TRY(get_int(c, pf, f, 1, &e->block_size));
            } else if (!strcmp(f->string, "num_blocks")) {
                OG_TRY(get_int(c, pf, f, 1, &e->num_blocks));
            } else if (!strcmp(f->string, "max_batch_size")) {
                OG_TRY(get_int(c, pf, f, 1, &e->max_batch_size));
            } else if (in_list(f->string, raw_keys)) {
                OG_TRY(keep_raw(&e->extra, f));
            } else {
                OG_TRY(unknown_key(c, pf));
            }
        }
    }
    return NULL;
}

/* ---- whole file -------------------------------------------------------------------- */

static og_status *check_model(pctx *c, gen_config *cfg) {
    gen_model *m = &cfg->model;
    gen_decoder *d = &m->decoder;
    gen_search *s = &cfg->search;
    if (!m->type || !*m->type)
        return og_errorf(OG_ERR_INVALID_MODEL, "%s: model.type is missing", c->file);
    if (m->context_length <= 0)
        return og_errorf(OG_ERR_INVALID_MODEL,
                         "%s: model.context_length is missing, expected an integer >= 1",
                         c->file);
    bool pipeline = strcmp(m->type, "decoder-pipeline") == 0;
    if (!d->c.present)
        return og_errorf(OG_ERR_INVALID_MODEL, "%s: model.decoder is missing", c->file);
    if (pipeline && d->n_pipeline == 0)
        return og_errorf(OG_ERR_INVALID_MODEL,
                         "%s: model.decoder.pipeline is missing or empty (model.type is "
                         "\"decoder-pipeline\")",
                         c->file);
    if (!pipeline && !d->c.filename)
        return og_errorf(OG_ERR_INVALID_MODEL, "%s: model.decoder.filename is missing",
                         c->file);
    if (d->n_layer_types > 0 && d->num_hidden_layers > 0 &&
        d->n_layer_types != d->num_hidden_layers)
        return og_errorf(OG_ERR_INVALID_MODEL,
                         "%s: model.decoder.layer_types has %d entries, expected %d "
                         "(model.decoder.num_hidden_layers)",
                         c->file, d->n_layer_types, d->num_hidden_layers);
    for (int i = 0; i < d->sliding_window.n_layers; i++)
        if (d->num_hidden_layers > 0 && d->sliding_window.layers[i] >= d->num_hidden_layers)
            return og_errorf(OG_ERR_INVALID_MODEL,
                             "%s: model.decoder.sliding_window.layers[%d] is %d, expected a "
                             "layer index below %d (model.decoder.num_hidden_layers)",
                             c->file, i, d->sliding_window.layers[i], d->num_hidden_layers);
    if (d->num_key_value_heads > 0 && d->num_attention_heads > 0 &&
        d->num_attention_heads % d->num_key_value_heads != 0)
        return og_errorf(OG_ERR_INVALID_MODEL,
                         "%s: model.decoder.num_attention_heads (%d) is not a multiple of "
                         "model.decoder.num_key_value_heads (%d)",
                         c->file, d->num_attention_heads, d->num_key_value_heads);

    if (m->vocab_size > 0) {
        const struct {
            const char *name;
            int id;
        } ids[] = {{"bos_token_id", m->bos_token_id}, {"pad_token_id", m->pad_token_id}};
        for (size_t i = 0; i < sizeof ids / sizeof ids[0]; i++)
            if (ids[i].id >= m->vocab_size)
                OG_TRY(warnf(c, "%s: model.%s is %d, not below model.vocab_size %d", c->file,
                             ids[i].name, ids[i].id, m->vocab_size));
        for (int i = 0; i < m->n_eos_token_ids; i++)
            if (m->eos_token_ids[i] >= m->vocab_size)
                OG_TRY(warnf(c, "%s: model.eos_token_id %d is not below model.vocab_size %d",
                             c->file, m->eos_token_ids[i], m->vocab_size));
    }

    if (s->max_length == 0) s->max_length = m->context_length;
    if (s->max_length > m->context_length)
        OG_TRY(warnf(c, "%s: search.max_length %d exceeds model.context_length %d", c->file,
                     s->max_length, m->context_length));
    if (s->min_length > s->max_length)
        return og_errorf(OG_ERR_INVALID_MODEL,
                         "%s: search.min_length is %d, expected at most search.max_length (%d)",
                         c->file, s->min_length, s->max_length);
    if (s->num_beams > 1 && s->num_return_sequences > s->num_beams)
        return og_errorf(OG_ERR_INVALID_MODEL,
                         "%s: search.num_return_sequences is %d, expected at most "
                         "search.num_beams (%d)",
                         c->file, s->num_return_sequences, s->num_beams);
    return NULL;
}

/* ---- paths the package names ------------------------------------------------------ */

static bool ends_with(const char *s, const char *suffix) {
    size_t n = strlen(s), k = strlen(suffix);
    return n >= k && strcmp(s + n - k, suffix) == 0;
}

/* Keys whose values name files or folders of the package. Matched by name anywhere in
 * the document, blocks kept raw included (draft models, speculative decoding, audio
 * settings): onnxruntime-genai would open those files, so a package naming a path
 * outside itself is refused as a whole, whichever part we happen to use. Session and
 * run options are settings of onnxruntime's execution providers (OpenVINO's cache_dir,
 * QNN's backend_path: places on the user's machine, not files of the package) and are
 * not searched; this runtime uses none of them. */
static bool names_a_file(const char *key) {
    return !strcmp(key, "filename") || !strcmp(key, "filenames") ||
           ends_with(key, "_filename") || ends_with(key, "_filenames") ||
           ends_with(key, "_file") || ends_with(key, "_dir");
}

static og_status *check_paths(pctx *c, const cJSON *v, const char *path) {
    int i = 0;
    const cJSON *e;
    cJSON_ArrayForEach(e, v) {
        char p[PATH_MAX_LEN];
        if (cJSON_IsObject(v)) child_path(p, sizeof p, path, e->string);
        else snprintf(p, sizeof p, "%s[%d]", path, i);
        i++;
        bool file_key = cJSON_IsObject(v) && names_a_file(e->string);
        if (file_key && cJSON_IsString(e)) {
            OG_TRY(pkg_path_check(c->file, p, e->valuestring));
        } else if (file_key && cJSON_IsArray(e)) {
            int k = 0;
            const cJSON *f;
            cJSON_ArrayForEach(f, e) {
                char pk[PATH_MAX_LEN];
                snprintf(pk, sizeof pk, "%s[%d]", p, k++);
                if (cJSON_IsString(f)) OG_TRY(pkg_path_check(c->file, pk, f->valuestring));
            }
        } else if ((cJSON_IsObject(e) || cJSON_IsArray(e)) &&
                   !(cJSON_IsObject(v) && (!strcmp(e->string, "session_options") ||
                                           !strcmp(e->string, "run_options")))) {
            OG_TRY(check_paths(c, e, p));
        }
    }
    return NULL;
}

static og_status *parse_root(pctx *c, const cJSON *root, gen_config *cfg) {
    if (!cJSON_IsObject(root))
        return og_errorf(OG_ERR_INVALID_MODEL, "%s: the top level is not a JSON object",
                         c->file);
    OG_TRY(check_paths(c, root, ""));
    const cJSON *model = NULL;
    const cJSON *v;
    cJSON_ArrayForEach(v, root) {
        const char *k = v->string;
        if (!strcmp(k, "model")) {
            model = v;
            OG_TRY(parse_model(c, v, &cfg->model));
        } else if (!strcmp(k, "search")) {
            OG_TRY(parse_search(c, v, &cfg->search));
        } else if (!strcmp(k, "engine")) {
            OG_TRY(parse_engine(c, v, &cfg->engine));
        } else if (!strcmp(k, "speculative") || !strcmp(k, "runtime_profiles")) {
            OG_TRY(keep_raw(&cfg->extra, v));
        } else {
            OG_TRY(unknown_key(c, k));
        }
    }
    if (!model) return og_errorf(OG_ERR_INVALID_MODEL, "%s: \"model\" is missing", c->file);
    return check_model(c, cfg);
}

static gen_config *config_new(void) {
    gen_config *cfg = calloc(1, sizeof *cfg);
    if (!cfg) return NULL;
    gen_model *m = &cfg->model;
    m->image_token_id = m->video_token_id = m->vision_start_token_id = m->audio_token_id = -1;
    component_init(&m->decoder.c);
    component_init(&m->embedding);
    component_init(&m->vision);
    component_init(&m->speech);
    component_init(&m->encoder);
    search_defaults(&cfg->search);
    return cfg;
}

void gen_config_free(gen_config *cfg) {
    if (!cfg) return;
    free(cfg->path);
    free(cfg->dir);
    gen_model *m = &cfg->model;
    free(m->type);
    free(m->eos_token_ids);
    free(m->tokenizer_dir);
    decoder_free(&m->decoder);
    component_free(&m->embedding);
    component_free(&m->vision);
    component_free(&m->speech);
    component_free(&m->encoder);
    kvs_free(&m->extra);
    kvs_free(&cfg->search.extra);
    kvs_free(&cfg->engine.extra);
    kvs_free(&cfg->extra);
    free_strv(cfg->warnings, cfg->n_warnings);
    free(cfg);
}

/* Line and column (1-based) of byte offset off in text. */
static void line_col(const char *text, size_t off, int *line, int *col) {
    *line = 1;
    *col = 1;
    for (size_t i = 0; i < off; i++) { /* off <= len: a NUL byte is just a byte */
        if (text[i] == '\n') {
            (*line)++;
            *col = 1;
        } else {
            (*col)++;
        }
    }
}

og_status *gen_config_parse(const char *json, size_t len, const char *path, gen_config **out) {
    *out = NULL;
    if (!path) path = CONFIG_NAME;
    gen_config *cfg = config_new();
    if (!cfg) return og_oom();
    og_status *st = NULL;
    cJSON *root = NULL;
    if (!(cfg->path = dup_str(path))) {
        st = og_oom();
        goto done;
    }
    const char *slash = strrchr(path, '/');
    cfg->dir = slash ? strndup(path, (size_t)(slash - path) + (slash == path)) : dup_str(".");
    if (!cfg->dir) {
        st = og_oom();
        goto done;
    }
    const char *end = NULL;
    root = cJSON_ParseWithLengthOpts(json, len, &end, 0);
    if (!root) {
        if (end && end >= json && (size_t)(end - json) <= len) {
            int line, col;
            line_col(json, (size_t)(end - json), &line, &col);
            st = og_errorf(OG_ERR_INVALID_MODEL,
                           "%s: malformed JSON at line %d, column %d (byte %zu)", path, line,
                           col, (size_t)(end - json));
        } else {
            st = og_errorf(OG_ERR_INVALID_MODEL, "%s: malformed JSON", path);
        }
        goto done;
    }
    pctx c = {cfg->path, cfg};
    st = parse_root(&c, root, cfg);
done:
    cJSON_Delete(root);
    if (st) {
        gen_config_free(cfg);
        return og_oom_context(st, "%s", path);
    }
    *out = cfg;
    return NULL;
}

og_status *gen_config_load(const char *dir_or_file, gen_config **out) {
    *out = NULL;
    if (!dir_or_file || !*dir_or_file)
        return og_errorf(OG_ERR_INVALID_ARGUMENT, "gen_config_load: no path given");
    struct stat sb;
    size_t n = strlen(dir_or_file);
    char *path;
    if (stat(dir_or_file, &sb) == 0 && S_ISDIR(sb.st_mode)) {
        path = malloc(n + sizeof CONFIG_NAME + 1);
        if (!path) return og_oom();
        snprintf(path, n + sizeof CONFIG_NAME + 1, "%s%s%s", dir_or_file,
                 dir_or_file[n - 1] == '/' ? "" : "/", CONFIG_NAME);
    } else {
        path = dup_str(dir_or_file);
        if (!path) return og_oom();
    }
    char *buf = NULL;
    size_t len = 0;
    og_status *st = pkg_read_file(path, PKG_MAX_JSON_BYTES, &buf, &len);
    if (!st) st = gen_config_parse(buf, len, path, out);
    free(buf);
    free(path);
    return st;
}
