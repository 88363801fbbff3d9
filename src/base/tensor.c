#include "base/tensor.h"

#include "base/half.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int64_t shape_count(const int64_t *dims, int rank) {
    int64_t n = 1;
    for (int i = 0; i < rank; i++) {
        if (dims[i] < 0) return -1;
        if (dims[i] != 0 && n > INT64_MAX / dims[i]) return -1;
        n *= dims[i];
    }
    return n;
}

size_t dtype_size(og_dtype dt) {
    switch (dt) {
    case OG_FLOAT32: case OG_INT32: case OG_UINT32: return 4;
    case OG_UINT8: case OG_INT8: case OG_BOOL:
    case OG_FLOAT8E4M3FN: case OG_FLOAT8E4M3FNUZ: case OG_FLOAT8E5M2: case OG_FLOAT8E5M2FNUZ:
        return 1;
    case OG_UINT16: case OG_INT16: case OG_FLOAT16: case OG_BFLOAT16: return 2;
    case OG_INT64: case OG_UINT64: case OG_FLOAT64: case OG_COMPLEX64: return 8;
    case OG_COMPLEX128: return 16;
    case OG_STRING: return sizeof(og_string);
    default: return 0;
    }
}

int og_dtype_bits(og_dtype dt) {
    if (dt == OG_INT4 || dt == OG_UINT4 || dt == OG_FLOAT4E2M1) return 4;
    if (dt == OG_STRING) return 0; /* no fixed width: the element is a view */
    return (int)dtype_size(dt) * 8;
}

size_t dtype_nbytes(og_dtype dt, int64_t count) {
    if (count < 0) return SIZE_MAX;
    int bits = dt == OG_STRING ? (int)sizeof(og_string) * 8 : og_dtype_bits(dt);
    if (bits == 0) return SIZE_MAX;
    if (bits == 4) return (size_t)((count + 1) / 2);
    size_t es = (size_t)bits / 8;
    if ((uint64_t)count > SIZE_MAX / es) return SIZE_MAX;
    return (size_t)count * es;
}

const char *og_dtype_name(og_dtype dt) {
    static const char *names[OG_DTYPE_COUNT] = {
        "undefined", "float32", "uint8", "int8", "uint16", "int16", "int32", "int64",
        "string", "bool", "float16", "float64", "uint32", "uint64", "complex64",
        "complex128", "bfloat16", "float8e4m3fn", "float8e4m3fnuz", "float8e5m2",
        "float8e5m2fnuz", "uint4", "int4", "float4e2m1"};
    if ((int)dt < 0 || dt >= OG_DTYPE_COUNT) return "unknown";
    return names[dt];
}

og_status *tensor_set_shape(tensor *t, og_dtype dtype, int rank, const int64_t *dims) {
    if (rank < 0 || rank > OG_MAX_RANK)
        return og_errorf(OG_ERR_UNSUPPORTED, "rank %d exceeds the supported maximum %d", rank,
                         OG_MAX_RANK);
    int64_t n = shape_count(dims, rank);
    if (n < 0) {
        char buf[160];
        return og_errorf(OG_ERR_INVALID_ARGUMENT, "invalid shape %s",
                         shape_str(dims, rank, buf, sizeof buf));
    }
    size_t nb = dtype_nbytes(dtype, n);
    if (nb == SIZE_MAX)
        return og_errorf(OG_ERR_UNSUPPORTED, "dtype %s with %lld elements has no byte size",
                         og_dtype_name(dtype), (long long)n);
    t->dtype = dtype;
    t->rank = rank;
    for (int i = 0; i < rank; i++) t->dims[i] = dims[i];
    for (int i = rank; i < OG_MAX_RANK; i++) t->dims[i] = 0;
    t->nbytes = nb;
    return NULL;
}

void *tensor_empty_data(void) {
    static _Alignas(64) unsigned char empty[64];
    return empty;
}

og_status *tensor_alloc_data(tensor *t) {
    if (t->nbytes == 0) {
        t->data = tensor_empty_data();
        t->owns_data = false;
        return NULL;
    }
    size_t size = (t->nbytes + 63) & ~(size_t)63;
    void *p = NULL;
    if (posix_memalign(&p, 64, size) != 0) {
        char buf[160];
        return og_oom_for(t->nbytes, "a %s %s tensor", og_dtype_name(t->dtype),
                          shape_str(t->dims, t->rank, buf, sizeof buf));
    }
    t->data = p;
    t->owns_data = true;
    return NULL;
}

void tensor_release(tensor *t) {
    if (t->owns_data) free(t->data);
    t->data = NULL;
    t->owns_data = false;
}

og_status *tensor_own_strings(const tensor *src, tensor *out) {
    int64_t n = tensor_count(src);
    const og_string *v = src->data;
    size_t views = (size_t)n * sizeof(og_string), total = views;
    for (int64_t i = 0; i < n; i++) {
        if (v[i].size > SIZE_MAX - total)
            return og_errorf(OG_ERR_INVALID_ARGUMENT, "the strings of a string tensor exceed "
                             "the address space");
        total += v[i].size;
    }
    tensor t;
    memset(&t, 0, sizeof t);
    OG_TRY(tensor_set_shape(&t, OG_STRING, src->rank, src->dims));
    t.nbytes = total; /* allocate views and bytes in one block */
    OG_TRY(tensor_alloc_data(&t));
    t.nbytes = views;
    og_string *dst = t.data;
    char *bytes = (char *)t.data + views;
    for (int64_t i = 0; i < n; i++) {
        dst[i].size = v[i].size;
        dst[i].data = v[i].size ? bytes : NULL;
        if (v[i].size) memcpy(bytes, v[i].data, v[i].size);
        bytes += v[i].size;
    }
    *out = t;
    return NULL;
}

const char *shape_str(const int64_t *dims, int rank, char *buf, size_t size) {
    size_t o = 0;
    if (size == 0) return buf;
    buf[0] = 0;
    o += (size_t)snprintf(buf + o, size - o, "[");
    for (int i = 0; i < rank && o < size; i++)
        o += (size_t)snprintf(buf + o, size - o, i ? ",%lld" : "%lld", (long long)dims[i]);
    if (o < size) snprintf(buf + o, size - o, "]");
    return buf;
}

double tensor_get_f64(const tensor *t, int64_t i) {
    const void *d = t->data;
    switch (t->dtype) {
    case OG_FLOAT32: return ((const float *)d)[i];
    case OG_FLOAT64: return ((const double *)d)[i];
    case OG_FLOAT16: return f16_to_f32(((const uint16_t *)d)[i]);
    case OG_BFLOAT16: return bf16_to_f32(((const uint16_t *)d)[i]);
    default: return (double)tensor_get_i64(t, i);
    }
}

int64_t tensor_get_i64(const tensor *t, int64_t i) {
    const void *d = t->data;
    switch (t->dtype) {
    case OG_INT64: return ((const int64_t *)d)[i];
    case OG_INT32: return ((const int32_t *)d)[i];
    case OG_INT16: return ((const int16_t *)d)[i];
    case OG_INT8: return ((const int8_t *)d)[i];
    case OG_UINT64: return (int64_t)((const uint64_t *)d)[i];
    case OG_UINT32: return ((const uint32_t *)d)[i];
    case OG_UINT16: return ((const uint16_t *)d)[i];
    case OG_UINT8: case OG_BOOL: return ((const uint8_t *)d)[i];
    case OG_FLOAT32: case OG_FLOAT64: case OG_FLOAT16: case OG_BFLOAT16:
        return (int64_t)tensor_get_f64(t, i);
    default: return 0;
    }
}
