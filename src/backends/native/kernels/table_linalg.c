/* The linear-algebra table (see tables.h). Versions run to the newest opset onnx 1.23
 * defines (28); each kernel picks its semantics from ctx->opset. */
#include "backends/native/kernels/linalg.h"
#include "backends/native/kernels/tables.h"

const kernel_def cpu_linalg_kernels[] = {
    /* MatMul 1, 9 and 13 differ only in accepted types. */
    {"", "MatMul", 1, 28, cpu_matmul, .prepare = cpu_matmul_prepare, .release = cpu_gemm_release},
    /* Gemm 7 dropped the `broadcast` attribute (C always broadcasts one way); 11 made C
     * optional; 13 added bfloat16. One implementation serves them all. */
    {"", "Gemm", 7, 28, cpu_gemm, .prepare = cpu_gemm_prepare, .release = cpu_gemm_release},
    {"", "Einsum", 12, 28, cpu_einsum},
    {"", "Conv", 1, 28, cpu_conv},
    {"", "ConvTranspose", 1, 28, cpu_conv_transpose},
    {"", "Det", 11, 28, cpu_det},
    {0},
};
