/* The matmul table (see registry.h). Versions run to the newest opset onnx 1.23
 * defines (28); each kernel picks its semantics from ctx->opset. */
#include "backends/native/kernels/matmul/matmul.h"
#include "backends/native/kernels/registry.h"

const kernel_def cpu_matmul_kernels[] = {
    /* MatMul 1, 9 and 13 differ only in accepted types. */
    {"", "MatMul", 1, 28, cpu_matmul, .prepare = cpu_matmul_prepare, .release = cpu_gemm_release},
    /* Gemm 7 dropped the `broadcast` attribute (C always broadcasts one way); 11 made C
     * optional; 13 added bfloat16. One implementation serves them all. */
    {"", "Gemm", 7, 28, cpu_gemm, .prepare = cpu_gemm_prepare, .release = cpu_gemm_release},
    {"", "Einsum", 12, 28, cpu_einsum},
    {"", "Det", 11, 28, cpu_det},
    {"com.microsoft", "MatMulNBits", 1, 1, cpu_matmul_nbits, .prepare = cpu_matmul_nbits_prepare,
     .release = cpu_matmul_nbits_release},
    {0},
};
