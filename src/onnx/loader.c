/* ModelProto -> graph IR. Each message is read in two passes where arrays are needed:
 * the first counts repeated fields so arrays can be sized exactly in the model arena,
 * the second fills them. Constant nodes become initializers of their output value and
 * are dropped from the node list, so the executor never runs them. */
#include "onnx/loader.h"

#include "base/mapped_file.h"
#include "onnx/tensor_proto.h"
#include "onnx/wire.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { MAX_GRAPH_DEPTH = 64, MIN_IR_VERSION = 3, MAX_IR_VERSION = 14 };

typedef struct loader {
    model *m;
    const char *label;
    graph **graphs; /* every graph made, so their name maps can be freed on failure */
    int n_graphs, cap_graphs;
} loader;

/* A growable heap array of ints used while a graph is being built. */
typedef struct ivec {
    int *v;
    int n, cap;
} ivec;

static bool ivec_push(ivec *a, int x) {
    if (a->n == a->cap) {
        int cap = a->cap ? a->cap * 2 : 16;
        int *v = realloc(a->v, sizeof *v * (size_t)cap);
        if (!v) return false;
        a->v = v;
        a->cap = cap;
    }
    a->v[a->n++] = x;
    return true;
}

typedef struct gbuild {
    loader *L;
    graph *g;
    graph_value *vals; /* heap while building, copied to the arena at the end */
    int n_vals, cap_vals;
    ivec inputs, outputs, inits;
    const char *what; /* "graph 'main'" for messages */
} gbuild;

static og_status *parse_graph(loader *L, const wire_reader *parent, const uint8_t *data,
                              size_t len, graph *outer, int depth, const char *where,
                              graph **out);

static const char *str_of(loader *L, const wire_field *f) {
    return arena_strndup(&L->m->arena, (const char *)f->data, f->len);
}

static const char *norm_domain(const char *d) {
    return strcmp(d, "ai.onnx") == 0 ? "" : d;
}

static int value_get_or_add(gbuild *b, const char *name) {
    int idx = strmap_get(&b->g->by_name, name, -1);
    if (idx >= 0) return idx;
    if (b->n_vals == b->cap_vals) {
        int cap = b->cap_vals ? b->cap_vals * 2 : 32;
        graph_value *v = realloc(b->vals, sizeof *v * (size_t)cap);
        if (!v) return -1;
        b->vals = v;
        b->cap_vals = cap;
    }
    graph_value *v = &b->vals[b->n_vals];
    memset(v, 0, sizeof *v);
    v->name = name;
    v->dtype = OG_UNDEFINED;
    v->rank = -1;
    v->producer = -1;
    if (!strmap_put(&b->g->by_name, name, b->n_vals)) return -1;
    return b->n_vals++;
}

/* --- ValueInfoProto / TypeProto ---------------------------------------------------- */

typedef struct vinfo {
    const char *name;
    bool has_tensor_type, has_shape;
    int64_t elem_type;
    int rank;
    int64_t dims[OG_MAX_RANK];
    const char *dim_names[OG_MAX_RANK];
} vinfo;

static og_status *parse_dim(loader *L, const wire_reader *r, const wire_field *df, vinfo *vi,
                            const char *ctx) {
    wire_reader dr = wire_sub(r, df->data, df->len, "TensorShapeProto.Dimension");
    int64_t val = -1;
    const char *param = NULL;
    wire_field f;
    bool has;
    for (;;) {
        OG_TRY(wire_next(&dr, &f, &has));
        if (!has) break;
        if (f.number == 1) {
            OG_TRY(wire_expect(&dr, &f, WIRE_VARINT, "dim_value"));
            val = (int64_t)f.v < 0 ? -1 : (int64_t)f.v;
            param = NULL;
        } else if (f.number == 2) {
            OG_TRY(wire_expect(&dr, &f, WIRE_LEN, "dim_param"));
            param = str_of(L, &f);
            if (!param) return og_oom();
            val = -1;
        }
    }
    if (vi->rank >= OG_MAX_RANK)
        return og_errorf(OG_ERR_UNSUPPORTED, "%s: %s: rank exceeds the supported maximum %d",
                         L->label, ctx, OG_MAX_RANK);
    vi->dims[vi->rank] = val;
    vi->dim_names[vi->rank] = param && param[0] ? param : NULL;
    vi->rank++;
    return NULL;
}

static og_status *parse_tensor_type(loader *L, const wire_reader *r, const wire_field *tf,
                                    vinfo *vi, const char *ctx) {
    wire_reader tr = wire_sub(r, tf->data, tf->len, "TypeProto.Tensor");
    wire_field f;
    bool has;
    vi->has_tensor_type = true;
    for (;;) {
        OG_TRY(wire_next(&tr, &f, &has));
        if (!has) break;
        if (f.number == 1) {
            OG_TRY(wire_expect(&tr, &f, WIRE_VARINT, "elem_type"));
            vi->elem_type = (int64_t)f.v;
        } else if (f.number == 2) {
            OG_TRY(wire_expect(&tr, &f, WIRE_LEN, "shape"));
            vi->has_shape = true;
            vi->rank = 0;
            wire_reader sr = wire_sub(&tr, f.data, f.len, "TensorShapeProto");
            wire_field sf;
            for (;;) {
                OG_TRY(wire_next(&sr, &sf, &has));
                if (!has) break;
                if (sf.number == 1) {
                    OG_TRY(wire_expect(&sr, &sf, WIRE_LEN, "dim"));
                    OG_TRY(parse_dim(L, &sr, &sf, vi, ctx));
                }
            }
            has = true;
        }
    }
    return NULL;
}

static og_status *parse_value_info(loader *L, const wire_reader *r, const wire_field *vf,
                                   const char *kind, vinfo *vi) {
    memset(vi, 0, sizeof *vi);
    wire_reader vr = wire_sub(r, vf->data, vf->len, "ValueInfoProto");
    wire_field f;
    bool has;
    const uint8_t *type_data = NULL;
    size_t type_len = 0;
    for (;;) {
        OG_TRY(wire_next(&vr, &f, &has));
        if (!has) break;
        if (f.number == 1) {
            OG_TRY(wire_expect(&vr, &f, WIRE_LEN, "name"));
            vi->name = str_of(L, &f);
            if (!vi->name) return og_oom();
        } else if (f.number == 2) {
            OG_TRY(wire_expect(&vr, &f, WIRE_LEN, "type"));
            type_data = f.data;
            type_len = f.len;
        }
    }
    if (!vi->name) vi->name = "";
    if (!type_data) return NULL;
    char ctx[300];
    snprintf(ctx, sizeof ctx, "%s '%s'", kind, vi->name);
    wire_reader tr = wire_sub(&vr, type_data, type_len, "TypeProto");
    for (;;) {
        OG_TRY(wire_next(&tr, &f, &has));
        if (!has) break;
        if (f.number == 1) {
            OG_TRY(wire_expect(&tr, &f, WIRE_LEN, "tensor_type"));
            vi->rank = 0;
            OG_TRY(parse_tensor_type(L, &tr, &f, vi, ctx));
        }
    }
    return NULL;
}

static void apply_type(graph_value *v, const vinfo *vi) {
    if (v->initializer || !vi->has_tensor_type) return;
    if (vi->elem_type > 0 && vi->elem_type < OG_DTYPE_COUNT) v->dtype = (og_dtype)vi->elem_type;
    if (vi->has_shape) {
        v->rank = vi->rank;
        for (int i = 0; i < vi->rank; i++) {
            v->dims[i] = vi->dims[i];
            v->dim_names[i] = vi->dim_names[i];
        }
    }
}

/* --- AttributeProto ----------------------------------------------------------------- */

typedef struct attr_scan {
    const uint8_t *name;
    size_t name_len;
    bool has_name;
    int64_t type;
    const uint8_t *s, *t, *g, *ref;
    size_t s_len, t_len, g_len, ref_len;
    bool has_f, has_i, has_s, has_t, has_g, has_ref, has_sparse, has_tp;
    size_t n_floats, n_ints, n_strings, n_tensors, n_graphs, n_sparse, n_tps;
    float f;
    int64_t i;
} attr_scan;

typedef struct attr_fill {
    graph_attr *a;
} attr_fill;

static void fill_float(void *arg, uint64_t v, size_t i) {
    graph_attr *a = arg;
    uint32_t u = (uint32_t)v;
    if ((int64_t)i < a->n) memcpy(&a->floats[i], &u, 4);
}

static void fill_int(void *arg, uint64_t v, size_t i) {
    graph_attr *a = arg;
    if ((int64_t)i < a->n) a->ints[i] = (int64_t)v;
}

static og_status *parse_attr(loader *L, gbuild *b, const wire_reader *r, const wire_field *af,
                             const char *node_label, int depth, graph_attr *a) {
    model *m = L->m;
    wire_reader ar = wire_sub(r, af->data, af->len, "AttributeProto");
    attr_scan s;
    memset(&s, 0, sizeof s);
    wire_field f;
    bool has;
    for (;;) {
        OG_TRY(wire_next(&ar, &f, &has));
        if (!has) break;
        size_t n;
        switch (f.number) {
        case 1:
            OG_TRY(wire_expect(&ar, &f, WIRE_LEN, "name"));
            s.name = f.data;
            s.name_len = f.len;
            s.has_name = true;
            break;
        case 2:
            OG_TRY(wire_expect(&ar, &f, WIRE_I32, "f"));
            {
                uint32_t u = (uint32_t)f.v;
                memcpy(&s.f, &u, 4);
            }
            s.has_f = true;
            break;
        case 3:
            OG_TRY(wire_expect(&ar, &f, WIRE_VARINT, "i"));
            s.i = (int64_t)f.v;
            s.has_i = true;
            break;
        case 4:
            OG_TRY(wire_expect(&ar, &f, WIRE_LEN, "s"));
            s.s = f.data;
            s.s_len = f.len;
            s.has_s = true;
            break;
        case 5:
            OG_TRY(wire_expect(&ar, &f, WIRE_LEN, "t"));
            s.t = f.data;
            s.t_len = f.len;
            s.has_t = true;
            break;
        case 6:
            OG_TRY(wire_expect(&ar, &f, WIRE_LEN, "g"));
            s.g = f.data;
            s.g_len = f.len;
            s.has_g = true;
            break;
        case 7:
            OG_TRY(wire_repeated_count(&ar, &f, WIRE_I32, "floats", &n));
            s.n_floats += n;
            break;
        case 8:
            OG_TRY(wire_repeated_count(&ar, &f, WIRE_VARINT, "ints", &n));
            s.n_ints += n;
            break;
        case 9:
            OG_TRY(wire_expect(&ar, &f, WIRE_LEN, "strings"));
            s.n_strings++;
            break;
        case 10:
            OG_TRY(wire_expect(&ar, &f, WIRE_LEN, "tensors"));
            s.n_tensors++;
            break;
        case 11:
            OG_TRY(wire_expect(&ar, &f, WIRE_LEN, "graphs"));
            s.n_graphs++;
            break;
        case 14:
            OG_TRY(wire_expect(&ar, &f, WIRE_LEN, "tp"));
            s.has_tp = true;
            break;
        case 15:
            OG_TRY(wire_expect(&ar, &f, WIRE_LEN, "type_protos"));
            s.n_tps++;
            break;
        case 20:
            OG_TRY(wire_expect(&ar, &f, WIRE_VARINT, "type"));
            s.type = (int64_t)f.v;
            break;
        case 21:
            OG_TRY(wire_expect(&ar, &f, WIRE_LEN, "ref_attr_name"));
            s.ref = f.data;
            s.ref_len = f.len;
            s.has_ref = true;
            break;
        case 22:
            OG_TRY(wire_expect(&ar, &f, WIRE_LEN, "sparse_tensor"));
            s.has_sparse = true;
            break;
        case 23:
            OG_TRY(wire_expect(&ar, &f, WIRE_LEN, "sparse_tensors"));
            s.n_sparse++;
            break;
        default: break;
        }
    }
    a->name = arena_strndup(&m->arena, s.has_name ? (const char *)s.name : "", s.name_len);
    if (!a->name) return og_oom();
    if (!s.has_name || !a->name[0])
        return og_errorf(OG_ERR_INVALID_MODEL, "%s: node %s: an attribute has no name", L->label,
                         node_label);
    if (s.has_ref) {
        a->ref_attr_name = arena_strndup(&m->arena, (const char *)s.ref, s.ref_len);
        if (!a->ref_attr_name) return og_oom();
    }
    int64_t type = s.type;
    /* onnxruntime refuses an attribute without a type whatever the IR version ("type
     * field and data field mismatch"), though files of IR < 3 were allowed to omit it;
     * only a reference to a function's attribute may leave it out. */
    if (type == ATTR_UNDEFINED && !s.has_ref)
        return og_errorf(OG_ERR_INVALID_MODEL, "%s: node %s: attribute '%s' has no type "
                         "(AttributeProto.type is UNDEFINED)", L->label, node_label, a->name);
    if (type < 0 || type > ATTR_TYPE_PROTOS)
        return og_errorf(OG_ERR_INVALID_MODEL, "%s: node %s: attribute '%s' has invalid type %lld",
                         L->label, node_label, a->name, (long long)type);
    a->type = (attr_type)type;
    /* The value fields set must be the type's own, as onnxruntime checks ("type field and
     * data field mismatch"); none is allowed (a float left at its default, an empty list). */
    const bool set[ATTR_TYPE_PROTOS + 1] = {
        [ATTR_FLOAT] = s.has_f, [ATTR_INT] = s.has_i, [ATTR_STRING] = s.has_s,
        [ATTR_TENSOR] = s.has_t, [ATTR_GRAPH] = s.has_g, [ATTR_FLOATS] = s.n_floats > 0,
        [ATTR_INTS] = s.n_ints > 0, [ATTR_STRINGS] = s.n_strings > 0,
        [ATTR_TENSORS] = s.n_tensors > 0, [ATTR_GRAPHS] = s.n_graphs > 0,
        [ATTR_SPARSE_TENSOR] = s.has_sparse, [ATTR_SPARSE_TENSORS] = s.n_sparse > 0,
        [ATTR_TYPE_PROTO] = s.has_tp, [ATTR_TYPE_PROTOS] = s.n_tps > 0};
    for (int k = ATTR_FLOAT; type != ATTR_UNDEFINED && k <= ATTR_TYPE_PROTOS; k++)
        if (set[k] && k != type)
            return og_errorf(OG_ERR_INVALID_MODEL, "%s: node %s: attribute '%s' is declared %s "
                             "but holds %s too (its type and value fields disagree)", L->label,
                             node_label, a->name, graph_attr_type_name(a->type),
                             graph_attr_type_name((attr_type)k));
    char ctx[600];
    switch (a->type) {
    case ATTR_FLOAT: a->f = s.f; break;
    case ATTR_INT: a->i = s.i; break;
    case ATTR_STRING:
        a->s.s = arena_strndup(&m->arena, s.has_s ? (const char *)s.s : "", s.s_len);
        if (!a->s.s) return og_oom();
        a->s.len = s.s_len;
        break;
    case ATTR_TENSOR:
        if (!s.has_t) break;
        a->t = arena_alloc(&m->arena, sizeof *a->t);
        if (!a->t) return og_oom();
        snprintf(ctx, sizeof ctx, "node %s: attribute '%s': tensor", node_label, a->name);
        OG_TRY(tensor_proto_decode(m, &ar, s.t, s.t_len, ctx, a->t, NULL));
        break;
    case ATTR_GRAPH:
        if (!s.has_g) break;
        snprintf(ctx, sizeof ctx, "node %s: attribute '%s'", node_label, a->name);
        OG_TRY(parse_graph(L, &ar, s.g, s.g_len, b->g, depth + 1, ctx, &a->g));
        break;
    case ATTR_SPARSE_TENSOR:
    case ATTR_SPARSE_TENSORS:
        return og_errorf(OG_ERR_UNSUPPORTED,
                         "%s: node %s: attribute '%s': sparse tensors are not supported",
                         L->label, node_label, a->name);
    case ATTR_FLOATS: case ATTR_INTS: case ATTR_STRINGS: case ATTR_TENSORS: case ATTR_GRAPHS: {
        size_t n = a->type == ATTR_FLOATS ? s.n_floats
                   : a->type == ATTR_INTS  ? s.n_ints
                   : a->type == ATTR_STRINGS ? s.n_strings
                   : a->type == ATTR_TENSORS ? s.n_tensors
                                             : s.n_graphs;
        a->n = (int64_t)n;
        size_t es = a->type == ATTR_FLOATS    ? sizeof(float)
                    : a->type == ATTR_INTS    ? sizeof(int64_t)
                    : a->type == ATTR_STRINGS ? sizeof(graph_bytes)
                    : a->type == ATTR_TENSORS ? sizeof(tensor)
                                              : sizeof(graph *);
        if (n > SIZE_MAX / es / 2) return og_oom();
        void *arr = arena_alloc(&m->arena, n * es + 1);
        if (!arr) return og_oom();
        if (a->type == ATTR_FLOATS) a->floats = arr;
        else if (a->type == ATTR_INTS) a->ints = arr;
        else if (a->type == ATTR_STRINGS) a->strings = arr;
        else if (a->type == ATTR_TENSORS) a->tensors = arr;
        else a->graphs = arr;
        size_t pos = 0;
        wire_reader r2 = wire_sub(r, af->data, af->len, "AttributeProto");
        for (;;) {
            OG_TRY(wire_next(&r2, &f, &has));
            if (!has) break;
            if (a->type == ATTR_FLOATS && f.number == 7)
                wire_repeated_each(&f, WIRE_I32, fill_float, a, &pos);
            else if (a->type == ATTR_INTS && f.number == 8)
                wire_repeated_each(&f, WIRE_VARINT, fill_int, a, &pos);
            else if (a->type == ATTR_STRINGS && f.number == 9) {
                a->strings[pos].s = arena_strndup(&m->arena, (const char *)f.data, f.len);
                if (!a->strings[pos].s) return og_oom();
                a->strings[pos++].len = f.len;
            } else if (a->type == ATTR_TENSORS && f.number == 10) {
                snprintf(ctx, sizeof ctx, "node %s: attribute '%s': tensor %zu", node_label,
                         a->name, pos);
                OG_TRY(tensor_proto_decode(m, &r2, f.data, f.len, ctx, &a->tensors[pos], NULL));
                pos++;
            } else if (a->type == ATTR_GRAPHS && f.number == 11) {
                snprintf(ctx, sizeof ctx, "node %s: attribute '%s'[%zu]", node_label, a->name,
                         pos);
                OG_TRY(parse_graph(L, &r2, f.data, f.len, b->g, depth + 1, ctx, &a->graphs[pos]));
                pos++;
            }
        }
        break;
    }
    default: break; /* type protos and undefined (ref_attr_name only): no payload kept */
    }
    return NULL;
}

/* --- NodeProto ---------------------------------------------------------------------- */

/* Constant's value attribute as a tensor. */
static og_status *constant_tensor(loader *L, const graph_node *n, const char *label,
                                  tensor **out) {
    model *m = L->m;
    if (n->n_attrs != 1)
        return og_errorf(OG_ERR_INVALID_MODEL,
                         "%s: node %s: Constant needs exactly one value attribute, has %d",
                         L->label, label, n->n_attrs);
    const graph_attr *a = &n->attrs[0];
    tensor *t = arena_alloc(&m->arena, sizeof *t);
    if (!t) return og_oom();
    if (strcmp(a->name, "value") == 0 && a->type == ATTR_TENSOR && a->t) {
        *t = *a->t;
    } else if (strcmp(a->name, "value_float") == 0 && a->type == ATTR_FLOAT) {
        float *p = arena_alloc(&m->arena, sizeof *p);
        if (!p) return og_oom();
        *p = a->f;
        OG_TRY(tensor_set_shape(t, OG_FLOAT32, 0, NULL));
        t->data = p;
    } else if (strcmp(a->name, "value_int") == 0 && a->type == ATTR_INT) {
        int64_t *p = arena_alloc(&m->arena, sizeof *p);
        if (!p) return og_oom();
        *p = a->i;
        OG_TRY(tensor_set_shape(t, OG_INT64, 0, NULL));
        t->data = p;
    } else if ((strcmp(a->name, "value_floats") == 0 && a->type == ATTR_FLOATS) ||
               (strcmp(a->name, "value_ints") == 0 && a->type == ATTR_INTS)) {
        int64_t d = a->n;
        bool fl = a->type == ATTR_FLOATS;
        OG_TRY(tensor_set_shape(t, fl ? OG_FLOAT32 : OG_INT64, 1, &d));
        t->data = fl ? (void *)a->floats : (void *)a->ints;
    } else if ((strcmp(a->name, "value_string") == 0 && a->type == ATTR_STRING) ||
               (strcmp(a->name, "value_strings") == 0 && a->type == ATTR_STRINGS)) {
        /* views of the attribute's bytes, which the model holds */
        bool one = a->type == ATTR_STRING;
        int64_t d = one ? 1 : a->n;
        OG_TRY(tensor_set_shape(t, OG_STRING, one ? 0 : 1, &d));
        og_string *v = arena_alloc(&m->arena, t->nbytes + 1);
        if (!v) return og_oom();
        for (int64_t i = 0; i < d; i++) {
            const graph_bytes *s = one ? &a->s : &a->strings[i];
            v[i] = (og_string){s->len ? s->s : NULL, s->len};
        }
        t->data = v;
    } else if (strcmp(a->name, "sparse_value") == 0) {
        return og_errorf(OG_ERR_UNSUPPORTED, "%s: node %s: Constant attribute '%s' is not supported",
                         L->label, label, a->name);
    } else {
        return og_errorf(OG_ERR_INVALID_MODEL,
                         "%s: node %s: Constant has unexpected attribute '%s' (type %d)", L->label,
                         label, a->name, (int)a->type);
    }
    *out = t;
    return NULL;
}

/* An attribute named twice: onnxruntime refuses the node ("appeared multiple times"),
 * whatever the op, and a look-up would silently take the first. Pairs are compared for
 * the few attributes a node has; a map keeps a crafted file's thousands linear. */
static og_status *unique_attrs(const loader *L, const graph_node *n, const char *label) {
    int dup = -1;
    if (n->n_attrs <= 32) {
        for (int i = 1; i < n->n_attrs && dup < 0; i++)
            for (int k = 0; k < i && dup < 0; k++)
                if (!strcmp(n->attrs[k].name, n->attrs[i].name)) dup = i;
    } else {
        strmap seen;
        strmap_init(&seen);
        for (int i = 0; i < n->n_attrs && dup < 0; i++) {
            if (strmap_get(&seen, n->attrs[i].name, -1) >= 0) dup = i;
            else if (!strmap_put(&seen, n->attrs[i].name, i)) {
                strmap_free(&seen);
                return og_oom();
            }
        }
        strmap_free(&seen);
    }
    if (dup < 0) return NULL;
    return og_errorf(OG_ERR_INVALID_MODEL, "%s: node %s: attribute '%s' is given more than once",
                     L->label, label, n->attrs[dup].name);
}

static og_status *parse_node(loader *L, gbuild *b, const wire_reader *r, const wire_field *nf,
                             int index, int depth, graph_node *n, bool *dropped) {
    model *m = L->m;
    wire_reader nr = wire_sub(r, nf->data, nf->len, "NodeProto");
    wire_field f;
    bool has;
    size_t n_in = 0, n_out = 0, n_attr = 0;
    n->name = "";
    n->op_type = "";
    n->domain = "";
    n->index = index;
    n->file_index = index;
    for (;;) {
        OG_TRY(wire_next(&nr, &f, &has));
        if (!has) break;
        switch (f.number) {
        case 1: OG_TRY(wire_expect(&nr, &f, WIRE_LEN, "input")); n_in++; break;
        case 2: OG_TRY(wire_expect(&nr, &f, WIRE_LEN, "output")); n_out++; break;
        case 5: OG_TRY(wire_expect(&nr, &f, WIRE_LEN, "attribute")); n_attr++; break;
        case 3: case 4: case 7: {
            OG_TRY(wire_expect(&nr, &f, WIRE_LEN,
                               f.number == 3 ? "name" : f.number == 4 ? "op_type" : "domain"));
            const char *sv = str_of(L, &f);
            if (!sv) return og_oom();
            if (f.number == 3) n->name = sv;
            else if (f.number == 4) n->op_type = sv;
            else n->domain = norm_domain(sv);
            break;
        }
        default: break;
        }
    }
    if (n_in > INT_MAX / 2 || n_out > INT_MAX / 2 || n_attr > INT_MAX / 2)
        return og_errorf(OG_ERR_INVALID_MODEL, "%s: node has too many fields", L->label);
    char label[300];
    graph_node_label(n, label, sizeof label);
    if (!n->op_type[0])
        return og_errorf(OG_ERR_INVALID_MODEL, "%s: %s: node %s has no op_type", L->label,
                         b->what, label);
    n->opset = model_opset(m, n->domain);
    n->inputs = arena_alloc(&m->arena, sizeof(int) * (n_in + 1));
    n->outputs = arena_alloc(&m->arena, sizeof(int) * (n_out + 1));
    graph_attr *attrs = arena_alloc(&m->arena, sizeof(graph_attr) * (n_attr + 1));
    if (!n->inputs || !n->outputs || !attrs) return og_oom();
    n->attrs = attrs;
    /* names first, then attributes (which may hold subgraphs that need this graph's
     * name map only after it is complete, so order does not matter for them) */
    wire_reader nr2 = wire_sub(r, nf->data, nf->len, "NodeProto");
    for (;;) {
        OG_TRY(wire_next(&nr2, &f, &has));
        if (!has) break;
        if (f.number == 1 || f.number == 2) {
            int idx = -1;
            if (f.len) {
                const char *nm = str_of(L, &f);
                if (!nm) return og_oom();
                idx = value_get_or_add(b, nm);
                if (idx < 0) return og_oom();
            }
            if (f.number == 1) n->inputs[n->n_inputs++] = idx;
            else n->outputs[n->n_outputs++] = idx;
        } else if (f.number == 5) {
            graph_attr *a = &attrs[n->n_attrs];
            OG_TRY(parse_attr(L, b, &nr2, &f, label, depth, a));
            n->n_attrs++; /* counted only when complete: model_free walks attrs */
        }
    }
    OG_TRY(unique_attrs(L, n, label));
    bool is_constant = n->domain[0] == 0 && strcmp(n->op_type, "Constant") == 0;
    if (is_constant) {
        if (n->n_outputs != 1 || n->outputs[0] < 0)
            return og_errorf(OG_ERR_INVALID_MODEL, "%s: node %s: Constant needs one named output",
                             L->label, label);
        tensor *t = NULL;
        OG_TRY(constant_tensor(L, n, label, &t));
        graph_value *v = &b->vals[n->outputs[0]];
        if (v->initializer || v->producer >= 0)
            return og_errorf(OG_ERR_INVALID_MODEL,
                             "%s: node %s: output '%s' is already an initializer or produced by "
                             "another node",
                             L->label, label, v->name);
        v->initializer = t;
        v->dtype = t->dtype;
        v->rank = t->rank;
        for (int i = 0; i < t->rank; i++) {
            v->dims[i] = t->dims[i];
            v->dim_names[i] = NULL;
        }
        m->initializer_bytes += t->nbytes;
        if (!ivec_push(&b->inits, n->outputs[0])) return og_oom();
        *dropped = true;
        return NULL;
    }
    for (int k = 0; k < n->n_outputs; k++) {
        int o = n->outputs[k];
        if (o < 0) continue;
        graph_value *v = &b->vals[o];
        if (v->producer >= 0 || v->initializer) {
            char other[300] = "an initializer";
            if (v->producer >= 0)
                snprintf(other, sizeof other, "node #%d", v->producer);
            return og_errorf(OG_ERR_INVALID_MODEL, "%s: node %s: output '%s' is also produced by %s",
                             L->label, label, v->name, other);
        }
        v->producer = index;
    }
    *dropped = false;
    return NULL;
}

/* --- GraphProto --------------------------------------------------------------------- */

static og_status *register_graph(loader *L, graph *g) {
    if (L->n_graphs == L->cap_graphs) {
        int cap = L->cap_graphs ? L->cap_graphs * 2 : 8;
        graph **v = realloc(L->graphs, sizeof *v * (size_t)cap);
        if (!v) return og_oom();
        L->graphs = v;
        L->cap_graphs = cap;
    }
    L->graphs[L->n_graphs++] = g;
    return NULL;
}

static int *ivec_to_arena(model *m, const ivec *a) {
    int *p = arena_alloc(&m->arena, sizeof(int) * ((size_t)a->n + 1));
    if (p && a->n) memcpy(p, a->v, sizeof(int) * (size_t)a->n);
    return p;
}

static og_status *build_graph(loader *L, gbuild *b, const wire_reader *parent,
                              const uint8_t *data, size_t len, int depth) {
    model *m = L->m;
    graph *g = b->g;
    wire_reader r = wire_sub(parent, data, len, "GraphProto");
    wire_field f;
    bool has;
    size_t n_nodes = 0;
    for (;;) {
        OG_TRY(wire_next(&r, &f, &has));
        if (!has) break;
        switch (f.number) {
        case 1: OG_TRY(wire_expect(&r, &f, WIRE_LEN, "node")); n_nodes++; break;
        case 2:
            OG_TRY(wire_expect(&r, &f, WIRE_LEN, "name"));
            g->name = str_of(L, &f);
            if (!g->name) return og_oom();
            break;
        case 5: OG_TRY(wire_expect(&r, &f, WIRE_LEN, "initializer")); break;
        case 11: OG_TRY(wire_expect(&r, &f, WIRE_LEN, "input")); break;
        case 12: OG_TRY(wire_expect(&r, &f, WIRE_LEN, "output")); break;
        case 13: OG_TRY(wire_expect(&r, &f, WIRE_LEN, "value_info")); break;
        case 15:
            return og_errorf(OG_ERR_UNSUPPORTED, "%s: %s: sparse_initializer is not supported",
                             L->label, b->what);
        default: break;
        }
    }
    if (!g->name) g->name = "";
    if (n_nodes > INT_MAX / 2)
        return og_errorf(OG_ERR_INVALID_MODEL, "%s: %s: too many nodes", L->label, b->what);
    g->nodes = arena_alloc(&m->arena, sizeof(graph_node) * (n_nodes + 1));
    if (!g->nodes) return og_oom();
    /* From IR 4 on, a main-graph input may also have an initializer (see below). */
    bool overridable = L->m->ir_version >= 4 && depth == 0;
    /* Passes in dependency order: inputs, initializers, nodes, outputs, value_info. */
    static const uint32_t order[] = {11, 5, 1, 12, 13};
    int n_kept = 0;
    for (size_t pass = 0; pass < sizeof order / sizeof order[0]; pass++) {
        r = wire_sub(parent, data, len, "GraphProto");
        for (;;) {
            OG_TRY(wire_next(&r, &f, &has));
            if (!has) break;
            if (f.number != order[pass]) continue;
            if (f.number == 11 || f.number == 12 || f.number == 13) {
                vinfo vi;
                const char *kind = f.number == 11 ? "input" : f.number == 12 ? "output"
                                                                             : "value_info";
                OG_TRY(parse_value_info(L, &r, &f, kind, &vi));
                if (!vi.name[0])
                    return og_errorf(OG_ERR_INVALID_MODEL, "%s: %s: a graph %s has no name",
                                     L->label, b->what, kind);
                int idx = strmap_get(&g->by_name, vi.name, -1);
                if (f.number == 13) {
                    if (idx >= 0) apply_type(&b->vals[idx], &vi);
                    continue;
                }
                if (idx < 0) idx = value_get_or_add(b, vi.name);
                if (idx < 0) return og_oom();
                apply_type(&b->vals[idx], &vi);
                if (f.number == 11) {
                    if (!ivec_push(&b->inputs, idx)) return og_oom();
                } else {
                    b->vals[idx].is_output = true;
                    if (!ivec_push(&b->outputs, idx)) return og_oom();
                }
            } else if (f.number == 5) {
                tensor *t = arena_alloc(&m->arena, sizeof *t);
                if (!t) return og_oom();
                const char *name;
                OG_TRY(tensor_proto_decode(m, &r, f.data, f.len, "initializer", t, &name));
                if (!name || !name[0])
                    return og_errorf(OG_ERR_INVALID_MODEL, "%s: %s: an initializer has no name",
                                     L->label, b->what);
                int idx = value_get_or_add(b, name);
                if (idx < 0) return og_oom();
                graph_value *v = &b->vals[idx];
                if (v->initializer)
                    return og_errorf(OG_ERR_INVALID_MODEL, "%s: %s: initializer '%s' is given twice",
                                     L->label, b->what, name);
                v->initializer = t;
                /* an overridable initializer keeps its input's declared type (symbolic
                 * dims such as a LoRA rank): runs may feed other shapes than the default */
                bool typed_input = false;
                for (int i = 0; overridable && i < b->inputs.n && !typed_input; i++)
                    typed_input = b->inputs.v[i] == idx && v->rank >= 0;
                if (!typed_input) {
                    v->dtype = t->dtype;
                    v->rank = t->rank;
                    for (int i = 0; i < t->rank; i++) {
                        v->dims[i] = t->dims[i];
                        v->dim_names[i] = NULL;
                    }
                }
                m->initializer_bytes += t->nbytes;
                if (!ivec_push(&b->inits, idx)) return og_oom();
            } else if (f.number == 1) {
                bool dropped = false;
                graph_node *n = &g->nodes[n_kept];
                OG_TRY(parse_node(L, b, &r, &f, n_kept, depth, n, &dropped));
                if (dropped) memset(n, 0, sizeof *n);
                else g->n_nodes = ++n_kept; /* visible to model_free only once complete */
            }
        }
    }
    /* Older IRs list initializers among the inputs; those are constants, not feeds. From
     * IR 4 on, onnxruntime lets a run override such an initializer. We do so where the
     * input is declared to take other shapes than its initializer's (a symbolic dim: the
     * LoRA weights of an adapter-ready package, whose defaults have rank 0, see
     * genai/adapters.c): it becomes an input with a default, and nothing downstream may
     * treat it as a constant (prepack or fold it). An input declared exactly as its
     * initializer (weights exported with keep_initializers_as_inputs) stays a constant,
     * so that its kernels keep their prepared forms. */
    ivec ins = {0};
    for (int i = 0; i < b->inputs.n; i++) {
        graph_value *v = &b->vals[b->inputs.v[i]];
        const tensor *it = v->initializer;
        bool flexible = overridable && it && v->rank >= 0 && v->rank != it->rank;
        for (int d = 0; overridable && it && v->rank == it->rank && d < it->rank; d++)
            flexible |= v->dims[d] != it->dims[d];
        if (it && !flexible) continue;
        if (it) {
            v->default_value = v->initializer;
            v->initializer = NULL;
            for (int k = 0; k < b->inits.n; k++)
                if (b->inits.v[k] == b->inputs.v[i]) b->inits.v[k--] = b->inits.v[--b->inits.n];
        }
        if (v->producer >= 0) {
            free(ins.v);
            return og_errorf(OG_ERR_INVALID_MODEL,
                             "%s: %s: graph input '%s' is also the output of node #%d", L->label,
                             b->what, v->name, v->producer);
        }
        if (v->is_input) {
            free(ins.v);
            return og_errorf(OG_ERR_INVALID_MODEL, "%s: %s: graph input '%s' is listed twice",
                             L->label, b->what, v->name);
        }
        v->is_input = true;
        if (!ivec_push(&ins, b->inputs.v[i])) {
            free(ins.v);
            return og_oom();
        }
    }
    g->inputs = ivec_to_arena(m, &ins);
    g->n_inputs = ins.n;
    free(ins.v);
    g->outputs = ivec_to_arena(m, &b->outputs);
    g->n_outputs = b->outputs.n;
    g->initializers = ivec_to_arena(m, &b->inits);
    g->n_initializers = b->inits.n;
    g->values = arena_alloc(&m->arena, sizeof(graph_value) * ((size_t)b->n_vals + 1));
    if (!g->inputs || !g->outputs || !g->initializers || !g->values) return og_oom();
    if (b->n_vals) memcpy(g->values, b->vals, sizeof(graph_value) * (size_t)b->n_vals);
    g->n_values = b->n_vals;
    return NULL;
}

static og_status *parse_graph(loader *L, const wire_reader *parent, const uint8_t *data,
                              size_t len, graph *outer, int depth, const char *where,
                              graph **out) {
    if (depth > MAX_GRAPH_DEPTH)
        return og_errorf(OG_ERR_INVALID_MODEL, "%s: %s: subgraphs nest deeper than %d levels",
                         L->label, where, MAX_GRAPH_DEPTH);
    graph *g = arena_alloc(&L->m->arena, sizeof *g);
    if (!g) return og_oom();
    strmap_init(&g->by_name);
    g->parent = outer;
    OG_TRY(register_graph(L, g));
    gbuild b;
    memset(&b, 0, sizeof b);
    b.L = L;
    b.g = g;
    char what[700];
    snprintf(what, sizeof what, "%s%s", where, outer ? ": subgraph" : "graph");
    b.what = what;
    og_status *st = build_graph(L, &b, parent, data, len, depth);
    free(b.vals);
    free(b.inputs.v);
    free(b.outputs.v);
    free(b.inits.v);
    if (st) return st;
    *out = g;
    return NULL;
}

/* A subgraph's names that nothing in it defines but an enclosing graph does. */
static void mark_outer_scope(graph *g) {
    for (int i = 0; i < g->n_nodes; i++) {
        const graph_node *n = &g->nodes[i];
        for (int a = 0; a < n->n_attrs; a++) {
            const graph_attr *at = &n->attrs[a];
            if (at->g) mark_outer_scope(at->g);
            for (int64_t k = 0; at->graphs && k < at->n; k++)
                if (at->graphs[k]) mark_outer_scope(at->graphs[k]);
        }
    }
    if (!g->parent) return;
    for (int v = 0; v < g->n_values; v++) {
        graph_value *gv = &g->values[v];
        if (gv->producer >= 0 || gv->is_input || gv->initializer) continue;
        for (const graph *p = g->parent; p; p = p->parent)
            if (graph_find_value(p, gv->name) >= 0) {
                gv->from_outer_scope = true;
                break;
            }
    }
}

/* --- ModelProto --------------------------------------------------------------------- */

static og_status *parse_opset(loader *L, const wire_reader *r, const wire_field *of,
                              opset_import *op) {
    wire_reader orr = wire_sub(r, of->data, of->len, "OperatorSetIdProto");
    wire_field f;
    bool has;
    op->domain = "";
    for (;;) {
        OG_TRY(wire_next(&orr, &f, &has));
        if (!has) break;
        if (f.number == 1) {
            OG_TRY(wire_expect(&orr, &f, WIRE_LEN, "domain"));
            const char *d = str_of(L, &f);
            if (!d) return og_oom();
            op->domain = norm_domain(d);
        } else if (f.number == 2) {
            OG_TRY(wire_expect(&orr, &f, WIRE_VARINT, "version"));
            op->version = (int64_t)f.v;
        }
    }
    return NULL;
}

static og_status *parse_model(loader *L, const uint8_t *data, size_t size) {
    model *m = L->m;
    wire_reader r = wire_init(data, size, L->label, "ModelProto");
    wire_field f;
    bool has;
    const uint8_t *gdata = NULL;
    size_t glen = 0;
    size_t n_opsets = 0;
    bool has_ir = false;
    for (;;) {
        OG_TRY(wire_next(&r, &f, &has));
        if (!has) break;
        switch (f.number) {
        case 1:
            OG_TRY(wire_expect(&r, &f, WIRE_VARINT, "ir_version"));
            m->ir_version = (int64_t)f.v;
            has_ir = true;
            break;
        case 2: case 3: case 4: case 6: {
            static const char *names[] = {"", "", "producer_name", "producer_version", "domain",
                                          "", "doc_string"};
            OG_TRY(wire_expect(&r, &f, WIRE_LEN, names[f.number]));
            const char *sv = str_of(L, &f);
            if (!sv) return og_oom();
            if (f.number == 2) m->producer_name = sv;
            else if (f.number == 3) m->producer_version = sv;
            else if (f.number == 4) m->domain = sv;
            else m->doc_string = sv;
            break;
        }
        case 5:
            OG_TRY(wire_expect(&r, &f, WIRE_VARINT, "model_version"));
            m->model_version = (int64_t)f.v;
            break;
        case 7:
            OG_TRY(wire_expect(&r, &f, WIRE_LEN, "graph"));
            gdata = f.data;
            glen = f.len;
            break;
        case 8:
            OG_TRY(wire_expect(&r, &f, WIRE_LEN, "opset_import"));
            n_opsets++;
            break;
        default: break;
        }
    }
    if (!has_ir)
        return og_errorf(OG_ERR_INVALID_MODEL, "%s: not an ONNX model: ModelProto has no ir_version",
                         L->label);
    if (m->ir_version < MIN_IR_VERSION || m->ir_version > MAX_IR_VERSION)
        return og_errorf(OG_ERR_UNSUPPORTED,
                         "%s: IR version %lld is not supported (supported: %d to %d)", L->label,
                         (long long)m->ir_version, MIN_IR_VERSION, MAX_IR_VERSION);
    if (!m->producer_name) m->producer_name = "";
    if (!m->producer_version) m->producer_version = "";
    if (!m->domain) m->domain = "";
    if (!m->doc_string) m->doc_string = "";
    if (n_opsets > INT_MAX / 2) return og_oom();
    m->opsets = arena_alloc(&m->arena, sizeof(opset_import) * (n_opsets + 1));
    if (!m->opsets) return og_oom();
    r = wire_init(data, size, L->label, "ModelProto");
    for (;;) {
        OG_TRY(wire_next(&r, &f, &has));
        if (!has) break;
        if (f.number != 8) continue;
        opset_import op;
        OG_TRY(parse_opset(L, &r, &f, &op));
        /* a repeated domain keeps its first version, as model_opset would find it */
        if (model_opset(m, op.domain) == 0) m->opsets[m->n_opsets++] = op;
    }
    if (!gdata)
        return og_errorf(OG_ERR_INVALID_MODEL, "%s: ModelProto has no graph", L->label);
    graph *g;
    OG_TRY(parse_graph(L, &r, gdata, glen, NULL, 0, "", &g));
    mark_outer_scope(g);
    m->graph = g;
    return NULL;
}

static og_status *load_common(model *m, const uint8_t *data, size_t size, model **out) {
    loader L = {m, m->path, NULL, 0, 0};
    og_status *st = og_oom_context(parse_model(&L, data, size), "%s: loading", m->path);
    if (st) {
        for (int i = 0; i < L.n_graphs; i++) strmap_free(&L.graphs[i]->by_name);
        m->graph = NULL;
        free(L.graphs);
        model_free(m);
        return st;
    }
    free(L.graphs);
    *out = m;
    return NULL;
}

static model *model_new(const char *path, const char *base_dir) {
    model *m = calloc(1, sizeof *m);
    if (!m) return NULL;
    arena_init(&m->arena);
    m->path = strdup(path);
    m->base_dir = base_dir ? strdup(base_dir) : NULL;
    if (!m->path || (base_dir && !m->base_dir)) {
        model_free(m);
        return NULL;
    }
    return m;
}

og_status *onnx_load_file(const char *path, model **out) {
    char *dir = strdup(path);
    if (!dir) return og_oom();
    char *slash = strrchr(dir, '/');
    if (slash == dir) slash[1] = 0;
    else if (slash) *slash = 0;
    else strcpy(dir, ".");
    model *m = model_new(path, dir);
    free(dir);
    if (!m) return og_oom();
    m->mappings = calloc(1, sizeof *m->mappings);
    if (!m->mappings) {
        model_free(m);
        return og_oom();
    }
    og_status *st = mapped_file_open(path, &m->mappings[0]);
    if (st) {
        model_free(m);
        return st;
    }
    m->n_mappings = 1;
    return load_common(m, m->mappings[0].data ? m->mappings[0].data : (const uint8_t *)"",
                       m->mappings[0].size, out);
}

og_status *onnx_load_bytes(const void *data, size_t size, const char *base_dir,
                           const char *label, model **out) {
    if (!data && size)
        return og_errorf(OG_ERR_INVALID_ARGUMENT, "onnx_load_bytes: data is NULL");
    model *m = model_new(label ? label : "<memory>", base_dir);
    if (!m) return og_oom();
    return load_common(m, data ? data : (const uint8_t *)"", size, out);
}
