/* Token-mask time of the constraint engine (src/guide) along random walks.
 *
 *   bench-guide [--steps N] [--seed S] TOKENIZER.json KIND FILE
 *
 * builds the guidance vocabulary of the tokenizer (added tokens excluded, EOS as the stop
 * id), compiles FILE as guidance of KIND (json_schema, json_object, regex, lark_grammar),
 * then walks: at each step one mask (timed), a random allowed token (the stop id ends the
 * walk and a new one starts). Prints compile time and mask time p50 / p99 / max over all
 * steps, the first mask of the run (cold caches) included. */
#include "guide/guide.h"
#include "tokenizer/tokenizer.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now_us(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static char *read_file(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = malloc((size_t)n + 1);
    if (buf && fread(buf, 1, (size_t)n, f) != (size_t)n) {
        free(buf);
        buf = NULL;
    }
    fclose(f);
    if (buf) buf[n] = 0;
    *len = (size_t)n;
    return buf;
}

static int fail(og_status *st, const char *what) {
    fprintf(stderr, "bench-guide: %s: %s\n", what, og_status_message(st));
    og_status_free(st);
    return 1;
}

int main(int argc, char **argv) {
    int steps = 2000;
    uint64_t seed = 1;
    int a = 1;
    for (; a + 1 < argc && !strncmp(argv[a], "--", 2); a += 2) {
        if (!strcmp(argv[a], "--steps")) steps = atoi(argv[a + 1]);
        else if (!strcmp(argv[a], "--seed")) seed = strtoull(argv[a + 1], NULL, 10);
    }
    if (argc - a != 3) {
        fprintf(stderr, "usage: bench-guide [--steps N] [--seed S] TOKENIZER.json KIND FILE\n");
        return 2;
    }
    tok_tokenizer *tok;
    og_status *st = tok_tokenizer_load(argv[a], &tok);
    if (st) return fail(st, argv[a]);
    size_t n = tok_vocab_size(tok);
    int32_t eos = tok_eos_id(tok);
    uint8_t **bytes = calloc(n, sizeof *bytes);
    uint32_t *lens = calloc(n, sizeof *lens);
    bool *excluded = calloc(n, sizeof *excluded);
    for (size_t i = 0; i < n; i++) {
        uint8_t buf[512];
        size_t len = 0;
        st = tok_token_bytes(tok, (int32_t)i, buf, sizeof buf, &len);
        if (st) return fail(st, "token bytes");
        if (len > sizeof buf) len = 0;
        bytes[i] = malloc(len ? len : 1);
        memcpy(bytes[i], buf, len);
        lens[i] = (uint32_t)len;
        excluded[i] = tok_is_added(tok, (int32_t)i) || (int32_t)i == eos;
    }
    guide_vocab *v;
    st = guide_vocab_new(n, (const uint8_t *const *)bytes, lens, excluded, &v);
    if (st) return fail(st, "vocabulary");
    guide_kind kind;
    st = guide_kind_parse(argv[a + 1], &kind);
    if (st) return fail(st, "kind");
    size_t text_len = 0;
    char *text = read_file(argv[a + 2], &text_len);
    if (!text) {
        fprintf(stderr, "bench-guide: cannot read %s\n", argv[a + 2]);
        return 1;
    }
    double t0 = now_us();
    guide_grammar *g;
    st = guide_grammar_compile(kind, text, text_len, v, &g);
    if (st) return fail(st, "compile");
    double compile_us = now_us() - t0;

    size_t words = guide_mask_words(n);
    uint32_t *mask = malloc(words * sizeof *mask);
    double *times = malloc((size_t)steps * sizeof *times);
    guide_matcher *m = NULL;
    int walks = 0, lens_sum = 0;
    for (int k = 0; k < steps; k++) {
        if (!m) {
            st = guide_matcher_new(g, &eos, eos >= 0 ? 1 : 0, &m);
            if (st) return fail(st, "matcher");
            walks++;
        }
        double t = now_us();
        st = guide_matcher_mask(m, mask);
        times[k] = now_us() - t;
        if (st) return fail(st, "mask");
        size_t count = 0;
        for (size_t i = 0; i < words; i++) count += (size_t)__builtin_popcount(mask[i]);
        seed ^= seed << 13, seed ^= seed >> 7, seed ^= seed << 17;
        size_t pick = count ? seed % count : 0;
        int32_t chosen = -1;
        for (size_t i = 0; i < n && count; i++)
            if (mask[i / 32] >> (i % 32) & 1 && !pick--) {
                chosen = (int32_t)i;
                break;
            }
        if (chosen < 0 || chosen == eos) {
            guide_matcher_free(m);
            m = NULL;
            continue;
        }
        st = guide_matcher_consume(m, chosen);
        if (st) return fail(st, "consume");
        lens_sum++;
    }
    qsort(times, (size_t)steps, sizeof *times, cmp_double);
    printf("compile_us=%.0f vocab=%zu masks=%d walks=%d tokens=%d p50_us=%.1f p99_us=%.1f "
           "max_us=%.1f\n", compile_us, n, steps, walks, lens_sum, times[steps / 2],
           times[(size_t)steps * 99 / 100], times[steps - 1]);
    guide_matcher_free(m);
    guide_grammar_unref(g);
    guide_vocab_free(v);
    for (size_t i = 0; i < n; i++) free(bytes[i]);
    free(bytes);
    free(lens);
    free(excluded);
    free(mask);
    free(times);
    free(text);
    tok_tokenizer_free(tok);
    return 0;
}
