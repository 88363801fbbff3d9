/* The executor's graph rewrites (see fuse.h). */
#include "backends/native/fuse.h"

#include "backends/native/kernels/kernel.h"

#include <stdlib.h>
#include <string.h>

/* What the copy owns besides the graph struct, which comes first. */
typedef struct fused_graph {
    graph g;
    int *inputs; /* the fused nodes' input lists */
} fused_graph;

/* A default-domain node `op` with n_in inputs, all present, and one output. */
static bool plain_op(const graph_node *n, const char *op, int n_in, int64_t min_opset) {
    if (n->domain[0] || strcmp(n->op_type, op) != 0 || n->opset < min_opset) return false;
    if (n->n_inputs != n_in || n->n_outputs != 1 || n->outputs[0] < 0) return false;
    for (int k = 0; k < n_in; k++)
        if (n->inputs[k] < 0) return false;
    return true;
}

/* A value the fused node swallows: read once (by the node being fused) and not a graph
 * output. */
static bool private_value(const graph *g, const int *reads, int v) {
    return reads[v] == 1 && !g->values[v].is_output;
}

/* For node i a Mul(g, u) whose g is Mul(x, Sigmoid(x)): sets x and u and the two nodes to
 * drop. Mul before opset 7 broadcast by attribute: not matched. */
static bool silu_gate(const graph *g, const int *reads, const char *role, int i, int *x_out,
                      int *u_out, int *drop0, int *drop1) {
    const graph_node *m2 = &g->nodes[i];
    if (!plain_op(m2, "Mul", 2, 7)) return false;
    for (int side = 0; side < 2; side++) {
        int gv = m2->inputs[side], uv = m2->inputs[1 - side];
        int p1 = g->values[gv].producer;
        if (p1 < 0 || role[p1] || !private_value(g, reads, gv)) continue;
        const graph_node *m1 = &g->nodes[p1];
        if (!plain_op(m1, "Mul", 2, 7)) continue;
        for (int s = 0; s < 2; s++) {
            int sv = m1->inputs[s], xv = m1->inputs[1 - s];
            int p0 = g->values[sv].producer;
            if (p0 < 0 || role[p0] || !private_value(g, reads, sv)) continue;
            const graph_node *sig = &g->nodes[p0];
            if (!plain_op(sig, "Sigmoid", 1, 6) || sig->inputs[0] != xv) continue;
            *x_out = xv;
            *u_out = uv;
            *drop0 = p0;
            *drop1 = p1;
            return true;
        }
    }
    return false;
}

enum { KEEP = 0, DROP = 1, FUSED = 2 };

og_status *fuse_graph(const graph *g, graph **out, int *n_fused) {
    *out = NULL;
    *n_fused = 0;
    const char *env = getenv("OG_FUSE");
    if (env && !strcmp(env, "0")) return NULL;
    const int nn = g->n_nodes, nv = g->n_values;
    int *reads = calloc((size_t)nv + 1, sizeof *reads);
    char *role = calloc((size_t)nn + 1, 1);
    int *fx = calloc((size_t)nn + 1, sizeof *fx), *fu = calloc((size_t)nn + 1, sizeof *fu);
    int *istart = NULL, *ivals = NULL;
    og_status *st = NULL;
    fused_graph *fg = NULL;
    if (!reads || !role || !fx || !fu) {
        st = og_oom();
        goto done;
    }
    if ((st = graph_implicit_inputs(g, &istart, &ivals))) goto done;
    for (int i = 0; i < nn; i++) {
        const graph_node *n = &g->nodes[i];
        for (int k = 0; k < n->n_inputs; k++)
            if (n->inputs[k] >= 0) reads[n->inputs[k]]++;
        for (int k = istart[i]; k < istart[i + 1]; k++) reads[ivals[k]]++;
    }
    int fused = 0;
    for (int i = 0; i < nn; i++) {
        int d0, d1;
        if (role[i] || !silu_gate(g, reads, role, i, &fx[i], &fu[i], &d0, &d1)) continue;
        role[i] = FUSED;
        role[d0] = role[d1] = DROP;
        fused++;
    }
    if (!fused) goto done;
    fg = calloc(1, sizeof *fg);
    if (!fg) {
        st = og_oom();
        goto done;
    }
    fg->g = *g;
    fg->g.rewritten_from = g; /* the subgraphs' parent: their outer reads still resolve */
    fg->g.n_nodes = nn - 2 * fused;
    fg->g.nodes = calloc((size_t)fg->g.n_nodes, sizeof *fg->g.nodes);
    fg->g.values = malloc(sizeof *fg->g.values * ((size_t)nv + 1));
    fg->inputs = malloc(sizeof *fg->inputs * 2 * (size_t)fused);
    if (!fg->g.nodes || !fg->g.values || !fg->inputs) {
        st = og_oom();
        goto done;
    }
    memcpy(fg->g.values, g->values, sizeof *g->values * (size_t)nv);
    for (int v = 0; v < nv; v++) fg->g.values[v].producer = -1;
    for (int i = 0, j = 0, f = 0; i < nn; i++) {
        if (role[i] == DROP) continue;
        graph_node n = g->nodes[i];
        if (role[i] == FUSED) {
            n.op_type = "SiluMul";
            n.domain = KERNEL_FUSED_DOMAIN;
            n.opset = 1;
            n.n_inputs = 2;
            n.inputs = &fg->inputs[2 * f++];
            n.inputs[0] = fx[i];
            n.inputs[1] = fu[i];
            n.n_attrs = 0;
            n.attrs = NULL;
        }
        n.index = j;
        for (int k = 0; k < n.n_outputs; k++)
            if (n.outputs[k] >= 0) fg->g.values[n.outputs[k]].producer = j;
        fg->g.nodes[j++] = n;
    }
    *out = &fg->g;
    *n_fused = fused;
    fg = NULL;
done:
    if (fg) fuse_graph_free(&fg->g);
    free(reads);
    free(role);
    free(fx);
    free(fu);
    free(istart);
    free(ivals);
    return st;
}

void fuse_graph_free(graph *fused) {
    if (!fused) return;
    fused_graph *fg = (fused_graph *)fused;
    free(fg->g.nodes);
    free(fg->g.values);
    free(fg->inputs);
    free(fg);
}
