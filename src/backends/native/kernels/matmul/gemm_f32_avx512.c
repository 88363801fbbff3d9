/* The sgemm for avx512 (compiled with its flags; called only when the CPU has it): see gemm_f32_impl.h. */
#if defined(__x86_64__)
#define GEMM_VARIANT 2
#define GEMM_NAME(x) gemm_f32_avx512_##x
#include "backends/native/kernels/matmul/gemm_f32_impl.h"
#endif
