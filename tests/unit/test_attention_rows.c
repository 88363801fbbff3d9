/* The decode attention row helpers (attention_rows.c) against plain double-precision
 * loops: head sizes of the 16-float path (16..256), of the 8-float path (8, 24, 40, 80,
 * 248) and of neither (12, 20, 264), key counts around the 8- and 16-key blocks and the
 * row unrolling. */
#include "testing.h"

#include "backends/native/kernels/attention/attention.h"

#include <stdlib.h>

static float frand(unsigned *s) {
    *s = *s * 1664525u + 1013904223u;
    return (float)((*s >> 8) & 0xffff) / 32768.0f - 1.0f;
}

TEST(attention_rows_match_reference) {
    static const int64_t heads[] = {8, 12, 16, 20, 24, 32, 40, 64, 80, 128, 248, 256, 264};
    static const int64_t counts[] = {1, 2, 3, 4, 5, 15, 16, 17, 31, 33, 64, 100};
    unsigned seed = 7;
    float *q = malloc(264 * sizeof *q), *k = malloc(100 * 264 * sizeof *k);
    float *s = malloc(112 * sizeof *s), *y = malloc(264 * sizeof *y), *p = malloc(100 * sizeof *p);
    CHECK(q && k && s && y && p);
    for (size_t hi = 0; hi < sizeof heads / sizeof *heads; hi++) {
        int64_t D = heads[hi];
        for (size_t ci = 0; ci < sizeof counts / sizeof *counts; ci++) {
            int64_t n = counts[ci];
            for (int64_t i = 0; i < D; i++) q[i] = frand(&seed);
            for (int64_t i = 0; i < n * D; i++) k[i] = frand(&seed);
            for (int64_t t = 0; t < n; t++) p[t] = 0.5f * (frand(&seed) + 1.0f);
            for (int64_t t = 0; t < n + 8; t++) s[t] = 12345.0f; /* past n must stay */
            cpu_attn_scores(q, k, n, D, 0.125f, s);
            for (int64_t t = 0; t < n; t++) {
                double ref = 0;
                for (int64_t d = 0; d < D; d++) ref += (double)q[d] * k[t * D + d];
                ref *= 0.125;
                if (fabs(s[t] - ref) > 1e-5 * (1 + fabs(ref))) {
                    test_fail(__FILE__, __LINE__, "scores D=%lld n=%lld t=%lld: %.9g vs %.9g",
                              (long long)D, (long long)n, (long long)t, s[t], ref);
                    goto done;
                }
            }
            CHECK(s[n] == 12345.0f);
            for (int64_t d = 0; d < D; d++) y[d] = (float)d; /* accumulates into y */
            cpu_attn_weighted(y, p, k, n, D);
            for (int64_t d = 0; d < D; d++) {
                double ref = (double)d;
                for (int64_t t = 0; t < n; t++) ref += (double)p[t] * k[t * D + d];
                if (fabs(y[d] - ref) > 1e-5 * (1 + fabs(ref))) {
                    test_fail(__FILE__, __LINE__, "weighted D=%lld n=%lld d=%lld: %.9g vs %.9g",
                              (long long)D, (long long)n, (long long)d, y[d], ref);
                    goto done;
                }
            }
        }
    }
done:
    free(q);
    free(k);
    free(s);
    free(y);
    free(p);
}

/* cpu_attn_scores_t (keys across the lanes) gives cpu_attn_scores' values bit for bit
 * (a zero's sign aside), on every head size of its path (8 to 256 by 8) and key counts around the 16-key blocks; builds and
 * head sizes without the path say so (false) and are checked to be exactly those.
 * cpu_attn_scores_t_heads gives each of 1 to 7 queries the bits of its own call. */
TEST(attention_scores_across_lanes_equal_rows) {
    static const int64_t counts[] = {1, 2, 15, 16, 17, 31, 33, 64, 100};
    unsigned seed = 11;
    float *q = malloc(264 * sizeof *q), *k = malloc(112 * 264 * sizeof *k);
    float *kt = malloc(112 * 264 * sizeof *kt), *s = malloc(112 * sizeof *s), *st = malloc(112 * sizeof *st);
    const float **kp = malloc(112 * sizeof *kp);
    float *qh = malloc(7 * 264 * sizeof *qh), *sh = malloc(7 * 128 * sizeof *sh);
    CHECK(q && k && kt && s && st && kp && qh && sh);
    int checked = 0;
    for (int64_t D = 8; D <= 264; D += 8) {
        for (size_t ci = 0; ci < sizeof counts / sizeof *counts; ci++) {
            int64_t n = counts[ci];
            for (int64_t i = 0; i < D; i++) q[i] = frand(&seed);
            /* rows given by pointers in any order: here every other one reversed */
            for (int64_t i = 0; i < n * D; i++) k[i] = frand(&seed);
            for (int64_t t = 0; t < n; t++) kp[t] = k + (t % 2 ? n - 1 - t / 2 : t / 2) * D;
            if (!cpu_attn_keys_t(kp, n, D, kt)) {
#if defined(__AVX512F__)
                CHECK(D % 8 != 0 || D > 256);
#endif
                continue;
            }
            cpu_attn_scores_t(q, kt, (n + 15) / 16, D, 0.125f, st);
            for (int64_t t = 0; t < n; t++) {
                cpu_attn_scores(q, kp[t], 1, D, 0.125f, s + t);
                if (memcmp(&s[t], &st[t], sizeof(float)) != 0 && s[t] != st[t]) {
                    test_fail(__FILE__, __LINE__, "D=%lld n=%lld key %lld: %.9g across, %.9g by rows",
                              (long long)D, (long long)n, (long long)t, st[t], s[t]);
                    goto done;
                }
            }
            /* several queries at once (a group's heads): each its own call's bits */
            for (int64_t i = 0; i < 7 * D; i++) qh[i] = frand(&seed);
            for (int64_t nh = 1; nh <= 7; nh++) {
                cpu_attn_scores_t_heads(qh, D, nh, kt, (n + 15) / 16, D, 0.125f, sh, 128);
                for (int64_t h = 0; h < nh; h++) {
                    cpu_attn_scores_t(qh + h * D, kt, (n + 15) / 16, D, 0.125f, st);
                    if (memcmp(sh + h * 128, st, sizeof(float) * (size_t)n) != 0) {
                        test_fail(__FILE__, __LINE__, "D=%lld n=%lld: query %lld of %lld "
                                  "differs from its own call", (long long)D, (long long)n,
                                  (long long)h, (long long)nh);
                        goto done;
                    }
                }
            }
            checked++;
        }
    }
#if defined(__AVX512F__)
    CHECK(checked == 32 * (int)(sizeof counts / sizeof *counts));
#endif
done:
    free(qh);
    free(sh);
    free(q);
    free(k);
    free(kt);
    free(s);
    free(st);
    free(kp);
}

/* cpu_attn_scores_heads (one pass over contiguous key rows for a group's queries) gives
 * each of 1 to 7 queries exactly cpu_attn_scores' bits for its own call, on every head
 * size (8 to 264 by 8, and 12, 20; 264 has no vector path) and key counts around the 4- and 16-key groups; the
 * scores past n stay untouched. */
TEST(attention_scores_heads_equal_one_query) {
    static const int64_t counts[] = {1, 3, 4, 5, 15, 16, 17, 31, 33, 64, 100};
    unsigned seed = 13;
    float *k = malloc(100 * 264 * sizeof *k), *qh = malloc(7 * 264 * sizeof *qh);
    float *sh = malloc(7 * 128 * sizeof *sh), *s1 = malloc(128 * sizeof *s1);
    CHECK(k && qh && sh && s1);
    for (int64_t D = 8; D <= 264; D += 4) {
        if (D % 8 && D != 12 && D != 20) continue;
        for (size_t ci = 0; ci < sizeof counts / sizeof *counts; ci++) {
            int64_t n = counts[ci];
            for (int64_t i = 0; i < n * D; i++) k[i] = frand(&seed);
            for (int64_t i = 0; i < 7 * D; i++) qh[i] = frand(&seed);
            for (int64_t nh = 1; nh <= 7; nh++) {
                for (int64_t i = 0; i < 7 * 128; i++) sh[i] = 12345.0f;
                cpu_attn_scores_heads(qh, D, nh, k, n, D, 0.125f, sh, 128);
                for (int64_t h = 0; h < nh; h++) {
                    cpu_attn_scores(qh + h * D, k, n, D, 0.125f, s1);
                    if (memcmp(sh + h * 128, s1, sizeof(float) * (size_t)n) != 0) {
                        test_fail(__FILE__, __LINE__, "D=%lld n=%lld: query %lld of %lld "
                                  "differs from its own call", (long long)D, (long long)n,
                                  (long long)h, (long long)nh);
                        goto done;
                    }
                    CHECK(sh[h * 128 + n] == 12345.0f);
                }
            }
        }
    }
done:
    free(k);
    free(qh);
    free(sh);
    free(s1);
}
