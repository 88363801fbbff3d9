/* The reduction family: Reduce*, ArgMax/ArgMin, CumSum, TopK, Softmax, LogSoftmax,
 * Hardmax. */
#ifndef OG_NATIVE_KERNELS_REDUCE_H
#define OG_NATIVE_KERNELS_REDUCE_H

#include "backends/native/kernels/kernel_util.h"

/* The family's kernels, each og_status *cpu_<name>(kernel_ctx *ctx) (KERNEL_DECLARE). */
#define REDUCE_KERNELS(X)                                                                   \
    X(reduce_sum) X(reduce_mean) X(reduce_max) X(reduce_min) X(reduce_prod) X(reduce_l1)    \
    X(reduce_l2) X(reduce_sumsq) X(reduce_logsum) X(reduce_lse) X(argmax) X(argmin)         \
    X(cumsum) X(topk) X(softmax) X(log_softmax) X(hardmax)
REDUCE_KERNELS(KERNEL_DECLARE)

#endif
