/* The layout kernels (registered in layout_table.c) and helpers shared between their
 * files. */
#ifndef OG_NATIVE_KERNELS_LAYOUT_H
#define OG_NATIVE_KERNELS_LAYOUT_H

#include "backends/native/kernels/kernel.h"

/* The family's kernels, each og_status *cpu_<name>(kernel_ctx *ctx) (KERNEL_DECLARE). */
#define LAYOUT_KERNELS(X)                                                                   \
    /* shape_ops.c */ X(reshape) X(squeeze) X(unsqueeze) X(flatten) X(identity) X(dropout)  \
    X(shape) X(size)                                                                        \
    /* transpose.c, concat_split.c, slice.c, pad.c, expand_tile.c */ X(transpose)           \
    X(concat) X(split) X(slice) X(pad) X(expand) X(tile)                                    \
    /* gather.c, scatter.c */ X(gather) X(gather_elements) X(gather_nd) X(scatter_nd)       \
    X(scatter_elements)                                                                     \
    /* depth_space.c, compress.c, unique.c */ X(depth_to_space) X(space_to_depth)           \
    X(compress) X(unique)                                                                   \
    /* constant_range.c */ X(constant_of_shape) X(constant) X(range) X(trilu) X(nonzero)
LAYOUT_KERNELS(KERNEL_DECLARE)

/* Element offsets (in units of *slice elements) of each index tuple of `ind` (last dim
 * = tuple length k) into data dims [b, b + k), b = batch_dims; *count tuples, each
 * addressing *slice elements. Indices are validated. */
og_status *layout_nd_offsets(kernel_ctx *ctx, const tensor *data, const tensor *ind, int b,
                             int64_t **off, int64_t *count, int64_t *slice);
/* Element offset into data of each position of `ind` (same rank as data), the index
 * replacing the coordinate along `axis`. Indices are validated. */
og_status *layout_elements_offsets(kernel_ctx *ctx, const tensor *data, const tensor *ind,
                                   int axis, int64_t **off);

#endif
