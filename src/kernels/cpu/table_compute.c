/* The compute kernel table (see cpu_kernels.h): matrix multiplication. */
#include "kernels/cpu/cpu_kernels.h"
#include "kernels/cpu/matmul.h"

/* The newest opset onnx 1.23 defines; MatMul and Gemm are unchanged since 13. */
enum { COMPUTE_MAX_OPSET = 28 };

const kernel_def cpu_compute_kernels[] = {
    /* MatMul 1, 9 and 13 differ only in accepted types. */
    {"", "MatMul", 1, COMPUTE_MAX_OPSET, cpu_matmul},
    /* Gemm 7 dropped the `broadcast` attribute (C always broadcasts one way); 11 made C
     * optional; 13 added bfloat16. One implementation serves them all. */
    {"", "Gemm", 7, COMPUTE_MAX_OPSET, cpu_gemm},
    {0},
};
