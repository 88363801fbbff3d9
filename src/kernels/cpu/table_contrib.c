/* The com.microsoft contrib kernels (see cpu_kernels.h); that domain is at version 1. */
#include "kernels/cpu/contrib.h"
#include "kernels/cpu/cpu_kernels.h"

const kernel_def cpu_contrib_kernels[] = {
    {"com.microsoft", "Attention", 1, 1, cpu_contrib_attention},
    {"com.microsoft", "EmbedLayerNormalization", 1, 1, cpu_contrib_embed_layer_norm},
    {"com.microsoft", "SkipLayerNormalization", 1, 1, cpu_contrib_skip_layer_norm},
    {"com.microsoft", "FastGelu", 1, 1, cpu_contrib_fast_gelu},
    {0},
};
