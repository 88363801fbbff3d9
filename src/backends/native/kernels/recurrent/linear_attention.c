/* LinearAttention (default domain from opset 27, com.microsoft version 1): the recurrent
 * form of linear attention, one state matrix S (d_k x d_v) per key/value head.
 *
 * Per token t, with decay g (log space, per head or per head and key dimension) and
 * update rate beta (per head or one for all):
 *     linear       S = S + k v^T
 *     gated        S = e^g S + k v^T                      (e^g scales the rows of S)
 *     delta        S = S + k (beta (v - S^T k))^T
 *     gated_delta  S = e^g S + k (beta (v - (e^g S)^T k))^T
 *     o = scale * S^T q        (after the update; scale 0 means 1 / sqrt(d_k))
 * query is (B, T, H_q d_k), key (B, T, N_k d_k), value (B, T, H_kv d_v) and the state
 * (B, H_kv, d_k, d_v). Heads map as onnxruntime maps them: key head h / (H_kv / N_k)
 * serves value head h; with H_q >= H_kv, query heads h * H_q/H_kv .. + H_q/H_kv - 1 read
 * state h and the output has H_q heads; with fewer query heads (Qwen3.5's inverse GQA)
 * value head h reads query head h * H_q / H_kv and the output has H_kv heads.
 *
 * A prompt runs the same recurrence token by token (no chunked form: at these head sizes
 * it does no fewer multiply-adds, and this loop already runs at vector speed from L1).
 * How:
 *  - The recurrence is independent per column of S, so each block of 32 columns runs a
 *    chunk of up to 64 tokens while it stays in L1; the chunk's per-token vectors are
 *    gathered first (successive tokens' rows lie a whole token width apart).
 *  - One pass over the block per token: the update of token t and the sums that token
 *    t + 1 reads, (e^g S)^T k = S^T (e^g . k) and S^T (e^g . q), share the sweep; then
 *    d = beta (v - that) and o = scale (S_old^T (e^g . q) + (q . k) d) = q^T S_new.
 *  - Within a chunk the block holds S~ = S / e^G, G the decay summed since the chunk's
 *    start (per row), so that the update is S~ += (e^-G . k) d^T with no multiply by the
 *    decay; the decay is folded back into the block (S~ = e^G S~, G = 0) at the chunk's
 *    last token and whenever G would pass -30, where e^-G could overflow.
 * Where onnxruntime's bits are known they are taken instead (they feed MatMulNBits' int8
 * quantization at accuracy_level 4): on CPUs with AVX-512 F/BW/DQ/VL, the delta rules at
 * value head sizes a multiple of 32 run as onnxruntime 1.31 runs them there
 * (la_head_ort512); elsewhere small heads (d_k d_v below 4096) run as its scalar loops do
 * (la_head_ort; on AVX-512 CPUs the rules without delta and other value sizes differ
 * from onnxruntime in the last bits, its order there not found). Larger heads on CPUs
 * without AVX-512 take the fast path below (onnxruntime runs them through MLAS's SGEMM,
 * whose order for them is not reproduced).
 * Work is split over (batch, kv head) pairs; the state is float32 (the present buffer
 * itself when it is float32; past and present may be one buffer). This file is compiled
 * without contraction to fused multiply-adds (the fast path's are explicit). */
#include "backends/native/kernels/attention/attention.h"
#include "backends/native/kernels/recurrent/recurrent.h"

#include "base/isa.h"
#include "base/vmath.h"

#include <math.h>
#if defined(__AVX512F__) || defined(__FMA__)
#include <immintrin.h>
#endif
#include <stdatomic.h>
#include <string.h>

enum { JB = 32, TC = 64 };   /* state columns per block; tokens per chunk */
static const float FOLD_AT = -30.0f; /* fold the decay back before G passes this */

/* The block's 32 columns as vectors: two of 16 with AVX-512, four of 8 with AVX, eight
 * of 4 otherwise (no wider vector than the target has, which would change the ABI of
 * these helpers). EACH(X) expands X once per vector of a block row. */
#if defined(__AVX512F__)
enum { VW = 16 };
#define EACH(X) X(0) X(1)
#elif defined(__AVX__)
enum { VW = 8 };
#define EACH(X) X(0) X(1) X(2) X(3)
#else
enum { VW = 4 };
#define EACH(X) X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7)
#endif
typedef float vf __attribute__((vector_size(VW * 4)));

static inline vf ldv(const float *p) {
    vf v;
    memcpy(&v, p, sizeof v);
    return v;
}
static inline void stv(float *p, vf v) { memcpy(p, &v, sizeof v); }
static inline vf splat(float x) { return (vf){0} + x; }
/* a * b + c, fused where the target has it */
static inline vf fmav(vf a, vf b, vf c) {
#if defined(__AVX512F__)
    return _mm512_fmadd_ps(a, b, c);
#elif defined(__FMA__)
    return _mm256_fmadd_ps(a, b, c);
#else
    return a * b + c;
#endif
}

typedef struct la_job {
    og_dtype sdt;
    const float *q, *k, *v, *g, *beta; /* g: the log decay, NULL without */
    const void *past;  /* storage sdt, or NULL for zeros */
    void *pres;        /* storage sdt, or NULL when not requested */
    float *out;        /* (B, T, H_out d_v) */
    int64_t B, T, Hq, Hkv, Nk, dk, dv, Hout, R, ntasks;
    bool delta, decay_vec, beta_vec, state_in_pres;
    float scale;
    float *work;       /* per worker: work_floats */
    int64_t work_floats;
    atomic_long next;
} la_job;

/* A chunk's per-token vectors (d_k each unless said): ck = e^G . k and cq = e^G . q per
 * query head (R d_k), the sums' coefficients; kk, the update's coefficient of d (e^-G . k,
 * times fold when folding); fold, the row factors S~ takes after the token's update
 * (fold_at[t] says whether it folds); pre, the factors token 0 first folds in when its
 * own decay passes the limit; v (d_v); qk = q . k per query head; beta. */
typedef struct la_tok {
    float *ck, *cq, *kk, *fold, *pre, *v, *qk, *beta, *G, *e;
    bool fold_at[TC], pre_fold;
} la_tok;

/* Block rows S[i][0..32) (rows ld apart): the sums y0 = sum_i c0[i] S[i] and y1 likewise
 * with c1, after an optional update S[i] = a[i] S[i] + k[i] d (a NULL: 1, k NULL: none).
 * One pass; the sums stay in registers. */
static void sweep(float *restrict S, int64_t ld, int64_t dk, const float *restrict a,
                  const float *restrict k, const float *restrict d, const float *restrict c0,
                  const float *restrict c1, float *restrict y0, float *restrict y1) {
#define DECL(e) vf d##e = k ? ldv(d + (e) * VW) : (vf){0}, a##e = {0}, b##e = {0};
    EACH(DECL)
#undef DECL
#define SUMS(e)                                                                          \
    a##e = fmav(x, sv##e, a##e);                                                         \
    b##e = fmav(y, sv##e, b##e);
    if (!k) {
        for (int64_t i = 0; i < dk; i++) {
            const float *s = S + i * ld;
            vf x = splat(c0[i]), y = splat(c1[i]);
#define STEP(e)                                                                          \
    vf sv##e = ldv(s + (e) * VW);                                                        \
    SUMS(e)
            EACH(STEP)
#undef STEP
        }
    } else if (!a) {
        for (int64_t i = 0; i < dk; i++) {
            float *s = S + i * ld;
            vf ki = splat(k[i]), x = splat(c0[i]), y = splat(c1[i]);
#define STEP(e)                                                                          \
    vf sv##e = fmav(ki, d##e, ldv(s + (e) * VW));                                        \
    stv(s + (e) * VW, sv##e);                                                            \
    SUMS(e)
            EACH(STEP)
#undef STEP
        }
    } else {
        for (int64_t i = 0; i < dk; i++) {
            float *s = S + i * ld;
            vf ai = splat(a[i]), ki = splat(k[i]), x = splat(c0[i]), y = splat(c1[i]);
#define STEP(e)                                                                          \
    vf sv##e = fmav(ai, ldv(s + (e) * VW), ki * d##e);                                   \
    stv(s + (e) * VW, sv##e);                                                            \
    SUMS(e)
            EACH(STEP)
#undef STEP
        }
    }
#undef SUMS
#define STORE(e) stv(y0 + (e) * VW, a##e), stv(y1 + (e) * VW, b##e);
    EACH(STORE)
#undef STORE
}

/* The update alone: S[i] = a[i] S[i] + k[i] d (a NULL: 1). */
static void update(float *restrict S, int64_t ld, int64_t dk, const float *restrict a,
                   const float *restrict k, const float *restrict d) {
#define DECL(e) vf d##e = ldv(d + (e) * VW);
    EACH(DECL)
#undef DECL
    for (int64_t i = 0; i < dk; i++) {
        float *s = S + i * ld;
        vf ki = splat(k[i]);
        if (a) {
            vf ai = splat(a[i]);
#define STEP(e) stv(s + (e) * VW, fmav(ai, ldv(s + (e) * VW), ki * d##e));
            EACH(STEP)
#undef STEP
        } else {
#define STEP(e) stv(s + (e) * VW, fmav(ki, d##e, ldv(s + (e) * VW)));
            EACH(STEP)
#undef STEP
        }
    }
}

/* d = beta (v - rv) over a block row (n <= 32 columns). */
static void delta_row(float *restrict d, float beta, const float *restrict v,
                      const float *restrict rv, int64_t n) {
    if (n == JB) {
        vf b = splat(beta);
#define STEP(e) stv(d + (e) * VW, b * (ldv(v + (e) * VW) - ldv(rv + (e) * VW)));
        EACH(STEP)
#undef STEP
        return;
    }
    for (int64_t e = 0; e < n; e++) d[e] = beta * (v[e] - rv[e]);
}

/* o = scale (u + qk d) over a block row (n <= 32 columns). */
static void out_row(float *restrict o, float scale, const float *restrict u, float qk,
                    const float *restrict d, int64_t n) {
    if (n == JB) {
        vf sc = splat(scale), q = splat(qk);
#define STEP(e) stv(o + (e) * VW, sc * fmav(q, ldv(d + (e) * VW), ldv(u + (e) * VW)));
        EACH(STEP)
#undef STEP
        return;
    }
    for (int64_t e = 0; e < n; e++) o[e] = scale * (u[e] + qk * d[e]);
}

/* Both for a block narrower than 32 columns (n < 32), plainly. */
static void sweep_tail(float *S, int64_t ld, int64_t dk, int64_t n, const float *a,
                       const float *k, const float *d, const float *c0, const float *c1,
                       float *y0, float *y1) {
    for (int64_t e = 0; e < n; e++) y0[e] = y1[e] = 0.0f;
    for (int64_t i = 0; i < dk; i++)
        for (int64_t e = 0; e < n; e++) {
            float *s = S + i * ld + e;
            if (k) *s = (a ? a[i] : 1.0f) * *s + k[i] * d[e];
            y0[e] += c0[i] * *s;
            y1[e] += c1[i] * *s;
        }
}

static void update_tail(float *S, int64_t ld, int64_t dk, int64_t n, const float *a,
                        const float *k, const float *d) {
    for (int64_t i = 0; i < dk; i++)
        for (int64_t e = 0; e < n; e++)
            S[i * ld + e] = (a ? a[i] : 1.0f) * S[i * ld + e] + k[i] * d[e];
}

static void prefetch_rows(const float *p, int64_t n) {
    for (int64_t i = 0; i < n; i += 16) __builtin_prefetch(p + i);
}

/* y = a * b elementwise (blocks of eight, so that it vectorizes). */
static void mul_rows(float *restrict y, const float *restrict a, const float *restrict b,
                     int64_t n) {
    int64_t n8 = n & ~(int64_t)7;
    for (int64_t i = 0; i < n8; i += 8)
        for (int e = 0; e < 8; e++) y[i + e] = a[i + e] * b[i + e];
    for (int64_t i = n8; i < n; i++) y[i] = a[i] * b[i];
}

/* y *= f elementwise. */
static void scale_rows(float *restrict y, const float *restrict f, int64_t n) {
    int64_t n8 = n & ~(int64_t)7;
    for (int64_t i = 0; i < n8; i += 8)
        for (int e = 0; e < 8; e++) y[i + e] *= f[i + e];
    for (int64_t i = n8; i < n; i++) y[i] *= f[i];
}

/* Gathers tokens [t0, t0 + n) of (batch b, kv head h) into the chunk's vectors, and
 * places the decay folds (see the top of the file). */
static void la_gather(const la_job *j, int64_t b, int64_t h, int64_t t0, int64_t n,
                      la_tok *c) {
    int64_t dk = j->dk, dv = j->dv, R = j->R;
    int64_t hk = h / (j->Hkv / j->Nk), hq0 = j->Hq >= j->Hkv ? h * R : h * j->Hq / j->Hkv;
    float *G = c->G, *e = c->e; /* G: decay summed since the last fold; e: scratch */
    for (int64_t i = 0; i < dk; i++) G[i] = 0.0f;
    c->pre_fold = false;
    for (int64_t t = 0; t < n; t++) {
        int64_t bt = b * j->T + t0 + t;
        const float *kt = j->k + (bt * j->Nk + hk) * dk;
        float *ck = c->ck + t * dk, *kk = c->kk + t * dk;
        if (t + 2 < n) { /* the rows two tokens on, a whole token width away each */
            prefetch_rows(kt + 2 * j->Nk * dk, dk);
            prefetch_rows(j->v + ((bt + 2) * j->Hkv + h) * dv, dv);
            prefetch_rows(j->q + ((bt + 2) * j->Hq + hq0) * dk, R * dk);
        }
        memcpy(c->v + t * dv, j->v + (bt * j->Hkv + h) * dv, sizeof(float) * (size_t)dv);
        c->fold_at[t] = false;
        if (j->g) {
            const float *gt = j->g + (bt * j->Hkv + h) * (j->decay_vec ? dk : 1);
            float lo = 0.0f;
            for (int64_t i = 0; i < dk; i++) {
                e[i] = G[i] + gt[j->decay_vec ? i : 0];
                lo = e[i] < lo ? e[i] : lo;
            }
            if (lo < FOLD_AT) {
                /* fold e^(G + g) into S~ before this token (with the previous token's
                 * update, or first thing for a chunk's first token): G restarts at 0 */
                float *f = t ? c->fold + (t - 1) * dk : c->pre;
                vexp_f32(e, f, dk);
                if (t) {
                    c->fold_at[t - 1] = true;
                    scale_rows(c->kk + (t - 1) * dk, f, dk);
                } else {
                    c->pre_fold = true;
                }
                for (int64_t i = 0; i < dk; i++) G[i] = 0.0f;
            } else {
                memcpy(G, e, sizeof(float) * (size_t)dk);
            }
            vexp_f32(G, e, dk); /* e^G */
            mul_rows(ck, e, kt, dk);
            for (int64_t r = 0; r < R; r++)
                mul_rows(c->cq + (t * R + r) * dk, e, j->q + (bt * j->Hq + hq0 + r) * dk, dk);
            if (t == n - 1) {
                /* the chunk ends with S~ folded back to S: the update's k is plain k */
                memcpy(c->fold + t * dk, e, sizeof(float) * (size_t)dk);
                memcpy(kk, kt, sizeof(float) * (size_t)dk);
                c->fold_at[t] = true;
            } else {
                for (int64_t i = 0; i < dk; i++) e[i] = -G[i];
                vexp_f32(e, e, dk); /* e^-G */
                mul_rows(kk, e, kt, dk);
            }
        } else {
            memcpy(ck, kt, sizeof(float) * (size_t)dk);
            memcpy(kk, kt, sizeof(float) * (size_t)dk);
            for (int64_t r = 0; r < R; r++)
                memcpy(c->cq + (t * R + r) * dk, j->q + (bt * j->Hq + hq0 + r) * dk,
                       sizeof(float) * (size_t)dk);
        }
        for (int64_t r = 0; r < R; r++)
            c->qk[t * R + r] = cpu_dot(j->q + (bt * j->Hq + hq0 + r) * dk, kt, dk);
        if (j->delta) c->beta[t] = j->beta[j->beta_vec ? bt * j->Hkv + h : bt];
    }
}

/* Where the pass-1 sums go: rv (delta rule), u (R heads of JB), and a spare row for the
 * second sum of an odd last pair. */
typedef struct la_sums {
    float *rv, *u, *spare;
} la_sums;

/* Pair p of token t's sums: under the delta rule (ck, cq_0), then (cq_1, cq_2), ...;
 * otherwise (cq_0, cq_1), ... An odd last head pairs with itself, its second sum going
 * to the spare row. */
static void pair_ptrs(const la_job *j, const la_tok *c, int64_t t, int64_t p, la_sums s,
                      const float **c0, const float **c1, float **y0, float **y1) {
    int64_t R = j->R, dk = j->dk, r0 = 2 * p - j->delta, r1 = r0 + 1 < R ? r0 + 1 : r0;
    const float *cq = c->cq + t * R * dk;
    *c0 = r0 < 0 ? c->ck + t * dk : cq + r0 * dk;
    *c1 = cq + r1 * dk;
    *y0 = r0 < 0 ? s.rv : s.u + r0 * JB;
    *y1 = r1 != r0 ? s.u + r1 * JB : s.spare;
}

/* Sum pair p of token t over the block, after the update (a, k, d) when k is not NULL. */
static void pass(const la_job *j, const la_tok *c, int64_t t, int64_t p, float *Sb,
                 int64_t ld, int64_t nb, const float *a, const float *k, const float *d,
                 la_sums s) {
    const float *c0, *c1;
    float *y0, *y1;
    pair_ptrs(j, c, t, p, s, &c0, &c1, &y0, &y1);
    if (nb == JB)
        sweep(Sb, ld, j->dk, a, k, d, c0, c1, y0, y1);
    else
        sweep_tail(Sb, ld, j->dk, nb, a, k, d, c0, c1, y0, y1);
}

/* One (batch, kv head) through all T tokens, chunk by chunk (see the top of the file). */
static void la_head(la_job *j, int64_t task, float *w) {
    int64_t b = task / j->Hkv, h = task % j->Hkv, dk = j->dk, dv = j->dv, R = j->R;
    int64_t ho0 = j->Hq >= j->Hkv ? h * R : h; /* first output head */
    size_t es = j->sdt == OG_FLOAT32 ? 4 : 2, n_state = (size_t)(dk * dv);
    float *S = j->state_in_pres ? (float *)j->pres + task * dk * dv : w;
    float *cw = w + (j->state_in_pres ? 0 : dk * dv);
    la_tok c;
    c.ck = cw, c.cq = c.ck + TC * dk, c.kk = c.cq + TC * R * dk, c.fold = c.kk + TC * dk;
    c.pre = c.fold + TC * dk, c.G = c.pre + dk, c.e = c.G + dk, c.v = c.e + dk;
    c.qk = c.v + TC * dv, c.beta = c.qk + TC * R;
    float *rv = c.beta + TC, *u = rv + JB, *d = u + R * JB, *spare = d + JB, *Sc = spare + JB;
    la_sums sums = {rv, u, spare};
    int64_t np = (R + j->delta + 1) / 2; /* pairs of sums per token */
    const void *past_here = j->past ? (const char *)j->past + (size_t)task * n_state * es : NULL;
    if (past_here && (const void *)S != past_here)
        cpu_load_f32(j->sdt, past_here, dk * dv, S);
    else if (!past_here)
        memset(S, 0, sizeof(float) * n_state);
    for (int64_t t0 = 0; t0 < j->T; t0 += TC) {
        int64_t n = j->T - t0 < TC ? j->T - t0 : TC;
        la_gather(j, b, h, t0, n, &c);
        for (int64_t j0 = 0; j0 < dv; j0 += JB) {
            int64_t nb = dv - j0 < JB ? dv - j0 : JB;
            /* several tokens: the block as contiguous rows (rows a state row apart would
             * share a few L1 sets); one token reads it in place */
            bool copy = n >= 4;
            float *Sb = copy ? Sc : S + j0;
            int64_t ld = copy ? JB : dv;
            if (copy)
                for (int64_t i = 0; i < dk; i++)
                    memcpy(Sb + i * JB, S + i * dv + j0, sizeof(float) * (size_t)nb);
            if (c.pre_fold) {
                memset(d, 0, sizeof(float) * JB);
                if (nb == JB)
                    update(Sb, ld, dk, c.pre, c.kk, d);
                else
                    update_tail(Sb, ld, dk, nb, c.pre, c.kk, d);
            }
            for (int64_t p = 0; p < np; p++) pass(j, &c, 0, p, Sb, ld, nb, NULL, NULL, NULL, sums);
            for (int64_t t = 0; t < n; t++) {
                const float *vt = c.v + t * dv + j0, *kk = c.kk + t * dk;
                const float *fold = c.fold_at[t] ? c.fold + t * dk : NULL;
                if (j->delta)
                    delta_row(d, c.beta[t], vt, rv, nb);
                else
                    memcpy(d, vt, sizeof(float) * (size_t)nb);
                /* o = scale (u + (q . k) d), which is q^T S_new */
                int64_t bt = b * j->T + t0 + t;
                for (int64_t r = 0; r < R; r++)
                    out_row(j->out + (bt * j->Hout + ho0 + r) * dv + j0, j->scale, u + r * JB,
                            c.qk[t * R + r], d, nb);
                /* the update, sharing its sweep with the next token's first sums */
                if (t + 1 < n) {
                    pass(j, &c, t + 1, 0, Sb, ld, nb, fold, kk, d, sums);
                    for (int64_t p = 1; p < np; p++)
                        pass(j, &c, t + 1, p, Sb, ld, nb, NULL, NULL, NULL, sums);
                } else if (nb == JB) {
                    update(Sb, ld, dk, fold, kk, d);
                } else {
                    update_tail(Sb, ld, dk, nb, fold, kk, d);
                }
            }
            if (copy)
                for (int64_t i = 0; i < dk; i++)
                    memcpy(S + i * dv + j0, Sb + i * JB, sizeof(float) * (size_t)nb);
        }
    }
    if (j->pres && !j->state_in_pres)
        cpu_store_f32(j->sdt, (char *)j->pres + (size_t)task * n_state * es, dk * dv, S);
}

/* onnxruntime's arithmetic for heads of d_k d_v < 4096, token by token: the decay
 * (expf) scales S in place; under the delta rule r = S^T k (each column summed from 0 in
 * key order, products rounded, no fused multiply-add), d = beta (v - r) and
 * S += k d^T, otherwise S += k v^T; o = scale * (q^T S), summed likewise. */
static void la_head_ort(la_job *j, int64_t task, float *w) {
    int64_t b = task / j->Hkv, h = task % j->Hkv, dk = j->dk, dv = j->dv, R = j->R;
    int64_t hk = h / (j->Hkv / j->Nk), hq0 = j->Hq >= j->Hkv ? h * R : h * j->Hq / j->Hkv;
    int64_t ho0 = j->Hq >= j->Hkv ? h * R : h;
    size_t n_state = (size_t)(dk * dv);
    float *S = j->state_in_pres ? (float *)j->pres + task * dk * dv : w;
    float *r = j->state_in_pres ? w : w + dk * dv;
    const void *past_here = j->past ? (const char *)j->past + (size_t)task * n_state * 4 : NULL;
    if (past_here && (const void *)S != past_here)
        memcpy(S, past_here, sizeof(float) * n_state);
    else if (!past_here)
        memset(S, 0, sizeof(float) * n_state);
    for (int64_t t = 0; t < j->T; t++) {
        int64_t bt = b * j->T + t;
        const float *kt = j->k + (bt * j->Nk + hk) * dk, *vt = j->v + (bt * j->Hkv + h) * dv;
        if (j->g) {
            const float *gt = j->g + (bt * j->Hkv + h) * (j->decay_vec ? dk : 1);
            for (int64_t i = 0; i < dk; i++) {
                float e = expf(gt[j->decay_vec ? i : 0]);
                for (int64_t c = 0; c < dv; c++) S[i * dv + c] *= e;
            }
        }
        const float *d = vt;
        if (j->delta) {
            float bt_rate = j->beta[j->beta_vec ? bt * j->Hkv + h : bt];
            for (int64_t c = 0; c < dv; c++) {
                float acc = 0.0f;
                for (int64_t i = 0; i < dk; i++) acc += S[i * dv + c] * kt[i];
                r[c] = bt_rate * (vt[c] - acc);
            }
            d = r;
        }
        for (int64_t i = 0; i < dk; i++)
            for (int64_t c = 0; c < dv; c++) S[i * dv + c] += kt[i] * d[c];
        for (int64_t q = 0; q < R; q++) {
            const float *qt = j->q + (bt * j->Hq + hq0 + q) * dk;
            float *ot = j->out + (bt * j->Hout + ho0 + q) * dv;
            for (int64_t c = 0; c < dv; c++) {
                float acc = 0.0f;
                for (int64_t i = 0; i < dk; i++) acc += qt[i] * S[i * dv + c];
                ot[c] = j->scale * acc;
            }
        }
    }
    if (j->pres && !j->state_in_pres) memcpy((float *)j->pres + task * dk * dv, S, sizeof(float) * n_state);
}

/* onnxruntime 1.31's arithmetic on CPUs with AVX-512 F/BW/DQ/VL (isa_cpu_avx512_core, as
 * MLAS picks its kernels) for the delta rules at value head sizes a multiple of 32, any
 * key head size, token by token (found against onnxruntime on a Zen 4, bit for bit, d_k
 * 16..128, d_v 32..128, per-head and per-key decay, prompts of 130 tokens): with
 * e = expf(g) per key row,
 *     r = sum_i (k_i e_i) S_i        a fused chain over the key rows from zero (S old)
 *     d = beta (v - r)
 *     a = sum_i (q_i e_i) S_i        likewise, per query head
 *     qk = q . k                     sixteen fused lanes (i mod 16), halved in order
 *     o = scale * fma(qk, d, a)
 *     S_i = fma(e_i, S_i, k_i d)     each product k_i d rounded first (the delta rule,
 *                                    with no decay: S_i = fma(k_i, d, S_i)).
 * (Heads of other sizes there, and the rules without delta, keep the other paths.) */
static float dot16_halved(const float *x, const float *y, int64_t n) {
    float ln[16] = {0};
    for (int64_t i = 0; i < n; i++) ln[i & 15] = fmaf(x[i], y[i], ln[i & 15]);
    for (int w = 8; w >= 1; w /= 2)
        for (int l = 0; l < w; l++) ln[l] = ln[l] + ln[l + w];
    return ln[0];
}

/* Where the target fuses vector multiply-adds (fmav), the chains above run on 32 columns
 * at a time: sweep's sums start from zero and add c[i] S_i in key-row order with one fused
 * multiply-add per element, and update's S_i = fma(e_i, S_i, k_i d) rounds k_i d first,
 * which is each element's scalar chain; the sums of r and of the first query head share
 * one pass over S. Without fused vectors the scalar loops run. */
#if defined(__AVX512F__) || defined(__FMA__)
enum { ORT512_VEC = 1 };
#else
enum { ORT512_VEC = 0 };
#endif

static void la_head_ort512(la_job *j, int64_t task, float *w) {
    int64_t b = task / j->Hkv, h = task % j->Hkv, dk = j->dk, dv = j->dv, R = j->R;
    int64_t hk = h / (j->Hkv / j->Nk), hq0 = j->Hq >= j->Hkv ? h * R : h * j->Hq / j->Hkv;
    int64_t ho0 = j->Hq >= j->Hkv ? h * R : h;
    size_t n_state = (size_t)(dk * dv);
    float *S = j->state_in_pres ? (float *)j->pres + task * dk * dv : w;
    float *r = j->state_in_pres ? w : w + dk * dv, *e = r + dv, *ke = e + dk, *qe = ke + dk,
          *a = qe + R * dk; /* qe: R rows of d_k, a: R rows of d_v */
    const void *past_here = j->past ? (const char *)j->past + (size_t)task * n_state * 4 : NULL;
    if (past_here && (const void *)S != past_here)
        memcpy(S, past_here, sizeof(float) * n_state);
    else if (!past_here)
        memset(S, 0, sizeof(float) * n_state);
    for (int64_t t = 0; t < j->T; t++) {
        int64_t bt = b * j->T + t;
        const float *kt = j->k + (bt * j->Nk + hk) * dk, *vt = j->v + (bt * j->Hkv + h) * dv;
        const float *gt = j->g ? j->g + (bt * j->Hkv + h) * (j->decay_vec ? dk : 1) : NULL;
        for (int64_t i = 0; i < dk; i++) {
            e[i] = gt ? expf(gt[j->decay_vec ? i : 0]) : 1.0f;
            ke[i] = kt[i] * e[i];
        }
        for (int64_t q = 0; q < R; q++) {
            const float *qt = j->q + (bt * j->Hq + hq0 + q) * dk;
            for (int64_t i = 0; i < dk; i++) qe[q * dk + i] = qt[i] * e[i];
        }
        if (ORT512_VEC) { /* r with the first head's a, then the other heads' a in pairs */
            for (int64_t c = 0; c < dv; c += JB) {
                sweep(S + c, dv, dk, NULL, NULL, NULL, ke, qe, r + c, a + c);
                for (int64_t q = 1; q < R; q += 2) {
                    int64_t q1 = q + 1 < R ? q + 1 : q;
                    sweep(S + c, dv, dk, NULL, NULL, NULL, qe + q * dk, qe + q1 * dk,
                          a + q * dv + c, a + q1 * dv + c);
                }
            }
        } else {
            for (int64_t c = 0; c < dv; c++) r[c] = 0.0f;
            for (int64_t i = 0; i < dk; i++)
                for (int64_t c = 0; c < dv; c++) r[c] = fmaf(ke[i], S[i * dv + c], r[c]);
            for (int64_t q = 0; q < R; q++) {
                float *aq = a + q * dv;
                for (int64_t c = 0; c < dv; c++) aq[c] = 0.0f;
                for (int64_t i = 0; i < dk; i++)
                    for (int64_t c = 0; c < dv; c++)
                        aq[c] = fmaf(qe[q * dk + i], S[i * dv + c], aq[c]);
            }
        }
        float rate = j->beta[j->beta_vec ? bt * j->Hkv + h : bt];
        for (int64_t c = 0; c < dv; c++) r[c] = rate * (vt[c] - r[c]); /* now d */
        for (int64_t q = 0; q < R; q++) {
            const float *qt = j->q + (bt * j->Hq + hq0 + q) * dk;
            const float *aq = a + q * dv;
            float qk = dot16_halved(qt, kt, dk);
            float *ot = j->out + (bt * j->Hout + ho0 + q) * dv;
            for (int64_t c = 0; c < dv; c++) ot[c] = fmaf(qk, r[c], aq[c]) * j->scale;
        }
        if (ORT512_VEC) {
            for (int64_t c = 0; c < dv; c += JB) update(S + c, dv, dk, gt ? e : NULL, kt, r + c);
        } else if (gt) {
            for (int64_t i = 0; i < dk; i++)
                for (int64_t c = 0; c < dv; c++) {
                    float kd = kt[i] * r[c];
                    S[i * dv + c] = fmaf(e[i], S[i * dv + c], kd);
                }
        } else { /* no decay: one fused multiply-add onto S */
            for (int64_t i = 0; i < dk; i++)
                for (int64_t c = 0; c < dv; c++) S[i * dv + c] = fmaf(kt[i], r[c], S[i * dv + c]);
        }
    }
    if (j->pres && !j->state_in_pres) memcpy((float *)j->pres + task * dk * dv, S, sizeof(float) * n_state);
}

static void la_worker(void *arg, int64_t begin, int64_t end) {
    la_job *j = arg;
    (void)end;
    float *w = j->work + begin * j->work_floats;
    for (;;) {
        long t = atomic_fetch_add(&j->next, 1);
        if (t >= j->ntasks) break;
        if (j->sdt == OG_FLOAT32 && j->delta && j->dv % 32 == 0 && isa_cpu_avx512_core())
            la_head_ort512(j, t, w);
        else if (j->sdt == OG_FLOAT32 && j->dk * j->dv < 4096)
            la_head_ort(j, t, w);
        else
            la_head(j, t, w);
    }
}

static og_status *check_gate(kernel_ctx *ctx, int i, const char *what, int64_t B, int64_t T,
                             int64_t n1, int64_t n2, bool *vec) {
    const tensor *t = kernel_input(ctx, i);
    char a[96];
    if (t->rank == 3 && t->dims[0] == B && t->dims[1] == T && (t->dims[2] == n1 || t->dims[2] == n2)) {
        *vec = t->dims[2] == n1;
        return NULL;
    }
    return kernel_errorf(ctx, OG_ERR_INVALID_ARGUMENT, "input %d (%s) has shape %s, expected "
                         "(%lld, %lld, %lld) or (%lld, %lld, %lld)", i, what,
                         shape_str(t->dims, t->rank, a, sizeof a), (long long)B, (long long)T,
                         (long long)n1, (long long)B, (long long)T, (long long)n2);
}

og_status *cpu_linear_attention(kernel_ctx *ctx) {
    OG_TRY(kernel_require_inputs(ctx, 3));
    const graph_node *node = ctx->node;
    const tensor *q = ctx->inputs[0], *k = ctx->inputs[1], *v = ctx->inputs[2];
    const tensor *past = kernel_input(ctx, 3), *g = kernel_input(ctx, 4), *beta = kernel_input(ctx, 5);
    og_dtype dt = q->dtype;
    char a[96];
    if (!cpu_is_f32able(dt)) return kernel_unsupported_dtype(ctx, 0, dt);
    static const char *names[] = {"query", "key", "value", "past_state", "decay", "beta"};
    for (int i = 1; i < 6; i++) {
        const tensor *t = kernel_input(ctx, i);
        if (t && (i == 3 ? !cpu_is_f32able(t->dtype) : t->dtype != dt))
            return kernel_errorf(ctx, OG_ERR_INVALID_ARGUMENT, "input %d (%s) is %s, expected %s",
                                 i, names[i], og_dtype_name(t->dtype),
                                 i == 3 ? "float32, float16 or bfloat16" : og_dtype_name(dt));
    }
    int64_t window = graph_attr_int(node, "state_window", 0);
    if (window != 0)
        return kernel_errorf(ctx, OG_ERR_UNSUPPORTED, "state_window=%lld (per-token state "
                             "slots) is not implemented", (long long)window);
    const char *rule = graph_attr_string(node, "update_rule", "gated_delta");
    la_job j = {.Hq = graph_attr_int(node, "q_num_heads", 0),
                .Hkv = graph_attr_int(node, "kv_num_heads", 0)};
    bool gated = false;
    if (!strcmp(rule, "linear")) {
    } else if (!strcmp(rule, "gated")) {
        gated = true;
    } else if (!strcmp(rule, "delta")) {
        j.delta = true;
    } else if (!strcmp(rule, "gated_delta")) {
        gated = j.delta = true;
    } else {
        return kernel_errorf(ctx, OG_ERR_INVALID_MODEL, "update_rule '%s' is not one of linear, "
                             "gated, delta, gated_delta", rule);
    }
    bool onnx = node->domain[0] == '\0';
    if (j.Hq <= 0 || j.Hkv <= 0 || (j.Hq >= j.Hkv ? j.Hq % j.Hkv : j.Hkv % j.Hq) ||
        (onnx && j.Hq % j.Hkv))
        return kernel_errorf(ctx, OG_ERR_INVALID_MODEL, "q_num_heads %lld and kv_num_heads %lld "
                             "must be positive and %s", (long long)j.Hq, (long long)j.Hkv,
                             onnx ? "q_num_heads a multiple of kv_num_heads"
                                  : "one a multiple of the other");
    if (q->rank != 3 || k->rank != 3 || v->rank != 3 || k->dims[0] != q->dims[0] ||
        v->dims[0] != q->dims[0] || k->dims[1] != q->dims[1] || v->dims[1] != q->dims[1])
        return kernel_errorf(ctx, OG_ERR_INVALID_ARGUMENT, "query %s, key and value must be "
                             "(batch, tokens, heads * head_size) with equal batch and tokens",
                             shape_str(q->dims, q->rank, a, sizeof a));
    j.B = q->dims[0], j.T = q->dims[1];
    if (q->dims[2] % j.Hq || v->dims[2] % j.Hkv)
        return kernel_errorf(ctx, OG_ERR_INVALID_ARGUMENT, "query width %lld or value width %lld "
                             "does not split into %lld / %lld heads", (long long)q->dims[2],
                             (long long)v->dims[2], (long long)j.Hq, (long long)j.Hkv);
    j.dk = q->dims[2] / j.Hq, j.dv = v->dims[2] / j.Hkv;
    j.Nk = j.dk ? k->dims[2] / j.dk : 0;
    if (j.dk == 0 || j.dv == 0 || k->dims[2] % j.dk || j.Nk == 0 || j.Hkv % j.Nk ||
        (onnx && j.Nk != j.Hkv))
        return kernel_errorf(ctx, OG_ERR_INVALID_ARGUMENT, "key width %lld must be a whole "
                             "number of heads of %lld whose count divides kv_num_heads %lld",
                             (long long)k->dims[2], (long long)j.dk, (long long)j.Hkv);
    if (gated && !g)
        return kernel_errorf(ctx, OG_ERR_INVALID_MODEL, "update_rule %s needs input 4 (decay)", rule);
    if (j.delta && !beta)
        return kernel_errorf(ctx, OG_ERR_INVALID_MODEL, "update_rule %s needs input 5 (beta)", rule);
    if (gated) OG_TRY(check_gate(ctx, 4, "decay", j.B, j.T, j.Hkv * j.dk, j.Hkv, &j.decay_vec));
    if (j.delta) OG_TRY(check_gate(ctx, 5, "beta", j.B, j.T, j.Hkv, 1, &j.beta_vec));
    if (gated && j.dk == 1) j.decay_vec = true; /* the same values either way */
    int64_t sd[4] = {j.B, j.Hkv, j.dk, j.dv};
    if (past) OG_TRY(cpu_want_shape(ctx, 3, "past_state", 4, sd));
    float sc = graph_attr_float(node, "scale", 0.0f);
    j.scale = sc != 0.0f ? sc : 1.0f / sqrtf((float)j.dk);
    j.R = j.Hq >= j.Hkv ? j.Hq / j.Hkv : 1;
    j.Hout = j.Hq > j.Hkv ? j.Hq : j.Hkv;
    j.sdt = past ? past->dtype : dt;

    int64_t od[3] = {j.B, j.T, j.Hout * j.dv};
    tensor *out, *pres = NULL;
    OG_TRY(kernel_output(ctx, 0, dt, 3, od, &out));
    if (cpu_wants_output(ctx, 1)) OG_TRY(kernel_output(ctx, 1, j.sdt, 4, sd, &pres));
    j.ntasks = j.B * j.Hkv;
    if (j.ntasks == 0 || j.dk == 0) return NULL;
    j.past = past ? past->data : NULL;
    j.pres = pres ? pres->data : NULL;
    j.state_in_pres = pres && pres->dtype == OG_FLOAT32;
    OG_TRY(cpu_in_f32(ctx, 0, &j.q));
    OG_TRY(cpu_in_f32(ctx, 1, &j.k));
    OG_TRY(cpu_in_f32(ctx, 2, &j.v));
    if (j.delta) OG_TRY(cpu_in_f32(ctx, 5, &j.beta));
    if (gated) OG_TRY(cpu_in_f32(ctx, 4, &j.g));
    OG_TRY(cpu_out_f32(ctx, out, &j.out));
    /* per worker: the state unless it lives in the present, the chunk's vectors (see
     * la_tok), rv, u, d, the spare row and the state block */
    j.work_floats = (j.state_in_pres ? 0 : j.dk * j.dv) + TC * ((3 + j.R) * j.dk + j.dv + j.R + 1) +
                    3 * j.dk + (3 + j.R) * JB + j.dk * JB + 16;
    int64_t workers = threadpool_size(ctx->pool);
    if (workers > j.ntasks) workers = j.ntasks;
    OG_TRY(kernel_scratch(ctx, sizeof(float) * (size_t)(workers * j.work_floats) + 64,
                          (void **)&j.work));
    atomic_init(&j.next, 0);
    threadpool_parallel_for(ctx->pool, workers, 1, la_worker, &j);
    if (out->dtype != OG_FLOAT32) cpu_out_f32_done(out, j.out);
    return NULL;
}
