/* The normalization family: LayerNormalization, RMSNormalization, LpNormalization and the
 * com.microsoft Simplified/Skip/SkipSimplified/EmbedLayerNormalization and GatedRMSNorm
 * kernels. */
#ifndef OG_NATIVE_KERNELS_NORM_H
#define OG_NATIVE_KERNELS_NORM_H

#include "backends/native/kernels/kernel_util.h"

/* The layer normalization shared by the norm kernels: y = (x - mean) * inv * gamma + beta
 * over n elements; returns mean and inv through the pointers. beta may be NULL. */
void cpu_layer_norm_row(const float *x, int64_t n, const float *gamma, const float *beta,
                       float eps, float *y, float *mean, float *inv);

og_status *cpu_layer_norm(kernel_ctx *ctx);
og_status *cpu_rms_norm(kernel_ctx *ctx);
og_status *cpu_simplified_layer_norm(kernel_ctx *ctx);
og_status *cpu_contrib_skip_simplified_layer_norm(kernel_ctx *ctx);
og_status *cpu_contrib_embed_layer_norm(kernel_ctx *ctx);
og_status *cpu_contrib_skip_layer_norm(kernel_ctx *ctx);
og_status *cpu_contrib_gated_rms_norm(kernel_ctx *ctx);
og_status *cpu_lp_normalization(kernel_ctx *ctx);

#endif
