/* Images: PNG and JPEG files decoded to 8-bit RGB (libpng, libjpeg-turbo), the
 * resampling filters onnxruntime-extensions' image ops use, and the preprocessing that
 * turns images into a vision encoder's inputs as a package's processor_config.json
 * describes it (media/processor.c). */
#ifndef OG_MEDIA_IMAGE_H
#define OG_MEDIA_IMAGE_H

#include "base/status.h"

#include <stddef.h>
#include <stdint.h>

/* The largest image we decode: 16384 pixels a side and 100 million pixels, the limits
 * onnxruntime-extensions' decoder sets; a larger one is refused before its pixels are
 * allocated. */
#define MEDIA_MAX_SIDE 16384
#define MEDIA_MAX_PIXELS 100000000LL
/* The largest encoded file we read. */
#define MEDIA_MAX_FILE_BYTES ((size_t)256 << 20)

typedef struct media_image {
    int width, height;
    uint8_t *rgb; /* (height, width, 3): R, G, B */
} media_image;

/* Decodes a PNG (by its signature) or JPEG (by its SOI marker) held in data[0..size).
 * `name` (a path, "<memory>") starts every error message. Alpha is dropped (not
 * composited), 16-bit samples keep their high byte, palettes and grey expand to RGB,
 * as onnxruntime-extensions' decoder does; interlaced PNGs are de-interlaced. A truncated
 * or corrupt file is OG_ERR_INVALID_ARGUMENT naming what the decoder found; another
 * format OG_ERR_UNSUPPORTED. */
og_status *media_image_decode(const uint8_t *data, size_t size, const char *name,
                              media_image *out);
/* The same with a smaller pixel budget (max_pixels <= 0 or above the limit: the
 * limit): a larger image is refused from its header. */
og_status *media_image_decode_max(const uint8_t *data, size_t size, const char *name,
                                  int64_t max_pixels, media_image *out);
/* Reads and decodes the file at path. */
og_status *media_image_read(const char *path, media_image *out);
void media_image_free(media_image *img);

/* Resampling filters, with Pillow's supports (box 0.5, bilinear 1, bicubic 2 with
 * a = -0.5, lanczos 3): onnxruntime-extensions resamples with Pillow's algorithm. */
typedef enum media_filter {
    MEDIA_FILTER_BOX,
    MEDIA_FILTER_BILINEAR,
    MEDIA_FILTER_BICUBIC,
    MEDIA_FILTER_LANCZOS
} media_filter;

/* Resizes an (h, w, channels) 8-bit image to (oh, ow, channels) over the whole source,
 * as Pillow's Image.resize: separable, horizontal pass first (rounded to 8 bits), then
 * vertical; coefficients normalised per output pixel and fixed-point with 22 fraction
 * bits. out holds oh * ow * channels bytes. */
og_status *media_resize_u8(const uint8_t *in, int w, int h, int channels, uint8_t *out, int ow,
                           int oh, media_filter filter);
/* The same on one float channel (Pillow's mode "F"): sums in double, each pass rounded
 * to float. */
og_status *media_resize_f32(const float *in, int w, int h, float *out, int ow, int oh,
                            media_filter filter);

#endif
