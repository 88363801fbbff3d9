/* Separable resampling with Pillow's arithmetic, which onnxruntime-extensions' Resize
 * and Phi-3 transform use: per output pixel, taps over the source pixels whose centres
 * lie within the filter's support (scaled by the shrink factor), weights from the filter
 * at the tap's offset, normalised to sum 1. 8-bit images keep the weights as integers
 * with 22 fraction bits and round each pass to 8 bits; float images sum in double. */
#include "media/image.h"

#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define FIX_BITS 22 /* 32 bits less 8 for the sample and 2 for the filters' overshoot */

static double filter_box(double x) { return x > -0.5 && x <= 0.5 ? 1.0 : 0.0; }

static double filter_bilinear(double x) {
    x = fabs(x);
    return x < 1.0 ? 1.0 - x : 0.0;
}

static double filter_bicubic(double x) {
    const double a = -0.5;
    x = fabs(x);
    if (x < 1.0) return ((a + 2.0) * x - (a + 3.0)) * x * x + 1;
    if (x < 2.0) return (((x - 5) * x + 8) * x - 4) * a;
    return 0.0;
}

static double sinc(double x) {
    if (x == 0.0) return 1.0;
    x *= M_PI;
    return sin(x) / x;
}

static double filter_lanczos(double x) {
    return -3.0 <= x && x < 3.0 ? sinc(x) * sinc(x / 3) : 0.0;
}

typedef struct taps {
    int ksize;   /* weights per output pixel */
    int *first;  /* [out]: first source pixel */
    int *count;  /* [out]: how many source pixels */
    double *w;   /* [out][ksize] */
    int32_t *wi; /* [out][ksize]: w in fixed point (8-bit images) */
} taps;

static void taps_free(taps *t) {
    free(t->first);
    free(t->count);
    free(t->w);
    free(t->wi);
}

/* The taps that resize in_size pixels to out_size over the whole source. */
static og_status *taps_make(int in_size, int out_size, media_filter filter, taps *t) {
    double (*fn)(double) = filter_bicubic;
    double support = 2.0;
    switch (filter) {
    case MEDIA_FILTER_BOX: fn = filter_box, support = 0.5; break;
    case MEDIA_FILTER_BILINEAR: fn = filter_bilinear, support = 1.0; break;
    case MEDIA_FILTER_BICUBIC: break;
    case MEDIA_FILTER_LANCZOS: fn = filter_lanczos, support = 3.0; break;
    }
    double scale = (double)in_size / out_size;
    double filterscale = scale < 1.0 ? 1.0 : scale;
    support *= filterscale;
    memset(t, 0, sizeof *t);
    t->ksize = (int)ceil(support) * 2 + 1;
    t->first = malloc(sizeof(int) * out_size);
    t->count = malloc(sizeof(int) * out_size);
    t->w = calloc((size_t)out_size * t->ksize, sizeof(double));
    t->wi = calloc((size_t)out_size * t->ksize, sizeof(int32_t));
    if (!t->first || !t->count || !t->w || !t->wi) {
        taps_free(t);
        return og_oom_for((size_t)out_size * t->ksize * 12, "resampling weights");
    }
    for (int o = 0; o < out_size; o++) {
        double center = (o + 0.5) * scale;
        double inv = 1.0 / filterscale, sum = 0.0;
        /* Pillow rounds the window's ends by truncating x + 0.5 toward zero */
        int lo = (int)(center - support + 0.5), hi = (int)(center + support + 0.5);
        if (lo < 0) lo = 0;
        if (hi > in_size) hi = in_size;
        int n = hi - lo;
        double *k = t->w + (size_t)o * t->ksize;
        for (int i = 0; i < n; i++) {
            k[i] = fn((i + lo - center + 0.5) * inv);
            sum += k[i];
        }
        int32_t *ki = t->wi + (size_t)o * t->ksize;
        for (int i = 0; i < n; i++) {
            if (sum != 0.0) k[i] /= sum;
            double f = k[i] * (1 << FIX_BITS);
            ki[i] = (int32_t)(k[i] < 0 ? f - 0.5 : f + 0.5);
        }
        t->first[o] = lo;
        t->count[o] = n;
    }
    return NULL;
}

/* The horizontal and the vertical taps. */
static og_status *taps_both(int w, int h, int ow, int oh, media_filter filter, taps *th,
                            taps *tv) {
    OG_TRY(taps_make(w, ow, filter, th));
    og_status *st = taps_make(h, oh, filter, tv);
    if (st) taps_free(th);
    return st;
}

static inline uint8_t clip8(int32_t v) {
    v >>= FIX_BITS; /* arithmetic shift: Pillow's table is indexed by the shifted sum */
    return v < 0 ? 0 : v > 255 ? 255 : (uint8_t)v;
}

og_status *media_resize_u8(const uint8_t *in, int w, int h, int channels, uint8_t *out, int ow,
                           int oh, media_filter filter) {
    if (w <= 0 || h <= 0 || ow <= 0 || oh <= 0 || channels <= 0 || channels > 4)
        return og_errorf(OG_ERR_INVALID_ARGUMENT, "resize: %dx%d (%d channels) to %dx%d", w, h,
                         channels, ow, oh);
    taps th, tv;
    OG_TRY(taps_both(w, h, ow, oh, filter, &th, &tv));
    og_status *st = NULL;
    /* Pillow skips a pass whose size does not change (the box is the whole image). */
    int need_h = ow != w, need_v = oh != h;
    uint8_t *mid = NULL;
    const uint8_t *src = in;
    if (need_h) {
        mid = malloc((size_t)ow * h * channels);
        if (!mid) {
            st = og_oom_for((size_t)ow * h * channels, "resize: %dx%d", ow, h);
            goto done;
        }
        for (int y = 0; y < h; y++) {
            const uint8_t *row = in + (size_t)y * w * channels;
            uint8_t *dst = mid + (size_t)y * ow * channels;
            for (int x = 0; x < ow; x++) {
                const int32_t *k = th.wi + (size_t)x * th.ksize;
                const uint8_t *p = row + (size_t)th.first[x] * channels;
                for (int c = 0; c < channels; c++) {
                    int32_t s = 1 << (FIX_BITS - 1);
                    for (int i = 0; i < th.count[x]; i++) s += p[i * channels + c] * k[i];
                    dst[x * channels + c] = clip8(s);
                }
            }
        }
        src = mid;
    }
    if (need_v) {
        size_t stride = (size_t)ow * channels;
        for (int y = 0; y < oh; y++) {
            const int32_t *k = tv.wi + (size_t)y * tv.ksize;
            const uint8_t *p = src + (size_t)tv.first[y] * stride;
            uint8_t *dst = out + (size_t)y * stride;
            for (size_t x = 0; x < stride; x++) {
                int32_t s = 1 << (FIX_BITS - 1);
                for (int i = 0; i < tv.count[y]; i++) s += p[i * stride + x] * k[i];
                dst[x] = clip8(s);
            }
        }
    } else {
        memcpy(out, src, (size_t)ow * oh * channels);
    }
done:
    free(mid);
    taps_free(&th);
    taps_free(&tv);
    return st;
}

og_status *media_resize_f32(const float *in, int w, int h, float *out, int ow, int oh,
                            media_filter filter) {
    if (w <= 0 || h <= 0 || ow <= 0 || oh <= 0)
        return og_errorf(OG_ERR_INVALID_ARGUMENT, "resize: %dx%d to %dx%d", w, h, ow, oh);
    taps th, tv;
    OG_TRY(taps_both(w, h, ow, oh, filter, &th, &tv));
    og_status *st = NULL;
    int need_h = ow != w, need_v = oh != h;
    float *mid = NULL;
    const float *src = in;
    if (need_h) {
        mid = malloc(sizeof(float) * ow * h);
        if (!mid) {
            st = og_oom_for(sizeof(float) * ow * h, "resize: %dx%d", ow, h);
            goto done;
        }
        for (int y = 0; y < h; y++) {
            const float *row = in + (size_t)y * w;
            for (int x = 0; x < ow; x++) {
                const double *k = th.w + (size_t)x * th.ksize;
                double s = 0.0;
                for (int i = 0; i < th.count[x]; i++) s += row[th.first[x] + i] * k[i];
                mid[(size_t)y * ow + x] = (float)s;
            }
        }
        src = mid;
    }
    if (need_v) {
        for (int y = 0; y < oh; y++) {
            const double *k = tv.w + (size_t)y * tv.ksize;
            const float *p = src + (size_t)tv.first[y] * ow;
            for (int x = 0; x < ow; x++) {
                double s = 0.0;
                for (int i = 0; i < tv.count[y]; i++) s += p[(size_t)i * ow + x] * k[i];
                out[(size_t)y * ow + x] = (float)s;
            }
        }
    } else {
        memcpy(out, src, sizeof(float) * ow * oh);
    }
done:
    free(mid);
    taps_free(&th);
    taps_free(&tv);
    return st;
}
