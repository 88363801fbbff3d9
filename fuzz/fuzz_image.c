/* libFuzzer target: any byte string given as an image file must decode (PNG through
 * libpng, JPEG through libjpeg-turbo) into pixels that lie inside the buffer it returns,
 * or fail with a message; never crash, leak or read out of bounds. A decoded image is
 * also resized (bicubic 8-bit and bilinear float paths) to a small size, so that the
 * decoder's dimensions are used as the processors use them. Seeds in corpus/image. */
#include "media/image.h"

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    media_image img;
    /* a million pixels at most: a small file may declare a 100-megapixel image, whose
     * decoding is correct and slow */
    og_status *st = media_image_decode_max(data, size, "fuzz", 1 << 20, &img);
    if (st) {
        (void)og_status_message(st);
        og_status_free(st);
        return 0;
    }
    volatile uint8_t sink = 0;
    size_t n = (size_t)img.width * img.height * 3;
    for (size_t i = 0; i < n; i++) sink ^= img.rgb[i];
    /* bounded work: only small images go through the resamplers */
    if (n <= 3 * 256 * 256) {
        uint8_t small[7 * 5 * 3];
        st = media_resize_u8(img.rgb, img.width, img.height, 3, small, 7, 5,
                             MEDIA_FILTER_BICUBIC);
        og_status_free(st);
        float *plane = malloc(sizeof(float) * img.width * img.height), out[9 * 4];
        if (plane) {
            for (size_t i = 0; i < (size_t)img.width * img.height; i++) plane[i] = img.rgb[i * 3];
            og_status_free(media_resize_f32(plane, img.width, img.height, out, 9, 4,
                                            MEDIA_FILTER_BILINEAR));
            free(plane);
        }
    }
    (void)sink;
    media_image_free(&img);
    return 0;
}
