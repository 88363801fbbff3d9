/* Whisper's log-mel features, step for step as transformers' WhisperFeatureExtractor
 * computes them without torch (audio_utils.spectrogram): the float32 waveform promoted to
 * double, a double FFT whose result is stored as complex64 (numpy's spectrogram array),
 * |z|^2 and the mel product in double, log10 rounded to float32, and the clamp and scale
 * in float32. Matching those roundings keeps us within a few float32 ulps of it. */
#include "media/audio.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define N_FFT AUDIO_WHISPER_N_FFT
#define N_BINS (N_FFT / 2 + 1)
#define MAX_MELS 512

typedef struct cplx {
    double re, im;
} cplx;

/* W_N^k = exp(-2 pi i k / N) for the full length N. */
typedef struct fft_plan {
    cplx tw[N_FFT];
} fft_plan;

/* Mixed-radix decimation in time: `in` strided by `stride`, n points, into out[0..n). The
 * smallest prime factor p splits n into p interleaved sub-transforms of n/p points. */
static void fft_rec(const fft_plan *plan, const cplx *in, size_t stride, cplx *out, size_t n) {
    if (n == 1) {
        out[0] = in[0];
        return;
    }
    size_t p = 2;
    while (n % p) p++;
    size_t m = n / p;
    for (size_t q = 0; q < p; q++) fft_rec(plan, in + q * stride, stride * p, out + q * m, m);
    size_t scale = N_FFT / n; /* W_n^k = W_N^(k * N / n) */
    cplx tmp[N_FFT];
    for (size_t k = 0; k < m; k++) {
        for (size_t j = 0; j < p; j++) {
            size_t idx = j * m + k; /* output index; term q has twiddle W_n^(q * idx) */
            cplx acc = {0.0, 0.0};
            for (size_t q = 0; q < p; q++) {
                cplx w = plan->tw[(q * idx % n) * scale];
                cplx x = out[q * m + k];
                acc.re += x.re * w.re - x.im * w.im;
                acc.im += x.re * w.im + x.im * w.re;
            }
            tmp[idx] = acc;
        }
    }
    for (size_t k = 0; k < m; k++)
        for (size_t j = 0; j < p; j++) out[j * m + k] = tmp[j * m + k];
}

static double hz_to_mel(double f) {
    /* Slaney's scale: linear below 1 kHz, logarithmic above. */
    if (f >= 1000.0) return 15.0 + log(f / 1000.0) * (27.0 / log(6.4));
    return 3.0 * f / 200.0;
}

static double mel_to_hz(double m) {
    if (m >= 15.0) return 1000.0 * exp(log(6.4) / 27.0 * (m - 15.0));
    return 200.0 * m / 3.0;
}

/* The filters as transformers' mel_filter_bank(norm="slaney", mel_scale="slaney") over
 * 0-8000 Hz: fb[k * n_mels + i] for FFT bin k and filter i. */
static void mel_filters(int n_mels, double *fb) {
    double mel_max = hz_to_mel(8000.0);
    double ff[MAX_MELS + 2];
    double step = mel_max / (double)(n_mels + 1); /* numpy's linspace */
    for (int i = 0; i < n_mels + 2; i++) ff[i] = mel_to_hz(i == n_mels + 1 ? mel_max : i * step);
    for (int k = 0; k < N_BINS; k++) {
        double fk = k * (8000.0 / (N_BINS - 1));
        for (int i = 0; i < n_mels; i++) {
            double down = -(ff[i] - fk) / (ff[i + 1] - ff[i]);
            double up = (ff[i + 2] - fk) / (ff[i + 2] - ff[i + 1]);
            double v = down < up ? down : up;
            if (v < 0.0) v = 0.0;
            fb[k * n_mels + i] = v * (2.0 / (ff[i + 2] - ff[i]));
        }
    }
}

og_status *audio_log_mel_len(const float *samples, size_t n_samples, int n_mels, size_t length,
                             float *out) {
    if ((!samples && n_samples) || !out)
        return og_errorf(OG_ERR_INVALID_ARGUMENT, "whisper log-mel: NULL argument");
    if (n_mels < 1 || n_mels > MAX_MELS)
        return og_errorf(OG_ERR_INVALID_ARGUMENT, "whisper log-mel: %d mel bins (1..%d)",
                         n_mels, MAX_MELS);
    const size_t pad = N_FFT / 2;
    if (length <= pad || length > ((size_t)1 << 40))
        return og_errorf(OG_ERR_INVALID_ARGUMENT, "whisper log-mel: %zu samples (%zu to 2^40)",
                         length, pad + 1);
    /* The waveform stays float (its values are the clip's floats, promoted exactly when
     * a frame is read) to halve the memory of a long clip. */
    const size_t total = length + 2 * pad, frames = length / AUDIO_WHISPER_HOP;
    float *wave = malloc(total * sizeof *wave);
    double *fb = malloc((size_t)N_BINS * n_mels * sizeof *fb);
    fft_plan *plan = malloc(sizeof *plan);
    if (!wave || !fb || !plan) {
        free(wave);
        free(fb);
        free(plan);
        return og_oom_for(total * sizeof *wave, "whisper log-mel: the padded waveform");
    }
    /* `length` samples of the clip, zero-padded; then `pad` samples reflected (without
     * repeating the edge sample) on each side, as np.pad(mode="reflect") centres frames. */
    size_t n = n_samples < length ? n_samples : length;
    float *x = wave + pad;
    for (size_t i = 0; i < n; i++) x[i] = samples[i];
    for (size_t i = n; i < length; i++) x[i] = 0.0f;
    for (size_t i = 1; i <= pad; i++) {
        x[-(ptrdiff_t)i] = x[i];
        x[length - 1 + i] = x[length - 1 - i];
    }
    mel_filters(n_mels, fb);
    for (int k = 0; k < N_FFT; k++) {
        double a = -2.0 * M_PI * k / N_FFT;
        plan->tw[k] = (cplx){cos(a), sin(a)};
    }
    /* np.hanning(401)[:-1]: numpy evaluates 0.5 + 0.5 cos(pi n / 400), n = 2i - 400. */
    double window[N_FFT];
    for (int i = 0; i < N_FFT; i++) window[i] = 0.5 + 0.5 * cos(M_PI * (2 * i - N_FFT) / N_FFT);

    float max_log = -INFINITY;
    cplx frame[N_FFT], spec[N_FFT];
    double power[N_BINS];
    for (size_t t = 0; t < frames; t++) { /* the last frame (frames + 1 in all) is dropped */
        const float *w = wave + t * AUDIO_WHISPER_HOP;
        for (int i = 0; i < N_FFT; i++) frame[i] = (cplx){(double)w[i] * window[i], 0.0};
        fft_rec(plan, frame, 1, spec, N_FFT);
        for (int k = 0; k < N_BINS; k++) {
            double re = (float)spec[k].re, im = (float)spec[k].im; /* numpy's complex64 */
            double mag = hypot(re, im);
            power[k] = mag * mag;
        }
        for (int i = 0; i < n_mels; i++) {
            double acc = 0.0;
            for (int k = 0; k < N_BINS; k++) acc += fb[k * n_mels + i] * power[k];
            if (acc < 1e-10) acc = 1e-10;
            float v = (float)log10(acc);
            out[(size_t)i * frames + t] = v;
            if (v > max_log) max_log = v;
        }
    }
    float floor_ = max_log - 8.0f;
    for (size_t i = 0; i < (size_t)n_mels * frames; i++) {
        float v = out[i] < floor_ ? floor_ : out[i];
        out[i] = (v + 4.0f) / 4.0f;
    }
    free(wave);
    free(fb);
    free(plan);
    return NULL;
}

og_status *audio_whisper_log_mel(const float *samples, size_t n_samples, int n_mels, float *out) {
    return audio_log_mel_len(samples, n_samples, n_mels, AUDIO_WHISPER_SAMPLES, out);
}
