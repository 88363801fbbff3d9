/* The second compute kernel table: reductions, softmax, norms, einsum, conv, quantize
 * (see cpu_kernels.h). Versions run to the newest opset onnx 1.23 knows (28); each
 * kernel picks its semantics from ctx->opset. */
#include "kernels/cpu/compute2.h"
#include "kernels/cpu/cpu_kernels.h"

const kernel_def cpu_compute2_kernels[] = {
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
    {"", "LayerNormalization", 17, 28, cpu_layer_norm},
    {"", "RMSNormalization", 23, 28, cpu_rms_norm},
    {"", "Einsum", 12, 28, cpu_einsum},
    {"", "Conv", 1, 28, cpu_conv},
    {"", "QuantizeLinear", 10, 28, cpu_quantize_linear},
    {"", "DequantizeLinear", 10, 28, cpu_dequantize_linear},
    {0},
};
