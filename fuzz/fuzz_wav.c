/* libFuzzer target: any byte string given as a WAV file must decode into samples that
 * are finite and within the bytes' frames, or fail with a message; never crash, leak or
 * read out of bounds. (Whisper's log-mel features are left out: they take any finite
 * samples and cost 0.15 s a call; tests/audio covers them.) Seeds in corpus/wav. */
#include "media/audio.h"

#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    audio_clip c;
    og_status *st = audio_wav_decode(data, size, "fuzz.wav", &c);
    if (st) {
        (void)og_status_message(st);
        og_status_free(st);
        return 0;
    }
    if (c.n_samples > size) abort(); /* at least one byte per sample */
    volatile float sink = 0.0f;
    for (size_t i = 0; i < c.n_samples; i++) {
        if (!isfinite(c.samples[i])) abort(); /* non-finite float samples are refused */
        sink += c.samples[i];
    }
    (void)sink;
    audio_clip_release(&c);
    return 0;
}
