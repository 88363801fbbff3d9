/* Preparing a loaded graph for the native executor, and freeing it. */
#include "backends/native/native_session.h"

#include "backends/native/attr_schemas.h"
#include "backends/native/fuse.h"
#include "backends/native/plan.h"
#include "backends/native/rows_plan.h"
#include "base/mapped_file.h"
#include "base/pack_cache.h"
#include "onnx/loader.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Every node needs attributes its schema allows (attr_check.c) and a kernel for its
 * (domain, op, opset); say precisely which is missing. */
static og_status *resolve_kernels(exec_graph *eg) {
    const graph *g = eg->graph;
    for (int i = 0; i < g->n_nodes; i++) {
        const graph_node *n = &g->nodes[i];
        bool known = false;
        char lab[256];
        if (n->opset == 0)
            return og_errorf(OG_ERR_INVALID_MODEL,
                             "%s: node %s: domain '%s' is not imported by the model's "
                             "opset_import", eg->label, graph_node_label(n, lab, sizeof lab),
                             n->domain[0] ? n->domain : "ai.onnx");
        og_status *st = attr_check_node(n, eg->label); /* as onnxruntime, before kernels */
        if (st) return st;
        eg->kernels[i] = kernel_find(n->domain, n->op_type, n->opset, &known);
        if (eg->kernels[i]) continue;
        if (known)
            return og_errorf(OG_ERR_UNSUPPORTED,
                             "%s: node %s: op %s%s%s is implemented, but not for opset %lld",
                             eg->label, graph_node_label(n, lab, sizeof lab),
                             n->domain[0] ? n->domain : "", n->domain[0] ? "." : "",
                             n->op_type, (long long)n->opset);
        return og_errorf(OG_ERR_UNSUPPORTED, "%s: node %s: op %s%s%s is not implemented",
                         eg->label, graph_node_label(n, lab, sizeof lab),
                         n->domain[0] ? n->domain : "", n->domain[0] ? "." : "", n->op_type);
    }
    return NULL;
}

/* Binds each outer-scope reference to the nearest enclosing graph that defines the name
 * (lexical scoping); at run time the value is read from that graph's current binding. */
static og_status *resolve_outer(exec_graph *eg) {
    const graph *g = eg->graph;
    int n = 0;
    for (int v = 0; v < g->n_values; v++) n += g->values[v].from_outer_scope;
    eg->outer = calloc((size_t)n + 1, sizeof *eg->outer);
    eg->outer_from = calloc((size_t)n + 1, sizeof *eg->outer_from);
    eg->outer_index = calloc((size_t)n + 1, sizeof *eg->outer_index);
    if (!eg->outer || !eg->outer_from || !eg->outer_index) return og_oom();
    for (int v = 0; v < g->n_values; v++) {
        if (!g->values[v].from_outer_scope) continue;
        exec_graph *p = eg->parent;
        int idx = -1;
        for (; p; p = p->parent)
            if ((idx = graph_find_value(p->graph, g->values[v].name)) >= 0) break;
        if (!p)
            return og_errorf(OG_ERR_INVALID_MODEL, "%s: value '%s' is not defined here or in "
                             "an enclosing graph", eg->label, g->values[v].name);
        eg->outer[eg->n_outer] = v;
        eg->outer_from[eg->n_outer] = p;
        eg->outer_index[eg->n_outer] = idx;
        eg->n_outer++;
    }
    return NULL;
}

static og_status *exec_graph_create(native_session *s, const graph *g, exec_graph *parent,
                                    const char *label, exec_graph **out);

/* ---- preparation (kernel_def.prepare) ------------------------------------------------ */

typedef struct prep_run {
    exec_graph *eg;
    int *items;                  /* node indices with a prepare, largest constant inputs first */
    int n;
    atomic_int next;
    og_status **status;          /* [n] */
    int *readers;                /* [n_values] reads of each value in this graph */
    atomic_int *consumed;        /* [n_values] readers that consumed it so far */
    atomic_size_t released, bytes;
    atomic_int prepared;
    pack_cache *cache;           /* lent to the kernels, or NULL */
    atomic_bool *deferred;       /* [n_nodes] wrote its state to the cache: prepare again */
} prep_run;

/* Names node ni and its constant inputs within the model's files (which the pack cache's
 * key identifies): the graph, the node's place, and each input's name, type, shape and
 * first and last bytes. */
static uint64_t cache_id(const exec_graph *eg, int ni, const tensor *const *ins) {
    const graph_node *n = &eg->graph->nodes[ni];
    uint64_t h = pack_cache_hash(PACK_HASH_SEED, eg->where[ni], strlen(eg->where[ni]) + 1);
    h = pack_cache_hash(h, &ni, sizeof ni);
    for (int k = 0; k < n->n_inputs; k++) {
        const tensor *t = ins[k];
        if (!t) continue;
        const char *name = eg->graph->values[n->inputs[k]].name;
        size_t edge = t->nbytes < 64 ? t->nbytes : 64;
        h = pack_cache_hash(h, &k, sizeof k);
        if (name) h = pack_cache_hash(h, name, strlen(name) + 1);
        h = pack_cache_hash(h, &t->dtype, sizeof t->dtype);
        h = pack_cache_hash(h, t->dims, sizeof *t->dims * (size_t)t->rank);
        h = pack_cache_hash(h, &t->nbytes, sizeof t->nbytes);
        h = pack_cache_hash(h, t->data, edge);
        h = pack_cache_hash(h, (const uint8_t *)t->data + t->nbytes - edge, edge);
    }
    return h;
}

static og_status *prepare_node(prep_run *pr, int ni) {
    exec_graph *eg = pr->eg;
    const graph *g = eg->graph;
    const graph_node *n = &g->nodes[ni];
    const kernel_def *def = eg->kernels[ni];
    const tensor **ins = calloc((size_t)n->n_inputs + 1, sizeof *ins);
    if (!ins) return og_oom();
    unsigned constant = 0;
    for (int k = 0; k < n->n_inputs; k++) {
        int v = n->inputs[k];
        if (v < 0 || !g->values[v].initializer || g->values[v].from_outer_scope) continue;
        ins[k] = g->values[v].initializer;
        if (k < 32) constant |= KERNEL_INPUT(k);
    }
    kernel_prep kp = {.node = n, .opset = n->opset, .n_inputs = n->n_inputs, .inputs = ins,
                      .where = eg->where[ni], .cache = pr->cache,
                      .cache_id = pr->cache ? cache_id(eg, ni, ins) : 0};
    og_status *st = def->prepare(&kp);
    free(ins);
    if (st) {
        if (kp.state) def->release(kp.state);
        return og_oom_context(st, "%s: preparing", eg->where[ni]);
    }
    if (kp.deferred && !kp.state) atomic_store(&pr->deferred[ni], true);
    if (!kp.state) return NULL;
    eg->prepared[ni] = kp.state;
    eg->prep_const[ni] = constant;
    atomic_fetch_add(&pr->bytes, kp.bytes);
    atomic_fetch_add(&pr->prepared, 1);
    unsigned used = kp.consumed & constant;
    for (int k = 0; used && k < n->n_inputs && k < 32; k++) {
        if (!(used & KERNEL_INPUT(k))) continue;
        int v = n->inputs[k];
        if (atomic_fetch_add(&pr->consumed[v], 1) + 1 == pr->readers[v]) {
            const tensor *t = g->values[v].initializer;
            atomic_fetch_add(&pr->released, model_release_pages(eg->session->model, t->data,
                                                                t->nbytes));
        }
    }
    return NULL;
}

/* One call per thread: each takes the next node until none is left. */
static void prepare_items(void *arg, int64_t t0, int64_t t1) {
    prep_run *pr = arg;
    (void)t0, (void)t1;
    for (int i; (i = atomic_fetch_add(&pr->next, 1)) < pr->n;)
        pr->status[i] = prepare_node(pr, pr->items[i]);
}

typedef struct weighed {
    size_t bytes;
    int node;
} weighed;

static int heaviest_first(const void *a, const void *b) {
    const weighed *x = a, *y = b;
    return x->bytes < y->bytes ? 1 : x->bytes > y->bytes ? -1 : x->node - y->node;
}

/* The pack cache of the model's files (base/pack_cache.h) when its prepared states are
 * worth one; none for a model given as bytes (nothing names its graph). */
static void open_pack_cache(native_session *s, size_t bytes) {
    const model *m = s->model;
    if (!m->path || !strcmp(m->path, "<memory>") || m->n_mappings <= 0) return;
    const char **paths = calloc((size_t)m->n_mappings + 1, sizeof *paths);
    if (!paths) return;
    int n = 0;
    paths[n++] = m->path;
    for (int i = 0; i < m->n_mappings; i++)
        if (m->mappings[i].path && strcmp(m->mappings[i].path, m->path)) paths[n++] = m->mappings[i].path;
    s->pack_cache = pack_cache_open(paths, n, KERNEL_PREP_CACHE_TAG, bytes, s->pool);
    free(paths);
}

static og_status *prepare_graph(exec_graph *eg) {
    const graph *g = eg->graph;
    native_session *s = eg->session;
    size_t nn = (size_t)g->n_nodes + 1, nv = (size_t)g->n_values + 1;
    eg->prepared = calloc(nn, sizeof *eg->prepared);
    eg->prep_const = calloc(nn, sizeof *eg->prep_const);
    if (!eg->prepared || !eg->prep_const) return og_oom();
    struct timespec t0, t1, c0, c1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &c0);
    prep_run pr = {.eg = eg};
    pr.items = calloc(nn, sizeof *pr.items);
    weighed *w = calloc(nn, sizeof *w);
    for (int i = 0; pr.items && w && i < g->n_nodes; i++) {
        if (!eg->kernels[i]->prepare) continue;
        const graph_node *n = &g->nodes[i];
        w[pr.n].node = i;
        for (int k = 0; k < n->n_inputs; k++) {
            int v = n->inputs[k];
            if (v >= 0 && g->values[v].initializer) w[pr.n].bytes += g->values[v].initializer->nbytes;
        }
        pr.n++;
    }
    og_status *st = NULL;
    if (!pr.items || !w) st = og_oom();
    if (!st && pr.n > 0) {
        pr.status = calloc((size_t)pr.n, sizeof *pr.status);
        pr.readers = calloc(nv, sizeof *pr.readers);
        pr.consumed = calloc(nv, sizeof *pr.consumed);
        if (!pr.status || !pr.readers || !pr.consumed) st = og_oom();
    }
    if (!st && pr.n > 0) {
        for (int i = 0; i < g->n_nodes; i++) {
            const graph_node *n = &g->nodes[i];
            for (int k = 0; k < n->n_inputs; k++)
                if (n->inputs[k] >= 0) pr.readers[n->inputs[k]]++;
        }
        for (int k = 0; k < eg->imp_start[g->n_nodes]; k++) pr.readers[eg->imp_vals[k]]++;
        for (int k = 0; k < g->n_outputs; k++) pr.readers[g->outputs[k]]++;
        for (size_t v = 0; v < nv; v++) atomic_init(&pr.consumed[v], 0);
        atomic_init(&pr.next, 0);
        atomic_init(&pr.released, 0);
        atomic_init(&pr.bytes, 0);
        atomic_init(&pr.prepared, 0);
        /* largest first, so that the last ones to finish are short */
        qsort(w, (size_t)pr.n, sizeof *w, heaviest_first);
        size_t total = 0;
        for (int i = 0; i < pr.n; i++) pr.items[i] = w[i].node, total += w[i].bytes;
        if (!eg->parent) open_pack_cache(s, total);
        pr.cache = s->pack_cache;
        if (pr.cache && !(pr.deferred = calloc(nn, sizeof *pr.deferred))) pr.cache = NULL;
        for (size_t i = 0; pr.deferred && i < nn; i++) atomic_init(&pr.deferred[i], false);
        int threads = threadpool_size(s->pool);
        threadpool_parallel_for(s->pool, threads < pr.n ? threads : pr.n, 1, prepare_items, &pr);
        /* nodes that wrote their states to a new cache file: again, from the file */
        int again = 0;
        for (int i = 0; pr.deferred && i < pr.n; i++)
            if (atomic_load(&pr.deferred[pr.items[i]])) pr.items[again++] = pr.items[i];
        if (again > 0) {
            pack_cache_finish(pr.cache);
            for (int i = 0; i < pr.n; i++) {
                if (pr.status[i] && !st) st = pr.status[i];
                else og_status_free(pr.status[i]);
                pr.status[i] = NULL;
            }
            pr.n = st ? 0 : again;
            atomic_store(&pr.next, 0);
            threadpool_parallel_for(s->pool, threads < pr.n ? threads : pr.n, 1, prepare_items, &pr);
        }
        s->pack_cache_outcome = pack_cache_outcome(s->pack_cache);
        for (int i = 0; i < pr.n; i++) {
            if (pr.status[i] && !st) st = pr.status[i];
            else og_status_free(pr.status[i]);
        }
        s->prepared_bytes += atomic_load(&pr.bytes);
        s->released_bytes += atomic_load(&pr.released);
        s->prepared_nodes += atomic_load(&pr.prepared);
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &c1);
    s->prepare_s += (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) * 1e-9;
    s->prepare_cpu_s += (double)(c1.tv_sec - c0.tv_sec) + (double)(c1.tv_nsec - c0.tv_nsec) * 1e-9;
    free(pr.items);
    free(w);
    free(pr.status);
    free(pr.readers);
    free(pr.consumed);
    free(pr.deferred);
    return st;
}

/* Prepares every graph attribute of every node (If branches, Loop and Scan bodies). */
static og_status *create_subgraphs(exec_graph *eg) {
    const graph *g = eg->graph;
    int total = 0;
    eg->sub_start = calloc((size_t)g->n_nodes + 1, sizeof *eg->sub_start);
    if (!eg->sub_start) return og_oom();
    for (int i = 0; i < g->n_nodes; i++) {
        eg->sub_start[i] = total;
        const graph_node *n = &g->nodes[i];
        for (int a = 0; a < n->n_attrs; a++)
            total += (n->attrs[a].g != NULL) + (n->attrs[a].graphs ? (int)n->attrs[a].n : 0);
    }
    eg->sub_start[g->n_nodes] = total;
    eg->subs = calloc((size_t)total + 1, sizeof *eg->subs);
    if (!eg->subs) return og_oom();
    int k = 0;
    for (int i = 0; i < g->n_nodes; i++) {
        const graph_node *n = &g->nodes[i];
        for (int a = 0; a < n->n_attrs; a++) {
            const graph_attr *at = &n->attrs[a];
            int count = (at->g != NULL) + (at->graphs ? (int)at->n : 0);
            for (int j = 0; j < count; j++, k++) {
                const graph *sg = at->g ? at->g : at->graphs[j];
                char lab[256];
                char *sub_label = NULL;
                size_t len = strlen(eg->label) + strlen(at->name) + 300;
                if (!(sub_label = malloc(len))) return og_oom();
                snprintf(sub_label, len, "%s: node %s: %s", eg->label,
                         graph_node_label(n, lab, sizeof lab), at->name);
                eg->subs[k].graph = sg;
                og_status *st = sg ? exec_graph_create(eg->session, sg, eg, sub_label,
                                                       &eg->subs[k].exec)
                                   : NULL;
                free(sub_label);
                if (st) return st;
            }
        }
    }
    return NULL;
}

static og_status *exec_graph_create(native_session *s, const graph *g, exec_graph *parent,
                                    const char *label, exec_graph **out) {
    exec_graph *eg = calloc(1, sizeof *eg);
    if (!eg) return og_oom();
    eg->session = s;
    eg->graph = g;
    eg->parent = parent;
    size_t nn = (size_t)g->n_nodes + 1, nv = (size_t)g->n_values + 1;
    eg->label = strdup(label);
    eg->order = calloc(nn, sizeof *eg->order);
    eg->kernels = calloc(nn, sizeof *eg->kernels);
    eg->where = calloc(nn, sizeof *eg->where);
    eg->last_use = calloc(nv, sizeof *eg->last_use);
    eg->slots = calloc(nv, sizeof *eg->slots);
    eg->cur = calloc(nv, sizeof *eg->cur);
    eg->recorded = calloc(nv, sizeof *eg->recorded);
    eg->alias = calloc(nv, sizeof *eg->alias);
    eg->user_out = calloc(nv, sizeof *eg->user_out);
    eg->want_out = calloc(nv, sizeof *eg->want_out);
    og_status *st = NULL;
    if (!eg->label || !eg->order || !eg->kernels || !eg->where || !eg->last_use ||
        !eg->slots || !eg->cur || !eg->recorded || !eg->alias || !eg->user_out || !eg->want_out) {
        st = og_oom();
        goto fail;
    }
    if ((st = graph_topo_order(g, eg->label, eg->order))) goto fail;
    if ((st = resolve_kernels(eg))) goto fail;
    for (int i = 0; i < g->n_nodes; i++) {
        char lab[256];
        size_t len = strlen(eg->label) + 300;
        if (!(eg->where[i] = malloc(len))) {
            st = og_oom();
            goto fail;
        }
        snprintf(eg->where[i], len, "%s: node %s", eg->label,
                 graph_node_label(&g->nodes[i], lab, sizeof lab));
    }
    if ((st = graph_implicit_inputs(g, &eg->imp_start, &eg->imp_vals))) goto fail;
    plan_compute_last_use(g, eg->order, eg->imp_start, eg->imp_vals, eg->last_use);
    if ((st = resolve_outer(eg))) goto fail;
    size_t n_bound = (size_t)g->n_inputs + (size_t)eg->n_outer;
    eg->bound = calloc(n_bound + 1, sizeof *eg->bound);
    eg->key = calloc(PLAN_KEY_MAX(n_bound) + 4, sizeof *eg->key); /* + a row selection */
    if (!eg->bound || !eg->key) {
        st = og_oom();
        goto fail;
    }
    if ((st = prepare_graph(eg))) goto fail;
    if ((st = create_subgraphs(eg))) goto fail;
    *out = eg;
    return NULL;
fail:
    exec_graph_free(eg);
    *out = NULL;
    return st;
}

void exec_graph_release(exec_graph *eg) {
    if (!eg || !eg->slots) return;
    native_session *s = eg->session;
    for (int v = 0; v < eg->graph->n_values; v++) {
        tensor *t = &eg->slots[v];
        if (t->owns_data) s->mem_live -= t->nbytes;
        tensor_release(t);
        eg->cur[v] = NULL;
    }
}

void native_plan_free(native_session *s, exec_plan *p) {
    if (!p) return;
    if (p->arena) {
        s->mem_live -= p->arena_size;
        s->plan_bytes -= p->arena_size;
    }
    s->plan_bytes -= p->table_bytes;
    s->n_plans--;
    plan_free(p);
}

static void plan_bytes_add(native_session *s, size_t n) {
    s->plan_bytes += n;
    if (s->plan_bytes > s->plan_bytes_peak) s->plan_bytes_peak = s->plan_bytes;
}

static size_t plan_held(const exec_plan *p) {
    return p->table_bytes + (p->arena ? p->arena_size : 0);
}

void native_plan_store(exec_graph *eg, exec_plan *p) {
    native_session *s = eg->session;
    if (eg->n_plans == SESSION_MAX_PLANS) { /* evict the least recently used */
        int lru = 0;
        for (int i = 1; i < eg->n_plans; i++)
            if (eg->plans[i]->last_used < eg->plans[lru]->last_used) lru = i;
        native_plan_free(s, eg->plans[lru]);
        eg->plans[lru] = eg->plans[--eg->n_plans];
    }
    eg->plans[eg->n_plans++] = p;
    s->n_plans++;
    plan_bytes_add(s, p->table_bytes);
}

/* The plan to evict first in eg and its subgraphs, other than keep: one larger than the
 * budget alone, else the least recently used. */
static void plan_victim(exec_graph *eg, const exec_plan *keep, size_t budget, exec_graph **veg,
                        int *vi) {
    for (int i = 0; i < eg->n_plans; i++) {
        const exec_plan *p = eg->plans[i];
        if (p == keep) continue;
        const exec_plan *v = *veg ? (*veg)->plans[*vi] : NULL;
        bool big = plan_held(p) > budget, vbig = v && plan_held(v) > budget;
        if (!v || (big && !vbig) || (big == vbig && p->last_used < v->last_used)) {
            *veg = eg;
            *vi = i;
        }
    }
    for (int i = 0; eg->subs && i < eg->sub_start[eg->graph->n_nodes]; i++)
        plan_victim(eg->subs[i].exec, keep, budget, veg, vi);
}

/* Evicts plans other than keep until the cache and `extra` more bytes fit the budget, or
 * nothing else is left. */
static void plans_fit(native_session *s, const exec_plan *keep, size_t extra) {
    while (s->plan_bytes + extra > s->plan_budget) {
        exec_graph *veg = NULL;
        int vi = 0;
        plan_victim(s->main, keep, s->plan_budget, &veg, &vi);
        if (!veg) return;
        native_plan_free(s, veg->plans[vi]);
        veg->plans[vi] = veg->plans[--veg->n_plans];
        s->plans_evicted++;
    }
}

void native_plans_trim(native_session *s) { plans_fit(s, NULL, 0); }

og_status *native_plan_arena(exec_graph *eg, exec_plan *p) {
    if (p->arena || !p->arena_size) return NULL;
    native_session *s = eg->session;
    if (!eg->parent) plans_fit(s, p, p->arena_size);
    if (posix_memalign(&p->arena, 64, p->arena_size) != 0) {
        p->arena = NULL;
        return og_errorf(OG_ERR_OUT_OF_MEMORY, "%s: out of memory for the %zu-byte arena of "
                         "this input shape", eg->label, p->arena_size);
    }
    s->mem_live += p->arena_size;
    if (s->mem_live > s->mem_peak) s->mem_peak = s->mem_live;
    plan_bytes_add(s, p->arena_size);
    return NULL;
}

void exec_graph_free(exec_graph *eg) {
    if (!eg) return;
    for (int i = 0; eg->subs && i < eg->sub_start[eg->graph->n_nodes]; i++)
        exec_graph_free(eg->subs[i].exec);
    exec_graph_release(eg);
    for (int i = 0; i < eg->n_plans; i++) native_plan_free(eg->session, eg->plans[i]);
    for (int i = 0; eg->prepared && i < eg->graph->n_nodes; i++)
        if (eg->prepared[i]) eg->kernels[i]->release(eg->prepared[i]);
    free(eg->prepared);
    free(eg->prep_const);
    for (int i = 0; eg->where && i < eg->graph->n_nodes; i++) free(eg->where[i]);
    free(eg->where);
    free(eg->label);
    free(eg->order);
    free(eg->kernels);
    free(eg->imp_start);
    free(eg->imp_vals);
    free(eg->last_use);
    free(eg->outer);
    free(eg->outer_from);
    free(eg->outer_index);
    free(eg->sub_start);
    free(eg->subs);
    free(eg->slots);
    free(eg->cur);
    free(eg->recorded);
    free(eg->alias);
    free(eg->user_out);
    free(eg->want_out);
    rows_plan_free(eg);
    free(eg->bound);
    free(eg->key);
    free(eg->temp);
    free(eg);
}

og_status *native_session_create(const model *m, const og_session_options *options,
                                 native_session **out) {
    native_session *s = calloc(1, sizeof *s);
    if (!s) return og_oom();
    s->model = m;
    s->graph = m->graph;
    const char *slash = strrchr(m->path, '/');
    s->label = strdup(slash ? slash + 1 : m->path);
    const graph *g = s->graph;
    og_status *st = NULL;
    if (!s->label) {
        st = og_oom();
        goto fail;
    }
    s->plan_budget = options->plan_memory;
    if ((st = fuse_graph(g, &s->fused, &s->fused_nodes))) goto fail;
    if (s->fused) s->graph = g = s->fused;
    if ((st = threadpool_create(options->num_threads, &s->pool))) goto fail;
    if ((st = exec_graph_create(s, g, NULL, s->label, &s->main))) goto fail;
    *out = s;
    return NULL;
fail:
    native_session_close(s);
    return st;
}

void native_session_close(native_session *s) {
    if (!s) return;
    exec_graph_free(s->main); /* kernels' prepared states first: they may use the model */
    pack_cache_close(s->pack_cache); /* and the cache file */
    fuse_graph_free(s->fused);
    for (int i = 0; i < s->scratch.n; i++) free(s->scratch.chunks[i].base);
    free(s->scratch.chunks);
    free(s->shared.buf);
    threadpool_free(s->pool);
    free(s->label);
    free(s);
}
