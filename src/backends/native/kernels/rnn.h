/* The classic recurrent layers (rnn.c): RNN, GRU, LSTM. */
#ifndef OG_NATIVE_KERNELS_RNN_H
#define OG_NATIVE_KERNELS_RNN_H

#include "backends/native/kernels/kernel.h"

og_status *cpu_rnn(kernel_ctx *ctx);
og_status *cpu_gru(kernel_ctx *ctx);
og_status *cpu_lstm(kernel_ctx *ctx);

#endif
