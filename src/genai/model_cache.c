/* Which graph inputs are loop-carried, read from the graphs themselves.
 *
 * The config gives name templates ("past_key_values.%d.key"); a layer carries a KV cache
 * when a stage's graph has an input of that name for its index, and a fixed-size state
 * when it has one of the state templates: `conv_state` / `recurrent_state` derived from
 * the KV templates (Qwen3.5's linear-attention layers: past_key_values.%d.conv_state ->
 * present.%d.conv_state) or the config's own past_conv_names / past_recurrent_names
 * (LFM2's past_conv.%d -> present_conv.%d). The config's num_hidden_layers is not trusted
 * for this: hybrid packages carry KV on some layers only. */
#include "genai/model_internal.h"
#include "backends/kv_format.h"

#include "base/tensor.h"
#include "genai/config.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

/* The layer index when `name` is `tmpl` with its %d replaced by digits, else -1. */
static int match_template(const char *tmpl, const char *name) {
    const char *pct = tmpl ? strstr(tmpl, "%d") : NULL;
    if (!pct) return -1;
    size_t pre = (size_t)(pct - tmpl), suf = strlen(pct + 2), n = strlen(name);
    if (n <= pre + suf || strncmp(name, tmpl, pre) != 0 || strcmp(name + n - suf, pct + 2) != 0)
        return -1;
    long v = 0;
    for (size_t i = pre; i < n - suf; i++) {
        if (!isdigit((unsigned char)name[i]) || v > 100000000) return -1;
        v = v * 10 + (name[i] - '0');
    }
    return (int)v;
}

/* "past_key_values.%d.key" -> "past_key_values.%d.<suffix>" (NULL when no '.'). */
static char *derive_template(const char *kv_tmpl, const char *suffix) {
    const char *dot = kv_tmpl ? strrchr(kv_tmpl, '.') : NULL;
    if (!dot || !strstr(kv_tmpl, "%d")) return NULL;
    size_t pre = (size_t)(dot - kv_tmpl) + 1;
    char *s = malloc(pre + strlen(suffix) + 1);
    if (!s) return NULL;
    memcpy(s, kv_tmpl, pre);
    strcpy(s + pre, suffix);
    return s;
}

typedef struct cache_rule {
    const char *past, *present; /* templates */
    const char *past_key, *present_key; /* config keys, for messages */
    const char *what;
    gen_cache_kind kind;
} cache_rule;

static int find_output_index(const og_session *s, const char *name) {
    for (size_t i = 0; i < og_session_output_count(s); i++) {
        og_value_info v;
        if (!og_session_output_info(s, i, &v) && strcmp(v.name, name) == 0) return (int)i;
    }
    return -1;
}

/* Ops whose kernels accept present written over past in one buffer. */
static bool op_writes_in_place(const char *op) {
    static const char *const ok[] = {"GroupQueryAttention", "Identity", NULL};
    for (int i = 0; ok[i]; i++)
        if (strcmp(ok[i], op) == 0) return true;
    return false;
}

static const graph_node *producer_of(const og_session *s, const char *value) {
    const graph *g = runtime_session_graph(s);
    return graph_producer(g, graph_find_value(g, value));
}

static bool present_shareable(const og_session *s, const char *present) {
    const graph_node *n = producer_of(s, present);
    return n && op_writes_in_place(n->op_type);
}

/* Whether the attention op writing present quantizes it with scales of its own
 * (GroupQueryAttention's k_quant_type with k_scale / v_scale, the builder's
 * kv_cache_quant_scheme): its rows are codes only, D int8 or (D + 1) / 2 bytes of two
 * int4 codes, where a session's kv_dtype rows also hold a scale each. */
static bool node_scaled(const og_session *s, const char *present) {
    return kv_node_scaled(producer_of(s, present));
}

/* A KV cache the attention op keeps window-sized (GroupQueryAttention with
 * sliding_window_cache=1 holds the last C >= local_window_size positions, evicting the
 * oldest): its capacity as onnxruntime-genai allocates it (below), or the past input's
 * fixed length. 0 for a cache that grows. */
static og_status *window_capacity(const og_model *m, const gen_stage *st, const og_value_info *past,
                                  const char *present, int *cap) {
    *cap = 0;
    const graph_node *n = producer_of(st->s, present);
    if (!n || strcmp(n->op_type, "GroupQueryAttention") != 0 ||
        graph_attr_int(n, "sliding_window_cache", 0) == 0)
        return NULL;
    int64_t w = graph_attr_int(n, "local_window_size", -1);
    if (w <= 0 || w > (1 << 30))
        return og_errorf(OG_ERR_INVALID_MODEL, "%s: node '%s' keeps a window-sized cache "
                         "(sliding_window_cache=1) but its local_window_size is %lld",
                         st->file, n->name, (long long)w);
    const gen_sliding_window *sw = &m->cfg->model.decoder.sliding_window;
    int64_t c = w > sw->window_size ? w : sw->window_size;
    /* onnxruntime-genai 0.18's capacity: the window plus cache_slack, or plus 16 when the
     * slack is not positive, at most max_length (read back from its generator's caches:
     * window 8 gives 24 rows at slack 0 or -1, 9 / 12 / 24 at slack 1 / 4 / 16, 20 at
     * max_length 20). It sets the bits too: a decode step's sum counts from the cache's
     * row 0, whose position follows the capacity. */
    c += sw->cache_slack > 0 ? sw->cache_slack : 16;
    if (m->cfg->search.max_length > 0 && c > m->cfg->search.max_length) c = m->cfg->search.max_length;
    if (c < w) c = w; /* a max_length below the window: the window still fits */
    if (past->rank == 4 && past->dims[2] > 0) c = past->dims[2];
    if (c < w || c > (1 << 30))
        return og_errorf(OG_ERR_INVALID_MODEL, "%s: input '%s' holds %lld positions, fewer than "
                         "node '%s''s local_window_size %lld", st->file, past->name, (long long)c,
                         n->name, (long long)w);
    *cap = (int)c;
    return NULL;
}

static og_status *add_entry(og_model *m, const gen_stage *st, int stage, const cache_rule *r,
                            int layer, const og_value_info *past) {
    for (int i = 0; i < m->n_cache; i++)
        if (strcmp(m->cache[i].past, past->name) == 0) return NULL; /* two rules, one name */
    char present[512];
    og_status *e = gen_config_format_name(r->present, layer, present, sizeof present);
    if (e) return og_status_wrap(e, "%s: model.decoder.outputs.%s", m->cfg->path, r->present_key);
    int oi = find_output_index(st->s, present);
    if (oi < 0)
        return og_errorf(OG_ERR_INVALID_MODEL, "%s: graph input '%s' (model.decoder.inputs.%s) is "
                         "loop-carried, but the graph has no output '%s' (model.decoder.outputs.%s) "
                         "to carry it", st->file, past->name, r->past_key, present, r->present_key);
    gen_cache *c = realloc(m->cache, (size_t)(m->n_cache + 1) * sizeof *c);
    if (!c) return og_oom();
    m->cache = c;
    c = &m->cache[m->n_cache];
    memset(c, 0, sizeof *c);
    c->past = strdup(past->name);
    c->present = strdup(present);
    if (!c->past || !c->present) {
        free(c->past);
        free(c->present);
        return og_oom();
    }
    m->n_cache++;
    c->what = r->what;
    c->kind = r->kind;
    c->layer = layer;
    c->dtype = past->dtype;
    c->stage = stage;
    c->shareable = present_shareable(st->s, present);
    /* a KV cache may be quantized: int8 / float8 rows with their scales, a session's
     * kv_dtype (backends/kv_format.h); or the builder's kv_cache_quant_scheme, codes only
     * with the scales in the graph (int8, or uint8 holding two int4 codes a byte); the
     * head size is then the stored width */
    bool quantized = (c->dtype == OG_INT8 || c->dtype == OG_FLOAT8E4M3FN || c->dtype == OG_UINT8) &&
                     r->kind == GEN_CACHE_KV;
    if (c->dtype != OG_FLOAT32 && c->dtype != OG_FLOAT16 && c->dtype != OG_BFLOAT16 && !quantized)
        return og_errorf(OG_ERR_UNSUPPORTED, "%s: loop-carried input '%s' has dtype %s (float32, "
                         "float16 or bfloat16 expected)", st->file, past->name,
                         og_dtype_name(past->dtype));
    if (r->kind == GEN_CACHE_STATE) {
        bool windowed = (!strcmp(r->what, "conv_state") && past->rank == 4) ||
                        (!strcmp(r->what, "recurrent_state") && past->rank == 5);
        if (windowed)
            return og_errorf(OG_ERR_UNSUPPORTED, "%s: state input '%s' has rank %d: a state with a "
                             "leading window axis (built with state_window) is not supported",
                             st->file, past->name, past->rank);
        if (past->rank < 1 || past->rank > OG_MAX_RANK)
            return og_errorf(OG_ERR_INVALID_MODEL, "%s: state input '%s' has no declared shape",
                             st->file, past->name);
        c->rank = past->rank;
        size_t row = dtype_size(c->dtype);
        for (int d = 0; d < past->rank; d++) {
            c->dims[d] = past->dims[d];
            if (d == 0) continue;
            if (past->dims[d] <= 0)
                return og_errorf(OG_ERR_INVALID_MODEL, "%s: state input '%s' has a symbolic "
                                 "dimension %d ('%s'); only the leading batch dimension may be "
                                 "symbolic", st->file, past->name, d,
                                 past->dim_names[d] ? past->dim_names[d] : "?");
            row *= (size_t)past->dims[d];
        }
        c->row_bytes = row;
        c->fixed = true;
        m->has_state = m->snapshots = true;
        return NULL;
    }
    bool pair = !strcmp(r->what, "kv");
    int want = pair ? 5 : 4;
    if (past->rank != want)
        return og_errorf(OG_ERR_INVALID_MODEL, "%s: cache input '%s' has rank %d, expected %d",
                         st->file, past->name, past->rank, want);
    const gen_decoder *d = &m->cfg->model.decoder;
    int64_t heads = past->dims[want - 3], hs = past->dims[want - 1];
    c->heads = heads > 0 ? (int)heads
                         : (d->num_key_value_heads > 0 ? d->num_key_value_heads
                                                       : d->num_attention_heads);
    /* a symbolic head size is the config's; a quantized row also holds its scale, unless
     * the node quantizes with its own scales (int4: two codes a byte) */
    bool scaled = quantized && node_scaled(st->s, present);
    if (c->dtype == OG_UINT8 && quantized && !scaled)
        return og_errorf(OG_ERR_UNSUPPORTED, "%s: cache input '%s' is uint8 but the attention "
                         "node writing '%s' has no k_quant_type (a uint8 cache holds the "
                         "builder's int4 codes, quantized with the node's k_scale / v_scale)",
                         st->file, past->name, present);
    int64_t D = d->head_size;
    c->head_size = hs > 0 ? (int)hs
                          : scaled ? (int)(c->dtype == OG_UINT8 ? (D + 1) / 2 : D)
                                   : (int)kv_stored_width(c->dtype, D);
    if (c->heads <= 0 || c->head_size <= 0 || (quantized && !scaled && c->head_size <= KV_SCALE_BYTES))
        return og_errorf(OG_ERR_INVALID_MODEL, "%s: cannot tell the cache's heads and head size: "
                         "input '%s' leaves them symbolic and the config lacks "
                         "model.decoder.num_key_value_heads / head_size", m->cfg->path, past->name);
    gen_kv_layout lay = pair ? GEN_KV_COMBINED : GEN_KV_SEPARATE;
    if (m->kv != GEN_KV_NONE && m->kv != lay)
        return og_errorf(OG_ERR_INVALID_MODEL, "%s: the graphs mix combined (past_%%d) and "
                         "separate key/value caches", m->cfg->path);
    if (m->kv == GEN_KV_NONE) {
        m->kv = lay;
        m->kv_dtype = c->dtype;
        m->kv_heads = c->heads;
        m->head_size = c->head_size;
    }
    OG_TRY(window_capacity(m, st, past, present, &c->window));
    if (c->window) {
        if (pair)
            return og_errorf(OG_ERR_UNSUPPORTED, "%s: a window-sized cache in the combined "
                             "layout ('%s') is not supported", st->file, past->name);
        c->fixed = true;
        c->rank = 4;
        c->dims[0] = -1;
        c->dims[1] = c->heads;
        c->dims[2] = c->window;
        c->dims[3] = c->head_size;
        c->row_bytes = (size_t)c->heads * (size_t)c->window * (size_t)c->head_size *
                       dtype_size(c->dtype);
        m->has_window = m->snapshots = true;
    }
    return NULL;
}

/* A KV layer needs both its key and its value. */
static og_status *check_pairs(const og_model *m) {
    for (int i = 0; i < m->n_cache; i++) {
        const gen_cache *c = &m->cache[i];
        if (c->kind != GEN_CACHE_KV || !strcmp(c->what, "kv")) continue;
        const char *other = !strcmp(c->what, "key") ? "value" : "key";
        bool found = false;
        for (int j = 0; j < m->n_cache && !found; j++)
            found = m->cache[j].layer == c->layer && !strcmp(m->cache[j].what, other);
        if (!found)
            return og_errorf(OG_ERR_INVALID_MODEL, "%s: layer %d has a cached %s ('%s') but no "
                             "cached %s", m->cfg->path, c->layer, c->what, c->past, other);
    }
    return NULL;
}

og_status *gen_model_find_caches(og_model *m) {
    const gen_decoder *d = &m->cfg->model.decoder;
    const gen_kvs *in = &d->c.inputs, *out = &d->c.outputs;
    const char *pk = gen_kvs_get(in, "past_key_names"), *ok = gen_kvs_get(out, "present_key_names");
    const char *combined = gen_kvs_get(in, "past_names");
    char *dc = derive_template(pk, "conv_state"), *dr = derive_template(pk, "recurrent_state");
    char *oc = derive_template(ok, "conv_state"), *orr = derive_template(ok, "recurrent_state");
    cache_rule rules[8];
    int nr = 0;
    if (combined)
        rules[nr++] = (cache_rule){combined, gen_kvs_get(out, "present_names"), "past_names",
                                   "present_names", "kv", GEN_CACHE_KV};
    rules[nr++] = (cache_rule){pk, ok, "past_key_names", "present_key_names", "key", GEN_CACHE_KV};
    rules[nr++] = (cache_rule){gen_kvs_get(in, "past_value_names"),
                               gen_kvs_get(out, "present_value_names"), "past_value_names",
                               "present_value_names", "value", GEN_CACHE_KV};
    if (dc && oc)
        rules[nr++] = (cache_rule){dc, oc, "past_key_names", "present_key_names", "conv_state",
                                   GEN_CACHE_STATE};
    if (dr && orr)
        rules[nr++] = (cache_rule){dr, orr, "past_key_names", "present_key_names",
                                   "recurrent_state", GEN_CACHE_STATE};
    if (gen_kvs_get(in, "past_conv_names"))
        rules[nr++] = (cache_rule){gen_kvs_get(in, "past_conv_names"),
                                   gen_kvs_get(out, "present_conv_names"), "past_conv_names",
                                   "present_conv_names", "conv", GEN_CACHE_STATE};
    if (gen_kvs_get(in, "past_recurrent_names"))
        rules[nr++] = (cache_rule){gen_kvs_get(in, "past_recurrent_names"),
                                   gen_kvs_get(out, "present_recurrent_names"),
                                   "past_recurrent_names", "present_recurrent_names",
                                   "recurrent_state", GEN_CACHE_STATE};
    og_status *st = NULL;
    for (int s = 0; !st && s < m->n_stages; s++) {
        const gen_stage *sg = &m->stages[s];
        for (size_t i = 0; !st && i < og_session_input_count(sg->s); i++) {
            og_value_info v;
            if ((st = og_session_input_info(sg->s, i, &v))) break;
            for (int r = 0; r < nr && !st; r++) {
                if (!rules[r].present) continue;
                int layer = match_template(rules[r].past, v.name);
                if (layer < 0) continue;
                st = add_entry(m, sg, s, &rules[r], layer, &v);
                break;
            }
        }
    }
    free(dc);
    free(dr);
    free(oc);
    free(orr);
    OG_TRY(st);
    OG_TRY(check_pairs(m));
    if (m->n_cache == 0 && d->num_hidden_layers > 0) {
        /* the config promises layers: say which name the first one should have */
        const char *t = combined ? combined : pk;
        const char *key = combined ? "past_names" : "past_key_names";
        char buf[512];
        og_status *e = gen_config_format_name(t, 0, buf, sizeof buf);
        if (e) return og_status_wrap(e, "%s: model.decoder.inputs.%s", m->cfg->path, key);
        const gen_stage *last = &m->stages[m->n_stages - 1];
        return og_errorf(OG_ERR_INVALID_MODEL, "%s: model.decoder.inputs.%s names '%s' for "
                         "layer 0, but the decoder graph %s has no such input", m->cfg->path, key,
                         buf, last->file);
    }
    int layers = 0;
    for (int i = 0; i < m->n_cache; i++)
        layers += m->cache[i].kind == GEN_CACHE_KV && strcmp(m->cache[i].what, "value") != 0;
    m->n_layers = layers;
    /* A plain KV model (no states, no layer_types) caches every layer, and
     * onnxruntime-genai names one cache input per configured layer: a count that
     * disagrees with the graph is an error there, and here too rather than ignored. */
    bool states = m->has_state;
    for (int i = 0; i < m->n_cache && !states; i++) states = m->cache[i].kind == GEN_CACHE_STATE;
    if (!states && d->n_layer_types == 0 && layers > 0 && d->num_hidden_layers > 0 &&
        d->num_hidden_layers != layers) {
        const gen_stage *last = &m->stages[m->n_stages - 1];
        return og_errorf(OG_ERR_INVALID_MODEL, "%s: model.decoder.num_hidden_layers is %d, but "
                         "the graph %s carries a KV cache for %d layers", m->cfg->path,
                         d->num_hidden_layers, last->file, layers);
    }
    return NULL;
}

og_status *gen_model_check_kv_dtype(const og_model *m, og_dtype want) {
    if (want == OG_UNDEFINED) return NULL;
    int found = 0;
    for (int i = 0; i < m->n_cache; i++) {
        const gen_cache *c = &m->cache[i];
        if (c->kind != GEN_CACHE_KV) continue;
        found++;
        if (c->dtype != want)
            return og_errorf(OG_ERR_UNSUPPORTED, "%s: the KV cache '%s' cannot be stored as %s: "
                             "only GroupQueryAttention's caches can (this one stays %s)",
                             m->cfg->path, c->past, og_dtype_name(want), og_dtype_name(c->dtype));
    }
    if (!found)
        return og_errorf(OG_ERR_INVALID_ARGUMENT, "%s: a KV cache stored as %s was asked for, but "
                         "the model has no KV cache", m->cfg->path, og_dtype_name(want));
    return NULL;
}

double gen_model_kv_bytes_per_position(const og_model *m) {
    double b = 0;
    for (int i = 0; m && i < m->n_cache; i++) {
        const gen_cache *c = &m->cache[i];
        if (c->kind != GEN_CACHE_KV || c->window) continue; /* a window does not grow */
        b += (double)c->heads * c->head_size * (double)dtype_size(c->dtype) *
             (!strcmp(c->what, "kv") ? 2 : 1);
    }
    return b;
}
