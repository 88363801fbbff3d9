/* The com.microsoft quantized-weight kernels (see cpu_kernels.h); that domain is at version 1. */
#include "kernels/cpu/cpu_kernels.h"
#include "kernels/cpu/quant_kernels.h"

const kernel_def cpu_quant_kernels[] = {
    {"com.microsoft", "MatMulNBits", 1, 1, cpu_matmul_nbits},
    {"com.microsoft", "GatherBlockQuantized", 1, 1, cpu_gather_block_quantized},
    {0},
};
