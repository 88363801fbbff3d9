/* The pruned set of a row selection (see rows_plan.h). */
#include "backends/native/rows_plan.h"

#include <stdlib.h>
#include <string.h>

/* How an op's inputs relate to its rows. */
typedef enum rp_kind {
    RP_NONE,     /* not row-wise (or not provably so here) */
    RP_ALL,      /* elementwise with broadcasting: every input is a row input */
    RP_FIRST,    /* input 0 is the row input, the others are read whole */
    RP_FIRST_TWO /* inputs 0 and 1 are row inputs (the skip norms' input and skip) */
} rp_kind;

static bool in_list(const char *op, const char *const *list) {
    for (; *list; list++)
        if (!strcmp(op, *list)) return true;
    return false;
}

/* Elementwise ops: each output element depends on the elements at the same (broadcast)
 * index of the inputs. */
static const char *const elementwise[] = {
    "Add", "Sub", "Mul", "Div", "Pow", "Max", "Min", "Sum", "Mean", "Where", "PRelu", "Clip",
    "Cast", "Neg", "Abs", "Exp", "Log", "Sqrt", "Reciprocal", "Tanh", "Sigmoid", "Relu",
    "LeakyRelu", "Elu", "Selu", "Celu", "Softplus", "Softsign", "Erf", "HardSigmoid",
    "HardSwish", "Gelu", "Mish", "Sin", "Cos", "Floor", "Ceil", "Round", "Sign",
    "ThresholdedRelu", NULL};
static const char *const ms_elementwise[] = {"FastGelu", "QuickGelu", "BiasGelu", "Gelu", NULL};

/* Norms over the last axis only (axis -1): a row is normalized by itself; the scale and
 * bias run along the normalized axis. Their mean / inverse-deviation outputs are per
 * row too. */
static bool last_axis(const graph_node *n) { return graph_attr_int(n, "axis", -1) == -1; }

static rp_kind op_kind(const exec_graph *eg, const graph_node *n) {
    const char *op = n->op_type;
    bool dflt = !n->domain[0], ms = !strcmp(n->domain, "com.microsoft");
    if (dflt && in_list(op, elementwise)) return RP_ALL;
    if (ms && in_list(op, ms_elementwise)) return RP_ALL;
    if (!strcmp(n->domain, KERNEL_FUSED_DOMAIN) && !strcmp(op, "SiluMul")) return RP_ALL;
    if (dflt && !strcmp(op, "MatMul")) {
        /* rows of A times a matrix: B must be bound now (an initializer or an input of
         * the run) and 2-D; a computed B (attention's K^T) stops the walk */
        const tensor *b = n->n_inputs > 1 && n->inputs[1] >= 0 ? eg->cur[n->inputs[1]] : NULL;
        return b && b->rank == 2 ? RP_FIRST : RP_NONE;
    }
    if (ms && !strcmp(op, "MatMulNBits")) return RP_FIRST;
    if (dflt && !strcmp(op, "CastLike")) return RP_FIRST;
    if ((dflt || ms) && (!strcmp(op, "LayerNormalization") || !strcmp(op, "RMSNormalization") ||
                         !strcmp(op, "SimplifiedLayerNormalization")))
        return last_axis(n) ? RP_FIRST : RP_NONE;
    if (dflt && (!strcmp(op, "Softmax") || !strcmp(op, "LogSoftmax")))
        return n->opset >= 13 && last_axis(n) ? RP_FIRST : RP_NONE;
    if (ms && (!strcmp(op, "SkipSimplifiedLayerNormalization") ||
               !strcmp(op, "SkipLayerNormalization")))
        return RP_FIRST_TWO;
    return RP_NONE;
}

static bool kind_row_input(rp_kind k, int slot) {
    return k == RP_ALL || (k == RP_FIRST && slot == 0) || (k == RP_FIRST_TWO && slot < 2);
}

bool rows_plan_row_input(const exec_graph *eg, const graph_node *n, int k) {
    return kind_row_input((rp_kind)eg->rkind[n->index], k);
}

/* Consumers of every value (node and input slot; -1 for a subgraph's implicit read). */
static og_status *consumers(exec_graph *eg) {
    const graph *g = eg->graph;
    size_t nv = (size_t)g->n_values;
    int total = 0;
    for (int i = 0; i < g->n_nodes; i++)
        total += g->nodes[i].n_inputs + eg->imp_start[i + 1] - eg->imp_start[i];
    eg->cons_start = calloc(nv + 2, sizeof *eg->cons_start);
    eg->cons_node = calloc((size_t)total + 1, sizeof *eg->cons_node);
    eg->cons_slot = calloc((size_t)total + 1, sizeof *eg->cons_slot);
    eg->rnode = calloc((size_t)g->n_nodes + 1, 1);
    eg->rkind = calloc((size_t)g->n_nodes + 1, 1);
    eg->rval = calloc(nv + 1, 1);
    eg->gath = calloc(nv + 1, sizeof *eg->gath);
    eg->has_gath = calloc(nv + 1, 1);
    if (!eg->cons_start || !eg->cons_node || !eg->cons_slot || !eg->rnode || !eg->rkind ||
        !eg->rval || !eg->gath || !eg->has_gath)
        return og_oom();
    int *cnt = eg->cons_start + 1;
    for (int i = 0; i < g->n_nodes; i++) {
        const graph_node *n = &g->nodes[i];
        for (int k = 0; k < n->n_inputs; k++)
            if (n->inputs[k] >= 0) cnt[n->inputs[k]]++;
        for (int k = eg->imp_start[i]; k < eg->imp_start[i + 1]; k++) cnt[eg->imp_vals[k]]++;
    }
    for (size_t v = 0; v < nv; v++) eg->cons_start[v + 1] += eg->cons_start[v];
    int *fill = calloc(nv + 1, sizeof *fill);
    if (!fill) return og_oom();
    for (int i = 0; i < g->n_nodes; i++) {
        const graph_node *n = &g->nodes[i];
        for (int k = 0; k < n->n_inputs; k++) {
            int v = n->inputs[k];
            if (v < 0) continue;
            int at = eg->cons_start[v] + fill[v]++;
            eg->cons_node[at] = i;
            eg->cons_slot[at] = k;
        }
        for (int k = eg->imp_start[i]; k < eg->imp_start[i + 1]; k++) {
            int v = eg->imp_vals[k];
            int at = eg->cons_start[v] + fill[v]++;
            eg->cons_node[at] = i;
            eg->cons_slot[at] = -1;
        }
    }
    free(fill);
    return NULL;
}

/* Whether v may be computed as the selected rows: the target, or read (at least once)
 * and only by marked nodes as a row input, and not wanted whole by the caller. */
static bool prunable_value(const exec_graph *eg, int v, int target, const bool *want_out) {
    if (v != target && want_out[v]) return false;
    int a = eg->cons_start[v], b = eg->cons_start[v + 1];
    if (v != target && a == b) return false;
    for (int c = a; c < b; c++) {
        int node = eg->cons_node[c], slot = eg->cons_slot[c];
        if (slot < 0 || !eg->rnode[node] || !kind_row_input((rp_kind)eg->rkind[node], slot))
            return false;
    }
    return true;
}

og_status *rows_plan_mark(exec_graph *eg, int target, const bool *want_out) {
    const graph *g = eg->graph;
    if (!eg->cons_start) OG_TRY(consumers(eg));
    memset(eg->rnode, 0, (size_t)g->n_nodes);
    memset(eg->rval, 0, (size_t)g->n_values);
    /* consumers run after their producers: walking the order backward, every reader of
     * a node's outputs has been decided when the node is */
    for (int step = g->n_nodes - 1; step >= 0; step--) {
        int i = eg->order[step];
        const graph_node *n = &g->nodes[i];
        eg->rkind[i] = (uint8_t)op_kind(eg, n);
        if (eg->rkind[i] == RP_NONE) continue;
        bool any = false, ok = true;
        for (int k = 0; k < n->n_outputs && ok; k++) {
            int v = n->outputs[k];
            if (v < 0) continue;
            bool unread = v != target && !want_out[v] && eg->cons_start[v] == eg->cons_start[v + 1];
            if (unread) continue;
            if (prunable_value(eg, v, target, want_out)) any = true;
            else ok = false;
        }
        if (!ok || !any) continue;
        eg->rnode[i] = 1;
        for (int k = 0; k < n->n_outputs; k++)
            if (n->outputs[k] >= 0) eg->rval[n->outputs[k]] = 1;
    }
    return NULL;
}

void rows_plan_free(exec_graph *eg) {
    free(eg->cons_start);
    free(eg->cons_node);
    free(eg->cons_slot);
    free(eg->rnode);
    free(eg->rkind);
    free(eg->rval);
    free(eg->gath);
    free(eg->has_gath);
}
