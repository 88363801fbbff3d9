/* The sgemm for any CPU (portable C): see gemm_f32_impl.h. */
#define GEMM_VARIANT 0
#define GEMM_NAME(x) gemm_f32_generic_##x
#include "backends/native/kernels/matmul/gemm_f32_impl.h"
