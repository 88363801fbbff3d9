/* The graph IR: what an ONNX ModelProto becomes after loading. Values are referred to
 * by index; every string and array lives in the owning model's arena; initializer
 * tensors point into the file mapping (or into the arena when they had to be decoded
 * from typed fields or realigned). The IR knows nothing of kernels or execution. */
#ifndef OG_GRAPH_GRAPH_H
#define OG_GRAPH_GRAPH_H

#include "base/arena.h"
#include "base/strmap.h"
#include "base/tensor.h"

#include <stdbool.h>
#include <stdint.h>

struct graph;

/* AttributeProto.AttributeType numbers. */
typedef enum attr_type {
    ATTR_UNDEFINED = 0,
    ATTR_FLOAT = 1,
    ATTR_INT = 2,
    ATTR_STRING = 3,
    ATTR_TENSOR = 4,
    ATTR_GRAPH = 5,
    ATTR_FLOATS = 6,
    ATTR_INTS = 7,
    ATTR_STRINGS = 8,
    ATTR_TENSORS = 9,
    ATTR_GRAPHS = 10,
    ATTR_SPARSE_TENSOR = 11,
    ATTR_SPARSE_TENSORS = 12,
    ATTR_TYPE_PROTO = 13,
    ATTR_TYPE_PROTOS = 14
} attr_type;

/* A byte string that need not be NUL-terminated (attribute strings may be binary);
 * the loader still stores a NUL after the last byte, so `s` can be used as a C string
 * when the content is text. */
typedef struct graph_bytes {
    const char *s;
    size_t len;
} graph_bytes;

typedef struct graph_attr {
    const char *name;
    attr_type type;
    const char *ref_attr_name; /* non-NULL inside functions: refers to a caller attribute */
    float f;
    int64_t i;
    graph_bytes s;
    tensor *t;
    struct graph *g;
    /* repeated kinds: count + array (only the one matching `type` is set) */
    int64_t n;
    float *floats;
    int64_t *ints;
    graph_bytes *strings;
    tensor *tensors;
    struct graph **graphs;
} graph_attr;

typedef struct graph_node {
    const char *name;    /* "" when the file gives none; use graph_node_label() in messages */
    const char *op_type;
    const char *domain;  /* "" for the default ONNX domain ("ai.onnx" is mapped to "") */
    int64_t opset;       /* version of `domain` imported by the model (0 if not imported) */
    int n_inputs, n_outputs;
    int *inputs;  /* value indices; -1 for an omitted optional input (empty name) */
    int *outputs; /* value indices; -1 for an omitted optional output */
    int n_attrs;
    graph_attr *attrs;
    int index; /* position in graph.nodes */
    int file_index; /* position in the file's node list (messages name unnamed nodes by it;
                     * index differs in a rewritten graph, see graph.rewritten_from) */
} graph_node;

typedef struct graph_value {
    const char *name;
    /* Declared type, from graph inputs/outputs/value_info or the initializer. */
    og_dtype dtype;                      /* OG_UNDEFINED if not declared */
    int rank;                            /* -1 if not declared */
    int64_t dims[OG_MAX_RANK];           /* -1 where symbolic or unknown */
    const char *dim_names[OG_MAX_RANK];  /* dim_param symbol, or NULL */
    const tensor *initializer;           /* constant data, or NULL */
    const tensor *default_value;         /* a graph input's value when a run feeds none (an
                                            overridable initializer, IR >= 4), or NULL */
    int producer;                        /* index of the producing node, or -1 */
    bool is_input, is_output;            /* listed in graph.input / graph.output */
    bool from_outer_scope;               /* a subgraph's reference to an enclosing value */
} graph_value;

typedef struct graph {
    const char *name;
    int n_values, n_nodes;
    graph_value *values;
    graph_node *nodes;   /* in file order; see graph_topo_order */
    int n_inputs, n_outputs;
    int *inputs;         /* value indices of graph.input (initializers excluded) */
    int *outputs;        /* value indices of graph.output */
    int n_initializers;
    int *initializers;   /* value indices that hold initializers or Constant outputs */
    strmap by_name;      /* value name -> index */
    struct graph *parent; /* enclosing graph for subgraphs */
    /* A copy made by rewriting another graph (the native executor's fusion): the graph
     * it was made from. Its subgraphs' parent pointers still name that one, and value
     * indices are the same in both. NULL for a graph as loaded. */
    const struct graph *rewritten_from;
} graph;

typedef struct opset_import {
    const char *domain; /* "" for the default domain */
    int64_t version;
} opset_import;

/* A loaded model: the IR plus everything it points into. Made by the onnx loader
 * (src/onnx/loader.h), freed by model_free. */
typedef struct model {
    arena arena;
    char *path;      /* the .onnx path, or "<memory>" */
    char *base_dir;  /* folder for external data, or NULL */
    int64_t ir_version;
    const char *producer_name, *producer_version, *domain, *doc_string;
    int64_t model_version;
    int n_opsets;
    opset_import *opsets;
    graph *graph;
    /* mappings this model points into: [0] the model file (absent for bytes), then one
     * per external-data file */
    int n_mappings;
    struct mapped_file *mappings;
    /* statistics for `show` */
    size_t initializer_bytes;   /* bytes of all initializer tensors */
    size_t copied_bytes;        /* of which copied at load (typed fields, realignment) */
    int n_external_files;
    const char **external_files; /* distinct location strings, in first-use order */
} model;

void model_free(model *m);

/* The opset version the model imports for `domain` ("" default), or 0. */
int64_t model_opset(const model *m, const char *domain);

/* Index of a value by name in g (not its parents), or -1. */
int graph_find_value(const graph *g, const char *name);
/* The node of g that produces value v, or NULL (a graph input, an initializer, v < 0). */
const graph_node *graph_producer(const graph *g, int v);
/* "'name' (OpType)" or "#12 (OpType)" for unnamed nodes, into buf. */
const char *graph_node_label(const graph_node *n, char *buf, size_t size);

/* Attribute look-ups on a node; the default is returned when the attribute is absent.
 * A present attribute of the wrong type (Gather's axis given as a string) also gives
 * the default, and is noted for graph_attr_type_error(node), which the executor calls
 * after every node: an error naming node, attribute, expected and actual type. */
const graph_attr *graph_attr_find(const graph_node *n, const char *name);
int64_t graph_attr_int(const graph_node *n, const char *name, int64_t dflt);
float graph_attr_float(const graph_node *n, const char *name, float dflt);
/* Text attribute as a C string, or dflt. */
const char *graph_attr_string(const graph_node *n, const char *name, const char *dflt);
/* INTS attribute: returns the count (or -1 when absent) and sets *vals. */
int64_t graph_attr_ints(const graph_node *n, const char *name, const int64_t **vals);
int64_t graph_attr_floats(const graph_node *n, const char *name, const float **vals);
const tensor *graph_attr_tensor(const graph_node *n, const char *name);
/* The first wrong-typed attribute of node n looked up on this thread, as an
 * OG_ERR_INVALID_MODEL status "attribute 'axis' is a string, expected an int" (the
 * caller adds the node), or NULL; taking it clears it. */
og_status *graph_attr_type_error(const graph_node *n);
/* "an int", "floats", ...: a type as messages name it. */
const char *graph_attr_type_name(attr_type t);

/* The values of g that node n's subgraphs read from the enclosing scope: outer-scope
 * references at any depth that resolve (by name, through the nearest enclosing graph
 * that has the name) to a value of g. Such a value is an implicit input of n: it must
 * exist before n runs and live until n ends. Writes up to cap distinct value indices to
 * out and returns how many it found; a result above cap means the list was cut: call
 * again with at least that much room. */
int graph_node_implicit_inputs(const graph *g, const graph_node *n, int *out, int cap);
/* The implicit inputs of every node of g as CSR arrays: node i's are
 * vals[start[i] .. start[i+1]). Caller frees both. */
og_status *graph_implicit_inputs(const graph *g, int **start, int **vals);

/* Topological order of g's nodes into order[n_nodes] (caller-allocated). Values are
 * available when they are graph inputs, initializers, outer-scope references or
 * produced earlier; a node waits for its inputs and its implicit inputs (above).
 * Errors: a cycle (naming a node on it), a value used before any node produces it
 * (naming the node and the value), two producers of one value. */
og_status *graph_topo_order(const graph *g, const char *what, int *order);

#endif
