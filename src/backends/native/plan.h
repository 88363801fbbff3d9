/* Execution plans: buffer lifetimes and their placement in one arena, made once per
 * input-shape class (see session.h). */
#ifndef OG_RUNTIME_PLAN_H
#define OG_RUNTIME_PLAN_H

#include "base/status.h"
#include "graph/graph.h"

#include <stddef.h>
#include <stdint.h>

struct exec_plan {
    int64_t *key;       /* the shape class: per graph input, rank then dims (-1 = absent) */
    size_t key_len;
    size_t *offset;     /* [n_values] arena offset; SIZE_MAX = not in the arena */
    size_t *size;       /* [n_values] bytes reserved at offset */
    size_t arena_size;
    void *arena;
    uint64_t last_used; /* for eviction */
};
typedef struct exec_plan exec_plan;

/* last_use[v] = the step (position in `order`) of the last node reading v; values
 * nobody reads get their producer's step; graph outputs get n_nodes (never freed). */
void plan_compute_last_use(const graph *g, const int *order, int *last_use);

/* The shape-class key of the current inputs: for each graph input, its rank and dims,
 * or -1 when not bound. Caller frees *key. */
og_status *plan_make_key(const graph *g, const struct og_tensor *const *bound, int64_t **key,
                         size_t *len);

/* Places the recorded sizes (bytes per value; 0 = not an arena value) into an arena:
 * value v is live from its producer's step to last_use[v]; values whose lives do not
 * overlap may share bytes. Takes ownership of key. */
og_status *plan_build(const graph *g, const int *order, const int *last_use,
                      const size_t *recorded, int64_t *key, size_t key_len, exec_plan **out);
void plan_free(exec_plan *p);

#endif
