/* The reduction family: Reduce*, ArgMax/ArgMin, CumSum, TopK, Softmax, LogSoftmax,
 * Hardmax. */
#ifndef OG_NATIVE_KERNELS_REDUCE_H
#define OG_NATIVE_KERNELS_REDUCE_H

#include "backends/native/kernels/kernel_util.h"

og_status *cpu_reduce_sum(kernel_ctx *ctx);
og_status *cpu_reduce_mean(kernel_ctx *ctx);
og_status *cpu_reduce_max(kernel_ctx *ctx);
og_status *cpu_reduce_min(kernel_ctx *ctx);
og_status *cpu_reduce_prod(kernel_ctx *ctx);
og_status *cpu_reduce_l1(kernel_ctx *ctx);
og_status *cpu_reduce_l2(kernel_ctx *ctx);
og_status *cpu_reduce_sumsq(kernel_ctx *ctx);
og_status *cpu_reduce_logsum(kernel_ctx *ctx);
og_status *cpu_reduce_lse(kernel_ctx *ctx);
og_status *cpu_argmax(kernel_ctx *ctx);
og_status *cpu_argmin(kernel_ctx *ctx);
og_status *cpu_cumsum(kernel_ctx *ctx);
og_status *cpu_topk(kernel_ctx *ctx);
og_status *cpu_softmax(kernel_ctx *ctx);
og_status *cpu_log_softmax(kernel_ctx *ctx);
og_status *cpu_hardmax(kernel_ctx *ctx);

#endif
