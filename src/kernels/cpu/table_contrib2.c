/* The second group of contrib kernels (see cpu_kernels.h). SimplifiedLayerNormalization
 * is not an ONNX op but onnxruntime registers it in the default domain from version 1 on,
 * and onnxruntime-genai's builder emits it there in graphs that import opset 21 or 22, so
 * it is matched at any opset of that domain. */
#include "kernels/cpu/contrib2.h"
#include "kernels/cpu/cpu_kernels.h"

const kernel_def cpu_contrib2_kernels[] = {
    {"com.microsoft", "GroupQueryAttention", 1, 1, cpu_contrib_gqa},
    {"com.microsoft", "MultiHeadAttention", 1, 1, cpu_contrib_mha},
    {"com.microsoft", "RotaryEmbedding", 1, 1, cpu_contrib_rotary},
    {"", "SimplifiedLayerNormalization", 1, 1000, cpu_simplified_layer_norm},
    {"com.microsoft", "SkipSimplifiedLayerNormalization", 1, 1,
     cpu_contrib_skip_simplified_layer_norm},
    {"com.microsoft", "QuickGelu", 1, 1, cpu_contrib_quick_gelu},
    {"com.microsoft", "BiasGelu", 1, 1, cpu_contrib_bias_gelu},
    {"com.microsoft", "BiasAdd", 1, 1, cpu_contrib_bias_add},
    {0},
};
