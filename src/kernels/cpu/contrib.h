/* Private helpers of the com.microsoft contrib kernels (Attention, EmbedLayerNormalization,
 * SkipLayerNormalization, FastGelu). Every one computes in float32 whatever its storage
 * type is, so inputs are read through float32 views and outputs written through float32
 * buffers that are converted back at the end. */
#ifndef OG_KERNELS_CPU_CONTRIB_H
#define OG_KERNELS_CPU_CONTRIB_H

#include "kernels/kernel.h"

#include <stdbool.h>

/* True for the storage types the contrib kernels compute in float32 (f32, f16, bf16). */
bool ct_is_f32able(og_dtype dt);

/* Float32 view of input `index` (which must be present): its data for float32, a
 * converted copy in scratch for float16/bfloat16; other dtypes are OG_ERR_UNSUPPORTED. */
og_status *ct_in_f32(kernel_ctx *ctx, int index, const float **out);

/* A float32 buffer for output tensor t: its data when float32, else scratch. */
og_status *ct_out_f32(kernel_ctx *ctx, tensor *t, float **out);
/* Converts what was written into buf back into t (no-op when buf is t's data). */
void ct_out_done(tensor *t, const float *buf);

/* Whether the node declares output i (present and not omitted). */
bool ct_wants_output(const kernel_ctx *ctx, int i);

/* The layer normalization shared by the norm kernels: y = (x - mean) * inv * gamma + beta
 * over n elements; returns mean and inv through the pointers. beta may be NULL. */
void ct_layer_norm_row(const float *x, int64_t n, const float *gamma, const float *beta,
                       float eps, float *y, float *mean, float *inv);

og_status *cpu_contrib_attention(kernel_ctx *ctx);
og_status *cpu_contrib_embed_layer_norm(kernel_ctx *ctx);
og_status *cpu_contrib_skip_layer_norm(kernel_ctx *ctx);
og_status *cpu_contrib_fast_gelu(kernel_ctx *ctx);

#endif
