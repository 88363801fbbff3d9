/* Retyping a graph's GroupQueryAttention caches (see kv_storage.h). */
#include "runtime/kv_storage.h"

#include "backends/kv_format.h"

#include <string.h>

/* How many node inputs of g read value v. */
static int readers(const graph *g, int v) {
    int n = 0;
    for (int i = 0; i < g->n_nodes; i++)
        for (int k = 0; k < g->nodes[i].n_inputs; k++) n += g->nodes[i].inputs[k] == v;
    return n;
}

static og_status *retype_value(graph *g, const char *file, const graph_node *node, int v,
                               bool past, og_dtype dt, int64_t *head) {
    graph_value *val = &g->values[v];
    const char *what = past ? "past" : "present";
    char nl[160];
    if (past ? !val->is_input : !val->is_output)
        return og_errorf(OG_ERR_UNSUPPORTED, "%s: node '%s' (GroupQueryAttention): its %s cache "
                         "'%s' is not a graph %s, so it cannot be stored as %s", file,
                         graph_node_label(node, nl, sizeof nl), what, val->name, past ? "input" : "output",
                         og_dtype_name(dt));
    if (readers(g, v) != (past ? 1 : 0))
        return og_errorf(OG_ERR_UNSUPPORTED, "%s: the %s cache '%s' is read by other nodes than "
                         "node '%s' (GroupQueryAttention), which could not read it as %s", file,
                         what, val->name, graph_node_label(node, nl, sizeof nl), og_dtype_name(dt));
    if (val->rank != 4)
        return og_errorf(OG_ERR_UNSUPPORTED, "%s: the cache '%s' has rank %d (4 expected: batch, "
                         "kv heads, positions, head size)", file, val->name, val->rank);
    if (val->dtype != OG_FLOAT32 && val->dtype != OG_FLOAT16 && val->dtype != OG_BFLOAT16)
        return og_errorf(OG_ERR_UNSUPPORTED, "%s: the cache '%s' is %s already (a package with a "
                         "quantized cache keeps its own)", file, val->name,
                         og_dtype_name(val->dtype));
    if (*head && val->dims[3] > 0 && val->dims[3] != *head)
        return og_errorf(OG_ERR_INVALID_MODEL, "%s: node '%s' (GroupQueryAttention): caches of "
                         "head sizes %lld and %lld", file, graph_node_label(node, nl, sizeof nl),
                         (long long)*head, (long long)val->dims[3]);
    if (val->dims[3] > 0) *head = val->dims[3];
    return NULL;
}

og_status *kv_storage_retype(graph *g, const char *file, og_dtype dt, int *n_caches) {
    *n_caches = 0;
    if (!kv_storable(dt))
        return og_errorf(OG_ERR_INVALID_ARGUMENT, "a KV cache stored as %s (float32, float16, "
                         "bfloat16, int8 or float8e4m3fn)", og_dtype_name(dt));
    for (int i = 0; i < g->n_nodes; i++) {
        graph_node *n = &g->nodes[i];
        if (strcmp(n->op_type, "GroupQueryAttention") || strcmp(n->domain, "com.microsoft")) continue;
        if (n->n_inputs <= 4 || n->inputs[3] < 0 || n->inputs[4] < 0) continue; /* no past */
        char nl[160];
        if (kv_node_scaled(n))
            return og_errorf(OG_ERR_UNSUPPORTED, "%s: node '%s' (GroupQueryAttention) has a "
                             "quantized cache of its own (k_quant_type / k_scale)", file,
                             graph_node_label(n, nl, sizeof nl));
        int vals[4] = {n->inputs[3], n->inputs[4], n->n_outputs > 1 ? n->outputs[1] : -1,
                       n->n_outputs > 2 ? n->outputs[2] : -1};
        int64_t head = 0;
        for (int k = 0; k < 4; k++)
            if (vals[k] >= 0) OG_TRY(retype_value(g, file, n, vals[k], k < 2, dt, &head));
        for (int k = 0; k < 4; k++) {
            if (vals[k] < 0) continue;
            graph_value *val = &g->values[vals[k]];
            val->dtype = dt;
            /* a symbolic head size stays symbolic: the layers above take it from the
             * config and widen it as kv_stored_width does */
            if (head > 0) {
                val->dims[3] = kv_stored_width(dt, head);
                val->dim_names[3] = NULL;
            }
        }
        *n_caches += 2;
    }
    return NULL;
}
