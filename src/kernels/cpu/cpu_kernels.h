/* The CPU kernel tables, one per op family group; registry.c searches them in order. */
#ifndef OG_KERNELS_CPU_CPU_KERNELS_H
#define OG_KERNELS_CPU_CPU_KERNELS_H

#include "kernels/kernel.h"

/* Each table ends with an entry whose op_type is NULL. */
extern const kernel_def cpu_math_kernels[];    /* elementwise, compare, logic, cast, activations */
extern const kernel_def cpu_compute_kernels[]; /* matmul, gemm, einsum, reduce, softmax, norms, conv, quantize */
extern const kernel_def cpu_compute2_kernels[]; /* reduce, argmax, topk, softmax, norms, einsum, conv, quantize */
extern const kernel_def cpu_layout_kernels[];  /* shape, reshape, transpose, slice, gather, scatter, generators */
extern const kernel_def cpu_contrib_kernels[]; /* com.microsoft: Attention, Embed/SkipLayerNormalization, FastGelu */
extern const kernel_def cpu_contrib2_kernels[]; /* com.microsoft: GroupQueryAttention, MultiHeadAttention, RotaryEmbedding, RMS norms, gelus */
extern const kernel_def cpu_quant_kernels[];   /* com.microsoft: MatMulNBits, GatherBlockQuantized */

#endif
