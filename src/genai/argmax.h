/* The greedy choice over one logits row, vectorized: the kernels for each instruction set
 * (argmax_avx2.c, argmax_avx512.c, compiled with their own flags) behind gen_argmax
 * (search.c), which picks one by isa_active() (OG_ISA caps it).
 *
 * Every kernel returns exactly what the scalar loop `best = 0; for i: if (x[i] > x[best])
 * best = i` returns: the first index of the largest value, where a NaN is never larger
 * than anything and -0.0 equals +0.0. The kernels need n >= 1 and x[0] not NaN (the
 * caller returns 0 otherwise, as the scalar loop does: nothing compares greater than a
 * NaN in x[0]). Each vector lane keeps the first index of its own largest value (strict
 * >, so later equal values never replace it); the lanes are merged as (largest value,
 * then smallest index among the lanes holding it), which is the first global index. */
#ifndef OG_GENAI_ARGMAX_H
#define OG_GENAI_ARGMAX_H

#include <stdint.h>

int32_t gen_argmax_avx2(const float *x, int n);
int32_t gen_argmax_avx512(const float *x, int n);

#endif
