/* Helpers shared by the layout kernels (shape ops, transpose, slice, gather, ...):
 * element-size dispatch, index/int-list inputs, axis normalisation and one strided
 * N-D copy that every data-moving op reduces to. */
#ifndef OG_NATIVE_KERNELS_LAYOUT_UTIL_H
#define OG_NATIVE_KERNELS_LAYOUT_UTIL_H

#include "backends/native/kernels/kernel.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The newest opset any layout kernel is registered up to. */
#define LAYOUT_MAX_OPSET 28

/* Requires min_inputs inputs; *x = input 0 and *es its bytes per element (UNSUPPORTED
 * for packed 4-bit and string data). */
og_status *layout_data(const kernel_ctx *ctx, int min_inputs, const tensor **x, size_t *es);

/* NULL when input `input` (`what` in messages) is int32 or int64, else UNSUPPORTED. */
og_status *layout_check_index_dtype(const kernel_ctx *ctx, int input, const char *what);

/* Element j of an int32/int64 tensor. */
static inline int64_t layout_index_at(const tensor *t, int64_t j) {
    return t->dtype == OG_INT32 ? (int64_t)((const int32_t *)t->data)[j]
                                : ((const int64_t *)t->data)[j];
}

/* Reads a scalar or 1-D int32/int64 input into vals[0..*n) (at most max values). */
og_status *layout_read_ints(const kernel_ctx *ctx, int input, const char *what, int64_t *vals,
                            int max, int *n);

/* axis in [-rank, rank) -> [0, rank), else INVALID_ARGUMENT naming `what`. */
og_status *layout_axis(const kernel_ctx *ctx, int64_t axis, int rank, const char *what,
                       int *out);

/* Validates and normalises every index of int32/int64 input `input` against
 * [-bound, bound) into *out (scratch, one int64 per index); an out-of-range value is
 * INVALID_ARGUMENT naming the input, the position, the value and the bound. */
og_status *layout_indices(kernel_ctx *ctx, int input, int64_t bound, int64_t **out);
/* The same check for one index (at position pos of input `input`). */
og_status *layout_fix_index(const kernel_ctx *ctx, int input, int64_t pos, int64_t *idx,
                            int64_t bound);

/* Row-major element strides of a shape. */
void layout_strides(const int64_t *dims, int rank, int64_t *strides);

/* dst[pos . dst_st] = src[pos . src_st] for every pos in dims[0..rank) (rank <= 16,
 * strides in elements, may be 0 or negative for src). Merges dimensions, takes a
 * blocked path for (batched) 2-D transposes, and splits rows over the pool. */
void layout_strided_copy(threadpool *pool, void *dst, const void *src, size_t es, int rank,
                         const int64_t *dims, const int64_t *dst_st, const int64_t *src_st);

/* memcpy split over the pool when large. */
void layout_memcpy(threadpool *pool, void *dst, const void *src, size_t n);

/* Fills n elements of size es at dst with the element at val. */
void layout_fill(void *dst, const void *val, size_t es, int64_t n);

/* Output 0 = a copy of input 0's bytes with a new shape (Reshape, Squeeze, Identity ...;
 * works for packed 4-bit types since the bytes are unchanged). */
og_status *layout_copy_as(kernel_ctx *ctx, int rank, const int64_t *dims);

/* Whether the node declares output i (optional outputs may be omitted). */
static inline bool layout_output_wanted(const kernel_ctx *ctx, int i) {
    return i < ctx->n_outputs && ctx->node->outputs[i] >= 0;
}

/* Element combiners for Scatter reductions: *dst = op(*dst, *src). */
typedef void (*layout_combine_fn)(void *dst, const void *src);
/* reduction: "none", "add", "mul", "max", "min"; NULL *fn for "none". */
og_status *layout_combiner(const kernel_ctx *ctx, og_dtype dtype, const char *reduction,
                           layout_combine_fn *fn);

#endif
