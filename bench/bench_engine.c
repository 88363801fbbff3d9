/* bench-engine PACKAGE_DIR [options]: aggregate generation speed of the serving engine
 * (src/engine) against the number of requests it runs at once, without HTTP.
 *
 * For each batch size B: B requests are submitted at once, each a distinct prompt of P
 * random token ids and N new tokens (greedy, EOS ignored, so every request has exactly
 * N), and the run ends when all have finished. Reported per B (median of R runs, after
 * one warm-up run at that B):
 *   - total tok/s: B * N / (last end - submission), prefill included
 *   - decode tok/s: B * (N - 1) / (last end - the moment every request had its first
 *     token), the steady state of B sequences decoding together
 *   - TTFT p50 / max over the run's requests (submission -> first token)
 *   - tokens per CPU-second: B * N / the process's CPU time over the run (all threads),
 *     which a shared machine's other tenants disturb less than wall time
 *   - steps and mean tokens per step (from eng_get_stats)
 *   - the mean step time and the bound of the longest step's histogram bucket (a step is
 *     what a running decode waits for between two tokens: prefill chunks lengthen it)
 * and after all batches the process's peak resident memory (VmHWM).
 * --per-sequence runs the same in per-sequence mode (one generator per request, stepped
 * in turn) as the baseline without a shared batch.
 *
 * --prefix K measures the prefix cache instead: R times, a fresh K-token prefix (a system
 * prompt) with a 16-token tail is sent alone (cold: nothing cached), then the same prefix
 * with another tail (warm: the prefix's full blocks come from the cache); TTFT of each
 * (submission -> first token, N new tokens) and the ratio, medians.
 *
 * --speculative N (with --draft-tokens K, --draft-fixed) runs the engine with prompt-lookup
 * speculation (ngram_size N) and prints its verifications, drafted and kept tokens.
 *
 * Options: --batches 1,4,8,16  -p P (16)  -n N (32)  --reps R (3)  --threads T (0: all)
 *          --per-sequence  --block-size S  --step-tokens T  --prefix K
 *          --speculative N  --draft-tokens K  --draft-fixed
 *          --warmups W (1: runs before the measured ones at each B)
 *          --kv-dtype auto|f32|f16|bf16|int8|fp8 (the KV cache's storage, as `bench`'s)
 * A long prompt (-p up to the package's context) measures the engine at depth: its
 * chunked prefill and the peak resident memory at that cache length. */
#include "engine/engine.h"
#include "genai/model.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum { MAX_B = 256, MAX_REPS = 32 };

static double clock_s(clockid_t c) {
    struct timespec ts;
    clock_gettime(c, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}
static double now_s(void) { return clock_s(CLOCK_MONOTONIC); }

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median(double *v, int n) {
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

typedef struct run_result {
    double total_tps, decode_tps, ttft_p50, ttft_max, cpu_tps;
    uint64_t steps, step_tokens;
    double step_mean, step_max; /* seconds; step_max: its histogram bucket's upper bound */
} run_result;

/* One run of B requests at once. */
static int run_once(eng_engine *e, int B, int P, int N, int vocab, uint32_t seed, run_result *out) {
    static int32_t prompt[1 << 20]; /* -p at most 2^20 */
    eng_request *req[MAX_B];
    double first[MAX_B], done[MAX_B];
    bool have_first[MAX_B], ended[MAX_B];
    eng_stats s0, s1;
    eng_get_stats(e, &s0);
    double t0 = now_s(), c0 = clock_s(CLOCK_PROCESS_CPUTIME_ID);
    for (int b = 0; b < B; b++) {
        uint32_t x = seed * 7919u + (uint32_t)b * 104729u + 1u;
        for (int i = 0; i < P; i++) {
            x = x * 1664525u + 1013904223u;
            prompt[i] = (int32_t)((x >> 8) % (uint32_t)vocab);
        }
        eng_sampling sp = {.max_tokens = N, .top_p = 1, .logprobs = -1, .ignore_eos = true};
        char msg[256];
        if (eng_submit(e, prompt, P, &sp, &req[b], msg, sizeof msg) != ENG_SUBMIT_OK) {
            fprintf(stderr, "bench-engine: submit: %s\n", msg);
            for (int k = 0; k < b; k++) eng_request_cancel(req[k]), eng_request_release(req[k]);
            return 1;
        }
        have_first[b] = ended[b] = false;
    }
    /* The first moment each request has a token and the moment it ended: sleep on the
     * first unfinished request until it gets a token (in batched mode all of a step's
     * tokens arrive together; at most 2 ms otherwise), then look at every one without
     * waiting (no busy polling: the compute threads have the cores). */
    int seen[MAX_B] = {0};
    for (int left = B; left > 0;) {
        int b0 = 0;
        while (ended[b0]) b0++;
        eng_request_wait(req[b0], seen[b0], 0.002);
        for (int b = 0; b < B; b++) {
            if (ended[b]) continue;
            int n = eng_request_wait(req[b], 0, 0);
            double t = now_s();
            seen[b] = n;
            if (n >= 1 && !have_first[b]) have_first[b] = true, first[b] = t;
            if (eng_request_finish(req[b], NULL) != ENG_RUNNING) {
                if (!have_first[b]) have_first[b] = true, first[b] = t;
                ended[b] = true, done[b] = t;
                left--;
            }
        }
    }
    int bad = 0;
    double all_first = 0, last = 0, ttft[MAX_B];
    for (int b = 0; b < B; b++) {
        const char *err;
        eng_finish f = eng_request_finish(req[b], &err);
        int n = eng_request_wait(req[b], 0, 0);
        if (f != ENG_FINISH_LENGTH || n != N) {
            fprintf(stderr, "bench-engine: request %d ended with %d of %d tokens%s%s\n", b, n, N,
                    *err ? ": " : "", err);
            bad = 1;
        }
        if (first[b] > all_first) all_first = first[b];
        if (done[b] > last) last = done[b];
        ttft[b] = first[b] - t0;
        eng_request_release(req[b]);
    }
    eng_get_stats(e, &s1);
    out->cpu_tps = (double)B * N / (clock_s(CLOCK_PROCESS_CPUTIME_ID) - c0);
    out->total_tps = (double)B * N / (last - t0);
    out->decode_tps = N > 1 && last > all_first ? (double)B * (N - 1) / (last - all_first) : 0;
    out->ttft_p50 = median(ttft, B);
    out->ttft_max = ttft[B - 1]; /* sorted by median() */
    out->steps = s1.steps - s0.steps;
    uint64_t n_steps = s1.step_time.n - s0.step_time.n;
    out->step_mean = n_steps ? (s1.step_time.sum - s0.step_time.sum) / (double)n_steps : 0;
    out->step_max = 0;
    for (int k = ENG_HIST_BUCKETS; k >= 0; k--)
        if (s1.step_time.count[k] > s0.step_time.count[k]) {
            out->step_max = k < ENG_HIST_BUCKETS ? eng_hist_bounds[k] : 1e30;
            break;
        }
    /* tokens the model ran: prompts (less cache hits) and every new token but the last */
    out->step_tokens = (s1.prompt_tokens - s0.prompt_tokens) -
                       (s1.cached_prompt_tokens - s0.cached_prompt_tokens) +
                       (s1.generated_tokens - s0.generated_tokens) - (uint64_t)B;
    return bad;
}

/* TTFT of one request alone (seconds); *cached: its prompt tokens served from the cache. */
static int ttft_alone(eng_engine *e, const int32_t *prompt, int n, int N, double *ttft, int *cached) {
    eng_sampling sp = {.max_tokens = N, .top_p = 1, .logprobs = -1, .ignore_eos = true};
    eng_request *r;
    char msg[256];
    double t0 = now_s();
    if (eng_submit(e, prompt, n, &sp, &r, msg, sizeof msg) != ENG_SUBMIT_OK) {
        fprintf(stderr, "bench-engine: submit: %s\n", msg);
        return 1;
    }
    while (eng_request_wait(r, 0, 1.0) < 1 && eng_request_finish(r, NULL) == ENG_RUNNING) {}
    *ttft = now_s() - t0;
    while (eng_request_finish(r, NULL) == ENG_RUNNING) eng_request_wait(r, 1 << 30, 1.0);
    int bad = eng_request_finish(r, NULL) != ENG_FINISH_LENGTH;
    *cached = eng_request_cached_tokens(r);
    eng_request_release(r);
    return bad;
}

static int bench_prefix(eng_engine *e, int K, int N, int reps, int vocab) {
    int32_t *p = malloc(sizeof *p * (size_t)(K + 16));
    if (!p) return 1;
    double cold[MAX_REPS], warm[MAX_REPS], ratio[MAX_REPS];
    int bad = 0, cached_cold = 0, cached_warm = 0;
    printf("| run | cold TTFT | warm TTFT | warm / cold | prompt tokens cached (cold, warm) |\n");
    printf("|---:|---:|---:|---:|---:|\n");
    for (int i = 0; i < reps && !bad; i++) {
        uint32_t x = 4242u + (uint32_t)i * 7777u;
        for (int k = 0; k < K + 16; k++) {
            x = x * 1664525u + 1013904223u;
            p[k] = (int32_t)((x >> 8) % (uint32_t)vocab);
        }
        bad |= ttft_alone(e, p, K + 16, N, &cold[i], &cached_cold);
        for (int k = K; k < K + 16; k++) p[k] = (p[k] + 1) % vocab; /* another tail */
        bad |= ttft_alone(e, p, K + 16, N, &warm[i], &cached_warm);
        ratio[i] = warm[i] / cold[i];
        printf("| %d | %.1f ms | %.1f ms | %.3f | %d, %d |\n", i + 1, 1e3 * cold[i], 1e3 * warm[i],
               ratio[i], cached_cold, cached_warm);
        fflush(stdout);
    }
    if (!bad)
        printf("median: cold %.1f ms, warm %.1f ms, warm / cold %.3f\n", 1e3 * median(cold, reps),
               1e3 * median(warm, reps), median(ratio, reps));
    free(p);
    return bad;
}

/* VmHWM: the most the process had resident (weights as mapped, KV pool, a step's tensors). */
static void print_peak_rss(void) {
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    while (f && fgets(line, sizeof line, f))
        if (!strncmp(line, "VmHWM:", 6)) printf("peak resident memory:%s", line + 6);
    if (f) fclose(f);
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: bench-engine PACKAGE_DIR [--batches 1,4,8,16] [-p P] [-n N] "
                        "[--reps R] [--threads T] [--per-sequence] [--block-size S] "
                        "[--step-tokens T] [--warmups W] [--prefix K] [--plan-memory MIB] "
                        "[--kv-dtype auto|f32|f16|bf16|int8|fp8]\n");
        return 2;
    }
    int batches[32], n_batches = 0, P = 16, N = 32, reps = 3, prefix = 0, warmups = 1;
    eng_options o = eng_options_default();
    const char *blist = "1,4,8,16";
    long long plan_mib = -1; /* the sessions' plan_memory; -1: the default */
    og_dtype kv = OG_UNDEFINED; /* --kv-dtype; auto: the package's */
    for (int i = 2; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : "0";
        if (!strcmp(a, "--batches")) blist = v, i++;
        else if (!strcmp(a, "-p")) P = atoi(v), i++;
        else if (!strcmp(a, "-n")) N = atoi(v), i++;
        else if (!strcmp(a, "--reps")) reps = atoi(v), i++;
        else if (!strcmp(a, "--threads")) o.threads = atoi(v), i++;
        else if (!strcmp(a, "--block-size")) o.block_size = atoi(v), i++;
        else if (!strcmp(a, "--step-tokens")) o.step_tokens = atoi(v), i++;
        else if (!strcmp(a, "--per-sequence")) o.per_sequence = true;
        else if (!strcmp(a, "--prefix")) prefix = atoi(v), i++;
        else if (!strcmp(a, "--warmups")) warmups = atoi(v), i++;
        else if (!strcmp(a, "--plan-memory")) plan_mib = atoll(v), i++;
        else if (!strcmp(a, "--speculative")) o.spec_ngram = atoi(v), i++;
        else if (!strcmp(a, "--draft-tokens")) o.spec_max_draft = atoi(v), i++;
        else if (!strcmp(a, "--draft-fixed")) o.spec_fixed = true;
        else if (!strcmp(a, "--kv-dtype")) {
            static const char *const names[] = {"auto", "f32", "f16", "bf16", "int8", "fp8"};
            static const og_dtype dts[] = {OG_UNDEFINED, OG_FLOAT32, OG_FLOAT16, OG_BFLOAT16,
                                           OG_INT8, OG_FLOAT8E4M3FN};
            size_t k = 0;
            while (k < 6 && strcmp(v, names[k])) k++;
            if (k == 6) {
                fprintf(stderr, "bench-engine: --kv-dtype %s: auto, f32, f16, bf16, int8 or fp8\n", v);
                return 2;
            }
            kv = dts[k], i++;
        } else {
            fprintf(stderr, "bench-engine: unknown option %s\n", a);
            return 2;
        }
    }
    for (const char *c = blist; *c && n_batches < 32;) {
        int b = atoi(c);
        if (b < 1 || b > MAX_B) {
            fprintf(stderr, "bench-engine: batch size %d: 1 to %d\n", b, MAX_B);
            return 2;
        }
        batches[n_batches++] = b;
        if (b > o.max_batch) o.max_batch = b;
        c = strchr(c, ',');
        if (!c) break;
        c++;
    }
    if (P < 1 || P > (1 << 20) || N < 1 || reps < 1 || reps > MAX_REPS || n_batches == 0 || prefix < 0 || warmups < 0) {
        fprintf(stderr, "bench-engine: -p 1..1048576, -n >= 1, --reps 1..%d, some batch sizes, "
                        "--prefix >= 0\n", MAX_REPS);
        return 2;
    }
    og_model *m;
    og_model_options mo = og_model_options_default();
    mo.num_threads = o.threads; /* --threads: the sessions' compute pool */
    if (plan_mib >= 0) mo.plan_memory = (size_t)plan_mib << 20;
    mo.kv_dtype = kv;
    og_status *st = og_model_open(argv[1], &mo, &m);
    if (st) {
        fprintf(stderr, "bench-engine: %s\n", og_status_message(st));
        og_status_free(st);
        return 2;
    }
    o.prefix_cache = prefix > 0; /* batches: distinct random prompts, no reuse to measure */
    eng_engine *e;
    if ((st = eng_create(m, &o, &e))) {
        fprintf(stderr, "bench-engine: %s\n", og_status_message(st));
        og_status_free(st);
        og_model_close(m);
        return 2;
    }
    if (prefix > 0) {
        printf("package %s: mode %s%s, threads %d, prefix %d + tail 16, new tokens %d, %d runs\n",
               argv[1], eng_batched(e) ? "batched" : "per-sequence: ", eng_mode_note(e), o.threads,
               prefix, N, reps);
        int bad = bench_prefix(e, prefix, N, reps, m->vocab_size);
        eng_destroy(e);
        og_model_close(m);
        return bad;
    }
    printf("package %s: mode %s%s, threads %d, prompt %d, new tokens %d, %d runs per batch "
           "(median; one warm-up)\n", argv[1], eng_batched(e) ? "batched" : "per-sequence: ",
           eng_mode_note(e), o.threads, P, N, reps);
    printf("| batch | total tok/s | decode tok/s | tok per CPU-s | TTFT p50 | TTFT max | steps | "
           "tokens/step | step mean | longest step |\n");
    printf("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
    int bad = 0;
    uint32_t seed = 1;
    for (int k = 0; k < n_batches && !bad; k++) {
        int B = batches[k];
        run_result r[MAX_REPS], warm;
        for (int w = 0; w < warmups && !bad; w++)
            bad |= run_once(e, B, P, N, m->vocab_size, seed++, &warm);
        for (int i = 0; i < reps && !bad; i++) bad |= run_once(e, B, P, N, m->vocab_size, seed++, &r[i]);
        if (bad) break;
        double tt[MAX_REPS], dt[MAX_REPS], t50[MAX_REPS], tmax[MAX_REPS], steps[MAX_REPS], tps[MAX_REPS];
        double ct[MAX_REPS], sm[MAX_REPS], sx[MAX_REPS];
        for (int i = 0; i < reps; i++) {
            ct[i] = r[i].cpu_tps, sm[i] = r[i].step_mean, sx[i] = r[i].step_max;
            tt[i] = r[i].total_tps, dt[i] = r[i].decode_tps, t50[i] = r[i].ttft_p50;
            tmax[i] = r[i].ttft_max, steps[i] = (double)r[i].steps;
            tps[i] = r[i].steps ? (double)r[i].step_tokens / (double)r[i].steps : 0;
        }
        double longest = median(sx, reps);
        char lbuf[32];
        if (longest > 1e29) snprintf(lbuf, sizeof lbuf, "> %.0f ms", 1e3 * eng_hist_bounds[ENG_HIST_BUCKETS - 1]);
        else snprintf(lbuf, sizeof lbuf, "<= %.0f ms", 1e3 * longest);
        printf("| %d | %.1f | %.1f | %.1f | %.1f ms | %.1f ms | %.0f | %.1f | %.1f ms | %s |\n", B,
               median(tt, reps), median(dt, reps), median(ct, reps), 1e3 * median(t50, reps),
               1e3 * median(tmax, reps), median(steps, reps), median(tps, reps),
               1e3 * median(sm, reps), lbuf);
        fflush(stdout);
    }
    print_peak_rss();
    eng_stats es;
    eng_get_stats(e, &es);
    if (o.spec_ngram > 0)
        printf("speculative (all runs, warm-ups included): %llu verifications, %llu tokens "
               "drafted, %llu kept\n", (unsigned long long)es.spec_verifications,
               (unsigned long long)es.spec_drafted, (unsigned long long)es.spec_accepted);
    gen_plan_mem pm;
    gen_model_plan_mem(m, &pm);
    printf("cached plans: %.1f MiB now in %zu (peak %.1f MiB, budget %.1f MiB, %llu evicted)\n",
           (double)es.plan_bytes / 1048576.0, pm.plans, (double)es.plan_bytes_peak / 1048576.0,
           (double)pm.budget / 1048576.0, (unsigned long long)es.plans_evicted);
    eng_destroy(e);
    og_model_close(m);
    return bad;
}
