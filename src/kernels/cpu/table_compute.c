/* The compute kernel table (see cpu_kernels.h). */
#include "kernels/cpu/cpu_kernels.h"

const kernel_def cpu_compute_kernels[] = {
    {0},
};
