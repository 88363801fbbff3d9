/* The generation budget's time estimate (src/genai/budget.c) against the measured time of
 * beam searches, one row per (num_beams, max_length): what GEN_RATE_* are calibrated by.
 *
 *   build/bench/bench-beam-budget DIR [THREADS=1] [BEAMS=4,16,64,256] [LENGTHS=64,256,512]
 *
 * Each search runs its full length (min_length = max_length: the estimate is for every
 * step) from a 4-token prompt; the time is og_generator_create to the last token (wall
 * clock, and the process's CPU seconds: on a shared machine the steadier of the two). Rows
 * the budget refuses are printed with the refusal's estimate and not run. */
#include "genai/budget.h"
#include "genai/generator.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* CPU seconds of this process (all its threads) so far. */
static double cpu_seconds(void) {
    struct rusage u;
    getrusage(RUSAGE_SELF, &u);
    return (double)u.ru_utime.tv_sec + (double)u.ru_stime.tv_sec +
           ((double)u.ru_utime.tv_usec + (double)u.ru_stime.tv_usec) * 1e-6;
}

static int parse_list(const char *s, int *out, int cap) {
    int n = 0;
    while (*s && n < cap) {
        char *end;
        long v = strtol(s, &end, 10);
        if (end == s || v < 1) return -1;
        out[n++] = (int)v;
        s = *end == ',' ? end + 1 : end;
    }
    return n;
}

static og_status *run(og_model *m, og_generator_params p, double *seconds, double *cpu) {
    static const int32_t prompt[4] = {1, 403, 407, 261};
    double t0 = now(), c0 = cpu_seconds();
    og_generator *g = NULL;
    og_status *st = og_generator_create(m, &p, &g);
    if (!st) st = og_generator_append_tokens(g, prompt, 4);
    while (!st && !og_generator_is_done(g)) st = og_generator_generate_next_token(g);
    *seconds = now() - t0;
    *cpu = cpu_seconds() - c0;
    og_generator_destroy(g);
    return st;
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: bench-beam-budget DIR [THREADS] [BEAMS,...] [LENGTHS,...]\n");
        return 2;
    }
    int beams[16], lens[16];
    int nb = parse_list(argc > 3 ? argv[3] : "4,16,64,256", beams, 16);
    int nl = parse_list(argc > 4 ? argv[4] : "64,256,512", lens, 16);
    if (nb < 1 || nl < 1) {
        fprintf(stderr, "bench-beam-budget: lists are positive integers separated by commas\n");
        return 2;
    }
    og_model_options mo = og_model_options_default();
    mo.num_threads = argc > 2 ? atoi(argv[2]) : 1;
    og_model *m;
    og_status *st = og_model_open(argv[1], &mo, &m);
    if (st) {
        fprintf(stderr, "bench-beam-budget: %s\n", og_status_message(st));
        return 1;
    }
    printf("%6s %6s %9s %9s %9s %10s %7s %9s  %s\n", "beams", "length", "model_s", "search_s",
           "est_s", "measured_s", "ratio", "cpu_s", "(search Gops, copy GB, model Gflop, attention Gflop)");
    for (int i = 0; i < nb; i++)
        for (int j = 0; j < nl; j++) {
            og_generator_params p = og_generator_params_default(m);
            p.num_beams = beams[i];
            p.max_length = p.min_length = lens[j];
            p.num_return_sequences = 1;
            gen_budget b;
            gen_budget_estimate(m, &p, gen_shares_kv(m, &p), &b);
            double est = b.model_s + b.search_s, t = 0, cpu = 0;
            og_status *rs = run(m, p, &t, &cpu);
            printf("%6d %6d %9.3f %9.3f %9.3f ", beams[i], lens[j], b.model_s, b.search_s, est);
            if (rs) printf("%10s %7s %9s  refused: %.60s...\n", "-", "-", "-", og_status_message(rs));
            else
                printf("%10.3f %7.2f %9.3f  (%.3g, %.3g, %.3g, %.3g)\n", t, est / t, cpu, b.search_ops / 1e9,
                       (b.copy_bytes + b.model_copy_bytes) / 1e9, b.model_flops / 1e9,
                       b.attn_flops / 1e9);
            og_status_free(rs);
            fflush(stdout);
        }
    og_model_close(m);
    return 0;
}
