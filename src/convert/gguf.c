/* GGUF parsing: a cursor over the mapped bytes that refuses to step past the end, so a
 * truncated or lying file is an error at the first field that does not fit. */
#include "convert/gguf.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

typedef struct cursor {
    const uint8_t *base, *p, *end;
    const char *label;
} cursor;

static og_status *need(cursor *c, uint64_t n, const char *what) {
    if (n > (uint64_t)(c->end - c->p))
        return og_errorf(OG_ERR_INVALID_MODEL,
                         "%s: %s needs %" PRIu64 " bytes at offset %zu, the file has %zu left",
                         c->label, what, n, (size_t)(c->p - c->base), (size_t)(c->end - c->p));
    return NULL;
}

static og_status *rd(cursor *c, void *out, size_t n, const char *what) {
    OG_TRY(need(c, n, what));
    memcpy(out, c->p, n); /* GGUF is little-endian, as every host we build for */
    c->p += n;
    return NULL;
}

/* A length-prefixed string: the pointer into the mapping and its length. */
static og_status *rd_str(cursor *c, const uint8_t **s, uint64_t *len, const char *what) {
    OG_TRY(rd(c, len, 8, what));
    OG_TRY(need(c, *len, what));
    *s = c->p;
    c->p += *len;
    return NULL;
}

static const uint8_t scalar_size[GGUF_NTYPES] = {1, 1, 2, 2, 4, 4, 4, 1, 0, 0, 8, 8, 8};
static const char *const kv_type_names[GGUF_NTYPES] = {
    "u8", "i8", "u16", "i16", "u32", "i32", "f32", "bool", "string", "array", "u64", "i64", "f64"};

static const char *kv_type_name(uint32_t t) { return t < GGUF_NTYPES ? kv_type_names[t] : "?"; }

static og_status *read_value(cursor *c, gguf_kv *kv) {
    const char *k = kv->key;
    if (kv->type >= GGUF_NTYPES)
        return og_errorf(OG_ERR_INVALID_MODEL, "%s: key '%s' has value type %u (0..12 exist)",
                         c->label, k, kv->type);
    kv->n = 1;
    if (kv->type == GGUF_STRING) {
        OG_TRY(rd_str(c, &kv->data, &kv->n, k));
        return NULL;
    }
    if (kv->type != GGUF_ARRAY) {
        OG_TRY(need(c, scalar_size[kv->type], k));
        kv->data = c->p;
        c->p += scalar_size[kv->type];
        return NULL;
    }
    OG_TRY(rd(c, &kv->elem_type, 4, k));
    OG_TRY(rd(c, &kv->n, 8, k));
    if (kv->elem_type >= GGUF_NTYPES || kv->elem_type == GGUF_ARRAY)
        return og_errorf(OG_ERR_INVALID_MODEL,
                         "%s: key '%s' is an array of type %u (nested arrays and types past 12 "
                         "are not GGUF)", c->label, k, kv->elem_type);
    kv->data = c->p;
    if (kv->elem_type != GGUF_STRING) {
        uint64_t sz = scalar_size[kv->elem_type];
        if (kv->n > UINT64_MAX / sz) return need(c, UINT64_MAX, k);
        OG_TRY(need(c, kv->n * sz, k));
        c->p += kv->n * sz;
        return NULL;
    }
    /* every string needs at least its 8-byte length: bound the table before allocating */
    if (kv->n > (uint64_t)(c->end - c->p) / 8) /* (n * 8 could wrap to a size that fits) */
        return need(c, kv->n > UINT64_MAX / 8 ? UINT64_MAX : kv->n * 8, k);
    kv->str_off = malloc((size_t)(kv->n ? kv->n : 1) * sizeof *kv->str_off);
    if (!kv->str_off) return og_oom_for((size_t)kv->n * 8, "%s: key '%s'", c->label, k);
    for (uint64_t i = 0; i < kv->n; i++) {
        const uint8_t *s;
        uint64_t len;
        kv->str_off[i] = (uint64_t)(c->p - kv->data);
        OG_TRY(rd_str(c, &s, &len, k));
    }
    return NULL;
}

typedef struct block_info {
    uint32_t type;
    const char *name;
    uint32_t elems, bytes;
} block_info;

static const block_info blocks[] = {
    {GGML_F32, "F32", 1, 4},       {GGML_F16, "F16", 1, 2},       {GGML_Q4_0, "Q4_0", 32, 18},
    {GGML_Q4_1, "Q4_1", 32, 20},   {GGML_Q5_0, "Q5_0", 32, 22},   {GGML_Q5_1, "Q5_1", 32, 24},
    {GGML_Q8_0, "Q8_0", 32, 34},   {GGML_Q8_1, "Q8_1", 32, 36},   {GGML_Q2_K, "Q2_K", 256, 84},
    {GGML_Q3_K, "Q3_K", 256, 110}, {GGML_Q4_K, "Q4_K", 256, 144}, {GGML_Q5_K, "Q5_K", 256, 176},
    {GGML_Q6_K, "Q6_K", 256, 210}, {GGML_Q8_K, "Q8_K", 256, 292}, {GGML_I8, "I8", 1, 1},
    {GGML_I16, "I16", 1, 2},       {GGML_I32, "I32", 1, 4},       {GGML_I64, "I64", 1, 8},
    {GGML_F64, "F64", 1, 8},       {GGML_BF16, "BF16", 1, 2},
};

static const block_info *block_of(uint32_t t) {
    for (size_t i = 0; i < sizeof blocks / sizeof blocks[0]; i++)
        if (blocks[i].type == t) return &blocks[i];
    return NULL;
}

bool gguf_block(uint32_t t, uint32_t *elems, uint32_t *bytes) {
    const block_info *b = block_of(t);
    if (!b) return false;
    *elems = b->elems;
    *bytes = b->bytes;
    return true;
}

const char *gguf_type_name(uint32_t t) {
    const block_info *b = block_of(t);
    return b ? b->name : "an unknown type";
}

static char *dup_name(const uint8_t *s, uint64_t len) {
    char *out = malloc((size_t)len + 1);
    if (!out) return NULL;
    memcpy(out, s, (size_t)len);
    out[len] = 0;
    return out;
}

static og_status *read_tensor_info(cursor *c, gguf_tensor *t, size_t index) {
    const uint8_t *s;
    uint64_t len;
    char what[48];
    snprintf(what, sizeof what, "tensor #%zu's name", index);
    OG_TRY(rd_str(c, &s, &len, what));
    if (!(t->name = dup_name(s, len))) return og_oom();
    const char *nm = t->name;
    OG_TRY(rd(c, &t->n_dims, 4, nm));
    if (t->n_dims < 1 || t->n_dims > 4)
        return og_errorf(OG_ERR_INVALID_MODEL, "%s: tensor '%s' has %u dimensions (1 to 4)",
                         c->label, nm, t->n_dims);
    for (int d = 0; d < 4; d++) t->ne[d] = 1;
    for (uint32_t d = 0; d < t->n_dims; d++) OG_TRY(rd(c, &t->ne[d], 8, nm));
    OG_TRY(rd(c, &t->type, 4, nm));
    uint64_t off;
    OG_TRY(rd(c, &off, 8, nm));
    const block_info *b = block_of(t->type);
    if (!b)
        return og_errorf(OG_ERR_UNSUPPORTED, "%s: tensor '%s' has ggml type %u, unknown here",
                         c->label, nm, t->type);
    /* size in bytes, refusing overflow: rows of ne[0] elements in whole blocks */
    if (t->ne[0] % b->elems)
        return og_errorf(OG_ERR_INVALID_MODEL,
                         "%s: tensor '%s' (%s) has rows of %" PRIu64 " elements, not a "
                         "multiple of its block of %u", c->label, nm, b->name, t->ne[0], b->elems);
    uint64_t bytes = t->ne[0] / b->elems * b->bytes;
    for (int d = 1; d < 4; d++) {
        if (t->ne[d] && bytes > UINT64_MAX / t->ne[d])
            return og_errorf(OG_ERR_INVALID_MODEL, "%s: tensor '%s': its size overflows",
                             c->label, nm);
        bytes *= t->ne[d];
    }
    t->nbytes = bytes;
    t->data = (const uint8_t *)(uintptr_t)off; /* relative until the data section is known */
    return NULL;
}

og_status *gguf_parse(const uint8_t *data, size_t size, const char *label, gguf_file *g) {
    memset(g, 0, sizeof *g);
    cursor c = {data, data, data + size, label};
    og_status *st = NULL;
    uint32_t magic;
    if ((st = rd(&c, &magic, 4, "the magic 'GGUF'"))) return st;
    if (memcmp(&magic, "GGUF", 4))
        return og_errorf(OG_ERR_INVALID_MODEL, "%s: not a GGUF file (no 'GGUF' magic)", label);
    if ((st = rd(&c, &g->version, 4, "the version"))) return st;
    if (g->version != 2 && g->version != 3)
        return og_errorf(OG_ERR_UNSUPPORTED, "%s: GGUF version %u (2 and 3 are read)", label,
                         g->version);
    uint64_t n_tensors, n_kv;
    if ((st = rd(&c, &n_tensors, 8, "the tensor count"))) return st;
    if ((st = rd(&c, &n_kv, 8, "the key count"))) return st;
    /* each key takes at least 12 bytes and each tensor 24: bound both before allocating */
    if (n_kv > size / 12 || n_tensors > size / 24)
        return og_errorf(OG_ERR_INVALID_MODEL,
                         "%s: %" PRIu64 " keys and %" PRIu64 " tensors cannot fit in %zu bytes",
                         label, n_kv, n_tensors, size);
    g->kv = calloc((size_t)n_kv + 1, sizeof *g->kv);
    g->tensors = calloc((size_t)n_tensors + 1, sizeof *g->tensors);
    if (!g->kv || !g->tensors) {
        gguf_close(g);
        return og_oom();
    }
    g->alignment = 32;
    for (uint64_t i = 0; i < n_kv && !st; i++) {
        gguf_kv *kv = &g->kv[i];
        const uint8_t *s;
        uint64_t len;
        char what[40];
        snprintf(what, sizeof what, "key #%" PRIu64, i);
        if ((st = rd_str(&c, &s, &len, what))) break;
        if (!(kv->key = dup_name(s, len))) {
            st = og_oom();
            break;
        }
        g->n_kv = (size_t)i + 1;
        if ((st = rd(&c, &kv->type, 4, kv->key)) || (st = read_value(&c, kv))) break;
        if (!strcmp(kv->key, "general.alignment")) {
            uint32_t a = 0;
            if (kv->type == GGUF_U32) memcpy(&a, kv->data, 4);
            if (kv->type != GGUF_U32 || a == 0 || (a & (a - 1)))
                st = og_errorf(OG_ERR_INVALID_MODEL,
                               "%s: general.alignment must be a u32 power of two", label);
            g->alignment = a;
        }
    }
    for (uint64_t i = 0; i < n_tensors && !st; i++) {
        st = read_tensor_info(&c, &g->tensors[i], (size_t)i);
        g->n_tensors = (size_t)i + 1;
    }
    if (st) {
        gguf_close(g);
        return st;
    }
    size_t header = (size_t)(c.p - data);
    size_t start = (header + g->alignment - 1) / g->alignment * g->alignment;
    if (start > size && n_tensors) start = size + 1; /* makes every tensor fail below */
    for (size_t i = 0; i < g->n_tensors && !st; i++) {
        gguf_tensor *t = &g->tensors[i];
        uint64_t off = (uint64_t)(uintptr_t)t->data;
        if (off % g->alignment || start > size || off > size - start ||
            t->nbytes > size - start - off) {
            st = og_errorf(OG_ERR_INVALID_MODEL,
                           "%s: tensor '%s' (%" PRIu64 " bytes at data offset %" PRIu64
                           ") lies outside the file or is not %" PRIu64 "-aligned",
                           label, t->name, t->nbytes, off, g->alignment);
            break;
        }
        t->data = data + start + off;
        for (size_t j = 0; j < i && !st; j++)
            if (!strcmp(g->tensors[j].name, t->name))
                st = og_errorf(OG_ERR_INVALID_MODEL, "%s: tensor '%s' appears twice", label,
                               t->name);
    }
    if (st) gguf_close(g);
    return st;
}

og_status *gguf_open(const char *path, gguf_file *g) {
    mapped_file m;
    OG_TRY(mapped_file_open(path, &m));
    og_status *st = gguf_parse(m.data ? m.data : (const uint8_t *)"", m.size, path, g);
    if (st) {
        mapped_file_close(&m);
        return st;
    }
    g->map = m;
    /* convert reads every tensor: ask for read-ahead of the whole file (a hint, errors
     * ignored; MADV_SEQUENTIAL would drop pages a second pass over a weight reads) */
    if (m.data) (void)madvise((void *)m.data, m.size, MADV_WILLNEED);
    return NULL;
}

void gguf_close(gguf_file *g) {
    for (size_t i = 0; g->kv && i < g->n_kv; i++) {
        free(g->kv[i].key);
        free(g->kv[i].str_off);
    }
    for (size_t i = 0; g->tensors && i < g->n_tensors; i++) free(g->tensors[i].name);
    free(g->kv);
    free(g->tensors);
    if (g->map.path) mapped_file_close(&g->map);
    memset(g, 0, sizeof *g);
}

const gguf_kv *gguf_find(const gguf_file *g, const char *key) {
    for (size_t i = 0; i < g->n_kv; i++)
        if (!strcmp(g->kv[i].key, key)) return &g->kv[i];
    return NULL;
}

const gguf_tensor *gguf_tensor_find(const gguf_file *g, const char *name) {
    for (size_t i = 0; i < g->n_tensors; i++)
        if (!strcmp(g->tensors[i].name, name)) return &g->tensors[i];
    return NULL;
}

static bool int_at(uint32_t type, const uint8_t *p, int64_t *out) {
    switch (type) {
    case GGUF_U8: *out = *p; return true;
    case GGUF_I8: *out = (int8_t)*p; return true;
    case GGUF_BOOL: *out = *p != 0; return true;
    case GGUF_U16: { uint16_t v; memcpy(&v, p, 2); *out = v; return true; }
    case GGUF_I16: { int16_t v; memcpy(&v, p, 2); *out = v; return true; }
    case GGUF_U32: { uint32_t v; memcpy(&v, p, 4); *out = v; return true; }
    case GGUF_I32: { int32_t v; memcpy(&v, p, 4); *out = v; return true; }
    case GGUF_I64: memcpy(out, p, 8); return true;
    case GGUF_U64: {
        uint64_t v;
        memcpy(&v, p, 8);
        *out = v > INT64_MAX ? INT64_MAX : (int64_t)v;
        return true;
    }
    default: return false;
    }
}

og_status *gguf_get_i64_or(const gguf_file *g, const char *key, int64_t dflt, int64_t *out) {
    const gguf_kv *kv = gguf_find(g, key);
    if (!kv) {
        *out = dflt;
        return NULL;
    }
    if (!int_at(kv->type, kv->data, out))
        return og_errorf(OG_ERR_INVALID_MODEL, "%s: key '%s' is a %s, expected an integer",
                         g->map.path ? g->map.path : "gguf", key, kv_type_name(kv->type));
    return NULL;
}

og_status *gguf_get_i64(const gguf_file *g, const char *key, int64_t *out) {
    if (!gguf_find(g, key))
        return og_errorf(OG_ERR_INVALID_MODEL, "%s: key '%s' is missing",
                         g->map.path ? g->map.path : "gguf", key);
    return gguf_get_i64_or(g, key, 0, out);
}

og_status *gguf_get_f64_or(const gguf_file *g, const char *key, double dflt, double *out) {
    const gguf_kv *kv = gguf_find(g, key);
    *out = dflt;
    if (!kv) return NULL;
    if (kv->type == GGUF_F32) {
        float f;
        memcpy(&f, kv->data, 4);
        *out = f;
    } else if (kv->type == GGUF_F64) {
        memcpy(out, kv->data, 8);
    } else {
        int64_t v;
        if (!int_at(kv->type, kv->data, &v))
            return og_errorf(OG_ERR_INVALID_MODEL, "%s: key '%s' is a %s, expected a number",
                             g->map.path ? g->map.path : "gguf", key, kv_type_name(kv->type));
        *out = (double)v;
    }
    return NULL;
}

og_status *gguf_get_str(const gguf_file *g, const char *key, const char **s, size_t *len) {
    const gguf_kv *kv = gguf_find(g, key);
    if (!kv || kv->type != GGUF_STRING)
        return og_errorf(OG_ERR_INVALID_MODEL, "%s: key '%s' is %s, expected a string",
                         g->map.path ? g->map.path : "gguf", key,
                         kv ? kv_type_name(kv->type) : "missing");
    *s = (const char *)kv->data;
    *len = (size_t)kv->n;
    return NULL;
}

void gguf_arr_str(const gguf_kv *kv, uint64_t i, const char **s, size_t *len) {
    const uint8_t *p = kv->data + kv->str_off[i];
    uint64_t n;
    memcpy(&n, p, 8);
    *s = (const char *)p + 8;
    *len = (size_t)n;
}

float gguf_arr_f32(const gguf_kv *kv, uint64_t i) {
    if (kv->elem_type == GGUF_F64) {
        double d;
        memcpy(&d, kv->data + i * 8, 8);
        return (float)d;
    }
    float f;
    memcpy(&f, kv->data + i * 4, 4);
    return f;
}

int64_t gguf_arr_int(const gguf_kv *kv, uint64_t i) {
    int64_t v = 0;
    int_at(kv->elem_type, kv->data + i * scalar_size[kv->elem_type], &v);
    return v;
}

og_status *gguf_expect_array(const gguf_kv *kv, uint32_t elem_type, uint64_t count) {
    bool ok = kv->type == GGUF_ARRAY;
    if (ok && elem_type == GGUF_I32)
        ok = kv->elem_type != GGUF_STRING && kv->elem_type != GGUF_F32 &&
             kv->elem_type != GGUF_F64;
    else if (ok && elem_type == GGUF_F32)
        ok = kv->elem_type == GGUF_F32 || kv->elem_type == GGUF_F64;
    else if (ok)
        ok = kv->elem_type == elem_type;
    if (!ok)
        return og_errorf(OG_ERR_INVALID_MODEL, "key '%s' is %s%s, expected an array of %s",
                         kv->key, kv->type == GGUF_ARRAY ? "an array of " : "a ",
                         kv_type_name(kv->type == GGUF_ARRAY ? kv->elem_type : kv->type),
                         elem_type == GGUF_I32 ? "integers" : kv_type_name(elem_type));
    if (count && kv->n != count)
        return og_errorf(OG_ERR_INVALID_MODEL, "key '%s' has %" PRIu64 " items, expected %" PRIu64,
                         kv->key, kv->n, count);
    return NULL;
}
