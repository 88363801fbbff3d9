/* Speculative decoding: prompt-lookup drafts and the verification budget (speculative.h). */
#include "genai/speculative.h"

#include <string.h>
#include <time.h>

/* The acceptance estimate is a decayed count of accepted and tried draft tokens with a
 * weak prior of one half (two tries' worth), so that a few verifications move it. */
static const double ACCEPT_DECAY = 0.95, PRIOR_TRIES = 2.0;
/* Before a run of n > 1 tokens has been timed, it is taken to cost this much more than a
 * one-token step per extra token (the weights are read once; the rows' arithmetic and
 * attention are not free). Replaced by measurements as they come. */
static const double PRIOR_EXTRA_PER_TOKEN = 0.35;
/* Running averages of run times: the weight of a new measurement */
static const double TIME_RATE = 0.2;
/* Speculate only when the expected rate beats a plain step's by this factor: the
 * estimates are noisy, and a wrong "yes" costs more than a wrong "no". */
static const double GAIN_NEEDED = 1.05;
/* With a draft model: plain steps in a row before one verification probes again, at
 * first and at most */
static const int PROBE_EVERY = 16, PROBE_MAX = 1024;

void gen_spec_init(gen_spec *s, const gen_spec_options *o) {
    memset(s, 0, sizeof *s);
    s->o = *o;
    if (s->o.max_draft > GEN_SPEC_MAX_DRAFT) s->o.max_draft = GEN_SPEC_MAX_DRAFT;
    s->alpha = 0.5;
    s->probe_every = PROBE_EVERY;
}

double gen_spec_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

int gen_spec_draft(const gen_spec_options *o, const int32_t *seq, int len, int max_k,
                   int32_t *out) {
    int n = o->ngram;
    if (n < 1 || max_k < 1 || len < n + 1) return 0;
    const int32_t *suffix = seq + len - n;
    /* the latest earlier occurrence of the last n tokens */
    for (int j = len - n - 1; j >= 0; j--) {
        if (seq[j] != suffix[0] || memcmp(seq + j, suffix, sizeof *seq * (size_t)n) != 0) continue;
        int k = 0;
        for (int x = j + n; k < max_k; x++, k++) {
            if (x < len) out[k] = seq[x];
            else if (o->chained) out[k] = out[x - len]; /* the draft continues itself */
            else break;
        }
        return k;
    }
    return 0;
}

double gen_spec_expected(double a, int k) {
    double e = 0, p = 1;
    for (int i = 0; i <= k; i++, p *= a) e += p;
    return e;
}

/* The estimated seconds of a run of n tokens: its measured average, else a step plus the
 * measured cost of an extra token (averaged over the run lengths measured), else the
 * prior's. */
static double run_time(const gen_spec *s, int n) {
    if (s->t_count[n] > 0) return s->t_run[n];
    double t1 = s->t_run[1], slope = 0;
    int m = 0;
    for (int k = 2; k <= GEN_SPEC_MAX_DRAFT + 1; k++)
        if (s->t_count[k] > 0) {
            slope += (s->t_run[k] - t1) / (k - 1);
            m++;
        }
    slope = m ? slope / m : PRIOR_EXTRA_PER_TOKEN * t1;
    return t1 + slope * (n - 1);
}

static void record_tries(gen_spec *s, int accepted, bool rejected) {
    for (int i = 0; i < accepted + (rejected ? 1 : 0); i++) {
        s->succ = s->succ * ACCEPT_DECAY + (i < accepted);
        s->tries = s->tries * ACCEPT_DECAY + 1;
    }
    s->alpha = (s->succ + 0.5 * PRIOR_TRIES) / (s->tries + PRIOR_TRIES);
}

/* The first run of each length is not timed: it makes the length's plan (shapes,
 * memory), which later runs reuse. */
static void time_run(gen_spec *s, int n, double seconds) {
    if (seconds <= 0 || n > GEN_SPEC_MAX_DRAFT + 1) return;
    if (!s->t_seen[n]) {
        s->t_seen[n] = true;
        return;
    }
    double *t = &s->t_run[n];
    *t = s->t_count[n]++ ? (1 - TIME_RATE) * *t + TIME_RATE * seconds : seconds;
}

int gen_spec_choose(gen_spec *s, int k) {
    if (k > s->o.max_draft) k = s->o.max_draft;
    if (k <= 0) return 0;
    if (!s->o.adaptive) return k;
    if (s->t_count[1] == 0) return 0; /* a plain step first, to compare with */
    int best = 0;
    double best_rate = GAIN_NEEDED / s->t_run[1];
    /* lengths from the floor: powers of two and the whole draft (each length a run makes
     * costs a plan the first time); a draft model's tokens cost their time too */
    int lo = s->o.min_k < 1 ? 1 : s->o.min_k < k ? s->o.min_k : k;
    for (int c = lo; c <= k; c++) {
        if (c != lo && c != k && (c & (c - 1))) continue;
        double rate = gen_spec_expected(s->alpha, c) / (run_time(s, c + 1) + c * s->t_draft);
        if (rate > best_rate) {
            best_rate = rate;
            best = c;
        }
    }
    return gen_spec_probe(s, best, lo);
}

int gen_spec_probe(gen_spec *s, int best, int lo) {
    /* a draft model has no free shadow: after a run of plain steps one short
     * verification measures the acceptance again, twice as far apart each time it does
     * not lead to speculating (a probe costs the draft's catching up) */
    if (best > 0) {
        s->probe_every = PROBE_EVERY;
    } else if (s->o.draft_model && ++s->plain_streak >= s->probe_every) {
        best = lo;
        if (s->probe_every < PROBE_MAX) s->probe_every *= 2;
    }
    if (best > 0) s->plain_streak = 0;
    return best;
}

int gen_spec_plan(gen_spec *s, const int32_t *seq, int len, int max_k, int32_t *out) {
    if (max_k > s->o.max_draft) max_k = s->o.max_draft;
    int k = gen_spec_draft(&s->o, seq, len, max_k, out);
    int best = gen_spec_choose(s, k);
    if (best == 0) gen_spec_shadow(s, out, k); /* a plain step: the draft is its shadow */
    return best;
}

void gen_spec_shadow(gen_spec *s, const int32_t *draft, int k) {
    if (k <= 0 || s->shadow_at < s->n_shadow) return; /* one is being scored */
    if (k > GEN_SPEC_MAX_DRAFT) k = GEN_SPEC_MAX_DRAFT;
    memcpy(s->shadow, draft, sizeof *draft * (size_t)k);
    s->n_shadow = k;
    s->shadow_at = 0;
}

void gen_spec_seed(gen_spec *s, double succ, double tries) {
    if (!(tries > 0) || succ < 0 || succ > tries) return;
    s->succ += succ;
    s->tries += tries;
    s->alpha = (s->succ + 0.5 * PRIOR_TRIES) / (s->tries + PRIOR_TRIES);
}

void gen_spec_drafted(gen_spec *s, int k, double seconds) {
    if (k <= 0 || seconds <= 0) return;
    double per = seconds / k;
    s->t_draft = s->t_draft > 0 ? (1 - TIME_RATE) * s->t_draft + TIME_RATE * per : per;
}

void gen_spec_verified(gen_spec *s, int k, int accepted, int emitted, double seconds) {
    s->stats.passes++;
    s->stats.drafted += k;
    s->stats.accepted += accepted;
    s->stats.emitted += emitted;
    record_tries(s, accepted, accepted < k);
    time_run(s, k + 1, seconds);
    s->n_shadow = 0;
}

void gen_spec_plain_step(gen_spec *s, int32_t t, double seconds) {
    s->stats.plain_steps++;
    time_run(s, 1, seconds);
    if (s->shadow_at >= s->n_shadow) return;
    if (t == s->shadow[s->shadow_at] && ++s->shadow_at < s->n_shadow) return;
    bool rejected = s->shadow_at < s->n_shadow;
    record_tries(s, s->shadow_at, rejected);
    s->n_shadow = 0;
    s->shadow_at = 0;
}
