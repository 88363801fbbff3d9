/* bench-chat-template TEMPLATE MESSAGES.json TOOLS.json|- BOS EOS SECONDS
 *
 * Renders one conversation with one chat template over and over (a parse once, then
 * og_chat_template_apply per render, as a server would) and prints, as JSON, the median
 * and best microseconds per render over rounds of SECONDS/5 each, and the rendered text's
 * length. bench/chat_template_vs_jinja2.py runs it beside Python jinja2. */
#include "onnx_genai.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static char *slurp(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *b = malloc((size_t)n + 1);
    if (b && fread(b, 1, (size_t)n, f) != (size_t)n) {
        free(b);
        b = NULL;
    }
    if (b) b[n] = 0;
    fclose(f);
    return b;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv) {
    if (argc != 7) {
        fprintf(stderr, "usage: bench-chat-template TEMPLATE MESSAGES.json TOOLS.json|- BOS EOS SECONDS\n");
        return 2;
    }
    char *msgs = slurp(argv[2]), *tools = strcmp(argv[3], "-") ? slurp(argv[3]) : NULL;
    double seconds = atof(argv[6]);
    og_chat_template *ct = NULL;
    og_status *st = og_chat_template_open(argv[1], &ct);
    if (!st) st = og_chat_template_set_token(ct, "bos_token", argv[4]);
    if (!st) st = og_chat_template_set_token(ct, "eos_token", argv[5]);
    if (st || !msgs) {
        fprintf(stderr, "bench-chat-template: %s\n", st ? og_status_message(st) : "cannot read messages");
        return 1;
    }
    og_chat_options o = og_chat_options_default();
    o.tools_json = tools;
    o.add_generation_prompt = 1;
    enum { ROUNDS = 5 };
    double per[ROUNDS];
    size_t out_len = 0;
    for (int r = 0; r < ROUNDS; r++) {
        long n = 0;
        double t0 = now_s(), t;
        do {
            char *text = NULL;
            if ((st = og_chat_template_apply(ct, msgs, &o, &text))) {
                fprintf(stderr, "bench-chat-template: %s\n", og_status_message(st));
                return 1;
            }
            out_len = strlen(text);
            og_free(text);
            n++;
            t = now_s();
        } while (t - t0 < seconds / ROUNDS);
        per[r] = (t - t0) / (double)n * 1e6;
    }
    qsort(per, ROUNDS, sizeof per[0], cmp_double);
    printf("{\"median_us\": %.2f, \"best_us\": %.2f, \"chars\": %zu}\n", per[ROUNDS / 2], per[0], out_len);
    og_chat_template_free(ct);
    free(msgs);
    free(tools);
    return 0;
}
