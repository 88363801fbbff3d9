/* RMS normalization with onnxruntime's float32 bits (norm_rms_f32.c): the expected
 * outputs below are onnxruntime 1.31.1's (CPU, x86-64 with AVX2+FMA), for inputs this
 * file makes with a small generator that Python reproduces exactly (values k / 512 / 3
 * and rows of an int4 table, (q - 8) * k / 4096 per block of 32). At MatMulNBits
 * accuracy_level 4 these bits decide int8 roundings: the int4 row's values land on
 * halves of the quantization grid, and a norm an ulp away from onnxruntime's moves
 * products by a whole step (issue 20). tests/quant/make_cases.py checks the same
 * against onnxruntime itself, at more lengths, and through MatMulNBits;
 * tests/quant/norm_rms_table.py prints the tables below. */
#include "testing.h"

#include "kernel_harness.h"

#include "backends/native/kernels/norm/norm.h"
#include "base/isa.h"

#include <stdint.h>
#include <string.h>

static uint32_t lcg_next(uint32_t *s) {
    *s = *s * 1664525u + 1013904223u;
    return *s;
}

/* (k / 512) / 3 in float, k in [-2048, 2048) */
static void vals(uint32_t seed, int n, float *x) {
    for (int i = 0; i < n; i++) x[i] = (float)((int)(lcg_next(&seed) >> 20) - 2048) / 512.0f / 3.0f;
}

/* a row of a symmetric int4 table: (q - 8) * s, s = k / 4096 per block of 32 */
static void int4_row(uint32_t seed, int n, float *x) {
    float s = 0.0f;
    for (int i = 0; i < n; i++) {
        if (i % 32 == 0) s = (float)((lcg_next(&seed) >> 24) + 40) / 4096.0f;
        x[i] = (float)((int)(lcg_next(&seed) >> 28) - 8) * s;
    }
}

static const uint32_t want_int4row_h128[] = {
    0x3f974b1bu, 0xbf974b1bu, 0xbf174b1bu, 0xbec9b97au, 0xbfb0824au, 0xbfb0824au,
    0xbf974b1bu, 0x3ec9b97au, 0x3e49b97au, 0x3fb0824au, 0xbfb0824au, 0xbf7c27d8u,
    0xbfc9b97au, 0xbfb0824au, 0x3f974b1bu, 0xbe49b97au, 0x3e49b97au, 0x3f49b97au,
    0x3e49b97au, 0x3fb0824au, 0x3ec9b97au, 0xbe49b97au, 0x00000000u, 0xbf974b1bu,
    0xbf7c27d8u, 0x3f49b97au, 0xbec9b97au, 0xbfc9b97au, 0xbf7c27d8u, 0x3f974b1bu,
    0x3f7c27d8u, 0x3f174b1bu, 0xbfa917b5u, 0xbf8ce917u, 0xbfe174f1u, 0x3fc54653u,
    0xbfa917b5u, 0xbf8ce917u, 0xbee174f1u, 0xbfc54653u, 0x3ee174f1u, 0x3f8ce917u,
    0x3fc54653u, 0xbfa917b5u, 0xbf8ce917u, 0x3f6174f1u, 0x3ee174f1u, 0x3fa917b5u,
    0x3e6174f1u, 0x3ee174f1u, 0x3f6174f1u, 0x00000000u, 0xbf6174f1u, 0xbfe174f1u,
    0x3f6174f1u, 0x3ee174f1u, 0x00000000u, 0xbfc54653u, 0x3f6174f1u, 0x3fa917b5u,
    0xbfa917b5u, 0xbf6174f1u, 0xbf2917b5u, 0xbfc54653u, 0x3fc54653u, 0xbfc54653u,
    0xbfa46545u, 0x3fc54653u, 0xbfc54653u, 0x3f038437u, 0xbf838437u, 0xbfa46545u,
    0xbfe62761u, 0xbf454653u, 0x3f038437u, 0xc0038437u, 0x3fa46545u, 0x3e838437u,
    0x3fc54653u, 0x3f038437u, 0x3f454653u, 0xc0038437u, 0x3e838437u, 0x3fa46545u,
    0x3fa46545u, 0xbfe62761u, 0x3f838437u, 0x3f038437u, 0x3f454653u, 0x3f038437u,
    0x3fe62761u, 0x3f838437u, 0xbfe62761u, 0x3fa46545u, 0x3f454653u, 0x3fa46545u,
    0xbef24466u, 0xbf299647u, 0x3f299647u, 0xbe915c3du, 0xbe41d052u, 0x00000000u,
    0x3ec1d052u, 0xbe41d052u, 0xbf41d052u, 0x3ec1d052u, 0x3e41d052u, 0x00000000u,
    0x00000000u, 0x3ec1d052u, 0xbec1d052u, 0x3f115c3du, 0x3ec1d052u, 0x00000000u,
    0xbf299647u, 0xbe41d052u, 0x3e915c3du, 0xbf41d052u, 0x3e915c3du, 0xbec1d052u,
    0xbf115c3du, 0xbef24466u, 0x3e41d052u, 0xbf115c3du, 0x3dc1d052u, 0xbdc1d052u,
    0x3dc1d052u, 0xbe41d052u,
};

static const uint32_t want_h21[] = {
    0xbf6d63b2u, 0x3e4d2fb1u, 0x3facc959u, 0x3f872266u, 0xbec00e6au, 0x3fba02f4u,
    0x3f1017c4u, 0xbeb5b47fu, 0xc0011cf9u, 0x3f77a428u, 0xbfa8ac3cu, 0x3f83ae98u,
    0x3e1cf8b7u, 0x3f85d3efu, 0x3f3c8112u, 0x3fcaeadfu, 0xbfa1827bu, 0xbf1ce057u,
    0xbf3d29ecu, 0xbf5cf871u, 0x3ecc374au,
};

static const uint32_t want_h23[] = {
    0xbf522a33u, 0x3f5d17a4u, 0xbf6e8135u, 0x3f9b875bu, 0x3f32c1eeu, 0xbed426a4u,
    0xbb8bf050u, 0xbf867aa3u, 0xbfddb068u, 0x3fa5ca90u, 0xbfb85e8au, 0xbf997eadu,
    0xbbc1b3fbu, 0x3f0a4b71u, 0xbfb0c173u, 0x3f93377eu, 0xbdca1d44u, 0xbedd69d0u,
    0x3fafe9bfu, 0xbfc62ed9u, 0x3fb3713bu, 0xbf02bacbu, 0x3f6db543u,
};

static const uint32_t want_h19[] = {
    0xbf5d8a01u, 0x3fa6e68du, 0x3fbcf18eu, 0x3fb7b3e7u, 0xbeb4b0c0u, 0xbfc9ec72u,
    0x3fa5ffbau, 0xbfb40f02u, 0x3e56a6c2u, 0x3fce0343u, 0x3d9d7d7cu, 0x3f954b11u,
    0xbda3295fu, 0x3ebfb555u, 0xbecb9fffu, 0xbf44c469u, 0x3f04acfcu, 0xbecac086u,
    0xbf7aca68u,
};

static const uint32_t want_h16[] = {
    0xbf4fd8b5u, 0xbfb6fd40u, 0xbf3e1278u, 0x3fd27d19u, 0x3f30e737u, 0x3eaa369bu,
    0x3f8e1f89u, 0x3fcf794fu, 0x3e82dd1du, 0xbfd817d6u, 0xbe8b02acu, 0xbf823eb2u,
    0xbe55c330u, 0xbae405a3u, 0x3f973e29u, 0xbf76a8fbu,
};

static const uint32_t want_h7[] = {
    0xbf856df2u, 0x3f8c5dfcu, 0xbf976c01u, 0x3fc57bf4u, 0x3f62faadu, 0xbf06b0bfu,
    0xbbb1b049u,
};

static const uint32_t want_skip_h21[] = {
    0xbf86dbe9u, 0xbf956a46u, 0x3e3fa696u, 0xbe28ca7du, 0xbfb13445u, 0xbfc0e214u,
    0x3eeae13fu, 0x3fd003e9u, 0xbe64a052u, 0x3fcf19ecu, 0x3e5956e3u, 0xbe33f381u,
    0xbfbe57a9u, 0x3fdbb527u, 0xbeb2c742u, 0x3e16565cu, 0x3ac4b1eau, 0x3f2822b1u,
    0x3fa0557du, 0xbf8d61e4u, 0xbf030dd6u,
};

/* Runs the kernel on one row [1, n] (skip: SkipSimplifiedLayerNormalization with that
 * skip) and counts the elements whose bits differ from want. */
static int run_row(const float *x, const float *g, const float *skip, int n,
                   const uint32_t *want, bool *ok) {
    int64_t xd[2] = {1, n}, gd[1] = {n};
    tensor tx = kh_tensor(OG_FLOAT32, 2, xd, (void *)x), tg = kh_tensor(OG_FLOAT32, 1, gd, (void *)g);
    tensor ts = kh_tensor(OG_FLOAT32, 2, xd, (void *)skip);
    graph_attr eps = {.name = "epsilon", .type = ATTR_FLOAT, .f = 1e-5f};
    kh_run r;
    og_status *st;
    if (skip) {
        const tensor *in[3] = {&tx, &ts, &tg};
        st = kh_call(&r, cpu_contrib_skip_simplified_layer_norm, 1, &eps, 1, in, 3, 1);
    } else {
        const tensor *in[2] = {&tx, &tg};
        st = kh_call(&r, cpu_simplified_layer_norm, 1, &eps, 1, in, 2, 1);
    }
    *ok = st == NULL;
    if (st) {
        og_status_free(st);
        return n;
    }
    const uint32_t *y = r.out[0].data;
    int bad = 0;
    for (int i = 0; i < n; i++) bad += y[i] != want[i];
    kh_free(&r);
    return bad;
}

TEST(norm_rms_f32_has_onnxruntime_bits) {
    float x[128], g[128], s[128];
    bool ok;
    /* a normalized int4 embedding row, scale 1: the first norm of an LFM2 builder package */
    int4_row(18, 128, x);
    for (int i = 0; i < 128; i++) g[i] = 1.0f;
    CHECK_EQ_INT(run_row(x, g, NULL, 128, want_int4row_h128, &ok), 0);
    CHECK(ok);
    /* tails of 5, 7, 3 and 0 after the eight lanes; under 16: the division */
    static const struct { int n; uint32_t seed; const uint32_t *want; } rows[] = {
        {21, 3, want_h21}, {23, 5, want_h23}, {19, 6, want_h19}, {16, 8, want_h16}, {7, 5, want_h7}};
    for (size_t c = 0; c < sizeof rows / sizeof rows[0]; c++) {
        int n = rows[c].n;
        vals(rows[c].seed, n, x);
        vals(rows[c].seed + 100, n, g);
        for (int i = 0; i < n; i++) g[i] = 1.0f + g[i] / 8.0f;
        int bad = run_row(x, g, NULL, n, rows[c].want, &ok);
        if (bad) test_fail(__FILE__, __LINE__, "h=%d: %d of %d elements differ from onnxruntime", n, bad, n);
        CHECK(ok);
    }
    vals(21, 21, x);
    vals(22, 21, s);
    vals(23, 21, g);
    for (int i = 0; i < 21; i++) g[i] = 1.0f + g[i] / 8.0f;
    CHECK_EQ_INT(run_row(x, g, s, 21, want_skip_h21, &ok), 0);
    CHECK(ok);
}

/* The tail rule of the lane sum, on values whose squares are not exact in float: the
 * first four of a tail of four or more are rounded squares added in order, the rest
 * fused; under four, all fused. */
TEST(norm_rms_f32_lane_sum_tail) {
    float x[23];
    vals(5, 23, x);
    float l[8] = {0};
    for (int i = 0; i < 16; i++) l[i % 8] = fmaf(x[i], x[i], l[i % 8]);
    volatile float p;
    float s = ((l[0] + l[4]) + (l[2] + l[6])) + ((l[1] + l[5]) + (l[3] + l[7]));
    float s16 = s;
    for (int i = 16; i < 20; i++) {
        p = x[i] * x[i];
        s = s + p;
    }
    for (int i = 20; i < 23; i++) s = fmaf(x[i], x[i], s);
    CHECK(cpu_rms_f32_sumsq_lanes(x, 23) == s);
    CHECK(cpu_rms_f32_sumsq_lanes(x, 16) == s16);
    float t = s16;
    for (int i = 16; i < 19; i++) t = fmaf(x[i], x[i], t);
    CHECK(cpu_rms_f32_sumsq_lanes(x, 19) == t);
}

/* The sums of several rows at once equal each row's alone, on every ISA level the CPU
 * has (the AVX2 sums against the portable ones). */
TEST(norm_rms_f32_rows_at_once_equal_row_by_row) {
    float x[8 * 45], sums[8], want[8];
    vals(77, 8 * 45, x);
    isa_level top = isa_supported();
    for (int isa = ISA_GENERIC; isa <= (int)top; isa++) {
        isa_level was = isa_set((isa_level)isa);
        for (int64_t n = 1; n <= 43; n += 3)
            for (int rows = 1; rows <= 8; rows++) {
                cpu_rms_f32_sumsq_ordered_rows(x, 45, rows, n, sums);
                isa_set(ISA_GENERIC);
                for (int r = 0; r < rows; r++) want[r] = cpu_rms_f32_sumsq_ordered(x + r * 45, n);
                isa_set((isa_level)isa);
                for (int r = 0; r < rows; r++)
                    if (sums[r] != want[r])
                        test_fail(__FILE__, __LINE__, "%s ordered n=%lld rows=%d row %d",
                                  isa_name((isa_level)isa), (long long)n, rows, r);
                cpu_rms_f32_sumsq_lanes_rows(x, 45, rows, n, sums);
                isa_set(ISA_GENERIC);
                for (int r = 0; r < rows; r++) want[r] = cpu_rms_f32_sumsq_lanes(x + r * 45, n);
                isa_set((isa_level)isa);
                for (int r = 0; r < rows; r++)
                    if (sums[r] != want[r])
                        test_fail(__FILE__, __LINE__, "%s lanes n=%lld rows=%d row %d",
                                  isa_name((isa_level)isa), (long long)n, rows, r);
            }
        isa_set(was);
    }
}
