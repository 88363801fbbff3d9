/* The ONNX model writer of `convert`: GraphProto fields gathered in three buffers (nodes,
 * initializers, inputs/outputs), weights appended to the data file as they come. */
#include "convert/onnx_out.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

enum { DATA_ALIGN = 64 }; /* as tools/model_maker/graph.py: any element type, SIMD loads */

static void fail(onnx_out *o, og_status *st) {
    if (!o->err) o->err = st;
    else og_status_free(st);
}

static char *join(const char *dir, const char *name) {
    size_t n = strlen(dir) + strlen(name) + 2;
    char *p = malloc(n);
    if (p) snprintf(p, n, "%s/%s", dir, name);
    return p;
}

og_status *onnx_out_open(onnx_out *o, const char *dir, const char *filename) {
    memset(o, 0, sizeof *o);
    arena_init(&o->names);
    o->path = join(dir, filename);
    char *dn = o->path ? arena_alloc(&o->names, strlen(filename) + 6) : NULL;
    if (!dn) {
        onnx_out_abort(o);
        return og_oom();
    }
    sprintf(dn, "%s.data", filename);
    o->data_name = dn;
    o->data_path = join(dir, dn);
    if (!o->data_path) {
        onnx_out_abort(o);
        return og_oom();
    }
    o->data = fopen(o->data_path, "wb");
    /* weights come a row at a time: 1 MiB writes, not 4 KiB ones (a 1B model's 771 MiB
     * took 196755 write calls) */
    o->data_buf = o->data ? malloc(1 << 20) : NULL;
    if (o->data_buf) setvbuf(o->data, o->data_buf, _IOFBF, 1 << 20);
    if (!o->data) {
        og_status *st = og_errorf(OG_ERR_IO, "%s: cannot create: %s", o->data_path,
                                  strerror(errno));
        onnx_out_abort(o);
        return st;
    }
    return NULL;
}

static void release(onnx_out *o) {
    if (o->data) fclose(o->data);
    free(o->data_buf); /* after the stream that used it */
    free(o->path);
    free(o->data_path);
    pb_free(&o->nodes);
    pb_free(&o->inits);
    pb_free(&o->io);
    for (size_t i = 0; i < o->n_consts; i++) free(o->consts[i]);
    free(o->consts);
    arena_free(&o->names);
    if (o->err) og_status_free(o->err);
    memset(o, 0, sizeof *o);
}

void onnx_out_abort(onnx_out *o) {
    /* no half-written weights left behind for a later load to trip over */
    if (o->data_path && o->data) remove(o->data_path);
    release(o);
}

const char *onnx_fmt(onnx_out *o, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    char *s = n >= 0 ? arena_alloc(&o->names, (size_t)n + 1) : NULL;
    if (!s) {
        fail(o, og_oom());
        return "";
    }
    va_start(ap, fmt);
    vsnprintf(s, (size_t)n + 1, fmt, ap);
    va_end(ap);
    return s;
}

const char *onnx_node(onnx_out *o, const char *op, const char *domain, const char *name,
                      const char *const *ins, int n_in, const char *const *outs, int n_out,
                      const onnx_attr *attrs, int n_attrs) {
    pbuf n = {0};
    for (int i = 0; i < n_in; i++) pb_str(&n, 1, ins[i]);
    for (int i = 0; i < n_out; i++) pb_str(&n, 2, outs[i]);
    pb_str(&n, 3, name);
    pb_str(&n, 4, op);
    for (int i = 0; i < n_attrs; i++) {
        pbuf a = {0};
        pb_str(&a, 1, attrs[i].name);
        if (attrs[i].kind == OA_INT) {
            pb_varint(&a, 3, (uint64_t)attrs[i].i);
            pb_varint(&a, 20, 2);
        } else if (attrs[i].kind == OA_FLOAT) {
            pb_f32(&a, 2, attrs[i].f);
            pb_varint(&a, 20, 1);
        } else {
            pb_str(&a, 4, attrs[i].s);
            pb_varint(&a, 20, 3);
        }
        pb_msg(&n, 5, &a);
        pb_free(&a);
    }
    if (domain && domain[0]) pb_str(&n, 7, domain);
    pb_msg(&o->nodes, 1, &n);
    pb_free(&n);
    return n_out ? outs[0] : NULL;
}

void onnx_io(onnx_out *o, bool output, const char *name, int elem_type, int ndims,
             const int64_t *dims, const char *const *dim_names) {
    pbuf shape = {0}, tensor = {0}, type = {0}, vi = {0};
    for (int i = 0; i < ndims; i++) {
        pbuf d = {0};
        if (dim_names && dim_names[i]) pb_str(&d, 2, dim_names[i]);
        else pb_varint(&d, 1, (uint64_t)dims[i]);
        pb_msg(&shape, 1, &d);
        pb_free(&d);
    }
    pb_varint(&tensor, 1, (uint64_t)elem_type);
    pb_msg(&tensor, 2, &shape);
    pb_msg(&type, 1, &tensor);
    pb_str(&vi, 1, name);
    pb_msg(&vi, 2, &type);
    pb_msg(&o->io, output ? 12 : 11, &vi);
    pb_free(&shape);
    pb_free(&tensor);
    pb_free(&type);
    pb_free(&vi);
}

/* "[1, 2]" or "1", as the builder spells constant values in names */
static const char *i64_text(onnx_out *o, const int64_t *v, int n, bool scalar) {
    char buf[512];
    size_t len = 0;
    if (!scalar) buf[len++] = '[';
    for (int i = 0; i < n && len < sizeof buf - 40; i++)
        len += (size_t)snprintf(buf + len, sizeof buf - len, "%s%" PRId64, i ? ", " : "", v[i]);
    if (!scalar) buf[len++] = ']';
    buf[len] = 0;
    return onnx_fmt(o, "%s", buf);
}

/* A Constant node whose output is `name` (/model/constants/TYPE/TEXT; the node is
 * /model/constant_nodes/TYPE/TEXT), written once per name. */
static const char *const_node(onnx_out *o, const char *name, int type, bool scalar, int64_t n,
                              const void *raw, size_t bytes) {
    for (size_t i = 0; i < o->n_consts; i++)
        if (!strcmp(o->consts[i], name)) return name;
    if (o->n_consts == o->cap_consts) {
        size_t cap = o->cap_consts ? 2 * o->cap_consts : 32;
        char **p = realloc(o->consts, cap * sizeof *p);
        if (!p) {
            fail(o, og_oom());
            return name;
        }
        o->consts = p;
        o->cap_consts = cap;
    }
    if (!(o->consts[o->n_consts] = strdup(name))) {
        fail(o, og_oom());
        return name;
    }
    o->n_consts++;
    pbuf t = {0}, a = {0};
    if (!scalar) pb_packed_i64(&t, 1, &n, 1);
    pb_varint(&t, 2, (uint64_t)type);
    pb_str(&t, 8, name);
    pb_bytes(&t, 9, raw, bytes);
    pb_str(&a, 1, "value");
    pb_msg(&a, 5, &t);
    pb_varint(&a, 20, 4);
    /* "/model/constants/..." -> "/model/constant_nodes/..." */
    const char *node_name = onnx_fmt(o, "/model/constant_nodes/%s", name + 17);
    pbuf nd = {0};
    pb_str(&nd, 2, name);
    pb_str(&nd, 3, node_name);
    pb_str(&nd, 4, "Constant");
    pb_msg(&nd, 5, &a);
    pb_msg(&o->nodes, 1, &nd);
    pb_free(&t);
    pb_free(&a);
    pb_free(&nd);
    return name;
}

const char *onnx_const_i64(onnx_out *o, const int64_t *v, int n, bool scalar) {
    const char *name = onnx_fmt(o, "/model/constants/INT64/%s", i64_text(o, v, n, scalar));
    return const_node(o, name, OX_INT64, scalar, n, v, (size_t)n * 8);
}

const char *onnx_const_f32(onnx_out *o, float v, const char *text) {
    const char *name = onnx_fmt(o, "/model/constants/FLOAT/%s", text);
    return const_node(o, name, OX_FLOAT, true, 1, &v, 4);
}

void onnx_init_begin(onnx_out *o, const char *name, int elem_type, const int64_t *dims,
                     int ndims) {
    static const uint8_t zeros[DATA_ALIGN];
    size_t pad = (size_t)((DATA_ALIGN - o->offset % DATA_ALIGN) % DATA_ALIGN);
    onnx_init_write(o, zeros, pad);
    o->init_name = onnx_fmt(o, "%s", name);
    o->init_type = elem_type;
    o->init_ndims = ndims;
    memcpy(o->init_dims, dims, (size_t)ndims * sizeof *dims);
    o->init_start = o->offset;
}

void onnx_init_write(onnx_out *o, const void *data, size_t n) {
    if (!n || o->err) return;
    if (fwrite(data, 1, n, o->data) != n)
        fail(o, og_errorf(OG_ERR_IO, "%s: write failed: %s", o->data_path, strerror(errno)));
    o->offset += n;
}

static void ext_entry(pbuf *t, const char *k, const char *v) {
    pbuf e = {0};
    pb_str(&e, 1, k);
    pb_str(&e, 2, v);
    pb_msg(t, 13, &e);
    pb_free(&e);
}

const char *onnx_init_end(onnx_out *o) {
    pbuf t = {0};
    char num[32];
    pb_packed_i64(&t, 1, o->init_dims, (size_t)o->init_ndims);
    pb_varint(&t, 2, (uint64_t)o->init_type);
    pb_str(&t, 8, o->init_name);
    ext_entry(&t, "location", o->data_name);
    snprintf(num, sizeof num, "%" PRIu64, o->init_start);
    ext_entry(&t, "offset", num);
    snprintf(num, sizeof num, "%" PRIu64, o->offset - o->init_start);
    ext_entry(&t, "length", num);
    pb_varint(&t, 14, 1); /* data_location EXTERNAL */
    pb_msg(&o->inits, 5, &t);
    pb_free(&t);
    return o->init_name;
}

const char *onnx_init(onnx_out *o, const char *name, int elem_type, const int64_t *dims,
                      int ndims, const void *data, size_t n) {
    onnx_init_begin(o, name, elem_type, dims, ndims);
    onnx_init_write(o, data, n);
    return onnx_init_end(o);
}

static void opset(pbuf *m, const char *domain, int64_t version) {
    pbuf s = {0};
    pb_str(&s, 1, domain);
    pb_varint(&s, 2, (uint64_t)version);
    pb_msg(m, 8, &s);
    pb_free(&s);
}

og_status *onnx_out_finish(onnx_out *o, const char *producer) {
    if (fclose(o->data) != 0)
        fail(o, og_errorf(OG_ERR_IO, "%s: write failed: %s", o->data_path, strerror(errno)));
    o->data = NULL;
    if (!pb_ok(&o->nodes) || !pb_ok(&o->inits) || !pb_ok(&o->io)) fail(o, og_oom());
    if (o->err) {
        og_status *st = o->err;
        o->err = NULL;
        if (o->data_path) remove(o->data_path);
        release(o);
        return st;
    }
    /* the graph message goes out in pieces: its header, then the three buffers */
    pbuf head = {0}, gname = {0};
    pb_varint(&head, 1, 10); /* ir_version */
    pb_str(&head, 2, producer);
    pb_str(&gname, 2, "main_graph");
    uint64_t glen = gname.len + o->nodes.len + o->inits.len + o->io.len;
    pbuf gkey = {0}, tail = {0};
    pb_len_key(&gkey, 7, glen);
    opset(&tail, "", 22);
    opset(&tail, "com.microsoft", 1);
    og_status *st = NULL;
    FILE *f = fopen(o->path, "wb");
    if (!f) {
        st = og_errorf(OG_ERR_IO, "%s: cannot create: %s", o->path, strerror(errno));
    } else {
        const pbuf *parts[] = {&head, &gkey, &gname, &o->nodes, &o->inits, &o->io, &tail};
        bool ok = true;
        for (size_t i = 0; i < sizeof parts / sizeof parts[0]; i++)
            if (parts[i]->len && fwrite(parts[i]->data, 1, parts[i]->len, f) != parts[i]->len)
                ok = false;
        if (fclose(f) != 0) ok = false;
        if (!ok || !pb_ok(&head) || !pb_ok(&gkey) || !pb_ok(&tail))
            st = og_errorf(OG_ERR_IO, "%s: write failed: %s", o->path, strerror(errno));
    }
    pb_free(&head);
    pb_free(&gname);
    pb_free(&gkey);
    pb_free(&tail);
    if (st) remove(o->path);
    release(o);
    return st;
}
