/* What AMX tile instructions cost on this CPU, in the shapes the packed MatMulNBits
 * kernel (src/backends/native/kernels/matmul/matmul_nbits_pack_amx.c) issues per block of
 * K = 32: the figures behind its layout (docs/PERFORMANCE.md, "MatMulNBits on AMX
 * tiles"). One thread, data in L1, ns per instruction or per 32 x 32 x 32 block:
 *
 *   bench-amx-tiles [ITERATIONS]
 *
 * Prints "skipped" and exits 0 where the CPU or the kernel gives no AMX. */
#include "base/isa.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#if defined(__x86_64__) && !defined(OG_NO_AMX)
#include <immintrin.h>

#define AMX_FN __attribute__((target("amx-tile,amx-int8,avx512f,avx512bw,avx512vl,avx512dq")))

typedef struct tile_config {
    uint8_t palette_id, start_row, reserved[14];
    uint16_t colsb[16];
    uint8_t rows[16];
} tile_config;

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static int32_t dots[2][4][16][16] __attribute__((aligned(64)));
static float acc[64][16] __attribute__((aligned(64)));
static float scale_a[64], scale_b[2][16] __attribute__((aligned(64)));
static int8_t tile_a[2][16 * 64] __attribute__((aligned(64)));
static int8_t tile_b[16 * 128] __attribute__((aligned(64)));

/* ks: bytes of K per A row (32: one builder block; 64: the tile's full width). */
AMX_FN static void configure(int ks) {
    tile_config c __attribute__((aligned(64)));
    memset(&c, 0, sizeof c);
    c.palette_id = 1;
    for (int t = 0; t < 8; t++) c.rows[t] = 16, c.colsb[t] = 64;
    c.colsb[0] = c.colsb[1] = (uint16_t)ks;
    c.rows[2] = c.rows[3] = (uint8_t)(ks / 4);
    /* gcc's _tile_loadconfig tells the compiler it reads 8 bytes: keep the rest */
    __asm__ volatile("" : : "r"(&c) : "memory");
    _tile_loadconfig(&c);
}

/* The kernel's per-block scaling of 2 strips x 2 panels (64 rows of 16 outputs). */
AMX_FN static void scale_block(int buf) {
    const __m512 b0 = _mm512_load_ps(scale_b[0]), b1 = _mm512_load_ps(scale_b[1]);
    for (int t = 0; t < 4; t++)
        for (int r = 0; r < 16; r++) {
            __m512 x = _mm512_cvtepi32_ps(_mm512_load_si512(dots[buf][t][r]));
            __m512 s = _mm512_mul_ps(_mm512_set1_ps(scale_a[16 * t + r]), t & 1 ? b1 : b0);
            float *a = acc[16 * t + r];
            _mm512_store_ps(a, _mm512_fmadd_ps(x, s, _mm512_load_ps(a)));
        }
}

/* The kernel's tile instructions for one block of two strips x two panels, the dots into
 * buffer o. */
AMX_FN static inline void tiles_block(int o) {
    _tile_loadd(0, tile_a[0], 64); _tile_loadd(1, tile_a[1], 64);
    _tile_loadd(2, tile_b, 128); _tile_loadd(3, tile_b + 64, 128);
    _tile_zero(4); _tile_zero(5); _tile_zero(6); _tile_zero(7);
    _tile_dpbssd(4, 0, 2); _tile_dpbssd(5, 0, 3);
    _tile_dpbssd(6, 1, 2); _tile_dpbssd(7, 1, 3);
    _tile_stored(4, dots[o][0], 64); _tile_stored(5, dots[o][1], 64);
    _tile_stored(6, dots[o][2], 64); _tile_stored(7, dots[o][3], 64);
}

AMX_FN static void run(long n) {
    double t0;
    configure(32);
    _tile_zero(4); _tile_zero(5); _tile_zero(6); _tile_zero(7);
    t0 = now_s();
    for (long i = 0; i < n; i++) {
        _tile_loadd(0, tile_a[0], 64); _tile_loadd(1, tile_a[1], 64);
        _tile_loadd(2, tile_b, 128); _tile_loadd(3, tile_b + 64, 128);
    }
    printf("TILELOADD (16 x 32 B or 8 x 64 B)     %6.2f ns\n", (now_s() - t0) / (4.0 * n) * 1e9);
    t0 = now_s();
    for (long i = 0; i < n; i++) {
        _tile_stored(4, dots[0][0], 64); _tile_stored(5, dots[0][1], 64);
        _tile_stored(6, dots[0][2], 64); _tile_stored(7, dots[0][3], 64);
    }
    printf("TILESTORED (16 x 64 B)                %6.2f ns\n", (now_s() - t0) / (4.0 * n) * 1e9);
    for (int ks = 32; ks <= 64; ks += 32) {
        configure(ks);
        _tile_loadd(0, tile_a[0], 64); _tile_loadd(1, tile_a[1], 64);
        _tile_loadd(2, tile_b, 128); _tile_loadd(3, tile_b + 64, 128);
        t0 = now_s();
        for (long i = 0; i < n; i++) {
            _tile_dpbssd(4, 0, 2); _tile_dpbssd(5, 0, 3);
            _tile_dpbssd(6, 1, 2); _tile_dpbssd(7, 1, 3);
        }
        printf("TDPBSSD 16 x 16 x %d (4 chains)       %6.2f ns\n", ks,
               (now_s() - t0) / (4.0 * n) * 1e9);
    }
    configure(32);
    t0 = now_s();
    for (long i = 0; i < n; i++) scale_block((int)(i & 1));
    double scale_ns = (now_s() - t0) / (double)n * 1e9;
    printf("scaling of one 32 x 32 block (vector)  %6.2f ns\n", scale_ns);
    t0 = now_s();
    for (long i = 0; i < n; i++) tiles_block((int)(i & 1));
    double tiles_ns = (now_s() - t0) / (double)n * 1e9;
    printf("tiles of one 32 x 32 x 32 block         %6.2f ns\n", tiles_ns);
    t0 = now_s();
    for (long i = 0; i < n; i++) {
        tiles_block((int)(i & 1));
        scale_block((int)(i & 1) ^ 1);
    }
    double both_ns = (now_s() - t0) / (double)n * 1e9;
    printf("tiles + the previous block's scaling    %6.2f ns (%.0f %% of the sum: 100 %% is no overlap)\n",
           both_ns, 100.0 * both_ns / (tiles_ns + scale_ns));
    printf("  = %.0f int8 products per ns\n",
           32.0 * 32 * 32 / both_ns);
    _tile_release();
}
#endif

int main(int argc, char **argv) {
    long n = argc > 1 ? atol(argv[1]) : 2000000;
#if defined(__x86_64__) && !defined(OG_NO_AMX)
    if (isa_supported() >= ISA_AMX) {
        for (int i = 0; i < 64; i++) scale_a[i] = 1e-3f * (float)i;
        run(n);
        float s = 0;
        for (int i = 0; i < 64; i++) s += acc[i][0];
        printf("(checksum %g)\n", s);
        return 0;
    }
#endif
    (void)n;
    printf("skipped: this CPU or kernel gives no AMX tiles\n");
    return 0;
}
