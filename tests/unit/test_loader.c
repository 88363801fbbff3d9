/* Loader tests: models are built byte by byte with a tiny protobuf writer so that the
 * tests need no Python; the bad-input table checks each error's code and message. */
#include "testing.h"

#include "base/half.h"
#include "onnx/loader.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* --- a minimal protobuf writer --------------------------------------------------- */

typedef struct pbuf {
    unsigned char *d;
    size_t n, cap;
} pbuf;

static void pb_raw(pbuf *b, const void *p, size_t n) {
    if (b->n + n > b->cap) {
        size_t cap = (b->cap ? b->cap * 2 : 256) + n;
        b->d = realloc(b->d, cap);
        b->cap = cap;
    }
    if (n) memcpy(b->d + b->n, p, n);
    b->n += n;
}
static void pb_varint(pbuf *b, uint64_t v) {
    unsigned char t[10];
    size_t n = 0;
    while (v >= 0x80) {
        t[n++] = (unsigned char)(v | 0x80);
        v >>= 7;
    }
    t[n++] = (unsigned char)v;
    pb_raw(b, t, n);
}
static void pb_key(pbuf *b, unsigned field, unsigned wt) { pb_varint(b, (uint64_t)field << 3 | wt); }
static void pb_int(pbuf *b, unsigned field, int64_t v) {
    pb_key(b, field, 0);
    pb_varint(b, (uint64_t)v);
}
static void pb_bytes(pbuf *b, unsigned field, const void *p, size_t n) {
    pb_key(b, field, 2);
    pb_varint(b, n);
    pb_raw(b, p, n);
}
static void pb_str(pbuf *b, unsigned field, const char *s) { pb_bytes(b, field, s, strlen(s)); }
static void pb_f32(pbuf *b, unsigned field, float f) {
    pb_key(b, field, 5);
    pb_raw(b, &f, 4);
}
/* Appends sub as a length-delimited field and frees it. */
static void pb_msg(pbuf *b, unsigned field, pbuf *sub) {
    pb_bytes(b, field, sub->d, sub->n);
    free(sub->d);
    memset(sub, 0, sizeof *sub);
}

/* TensorProto header: dims, data_type, name. */
static pbuf tp_head(const char *name, int dtype, int rank, const int64_t *dims) {
    pbuf t = {0};
    for (int i = 0; i < rank; i++) pb_int(&t, 1, dims[i]);
    pb_int(&t, 2, dtype);
    pb_str(&t, 8, name);
    return t;
}

/* ValueInfoProto with a tensor type; dim < 0 means dim_param "N". */
static pbuf value_info(const char *name, int elem, int rank, const int64_t *dims) {
    pbuf shape = {0}, tt = {0}, type = {0}, vi = {0};
    for (int i = 0; i < rank; i++) {
        pbuf d = {0};
        if (dims[i] >= 0) pb_int(&d, 1, dims[i]);
        else pb_str(&d, 2, "N");
        pb_msg(&shape, 1, &d);
    }
    pb_int(&tt, 1, elem);
    pb_msg(&tt, 2, &shape);
    pb_msg(&type, 1, &tt);
    pb_str(&vi, 1, name);
    pb_msg(&vi, 2, &type);
    return vi;
}

static pbuf node(const char *op, const char *name, const char *in0, const char *in1,
                 const char *out) {
    pbuf n = {0};
    if (in0) pb_str(&n, 1, in0);
    if (in1) pb_str(&n, 1, in1);
    pb_str(&n, 2, out);
    if (name) pb_str(&n, 3, name);
    pb_str(&n, 4, op);
    return n;
}

/* ModelProto around a graph (consumed). */
static pbuf model_of(int64_t ir, pbuf *graph_msg) {
    pbuf m = {0}, op = {0};
    pb_int(&m, 1, ir);
    pb_str(&m, 2, "test");
    pb_str(&op, 1, "");
    pb_int(&op, 2, 17);
    pb_msg(&m, 8, &op);
    pb_str(&op, 1, "com.microsoft");
    pb_int(&op, 2, 1);
    pb_msg(&m, 8, &op);
    pb_msg(&m, 7, graph_msg);
    return m;
}

/* The graph of the valid tiny model: y = Add(x, w) with w a [2,3] float initializer,
 * plus a Constant c (dropped into an initializer) and y2 = Mul(y, c). */
static pbuf tiny_graph(void) {
    pbuf g = {0}, t, n, vi, a;
    int64_t dims[2] = {2, 3}, xdims[2] = {-1, 3};
    n = node("Add", "add0", "x", "w", "y");
    pb_msg(&g, 1, &n);
    /* Constant c = 2.5 */
    n = node("Constant", NULL, NULL, NULL, "c");
    a = (pbuf){0};
    pb_str(&a, 1, "value_float");
    pb_f32(&a, 2, 2.5f);
    pb_int(&a, 20, 1);
    pb_msg(&n, 5, &a);
    pb_msg(&g, 1, &n);
    n = node("Mul", NULL, "y", "c", "y2");
    pb_str(&n, 7, "ai.onnx");
    pb_msg(&g, 1, &n);
    pb_str(&g, 2, "tiny");
    t = tp_head("w", 1, 2, dims);
    float w[6] = {1, 2, 3, 4, 5, 6};
    pb_bytes(&t, 9, w, sizeof w);
    pb_msg(&g, 5, &t);
    vi = value_info("x", 1, 2, xdims);
    pb_msg(&g, 11, &vi);
    vi = value_info("w", 1, 2, dims); /* older IRs list initializers as inputs */
    pb_msg(&g, 11, &vi);
    vi = value_info("y2", 1, 2, xdims);
    pb_msg(&g, 12, &vi);
    /* unknown fields of every wire type are skipped */
    pb_int(&g, 100, 7);
    pb_key(&g, 101, 1);
    pb_raw(&g, "12345678", 8);
    pb_key(&g, 102, 5);
    pb_raw(&g, "1234", 4);
    pb_str(&g, 103, "skip me");
    return g;
}

static og_status *load(const pbuf *b, model **m) {
    return onnx_load_bytes(b->d, b->n, test_tmp_dir(), "t.onnx", m);
}

TEST(loader_tiny_model) {
    pbuf g = tiny_graph();
    pbuf mb = model_of(8, &g);
    model *m = NULL;
    og_status *st = load(&mb, &m);
    free(mb.d);
    CHECK_OK(st);
    const graph *gr = m->graph;
    CHECK_EQ_INT(m->ir_version, 8);
    CHECK(strcmp(m->producer_name, "test") == 0);
    CHECK_EQ_INT(m->n_opsets, 2);
    CHECK_EQ_INT(model_opset(m, ""), 17);
    CHECK_EQ_INT(model_opset(m, "com.microsoft"), 1);
    CHECK(strcmp(gr->name, "tiny") == 0);
    CHECK_EQ_INT(gr->n_nodes, 2); /* the Constant was folded */
    const graph_node *add = &gr->nodes[0], *mul = &gr->nodes[1];
    CHECK(strcmp(add->op_type, "Add") == 0 && strcmp(add->name, "add0") == 0);
    CHECK(strcmp(mul->domain, "") == 0);
    CHECK_EQ_INT(mul->opset, 17);
    CHECK_EQ_INT(mul->index, 1);
    int x = graph_find_value(gr, "x"), w = graph_find_value(gr, "w"),
        y = graph_find_value(gr, "y"), c = graph_find_value(gr, "c"),
        y2 = graph_find_value(gr, "y2");
    CHECK(x >= 0 && w >= 0 && y >= 0 && c >= 0 && y2 >= 0);
    CHECK_EQ_INT(add->inputs[0], x);
    CHECK_EQ_INT(add->inputs[1], w);
    CHECK_EQ_INT(add->outputs[0], y);
    CHECK_EQ_INT(gr->values[y].producer, 0);
    CHECK_EQ_INT(gr->values[y2].producer, 1);
    CHECK_EQ_INT(gr->n_inputs, 1);
    CHECK_EQ_INT(gr->inputs[0], x);
    CHECK(gr->values[x].is_input && !gr->values[w].is_input);
    CHECK_EQ_INT(gr->n_outputs, 1);
    CHECK(gr->values[y2].is_output);
    CHECK_EQ_INT(gr->values[x].rank, 2);
    CHECK_EQ_INT(gr->values[x].dims[0], -1);
    CHECK(gr->values[x].dim_names[0] && strcmp(gr->values[x].dim_names[0], "N") == 0);
    CHECK_EQ_INT(gr->values[x].dims[1], 3);
    CHECK_EQ_INT(gr->n_initializers, 2);
    const tensor *wt = gr->values[w].initializer;
    CHECK(wt && wt->dtype == OG_FLOAT32 && wt->rank == 2 && wt->dims[1] == 3);
    CHECK_EQ_INT(wt->nbytes, 24);
    CHECK_NEAR(((const float *)wt->data)[5], 6.0, 0);
    const tensor *ct = gr->values[c].initializer;
    CHECK(ct && ct->dtype == OG_FLOAT32 && ct->rank == 0);
    CHECK_NEAR(*(const float *)ct->data, 2.5, 0);
    CHECK_EQ_INT(gr->values[c].producer, -1);
    int order[2];
    CHECK_OK(graph_topo_order(gr, "t", order));
    model_free(m);
}

static og_status *load_tensor_model(pbuf *t, model **m) {
    pbuf g = {0}, vi;
    int64_t d1[1] = {1};
    pb_msg(&g, 5, t);
    vi = value_info("out", 1, 1, d1);
    pb_msg(&g, 12, &vi);
    pbuf mb = model_of(8, &g);
    og_status *st = load(&mb, m);
    free(mb.d);
    return st;
}

TEST(loader_float16_in_int32_data) {
    int64_t dims[1] = {3};
    pbuf t = tp_head("h", OG_FLOAT16, 1, dims);
    float vals[3] = {1.0f, -2.5f, 65504.0f};
    pbuf packed = {0};
    for (int i = 0; i < 3; i++) pb_varint(&packed, f32_to_f16(vals[i]));
    pb_bytes(&t, 5, packed.d, packed.n);
    free(packed.d);
    model *m;
    CHECK_OK(load_tensor_model(&t, &m));
    const tensor *h = m->graph->values[graph_find_value(m->graph, "h")].initializer;
    CHECK(h && h->dtype == OG_FLOAT16 && h->nbytes == 6);
    const uint16_t *p = h->data;
    for (int i = 0; i < 3; i++) CHECK_NEAR(f16_to_f32(p[i]), vals[i], 0);
    CHECK_EQ_INT(m->copied_bytes, 6);
    model_free(m);
}

TEST(loader_int4_packed_and_unpacked_fields) {
    int64_t dims[1] = {3};
    pbuf t = tp_head("q", OG_INT4, 1, dims);
    /* elements 1, 2, -3: bytes 0x21 and 0x0D, given one int32_data entry per field */
    pb_int(&t, 5, 0x21);
    pb_int(&t, 5, 0x0D);
    model *m;
    CHECK_OK(load_tensor_model(&t, &m));
    const tensor *q = m->graph->values[graph_find_value(m->graph, "q")].initializer;
    CHECK(q && q->dtype == OG_INT4 && q->nbytes == 2);
    CHECK_EQ_INT(((const uint8_t *)q->data)[0], 0x21);
    CHECK_EQ_INT(((const uint8_t *)q->data)[1], 0x0D);
    model_free(m);

    /* int64_data packed, float_data unpacked, uint64_data for uint32 */
    int64_t d2[1] = {2};
    t = tp_head("i", OG_INT64, 1, d2);
    pbuf pk = {0};
    pb_varint(&pk, (uint64_t)-5);
    pb_varint(&pk, 1ull << 40);
    pb_bytes(&t, 7, pk.d, pk.n);
    free(pk.d);
    CHECK_OK(load_tensor_model(&t, &m));
    const tensor *it = m->graph->values[graph_find_value(m->graph, "i")].initializer;
    CHECK_EQ_INT(((const int64_t *)it->data)[0], -5);
    CHECK_EQ_INT(((const int64_t *)it->data)[1], 1ll << 40);
    model_free(m);
    t = tp_head("u", OG_UINT32, 1, d2);
    pb_int(&t, 11, 7);
    pb_int(&t, 11, 4000000000ll);
    CHECK_OK(load_tensor_model(&t, &m));
    const tensor *ut = m->graph->values[graph_find_value(m->graph, "u")].initializer;
    CHECK_EQ_INT(((const uint32_t *)ut->data)[1], 4000000000ll);
    model_free(m);
}

static void write_file(const char *path, const void *p, size_t n) {
    FILE *f = fopen(path, "wb");
    if (!f) return;
    fwrite(p, 1, n, f);
    fclose(f);
}

static pbuf external_tensor(const char *name, const char *loc, const char *off, const char *len,
                            int64_t count) {
    pbuf t = tp_head(name, OG_FLOAT32, 1, &count), e = {0};
    pb_str(&e, 1, "location");
    pb_str(&e, 2, loc);
    pb_msg(&t, 13, &e);
    if (off) {
        pb_str(&e, 1, "offset");
        pb_str(&e, 2, off);
        pb_msg(&t, 13, &e);
    }
    if (len) {
        pb_str(&e, 1, "length");
        pb_str(&e, 2, len);
        pb_msg(&t, 13, &e);
    }
    pb_int(&t, 14, 1);
    return t;
}

TEST(loader_external_data) {
    float data[32];
    for (int i = 0; i < 32; i++) data[i] = (float)i;
    char path[1024];
    snprintf(path, sizeof path, "%s/w.bin", test_tmp_dir());
    write_file(path, data, sizeof data);
    pbuf g = {0}, vi;
    int64_t d1[1] = {1};
    pbuf t = external_tensor("a", "w.bin", "64", "16", 4);
    pb_msg(&g, 5, &t);
    t = external_tensor("b", "./w.bin", NULL, NULL, 32); /* whole file, same file again */
    pb_msg(&g, 5, &t);
    t = external_tensor("c", "w.bin", "2", "16", 4); /* misaligned: copied */
    pb_msg(&g, 5, &t);
    vi = value_info("a", 1, 1, d1);
    pb_msg(&g, 12, &vi);
    pbuf mb = model_of(8, &g);
    snprintf(path, sizeof path, "%s/ext.onnx", test_tmp_dir());
    write_file(path, mb.d, mb.n);
    free(mb.d);
    model *m;
    CHECK_OK(onnx_load_file(path, &m));
    const graph *gr = m->graph;
    const tensor *a = gr->values[graph_find_value(gr, "a")].initializer;
    const tensor *b = gr->values[graph_find_value(gr, "b")].initializer;
    const tensor *c = gr->values[graph_find_value(gr, "c")].initializer;
    CHECK(a && b && c);
    CHECK_NEAR(((const float *)a->data)[0], 16.0, 0);
    CHECK_NEAR(((const float *)a->data)[3], 19.0, 0);
    CHECK_NEAR(((const float *)b->data)[31], 31.0, 0);
    CHECK(memcmp(c->data, (const char *)data + 2, 16) == 0);
    CHECK_EQ_INT(m->copied_bytes, 16);
    /* "w.bin" and "./w.bin" are two spellings; each distinct location maps once */
    CHECK(m->n_external_files >= 1 && m->n_external_files <= 2);
    CHECK(strcmp(m->external_files[0], "w.bin") == 0);
    CHECK_EQ_INT(m->n_mappings, 1 + m->n_external_files);
    model_free(m);
}

TEST(loader_subgraph_outer_scope) {
    /* If(cond) then: z = Identity(x) (x from the outer graph), else: z = Identity(k) */
    pbuf then_g = {0}, else_g = {0}, n, vi, a = {0}, g = {0};
    int64_t d1[1] = {1};
    n = node("Identity", NULL, "x", NULL, "z");
    pb_msg(&then_g, 1, &n);
    vi = value_info("z", 1, 1, d1);
    pb_msg(&then_g, 12, &vi);
    n = node("Identity", NULL, "k", NULL, "z");
    pb_msg(&else_g, 1, &n);
    vi = value_info("z", 1, 1, d1);
    pb_msg(&else_g, 12, &vi);
    n = node("If", "if0", "cond", NULL, "out");
    pb_str(&a, 1, "then_branch");
    pb_int(&a, 20, 5);
    pb_msg(&a, 6, &then_g);
    pb_msg(&n, 5, &a);
    pb_str(&a, 1, "else_branch");
    pb_int(&a, 20, 5);
    pb_msg(&a, 6, &else_g);
    pb_msg(&n, 5, &a);
    pb_msg(&g, 1, &n);
    vi = value_info("cond", 9, 0, NULL);
    pb_msg(&g, 11, &vi);
    vi = value_info("x", 1, 1, d1);
    pb_msg(&g, 11, &vi);
    vi = value_info("out", 1, 1, d1);
    pb_msg(&g, 12, &vi);
    pbuf mb = model_of(8, &g);
    model *m;
    og_status *st = load(&mb, &m);
    free(mb.d);
    CHECK_OK(st);
    const graph_node *ifn = &m->graph->nodes[0];
    const graph_attr *tb = graph_attr_find(ifn, "then_branch");
    const graph_attr *eb = graph_attr_find(ifn, "else_branch");
    CHECK(tb && tb->type == ATTR_GRAPH && tb->g && tb->g->parent == m->graph);
    CHECK(eb && eb->g);
    const graph *sg = tb->g;
    CHECK(sg->values[graph_find_value(sg, "x")].from_outer_scope);
    CHECK(!sg->values[graph_find_value(sg, "z")].from_outer_scope);
    /* k is defined nowhere: stays a dangling value for topo order to report */
    const graph *se = eb->g;
    CHECK(!se->values[graph_find_value(se, "k")].from_outer_scope);
    int order[1];
    og_status *ts = graph_topo_order(se, "else", order);
    CHECK_ERR(ts, OG_ERR_INVALID_MODEL, "'k'");
    model_free(m);
}

TEST(loader_attributes) {
    pbuf g = {0}, n, a = {0};
    n = node("Foo", NULL, "x", NULL, "y");
    pb_str(&a, 1, "ints");
    pb_int(&a, 20, 7);
    pb_int(&a, 8, -1);
    pb_int(&a, 8, 5);
    pb_msg(&n, 5, &a);
    pb_str(&a, 1, "floats"); /* packed */
    pb_int(&a, 20, 6);
    float fl[2] = {0.5f, -1};
    pb_bytes(&a, 7, fl, sizeof fl);
    pb_msg(&n, 5, &a);
    pb_str(&a, 1, "s");
    pb_int(&a, 20, 3);
    pb_str(&a, 4, "hello");
    pb_msg(&n, 5, &a);
    pb_str(&a, 1, "strs");
    pb_int(&a, 20, 8);
    pb_str(&a, 9, "p");
    pb_str(&a, 9, "qq");
    pb_msg(&n, 5, &a);
    pb_msg(&g, 1, &n);
    pbuf mb = model_of(8, &g);
    model *m;
    og_status *st = load(&mb, &m);
    free(mb.d);
    CHECK_OK(st);
    const graph_node *nd = &m->graph->nodes[0];
    const int64_t *iv;
    CHECK_EQ_INT(graph_attr_ints(nd, "ints", &iv), 2);
    CHECK_EQ_INT(iv[0], -1);
    CHECK_EQ_INT(iv[1], 5);
    const float *fv;
    CHECK_EQ_INT(graph_attr_floats(nd, "floats", &fv), 2);
    CHECK_NEAR(fv[1], -1.0, 0);
    CHECK(strcmp(graph_attr_string(nd, "s", ""), "hello") == 0);
    const graph_attr *sa = graph_attr_find(nd, "strs");
    CHECK(sa && sa->n == 2 && sa->strings[1].len == 2 && strcmp(sa->strings[1].s, "qq") == 0);
    CHECK_EQ_INT(nd->opset, 17);
    model_free(m);
}

/* What onnxruntime refuses of any node, whatever its op: an attribute without a type
 * (even in an IR 3 file, where the value's field could tell it) and one given twice. */
TEST(loader_refuses_typeless_and_repeated_attributes) {
    for (int c = 0; c < 3; c++) {
        pbuf g = {0}, n, a = {0};
        n = node("Foo", NULL, "x", NULL, "y");
        pb_str(&a, 1, "alpha");
        if (c != 0) pb_int(&a, 20, 1);
        pb_f32(&a, 2, 0.5f);
        pb_msg(&n, 5, &a);
        if (c == 2) { /* the same name again, of another type */
            pb_str(&a, 1, "alpha");
            pb_int(&a, 20, 2);
            pb_int(&a, 3, 1);
            pb_msg(&n, 5, &a);
        }
        pb_msg(&g, 1, &n);
        pbuf mb = model_of(c == 0 ? 3 : 8, &g);
        model *m = NULL;
        og_status *st = load(&mb, &m);
        free(mb.d);
        if (c == 0)
            CHECK_ERR(st, OG_ERR_INVALID_MODEL, "node #0 (Foo): attribute 'alpha' has no type");
        else if (c == 1) {
            CHECK_OK(st);
            model_free(m);
        } else
            CHECK_ERR(st, OG_ERR_INVALID_MODEL,
                      "node #0 (Foo): attribute 'alpha' is given more than once");
    }
}

TEST(loader_tensor_file_roundtrip) {
    tensor t;
    memset(&t, 0, sizeof t);
    int64_t dims[2] = {2, 2};
    CHECK_OK(tensor_set_shape(&t, OG_INT32, 2, dims));
    CHECK_OK(tensor_alloc_data(&t));
    for (int i = 0; i < 4; i++) ((int32_t *)t.data)[i] = i * 10 - 5;
    char path[1024];
    snprintf(path, sizeof path, "%s/t.pb", test_tmp_dir());
    og_status *st = onnx_write_tensor_file(path, &t, "tt");
    tensor_release(&t);
    CHECK_OK(st);
    tensor r;
    char *name = NULL;
    CHECK_OK(onnx_read_tensor_file(path, &r, &name));
    CHECK(name && strcmp(name, "tt") == 0);
    free(name);
    CHECK(r.dtype == OG_INT32 && r.rank == 2 && r.dims[0] == 2 && r.owns_data);
    CHECK_EQ_INT(((int32_t *)r.data)[3], 25);
    tensor_release(&r);
    snprintf(path, sizeof path, "%s/missing.pb", test_tmp_dir());
    CHECK_ERR(onnx_read_tensor_file(path, &r, NULL), OG_ERR_NOT_FOUND, "missing.pb");
}

/* --- the bad-input table ---------------------------------------------------------- */

static og_status *load_raw(const void *p, size_t n) {
    model *m = NULL;
    og_status *st = onnx_load_bytes(p, n, test_tmp_dir(), "bad.onnx", &m);
    model_free(m);
    return st;
}

static og_status *load_init(pbuf *t) {
    model *m = NULL;
    og_status *st = load_tensor_model(t, &m);
    model_free(m);
    return st;
}

TEST(loader_bad_wire) {
    pbuf g = tiny_graph();
    pbuf mb = model_of(8, &g);
    /* truncated anywhere inside the graph */
    CHECK_ERR(load_raw(mb.d, mb.n - 5), OG_ERR_INVALID_MODEL, "truncated: field 7 of ModelProto");
    CHECK_ERR(load_raw(mb.d, 1), OG_ERR_INVALID_MODEL, "bad.onnx: field 1 of ModelProto");
    free(mb.d);
    /* ir_version given as a string */
    pbuf b = {0};
    pb_str(&b, 1, "8");
    CHECK_ERR(load_raw(b.d, b.n), OG_ERR_INVALID_MODEL, "field 1 (ir_version) of ModelProto");
    free(b.d);
    /* a varint of 11 bytes, and one with bits past 64 */
    unsigned char ov[] = {0x08, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01};
    CHECK_ERR(load_raw(ov, sizeof ov), OG_ERR_INVALID_MODEL, "overflows 64 bits");
    unsigned char ov2[] = {0x08, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f};
    CHECK_ERR(load_raw(ov2, sizeof ov2), OG_ERR_INVALID_MODEL, "overflows 64 bits");
    /* a length past the end */
    unsigned char len[] = {0x08, 0x08, 0x3a, 0x90, 0x4e, 0x01, 0x02};
    CHECK_ERR(load_raw(len, sizeof len), OG_ERR_INVALID_MODEL,
              "truncated: field 7 of ModelProto needs 10000 bytes at offset 5, only 2 remain");
    /* groups and wire types 6/7 */
    unsigned char grp[] = {0x08, 0x08, 0x1b};
    CHECK_ERR(load_raw(grp, sizeof grp), OG_ERR_INVALID_MODEL, "wire type 3 (start-group)");
    unsigned char wt7[] = {0x08, 0x08, 0x1f};
    CHECK_ERR(load_raw(wt7, sizeof wt7), OG_ERR_INVALID_MODEL, "wire type 7");
    /* empty input and missing graph */
    CHECK_ERR(load_raw("", 0), OG_ERR_INVALID_MODEL, "no ir_version");
    unsigned char nog[] = {0x08, 0x08};
    CHECK_ERR(load_raw(nog, sizeof nog), OG_ERR_INVALID_MODEL, "no graph");
}

TEST(loader_bad_ir_version) {
    pbuf g = tiny_graph();
    pbuf mb = model_of(99, &g);
    CHECK_ERR(load_raw(mb.d, mb.n), OG_ERR_UNSUPPORTED, "bad.onnx: IR version 99 is not supported");
    free(mb.d);
    g = tiny_graph();
    mb = model_of(2, &g);
    CHECK_ERR(load_raw(mb.d, mb.n), OG_ERR_UNSUPPORTED, "IR version 2");
    free(mb.d);
}

TEST(loader_bad_tensors) {
    int64_t d23[2] = {2, 3}, dneg[2] = {2, -3}, dbig[3] = {1ll << 40, 1ll << 40, 1ll << 40};
    pbuf t = tp_head("w", OG_FLOAT32, 2, d23);
    pb_bytes(&t, 9, "0123456789ab", 12);
    CHECK_ERR(load_init(&t), OG_ERR_INVALID_MODEL,
              "t.onnx: initializer 'w': raw_data has 12 bytes, dims [2,3] of float32 need 24");
    t = tp_head("w", OG_FLOAT32, 2, dneg);
    CHECK_ERR(load_init(&t), OG_ERR_INVALID_MODEL, "t.onnx: initializer 'w': dim 1 is -3");
    t = tp_head("w", OG_FLOAT32, 3, dbig);
    CHECK_ERR(load_init(&t), OG_ERR_INVALID_MODEL, "initializer 'w': dims");
    int64_t d9[9] = {1, 1, 1, 1, 1, 1, 1, 1, 1};
    t = tp_head("w", OG_FLOAT32, 9, d9);
    CHECK_ERR(load_init(&t), OG_ERR_UNSUPPORTED, "initializer 'w': rank 9");
    t = tp_head("w", OG_FLOAT32, 2, d23);
    pb_f32(&t, 4, 1.0f);
    CHECK_ERR(load_init(&t), OG_ERR_INVALID_MODEL, "float_data has 1 entries, dims [2,3]");
    t = tp_head("w", OG_INT64, 2, d23);
    pb_f32(&t, 4, 1.0f);
    CHECK_ERR(load_init(&t), OG_ERR_INVALID_MODEL, "float_data is not valid for a int64 tensor");
    t = tp_head("w", 77, 2, d23);
    CHECK_ERR(load_init(&t), OG_ERR_INVALID_MODEL, "invalid data_type 77");
    t = tp_head("w", OG_FLOAT32, 2, d23);
    pb_f32(&t, 2, 1.0f); /* data_type with the wrong wire type */
    CHECK_ERR(load_init(&t), OG_ERR_INVALID_MODEL, "field 2 (data_type) of TensorProto");
}

TEST(loader_bad_external_data) {
    float data[25] = {0};
    char path[1024];
    snprintf(path, sizeof path, "%s/short.bin", test_tmp_dir());
    write_file(path, data, 100);
    pbuf t = external_tensor("w", "nothere.bin", NULL, NULL, 4);
    CHECK_ERR(load_init(&t), OG_ERR_NOT_FOUND, "t.onnx: initializer 'w': external data 'nothere.bin'");
    t = external_tensor("w", "short.bin", "64", "80", 20);
    CHECK_ERR(load_init(&t), OG_ERR_INVALID_MODEL,
              "t.onnx: initializer 'w': external data 'short.bin' is 100 bytes, offset 64 + "
              "length 80 runs past its end");
    t = external_tensor("w", "short.bin", "200", NULL, 1);
    CHECK_ERR(load_init(&t), OG_ERR_INVALID_MODEL, "offset 200 is past its end");
    t = external_tensor("w", "short.bin", "0", "100", 20);
    CHECK_ERR(load_init(&t), OG_ERR_INVALID_MODEL, "has length 100, dims [20] of float32 need 80");
    t = external_tensor("w", "../short.bin", NULL, NULL, 25);
    CHECK_ERR(load_init(&t), OG_ERR_INVALID_MODEL,
              "t.onnx: initializer 'w': external data location is '../short.bin': the path "
              "goes up with '..'");
    t = external_tensor("w", "/etc/passwd", NULL, NULL, 25);
    CHECK_ERR(load_init(&t), OG_ERR_INVALID_MODEL, "'/etc/passwd': the path is absolute");
    t = external_tensor("w", "sub\\..\\..\\short.bin", NULL, NULL, 25);
    CHECK_ERR(load_init(&t), OG_ERR_INVALID_MODEL, "goes up with '..'");
    t = external_tensor("w", "short.bin", "x1", NULL, 25);
    CHECK_ERR(load_init(&t), OG_ERR_INVALID_MODEL, "offset 'x1' is not a decimal number");
    /* loaded from memory without a base folder */
    t = external_tensor("w", "short.bin", NULL, NULL, 25);
    pbuf g = {0};
    pb_msg(&g, 5, &t);
    pbuf mb = model_of(8, &g);
    model *m = NULL;
    CHECK_ERR(onnx_load_bytes(mb.d, mb.n, NULL, "mem.onnx", &m), OG_ERR_INVALID_MODEL,
              "mem.onnx: initializer 'w': uses external data 'short.bin'");
    free(mb.d);
}

TEST(loader_bad_graph) {
    /* two producers of one value */
    pbuf g = {0}, n;
    n = node("Relu", "a", "x", NULL, "y");
    pb_msg(&g, 1, &n);
    n = node("Relu", "b", "x", NULL, "y");
    pb_msg(&g, 1, &n);
    pbuf mb = model_of(8, &g);
    CHECK_ERR(load_raw(mb.d, mb.n), OG_ERR_INVALID_MODEL, "node 'b' (Relu): output 'y' is also produced");
    free(mb.d);
    /* a graph input that a node also produces */
    g = (pbuf){0};
    n = node("Relu", "r", "x", NULL, "x2");
    pb_msg(&g, 1, &n);
    int64_t d1[1] = {1};
    pbuf vi = value_info("x2", 1, 1, d1);
    pb_msg(&g, 11, &vi);
    mb = model_of(8, &g);
    CHECK_ERR(load_raw(mb.d, mb.n), OG_ERR_INVALID_MODEL, "graph input 'x2' is also the output");
    free(mb.d);
    /* Constant with a sparse value (a string value is a string tensor) */
    pbuf a = {0};
    g = (pbuf){0};
    n = node("Constant", "k", NULL, NULL, "y");
    pb_str(&a, 1, "sparse_value");
    pb_int(&a, 20, 3);
    pb_str(&a, 4, "s");
    pb_msg(&n, 5, &a);
    pb_msg(&g, 1, &n);
    mb = model_of(8, &g);
    CHECK_ERR(load_raw(mb.d, mb.n), OG_ERR_UNSUPPORTED, "node 'k' (Constant): Constant attribute 'sparse_value'");
    free(mb.d);
    /* subgraphs nested 100 deep */
    pbuf inner = {0};
    for (int d = 0; d < 100; d++) {
        pbuf nn = node("If", NULL, "c", NULL, "o"), at = {0}, gg = {0};
        pb_str(&at, 1, "then_branch");
        pb_int(&at, 20, 5);
        pb_msg(&at, 6, &inner);
        pb_msg(&nn, 5, &at);
        pb_msg(&gg, 1, &nn);
        inner = gg;
    }
    mb = model_of(8, &inner);
    CHECK_ERR(load_raw(mb.d, mb.n), OG_ERR_INVALID_MODEL, "nest deeper than 64");
    free(mb.d);
    /* sparse initializer */
    g = (pbuf){0};
    pb_str(&g, 15, "");
    mb = model_of(8, &g);
    CHECK_ERR(load_raw(mb.d, mb.n), OG_ERR_UNSUPPORTED, "sparse_initializer is not supported");
    free(mb.d);
}

TEST(loader_real_gpt2_past) {
    char path[2048];
    snprintf(path, sizeof path,
             "%s/models/ortgenai/hf-internal-testing/tiny-random-gpt2-fp32/past.onnx",
             test_shared_dir());
    FILE *f = fopen(path, "rb");
    if (!f) {
        test_skip("%s not found", path);
        return;
    }
    fclose(f);
    model *m;
    CHECK_OK(onnx_load_file(path, &m));
    /* facts checked with the onnx Python package */
    CHECK_EQ_INT(m->ir_version, 6);
    CHECK_EQ_INT(model_opset(m, ""), 11);
    CHECK_EQ_INT(model_opset(m, "com.microsoft"), 1);
    const graph *g = m->graph;
    CHECK_EQ_INT(g->n_nodes, 39);
    CHECK_EQ_INT(g->n_initializers, 27);
    CHECK_EQ_INT(g->n_inputs, 8);
    CHECK_EQ_INT(g->n_outputs, 6);
    int w = graph_find_value(g, "transformer.wte.weight");
    CHECK(w >= 0 && g->values[w].initializer);
    const tensor *t = g->values[w].initializer;
    CHECK(t->dtype == OG_FLOAT32 && t->rank == 2 && t->dims[0] == 1000 && t->dims[1] == 32);
    CHECK_EQ_INT((uintptr_t)t->data % 4, 0);
    int ids = graph_find_value(g, "input_ids");
    CHECK(ids >= 0 && g->values[ids].is_input && g->values[ids].dtype == OG_INT32);
    CHECK(g->values[ids].dim_names[0] && strcmp(g->values[ids].dim_names[0], "batch_size") == 0);
    int *order = malloc(sizeof(int) * (size_t)g->n_nodes);
    og_status *st = graph_topo_order(g, path, order);
    free(order);
    CHECK_OK(st);
    model_free(m);
}

/* IR >= 4: an input that also has an initializer and is declared to take other shapes
 * (a symbolic dim) is an input with a default, as onnxruntime overrides such initializers
 * (LoRA weights an adapter feeds): a run that leaves it out gets the initializer, one that
 * feeds it computes with the fed value, and nothing treats it as a constant. An input
 * declared exactly as its initializer stays a constant (tiny_graph's w, above). */
TEST(loader_input_with_default) {
    pbuf g = {0}, n = node("Add", "add", "x", "w", "y"), t, vi;
    pb_msg(&g, 1, &n);
    pb_str(&g, 2, "defaults");
    int64_t wdims[2] = {1, 3}, sym[2] = {-1, 3};
    t = tp_head("w", 1, 2, wdims);
    float w[3] = {1, 2, 3};
    pb_bytes(&t, 9, w, sizeof w);
    pb_msg(&g, 5, &t);
    vi = value_info("x", 1, 2, sym);
    pb_msg(&g, 11, &vi);
    vi = value_info("w", 1, 2, sym); /* [N, 3]: other shapes than [1, 3] */
    pb_msg(&g, 11, &vi);
    vi = value_info("y", 1, 2, sym);
    pb_msg(&g, 12, &vi);
    pbuf mb = model_of(8, &g);
    model *m = NULL;
    og_status *st = load(&mb, &m);
    if (st) free(mb.d);
    CHECK_OK(st);
    const graph *gr = m->graph;
    int wv = graph_find_value(gr, "w");
    CHECK_EQ_INT(gr->n_inputs, 2);
    CHECK(wv >= 0 && gr->values[wv].is_input && !gr->values[wv].initializer);
    CHECK(gr->values[wv].default_value && gr->values[wv].default_value->dims[0] == 1);
    CHECK_EQ_INT(gr->values[wv].dims[0], -1); /* the declared type, not the initializer's */
    CHECK_EQ_INT(gr->n_initializers, 0);
    model_free(m);

    og_session *s = NULL;
    st = og_session_open_bytes(mb.d, mb.n, NULL, NULL, &s);
    if (st) free(mb.d);
    CHECK_OK(st);
    float xs[6] = {0, 0, 0, 10, 10, 10}, fed[6] = {5, 6, 7, 8, 9, 10};
    int64_t xd[2] = {2, 3};
    og_tensor *x = NULL, *wt = NULL, *y = NULL;
    st = og_tensor_wrap(OG_FLOAT32, xd, 2, xs, sizeof xs, &x);
    if (!st) st = og_tensor_wrap(OG_FLOAT32, xd, 2, fed, sizeof fed, &wt);
    const char *in_names[2] = {"x", "w"}, *out_names[1] = {"y"};
    og_tensor *ins[2] = {x, wt};
    if (!st) st = og_session_run(s, in_names, ins, 1, out_names, &y, 1); /* w left out */
    bool ok = !st;
    for (int i = 0; ok && i < 6; i++) ok = ((const float *)og_tensor_data(y))[i] == xs[i] + w[i % 3];
    og_tensor_free(y);
    y = NULL;
    if (!st) st = og_session_run(s, in_names, ins, 2, out_names, &y, 1); /* w fed [2, 3] */
    for (int i = 0; ok && !st && i < 6; i++)
        ok = ((const float *)og_tensor_data(y))[i] == xs[i] + fed[i];
    og_tensor_free(y);
    og_tensor_free(x);
    og_tensor_free(wt);
    og_session_close(s);
    free(mb.d);
    CHECK_OK(st);
    CHECK(ok);
}
