/* Token-mask time of the constraint engine (src/guide).
 *
 *   bench-guide [--steps N] [--seed S] [--examples TEXTS] [--compile-reps R]
 *               TOKENIZER.json KIND FILE
 *
 * builds the guidance vocabulary of the tokenizer as a model's (special tokens excluded,
 * EOS as the stop id, forced bytes encoded by the tokenizer), compiles FILE as guidance of KIND
 * (json_schema, json_object, regex, lark_grammar), then times one mask per step:
 * - without --examples, along random walks (a random allowed token each step; the stop
 *   id ends a walk and a new one starts), N steps;
 * - with --examples, along the tokenizer's encoding of each line of TEXTS (documents of
 *   the language), all lines again and again until N steps: what a model writing such
 *   documents costs. The first pass over them (lexer and mask caches cold) is reported
 *   apart.
 * Prints compile time (wall; with --compile-reps R the median of R compiles, each from
 * the text, and the fastest) and mask time (thread CPU) p50 / p99 / max. */
#include "base/pkg_file.h"
#include "genai/guidance.h"
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

/* Masks are timed in this thread's CPU time: on a shared machine a wall clock adds the
 * scheduler's preemptions (whole 4 ms ticks) to a few masks, which is not their cost. */
static double cpu_us(void) {
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

/* Largest guidance or examples file read. */
#define MAX_FILE ((size_t)64 << 20)

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static void report(const char *what, double *t, int n) {
    if (!n) return;
    qsort(t, (size_t)n, sizeof *t, cmp_double);
    printf("%s masks=%d p50_us=%.1f p99_us=%.1f max_us=%.1f\n", what, n, t[n / 2],
           t[(size_t)n * 99 / 100], t[n - 1]);
}

static int fail(og_status *st, const char *what) {
    fprintf(stderr, "bench-guide: %s: %s\n", what, og_status_message(st));
    og_status_free(st);
    return 1;
}

int main(int argc, char **argv) {
    int steps = 2000;
    uint64_t seed = 1;
    const char *examples = NULL;
    int compile_reps = 1;
    int a = 1;
    for (; a + 1 < argc && !strncmp(argv[a], "--", 2); a += 2) {
        if (!strcmp(argv[a], "--steps")) steps = atoi(argv[a + 1]);
        else if (!strcmp(argv[a], "--seed")) seed = strtoull(argv[a + 1], NULL, 10);
        else if (!strcmp(argv[a], "--examples")) examples = argv[a + 1];
        else if (!strcmp(argv[a], "--compile-reps")) compile_reps = atoi(argv[a + 1]);
    }
    if (argc - a != 3 || steps < 1 || compile_reps < 1) {
        fprintf(stderr, "usage: bench-guide [--steps N] [--seed S] [--examples TEXTS] "
                        "[--compile-reps R] TOKENIZER.json KIND FILE\n");
        return 2;
    }
    tok_tokenizer *tok;
    og_status *st = tok_tokenizer_load(argv[a], &tok);
    if (st) return fail(st, argv[a]);
    /* the vocabulary exactly as a model's (genai/guidance.h), EOS as the stop id */
    int32_t eos = tok_eos_id(tok);
    gen_token_table table;
    st = gen_token_table_build(tok, tok_vocab_size(tok), &eos, eos >= 0, &table);
    if (st) return fail(st, "token bytes");
    guide_vocab *v;
    st = guide_vocab_new(table.n, table.bytes, table.lens, table.excluded, &v);
    if (st) return fail(st, "vocabulary");
    guide_vocab_set_tokenize(v, gen_guidance_encode, tok);
    guide_kind kind;
    st = guide_kind_parse(argv[a + 1], &kind);
    if (st) return fail(st, "kind");
    size_t text_len = 0;
    char *text = NULL;
    st = pkg_read_file(argv[a + 2], MAX_FILE, &text, &text_len);
    if (st) return fail(st, "guidance");
    /* each compile from the text: nothing of an earlier one is kept (no grammar cache
     * below genai's) */
    guide_grammar *g = NULL;
    double *ctimes = malloc((size_t)compile_reps * sizeof *ctimes);
    if (!ctimes) return fail(og_oom(), "compile");
    for (int r = 0; r < compile_reps; r++) {
        guide_grammar_unref(g);
        double t0 = now_us();
        st = guide_grammar_compile(kind, text, text_len, v, &g);
        if (st) return fail(st, "compile");
        ctimes[r] = now_us() - t0;
    }
    qsort(ctimes, (size_t)compile_reps, sizeof *ctimes, cmp_double);
    double compile_us = ctimes[compile_reps / 2], compile_min_us = ctimes[0];
    free(ctimes);

    size_t words = guide_mask_words(table.n);
    uint32_t *mask = malloc(words * sizeof *mask);
    double *times = malloc((size_t)steps * sizeof *times);
    guide_matcher *m = NULL;
    int walks = 0, done = 0, cold = 0;
    printf("compile_us=%.0f compile_min_us=%.0f compile_reps=%d vocab=%zu\n", compile_us,
           compile_min_us, compile_reps, table.n);
    if (examples) {
        /* Each line's encoding, walked mask by mask, all lines over and over. */
        size_t elen;
        char *etext = NULL;
        st = pkg_read_file(examples, MAX_FILE, &etext, &elen);
        if (st) return fail(st, "examples");
        for (int pass = 0; done < steps; pass++) {
            int before = done;
            for (char *line = etext, *nl; *line && done < steps; line = nl + (*nl != 0)) {
                nl = strchr(line, '\n');
                if (!nl) nl = line + strlen(line);
                int32_t *ids = NULL;
                size_t n_ids = 0;
                if (nl == line) continue;
                st = tok_encode(tok, line, (size_t)(nl - line), false, &ids, &n_ids);
                if (st) return fail(st, "encode");
                st = guide_matcher_new(g, &eos, eos >= 0 ? 1 : 0, &m);
                if (st) return fail(st, "matcher");
                walks++;
                for (size_t k = 0; k <= n_ids && done < steps; k++) {
                    double t = cpu_us();
                    st = guide_matcher_mask(m, mask);
                    times[done++] = cpu_us() - t;
                    if (st) return fail(st, "mask");
                    if (k == n_ids) break;
                    /* Where bytes are forced the mask holds the encoding of those bytes
                     * alone, which may split the text differently: the language still
                     * takes the text's own tokens. */
                    st = guide_matcher_consume(m, ids[k]);
                    if (st) { /* a text outside the language: the rest of it is skipped */
                        if (!pass) fprintf(stderr, "bench-guide: %s\n", og_status_message(st));
                        og_status_free(st);
                        break;
                    }
                }
                free(ids);
                guide_matcher_free(m);
                m = NULL;
            }
            if (!pass) cold = done;
            if (done == before) break;
        }
        free(etext);
        printf("examples walks=%d\n", walks);
        report("cold (first pass)", times, cold);
        report("warm", times + cold, done - cold);
    } else {
        int tokens = 0;
        for (; done < steps; done++) {
            if (!m) {
                st = guide_matcher_new(g, &eos, eos >= 0 ? 1 : 0, &m);
                if (st) return fail(st, "matcher");
                walks++;
            }
            double t = cpu_us();
            st = guide_matcher_mask(m, mask);
            times[done] = cpu_us() - t;
            if (st) return fail(st, "mask");
            size_t count = 0;
            for (size_t i = 0; i < words; i++) count += (size_t)__builtin_popcount(mask[i]);
            seed ^= seed << 13, seed ^= seed >> 7, seed ^= seed << 17;
            size_t pick = count ? seed % count : 0;
            int32_t chosen = -1;
            for (size_t i = 0; i < table.n && count; i++)
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
            tokens++;
        }
        printf("random walks=%d tokens=%d\n", walks, tokens);
        report("all", times, done);
    }
    guide_matcher_free(m);
    guide_grammar_unref(g);
    guide_vocab_free(v);
    gen_token_table_free(&table);
    free(mask);
    free(times);
    free(text);
    tok_tokenizer_free(tok);
    return 0;
}
