/* native_session_run_rows (og_session_run(_rows) on the native backend): binds inputs, checks
 * them against the declared types, picks or records the plan for their shape class, and
 * runs the nodes in order (only the selected rows where a selection allows). Subgraphs (the
 * bodies of If, Loop, Scan) run through the same code when their kernel asks. */
#include "backends/native/plan.h"
#include "backends/profile.h"
#include "backends/native/rows_plan.h"
#include "backends/native/native_session.h"
#include "base/rows.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Memory kernels ask to keep until the whole og_session_run ends (kernel_hold: the bytes
 * of strings they make), subgraph runs included. */
typedef struct held_list {
    void **blocks;
    size_t *sizes;
    int n, cap;
} held_list;

/* A run's row selection (og_session_run_rows). */
typedef struct run_rows {
    rows_sel sel;
    int target;       /* the selected output's value */
    bool known;       /* sel has its dims (the output's declared rows, bound by the inputs) */
    bool prune;       /* marked nodes (eg->rnode) compute the selected rows only */
    bool direct;      /* the target's producer makes the selection itself (pruned, or the
                         selection is every row in order); else it is gathered at the end */
    const uint8_t *sel_forms; /* the session's row forms of the selected rows, once made */
} run_rows;

/* State of one run of one graph, reached by the kernel callbacks through ctx->exec. */
typedef struct run_state {
    exec_graph *eg;
    held_list *held;              /* the og_session_run's */
    native_session *s;
    exec_plan *plan;              /* NULL while recording */
    bool trial;                   /* plan is another shape class's, tried for this one */
    size_t misses;                /* intermediates that did not fit the plan (heap) */
    og_tensor **user_out;         /* [n_values] caller tensors for requested outputs (main graph) */
    bool *want_out;               /* [n_values] value is a requested output; NULL in subgraphs */
    int step;
    const graph_node *node;
    const tensor **ins;           /* the current node's inputs */
    size_t heap_allocs;
    run_rows *rows;               /* the run's row selection (main graph), or NULL */
    uint64_t gen;                 /* this graph run's number (native_session.run_gen) */
    bool top;                     /* the main graph (not a subgraph) */
} run_state;

/* ---- the executor's byte count ---------------------------------------------------- */

static void mem_add(native_session *s, size_t n) {
    s->mem_live += n;
    if (s->mem_live > s->mem_peak) s->mem_peak = s->mem_live;
}

static void slot_release(native_session *s, tensor *t) {
    if (t->owns_data) s->mem_live -= t->nbytes;
    tensor_release(t);
}

/* ---- inputs --------------------------------------------------------------------------- */

static og_status *check_input(native_session *s, const graph_value *v, const tensor *t,
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
        /* an adapter's ranks may differ per module under one symbol (PEFT rank_pattern);
         * onnxruntime does not tie them, so neither do we for overridable inputs */
        if (v->dims[d] >= 0 || !sym || !sym[0] || v->default_value) continue;
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

/* ---- kernel callbacks ------------------------------------------------------------------ */

/* Heap memory for output `index` of the current node, with a message that says for what.
 * `intermediate` counts it in the run's heap allocations (what a plan should avoid);
 * an output for the caller is not. */
static og_status *alloc_heap(run_state *rs, kernel_ctx *ctx, int index, tensor *t,
                             bool intermediate) {
    og_status *st = tensor_alloc_data(t);
    if (st) {
        og_status_free(st);
        char a[160];
        int v = rs->node->outputs[index];
        return og_errorf(OG_ERR_OUT_OF_MEMORY, "%s: out of memory for output %d ('%s', %s %s, "
                         "%zu bytes)", ctx->where, index,
                         v >= 0 ? rs->eg->graph->values[v].name : "", og_dtype_name(t->dtype),
                         shape_str(t->dims, t->rank, a, sizeof a), t->nbytes);
    }
    if (t->owns_data) {
        rs->heap_allocs += intermediate;
        mem_add(rs->s, t->nbytes);
    }
    return NULL;
}

/* The input whose buffer output `index` may take over (see kernel_def.inplace), or -1:
 * an intermediate of this run that dies at this node, with the output's element count
 * and element size. */
static int inplace_source(const run_state *rs, int index, const tensor *t) {
    const exec_graph *eg = rs->eg;
    const graph_node *n = rs->node;
    unsigned mask = eg->kernels[n->index]->inplace;
    size_t es = dtype_size(t->dtype);
    if (index != 0 || !mask || !es || !t->nbytes) return -1;
    for (int k = 0; k < n->n_inputs && k < 32; k++) {
        int u = n->inputs[k];
        if (!(mask & KERNEL_INPLACE(k)) || u < 0 || eg->last_use[u] != rs->step) continue;
        const tensor *in = &eg->slots[u];
        if (eg->cur[u] != in || rs->ins[k] != in || dtype_size(in->dtype) != es ||
            in->nbytes != t->nbytes)
            continue; /* (an input read as gathered rows is not the slot's buffer) */
        bool elsewhere = false; /* also read through an input the kernel did not vouch for */
        for (int j = 0; j < n->n_inputs && !elsewhere; j++)
            elsewhere = n->inputs[j] == u && (j >= 32 || !(mask & KERNEL_INPLACE(j)));
        if (!elsewhere) return u;
    }
    return -1;
}

/* Whether output 0 of the current node (shape t) may be its input 0's own bytes: a
 * same_bytes kernel (kernel_def.same_bytes) over an initializer of this graph. */
static bool same_bytes_source(const run_state *rs, const tensor *t) {
    const exec_graph *eg = rs->eg;
    const graph_node *n = rs->node;
    if (!eg->kernels[n->index]->same_bytes || n->n_inputs < 1 || n->inputs[0] < 0) return false;
    const graph_value *gv = &eg->graph->values[n->inputs[0]];
    const tensor *in = eg->cur[n->inputs[0]];
    return gv->initializer && !gv->from_outer_scope && in == gv->initializer &&
           in->dtype == t->dtype && in->nbytes == t->nbytes && in->data;
}

/* Checks that the selected output, as its producer makes it (rank, dims), holds the
 * selected rows: a graph whose output does not have the rows it declares fails here. */
static og_status *selected_shape(const run_state *rs, int rank, const int64_t *dims) {
    const rows_sel *r = &rs->rows->sel;
    char a[160];
    if (rank != r->lrank + 1 || shape_count(dims, rank - 1) != r->n_sel)
        return og_errorf(OG_ERR_INVALID_MODEL, "%s: output '%s' came out as %s, which does not "
                         "hold the %lld selected rows", rs->s->label,
                         rs->eg->graph->values[rs->rows->target].name,
                         shape_str(dims, rank, a, sizeof a), (long long)r->n_sel);
    return NULL;
}

/* kernel_ctx.output: decide where output `index` of the current node lives. */
static og_status *exec_output(kernel_ctx *ctx, int index, og_dtype dtype, int rank,
                              const int64_t *dims, tensor **out) {
    run_state *rs = ctx->exec;
    exec_graph *eg = rs->eg;
    native_session *s = rs->s;
    if (index < 0 || index >= ctx->n_outputs)
        return kernel_errorf(ctx, OG_ERR_RUNTIME, "kernel asked for output %d of %d", index,
                             ctx->n_outputs);
    int v = rs->node->outputs[index];
    tensor *t = v >= 0 ? &eg->slots[v] : &eg->temp[index];
    if (t->data && t->owns_data) slot_release(s, t);
    memset(t, 0, sizeof *t);
    og_status *st = tensor_set_shape(t, dtype, rank, dims);
    if (st) return og_status_wrap(st, "%s: output %d", ctx->where, index);
    int u = -1;
    if (v >= 0 && rs->want_out && rs->want_out[v]) {
        og_tensor *user = rs->user_out[v];
        if (user && dtype == OG_STRING)
            return og_errorf(OG_ERR_INVALID_ARGUMENT, "%s: output '%s' is a string tensor: "
                             "pass NULL for it and take the new tensor (it owns its bytes)",
                             s->label, eg->graph->values[v].name);
        int64_t api[OG_MAX_RANK];
        if (rs->rows && rs->rows->direct && v == rs->rows->target) {
            /* the selected rows: the caller sees them as og_output_rows says */
            OG_TRY(selected_shape(rs, rank, dims));
            rank = rows_sel_api_dims(&rs->rows->sel, dims[rank - 1], api);
            dims = api;
        }
        if (user) { /* caller buffer: must match exactly */
            char a[160], b[160];
            if (user->dtype != dtype || user->rank != rank ||
                memcmp(user->dims, dims, sizeof(int64_t) * (size_t)rank))
                return og_errorf(OG_ERR_INVALID_ARGUMENT,
                                 "%s: output '%s' is %s %s, but the caller's tensor is %s %s",
                                 s->label, eg->graph->values[v].name, og_dtype_name(dtype),
                                 shape_str(dims, rank, a, sizeof a), og_dtype_name(user->dtype),
                                 shape_str(user->dims, user->rank, b, sizeof b));
            t->data = user->data;
            t->owns_data = false;
        } else {
            OG_TRY(alloc_heap(rs, ctx, index, t, false)); /* handed to the caller after the run */
        }
    } else if (v >= 0 && index == 0 && same_bytes_source(rs, t)) {
        /* a new shape over an initializer's bytes: nothing to copy, nothing in the arena
         * (never owned, so no in-place reuse can write over the initializer) */
        t->data = (void *)eg->cur[rs->node->inputs[0]]->data;
        t->owns_data = false;
    } else if (v >= 0 && (u = inplace_source(rs, index, t)) >= 0 && eg->slots[u].owns_data) {
        /* In place over a dying heap input: the buffer changes owner, the input stays
         * readable through its slot until the node ends. In a planned run the arena
         * placement below already gives the shared bytes. */
        t->data = eg->slots[u].data;
        t->owns_data = true;
        eg->slots[u].owns_data = false;
        if (!rs->plan || rs->trial) {
            eg->recorded[v] = t->nbytes;
            eg->alias[v] = u;
        }
    } else if (v >= 0 && rs->plan && rs->plan->offset[v] != SIZE_MAX &&
               t->nbytes <= rs->plan->size[v] &&
               (rs->plan->alias[v] < 0 || rs->plan->alias[v] == u)) {
        /* (a block planned in place over an input that does not qualify this time, when
         * a data-dependent shape changed, would overlap that input: heap instead) */
        t->data = (char *)rs->plan->arena + rs->plan->offset[v];
        t->owns_data = false;
        if (rs->trial) {
            eg->recorded[v] = t->nbytes ? t->nbytes : 1;
            eg->alias[v] = rs->plan->alias[v];
        }
    } else {
        OG_TRY(alloc_heap(rs, ctx, index, t, true));
        if (v >= 0 && (!rs->plan || rs->trial)) eg->recorded[v] = t->nbytes ? t->nbytes : 1;
        rs->misses += v >= 0 && rs->plan;
    }
    if (v >= 0) eg->cur[v] = t;
    *out = t;
    return NULL;
}

/* Appends a new 64-byte aligned block of `size` bytes to (*blocks, *sizes, *n, *cap). */
static og_status *add_block(kernel_ctx *ctx, void ***blocks, size_t **sizes, int *n, int *cap,
                            size_t size, void **out) {
    if (*n == *cap) {
        int c = *cap ? *cap * 2 : 8;
        void **p = realloc(*blocks, (size_t)c * sizeof *p);
        if (!p) return og_oom();
        *blocks = p;
        size_t *sz = realloc(*sizes, (size_t)c * sizeof *sz);
        if (!sz) return og_oom();
        *sizes = sz;
        *cap = c;
    }
    void *p = NULL;
    size_t sz = (size + 63) & ~(size_t)63;
    if (sz < size || posix_memalign(&p, 64, sz ? sz : 64) != 0)
        return og_errorf(OG_ERR_OUT_OF_MEMORY, "%s: out of memory for %zu bytes of scratch",
                         ctx->where, size);
    (*blocks)[*n] = p;
    (*sizes)[(*n)++] = sz;
    *out = p;
    return NULL;
}

/* ---- scratch: a stack of chunks kept by the session --------------------------------
 * A node's scratch is released when it returns (subgraph nodes run inside their
 * parent's node, above its mark), so scratch is a stack: bump allocation in the current
 * chunk, the next chunk when it is full, and back to the node's mark afterwards. Chunks
 * stay allocated from run to run (a decode step asks for the same scratch every time, so
 * it allocates nothing); big ones are given back when the run ends. */
enum { SCRATCH_MIN_CHUNK = 256 << 10, SCRATCH_KEEP = 8 << 20 };

typedef struct scratch_mark {
    int chunk;
    size_t used, live;
} scratch_mark;

static scratch_mark scratch_save(const native_session *s) {
    const native_scratch *sc = &s->scratch;
    return (scratch_mark){sc->cur, sc->n ? sc->chunks[sc->cur].used : 0, sc->live};
}

static void scratch_restore(native_session *s, scratch_mark m) {
    native_scratch *sc = &s->scratch;
    if (!sc->n) return;
    sc->cur = m.chunk;
    sc->chunks[m.chunk].used = m.used;
    s->mem_live -= sc->live - m.live;
    sc->live = m.live;
}

/* Gives back chunks beyond the first few MiB (what a prefill needed); the stack is empty. */
static void scratch_trim(native_session *s) {
    native_scratch *sc = &s->scratch;
    size_t kept = 0;
    int n = 0;
    for (int i = 0; i < sc->n; i++) {
        if (kept + sc->chunks[i].size <= SCRATCH_KEEP) {
            kept += sc->chunks[i].size;
            sc->chunks[n++] = sc->chunks[i];
        } else {
            free(sc->chunks[i].base);
        }
    }
    sc->n = n;
    sc->cur = 0;
    if (n) sc->chunks[0].used = 0;
}

static og_status *scratch_take(run_state *rs, const char *where, size_t size, void **out) {
    native_scratch *sc = &rs->s->scratch;
    size_t need = (size + 63) & ~(size_t)63;
    if (need < size) need = SIZE_MAX;
    if (need == SIZE_MAX)
        return og_errorf(OG_ERR_OUT_OF_MEMORY, "%s: out of memory for %zu bytes of scratch",
                         where, size);
    if (!sc->n || sc->chunks[sc->cur].size - sc->chunks[sc->cur].used < need) {
        /* the next chunk (free: above the stack), replaced when too small (every free
         * chunk too small goes: the one that slides into its place may be too) */
        int next = sc->n ? sc->cur + 1 : 0;
        while (next < sc->n && sc->chunks[next].size < need) {
            free(sc->chunks[next].base);
            memmove(&sc->chunks[next], &sc->chunks[next + 1],
                    (size_t)(sc->n - next - 1) * sizeof *sc->chunks);
            sc->n--;
        }
        if (next >= sc->n) {
            if (sc->n == sc->cap) {
                int c = sc->cap ? sc->cap * 2 : 8;
                scratch_chunk *ch = realloc(sc->chunks, (size_t)c * sizeof *ch);
                if (!ch) return og_oom();
                sc->chunks = ch;
                sc->cap = c;
            }
            size_t csize = need > SCRATCH_MIN_CHUNK ? need : SCRATCH_MIN_CHUNK;
            void *p = NULL;
            if (posix_memalign(&p, 64, csize) != 0)
                return og_errorf(OG_ERR_OUT_OF_MEMORY, "%s: out of memory for %zu bytes of "
                                 "scratch", where, size);
            memmove(&sc->chunks[next + 1], &sc->chunks[next],
                    (size_t)(sc->n - next) * sizeof *sc->chunks);
            sc->chunks[next] = (scratch_chunk){p, csize, 0};
            sc->n++;
            rs->heap_allocs++;
        }
        sc->cur = next;
        sc->chunks[next].used = 0;
    }
    scratch_chunk *c = &sc->chunks[sc->cur];
    *out = c->base + c->used;
    c->used += need;
    sc->live += need;
    mem_add(rs->s, need);
    return NULL;
}

static og_status *exec_scratch(kernel_ctx *ctx, size_t size, void **out) {
    return scratch_take(ctx->exec, ctx->where, size, out);
}

static og_status *exec_hold(kernel_ctx *ctx, size_t size, void **out) {
    run_state *rs = ctx->exec;
    held_list *h = rs->held;
    OG_TRY(add_block(ctx, &h->blocks, &h->sizes, &h->n, &h->cap, size, out));
    rs->heap_allocs++;
    mem_add(rs->s, h->sizes[h->n - 1]);
    return NULL;
}

/* ---- shared input forms (kernel_ctx.shared) -------------------------------------- */

static bool shared_matches(const shared_form *f, const run_state *rs, int v, const tensor *t,
                           const int64_t *key, int n_key, size_t size) {
    return f->size == size && f->ready && f->eg == rs->eg && f->gen == rs->gen &&
           f->value == v && f->data == t->data && f->rank == t->rank &&
           !memcmp(f->dims, t->dims, sizeof(int64_t) * (size_t)t->rank) && f->n_key == n_key &&
           !memcmp(f->key, key, sizeof(int64_t) * (size_t)n_key);
}

/* Forgets the form (its buffer stays for the next runs unless it is large). */
static void shared_forget(native_session *s, bool trim) {
    shared_form *f = &s->shared;
    s->mem_live -= f->size;
    f->size = 0;
    f->ready = false;
    f->writer = NULL;
    if (trim && f->cap > SCRATCH_KEEP) {
        free(f->buf);
        f->buf = NULL;
        f->cap = 0;
    }
}

static og_status *exec_shared(kernel_ctx *ctx, int input, const int64_t *key, int n_key,
                              size_t size, void **out, bool *ready) {
    run_state *rs = ctx->exec;
    native_session *s = rs->s;
    shared_form *f = &s->shared;
    const graph_node *n = rs->node;
    *out = NULL;
    *ready = false;
    if (input < 0 || input >= n->n_inputs || n_key < 1 || n_key > KERNEL_SHARED_KEY || !size)
        return NULL;
    int v = n->inputs[input];
    const tensor *t = ctx->inputs[input];
    if (v < 0 || !t) return NULL;
    if (shared_matches(f, rs, v, t, key, n_key, size)) {
        *out = f->buf;
        *ready = true;
        s->shared_reuses++;
        return NULL;
    }
    if (rs->eg->last_use[v] <= rs->step) return NULL; /* no later reader to share it with */
    shared_forget(s, false);
    if (f->cap < size) {
        void *p = NULL;
        if (posix_memalign(&p, 64, size) != 0)
            return og_errorf(OG_ERR_OUT_OF_MEMORY, "%s: out of memory for %zu bytes of a "
                             "shared input form", ctx->where, size);
        free(f->buf);
        f->buf = p;
        f->cap = size;
        rs->heap_allocs++;
    }
    f->size = size;
    mem_add(s, size);
    f->eg = rs->eg;
    f->gen = rs->gen;
    f->value = v;
    f->data = t->data;
    f->rank = t->rank;
    memcpy(f->dims, t->dims, sizeof(int64_t) * (size_t)t->rank);
    f->n_key = n_key;
    memcpy(f->key, key, sizeof(int64_t) * (size_t)n_key);
    f->writer = n;
    *out = f->buf;
    return NULL;
}

static void free_held(native_session *s, held_list *h) {
    for (int i = 0; i < h->n; i++) {
        free(h->blocks[i]);
        s->mem_live -= h->sizes[i];
    }
    free(h->blocks);
    free(h->sizes);
    memset(h, 0, sizeof *h);
}

static void free_temp(run_state *rs) {
    for (int i = 0; i < rs->eg->cap_temp; i++) slot_release(rs->s, &rs->eg->temp[i]);
}

static og_status *run_graph(exec_graph *eg, run_state *rs, const tensor *const *bound,
                            int n_bound);

/* kernel_ctx.subgraph: runs one of the current node's graph attributes. */
static og_status *exec_subgraph(kernel_ctx *ctx, const graph *g, int n_inputs,
                                const tensor *const *inputs, const tensor **outputs) {
    run_state *rs = ctx->exec;
    exec_graph *eg = rs->eg, *sub = NULL;
    int ni = rs->node->index;
    for (int k = eg->sub_start[ni]; k < eg->sub_start[ni + 1] && !sub; k++)
        if (eg->subs[k].graph == g) sub = eg->subs[k].exec;
    if (!sub || !g)
        return kernel_error(ctx, OG_ERR_RUNTIME, "internal: the subgraph is not an attribute "
                                                 "of this node");
    if (n_inputs != g->n_inputs)
        return kernel_errorf(ctx, OG_ERR_INVALID_MODEL, "subgraph '%s' takes %d inputs, the "
                             "node gives it %d", g->name, g->n_inputs, n_inputs);
    if (sub->running)
        return kernel_error(ctx, OG_ERR_RUNTIME, "internal: subgraph run re-entered");
    exec_graph_release(sub); /* what its previous run left */
    const graph *sg = sub->graph;
    for (int v = 0; v < sg->n_values; v++) sub->cur[v] = sg->values[v].initializer;
    int n_bound = n_inputs + sub->n_outer;
    const tensor **bound = sub->bound;
    og_status *st = NULL;
    for (int i = 0; i < n_inputs && !st; i++) {
        const graph_value *gv = &sg->values[sg->inputs[i]];
        if (!inputs[i])
            st = og_errorf(OG_ERR_INVALID_MODEL, "%s: input %d ('%s') is not given", sub->label,
                           i, gv->name);
        else if (gv->dtype != OG_UNDEFINED && inputs[i]->dtype != gv->dtype)
            st = og_errorf(OG_ERR_INVALID_MODEL, "%s: input '%s' is %s, the graph declares %s",
                           sub->label, gv->name, og_dtype_name(inputs[i]->dtype),
                           og_dtype_name(gv->dtype));
        sub->cur[sg->inputs[i]] = bound[i] = inputs[i];
    }
    for (int k = 0; k < sub->n_outer && !st; k++) {
        const tensor *t = sub->outer_from[k]->cur[sub->outer_index[k]];
        if (!t)
            st = og_errorf(OG_ERR_RUNTIME, "%s: value '%s' of an enclosing graph is not "
                           "available", sub->label, sg->values[sub->outer[k]].name);
        sub->cur[sub->outer[k]] = bound[n_inputs + k] = t;
    }
    if (!st) {
        run_state srs = {.eg = sub, .s = rs->s, .held = rs->held};
        sub->running = true;
        st = run_graph(sub, &srs, bound, n_bound);
        sub->running = false;
        rs->heap_allocs += srs.heap_allocs;
    }
    for (int i = 0; i < sg->n_outputs && !st; i++) {
        outputs[i] = sub->cur[sg->outputs[i]];
        if (!outputs[i])
            st = og_errorf(OG_ERR_RUNTIME, "%s: output '%s' was not computed", sub->label,
                           sg->values[sg->outputs[i]].name);
    }
    return st;
}

/* ---- running nodes ------------------------------------------------------------------- */

static exec_plan *find_plan(exec_graph *eg, const int64_t *key, size_t len) {
    for (int i = 0; i < eg->n_plans; i++) {
        exec_plan *p = eg->plans[i];
        if (p->key_len == len && memcmp(p->key, key, len * sizeof *key) == 0) return p;
    }
    return NULL;
}

static void retire(run_state *rs, int v) {
    exec_graph *eg = rs->eg;
    if (v >= 0 && eg->last_use[v] == rs->step && eg->cur[v] == &eg->slots[v] &&
        !(rs->want_out && rs->want_out[v])) {
        slot_release(rs->s, &eg->slots[v]);
        eg->cur[v] = NULL;
    }
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
    exec_graph *eg = rs->eg;
    if (n->n_outputs > eg->cap_temp) { /* kept by the graph: no allocation per run */
        tensor *t = realloc(eg->temp, sizeof *t * (size_t)n->n_outputs);
        if (!t) {
            if (*ins != stack) free(*ins);
            return og_oom();
        }
        memset(t + eg->cap_temp, 0, sizeof *t * (size_t)(n->n_outputs - eg->cap_temp));
        eg->temp = t;
        eg->cap_temp = n->n_outputs;
    }
    return NULL;
}

/* A pruned node's row inputs that are full values: their selected rows, gathered once
 * per run into scratch that lives until the run ends (below every node's own scratch);
 * a value whose leading dims are all 1 is read as it is. */
static og_status *gather_row_inputs(exec_graph *eg, run_state *rs, const graph_node *n,
                                    const tensor **ins) {
    for (int k = 0; k < n->n_inputs; k++) {
        int u = n->inputs[k];
        if (u < 0 || eg->rval[u] || !rows_plan_row_input(eg, n, k) || !ins[k]) continue;
        if (eg->has_gath[u]) {
            ins[k] = &eg->gath[u];
            continue;
        }
        const tensor *full = ins[k];
        bool pass;
        int64_t dims[OG_MAX_RANK];
        int rank;
        char what[400];
        snprintf(what, sizeof what, "%s: input '%s'", eg->where[n->index], eg->graph->values[u].name);
        OG_TRY(rows_gather_shape(&rs->rows->sel, full, what, &pass, dims, &rank));
        if (pass) continue;
        tensor *t = &eg->gath[u];
        memset(t, 0, sizeof *t);
        OG_TRY(tensor_set_shape(t, full->dtype, rank, dims));
        void *p = NULL;
        OG_TRY(scratch_take(rs, eg->where[n->index], t->nbytes ? t->nbytes : 1, &p));
        t->data = p;
        t->owns_data = false;
        rows_gather_copy(&rs->rows->sel, full, p);
        eg->has_gath[u] = 1;
        ins[k] = t;
    }
    return NULL;
}

/* The row forms (kernel_ctx.row_forms) of node n's run: the session's, or for a node that
 * computes only the selected rows, theirs (made once per run, in scratch that lives until
 * the run ends). */
static og_status *node_row_forms(exec_graph *eg, run_state *rs, const graph_node *n,
                                 const uint8_t **forms, int64_t *nf) {
    native_session *s = rs->s;
    run_rows *r = rs->rows;
    *forms = s->row_forms;
    *nf = s->n_row_forms;
    if (!s->row_forms || !r || !r->prune || !eg->rnode[n->index]) return NULL;
    *forms = NULL;
    *nf = 0;
    int64_t total = 1;
    for (int d = 0; d < r->sel.lrank; d++) total *= r->sel.L[d];
    if (total != s->n_row_forms || r->sel.n_sel <= 0) return NULL;
    if (!r->sel_forms) {
        void *p;
        OG_TRY(scratch_take(rs, eg->where[n->index], (size_t)r->sel.n_sel, &p));
        uint8_t *f = p;
        for (int64_t i = 0; i < r->sel.n_sel; i++) f[i] = s->row_forms[rows_sel_row(&r->sel, i)];
        r->sel_forms = f;
    }
    *forms = r->sel_forms;
    *nf = r->sel.n_sel;
    return NULL;
}

static og_status *run_node(exec_graph *eg, run_state *rs, int step) {
    const graph *g = eg->graph;
    const graph_node *n = &g->nodes[eg->order[step]];
    const tensor *stack[64], **ins;
    OG_TRY(node_room(rs, n, stack, &ins));
    for (int k = 0; k < n->n_inputs; k++) ins[k] = n->inputs[k] >= 0 ? eg->cur[n->inputs[k]] : NULL;
    if (rs->rows && rs->rows->prune && eg->rnode[n->index]) {
        og_status *gst = gather_row_inputs(eg, rs, n, ins);
        if (gst) {
            if (ins != stack) free(ins);
            return gst;
        }
    }
    rs->ins = ins;
    const char *where = eg->where[n->index];
    const uint8_t *forms;
    int64_t n_forms;
    og_status *fst = node_row_forms(eg, rs, n, &forms, &n_forms);
    if (fst) {
        if (ins != stack) free(ins);
        return fst;
    }
    kernel_ctx ctx = {
        .node = n,
        .opset = n->opset,
        .n_inputs = n->n_inputs,
        .inputs = ins,
        .n_outputs = n->n_outputs,
        .pool = rs->s->pool,
        .output = exec_output,
        .scratch = exec_scratch,
        .hold = exec_hold,
        .exec = rs,
        .where = where,
        .subgraph = exec_subgraph,
        .prepared = native_prepared(eg, n, ins),
        .graph = g,
        .paged_kv = rs->s->paged_kv,
        .shared = exec_shared,
        .row_forms = forms,
        .n_row_forms = n_forms,
    };
    rs->step = step;
    rs->node = n;
    scratch_mark mark = scratch_save(rs->s);
    og_profiler *prof = rs->s->prof;
    int64_t t0 = prof ? profiler_now_ns() : 0;
    uint64_t jobs0 = prof ? threadpool_jobs(ctx.pool) : 0;
    og_status *st = eg->kernels[n->index]->run(&ctx);
    shared_form *sf = &rs->s->shared;
    if (sf->writer == n && sf->eg == eg && sf->gen == rs->gen && !sf->ready) {
        if (st)
            shared_forget(rs->s, false);
        else
            sf->ready = true; /* written: the next readers may take it */
    }
    if (prof && !st) {
        int64_t t1 = profiler_now_ns();
        const tensor *outs[64];
        int no = n->n_outputs < 64 ? n->n_outputs : 64;
        for (int k = 0; k < no; k++) outs[k] = n->outputs[k] >= 0 ? eg->cur[n->outputs[k]] : NULL;
        profiler_node(prof, eg->label, n, t0, t1, (int)(threadpool_jobs(ctx.pool) - jobs0),
                      threadpool_size(ctx.pool), n->n_inputs < 64 ? n->n_inputs : 64, ins, no,
                      outs);
    }
    scratch_restore(rs->s, mark);
    free_temp(rs);
    if (ins != stack) free(ins);
    for (int k = eg->sub_start[n->index]; k < eg->sub_start[n->index + 1]; k++)
        exec_graph_release(eg->subs[k].exec);
    og_status *wrong = graph_attr_type_error(n); /* the cause of whatever else went wrong */
    if (wrong) {
        og_status_free(st);
        return og_status_wrap(wrong, "%s", where);
    }
    if (st) return og_oom_context(st, "%s", where); /* a kernel's own small allocations */
    for (int k = 0; k < n->n_outputs; k++) {
        int v = n->outputs[k];
        if (v >= 0 && !eg->cur[v])
            return og_errorf(OG_ERR_RUNTIME, "%s: kernel did not produce output %d ('%s')",
                             where, k, g->values[v].name);
    }
    /* Retire values whose last reader was this node, and outputs nobody reads. */
    for (int k = 0; k < n->n_inputs; k++) retire(rs, n->inputs[k]);
    for (int k = eg->imp_start[n->index]; k < eg->imp_start[n->index + 1]; k++)
        retire(rs, eg->imp_vals[k]);
    for (int k = 0; k < n->n_outputs; k++) retire(rs, n->outputs[k]);
    return NULL;
}

/* ---- one thread or all: per step ------------------------------------------------------

 * Each kernel decides from its own cost estimate whether to split its work, but a
 * step of a tiny model (tens to hundreds of microseconds in all) is a chain of kernels
 * of a few microseconds each, where handing chunks to a worker and waiting for it costs
 * about what it saves, and kernels' estimates of their own cost are rough at that size.
 * So the executor measures instead: per plan (one shape class, or the run of decode
 * steps that share it), a step is timed with the workers and without them, and the
 * faster way is kept; the other is tried again after probe_gap steps, a gap that
 * doubles (up to STEP_GAP_MAX) while the choice holds, so a choice that stops being
 * right (the context grows, another process takes the second core) is found within a
 * few hundred steps at a cost of one slower step in that many. Steps measured at
 * STEP_BIG_NS or more with the workers are never tried on one thread: there the
 * kernels' splits dominate and a try would cost a whole step's worth of time. The
 * kernels split their work into the same items either way, so the results are the
 * same bits. */
enum { STEP_BIG_NS = 4000000, STEP_GAP_MIN = 8, STEP_GAP_MAX = 1024 };

static int64_t step_now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* Whether the next step of plan p runs without the workers; *probe: it is a try of the
 * way not chosen (or the first of one of them). */
static bool step_mode(exec_plan *p, bool *probe) {
    *probe = false;
    if (!p->pool_ns) return false;                               /* first: with the workers */
    if (!p->serial && p->pool_ns >= STEP_BIG_NS) return false;   /* too big to try alone */
    if (!p->serial_ns || ++p->since_probe >= p->probe_gap) {
        *probe = true;
        return !p->serial || !p->serial_ns;
    }
    return p->serial;
}

static void step_record(exec_plan *p, bool serial, bool probe, int64_t ns) {
    int64_t *slot = serial ? &p->serial_ns : &p->pool_ns;
    /* in the way in use, a step slower than the last counts half: one preempted step
     * does not decide */
    *slot = !probe && *slot && *slot < ns ? (*slot + ns) / 2 : ns;
    if (!probe || !p->pool_ns || !p->serial_ns) return;
    bool was = p->serial;
    p->serial = p->serial_ns < p->pool_ns;
    p->since_probe = 0;
    p->probe_gap = p->serial != was || !p->probe_gap ? STEP_GAP_MIN
                   : p->probe_gap < STEP_GAP_MAX ? p->probe_gap * 2 : STEP_GAP_MAX;
}

/* Runs eg's nodes once its inputs (and outer-scope values) are bound in eg->cur, with
 * the plan of the shape class of `bound`, recording one when there is none. */
static og_status *run_graph(exec_graph *eg, run_state *rs, const tensor *const *bound,
                            int n_bound) {
    const graph *g = eg->graph;
    native_session *s = rs->s;
    rs->gen = ++s->run_gen; /* what an earlier run of eg shared is stale now */
    size_t key_len = plan_make_key(bound, n_bound, eg->key);
    if (rs->rows && rs->rows->prune) { /* pruned values are smaller: a class of its own */
        eg->key[key_len++] = -7;
        eg->key[key_len++] = rs->rows->target;
        eg->key[key_len++] = rs->rows->sel.last ? -1 : rs->rows->sel.n_sel;
    }
    rs->plan = find_plan(eg, eg->key, key_len);
    rs->trial = false;
    rs->misses = 0;
    og_status *st = NULL;
    if (!rs->plan && eg->n_plans > 0) {
        /* A new shape class often has intermediates no larger than the last one's (a
         * decode step's attention mask grows by one column, which only Shape and
         * ReduceSum read): try the most recently used plan, recording sizes as we go.
         * If everything fits, the plan takes this class's key; if not, the values that
         * did not fit went to the heap and a plan is built from the recorded sizes. */
        rs->plan = eg->plans[0];
        for (int i = 1; i < eg->n_plans; i++)
            if (eg->plans[i]->last_used > rs->plan->last_used) rs->plan = eg->plans[i];
        rs->trial = true;
    }
    if (!rs->plan || rs->trial) {
        memset(eg->recorded, 0, ((size_t)g->n_values + 1) * sizeof *eg->recorded);
        for (int v = 0; v < g->n_values; v++) eg->alias[v] = -1;
    }
    if (rs->plan) {
        rs->plan->last_used = ++s->plan_clock;
        OG_TRY(native_plan_arena(eg, rs->plan));
    }
    threadpool *pool = s->pool;
    /* (not when every split is forced, OG_INLINE_NS=0: the tests' way to run every
     * parallel path) */
    bool timed = rs->top && rs->plan && threadpool_size(pool) > 1 && threadpool_inline_ns(pool) > 0;
    bool probe = false;
    bool serial = timed && step_mode(rs->plan, &probe);
    if (serial) threadpool_set_serial(pool, true);
    int64_t t0 = timed ? step_now_ns() : 0;
    for (int step = 0; step < g->n_nodes && !st; step++) st = run_node(eg, rs, step);
    if (serial) threadpool_set_serial(pool, false);
    if (timed && !st && !(rs->trial && rs->misses))
        step_record(rs->plan, serial, probe, step_now_ns() - t0);
    free_temp(rs);
    if (!st && rs->trial && rs->misses == 0) { /* the plan serves this class too */
        if (key_len > rs->plan->key_len) {
            int64_t *k = realloc(rs->plan->key, (key_len + 1) * sizeof *k);
            if (!k) return og_oom();
            rs->plan->key = k;
        }
        memcpy(rs->plan->key, eg->key, key_len * sizeof *eg->key);
        rs->plan->key_len = key_len;
        return NULL;
    }
    if (!st && (!rs->plan || rs->trial)) {
        int64_t *key = malloc((key_len + 1) * sizeof *key);
        if (!key) return og_oom();
        memcpy(key, eg->key, key_len * sizeof *key);
        exec_plan *p;
        st = plan_build(g, eg->order, eg->last_use, eg->recorded, eg->alias, key, key_len, &p);
        if (!st) {
            p->last_used = ++s->plan_clock;
            native_plan_store(eg, p);
        }
    }
    return st;
}

/* Copies a value that no node produces (an input or initializer listed as an output). */
static og_status *copy_passthrough(native_session *s, const tensor *src, og_tensor **dst,
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

/* Sets up the run's row selection for output value v once the inputs are bound: its
 * rows from the output's declared dims (fixed, or symbols the inputs bound), then which
 * nodes compute only the selected rows. Without declared rows the whole output is
 * computed and gathered at the end. */
static og_status *rows_setup(exec_graph *eg, run_rows *rr, const og_output_rows *sel, int v,
                             const bool *want_out, const char *const *sym_name,
                             const int64_t *sym_val, int n_sym) {
    const graph_value *gv = &eg->graph->values[v];
    memset(rr, 0, sizeof *rr);
    rr->target = v;
    rr->sel.last = sel->rows == NULL;
    rr->sel.list = sel->rows;
    rr->sel.n_list = (int64_t)sel->n_rows;
    if (!rr->sel.last && sel->n_rows < 1)
        return og_errorf(OG_ERR_INVALID_ARGUMENT, "%s: output '%s': a list of rows needs at "
                         "least one", eg->label, gv->name);
    int64_t L[OG_MAX_RANK];
    rr->known = gv->rank >= 2;
    for (int d = 0; rr->known && d < gv->rank - 1; d++) {
        L[d] = gv->dims[d];
        for (int k = 0; L[d] < 0 && gv->dim_names[d] && k < n_sym; k++)
            if (!strcmp(sym_name[k], gv->dim_names[d])) L[d] = sym_val[k];
        rr->known = L[d] >= 0;
    }
    if (!rr->known) return NULL;
    char what[300];
    snprintf(what, sizeof what, "%s: output '%s'", eg->label, gv->name);
    OG_TRY(rows_sel_set_dims(&rr->sel, gv->rank - 1, L, what));
    if (gv->producer < 0) return NULL; /* an input or initializer: copied at the end */
    if (rows_sel_identity(&rr->sel)) {
        rr->direct = true;
        return NULL;
    }
    OG_TRY(rows_plan_mark(eg, v, want_out));
    memset(eg->has_gath, 0, (size_t)eg->graph->n_values);
    rr->prune = rr->direct = eg->rval[v];
    return NULL;
}

/* The selected rows of the whole output `full` into *dst (a caller tensor of the selected
 * shape, or NULL for a new one). */
static og_status *rows_finish(native_session *s, run_rows *rr, const tensor *full, og_tensor **dst) {
    char what[300];
    snprintf(what, sizeof what, "%s: output '%s'", s->label, s->main->graph->values[rr->target].name);
    return rows_sel_take(&rr->sel, rr->known, full, what, dst);
}

og_status *native_session_run_rows(native_session *s, const char *const *input_names,
                                   og_tensor *const *inputs, size_t n_inputs,
                                   const char *const *output_names, og_tensor **outputs,
                                   size_t n_outputs, const og_output_rows *rows) {
    exec_graph *eg = s->main;
    const graph *g = eg->graph;
    og_status *st = NULL;
    held_list held = {0};
    /* user_out and want_out are the graph's (all NULL and false between runs) */
    run_state rs = {.eg = eg, .s = s, .held = &held, .user_out = eg->user_out,
                    .want_out = eg->want_out, .top = true};
    const tensor **bound = eg->bound;
    memset(bound, 0, ((size_t)g->n_inputs + 1) * sizeof *bound);
    int out_stack[16];
    bool fresh_stack[16];
    int *out_val = out_stack;
    bool *fresh = fresh_stack;
    if (n_outputs > 16) {
        out_val = calloc(n_outputs, sizeof *out_val);
        fresh = calloc(n_outputs, sizeof *fresh);
    }
    s->mem_peak = s->mem_live;
    s->shared_reuses = 0;
    scratch_mark scratch0 = scratch_save(s); /* gathered rows live until the run ends */
    run_rows rr;
    int sel_out = -1;         /* the output index of the selected output */
    og_tensor *sel_user = NULL; /* its caller tensor while the whole output is computed */
    bool used_plan = false;
    size_t n_requested = 0; /* entries of user_out / want_out to clear afterwards */
    if (!out_val || !fresh) {
        st = og_oom();
        goto done;
    }
    memset(fresh, 0, (n_outputs > 16 ? n_outputs : 16) * sizeof *fresh);
    for (int v = 0; v < g->n_values; v++) eg->cur[v] = g->values[v].initializer;

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
        eg->cur[v] = inputs[i];
        for (int k = 0; k < g->n_inputs; k++)
            if (g->inputs[k] == v) bound[k] = inputs[i];
    }
    for (int k = 0; k < g->n_inputs; k++) {
        const graph_value *gv = &g->values[g->inputs[k]];
        if (!bound[k] && gv->default_value) /* an overridable initializer left unfed */
            eg->cur[g->inputs[k]] = bound[k] = gv->default_value;
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
        n_requested = i + 1;
        if (rows && !strcmp(rows->output, name)) sel_out = (int)i;
    }

    /* Row selection. */
    if (rows) {
        if (sel_out < 0) {
            st = og_errorf(OG_ERR_INVALID_ARGUMENT, "%s: rows of '%s' are selected, but the run "
                           "does not ask for that output", s->label, rows->output);
            goto done;
        }
        if ((st = rows_setup(eg, &rr, rows, out_val[sel_out], rs.want_out, sym_name, sym_val,
                             n_sym)))
            goto done;
        rr.sel_forms = NULL;
        rs.rows = &rr;
        if (!rr.direct) { /* computed whole, gathered at the end */
            sel_user = outputs[sel_out];
            rs.user_out[rr.target] = NULL;
        }
    }

    eg->running = true;
    int64_t t0 = s->prof ? profiler_now_ns() : 0;
    st = run_graph(eg, &rs, bound, g->n_inputs);
    if (s->prof) profiler_run(s->prof, eg->label, t0, profiler_now_ns());
    eg->running = false;
    used_plan = rs.plan != NULL && !(rs.trial && rs.misses);
    if (st) goto done;

    /* Hand results to the caller. */
    for (size_t i = 0; i < n_outputs; i++) {
        int v = out_val[i];
        const tensor *src = eg->cur[v];
        if (!src) {
            st = og_errorf(OG_ERR_RUNTIME, "%s: output '%s' was not computed", s->label,
                           g->values[v].name);
            goto done;
        }
        if ((int)i == sel_out && !rr.direct) {
            outputs[i] = sel_user;
            if ((st = rows_finish(s, &rr, src, &outputs[i]))) goto done;
            continue;
        }
        if (src != &eg->slots[v] || g->values[v].producer < 0) {
            if ((st = copy_passthrough(s, src, &outputs[i], g->values[v].name))) goto done;
            continue;
        }
        if (!fresh[i]) continue; /* written into the caller's buffer */
        og_tensor *t = malloc(sizeof *t);
        if (!t) {
            st = og_oom();
            goto done;
        }
        if (eg->slots[v].dtype == OG_STRING) { /* its bytes may be the model's, the caller's
                                                  or held for this run: copy them along */
            if ((st = tensor_own_strings(&eg->slots[v], t))) {
                free(t);
                goto done;
            }
            slot_release(s, &eg->slots[v]);
        } else {
            *t = eg->slots[v]; /* the slot's heap buffer moves to the caller */
            if (t->owns_data) s->mem_live -= t->nbytes;
            if ((int)i == sel_out) /* the selected rows as the caller sees them */
                t->rank = rows_sel_api_dims(&rr.sel, t->dims[t->rank - 1], t->dims);
        }
        memset(&eg->slots[v], 0, sizeof eg->slots[v]);
        eg->cur[v] = NULL;
        outputs[i] = t;
    }
done:
    st = og_oom_context(st, "%s: running the graph", s->label);
    s->last_stats_used_plan = used_plan;
    s->last_stats_arena = used_plan ? rs.plan->arena_size : 0;
    s->last_stats_heap = rs.heap_allocs;
    s->last_stats_shared = s->shared_reuses;
    shared_forget(s, true);
    exec_graph_release(eg);
    native_plans_trim(s); /* nothing reads an arena now */
    scratch_restore(s, scratch0);
    scratch_trim(s);
    free_held(s, &held);
    if (st) /* no new tensor is returned on failure */
        for (size_t i = 0; i < n_outputs; i++)
            if (fresh && fresh[i] && outputs[i]) {
                og_tensor_free(outputs[i]);
                outputs[i] = NULL;
            }
    for (size_t i = 0; i < n_requested; i++) {
        rs.want_out[out_val[i]] = false;
        rs.user_out[out_val[i]] = NULL;
    }
    if (out_val != out_stack) free(out_val);
    if (fresh != fresh_stack) free(fresh);
    return st;
}

void native_session_set_profiler(native_session *s, og_profiler *p) { s->prof = p; }
void native_session_set_paged_kv(native_session *s, const struct paged_kv *kv) { s->paged_kv = kv; }

void native_session_set_row_forms(native_session *s, const uint8_t *forms, int64_t n) {
    s->row_forms = forms;
    s->n_row_forms = forms ? n : 0;
}

void native_session_last_stats(const native_session *s, backend_run_stats *out) {
    memset(out, 0, sizeof *out);
    out->used_plan = s->last_stats_used_plan;
    out->arena_bytes = s->last_stats_arena;
    out->heap_allocations = s->last_stats_heap;
    out->peak_bytes = s->mem_peak;
    out->plan_bytes = s->plan_bytes;
    out->plan_bytes_peak = s->plan_bytes_peak;
    out->plans = (size_t)s->n_plans;
    out->plans_evicted = s->plans_evicted;
    out->plan_budget = s->plan_budget;
    out->shared_reuses = s->last_stats_shared;
}
