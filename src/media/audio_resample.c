/* Down-sampling to Whisper's 16 kHz as onnxruntime-genai 0.18 does it (onnxruntime-
 * extensions' AudioDecoder): a 4th-order Butterworth low-pass at half the target rate,
 * run in double over the float samples, then each output sample as a Kaiser-windowed
 * (beta 6) sinc sum over the input samples within ceil(3 / factor) of its position. The
 * float and double steps are theirs (the position i / factor in float, the window
 * computed for each output sample's span, the sum in double) so that the samples agree
 * with theirs to rounding. Up-sampling is refused, as theirs is. */
#include "media/audio.h"

#include <math.h>
#include <stdlib.h>

#define BUTTER_POLES 4
#define KAISER_BETA 6.0

/* One pole pair's biquad (Smith, The Scientist and Engineer's Guide to DSP, ch. 33):
 * a[3] feed-forward, b[1..2] feedback, for a cut-off fc as a fraction of the rate. */
static void pole_pair(int p, double fc, double a[3], double b[3]) {
    double np = BUTTER_POLES;
    double rp = -cos(M_PI / (np * 2.0) + (p - 1.0) * M_PI / np);
    double ip = sin(M_PI / (np * 2.0) + (p - 1.0) * M_PI / np);
    double t = 2.0 * tan(0.5), w = 2.0 * M_PI * fc, m = rp * rp + ip * ip;
    double d = 4.0 - 4.0 * rp * t + m * t * t;
    double x0 = t * t / d, x1 = 2.0 * t * t / d, x2 = t * t / d;
    double y1 = (8.0 - 2.0 * m * t * t) / d, y2 = (-4.0 - 4.0 * rp * t - m * t * t) / d;
    double k = sin(0.5 - w / 2.0) / sin(0.5 + w / 2.0); /* low-pass to low-pass */
    d = 1.0 + y1 * k - y2 * k * k;
    a[0] = (x0 - x1 * k + x2 * k * k) / d;
    a[1] = (-2.0 * x0 * k + x1 + x1 * k * k - 2.0 * x2 * k) / d;
    a[2] = (x0 * k * k - x1 * k + x2) / d;
    b[1] = (2.0 * k + y1 + y1 * k * k - 2.0 * y2 * k) / d;
    b[2] = (-k * k - y1 * k + y2) / d;
}

/* The cascade's coefficients: y = sum num[i] x[n-i] - sum den[i] y[n-i] (den[0] = 1). */
static void butterworth(double fc, double num[BUTTER_POLES + 1], double den[BUTTER_POLES + 1]) {
    double a[BUTTER_POLES + 3] = {0}, b[BUTTER_POLES + 3] = {0};
    double ta[BUTTER_POLES + 3], tb[BUTTER_POLES + 3];
    a[2] = b[2] = 1.0;
    for (int p = 1; p <= BUTTER_POLES / 2; p++) {
        double ap[3], bp[3];
        pole_pair(p, fc, ap, bp);
        for (int i = 0; i < BUTTER_POLES + 3; i++) {
            ta[i] = a[i];
            tb[i] = b[i];
        }
        for (int i = 2; i <= BUTTER_POLES + 2; i++) {
            a[i] = ap[0] * ta[i] + ap[1] * ta[i - 1] + ap[2] * ta[i - 2];
            b[i] = tb[i] - bp[1] * tb[i - 1] - bp[2] * tb[i - 2];
        }
    }
    b[2] = 0.0;
    for (int i = 0; i <= BUTTER_POLES; i++) {
        a[i] = a[i + 2];
        b[i] = -b[i + 2];
    }
    double sa = 0.0, sb = 0.0;
    for (int i = 0; i <= BUTTER_POLES; i++) {
        sa += a[i];
        sb += b[i];
    }
    double gain = sa / (1.0 - sb);
    for (int i = 0; i <= BUTTER_POLES; i++) {
        num[i] = a[i] / gain;
        den[i] = -b[i];
    }
    den[0] = 1.0;
}

/* I0(x) by its series, to a relative 1e-8 as theirs. */
static double bessel_i0(double x) {
    double sum = 0.0, term = 1.0, q = x * x / 4.0;
    for (size_t n = 0; term > 1e-8 * sum;) {
        sum += term;
        n++;
        term *= q / (double)(n * n);
    }
    return sum;
}

size_t audio_resample_length(size_t n, int in_rate, int out_rate) {
    float factor = (float)out_rate / (float)in_rate;
    return (size_t)ceilf((float)n * factor);
}

og_status *audio_resample_down(const float *in, size_t n, int in_rate, int out_rate,
                               float **out, size_t *n_out) {
    if (in_rate < out_rate)
        return og_errorf(OG_ERR_UNSUPPORTED, "%d Hz audio: only down-sampling to %d Hz is "
                         "done (as onnxruntime-genai)", in_rate, out_rate);
    if (n > (size_t)1 << 31)
        return og_errorf(OG_ERR_INVALID_ARGUMENT, "%zu samples: too long to resample", n);
    double num[BUTTER_POLES + 1], den[BUTTER_POLES + 1];
    butterworth(0.5 * out_rate / (double)in_rate, num, den);
    float *lp = malloc((n ? n : 1) * sizeof *lp);
    if (!lp) return og_oom_for(n * sizeof *lp, "resampling");
    double x1 = 0, x2 = 0, x3 = 0, x4 = 0, y1 = 0, y2 = 0, y3 = 0, y4 = 0;
    for (size_t i = 0; i < n; i++) {
        double x = in[i];
        double y = num[0] * x + num[1] * x1 + num[2] * x2 + num[3] * x3 + num[4] * x4 -
                   den[1] * y1 - den[2] * y2 - den[3] * y3 - den[4] * y4;
        x4 = x3, x3 = x2, x2 = x1, x1 = x;
        y4 = y3, y3 = y2, y2 = y1, y1 = y;
        lp[i] = (float)y;
    }
    float factor = (float)out_rate / (float)in_rate;
    size_t m = audio_resample_length(n, in_rate, out_rate);
    int range = (int)ceil(KAISER_BETA / (2.0 * factor));
    float *dst = malloc((m ? m : 1) * sizeof *dst);
    double *win = malloc((size_t)(2 * range + 1) * sizeof *win);
    if (!dst || !win) {
        free(lp);
        free(dst);
        free(win);
        return og_oom_for(m * sizeof *dst, "resampling");
    }
    const double i0_beta = bessel_i0(KAISER_BETA);
    /* The window over a full span of taps, the common case, computed once. */
    const int full = 2 * range + 1;
    for (int t = 0; t < full; t++) {
        double x = 2.0 * t / (full - 1.0) - 1.0;
        win[t] = bessel_i0(KAISER_BETA * sqrt(1 - x * x)) / i0_beta;
    }
    for (size_t i = 0; i < m; i++) {
        float index = (float)i / factor;
        int whole = (int)index;
        int start = whole - range > 0 ? whole - range : 0;
        int end = whole + range < (int)n - 1 ? whole + range : (int)n - 1;
        int len = end - start + 1;
        double acc = 0.0;
        for (int j = start; j <= end; j++) {
            /* The window spans this output sample's taps, whatever their count; a single
             * tap (a one-sample clip) gets the window's centre, 1. */
            double w;
            if (len == full) {
                w = win[j - start];
            } else {
                double x = len > 1 ? 2.0 * (j - start) / (len - 1.0) - 1.0 : 0.0;
                w = bessel_i0(KAISER_BETA * sqrt(1 - x * x)) / i0_beta;
            }
            double dist = fabsf((float)j - index);
            w *= dist < 1e-6f ? 1.0 : sin(M_PI * dist) / (M_PI * dist);
            acc += lp[j] * w;
        }
        dst[i] = (float)acc;
    }
    free(win);
    free(lp);
    *out = dst;
    *n_out = m;
    return NULL;
}
