/* Finding the builder's LongRoPE width test in a graph (mask_width.h). */
#include "genai/mask_width.h"

#include "base/tensor.h"

#include <string.h>

/* The scalar constant behind value v (an initializer or a Constant's output), or false. */
static bool const_scalar(const graph *g, int v, int64_t *out) {
    const tensor *t = v >= 0 ? g->values[v].initializer : NULL;
    if (!t || shape_count(t->dims, t->rank) != 1) return false;
    if (t->dtype == OG_INT64) *out = *(const int64_t *)t->data;
    else if (t->dtype == OG_INT32) *out = *(const int32_t *)t->data;
    else return false;
    return true;
}

/* The producer of value v when it is an `op` node, or NULL. */
static const graph_node *producer(const graph *g, int v, const char *op) {
    const graph_node *n = graph_producer(g, v);
    return n && !strcmp(n->op_type, op) ? n : NULL;
}

bool gen_mask_width_test(const graph *g, int cond, int mask, int64_t *c) {
    const graph_node *gt = producer(g, cond, "Greater");
    if (!gt || gt->n_inputs != 2 || !const_scalar(g, gt->inputs[1], c)) return false;
    int w = gt->inputs[0];
    const graph_node *cast = producer(g, w, "Cast");
    if (cast) w = cast->inputs[0];
    const graph_node *ga = producer(g, w, "Gather");
    int64_t axis1;
    if (!ga || ga->n_inputs != 2 || graph_attr_int(ga, "axis", 0) != 0 ||
        !const_scalar(g, ga->inputs[1], &axis1) || axis1 != 1)
        return false;
    const graph_node *sh = producer(g, ga->inputs[0], "Shape");
    return sh && sh->inputs[0] == mask && graph_attr_int(sh, "start", 0) == 0 &&
           !graph_attr_find(sh, "end");
}

int64_t gen_mask_width_threshold(const graph *g, const char *mask) {
    int v0 = g && mask ? graph_find_value(g, mask) : -1;
    if (v0 < 0) return -1;
    for (int k = 0; k < g->n_nodes; k++) {
        const graph_node *n = &g->nodes[k];
        int64_t c;
        if (!strcmp(n->op_type, "If") && n->n_inputs == 1 && gen_mask_width_test(g, n->inputs[0], v0, &c))
            return c;
    }
    return -1;
}
