/* The native kernel tables, one per op family (a folder of its own under kernels/, whose
 * <family>_table.c lists the ops it runs and <family>.h declares them); registry.c
 * searches them in order. To find the kernel of an op: grep its name in
 * kernels/<family>/<family>_table.c. */
#ifndef OG_NATIVE_KERNELS_REGISTRY_H
#define OG_NATIVE_KERNELS_REGISTRY_H

#include "backends/native/kernels/kernel.h"

/* Each table ends with an entry whose op_type is NULL. */
/* Arithmetic, compare, logic, bitwise, activations (com.microsoft's fused gelus, BiasAdd
 * and GatedAdd too), StringConcat, and the executor's fused SiluMul. */
extern const kernel_def cpu_elementwise_kernels[];
/* Cast, CastLike. */
extern const kernel_def cpu_cast_kernels[];
/* MatMul, Gemm, com.microsoft MatMulNBits, Einsum, Det. */
extern const kernel_def cpu_matmul_kernels[];
/* Reduce*, ArgMax/ArgMin, CumSum, TopK, Softmax, LogSoftmax, Hardmax. */
extern const kernel_def cpu_reduce_kernels[];
/* LayerNormalization, RMSNormalization, LpNormalization, com.microsoft's simplified, skip
 * and embed layer norms and GatedRMSNorm. */
extern const kernel_def cpu_norm_kernels[];
/* Reshape, Squeeze, Unsqueeze, Flatten, Shape, Size, Identity, Dropout, Transpose,
 * Concat, Split, Slice, Pad, Expand, Tile, Gather*, Scatter*, DepthToSpace/SpaceToDepth,
 * Compress, Unique, Constant, ConstantOfShape, Range, Trilu, NonZero. */
extern const kernel_def cpu_layout_kernels[];
/* com.microsoft Attention, MultiHeadAttention, GroupQueryAttention, RotaryEmbedding and
 * MRotaryEmbedding; the default domain's Attention and RotaryEmbedding. */
extern const kernel_def cpu_attention_kernels[];
/* Conv, ConvTranspose, pooling, MaxUnpool, Resize, Upsample, GridSample, AffineGrid. */
extern const kernel_def cpu_spatial_kernels[];
/* QuantizeLinear, DequantizeLinear, com.microsoft GatherBlockQuantized, MatMulInteger,
 * ConvInteger, QLinearMatMul, QLinearConv. */
extern const kernel_def cpu_quant_kernels[];
/* RNN, GRU, LSTM; CausalConvWithState, LinearAttention, com.microsoft LinearAttentionGate. */
extern const kernel_def cpu_recurrent_kernels[];
/* com.microsoft MoE, QMoE. */
extern const kernel_def cpu_moe_kernels[];
/* If, Loop, Scan (they run subgraphs). */
extern const kernel_def cpu_control_kernels[];

#endif
