/* --image FILE for generate and run: images through the package's processor, the prompt's
 * Qwen placeholders expanded for them, both handed to og_generator_set_inputs. */
#include "cli/cli.h"

#include "base/status.h"
#include "genai/model.h"
#include "genai/vision.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

og_status *cli_images_prepare(og_model *model, og_tokenizer *tok, const char *const *paths,
                              int n_paths, const char *text, int add_special, int32_t **ids,
                              size_t *n_ids, og_named_tensors **out) {
    og_images *im = NULL;
    og_image_processor *pr = NULL;
    og_named_tensors *nt = NULL;
    char *expanded = NULL;
    int32_t *enc = NULL;
    size_t n = 0;
    og_status *st = og_images_open(paths, (size_t)n_paths, &im);
    if (!st) st = og_image_processor_open(model->dir, &pr);
    if (!st) st = og_image_processor_process(pr, im, &nt);
    og_tensor *grid = st ? NULL : og_named_tensors_find(nt, "image_grid_thw");
    bool gemma = model->vision_gemma3;
    if (!st && ((!grid && !gemma) || !model->vision.s))
        st = og_errorf(OG_ERR_UNSUPPORTED, "--image: %s takes no images here (%s)", model->dir,
                       model->text_only ? model->text_only
                                        : "images are fed to Qwen and Gemma 3 packages here");
    if (!st && (st = gemma ? gen_vision_expand_gemma(text, n_paths, true, &expanded)
                           : gen_vision_expand_prompt(model, text, og_tensor_data(grid), n_paths,
                                                      true, &expanded)))
        st = og_status_wrap(st, "--image");
    if (!st) st = og_tokenizer_encode(tok, expanded, strlen(expanded), add_special, &enc, &n);
    if (!st && n == 0) st = og_errorf(OG_ERR_INVALID_ARGUMENT, "the prompt encodes to no tokens");
    og_image_processor_free(pr);
    og_images_free(im);
    free(expanded);
    if (st) {
        og_free(enc);
        og_named_tensors_free(nt);
        return st;
    }
    free(*ids);
    *ids = enc;
    *n_ids = n;
    *out = nt;
    return NULL;
}

og_status *cli_images_set(og_generator *gen, int32_t *ids, size_t n, og_named_tensors *nt) {
    og_tensor *idt;
    int64_t d[2] = {1, (int64_t)n};
    OG_TRY(og_tensor_wrap(OG_INT32, d, 2, ids, n * sizeof *ids, &idt));
    const char *names[3] = {"input_ids", "pixel_values", "image_grid_thw"};
    const og_tensor *ts[3] = {idt, og_named_tensors_find(nt, "pixel_values"),
                              og_named_tensors_find(nt, "image_grid_thw")};
    og_status *st = og_generator_set_inputs(gen, names, ts, ts[2] ? 3 : 2); /* Gemma 3: no grid */
    og_tensor_free(idt);
    return st;
}
