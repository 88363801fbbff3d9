/* Quantized key/value caches (kernels/attention/kv_rows.h) and GroupQueryAttention over
 * them, at every instruction-set level this CPU has (isa_set):
 *   - int8 rows: every code is x * (127 / amax) rounded to nearest even, so a value is
 *     within half a scale step of x, and the largest one within an ulp of amax;
 *   - float8e4m3fn rows: every code is the e4m3fn value nearest x * (448 / amax) (ties
 *     to the even mantissa), found by searching all 256 codes decoded from the format's
 *     definition in double;
 *   - loads give code * scale rounded once, the same bits on every level;
 *   - attention over an int8, float8, float16 or bfloat16 cache of a float32 model against
 *     a double-precision softmax attention over the values the cache holds (decoded here
 *     independently), |out - ref| <= 2e-6 (1 + |ref|), head sizes 64/80/96/128/256,
 *     grouped heads, odd lengths crossing the 256-key tiles: a prompt, then a token
 *     decoded over the prompt's cache (the same bits as that token's row of a longer
 *     prompt), then the paged path over the same rows (the same bits again, and the
 *     pool's rows the contiguous cache's bytes);
 *   - the same over the builder's caches quantized with the node's own scales
 *     (k_quant_type PER_TENSOR / PER_CHANNEL, kv_cache_bit_width 8 or 4, k_scale /
 *     v_scale; kv_fixed.h): every stored code clamp(rint(x * (1 / s))) (int4 plus 8, two
 *     a byte, the even element low), keys past the code range clamped, the reference
 *     over code * s, and the serving engine's paged pool of codes equal to the contiguous
 *     cache. */
#include "kernel_harness.h"
#include "testing.h"

#include "backends/native/kernels/attention/attention.h"
#include "backends/native/kernels/attention/attention_tiles.h"
#include "backends/native/kernels/attention/kv_fixed.h"
#include "backends/native/kernels/attention/kv_rows.h"
#include "backends/paged_kv.h"
#include "base/half.h"
#include "base/isa.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static uint32_t kq_state = 777;
static float kq_rand(void) {
    kq_state = kq_state * 1664525u + 1013904223u;
    return (float)(kq_state >> 8) / (float)(1u << 24) * 2.0f - 1.0f;
}

/* e4m3fn by its definition: 1 sign, 4 exponent bits (bias 7), 3 mantissa bits; exponent
 * 0 is subnormal; s.1111.111 is NaN; no infinities. */
static double kq_f8_value(unsigned c) {
    int e = (int)(c >> 3 & 15), m = (int)(c & 7);
    double v = e == 0 ? ldexp(m / 8.0, -6) : ldexp(1.0 + m / 8.0, e - 7);
    return c & 0x80 ? -v : v;
}

/* The code nearest y (ties to an even code, i.e. an even mantissa), saturating. */
static unsigned kq_f8_nearest(float y) {
    unsigned best = 0;
    double bd = INFINITY;
    for (unsigned c = 0; c < 256; c++) {
        if ((c & 0x7f) == 0x7f) continue;
        double d = fabs(kq_f8_value(c) - (double)y);
        if (d < bd || (d == bd && (c & 1) == 0 && kq_f8_value(c) != 0)) bd = d, best = c;
    }
    if (kq_f8_value(best) == 0) best = signbit(y) ? 0x80 : 0; /* zero keeps y's sign */
    return best;
}

/* What a stored row holds, in double, decoded from the format alone. */
static void kq_decode(og_dtype dt, const uint8_t *row, int64_t D, double *out) {
    if (dt == OG_FLOAT32) {
        for (int64_t d = 0; d < D; d++) out[d] = ((const float *)row)[d];
    } else if (dt == OG_FLOAT16 || dt == OG_BFLOAT16) {
        const uint16_t *h = (const uint16_t *)row;
        for (int64_t d = 0; d < D; d++) out[d] = dt == OG_FLOAT16 ? f16_to_f32(h[d]) : bf16_to_f32(h[d]);
    } else {
        float s;
        memcpy(&s, row + D, 4);
        for (int64_t d = 0; d < D; d++)
            out[d] = (dt == OG_INT8 ? (double)(int8_t)row[d] : kq_f8_value(row[d])) * s;
    }
}

static bool kq_rows_check(og_dtype dt, int64_t D, float amp) {
    uint8_t row[300 + 4];
    float x[300] = {0}, back[300], back2[300];
    double dec[300];
    for (int64_t d = 0; d < D; d++) x[d] = amp * kq_rand() * (d % 7 == 0 ? 1.0f : 0.01f);
    if (D > 3) x[3] = 0.0f;
    kv_row_store(dt, row, x, D);
    float amax = 0, s;
    for (int64_t d = 0; d < D; d++) amax = fmaxf(amax, fabsf(x[d]));
    memcpy(&s, row + D, 4);
    float top = dt == OG_INT8 ? 127.0f : 448.0f, inv = amax > 0 ? top / amax : 0;
    if (s != amax / top) {
        test_fail(__FILE__, __LINE__, "%s D=%lld: scale %.9g, expected amax / %g = %.9g",
                  og_dtype_name(dt), (long long)D, s, top, amax / top);
        return false;
    }
    kq_decode(dt, row, D, dec);
    for (int64_t d = 0; d < D; d++) {
        float y = x[d] * inv;
        if (dt == OG_INT8) {
            int want = (int)nearbyintf(y); /* default rounding: to nearest even */
            if ((int8_t)row[d] != want) {
                test_fail(__FILE__, __LINE__, "int8 D=%lld d=%lld: code %d for %.9g, expected %d",
                          (long long)D, (long long)d, (int8_t)row[d], y, want);
                return false;
            }
            if (fabs(dec[d] - x[d]) > 0.5 * s * (1 + 1e-6) + 1e-30) {
                test_fail(__FILE__, __LINE__, "int8: %.9g holds %.9g (step %.9g)", x[d], dec[d], s);
                return false;
            }
        } else if (row[d] != kq_f8_nearest(y)) {
            test_fail(__FILE__, __LINE__, "fp8 D=%lld d=%lld: code 0x%02x for %.9g, expected 0x%02x",
                      (long long)D, (long long)d, row[d], y, kq_f8_nearest(y));
            return false;
        }
    }
    /* loads: code * scale rounded once, on every level */
    isa_level saved = isa_active();
    bool ok = true;
    for (int level = ISA_GENERIC; level <= (int)isa_supported() && ok; level++) {
        isa_set((isa_level)level);
        kv_rows_load(dt, row, 1, D, back);
        for (int64_t d = 0; d < D && ok; d++)
            if (back[d] != (float)dec[d]) {
                test_fail(__FILE__, __LINE__, "%s load on %s: d=%lld %.9g, expected %.9g",
                          og_dtype_name(dt), isa_name((isa_level)level), (long long)d, back[d], dec[d]);
                ok = false;
            }
        if (level == ISA_GENERIC) memcpy(back2, back, sizeof back);
        if (ok && memcmp(back, back2, sizeof(float) * (size_t)D)) ok = false;
    }
    isa_set(saved);
    return ok;
}

TEST(kv_rows_quantize_and_load_exactly) {
    static const int64_t Ds[] = {64, 80, 7, 128, 256};
    static const float amps[] = {1.0f, 3e4f, 1e-5f, 500.0f};
    for (size_t i = 0; i < sizeof Ds / sizeof *Ds; i++)
        for (size_t a = 0; a < sizeof amps / sizeof *amps; a++) {
            CHECK(kq_rows_check(OG_INT8, Ds[i], amps[a]));
            CHECK(kq_rows_check(OG_FLOAT8E4M3FN, Ds[i], amps[a]));
        }
    /* ties: with amax at the code range's top the factor is 1, and midpoints between
     * neighbouring codes go to the even one */
    float x[256] = {0}, back0[256];
    uint8_t q8[256 + 4];
    int n = 0;
    x[n++] = 448.0f;
    for (unsigned c = 0; c + 1 < 0x7e && n < 256; c++) /* positive codes c, c + 1 */
        x[n++] = (float)((kq_f8_value(c) + kq_f8_value(c + 1)) / 2) * (c % 2 ? -1.0f : 1.0f);
    kv_row_store(OG_FLOAT8E4M3FN, q8, x, n);
    for (int d = 1; d < n; d++) CHECK((q8[d] & 1) == 0 || (q8[d] & 0x7f) == 0);
    for (int d = 1; d < n; d++) CHECK(q8[d] == kq_f8_nearest(x[d]));
    float y[8] = {127.0f, 0.5f, 1.5f, -2.5f, 3.5f, -0.5f, 126.5f, 2.5f};
    static const int8_t want[8] = {127, 0, 2, -2, 4, 0, 126, 2};
    kv_row_store(OG_INT8, q8, y, 8);
    for (int d = 0; d < 8; d++) CHECK((int8_t)q8[d] == want[d]);
    kv_rows_load(OG_INT8, q8, 1, 8, back0);
    for (int d = 0; d < 8; d++) CHECK(back0[d] == (float)want[d]);
    /* a zero row: scale 0, codes 0, loads 0 */
    uint8_t row[64 + 4];
    float z[64] = {0}, back[64];
    kv_row_store(OG_INT8, row, z, 64);
    kv_rows_load(OG_INT8, row, 1, 64, back);
    for (int d = 0; d < 64; d++) CHECK(back[d] == 0.0f);
}

/* ---- attention over a stored cache ------------------------------------------------- */

enum { KQ_T = 301 };

typedef struct kq_case {
    og_dtype dt;
    int64_t D;
    int N, KV;
    int bits;         /* 8 or 4: the node's own scales (kv_fixed.h; dt int8 / uint8), 0: rows
                         as kv_format.h stores them */
    bool per_channel; /* with bits: a scale per (kv head, channel), else one */
} kq_case;

enum { KQ_MAX_SCALES = 8 * 256 };
static float kq_scale[2][KQ_MAX_SCALES]; /* keys', values' scales of a case with bits */

/* Elements of a stored row's last dimension, and its bytes. */
static int64_t kq_width(const kq_case *c) {
    return c->bits ? (c->bits == 4 ? (c->D + 1) / 2 : c->D) : kv_stored_width(c->dt, c->D);
}
static size_t kq_row(const kq_case *c) {
    return c->bits ? (size_t)kq_width(c) : kv_row_bytes(c->dt, c->D);
}

static const char *kq_name(const kq_case *c) {
    if (!c->bits) return og_dtype_name(c->dt);
    return c->bits == 8 ? (c->per_channel ? "int8 per channel" : "int8 per tensor")
                        : (c->per_channel ? "int4 per channel" : "int4 per tensor");
}

static int kq_attrs(graph_attr *at, const kq_case *c) {
    at[0] = (graph_attr){.name = "num_heads", .type = ATTR_INT, .i = c->N};
    at[1] = (graph_attr){.name = "kv_num_heads", .type = ATTR_INT, .i = c->KV};
    if (!c->bits) return 2;
    const char *t = c->per_channel ? "PER_CHANNEL" : "PER_TENSOR";
    at[2] = (graph_attr){.name = "k_quant_type", .type = ATTR_STRING, .s = {t, strlen(t)}};
    at[3] = (graph_attr){.name = "v_quant_type", .type = ATTR_STRING, .s = {t, strlen(t)}};
    at[4] = (graph_attr){.name = "kv_cache_bit_width", .type = ATTR_INT, .i = c->bits};
    return 5;
}

/* Scale of channel d of kv head g (pass 0 keys, 1 values) in a case with bits. */
static float kq_s(const kq_case *c, int pass, int g, int64_t d) {
    return kq_scale[pass][c->per_channel ? g * c->D + d : 0];
}

/* Code of value d of a row with bits (int4: the nibble minus 8). */
static int kq_code(const kq_case *c, const uint8_t *row, int64_t d) {
    if (c->bits == 8) return (int8_t)row[d];
    return (row[d / 2] >> (d % 2 * 4) & 15) - 8;
}

/* What a stored row of kv head g holds, in double (pass 0 keys, 1 values). */
static void kq_decode_case(const kq_case *c, int pass, int g, const uint8_t *row, double *out) {
    if (!c->bits) {
        kq_decode(c->dt, row, c->D, out);
        return;
    }
    for (int64_t d = 0; d < c->D; d++) out[d] = (double)kq_code(c, row, d) * kq_s(c, pass, g, d);
}

/* The inputs beyond the first seven: k_scale, v_scale (12, 13) of a case with bits. */
static int kq_scale_inputs(const kq_case *c, const tensor **in, tensor *ts, int64_t *n) {
    if (!c->bits) return 7;
    *n = c->per_channel ? c->KV * c->D : 1;
    for (int i = 7; i < 12; i++) in[i] = NULL;
    for (int p = 0; p < 2; p++) {
        ts[p] = kh_tensor(OG_FLOAT32, 1, n, kq_scale[p]);
        in[12 + p] = &ts[p];
    }
    return 14;
}

/* S new tokens over a past of P rows ([1, KV, P, W] stored as c->dt; P = 0: a first
 * prompt). out [S][N D]; present ([1, KV, P + S, W]) copied into *present (malloc'd). */
static og_status *kq_run(const kq_case *c, const float *q, const float *k, const float *v,
                         const uint8_t *past, int P, int S, float *out, uint8_t **present) {
    int64_t D = c->D, W = kq_width(c);
    int64_t qd[3] = {1, S, c->N * D}, kd[3] = {1, S, c->KV * D}, pd[4] = {1, c->KV, P, W}, one = 1;
    int32_t sl = P + S - 1, tl = P + S;
    tensor tq = kh_tensor(OG_FLOAT32, 3, qd, (void *)q), tk = kh_tensor(OG_FLOAT32, 3, kd, (void *)k),
           tv = kh_tensor(OG_FLOAT32, 3, kd, (void *)v), tsl = kh_tensor(OG_INT32, 1, &one, &sl),
           ttl = kh_tensor(OG_INT32, 1, &one, &tl);
    size_t half = (size_t)c->KV * (size_t)P * kq_row(c);
    uint8_t dummy[8];
    tensor tpk = kh_tensor(c->dt, 4, pd, P ? (void *)past : dummy),
           tpv = kh_tensor(c->dt, 4, pd, P ? (void *)(past + half) : dummy), ts[2];
    const tensor *in[14] = {&tq, &tk, &tv, &tpk, &tpv, &tsl, &ttl};
    int64_t ns;
    int nin = kq_scale_inputs(c, in, ts, &ns);
    graph_attr at[8];
    kh_run r;
    og_status *st = kh_call(&r, cpu_contrib_gqa, 1, at, kq_attrs(at, c), in, nin, 3);
    if (!st && (r.out[1].dtype != c->dt || r.out[1].dims[3] != W || r.out[1].dims[2] != P + S))
        st = og_errorf(OG_ERR_RUNTIME, "present is %s [.., %lld, %lld], expected %s [.., %d, %lld]",
                       og_dtype_name(r.out[1].dtype), (long long)r.out[1].dims[2],
                       (long long)r.out[1].dims[3], og_dtype_name(c->dt), P + S, (long long)W);
    if (!st) {
        memcpy(out, r.out[0].data, sizeof(float) * (size_t)S * c->N * D);
        *present = malloc(r.out[1].nbytes * 2);
        memcpy(*present, r.out[1].data, r.out[1].nbytes);
        memcpy(*present + r.out[1].nbytes, r.out[2].data, r.out[2].nbytes);
    }
    kh_free(&r);
    return st;
}

static bool kq_ok(const kq_case *c, og_status *st) {
    if (!st) return true;
    test_fail(__FILE__, __LINE__, "%s D=%lld %d:%d: %s", kq_name(c), (long long)c->D,
              c->N, c->KV, og_status_message(st));
    og_status_free(st);
    return false;
}

/* The double-precision attention of the T = rows cached positions (present: keys then
 * values, [KV][T] rows each) for query row t (causal: keys 0..t). */
static bool kq_reference(const kq_case *c, const float *q, const uint8_t *present, int T,
                         const float *out, int t0, int S, const char *what) {
    int64_t D = c->D;
    int R = c->N / c->KV;
    size_t rb = kq_row(c), half = (size_t)c->KV * (size_t)T * rb;
    double *K = malloc(sizeof(double) * (size_t)T * c->KV * D), *V = malloc(sizeof *V * (size_t)T * c->KV * D);
    double *p = malloc(sizeof(double) * (size_t)T);
    for (int g = 0; g < c->KV; g++)
        for (int x = 0; x < T; x++) {
            size_t at = (size_t)g * T + x;
            kq_decode_case(c, 0, g, present + at * rb, K + at * D);
            kq_decode_case(c, 1, g, present + half + at * rb, V + at * D);
        }
    bool ok = true;
    double scale = 1.0 / sqrt((double)D);
    for (int i = 0; i < S && ok; i++)
        for (int h = 0; h < c->N && ok; h++) {
            int t = t0 + i, g = h / R;
            double mx = -INFINITY, sum = 0;
            for (int x = 0; x <= t; x++) {
                double s = 0;
                for (int64_t d = 0; d < D; d++) s += (double)q[((size_t)i * c->N + h) * D + d] * K[((size_t)g * T + x) * D + d];
                p[x] = s * scale;
                mx = p[x] > mx ? p[x] : mx;
            }
            for (int x = 0; x <= t; x++) sum += p[x] = exp(p[x] - mx);
            for (int64_t d = 0; d < D && ok; d++) {
                double ref = 0;
                for (int x = 0; x <= t; x++) ref += p[x] * V[((size_t)g * T + x) * D + d];
                ref /= sum;
                float o = out[((size_t)i * c->N + h) * D + d];
                if (fabs(o - ref) > 2e-6 * (1 + fabs(ref))) {
                    test_fail(__FILE__, __LINE__, "%s %s D=%lld %d:%d row %d head %d d=%lld: %.9g vs %.9g",
                              what, kq_name(c), (long long)D, c->N, c->KV, t, h,
                              (long long)d, o, ref);
                    ok = false;
                }
            }
        }
    free(K), free(V), free(p);
    return ok;
}

/* The prompt's first T - 1 tokens over the paged path (one sequence, scrambled blocks of
 * 16), then its last token decoded alone: out [T][N D]; the pool's rows must be the
 * contiguous cache's (present: keys then values, [KV][T] rows each). */
static og_status *kq_paged(const kq_case *c, const float *q, const float *k, const float *v,
                           int T, float *out, const uint8_t *present) {
    enum { BS = 16 };
    int64_t D = c->D, W = kq_width(c);
    int nb = (T + BS - 1) / BS;
    size_t rb = kq_row(c), block = (size_t)c->KV * BS * rb;
    void *kpool = calloc((size_t)nb, block), *vpool = calloc((size_t)nb, block);
    int32_t *blocks = malloc(sizeof(int32_t) * (size_t)nb);
    for (int b = 0; b < nb; b++) blocks[b] = (int32_t)((b * 7) % nb);
    og_status *st = NULL;
    for (int part = 0; part < 2 && !st; part++) {
        int from = part ? T - 1 : 0, n = part ? 1 : T - 1;
        int64_t qd[3] = {1, n, c->N * D}, kd[3] = {1, n, c->KV * D};
        tensor tq = kh_tensor(OG_FLOAT32, 3, qd, (void *)(q + (size_t)from * c->N * D)),
               tk = kh_tensor(OG_FLOAT32, 3, kd, (void *)(k + (size_t)from * c->KV * D)),
               tv = kh_tensor(OG_FLOAT32, 3, kd, (void *)(v + (size_t)from * c->KV * D));
        const tensor *in[14] = {&tq, &tk, &tv, NULL, NULL, NULL, NULL};
        tensor ts[2];
        int64_t ns;
        int nin = kq_scale_inputs(c, in, ts, &ns);
        paged_kv_seq seq = {0, 0, n, from, blocks};
        const char *names[1] = {"past_key_values.0.key"};
        void *kp[1] = {kpool}, *vp[1] = {vpool};
        paged_kv pk = {.dtype = c->dt, .codes = c->bits != 0, .kv_heads = c->KV,
                       .head_size = (int)W, .block_size = BS, .n_blocks = nb, .n_layers = 1,
                       .layer_names = names, .k = kp, .v = vp, .n_seqs = 1, .seqs = &seq};
        graph_value val = {.name = "past_key_values.0.key"};
        graph g = {.n_values = 1, .values = &val};
        int iv[14] = {-1, -1, -1, 0, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1};
        graph_attr at[8];
        kh_run r;
        st = kh_call_ex(&r, cpu_contrib_gqa, 1, at, kq_attrs(at, c), in, nin, 1, &g, iv, &pk);
        if (!st) memcpy(out + (size_t)from * c->N * D, r.out[0].data, sizeof(float) * (size_t)n * c->N * D);
        kh_free(&r);
    }
    for (int pass = 0; pass < 2 && !st; pass++)
        for (int g = 0; g < c->KV && !st; g++)
            for (int x = 0; x < T && !st; x++) {
                const uint8_t *pool = pass ? vpool : kpool;
                const uint8_t *a = pool + (size_t)blocks[x / BS] * block +
                                   ((size_t)g * BS + x % BS) * rb;
                const uint8_t *b = present + ((size_t)(pass * c->KV + g) * T + x) * rb;
                if (memcmp(a, b, rb))
                    st = og_errorf(OG_ERR_RUNTIME, "the pool's %s row %d of kv head %d differs "
                                   "from the contiguous cache's", pass ? "value" : "key", x, g);
            }
    free(kpool), free(vpool), free(blocks);
    return st;
}

/* The codes of a case with bits against their definition: clamp(rint(x * (1 / s))) with
 * the reciprocal in float32, ties to even, -128..127 or -8..7 (no rotary here: keys are
 * stored as given). */
static bool kq_codes_check(const kq_case *c, const float *k, const float *v, const uint8_t *present,
                           int T) {
    int lo = c->bits == 8 ? -128 : -8, hi = c->bits == 8 ? 127 : 7;
    size_t rb = kq_row(c);
    for (int pass = 0; pass < 2; pass++)
        for (int g = 0; g < c->KV; g++)
            for (int x = 0; x < T; x++)
                for (int64_t d = 0; d < c->D; d++) {
                    float val = (pass ? v : k)[((size_t)x * c->KV + g) * c->D + d];
                    double y = nearbyint((double)(val * (1.0f / kq_s(c, pass, g, d))));
                    int want = y < lo ? lo : y > hi ? hi : (int)y;
                    const uint8_t *row = present + ((size_t)(pass * c->KV + g) * T + x) * rb;
                    int got = kq_code(c, row, d);
                    if (got != want) {
                        test_fail(__FILE__, __LINE__, "%s D=%lld: %s %d of kv head %d, channel "
                                  "%lld: code %d, expected %d (x %.9g, scale %.9g)", kq_name(c),
                                  (long long)c->D, pass ? "value" : "key", x, g, (long long)d,
                                  got, want, val, kq_s(c, pass, g, d));
                        return false;
                    }
                }
    return true;
}

static bool kq_check(const kq_case *c) {
    int64_t D = c->D;
    int T = KQ_T, N = c->N, KV = c->KV;
    size_t qn = (size_t)T * N * D, kn = (size_t)T * KV * D;
    float *q = malloc(sizeof(float) * qn), *k = malloc(sizeof(float) * kn),
          *v = malloc(sizeof(float) * kn), *out = malloc(sizeof(float) * qn),
          *out1 = malloc(sizeof(float) * qn), *dec = malloc(sizeof(float) * (size_t)N * D),
          *paged = malloc(sizeof(float) * qn);
    for (size_t i = 0; i < qn; i++) q[i] = 2.0f * kq_rand();
    for (size_t i = 0; i < kn; i++) k[i] = kq_rand() * (i % 13 == 0 ? 4.0f : 1.0f);
    for (size_t i = 0; i < kn; i++) v[i] = kq_rand();
    /* keys up to 4 against a scale that reaches 3 (some clamp), values up to 1 */
    for (int p = 0; c->bits && p < 2; p++)
        for (int64_t i = 0; i < KV * D; i++)
            kq_scale[p][i] = (p ? 1.0f : 3.0f) / (c->bits == 8 ? 127.0f : 7.0f) *
                             (c->per_channel ? 0.5f + (float)((i * 37) % 11) / 10.0f : 1.0f);
    uint8_t *pres = NULL, *pres1 = NULL, *pres2 = NULL;
    bool ok = kq_ok(c, kq_run(c, q, k, v, NULL, 0, T, out, &pres)) &&
              kq_reference(c, q, pres, T, out, 0, T, "prompt");
    if (ok && c->bits) ok = kq_codes_check(c, k, v, pres, T);
    /* the first T - 1 tokens, then the last decoded over their cache */
    ok = ok && kq_ok(c, kq_run(c, q, k, v, NULL, 0, T - 1, out1, &pres1));
    ok = ok && kq_ok(c, kq_run(c, q + (size_t)(T - 1) * N * D, k + (size_t)(T - 1) * KV * D,
                               v + (size_t)(T - 1) * KV * D, pres1, T - 1, 1, dec, &pres2));
    if (ok && memcmp(pres2, pres, kq_row(c) * (size_t)KV * T * 2)) {
        test_fail(__FILE__, __LINE__, "%s D=%lld: the decoded token's cache differs from the "
                  "prompt's", kq_name(c), (long long)D);
        ok = false;
    }
    if (ok && memcmp(dec, out + (size_t)(T - 1) * N * D, sizeof(float) * (size_t)N * D)) {
        test_fail(__FILE__, __LINE__, "%s D=%lld %d:%d: a decoded token differs from its prompt row",
                  kq_name(c), (long long)D, N, KV);
        ok = false;
    }
    ok = ok && kq_ok(c, kq_paged(c, q, k, v, T, paged, pres));
    if (ok && memcmp(paged, out, sizeof(float) * qn)) {
        test_fail(__FILE__, __LINE__, "%s D=%lld %d:%d: the paged cache differs from the contiguous",
                  kq_name(c), (long long)D, N, KV);
        ok = false;
    }
    free(q), free(k), free(v), free(out), free(out1), free(dec), free(paged), free(pres),
        free(pres1), free(pres2);
    return ok;
}

/* Each kind of case (its storage; D, N, KV set here) at head sizes 64/80/96/128/256, every
 * head layout at 64 and 128 and one each at the others, on every ISA level this CPU has. */
static bool kq_sweep(const kq_case *kinds, size_t n) {
    static const int64_t Ds[] = {64, 80, 96, 128, 256};
    static const int heads[][2] = {{6, 2}, {4, 4}, {8, 1}};
    isa_level saved = isa_active();
    bool ok = true;
    for (int level = ISA_GENERIC; level <= (int)isa_supported() && ok; level++) {
        isa_set((isa_level)level);
        for (size_t a = 0; a < n && ok; a++)
            for (size_t b = 0; b < sizeof Ds / sizeof *Ds && ok; b++)
                for (size_t h = 0; h < 3 && ok; h++) {
                    if (Ds[b] != 64 && Ds[b] != 128 && h != (a + b) % 3) continue;
                    kq_case c = kinds[a];
                    c.D = Ds[b], c.N = heads[h][0], c.KV = heads[h][1];
                    ok = kq_check(&c);
                }
    }
    isa_set(saved);
    return ok;
}

TEST(gqa_quantized_cache_matches_reference_on_every_isa) {
    static const kq_case kinds[] = {{.dt = OG_INT8}, {.dt = OG_FLOAT8E4M3FN},
                                    {.dt = OG_FLOAT16}, {.dt = OG_BFLOAT16}};
    CHECK(kq_sweep(kinds, sizeof kinds / sizeof *kinds));
}

/* The builder's caches (the node's own scales), contiguous and paged. */
TEST(gqa_node_scaled_cache_matches_reference_on_every_isa) {
    static const kq_case kinds[] = {{.dt = OG_INT8, .bits = 8},
                                    {.dt = OG_INT8, .bits = 8, .per_channel = true},
                                    {.dt = OG_UINT8, .bits = 4},
                                    {.dt = OG_UINT8, .bits = 4, .per_channel = true}};
    CHECK(kq_sweep(kinds, sizeof kinds / sizeof *kinds));
}

/* kv_fixed_load: every value exactly (float)code * its scale, on every ISA level (the
 * AVX2 path widens 8 or 16 codes a step; head sizes with tails, odd ones for int4). */
TEST(kv_fixed_load_exact_on_every_isa) {
    static const int64_t Ds[] = {7, 24, 64, 80, 128, 256};
    enum { KV = 2, ROWS = 5 };
    static float scale[KV * 256], out[ROWS * 256];
    static uint8_t rows[ROWS * 256];
    for (int i = 0; i < KV * 256; i++) scale[i] = 0.013f + 0.001f * (float)(i % 17);
    for (int i = 0; i < ROWS * 256; i++) rows[i] = (uint8_t)(kq_rand() * 128.0f + 128.0f);
    isa_level saved = isa_active();
    for (int level = ISA_GENERIC; level <= (int)isa_supported(); level++) {
        isa_set((isa_level)level);
        for (int bits = 8; bits >= 4; bits -= 4)
            for (int pc = 0; pc < 2; pc++)
                for (size_t b = 0; b < sizeof Ds / sizeof *Ds; b++) {
                    int64_t D = Ds[b];
                    kq_case c = {.D = D, .KV = KV, .bits = bits, .per_channel = pc};
                    kv_fixed f = {.bits = bits, .per_channel = pc, .scale = scale};
                    size_t rb = kq_row(&c);
                    memcpy(kq_scale[0], scale, sizeof scale);
                    kv_fixed_load(&f, 1, rows, ROWS, D, out);
                    for (int r = 0; r < ROWS; r++)
                        for (int64_t d = 0; d < D; d++) {
                            float want = (float)kq_code(&c, rows + r * rb, d) * kq_s(&c, 0, 1, d);
                            if (out[r * D + d] != want) {
                                test_fail(__FILE__, __LINE__, "%s D=%lld at %s: row %d value "
                                          "%lld is %.9g, expected %.9g", kq_name(&c), (long long)D,
                                          isa_name((isa_level)level), r, (long long)d,
                                          out[r * D + d], want);
                                isa_set(saved);
                                return;
                            }
                        }
                }
    }
    isa_set(saved);
}

/* The quantized paths of the tiles (attention_tiles.c's top comment) never load the rows
 * into float32 tiles: a decode step dequantizes 16 rows at a time into L1 blocks (AVX-512
 * 16 values a step where kv_lanes.h takes the head size, else kv_rows_load), and on
 * AVX-512 a prompt lays its keys across the lanes from the codes. gqa_tiles_float_tiles
 * sends the same rows through the float32 tiles. Both must give the same bits, at every
 * ISA level: a prompt of KQ_T tokens and a token decoded over its first KQ_T - 1, for
 * every format, head sizes 8..256 (with the odd multiples of 8 and one that is none) and
 * grouped heads, and float8 rows whose scale is above 2^8 (the two-step product). */
static bool kq_paths_equal(const kq_case *c, float amp) {
    int64_t D = c->D;
    int T = KQ_T, N = c->N, KV = c->KV;
    size_t qn = (size_t)T * N * D, kn = (size_t)T * KV * D;
    float *q = malloc(sizeof(float) * qn), *k = malloc(sizeof(float) * kn),
          *v = malloc(sizeof(float) * kn), *out[2], *dec[2];
    for (size_t i = 0; i < qn; i++) q[i] = 2.0f * kq_rand() / amp;
    for (size_t i = 0; i < kn; i++) k[i] = amp * kq_rand() * (i % 13 == 0 ? 4.0f : 1.0f);
    for (size_t i = 0; i < kn; i++) v[i] = amp * kq_rand();
    for (int p = 0; c->bits && p < 2; p++)
        for (int64_t i = 0; i < KV * D; i++)
            kq_scale[p][i] = (p ? 1.0f : 3.0f) / (c->bits == 8 ? 127.0f : 7.0f) *
                             (c->per_channel ? 0.5f + (float)((i * 29) % 13) / 10.0f : 1.0f);
    bool ok = true;
    for (int l = 0; l < 2; l++) {
        out[l] = malloc(sizeof(float) * qn);
        dec[l] = malloc(sizeof(float) * (size_t)N * D);
    }
    for (int l = 0; l < 2 && ok; l++) {
        gqa_tiles_float_tiles = l == 0;
        uint8_t *pres = NULL, *pres1 = NULL, *pres2 = NULL;
        ok = kq_ok(c, kq_run(c, q, k, v, NULL, 0, T - 1, out[l], &pres1)) &&
             kq_ok(c, kq_run(c, q + (size_t)(T - 1) * N * D, k + (size_t)(T - 1) * KV * D,
                             v + (size_t)(T - 1) * KV * D, pres1, T - 1, 1, dec[l], &pres2)) &&
             kq_ok(c, kq_run(c, q, k, v, NULL, 0, T, out[l], &pres));
        free(pres), free(pres1), free(pres2);
    }
    gqa_tiles_float_tiles = false;
    if (ok && memcmp(out[0], out[1], sizeof(float) * qn)) {
        test_fail(__FILE__, __LINE__, "%s D=%lld %d:%d amp %g at %s: a prompt without float tiles "
                  "differs from its rows loaded as float32", kq_name(c), (long long)D, N, KV,
                  (double)amp, isa_name(isa_active()));
        ok = false;
    }
    if (ok && memcmp(dec[0], dec[1], sizeof(float) * (size_t)N * D)) {
        test_fail(__FILE__, __LINE__, "%s D=%lld %d:%d amp %g at %s: a decoded token without float "
                  "tiles differs from its rows loaded as float32", kq_name(c), (long long)D, N,
                  KV, (double)amp, isa_name(isa_active()));
        ok = false;
    }
    free(q), free(k), free(v);
    for (int l = 0; l < 2; l++) free(out[l]), free(dec[l]);
    return ok;
}

/* A prompt over a past with its tiles' partial results sliced block by block (as a long
 * prompt piece over a long cache is, gqa_tiles_part_bytes) gives the bits of one pass:
 * int8 rows and the node's int4 codes, grouped heads, a first prompt and one after a past. */
TEST(gqa_quantized_cache_part_slices_do_not_change_bits) {
    static const kq_case kinds[] = {{.dt = OG_INT8, .D = 64, .N = 6, .KV = 2},
                                    {.dt = OG_UINT8, .D = 32, .N = 4, .KV = 1, .bits = 4}};
    int T = KQ_T, P = 150, S = KQ_T - 150;
    for (size_t a = 0; a < sizeof kinds / sizeof *kinds; a++) {
        const kq_case *c = &kinds[a];
        int64_t D = c->D;
        size_t qn = (size_t)T * c->N * D, kn = (size_t)T * c->KV * D;
        float *q = malloc(sizeof(float) * qn), *k = malloc(sizeof(float) * kn),
              *v = malloc(sizeof(float) * kn), *out[2][2];
        for (size_t i = 0; i < qn; i++) q[i] = 2.0f * kq_rand();
        for (size_t i = 0; i < kn; i++) k[i] = kq_rand(), v[i] = kq_rand();
        for (int p = 0; p < 2; p++)
            for (int64_t i = 0; i < KQ_MAX_SCALES; i++) kq_scale[p][i] = (p ? 1.0f : 3.0f) / 7.0f;
        bool ok = true;
        for (int l = 0; l < 2; l++) {
            out[l][0] = malloc(sizeof(float) * qn);
            out[l][1] = malloc(sizeof(float) * qn);
            size_t saved = gqa_tiles_part_bytes;
            if (l) gqa_tiles_part_bytes = 1; /* every 16-row block a slice of its own */
            uint8_t *pres = NULL, *past = NULL, *pres2 = NULL;
            ok = ok && kq_ok(c, kq_run(c, q, k, v, NULL, 0, T, out[l][0], &pres)) &&
                 kq_ok(c, kq_run(c, q, k, v, NULL, 0, P, out[l][1], &past)) &&
                 kq_ok(c, kq_run(c, q + (size_t)P * c->N * D, k + (size_t)P * c->KV * D,
                                 v + (size_t)P * c->KV * D, past, P, S, out[l][1], &pres2));
            gqa_tiles_part_bytes = saved;
            free(pres), free(past), free(pres2);
        }
        if (ok) {
            CHECK(memcmp(out[0][0], out[1][0], sizeof(float) * qn) == 0);
            CHECK(memcmp(out[0][1], out[1][1], sizeof(float) * (size_t)S * c->N * D) == 0);
        }
        free(q), free(k), free(v);
        for (int l = 0; l < 2; l++) free(out[l][0]), free(out[l][1]);
    }
}

TEST(gqa_quantized_cache_without_float_tiles_equals_loaded_rows) {
    static const kq_case kinds[] = {{.dt = OG_INT8}, {.dt = OG_FLOAT8E4M3FN},
                                    {.dt = OG_INT8, .bits = 8},
                                    {.dt = OG_INT8, .bits = 8, .per_channel = true},
                                    {.dt = OG_UINT8, .bits = 4},
                                    {.dt = OG_UINT8, .bits = 4, .per_channel = true}};
    static const int64_t Ds[] = {8, 12, 16, 24, 32, 64, 80, 96, 128, 256};
    static const int heads[][2] = {{6, 2}, {4, 4}, {8, 1}, {3, 1}};
    isa_level saved = isa_active();
    bool ok = true;
    for (int level = ISA_GENERIC; level <= (int)isa_supported() && ok; level++) {
        isa_set((isa_level)level);
        for (size_t a = 0; a < sizeof kinds / sizeof *kinds && ok; a++)
            for (size_t b = 0; b < sizeof Ds / sizeof *Ds && ok; b++) {
                kq_case c = kinds[a];
                c.D = Ds[b], c.N = heads[(a + b) % 4][0], c.KV = heads[(a + b) % 4][1];
                ok = kq_paths_equal(&c, 1.0f);
                if (ok && c.dt == OG_FLOAT8E4M3FN && !c.bits) ok = kq_paths_equal(&c, 1e6f);
            }
    }
    isa_set(saved);
    CHECK(ok);
}
