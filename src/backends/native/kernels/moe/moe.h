/* The mixture-of-experts family: com.microsoft MoE (float experts) and QMoE (2/4/8-bit
 * experts), see moe.c. */
#ifndef OG_NATIVE_KERNELS_MOE_H
#define OG_NATIVE_KERNELS_MOE_H

#include "backends/native/kernels/kernel.h"

og_status *cpu_contrib_moe(kernel_ctx *ctx);
og_status *cpu_contrib_qmoe(kernel_ctx *ctx);

#endif
