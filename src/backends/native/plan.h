/* Execution plans: buffer lifetimes and their placement in one arena, made once per
 * input-shape class (see native_session.h). */
#ifndef OG_RUNTIME_PLAN_H
#define OG_RUNTIME_PLAN_H

#include "base/status.h"
#include "base/tensor.h"
#include "graph/graph.h"

#include <stddef.h>
#include <stdint.h>

struct exec_plan {
    int64_t *key;       /* the shape class: per bound value, dtype, rank, dims (-1 = absent) */
    size_t key_len;
    size_t *offset;     /* [n_values] arena offset; SIZE_MAX = not in the arena */
    size_t *size;       /* [n_values] bytes reserved at offset */
    int *alias;         /* [n_values] the input whose block v took over in place, or -1 */
    size_t arena_size;
    void *arena;        /* allocated on the plan's first use (NULL until then) */
    uint64_t last_used; /* for eviction */
    size_t table_bytes; /* the tables above and the key */
    /* Whether the steps of this plan run on the calling thread alone (executor.c,
     * step_mode): the last step times measured with the workers and without, and when
     * to try the other way again. */
    int64_t pool_ns, serial_ns;
    uint32_t since_probe, probe_gap;
    bool serial;
};
typedef struct exec_plan exec_plan;

/* last_use[v] = the step (position in `order`) of the last node reading v, explicitly
 * or as an implicit input (a value its subgraphs read: CSR arrays istart/ivals from
 * graph_implicit_inputs); values nobody reads get their producer's step; graph outputs
 * get n_nodes (never freed). */
void plan_compute_last_use(const graph *g, const int *order, const int *istart,
                           const int *ivals, int *last_use);

/* The shape-class key of n bound values (graph inputs, then for a subgraph the
 * outer-scope values it reads): dtype, rank and dims of each, or -1, -1 when absent.
 * Writes at most PLAN_KEY_MAX(n) entries to key and returns how many. */
#define PLAN_KEY_MAX(n) ((size_t)(n) * (2 + OG_MAX_RANK))
size_t plan_make_key(const tensor *const *bound, int n, int64_t *key);

/* Places the recorded sizes (bytes per value; 0 = not an arena value) into an arena:
 * value v is live from its producer's step to last_use[v]; values whose lives do not
 * overlap may share bytes. alias[v] = u (or -1) says that v was computed in place over
 * u, whose last use was v's producer: v then takes over u's bytes. The arena itself is
 * not allocated here. Takes ownership of key. */
og_status *plan_build(const graph *g, const int *order, const int *last_use,
                      const size_t *recorded, const int *alias, int64_t *key, size_t key_len,
                      exec_plan **out);
void plan_free(exec_plan *p);

#endif
