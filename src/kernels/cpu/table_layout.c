/* The layout kernel table (see cpu_kernels.h). */
#include "kernels/cpu/cpu_kernels.h"

const kernel_def cpu_layout_kernels[] = {
    {0},
};
