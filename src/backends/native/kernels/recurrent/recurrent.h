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

/* The family's kernels, each og_status *cpu_<name>(kernel_ctx *ctx) (KERNEL_DECLARE). */
#define RECURRENT_KERNELS(X)                                                                \
    X(rnn) X(gru) X(lstm)                                                                   \
    X(causal_conv_with_state) X(linear_attention) X(contrib_linear_attention_gate)
RECURRENT_KERNELS(KERNEL_DECLARE)

#endif
