/* The attention table (see registry.h); the com.microsoft domain is at version 1, and the
 * default domain's Attention and RotaryEmbedding exist from opset 23. */
#include "backends/native/kernels/attention/attention.h"
#include "backends/native/kernels/registry.h"

const kernel_def cpu_attention_kernels[] = {
    {"com.microsoft", "Attention", 1, 1, cpu_contrib_attention},
    {"com.microsoft", "MultiHeadAttention", 1, 1, cpu_contrib_mha},
    {"com.microsoft", "GroupQueryAttention", 1, 1, cpu_contrib_gqa},
    {"com.microsoft", "RotaryEmbedding", 1, 1, cpu_contrib_rotary},
    {"com.microsoft", "MRotaryEmbedding", 1, 1, cpu_contrib_mrotary},
    {"", "Attention", 23, 25, cpu_onnx_attention},
    {"", "RotaryEmbedding", 23, 28, cpu_rotary},
    {0},
};
