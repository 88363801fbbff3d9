/* Images through a Qwen vision-language package (Qwen2.5-VL, Qwen3-VL, Qwen3.5) or a
 * Phi-3-vision or Gemma 3 one (gen_vision_encode_plain: plain positions): the
 * vision encoder run on the processor's pixel_values and image_grid_thw, and the 3-D
 * mRoPE positions of a prompt with image tokens (the rope index over each image's grid,
 * as onnxruntime-genai 0.18 computes it from Hugging Face's get_rope_index).
 *
 * The generator (og_generator_set_inputs) runs the encoder once per request, keeps the
 * features, and feeds the embedding stage the rows of the image tokens each run holds. */
#ifndef OG_GENAI_VISION_H
#define OG_GENAI_VISION_H

#include "genai/model.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The vision encoder on pixel_values [patches, C] (float32) and image_grid_thw
 * [images, 3] (int64): *out = image_features [image tokens, hidden], a new tensor. The
 * encoder runs once per distinct image: an image whose grid and pixels equal an earlier
 * one's in the same call reuses its features. */
og_status *gen_vision_encode(og_model *m, const og_tensor *pixel_values, const og_tensor *grid,
                             og_tensor **out);

/* Phi-3-vision's encoder on pixel_values [images, crops, 3, H, W] (float32) and
 * image_sizes [images, 2] (int64), or Gemma 3's on pixel_values [images, 3, H, W] alone
 * (sizes unused): *out = image_features [image tokens, hidden], a new tensor (every
 * image's tokens in order; the generator checks their count against the prompt's image
 * tokens). */
og_status *gen_vision_encode_plain(og_model *m, const og_tensor *pixel_values,
                                   const og_tensor *sizes, og_tensor **out);

/* The rope index of one prompt: ids[0..n), the grids of its images in order ([images][3]),
 * pos[a * n + i] for axis a (temporal, height, width) of token i, and *delta such that
 * every later position p (decode) is p + delta on all three axes. An image is a
 * vision-start token followed by the image token; its t * h * w / merge^2 image tokens take
 * the grid's positions from the next free position on, text continues after the largest. */
og_status *gen_vision_rope_index(const og_model *m, const int32_t *ids, int64_t n,
                                 const int64_t *grid, int64_t n_images, int64_t *pos,
                                 int64_t *delta);

/* Qwen's image placeholders in a prompt's text: the count of <|vision_start|>; and the
 * text with each <|vision_start|> [... <|vision_end|>] expanded as onnxruntime-genai's
 * processor expands it: start, t * h * w / merge^2 <|image_pad|>, end, for the grids
 * grid[0..n) ([n][3]) in order. Placeholders and images must be as many, or with
 * add_missing a text without any gets one per image in front. *out: malloc'd. */
size_t gen_vision_placeholders(const char *text);
og_status *gen_vision_expand_prompt(const og_model *m, const char *text, const int64_t *grid,
                                    int n, bool add_missing, char **out);
/* Gemma 3's: each <start_of_image> becomes "\n\n<start_of_image>", 256
 * <image_soft_token>, "<end_of_image>\n\n" as onnxruntime-genai's processor expands it
 * (with add_missing, a text without any gets one per image in front); the count of
 * <start_of_image>; and the placeholder a chat message carries for an image of model m
 * (Gemma 3's, else Qwen's <|vision_start|><|image_pad|><|vision_end|>). */
og_status *gen_vision_expand_gemma(const char *text, int n, bool add_missing, char **out);
size_t gen_vision_gemma_placeholders(const char *text);
const char *gen_vision_placeholder(const og_model *m);

#endif
