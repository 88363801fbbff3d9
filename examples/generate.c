/* A minimal embedding of onnx-genai: open a package, generate greedily from token ids
 * given on the command line, print the sequence.
 *
 *   example-generate MODEL_DIR MAX_LENGTH ID [ID ...]
 *
 * Every call returns a status; a non-NULL status carries a message and is freed by
 * the caller. */
#include "onnx_genai.h"

#include <stdio.h>
#include <stdlib.h>

static int fail(og_status *st) {
    fprintf(stderr, "error: %s\n", og_status_message(st));
    og_status_free(st);
    return 1;
}

int main(int argc, char **argv) {
    if (argc < 4) {
        fprintf(stderr, "usage: %s MODEL_DIR MAX_LENGTH ID [ID ...]\n", argv[0]);
        return 2;
    }
    int n = argc - 3;
    int32_t *ids = malloc(sizeof *ids * (size_t)n);
    if (!ids) return 1;
    for (int i = 0; i < n; i++) ids[i] = atoi(argv[3 + i]);

    og_model *model = NULL;
    og_generator *gen = NULL;
    og_status *st = og_model_open(argv[1], NULL, &model);
    if (st) {
        free(ids);
        return fail(st);
    }
    og_generator_params params = og_generator_params_default(model); /* the package's search block */
    params.max_length = atoi(argv[2]);
    params.all_logits = 0; /* we read no logits but the next token's: the prompt computes
                              only its last position's */
    if ((st = og_generator_create(model, &params, &gen))) goto out;
    if ((st = og_generator_append_tokens(gen, ids, (size_t)n))) goto out;
    while (!og_generator_is_done(gen))
        if ((st = og_generator_generate_next_token(gen))) goto out;
    const int32_t *seq; /* owned by the generator */
    size_t len;
    if ((st = og_generator_get_sequence(gen, 0, &seq, &len))) goto out;
    for (size_t i = 0; i < len; i++) printf("%s%d", i ? " " : "", seq[i]);
    printf("\n");
out:
    og_generator_destroy(gen);
    og_model_close(model);
    free(ids);
    return st ? fail(st) : 0;
}
