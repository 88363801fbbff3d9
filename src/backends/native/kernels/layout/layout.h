/* The layout kernels (registered in layout_table.c) and helpers shared between their
 * files. */
#ifndef OG_NATIVE_KERNELS_LAYOUT_H
#define OG_NATIVE_KERNELS_LAYOUT_H

#include "backends/native/kernels/kernel.h"

/* shape_ops.c */
og_status *cpu_reshape(kernel_ctx *ctx);
og_status *cpu_squeeze(kernel_ctx *ctx);
og_status *cpu_unsqueeze(kernel_ctx *ctx);
og_status *cpu_flatten(kernel_ctx *ctx);
og_status *cpu_identity(kernel_ctx *ctx);
og_status *cpu_dropout(kernel_ctx *ctx);
og_status *cpu_shape(kernel_ctx *ctx);
og_status *cpu_size(kernel_ctx *ctx);
/* transpose.c, concat_split.c, slice.c, pad.c, expand_tile.c */
og_status *cpu_transpose(kernel_ctx *ctx);
og_status *cpu_concat(kernel_ctx *ctx);
og_status *cpu_split(kernel_ctx *ctx);
og_status *cpu_slice(kernel_ctx *ctx);
og_status *cpu_pad(kernel_ctx *ctx);
og_status *cpu_expand(kernel_ctx *ctx);
og_status *cpu_tile(kernel_ctx *ctx);
/* gather.c, scatter.c */
og_status *cpu_gather(kernel_ctx *ctx);
og_status *cpu_gather_elements(kernel_ctx *ctx);
og_status *cpu_gather_nd(kernel_ctx *ctx);
og_status *cpu_scatter_nd(kernel_ctx *ctx);
og_status *cpu_scatter_elements(kernel_ctx *ctx);
/* depth_space.c, compress.c, unique.c */
og_status *cpu_depth_to_space(kernel_ctx *ctx);
og_status *cpu_space_to_depth(kernel_ctx *ctx);
og_status *cpu_compress(kernel_ctx *ctx);
og_status *cpu_unique(kernel_ctx *ctx);
/* generate.c */
og_status *cpu_constant_of_shape(kernel_ctx *ctx);
og_status *cpu_constant(kernel_ctx *ctx);
og_status *cpu_range(kernel_ctx *ctx);
og_status *cpu_trilu(kernel_ctx *ctx);
og_status *cpu_nonzero(kernel_ctx *ctx);

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
