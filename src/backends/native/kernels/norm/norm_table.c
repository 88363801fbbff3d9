/* The normalization table (see registry.h). SimplifiedLayerNormalization is not an ONNX op
 * but onnxruntime registers it in the default domain from version 1 on, and
 * onnxruntime-genai's builder emits it there in graphs that import opset 21 or 22, so it
 * is matched at any opset of that domain. The com.microsoft domain is at version 1. */
#include "backends/native/kernels/norm/norm.h"
#include "backends/native/kernels/registry.h"

const kernel_def cpu_norm_kernels[] = {
    {"", "LayerNormalization", 17, 28, cpu_layer_norm},
    {"", "RMSNormalization", 23, 28, cpu_rms_norm},
    {"", "SimplifiedLayerNormalization", 1, 1000, cpu_simplified_layer_norm},
    {"com.microsoft", "SkipSimplifiedLayerNormalization", 1, 1,
     cpu_contrib_skip_simplified_layer_norm},
    {"com.microsoft", "SkipLayerNormalization", 1, 1, cpu_contrib_skip_layer_norm},
    {"com.microsoft", "EmbedLayerNormalization", 1, 1, cpu_contrib_embed_layer_norm},
    {"", "LpNormalization", 1, 28, cpu_lp_normalization},
    {"com.microsoft", "GatedRMSNorm", 1, 1, cpu_contrib_gated_rms_norm},
    {0},
};
