/* The tensor every layer shares: dtype, shape and a pointer to element bytes that may
 * live in a model's mapping, in an execution arena, in caller memory, or on the heap. */
#ifndef OG_BASE_TENSOR_H
#define OG_BASE_TENSOR_H

#include "base/status.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

struct og_tensor {
    og_dtype dtype;
    int rank;
    int64_t dims[OG_MAX_RANK]; /* dims[0..rank) */
    void *data;                /* nbytes of elements, row-major; never NULL (see below) */
    size_t nbytes;
    bool owns_data; /* data was malloc'd for this tensor and is freed with it */
};
typedef struct og_tensor tensor;

/* Elements in a shape (1 for rank 0). Returns -1 if a dim is negative or the product
 * overflows int64. */
int64_t shape_count(const int64_t *dims, int rank);
/* Bytes for `count` elements of dtype, rounding packed 4-bit types up (a string
 * element is its og_string view). SIZE_MAX on overflow or for unknown types. */
size_t dtype_nbytes(og_dtype dtype, int64_t count);
/* Bytes per element for byte-addressable types (sizeof(og_string) for strings), 0 for
 * packed/unknown ones. */
size_t dtype_size(og_dtype dtype);

static inline int64_t tensor_count(const tensor *t) { return shape_count(t->dims, t->rank); }

/* Sets dtype and shape and computes nbytes; data untouched. Error for rank > OG_MAX_RANK,
 * negative dims or overflow. */
og_status *tensor_set_shape(tensor *t, og_dtype dtype, int rank, const int64_t *dims);
/* Empty tensors point here, so that data is never NULL and kernels may form pointers
 * into any tensor (pointer arithmetic on NULL is undefined behaviour). Never written:
 * an empty tensor has no bytes to write. */
void *tensor_empty_data(void);

/* Allocates (64-byte aligned, uninitialized) memory for a tensor whose shape is set;
 * an empty tensor gets tensor_empty_data(). */
og_status *tensor_alloc_data(tensor *t);
/* Frees owned data (not the struct). */
void tensor_release(tensor *t);

/* A string tensor's elements are og_string views; the bytes live elsewhere (a model's
 * mapping, caller memory, memory the executor holds for a run) and must outlive the
 * views. This makes *out (shape and dtype of src) own one block holding a copy of the
 * views and the bytes they point to, the views pointing into the block itself, so that
 * the tensor is self-contained and tensor_release frees everything. */
og_status *tensor_own_strings(const tensor *src, tensor *out);
/* Whether two string elements hold the same bytes. */
static inline bool og_string_eq(og_string a, og_string b) {
    return a.size == b.size && (a.size == 0 || memcmp(a.data, b.data, a.size) == 0);
}

/* "[2,3,4]" into buf (always NUL-terminated); returns buf. */
const char *shape_str(const int64_t *dims, int rank, char *buf, size_t size);

/* Reads element i of a numeric tensor as double / writes it (for reference paths,
 * tests and type conversion; not for hot loops). Unsupported dtypes read as 0. */
double tensor_get_f64(const tensor *t, int64_t i);
int64_t tensor_get_i64(const tensor *t, int64_t i);

#endif
