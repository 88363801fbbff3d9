#include "backends/native/plan.h"

#include "base/tensor.h"

#include <stdlib.h>
#include <string.h>

void plan_compute_last_use(const graph *g, const int *order, const int *istart,
                           const int *ivals, int *last_use) {
    for (int v = 0; v < g->n_values; v++) last_use[v] = -1;
    for (int step = 0; step < g->n_nodes; step++) {
        const graph_node *n = &g->nodes[order[step]];
        for (int k = 0; k < n->n_outputs; k++)
            if (n->outputs[k] >= 0 && last_use[n->outputs[k]] < step) last_use[n->outputs[k]] = step;
        for (int k = 0; k < n->n_inputs; k++)
            if (n->inputs[k] >= 0) last_use[n->inputs[k]] = step;
        for (int k = istart[order[step]]; k < istart[order[step] + 1]; k++)
            last_use[ivals[k]] = step;
    }
    for (int i = 0; i < g->n_outputs; i++) last_use[g->outputs[i]] = g->n_nodes;
}

size_t plan_make_key(const tensor *const *bound, int n, int64_t *key) {
    size_t o = 0;
    for (int i = 0; i < n; i++) {
        const tensor *t = bound[i];
        if (!t) {
            key[o++] = -1;
            key[o++] = -1;
            continue;
        }
        key[o++] = t->dtype;
        key[o++] = t->rank;
        for (int d = 0; d < t->rank; d++) key[o++] = t->dims[d];
    }
    return o;
}

/* One placed block, kept in a list sorted by offset. */
typedef struct block {
    size_t off, size;
    int value;
} block;

og_status *plan_build(const graph *g, const int *order, const int *last_use,
                      const size_t *recorded, const int *alias, int64_t *key, size_t key_len,
                      exec_plan **out) {
    exec_plan *p = calloc(1, sizeof *p);
    size_t nv = (size_t)g->n_values + 1;
    if (p) {
        p->offset = malloc(nv * sizeof *p->offset);
        p->size = calloc(nv, sizeof *p->size);
        p->alias = malloc(nv * sizeof *p->alias);
    }
    block *live = malloc(nv * sizeof *live);
    if (!p || !p->offset || !p->size || !p->alias || !live) {
        free(live);
        free(key);
        plan_free(p);
        return og_oom();
    }
    p->key = key;
    p->key_len = key_len;
    p->table_bytes = sizeof *p + nv * (sizeof *p->offset + sizeof *p->size + sizeof *p->alias) +
                     (key_len + 1) * sizeof *key;
    for (int v = 0; v < g->n_values; v++) {
        p->offset[v] = SIZE_MAX;
        p->alias[v] = -1;
    }
    int n_live = 0;
    size_t high = 0;
    /* Walk the steps in order: place each output by first fit among the gaps of the
     * blocks live at that step, then retire the blocks whose last use is this step. */
    for (int step = 0; step < g->n_nodes; step++) {
        const graph_node *n = &g->nodes[order[step]];
        for (int k = 0; k < n->n_outputs; k++) {
            int v = n->outputs[k];
            if (v < 0 || recorded[v] == 0) continue;
            size_t need = (recorded[v] + 63) & ~(size_t)63;
            int taken = -1; /* computed in place: v continues u's block */
            for (int i = 0; alias[v] >= 0 && i < n_live && taken < 0; i++)
                if (live[i].value == alias[v] && live[i].size >= need) taken = i;
            if (taken >= 0) {
                live[taken].value = v;
                p->alias[v] = alias[v];
                p->offset[v] = live[taken].off;
                p->size[v] = live[taken].size;
                continue;
            }
            size_t at = 0;
            int pos = 0;
            for (; pos < n_live; pos++) {
                if (live[pos].off >= at + need) break;
                size_t end = live[pos].off + live[pos].size;
                if (end > at) at = end;
            }
            memmove(&live[pos + 1], &live[pos], (size_t)(n_live - pos) * sizeof *live);
            live[pos] = (block){at, need, v};
            n_live++;
            p->offset[v] = at;
            p->size[v] = need;
            if (at + need > high) high = at + need;
        }
        for (int i = 0; i < n_live;) {
            if (last_use[live[i].value] <= step) {
                memmove(&live[i], &live[i + 1], (size_t)(n_live - i - 1) * sizeof *live);
                n_live--;
            } else {
                i++;
            }
        }
    }
    free(live);
    p->arena_size = high;
    *out = p;
    return NULL;
}

void plan_free(exec_plan *p) {
    if (!p) return;
    free(p->key);
    free(p->offset);
    free(p->size);
    free(p->alias);
    free(p->arena);
    free(p);
}
