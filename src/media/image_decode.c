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

/* ---- JPEG as IJG libjpeg 9 decodes it ----
 *
 * onnxruntime-genai's processors decode with IJG libjpeg 9, whose decoder scales
 * subsampled chroma up inside the inverse DCT (a 4:2:0 chroma block becomes 16x16
 * samples), where libjpeg-turbo (like libjpeg 6b) makes 8x8 samples and upsamples them
 * with a triangle filter. The two differ by up to a quarter of the range at sharp colour
 * edges. For YCbCr files we therefore take libjpeg-turbo's coefficients and run its own
 * 8x8 (luma, and chroma at full resolution) and 16x16 (4:2:0 chroma) inverse DCTs, the
 * ones libjpeg 9 runs, then convert YCbCr to RGB with libjpeg 9's fixed-point constants
 * (jpeg_ijg9_scales says which files). The IDCTs are
 * exported by libjpeg-turbo (the scaled-decoding entry points of its IDCT module) but not
 * declared in jpeglib.h. */
typedef void (*jpeg_idct_fn)(j_decompress_ptr, jpeg_component_info *, JCOEFPTR, JSAMPARRAY,
                             JDIMENSION);
void jpeg_idct_islow(j_decompress_ptr, jpeg_component_info *, JCOEFPTR, JSAMPARRAY,
                     JDIMENSION);
void jpeg_idct_16x16(j_decompress_ptr, jpeg_component_info *, JCOEFPTR, JSAMPARRAY,
                     JDIMENSION);

/* libjpeg-turbo keeps its IDCT multipliers as MULTIPLIER: short in its SIMD builds (the
 * Debian one on x86-64 and arm64), int without SIMD. */
typedef short idct_mult;

/* The IDCT size libjpeg 9 gives each component of a YCbCr file (8, or 16 for chroma
 * subsampled 2x2), written to scale[3]; 0 when a component is subsampled otherwise
 * (4:2:2, 4:1:1: libjpeg 9 uses rectangular IDCTs libjpeg-turbo does not export, and
 * such files are decoded by libjpeg-turbo as they are). */
static int jpeg_ijg9_scales(const struct jpeg_decompress_struct *c, int scale[3]) {
    if (c->num_components != 3 || c->jpeg_color_space != JCS_YCbCr) return 0;
    for (int i = 0; i < 3; i++) {
        const jpeg_component_info *k = &c->comp_info[i];
        int rh = c->max_h_samp_factor / k->h_samp_factor;
        int rv = c->max_v_samp_factor / k->v_samp_factor;
        if (rh != rv || (rh != 1 && rh != 2) || rh * k->h_samp_factor != c->max_h_samp_factor ||
            rv * k->v_samp_factor != c->max_v_samp_factor)
            return 0;
        scale[i] = 8 * rh;
    }
    return 1;
}

/* One component's samples at full resolution: every block through `idct`, `scale`
 * samples a side (8 or 16), into plane (stride pw, rows ph). */
static void jpeg_component_plane(j_decompress_ptr c, jvirt_barray_ptr coefs,
                                 jpeg_component_info *comp, int scale, jpeg_idct_fn idct,
                                 JSAMPLE *plane, size_t pw, size_t ph) {
    /* a component that no scan carried has no table: its samples are then the grey of
     * all-zero coefficients, as libjpeg outputs it */
    idct_mult table[DCTSIZE2] = {0};
    for (int i = 0; comp->quant_table && i < DCTSIZE2; i++)
        table[i] = (idct_mult)comp->quant_table->quantval[i];
    jpeg_component_info k = *comp;
    k.dct_table = table;
    JSAMPLE block[16 * 16];
    JSAMPROW rows[16];
    for (int i = 0; i < scale; i++) rows[i] = block + i * scale;
    for (JDIMENSION by = 0; by < comp->height_in_blocks; by++) {
        JBLOCKARRAY row = c->mem->access_virt_barray((j_common_ptr)c, coefs, by, 1, FALSE);
        for (JDIMENSION bx = 0; bx < comp->width_in_blocks; bx++) {
            idct(c, &k, row[0][bx], rows, 0);
            for (int y = 0; y < scale; y++) {
                size_t py = (size_t)by * scale + y;
                if (py >= ph) break;
                for (int x = 0; x < scale; x++) {
                    size_t px = (size_t)bx * scale + x;
                    if (px < pw) plane[py * pw + px] = block[y * scale + x];
                }
            }
        }
    }
}

#define IDCT_LIMIT_SIZE (256 + 128 + 1024 + 256)

/* Gives c the range-limiting table the IDCTs index (sample_range_limit + CENTERJSAMPLE,
 * by a value masked to 10 bits, two's complement: clamp(v + 128, 0, 255)) and checks
 * that libjpeg-turbo's IDCT reads our multiplier type: a block of DC 40 quantised by 2
 * must come out 138 everywhere (a library reading ints from our shorts would see a step
 * of 2 + 2 * 65536). 0: use libjpeg-turbo's own decoding. */
static int idct_usable(j_decompress_ptr c, JSAMPLE limit[IDCT_LIMIT_SIZE]) {
    memset(limit, 0, IDCT_LIMIT_SIZE);
    JSAMPLE *base = limit + 256 + 128;
    for (int x = 0; x < 1024; x++) {
        int v = (x < 512 ? x : x - 1024) + 128;
        base[x] = (JSAMPLE)(v < 0 ? 0 : v > 255 ? 255 : v);
    }
    c->sample_range_limit = limit + 256;
    idct_mult twos[DCTSIZE2];
    JCOEF block[DCTSIZE2] = {40};
    JSAMPLE px[16 * 16];
    JSAMPROW rows[16];
    for (int i = 0; i < DCTSIZE2; i++) twos[i] = 2;
    for (int i = 0; i < 16; i++) rows[i] = px + i * 16;
    jpeg_component_info k = c->comp_info[0];
    k.dct_table = twos;
    jpeg_idct_islow(c, &k, block, rows, 0);
    int ok = 1;
    for (int y = 0; y < 8; y++)
        for (int x = 0; x < 8; x++) ok &= px[y * 16 + x] == 138;
    jpeg_idct_16x16(c, &k, block, rows, 0);
    for (int i = 0; i < 256; i++) ok &= px[i] == 138;
    return ok;
}

static og_status *decode_jpeg_ijg9(j_decompress_ptr c, const int scale[3], const char *name,
                                   uint8_t **out) {
    size_t w = c->image_width, h = c->image_height;
    jvirt_barray_ptr *coefs = jpeg_read_coefficients(c);
    JSAMPLE *planes = malloc(w * h * 3);
    uint8_t *rgb = malloc(w * h * 3);
    if (!planes || !rgb) {
        free(planes);
        free(rgb);
        return og_oom_for(w * h * 6, "%s: a %zux%zu JPEG", name, w, h);
    }
    for (int ci = 0; ci < 3; ci++)
        jpeg_component_plane(c, coefs[ci], &c->comp_info[ci], scale[ci],
                             scale[ci] == 16 ? jpeg_idct_16x16 : jpeg_idct_islow,
                             planes + ci * w * h, w, h);
    /* JFIF YCbCr -> RGB in 16-bit fixed point with libjpeg 9's constants: G's Cb weight
     * is 0.344136286 (22553 / 65536; libjpeg 6b and libjpeg-turbo round 0.34414 to
     * 22554, one level apart in about one pixel of 8000) */
    const int32_t half = 1 << 15;
    for (size_t i = 0; i < w * h; i++) {
        int y = planes[i], cb = planes[w * h + i] - 128, cr = planes[2 * w * h + i] - 128;
        int r = y + (int)((91881 * cr + half) >> 16);
        int g = y + (int)((-22553 * cb - 46802 * cr + half) >> 16);
        int b = y + (int)((116130 * cb + half) >> 16);
        rgb[i * 3] = (uint8_t)(r < 0 ? 0 : r > 255 ? 255 : r);
        rgb[i * 3 + 1] = (uint8_t)(g < 0 ? 0 : g > 255 ? 255 : g);
        rgb[i * 3 + 2] = (uint8_t)(b < 0 ? 0 : b > 255 ? 255 : b);
    }
    free(planes);
    jpeg_finish_decompress(c);
    *out = rgb;
    return NULL;
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
    int scale[3];
    JSAMPLE limit[IDCT_LIMIT_SIZE];
    if (jpeg_ijg9_scales(&cinfo, scale) && idct_usable(&cinfo, limit)) {
        uint8_t *px = NULL;
        st = decode_jpeg_ijg9(&cinfo, scale, name, &px);
        if (!st) {
            out->width = (int)cinfo.image_width;
            out->height = (int)cinfo.image_height;
            out->rgb = px;
        }
        goto done;
    }
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
