/* The greedy choice over one logits row at each instruction-set level this CPU has
 * (docs/PERFORMANCE.md): microseconds per row, median of 5 rounds of R rows each.
 *
 *   build/bench/bench-argmax [VOCAB=151936] [ROWS=2000]
 *
 * The row is random in [0, 1) with its maximum at 3/4 of its length; it stays in cache
 * between rows, as a row just written by the lm_head does. */
#include "base/isa.h"
#include "genai/search.h"

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv) {
    int n = argc > 1 ? atoi(argv[1]) : 151936, rows = argc > 2 ? atoi(argv[2]) : 2000;
    if (n < 1 || rows < 1) {
        fprintf(stderr, "usage: bench-argmax [VOCAB >= 1] [ROWS >= 1]\n");
        return 2;
    }
    float *x = malloc(sizeof(float) * (size_t)n);
    if (!x) {
        fprintf(stderr, "bench-argmax: out of memory for %d floats\n", n);
        return 1;
    }
    srand(1);
    for (int i = 0; i < n; i++) x[i] = (float)rand() / ((float)RAND_MAX + 1.0f);
    x[n / 4 * 3] = 2.0f;
    printf("vocab %d, %d rows per round, median of 5 rounds\n", n, rows);
    isa_level saved = isa_active();
    for (int level = ISA_GENERIC; level <= (int)isa_supported() && level <= ISA_AVX512;
         level++) {
        isa_set((isa_level)level);
        double t[5];
        long sum = 0;
        for (int r = 0; r < 5; r++) {
            double t0 = now();
            for (int k = 0; k < rows; k++) sum += gen_argmax(x, n);
            t[r] = (now() - t0) / rows;
        }
        qsort(t, 5, sizeof *t, cmp_double);
        printf("%-8s %9.2f us per row  %6.1f GB/s  (index %ld)\n", isa_name((isa_level)level),
               t[2] * 1e6, (double)n * 4 / t[2] / 1e9, sum / (5L * rows));
    }
    isa_set(saved);
    free(x);
    return 0;
}
