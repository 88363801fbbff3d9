/* WAV decoding and Whisper's log-mel features (src/media): hand-made files whose samples
 * are known, the bounds checks on lengths, the fuzzer's seeds, and the features' fixed
 * points (silence, the clamp to max - 8). tests/audio compares the features with
 * transformers' WhisperFeatureExtractor on generated signals. */
#include "testing.h"

#include "base/pkg_file.h"
#include "media/audio.h"

#include <dirent.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static void put16(uint8_t *p, unsigned v) {
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
}
static void put32(uint8_t *p, uint32_t v) {
    put16(p, v & 0xFFFF);
    put16(p + 2, v >> 16);
}

/* A 44-byte-header WAV of `data_bytes` bytes of samples into buf; returns its size. */
static size_t make_wav(uint8_t *buf, unsigned tag, unsigned channels, unsigned rate,
                       unsigned bits, const void *samples, size_t data_bytes) {
    unsigned block = channels * bits / 8;
    memcpy(buf, "RIFF", 4);
    put32(buf + 4, (uint32_t)(36 + data_bytes));
    memcpy(buf + 8, "WAVEfmt ", 8);
    put32(buf + 16, 16);
    put16(buf + 20, tag);
    put16(buf + 22, channels);
    put32(buf + 24, rate);
    put32(buf + 28, rate * block);
    put16(buf + 32, block);
    put16(buf + 34, bits);
    memcpy(buf + 36, "data", 4);
    put32(buf + 40, (uint32_t)data_bytes);
    memcpy(buf + 44, samples, data_bytes);
    return 44 + data_bytes;
}

TEST(audio_wav_pcm_scaling) {
    uint8_t buf[128];
    /* 16-bit: -32768, 16384, 32767; 24-bit: -8388608, 1; stereo 16-bit averaged. */
    const uint8_t s16[] = {0x00, 0x80, 0x00, 0x40, 0xFF, 0x7F};
    audio_clip c;
    CHECK_OK(audio_wav_decode(buf, make_wav(buf, 1, 1, 16000, 16, s16, sizeof s16), "t", &c));
    CHECK_EQ_INT(c.n_samples, 3);
    CHECK(c.samples[0] == -1.0f && c.samples[1] == 0.5f && c.samples[2] == 32767.0f / 32768.0f);
    audio_clip_release(&c);
    const uint8_t s24[] = {0x00, 0x00, 0x80, 0x01, 0x00, 0x00};
    CHECK_OK(audio_wav_decode(buf, make_wav(buf, 1, 1, 16000, 24, s24, sizeof s24), "t", &c));
    CHECK_EQ_INT(c.n_samples, 2);
    CHECK(c.samples[0] == -1.0f && c.samples[1] == 1.0f / 8388608.0f);
    audio_clip_release(&c);
    CHECK_OK(audio_wav_decode(buf, make_wav(buf, 1, 2, 44100, 16, s16, 4), "t", &c));
    CHECK_EQ_INT(c.n_samples, 1);
    CHECK_EQ_INT(c.rate, 44100);
    CHECK_EQ_INT(c.channels, 2);
    CHECK(c.samples[0] == (-1.0f + 0.5f) / 2.0f);
    audio_clip_release(&c);
}

TEST(audio_wav_refuses_malformed) {
    uint8_t buf[128];
    const uint8_t s16[8] = {0};
    size_t n = make_wav(buf, 1, 1, 16000, 16, s16, sizeof s16);
    audio_clip c;
    CHECK_ERR(audio_wav_decode(buf, 11, "x.wav", &c), OG_ERR_INVALID_ARGUMENT, "x.wav: not a WAV");
    CHECK_ERR(audio_wav_decode(buf, n - 1, "t", &c), OG_ERR_INVALID_ARGUMENT, "truncated");
    CHECK_ERR(audio_wav_decode(buf, 36, "t", &c), OG_ERR_INVALID_ARGUMENT, "no 'data' chunk");
    put32(buf + 16, 1000); /* fmt chunk past the end */
    CHECK_ERR(audio_wav_decode(buf, n, "t", &c), OG_ERR_INVALID_ARGUMENT, "truncated");
    put32(buf + 16, 16);
    put16(buf + 20, 0x55); /* MP3 in WAV */
    CHECK_ERR(audio_wav_decode(buf, n, "t", &c), OG_ERR_UNSUPPORTED, "format tag 0x0055");
    put16(buf + 20, 1);
    put16(buf + 22, 9);
    CHECK_ERR(audio_wav_decode(buf, n, "t", &c), OG_ERR_UNSUPPORTED, "9 channels");
    put16(buf + 22, 1);
    put32(buf + 40, 7); /* a partial frame */
    CHECK_ERR(audio_wav_decode(buf, 44 + 7, "t", &c), OG_ERR_INVALID_ARGUMENT, "whole frames");
    /* a streamed file's unknown length: the data runs to the end */
    put32(buf + 40, 0xFFFFFFFFu);
    CHECK_OK(audio_wav_decode(buf, n, "t", &c));
    CHECK_EQ_INT(c.n_samples, 4);
    audio_clip_release(&c);
}

TEST(audio_whisper_log_mel_fixed_points) {
    float *mel = malloc(80 * AUDIO_WHISPER_FRAMES * sizeof *mel);
    CHECK(mel);
    /* Silence: every mel bin floors at 1e-10, log10 = -10, (-10 + 4) / 4. */
    og_status *st = audio_whisper_log_mel(NULL, 0, 80, mel);
    bool all = !st;
    for (int i = 0; all && i < 80 * AUDIO_WHISPER_FRAMES; i++) all = mel[i] == -1.5f;
    og_status_free(st);
    /* A loud tone: nothing is below its maximum - 8, i.e. (max - 8 + 4) / 4. */
    float *x = malloc(AUDIO_WHISPER_SAMPLES * sizeof *x);
    if (x) {
        for (int i = 0; i < AUDIO_WHISPER_SAMPLES; i++)
            x[i] = 0.5f * sinf(6.2831853f * 440.0f * i / 16000.0f);
        st = audio_whisper_log_mel(x, AUDIO_WHISPER_SAMPLES, 80, mel);
    }
    float lo = INFINITY, hi = -INFINITY;
    for (int i = 0; x && !st && i < 80 * AUDIO_WHISPER_FRAMES; i++) {
        lo = mel[i] < lo ? mel[i] : lo;
        hi = mel[i] > hi ? mel[i] : hi;
    }
    free(x);
    free(mel);
    CHECK(all);
    CHECK_OK(st);
    CHECK_NEAR(hi - lo, 2.0, 1e-6); /* 8 decades / 4 */
    CHECK_ERR(audio_whisper_log_mel(NULL, 0, 0, (float[1]){0}), OG_ERR_INVALID_ARGUMENT,
              "mel bins");
    /* A whole clip must be long enough to reflect 200 samples at each end. */
    float one[80];
    CHECK_ERR(audio_log_mel_len(NULL, 0, 80, 200, one), OG_ERR_INVALID_ARGUMENT, "201");
    CHECK_OK(audio_log_mel_len(NULL, 0, 80, 201, one)); /* one frame of silence */
    CHECK(one[0] == -1.5f && one[79] == -1.5f);
}

/* Every seed of the WAV fuzzer decodes (they seed the decoder's paths, not its errors). */
TEST(audio_wav_fuzz_seeds) {
    char dir[4096];
    snprintf(dir, sizeof dir, "%s/fuzz/corpus/wav", OG_SOURCE_DIR);
    DIR *d = opendir(dir);
    if (!d) {
        test_skip("no fuzz/corpus/wav");
        return;
    }
    int n = 0;
    struct dirent *e;
    og_status *st = NULL;
    while (!st && (e = readdir(d))) {
        if (e->d_name[0] == '.') continue;
        char path[8192], *data;
        size_t len;
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        st = pkg_read_file(path, 1 << 20, &data, &len);
        if (st) break;
        audio_clip c;
        st = audio_wav_decode((const uint8_t *)data, len, path, &c);
        if (!st) audio_clip_release(&c);
        free(data);
        n++;
    }
    closedir(d);
    CHECK_OK(st);
    CHECK(n >= 3);
}

/* Down-sampling's bounds: the output length (ceil(n * (out / in)) in float), the edges'
 * shorter spans, a one-sample clip, up-sampling refused. tests/audio compares the
 * samples' features with onnxruntime-genai's. */
TEST(audio_resample_bounds) {
    float *x = malloc(44100 * sizeof *x), *y = NULL;
    CHECK(x);
    for (int i = 0; i < 44100; i++) x[i] = 0.25f;
    size_t n = 0;
    og_status *st = audio_resample_down(x, 44100, 44100, 16000, &y, &n);
    /* ceil(44100 * (16000 / 44100 in float)) in float: one more than exact, as theirs */
    bool finite = !st && n == 16001;
    for (size_t i = 0; finite && i < n; i++) finite = isfinite(y[i]) && fabsf(y[i]) < 1.0f;
    free(y);
    y = NULL;
    if (!st) st = audio_resample_down(x, 1, 48000, 16000, &y, &n);
    bool one = !st && n == 1 && isfinite(y[0]);
    free(y);
    free(x);
    CHECK_OK(st);
    CHECK(finite);
    CHECK(one);
    CHECK_ERR(audio_resample_down(NULL, 0, 8000, 16000, &y, &n), OG_ERR_UNSUPPORTED,
              "only down-sampling");
}
