/* The recurrent family: the classic recurrent layers RNN, GRU and LSTM (rnn.c), and the
 * state-carrying ops of hybrid decoders (Qwen3.5 gated DeltaNet, LFM2 short convolutions,
 * Mamba-style layers): CausalConvWithState (causal_conv.c), LinearAttention
 * (linear_attention.c) and the gate fusion LinearAttentionGate (linear_attention_gate.c).
 * The hybrid ops carry a state from one run to the next through a past input and a
 * present output, which may be the same buffer: the kernels read all of the past they
 * need before they write the present. */
#ifndef OG_NATIVE_KERNELS_RECURRENT_H
#define OG_NATIVE_KERNELS_RECURRENT_H

#include "backends/native/kernels/kernel_util.h"

og_status *cpu_rnn(kernel_ctx *ctx);
og_status *cpu_gru(kernel_ctx *ctx);
og_status *cpu_lstm(kernel_ctx *ctx);

og_status *cpu_causal_conv_with_state(kernel_ctx *ctx);
og_status *cpu_linear_attention(kernel_ctx *ctx);
og_status *cpu_contrib_linear_attention_gate(kernel_ctx *ctx);

#endif
