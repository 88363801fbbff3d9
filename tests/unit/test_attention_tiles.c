/* GroupQueryAttention's tile arithmetic (attention_tiles.c) at head sizes that are not a
 * power of two (24, 48, 80, 96, 112, 8 and beside them 64, 128 and 20, which has no
 * vector path):
 *   - against a double-precision softmax attention, |out - ref| <= 1e-6 (1 + |ref|);
 *   - a head that shares its value pass with other heads of its group (5 query heads per
 *     kv head) has the bits of the same query as the group's only head (a 1:1 run);
 *   - a prompt row has the bits of the same token decoded alone over a paged cache
 *     (scrambled blocks of 16 positions), and the paged prompt the contiguous one's.
 * The prompt is 300 tokens, so rows cross the 256-key tiles and 16-row query blocks. */
#include "kernel_harness.h"
#include "testing.h"

#include "backends/backend.h"
#include "backends/native/kernels/attention/attention.h"
#include "backends/paged_kv.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

enum { AT_KV = 2, AT_R = 5, AT_T = 300, AT_BS = 16, AT_BLOCKS = (AT_T + AT_BS - 1) / AT_BS };

static uint32_t at_state = 4242;
static float at_rand(void) {
    at_state = at_state * 1664525u + 1013904223u;
    return (float)(at_state >> 8) / (float)(1u << 24) * 2.0f - 1.0f;
}

static int at_attrs(graph_attr *at, int N, int KV) {
    at[0] = (graph_attr){.name = "num_heads", .type = ATTR_INT, .i = N};
    at[1] = (graph_attr){.name = "kv_num_heads", .type = ATTR_INT, .i = KV};
    return 2;
}

/* One contiguous prompt of T tokens, no past: q [T][N D], k, v [T][KV D]; out [T][N D]. */
static og_status *at_prompt(int64_t D, int N, int KV, float *q, float *k, float *v, float *out) {
    int64_t qd[3] = {1, AT_T, N * D}, kd[3] = {1, AT_T, KV * D}, one = 1;
    int32_t sl = AT_T - 1, tl = AT_T;
    tensor tq = kh_tensor(OG_FLOAT32, 3, qd, q), tk = kh_tensor(OG_FLOAT32, 3, kd, k),
           tv = kh_tensor(OG_FLOAT32, 3, kd, v), tsl = kh_tensor(OG_INT32, 1, &one, &sl),
           ttl = kh_tensor(OG_INT32, 1, &one, &tl);
    const tensor *in[7] = {&tq, &tk, &tv, NULL, NULL, &tsl, &ttl};
    graph_attr at[4];
    kh_run r;
    og_status *st = kh_call(&r, cpu_contrib_gqa, 1, at, at_attrs(at, N, KV), in, 7, 1);
    if (!st) memcpy(out, r.out[0].data, sizeof(float) * (size_t)(AT_T * N * D));
    kh_free(&r);
    return st;
}

/* Tokens [from, from + n) through the paged cache (the pools keep what earlier calls
 * wrote); out [n][N D]. */
static og_status *at_paged(int64_t D, const float *q, const float *k, const float *v, int from,
                           int n, const int32_t *blocks, float *kpool, float *vpool, float *out) {
    int N = AT_KV * AT_R;
    int64_t qd[3] = {1, n, N * D}, kd[3] = {1, n, AT_KV * D};
    tensor tq = kh_tensor(OG_FLOAT32, 3, qd, (void *)(q + (size_t)from * N * D)),
           tk = kh_tensor(OG_FLOAT32, 3, kd, (void *)(k + (size_t)from * AT_KV * D)),
           tv = kh_tensor(OG_FLOAT32, 3, kd, (void *)(v + (size_t)from * AT_KV * D));
    const tensor *in[7] = {&tq, &tk, &tv, NULL, NULL, NULL, NULL};
    paged_kv_seq seq = {0, 0, n, from, blocks};
    const char *names[1] = {"past_key_values.0.key"};
    void *kp[1] = {kpool}, *vp[1] = {vpool};
    paged_kv pk = {.dtype = OG_FLOAT32, .kv_heads = AT_KV, .head_size = (int)D, .block_size = AT_BS,
                   .n_blocks = AT_BLOCKS, .n_layers = 1, .layer_names = names, .k = kp, .v = vp,
                   .n_seqs = 1, .seqs = &seq};
    graph_value val = {.name = "past_key_values.0.key"};
    graph g = {.n_values = 1, .values = &val};
    int iv[7] = {-1, -1, -1, 0, -1, -1, -1};
    graph_attr at[4];
    kh_run r;
    og_status *st = kh_call_ex(&r, cpu_contrib_gqa, 1, at, at_attrs(at, N, AT_KV), in, 7, 1, &g, iv, &pk);
    if (!st) memcpy(out, r.out[0].data, sizeof(float) * (size_t)(n * N * D));
    kh_free(&r);
    return st;
}

/* A kernel call's status: fails the test with its message. */
static bool at_ok(int64_t D, og_status *st) {
    if (!st) return true;
    test_fail(__FILE__, __LINE__, "D=%lld: %s", (long long)D, og_status_message(st));
    og_status_free(st);
    return false;
}

static bool at_check(int64_t D) {
    int N = AT_KV * AT_R;
    size_t qn = (size_t)AT_T * N * D, kn = (size_t)AT_T * AT_KV * D;
    float *q = malloc(sizeof(float) * qn), *k = malloc(sizeof(float) * kn),
          *v = malloc(sizeof(float) * kn), *out = malloc(sizeof(float) * qn),
          *q1 = malloc(sizeof(float) * kn), *o1 = malloc(sizeof(float) * kn),
          *po = malloc(sizeof(float) * qn), *dec = malloc(sizeof(float) * (size_t)N * D),
          *kpool = calloc((size_t)AT_BLOCKS * AT_KV * AT_BS * D, sizeof(float)),
          *vpool = calloc((size_t)AT_BLOCKS * AT_KV * AT_BS * D, sizeof(float));
    double *p = malloc(sizeof(double) * AT_T);
    int32_t blocks[AT_BLOCKS];
    for (int b = 0; b < AT_BLOCKS; b++) blocks[b] = (b * 7) % AT_BLOCKS; /* 7 and 19 coprime */
    for (size_t i = 0; i < qn; i++) q[i] = 2.0f * at_rand();
    for (size_t i = 0; i < kn; i++) k[i] = at_rand();
    for (size_t i = 0; i < kn; i++) v[i] = at_rand();
    bool ok = true;
    og_status *st = at_prompt(D, N, AT_KV, q, k, v, out);
    if (!at_ok(D, st)) {
        ok = false;
        goto done;
    }
    /* the double-precision reference, causal, scale 1/sqrt(D) */
    double scale = 1.0 / sqrt((double)D), worst = 0;
    for (int t = 0; t < AT_T && ok; t++)
        for (int h = 0; h < N && ok; h++) {
            int g = h / AT_R;
            double mx = -INFINITY, sum = 0;
            for (int x = 0; x <= t; x++) {
                double s = 0;
                for (int64_t d = 0; d < D; d++)
                    s += (double)q[((size_t)t * N + h) * D + d] * k[((size_t)x * AT_KV + g) * D + d];
                p[x] = s * scale;
                mx = p[x] > mx ? p[x] : mx;
            }
            for (int x = 0; x <= t; x++) sum += p[x] = exp(p[x] - mx);
            for (int64_t d = 0; d < D; d++) {
                double ref = 0;
                for (int x = 0; x <= t; x++) ref += p[x] * v[((size_t)x * AT_KV + g) * D + d];
                ref /= sum;
                double e = fabs(out[((size_t)t * N + h) * D + d] - ref) / (1 + fabs(ref));
                worst = e > worst ? e : worst;
                if (e > 1e-6) {
                    test_fail(__FILE__, __LINE__, "D=%lld t=%d head %d d=%lld: %.9g vs %.9g",
                              (long long)D, t, h, (long long)d, out[((size_t)t * N + h) * D + d], ref);
                    ok = false;
                    break;
                }
            }
        }
    /* each query head of a group alone (one query head per kv head): the same bits */
    for (int r = 0; r < AT_R && ok; r++) {
        for (int t = 0; t < AT_T; t++)
            for (int g = 0; g < AT_KV; g++)
                memcpy(q1 + ((size_t)t * AT_KV + g) * D, q + ((size_t)t * N + g * AT_R + r) * D,
                       sizeof(float) * (size_t)D);
        if (!at_ok(D, at_prompt(D, AT_KV, AT_KV, q1, k, v, o1))) {
            ok = false;
            break;
        }
        for (int t = 0; t < AT_T && ok; t++)
            for (int g = 0; g < AT_KV && ok; g++)
                if (memcmp(o1 + ((size_t)t * AT_KV + g) * D, out + ((size_t)t * N + g * AT_R + r) * D,
                           sizeof(float) * (size_t)D)) {
                    test_fail(__FILE__, __LINE__, "D=%lld t=%d head %d: alone differs from its group",
                              (long long)D, t, g * AT_R + r);
                    ok = false;
                }
    }
    /* the paged cache: the prompt but its last token, then that token decoded alone */
    if (ok) {
        st = at_paged(D, q, k, v, 0, AT_T - 1, blocks, kpool, vpool, po);
        /* a prompt token run alone takes its prompt's form (the row forms say so, as the
         * engine's do), so onnxruntime's order gives it the bits of the whole prompt */
        static const uint8_t many = BACKEND_ROW_MANY;
        kh_row_forms = &many, kh_n_row_forms = 1;
        if (!st) st = at_paged(D, q, k, v, AT_T - 1, 1, blocks, kpool, vpool, dec);
        kh_row_forms = NULL, kh_n_row_forms = 0;
        if (!at_ok(D, st)) {
            ok = false;
        } else {
            memcpy(po + (size_t)(AT_T - 1) * N * D, dec, sizeof(float) * (size_t)N * D);
            for (int t = 0; t < AT_T && ok; t++)
                if (memcmp(po + (size_t)t * N * D, out + (size_t)t * N * D, sizeof(float) * (size_t)N * D)) {
                    test_fail(__FILE__, __LINE__, "D=%lld t=%d: paged%s differs from the contiguous prompt",
                              (long long)D, t, t == AT_T - 1 ? " decode" : " prompt");
                    ok = false;
                }
        }
    }
    if (ok) printf("    D=%lld: worst relative error %.3g\n", (long long)D, worst);
done:
    free(q), free(k), free(v), free(out), free(q1), free(o1), free(po), free(dec), free(kpool),
        free(vpool), free(p);
    return ok;
}

TEST(attention_tiles_head_sizes_match_reference_and_batch) {
    static const int64_t heads[] = {24, 48, 80, 96, 112, 8, 20, 64, 128};
    for (size_t i = 0; i < sizeof heads / sizeof *heads; i++) CHECK(at_check(heads[i]));
}
