/* Test helper: raw RGB bytes (height * width * 3) into a JPEG file through libjpeg-turbo,
 * the oracle-independent way to make the JPEG test images (PIL is not installed).
 *
 * Usage: image-write-jpeg IN.rgb WIDTH HEIGHT QUALITY {444|422|420|gray} OUT.jpg
 *        [progressive] */
#include <stdio.h>

#include <jpeglib.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv) {
    if (argc < 7) {
        fprintf(stderr, "usage: %s IN.rgb WIDTH HEIGHT QUALITY {444|422|420|gray} OUT.jpg "
                "[progressive]\n", argv[0]);
        return 2;
    }
    int w = atoi(argv[2]), h = atoi(argv[3]), q = atoi(argv[4]);
    const char *mode = argv[5];
    int gray = strcmp(mode, "gray") == 0;
    FILE *in = fopen(argv[1], "rb");
    size_t n = (size_t)w * h * 3;
    unsigned char *rgb = malloc(n);
    if (!in || !rgb || fread(rgb, 1, n, in) != n) {
        fprintf(stderr, "%s: cannot read %zu bytes\n", argv[1], n);
        return 1;
    }
    fclose(in);
    if (gray) /* the green channel as the grey level */
        for (size_t i = 0; i < (size_t)w * h; i++) rgb[i] = rgb[i * 3 + 1];
    FILE *out = fopen(argv[6], "wb");
    if (!out) {
        perror(argv[6]);
        return 1;
    }
    struct jpeg_compress_struct c;
    struct jpeg_error_mgr err;
    c.err = jpeg_std_error(&err);
    jpeg_create_compress(&c);
    jpeg_stdio_dest(&c, out);
    c.image_width = w;
    c.image_height = h;
    c.input_components = gray ? 1 : 3;
    c.in_color_space = gray ? JCS_GRAYSCALE : JCS_RGB;
    jpeg_set_defaults(&c);
    jpeg_set_quality(&c, q, TRUE);
    if (!gray && strcmp(mode, "444") == 0)
        c.comp_info[0].h_samp_factor = c.comp_info[0].v_samp_factor = 1;
    if (!gray && strcmp(mode, "422") == 0) c.comp_info[0].v_samp_factor = 1;
    if (argc > 7 && strcmp(argv[7], "progressive") == 0) jpeg_simple_progression(&c);
    jpeg_start_compress(&c, TRUE);
    int stride = gray ? w : w * 3;
    while (c.next_scanline < c.image_height) {
        JSAMPROW row = rgb + (size_t)c.next_scanline * stride;
        jpeg_write_scanlines(&c, &row, 1);
    }
    jpeg_finish_compress(&c);
    jpeg_destroy_compress(&c);
    fclose(out);
    free(rgb);
    return 0;
}
