/* GroupQueryAttention over float32 caches in onnxruntime's CPU arithmetic (see
 * attention_ort.c): the same bits as onnxruntime 1.31's kernel, so that a package's
 * tokens do not part from onnxruntime-genai's at a near tie. */
#ifndef OG_NATIVE_KERNELS_ATTENTION_ORT_H
#define OG_NATIVE_KERNELS_ATTENTION_ORT_H

#include "backends/native/kernels/attention/attention_tiles.h"

#include <stdbool.h>

/* Whether the descriptor is one onnxruntime's order covers: keys and values stored as
 * float32, no softcap, attention_bias, head_sink or smooth softmax (those keep the tile
 * arithmetic of attention_tiles.h). */
bool gqa_ort_applies(const gqa_tiles *t);

/* The attention of every query row of t, each in the form onnxruntime gives its token
 * (kernel_ctx.row_forms; without them, as onnxruntime computes a run of that many rows). */
og_status *gqa_ort_run(kernel_ctx *ctx, const gqa_tiles *t);

/* onnxruntime's exponential (MLAS's, as its AVX-512 kernels compute it) of one value. */
float gqa_ort_exp(float x);

#endif
