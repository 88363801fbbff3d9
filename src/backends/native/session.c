/* Opening and closing sessions, and describing their inputs and outputs. */
#include "backends/native/session.h"

#include "onnx/loader.h"
#include "backends/native/plan.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

og_session_options og_session_options_default(void) {
    og_session_options o;
    memset(&o, 0, sizeof o);
    o.struct_size = sizeof o;
    o.num_threads = 0;
    return o;
}

static og_status *fill_info(og_session *s, og_value_info *info, const int *idx, int n) {
    const graph *g = s->graph;
    for (int i = 0; i < n; i++) {
        const graph_value *v = &g->values[idx[i]];
        info[i].name = v->name;
        info[i].dtype = v->dtype;
        info[i].rank = v->rank;
        info[i].dims = v->dims;
        info[i].dim_names = v->dim_names;
    }
    return NULL;
}

/* Every node needs a kernel for its (domain, op, opset); say precisely which is missing. */
static og_status *resolve_kernels(og_session *s) {
    const graph *g = s->graph;
    for (int i = 0; i < g->n_nodes; i++) {
        const graph_node *n = &g->nodes[i];
        bool known = false;
        char lab[256];
        if (n->opset == 0)
            return og_errorf(OG_ERR_INVALID_MODEL,
                             "%s: node %s: domain '%s' is not imported by the model's "
                             "opset_import", s->label, graph_node_label(n, lab, sizeof lab),
                             n->domain[0] ? n->domain : "ai.onnx");
        s->kernels[i] = kernel_find(n->domain, n->op_type, n->opset, &known);
        if (s->kernels[i]) continue;
        if (known)
            return og_errorf(OG_ERR_UNSUPPORTED,
                             "%s: node %s: op %s%s%s is implemented, but not for opset %lld",
                             s->label, graph_node_label(n, lab, sizeof lab),
                             n->domain[0] ? n->domain : "", n->domain[0] ? "." : "",
                             n->op_type, (long long)n->opset);
        return og_errorf(OG_ERR_UNSUPPORTED, "%s: node %s: op %s%s%s is not implemented",
                         s->label, graph_node_label(n, lab, sizeof lab),
                         n->domain[0] ? n->domain : "", n->domain[0] ? "." : "", n->op_type);
    }
    return NULL;
}

og_status *session_create(model *m, const og_session_options *options, og_session **out) {
    og_session_options opts = og_session_options_default();
    if (options) {
        if (options->struct_size < offsetof(og_session_options, num_threads) + sizeof(int)) {
            model_free(m);
            return og_errorf(OG_ERR_INVALID_ARGUMENT, "og_session_options.struct_size is %zu; "
                             "fill options from og_session_options_default()",
                             options->struct_size);
        }
        opts.num_threads = options->num_threads;
    }
    og_session *s = calloc(1, sizeof *s);
    if (!s) {
        model_free(m);
        return og_oom();
    }
    s->model = m;
    s->graph = m->graph;
    const char *slash = strrchr(m->path, '/');
    s->label = strdup(slash ? slash + 1 : m->path);
    const graph *g = s->graph;
    size_t nn = (size_t)g->n_nodes + 1, nv = (size_t)g->n_values + 1;
    s->order = calloc(nn, sizeof *s->order);
    s->kernels = calloc(nn, sizeof *s->kernels);
    s->last_use = calloc(nv, sizeof *s->last_use);
    s->slots = calloc(nv, sizeof *s->slots);
    s->cur = calloc(nv, sizeof *s->cur);
    s->recorded = calloc(nv, sizeof *s->recorded);
    s->input_info = calloc((size_t)g->n_inputs + 1, sizeof *s->input_info);
    s->output_info = calloc((size_t)g->n_outputs + 1, sizeof *s->output_info);
    og_status *st = NULL;
    if (!s->label || !s->order || !s->kernels || !s->last_use || !s->slots || !s->cur ||
        !s->recorded || !s->input_info || !s->output_info) {
        st = og_oom();
        goto fail;
    }
    if ((st = graph_topo_order(g, s->label, s->order))) goto fail;
    if ((st = resolve_kernels(s))) goto fail;
    s->where = calloc(nn, sizeof *s->where);
    if (!s->where) {
        st = og_oom();
        goto fail;
    }
    for (int i = 0; i < g->n_nodes; i++) {
        char lab[256], buf[512];
        snprintf(buf, sizeof buf, "%s: node %s", s->label,
                 graph_node_label(&g->nodes[i], lab, sizeof lab));
        if (!(s->where[i] = strdup(buf))) {
            st = og_oom();
            goto fail;
        }
    }
    plan_compute_last_use(g, s->order, s->last_use);
    fill_info(s, s->input_info, g->inputs, g->n_inputs);
    fill_info(s, s->output_info, g->outputs, g->n_outputs);
    if ((st = threadpool_create(opts.num_threads, &s->pool))) goto fail;
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
    return session_create(m, options, out);
}

og_status *og_session_open_bytes(const void *data, size_t size, const char *base_dir,
                                 const og_session_options *options, og_session **out) {
    if (!data || !out)
        return og_errorf(OG_ERR_INVALID_ARGUMENT, "og_session_open_bytes: NULL argument");
    model *m;
    OG_TRY(onnx_load_bytes(data, size, base_dir, "<memory>", &m));
    return session_create(m, options, out);
}

void og_session_close(og_session *s) {
    if (!s) return;
    for (int i = 0; i < s->n_plans; i++) plan_free(s->plans[i]);
    if (s->slots && s->graph)
        for (int v = 0; v < s->graph->n_values; v++) tensor_release(&s->slots[v]);
    for (int i = 0; s->where && i < s->graph->n_nodes; i++) free(s->where[i]);
    free(s->where);
    threadpool_free(s->pool);
    model_free(s->model);
    free(s->label);
    free(s->order);
    free(s->kernels);
    free(s->last_use);
    free(s->slots);
    free(s->cur);
    free(s->recorded);
    free(s->input_info);
    free(s->output_info);
    free(s);
}

size_t og_session_input_count(const og_session *s) { return s ? (size_t)s->graph->n_inputs : 0; }
size_t og_session_output_count(const og_session *s) { return s ? (size_t)s->graph->n_outputs : 0; }

og_status *og_session_input_info(const og_session *s, size_t index, og_value_info *out) {
    if (!s || !out) return og_errorf(OG_ERR_INVALID_ARGUMENT, "og_session_input_info: NULL argument");
    if (index >= (size_t)s->graph->n_inputs)
        return og_errorf(OG_ERR_INVALID_ARGUMENT, "%s: input index %zu out of range (%d inputs)",
                         s->label, index, s->graph->n_inputs);
    *out = s->input_info[index];
    return NULL;
}

og_status *og_session_output_info(const og_session *s, size_t index, og_value_info *out) {
    if (!s || !out) return og_errorf(OG_ERR_INVALID_ARGUMENT, "og_session_output_info: NULL argument");
    if (index >= (size_t)s->graph->n_outputs)
        return og_errorf(OG_ERR_INVALID_ARGUMENT, "%s: output index %zu out of range (%d outputs)",
                         s->label, index, s->graph->n_outputs);
    *out = s->output_info[index];
    return NULL;
}
