#include "graph/graph.h"

#include "base/mapped_file.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Name maps are the only heap memory a graph owns outside the arena. */
static void graph_free_maps(graph *g) {
    if (!g) return;
    for (int i = 0; i < g->n_nodes; i++) {
        const graph_node *n = &g->nodes[i];
        for (int a = 0; a < n->n_attrs; a++) {
            const graph_attr *at = &n->attrs[a];
            if (at->g) graph_free_maps(at->g);
            for (int64_t k = 0; at->graphs && k < at->n; k++) graph_free_maps(at->graphs[k]);
        }
    }
    strmap_free(&g->by_name);
}

void model_free(model *m) {
    if (!m) return;
    if (m->graph) graph_free_maps(m->graph);
    for (int i = 0; i < m->n_mappings; i++) mapped_file_close(&m->mappings[i]);
    free(m->mappings);
    free(m->path);
    free(m->base_dir);
    arena_free(&m->arena);
    free(m);
}

int64_t model_opset(const model *m, const char *domain) {
    for (int i = 0; i < m->n_opsets; i++)
        if (strcmp(m->opsets[i].domain, domain) == 0) return m->opsets[i].version;
    return 0;
}

int graph_find_value(const graph *g, const char *name) {
    return strmap_get(&g->by_name, name, -1);
}

const graph_node *graph_producer(const graph *g, int v) {
    int p = v >= 0 && v < g->n_values ? g->values[v].producer : -1;
    return p >= 0 ? &g->nodes[p] : NULL;
}

const char *graph_node_label(const graph_node *n, char *buf, size_t size) {
    if (n->name && n->name[0])
        snprintf(buf, size, "'%s' (%s)", n->name, n->op_type);
    else
        snprintf(buf, size, "#%d (%s)", n->file_index, n->op_type);
    return buf;
}

const graph_attr *graph_attr_find(const graph_node *n, const char *name) {
    for (int i = 0; i < n->n_attrs; i++)
        if (strcmp(n->attrs[i].name, name) == 0) return &n->attrs[i];
    return NULL;
}

/* Attributes of the wrong type that look-ups met on this thread, the first per node, until
 * graph_attr_type_error(node) takes them. Look-ups cannot fail (they return the
 * default), so the mismatch is noted here and the executor reports it after the node's
 * kernel ran: one check for every op, in the accessors, instead of one per kernel.
 * Per node, so that a node running a subgraph (If, Loop) keeps its own while the
 * subgraph's nodes take theirs; thread-local because sessions may run on several
 * threads at once. */
enum { WRONG_MAX = 16 };
static _Thread_local struct {
    const graph_node *node;
    const graph_attr *attr;
    attr_type want;
} wrong_attr[WRONG_MAX];
static _Thread_local int n_wrong_attr;

const char *graph_attr_type_name(attr_type t) {
    static const char *const names[] = {
        "undefined", "a float", "an int", "a string", "a tensor", "a graph", "floats",
        "ints", "strings", "tensors", "graphs", "a sparse tensor", "sparse tensors",
        "a type", "types"};
    return (int)t >= 0 && t <= ATTR_TYPE_PROTOS ? names[t] : "of unknown type";
}

/* The attribute if present with type `want` (or an accepted `alt`); a present one of
 * another type is noted and treated as absent. A reference to a caller's attribute
 * inside a function body has no type of its own and is left to the function. */
static const graph_attr *typed(const graph_node *n, const char *name, attr_type want,
                               attr_type alt) {
    const graph_attr *a = graph_attr_find(n, name);
    if (!a || a->type == want || a->type == alt) return a;
    if (a->type == ATTR_UNDEFINED) return NULL;
    for (int i = 0; i < n_wrong_attr; i++)
        if (wrong_attr[i].node == n) return NULL; /* the node's first one is reported */
    if (n_wrong_attr < WRONG_MAX) {
        wrong_attr[n_wrong_attr].node = n;
        wrong_attr[n_wrong_attr].attr = a;
        wrong_attr[n_wrong_attr].want = want;
        n_wrong_attr++;
    }
    return NULL;
}

og_status *graph_attr_type_error(const graph_node *n) {
    for (int i = 0; i < n_wrong_attr; i++) {
        if (wrong_attr[i].node != n) continue;
        og_status *st = og_errorf(OG_ERR_INVALID_MODEL, "attribute '%s' is %s, expected %s",
                                  wrong_attr[i].attr->name,
                                  graph_attr_type_name(wrong_attr[i].attr->type),
                                  graph_attr_type_name(wrong_attr[i].want));
        wrong_attr[i] = wrong_attr[--n_wrong_attr];
        return st;
    }
    return NULL;
}

int64_t graph_attr_int(const graph_node *n, const char *name, int64_t dflt) {
    const graph_attr *a = typed(n, name, ATTR_INT, ATTR_INT);
    return a ? a->i : dflt;
}

/* An integer where a float is expected is taken at its value (exact). Ops with a schema
 * never get here with one: attr_check.c refuses it when the session opens, as
 * onnxruntime does. */
float graph_attr_float(const graph_node *n, const char *name, float dflt) {
    const graph_attr *a = typed(n, name, ATTR_FLOAT, ATTR_INT);
    if (!a) return dflt;
    return a->type == ATTR_FLOAT ? a->f : (float)a->i;
}

const char *graph_attr_string(const graph_node *n, const char *name, const char *dflt) {
    const graph_attr *a = typed(n, name, ATTR_STRING, ATTR_STRING);
    return a ? a->s.s : dflt;
}

int64_t graph_attr_ints(const graph_node *n, const char *name, const int64_t **vals) {
    const graph_attr *a = typed(n, name, ATTR_INTS, ATTR_INTS);
    *vals = a ? a->ints : NULL;
    return a ? a->n : -1;
}

int64_t graph_attr_floats(const graph_node *n, const char *name, const float **vals) {
    const graph_attr *a = typed(n, name, ATTR_FLOATS, ATTR_FLOATS);
    *vals = a ? a->floats : NULL;
    return a ? a->n : -1;
}

const tensor *graph_attr_tensor(const graph_node *n, const char *name) {
    const graph_attr *a = typed(n, name, ATTR_TENSOR, ATTR_TENSOR);
    return a ? a->t : NULL;
}

/* Adds to out every outer-scope reference of sub, and of the graphs nested in it, that
 * resolves to a value of g; duplicates are dropped while they fit in cap (*n counts on
 * past cap so that the caller learns how much room to give). */
static void implicit_walk(const graph *g, const graph *sub, int *out, int cap, int *n) {
    for (int v = 0; v < sub->n_values; v++) {
        if (!sub->values[v].from_outer_scope) continue;
        for (const graph *p = sub->parent; p; p = p->parent) {
            int i = graph_find_value(p, sub->values[v].name);
            if (i < 0) continue;
            if (p == g || (g->rewritten_from && p == g->rewritten_from)) {
                bool seen = false;
                for (int k = 0; k < *n && k < cap && !seen; k++) seen = out[k] == i;
                if (!seen) {
                    if (*n < cap) out[*n] = i;
                    (*n)++;
                }
            }
            break; /* the nearest enclosing definition wins */
        }
    }
    for (int i = 0; i < sub->n_nodes; i++) {
        const graph_node *nd = &sub->nodes[i];
        for (int a = 0; a < nd->n_attrs; a++) {
            const graph_attr *at = &nd->attrs[a];
            if (at->g) implicit_walk(g, at->g, out, cap, n);
            for (int64_t k = 0; at->graphs && k < at->n; k++)
                if (at->graphs[k]) implicit_walk(g, at->graphs[k], out, cap, n);
        }
    }
}

int graph_node_implicit_inputs(const graph *g, const graph_node *n, int *out, int cap) {
    int count = 0;
    for (int a = 0; a < n->n_attrs; a++) {
        const graph_attr *at = &n->attrs[a];
        if (at->g) implicit_walk(g, at->g, out, cap, &count);
        for (int64_t k = 0; at->graphs && k < at->n; k++)
            if (at->graphs[k]) implicit_walk(g, at->graphs[k], out, cap, &count);
    }
    return count;
}

og_status *graph_implicit_inputs(const graph *g, int **start_out, int **vals_out) {
    int *start = calloc((size_t)g->n_nodes + 1, sizeof *start);
    int cap = 16, total = 0;
    int *vals = malloc((size_t)cap * sizeof *vals);
    if (!start || !vals) goto oom;
    for (int i = 0; i < g->n_nodes; i++) {
        start[i] = total;
        for (;;) {
            int n = graph_node_implicit_inputs(g, &g->nodes[i], vals + total, cap - total);
            if (n <= cap - total) {
                total += n;
                break;
            }
            int *grown = realloc(vals, (size_t)(cap = total + n + 16) * sizeof *vals);
            if (!grown) goto oom;
            vals = grown;
        }
    }
    start[g->n_nodes] = total;
    *start_out = start;
    *vals_out = vals;
    return NULL;
oom:
    free(start);
    free(vals);
    return og_oom();
}

/* Kahn's algorithm over value availability, keeping file order among ready nodes so
 * that a valid file order is preserved exactly. */
/* Dependency k of node i: its explicit inputs, then its implicit ones (-1 = none). */
static int node_dep(const graph *g, const int *istart, const int *ivals, int i, int k) {
    int ne = g->nodes[i].n_inputs;
    return k < ne ? g->nodes[i].inputs[k] : ivals[istart[i] + k - ne];
}

static int node_ndeps(const graph *g, const int *istart, int i) {
    return g->nodes[i].n_inputs + istart[i + 1] - istart[i];
}

og_status *graph_topo_order(const graph *g, const char *what, int *order) {
    og_status *st = NULL;
    int *istart = NULL, *ivals = NULL;
    OG_TRY(graph_implicit_inputs(g, &istart, &ivals));
    int *missing = calloc((size_t)g->n_nodes + 1, sizeof *missing); /* unmet inputs per node */
    char *ready_val = calloc((size_t)g->n_values + 1, 1);
    int *queue = malloc(((size_t)g->n_nodes + 1) * sizeof *queue);
    /* consumers: CSR arrays value -> nodes */
    int *cstart = calloc((size_t)g->n_values + 2, sizeof *cstart);
    int total = 0;
    for (int i = 0; i < g->n_nodes; i++) total += node_ndeps(g, istart, i);
    int *cons = malloc(((size_t)total + 1) * sizeof *cons);
    if (!missing || !ready_val || !queue || !cstart || !cons) {
        st = og_oom();
        goto out;
    }
    for (int v = 0; v < g->n_values; v++) {
        const graph_value *gv = &g->values[v];
        if (gv->is_input || gv->initializer || gv->from_outer_scope) ready_val[v] = 1;
    }
    for (int i = 0; i < g->n_nodes; i++)
        for (int k = 0; k < node_ndeps(g, istart, i); k++) {
            int v = node_dep(g, istart, ivals, i, k);
            if (v >= 0) cstart[v + 1]++;
        }
    for (int v = 0; v < g->n_values; v++) cstart[v + 1] += cstart[v];
    {
        int *fill = calloc((size_t)g->n_values + 1, sizeof *fill);
        if (!fill) {
            st = og_oom();
            goto out;
        }
        for (int i = 0; i < g->n_nodes; i++)
            for (int k = 0; k < node_ndeps(g, istart, i); k++) {
                int v = node_dep(g, istart, ivals, i, k);
                if (v < 0) continue;
                cons[cstart[v] + fill[v]++] = i;
                if (!ready_val[v]) missing[i]++;
            }
        free(fill);
    }
    /* A min-heap would keep strict file order; a simple queue seeded in file order and
     * appended as nodes become ready is enough for a deterministic order. */
    int head = 0, tail = 0;
    for (int i = 0; i < g->n_nodes; i++)
        if (missing[i] == 0) queue[tail++] = i;
    int done = 0;
    while (head < tail) {
        int i = queue[head++];
        order[done++] = i;
        const graph_node *n = &g->nodes[i];
        for (int k = 0; k < n->n_outputs; k++) {
            int v = n->outputs[k];
            if (v < 0 || ready_val[v]) continue;
            ready_val[v] = 1;
            for (int c = cstart[v]; c < cstart[v + 1]; c++) {
                int j = cons[c];
                /* a node can use the same value twice: count each use */
                if (--missing[j] == 0) queue[tail++] = j;
            }
        }
    }
    if (done < g->n_nodes) {
        /* Name the first stuck node and the input it waits for: a dangling reference
         * (no producer at all) first, since it also blocks everything downstream;
         * otherwise the stuck nodes wait on each other: a cycle. */
        for (int pass = 0; pass < 2; pass++)
            for (int i = 0; i < g->n_nodes; i++) {
                if (missing[i] == 0) continue;
                const graph_node *n = &g->nodes[i];
                char lab[256];
                for (int k = 0; k < node_ndeps(g, istart, i); k++) {
                    int v = node_dep(g, istart, ivals, i, k);
                    if (v < 0 || ready_val[v]) continue;
                    bool dangling = g->values[v].producer < 0;
                    if (pass == 0 && dangling) {
                        st = og_errorf(OG_ERR_INVALID_MODEL,
                                       "%s: node %s: input '%s' is not a graph input, an "
                                       "initializer, or the output of any node",
                                       what, graph_node_label(n, lab, sizeof lab),
                                       g->values[v].name);
                        goto out;
                    }
                    if (pass == 1) {
                        st = og_errorf(OG_ERR_INVALID_MODEL,
                                       "%s: the graph has a cycle through node %s (input '%s')",
                                       what, graph_node_label(n, lab, sizeof lab),
                                       g->values[v].name);
                        goto out;
                    }
                }
            }
        st = og_errorf(OG_ERR_INVALID_MODEL, "%s: the graph cannot be ordered", what);
    }
out:
    free(istart);
    free(ivals);
    free(missing);
    free(ready_val);
    free(queue);
    free(cstart);
    free(cons);
    return st;
}
