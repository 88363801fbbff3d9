/* The mixture-of-experts table (see registry.h); the com.microsoft domain is at version 1. */
#include "backends/native/kernels/moe/moe.h"
#include "backends/native/kernels/registry.h"

const kernel_def cpu_moe_kernels[] = {
    {"com.microsoft", "MoE", 1, 1, cpu_contrib_moe},
    {"com.microsoft", "QMoE", 1, 1, cpu_contrib_qmoe},
    {0},
};
