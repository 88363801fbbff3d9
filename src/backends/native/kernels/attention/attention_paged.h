/* GroupQueryAttention over the paged KV cache a run carries (paged_kv.h). */
#ifndef OG_NATIVE_KERNELS_ATTENTION_PAGED_H
#define OG_NATIVE_KERNELS_ATTENTION_PAGED_H

#include "backends/native/kernels/kernel.h"
#include "backends/paged_kv.h"

/* The layer of the run's paged cache this GQA node reads (by the name of its past_key
 * input), or -1 when the run carries none or it is not one of its layers. */
int paged_kv_layer_of(const kernel_ctx *ctx);
/* The node over `layer` of ctx->paged_kv. */
og_status *cpu_gqa_paged(kernel_ctx *ctx, int layer);

#endif
