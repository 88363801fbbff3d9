/* fp32 matmul throughput of the CPU backend's gemm core.
 *
 *   bench-matmul                      all standard shapes, 1 and 2 threads
 *   bench-matmul M N K THREADS [SEC]  one shape; prints "gflops G gbps B" (median call)
 *
 * C[M,N] = A[M,K] . B[K,N], row-major, no transposes, working memory allocated once
 * (as the executor's scratch would be). GB/s counts B's bytes only: the M=1 case is
 * bounded by streaming the weight matrix. */
#include "backends/native/kernels/matmul/gemm_f32.h"

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Median seconds per call over about `seconds` of calls (at least 5). */
static int bench_one(int64_t M, int64_t N, int64_t K, int threads, double seconds,
                     double *median) {
    float *A = malloc(sizeof(float) * (size_t)(M * K));
    float *B = malloc(sizeof(float) * (size_t)(K * N));
    float *C = malloc(sizeof(float) * (size_t)(M * N));
    threadpool *pool = NULL;
    og_status *s = threadpool_create(threads, &pool);
    gemm_f32_args g = {false, false, M, N, K, 1.0f, 0.0f, A, K, B, N, C, N};
    size_t wsize = (gemm_f32_work_size(&g) + 63) / 64 * 64;
    void *work = wsize ? aligned_alloc(64, wsize) : NULL;
    enum { MAX_RUNS = 100000 };
    double *times = malloc(sizeof(double) * MAX_RUNS);
    int rc = 1;
    if (s || !A || !B || !C || !times || (wsize && !work)) {
        fprintf(stderr, "bench-matmul: setup failed: %s\n", s ? og_status_message(s) : "out of memory");
        goto done;
    }
    for (int64_t i = 0; i < M * K; i++) A[i] = (float)((i * 7919) % 1000) / 1000.0f - 0.5f;
    for (int64_t i = 0; i < K * N; i++) B[i] = (float)((i * 104729) % 1000) / 1000.0f - 0.5f;
    int n = 0;
    double start = now_s();
    for (int warm = 0; warm < 2; warm++) s = s ? s : gemm_f32(pool, &g, work);
    while (!s && n < MAX_RUNS && (n < 5 || now_s() - start < seconds)) {
        double t0 = now_s();
        s = gemm_f32(pool, &g, work);
        times[n++] = now_s() - t0;
    }
    if (s) {
        fprintf(stderr, "bench-matmul: %s\n", og_status_message(s));
        goto done;
    }
    qsort(times, (size_t)n, sizeof(double), cmp_double);
    *median = times[n / 2];
    rc = 0;
done:
    og_status_free(s);
    threadpool_free(pool);
    free(times);
    free(work);
    free(A);
    free(B);
    free(C);
    return rc;
}

int main(int argc, char **argv) {
    if (argc >= 5) {
        int64_t M = atoll(argv[1]), N = atoll(argv[2]), K = atoll(argv[3]);
        int threads = atoi(argv[4]);
        double sec = argc > 5 ? atof(argv[5]) : 0.5, t;
        if (M < 1 || N < 1 || K < 1 || threads < 1) {
            fprintf(stderr, "usage: bench-matmul [M N K THREADS [SECONDS]]\n");
            return 2;
        }
        if (bench_one(M, N, K, threads, sec, &t)) return 1;
        printf("gflops %.3f gbps %.3f\n", 2.0 * (double)(M * N * K) / t * 1e-9,
               4.0 * (double)(K * N) / t * 1e-9);
        return 0;
    }
    static const int64_t shapes[][3] = {{1, 896, 896}, {1, 4864, 896}, {512, 896, 896},
                                        {512, 4864, 896}};
    printf("isa %s\n%6s %6s %6s %7s %10s %8s\n", gemm_f32_isa(), "M", "N", "K", "threads",
           "GFLOP/s", "GB/s(B)");
    for (int th = 1; th <= 2; th++)
        for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
            double t;
            int64_t M = shapes[i][0], N = shapes[i][1], K = shapes[i][2];
            if (bench_one(M, N, K, th, 0.5, &t)) return 1;
            printf("%6lld %6lld %6lld %7d %10.2f %8.2f\n", (long long)M, (long long)N,
                   (long long)K, th, 2.0 * (double)(M * N * K) / t * 1e-9,
                   4.0 * (double)(K * N) / t * 1e-9);
        }
    return 0;
}
