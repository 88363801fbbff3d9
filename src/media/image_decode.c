/* PNG and JPEG decoding through Debian's libpng and libjpeg-turbo, to the 8-bit RGB
 * that onnxruntime-extensions' DecodeImage hands its image ops. Both libraries report
 * errors by longjmp from a callback: every libpng/libjpeg call below sits inside the
 * setjmp of its function, and what it allocated is freed on both ways out. */
#include "media/image.h"

#include "base/pkg_file.h"

#include <stdio.h> /* before jpeglib.h, which uses FILE */

#include <jpeglib.h>
#include <jerror.h>
#include <png.h>
#include <setjmp.h>
#include <stdlib.h>
#include <string.h>

static og_status *check_size(const char *name, const char *fmt, uint64_t w, uint64_t h,
                             int64_t max_pixels) {
    if (w == 0 || h == 0)
        return og_errorf(OG_ERR_INVALID_ARGUMENT, "%s: %s image of %llux%llu pixels", name, fmt,
                         (unsigned long long)w, (unsigned long long)h);
    if (w > MEDIA_MAX_SIDE || h > MEDIA_MAX_SIDE || w * h > (uint64_t)max_pixels)
        return og_errorf(OG_ERR_INVALID_ARGUMENT,
                         "%s: %s image of %llux%llu pixels is larger than the %d pixels a side "
                         "and %lld pixels in all that images may have",
                         name, fmt, (unsigned long long)w, (unsigned long long)h, MEDIA_MAX_SIDE,
                         (long long)max_pixels);
    return NULL;
}

/* ---- PNG ---- */

typedef struct png_reader {
    const uint8_t *data;
    size_t size, pos;
    char why[200]; /* libpng's message for the error that ended decoding */
} png_reader;

static void png_read_cb(png_structp png, png_bytep dst, size_t n) {
    png_reader *r = png_get_io_ptr(png);
    if (n > r->size - r->pos) png_error(png, "the file ends early (truncated)");
    memcpy(dst, r->data + r->pos, n);
    r->pos += n;
}

static void png_error_cb(png_structp png, png_const_charp msg) {
    png_reader *r = png_get_error_ptr(png);
    snprintf(r->why, sizeof r->why, "%s", msg);
    png_longjmp(png, 1);
}

static void png_warning_cb(png_structp png, png_const_charp msg) { (void)png, (void)msg; }

static og_status *decode_png(const uint8_t *data, size_t size, const char *name,
                             int64_t max_pixels, media_image *out) {
    png_reader r = {.data = data, .size = size};
    png_structp png = png_create_read_struct(PNG_LIBPNG_VER_STRING, &r, png_error_cb,
                                             png_warning_cb);
    if (!png) return og_oom();
    png_infop info = png_create_info_struct(png);
    if (!info) {
        png_destroy_read_struct(&png, NULL, NULL);
        return og_oom();
    }
    /* volatile: assigned after setjmp and read after a longjmp back to it */
    uint8_t *volatile rgba = NULL;
    png_bytep *volatile rows = NULL;
    og_status *volatile st = NULL;
    if (setjmp(png_jmpbuf(png))) {
        if (!st)
            st = og_errorf(OG_ERR_INVALID_ARGUMENT, "%s: corrupt PNG: %s", name,
                           r.why[0] ? r.why : "libpng failed");
        goto done;
    }
    png_set_read_fn(png, &r, png_read_cb);
    /* libpng's own limits (a million pixels a side, ancillary chunk sizes) stay on; ours
     * come after the header, with a message saying so. */
    png_read_info(png, info);
    png_uint_32 w = png_get_image_width(png, info), h = png_get_image_height(png, info);
    int color = png_get_color_type(png, info), depth = png_get_bit_depth(png, info);
    st = check_size(name, "PNG", w, h, max_pixels);
    if (st) goto done;
    /* The transformations onnxruntime-extensions asks for, to 4 bytes a pixel whose
     * first three are R, G, B. */
    if (depth == 16) png_set_strip_16(png);
    if (color == PNG_COLOR_TYPE_PALETTE) png_set_palette_to_rgb(png);
    if (color == PNG_COLOR_TYPE_GRAY && depth < 8) png_set_expand_gray_1_2_4_to_8(png);
    if (png_get_valid(png, info, PNG_INFO_tRNS)) png_set_tRNS_to_alpha(png);
    if (color == PNG_COLOR_TYPE_RGB || color == PNG_COLOR_TYPE_GRAY ||
        color == PNG_COLOR_TYPE_PALETTE)
        png_set_filler(png, 0xFF, PNG_FILLER_AFTER);
    if (color == PNG_COLOR_TYPE_GRAY || color == PNG_COLOR_TYPE_GRAY_ALPHA)
        png_set_gray_to_rgb(png);
    png_set_interlace_handling(png);
    png_read_update_info(png, info);
    if (png_get_rowbytes(png, info) != (size_t)w * 4) {
        st = og_errorf(OG_ERR_UNSUPPORTED, "%s: PNG of color type %d, bit depth %d: rows of "
                       "%zu bytes, not 4 a pixel", name, color, depth,
                       (size_t)png_get_rowbytes(png, info));
        goto done;
    }
    rgba = malloc((size_t)w * h * 4);
    rows = malloc(sizeof(png_bytep) * h);
    if (!rgba || !rows) {
        st = og_oom_for((size_t)w * h * 4, "%s: a %ux%u PNG", name, (unsigned)w, (unsigned)h);
        goto done;
    }
    for (png_uint_32 y = 0; y < h; y++) rows[y] = rgba + (size_t)y * w * 4;
    png_read_image(png, rows);
    png_read_end(png, NULL);
    uint8_t *rgb = malloc((size_t)w * h * 3);
    if (!rgb) {
        st = og_oom_for((size_t)w * h * 3, "%s: a %ux%u PNG", name, (unsigned)w, (unsigned)h);
        goto done;
    }
    for (size_t i = 0; i < (size_t)w * h; i++) memcpy(rgb + i * 3, rgba + i * 4, 3);
    out->width = (int)w;
    out->height = (int)h;
    out->rgb = rgb;
done:
    png_destroy_read_struct(&png, &info, NULL);
    free(rows);
    free(rgba);
    return st;
}

/* ---- JPEG ---- */

typedef struct jpeg_failure {
    struct jpeg_error_mgr mgr;
    jmp_buf jump;
    char why[JMSG_LENGTH_MAX];
} jpeg_failure;

static void jpeg_error_cb(j_common_ptr cinfo) {
    jpeg_failure *f = (jpeg_failure *)cinfo->err;
    f->mgr.format_message(cinfo, f->why);
    longjmp(f->jump, 1);
}

/* libjpeg only warns when the data ends early or the entropy-coded data is broken,
 * and fills the rest of the picture with grey; such a file is refused (as
 * onnxruntime-extensions' decoder refuses a short read). Other warnings pass. */
static void jpeg_message_cb(j_common_ptr cinfo, int level) {
    jpeg_failure *f = (jpeg_failure *)cinfo->err;
    if (level < 0) {
        int code = f->mgr.msg_code;
        if (code == JWRN_JPEG_EOF || code == JWRN_HIT_MARKER || code == JWRN_MUST_RESYNC)
            jpeg_error_cb(cinfo);
        f->mgr.num_warnings++;
    }
}

/* A progressive JPEG may hold any number of scans, each a pass over the whole picture:
 * a few kilobytes can cost minutes. Real encoders write at most a few dozen. */
#define JPEG_MAX_SCANS 500

static void jpeg_progress_cb(j_common_ptr cinfo) {
    j_decompress_ptr d = (j_decompress_ptr)cinfo;
    if (d->input_scan_number > JPEG_MAX_SCANS) {
        jpeg_failure *f = (jpeg_failure *)cinfo->err;
        snprintf(f->why, sizeof f->why, "more than %d scans", JPEG_MAX_SCANS);
        longjmp(f->jump, 1);
    }
}

static og_status *decode_jpeg(const uint8_t *data, size_t size, const char *name,
                              int64_t max_pixels, media_image *out) {
    struct jpeg_decompress_struct cinfo;
    jpeg_failure f;
    memset(&cinfo, 0, sizeof cinfo);
    memset(&f, 0, sizeof f);
    cinfo.err = jpeg_std_error(&f.mgr);
    f.mgr.error_exit = jpeg_error_cb;
    f.mgr.emit_message = jpeg_message_cb;
    uint8_t *volatile rgb = NULL;
    og_status *volatile st = NULL;
    if (setjmp(f.jump)) {
        st = og_errorf(OG_ERR_INVALID_ARGUMENT, "%s: corrupt JPEG: %s", name, f.why);
        goto done;
    }
    jpeg_create_decompress(&cinfo);
    struct jpeg_progress_mgr progress = {.progress_monitor = jpeg_progress_cb};
    cinfo.progress = &progress;
    jpeg_mem_src(&cinfo, data, (unsigned long)size);
    jpeg_read_header(&cinfo, TRUE);
    if (cinfo.jpeg_color_space == JCS_CMYK || cinfo.jpeg_color_space == JCS_YCCK) {
        st = og_errorf(OG_ERR_UNSUPPORTED, "%s: a CMYK JPEG; only RGB and greyscale JPEGs are "
                       "read", name);
        goto done;
    }
    st = check_size(name, "JPEG", cinfo.image_width, cinfo.image_height, max_pixels);
    if (st) goto done;
    cinfo.out_color_space = JCS_RGB; /* greyscale expands to RGB */
    jpeg_start_decompress(&cinfo);
    if (cinfo.output_components != 3) {
        st = og_errorf(OG_ERR_UNSUPPORTED, "%s: JPEG decodes to %d channels, not 3", name,
                       cinfo.output_components);
        goto done;
    }
    size_t w = cinfo.output_width, h = cinfo.output_height;
    rgb = malloc(w * h * 3);
    if (!rgb) {
        st = og_oom_for(w * h * 3, "%s: a %zux%zu JPEG", name, w, h);
        goto done;
    }
    while (cinfo.output_scanline < cinfo.output_height) {
        JSAMPROW row = rgb + (size_t)cinfo.output_scanline * w * 3;
        jpeg_read_scanlines(&cinfo, &row, 1);
    }
    jpeg_finish_decompress(&cinfo);
    out->width = (int)w;
    out->height = (int)h;
    out->rgb = rgb;
    rgb = NULL;
done:
    jpeg_destroy_decompress(&cinfo);
    free(rgb);
    return st;
}

og_status *media_image_decode(const uint8_t *data, size_t size, const char *name,
                              media_image *out) {
    return media_image_decode_max(data, size, name, MEDIA_MAX_PIXELS, out);
}

og_status *media_image_decode_max(const uint8_t *data, size_t size, const char *name,
                                  int64_t max_pixels, media_image *out) {
    if (!data || !out) return og_errorf(OG_ERR_INVALID_ARGUMENT, "%s: NULL argument", name);
    if (max_pixels <= 0 || max_pixels > MEDIA_MAX_PIXELS) max_pixels = MEDIA_MAX_PIXELS;
    static const uint8_t png_sig[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
    media_image img = {0};
    og_status *st;
    if (size >= 8 && memcmp(data, png_sig, 8) == 0)
        st = decode_png(data, size, name, max_pixels, &img);
    else if (size >= 3 && data[0] == 0xFF && data[1] == 0xD8 && data[2] == 0xFF)
        st = decode_jpeg(data, size, name, max_pixels, &img);
    else if (size < 8)
        st = og_errorf(OG_ERR_INVALID_ARGUMENT, "%s: %zu bytes are too few for an image", name,
                       size);
    else
        st = og_errorf(OG_ERR_UNSUPPORTED, "%s: neither a PNG nor a JPEG file (it starts "
                       "%02x %02x %02x %02x)", name, data[0], data[1], data[2], data[3]);
    if (!st) *out = img;
    return st;
}

og_status *media_image_read(const char *path, media_image *out) {
    char *data;
    size_t len;
    OG_TRY(pkg_read_file(path, MEDIA_MAX_FILE_BYTES, &data, &len));
    og_status *st = media_image_decode((const uint8_t *)data, len, path, out);
    free(data);
    return st;
}

void media_image_free(media_image *img) {
    if (!img) return;
    free(img->rgb);
    img->rgb = NULL;
}
