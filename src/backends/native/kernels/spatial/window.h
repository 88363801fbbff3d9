/* The sliding-window geometry shared by Conv, ConvInteger, QLinearConv and the pools:
 * kernel extent, strides, dilations, pads (explicit or from auto_pad) and the output
 * size of each spatial dimension. One to three spatial dimensions; fewer than three are
 * padded at the front with size-1 dimensions, so kernels loop over exactly three. */
#ifndef OG_NATIVE_KERNELS_WINDOW_H
#define OG_NATIVE_KERNELS_WINDOW_H

#include "backends/native/kernels/kernel.h"

#include <stdbool.h>

typedef struct cpu_window {
    int64_t in[3], out[3]; /* input and output extents */
    int64_t k[3], s[3], d[3]; /* kernel taps, stride, dilation */
    int64_t pb[3], pe[3];  /* pads before / after (from `pads` or `auto_pad`) */
} cpu_window;

/* Reads an INTS attribute of exactly `n` entries into out, or fills `dflt` when it is
 * absent; any other count is an error naming the attribute. */
og_status *cpu_attr_ints(const kernel_ctx *ctx, const char *name, int n, int64_t dflt,
                         int64_t *out);

/* Fills w for `sp` spatial dimensions of extents in[0..sp) and kernel taps k[0..sp),
 * from the node's strides, dilations, pads and auto_pad attributes.
 *
 * Output size per dimension, ext = dilation * (k - 1) + 1:
 *   SAME_UPPER / SAME_LOWER: ceil(in / stride), whatever the kernel; the total padding
 *     (out - 1) * stride + ext - in (at least 0) is split with the odd one at the end
 *     (UPPER) or at the start (LOWER). The dilated extent is what must fit, as the
 *     pools' spec formula says; ONNX's reference and onnxruntime's pools pad for the
 *     undilated kernel, which gives less than ceil(in / stride) when dilation > 1, and
 *     onnxruntime's Conv refuses dilation with SAME (tests/unit/test_vision_seq_kernels.c
 *     pins our answer).
 *   VALID: floor((in - ext) / stride) + 1, no padding.
 *   NOTSET: floor((in + pb + pe - ext) / stride) + 1, or with ceil_mode the ceiling,
 *     less one when that last window would start beyond the input and its start
 *     padding (the rule of PyTorch and onnxruntime).
 * An input (with pads) shorter than the window gives an output extent of 0. */
og_status *cpu_window_init(const kernel_ctx *ctx, int sp, const int64_t *in,
                           const int64_t *k, bool ceil_mode, cpu_window *w);

/* A convolution's geometry (Conv, ConvInteger, QLinearConv): X is input ix and W input
 * iw, of equal ranks 3 to 5; the `group` attribute (returned in *group) must divide X's
 * channels and W's output channels with W[1] * group == X[1]; `kernel_shape`, when
 * given, must match W's spatial dims. Fills w and the output shape y_dims
 * [N, M, out...]. */
og_status *cpu_conv_window(const kernel_ctx *ctx, int ix, int iw, int64_t *group,
                           cpu_window *w, int64_t *y_dims);

/* im2col over 4-byte elements (float32 or int32: zero padding is all-zero bits in
 * both). x holds the input channels of one group, [channels][in0][in1][in2]; row r of
 * [b, e) (r = channel * taps + tap, taps in row-major kernel order) receives the tap's
 * input for output rows o0 in [o0a, o0b) times out[1] times out[2]. */
void cpu_window_im2col32(const cpu_window *w, const void *x, void *col, int64_t o0a,
                         int64_t o0b, int64_t b, int64_t e);

/* Taps t in [*lo, *hi) of output position o read input positions
 * o * s - p + t * d inside [0, n). */
static inline void cpu_window_taps(int64_t o, int64_t s, int64_t p, int64_t d, int64_t k,
                                   int64_t n, int64_t *lo, int64_t *hi) {
    int64_t start = o * s - p; /* input position of tap 0 */
    int64_t l = start < 0 ? (-start + d - 1) / d : 0;
    int64_t h = n - start <= 0 ? 0 : (n - start + d - 1) / d;
    if (h > k) h = k;
    if (l > h) l = h;
    *lo = l, *hi = h;
}

#endif
