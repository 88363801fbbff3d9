/* The public og_tensor functions. */
#include "base/tensor.h"

#include <stdlib.h>
#include <string.h>

static og_status *new_tensor(og_dtype dtype, const int64_t *dims, int rank, og_tensor **out) {
    if (!out || (rank > 0 && !dims))
        return og_errorf(OG_ERR_INVALID_ARGUMENT, "og_tensor: NULL argument");
    if (og_dtype_bits(dtype) == 0 && dtype != OG_STRING)
        return og_errorf(OG_ERR_UNSUPPORTED, "og_tensor: dtype %s has no fixed element size",
                         og_dtype_name(dtype));
    og_tensor *t = calloc(1, sizeof *t);
    if (!t) return og_oom();
    og_status *st = tensor_set_shape(t, dtype, rank, dims);
    if (st) {
        free(t);
        return og_status_wrap(st, "og_tensor");
    }
    *out = t;
    return NULL;
}

og_status *og_tensor_create(og_dtype dtype, const int64_t *dims, int rank, og_tensor **out) {
    og_tensor *t;
    OG_TRY(new_tensor(dtype, dims, rank, &t));
    og_status *st = tensor_alloc_data(t);
    if (st) {
        free(t);
        return st;
    }
    if (t->nbytes) memset(t->data, 0, t->nbytes);
    *out = t;
    return NULL;
}

og_status *og_tensor_wrap(og_dtype dtype, const int64_t *dims, int rank, void *data,
                          size_t nbytes, og_tensor **out) {
    og_tensor *t;
    OG_TRY(new_tensor(dtype, dims, rank, &t));
    if (nbytes != t->nbytes || (!data && nbytes)) {
        char buf[160];
        og_status *st = og_errorf(OG_ERR_INVALID_ARGUMENT,
                                  "og_tensor_wrap: %zu bytes given, %s %s needs %zu", nbytes,
                                  og_dtype_name(dtype), shape_str(dims, rank, buf, sizeof buf),
                                  t->nbytes);
        free(t);
        return st;
    }
    t->data = data ? data : tensor_empty_data();
    t->owns_data = false;
    const og_string *v = t->data;
    for (int64_t i = 0; dtype == OG_STRING && i < tensor_count(t); i++)
        if (v[i].size && !v[i].data) {
            free(t);
            return og_errorf(OG_ERR_INVALID_ARGUMENT, "og_tensor_wrap: string %lld has %zu "
                             "bytes at NULL", (long long)i, v[i].size);
        }
    *out = t;
    return NULL;
}

og_status *og_tensor_create_strings(const int64_t *dims, int rank, const og_string *strings,
                                    og_tensor **out) {
    og_tensor *t;
    OG_TRY(new_tensor(OG_STRING, dims, rank, &t));
    int64_t n = tensor_count(t);
    if (n && !strings) {
        free(t);
        return og_errorf(OG_ERR_INVALID_ARGUMENT, "og_tensor_create_strings: NULL strings");
    }
    for (int64_t i = 0; i < n; i++)
        if (strings[i].size && !strings[i].data) {
            free(t);
            return og_errorf(OG_ERR_INVALID_ARGUMENT, "og_tensor_create_strings: string %lld "
                             "has %zu bytes at NULL", (long long)i, strings[i].size);
        }
    tensor view = *t;
    view.data = n ? (void *)strings : tensor_empty_data();
    og_status *st = tensor_own_strings(&view, t);
    if (st) {
        free(t);
        return og_status_wrap(st, "og_tensor_create_strings");
    }
    *out = t;
    return NULL;
}

void og_tensor_free(og_tensor *t) {
    if (!t) return;
    tensor_release(t);
    free(t);
}

og_dtype og_tensor_dtype(const og_tensor *t) { return t ? t->dtype : OG_UNDEFINED; }
int og_tensor_rank(const og_tensor *t) { return t ? t->rank : 0; }
const int64_t *og_tensor_dims(const og_tensor *t) { return t ? t->dims : NULL; }
int64_t og_tensor_element_count(const og_tensor *t) { return t ? tensor_count(t) : 0; }
size_t og_tensor_size_bytes(const og_tensor *t) { return t ? t->nbytes : 0; }
void *og_tensor_data(og_tensor *t) { return t ? t->data : NULL; }
