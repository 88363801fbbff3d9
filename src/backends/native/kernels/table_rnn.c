/* The RNN table (see tables.h). Versions 1 and 3 had an output_sequence attribute (Y is
 * computed whenever the node asks for it), GRU 3 added linear_before_reset, 14 the layout
 * attribute; one implementation reads what each version defines. */
#include "backends/native/kernels/rnn.h"
#include "backends/native/kernels/tables.h"

const kernel_def cpu_rnn_kernels[] = {
    {"", "RNN", 1, 28, cpu_rnn},
    {"", "GRU", 1, 28, cpu_gru},
    {"", "LSTM", 1, 28, cpu_lstm},
    {0},
};
