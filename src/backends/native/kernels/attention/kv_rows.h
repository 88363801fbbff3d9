/* Writing and reading key/value cache rows in the layout of backends/kv_format.h, for
 * GroupQueryAttention's own cache and the serving engine's paged one.
 *
 * Reading (kv_rows_load) is the hot part: a decode step dequantizes every cached row
 * once per layer into a tile-sized scratch (attention_tiles.c), with AVX2 where the CPU
 * has it (AVX-512 builds on AVX-512 CPUs dequantize into L1 blocks instead, kv_lanes.h). The value of a code does not depend on the path: it is one multiply of the
 * code's exact float by the scale. */
#ifndef OG_NATIVE_KERNELS_ATTENTION_KV_ROWS_H
#define OG_NATIVE_KERNELS_ATTENTION_KV_ROWS_H

#include "backends/kv_format.h"

/* Stores D float32 values as one row of dt (quantizing: round to nearest, ties to even;
 * float8 saturates at its largest finite value). */
void kv_row_store(og_dtype dt, void *dst, const float *src, int64_t D);
/* n consecutive rows of dt at src (kv_row_bytes apart) as float32, D values each,
 * packed at dst. */
void kv_rows_load(og_dtype dt, const void *src, int64_t n, int64_t D, float *dst);
/* x as a row of dt stores and loads it back, in place: what attention reads of it
 * (D <= KV_MAX_HEAD when dt is quantized). */
void kv_row_round(og_dtype dt, float *x, int64_t D);

/* The AVX2 dequantization (kv_rows_avx2.c), for kv_rows_load. */
void kv_rows_load_q_avx2(og_dtype dt, const uint8_t *src, int64_t n, int64_t D, float *dst);

#endif
