/* The public og_session_* functions: load our IR of the graph, choose the backend
 * (native, onnxruntime, or auto: native when it has every kernel), and dispatch through
 * the seam (backends/backend.h). Inputs and outputs are described from the IR. */
#include "runtime/og_session.h"
#include "runtime/kv_storage.h"

#include "base/rows.h"
#include "onnx/loader.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

struct og_session {
    const backend_ops *ops;
    void *ctx;                    /* the backend's */
    model *model;                 /* our IR, owned */
    char *label;                  /* file name for messages */
    og_value_info *input_info, *output_info;
    char *warning;                /* og_session_warning, or NULL */
};

og_session_options og_session_options_default(void) {
    og_session_options o;
    memset(&o, 0, sizeof o);
    o.struct_size = sizeof o;
    o.num_threads = 0;
    o.backend = OG_BACKEND_AUTO;
    o.graph_optimization_level = -1;
    o.plan_memory = OG_PLAN_MEMORY_DEFAULT;
    return o;
}

/* The caller's options over the defaults, reading only the fields its struct_size has. */
static og_status *take_options(const og_session_options *in, og_session_options *o) {
    *o = og_session_options_default();
    if (!in) return NULL;
    size_t n = in->struct_size;
    if (n < offsetof(og_session_options, num_threads) + sizeof(int))
        return og_errorf(OG_ERR_INVALID_ARGUMENT, "og_session_options.struct_size is %zu; "
                         "fill options from og_session_options_default()", n);
#define TAKE(field)                                                                      \
    if (n >= offsetof(og_session_options, field) + sizeof in->field) o->field = in->field
    TAKE(num_threads);
    TAKE(backend);
    TAKE(ort_library);
    TAKE(ort_provider);
    TAKE(graph_optimization_level);
    TAKE(plan_memory);
    TAKE(kv_dtype);
#undef TAKE
    if (o->backend != OG_BACKEND_AUTO && o->backend != OG_BACKEND_NATIVE &&
        o->backend != OG_BACKEND_ORT)
        return og_errorf(OG_ERR_INVALID_ARGUMENT, "og_session_options.backend is %d (expected "
                         "OG_BACKEND_AUTO, OG_BACKEND_NATIVE or OG_BACKEND_ORT)",
                         (int)o->backend);
    /* A device provider is onnxruntime's: auto takes onnxruntime for it, and the native
     * backend, which computes on the CPU, cannot honour it. */
    bool device = o->ort_provider && strcasecmp(o->ort_provider, "cpu") != 0;
    if (device && o->backend == OG_BACKEND_AUTO) o->backend = OG_BACKEND_ORT;
    if (device && o->backend == OG_BACKEND_NATIVE)
        return og_errorf(OG_ERR_INVALID_ARGUMENT, "execution provider '%s': the native "
                         "backend runs on the CPU only (use the onnxruntime backend, or "
                         "auto)", o->ort_provider);
    return NULL;
}

static void fill_info(const graph *g, og_value_info *info, const int *idx, int n) {
    for (int i = 0; i < n; i++) {
        const graph_value *v = &g->values[idx[i]];
        info[i].name = v->name;
        info[i].dtype = v->dtype;
        info[i].rank = v->rank;
        info[i].dims = v->dims;
        info[i].dim_names = v->dim_names;
    }
}

/* ---- which ops a backend cannot run ----------------------------------------------- */

typedef struct op_list {
    char *buf;
    size_t size, len;
    int count;
} op_list;

static void add_op(op_list *l, const graph_node *n) {
    char name[256];
    snprintf(name, sizeof name, "%s%s%s", n->domain, n->domain[0] ? "." : "", n->op_type);
    /* each op once: look for ", name," in ", list," */
    size_t k = strlen(name);
    for (const char *p = l->buf; l->len && (p = strstr(p, name)); p += k)
        if ((p == l->buf || p[-1] == ' ') && (p[k] == ',' || p[k] == 0)) return;
    int w = snprintf(l->buf + l->len, l->size - l->len, "%s%s", l->count ? ", " : "", name);
    if (w > 0) l->len += (size_t)w < l->size - l->len ? (size_t)w : l->size - l->len - 1;
    l->count++;
}

static void collect_ops(const backend_ops *ops, const graph *g, op_list *l) {
    for (int i = 0; i < g->n_nodes; i++) {
        const graph_node *n = &g->nodes[i];
        if (ops->supports_node && !ops->supports_node(n)) add_op(l, n);
        for (int a = 0; a < n->n_attrs; a++) {
            if (n->attrs[a].g) collect_ops(ops, n->attrs[a].g, l);
            for (int64_t j = 0; n->attrs[a].graphs && j < n->attrs[a].n; j++)
                if (n->attrs[a].graphs[j]) collect_ops(ops, n->attrs[a].graphs[j], l);
        }
    }
}

int runtime_unsupported_ops(const backend_ops *ops, const graph *g, char *buf, size_t size) {
    op_list l = {.buf = buf, .size = size};
    if (size) buf[0] = 0;
    if (size) collect_ops(ops, g, &l);
    return l.count;
}

/* ---- opening ------------------------------------------------------------------------- */

static og_status *open_with(og_session *s, const backend_ops *ops, backend_open_args *a) {
    OG_TRY(ops->open(a, &s->ctx));
    s->ops = ops;
    return NULL;
}

/* auto: native when it has a kernel for every node; else onnxruntime with a warning;
 * else the native error (which names the op), with why onnxruntime could not help. */
static og_status *open_auto(og_session *s, backend_open_args *a) {
    char ops[1024];
    int n = runtime_unsupported_ops(&backend_native, s->model->graph, ops, sizeof ops);
    if (n == 0) return open_with(s, &backend_native, a);
    og_status *ort = open_with(s, &backend_ort, a);
    if (!ort) {
        size_t len = strlen(s->label) + strlen(ops) + 200;
        if (!(s->warning = malloc(len))) return og_oom();
        snprintf(s->warning, len, "%s: no native kernel for %s %s: running it on onnxruntime "
                 "(backend auto)", s->label, n == 1 ? "op" : "ops", ops);
        return NULL;
    }
    og_status *native = open_with(s, &backend_native, a);
    if (!native) { /* cannot happen: supports_node mirrors the kernel lookup */
        og_status_free(ort);
        return NULL;
    }
    og_status *st = og_errorf(og_status_code(native), "%s (backend auto: onnxruntime could "
                              "not run it either: %s)", og_status_message(native),
                              og_status_message(ort));
    og_status_free(native);
    og_status_free(ort);
    return st;
}

static og_status *session_open_model(model *m, const char *path, const void *bytes,
                                     size_t n_bytes, const char *base_dir,
                                     const og_session_options *options, og_session **out) {
    og_session_options o;
    og_status *st = take_options(options, &o);
    if (st) {
        model_free(m);
        return st;
    }
    og_session *s = calloc(1, sizeof *s);
    if (!s) {
        model_free(m);
        return og_oom();
    }
    s->model = m;
    if (o.kv_dtype != OG_UNDEFINED) {
        int n_caches;
        if ((st = kv_storage_retype(m->graph, m->path, o.kv_dtype, &n_caches))) goto fail;
        /* the native kernels read a narrower cache; onnxruntime would not */
        if (n_caches > 0 && o.backend == OG_BACKEND_ORT) {
            st = og_errorf(OG_ERR_INVALID_ARGUMENT, "%s: a KV cache stored as %s needs the native "
                           "backend", m->path, og_dtype_name(o.kv_dtype));
            goto fail;
        }
        if (n_caches > 0) o.backend = OG_BACKEND_NATIVE;
    }
    const graph *g = m->graph;
    const char *slash = strrchr(m->path, '/');
    s->label = strdup(slash ? slash + 1 : m->path);
    s->input_info = calloc((size_t)g->n_inputs + 1, sizeof *s->input_info);
    s->output_info = calloc((size_t)g->n_outputs + 1, sizeof *s->output_info);
    if (!s->label || !s->input_info || !s->output_info) {
        st = og_oom();
        goto fail;
    }
    fill_info(g, s->input_info, g->inputs, g->n_inputs);
    fill_info(g, s->output_info, g->outputs, g->n_outputs);
    backend_open_args a = {.model = m, .path = path, .bytes = bytes, .n_bytes = n_bytes,
                           .base_dir = base_dir, .label = s->label, .options = &o};
    if (o.backend == OG_BACKEND_NATIVE) st = open_with(s, &backend_native, &a);
    else if (o.backend == OG_BACKEND_ORT) st = open_with(s, &backend_ort, &a);
    else st = open_auto(s, &a);
    if (st) goto fail;
    *out = s;
    return NULL;
fail:
    og_session_close(s);
    return st;
}

og_status *og_session_open(const char *path, const og_session_options *options,
                           og_session **out) {
    if (!path || !out) return og_errorf(OG_ERR_INVALID_ARGUMENT, "og_session_open: NULL argument");
    model *m;
    OG_TRY(onnx_load_file(path, &m));
    return og_oom_context(session_open_model(m, path, NULL, 0, NULL, options, out),
                          "%s: opening a session", path);
}

og_status *runtime_session_open_exposing(const char *path, const og_session_options *options,
                                         const char *const *names, int n_names, og_session **out) {
    og_session_options o = options ? *options : og_session_options_default();
    if (o.backend == OG_BACKEND_ORT)
        return og_errorf(OG_ERR_UNSUPPORTED, "%s: inner values as outputs need the native backend "
                         "(onnxruntime reads the file itself)", path);
    o.backend = OG_BACKEND_NATIVE;
    model *m;
    OG_TRY(onnx_load_file(path, &m));
    graph *g = m->graph;
    int *outs = arena_alloc(&m->arena, sizeof *outs * (size_t)(g->n_outputs + n_names));
    if (!outs) {
        model_free(m);
        return og_oom();
    }
    memcpy(outs, g->outputs, sizeof *outs * (size_t)g->n_outputs);
    int n = g->n_outputs;
    for (int i = 0; i < n_names; i++) {
        int v = graph_find_value(g, names[i]);
        if (v < 0 || g->values[v].producer < 0) {
            og_status *st = og_errorf(OG_ERR_NOT_FOUND, "%s: no node makes a value named '%s'", path, names[i]);
            model_free(m);
            return st;
        }
        if (g->values[v].is_output) continue;
        g->values[v].is_output = true;
        outs[n++] = v;
    }
    g->outputs = outs;
    g->n_outputs = n;
    return og_oom_context(session_open_model(m, path, NULL, 0, NULL, &o, out), "%s: opening a session", path);
}

og_status *og_session_open_bytes(const void *data, size_t size, const char *base_dir,
                                 const og_session_options *options, og_session **out) {
    if (!data || !out)
        return og_errorf(OG_ERR_INVALID_ARGUMENT, "og_session_open_bytes: NULL argument");
    model *m;
    OG_TRY(onnx_load_bytes(data, size, base_dir, "<memory>", &m));
    return session_open_model(m, NULL, data, size, base_dir, options, out);
}

void og_session_close(og_session *s) {
    if (!s) return;
    if (s->ops) s->ops->free(s->ctx);
    model_free(s->model);
    free(s->label);
    free(s->input_info);
    free(s->output_info);
    free(s->warning);
    free(s);
}

/* ---- describing and running ----------------------------------------------------------- */

size_t og_session_input_count(const og_session *s) {
    return s ? (size_t)s->model->graph->n_inputs : 0;
}
size_t og_session_output_count(const og_session *s) {
    return s ? (size_t)s->model->graph->n_outputs : 0;
}

og_status *og_session_input_info(const og_session *s, size_t index, og_value_info *out) {
    if (!s || !out) return og_errorf(OG_ERR_INVALID_ARGUMENT, "og_session_input_info: NULL argument");
    if (index >= og_session_input_count(s))
        return og_errorf(OG_ERR_INVALID_ARGUMENT, "%s: input index %zu out of range (%zu inputs)",
                         s->label, index, og_session_input_count(s));
    *out = s->input_info[index];
    return NULL;
}

og_status *og_session_output_info(const og_session *s, size_t index, og_value_info *out) {
    if (!s || !out) return og_errorf(OG_ERR_INVALID_ARGUMENT, "og_session_output_info: NULL argument");
    if (index >= og_session_output_count(s))
        return og_errorf(OG_ERR_INVALID_ARGUMENT, "%s: output index %zu out of range (%zu outputs)",
                         s->label, index, og_session_output_count(s));
    *out = s->output_info[index];
    return NULL;
}

og_status *og_session_run(og_session *s, const char *const *input_names,
                          og_tensor *const *inputs, size_t n_inputs,
                          const char *const *output_names, og_tensor **outputs,
                          size_t n_outputs) {
    return og_session_run_rows(s, input_names, inputs, n_inputs, output_names, outputs,
                               n_outputs, NULL);
}

/* A row selection on a backend that computes whole outputs: the selected output is run
 * into a new tensor and its rows gathered into the caller's (or a new) tensor. */
static og_status *run_rows_whole(og_session *s, const char *const *input_names,
                                 og_tensor *const *inputs, size_t n_inputs,
                                 const char *const *output_names, og_tensor **outputs,
                                 size_t n_outputs, const og_output_rows *rows) {
    size_t sel = n_outputs;
    for (size_t i = 0; i < n_outputs && sel == n_outputs; i++)
        if (output_names[i] && !strcmp(output_names[i], rows->output)) sel = i;
    if (sel == n_outputs)
        return og_errorf(OG_ERR_INVALID_ARGUMENT, "%s: rows of '%s' are selected, but the run "
                         "does not ask for that output", s->label, rows->output);
    bool fresh_stack[16], *fresh = fresh_stack; /* which outputs the run returns new */
    if (n_outputs > 16 && !(fresh = malloc(n_outputs * sizeof *fresh))) return og_oom();
    for (size_t i = 0; i < n_outputs; i++) fresh[i] = outputs[i] == NULL;
    og_tensor *user = outputs[sel];
    outputs[sel] = NULL;
    og_status *st = s->ops->run(s->ctx, input_names, inputs, n_inputs, output_names, outputs,
                                n_outputs);
    og_tensor *full = st ? NULL : outputs[sel];
    outputs[sel] = user;
    if (!st) {
        rows_sel r = {.last = rows->rows == NULL, .list = rows->rows,
                      .n_list = (int64_t)rows->n_rows};
        char what[300];
        snprintf(what, sizeof what, "%s: output '%s'", s->label, rows->output);
        st = rows_sel_take(&r, false, full, what, &outputs[sel]);
        if (st && fresh[sel]) outputs[sel] = NULL;
        if (st) /* no new tensor is returned on failure */
            for (size_t i = 0; i < n_outputs; i++)
                if (fresh[i] && i != sel) {
                    og_tensor_free(outputs[i]);
                    outputs[i] = NULL;
                }
    }
    og_tensor_free(full);
    if (fresh != fresh_stack) free(fresh);
    return st;
}

og_status *og_session_run_rows(og_session *s, const char *const *input_names,
                               og_tensor *const *inputs, size_t n_inputs,
                               const char *const *output_names, og_tensor **outputs,
                               size_t n_outputs, const og_output_rows *rows) {
    if (!s || (n_inputs && (!input_names || !inputs)) ||
        (n_outputs && (!output_names || !outputs)) || (rows && !rows->output))
        return og_errorf(OG_ERR_INVALID_ARGUMENT, "og_session_run: NULL argument");
    if (rows && rows->rows && rows->n_rows < 1)
        return og_errorf(OG_ERR_INVALID_ARGUMENT, "%s: output '%s': a list of rows needs at "
                         "least one", s->label, rows->output);
    if (!rows)
        return s->ops->run(s->ctx, input_names, inputs, n_inputs, output_names, outputs,
                           n_outputs);
    if (s->ops->run_rows)
        return s->ops->run_rows(s->ctx, input_names, inputs, n_inputs, output_names, outputs,
                                n_outputs, rows);
    return run_rows_whole(s, input_names, inputs, n_inputs, output_names, outputs, n_outputs,
                          rows);
}

const char *og_session_backend(const og_session *s) { return s ? s->ops->name : ""; }
const char *og_session_warning(const og_session *s) {
    return s && s->warning ? s->warning : "";
}

const og_tensor *runtime_session_input_default(const og_session *s, size_t index) {
    const graph *g = s->model->graph;
    return index < (size_t)g->n_inputs ? g->values[g->inputs[index]].default_value : NULL;
}

const model *runtime_session_model(const og_session *s) { return s->model; }
const graph *runtime_session_graph(const og_session *s) { return s->model->graph; }
const backend_ops *runtime_session_ops(const og_session *s) { return s->ops; }
void *runtime_session_context(const og_session *s) { return s->ctx; }

void runtime_session_stats(const og_session *s, backend_run_stats *out) {
    memset(out, 0, sizeof *out);
    if (s->ops->stats) s->ops->stats(s->ctx, out);
}

void plan_stats_copy_out(const og_plan_stats *full, og_plan_stats *out) {
    if (!out || out->struct_size < sizeof out->struct_size) return;
    size_t n = out->struct_size < sizeof *full ? out->struct_size : sizeof *full;
    size_t keep = out->struct_size;
    memcpy(out, full, n);
    out->struct_size = keep;
}

void og_session_plan_stats(const og_session *s, og_plan_stats *out) {
    og_plan_stats full = {.struct_size = sizeof full};
    if (s) {
        backend_run_stats st;
        runtime_session_stats(s, &st);
        full.bytes = st.plan_bytes;
        full.peak = st.plan_bytes_peak;
        full.plans = st.plans;
        full.evicted = st.plans_evicted;
        full.budget = st.plan_budget;
    }
    plan_stats_copy_out(&full, out);
}

int runtime_session_threads(const og_session *s) {
    return s->ops->threads ? s->ops->threads(s->ctx) : 0;
}

void runtime_session_prep_stats(const og_session *s, backend_prep_stats *out) {
    memset(out, 0, sizeof *out);
    if (s->ops->prep_stats) s->ops->prep_stats(s->ctx, out);
}

og_status *runtime_session_set_profiler(og_session *s, struct og_profiler *p) {
    if (!s->ops->set_profiler) {
        if (!p) return NULL;
        return og_errorf(OG_ERR_UNSUPPORTED, "%s: per-node profiling is the native backend's; "
                         "this session runs on %s", s->label, s->ops->name);
    }
    s->ops->set_profiler(s->ctx, p);
    return NULL;
}

void runtime_session_set_row_forms(og_session *s, const uint8_t *forms, int64_t n) {
    if (s->ops->set_row_forms) s->ops->set_row_forms(s->ctx, forms, n);
}

og_status *runtime_session_set_paged_kv(og_session *s, const struct paged_kv *kv) {
    if (!s->ops->set_paged_kv) {
        if (!kv) return NULL;
        return og_errorf(OG_ERR_UNSUPPORTED, "%s: the paged KV cache is read by the native "
                         "backend's kernels; this session runs on %s", s->label, s->ops->name);
    }
    s->ops->set_paged_kv(s->ctx, kv);
    return NULL;
}
