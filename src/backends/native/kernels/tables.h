/* The native kernel tables, one per op family; registry.c searches them in order. */
#ifndef OG_NATIVE_KERNELS_TABLES_H
#define OG_NATIVE_KERNELS_TABLES_H

#include "backends/native/kernels/kernel.h"

/* Each table ends with an entry whose op_type is NULL. */
extern const kernel_def cpu_elementwise_kernels[]; /* arithmetic, compare, logic, cast, activations (incl. com.microsoft fused gelus, BiasAdd, GatedAdd) */
extern const kernel_def cpu_linalg_kernels[];      /* MatMul, Gemm, Einsum, Conv, ConvTranspose */
extern const kernel_def cpu_reduce_kernels[];      /* Reduce*, ArgMax/ArgMin, CumSum, TopK, Softmax, LogSoftmax */
extern const kernel_def cpu_norm_kernels[];        /* LayerNormalization, RMSNormalization, LpNormalization, com.microsoft Simplified/Skip/Embed norms, GatedRMSNorm */
extern const kernel_def cpu_layout_kernels[];      /* shape, reshape, transpose, slice, gather, scatter, generators */
extern const kernel_def cpu_attention_kernels[];   /* com.microsoft Attention, MultiHeadAttention, GroupQueryAttention, (M)RotaryEmbedding; RotaryEmbedding */
extern const kernel_def cpu_spatial_kernels[];     /* pooling, MaxUnpool, Resize, Upsample, GridSample, AffineGrid */
extern const kernel_def cpu_quant_kernels[];       /* Quantize/DequantizeLinear, com.microsoft MatMulNBits, GatherBlockQuantized */
extern const kernel_def cpu_rnn_kernels[];         /* RNN, GRU, LSTM */
extern const kernel_def cpu_moe_kernels[];         /* com.microsoft MoE, QMoE */
extern const kernel_def cpu_recurrent_kernels[];   /* CausalConvWithState, LinearAttention, com.microsoft LinearAttentionGate */
extern const kernel_def cpu_control_kernels[];     /* If, Loop, Scan (run subgraphs) */

#endif
