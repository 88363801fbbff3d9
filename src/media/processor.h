/* A package's image preprocessing, read from its processor_config.json: the list of
 * onnxruntime-extensions image ops ("transforms") that onnxruntime-genai's processors
 * run, computed as those ops compute them. Supported: DecodeImage, ConvertRGB, Resize
 * (fixed size or Qwen's smart resize), Rescale, Normalize, PatchImage (Qwen2.5-VL /
 * Qwen3-VL / Qwen3.5 patches), Phi3ImageTransform (Phi-3-vision's HD crops) and
 * Permute3D to channels first (Gemma 3's SigLIP input). */
#ifndef OG_MEDIA_PROCESSOR_H
#define OG_MEDIA_PROCESSOR_H

#include "media/image.h"

typedef struct media_processor media_processor;

/* The tensors one run makes, by name (at most MEDIA_MAX_OUTPUTS). */
#define MEDIA_MAX_OUTPUTS 4
typedef struct media_outputs {
    int count;
    const char *names[MEDIA_MAX_OUTPUTS]; /* static strings */
    og_tensor *tensors[MEDIA_MAX_OUTPUTS];
} media_outputs;

/* Reads path: a processor_config.json, or a package folder (its genai_config.json's
 * model.vision.config_filename, else processor_config.json). An op or attribute we do
 * not implement is OG_ERR_UNSUPPORTED naming it. Free with media_processor_free. */
og_status *media_processor_open(const char *path, media_processor **out);
void media_processor_free(media_processor *p);
/* The processor's "name" ("qwen2_5_image_processor", ...). */
const char *media_processor_name(const media_processor *p);

/* Runs the ops over images[0..n) and gathers the results as onnxruntime-genai's
 * processors name them:
 *  - PatchImage: pixel_values float32 (sum of patches, C * temporal * patch * patch),
 *    image_grid_thw int64 (n, 3), num_image_tokens int64 (1): the merged tokens of all
 *    images. Images of different sizes are concatenated (onnxruntime-genai 0.18 pads
 *    each image's rows to the largest's instead);
 *  - Phi3ImageTransform: pixel_values float32 (n, 17, 3, 336, 336), image_sizes int64
 *    (n, 2), num_image_tokens int64 (n, 1);
 *  - Permute3D: pixel_values float32 (n, 3, h, w), all images one size.
 * The tensors are the caller's (media_outputs_free). */
og_status *media_processor_run(const media_processor *p, const media_image *images, size_t n,
                               media_outputs *out);
void media_outputs_free(media_outputs *o);

#endif
