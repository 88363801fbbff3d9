/* The ONNX test-data .pb format: one serialized TensorProto per file. */
#include "onnx/loader.h"

#include "base/mapped_file.h"
#include "onnx/tensor_proto.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

og_status *onnx_read_tensor_file(const char *path, tensor *out, char **name_out) {
    /* Decode through a scratch model so external data and typed fields work the same
     * way as in models; the result is then copied to heap memory the tensor owns. */
    model *m = calloc(1, sizeof *m);
    if (!m) return og_oom();
    arena_init(&m->arena);
    m->path = strdup(path);
    char *dir = strdup(path);
    m->mappings = calloc(1, sizeof *m->mappings);
    if (!m->path || !dir || !m->mappings) {
        free(dir);
        model_free(m);
        return og_oom();
    }
    char *slash = strrchr(dir, '/');
    if (slash == dir) slash[1] = 0;
    else if (slash) *slash = 0;
    else strcpy(dir, ".");
    m->base_dir = dir;
    og_status *st = mapped_file_open(path, &m->mappings[0]);
    if (st) {
        model_free(m);
        return st;
    }
    m->n_mappings = 1;
    const uint8_t *data = m->mappings[0].data ? m->mappings[0].data : (const uint8_t *)"";
    wire_reader r = wire_init(data, m->mappings[0].size, m->path, "TensorProto");
    tensor t;
    const char *name = NULL;
    st = tensor_proto_decode(m, &r, data, m->mappings[0].size, "tensor", &t, &name);
    char *name_copy = NULL;
    if (!st && name_out) {
        name_copy = strdup(name ? name : "");
        if (!name_copy) st = og_oom();
    }
    if (!st) {
        tensor res;
        memset(&res, 0, sizeof res);
        if (t.dtype == OG_STRING) { /* the views point into the file: copy them with it */
            st = tensor_own_strings(&t, &res);
        } else {
            st = tensor_set_shape(&res, t.dtype, t.rank, t.dims);
            if (!st) st = tensor_alloc_data(&res);
            if (!st && t.nbytes) memcpy(res.data, t.data, t.nbytes);
        }
        if (!st) {
            *out = res;
            if (name_out) *name_out = name_copy;
            name_copy = NULL;
        }
    }
    free(name_copy);
    model_free(m);
    return og_oom_context(st, "%s", path);
}

static void put_varint(unsigned char *buf, size_t *n, uint64_t v) {
    while (v >= 0x80) {
        buf[(*n)++] = (unsigned char)(v | 0x80);
        v >>= 7;
    }
    buf[(*n)++] = (unsigned char)v;
}

og_status *onnx_write_tensor_file(const char *path, const tensor *t, const char *name) {
    if (t->rank < 0 || t->rank > OG_MAX_RANK)
        return og_errorf(OG_ERR_INVALID_ARGUMENT, "%s: tensor rank %d is invalid", path, t->rank);
    size_t name_len = name ? strlen(name) : 0;
    bool strings = t->dtype == OG_STRING;
    int64_t n = strings ? tensor_count(t) : 0;
    /* header: dims, data_type, name key+len, raw_data key+len (strings: no raw_data;
     * each string's key+len is written through the same buffer) */
    size_t cap = (size_t)(t->rank + 4) * 11 + name_len + 16;
    unsigned char *hdr = malloc(cap);
    if (!hdr) return og_oom();
    size_t hn = 0;
    for (int i = 0; i < t->rank; i++) {
        put_varint(hdr, &hn, (1 << 3) | 0);
        put_varint(hdr, &hn, (uint64_t)t->dims[i]);
    }
    put_varint(hdr, &hn, (2 << 3) | 0);
    put_varint(hdr, &hn, (uint64_t)t->dtype);
    if (name_len) {
        put_varint(hdr, &hn, (8 << 3) | 2);
        put_varint(hdr, &hn, name_len);
        memcpy(hdr + hn, name, name_len);
        hn += name_len;
    }
    if (!strings) {
        put_varint(hdr, &hn, (9 << 3) | 2);
        put_varint(hdr, &hn, t->nbytes);
    }
    FILE *fp = fopen(path, "wb");
    if (!fp) {
        og_status *st = og_errorf(OG_ERR_IO, "%s: cannot create: %s", path, strerror(errno));
        free(hdr);
        return st;
    }
    bool ok = fwrite(hdr, 1, hn, fp) == hn;
    if (ok && !strings && t->nbytes) ok = fwrite(t->data, 1, t->nbytes, fp) == t->nbytes;
    const og_string *v = t->data;
    for (int64_t i = 0; ok && i < n; i++) { /* string_data (6), one field per element */
        size_t k = 0;
        put_varint(hdr, &k, (6 << 3) | 2);
        put_varint(hdr, &k, v[i].size);
        ok = fwrite(hdr, 1, k, fp) == k;
        if (ok && v[i].size) ok = fwrite(v[i].data, 1, v[i].size, fp) == v[i].size;
    }
    free(hdr);
    if (fclose(fp) != 0) ok = false;
    if (!ok) return og_errorf(OG_ERR_IO, "%s: write failed: %s", path, strerror(errno));
    return NULL;
}
