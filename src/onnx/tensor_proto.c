#include "onnx/tensor_proto.h"
#include "onnx/loader.h"

#include "base/mapped_file.h"
#include "base/pkg_file.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

enum { TP_FLOAT = 0, TP_INT32, TP_INT64, TP_DOUBLE, TP_UINT64, TP_STRING, TP_NKINDS };

static const struct {
    uint32_t field;
    int elem;
    const char *name;
} tp_kinds[TP_NKINDS] = {
    {4, WIRE_I32, "float_data"},     {5, WIRE_VARINT, "int32_data"},
    {7, WIRE_VARINT, "int64_data"},  {10, WIRE_I64, "double_data"},
    {11, WIRE_VARINT, "uint64_data"}, {6, WIRE_LEN, "string_data"},
};

typedef struct tp_info {
    int rank;
    int64_t dims[OG_MAX_RANK];
    int64_t data_type;
    const char *name;
    const uint8_t *raw;
    size_t raw_len;
    bool has_raw;
    int64_t location;
    size_t kind_count[TP_NKINDS];
    const uint8_t *ext_loc;
    size_t ext_loc_len;
    const uint8_t *ext_off, *ext_len;
    size_t ext_off_len, ext_len_len;
    bool has_ext_loc, has_ext_off, has_ext_len;
} tp_info;

/* Which typed field holds a dtype, and how many entries n elements take there. */
static int tp_kind_for(og_dtype dt, int64_t n, int64_t *entries) {
    *entries = n;
    switch (dt) {
    case OG_FLOAT32: return TP_FLOAT;
    case OG_COMPLEX64: *entries = n * 2; return TP_FLOAT;
    case OG_INT32: case OG_INT16: case OG_INT8: case OG_UINT16: case OG_UINT8: case OG_BOOL:
    case OG_FLOAT16: case OG_BFLOAT16: case OG_FLOAT8E4M3FN: case OG_FLOAT8E4M3FNUZ:
    case OG_FLOAT8E5M2: case OG_FLOAT8E5M2FNUZ:
        return TP_INT32;
    case OG_INT4: case OG_UINT4: case OG_FLOAT4E2M1: *entries = (n + 1) / 2; return TP_INT32;
    case OG_INT64: return TP_INT64;
    case OG_FLOAT64: return TP_DOUBLE;
    case OG_COMPLEX128: *entries = n * 2; return TP_DOUBLE;
    case OG_UINT32: case OG_UINT64: return TP_UINT64;
    case OG_STRING: return TP_STRING;
    default: return -1;
    }
}

typedef struct fill_ctx {
    unsigned char *dst;
    og_dtype dt;
    int kind;
    size_t limit; /* entries allowed */
} fill_ctx;

static void fill_elem(void *arg, uint64_t v, size_t i) {
    fill_ctx *c = arg;
    if (i >= c->limit) return;
    switch (c->kind) {
    case TP_FLOAT: {
        uint32_t u = (uint32_t)v;
        memcpy(c->dst + 4 * i, &u, 4);
        return;
    }
    case TP_INT64: case TP_DOUBLE:
        memcpy(c->dst + 8 * i, &v, 8);
        return;
    case TP_UINT64:
        if (c->dt == OG_UINT32) {
            uint32_t u = (uint32_t)v;
            memcpy(c->dst + 4 * i, &u, 4);
        } else {
            memcpy(c->dst + 8 * i, &v, 8);
        }
        return;
    case TP_INT32: {
        size_t es = dtype_size(c->dt);
        if (c->dt == OG_INT32) {
            uint32_t u = (uint32_t)v;
            memcpy(c->dst + 4 * i, &u, 4);
        } else if (es == 2) {
            uint16_t u = (uint16_t)v;
            memcpy(c->dst + 2 * i, &u, 2);
        } else if (c->dt == OG_BOOL) {
            c->dst[i] = v != 0;
        } else {
            c->dst[i] = (unsigned char)v; /* 8-bit types; 4-bit pairs as one byte */
        }
        return;
    }
    default: return;
    }
}

static bool parse_decimal(const uint8_t *s, size_t n, uint64_t *out) {
    if (n == 0 || n > 20) return false;
    uint64_t v = 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9') return false;
        uint64_t d = (uint64_t)(s[i] - '0');
        if (v > (UINT64_MAX - d) / 10) return false;
        v = v * 10 + d;
    }
    *out = v;
    return true;
}

static og_status *add_external_name(model *m, const char *loc) {
    const char **names = arena_alloc(&m->arena, sizeof(char *) * ((size_t)m->n_external_files + 1));
    if (!names) return og_oom();
    if (m->n_external_files) memcpy(names, m->external_files, sizeof(char *) * (size_t)m->n_external_files);
    names[m->n_external_files++] = loc;
    m->external_files = names;
    return NULL;
}

/* Maps the external file once per model; returns it through *out. */
static og_status *external_map(model *m, const char *loc, const char *full,
                               const mapped_file **out) {
    for (int i = 0; i < m->n_mappings; i++)
        if (m->mappings[i].path && strcmp(m->mappings[i].path, full) == 0) {
            *out = &m->mappings[i];
            return NULL;
        }
    mapped_file mf;
    OG_TRY(mapped_file_open(full, &mf));
    mapped_file *grown = realloc(m->mappings, sizeof *grown * ((size_t)m->n_mappings + 1));
    if (!grown) {
        mapped_file_close(&mf);
        return og_oom();
    }
    m->mappings = grown;
    m->mappings[m->n_mappings++] = mf;
    char *name = arena_strdup(&m->arena, loc);
    if (!name) return og_oom();
    OG_TRY(add_external_name(m, name));
    *out = &m->mappings[m->n_mappings - 1];
    return NULL;
}

static size_t dtype_align(og_dtype dt) {
    size_t es = dtype_size(dt);
    if (es == 0) return 1;
    return es > 8 ? 8 : es;
}

size_t model_release_pages(const model *m, const void *p, size_t n) {
    const uint8_t *b = p;
    bool mapped = false; /* never for caller memory (og_session_open_bytes) */
    for (int i = 0; i < m->n_mappings && !mapped; i++)
        mapped = m->mappings[i].data && b >= m->mappings[i].data &&
                 b + n <= m->mappings[i].data + m->mappings[i].size;
    if (!mapped) return 0;
    uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
    uintptr_t begin = ((uintptr_t)b + page - 1) & ~(page - 1);
    uintptr_t end = ((uintptr_t)b + n) & ~(page - 1);
    if (end <= begin || madvise((void *)begin, end - begin, MADV_DONTNEED) != 0) return 0;
    return end - begin;
}

/* Points the tensor at bytes in a mapping, or copies them when misaligned. */
static og_status *set_bytes(model *m, tensor *t, const uint8_t *p, size_t n) {
    if (n == 0) {
        t->data = tensor_empty_data();
        return NULL;
    }
    if ((uintptr_t)p % dtype_align(t->dtype) == 0) {
        t->data = (void *)p;
        return NULL;
    }
    void *copy = arena_alloc(&m->arena, n);
    if (!copy) return og_oom_for(n, "a realigned copy of tensor data");
    memcpy(copy, p, n);
    m->copied_bytes += n;
    t->data = copy;
    /* the copy is what is used: keeping both would double the resident memory of files
     * whose weights sit unaligned in raw_data */
    model_release_pages(m, p, n);
    return NULL;
}

static og_status *load_external(model *m, const tp_info *ti, const char *label,
                                const char *ctx, tensor *t, const char *shape) {
    if (!ti->has_ext_loc)
        return og_errorf(OG_ERR_INVALID_MODEL,
                         "%s: %s: data_location is EXTERNAL but external_data has no 'location'",
                         label, ctx);
    char *loc = arena_strndup(&m->arena, (const char *)ti->ext_loc, ti->ext_loc_len);
    if (!loc) return og_oom();
    if (strlen(loc) != ti->ext_loc_len)
        return og_errorf(OG_ERR_INVALID_MODEL, "%s: %s: external data location '%s' holds a "
                         "NUL byte", label, ctx, loc);
    char key[600];
    snprintf(key, sizeof key, "%s: external data location", ctx);
    OG_TRY(pkg_path_check(label, key, loc));
    if (!m->base_dir)
        return og_errorf(OG_ERR_INVALID_MODEL,
                         "%s: %s: uses external data '%s', but the model was loaded from memory "
                         "without a base folder",
                         label, ctx, loc);
    uint64_t off = 0, len = 0;
    if (ti->has_ext_off && !parse_decimal(ti->ext_off, ti->ext_off_len, &off))
        return og_errorf(OG_ERR_INVALID_MODEL,
                         "%s: %s: external data '%s': offset '%.*s' is not a decimal number",
                         label, ctx, loc, (int)(ti->ext_off_len > 40 ? 40 : ti->ext_off_len),
                         (const char *)ti->ext_off);
    if (ti->has_ext_len && !parse_decimal(ti->ext_len, ti->ext_len_len, &len))
        return og_errorf(OG_ERR_INVALID_MODEL,
                         "%s: %s: external data '%s': length '%.*s' is not a decimal number",
                         label, ctx, loc, (int)(ti->ext_len_len > 40 ? 40 : ti->ext_len_len),
                         (const char *)ti->ext_len);
    char *full = NULL;
    OG_TRY(pkg_path_join(m->base_dir, loc, label, key, &full));
    const mapped_file *mf = NULL;
    og_status *st = external_map(m, loc, full, &mf);
    free(full);
    if (st) return og_status_wrap(st, "%s: %s: external data '%s'", label, ctx, loc);
    if (off > mf->size)
        return og_errorf(OG_ERR_INVALID_MODEL,
                         "%s: %s: external data '%s' is %zu bytes, offset %llu is past its end",
                         label, ctx, loc, mf->size, (unsigned long long)off);
    if (!ti->has_ext_len) len = mf->size - off;
    if (len > mf->size - off)
        return og_errorf(OG_ERR_INVALID_MODEL,
                         "%s: %s: external data '%s' is %zu bytes, offset %llu + length %llu runs "
                         "past its end",
                         label, ctx, loc, mf->size, (unsigned long long)off,
                         (unsigned long long)len);
    if (len != t->nbytes)
        return og_errorf(OG_ERR_INVALID_MODEL,
                         "%s: %s: external data '%s' has length %llu, dims %s of %s need %zu",
                         label, ctx, loc, (unsigned long long)len, shape,
                         og_dtype_name(t->dtype), t->nbytes);
    return set_bytes(m, t, mf->data ? mf->data + off : NULL, t->nbytes);
}

static og_status *scan_external_entry(const wire_reader *r, const wire_field *f, tp_info *ti) {
    wire_reader er = wire_sub(r, f->data, f->len, "StringStringEntryProto");
    const uint8_t *k = NULL, *v = NULL;
    size_t kl = 0, vl = 0;
    wire_field ef;
    bool has;
    for (;;) {
        OG_TRY(wire_next(&er, &ef, &has));
        if (!has) break;
        if (ef.number == 1 || ef.number == 2) {
            OG_TRY(wire_expect(&er, &ef, WIRE_LEN, ef.number == 1 ? "key" : "value"));
            if (ef.number == 1) {
                k = ef.data;
                kl = ef.len;
            } else {
                v = ef.data;
                vl = ef.len;
            }
        }
    }
    if (!v) v = (const uint8_t *)"";
    if (kl == 8 && memcmp(k, "location", 8) == 0) {
        ti->ext_loc = v;
        ti->ext_loc_len = vl;
        ti->has_ext_loc = true;
    } else if (kl == 6 && memcmp(k, "offset", 6) == 0) {
        ti->ext_off = v;
        ti->ext_off_len = vl;
        ti->has_ext_off = true;
    } else if (kl == 6 && memcmp(k, "length", 6) == 0) {
        ti->ext_len = v;
        ti->ext_len_len = vl;
        ti->has_ext_len = true;
    }
    return NULL;
}

typedef struct dims_ctx {
    tp_info *ti;
    int64_t bad; /* first negative dim, or 0 */
    int bad_index;
} dims_ctx;

static void dims_elem(void *arg, uint64_t v, size_t i) {
    dims_ctx *c = arg;
    if (i < OG_MAX_RANK) c->ti->dims[i] = (int64_t)v;
    if ((int64_t)v < 0 && c->bad_index < 0) {
        c->bad = (int64_t)v;
        c->bad_index = (int)i;
    }
}

og_status *tensor_proto_decode(model *m, const wire_reader *parent, const uint8_t *data,
                               size_t len, const char *what, tensor *out,
                               const char **name_out) {
    const char *label = parent->label;
    wire_reader r = wire_sub(parent, data, len, "TensorProto");
    tp_info ti;
    memset(&ti, 0, sizeof ti);
    size_t ndims = 0;
    dims_ctx dc = {&ti, 0, -1};
    wire_field f;
    bool has;
    for (;;) {
        OG_TRY(wire_next(&r, &f, &has));
        if (!has) break;
        switch (f.number) {
        case 1: {
            size_t n;
            OG_TRY(wire_repeated_count(&r, &f, WIRE_VARINT, "dims", &n));
            size_t pos = ndims;
            wire_repeated_each(&f, WIRE_VARINT, dims_elem, &dc, &pos);
            ndims += n;
            break;
        }
        case 2:
            OG_TRY(wire_expect(&r, &f, WIRE_VARINT, "data_type"));
            ti.data_type = (int64_t)f.v;
            break;
        case 8:
            OG_TRY(wire_expect(&r, &f, WIRE_LEN, "name"));
            ti.name = arena_strndup(&m->arena, (const char *)f.data, f.len);
            if (!ti.name) return og_oom();
            break;
        case 9:
            OG_TRY(wire_expect(&r, &f, WIRE_LEN, "raw_data"));
            ti.raw = f.data;
            ti.raw_len = f.len;
            ti.has_raw = true;
            break;
        case 13:
            OG_TRY(wire_expect(&r, &f, WIRE_LEN, "external_data"));
            OG_TRY(scan_external_entry(&r, &f, &ti));
            break;
        case 14:
            OG_TRY(wire_expect(&r, &f, WIRE_VARINT, "data_location"));
            ti.location = (int64_t)f.v;
            break;
        default:
            for (int k = 0; k < TP_NKINDS; k++)
                if (tp_kinds[k].field == f.number) {
                    size_t n;
                    if (k == TP_STRING) {
                        OG_TRY(wire_expect(&r, &f, WIRE_LEN, tp_kinds[k].name));
                        n = 1;
                    } else {
                        OG_TRY(wire_repeated_count(&r, &f, tp_kinds[k].elem, tp_kinds[k].name, &n));
                    }
                    ti.kind_count[k] += n;
                }
            break;
        }
    }
    const char *tname = ti.name ? ti.name : "";
    char ctx[512];
    snprintf(ctx, sizeof ctx, "%s '%s'", what, tname);
    if (name_out) *name_out = ti.name ? ti.name : arena_strdup(&m->arena, "");
    if (ndims > OG_MAX_RANK)
        return og_errorf(OG_ERR_UNSUPPORTED, "%s: %s: rank %zu exceeds the supported maximum %d",
                         label, ctx, ndims, OG_MAX_RANK);
    ti.rank = (int)ndims;
    if (dc.bad_index >= 0)
        return og_errorf(OG_ERR_INVALID_MODEL, "%s: %s: dim %d is %lld", label, ctx, dc.bad_index,
                         (long long)dc.bad);
    char shape[200];
    shape_str(ti.dims, ti.rank, shape, sizeof shape);
    int64_t count = shape_count(ti.dims, ti.rank);
    if (count < 0)
        return og_errorf(OG_ERR_INVALID_MODEL, "%s: %s: dims %s have too many elements", label,
                         ctx, shape);
    if (ti.data_type <= 0 || ti.data_type >= OG_DTYPE_COUNT) {
        if (ti.data_type > 0 && ti.data_type <= 64)
            return og_errorf(OG_ERR_UNSUPPORTED, "%s: %s: data_type %lld is not supported", label,
                             ctx, (long long)ti.data_type);
        return og_errorf(OG_ERR_INVALID_MODEL, "%s: %s: invalid data_type %lld", label, ctx,
                         (long long)ti.data_type);
    }
    og_dtype dt = (og_dtype)ti.data_type;
    if (dt == OG_STRING && (ti.location == 1 || ti.has_raw))
        return og_errorf(OG_ERR_INVALID_MODEL, "%s: %s: a string tensor's data must be in "
                         "string_data (not raw_data or external data)", label, ctx);
    size_t nbytes = dtype_nbytes(dt, count);
    if (nbytes == SIZE_MAX)
        return og_errorf(OG_ERR_INVALID_MODEL, "%s: %s: dims %s of %s are too large", label, ctx,
                         shape, og_dtype_name(dt));
    tensor t;
    memset(&t, 0, sizeof t);
    t.dtype = dt;
    t.rank = ti.rank;
    memcpy(t.dims, ti.dims, sizeof t.dims);
    t.nbytes = nbytes;

    size_t typed_total = 0;
    for (int k = 0; k < TP_NKINDS; k++) typed_total += ti.kind_count[k];

    if (ti.location == 1) {
        if (ti.has_raw || typed_total)
            return og_errorf(OG_ERR_INVALID_MODEL,
                             "%s: %s: data_location is EXTERNAL but the tensor also has inline "
                             "data",
                             label, ctx);
        OG_TRY(load_external(m, &ti, label, ctx, &t, shape));
    } else if (ti.location != 0) {
        return og_errorf(OG_ERR_INVALID_MODEL, "%s: %s: invalid data_location %lld", label, ctx,
                         (long long)ti.location);
    } else if (ti.has_raw) {
        if (typed_total)
            return og_errorf(OG_ERR_INVALID_MODEL,
                             "%s: %s: has both raw_data and typed data fields", label, ctx);
        if (ti.raw_len != nbytes)
            return og_errorf(OG_ERR_INVALID_MODEL,
                             "%s: %s: raw_data has %zu bytes, dims %s of %s need %zu", label, ctx,
                             ti.raw_len, shape, og_dtype_name(dt), nbytes);
        OG_TRY(set_bytes(m, &t, ti.raw, nbytes));
    } else {
        int64_t entries;
        int kind = tp_kind_for(dt, count, &entries);
        for (int k = 0; k < TP_NKINDS; k++)
            if (k != kind && ti.kind_count[k])
                return og_errorf(OG_ERR_INVALID_MODEL, "%s: %s: %s is not valid for a %s tensor",
                                 label, ctx, tp_kinds[k].name, og_dtype_name(dt));
        if (kind < 0) {
            if (count != 0)
                return og_errorf(OG_ERR_UNSUPPORTED,
                                 "%s: %s: %s data must be given in raw_data", label, ctx,
                                 og_dtype_name(dt));
        } else if ((uint64_t)entries != ti.kind_count[kind]) {
            return og_errorf(OG_ERR_INVALID_MODEL,
                             "%s: %s: %s has %zu entries, dims %s of %s need %lld", label, ctx,
                             tp_kinds[kind].name, ti.kind_count[kind], shape, og_dtype_name(dt),
                             (long long)entries);
        } else if (nbytes > 0 && kind == TP_STRING) {
            /* views of the bytes where they stand in the file (or caller memory) */
            og_string *views = arena_alloc(&m->arena, nbytes);
            if (!views) return og_oom();
            size_t k = 0;
            wire_reader r2 = wire_sub(parent, data, len, "TensorProto");
            for (;;) {
                OG_TRY(wire_next(&r2, &f, &has));
                if (!has) break;
                if (f.number == tp_kinds[kind].field && k < (size_t)entries)
                    views[k++] = (og_string){f.len ? (const char *)f.data : NULL, f.len};
            }
            t.data = views;
        } else if (nbytes > 0) {
            unsigned char *dst = arena_alloc(&m->arena, nbytes);
            if (!dst) return og_oom();
            fill_ctx fc = {dst, dt, kind, (size_t)entries};
            size_t pos = 0;
            wire_reader r2 = wire_sub(parent, data, len, "TensorProto");
            for (;;) {
                OG_TRY(wire_next(&r2, &f, &has));
                if (!has) break;
                if (f.number == tp_kinds[kind].field)
                    wire_repeated_each(&f, tp_kinds[kind].elem, fill_elem, &fc, &pos);
            }
            /* an odd 4-bit count leaves the last byte's high nibble as given */
            t.data = dst;
            m->copied_bytes += nbytes;
        }
    }
    *out = t;
    return NULL;
}
