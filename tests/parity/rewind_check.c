/* Drives a generator through a rewind: greedy from PROMPT to MAX_LENGTH, rewind to N,
 * append EXTRA, continue to MAX_LENGTH; prints the sequence after each phase on its
 * own line. check_parity.py runs onnxruntime-genai through the same steps.
 *
 *   rewind-check DIR MAX_LENGTH N PROMPT_IDS EXTRA_IDS [MIN_LENGTH]   (ids comma-separated)
 *
 * MIN_LENGTH (default 0) blocks EOS while a sequence is shorter, as the search option. */
#include "onnx_genai.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static size_t parse(const char *s, int32_t *out, size_t cap) {
    size_t n = 0;
    while (*s && n < cap) {
        out[n++] = (int32_t)strtol(s, (char **)&s, 10);
        if (*s == ',') s++;
    }
    return n;
}

static og_status *finish_and_print(og_generator *g) {
    while (!og_generator_is_done(g)) {
        og_status *st = og_generator_generate_next_token(g);
        if (st) return st;
    }
    const int32_t *seq;
    size_t len;
    og_status *st = og_generator_get_sequence(g, 0, &seq, &len);
    if (st) return st;
    for (size_t i = 0; i < len; i++) printf("%s%d", i ? "," : "", seq[i]);
    printf("\n");
    return NULL;
}

int main(int argc, char **argv) {
    if (argc != 6 && argc != 7) {
        fprintf(stderr, "usage: rewind-check DIR MAX_LENGTH N PROMPT_IDS EXTRA_IDS [MIN_LENGTH]\n");
        return 2;
    }
    int32_t prompt[1024], extra[1024];
    size_t np = parse(argv[4], prompt, 1024), ne = parse(argv[5], extra, 1024);
    og_model *m = NULL;
    og_generator *g = NULL;
    og_status *st = og_model_open(argv[1], NULL, &m);
    if (!st) {
        og_generator_params p = og_generator_params_default(m);
        p.max_length = atoi(argv[2]);
        p.do_sample = 0;
        if (argc == 7) p.min_length = atoi(argv[6]);
        st = og_generator_create(m, &p, &g);
    }
    if (!st) st = og_generator_append_tokens(g, prompt, np);
    if (!st) st = finish_and_print(g);
    if (!st) st = og_generator_rewind_to(g, (size_t)atoi(argv[3]));
    if (!st && ne) st = og_generator_append_tokens(g, extra, ne);
    if (!st) st = finish_and_print(g);
    og_generator_destroy(g);
    og_model_close(m);
    if (st) {
        fprintf(stderr, "rewind-check: %s\n", og_status_message(st));
        og_status_free(st);
        return 1;
    }
    return 0;
}
