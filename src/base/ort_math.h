/* Scalar functions computed exactly as onnxruntime's CPU kernels compute them, for ops
 * whose float32 bits feed MatMulNBits' int8 quantization at accuracy_level 4 (where one
 * ulp can move a product by a quantization step, and a hybrid model's state carries it
 * on). ort_math.c is compiled without contraction to fused multiply-adds: it fuses
 * exactly where onnxruntime does. (MLAS's logistic is vmath's sigmoid.) */
#ifndef OG_BASE_ORT_MATH_H
#define OG_BASE_ORT_MATH_H

/* onnxruntime's SiLU in CausalConvWithState: x / (1 + expf(-x)). */
float ort_silu_div(float x);
/* onnxruntime's softplus in LinearAttentionGate: x + logf(expf(-x) + 1) for x > 0, else
 * logf(expf(x) + 1). */
float ort_softplus(float x);

#endif
