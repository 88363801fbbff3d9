/* MatMulNBits throughput (4-bit weights, block 32, no zero points) at Qwen2.5-0.5B shapes.
 *
 *   bench-matmulnbits                           every shape, M = 1 and 512, levels 0 and 4
 *   bench-matmulnbits M N K LEVEL THREADS [SEC] one case
 *
 * LEVEL 4 and 0 run what a session runs (weights prepacked when it opens, the int8 GEMM of
 * matmul_nbits_pack.c; level 0 through three int8 digits of A); 40 and 10 are levels 4
 * and 0 on the weights as stored (the unprepared paths).
 * Prints one line per case: "M N K level ms GB/s GFLOP/s cpu_ms kernel" with the median
 * call time (cpu_ms: the median process CPU time per call, all threads, which a busy
 * machine inflates less than the wall time); GB/s counts the packed weights and their
 * scales (what a decode step must stream), GFLOP/s counts 2*M*N*K. OG_ISA selects the
 * kernels (base/isa.h). bench/matmulnbits_vs_ort.py runs this and onnxruntime. */
#include "backends/native/kernels/matmul/matmul_nbits.h"
#include "backends/native/kernels/matmul/matmul_nbits_pack.h"

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double clock_s(clockid_t c) {
    struct timespec ts;
    clock_gettime(c, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}
static double now_s(void) { return clock_s(CLOCK_MONOTONIC); }

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static int bench_one(int64_t M, int64_t N, int64_t K, int level, int threads, double seconds) {
    const int bs = 32;
    int64_t kb = (K + bs - 1) / bs, blob = bs / 2;
    uint8_t *B = malloc((size_t)(N * kb * blob));
    float *S = malloc(sizeof(float) * (size_t)(N * kb));
    float *A = malloc(sizeof(float) * (size_t)(M * K));
    float *Y = malloc(sizeof(float) * (size_t)(M * N));
    threadpool *pool = NULL;
    og_status *s = threadpool_create(threads, &pool);
    enum { MAX_RUNS = 10000 };
    double *times = malloc(sizeof(double) * MAX_RUNS), *cpu = malloc(sizeof(double) * MAX_RUNS);
    void *work = NULL;
    mnb_pack *pk = NULL;
    int rc = 1;
    if (s || !B || !S || !A || !Y || !times || !cpu) {
        fprintf(stderr, "bench-matmulnbits: setup failed: %s\n", s ? og_status_message(s) : "out of memory");
        goto done;
    }
    for (int64_t i = 0; i < N * kb * blob; i++) B[i] = (uint8_t)((i * 2654435761u) >> 13);
    for (int64_t i = 0; i < N * kb; i++) S[i] = 0.01f + (float)(i % 17) * 0.001f;
    for (int64_t i = 0; i < M * K; i++) A[i] = (float)((i * 7919) % 1000) / 1000.0f - 0.5f;
    mnb_problem p = {.M = M, .N = N, .K = K, .bits = 4, .block_size = bs, .k_blocks = kb,
                     .blob = blob, .B = B, .scales = S, .int8 = level == 4 || level == 40,
                     .A = A, .Y = Y};
    if ((level == 4 || level == 0) && !s) s = mnb_pack_create(&p, &pk);
    size_t ws = pk ? mnb_pack_work_size(pk, M, threads) : (mnb_work_size(&p) + 63) / 64 * 64 + 64;
    work = aligned_alloc(64, ws);
    if (!work) {
        fprintf(stderr, "bench-matmulnbits: out of memory\n");
        goto done;
    }
    int n = 0;
    double start = now_s();
    for (int warm = 0; warm < 2 && !s; warm++) {
        if (pk) mnb_pack_run(pool, pk, A, M, NULL, NULL, Y, work);
        else s = mnb_run(pool, &p, work);
    }
    while (!s && n < MAX_RUNS && (n < 3 || now_s() - start < seconds)) {
        double t0 = now_s(), c0 = clock_s(CLOCK_PROCESS_CPUTIME_ID);
        if (pk) mnb_pack_run(pool, pk, A, M, NULL, NULL, Y, work);
        else s = mnb_run(pool, &p, work);
        cpu[n] = clock_s(CLOCK_PROCESS_CPUTIME_ID) - c0;
        times[n++] = now_s() - t0;
    }
    if (s) {
        fprintf(stderr, "bench-matmulnbits: %s\n", og_status_message(s));
        goto done;
    }
    qsort(times, (size_t)n, sizeof(double), cmp_double);
    qsort(cpu, (size_t)n, sizeof(double), cmp_double);
    double t = times[n / 2];
    double bytes = (double)(N * kb * blob) + 4.0 * (double)(N * kb);
    printf("%lld %lld %lld %d %.4f %.2f %.2f %.4f %s\n", (long long)M, (long long)N,
           (long long)K, level, t * 1e3, bytes / t * 1e-9,
           2.0 * (double)M * (double)N * (double)K / t * 1e-9, cpu[n / 2] * 1e3,
           pk ? mnb_pack_kernel_name(M) : mnb_isa());
    fflush(stdout);
    rc = 0;
done:
    og_status_free(s);
    threadpool_free(pool);
    free(times);
    free(cpu);
    mnb_pack_free(pk);
    free(work);
    free(B);
    free(S);
    free(A);
    free(Y);
    return rc;
}

int main(int argc, char **argv) {
    if (argc >= 6) {
        int64_t M = atoll(argv[1]), N = atoll(argv[2]), K = atoll(argv[3]);
        int level = atoi(argv[4]), threads = atoi(argv[5]);
        double sec = argc > 6 ? atof(argv[6]) : 1.0;
        if (M < 1 || N < 1 || K < 1 || threads < 1 ||
            (level != 0 && level != 4 && level != 40 && level != 10)) {
            fprintf(stderr, "usage: bench-matmulnbits [M N K LEVEL(0|4|10|40) THREADS [SECONDS]]\n");
            return 2;
        }
        return bench_one(M, N, K, level, threads, sec);
    }
    static const int64_t shapes[][2] = {{896, 4864}, {4864, 896}, {896, 1152}, {896, 151936}};
    printf("# isa %s, 2 threads, bits 4, block 32; M N K level ms GB/s GFLOP/s cpu_ms kernel\n",
           isa_name(isa_active()));
    int rc = 0;
    for (int s = 0; s < 4; s++)
        for (int m = 0; m < 2; m++)
            for (int level = 0; level <= 4; level += 4)
                rc |= bench_one(m ? 512 : 1, shapes[s][1], shapes[s][0], level, 2, 1.0);
    return rc;
}
