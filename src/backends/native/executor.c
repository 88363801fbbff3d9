/* og_session_run: binds inputs, checks them against the declared types, picks or
 * records the plan for their shape class, and runs the nodes in order. */
#include "backends/native/plan.h"
#include "backends/native/session.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* State of one run, reached by the kernel callbacks through ctx->exec. */
typedef struct run_state {
    og_session *s;
    exec_plan *plan;              /* NULL while recording */
    og_tensor **user_out;         /* [n_values] caller tensors for requested outputs */
    bool *want_out;               /* [n_values] value is a requested output */
    int step;
    const graph_node *node;
    void **scratch;               /* heap blocks to free after the node */
    int n_scratch, cap_scratch;
    tensor *temp;                 /* [cap_temp] omitted optional outputs of the node */
    void **held;                  /* kernel_hold blocks (string bytes), freed after the run */
    int n_held, cap_held;
    int cap_temp;
    size_t heap_allocs;
} run_state;

static og_status *check_input(og_session *s, const graph_value *v, const tensor *t,
                              const char **sym_name, int64_t *sym_val, const char **sym_from,
                              int *n_sym) {
    char a[160], b[160];
    if (v->dtype != OG_UNDEFINED && t->dtype != v->dtype)
        return og_errorf(OG_ERR_INVALID_ARGUMENT, "%s: input '%s' has dtype %s, expected %s",
                         s->label, v->name, og_dtype_name(t->dtype), og_dtype_name(v->dtype));
    if (v->rank < 0) return NULL;
    if (t->rank != v->rank)
        return og_errorf(OG_ERR_INVALID_ARGUMENT,
                         "%s: input '%s' has shape %s (rank %d), expected rank %d",
                         s->label, v->name, shape_str(t->dims, t->rank, a, sizeof a), t->rank,
                         v->rank);
    for (int d = 0; d < v->rank; d++) {
        if (v->dims[d] >= 0 && t->dims[d] != v->dims[d])
            return og_errorf(OG_ERR_INVALID_ARGUMENT,
                             "%s: input '%s' has shape %s, expected dim %d to be %lld", s->label,
                             v->name, shape_str(t->dims, t->rank, a, sizeof a), d,
                             (long long)v->dims[d]);
        const char *sym = v->dim_names[d];
        if (v->dims[d] >= 0 || !sym || !sym[0]) continue;
        int k = 0;
        for (; k < *n_sym; k++)
            if (strcmp(sym_name[k], sym) == 0) break;
        if (k == *n_sym) {
            if (*n_sym < 64) {
                sym_name[k] = sym;
                sym_val[k] = t->dims[d];
                sym_from[k] = v->name;
                (*n_sym)++;
            }
        } else if (sym_val[k] != t->dims[d]) {
            return og_errorf(OG_ERR_INVALID_ARGUMENT,
                             "%s: input '%s' has shape %s: dim %d ('%s') is %lld, but input "
                             "'%s' set '%s' to %lld",
                             s->label, v->name, shape_str(t->dims, t->rank, b, sizeof b), d, sym,
                             (long long)t->dims[d], sym_from[k], sym, (long long)sym_val[k]);
        }
    }
    return NULL;
}

static og_status *alloc_heap(run_state *rs, tensor *t) {
    rs->heap_allocs++;
    return tensor_alloc_data(t);
}

/* kernel_ctx.output: decide where output `index` of the current node lives. */
static og_status *exec_output(kernel_ctx *ctx, int index, og_dtype dtype, int rank,
                              const int64_t *dims, tensor **out) {
    run_state *rs = ctx->exec;
    og_session *s = rs->s;
    if (index < 0 || index >= ctx->n_outputs)
        return kernel_errorf(ctx, OG_ERR_RUNTIME, "kernel asked for output %d of %d", index,
                             ctx->n_outputs);
    int v = rs->node->outputs[index];
    tensor *t = v >= 0 ? &s->slots[v] : &rs->temp[index];
    if (t->data && t->owns_data) tensor_release(t);
    memset(t, 0, sizeof *t);
    og_status *st = tensor_set_shape(t, dtype, rank, dims);
    if (st) return og_status_wrap(st, "%s: output %d", ctx->where, index);
    if (v >= 0 && rs->want_out[v]) {
        og_tensor *u = rs->user_out[v];
        if (u && dtype == OG_STRING)
            return og_errorf(OG_ERR_INVALID_ARGUMENT, "%s: output '%s' is a string tensor: "
                             "pass NULL for it and take the new tensor (it owns its bytes)",
                             s->label, s->graph->values[v].name);
        if (u) { /* caller buffer: must match exactly */
            char a[160], b[160];
            if (u->dtype != dtype || u->rank != rank || memcmp(u->dims, dims, sizeof(int64_t) * (size_t)rank))
                return og_errorf(OG_ERR_INVALID_ARGUMENT,
                                 "%s: output '%s' is %s %s, but the caller's tensor is %s %s",
                                 s->label, s->graph->values[v].name, og_dtype_name(dtype),
                                 shape_str(dims, rank, a, sizeof a), og_dtype_name(u->dtype),
                                 shape_str(u->dims, u->rank, b, sizeof b));
            t->data = u->data;
            t->owns_data = false;
        } else {
            OG_TRY(tensor_alloc_data(t)); /* handed to the caller after the run */
        }
    } else if (v >= 0 && rs->plan && rs->plan->offset[v] != SIZE_MAX && t->nbytes <= rs->plan->size[v]) {
        t->data = (char *)rs->plan->arena + rs->plan->offset[v];
        t->owns_data = false;
    } else {
        OG_TRY(alloc_heap(rs, t));
        if (v >= 0 && !rs->plan) s->recorded[v] = t->nbytes ? t->nbytes : 1;
    }
    if (v >= 0) s->cur[v] = t;
    *out = t;
    return NULL;
}

/* Appends a new 64-byte aligned block of `size` bytes to the list (*blocks, *n, *cap). */
static og_status *add_block(void ***blocks, int *n, int *cap, size_t size, void **out) {
    if (*n == *cap) {
        int c = *cap ? *cap * 2 : 8;
        void **p = realloc(*blocks, (size_t)c * sizeof *p);
        if (!p) return og_oom();
        *blocks = p;
        *cap = c;
    }
    void *p = NULL;
    size_t sz = (size + 63) & ~(size_t)63;
    if (posix_memalign(&p, 64, sz ? sz : 64) != 0) return og_oom();
    (*blocks)[(*n)++] = p;
    *out = p;
    return NULL;
}

static og_status *exec_scratch(kernel_ctx *ctx, size_t size, void **out) {
    run_state *rs = ctx->exec;
    rs->heap_allocs++;
    return add_block(&rs->scratch, &rs->n_scratch, &rs->cap_scratch, size, out);
}

static og_status *exec_hold(kernel_ctx *ctx, size_t size, void **out) {
    run_state *rs = ctx->exec;
    rs->heap_allocs++;
    return add_block(&rs->held, &rs->n_held, &rs->cap_held, size, out);
}

static void free_scratch(run_state *rs) {
    for (int i = 0; i < rs->n_scratch; i++) free(rs->scratch[i]);
    rs->n_scratch = 0;
    for (int i = 0; i < rs->cap_temp; i++) tensor_release(&rs->temp[i]);
}

static exec_plan *find_plan(og_session *s, const int64_t *key, size_t len) {
    for (int i = 0; i < s->n_plans; i++) {
        exec_plan *p = s->plans[i];
        if (p->key_len == len && memcmp(p->key, key, len * sizeof *key) == 0) return p;
    }
    return NULL;
}

static void store_plan(og_session *s, exec_plan *p) {
    if (s->n_plans == SESSION_MAX_PLANS) { /* evict the least recently used */
        int lru = 0;
        for (int i = 1; i < s->n_plans; i++)
            if (s->plans[i]->last_used < s->plans[lru]->last_used) lru = i;
        plan_free(s->plans[lru]);
        s->plans[lru] = s->plans[--s->n_plans];
    }
    s->plans[s->n_plans++] = p;
}

/* Makes room for a node's inputs (ins: a stack array of 64, or the heap beyond that:
 * Concat and Sum take any number) and omitted outputs. */
static og_status *node_room(run_state *rs, const graph_node *n, const tensor **stack,
                            const tensor ***ins) {
    *ins = stack;
    if (n->n_inputs > 64) {
        *ins = malloc(sizeof **ins * (size_t)n->n_inputs);
        if (!*ins) return og_oom();
    }
    if (n->n_outputs > rs->cap_temp) {
        tensor *t = realloc(rs->temp, sizeof *t * (size_t)n->n_outputs);
        if (!t) {
            if (*ins != stack) free(*ins);
            return og_oom();
        }
        memset(t + rs->cap_temp, 0, sizeof *t * (size_t)(n->n_outputs - rs->cap_temp));
        rs->temp = t;
        rs->cap_temp = n->n_outputs;
    }
    return NULL;
}

static og_status *run_node(og_session *s, run_state *rs, int step) {
    const graph *g = s->graph;
    const graph_node *n = &g->nodes[s->order[step]];
    const tensor *stack[64], **ins;
    OG_TRY(node_room(rs, n, stack, &ins));
    for (int k = 0; k < n->n_inputs; k++) ins[k] = n->inputs[k] >= 0 ? s->cur[n->inputs[k]] : NULL;
    const char *where = s->where[n->index];
    kernel_ctx ctx = {
        .node = n,
        .opset = n->opset,
        .n_inputs = n->n_inputs,
        .inputs = ins,
        .n_outputs = n->n_outputs,
        .pool = s->pool,
        .output = exec_output,
        .scratch = exec_scratch,
        .hold = exec_hold,
        .exec = rs,
        .where = where,
    };
    rs->step = step;
    rs->node = n;
    og_status *st = s->kernels[n->index]->run(&ctx);
    free_scratch(rs);
    if (ins != stack) free(ins);
    if (st) return st;
    for (int k = 0; k < n->n_outputs; k++) {
        int v = n->outputs[k];
        if (v >= 0 && !s->cur[v])
            return og_errorf(OG_ERR_RUNTIME, "%s: kernel did not produce output %d ('%s')",
                             where, k, g->values[v].name);
    }
    /* Retire values whose last reader was this node. */
    for (int k = 0; k < n->n_inputs; k++) {
        int v = n->inputs[k];
        if (v >= 0 && s->last_use[v] == step && s->cur[v] == &s->slots[v]) {
            tensor_release(&s->slots[v]);
            s->cur[v] = NULL;
        }
    }
    for (int k = 0; k < n->n_outputs; k++) {
        int v = n->outputs[k];
        if (v >= 0 && s->last_use[v] == step && !rs->want_out[v]) {
            tensor_release(&s->slots[v]);
            s->cur[v] = NULL;
        }
    }
    return NULL;
}

/* Copies a value that no node produces (an input or initializer listed as an output). */
static og_status *copy_passthrough(og_session *s, const tensor *src, og_tensor **dst,
                                   const char *name) {
    if (src->dtype == OG_STRING) {
        if (*dst)
            return og_errorf(OG_ERR_INVALID_ARGUMENT, "%s: output '%s' is a string tensor: pass "
                             "NULL for it and take the new tensor (it owns its bytes)",
                             s->label, name);
        og_tensor *t = calloc(1, sizeof *t);
        if (!t) return og_oom();
        og_status *st = tensor_own_strings(src, t);
        if (st) {
            free(t);
            return st;
        }
        *dst = t;
        return NULL;
    }
    if (*dst) {
        if ((*dst)->dtype != src->dtype || (*dst)->rank != src->rank ||
            memcmp((*dst)->dims, src->dims, sizeof(int64_t) * (size_t)src->rank))
            return og_errorf(OG_ERR_INVALID_ARGUMENT, "%s: output '%s': the caller's tensor "
                             "does not match its dtype and shape", s->label, name);
        if (src->nbytes) memcpy((*dst)->data, src->data, src->nbytes);
        return NULL;
    }
    og_tensor *t;
    OG_TRY(og_tensor_create(src->dtype, src->dims, src->rank, &t));
    if (src->nbytes) memcpy(t->data, src->data, src->nbytes);
    *dst = t;
    return NULL;
}

og_status *og_session_run(og_session *s, const char *const *input_names,
                          og_tensor *const *inputs, size_t n_inputs,
                          const char *const *output_names, og_tensor **outputs,
                          size_t n_outputs) {
    if (!s || (n_inputs && (!input_names || !inputs)) || (n_outputs && (!output_names || !outputs)))
        return og_errorf(OG_ERR_INVALID_ARGUMENT, "og_session_run: NULL argument");
    const graph *g = s->graph;
    og_status *st = NULL;
    size_t nv = (size_t)g->n_values + 1;
    run_state rs = {.s = s};
    rs.user_out = calloc(nv, sizeof *rs.user_out);
    rs.want_out = calloc(nv, sizeof *rs.want_out);
    const tensor **bound = calloc((size_t)g->n_inputs + 1, sizeof *bound);
    int *out_val = calloc(n_outputs + 1, sizeof *out_val);
    bool *fresh = calloc(n_outputs + 1, sizeof *fresh);
    int64_t *key = NULL;
    size_t key_len = 0;
    if (!rs.user_out || !rs.want_out || !bound || !out_val || !fresh) {
        st = og_oom();
        goto done;
    }
    for (int v = 0; v < g->n_values; v++) s->cur[v] = g->values[v].initializer;

    /* Inputs. */
    const char *sym_name[64], *sym_from[64];
    int64_t sym_val[64];
    int n_sym = 0;
    for (size_t i = 0; i < n_inputs; i++) {
        const char *name = input_names[i];
        int v = name ? graph_find_value(g, name) : -1;
        if (v < 0 || (!g->values[v].is_input && !g->values[v].initializer)) {
            st = og_errorf(OG_ERR_NOT_FOUND, "%s: the graph has no input named '%s'", s->label,
                           name ? name : "(null)");
            goto done;
        }
        if (!inputs[i]) {
            st = og_errorf(OG_ERR_INVALID_ARGUMENT, "%s: input '%s' is NULL", s->label, name);
            goto done;
        }
        if ((st = check_input(s, &g->values[v], inputs[i], sym_name, sym_val, sym_from, &n_sym)))
            goto done;
        s->cur[v] = inputs[i];
        for (int k = 0; k < g->n_inputs; k++)
            if (g->inputs[k] == v) bound[k] = inputs[i];
    }
    for (int k = 0; k < g->n_inputs; k++) {
        if (!bound[k]) {
            st = og_errorf(OG_ERR_INVALID_ARGUMENT, "%s: input '%s' was not given", s->label,
                           g->values[g->inputs[k]].name);
            goto done;
        }
    }

    /* Requested outputs. */
    for (size_t i = 0; i < n_outputs; i++) {
        const char *name = output_names[i];
        int v = name ? graph_find_value(g, name) : -1;
        if (v < 0 || !g->values[v].is_output) {
            st = og_errorf(OG_ERR_NOT_FOUND, "%s: the graph has no output named '%s'", s->label,
                           name ? name : "(null)");
            goto done;
        }
        fresh[i] = outputs[i] == NULL;
        rs.want_out[v] = true;
        rs.user_out[v] = outputs[i];
        out_val[i] = v;
    }

    /* The plan for this shape class, or record one. */
    if ((st = plan_make_key(g, bound, &key, &key_len))) goto done;
    rs.plan = find_plan(s, key, key_len);
    if (!rs.plan) memset(s->recorded, 0, nv * sizeof *s->recorded);
    else rs.plan->last_used = ++s->run_count;

    for (int step = 0; step < g->n_nodes; step++)
        if ((st = run_node(s, &rs, step))) goto done;

    /* Hand results to the caller. */
    for (size_t i = 0; i < n_outputs; i++) {
        int v = out_val[i];
        const tensor *src = s->cur[v];
        if (!src) {
            st = og_errorf(OG_ERR_RUNTIME, "%s: output '%s' was not computed", s->label,
                           g->values[v].name);
            goto done;
        }
        if (src != &s->slots[v] || g->values[v].producer < 0) {
            if ((st = copy_passthrough(s, src, &outputs[i], g->values[v].name))) goto done;
            continue;
        }
        if (!fresh[i]) continue; /* written into the caller's buffer */
        og_tensor *t = malloc(sizeof *t);
        if (!t) {
            st = og_oom();
            goto done;
        }
        if (s->slots[v].dtype == OG_STRING) { /* its bytes may be the model's, the caller's
                                                 or held for this run: copy them along */
            if ((st = tensor_own_strings(&s->slots[v], t))) {
                free(t);
                goto done;
            }
            tensor_release(&s->slots[v]);
        } else {
            *t = s->slots[v]; /* the slot's heap buffer moves to the caller */
        }
        memset(&s->slots[v], 0, sizeof s->slots[v]);
        s->cur[v] = NULL;
        outputs[i] = t;
    }
    if (!rs.plan) {
        exec_plan *p;
        if ((st = plan_build(g, s->order, s->last_use, s->recorded, key, key_len, &p))) {
            key = NULL;
            goto done;
        }
        key = NULL;
        p->last_used = ++s->run_count;
        store_plan(s, p);
    }
done:
    s->last_stats_used_plan = rs.plan != NULL;
    s->last_stats_arena = rs.plan ? rs.plan->arena_size : 0;
    s->last_stats_heap = rs.heap_allocs;
    free_scratch(&rs);
    free(rs.scratch);
    free(rs.temp);
    for (int i = 0; i < rs.n_held; i++) free(rs.held[i]);
    free(rs.held);
    for (int v = 0; v < g->n_values; v++) tensor_release(&s->slots[v]);
    if (st) /* no new tensor is returned on failure */
        for (size_t i = 0; i < n_outputs; i++)
            if (fresh && fresh[i] && outputs[i]) {
                og_tensor_free(outputs[i]);
                outputs[i] = NULL;
            }
    free(rs.user_out);
    free(rs.want_out);
    free(bound);
    free(out_val);
    free(fresh);
    free(key);
    return st;
}

void session_last_stats(const og_session *s, session_run_stats *out) {
    out->used_plan = s->last_stats_used_plan;
    out->arena_bytes = s->last_stats_arena;
    out->heap_allocations = s->last_stats_heap;
}
