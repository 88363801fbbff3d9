/* RIFF/WAVE decoding into mono float samples. Written here rather than taken from a
 * library: the subset speech models need is small, and every length in the file is
 * checked against the bytes present before it is used (docs/ARCHITECTURE.md, media). */
#include "media/audio.h"

#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#define WAV_FORMAT_PCM 1
#define WAV_FORMAT_FLOAT 3
#define WAV_FORMAT_EXTENSIBLE 0xFFFE
#define WAV_MAX_CHANNELS 8

static uint32_t le16(const uint8_t *p) { return (uint32_t)p[0] | (uint32_t)p[1] << 8; }
static uint32_t le32(const uint8_t *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* One sample of the given encoding as a float (dr_wav's scaling). */
static float wav_sample(const uint8_t *p, int is_float, int bytes) {
    if (is_float) {
        if (bytes == 4) {
            uint32_t u = le32(p);
            float f;
            memcpy(&f, &u, sizeof f);
            return f;
        }
        uint64_t u = (uint64_t)le32(p) | (uint64_t)le32(p + 4) << 32;
        double d;
        memcpy(&d, &u, sizeof d);
        return (float)d;
    }
    switch (bytes) {
    case 1: return ((int)p[0] - 128) / 128.0f;
    case 2: return (float)(int16_t)le16(p) / 32768.0f;
    case 3: {
        int32_t v = (int32_t)((uint32_t)p[0] << 8 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 24);
        return (float)(v >> 8) / 8388608.0f;
    }
    default: return (float)((double)(int32_t)le32(p) / 2147483648.0);
    }
}

og_status *audio_wav_decode(const uint8_t *data, size_t size, const char *what, audio_clip *out) {
    if (!what) what = "WAV";
    if (size < 12 || memcmp(data, "RIFF", 4) != 0 || memcmp(data + 8, "WAVE", 4) != 0)
        return og_errorf(OG_ERR_INVALID_ARGUMENT, "%s: not a WAV file (no RIFF/WAVE header)",
                         what);
    const uint8_t *fmt = NULL, *pcm = NULL;
    size_t fmt_size = 0, pcm_size = 0;
    size_t pos = 12;
    while (pos + 8 <= size && !pcm) {
        const uint8_t *id = data + pos;
        uint32_t len = le32(data + pos + 4);
        size_t avail = size - pos - 8;
        pos += 8;
        if (memcmp(id, "data", 4) == 0) {
            /* A writer that streams leaves the length unknown (0 or 0xFFFFFFFF): the data
             * then runs to the end of the file. Any other length must be present. */
            bool unknown = len == 0xFFFFFFFFu || (len == 0 && avail > 0);
            if (!unknown && len > avail)
                return og_errorf(OG_ERR_INVALID_ARGUMENT, "%s: truncated: the data chunk "
                                 "declares %u bytes, %zu are present", what, len, avail);
            pcm = data + pos;
            pcm_size = unknown ? avail : len;
            break;
        }
        if (len > avail)
            return og_errorf(OG_ERR_INVALID_ARGUMENT, "%s: truncated: chunk '%.4s' at byte %zu "
                             "declares %u bytes, %zu are present", what, (const char *)id,
                             pos - 8, len, avail);
        if (memcmp(id, "fmt ", 4) == 0) {
            fmt = data + pos;
            fmt_size = len;
        }
        pos += len + (len & 1); /* chunks are padded to even sizes */
    }
    if (!fmt)
        return og_errorf(OG_ERR_INVALID_ARGUMENT, "%s: no 'fmt ' chunk before the data", what);
    if (!pcm) return og_errorf(OG_ERR_INVALID_ARGUMENT, "%s: no 'data' chunk", what);
    if (fmt_size < 16)
        return og_errorf(OG_ERR_INVALID_ARGUMENT, "%s: 'fmt ' chunk of %zu bytes (16 needed)",
                         what, fmt_size);
    uint32_t tag = le16(fmt), channels = le16(fmt + 2), rate = le32(fmt + 4);
    uint32_t block = le16(fmt + 12), bits = le16(fmt + 14);
    if (tag == WAV_FORMAT_EXTENSIBLE) {
        /* cbSize (2), valid bits (2), channel mask (4), then the sub-format GUID whose
         * first two bytes are the plain format tag. */
        if (fmt_size < 40)
            return og_errorf(OG_ERR_INVALID_ARGUMENT, "%s: WAVE_FORMAT_EXTENSIBLE 'fmt ' chunk "
                             "of %zu bytes (40 needed)", what, fmt_size);
        tag = le16(fmt + 24);
    }
    if (channels == 0 || rate == 0 || bits == 0)
        return og_errorf(OG_ERR_INVALID_ARGUMENT, "%s: 'fmt ' says %u channels, %u Hz, %u bits",
                         what, channels, rate, bits);
    int is_float = tag == WAV_FORMAT_FLOAT;
    if (tag != WAV_FORMAT_PCM && !is_float)
        return og_errorf(OG_ERR_UNSUPPORTED, "%s: WAV format tag 0x%04x (only PCM 1 and IEEE "
                         "float 3 are read)", what, tag);
    if ((is_float && bits != 32 && bits != 64) ||
        (!is_float && bits != 8 && bits != 16 && bits != 24 && bits != 32))
        return og_errorf(OG_ERR_UNSUPPORTED, "%s: %u-bit %s samples (read: PCM 8/16/24/32, "
                         "float 32/64)", what, bits, is_float ? "float" : "PCM");
    if (channels > WAV_MAX_CHANNELS)
        return og_errorf(OG_ERR_UNSUPPORTED, "%s: %u channels (at most %d are read)", what,
                         channels, WAV_MAX_CHANNELS);
    if (rate > 1000000)
        return og_errorf(OG_ERR_INVALID_ARGUMENT, "%s: sample rate %u Hz", what, rate);
    uint32_t bytes = bits / 8;
    if (block != bytes * channels)
        return og_errorf(OG_ERR_INVALID_ARGUMENT, "%s: block align %u for %u channels of %u "
                         "bits (%u expected)", what, block, channels, bits, bytes * channels);
    if (pcm_size % block != 0)
        return og_errorf(OG_ERR_INVALID_ARGUMENT, "%s: truncated: %zu data bytes are not whole "
                         "frames of %u bytes", what, pcm_size, block);
    size_t frames = pcm_size / block;
    float *samples = malloc((frames ? frames : 1) * sizeof *samples);
    if (!samples) return og_oom_for(frames * sizeof *samples, "%s: samples", what);
    for (size_t i = 0; i < frames; i++) {
        const uint8_t *p = pcm + i * block;
        if (channels == 1) {
            samples[i] = wav_sample(p, is_float, (int)bytes);
            continue;
        }
        /* The mean of the channels in float, as onnxruntime-extensions mixes stereo. */
        float sum = 0.0f;
        for (uint32_t c = 0; c < channels; c++)
            sum += wav_sample(p + c * bytes, is_float, (int)bytes);
        samples[i] = sum / (float)channels;
    }
    for (size_t i = 0; is_float && i < frames; i++)
        if (!isfinite(samples[i])) {
            free(samples);
            return og_errorf(OG_ERR_INVALID_ARGUMENT, "%s: sample %zu is not a finite number",
                             what, i);
        }
    out->samples = samples;
    out->n_samples = frames;
    out->rate = (int)rate;
    out->channels = (int)channels;
    return NULL;
}

void audio_clip_release(audio_clip *clip) {
    if (!clip) return;
    free(clip->samples);
    clip->samples = NULL;
    clip->n_samples = 0;
}
