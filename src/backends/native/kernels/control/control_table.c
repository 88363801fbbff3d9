/* The control-flow table (see registry.h): ops that run subgraphs through the executor.
 * One implementation covers every version: later opsets only widened the types the
 * bodies may carry (sequences and optionals from 13 and 16, which are not implemented;
 * a graph using them fails on the sequence op). Scan-8 (batch axis, sequence_lens) is
 * told apart inside cpu_scan by ctx->opset. */
#include "backends/native/kernels/registry.h"
#include "backends/native/kernels/control/control.h"

#define LAST 28 /* the newest default-domain opset onnx 1.23 defines */

const kernel_def cpu_control_kernels[] = {
    {"", "If", 1, LAST, cpu_if},
    {"", "Loop", 1, LAST, cpu_loop},
    {"", "Scan", 8, LAST, cpu_scan},
    {0},
};
