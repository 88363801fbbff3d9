/* POST /v1/embeddings: a vector per input from the hidden states of the package's decoder
 * graph (the final norm's output, which the builder's exclude_lm_head / include_hidden_states
 * packages give as "hidden_states"; optimum's exports as "last_hidden_state"), pooled and
 * normalised as the package's sentence-transformers files say (modules.json,
 * 1_Pooling/config.json, a Normalize module) or serve's --pooling / --embeddings-normalize.
 *
 * A decoder that outputs only logits gives the input of its lm_head instead (the final
 * norm's output, found by walking up from the logits through a bias, scale or soft cap to
 * the MatMul): the session is opened again with that value made an output (natively).
 *
 * The graph runs in its own session (opened on the first request, or at load for a package
 * that has no logits and so serves nothing else) with an empty cache. A request's inputs of
 * the same length run together as one batch (where the graph's inputs take any batch
 * size), up to EMB_BATCH_ROWS rows and EMB_BATCH_TOKENS tokens a run; inputs of other
 * lengths run apart: nothing is padded, so each vector is what the input gives alone.
 * Requests take turns on the session. */
#include "serve/serve_internal.h"

#include "base/half.h"
#include "base/pkg_file.h"
#include "genai/config.h"
#include "runtime/og_session.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* One run's bounds: rows of a batch, and its tokens (a batch of long inputs is cut). */
enum { EMB_BATCH_ROWS = 64, EMB_BATCH_TOKENS = 8192 };

struct srv_embedder {
    og_session *s;
    bool batchable;       /* every input takes any batch size (a symbolic first dimension) */
    pthread_mutex_t mu;   /* one run at a time */
    const char *out_name; /* the hidden states output (the session's string) */
    og_dtype out_dtype;   /* float32, float16 or bfloat16 (OG_UNDEFINED: an inner value's,
                             known once it runs) */
    bool inner;           /* out_name is the lm_head's input, made an output */
    int hidden;           /* its last dimension */
    bool has_logits;      /* the graph also has the config's logits output */
    const char *ids_name, *mask_name, *pos_name; /* the session's strings (NULL: absent) */
    int64_t kv_heads, head_size; /* the config's, for a cache dimension left symbolic */
    int context;
    int vocab;
    int pool;   /* SERVE_POOL_* */
    bool normalize;
    char how[160];        /* where pooling and normalising came from, for the start line */
};

static const char *pool_name(int p) {
    switch (p) {
    case SERVE_POOL_LAST: return "last";
    case SERVE_POOL_MEAN: return "mean";
    case SERVE_POOL_CLS: return "cls";
    default: return "unset";
    }
}

/* ---- pooling from sentence-transformers' files ----------------------------------------- */

static cJSON *read_json(const char *dir, const char *rel) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, rel);
    char *buf = NULL;
    size_t len = 0;
    og_status *st = pkg_read_file(path, PKG_MAX_JSON_BYTES, &buf, &len);
    if (st) {
        og_status_free(st);
        return NULL;
    }
    cJSON *j = cJSON_ParseWithLength(buf, len);
    free(buf);
    return j;
}

/* A Pooling module's config.json: the one mode it sets, or an error naming one we lack. */
static og_status *pool_of_config(const cJSON *c, const char *where, int *out) {
    static const struct {
        const char *key;
        int p;
    } modes[] = {{"pooling_mode_cls_token", SERVE_POOL_CLS},
                 {"pooling_mode_mean_tokens", SERVE_POOL_MEAN},
                 {"pooling_mode_lasttoken", SERVE_POOL_LAST},
                 {"pooling_mode_max_tokens", SERVE_POOL_UNSET},
                 {"pooling_mode_mean_sqrt_len_tokens", SERVE_POOL_UNSET},
                 {"pooling_mode_weightedmean_tokens", SERVE_POOL_UNSET}};
    int n = 0;
    for (size_t i = 0; i < sizeof modes / sizeof *modes; i++) {
        if (!cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(c, modes[i].key))) continue;
        if (modes[i].p == SERVE_POOL_UNSET)
            return og_errorf(OG_ERR_UNSUPPORTED, "%s sets %s, which the server does not compute "
                             "(give --pooling last|mean|cls to override)", where, modes[i].key);
        *out = modes[i].p;
        n++;
    }
    if (n != 1)
        return og_errorf(OG_ERR_UNSUPPORTED, "%s sets %d pooling modes; the server takes exactly "
                         "one (give --pooling last|mean|cls to override)", where, n);
    return NULL;
}

/* The package's pooling and normalising: modules.json names the modules in order (a
 * Pooling module's folder holds its config.json; a Normalize module means unit vectors),
 * else a bare 1_Pooling/config.json. *found: whether there was either. */
static og_status *package_pooling(const char *dir, int *pool, bool *normalize, bool *found,
                                  char *from, size_t from_size) {
    *found = false;
    cJSON *mods = read_json(dir, "modules.json");
    const char *pool_dir = NULL;
    if (cJSON_IsArray(mods)) {
        *normalize = false;
        const cJSON *e;
        cJSON_ArrayForEach(e, mods) {
            const cJSON *type = cJSON_GetObjectItemCaseSensitive(e, "type");
            const cJSON *path = cJSON_GetObjectItemCaseSensitive(e, "path");
            if (!cJSON_IsString(type)) continue;
            if (strstr(type->valuestring, "Normalize")) *normalize = true;
            if (strstr(type->valuestring, "Pooling") && cJSON_IsString(path)) pool_dir = path->valuestring;
        }
        *found = true;
        snprintf(from, from_size, "modules.json");
    }
    bool listed = *found;
    char rel[512];
    snprintf(rel, sizeof rel, "%s/config.json", pool_dir ? pool_dir : "1_Pooling");
    og_status *st = pool_dir ? pkg_path_check("modules.json", "a Pooling module's path", pool_dir) : NULL;
    cJSON *pc = st ? NULL : read_json(dir, rel);
    if (!st && pc) { /* without modules.json, normalising stays the default */
        st = pool_of_config(pc, rel, pool);
        *found = true;
        snprintf(from, from_size, "%s%s", listed ? "modules.json, " : "", rel);
    } else if (!st && listed) {
        st = og_errorf(OG_ERR_INVALID_MODEL, "modules.json lists %s", pool_dir
                       ? "a Pooling module whose config.json cannot be read" : "no Pooling module");
    }
    cJSON_Delete(pc);
    cJSON_Delete(mods);
    return st;
}

/* ---- opening ------------------------------------------------------------------------- */

/* The value the lm_head multiplies: up from the logits through element-wise steps (a bias,
 * a scale, a soft cap's Div / Tanh / Mul, a Cast) to a MatMul, MatMulNBits or Gemm, whose
 * first input it is; NULL when the graph is not so. */
static const char *lm_head_input(const graph *g, const char *logits) {
    int v = graph_find_value(g, logits);
    for (int step = 0; v >= 0 && step < 8; step++) {
        int p = g->values[v].producer;
        if (p < 0) return NULL;
        const graph_node *n = &g->nodes[p];
        if (n->domain[0] && strcmp(n->domain, "com.microsoft")) return NULL;
        if (!strcmp(n->op_type, "MatMul") || !strcmp(n->op_type, "MatMulNBits") || !strcmp(n->op_type, "Gemm"))
            return n->n_inputs > 0 && n->inputs[0] >= 0 ? g->values[n->inputs[0]].name : NULL;
        static const char *const steps[] = {"Add", "Mul", "Div", "Tanh", "Cast", NULL};
        bool ok = false;
        for (int i = 0; steps[i] && !ok; i++) ok = !strcmp(n->op_type, steps[i]);
        if (!ok || n->n_inputs < 1) return NULL;
        v = -1; /* the input that is made by a node (the other is a constant) */
        for (int i = 0; i < n->n_inputs && v < 0; i++)
            if (n->inputs[i] >= 0 && g->values[n->inputs[i]].producer >= 0) v = n->inputs[i];
    }
    return NULL;
}

/* e's session opened again with the lm_head's input made an output. */
static og_status *expose_lm_head_input(srv_embedder *e, const char *path, const og_session_options *so,
                                       const char *logits, int hidden) {
    const char *name = lm_head_input(runtime_session_graph(e->s), logits);
    if (!name)
        return og_errorf(OG_ERR_UNSUPPORTED, "%s: the decoder graph has no hidden-states output (one "
                         "named 'hidden_states' or 'last_hidden_state': the builder writes it with "
                         "exclude_lm_head or include_hidden_states), and its logits do not come from "
                         "a MatMul of the final norm's output, so it gives no embeddings", path);
    if (hidden <= 0)
        return og_errorf(OG_ERR_INVALID_MODEL, "%s: the lm_head's input '%s' would do, but "
                         "genai_config's decoder.hidden_size is not set", path, name);
    char *keep = strdup(name);
    if (!keep) return og_oom();
    og_session *s = NULL;
    og_status *st = runtime_session_open_exposing(path, so, (const char *const *)&keep, 1, &s);
    for (size_t i = 0; !st && i < og_session_output_count(s); i++) {
        og_value_info v;
        if ((st = og_session_output_info(s, i, &v))) break;
        if (!strcmp(v.name, keep)) e->out_name = v.name;
    }
    free(keep);
    if (st) {
        og_session_close(s);
        return og_status_wrap(st, "making the lm_head's input an output");
    }
    og_session_close(e->s);
    e->s = s;
    e->inner = true;
    e->hidden = hidden;
    e->out_dtype = OG_UNDEFINED;
    return NULL;
}

void srv_embedder_free(srv_embedder *e) {
    if (!e) return;
    og_session_close(e->s);
    pthread_mutex_destroy(&e->mu);
    free(e);
}

og_status *srv_embedder_open(const serve_options *o, const char *dir, srv_embedder **out) {
    *out = NULL;
    gen_config *cfg = NULL;
    OG_TRY(gen_config_load(dir, &cfg));
    srv_embedder *e = calloc(1, sizeof *e);
    char *path = NULL;
    og_status *st = e ? NULL : og_oom();
    if (e) pthread_mutex_init(&e->mu, NULL);
    const gen_decoder *d = &cfg->model.decoder;
    if (!st && !d->c.filename)
        st = og_errorf(OG_ERR_INVALID_MODEL, "%s: model.decoder.filename is not set", cfg->path);
    if (!st) st = pkg_path_join(cfg->dir, d->c.filename, cfg->path, "model.decoder.filename", &path);
    og_session_options so = og_session_options_default();
    if (!st) {
        so.num_threads = o->model.num_threads;
        so.backend = o->model.backend;
        so.ort_library = o->model.ort_library;
        so.ort_provider = o->model.ort_provider;
        so.graph_optimization_level = o->model.graph_optimization_level;
        so.plan_memory = o->model.plan_memory;
        st = og_session_open(path, &so, &e->s);
    }
    const char *hs_cfg = st ? NULL : gen_kvs_get(&d->c.outputs, "hidden_states");
    const char *logits = st ? NULL : gen_kvs_get(&d->c.outputs, "logits");
    for (size_t i = 0; !st && i < og_session_output_count(e->s); i++) {
        og_value_info v;
        if ((st = og_session_output_info(e->s, i, &v))) break;
        if (logits && !strcmp(v.name, logits)) e->has_logits = true;
        bool named = hs_cfg ? !strcmp(v.name, hs_cfg)
                            : !strcmp(v.name, "hidden_states") || !strcmp(v.name, "last_hidden_state");
        if (!named || e->out_name) continue;
        if ((v.rank != 2 && v.rank != 3) || v.dims[v.rank - 1] <= 0 ||
            (v.dtype != OG_FLOAT32 && v.dtype != OG_FLOAT16 && v.dtype != OG_BFLOAT16)) {
            st = og_errorf(OG_ERR_UNSUPPORTED, "%s: the output '%s' is not [batch, sequence, hidden] "
                           "(or [tokens, hidden]) floats of a known width", path, v.name);
            break;
        }
        e->out_name = v.name;
        e->out_dtype = v.dtype;
        e->hidden = (int)v.dims[v.rank - 1];
    }
    if (!st && !e->out_name && hs_cfg)
        st = og_errorf(OG_ERR_UNSUPPORTED, "%s: genai_config's decoder.outputs.hidden_states is '%s', "
                       "but the graph has no such output", path, hs_cfg);
    else if (!st && !e->out_name && e->has_logits)
        st = expose_lm_head_input(e, path, &so, logits, d->hidden_size);
    else if (!st && !e->out_name)
        st = og_errorf(OG_ERR_UNSUPPORTED, "%s: the decoder graph has neither a hidden-states output "
                       "('hidden_states' or 'last_hidden_state') nor the logits output '%s', so it "
                       "gives no embeddings", path, logits ? logits : "logits");
    for (size_t i = 0; !st && i < og_session_input_count(e->s); i++) {
        og_value_info v;
        if ((st = og_session_input_info(e->s, i, &v))) break;
        if (!strcmp(v.name, gen_kvs_get(&d->c.inputs, "input_ids"))) e->ids_name = v.name;
        else if (!strcmp(v.name, gen_kvs_get(&d->c.inputs, "attention_mask"))) e->mask_name = v.name;
        else if (!strcmp(v.name, gen_kvs_get(&d->c.inputs, "position_ids"))) e->pos_name = v.name;
    }
    e->batchable = true; /* every input's batch dimension (mrope positions': the second) symbolic */
    for (size_t i = 0; !st && i < og_session_input_count(e->s); i++) {
        og_value_info v;
        if ((st = og_session_input_info(e->s, i, &v))) break;
        int b = v.name == e->pos_name && v.rank == 3 ? 1 : 0;
        if (v.rank > b && v.dims[b] >= 0) e->batchable = false;
    }
    if (!st && !e->ids_name)
        st = og_errorf(OG_ERR_UNSUPPORTED, "%s: the decoder graph has no '%s' input (a package fed "
                       "inputs_embeds gives no embeddings here)", path,
                       gen_kvs_get(&d->c.inputs, "input_ids"));
    if (!st) {
        e->kv_heads = d->num_key_value_heads;
        e->head_size = d->head_size;
        e->context = cfg->model.context_length > 0 ? cfg->model.context_length : 0;
        e->vocab = cfg->model.vocab_size;
        bool found = false;
        char from[600] = "";
        e->normalize = true;
        e->pool = SERVE_POOL_LAST;
        st = o->pooling ? NULL : package_pooling(cfg->dir, &e->pool, &e->normalize, &found, from, sizeof from);
        if (st) st = og_status_wrap(st, "%s", cfg->dir);
        if (o->pooling) e->pool = o->pooling;
        if (o->embed_normalize >= 0) e->normalize = o->embed_normalize != 0;
        snprintf(e->how, sizeof e->how, "%.40s pooling, %snormalised (%.60s)%s", pool_name(e->pool),
                 e->normalize ? "" : "not ",
                 o->pooling || o->embed_normalize >= 0 ? "serve's options" : found ? from : "the defaults",
                 e->inner ? ", of the lm_head's input" : "");
    }
    free(path);
    gen_config_free(cfg);
    if (st) {
        srv_embedder_free(e);
        return st;
    }
    *out = e;
    return NULL;
}

bool srv_embedder_has_logits(const srv_embedder *e) { return e->has_logits; }
int srv_embedder_context(const srv_embedder *e) { return e->context; }
int srv_embedder_vocab(const srv_embedder *e) { return e->vocab; }
const char *srv_embedder_how(const srv_embedder *e) { return e->how; }

/* ---- running ------------------------------------------------------------------------- */

/* A tensor of dims (batch k where the declaration is symbolic there; a symbolic past
 * length 0), zeros, of the declared dtype. */
static og_status *zeros_like(const srv_embedder *e, const og_value_info *v, int k, og_tensor **out) {
    int64_t dims[8];
    if (v->rank < 0 || v->rank > 8)
        return og_errorf(OG_ERR_UNSUPPORTED, "input '%s' has rank %d", v->name, v->rank);
    for (int i = 0; i < v->rank; i++) {
        dims[i] = v->dims[i];
        if (dims[i] >= 0) continue;
        const char *dn = v->dim_names ? v->dim_names[i] : NULL;
        if (i == 0 || (dn && strstr(dn, "batch"))) dims[i] = k;
        else if (dn && (strstr(dn, "past") || strstr(dn, "sequence"))) dims[i] = 0;
        else if (v->rank == 4 && i == 1 && e->kv_heads > 0) dims[i] = e->kv_heads;
        else if (v->rank == 4 && i == 3 && e->head_size > 0) dims[i] = e->head_size;
        else
            return og_errorf(OG_ERR_UNSUPPORTED, "input '%s': its dimension %d ('%s') is symbolic and "
                             "not one the server can fill for a first run", v->name, i, dn ? dn : "?");
    }
    og_tensor *t;
    OG_TRY(og_tensor_create(v->dtype, dims, v->rank, &t));
    memset(og_tensor_data(t), 0, og_tensor_size_bytes(t));
    *out = t;
    return NULL;
}

/* input_ids / attention_mask / position_ids of k rows of n ids (ids[r]: row r), in the
 * declared integer type. */
static og_status *int_input(const og_value_info *v, const int32_t *const *ids, int k, int n, int what,
                            og_tensor **out) {
    if (v->dtype != OG_INT64 && v->dtype != OG_INT32)
        return og_errorf(OG_ERR_UNSUPPORTED, "input '%s' is %s, not int64 or int32", v->name,
                         og_dtype_name(v->dtype));
    int64_t dims[3] = {k, n, 0};
    int rank = 2;
    if (what == 2 && v->rank == 3) { /* mrope positions: [3, batch, sequence], all the same for text */
        dims[0] = 3, dims[1] = k, dims[2] = n;
        rank = 3;
    }
    og_tensor *t;
    OG_TRY(og_tensor_create(v->dtype, dims, rank, &t));
    int64_t count = og_tensor_element_count(t), row = (int64_t)k * n;
    for (int64_t i = 0; i < count; i++) {
        int64_t at = i % row, r = at / n, c = at % n;
        int64_t x = what == 0 ? ids[r][c] : what == 1 ? 1 : c;
        if (v->dtype == OG_INT64) ((int64_t *)og_tensor_data(t))[i] = x;
        else ((int32_t *)og_tensor_data(t))[i] = (int32_t)x;
    }
    *out = t;
    return NULL;
}

/* The pooled vectors (e->hidden floats each, not normalised, into vecs) of k inputs of n
 * ids each (ids[r]: row r), run as one batch. */
static og_status *embed_rows(srv_embedder *e, const int32_t *const *ids, int k, int n, float *vecs) {
    size_t n_in = og_session_input_count(e->s);
    const char **names = calloc(n_in ? n_in : 1, sizeof *names);
    og_tensor **ins = calloc(n_in ? n_in : 1, sizeof *ins);
    og_status *st = names && ins ? NULL : og_oom();
    size_t got = 0;
    for (size_t i = 0; !st && i < n_in; i++) {
        og_value_info v;
        if ((st = og_session_input_info(e->s, i, &v))) break;
        if (v.name == e->ids_name) st = int_input(&v, ids, k, n, 0, &ins[got]);
        else if (v.name == e->mask_name) st = int_input(&v, ids, k, n, 1, &ins[got]);
        else if (v.name == e->pos_name) st = int_input(&v, ids, k, n, 2, &ins[got]);
        else st = zeros_like(e, &v, k, &ins[got]); /* caches and states: empty; token_type_ids: 0 */
        if (!st) names[got++] = v.name;
    }
    og_tensor *out = NULL;
    if (!st) {
        pthread_mutex_lock(&e->mu);
        st = og_session_run(e->s, names, ins, got, &e->out_name, &out, 1);
        pthread_mutex_unlock(&e->mu);
    }
    for (size_t i = 0; i < got; i++) og_tensor_free(ins[i]);
    free(names);
    free(ins);
    if (st) return st;
    const int64_t *dims = og_tensor_dims(out);
    int64_t rows = og_tensor_element_count(out) / e->hidden;
    og_dtype dt = og_tensor_dtype(out);
    if ((e->out_dtype != OG_UNDEFINED && dt != e->out_dtype) ||
        (dt != OG_FLOAT32 && dt != OG_FLOAT16 && dt != OG_BFLOAT16) || og_tensor_rank(out) < 2 ||
        dims[og_tensor_rank(out) - 1] != e->hidden || rows != (int64_t)k * n) {
        og_tensor_free(out);
        return og_errorf(OG_ERR_RUNTIME, "the hidden states '%s' came back as %s with %lld rows of "
                         "%lld, not %lld of %d floats", e->out_name, og_dtype_name(dt), (long long)rows,
                         (long long)(og_tensor_rank(out) ? dims[og_tensor_rank(out) - 1] : 0),
                         (long long)k * n, e->hidden);
    }
    const void *h = og_tensor_data(out);
    int first = e->pool == SERVE_POOL_LAST ? n - 1 : 0;
    int last = e->pool == SERVE_POOL_CLS ? 0 : n - 1;
    double *acc = malloc(sizeof *acc * (size_t)e->hidden);
    if (!acc) {
        og_tensor_free(out);
        return og_oom();
    }
    for (int b = 0; b < k; b++) {
        memset(acc, 0, sizeof *acc * (size_t)e->hidden);
        for (int r = first; r <= last; r++)
            for (int c = 0; c < e->hidden; c++) {
                size_t at = ((size_t)b * (size_t)n + (size_t)r) * (size_t)e->hidden + (size_t)c;
                acc[c] += dt == OG_FLOAT32 ? ((const float *)h)[at]
                          : dt == OG_FLOAT16 ? f16_to_f32(((const uint16_t *)h)[at])
                                             : bf16_to_f32(((const uint16_t *)h)[at]);
            }
        float *vec = vecs + (size_t)b * (size_t)e->hidden;
        for (int c = 0; c < e->hidden; c++) vec[c] = (float)(acc[c] / (last - first + 1));
    }
    free(acc);
    og_tensor_free(out);
    return NULL;
}


/* ---- the route --------------------------------------------------------------------- */

/* v[0, n) divided by its length (torch's normalize: by max(|v|, 1e-12)). */
static void unit_length(float *v, int n) {
    double ss = 0;
    for (int i = 0; i < n; i++) ss += (double)v[i] * v[i];
    double len = sqrt(ss);
    if (len < 1e-12) len = 1e-12;
    for (int i = 0; i < n; i++) v[i] = (float)(v[i] / len);
}

static void base64_add(srv_buf *b, const unsigned char *p, size_t n) {
    static const char tab[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    char q[4];
    for (size_t i = 0; i < n; i += 3) {
        uint32_t x = (uint32_t)p[i] << 16 | (i + 1 < n ? (uint32_t)p[i + 1] << 8 : 0) |
                     (i + 2 < n ? p[i + 2] : 0);
        q[0] = tab[x >> 18 & 63];
        q[1] = tab[x >> 12 & 63];
        q[2] = i + 1 < n ? tab[x >> 6 & 63] : '=';
        q[3] = i + 2 < n ? tab[x & 63] : '=';
        srv_buf_add(b, q, 4);
    }
}

/* One input of the request: its ids (owned), or a 400 naming the field. */
typedef struct embed_input {
    int32_t *ids;
    int n;
    bool owned; /* from the tokenizer (og_free) rather than malloc */
} embed_input;

static bool ids_of(const cJSON *a, const srv_model *m, int vocab, const char *param, embed_input *in,
                   srv_error *err) {
    int n = cJSON_GetArraySize(a);
    in->ids = malloc(sizeof *in->ids * (size_t)(n ? n : 1));
    if (!in->ids) {
        srv_fail(err, 500, "", "out of memory");
        return false;
    }
    const cJSON *x;
    cJSON_ArrayForEach(x, a) {
        double v = cJSON_IsNumber(x) ? x->valuedouble : -1;
        if (!cJSON_IsNumber(x) || v != floor(v) || v < 0 || v >= vocab) {
            srv_fail(err, 400, param, "'%s' holds %s: token ids are whole numbers in [0, %d) for "
                     "model '%.100s'", param, cJSON_IsNumber(x) ? "an id out of range" : "something "
                     "that is not a token id", vocab, m->name);
            return false;
        }
        in->ids[in->n++] = (int32_t)v;
    }
    return true;
}

static bool text_of(const cJSON *s, const srv_model *m, const char *param, embed_input *in, srv_error *err) {
    size_t len = strlen(s->valuestring), n = 0;
    og_status *st = og_tokenizer_encode(m->tok, s->valuestring, len, 1, &in->ids, &n);
    if (st) {
        srv_fail(err, 400, param, "'%s' cannot be tokenized: %s", param, og_status_message(st));
        og_status_free(st);
        return false;
    }
    in->owned = true;
    in->n = (int)n;
    return true;
}

/* The request's input as a list of id lists: a string, a list of strings, a list of ids,
 * or a list of id lists. */
static bool read_inputs(const cJSON *input, const srv_model *m, int vocab, embed_input **out, int *n_out,
                        srv_error *err) {
    *out = NULL;
    *n_out = 0;
    if (!input) {
        srv_fail(err, 400, "input", "'input' is required");
        return false;
    }
    bool one = cJSON_IsString(input) || (cJSON_IsArray(input) && cJSON_IsNumber(input->child));
    if (!one && !cJSON_IsArray(input)) {
        srv_fail(err, 400, "input", "'input' must be a string, a list of strings, a list of token "
                 "ids or a list of lists of token ids");
        return false;
    }
    int n = one ? 1 : cJSON_GetArraySize(input);
    if (n == 0) {
        srv_fail(err, 400, "input", "'input' is an empty list");
        return false;
    }
    if (n > SRV_EMBED_MAX_INPUTS) {
        srv_fail(err, 400, "input", "'input' holds %d inputs; at most %d a request", n, SRV_EMBED_MAX_INPUTS);
        return false;
    }
    embed_input *in = calloc((size_t)n, sizeof *in);
    if (!in) {
        srv_fail(err, 500, "", "out of memory");
        return false;
    }
    *out = in;
    *n_out = n;
    bool strings = one ? cJSON_IsString(input) : cJSON_IsString(input->child);
    const cJSON *x = one ? input : input->child;
    for (int i = 0; i < n; i++, x = x->next) {
        char param[48];
        if (one) snprintf(param, sizeof param, "input");
        else snprintf(param, sizeof param, "input[%d]", i);
        bool ok;
        if (one && !strings) ok = ids_of(input, m, vocab, param, &in[i], err);
        else if (strings && cJSON_IsString(x)) ok = text_of(x, m, param, &in[i], err);
        else if (!strings && cJSON_IsArray(x)) ok = ids_of(x, m, vocab, param, &in[i], err);
        else {
            srv_fail(err, 400, param, "'%s' must be %s like the first input", param,
                     strings ? "a string" : "a list of token ids");
            ok = false;
        }
        if (ok && in[i].n == 0) {
            srv_fail(err, 400, param, "'%s' is empty", param);
            ok = false;
        }
        if (!ok) return false;
    }
    return true;
}

static void free_inputs(embed_input *in, int n) {
    for (int i = 0; in && i < n; i++) {
        if (in[i].owned) og_free(in[i].ids);
        else free(in[i].ids);
    }
    free(in);
}

typedef struct embed_key {
    int n, i; /* an input's length, its index */
} embed_key;

static int key_cmp(const void *a, const void *b) {
    const embed_key *x = a, *y = b;
    return x->n != y->n ? (x->n < y->n ? -1 : 1) : (x->i > y->i) - (x->i < y->i);
}

/* The vectors of the inputs (vecs: e->hidden floats each, not normalised): those of one
 * length together, in batches of at most EMB_BATCH_ROWS rows and EMB_BATCH_TOKENS tokens
 * where the graph takes any batch size, else one by one. *runs: the session runs; on
 * failure *bad is the first input of the run that failed. */
static og_status *embed_all(srv_embedder *e, const embed_input *in, int n_in, float *vecs, int *runs,
                            int *bad) {
    embed_key *key = malloc(sizeof *key * (size_t)n_in);
    const int32_t **rows = malloc(sizeof *rows * EMB_BATCH_ROWS);
    float *out = malloc(sizeof *out * (size_t)e->hidden * EMB_BATCH_ROWS);
    og_status *st = key && rows && out ? NULL : og_oom();
    for (int i = 0; !st && i < n_in; i++) key[i] = (embed_key){in[i].n, i};
    if (!st) qsort(key, (size_t)n_in, sizeof *key, key_cmp);
    size_t h = (size_t)e->hidden;
    for (int a = 0; !st && a < n_in;) {
        int n = key[a].n, k = 1;
        int cap = !e->batchable ? 1 : EMB_BATCH_TOKENS / n < 1 ? 1
                  : EMB_BATCH_TOKENS / n < EMB_BATCH_ROWS ? EMB_BATCH_TOKENS / n : EMB_BATCH_ROWS;
        while (a + k < n_in && k < cap && key[a + k].n == n) k++;
        for (int r = 0; r < k; r++) rows[r] = in[key[a + r].i].ids;
        if ((st = embed_rows(e, rows, k, n, out))) {
            *bad = key[a].i;
            break;
        }
        for (int r = 0; r < k; r++) memcpy(vecs + (size_t)key[a + r].i * h, out + (size_t)r * h, sizeof *out * h);
        (*runs)++;
        a += k;
    }
    free(key);
    free(rows);
    free(out);
    return st;
}

/* The model's embedder, opened on first use; NULL with err set when its graph gives none. */
static srv_embedder *embedder_of(srv_server *s, srv_model *m, srv_error *err) {
    pthread_mutex_lock(&m->emb_mu);
    if (!m->emb && !m->emb_error[0]) {
        og_status *st = srv_embedder_open(&s->o, m->dir, &m->emb);
        if (st) {
            snprintf(m->emb_error, sizeof m->emb_error, "%s", og_status_message(st));
            og_status_free(st);
        }
    }
    srv_embedder *e = m->emb;
    pthread_mutex_unlock(&m->emb_mu);
    if (!e)
        srv_fail(err, 400, "model", "the model '%.100s' gives no embeddings: %.500s", m->name, m->emb_error);
    return e;
}

void srv_handle_embeddings(srv_server *s, const char *body, size_t len, srv_reply *r) {
    srv_error err = {0};
    cJSON *j = srv_parse_object(body, len, &err);
    srv_model *m = j ? srv_acquire(s, j, &err) : NULL;
    embed_input *in = NULL;
    int n_in = 0;
    float *vecs = NULL;
    srv_buf b = {0};
    static const char *const keys[] = {"model", "input", "encoding_format", "dimensions", "user", NULL};
    if (!m || !srv_known_keys(j, keys, &err)) goto out;
    srv_embedder *e = embedder_of(s, m, &err);
    if (!e) goto out;
    const cJSON *fmt = cJSON_GetObjectItemCaseSensitive(j, "encoding_format");
    bool b64 = false;
    if (fmt && !cJSON_IsNull(fmt)) {
        if (!cJSON_IsString(fmt) || (strcmp(fmt->valuestring, "float") && strcmp(fmt->valuestring, "base64"))) {
            srv_fail(&err, 400, "encoding_format", "'encoding_format' must be \"float\" or \"base64\"");
            goto out;
        }
        b64 = !strcmp(fmt->valuestring, "base64");
    }
    const cJSON *user = cJSON_GetObjectItemCaseSensitive(j, "user");
    if (user && !cJSON_IsString(user) && !cJSON_IsNull(user)) {
        srv_fail(&err, 400, "user", "'user' must be a string");
        goto out;
    }
    int full = e->hidden, dim = full;
    const cJSON *dm = cJSON_GetObjectItemCaseSensitive(j, "dimensions");
    if (dm && !cJSON_IsNull(dm)) {
        if (!cJSON_IsNumber(dm) || dm->valuedouble != floor(dm->valuedouble) || dm->valuedouble < 1 ||
            dm->valuedouble > full) {
            srv_fail(&err, 400, "dimensions", "'dimensions' must be a whole number in [1, %d] (the "
                     "model's width)", full);
            goto out;
        }
        dim = (int)dm->valuedouble;
        if (dim != full && !s->o.matryoshka) {
            srv_fail(&err, 400, "dimensions", "the model '%.100s' does not take 'dimensions' below its "
                     "width %d: its vectors are not known to stay meaningful when cut (a model trained "
                     "so, Matryoshka-style, is served with --matryoshka)", m->name, full);
            goto out;
        }
    }
    int vocab = m->vocab > 0 ? m->vocab : e->vocab;
    if (!read_inputs(cJSON_GetObjectItemCaseSensitive(j, "input"), m, vocab > 0 ? vocab : INT32_MAX, &in,
                     &n_in, &err))
        goto out;
    int context = m->context > 0 ? m->context : e->context;
    long long tokens = 0;
    for (int i = 0; i < n_in; i++) {
        tokens += in[i].n;
        if (context > 0 && in[i].n > context) {
            char param[48];
            snprintf(param, sizeof param, n_in == 1 && cJSON_IsString(cJSON_GetObjectItemCaseSensitive(j, "input"))
                     ? "input" : "input[%d]", i);
            srv_fail(&err, 400, param, "'%s' is %d tokens; the model's context is %d", param, in[i].n, context);
            err.code = "context_length_exceeded";
            goto out;
        }
    }
    if (!(vecs = malloc(sizeof *vecs * (size_t)full * (size_t)n_in))) {
        srv_fail(&err, 500, "", "out of memory");
        goto out;
    }
    int runs = 0, bad = 0;
    og_status *st = embed_all(e, in, n_in, vecs, &runs, &bad);
    if (st) {
        srv_fail(&err, 500, "", "the model failed on input %d: %.600s", bad, og_status_message(st));
        og_status_free(st);
        goto out;
    }
    srv_buf_str(&b, "{\"object\":\"list\",\"data\":[");
    for (int i = 0; i < n_in; i++) {
        float *vec = vecs + (size_t)i * (size_t)full;
        if (e->normalize) unit_length(vec, dim); /* after cutting: unit vectors of the asked width */
        for (int c = 0; c < dim; c++)
            if (!isfinite(vec[c])) {
                srv_fail(&err, 500, "", "the model gave a value that is not finite for input %d", i);
                goto out;
            }
        srv_buf_printf(&b, "%s{\"object\":\"embedding\",\"index\":%d,\"embedding\":", i ? "," : "", i);
        if (b64) {
            unsigned char *bytes = (unsigned char *)vec; /* little-endian float32, as OpenAI's */
            srv_buf_add(&b, "\"", 1);
            base64_add(&b, bytes, sizeof *vec * (size_t)dim);
            srv_buf_add(&b, "\"", 1);
        } else {
            srv_buf_add(&b, "[", 1);
            for (int c = 0; c < dim; c++) srv_buf_printf(&b, "%s%.9g", c ? "," : "", (double)vec[c]);
            srv_buf_add(&b, "]", 1);
        }
        srv_buf_add(&b, "}", 1);
    }
    srv_buf_str(&b, "],\"model\":");
    srv_buf_json_string(&b, m->name, strlen(m->name));
    srv_buf_printf(&b, ",\"usage\":{\"prompt_tokens\":%lld,\"total_tokens\":%lld}}", tokens, tokens);
    if (b.oom) {
        srv_fail(&err, 500, "", "out of memory");
        goto out;
    }
    r->status = 200;
    r->type = "application/json";
    r->body = srv_buf_take(&b, &r->len);
    pthread_mutex_lock(&m->emb_mu); /* for /metrics */
    m->emb_requests++;
    m->emb_inputs += (uint64_t)n_in;
    m->emb_tokens += (uint64_t)tokens;
    m->emb_runs += (uint64_t)runs;
    pthread_mutex_unlock(&m->emb_mu);
    srv_job lj = {0}; /* its --log-format line: the model and the tokens read */
    lj.m = m;
    lj.prompt_tokens = (int)(tokens < INT32_MAX ? tokens : INT32_MAX);
    srv_log_job(r->log, &lj);
out:
    if (err.status) srv_reply_error(r, &err);
    srv_buf_free(&b);
    free(vecs);
    free_inputs(in, n_in);
    if (m) srv_release(s, m);
    cJSON_Delete(j);
}
