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
#include <stddef.h>
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
    bool has_model; /* the top level had "model" */
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

/* ---- field tables ------------------------------------------------------------------ */

/* Every block of the file is read against one table: each row is a key, how its value
 * is read, and where it goes (the member's offset in the block's struct). parse_block
 * walks the object's keys in order and dispatches each by its row; a key without one
 * is an unknown-key warning. A table ends with {0}. */
typedef enum field_kind {
    F_END = 0, /* the end of a table */
    F_INT,     /* int >= lo (one above INT_MAX says "too large") */
    F_INT64,   /* int64_t >= lo */
    F_BOOL,    /* bool */
    F_TRI,     /* int: GEN_UNSET, 0 or 1 */
    F_STR,     /* owned char * */
    F_ENUM,    /* owned char *, one of the NULL-terminated strings in arg */
    F_FLOAT,   /* float in [min, max] ((min, max] when open) */
    F_NUM,     /* double >= min */
    F_STRV,    /* owned char **, its int count at off2 */
    F_NAMES,   /* gen_kvs of graph input/output names; arg: their name_default table */
    F_RAW,     /* no key: every key in the list arg, kept as raw JSON in the gen_kvs */
    F_CALL,    /* parse(c, path, value, member, arg): a nested block, a list, ... */
    F_OTHER,   /* no key: every key no earlier row took, to parse(); the table's last row */
    F_INCLUDE, /* no key: the rows of the table arg, for the struct at off */
} field_kind;

typedef og_status *(*field_fn)(pctx *c, const char *path, const cJSON *v, void *member,
                               const void *arg);

typedef struct field {
    const char *key;
    field_kind kind;
    size_t off, off2;
    long long lo;
    double min, max;
    bool open;
    const char *expected; /* F_ENUM, F_FLOAT, F_NUM: what the message says is expected */
    const void *arg;
    field_fn parse;
} field;

#define FLD(T, m, k, ...) {.key = #m, .kind = (k), .off = offsetof(T, m), __VA_ARGS__}
#define FLD_INT(T, m, lo_) FLD(T, m, F_INT, .lo = (lo_))
#define FLD_INT64(T, m, lo_) FLD(T, m, F_INT64, .lo = (lo_))
#define FLD_BOOL(T, m) FLD(T, m, F_BOOL)
#define FLD_TRI(T, m) FLD(T, m, F_TRI)
#define FLD_STR(T, m) FLD(T, m, F_STR)
#define FLD_ENUM(T, m, names, exp) FLD(T, m, F_ENUM, .arg = (names), .expected = (exp))
#define FLD_FLOAT(T, m, lo_, open_, hi_, exp)                                                 \
    FLD(T, m, F_FLOAT, .min = (lo_), .open = (open_), .max = (hi_), .expected = (exp))
#define FLD_NUM(T, m, lo_, exp) FLD(T, m, F_NUM, .min = (lo_), .expected = (exp))
#define FLD_STRV(T, m) FLD(T, m, F_STRV, .off2 = offsetof(T, n_##m))
#define FLD_NAMES(T, key_, m, known)                                                          \
    {.key = (key_), .kind = F_NAMES, .off = offsetof(T, m), .arg = (known)}
/* A key read by fn into the member m, or (FLD_SELF) into the block's struct itself. */
#define FLD_CALL(T, key_, m, fn, arg_)                                                        \
    {.key = (key_), .kind = F_CALL, .off = offsetof(T, m), .parse = (fn), .arg = (arg_)}
#define FLD_SELF(key_, fn, arg_) {.key = (key_), .kind = F_CALL, .parse = (fn), .arg = (arg_)}
#define FLD_RAW(T, m, keys) {.kind = F_RAW, .off = offsetof(T, m), .arg = (keys)}
#define FLD_INCLUDE(T, m, table) {.kind = F_INCLUDE, .off = offsetof(T, m), .arg = (table)}
#define FLD_INCLUDE_SAME(table) {.kind = F_INCLUDE, .arg = (table)}

/* A float in [lo, hi] ((lo, hi] when lo_open), stored as float. */
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

/* The row of table (its includes searched in place) that takes key; *fbase is the struct
 * its offsets are from. */
static const field *find_field(const field *t, const char *key, char *base, char **fbase) {
    for (; t->kind != F_END; t++) {
        if (t->kind == F_INCLUDE) {
            const field *f = find_field(t->arg, key, base + t->off, fbase);
            if (f) return f;
            continue;
        }
        bool match = t->kind == F_OTHER ? true
                     : t->kind == F_RAW ? in_list(key, t->arg)
                                        : strcmp(t->key, key) == 0;
        if (match) {
            *fbase = base;
            return t;
        }
    }
    return NULL;
}

static og_status *read_field(pctx *c, const char *p, const cJSON *v, const field *f,
                             char *base) {
    void *m = base + f->off;
    switch (f->kind) {
    case F_INT: return get_int(c, p, v, (int)f->lo, m);
    case F_INT64: {
        long long x = 0;
        OG_TRY(get_int_limited(c, p, v, f->lo, INT64_MAX, &x));
        *(int64_t *)m = x;
        return NULL;
    }
    case F_BOOL: return get_bool(c, p, v, m);
    case F_TRI: return get_tri(c, p, v, m);
    case F_STR: return get_str(c, p, v, m);
    case F_ENUM:
        if (!cJSON_IsString(v) || !in_list(v->valuestring, f->arg))
            return bad_value(c, p, v, f->expected);
        return set_str(m, v->valuestring);
    case F_FLOAT: return get_float_checked(c, p, v, f->min, f->open, f->max, f->expected, m);
    case F_NUM:
        OG_TRY(get_num(c, p, v, m));
        return *(double *)m < f->min ? bad_value(c, p, v, f->expected) : NULL;
    case F_STRV: return get_strv(c, p, v, m, (int *)(base + f->off2));
    case F_NAMES: return parse_names(c, p, v, f->arg, m);
    case F_RAW: return keep_raw(m, v);
    case F_CALL:
    case F_OTHER: return f->parse(c, p, v, m, f->arg);
    case F_END:
    case F_INCLUDE: break; /* never found */
    }
    return NULL;
}

/* Reads the object obj at path into the struct at base by table. */
static og_status *parse_block(pctx *c, const char *path, const cJSON *obj, const field *table,
                              void *base) {
    OG_TRY(get_object(c, path, obj));
    const cJSON *v;
    cJSON_ArrayForEach(v, obj) {
        char p[PATH_MAX_LEN];
        child_path(p, sizeof p, path, v->string);
        char *fbase = NULL;
        const field *f = find_field(table, v->string, base, &fbase);
        OG_TRY(f ? read_field(c, p, v, f, fbase) : unknown_key(c, p));
    }
    return NULL;
}

/* onnxruntime-genai's default names for the known names the block did not give. */
static og_status *fill_table_name_defaults(const field *t, char *base) {
    for (; t->kind != F_END; t++)
        if (t->kind == F_NAMES) OG_TRY(fill_name_defaults((gen_kvs *)(base + t->off), t->arg));
    return NULL;
}

static og_status *read_string_table(pctx *c, const char *path, const cJSON *v, void *member,
                                    const void *arg) {
    return parse_string_table(c, path, v, member);
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

/* provider_options: [{"cuda": {...}}, {"dml": {...}, ...}] */
static og_status *read_providers(pctx *c, const char *p, const cJSON *v, void *member,
                                 const void *arg) {
    if (!cJSON_IsArray(v)) return bad_value(c, p, v, "an array of objects");
    int i = 0;
    const cJSON *e;
    cJSON_ArrayForEach(e, v) {
        char pe[PATH_MAX_LEN];
        snprintf(pe, sizeof pe, "%s[%d]", p, i++);
        OG_TRY(get_object(c, pe, e));
        const cJSON *prov;
        cJSON_ArrayForEach(prov, e) OG_TRY(add_provider(c, pe, prov, member));
    }
    return NULL;
}

/* Any other key: a string is a session config entry. */
static og_status *read_config_entry(pctx *c, const char *p, const cJSON *v, void *member,
                                    const void *arg) {
    gen_session_options *s = member;
    if (!cJSON_IsString(v)) return bad_value(c, p, v, "a string (a session config entry)");
    return kvs_set(&s->config_entries, v->string, v->valuestring, false);
}

static const char *const optimization_levels[] = {"ORT_DISABLE_ALL", "ORT_ENABLE_BASIC",
                                                  "ORT_ENABLE_EXTENDED", "ORT_ENABLE_ALL",
                                                  NULL};

static const field session_option_fields[] = {
    FLD_INT(gen_session_options, intra_op_num_threads, 0),
    FLD_INT(gen_session_options, inter_op_num_threads, 0),
    FLD_INT(gen_session_options, log_severity_level, 0),
    FLD_INT(gen_session_options, log_verbosity_level, 0),
    FLD_TRI(gen_session_options, enable_cpu_mem_arena),
    FLD_TRI(gen_session_options, enable_mem_pattern),
    FLD_STR(gen_session_options, log_id),
    FLD_STR(gen_session_options, enable_profiling),
    FLD_STR(gen_session_options, custom_ops_library),
    FLD_ENUM(gen_session_options, graph_optimization_level, optimization_levels,
             "one of ORT_DISABLE_ALL, ORT_ENABLE_BASIC, ORT_ENABLE_EXTENDED, ORT_ENABLE_ALL"),
    FLD_SELF("provider_options", read_providers, NULL),
    {.kind = F_OTHER, .parse = read_config_entry},
    {0},
};

static og_status *read_session_options(pctx *c, const char *path, const cJSON *v,
                                       void *member, const void *arg) {
    gen_session_options *s = member;
    OG_TRY(get_object(c, path, v));
    s->present = true;
    return parse_block(c, path, v, session_option_fields, s);
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

/* The keys every component has (the decoder included). */
static const field component_fields[] = {
    FLD_STR(gen_component, filename),
    FLD_CALL(gen_component, "session_options", session_options, read_session_options, NULL),
    FLD_CALL(gen_component, "run_options", run_options, read_string_table, NULL),
    {0},
};

static const char *const vision_raw_keys[] = {"pipeline", NULL};

static const field embedding_fields[] = {
    FLD_INCLUDE_SAME(component_fields),
    FLD_NAMES(gen_component, "inputs", inputs, embedding_inputs),
    FLD_NAMES(gen_component, "outputs", outputs, embedding_outputs),
    FLD_TRI(gen_component, prefault),
    {0},
};

static const field vision_fields[] = {
    FLD_INCLUDE_SAME(component_fields),
    FLD_NAMES(gen_component, "inputs", inputs, vision_inputs),
    FLD_NAMES(gen_component, "outputs", outputs, vision_outputs),
    FLD_STR(gen_component, config_filename),
    FLD_STR(gen_component, adapter_filename),
    FLD_INT(gen_component, spatial_merge_size, 0),
    FLD_INT(gen_component, patch_size, 0),
    FLD_INT(gen_component, window_size, 0),
    FLD_INT(gen_component, max_num_patches, 0),
    FLD_INT(gen_component, num_visual_tokens, 0),
    FLD_NUM(gen_component, tokens_per_second, 0, "a number >= 0"),
    FLD_RAW(gen_component, extra, vision_raw_keys),
    {0},
};

static const field speech_fields[] = {
    FLD_INCLUDE_SAME(component_fields),
    FLD_NAMES(gen_component, "inputs", inputs, speech_inputs),
    FLD_NAMES(gen_component, "outputs", outputs, speech_outputs),
    FLD_STR(gen_component, config_filename),
    FLD_STR(gen_component, adapter_filename),
    {0},
};

static const field encoder_fields[] = {
    FLD_INCLUDE_SAME(component_fields),
    FLD_NAMES(gen_component, "inputs", inputs, encoder_inputs),
    FLD_NAMES(gen_component, "outputs", outputs, encoder_outputs),
    FLD_INT(gen_component, hidden_size, 0),
    FLD_INT(gen_component, num_attention_heads, 0),
    FLD_INT(gen_component, num_key_value_heads, 0),
    FLD_INT(gen_component, num_hidden_layers, 0),
    FLD_INT(gen_component, head_size, 0),
    {0},
};

/* A component block: its table and the processor config file it names by default. */
typedef struct component_kind {
    const field *fields;
    const char *config_filename;
} component_kind;

static const component_kind embedding_kind = {embedding_fields, NULL};
static const component_kind vision_kind = {vision_fields, "processor_config.json"};
static const component_kind speech_kind = {speech_fields, "audio_processor_config.json"};
static const component_kind encoder_kind = {encoder_fields, NULL};

static og_status *read_component(pctx *c, const char *path, const cJSON *v, void *member,
                                 const void *arg) {
    const component_kind *kind = arg;
    gen_component *m = member;
    OG_TRY(get_object(c, path, v));
    m->present = true;
    if (kind->config_filename) OG_TRY(set_str(&m->config_filename, kind->config_filename));
    OG_TRY(parse_block(c, path, v, kind->fields, m));
    OG_TRY(fill_table_name_defaults(kind->fields, (char *)m));
    if (!m->filename)
        return og_errorf(OG_ERR_INVALID_MODEL, "%s: %s.filename is missing", c->file, path);
    return NULL;
}

/* ---- decoder ----------------------------------------------------------------------- */

/* sliding_window.layers: layer indices. */
static og_status *read_layers(pctx *c, const char *p, const cJSON *v, void *member,
                              const void *arg) {
    gen_sliding_window *w = member;
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
    return NULL;
}

static const char *const alignments[] = {"left", "right", NULL};

static const field sliding_window_fields[] = {
    FLD_INT(gen_sliding_window, window_size, 1),
    FLD_INT(gen_sliding_window, pad_value, INT_MIN),
    FLD_INT(gen_sliding_window, cache_slack, 0),
    FLD_BOOL(gen_sliding_window, slide_key_value_cache),
    FLD_BOOL(gen_sliding_window, slide_inputs),
    FLD_ENUM(gen_sliding_window, alignment, alignments, "\"left\" or \"right\""),
    FLD_SELF("layers", read_layers, NULL),
    {0},
};

static og_status *read_sliding_window(pctx *c, const char *path, const cJSON *v, void *member,
                                      const void *arg) {
    gen_sliding_window *w = member;
    OG_TRY(get_object(c, path, v));
    w->present = true;
    w->slide_key_value_cache = true;
    w->slide_inputs = true;
    OG_TRY(set_str(&w->alignment, "right"));
    return parse_block(c, path, v, sliding_window_fields, w);
}

static void stage_free(gen_pipeline_stage *s) {
    free(s->name);
    free(s->filename);
    session_options_free(&s->session_options);
    kvs_free(&s->run_options);
    free_strv(s->inputs, s->n_inputs);
    free_strv(s->outputs, s->n_outputs);
}

static const field stage_fields[] = {
    FLD_STR(gen_pipeline_stage, filename),
    FLD_CALL(gen_pipeline_stage, "session_options", session_options, read_session_options,
             NULL),
    FLD_CALL(gen_pipeline_stage, "run_options", run_options, read_string_table, NULL),
    FLD_STRV(gen_pipeline_stage, inputs),
    FLD_STRV(gen_pipeline_stage, outputs),
    FLD_BOOL(gen_pipeline_stage, run_on_prompt),
    FLD_BOOL(gen_pipeline_stage, run_on_token_gen),
    FLD_BOOL(gen_pipeline_stage, is_lm_head),
    FLD_BOOL(gen_pipeline_stage, inherit_session_options),
    FLD_INT(gen_pipeline_stage, reset_session_idx, -1),
    {0},
};

/* decoder.pipeline: a list of objects, each holding {stage name: stage} pairs. */
static og_status *read_pipeline(pctx *c, const char *path, const cJSON *arr, void *member,
                                const void *arg) {
    gen_decoder *d = member;
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
            OG_TRY(parse_block(c, ps, st, stage_fields, s));
            if (!s->filename)
                return og_errorf(OG_ERR_INVALID_MODEL, "%s: %s.filename is missing", c->file,
                                 ps);
        }
    }
    return NULL;
}

static const char *const decoder_raw_keys[] = {"state_groups", "shared_initializers", NULL};

static const field decoder_fields[] = {
    FLD_INCLUDE(gen_decoder, c, component_fields),
    FLD_NAMES(gen_decoder, "inputs", c.inputs, decoder_inputs),
    FLD_NAMES(gen_decoder, "outputs", c.outputs, decoder_outputs),
    FLD_INT(gen_decoder, hidden_size, 0),
    FLD_INT(gen_decoder, num_attention_heads, 0),
    FLD_INT(gen_decoder, num_key_value_heads, 0),
    FLD_INT(gen_decoder, num_hidden_layers, 0),
    FLD_INT(gen_decoder, head_size, 0),
    FLD_INT(gen_decoder, conv_cache_size, 0),
    FLD_INT(gen_decoder, state_update_capacity, 0),
    FLD_CALL(gen_decoder, "sliding_window", sliding_window, read_sliding_window, NULL),
    FLD_STRV(gen_decoder, layer_types),
    FLD_SELF("pipeline", read_pipeline, NULL),
    FLD_RAW(gen_decoder, extra, decoder_raw_keys),
    {0},
};

static og_status *read_decoder(pctx *c, const char *path, const cJSON *v, void *member,
                               const void *arg) {
    gen_decoder *d = member;
    OG_TRY(get_object(c, path, v));
    d->c.present = true;
    OG_TRY(parse_block(c, path, v, decoder_fields, d));
    return fill_table_name_defaults(decoder_fields, (char *)d);
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

/* eos_token_id: an id or a list of ids. */
static og_status *read_eos(pctx *c, const char *p, const cJSON *v, void *member,
                           const void *arg) {
    gen_model *m = member;
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

static const field model_fields[] = {
    FLD_STR(gen_model, type),
    FLD_INT(gen_model, bos_token_id, 0),
    FLD_INT(gen_model, pad_token_id, -1), /* some exporters write -1 for "no padding token" */
    FLD_INT(gen_model, sep_token_id, -1),
    FLD_INT(gen_model, decoder_start_token_id, 0),
    FLD_SELF("eos_token_id", read_eos, NULL),
    FLD_INT(gen_model, vocab_size, 0),
    FLD_INT(gen_model, context_length, 1),
    FLD_INT(gen_model, image_token_id, 0),
    FLD_INT(gen_model, video_token_id, 0),
    FLD_INT(gen_model, vision_start_token_id, 0),
    FLD_INT(gen_model, audio_token_id, 0),
    FLD_STR(gen_model, tokenizer_dir),
    FLD_CALL(gen_model, "decoder", decoder, read_decoder, NULL),
    FLD_CALL(gen_model, "embedding", embedding, read_component, &embedding_kind),
    FLD_CALL(gen_model, "vision", vision, read_component, &vision_kind),
    FLD_CALL(gen_model, "speech", speech, read_component, &speech_kind),
    FLD_CALL(gen_model, "encoder", encoder, read_component, &encoder_kind),
    FLD_RAW(gen_model, extra, model_raw_keys),
    {0},
};

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

static const char *const search_raw_keys[] = {"audio_interleaved", "audio_temperature",
                                              "audio_top_k", "blank_penalty", NULL};

static const field search_fields[] = {
    FLD_BOOL(gen_search, do_sample),
    FLD_BOOL(gen_search, early_stopping),
    FLD_BOOL(gen_search, past_present_share_buffer),
    FLD_INT(gen_search, min_length, 0),
    FLD_INT(gen_search, max_length, 0),
    FLD_INT(gen_search, batch_size, 1),
    FLD_INT(gen_search, num_beams, 1),
    FLD_INT(gen_search, num_return_sequences, 1),
    FLD_INT(gen_search, top_k, 0),
    FLD_INT(gen_search, no_repeat_ngram_size, 0),
    FLD_INT(gen_search, chunk_size, 0),
    FLD_INT64(gen_search, random_seed, -1),
    FLD_FLOAT(gen_search, top_p, 0, false, 1, "a number in [0, 1]"),
    FLD_FLOAT(gen_search, temperature, 0, false, HUGE_VAL, "a number >= 0"),
    FLD_FLOAT(gen_search, repetition_penalty, 0, true, HUGE_VAL, "a number > 0"),
    FLD_FLOAT(gen_search, length_penalty, -HUGE_VAL, false, HUGE_VAL, "a number"),
    FLD_FLOAT(gen_search, diversity_penalty, 0, false, HUGE_VAL, "a number >= 0"),
    FLD_RAW(gen_search, extra, search_raw_keys),
    {0},
};

/* ---- engine ------------------------------------------------------------------------ */

static const char *const batching_raw_keys[] = {"dflash2_max_snapshots",
                                                "gpu_utilization_factor",
                                                "max_scheduled_tokens", "prefix_caching", NULL};

static const field dynamic_batching_fields[] = {
    FLD_INT(gen_engine, block_size, 1),
    FLD_INT(gen_engine, num_blocks, 1),
    FLD_INT(gen_engine, max_batch_size, 1),
    FLD_RAW(gen_engine, extra, batching_raw_keys),
    {0},
};

static og_status *read_dynamic_batching(pctx *c, const char *path, const cJSON *v,
                                        void *member, const void *arg) {
    gen_engine *e = member;
    OG_TRY(get_object(c, path, v));
    e->has_dynamic_batching = true;
    return parse_block(c, path, v, dynamic_batching_fields, e);
}

static const field engine_fields[] = {
    FLD_SELF("dynamic_batching", read_dynamic_batching, NULL),
    {0},
};

/* ---- the top level ---------------------------------------------------------------- */

static og_status *read_model(pctx *c, const char *path, const cJSON *v, void *member,
                             const void *arg) {
    c->has_model = true;
    return parse_block(c, path, v, model_fields, member);
}

static og_status *read_search(pctx *c, const char *path, const cJSON *v, void *member,
                              const void *arg) {
    return parse_block(c, path, v, search_fields, member);
}

static og_status *read_engine(pctx *c, const char *path, const cJSON *v, void *member,
                              const void *arg) {
    gen_engine *e = member;
    OG_TRY(get_object(c, path, v));
    e->present = true;
    return parse_block(c, path, v, engine_fields, e);
}

static const char *const root_raw_keys[] = {"speculative", "runtime_profiles", NULL};

static const field root_fields[] = {
    FLD_CALL(gen_config, "model", model, read_model, NULL),
    FLD_CALL(gen_config, "search", search, read_search, NULL),
    FLD_CALL(gen_config, "engine", engine, read_engine, NULL),
    FLD_RAW(gen_config, extra, root_raw_keys),
    {0},
};

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
    OG_TRY(parse_block(c, "", root, root_fields, cfg));
    if (!c->has_model) return og_errorf(OG_ERR_INVALID_MODEL, "%s: \"model\" is missing", c->file);
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
    pctx c = {cfg->path, cfg, false};
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
