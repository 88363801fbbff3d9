/* The two inner loops of decode attention over a contiguous run of cached rows (see
 * attention.h): one query's scores against n keys, and the probability-weighted sum of
 * n value rows. With AVX-512 and a head size that is a multiple of 16, a key or value
 * row is whole vectors: the scores of 16 keys are formed as 16 vectors of lane products
 * and summed into one vector of 16 scores by a transposing reduction (about 3 operations
 * a key, instead of a horizontal sum each); the value rows accumulate into registers
 * that hold the whole output row, several rows in flight. Head sizes that are a multiple
 * of 8 (8, 24, 40, 80, ...) do the same with 8-float vectors, 8 keys at a time. Builds
 * without AVX-512 score on AVX2 where the CPU has it (attention_rows_avx2.c); other head
 * sizes and CPUs use the portable loops of attention.h. */
#include "backends/native/kernels/attention/attention.h"
#include "backends/native/kernels/attention/kv_lanes.h"

#include "base/isa.h"

#if defined(__AVX512F__)
#include <immintrin.h>

/* sum16's first stage for the four vectors a[0..3] (keys 4g..4g+3): 128-bit lane L of
 * the result holds lane L's partial sums of the four. */
static inline __m512 sum16_group(const __m512 *a) {
    /* per 128-bit lane: [a0 + a2, a1... ] pairs, then the four vectors' lane sums */
    __m512 s01 = _mm512_add_ps(_mm512_unpacklo_ps(a[0], a[1]), _mm512_unpackhi_ps(a[0], a[1]));
    __m512 s23 = _mm512_add_ps(_mm512_unpacklo_ps(a[2], a[3]), _mm512_unpackhi_ps(a[2], a[3]));
    return _mm512_add_ps(_mm512_shuffle_ps(s01, s23, _MM_SHUFFLE(1, 0, 1, 0)),
                         _mm512_shuffle_ps(s01, s23, _MM_SHUFFLE(3, 2, 3, 2)));
}

/* sum16's second stage: x[g] = sum16_group(v + 4g); add the 128-bit lanes. */
static inline __m512 sum16_lanes(const __m512 *x) {
    __m512 z01 = _mm512_add_ps(_mm512_shuffle_f32x4(x[0], x[1], _MM_SHUFFLE(1, 0, 1, 0)),
                               _mm512_shuffle_f32x4(x[0], x[1], _MM_SHUFFLE(3, 2, 3, 2)));
    __m512 z23 = _mm512_add_ps(_mm512_shuffle_f32x4(x[2], x[3], _MM_SHUFFLE(1, 0, 1, 0)),
                               _mm512_shuffle_f32x4(x[2], x[3], _MM_SHUFFLE(3, 2, 3, 2)));
    return _mm512_add_ps(_mm512_shuffle_f32x4(z01, z23, _MM_SHUFFLE(2, 0, 2, 0)),
                         _mm512_shuffle_f32x4(z01, z23, _MM_SHUFFLE(3, 1, 3, 1)));
}

/* The sums of 16 vectors: lane i of the result is the sum of the lanes of v[i]. */
static inline __m512 sum16(const __m512 *v) {
    __m512 x[4];
    for (int g = 0; g < 4; g++) x[g] = sum16_group(v + 4 * g);
    return sum16_lanes(x);
}

/* The sums of 8 vectors: lane i of the result is the sum of the lanes of v[i]. */
static inline __m256 sum8(const __m256 *v) {
    __m256 x[2];
    for (int g = 0; g < 2; g++) {
        const __m256 *a = v + 4 * g;
        __m256 s01 = _mm256_add_ps(_mm256_unpacklo_ps(a[0], a[1]), _mm256_unpackhi_ps(a[0], a[1]));
        __m256 s23 = _mm256_add_ps(_mm256_unpacklo_ps(a[2], a[3]), _mm256_unpackhi_ps(a[2], a[3]));
        x[g] = _mm256_add_ps(_mm256_shuffle_ps(s01, s23, _MM_SHUFFLE(1, 0, 1, 0)),
                             _mm256_shuffle_ps(s01, s23, _MM_SHUFFLE(3, 2, 3, 2)));
    }
    /* x[g]'s 128-bit half h holds half h's partial sums of v[4g..4g+3] */
    return _mm256_add_ps(_mm256_permute2f128_ps(x[0], x[1], 0x20),
                         _mm256_permute2f128_ps(x[0], x[1], 0x31));
}

/* D = 8: a key is one vector. */
static void scores8_1(const float *q, const float *k, int64_t n, float scale, float *s) {
    const __m256 qv = _mm256_loadu_ps(q), sc = _mm256_set1_ps(scale);
    int64_t t = 0;
    for (; t + 8 <= n; t += 8) {
        __m256 p[8];
        for (int j = 0; j < 8; j++) p[j] = _mm256_mul_ps(qv, _mm256_loadu_ps(k + 8 * (t + j)));
        _mm256_storeu_ps(s + t, _mm256_mul_ps(sc, sum8(p)));
    }
    if (t < n) {
        __m256 p[8];
        for (int j = 0; j < 8; j++)
            p[j] = t + j < n ? _mm256_mul_ps(qv, _mm256_loadu_ps(k + 8 * (t + j))) : _mm256_setzero_ps();
        float b[8];
        _mm256_storeu_ps(b, _mm256_mul_ps(sc, sum8(p)));
        for (int64_t j = 0; j < n - t; j++) s[t + j] = b[j];
    }
}

static void scores8(const float *q, const float *k, int64_t n, int64_t D, float scale,
                    float *s) {
    if (D == 8) {
        scores8_1(q, k, n, scale, s);
        return;
    }
    const int64_t C = D / 8;
    __m256 qv[32];
    for (int64_t c = 0; c < C; c++) qv[c] = _mm256_loadu_ps(q + 8 * c);
    const __m256 sc = _mm256_set1_ps(scale);
    for (int64_t t = 0; t < n; t += 8) {
        __m256 p[8];
        for (int j = 0; j < 8; j++) {
            p[j] = _mm256_setzero_ps();
            if (t + j >= n) continue; /* zero rows stand in for the missing keys */
            const float *kr = k + (t + j) * D;
            for (int64_t c = 0; c < C; c++) p[j] = _mm256_fmadd_ps(qv[c], _mm256_loadu_ps(kr + 8 * c), p[j]);
        }
        __m256 r = _mm256_mul_ps(sc, sum8(p));
        if (t + 8 <= n) {
            _mm256_storeu_ps(s + t, r);
        } else {
            float b[8];
            _mm256_storeu_ps(b, r);
            for (int64_t j = 0; j < n - t; j++) s[t + j] = b[j];
        }
    }
}

void cpu_attn_scores(const float *q, const float *k, int64_t n, int64_t D, float scale,
                     float *s) {
    if (D % 8 || D > 256) {
        for (int64_t t = 0; t < n; t++) s[t] = scale * cpu_dot(q, k + t * D, D);
        return;
    }
    if (D % 16) {
        scores8(q, k, n, D, scale, s);
        return;
    }
    const int64_t C = D / 16;
    __m512 qv[16];
    for (int64_t c = 0; c < C; c++) qv[c] = _mm512_loadu_ps(q + 16 * c);
    const __m512 sc = _mm512_set1_ps(scale);
    int64_t t = 0;
    for (; t + 16 <= n; t += 16) {
        __m512 p[16];
        const float *kb = k + t * D;
        for (int j = 0; j < 16; j++) {
            const float *kr = kb + j * D;
            __m512 a = _mm512_mul_ps(qv[0], _mm512_loadu_ps(kr));
            for (int64_t c = 1; c < C; c++) a = _mm512_fmadd_ps(qv[c], _mm512_loadu_ps(kr + 16 * c), a);
            p[j] = a;
        }
        _mm512_storeu_ps(s + t, _mm512_mul_ps(sc, sum16(p)));
    }
    if (t < n) { /* the last keys: zero rows stand in for the missing ones */
        __m512 p[16];
        for (int j = 0; j < 16; j++) {
            p[j] = _mm512_setzero_ps();
            if (t + j >= n) continue;
            const float *kr = k + (t + j) * D;
            for (int64_t c = 0; c < C; c++) p[j] = _mm512_fmadd_ps(qv[c], _mm512_loadu_ps(kr + 16 * c), p[j]);
        }
        _mm512_mask_storeu_ps(s + t, (__mmask16)((1u << (n - t)) - 1), _mm512_mul_ps(sc, sum16(p)));
    }
}

/* cpu_attn_scores for H queries (q + h * q_ld; scores at s + h * s_ld) over the same
 * contiguous keys, each key row loaded once for all of them: every query takes exactly
 * cpu_attn_scores' operations (a product, then fused multiply-adds over the 16-float
 * chunks; zero vectors for the keys past n; sum16's two stages), so each gets its bits.
 * The reduction runs per group of four keys, so that H queries hold 8 H vectors. */
static inline __attribute__((always_inline)) void scores_rows_h(const float *q, int64_t q_ld,
                                                               int H, const float *k,
                                                               int64_t n, int64_t C,
                                                               float scale, float *s,
                                                               int64_t s_ld) {
    const __m512 sc = _mm512_set1_ps(scale);
    const int64_t D = 16 * C;
    for (int64_t t = 0; t < n; t += 16) {
        const bool full = t + 16 <= n;
        __m512 x[2][4];
#pragma GCC unroll 4
        for (int g = 0; g < 4; g++) {
            __m512 a[2][4];
#pragma GCC unroll 4
            for (int m = 0; m < 4; m++) {
                int64_t j = t + 4 * g + m;
                const float *kr = k + j * D;
                if (full) {
                    __m512 k0 = _mm512_loadu_ps(kr);
#pragma GCC unroll 2
                    for (int h = 0; h < H; h++) a[h][m] = _mm512_mul_ps(_mm512_loadu_ps(q + h * q_ld), k0);
                    for (int64_t c = 1; c < C; c++) {
                        __m512 kc = _mm512_loadu_ps(kr + 16 * c);
#pragma GCC unroll 2
                        for (int h = 0; h < H; h++)
                            a[h][m] = _mm512_fmadd_ps(_mm512_loadu_ps(q + h * q_ld + 16 * c), kc, a[h][m]);
                    }
                } else { /* cpu_attn_scores' last block: zero, then multiply-adds */
#pragma GCC unroll 2
                    for (int h = 0; h < H; h++) a[h][m] = _mm512_setzero_ps();
                    if (j >= n) continue;
                    for (int64_t c = 0; c < C; c++) {
                        __m512 kc = _mm512_loadu_ps(kr + 16 * c);
#pragma GCC unroll 2
                        for (int h = 0; h < H; h++)
                            a[h][m] = _mm512_fmadd_ps(_mm512_loadu_ps(q + h * q_ld + 16 * c), kc, a[h][m]);
                    }
                }
            }
#pragma GCC unroll 2
            for (int h = 0; h < H; h++) x[h][g] = sum16_group(a[h]);
        }
#pragma GCC unroll 2
        for (int h = 0; h < H; h++) {
            __m512 r = _mm512_mul_ps(sc, sum16_lanes(x[h]));
            if (full)
                _mm512_storeu_ps(s + h * s_ld + t, r);
            else
                _mm512_mask_storeu_ps(s + h * s_ld + t, (__mmask16)((1u << (n - t)) - 1), r);
        }
    }
}

#define SCORES_ROWS(C)                                                                   \
    static void scores_rows_2_##C(const float *q, int64_t q_ld, const float *k, int64_t n, \
                                  float scale, float *s, int64_t s_ld) {               \
        scores_rows_h(q, q_ld, 2, k, n, C, scale, s, s_ld);                              \
    }
SCORES_ROWS(1)
SCORES_ROWS(2)
SCORES_ROWS(4)
SCORES_ROWS(8)
#undef SCORES_ROWS

void cpu_attn_scores_heads(const float *q, int64_t q_ld, int64_t nh, const float *k, int64_t n,
                           int64_t D, float scale, float *s, int64_t s_ld) {
    int64_t h = 0;
    if (D % 16 == 0 && D <= 256)
        for (; h + 2 <= nh; h += 2) {
            const float *qh = q + h * q_ld;
            float *sh = s + h * s_ld;
            switch (D) {
            case 16: scores_rows_2_1(qh, q_ld, k, n, scale, sh, s_ld); break;
            case 32: scores_rows_2_2(qh, q_ld, k, n, scale, sh, s_ld); break;
            case 64: scores_rows_2_4(qh, q_ld, k, n, scale, sh, s_ld); break;
            case 128: scores_rows_2_8(qh, q_ld, k, n, scale, sh, s_ld); break;
            default: scores_rows_h(qh, q_ld, 2, k, n, D / 16, scale, sh, s_ld); break;
            }
        }
    for (; h < nh; h++) cpu_attn_scores(q + h * q_ld, k, n, D, scale, s + h * s_ld);
}

bool cpu_attn_q_fast(int64_t D) {
    return D % 16 == 0 && D <= 256 && isa_active() >= ISA_AVX512;
}

/* Keys with the keys across the lanes (see attention.h): 16 key rows given by pointers
 * (NULL: a zero row) in format fmt (kv_lanes.h; a row of Dr values) transposed 16
 * dimensions at a time over the first D, kt[d * 16 + j] = key j's d. */
static inline __attribute__((always_inline)) void keys_t16(kvl_fmt fmt, const char *const *k,
                                                           const float *ch, int64_t Dr,
                                                           int64_t D, float *kt) {
    kvl_row rs[16];
    for (int j = 0; j < 16; j++) rs[j] = kvl_row_of(fmt, k[j] ? k[j] : k[0], Dr);
    for (int64_t c = 0; c < D / 16; c++) {
        __m512 r[16], t[16], u[16];
        for (int j = 0; j < 16; j++) r[j] = k[j] ? kvl_load(fmt, k[j], rs[j], ch, c) : _mm512_setzero_ps();
        for (int i = 0; i < 8; i++) {
            t[2 * i] = _mm512_unpacklo_ps(r[2 * i], r[2 * i + 1]);
            t[2 * i + 1] = _mm512_unpackhi_ps(r[2 * i], r[2 * i + 1]);
        }
        /* u[4i + m], 128-bit lane L: keys 4i..4i+3 at dimension 4L + m */
        for (int i = 0; i < 4; i++) {
            __m512d a0 = _mm512_castps_pd(t[4 * i]), a1 = _mm512_castps_pd(t[4 * i + 1]);
            __m512d a2 = _mm512_castps_pd(t[4 * i + 2]), a3 = _mm512_castps_pd(t[4 * i + 3]);
            u[4 * i] = _mm512_castpd_ps(_mm512_unpacklo_pd(a0, a2));
            u[4 * i + 1] = _mm512_castpd_ps(_mm512_unpackhi_pd(a0, a2));
            u[4 * i + 2] = _mm512_castpd_ps(_mm512_unpacklo_pd(a1, a3));
            u[4 * i + 3] = _mm512_castpd_ps(_mm512_unpackhi_pd(a1, a3));
        }
        /* per m, a 4 x 4 transpose of 128-bit lanes: dimension 4L + m gets lane L of each */
        float *o = kt + 16 * 16 * c;
        for (int m = 0; m < 4; m++) {
            __m512 s0 = _mm512_shuffle_f32x4(u[m], u[4 + m], _MM_SHUFFLE(1, 0, 1, 0));
            __m512 s1 = _mm512_shuffle_f32x4(u[m], u[4 + m], _MM_SHUFFLE(3, 2, 3, 2));
            __m512 s2 = _mm512_shuffle_f32x4(u[8 + m], u[12 + m], _MM_SHUFFLE(1, 0, 1, 0));
            __m512 s3 = _mm512_shuffle_f32x4(u[8 + m], u[12 + m], _MM_SHUFFLE(3, 2, 3, 2));
            _mm512_storeu_ps(o + 16 * m, _mm512_shuffle_f32x4(s0, s2, _MM_SHUFFLE(2, 0, 2, 0)));
            _mm512_storeu_ps(o + 16 * (4 + m), _mm512_shuffle_f32x4(s0, s2, _MM_SHUFFLE(3, 1, 3, 1)));
            _mm512_storeu_ps(o + 16 * (8 + m), _mm512_shuffle_f32x4(s1, s3, _MM_SHUFFLE(2, 0, 2, 0)));
            _mm512_storeu_ps(o + 16 * (12 + m), _mm512_shuffle_f32x4(s1, s3, _MM_SHUFFLE(3, 1, 3, 1)));
        }
    }
}

bool cpu_attn_keys_t(const float *const *k, int64_t n, int64_t D, float *kt) {
    if (D % 8 || D > 256) return false;
    int64_t D16 = D & ~(int64_t)15;
    for (int64_t t = 0; t < n; t += 16) {
        const float *rows[16];
        for (int64_t j = 0; j < 16; j++) rows[j] = t + j < n ? k[t + j] : NULL;
        /* keys_t16 reads the block 64 bytes of each row at a time, row after row: asking
         * for all of its lines first, in address order, has them come from memory
         * together instead of one row's miss after another (decode after a long prompt,
         * where every key is read once per step; see PERFORMANCE.md) */
        for (int64_t j = 0; j < 16; j++)
            for (int64_t d = 0; rows[j] && d < D; d += 16) _mm_prefetch((const char *)(rows[j] + d), _MM_HINT_T0);
        float *o = kt + t * D;
        keys_t16(KVL_F32, (const char *const *)rows, NULL, D, D16, o);
        for (int64_t d = D16; d < D; d++) /* the last 8 dimensions of a D % 16 == 8 head */
            for (int64_t j = 0; j < 16; j++) o[d * 16 + j] = rows[j] ? rows[j][d] : 0.0f;
    }
    return true;
}

#define KEYS_T_Q(F)                                                                       \
    static void keys_t_##F(const char *const *k, int64_t n, const float *ch, int64_t D,  \
                           size_t row_bytes, float *kt) {                                 \
        for (int64_t t = 0; t < n; t += 16) {                                             \
            const char *rows[16];                                                         \
            for (int64_t j = 0; j < 16; j++) rows[j] = t + j < n ? k[t + j] : NULL;       \
            for (int64_t j = 0; j < 16; j++)                                              \
                for (size_t b = 0; rows[j] && b < row_bytes; b += 64)                     \
                    _mm_prefetch(rows[j] + b, _MM_HINT_T0);                               \
            keys_t16(F, rows, ch, D, D, kt + t * D);                                      \
        }                                                                                 \
    }
KEYS_T_Q(KVL_I8)
KEYS_T_Q(KVL_F8)
KEYS_T_Q(KVL_FIX8)
KEYS_T_Q(KVL_FIX4)
#undef KEYS_T_Q

void cpu_attn_keys_t_q(const kvl_src *f, const char *const *k, int64_t n, float *kt) {
    switch (f->fmt) {
    case KVL_I8: keys_t_KVL_I8(k, n, f->ch, f->D, f->row_bytes, kt); return;
    case KVL_F8: keys_t_KVL_F8(k, n, f->ch, f->D, f->row_bytes, kt); return;
    case KVL_FIX8: keys_t_KVL_FIX8(k, n, f->ch, f->D, f->row_bytes, kt); return;
    case KVL_FIX4: keys_t_KVL_FIX4(k, n, f->ch, f->D, f->row_bytes, kt); return;
    default: cpu_attn_keys_t((const float *const *)k, n, f->D, kt);
    }
}

/* Lane j of a block's result is cpu_attn_scores' value for key j (the same value; a zero
 * may differ in sign): the lane products of dimension l (0 <= l < W, W = 16 or, on the
 * 8-float path, 8) summed over the W-wide chunks c in the same order (a product, then
 * fused multiply-adds), then the W lanes added as sum16 / sum8 add them: per group of
 * four Q_g = (a[4g] + a[4g+2]) + (a[4g+1] + a[4g+3]), then ((Q0 + Q2) + (Q1 + Q3)) for
 * 16 lanes and (Q0 + Q1) for 8. */
static inline __attribute__((always_inline)) void scores_t(const float *q, const float *kt,
                                                          int64_t nb, int64_t C, int W,
                                                          float scale, float *s) {
    const __m512 sc = _mm512_set1_ps(scale);
    const int64_t D = W * C;
    for (int64_t b = 0; b < nb; b++, kt += 16 * D) {
        __m512 Q[4];
#pragma GCC unroll 4
        for (int g = 0; g < W / 4; g++) {
            __m512 a[4];
#pragma GCC unroll 4
            for (int m = 0; m < 4; m++) {
                int l = 4 * g + m;
                a[m] = _mm512_mul_ps(_mm512_set1_ps(q[l]), _mm512_loadu_ps(kt + 16 * l));
                for (int64_t c = 1; c < C; c++)
                    a[m] = _mm512_fmadd_ps(_mm512_set1_ps(q[W * c + l]),
                                           _mm512_loadu_ps(kt + 16 * (W * c + l)), a[m]);
            }
            Q[g] = _mm512_add_ps(_mm512_add_ps(a[0], a[2]), _mm512_add_ps(a[1], a[3]));
        }
        __m512 r = W == 16 ? _mm512_add_ps(_mm512_add_ps(Q[0], Q[2]), _mm512_add_ps(Q[1], Q[3]))
                           : _mm512_add_ps(Q[0], Q[1]);
        _mm512_storeu_ps(s + 16 * b, _mm512_mul_ps(sc, r));
    }
}

/* scores_t for H queries at once (q + h * q_ld, scores at s + h * s_ld), each key vector
 * loaded once for all of them: every query's lanes take exactly scores_t's operations
 * (the groups Q_g are formed in the order 0, 2, 1, 3 to hold fewer registers, then added
 * as scores_t adds them), so each gets scores_t's bits. */
static inline __attribute__((always_inline)) void scores_th(const float *q, int64_t q_ld,
                                                           int H, const float *kt, int64_t nb,
                                                           int64_t C, int W, float scale,
                                                           float *s, int64_t s_ld) {
    const __m512 sc = _mm512_set1_ps(scale);
    const int64_t D = W * C;
    static const int order[4] = {0, 2, 1, 3};
    for (int64_t b = 0; b < nb; b++, kt += 16 * D) {
        __m512 even[4], odd[4]; /* per query: Q0 (+ Q2), Q1 (+ Q3) */
#pragma GCC unroll 4
        for (int gi = 0; gi < W / 4; gi++) {
            int g = W == 16 ? order[gi] : gi;
            __m512 a[4][4];
#pragma GCC unroll 4
            for (int m = 0; m < 4; m++) {
                int l = 4 * g + m;
                __m512 k0 = _mm512_loadu_ps(kt + 16 * l);
#pragma GCC unroll 4
                for (int h = 0; h < H; h++) a[h][m] = _mm512_mul_ps(_mm512_set1_ps(q[h * q_ld + l]), k0);
                for (int64_t c = 1; c < C; c++) {
                    __m512 kc = _mm512_loadu_ps(kt + 16 * (W * c + l));
#pragma GCC unroll 4
                    for (int h = 0; h < H; h++)
                        a[h][m] = _mm512_fmadd_ps(_mm512_set1_ps(q[h * q_ld + W * c + l]), kc, a[h][m]);
                }
            }
#pragma GCC unroll 4
            for (int h = 0; h < H; h++) {
                __m512 Qg = _mm512_add_ps(_mm512_add_ps(a[h][0], a[h][2]), _mm512_add_ps(a[h][1], a[h][3]));
                if (g == 0) even[h] = Qg;
                else if (g == 1) odd[h] = Qg;
                else if (g == 2) even[h] = _mm512_add_ps(even[h], Qg);
                else odd[h] = _mm512_add_ps(odd[h], Qg);
            }
        }
#pragma GCC unroll 4
        for (int h = 0; h < H; h++)
            _mm512_storeu_ps(s + h * s_ld + 16 * b, _mm512_mul_ps(sc, _mm512_add_ps(even[h], odd[h])));
    }
}

/* One head size's scores for H queries (1 to 4). */
static inline __attribute__((always_inline)) void scores_th_d(const float *q, int64_t q_ld,
                                                             int H, const float *kt, int64_t nb,
                                                             int64_t D, float scale, float *s,
                                                             int64_t s_ld) {
    switch (D) {
    case 8: scores_th(q, q_ld, H, kt, nb, 1, 8, scale, s, s_ld); return;
    case 16: scores_th(q, q_ld, H, kt, nb, 1, 16, scale, s, s_ld); return;
    case 32: scores_th(q, q_ld, H, kt, nb, 2, 16, scale, s, s_ld); return;
    case 64: scores_th(q, q_ld, H, kt, nb, 4, 16, scale, s, s_ld); return;
    case 128: scores_th(q, q_ld, H, kt, nb, 8, 16, scale, s, s_ld); return;
    default:
        if (D % 16)
            scores_th(q, q_ld, H, kt, nb, D / 8, 8, scale, s, s_ld);
        else
            scores_th(q, q_ld, H, kt, nb, D / 16, 16, scale, s, s_ld);
    }
}

void cpu_attn_scores_t_heads(const float *q, int64_t q_ld, int64_t nh, const float *kt,
                             int64_t nb, int64_t D, float scale, float *s, int64_t s_ld) {
    int64_t h = 0;
    for (; h + 4 <= nh; h += 4) scores_th_d(q + h * q_ld, q_ld, 4, kt, nb, D, scale, s + h * s_ld, s_ld);
    switch (nh - h) {
    case 3: scores_th_d(q + h * q_ld, q_ld, 3, kt, nb, D, scale, s + h * s_ld, s_ld); return;
    case 2: scores_th_d(q + h * q_ld, q_ld, 2, kt, nb, D, scale, s + h * s_ld, s_ld); return;
    case 1: cpu_attn_scores_t(q + h * q_ld, kt, nb, D, scale, s + h * s_ld); return;
    default: return;
    }
}

void cpu_attn_scores_t(const float *q, const float *kt, int64_t nb, int64_t D, float scale,
                       float *s) {
    switch (D) {
    case 8: scores_t(q, kt, nb, 1, 8, scale, s); return;
    case 16: scores_t(q, kt, nb, 1, 16, scale, s); return;
    case 32: scores_t(q, kt, nb, 2, 16, scale, s); return;
    case 64: scores_t(q, kt, nb, 4, 16, scale, s); return;
    case 128: scores_t(q, kt, nb, 8, 16, scale, s); return;
    default:
        if (D % 16)
            scores_t(q, kt, nb, D / 8, 8, scale, s);
        else
            scores_t(q, kt, nb, D / 16, 16, scale, s);
    }
}

/* y[0..16C) += sum_t p[t] * v[t * ld ..], U rows in flight (independent accumulators). */
#define WEIGHTED(C, U)                                                                   \
    static void weighted_##C(float *y, const float *p, const float *v, int64_t n,       \
                             int64_t ld) {                                               \
        __m512 acc[U][C];                                                                \
        for (int u = 0; u < U; u++)                                                      \
            for (int c = 0; c < C; c++) acc[u][c] = _mm512_setzero_ps();                 \
        int64_t t = 0;                                                                   \
        for (; t + U <= n; t += U)                                                       \
            for (int u = 0; u < U; u++) {                                                \
                __m512 w = _mm512_set1_ps(p[t + u]);                                     \
                const float *r = v + (t + u) * ld;                                       \
                for (int c = 0; c < C; c++)                                              \
                    acc[u][c] = _mm512_fmadd_ps(w, _mm512_loadu_ps(r + 16 * c), acc[u][c]); \
            }                                                                            \
        for (; t < n; t++) {                                                             \
            __m512 w = _mm512_set1_ps(p[t]);                                             \
            const float *r = v + t * ld;                                                 \
            for (int c = 0; c < C; c++)                                                  \
                acc[0][c] = _mm512_fmadd_ps(w, _mm512_loadu_ps(r + 16 * c), acc[0][c]);  \
        }                                                                                \
        for (int c = 0; c < C; c++) {                                                    \
            __m512 a = acc[0][c];                                                        \
            for (int u = 1; u < U; u++) a = _mm512_add_ps(a, acc[u][c]);                 \
            _mm512_storeu_ps(y + 16 * c, _mm512_add_ps(_mm512_loadu_ps(y + 16 * c), a)); \
        }                                                                                \
    }
WEIGHTED(1, 4)
WEIGHTED(2, 4)
WEIGHTED(4, 4)
WEIGHTED(8, 2)
#undef WEIGHTED

/* D = 8: one vector a row, four rows in flight in registers. */
static void weighted8_1(float *y, const float *p, const float *v, int64_t n) {
    __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
    int64_t t = 0;
    for (; t + 4 <= n; t += 4) {
        a0 = _mm256_fmadd_ps(_mm256_set1_ps(p[t]), _mm256_loadu_ps(v + 8 * t), a0);
        a1 = _mm256_fmadd_ps(_mm256_set1_ps(p[t + 1]), _mm256_loadu_ps(v + 8 * t + 8), a1);
        a2 = _mm256_fmadd_ps(_mm256_set1_ps(p[t + 2]), _mm256_loadu_ps(v + 8 * t + 16), a2);
        a3 = _mm256_fmadd_ps(_mm256_set1_ps(p[t + 3]), _mm256_loadu_ps(v + 8 * t + 24), a3);
    }
    for (; t < n; t++) a0 = _mm256_fmadd_ps(_mm256_set1_ps(p[t]), _mm256_loadu_ps(v + 8 * t), a0);
    __m256 s = _mm256_add_ps(_mm256_add_ps(a0, a1), _mm256_add_ps(a2, a3));
    _mm256_storeu_ps(y, _mm256_add_ps(_mm256_loadu_ps(y), s));
}

/* y[0..D) += sum_t p[t] * v[t * D ..] for D a multiple of 8 (at most 256), in 8-float
 * vectors, two rows in flight. */
static void weighted8(float *y, const float *p, const float *v, int64_t n, int64_t D) {
    const int64_t C = D / 8;
    __m256 a0[32], a1[32];
    for (int64_t c = 0; c < C; c++) a0[c] = a1[c] = _mm256_setzero_ps();
    int64_t t = 0;
    for (; t + 2 <= n; t += 2) {
        __m256 w0 = _mm256_set1_ps(p[t]), w1 = _mm256_set1_ps(p[t + 1]);
        const float *r0 = v + t * D, *r1 = r0 + D;
        for (int64_t c = 0; c < C; c++) {
            a0[c] = _mm256_fmadd_ps(w0, _mm256_loadu_ps(r0 + 8 * c), a0[c]);
            a1[c] = _mm256_fmadd_ps(w1, _mm256_loadu_ps(r1 + 8 * c), a1[c]);
        }
    }
    if (t < n) {
        __m256 w0 = _mm256_set1_ps(p[t]);
        for (int64_t c = 0; c < C; c++)
            a0[c] = _mm256_fmadd_ps(w0, _mm256_loadu_ps(v + t * D + 8 * c), a0[c]);
    }
    for (int64_t c = 0; c < C; c++)
        _mm256_storeu_ps(y + 8 * c, _mm256_add_ps(_mm256_loadu_ps(y + 8 * c), _mm256_add_ps(a0[c], a1[c])));
}

void cpu_attn_weighted(float *y, const float *p, const float *v, int64_t n, int64_t D) {
    if (D == 8) {
        weighted8_1(y, p, v, n);
        return;
    }
    if (D % 16 && D % 8 == 0 && D <= 256) {
        weighted8(y, p, v, n, D);
        return;
    }
    switch (D) {
    case 16: weighted_1(y, p, v, n, D); return;
    case 32: weighted_2(y, p, v, n, D); return;
    case 64: weighted_4(y, p, v, n, D); return;
    case 128: weighted_8(y, p, v, n, D); return;
    case 256:
        weighted_8(y, p, v, n, D);
        weighted_8(y + 128, p, v + 128, n, D);
        return;
    default:
        cpu_weighted_rows(y, p, v, D, n, D);
    }
}

#else

bool cpu_attn_q_fast(int64_t D) {
    (void)D;
    return false;
}

void cpu_attn_keys_t_q(const kvl_src *f, const char *const *k, int64_t n, float *kt) {
    (void)f, (void)k, (void)n, (void)kt;
}

bool cpu_attn_keys_t(const float *const *k, int64_t n, int64_t D, float *kt) {
    (void)k, (void)n, (void)D, (void)kt;
    return false;
}

void cpu_attn_scores_t(const float *q, const float *kt, int64_t nb, int64_t D, float scale,
                       float *s) {
    (void)q, (void)kt, (void)nb, (void)D, (void)scale, (void)s;
}

void cpu_attn_scores_t_heads(const float *q, int64_t q_ld, int64_t nh, const float *kt,
                             int64_t nb, int64_t D, float scale, float *s, int64_t s_ld) {
    (void)q, (void)q_ld, (void)nh, (void)kt, (void)nb, (void)D, (void)scale, (void)s, (void)s_ld;
}

/* AVX2 where the CPU has it (attention_rows_avx2.c): one head alone takes the same
 * operations as in a pass of several, so both entries give a key the same bits. */
static bool scores_avx2(int64_t D) {
#if defined(__x86_64__)
    return D % 8 == 0 && D <= 256 && isa_active() >= ISA_AVX2;
#else
    (void)D;
    return false;
#endif
}

void cpu_attn_scores(const float *q, const float *k, int64_t n, int64_t D, float scale,
                     float *s) {
    if (scores_avx2(D)) {
        cpu_attn_scores_heads_avx2(q, D, 1, k, n, D, scale, s, n);
        return;
    }
    for (int64_t t = 0; t < n; t++) s[t] = scale * cpu_dot(q, k + t * D, D);
}

void cpu_attn_scores_heads(const float *q, int64_t q_ld, int64_t nh, const float *k, int64_t n,
                           int64_t D, float scale, float *s, int64_t s_ld) {
    if (scores_avx2(D)) {
        cpu_attn_scores_heads_avx2(q, q_ld, nh, k, n, D, scale, s, s_ld);
        return;
    }
    for (int64_t h = 0; h < nh; h++) cpu_attn_scores(q + h * q_ld, k, n, D, scale, s + h * s_ld);
}

void cpu_attn_weighted(float *y, const float *p, const float *v, int64_t n, int64_t D) {
    cpu_weighted_rows(y, p, v, D, n, D);
}

#endif
