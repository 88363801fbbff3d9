/* onnx-genai bench -m DIR [-p 512] [-n 128] [-d 0] [-b 1] [-r 5] [--threads N] [--json]
 *                  [--per-op] [--profile FILE] [--all-logits] [--backend native,ort]
 *
 * Generation speed as llama-bench reports it (see docs/PERFORMANCE.md):
 *   pp<P>[@d<D>]  prefill tokens/s of a P-token prompt (after D cached tokens)
 *   tg<N>[@d<D>]  decode tokens/s of N one-token steps after a short prompt (or D tokens)
 * plus TTFT, load time, peak RSS, and decode as a fraction of the bandwidth roofline:
 * a streaming-read probe on the same threads, divided by the bytes one decode step must
 * read (the weights that are streamed per token + the KV cache at that context).
 *
 * Token ids are random (seeded) so that no tokenizer runs; EOS is blocked for the whole
 * run (min_length = max_length) so every run does the same work; the choice is greedy,
 * which costs one pass over the logits. Each test runs once to warm up, then R times.
 * With several backends (--backend native,ort) the whole measurement runs once per
 * backend on the same package, one after the other, and the ratios are printed.
 *
 * With -b B every test runs B sequences together (prompts of equal length, so they run
 * as one batch): tokens/s counts the tokens of all rows, and one decode step reads the
 * weights once for all B rows plus each row's KV cache.
 *
 * --per-op prints, per test, the ops by total time over the timed repetitions (the
 * warm-up run excluded); --profile FILE writes a Chrome/Perfetto trace of every node
 * run (see backends/profile.h). Both time every node, which costs a little.
 *
 * A prompt computes the logits of its last position only (og_generator_params.all_logits
 * = 0), as generate and serve do; --all-logits computes every position's, as
 * onnxruntime-genai's generator does, for comparison. */
#include "genai/budget.h"
#include "genai/config.h"
#include "genai/generator.h"
#include "genai/model.h"
#include "backends/backend.h"
#include "base/isa.h"
#include "backends/profile.h"
#include "runtime/og_session.h"
#include "base/proc_mem.h"
#include "cli/cli.h"

#include "base/json_str.h"

#include "onnx_genai.h"

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static const char bench_usage[] =
    "usage: onnx-genai bench [-m] DIR [options]\n"
    "  -p N            prompt tokens for the prefill test pp<N> (default 512, or half that\n"
    "                  until it fits the package's context; 0: skip)\n"
    "  -n N            generated tokens for the decode test tg<N> (default 128, or half that\n"
    "                  until it fits; 0: skip)\n"
    "  -d N            tokens already in the cache before both tests (default 0)\n"
    "  -b N            sequences decoded together (batch size, default 1)\n"
    "  -r N            repetitions after one warm-up run (default 5)\n"
    "  --threads N     compute threads (default: all cores)\n"
    "  --seed N        seed of the random token ids (default 1)\n"
    "  --probe-mb N    size of the bandwidth probe's buffer in MiB (default 512; 0: skip)\n"
    "  --probe-only    run only the bandwidth probe\n"
    "  --json          one JSON object instead of the table\n"
    "  --per-op        per test, the ops by total time (timed repetitions only)\n"
    "  --profile FILE  write a Chrome/Perfetto trace (JSON) of every node run\n"
    "  --all-logits    prompts compute every position's logits (default: the last only)\n"
    "  --backend LIST  native, ort or auto (default), or several comma-separated\n"
    "                  (native,ort): each measured in turn on the same package\n"
    "  --ort-lib PATH, --ep cpu|cuda, --ort-opt-level LEVEL: see 'onnx-genai generate --help'\n"
    "  --speculative ngram|draft [--draft-model DIR] [--ngram N] [--draft-tokens K]\n"
    "                  [--ngram-chained] [--draft-fixed]: tg<N> once more with speculative\n"
    "                  decoding, on the same prompts: its speed-up over tg<N> in the same run,\n"
    "                  the drafted tokens kept, the tokens per verification\n"
    "  --prompt-file FILE  the decode tests' prompt: this text (tokenized), not random ids\n"
    "                  (input-grounded speculation needs text the answer repeats)\n";

enum { BENCH_MAX_BACKENDS = 3 };

typedef struct bench_opts {
    const char *model, *profile;
    int p, n, d, b, reps, threads, probe_mb;
    long long seed;
    bool json, probe_only, per_op, all_logits;
    cli_backend be;
    og_backend backends[BENCH_MAX_BACKENDS];
    int n_backends;
    cli_speculative spec;
    const char *prompt_file;
    int32_t *file_ids; /* the prompt file's tokens (bench_backend), else NULL */
    int n_file_ids;
} bench_opts;

/* --backend LIST: each name through the common parser (cli_backend.c). */
static int parse_backends(const char *list, bench_opts *o) {
    char buf[64];
    snprintf(buf, sizeof buf, "%s", list);
    o->n_backends = 0;
    for (char *save = NULL, *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        if (o->n_backends == BENCH_MAX_BACKENDS)
            return cli_fail("bench: --backend: at most %d backends", BENCH_MAX_BACKENDS);
        char *args[3] = {"bench", "--backend", t};
        int i = 1;
        int took = cli_backend_arg(3, args, &i, &o->be);
        if (took < 0) return -took;
        o->backends[o->n_backends++] = cli_backend_choice(&o->be);
    }
    if (!o->n_backends) return cli_fail("bench: --backend: empty list");
    return 0;
}

static int parse_args(int argc, char **argv, bench_opts *o) {
    cli_backend_init(&o->be);
    cli_speculative_init(&o->spec);
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        int *target = NULL;
        long lo = 0, hi = 1 << 24;
        int took_spec = cli_speculative_arg(argc, argv, &i, &o->spec);
        if (took_spec) {
            if (took_spec < 0) return -took_spec;
            continue;
        }
        if (!strcmp(a, "--prompt-file")) {
            if (i + 1 >= argc) return cli_fail("bench: %s needs a value", a);
            o->prompt_file = argv[++i];
            continue;
        }
        if (!strcmp(a, "--backend")) {
            if (i + 1 >= argc) return cli_fail("bench: %s needs a value", a);
            int rc = parse_backends(argv[++i], o);
            if (rc) return rc;
            continue;
        }
        int took = cli_backend_arg(argc, argv, &i, &o->be);
        if (took) {
            if (took < 0) return -took;
            continue;
        }
        if (!strcmp(a, "-m") || !strcmp(a, "--model")) {
            if (i + 1 >= argc) return cli_fail("bench: %s needs a value", a);
            o->model = argv[++i];
            continue;
        } else if (!strcmp(a, "-p")) {
            target = &o->p;
        } else if (!strcmp(a, "-n")) {
            target = &o->n;
        } else if (!strcmp(a, "-d")) {
            target = &o->d;
        } else if (!strcmp(a, "-b") || !strcmp(a, "--batch")) {
            target = &o->b;
            lo = 1;
            hi = 4096;
        } else if (!strcmp(a, "-r")) {
            target = &o->reps;
            lo = 1;
            hi = 10000;
        } else if (!strcmp(a, "--threads") || !strcmp(a, "-t")) {
            target = &o->threads;
            hi = 4096;
        } else if (!strcmp(a, "--probe-mb")) {
            target = &o->probe_mb;
            hi = 1 << 20;
        } else if (!strcmp(a, "--seed")) {
            int s;
            if (i + 1 >= argc) return cli_fail("bench: %s needs a value", a);
            if (!cli_parse_int(argv[++i], 0, 2147483647, &s))
                return cli_fail("bench: --seed: '%s' is not a non-negative integer", argv[i]);
            o->seed = s;
            continue;
        } else if (!strcmp(a, "--json")) {
            o->json = true;
            continue;
        } else if (!strcmp(a, "--probe-only")) {
            o->probe_only = true;
            continue;
        } else if (!strcmp(a, "--per-op")) {
            o->per_op = true;
            continue;
        } else if (!strcmp(a, "--all-logits")) {
            o->all_logits = true;
            continue;
        } else if (!strcmp(a, "--profile")) {
            if (i + 1 >= argc) return cli_fail("bench: %s needs a value", a);
            o->profile = argv[++i];
            continue;
        } else if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            fputs(bench_usage, stdout);
            exit(0);
        } else if (a[0] != '-' && !o->model) {
            o->model = a;
            continue;
        } else {
            return cli_fail("bench: unknown argument '%s' (see 'onnx-genai bench --help')", a);
        }
        if (i + 1 >= argc) return cli_fail("bench: %s needs a value", a);
        if (!cli_parse_int(argv[++i], lo, hi, target))
            return cli_fail("bench: %s: '%s' is not an integer in [%ld, %ld]", a, argv[i], lo, hi);
    }
    if (!o->model && !o->probe_only)
        return cli_fail("bench: no model folder given (see 'onnx-genai bench --help')");
    if (!o->probe_only && o->p == 0 && o->n == 0)
        return cli_fail("bench: -p 0 and -n 0 leave nothing to measure");
    if (o->b > 1 && o->d > 0 && o->p != 0)
        return cli_fail("bench: a prefill after -d cached tokens runs with batch 1 only (a batch "
                        "is appended to only while empty): add -p 0, or leave out -b");
    if (o->prompt_file && o->d)
        return cli_fail("bench: --prompt-file is the decode tests' prompt; it cannot follow -d "
                        "cached tokens (leave out -d)");
    if (o->spec.method != CLI_SPEC_OFF && o->b > 1)
        return cli_fail("bench: --speculative decodes one sequence (batch 1): leave out -b");
    if (!o->n_backends) o->backends[o->n_backends++] = cli_backend_choice(&o->be);
    for (int k = 0; k < o->n_backends; k++)
        if (o->backends[k] == OG_BACKEND_NATIVE && o->be.ep && strcmp(o->be.ep, "cpu") != 0)
            return cli_fail("bench: --ep %s: the native backend runs on the CPU only", o->be.ep);
    return 0;
}

/* ---- streaming-read bandwidth probe ---------------------------------------------- */

typedef uint64_t probe_vec __attribute__((vector_size(64)));

typedef struct probe_slice {
    const probe_vec *p;
    size_t n; /* vectors */
    uint64_t sum;
} probe_slice;

static void *probe_read(void *arg) {
    probe_slice *s = arg;
    probe_vec a = {0}, b = {0}, c = {0}, d = {0};
    size_t i = 0;
    for (; i + 4 <= s->n; i += 4) {
        a += s->p[i];
        b += s->p[i + 1];
        c += s->p[i + 2];
        d += s->p[i + 3];
    }
    for (; i < s->n; i++) a += s->p[i];
    a += b + c + d;
    uint64_t t = 0;
    for (int k = 0; k < 8; k++) t += a[k];
    s->sum = t;
    return NULL;
}

/* Reads `vecs` vectors on `threads` threads (each its contiguous slice); seconds taken. */
static double probe_pass(const probe_vec *buf, size_t vecs, int threads, uint64_t *sink) {
    probe_slice sl[256];
    pthread_t th[256];
    bool started[256] = {false};
    size_t per = vecs / (size_t)threads;
    for (int t = 0; t < threads; t++) {
        sl[t].p = buf + per * (size_t)t;
        sl[t].n = t == threads - 1 ? vecs - per * (size_t)t : per;
    }
    double t0 = now_s();
    for (int t = 1; t < threads; t++) started[t] = pthread_create(&th[t], NULL, probe_read, &sl[t]) == 0;
    probe_read(&sl[0]);
    for (int t = 1; t < threads; t++) {
        if (started[t]) pthread_join(th[t], NULL);
        else probe_read(&sl[t]);
    }
    double dt = now_s() - t0;
    for (int t = 0; t < threads; t++) *sink += sl[t].sum;
    return dt;
}

typedef struct probe_result {
    double best_gbps, median_gbps;
    size_t bytes;
    int threads, passes;
} probe_result;

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* A buffer much larger than the caches, touched first so that page faults stay out of
 * the timing; best and median of several passes. */
static int bandwidth_probe(int mb, int threads, probe_result *r) {
    memset(r, 0, sizeof *r);
    if (mb <= 0) return 0;
    if (threads < 1) threads = (int)sysconf(_SC_NPROCESSORS_ONLN);
    if (threads < 1) threads = 1;
    if (threads > 256) threads = 256;
    size_t bytes = (size_t)mb << 20;
    void *mem;
    if (posix_memalign(&mem, 64, bytes) != 0) return cli_fail("bench: cannot allocate %d MiB for the bandwidth probe", mb);
    for (size_t i = 0; i < bytes; i += 4096) ((unsigned char *)mem)[i] = (unsigned char)i;
    memset(mem, 1, bytes);
    enum { PASSES = 7 };
    double gbps[PASSES];
    uint64_t sink = 0;
    size_t vecs = bytes / sizeof(probe_vec);
    probe_pass(mem, vecs, threads, &sink); /* warm-up: threads, TLB */
    for (int i = 0; i < PASSES; i++) gbps[i] = (double)bytes / probe_pass(mem, vecs, threads, &sink) / 1e9;
    free(mem);
    if (sink == 42) fputs("", stderr); /* keeps the sums alive */
    qsort(gbps, PASSES, sizeof *gbps, cmp_double);
    r->best_gbps = gbps[PASSES - 1];
    r->median_gbps = gbps[PASSES / 2];
    r->bytes = bytes;
    r->threads = threads;
    r->passes = PASSES;
    return 0;
}

/* ---- what one decode step reads -------------------------------------------------- */

/* Initializer bytes of the decoder graph, and of those the bytes a decode step streams:
 * an initializer whose only use is as the table of a Gather (the token embedding) is
 * read one row per token, not whole. */
static void weight_bytes(const og_model *m, double *total, double *streamed) {
    const graph *g = runtime_session_graph(m->decoder);
    *total = 0;
    *streamed = 0;
    for (int k = 0; k < g->n_initializers; k++) {
        int v = g->initializers[k];
        const tensor *t = g->values[v].initializer;
        if (!t) continue;
        *total += (double)t->nbytes;
        bool gather_only = true, used = false;
        for (int j = 0; j < g->n_nodes && gather_only; j++) {
            const graph_node *nd = &g->nodes[j];
            for (int i = 0; i < nd->n_inputs; i++) {
                if (nd->inputs[i] != v) continue;
                used = true;
                if (strcmp(nd->op_type, "Gather") != 0 || i != 0) gather_only = false;
            }
        }
        if (!(used && gather_only)) *streamed += (double)t->nbytes;
    }
}

/* KV bytes per cached position (all layers, keys and values, batch 1). */
static double kv_bytes_per_position(const og_model *m) {
    return gen_model_kv_bytes_per_position(m);
}

/* Past and present in one buffer (the generator's rule): no per-step copy of the past. */
static bool kv_shared(const og_model *m) {
    og_generator_params p = og_generator_params_default(m);
    return m->cfg && gen_shares_kv(m, &p);
}

/* ---- the runs -------------------------------------------------------------------- */

typedef struct rng64 {
    uint64_t s;
} rng64;

static uint32_t rng_next(rng64 *r) {
    /* splitmix64: good enough for uniform ids, and the same on every platform */
    uint64_t z = (r->s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return (uint32_t)((z ^ (z >> 31)) >> 32);
}

/* B rows of n random ids; a row never ends in the pad id (trailing pad tokens would be
 * read as padding, and rows of different lengths run one by one). */
static void random_ids(rng64 *r, int32_t *ids, int rows, int n, int vocab, int32_t pad) {
    for (int b = 0; b < rows; b++)
        for (int i = 0; i < n; i++) {
            int32_t *t = &ids[(size_t)b * n + i];
            do *t = (int32_t)(rng_next(r) % (uint32_t)vocab);
            while (i == n - 1 && *t == pad && vocab > 1);
        }
}

typedef struct stats {
    double median, min, max, mean, stddev;
} stats;

static stats summarize(const double *x, int n) {
    stats s = {0};
    if (n <= 0) return s;
    double *c = malloc((size_t)n * sizeof *c);
    if (!c) return s;
    memcpy(c, x, (size_t)n * sizeof *c);
    qsort(c, (size_t)n, sizeof *c, cmp_double);
    s.min = c[0];
    s.max = c[n - 1];
    s.median = n % 2 ? c[n / 2] : 0.5 * (c[n / 2 - 1] + c[n / 2]);
    for (int i = 0; i < n; i++) s.mean += c[i];
    s.mean /= n;
    for (int i = 0; i < n; i++) s.stddev += (c[i] - s.mean) * (c[i] - s.mean);
    s.stddev = n > 1 ? sqrt(s.stddev / (n - 1)) : 0;
    free(c);
    return s;
}

typedef struct test_result {
    char name[48];
    bool is_pp, is_spec; /* is_spec: the tg test again with speculative decoding */
    int n_prompt, n_gen, depth;
    double *tps;      /* [reps] tokens/s */
    double *ttft;     /* [reps] seconds (pp only) */
    double *step_max; /* [reps] slowest decode step, seconds (tg only) */
    double *step_med; /* [reps] median decode step: robust to preemption on a busy machine */
    stats s_tps, s_ttft, s_step_max, s_step_med;
    double mean_ctx;  /* tg: mean attention length of the timed steps */
    double bytes_per_token, kv_copy_per_step, mean_past;
    backend_run_stats last_step; /* tg: the backend's counters after the last step */
    og_speculative_stats spec;   /* is_spec: summed over the timed repetitions */
} test_result;

static og_status *new_generator(og_model *m, const bench_opts *o, int max_length, bool spec,
                                og_generator **g) {
    og_generator_params p = og_generator_params_default(m);
    if (spec) cli_speculative_set(&o->spec, &p);
    int batch = o->b;
    p.all_logits = o->all_logits;
    p.batch_size = batch;
    p.num_beams = 1;
    p.num_return_sequences = 1;
    p.do_sample = 0;
    p.repetition_penalty = 1.0f;
    p.no_repeat_ngram_size = 0;
    p.max_length = max_length;
    p.min_length = max_length;
    return og_generator_create(m, &p, g);
}

/* Appends B rows of n tokens each (ids: B rows of n). */
static og_status *append_rows(og_generator *g, const int32_t *ids, int rows, int n) {
    if (rows == 1) return og_generator_append_tokens(g, ids, (size_t)n);
    const int32_t *row[4096];
    size_t len[4096];
    for (int b = 0; b < rows; b++) row[b] = ids + (size_t)b * n, len[b] = (size_t)n;
    return og_generator_append_token_rows(g, row, len);
}

/* One prefill: D untimed tokens, then P timed; TTFT adds the first token's choice. (A
 * batch is appended to only while empty, so parse_args refuses pp with both -d and -b.) */
static og_status *run_pp(og_model *m, rng64 *r, int32_t *ids, const bench_opts *o, int tag,
                         double *tps, double *ttft) {
    og_generator *g;
    og_status *st = new_generator(m, o, o->d + o->p + 1, false, &g);
    if (st) return st;
    int V = og_model_vocab_size(m);
    int32_t pad = og_model_pad_token_id(m);
    if (o->d > 0) {
        random_ids(r, ids, 1, o->d, V, pad);
        if ((st = og_generator_append_tokens(g, ids, (size_t)o->d))) goto done;
    }
    random_ids(r, ids, o->b, o->p, V, pad);
    if (m->prof) profiler_set_tag(m->prof, tag);
    double t0 = now_s();
    st = append_rows(g, ids, o->b, o->p);
    double t1 = now_s();
    if (m->prof) profiler_set_tag(m->prof, 0);
    if (st) goto done;
    if ((st = og_generator_generate_next_token(g))) goto done;
    double t2 = now_s();
    *tps = (double)o->b * o->p / (t1 - t0);
    *ttft = t2 - t0;
done:
    og_generator_destroy(g);
    return st;
}

/* The decode tests' prompt length: the prompt file's, else max(D, 1). */
static int tg_prompt(const bench_opts *o) {
    return o->file_ids ? o->n_file_ids : o->d > 0 ? o->d : 1;
}

/* One decode run: a prompt (random ids of max(D, 1), or the prompt file's), the first
 * token picked from its logits (no model run), then N timed steps that each run the model
 * on one token, or with speculation (t->is_spec) hand out the tokens its verifications
 * decide. */
static og_status *run_tg(og_model *m, rng64 *r, int32_t *ids, const bench_opts *o, int tag,
                         test_result *test, double *tps, double *step_max, double *step_med,
                         double *steps, size_t *rss_decoding) {
    int prompt = tg_prompt(o);
    og_generator *g;
    og_status *st = new_generator(m, o, prompt + 1 + o->n, test->is_spec, &g);
    if (st) return st;
    if (o->file_ids) memcpy(ids, o->file_ids, sizeof *ids * (size_t)prompt);
    else random_ids(r, ids, o->b, prompt, og_model_vocab_size(m), og_model_pad_token_id(m));
    if ((st = append_rows(g, ids, o->b, prompt))) goto done;
    if ((st = og_generator_generate_next_token(g))) goto done;
    if (m->prof) profiler_set_tag(m->prof, tag);
    double worst = 0, t0 = now_s(), prev = t0;
    for (int i = 0; i < o->n; i++) {
        if ((st = og_generator_generate_next_token(g))) break;
        double t = now_s();
        if (t - prev > worst) worst = t - prev;
        steps[i] = t - prev;
        prev = t;
    }
    if (m->prof) profiler_set_tag(m->prof, 0);
    if (st) goto done;
    *tps = (double)o->b * o->n / (prev - t0);
    *step_max = worst;
    *step_med = summarize(steps, o->n).median;
    og_speculative_stats ss;
    if (test->is_spec && tag && !(st = og_generator_get_speculative_stats(g, &ss))) {
        og_speculative_stats *sum = &test->spec;
        sum->enabled = ss.enabled;
        sum->verifications += ss.verifications;
        sum->drafted += ss.drafted;
        sum->accepted += ss.accepted;
        sum->emitted += ss.emitted;
        sum->plain_steps += ss.plain_steps;
    }
    /* resident memory while the cache is full and the generator alive (the goal is about
     * weights + KV; after the run the generator's memory is gone again) */
    size_t rss = proc_rss_now();
    if (rss > *rss_decoding) *rss_decoding = rss;
done:
    og_generator_destroy(g);
    return st;
}

static void json_str(const char *s) { json_str_fwrite(stdout, s, strlen(s)); }

static void json_stats(const char *key, stats s, const char *tail) {
    printf("\"%s\": {\"median\": %.6g, \"min\": %.6g, \"max\": %.6g, \"mean\": %.6g, "
           "\"stddev\": %.6g}%s", key, s.median, s.min, s.max, s.mean, s.stddev, tail);
}

static const char *human_bytes(double b, char *buf, size_t n) {
    if (b >= 1e9) snprintf(buf, n, "%.2f GB", b / 1e9);
    else if (b >= 1e6) snprintf(buf, n, "%.2f MB", b / 1e6);
    else if (b >= 1e3) snprintf(buf, n, "%.1f kB", b / 1e3);
    else snprintf(buf, n, "%.0f B", b);
    return buf;
}

static const char *compiler_flags(void) {
    return ""
#ifdef __OPTIMIZE__
           "optimized"
#else
           "unoptimized"
#endif
#ifdef __AVX512F__
           " avx512f"
#endif
#ifdef __AVX512BF16__
           " avx512bf16"
#endif
#ifdef __AVX512VNNI__
           " avx512vnni"
#endif
#ifdef __AVX2__
           " avx2"
#endif
#ifdef __FMA__
           " fma"
#endif
#ifdef __SANITIZE_ADDRESS__
           " asan"
#endif
        ;
}

static void print_probe_json(const probe_result *pr) {
    printf("\"bandwidth\": {\"best_gbps\": %.3f, \"median_gbps\": %.3f, \"bytes\": %zu, "
           "\"threads\": %d, \"passes\": %d}", pr->best_gbps, pr->median_gbps, pr->bytes,
           pr->threads, pr->passes);
}

/* What a run keeps for the comparison across backends. */
typedef struct bench_summary {
    char backend[32];
    int n_tests;
    char name[3][48];
    double tps[3]; /* median tokens/s */
} bench_summary;

/* The largest of want, want/2, want/4, ... that is at most room (0 when none is). */
static int fit_pow2(int want, int room) {
    while (want > room && want > 0) want /= 2;
    return want;
}

/* -p and -n left at their defaults (-1): 512 and 128, or the largest powers of two below
 * them that fit the package's context after -d; given ones that do not fit are refused,
 * naming the flag to lower. */
static int fit_context(bench_opts *o, int context) {
    if (context <= 0) context = INT32_MAX; /* not known: the generator says */
    int pp_room = context - o->d - 1;                  /* -d, the prompt, one token */
    int tg_room = context - tg_prompt(o) - 1; /* a prompt, its token, n steps */
    bool pp_default = o->p < 0, tg_default = o->n < 0;
    if (pp_default) o->p = fit_pow2(512, pp_room);
    if (tg_default) o->n = fit_pow2(128, tg_room);
    if (o->p > 0 && o->p > pp_room)
        return cli_fail("bench: -p %d%s needs a context of %d tokens; this package's is %d: "
                        "lower -p%s", o->p, o->d ? " after -d" : "", o->d + o->p + 1, context,
                        o->d ? " or -d" : "");
    if (o->n > 0 && o->n > tg_room)
        return cli_fail("bench: -n %d needs a context of %d tokens; this package's is %d: lower "
                        "-n%s", o->n, tg_prompt(o) + 1 + o->n, context,
                        o->d ? " or -d" : o->file_ids ? " or the prompt file" : "");
    if (o->p == 0 && o->n == 0)
        return cli_fail("bench: -d %d leaves no room in this package's context of %d tokens: "
                        "lower -d", o->d, context);
    if ((pp_default && o->p < 512) || (tg_default && o->n < 128))
        fprintf(stderr, "onnx-genai: bench: this package's context is %d tokens: pp%d and tg%d "
                "(-p and -n set them)\n", context, o->p, o->n);
    return 0;
}

/* --prompt-file: its text through the package's tokenizer, into o->file_ids. */
static int read_prompt_file(og_model *m, bench_opts *o) {
    char *text = cli_read_all(o->prompt_file);
    if (!text) return cli_fail("bench: --prompt-file: cannot read '%s': %s", o->prompt_file,
                               strerror(errno));
    og_tokenizer *tok = NULL;
    int32_t *ids = NULL;
    size_t n = 0;
    og_status *st = og_tokenizer_create(m, &tok);
    if (!st) st = og_tokenizer_encode(tok, text, strlen(text), 1, &ids, &n);
    free(text);
    og_tokenizer_free(tok);
    int rc = 0;
    if (st) rc = cli_fail("bench: --prompt-file %s: %s", o->prompt_file, og_status_message(st));
    else if (n == 0) rc = cli_fail("bench: --prompt-file %s: no tokens", o->prompt_file);
    og_status_free(st);
    if (!rc && !(o->file_ids = malloc(n * sizeof *o->file_ids))) rc = cli_fail("bench: out of memory");
    if (!rc) {
        memcpy(o->file_ids, ids, n * sizeof *ids);
        o->n_file_ids = (int)n;
    }
    og_free(ids);
    return rc;
}

/* The speculative test's line: against the plain decode test before it. */
static void spec_line(const test_result *t, const test_result *plain) {
    const og_speculative_stats *s = &t->spec;
    if (!s->enabled) {
        printf("%s: speculation does not apply to this package and batch (plain decoding)\n",
               t->name);
        return;
    }
    printf("%s: %.2fx %s in the same run; %lld of %lld drafted tokens kept (%.1f %%), %.2f "
           "tokens per verification, %lld plain steps (over the timed runs)\n", t->name,
           plain->s_tps.median > 0 ? t->s_tps.median / plain->s_tps.median : 0.0, plain->name,
           (long long)s->accepted, (long long)s->drafted,
           s->drafted ? 100.0 * (double)s->accepted / (double)s->drafted : 0.0,
           s->verifications ? (double)s->emitted / (double)s->verifications : 0.0,
           (long long)s->plain_steps);
}

/* The whole measurement on one backend: open, run the tests, print. The bandwidth probe
 * runs with the first backend and is reused (*probed). */
static int bench_backend(const bench_opts *op, og_backend backend, probe_result *probe,
                         bool *probed, bench_summary *sum) {
    bench_opts o = *op;
    probe_result pr = *probe;
    int rc = 0;
    og_model *m = NULL;
    og_status *st = NULL;
    int32_t *ids = NULL;
    double *steps = NULL; /* [n] decode step times of one run */
    test_result tests[3];
    int n_tests = 0;
    memset(tests, 0, sizeof tests);

    double t0 = now_s();
    og_model_options mo = og_model_options_default();
    mo.num_threads = o.threads;
    cli_backend_model(&o.be, &mo);
    mo.backend = backend;
    if ((st = og_model_open(o.model, &mo, &m))) goto done;
    for (size_t i = 0; i < og_model_warning_count(m); i++)
        fprintf(stderr, "onnx-genai: warning: %s\n", og_model_warning(m, i));
    snprintf(sum->backend, sizeof sum->backend, "%s", og_model_backend(m));
    double load_s = now_s() - t0;
    size_t rss_open = proc_rss_now(), rss_decoding = 0;
    cli_prep prep;
    cli_prep_of_model(m, &prep);
    int threads = runtime_session_threads(m->decoder);
    if ((st = cli_speculative_open(&o.spec, &mo))) goto done;
    if (o.prompt_file && (rc = read_prompt_file(m, &o))) goto done;
    if ((rc = fit_context(&o, m->context_length))) goto done;
    int longest = o.d + (o.p > 1 ? o.p : 1) + 1 + o.n;
    if (tg_prompt(&o) + 1 + o.n > longest) longest = tg_prompt(&o) + 1 + o.n;
    ids = malloc((size_t)longest * (size_t)o.b * sizeof *ids);
    steps = malloc((size_t)(o.n > 0 ? o.n : 1) * sizeof *steps);
    if (!ids || !steps) {
        rc = cli_fail("bench: out of memory for %d prompt ids", longest);
        goto done;
    }
    rng64 rng = {(uint64_t)o.seed * 0x2545F4914F6CDD1Dull + 1};
    /* every decode test draws the same prompts (speculation against plain decoding) */
    const rng64 tg_rng = {(uint64_t)o.seed * 0x9E3779B97F4A7C15ull + 3};
    double w_total, w_streamed;
    weight_bytes(m, &w_total, &w_streamed);
    double kv_pos = kv_bytes_per_position(m);

    char bsuf[16] = "";
    if (o.b > 1) snprintf(bsuf, sizeof bsuf, "@b%d", o.b);
    if (o.p > 0) {
        test_result *t = &tests[n_tests++];
        t->is_pp = true;
        t->n_prompt = o.p;
        t->depth = o.d;
        if (o.d) snprintf(t->name, sizeof t->name, "pp%d@d%d%s", o.p, o.d, bsuf);
        else snprintf(t->name, sizeof t->name, "pp%d%s", o.p, bsuf);
    }
    if (o.n > 0) {
        test_result *t = &tests[n_tests++];
        t->n_gen = o.n;
        t->depth = o.d;
        if (o.d) snprintf(t->name, sizeof t->name, "tg%d@d%d%s", o.n, o.d, bsuf);
        else snprintf(t->name, sizeof t->name, "tg%d%s", o.n, bsuf);
        int prompt = tg_prompt(&o);
        t->mean_ctx = prompt + (o.n + 1) / 2.0;
        t->mean_past = t->mean_ctx - 1;
        /* one step reads the weights once for all rows, and every row's cache */
        t->bytes_per_token = (w_streamed + o.b * kv_pos * t->mean_ctx) / o.b;
        /* a present output that is a new tensor gets the whole past copied into it */
        bool shared = kv_shared(m);
        t->kv_copy_per_step = shared ? 0 : o.b * kv_pos * t->mean_past;
        if (o.spec.method != CLI_SPEC_OFF) { /* the same test with speculative decoding */
            test_result *u = &tests[n_tests++];
            *u = *t;
            u->is_spec = true;
            size_t len = strlen(u->name);
            snprintf(u->name + len, sizeof u->name - len, "+spec");
        }
    }
    if ((o.per_op || o.profile) && (st = og_model_profile_start(m))) {
        if (og_status_code(st) != OG_ERR_UNSUPPORTED) goto done;
        /* a backend that cannot time its nodes: measure it without */
        fprintf(stderr, "onnx-genai: warning: bench: --per-op/--profile left out: %s\n",
                og_status_message(st));
        og_status_free(st);
        st = NULL;
        o.per_op = false;
        o.profile = NULL;
    }
    for (int k = 0; k < n_tests; k++) {
        test_result *t = &tests[k];
        t->tps = calloc((size_t)o.reps, sizeof(double));
        t->ttft = calloc((size_t)o.reps, sizeof(double));
        t->step_max = calloc((size_t)o.reps, sizeof(double));
        t->step_med = calloc((size_t)o.reps, sizeof(double));
        if (!t->tps || !t->ttft || !t->step_max || !t->step_med) {
            rc = cli_fail("bench: out of memory for the timings of %d repetitions", o.reps);
            goto done;
        }
        double dummy[3];
        if (!t->is_pp) rng = tg_rng;
        for (int r = -1; r < o.reps; r++) { /* r = -1: warm-up */
            double *a = r < 0 ? &dummy[0] : &t->tps[r];
            double *b = r < 0 ? &dummy[1] : (t->is_pp ? &t->ttft[r] : &t->step_max[r]);
            double *c = r < 0 ? &dummy[2] : &t->step_med[r];
            int tag = r < 0 ? 0 : k + 1; /* the timed repetitions, for --per-op */
            st = t->is_pp ? run_pp(m, &rng, ids, &o, tag, a, b)
                          : run_tg(m, &rng, ids, &o, tag, t, a, b, c, steps, &rss_decoding);
            if (st) goto done;
        }
        t->s_tps = summarize(t->tps, o.reps);
        t->s_ttft = summarize(t->ttft, o.reps);
        t->s_step_max = summarize(t->step_max, o.reps);
        t->s_step_med = summarize(t->step_med, o.reps);
        if (!t->is_pp) runtime_session_stats(m->decoder, &t->last_step);
    }
    double peak_rss = (double)proc_rss_peak(); /* measured before the probe's buffer */
    size_t rss_end = proc_rss_now();
    gen_plan_mem plans;
    gen_model_plan_mem(m, &plans);
    char isa[160];
    cli_isa_summary(isa, sizeof isa);
    if (!*probed) {
        if ((rc = bandwidth_probe(o.probe_mb, threads > 0 ? threads : o.threads, &pr))) goto done;
        *probe = pr;
        *probed = true;
    }
    double bw = pr.best_gbps * 1e9;
    backend_kernel_names kn;
    backend_native.kernel_names(&kn);

    if (o.json) {
        printf("{\"model\": ");
        json_str(o.model);
        printf(", \"model_type\": ");
        json_str(og_model_type(m));
        printf(", \"engine\": \"onnx-genai\", \"backend\": \"%s\", \"threads\": %d, \"batch\": %d, \"reps\": %d, "
               "\"seed\": %lld, \"compiler\": ", og_model_backend(m), threads, o.b, o.reps, o.seed);
        json_str(__VERSION__);
        printf(", \"compile_flags\": \"%s\", \"load_s\": %.6f, \"peak_rss_bytes\": %.0f, "
               "\"weight_bytes\": %.0f, \"weight_bytes_streamed\": %.0f, "
               "\"kv_bytes_per_position\": %.0f, \"kv_dtype\": \"%s\", \"layers\": %d, "
               "\"kv_heads\": %d, \"head_size\": %d, \"kv_shared_buffer\": %s, ",
               compiler_flags(), load_s, peak_rss, w_total, w_streamed, kv_pos,
               og_dtype_name(m->kv_dtype), m->n_layers, m->kv_heads, m->head_size,
               kv_shared(m) ? "true" : "false");
        printf("\"isa\": \"%s\", \"kernels\": {\"matmulnbits_int8_short\": \"%s\", "
               "\"matmulnbits_int8_long\": \"%s\", \"gemm_f32\": \"%s\"}, "
               "\"prepared_bytes\": %zu, \"prepared_nodes\": %d, \"released_bytes\": %zu, "
               "\"prepare_s\": %.6f, \"prepare_cpu_s\": %.6f, \"pack_cache\": \"%s\", "
               "\"rss_after_open_bytes\": %zu, "
               "\"rss_decoding_bytes\": %zu, \"rss_end_bytes\": %zu, \"all_logits\": %s, "
               "\"plan_bytes\": %zu, \"plan_bytes_peak\": %zu, \"plans\": %zu, "
               "\"plans_evicted\": %zu, \"plan_budget_bytes\": %zu, ",
               isa_name(isa_active()), kn.matmulnbits_short, kn.matmulnbits_long,
               kn.gemm_f32, prep.bytes, prep.nodes, prep.released, prep.secs, prep.cpu_secs,
               prep.cache ? prep.cache : "off", rss_open, rss_decoding, rss_end,
               o.all_logits ? "true" : "false", plans.bytes, plans.peak, plans.plans,
               plans.evicted, plans.budget);
        print_probe_json(&pr);
        printf(", \"tests\": [");
        for (int k = 0; k < n_tests; k++) {
            test_result *t = &tests[k];
            printf("%s{\"name\": \"%s\", \"kind\": \"%s\", \"n_prompt\": %d, \"n_gen\": %d, "
                   "\"depth\": %d, \"samples_tokens_per_s\": [", k ? ", " : "", t->name,
                   t->is_pp ? "pp" : "tg", t->n_prompt, t->n_gen, t->depth);
            for (int r = 0; r < o.reps; r++) printf("%s%.6g", r ? ", " : "", t->tps[r]);
            printf("], ");
            json_stats("tokens_per_s", t->s_tps, ", ");
            if (t->is_pp) {
                json_stats("ttft_s", t->s_ttft, "");
            } else {
                json_stats("slowest_step_s", t->s_step_max, ", ");
                json_stats("median_step_s", t->s_step_med, ", ");
                double roof = pr.best_gbps > 0 ? bw / t->bytes_per_token : 0;
                printf("\"mean_context\": %.1f, \"bytes_per_token\": %.0f, "
                       "\"kv_copy_bytes_per_step\": %.0f, \"roofline_tokens_per_s\": %.3f, "
                       "\"achieved_gbps\": %.4f, \"fraction_of_roofline\": %.5f, "
                       "\"backend_copy_bytes_per_step\": %zu",
                       t->mean_ctx, t->bytes_per_token, t->kv_copy_per_step, roof,
                       t->s_tps.median * t->bytes_per_token / 1e9,
                       roof > 0 ? t->s_tps.median / roof : 0.0, t->last_step.copied_bytes);
                if (t->is_spec)
                    printf(", \"speculative\": {\"enabled\": %s, \"verifications\": %lld, "
                           "\"drafted\": %lld, \"accepted\": %lld, \"emitted\": %lld, "
                           "\"plain_steps\": %lld, \"speedup_vs_plain\": %.4f}",
                           t->spec.enabled ? "true" : "false", (long long)t->spec.verifications,
                           (long long)t->spec.drafted, (long long)t->spec.accepted,
                           (long long)t->spec.emitted, (long long)t->spec.plain_steps,
                           tests[k - 1].s_tps.median > 0
                               ? t->s_tps.median / tests[k - 1].s_tps.median : 0.0);
            }
            printf("}");
        }
        printf("]}\n");
    } else {
        char b1[32], b2[32], b3[32], b4[32], b5[32];
        char nth[32] = "its default threads";
        if (threads > 0) snprintf(nth, sizeof nth, "%d thread%s", threads, threads == 1 ? "" : "s");
        printf("model: %s (%s) on %s, %s, load %.1f ms, peak RSS %s, prompt logits: %s\n",
               o.model, og_model_type(m), og_model_backend(m), nth, load_s * 1e3,
               human_bytes(peak_rss, b1, sizeof b1), o.all_logits ? "all positions" : "last");
        bool native = !strcmp(og_model_backend(m), "native"); /* its kernels and preparation */
        if (native)
            printf("prepared at open: %d node%s, %s in %.1f ms (%.1f ms CPU; %s of mapped "
                   "weights released; pack cache: %s); ", prep.nodes, prep.nodes == 1 ? "" : "s",
                   human_bytes((double)prep.bytes, b1, sizeof b1), prep.secs * 1e3,
                   prep.cpu_secs * 1e3, human_bytes((double)prep.released, b2, sizeof b2),
                   prep.cache ? prep.cache : "off");
        printf("RSS after open %s, decoding %s, at the end %s\n",
               human_bytes((double)rss_open, b3, sizeof b3),
               human_bytes((double)rss_decoding, b5, sizeof b5),
               human_bytes((double)rss_end, b4, sizeof b4));
        if (native)
            printf("cached plans: %zu, %s (peak %s, budget %s per session, %zu evicted)\n",
                   plans.plans, human_bytes((double)plans.bytes, b1, sizeof b1),
                   human_bytes((double)plans.peak, b2, sizeof b2),
                   human_bytes((double)plans.budget, b3, sizeof b3), plans.evicted);
        if (native)
            printf("kernels: %s; MatMulNBits int8 %s (M < 16), %s (M >= 16); sgemm %s\n", isa,
                   kn.matmulnbits_short, kn.matmulnbits_long, kn.gemm_f32);
        printf("weights: %s in initializers, %s streamed per token; KV %s per cached token "
               "(%s, %s)\n", human_bytes(w_total, b1, sizeof b1),
               human_bytes(w_streamed, b2, sizeof b2), human_bytes(kv_pos, b3, sizeof b3),
               og_dtype_name(m->kv_dtype),
               kv_shared(m) ? "shared past/present buffer" : "present is a new tensor");
        if (pr.best_gbps > 0)
            printf("bandwidth probe: %.1f GB/s (best of %d passes over %zu MiB, %d threads; "
                   "median %.1f)\n", pr.best_gbps, pr.passes, pr.bytes >> 20, pr.threads,
                   pr.median_gbps);
        printf("%d repetitions after one warm-up; tokens/s median [min .. max] ± stddev\n\n",
               o.reps);
        printf("| %-14s | %10s | %-30s | %9s | %10s | %8s | %7s |\n", "test", "t/s",
               "[min .. max] ± sd", "ms/token", "bytes/tok", "GB/s", "roofline");
        printf("|%s|%s|%s|%s|%s|%s|%s|\n", "----------------", "-----------:",
               "--------------------------------", "----------:", "-----------:", "---------:",
               "--------:");
        for (int k = 0; k < n_tests; k++) {
            test_result *t = &tests[k];
            char spread[64];
            snprintf(spread, sizeof spread, "[%.1f .. %.1f] ± %.1f", t->s_tps.min, t->s_tps.max,
                     t->s_tps.stddev);
            if (t->is_pp) {
                printf("| %-14s | %10.1f | %-30s | %9.3f | %10s | %8s | %7s |\n", t->name,
                       t->s_tps.median, spread, 1e3 / t->s_tps.median, "-", "-", "-");
            } else {
                double roof = pr.best_gbps > 0 ? bw / t->bytes_per_token : 0;
                char gb[16] = "-", pct[16] = "-";
                if (roof > 0) {
                    snprintf(gb, sizeof gb, "%.2f", t->s_tps.median * t->bytes_per_token / 1e9);
                    snprintf(pct, sizeof pct, "%.1f%%", 100.0 * t->s_tps.median / roof);
                }
                printf("| %-14s | %10.1f | %-30s | %9.3f | %10s | %8s | %7s |\n", t->name,
                       t->s_tps.median, spread, 1e3 / t->s_tps.median,
                       human_bytes(t->bytes_per_token, b1, sizeof b1), gb, pct);
            }
        }
        printf("\n");
        for (int k = 0; k < n_tests; k++) {
            test_result *t = &tests[k];
            if (t->is_pp)
                printf("TTFT (%s): %.2f ms median [%.2f .. %.2f]\n", t->name, t->s_ttft.median * 1e3,
                       t->s_ttft.min * 1e3, t->s_ttft.max * 1e3);
            else
                printf("%s: median step %.3f ms, slowest %.3f ms (medians over runs); KV copied "
                       "per step %s (mean past %.0f tokens); roofline %.1f tok/s\n", t->name,
                       t->s_step_med.median * 1e3, t->s_step_max.median * 1e3, human_bytes(t->kv_copy_per_step, b1, sizeof b1),
                       t->mean_past, pr.best_gbps > 0 ? bw / t->bytes_per_token : 0.0);
            if (t->is_spec && k > 0)
                spec_line(t, &tests[k - 1]);
            if (!t->is_pp && t->last_step.copies)
                printf("%s: %s copied per step out of memory %s allocated (%zu outputs)\n",
                       t->name, human_bytes((double)t->last_step.copied_bytes, b1, sizeof b1),
                       og_model_backend(m), t->last_step.copies);
        }
    }
    if (o.per_op) /* after the JSON object (on stderr then), so that it stays parseable */
        for (int k = 0; k < n_tests; k++) {
            test_result *t = &tests[k];
            FILE *f = o.json ? stderr : stdout;
            fprintf(f, "\nops by total time, %s (%s):\n", t->name,
                    t->is_pp ? "per prefill run" : "per decode step");
            profiler_print_ops(m->prof, k + 1, t->is_pp ? o.reps : (double)o.reps * o.n,
                               t->is_pp ? "ms/run" : "ms/step", f);
        }
    if (o.profile && (st = og_model_profile_write(m, o.profile))) goto done;
    sum->n_tests = n_tests;
    for (int k = 0; k < n_tests; k++) {
        snprintf(sum->name[k], sizeof sum->name[k], "%s", tests[k].name);
        sum->tps[k] = tests[k].s_tps.median;
    }
    rc = 0;
done:
    if (st) {
        rc = cli_fail("bench: %s", og_status_message(st));
        og_status_free(st);
    }
    for (int k = 0; k < n_tests; k++) {
        free(tests[k].tps);
        free(tests[k].ttft);
        free(tests[k].step_max);
        free(tests[k].step_med);
    }
    free(ids);
    free(steps);
    free(o.file_ids);
    cli_speculative_close(&o.spec);
    og_model_close(m);
    return rc;
}

int cli_bench(int argc, char **argv) {
    bench_opts o = {.p = -1, .n = -1, .d = 0, .b = 1, .reps = 5, .threads = 0, .probe_mb = 512,
                    .seed = 1};
    int rc = parse_args(argc, argv, &o);
    if (rc) return rc;
    probe_result pr;
    memset(&pr, 0, sizeof pr);
    if (o.probe_only) {
        if ((rc = bandwidth_probe(o.probe_mb ? o.probe_mb : 512, o.threads, &pr))) return rc;
        if (o.json) {
            printf("{");
            print_probe_json(&pr);
            printf("}\n");
        } else {
            printf("bandwidth probe: %.1f GB/s best, %.1f GB/s median (%d threads, %zu MiB, %d "
                   "passes)\n", pr.best_gbps, pr.median_gbps, pr.threads, pr.bytes >> 20, pr.passes);
        }
        return 0;
    }

    bench_summary sums[BENCH_MAX_BACKENDS];
    memset(sums, 0, sizeof sums);
    bool probed = false;
    if (o.json && o.n_backends > 1) printf("{\"runs\": [\n");
    for (int k = 0; k < o.n_backends && !rc; k++) {
        if (o.json && k) printf(",\n");
        else if (k) printf("\n");
        rc = bench_backend(&o, o.backends[k], &pr, &probed, &sums[k]);
    }
    if (rc) return rc;
    if (o.n_backends > 1) { /* each test's median tokens/s against the first backend's */
        if (o.json) printf("], \"ratios_to_first\": [");
        else printf("\nmedian tokens/s relative to %s:\n", sums[0].backend);
        for (int k = 1; k < o.n_backends; k++)
            for (int t = 0; t < sums[k].n_tests && t < sums[0].n_tests; t++) {
                double r = sums[0].tps[t] > 0 ? sums[k].tps[t] / sums[0].tps[t] : 0;
                if (o.json)
                    printf("%s{\"backend\": \"%s\", \"test\": \"%s\", \"ratio\": %.4f}",
                           k == 1 && t == 0 ? "" : ", ", sums[k].backend, sums[k].name[t], r);
                else
                    printf("  %-14s %s %.1f t/s, %s %.1f t/s: %.2fx\n", sums[k].name[t],
                           sums[0].backend, sums[0].tps[t], sums[k].backend, sums[k].tps[t], r);
            }
        if (o.json) printf("]}\n");
    }
    return 0;
}
