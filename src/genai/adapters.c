/* og_adapters: loading, checking and activating LoRA adapters (adapters.h). An adapter is
 * checked against the model when it is loaded, not when a generator first runs it: each
 * parameter must name a graph input with a default (GEN_SRC_PARAM) of the same dtype and
 * of a shape the input admits, so that a file made for another base model is refused by
 * name before it can reach a kernel. */
#include "genai/adapters.h"

#include "genai/generator.h"
#include "runtime/og_session.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

og_status *og_adapters_create(og_model *m, og_adapters **out) {
    if (!m || !out) return og_errorf(OG_ERR_INVALID_ARGUMENT, "og_adapters_create: NULL argument");
    og_adapters *a = calloc(1, sizeof *a);
    if (!a) return og_oom();
    a->model = m;
    atomic_init(&a->refs, 1);
    *out = a;
    return NULL;
}

static void adapter_free(gen_adapter *a) {
    if (!a) return;
    strmap_free(&a->by_name);
    gen_adapter_file_free(&a->file);
    free(a->name);
    free(a);
}

static void set_unref(og_adapters *set) {
    if (atomic_fetch_sub(&set->refs, 1) > 1) return;
    for (int i = 0; i < set->n; i++) adapter_free(set->items[i]);
    free(set->items);
    free(set);
}

void og_adapters_free(og_adapters *adapters) {
    if (adapters) set_unref(adapters);
}

static int find(const og_adapters *set, const char *name) {
    for (int i = 0; i < set->n; i++)
        if (!strcmp(set->items[i]->name, name)) return i;
    return -1;
}

gen_adapter *gen_adapters_find(const og_adapters *set, const char *name) {
    int i = set && name ? find(set, name) : -1;
    return i >= 0 ? set->items[i] : NULL;
}

/* The names of the loaded adapters, for messages. */
static const char *loaded_names(const og_adapters *set, char *buf, size_t size) {
    size_t at = 0;
    buf[0] = 0;
    for (int i = 0; i < set->n && at + 1 < size; i++) {
        int w = snprintf(buf + at, size - at, "%s'%s'", i ? ", " : "", set->items[i]->name);
        if (w < 0) break;
        at += (size_t)w;
    }
    return set->n ? buf : "none";
}

/* Checks parameter k of `a` against the model's input of that name. */
static og_status *check_param(const og_model *m, const gen_adapter *a, int k) {
    const char *name = a->file.names[k];
    const og_tensor *p = &a->file.params[k];
    char s1[128], s2[128];
    for (int si = 0; si < m->n_stages; si++) {
        const gen_stage *sg = &m->stages[si];
        for (int i = 0; i < sg->n_feeds; i++) {
            if (sg->feeds[i].src != GEN_SRC_PARAM || strcmp(sg->feeds[i].name, name)) continue;
            og_value_info v;
            OG_TRY(og_session_input_info(sg->s, (size_t)i, &v));
            if (p->dtype != v.dtype)
                return og_errorf(OG_ERR_INVALID_ARGUMENT, "%s: parameter '%s' is %s, the "
                                 "model's input is %s (an adapter for another base model?)",
                                 a->file.file.path, name, og_dtype_name(p->dtype),
                                 og_dtype_name(v.dtype));
            bool ok = v.rank < 0 || v.rank == p->rank;
            for (int d = 0; ok && v.rank > 0 && d < v.rank; d++)
                ok = v.dims[d] < 0 || v.dims[d] == p->dims[d];
            if (!ok)
                return og_errorf(OG_ERR_INVALID_ARGUMENT, "%s: parameter '%s' has shape %s, the "
                                 "model's input %s (-1: any) (an adapter for another base "
                                 "model?)", a->file.file.path, name,
                                 shape_str(p->dims, p->rank, s1, sizeof s1),
                                 shape_str(v.dims, v.rank, s2, sizeof s2));
            return NULL;
        }
    }
    return og_errorf(OG_ERR_INVALID_ARGUMENT, "%s: parameter '%s' is not an adapter input of the "
                     "model %s (its graphs take no input of that name with a default: an "
                     "adapter for another base model, or a package made without LoRA inputs)",
                     a->file.file.path, name, m->dir);
}

og_status *og_adapters_load(og_adapters *set, const char *path, const char *name) {
    if (!set || !path || !name)
        return og_errorf(OG_ERR_INVALID_ARGUMENT, "og_adapters_load: NULL argument");
    if (!name[0]) return og_errorf(OG_ERR_INVALID_ARGUMENT, "og_adapters_load: empty adapter name");
    if (find(set, name) >= 0)
        return og_errorf(OG_ERR_INVALID_ARGUMENT, "adapter '%s' is already loaded (unload it "
                         "first)", name);
    if (set->n == set->cap) {
        int cap = set->cap ? 2 * set->cap : 4;
        gen_adapter **items = realloc(set->items, (size_t)cap * sizeof *items);
        if (!items) return og_oom();
        set->items = items;
        set->cap = cap;
    }
    gen_adapter *a = calloc(1, sizeof *a);
    if (!a || !(a->name = strdup(name))) {
        free(a);
        return og_oom();
    }
    strmap_init(&a->by_name);
    og_status *st = gen_adapter_file_read(path, &a->file);
    for (int k = 0; !st && k < a->file.n_params; k++) {
        st = check_param(set->model, a, k);
        if (!st && !strmap_put(&a->by_name, a->file.names[k], k)) st = og_oom();
    }
    if (st) {
        adapter_free(a);
        return strcmp(name, path) ? og_status_wrap(st, "adapter '%s'", name) : st;
    }
    set->items[set->n++] = a;
    return NULL;
}

og_status *og_adapters_unload(og_adapters *set, const char *name) {
    if (!set || !name) return og_errorf(OG_ERR_INVALID_ARGUMENT, "og_adapters_unload: NULL argument");
    int i = find(set, name);
    char buf[256];
    if (i < 0)
        return og_errorf(OG_ERR_NOT_FOUND, "adapter '%s' is not loaded (loaded: %s)", name,
                         loaded_names(set, buf, sizeof buf));
    int users = atomic_load(&set->items[i]->users);
    if (users)
        return og_errorf(OG_ERR_INVALID_ARGUMENT, "adapter '%s' is active in %d generator(s): "
                         "destroy them before unloading it", name, users);
    adapter_free(set->items[i]);
    memmove(&set->items[i], &set->items[i + 1], (size_t)(set->n - i - 1) * sizeof *set->items);
    set->n--;
    return NULL;
}

const og_tensor *gen_adapters_param(gen_adapter *const *active, int n, const char *name) {
    for (int i = 0; i < n; i++) {
        int k = strmap_get(&active[i]->by_name, name, -1);
        if (k >= 0) return &active[i]->file.params[k];
    }
    return NULL;
}

void gen_adapter_release(og_adapters *set, gen_adapter *a) {
    atomic_fetch_sub(&a->users, 1);
    set_unref(set);
}

og_status *og_generator_set_active_adapter(og_generator *g, og_adapters *set, const char *name) {
    if (!g || !set || !name)
        return og_errorf(OG_ERR_INVALID_ARGUMENT, "og_generator_set_active_adapter: NULL argument");
    if (set->model != g->m)
        return og_errorf(OG_ERR_INVALID_ARGUMENT, "adapter '%s': its container was made for "
                         "model %s, the generator runs %s", name, set->model->dir, g->m->dir);
    if (g->adapters && g->adapters != set)
        return og_errorf(OG_ERR_INVALID_ARGUMENT, "adapter '%s': a generator takes adapters "
                         "from one og_adapters container (as onnxruntime-genai's)", name);
    int i = find(set, name);
    char buf[256];
    if (i < 0)
        return og_errorf(OG_ERR_NOT_FOUND, "adapter '%s' is not loaded (loaded: %s)", name,
                         loaded_names(set, buf, sizeof buf));
    gen_adapter *a = set->items[i];
    for (int k = 0; k < g->n_active; k++) {
        if (g->active[k] == a) return NULL; /* already active */
        for (int p = 0; p < a->file.n_params; p++)
            if (strmap_get(&g->active[k]->by_name, a->file.names[p], -1) >= 0)
                return og_errorf(OG_ERR_INVALID_ARGUMENT, "adapter '%s': parameter '%s' is "
                                 "also set by adapter '%s', already active in the generator",
                                 name, a->file.names[p], g->active[k]->name);
    }
    if (g->n_active == GEN_MAX_ACTIVE_ADAPTERS)
        return og_errorf(OG_ERR_UNSUPPORTED, "adapter '%s': at most %d adapters can be active "
                         "in one generator", name, GEN_MAX_ACTIVE_ADAPTERS);
    g->active[g->n_active++] = a;
    g->adapters = set;
    atomic_fetch_add(&a->users, 1);
    atomic_fetch_add(&set->refs, 1); /* the model's next run computes with it */
    return NULL;
}
