/* The reduction table (see registry.h). Versions run to the newest opset onnx 1.23 knows
 * (28); each kernel picks its semantics (axes as attribute or input) from ctx->opset. */
#include "backends/native/kernels/reduce/reduce.h"
#include "backends/native/kernels/registry.h"

const kernel_def cpu_reduce_kernels[] = {
    {"", "ReduceSum", 1, 28, cpu_reduce_sum},
    {"", "ReduceMean", 1, 28, cpu_reduce_mean},
    {"", "ReduceMax", 1, 28, cpu_reduce_max},
    {"", "ReduceMin", 1, 28, cpu_reduce_min},
    {"", "ReduceProd", 1, 28, cpu_reduce_prod},
    {"", "ReduceL1", 1, 28, cpu_reduce_l1},
    {"", "ReduceL2", 1, 28, cpu_reduce_l2},
    {"", "ReduceSumSquare", 1, 28, cpu_reduce_sumsq},
    {"", "ReduceLogSum", 1, 28, cpu_reduce_logsum},
    {"", "ReduceLogSumExp", 1, 28, cpu_reduce_lse},
    {"", "ArgMax", 1, 28, cpu_argmax},
    {"", "ArgMin", 1, 28, cpu_argmin},
    {"", "CumSum", 11, 28, cpu_cumsum},
    {"", "TopK", 10, 28, cpu_topk},
    {"", "Softmax", 1, 28, cpu_softmax},
    {"", "LogSoftmax", 1, 28, cpu_log_softmax},
    {"", "Hardmax", 1, 28, cpu_hardmax},
    {0},
};
