/* Audio for speech models: WAV decoding (audio_wav.c) and Whisper's log-mel input
 * features (audio_mel.c), computed as the Hugging Face WhisperFeatureExtractor does. */
#ifndef OG_MEDIA_AUDIO_H
#define OG_MEDIA_AUDIO_H

#include "base/status.h"

#include <stddef.h>
#include <stdint.h>

/* Whisper's fixed front end: 16 kHz, a 400-point FFT every 160 samples, 30 s windows. */
#define AUDIO_WHISPER_RATE 16000
#define AUDIO_WHISPER_N_FFT 400
#define AUDIO_WHISPER_HOP 160
#define AUDIO_WHISPER_SAMPLES 480000 /* 30 s */
#define AUDIO_WHISPER_FRAMES 3000    /* AUDIO_WHISPER_SAMPLES / AUDIO_WHISPER_HOP */

/* A decoded WAV: mono samples in [-1, 1] (several channels are averaged). */
typedef struct audio_clip {
    float *samples; /* (n_samples), malloc'd */
    size_t n_samples;
    int rate;       /* samples per second, as the file says */
    int channels;   /* in the file, before the mix to mono */
} audio_clip;

/* Decodes a RIFF/WAVE file's bytes: PCM 8/16/24/32-bit integers and IEEE float 32/64,
 * plain or WAVE_FORMAT_EXTENSIBLE, 1 to 8 channels. Integers are scaled as dr_wav (and
 * so onnxruntime-extensions) does: x / 2^(bits-1), 8-bit as (x - 128) / 128. Anything
 * malformed (no RIFF/WAVE header, a chunk past the end, a missing fmt or data chunk, a
 * data size that is not whole frames) is OG_ERR_INVALID_ARGUMENT naming `what` and the
 * reason; a valid file in a format not listed is OG_ERR_UNSUPPORTED. Memory: one float
 * per frame. On failure *out is untouched. */
og_status *audio_wav_decode(const uint8_t *data, size_t size, const char *what, audio_clip *out);
void audio_clip_release(audio_clip *clip);

/* Down-samples n samples at in_rate to out_rate as onnxruntime-genai 0.18 does
 * (audio_resample.c); in_rate < out_rate is OG_ERR_UNSUPPORTED. *out (malloc'd, *n_out
 * samples: ceil(n * out_rate / in_rate) in float) is the caller's to free. */
og_status *audio_resample_down(const float *in, size_t n, int in_rate, int out_rate,
                               float **out, size_t *n_out);
/* The number of samples audio_resample_down makes of n. */
size_t audio_resample_length(size_t n, int in_rate, int out_rate);

/* Whisper's input features of one clip at 16 kHz: the first 30 s (shorter clips padded
 * with zeros), framed with centred reflect padding, Hann-windowed (periodic), power
 * spectrum, n_mels Slaney mel filters over 0-8000 Hz, log10 floored at 1e-10, clamped to
 * the clip's maximum - 8, then (x + 4) / 4. out: (n_mels, AUDIO_WHISPER_FRAMES). n_mels
 * is 80 or 128 for Whisper's checkpoints; 1..512 is accepted. */
og_status *audio_whisper_log_mel(const float *samples, size_t n_samples, int n_mels, float *out);
/* The same over `length` samples (the clip cut or zero-padded to it; length > 200) instead
 * of 30 s: out is (n_mels, length / 160), as WhisperFeatureExtractor computes a clip it
 * neither truncates nor pads (truncation=False, padding="longest"): the input of Whisper's
 * sequential long-form decoding. The clamp to max - 8 is over the whole clip. */
og_status *audio_log_mel_len(const float *samples, size_t n_samples, int n_mels, size_t length,
                             float *out);

#endif
