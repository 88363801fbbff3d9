/* The public og_audios functions: WAV files into Whisper's input_features tensor. */
#include "base/mapped_file.h"
#include "base/tensor.h"
#include "media/audio.h"

#include <stdio.h>
#include <stdlib.h>

struct og_audios {
    size_t count;
    audio_clip *clips; /* (count) */
};

void og_audios_free(og_audios *audios) {
    if (!audios) return;
    for (size_t i = 0; i < audios->count; i++) audio_clip_release(&audios->clips[i]);
    free(audios->clips);
    free(audios);
}

static og_status *audios_new(size_t count, og_audios **out) {
    og_audios *a = calloc(1, sizeof *a);
    if (a) a->clips = calloc(count ? count : 1, sizeof *a->clips);
    if (!a || !a->clips) {
        free(a);
        return og_oom();
    }
    *out = a;
    return NULL;
}

og_status *og_audios_open(const char *const *paths, size_t count, og_audios **out) {
    if (!out || (count && !paths))
        return og_errorf(OG_ERR_INVALID_ARGUMENT, "og_audios_open: NULL argument");
    og_audios *a;
    OG_TRY(audios_new(count, &a));
    for (size_t i = 0; i < count; i++) {
        if (!paths[i]) {
            og_audios_free(a);
            return og_errorf(OG_ERR_INVALID_ARGUMENT, "og_audios_open: path %zu is NULL", i);
        }
        mapped_file f;
        og_status *st = mapped_file_open(paths[i], &f);
        if (!st) {
            st = audio_wav_decode(f.data, f.size, paths[i], &a->clips[i]);
            mapped_file_close(&f);
        }
        if (st) {
            og_audios_free(a);
            return st;
        }
        a->count = i + 1;
    }
    a->count = count;
    *out = a;
    return NULL;
}

og_status *og_audios_load(const void *const *data, const size_t *sizes, size_t count,
                         og_audios **out) {
    if (!out || (count && (!data || !sizes)))
        return og_errorf(OG_ERR_INVALID_ARGUMENT, "og_audios_load: NULL argument");
    og_audios *a;
    OG_TRY(audios_new(count, &a));
    for (size_t i = 0; i < count; i++) {
        char what[48];
        snprintf(what, sizeof what, "WAV %zu in memory", i);
        og_status *st = sizes[i] && !data[i]
                            ? og_errorf(OG_ERR_INVALID_ARGUMENT, "og_audios_load: %s is NULL", what)
                            : audio_wav_decode(data[i], sizes[i], what, &a->clips[i]);
        if (st) {
            og_audios_free(a);
            return st;
        }
        a->count = i + 1;
    }
    *out = a;
    return NULL;
}

size_t og_audios_count(const og_audios *audios) { return audios ? audios->count : 0; }

const float *og_audios_samples(const og_audios *audios, size_t index, size_t *count,
                               int *sample_rate) {
    if (!audios || index >= audios->count) return NULL;
    const audio_clip *c = &audios->clips[index];
    if (count) *count = c->n_samples;
    if (sample_rate) *sample_rate = c->rate;
    return c->samples;
}

og_status *og_whisper_log_mel(const float *samples, size_t count, int n_mels, float *out) {
    return audio_whisper_log_mel(samples, count, n_mels, out);
}

/* A clip's samples at 16 kHz: its own (*owned NULL), or resampled into *owned. */
static og_status *clip_16k(const audio_clip *c, const float **x, size_t *n, float **owned) {
    *owned = NULL;
    if (c->rate == AUDIO_WHISPER_RATE) {
        *x = c->samples;
        *n = c->n_samples;
        return NULL;
    }
    OG_TRY(audio_resample_down(c->samples, c->n_samples, c->rate, AUDIO_WHISPER_RATE, owned, n));
    *x = *owned;
    return NULL;
}

/* One clip's features over `length` samples at 16 kHz. */
static og_status *clip_features(const audio_clip *c, int n_mels, size_t length, float *dst) {
    const float *x;
    size_t n;
    float *owned;
    OG_TRY(clip_16k(c, &x, &n, &owned));
    og_status *st = audio_log_mel_len(x, n, n_mels, length, dst);
    free(owned);
    return st;
}

/* Every clip's features over `length` samples into a (count, n_mels, length / 160) tensor. */
static og_status *features(const og_audios *audios, int n_mels, size_t length, og_tensor **out) {
    int64_t frames = (int64_t)(length / AUDIO_WHISPER_HOP);
    int64_t dims[3] = {(int64_t)audios->count, n_mels, frames};
    og_tensor *t;
    OG_TRY(og_tensor_create(OG_FLOAT32, dims, 3, &t));
    float *dst = og_tensor_data(t);
    for (size_t i = 0; i < audios->count; i++) {
        og_status *st = clip_features(&audios->clips[i], n_mels, length,
                                      dst + i * (size_t)n_mels * (size_t)frames);
        if (st) {
            og_tensor_free(t);
            return og_status_wrap(st, "audio %zu", i);
        }
    }
    *out = t;
    return NULL;
}

og_status *og_audios_whisper_features(const og_audios *audios, int n_mels, og_tensor **out) {
    if (!audios || !out)
        return og_errorf(OG_ERR_INVALID_ARGUMENT, "og_audios_whisper_features: NULL argument");
    return features(audios, n_mels, AUDIO_WHISPER_SAMPLES, out);
}

og_status *og_audios_whisper_features_whole(const og_audios *audios, int n_mels,
                                            og_tensor **out) {
    if (!audios || !out)
        return og_errorf(OG_ERR_INVALID_ARGUMENT,
                         "og_audios_whisper_features_whole: NULL argument");
    /* The longest clip's length at 16 kHz (resampling's output length, computed as it). */
    size_t longest = 0;
    for (size_t i = 0; i < audios->count; i++) {
        const audio_clip *c = &audios->clips[i];
        size_t n = c->n_samples;
        if (c->rate > AUDIO_WHISPER_RATE)
            n = audio_resample_length(n, c->rate, AUDIO_WHISPER_RATE);
        if (n > longest) longest = n;
    }
    if (longest <= AUDIO_WHISPER_N_FFT / 2)
        return og_errorf(OG_ERR_INVALID_ARGUMENT, "og_audios_whisper_features_whole: the longest "
                         "audio has %zu samples at 16 kHz (more than %d needed)", longest,
                         AUDIO_WHISPER_N_FFT / 2);
    return features(audios, n_mels, longest, out);
}
