#include "onnx/wire.h"

#include <string.h>

wire_reader wire_init(const uint8_t *base, size_t size, const char *label, const char *msg) {
    wire_reader r = {base, base + size, base, label, msg};
    return r;
}

wire_reader wire_sub(const wire_reader *parent, const uint8_t *data, size_t len,
                     const char *msg) {
    wire_reader r = {data, data + len, parent->base, parent->label, msg};
    return r;
}

bool wire_varint(const uint8_t **pp, const uint8_t *end, uint64_t *out) {
    const uint8_t *p = *pp;
    uint64_t v = 0;
    for (int shift = 0; shift < 70; shift += 7) {
        if (p >= end) return false;
        uint8_t b = *p++;
        /* the 10th byte may only carry the top bit of a 64-bit value */
        if (shift == 63 && (b & 0x7e)) return false;
        v |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80)) {
            *pp = p;
            *out = v;
            return true;
        }
    }
    return false;
}

static const char *wire_type_name(int t) {
    switch (t) {
    case WIRE_VARINT: return "varint";
    case WIRE_I64: return "64-bit";
    case WIRE_LEN: return "length-delimited";
    case WIRE_I32: return "32-bit";
    case 3: return "start-group";
    case 4: return "end-group";
    default: return "undefined";
    }
}

og_status *wire_next(wire_reader *r, wire_field *f, bool *has) {
    memset(f, 0, sizeof *f);
    if (r->p >= r->end) {
        *has = false;
        return NULL;
    }
    size_t off = (size_t)(r->p - r->base);
    f->offset = off;
    uint64_t key;
    const uint8_t *p = r->p;
    if (!wire_varint(&p, r->end, &key))
        return og_errorf(OG_ERR_INVALID_MODEL,
                         "%s: malformed or truncated field key in %s at offset %zu", r->label,
                         r->msg, off);
    uint64_t num = key >> 3;
    int type = (int)(key & 7);
    if (num == 0 || num > 0x1fffffff)
        return og_errorf(OG_ERR_INVALID_MODEL, "%s: invalid field number %llu in %s at offset %zu",
                         r->label, (unsigned long long)num, r->msg, off);
    f->number = (uint32_t)num;
    f->type = type;
    size_t remain = (size_t)(r->end - p);
    switch (type) {
    case WIRE_VARINT:
        if (!wire_varint(&p, r->end, &f->v))
            return og_errorf(OG_ERR_INVALID_MODEL,
                             "%s: field %u of %s at offset %zu: varint is truncated or "
                             "overflows 64 bits",
                             r->label, f->number, r->msg, off);
        break;
    case WIRE_I64:
    case WIRE_I32: {
        size_t n = type == WIRE_I64 ? 8 : 4;
        if (remain < n)
            return og_errorf(OG_ERR_INVALID_MODEL,
                             "%s: truncated: field %u of %s needs %zu bytes at offset %zu, "
                             "only %zu remain",
                             r->label, f->number, r->msg, n, (size_t)(p - r->base), remain);
        uint64_t v = 0;
        for (size_t i = 0; i < n; i++) v |= (uint64_t)p[i] << (8 * i);
        f->v = v;
        p += n;
        break;
    }
    case WIRE_LEN: {
        uint64_t len;
        if (!wire_varint(&p, r->end, &len))
            return og_errorf(OG_ERR_INVALID_MODEL,
                             "%s: field %u of %s at offset %zu: length varint is truncated or "
                             "overflows 64 bits",
                             r->label, f->number, r->msg, off);
        remain = (size_t)(r->end - p);
        if (len > remain)
            return og_errorf(OG_ERR_INVALID_MODEL,
                             "%s: truncated: field %u of %s needs %llu bytes at offset %zu, "
                             "only %zu remain",
                             r->label, f->number, r->msg, (unsigned long long)len,
                             (size_t)(p - r->base), remain);
        f->data = p;
        f->len = (size_t)len;
        p += len;
        break;
    }
    default:
        return og_errorf(OG_ERR_INVALID_MODEL,
                         "%s: field %u of %s at offset %zu has unsupported wire type %d (%s)",
                         r->label, f->number, r->msg, off, type, wire_type_name(type));
    }
    r->p = p;
    *has = true;
    return NULL;
}

og_status *wire_expect(const wire_reader *r, const wire_field *f, int type, const char *name) {
    if (f->type == type) return NULL;
    return og_errorf(OG_ERR_INVALID_MODEL,
                     "%s: field %u (%s) of %s at offset %zu has wire type %d (%s), expected %d "
                     "(%s)",
                     r->label, f->number, name, r->msg, f->offset, f->type,
                     wire_type_name(f->type), type, wire_type_name(type));
}

og_status *wire_repeated_count(const wire_reader *r, const wire_field *f, int elem,
                               const char *name, size_t *count) {
    if (f->type == elem) {
        *count = 1;
        return NULL;
    }
    if (f->type != WIRE_LEN) return wire_expect(r, f, elem, name);
    if (elem == WIRE_I32 || elem == WIRE_I64) {
        size_t w = elem == WIRE_I32 ? 4 : 8;
        if (f->len % w)
            return og_errorf(OG_ERR_INVALID_MODEL,
                             "%s: packed field %u (%s) of %s at offset %zu has %zu bytes, not a "
                             "multiple of %zu",
                             r->label, f->number, name, r->msg, f->offset, f->len, w);
        *count = f->len / w;
        return NULL;
    }
    const uint8_t *p = f->data, *end = f->data + f->len;
    size_t n = 0;
    while (p < end) {
        uint64_t v;
        if (!wire_varint(&p, end, &v))
            return og_errorf(OG_ERR_INVALID_MODEL,
                             "%s: packed field %u (%s) of %s at offset %zu: element %zu is a "
                             "truncated or overflowing varint",
                             r->label, f->number, name, r->msg, f->offset, n);
        n++;
    }
    *count = n;
    return NULL;
}

void wire_repeated_each(const wire_field *f, int elem, wire_elem_fn fn, void *arg, size_t *pos) {
    if (f->type != WIRE_LEN) {
        fn(arg, f->v, (*pos)++);
        return;
    }
    const uint8_t *p = f->data, *end = f->data + f->len;
    if (elem == WIRE_VARINT) {
        uint64_t v;
        while (p < end && wire_varint(&p, end, &v)) fn(arg, v, (*pos)++);
        return;
    }
    size_t w = elem == WIRE_I32 ? 4 : 8;
    for (; (size_t)(end - p) >= w; p += w) {
        uint64_t v = 0;
        for (size_t i = 0; i < w; i++) v |= (uint64_t)p[i] << (8 * i);
        fn(arg, v, (*pos)++);
    }
}
