/* numpy-style (multidirectional) broadcasting, shared by every op that broadcasts. */
#ifndef OG_NATIVE_KERNELS_BROADCAST_H
#define OG_NATIVE_KERNELS_BROADCAST_H

#include "base/status.h"

#include <stdint.h>

/* out = broadcast(a, b); *rout = max(ra, rb). Error (naming both shapes) when a
 * dimension pair is neither equal nor has a 1. */
og_status *broadcast_shape(const int64_t *a, int ra, const int64_t *b, int rb, int64_t *out,
                           int *rout);

/* Element strides of an input of shape in[0..rin) read at the positions of an output
 * of shape out[0..rout) (rin <= rout): the stride of a broadcast dimension is 0. */
void broadcast_strides(const int64_t *in, int rin, const int64_t *out, int rout,
                       int64_t *strides);

/* An index walker over an output shape that tracks the matching offset of up to
 * BCAST_MAX_OPERANDS inputs. Iterates rows: the innermost dimension is handed to the
 * caller as a run of `inner` elements with per-input inner strides, so the hot loop
 * is a plain strided (usually contiguous or scalar) loop. */
enum { BCAST_MAX_OPERANDS = 8 };
typedef struct bcast_iter {
    int rank, n;                          /* output rank, number of inputs */
    int64_t dims[8];                      /* output shape */
    int64_t strides[BCAST_MAX_OPERANDS][8];
    int64_t inner;                        /* length of the innermost run */
    int64_t inner_stride[BCAST_MAX_OPERANDS];
    int64_t rows;                         /* number of runs */
} bcast_iter;

/* Prepares an iterator for n inputs with shapes in[k][0..rin[k]) against an output
 * shape (which must be their broadcast). */
void bcast_iter_init(bcast_iter *it, int n, const int64_t *const *in, const int *rin,
                     const int64_t *out, int rout);
/* Offsets (in elements) of each input at the start of run `row` (0 <= row < rows). */
void bcast_iter_row(const bcast_iter *it, int64_t row, int64_t *offsets);

#endif
