/* The spatial family: Conv and ConvTranspose (conv.c, conv_transpose.c: im2col over
 * gemm_f32), pooling (pool.c, max_unpool.c; window.h is the window geometry they share
 * with Conv), Resize and Upsample (resize.c), GridSample (grid_sample.c) and AffineGrid
 * (affine_grid.c). */
#ifndef OG_NATIVE_KERNELS_SPATIAL_H
#define OG_NATIVE_KERNELS_SPATIAL_H

#include "backends/native/kernels/kernel.h"

og_status *cpu_conv(kernel_ctx *ctx);
og_status *cpu_conv_transpose(kernel_ctx *ctx);
og_status *cpu_max_pool(kernel_ctx *ctx);
og_status *cpu_average_pool(kernel_ctx *ctx);
og_status *cpu_lp_pool(kernel_ctx *ctx);
og_status *cpu_global_max_pool(kernel_ctx *ctx);
og_status *cpu_global_average_pool(kernel_ctx *ctx);
og_status *cpu_global_lp_pool(kernel_ctx *ctx);
og_status *cpu_resize(kernel_ctx *ctx);
og_status *cpu_upsample(kernel_ctx *ctx);
og_status *cpu_grid_sample(kernel_ctx *ctx);
og_status *cpu_affine_grid(kernel_ctx *ctx);
og_status *cpu_max_unpool(kernel_ctx *ctx);

#endif
