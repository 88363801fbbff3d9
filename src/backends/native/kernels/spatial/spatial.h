/* The spatial family: Conv and ConvTranspose (conv.c, conv_transpose.c: im2col over
 * gemm_f32), pooling (pool.c, max_unpool.c; window.h is the window geometry they share
 * with Conv), Resize and Upsample (resize.c), GridSample (grid_sample.c) and AffineGrid
 * (affine_grid.c). */
#ifndef OG_NATIVE_KERNELS_SPATIAL_H
#define OG_NATIVE_KERNELS_SPATIAL_H

#include "backends/native/kernels/kernel.h"

/* The family's kernels, each og_status *cpu_<name>(kernel_ctx *ctx) (KERNEL_DECLARE). */
#define SPATIAL_KERNELS(X)                                                                  \
    X(conv) X(conv_transpose) X(max_pool) X(average_pool) X(lp_pool) X(global_max_pool)     \
    X(global_average_pool) X(global_lp_pool) X(resize) X(upsample) X(grid_sample)           \
    X(affine_grid) X(max_unpool)
SPATIAL_KERNELS(KERNEL_DECLARE)

#endif
