/* The .onnx_adapter reader (adapter_file.h). A flatbuffer is offsets all the way down:
 * a table starts with a signed offset back to its vtable (field count and each field's
 * position in the table, 0 for an absent field); strings, vectors and sub-tables are
 * unsigned offsets forward from where the offset is stored. Each read here goes through
 * fb_* helpers that check the bytes lie inside the buffer, so a truncated or hostile
 * file is an error naming the file and what was being read. */
#include "genai/adapter_file.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct fb {
    const uint8_t *d;
    size_t n;
    const char *label;
} fb;

static uint32_t rd_u32(const uint8_t *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}
static uint16_t rd_u16(const uint8_t *p) { return (uint16_t)(p[0] | p[1] << 8); }

static bool fits(const fb *b, size_t at, size_t len) { return at <= b->n && len <= b->n - at; }

/* A table at `at`: where its vtable is, how long the vtable and the table are. */
typedef struct fb_table {
    size_t at, vt;
    uint16_t vt_len, len;
} fb_table;

static og_status *fb_table_at(const fb *b, size_t at, const char *what, fb_table *t) {
    if (!fits(b, at, 4))
        return og_errorf(OG_ERR_INVALID_MODEL, "%s: %s table at byte %zu lies outside the "
                         "file (%zu bytes)", b->label, what, at, b->n);
    int32_t so = (int32_t)rd_u32(b->d + at);
    int64_t vt = (int64_t)at - (int64_t)so;
    if (vt < 0 || !fits(b, (size_t)vt, 4))
        return og_errorf(OG_ERR_INVALID_MODEL, "%s: %s table at byte %zu: its vtable offset "
                         "%d points outside the file", b->label, what, at, (int)so);
    t->at = at;
    t->vt = (size_t)vt;
    t->vt_len = rd_u16(b->d + t->vt);
    t->len = rd_u16(b->d + t->vt + 2);
    if (t->vt_len < 4 || (t->vt_len & 1) || !fits(b, t->vt, t->vt_len) || t->len < 4 ||
        !fits(b, at, t->len))
        return og_errorf(OG_ERR_INVALID_MODEL, "%s: %s table at byte %zu has a malformed "
                         "vtable (%u bytes, table %u bytes)", b->label, what, at,
                         (unsigned)t->vt_len, (unsigned)t->len);
    return NULL;
}

/* Where field `i` lies (0 when absent); `width` bytes of it must lie in the table. */
static og_status *fb_field(const fb *b, const fb_table *t, int i, size_t width, const char *what,
                           size_t *at) {
    *at = 0;
    size_t slot = 4 + 2 * (size_t)i;
    if (slot + 2 > t->vt_len) return NULL;
    uint16_t off = rd_u16(b->d + t->vt + slot);
    if (!off) return NULL;
    if ((size_t)off + width > t->len)
        return og_errorf(OG_ERR_INVALID_MODEL, "%s: field %s at offset %u runs past its table "
                         "(%u bytes)", b->label, what, (unsigned)off, (unsigned)t->len);
    *at = t->at + off;
    return NULL;
}

static og_status *fb_int32(const fb *b, const fb_table *t, int i, const char *what, int32_t *v) {
    size_t at;
    OG_TRY(fb_field(b, t, i, 4, what, &at));
    *v = at ? (int32_t)rd_u32(b->d + at) : 0;
    return NULL;
}

/* The target of the offset stored at `at`. */
static og_status *fb_follow(const fb *b, size_t at, const char *what, size_t *to) {
    uint32_t u = rd_u32(b->d + at);
    if (!u || !fits(b, at, (size_t)u) || at + u >= b->n)
        return og_errorf(OG_ERR_INVALID_MODEL, "%s: %s: offset %u at byte %zu points outside "
                         "the file (%zu bytes)", b->label, what, u, at, b->n);
    *to = at + u;
    return NULL;
}

/* Vector field `i` of elements `esize` bytes: *start and *count, or count 0 when absent. */
static og_status *fb_vector(const fb *b, const fb_table *t, int i, size_t esize,
                            const char *what, size_t *start, uint32_t *count) {
    size_t at, v;
    *start = 0;
    *count = 0;
    OG_TRY(fb_field(b, t, i, 4, what, &at));
    if (!at) return NULL;
    OG_TRY(fb_follow(b, at, what, &v));
    if (!fits(b, v, 4))
        return og_errorf(OG_ERR_INVALID_MODEL, "%s: %s: its length lies outside the file",
                         b->label, what);
    uint32_t n = rd_u32(b->d + v);
    if ((uint64_t)n * esize > b->n || !fits(b, v + 4, (size_t)n * esize))
        return og_errorf(OG_ERR_INVALID_MODEL, "%s: %s: %u elements of %zu bytes run past the "
                         "end of the file (%zu bytes)", b->label, what, n, esize, b->n);
    *start = v + 4;
    *count = n;
    return NULL;
}

void gen_adapter_file_free(gen_adapter_file *a) {
    if (!a) return;
    for (int i = 0; a->names && i < a->n_params; i++) free(a->names[i]);
    for (int i = 0; a->params && i < a->n_params; i++) tensor_release(&a->params[i]);
    free(a->names);
    free(a->params);
    mapped_file_close(&a->file);
    memset(a, 0, sizeof *a);
}

/* Parameter k (the table at `at`) into a->names[k], a->params[k]. */
static og_status *parse_param(const fb *b, size_t at, int k, gen_adapter_file *a) {
    char what[64];
    snprintf(what, sizeof what, "parameter #%d", k);
    fb_table t;
    OG_TRY(fb_table_at(b, at, what, &t));
    size_t s;
    uint32_t n;
    OG_TRY(fb_vector(b, &t, 0, 1, "Parameter.name", &s, &n));
    if (!n)
        return og_errorf(OG_ERR_INVALID_MODEL, "%s: %s has no name", b->label, what);
    if (!fits(b, s + n, 1) || b->d[s + n])
        return og_errorf(OG_ERR_INVALID_MODEL, "%s: %s: its name is not NUL-terminated inside "
                         "the file", b->label, what);
    if (!(a->names[k] = malloc((size_t)n + 1))) return og_oom();
    memcpy(a->names[k], b->d + s, n);
    a->names[k][n] = 0;
    if (strlen(a->names[k]) != n)
        return og_errorf(OG_ERR_INVALID_MODEL, "%s: %s: its name holds a NUL byte", b->label,
                         what);
    const char *name = a->names[k];
    int32_t dt;
    OG_TRY(fb_int32(b, &t, 2, "Parameter.data_type", &dt));
    if (dt <= OG_UNDEFINED || dt >= OG_DTYPE_COUNT || dt == OG_STRING)
        return og_errorf(OG_ERR_UNSUPPORTED, "%s: parameter '%s': data type %d is not a "
                         "numeric ONNX type", b->label, name, (int)dt);
    uint32_t rank;
    OG_TRY(fb_vector(b, &t, 1, 8, "Parameter.dims", &s, &rank));
    if (rank > OG_MAX_RANK)
        return og_errorf(OG_ERR_UNSUPPORTED, "%s: parameter '%s' has rank %u (at most %d)",
                         b->label, name, rank, OG_MAX_RANK);
    int64_t dims[OG_MAX_RANK];
    for (uint32_t i = 0; i < rank; i++) {
        uint64_t lo = rd_u32(b->d + s + 8 * i), hi = rd_u32(b->d + s + 8 * i + 4);
        dims[i] = (int64_t)(lo | hi << 32);
        if (dims[i] < 0)
            return og_errorf(OG_ERR_INVALID_MODEL, "%s: parameter '%s': dimension %u is %lld",
                             b->label, name, i, (long long)dims[i]);
    }
    og_tensor *p = &a->params[k];
    og_status *st = tensor_set_shape(p, (og_dtype)dt, (int)rank, dims);
    if (st) return og_status_wrap(st, "%s: parameter '%s'", b->label, name);
    OG_TRY(fb_vector(b, &t, 3, 1, "Parameter.raw_data", &s, &n));
    if ((size_t)n != p->nbytes) {
        char sh[96];
        return og_errorf(OG_ERR_INVALID_MODEL, "%s: parameter '%s' (%s %s) holds %u bytes of "
                         "data, %zu expected", b->label, name, og_dtype_name(p->dtype),
                         shape_str(dims, (int)rank, sh, sizeof sh), n, p->nbytes);
    }
    /* The kernels read elements in place through typed pointers; onnxruntime's writer
     * aligns raw_data only to 4 bytes in the file, so 8-byte elements may need a copy. */
    size_t align = dtype_size(p->dtype);
    p->data = n ? (void *)(b->d + s) : tensor_empty_data();
    p->owns_data = false;
    if (n && align > 1 && ((uintptr_t)(b->d + s) % align)) {
        OG_TRY(tensor_alloc_data(p));
        p->owns_data = true;
        memcpy(p->data, b->d + s, n);
    }
    for (int j = 0; j < k; j++)
        if (!strcmp(a->names[j], name))
            return og_errorf(OG_ERR_INVALID_MODEL, "%s: parameter '%s' is given twice",
                             b->label, name);
    return NULL;
}

static og_status *parse(const fb *b, gen_adapter_file *a) {
    if (b->n < 8)
        return og_errorf(OG_ERR_INVALID_MODEL, "%s: not an onnxruntime adapter file: %zu bytes, "
                         "too short for a flatbuffer", b->label, b->n);
    if (memcmp(b->d + 4, "TORT", 4))
        return og_errorf(OG_ERR_INVALID_MODEL, "%s: not an onnxruntime adapter file (.onnx_adapter "
                         "files carry the identifier 'TORT' at byte 4)", b->label);
    fb_table root;
    OG_TRY(fb_table_at(b, rd_u32(b->d), "the Adapter", &root));
    OG_TRY(fb_int32(b, &root, 0, "Adapter.format_version", &a->format_version));
    OG_TRY(fb_int32(b, &root, 1, "Adapter.adapter_version", &a->adapter_version));
    OG_TRY(fb_int32(b, &root, 2, "Adapter.model_version", &a->model_version));
    if (a->format_version != GEN_ADAPTER_FORMAT_VERSION)
        return og_errorf(OG_ERR_UNSUPPORTED, "%s: adapter format version %d (this runtime reads "
                         "version %d, as onnxruntime does)", b->label, (int)a->format_version,
                         GEN_ADAPTER_FORMAT_VERSION);
    size_t s;
    uint32_t n;
    OG_TRY(fb_vector(b, &root, 3, 4, "Adapter.parameters", &s, &n));
    if (n > (uint32_t)(b->n / 12)) /* a parameter table takes at least 12 bytes */
        return og_errorf(OG_ERR_INVALID_MODEL, "%s: %u parameters cannot fit in %zu bytes",
                         b->label, n, b->n);
    a->names = calloc((size_t)n + 1, sizeof *a->names);
    a->params = calloc((size_t)n + 1, sizeof *a->params);
    if (!a->names || !a->params) return og_oom();
    a->n_params = (int)n;
    for (uint32_t k = 0; k < n; k++) {
        size_t at;
        OG_TRY(fb_follow(b, s + 4 * (size_t)k, "Adapter.parameters", &at));
        OG_TRY(parse_param(b, at, (int)k, a));
    }
    return NULL;
}

og_status *gen_adapter_parse(const uint8_t *data, size_t size, const char *label,
                             gen_adapter_file *out) {
    memset(out, 0, sizeof *out);
    fb b = {data, size, label ? label : "<memory>"};
    og_status *st = parse(&b, out);
    if (st) gen_adapter_file_free(out);
    return st;
}

og_status *gen_adapter_file_read(const char *path, gen_adapter_file *out) {
    mapped_file f;
    OG_TRY(mapped_file_open(path, &f));
    og_status *st = gen_adapter_parse(f.data, f.size, path, out);
    if (st) {
        mapped_file_close(&f);
        return st;
    }
    out->file = f;
    return NULL;
}
