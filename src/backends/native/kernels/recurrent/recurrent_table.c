/* The recurrent table (see registry.h). RNN, GRU and LSTM: versions 1 and 3 had an
 * output_sequence attribute (Y is computed whenever the node asks for it), GRU 3 added
 * linear_before_reset, 14 the layout attribute; one implementation reads what each
 * version defines. CausalConvWithState and LinearAttention are in the default domain
 * from opset 27 (onnx 1.23 defines up to 28) and in com.microsoft (version 1), with the
 * same kernel: the com.microsoft forms only add attributes. */
#include "backends/native/kernels/recurrent/recurrent.h"
#include "backends/native/kernels/registry.h"

const kernel_def cpu_recurrent_kernels[] = {
    {"", "RNN", 1, 28, cpu_rnn},
    {"", "GRU", 1, 28, cpu_gru},
    {"", "LSTM", 1, 28, cpu_lstm},
    {"", "CausalConvWithState", 27, 28, cpu_causal_conv_with_state},
    {"", "LinearAttention", 27, 28, cpu_linear_attention},
    {"com.microsoft", "CausalConvWithState", 1, 1, cpu_causal_conv_with_state},
    {"com.microsoft", "LinearAttention", 1, 1, cpu_linear_attention},
    {"com.microsoft", "LinearAttentionGate", 1, 1, cpu_contrib_linear_attention_gate},
    {0},
};
