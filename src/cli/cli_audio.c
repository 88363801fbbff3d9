/* --audio FILE for generate: a WAV's Whisper features for a Whisper package, handed to
 * og_generator_set_inputs with the decoder prompt (the processor's path: the first 30 s). */
#include "cli/cli.h"

#include "base/status.h"
#include "genai/model.h"

#include <string.h>

const char cli_whisper_prompt[] = "<|startoftranscript|><|en|><|transcribe|><|notimestamps|>";

og_status *cli_audio_features(og_model *model, const char *path, og_tensor **out) {
    if (!model->encoder)
        return og_errorf(OG_ERR_UNSUPPORTED, "--audio: %s takes no audio (model.type '%s'; "
                         "a Whisper package does)", model->dir, og_model_type(model));
    og_audios *a = NULL;
    OG_TRY(og_audios_open(&path, 1, &a));
    og_status *st = og_audios_whisper_features(
        a, model->encoder_mels > 0 ? (int)model->encoder_mels : 80, out);
    og_audios_free(a);
    return st;
}

og_status *cli_audio_set(og_generator *gen, int32_t *ids, size_t n, og_tensor *features) {
    og_tensor *idt;
    int64_t d[2] = {1, (int64_t)n};
    OG_TRY(og_tensor_wrap(OG_INT32, d, 2, ids, n * sizeof *ids, &idt));
    const char *names[2] = {"audio_features", "input_ids"};
    const og_tensor *ts[2] = {features, idt};
    og_status *st = og_generator_set_inputs(gen, names, ts, 2);
    og_tensor_free(idt);
    return st;
}
