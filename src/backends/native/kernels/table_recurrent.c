/* The recurrent-state table (see tables.h). CausalConvWithState and LinearAttention are
 * in the default domain from opset 27 (onnx 1.23 defines up to 28) and in com.microsoft
 * (version 1), with the same kernel: the com.microsoft forms only add attributes. */
#include "backends/native/kernels/recurrent.h"
#include "backends/native/kernels/tables.h"

const kernel_def cpu_recurrent_kernels[] = {
    {"", "CausalConvWithState", 27, 28, cpu_causal_conv_with_state},
    {"", "LinearAttention", 27, 28, cpu_linear_attention},
    {"com.microsoft", "CausalConvWithState", 1, 1, cpu_causal_conv_with_state},
    {"com.microsoft", "LinearAttention", 1, 1, cpu_linear_attention},
    {"com.microsoft", "LinearAttentionGate", 1, 1, cpu_contrib_linear_attention_gate},
    {0},
};
