/* --image FILE for generate and run: images through the package's processor, the prompt's
 * Qwen placeholders expanded for them, both handed to og_generator_set_inputs. */
#include "cli/cli.h"

#include "base/status.h"
#include "genai/model.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char VSTART[] = "<|vision_start|>", VEND[] = "<|vision_end|>",
                  VPAD[] = "<|image_pad|>";

/* Qwen's image placeholders expanded as the processor expands them (python/onnx_genai/
 * _image.py): each <|vision_start|> [... <|vision_end|>] becomes start, t*h*w/merge^2
 * <|image_pad|>, end. A prompt without any gets one placeholder per image in front. */
static og_status *expand_images(const char *text, const int64_t *grid, int n, int merge,
                                char **out) {
    size_t tl = strlen(text), pads = 0, found = 0;
    for (const char *p = strstr(text, VSTART); p; p = strstr(p + 1, VSTART)) found++;
    if (found && found != (size_t)n)
        return og_errorf(OG_ERR_INVALID_ARGUMENT, "--image: the prompt has %zu %s but %d "
                         "image%s were given", found, VSTART, n, n == 1 ? "" : "s");
    for (int k = 0; k < n; k++)
        pads += (size_t)(grid[3 * k] * grid[3 * k + 1] * grid[3 * k + 2] / ((int64_t)merge * merge));
    size_t cap = tl + (size_t)n * (sizeof VSTART + sizeof VEND) + pads * (sizeof VPAD - 1) + 1;
    char *buf = malloc(cap), *w = buf;
    if (!buf) return og_oom();
    const char *pos = text;
    for (int k = 0; k < n; k++) {
        const char *at = found ? strstr(pos, VSTART) : pos;
        memcpy(w, pos, (size_t)(at - pos));
        w += at - pos;
        w += sprintf(w, "%s", VSTART);
        int64_t np = grid[3 * k] * grid[3 * k + 1] * grid[3 * k + 2] / ((int64_t)merge * merge);
        for (int64_t i = 0; i < np; i++) w += sprintf(w, "%s", VPAD);
        w += sprintf(w, "%s", VEND);
        pos = at;
        if (found) {
            pos = at + strlen(VSTART);
            const char *end = strstr(pos, VEND);
            if (end) pos = end + strlen(VEND);
        }
    }
    strcpy(w, pos);
    *out = buf;
    return NULL;
}

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
    if (!st && (!grid || !model->vision.s))
        st = og_errorf(OG_ERR_UNSUPPORTED, "--image: %s takes no images here (%s)", model->dir,
                       model->text_only ? model->text_only
                                        : "images are fed to Qwen vision-language packages");
    if (!st) st = expand_images(text, og_tensor_data(grid), n_paths, model->spatial_merge,
                                &expanded);
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
    og_status *st = og_generator_set_inputs(gen, names, ts, 3);
    og_tensor_free(idt);
    return st;
}
