#include "genai/search.h"

#include "base/isa.h"
#include "genai/argmax.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- random numbers ---- */

static uint64_t splitmix64(uint64_t *x) {
    uint64_t z = (*x += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

void gen_rng_seed(gen_rng *r, uint64_t seed) {
    for (int i = 0; i < 4; i++) r->s[i] = splitmix64(&seed);
}

static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

uint64_t gen_rng_next(gen_rng *r) {
    uint64_t *s = r->s;
    uint64_t result = rotl(s[1] * 5, 7) * 9, t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return result;
}

double gen_rng_uniform(gen_rng *r) { return (double)(gen_rng_next(r) >> 11) * 0x1.0p-53; }

/* ---- logits processors ---- */

void gen_repetition_penalty(float *logits, int vocab, const int32_t *seq, int len,
                            float penalty) {
    if (penalty == 1.0f) return;
    /* Mark each distinct token once: a token seen twice is still penalized once. */
    unsigned char *seen = calloc((size_t)vocab, 1);
    if (!seen) return;
    for (int i = 0; i < len; i++) {
        int32_t t = seq[i];
        if (t < 0 || t >= vocab || seen[t]) continue;
        seen[t] = 1;
        logits[t] = logits[t] < 0 ? logits[t] * penalty : logits[t] / penalty;
    }
    free(seen);
}

void gen_block_repeated_ngrams(float *logits, int vocab, const int32_t *seq, int len, int n) {
    if (n <= 0 || len < n) return;
    /* The last n-1 tokens are the prefix; every earlier occurrence of that prefix bans the
     * token that followed it. */
    const int32_t *prefix = seq + len - (n - 1);
    for (int start = 0; start + n <= len; start++) {
        if (memcmp(seq + start, prefix, sizeof(int32_t) * (size_t)(n - 1)) != 0) continue;
        int32_t banned = seq[start + n - 1];
        if (banned >= 0 && banned < vocab) logits[banned] = -INFINITY;
    }
}

void gen_block_tokens(float *logits, int vocab, const int32_t *ids, int n) {
    for (int i = 0; i < n; i++)
        if (ids[i] >= 0 && ids[i] < vocab) logits[ids[i]] = -INFINITY;
}

/* The definition the vector kernels reproduce exactly (argmax.h) is `if (logits[i] >
 * logits[best]) best = i`; the best value is kept in a register because reloading
 * logits[best] puts a load behind every compare (about 4 ns an element, 0.6 ms for a
 * 151,936-token row). */
static int32_t argmax_scalar(const float *logits, int vocab) {
    int32_t best = 0;
    float top = logits[0];
    for (int i = 1; i < vocab; i++)
        if (logits[i] > top) {
            top = logits[i];
            best = i;
        }
    return best;
}

int32_t gen_argmax(const float *logits, int vocab) {
    /* With a NaN in front nothing compares greater, so the scalar loop answers 0. */
    if (vocab <= 1 || isnan(logits[0])) return 0;
#if defined(__x86_64__)
    isa_level isa = isa_active();
    if (isa >= ISA_AVX512) return gen_argmax_avx512(logits, vocab);
    if (isa >= ISA_AVX2) return gen_argmax_avx2(logits, vocab);
#endif
    return argmax_scalar(logits, vocab);
}

void gen_log_softmax(float *row, int vocab) {
    float mx = row[0];
    for (int i = 1; i < vocab; i++)
        if (row[i] > mx) mx = row[i];
    double sum = 0;
    for (int i = 0; i < vocab; i++) sum += exp((double)row[i] - mx);
    float lse = mx + (float)log(sum);
    for (int i = 0; i < vocab; i++) row[i] -= lse;
}

/* ---- sampling ---- */

typedef struct scored {
    float p;
    int32_t id;
} scored;

static int by_prob_desc(const void *a, const void *b) {
    const scored *x = a, *y = b;
    if (x->p != y->p) return x->p < y->p ? 1 : -1;
    return x->id - y->id;
}

int32_t gen_sample(const float *logits, int vocab, int top_k, float top_p, float temperature,
                   gen_rng *rng, float *scratch) {
    if (temperature <= 0) return gen_argmax(logits, vocab);
    scored *c = (scored *)(void *)scratch; /* 2 * vocab floats = vocab (float, int32) pairs */
    for (int i = 0; i < vocab; i++) c[i] = (scored){logits[i] / temperature, i};
    qsort(c, (size_t)vocab, sizeof *c, by_prob_desc);
    int keep = top_k > 0 && top_k < vocab ? top_k : vocab;
    /* softmax over the kept candidates (sorted, so c[0] holds the maximum) */
    double sum = 0, mx = c[0].p;
    for (int i = 0; i < keep; i++) {
        double e = isinf(c[i].p) && c[i].p < 0 ? 0 : exp((double)c[i].p - mx);
        c[i].p = (float)e;
        sum += e;
    }
    for (int i = 0; i < keep; i++) c[i].p = (float)(c[i].p / sum);
    if (top_p < 1.0f) {
        /* keep token i while the probability before it is below top_p (at least one) */
        double cum = 0;
        int k = 0;
        while (k < keep && (k == 0 || cum < top_p)) cum += c[k++].p;
        keep = k;
        sum = cum;
    } else {
        sum = 1.0;
    }
    double u = gen_rng_uniform(rng) * sum, acc = 0;
    for (int i = 0; i < keep; i++) {
        acc += c[i].p;
        if (u < acc) return c[i].id;
    }
    return c[keep - 1].id;
}

/* ---- beam search ---- */

typedef struct hypothesis {
    int32_t *tokens;
    int len;
    float score;
} hypothesis;

typedef struct hyp_list {
    hypothesis *h; /* at most num_beams kept */
    int n;
    float worst;
    bool done;
} hyp_list;

struct gen_beam {
    gen_beam_options o;
    int32_t *eos;
    float *scores;      /* [batch*num_beams] running sums of log-probabilities */
    float *next_scores; /* scratch */
    hyp_list *hyps;     /* [batch] */
    scored *cand;       /* [2*num_beams] the kept candidates of one batch entry */
};

og_status *gen_beam_create(const gen_beam_options *o, gen_beam **out) {
    gen_beam *b = calloc(1, sizeof *b);
    if (!b) return og_oom();
    b->o = *o;
    int nb = o->batch * o->num_beams;
    b->eos = calloc((size_t)o->n_eos + 1, sizeof *b->eos);
    b->scores = calloc((size_t)nb, sizeof *b->scores);
    b->next_scores = calloc((size_t)nb, sizeof *b->next_scores);
    b->hyps = calloc((size_t)o->batch, sizeof *b->hyps);
    b->cand = malloc((size_t)o->num_beams * 2 * sizeof *b->cand);
    if (!b->eos || !b->scores || !b->next_scores || !b->hyps || !b->cand) {
        gen_beam_free(b);
        return og_oom();
    }
    if (o->n_eos) memcpy(b->eos, o->eos_ids, sizeof(int32_t) * (size_t)o->n_eos);
    b->o.eos_ids = b->eos;
    for (int i = 0; i < o->batch; i++) {
        b->hyps[i].h = calloc((size_t)o->num_beams + 1, sizeof(hypothesis));
        if (!b->hyps[i].h) {
            gen_beam_free(b);
            return og_oom();
        }
        b->hyps[i].worst = 1e9f;
    }
    /* Only the first beam of each entry is live at the start, so that the first step
     * does not pick the same token num_beams times. */
    for (int i = 0; i < nb; i++) b->scores[i] = (i % o->num_beams) ? -1e9f : 0.0f;
    *out = b;
    return NULL;
}

void gen_beam_free(gen_beam *b) {
    if (!b) return;
    for (int i = 0; b->hyps && i < b->o.batch; i++) {
        for (int k = 0; b->hyps[i].h && k < b->hyps[i].n; k++) free(b->hyps[i].h[k].tokens);
        free(b->hyps[i].h);
    }
    free(b->hyps);
    free(b->eos);
    free(b->scores);
    free(b->next_scores);
    free(b->cand);
    free(b);
}

static bool is_eos(const gen_beam *b, int32_t t) {
    for (int i = 0; i < b->o.n_eos; i++)
        if (b->o.eos_ids[i] == t) return true;
    return false;
}

static og_status *hyp_add(gen_beam *b, hyp_list *l, const int32_t *tokens, int len,
                          float sum_logprobs) {
    float score = sum_logprobs / powf((float)len, b->o.length_penalty);
    int k = b->o.num_beams;
    if (l->n >= k && score <= l->worst) return NULL;
    int32_t *copy = malloc(sizeof(int32_t) * (size_t)(len ? len : 1));
    if (!copy) return og_oom();
    memcpy(copy, tokens, sizeof(int32_t) * (size_t)len);
    l->h[l->n++] = (hypothesis){copy, len, score};
    if (l->n > k) { /* drop the worst */
        int w = 0;
        for (int i = 1; i < l->n; i++)
            if (l->h[i].score < l->h[w].score) w = i;
        free(l->h[w].tokens);
        l->h[w] = l->h[--l->n];
    }
    l->worst = l->h[0].score;
    for (int i = 1; i < l->n; i++)
        if (l->h[i].score < l->worst) l->worst = l->h[i].score;
    return NULL;
}

static bool hyp_is_done(const gen_beam *b, const hyp_list *l, float best_sum, int cur_len) {
    if (l->n < b->o.num_beams) return false;
    if (b->o.early_stopping) return true;
    return l->worst >= best_sum / powf((float)cur_len, b->o.length_penalty);
}

/* The best `want` of n candidates, best first: a min-heap of the kept ones (the worst on
 * top) replaced while scanning, then sorted. Work is n comparisons plus log2(want) per
 * candidate that enters, instead of one pass over n per selected candidate (which made
 * 1024 beams cost num_beams^2 x vocab per step). */
static bool beats(scored a, scored b) { return a.p > b.p || (a.p == b.p && a.id < b.id); }

static void heap_sift_down(scored *h, int n, int i) {
    for (;;) {
        int l = 2 * i + 1, r = l + 1, w = i;
        if (l < n && beats(h[w], h[l])) w = l;
        if (r < n && beats(h[w], h[r])) w = r;
        if (w == i) return;
        scored t = h[i];
        h[i] = h[w];
        h[w] = t;
        i = w;
    }
}

static void heap_push(scored *h, int n, scored v) { /* n: size before the push */
    int i = n;
    h[i] = v;
    while (i > 0) {
        int parent = (i - 1) / 2;
        if (!beats(h[parent], h[i])) return;
        scored t = h[i];
        h[i] = h[parent];
        h[parent] = t;
        i = parent;
    }
}

static int by_beats(const void *a, const void *b) {
    const scored *x = a, *y = b;
    return beats(*x, *y) ? -1 : beats(*y, *x) ? 1 : 0;
}

double gen_beam_step_ops(int num_beams, int vocab) {
    double kv = (double)num_beams * vocab, want = 2.0 * num_beams < kv ? 2.0 * num_beams : kv;
    /* every candidate is compared once; at worst each enters the heap */
    return kv * (1.0 + log2(want + 1.0));
}

og_status *gen_beam_step(gen_beam *b, const float *logprobs, const int32_t *const *seqs,
                         int cur_len, int32_t *parents, int32_t *tokens) {
    int K = b->o.num_beams, V = b->o.vocab;
    for (int e = 0; e < b->o.batch; e++) {
        hyp_list *l = &b->hyps[e];
        if (l->done) {
            for (int j = 0; j < K; j++) {
                parents[e * K + j] = e * K;
                tokens[e * K + j] = b->o.pad_id;
                b->next_scores[e * K + j] = 0;
            }
            continue;
        }
        /* Candidates: every (beam, token) with its total score; keep the best 2K. */
        scored *c = b->cand;
        int want = 2 * K < K * V ? 2 * K : K * V, n = 0;
        for (int j = 0; j < K; j++) {
            const float *row = logprobs + (size_t)(e * K + j) * (size_t)V;
            float base = b->scores[e * K + j];
            for (int t = 0; t < V; t++) {
                scored v = {row[t] + base, j * V + t};
                if (n < want) {
                    heap_push(c, n++, v);
                } else if (beats(v, c[0])) {
                    c[0] = v;
                    heap_sift_down(c, n, 0);
                }
            }
        }
        qsort(c, (size_t)want, sizeof *c, by_beats);
        int filled = 0;
        for (int i = 0; i < want && filled < K; i++) {
            int beam = c[i].id / V;
            int32_t tok = c[i].id % V;
            int src = e * K + beam;
            if (is_eos(b, tok)) {
                if (i >= K) continue; /* an EOS outside the top K does not finish a beam */
                OG_TRY(hyp_add(b, l, seqs[src], cur_len, c[i].p));
                continue;
            }
            parents[e * K + filled] = src;
            tokens[e * K + filled] = tok;
            b->next_scores[e * K + filled] = c[i].p;
            filled++;
        }
        for (; filled < K; filled++) { /* only reachable with tiny vocabularies */
            parents[e * K + filled] = e * K;
            tokens[e * K + filled] = b->o.pad_id;
            b->next_scores[e * K + filled] = -1e9f;
        }
        l->done = hyp_is_done(b, l, c[0].p, cur_len + 1);
    }
    memcpy(b->scores, b->next_scores, sizeof(float) * (size_t)(b->o.batch * K));
    return NULL;
}

bool gen_beam_done(const gen_beam *b) {
    for (int e = 0; e < b->o.batch; e++)
        if (!b->hyps[e].done) return false;
    return true;
}

float gen_beam_score(const gen_beam *b, int i) { return b->scores[i]; }

static int by_score_desc(const void *a, const void *b) {
    const hypothesis *x = a, *y = b;
    return x->score < y->score ? 1 : x->score > y->score ? -1 : 0;
}

og_status *gen_beam_finalize(gen_beam *b, const int32_t *const *seqs, int cur_len,
                             int32_t *out, int *lens) {
    int K = b->o.num_beams, R = b->o.num_return_sequences, L = b->o.max_length;
    for (int e = 0; e < b->o.batch; e++) {
        hyp_list *l = &b->hyps[e];
        if (!l->done)
            for (int j = 0; j < K; j++)
                OG_TRY(hyp_add(b, l, seqs[e * K + j], cur_len, b->scores[e * K + j]));
        qsort(l->h, (size_t)l->n, sizeof *l->h, by_score_desc);
        for (int r = 0; r < R; r++) {
            int32_t *dst = out + (size_t)(e * R + r) * (size_t)L;
            const hypothesis *h = r < l->n ? &l->h[r] : NULL;
            int n = h ? (h->len < L ? h->len : L) : 0;
            if (n) memcpy(dst, h->tokens, sizeof(int32_t) * (size_t)n);
            for (int i = n; i < L; i++) dst[i] = b->o.pad_id;
            lens[e * R + r] = n;
        }
    }
    return NULL;
}
