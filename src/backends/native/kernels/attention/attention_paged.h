/* GroupQueryAttention over the paged KV cache a run carries (paged_kv.h). */
#ifndef OG_NATIVE_KERNELS_ATTENTION_PAGED_H
#define OG_NATIVE_KERNELS_ATTENTION_PAGED_H

#include "backends/native/kernels/attention/kv_fixed.h"
#include "backends/native/kernels/kernel.h"
#include "backends/paged_kv.h"

/* The layer of the run's paged cache this GQA node reads (by the name of its past_key
 * input), or -1 when the run carries none or it is not one of its layers. */
int paged_kv_layer_of(const kernel_ctx *ctx);
/* The node over `layer` of ctx->paged_kv; fixed: [2] the node's own key and value scales
 * (kv_fixed.h) when the pool holds the builder's codes (paged_kv.codes), else NULL. */
og_status *cpu_gqa_paged(kernel_ctx *ctx, int layer, const kv_fixed *fixed);

#endif
