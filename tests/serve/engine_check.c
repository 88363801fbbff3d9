/* engine-check PACKAGE_DIR [options]: the serving engine against the generator.
 *
 * Greedy tokens of N prompts of different lengths, each run alone through og_generator
 * (the path `generate` takes), are the oracle. The engine then gets all N at once, and
 * every request must give exactly its oracle tokens:
 *   --shared K        every prompt starts with the same K tokens (a system prompt: the
 *                     prefix cache serves them after the first request)
 *   --kv-blocks B     a pool of B blocks, small enough that sequences are preempted and
 *                     recomputed
 *   --block-size S, --max-batch M, --step-tokens T, --per-sequence
 *   --rounds R        submit the whole set R times (the prefix cache warm after the first)
 *   --want-preemption, --want-cache-hits  fail unless the run preempted a sequence /
 *                     served prompt tokens from the prefix cache (the case tests them)
 *   --oracle-engine   the oracle is the engine itself with one request at a time (batch
 *                     invariance alone, whatever the generator's arithmetic)
 *   --cancel          every odd request is cancelled after its second token: it must end
 *                     as cancelled with a prefix of its oracle tokens, the others must not
 *                     notice; then one request alone is cancelled and the pool must have
 *                     all its blocks back as soon as it reports the end
 *   --backend ort     the model on onnxruntime (the generator's oracle too); skips (77)
 *                     when no onnxruntime can be loaded
 *   --want-per-sequence  fail unless the engine chose per-sequence mode itself
 *   --want-batched    fail unless the engine batched (a hybrid model too: state slots)
 *   --kv-dtype int8|fp8|f16  the model's KV cache stored so (og_model_options.kv_dtype),
 *                     the generator's (the oracle's) and the engine's paged pool alike
 *   --kv-fit K        kv_memory = K times the largest request's charge (eng_request_bytes,
 *                     as a first engine with the defaults reports it): the requests must
 *                     wait for memory, the KV gauge never exceeds the budget and fewer
 *                     than all of them ever run at once
 *   --guide TYPE DATA  constrained decoding (TYPE: json_schema, json_object, regex,
 *                     lark_grammar): the oracle is the generator with
 *                     og_generator_params_set_guidance, every engine request carries the
 *                     grammar of the model's cache (one matcher per request), with
 *                     preemption, the prefix cache and per-sequence mode as the options say
 *   --think           with --guide: each request may open a reasoning block with the token
 *                     its unconstrained greedy answer starts with, closing at that answer's
 *                     fourth token (or an earlier copy of it): the engine must give the
 *                     unconstrained tokens up to the close, then the generator's guided
 *                     answer to the prompt extended by them
 *   --ignore-eos FILE  prompts and oracle answers from FILE (ignore_eos_oracle.py:
 *                     onnxruntime-genai's on a package whose EOS greedy decoding writes
 *                     early): every request asks for ignore_eos and exactly its oracle's
 *                     max_tokens, EOS tokens included, and ends for its length; then each
 *                     again without ignore_eos must stop at its first EOS
 *   --speculative N   the engine drafts by prompt lookup (ngram_size N; --draft-tokens K,
 *                     --draft-fixed, --ngram-chained as serve takes them) and verifies the
 *                     drafts inside its batched steps: the tokens must still be the oracle's
 *   --want-verifications  fail unless drafts were verified and some of them kept
 *   --oracle-drafts   drafts (instead of prompt lookup) are the oracle's own next tokens
 *                     but every seventh position of an answer, which is drafted wrong:
 *                     verifications keep drafts and reject them on any model, random
 *                     weights included
 *   --draft-model DIR  drafts from that package's model (each sequence's own generator of
 *                     it, in step with the sequence)
 *   --mtp             drafts from the package's MTP head (each sequence's own generator of
 *                     it, fed the hidden rows the engine's steps return for the sequence)
 *   --max-wasted P    fail when drafted tokens that were not kept exceed P % of the
 *                     tokens delivered (the cost model's bound where drafts seldom hit)
 *   --repeat          each prompt's random tail comes twice (text a model may go on
 *                     repeating: lookups find it, drafts get kept)
 *   --eos-at K        the model's EOS becomes prompt 0's K-th greedy token (before the
 *                     oracle runs: generator and engine alike stop on it), so that answers
 *                     end early, also inside a verified block; fails unless some do
 *   --sample          requests sample (temperature 0.8, top-k 40, seed 1000 + i); the oracle
 *                     is the engine with one request at a time and no speculation (the
 *                     same draws must give the same tokens)
 * Every case also checks the statistics against what the requests saw (counters, the
 * KV pool empty at the end, first-token latencies counted once per request).
 * Prints one line per request and a summary; exits 1 on any difference. */
#include "engine/engine.h"
#include "engine/kv_pool.h"
#include "genai/budget.h"
#include "genai/guidance.h"
#include "genai/model.h"

#include <malloc.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { MAX_PROMPTS = 64, MAX_NEW = 48 };

static int fail(og_status *st) {
    fprintf(stderr, "engine-check: %s\n", og_status_message(st));
    og_status_free(st);
    return 2;
}

/* --repeat: each prompt's tail is followed by a copy of itself */
static bool repeat_tail;

/* Prompt i: K shared tokens then a tail of 3 + 7i tokens, ids from a fixed stream (with
 * --repeat, twice). */
static int make_prompt(int i, int shared, int vocab, int32_t *out) {
    uint32_t s = 7;
    int n = 0;
    for (int k = 0; k < shared; k++) {
        s = s * 1103515245u + 12345u;
        out[n++] = 3 + (int32_t)((s >> 8) % (uint32_t)(vocab - 3));
    }
    s = 1000u + (uint32_t)i;
    for (int k = 0; k < 3 + 7 * i; k++) {
        s = s * 1103515245u + 12345u;
        out[n++] = 3 + (int32_t)((s >> 8) % (uint32_t)(vocab - 3));
    }
    if (repeat_tail) {
        memcpy(out + n, out + shared, sizeof *out * (size_t)(n - shared));
        n += n - shared;
    }
    return n;
}

/* Largest gap seen between what a generator's end gave back and gen_generator_bytes, the
 * charge of per-sequence mode (> 0: the estimate was short); 0 runs counted without
 * mallinfo2 (AddressSanitizer's allocator reports nothing). */
static double charge_short = -1e300;
static int charge_runs;
/* --guide */
static const char *guide_type, *guide_data;
/* --sample */
static bool sample_mode;

/* --oracle-drafts: the prompts and the oracle's answers */
static struct {
    int n, vocab;
    int32_t (*prompts)[4096], (*want)[MAX_NEW];
    const int *plen, *wlen;
} od;

/* The drafts of a sequence that starts with prompt i and agrees with its oracle answer so
 * far: the answer's next tokens, wrong (+1) at every seventh position (3, 10, 17, ...). */
static int oracle_drafter(void *ctx, const int32_t *seq, int len, int max_k, int32_t *out) {
    for (int i = 0; i < od.n; i++) {
        int p = od.plen[i], g = len - p, k = 0;
        if (g < 0 || memcmp(seq, od.prompts[i], sizeof *seq * (size_t)p)) continue;
        if (g > od.wlen[i] || memcmp(seq + p, od.want[i], sizeof *seq * (size_t)g)) return 0;
        for (; k < max_k && g + k < od.wlen[i]; k++) {
            int32_t t = od.want[i][g + k];
            out[k] = (g + k) % 7 == 3 ? (t + 1) % od.vocab : t;
        }
        return k;
    }
    return 0;
}

/* Request i's sampling (greedy unless --sample) with max_tokens new tokens. */
static eng_sampling sampling_of(int i, int max_tokens) {
    eng_sampling s = {.max_tokens = max_tokens, .top_p = 1, .logprobs = -1};
    if (sample_mode) {
        s.sample = true;
        s.temperature = 0.8f;
        s.top_k = 40;
        s.seed = 1000u + (uint64_t)i;
    }
    return s;
}

static og_status *alone(og_model *m, const int32_t *prompt, int n, int max_new, int32_t *out, int *n_out) {
    og_generator_params p = og_generator_params_default(m);
    p.max_length = n + max_new;
    p.do_sample = 0;
    if (guide_type) OG_TRY(og_generator_params_set_guidance(&p, guide_type, guide_data));
    /* as per-sequence mode runs it (engine_single.c): with all_logits a prompt's logits
     * for every position, which no estimate without the prompt can hold, would outlive
     * the prompt when generation stops right after it */
    p.all_logits = 0;
    og_generator *g;
    OG_TRY(og_generator_create(m, &p, &g));
    og_status *st = og_generator_append_tokens(g, prompt, (size_t)n);
    while (!st && !og_generator_is_done(g)) st = og_generator_generate_next_token(g);
    const int32_t *ids;
    size_t len = 0;
    if (!st) st = og_generator_get_sequence(g, 0, &ids, &len);
    if (!st) {
        *n_out = (int)len - n;
        memcpy(out, ids + n, sizeof *out * (size_t)*n_out);
    }
    struct mallinfo2 a = mallinfo2(); /* what the generator holds: its end gives it back */
    og_generator_destroy(g);
    struct mallinfo2 b = mallinfo2();
    double freed = (double)(a.uordblks + a.hblkhd) - (double)(b.uordblks + b.hblkhd);
    if (freed > 0) {
        double gap = freed - gen_generator_bytes(m, &p, 1);
        if (gap > charge_short) charge_short = gap;
        charge_runs++;
    }
    return st;
}

static bool is_eos_id(const og_model *m, int32_t id) {
    const int32_t *ids;
    size_t n = og_model_eos_token_ids(m, &ids);
    for (size_t i = 0; i < n; i++)
        if (ids[i] == id) return true;
    return false;
}

/* --think's oracle: the unconstrained greedy answer's first tokens as a reasoning block
 * (opened by its first token, closed by its fourth or an earlier copy of it), then the
 * guided answer to the prompt extended by the block. */
static og_status *alone_think(og_model *m, const int32_t *prompt, int n, int32_t *out, int *n_out,
                              int32_t *open, int32_t *close) {
    const char *type = guide_type;
    guide_type = NULL;
    int32_t u[MAX_NEW];
    int nu = 0;
    og_status *st = alone(m, prompt, n, MAX_NEW, u, &nu);
    guide_type = type;
    if (st) return st;
    if (nu < 4) return og_errorf(OG_ERR_RUNTIME, "--think: the unconstrained answer has %d tokens", nu);
    int c = 1;
    while (u[c] != u[3]) c++;
    for (int k = 0; k <= c; k++)
        if (is_eos_id(m, u[k]))
            return og_errorf(OG_ERR_RUNTIME, "--think: the reasoning block would hold an EOS");
    int32_t *p2 = malloc(sizeof *p2 * (size_t)(n + c + 1));
    if (!p2) return og_oom();
    memcpy(p2, prompt, sizeof *p2 * (size_t)n);
    memcpy(p2 + n, u, sizeof *p2 * (size_t)(c + 1));
    int ng = 0;
    st = alone(m, p2, n + c + 1, MAX_NEW - (c + 1), out + c + 1, &ng);
    free(p2);
    memcpy(out, u, sizeof *out * (size_t)(c + 1));
    *n_out = c + 1 + ng;
    *open = u[0];
    *close = u[3];
    return st;
}

/* The request alone through an engine of its own (no prefix cache). */
static og_status *alone_engine(og_model *m, const eng_options *o, int idx, const int32_t *prompt,
                               int n, int max_new, int32_t *out, int *n_out) {
    eng_options one = *o;
    one.max_batch = 1;
    one.prefix_cache = false;
    if (sample_mode) { /* the oracle of sampling: plain steps */
        one.spec_ngram = 0;
        one.spec_mtp = false;
    }
    eng_engine *e;
    OG_TRY(eng_create(m, &one, &e));
    eng_sampling s = sampling_of(idx, max_new);
    eng_request *r;
    char msg[256];
    if (eng_submit(e, prompt, n, &s, &r, msg, sizeof msg) != ENG_SUBMIT_OK) {
        eng_destroy(e);
        return og_errorf(OG_ERR_RUNTIME, "submit: %s", msg);
    }
    while (eng_request_finish(r, NULL) == ENG_RUNNING) eng_request_wait(r, 1 << 30, 1.0);
    eng_token t[MAX_NEW];
    *n_out = eng_request_wait(r, 0, 0);
    eng_request_tokens(r, 0, *n_out, t);
    for (int i = 0; i < *n_out; i++) out[i] = t[i].id;
    eng_request_release(r);
    eng_destroy(e);
    return NULL;
}

/* FILE of --ignore-eos: lines "P ids", "T ids", "S ids" per prompt (the prompt, the answer
 * with ignore_eos, the answer without it). Returns the number of prompts, -1 on error. */
static int read_oracle(const char *path, int32_t (*prompts)[4096], int *plen,
                       int32_t (*want)[MAX_NEW], int *wlen, int32_t (*stop)[MAX_NEW], int *slen) {
    FILE *f = fopen(path, "r");
    if (!f) {
        printf("SKIP: %s is missing (its oracle, onnxruntime-genai, did not run)\n", path);
        return -77;
    }
    static char line[65536];
    int n = -1, bad = 0;
    while (!bad && fgets(line, sizeof line, f)) {
        char kind = line[0];
        if (kind == 'P' && ++n >= MAX_PROMPTS) bad = 1;
        if (bad || n < 0 || (kind != 'P' && kind != 'T' && kind != 'S')) {
            bad = 1;
            break;
        }
        int32_t *dst = kind == 'P' ? prompts[n] : kind == 'T' ? want[n] : stop[n];
        int cap = kind == 'P' ? 4096 : MAX_NEW, k = 0;
        char *p = line + 1, *end;
        for (long v = strtol(p, &end, 10); end != p; v = strtol(p, &end, 10)) {
            if (k == cap) {
                bad = 1;
                break;
            }
            dst[k++] = (int32_t)v;
            p = end;
        }
        *(kind == 'P' ? &plen[n] : kind == 'T' ? &wlen[n] : &slen[n]) = k;
    }
    fclose(f);
    if (bad || n < 0) {
        fprintf(stderr, "engine-check: %s: expected lines 'P ids', 'T ids' (at most %d), 'S ids' "
                        "for at most %d prompts\n", path, MAX_NEW, MAX_PROMPTS);
        return -1;
    }
    return n + 1;
}

/* Without ignore_eos, each prompt alone must give its oracle's answer up to its first EOS
 * and end there for the EOS (or for its length when it has none). */
static int stops_on_eos(eng_engine *e, int n, int32_t (*prompts)[4096], const int *plen,
                        int32_t (*stop)[MAX_NEW], const int *slen, const int *wlen) {
    int bad = 0;
    for (int i = 0; i < n; i++) {
        eng_sampling s = {.max_tokens = wlen[i], .top_p = 1, .logprobs = -1};
        eng_request *r;
        char msg[256];
        if (eng_submit(e, prompts[i], plen[i], &s, &r, msg, sizeof msg) != ENG_SUBMIT_OK) {
            printf("FAIL: without ignore_eos: submit %d: %s\n", i, msg);
            bad++;
            continue;
        }
        while (eng_request_finish(r, NULL) == ENG_RUNNING) eng_request_wait(r, 1 << 30, 1.0);
        eng_finish f = eng_request_finish(r, NULL);
        int got = eng_request_wait(r, 0, 0);
        eng_token t[MAX_NEW];
        eng_request_tokens(r, 0, got, t);
        eng_request_release(r);
        bool ok = got == slen[i] && f == (slen[i] < wlen[i] ? ENG_FINISH_STOP : ENG_FINISH_LENGTH);
        for (int k = 0; ok && k < got; k++) ok = t[k].id == stop[i][k];
        printf("%s prompt %d without ignore_eos: %d tokens, ended %s (onnxruntime-genai: %d%s)\n",
               ok ? "ok  " : "FAIL", i, got, f == ENG_FINISH_STOP ? "on EOS" : "otherwise", slen[i],
               slen[i] < wlen[i] ? ", then EOS" : "");
        bad += !ok;
    }
    return bad;
}

/* The statistics once every request has ended: they agree with what the requests saw. */
static int check_stats(const eng_stats *es, uint64_t requests, uint64_t cancelled,
                       uint64_t delivered, uint64_t with_tokens, bool batched) {
    int bad = 0;
#define EXPECT(cond, ...) \
    if (!(cond)) { printf("FAIL: statistics: " __VA_ARGS__); printf("\n"); bad++; }
    EXPECT(es->requests == requests, "%llu requests counted, %llu submitted",
           (unsigned long long)es->requests, (unsigned long long)requests);
    EXPECT(es->finished + es->cancelled + es->failed == requests && es->cancelled == cancelled &&
           es->failed == 0, "%llu finished + %llu cancelled + %llu failed; %llu requests of which "
           "%llu cancelled", (unsigned long long)es->finished, (unsigned long long)es->cancelled,
           (unsigned long long)es->failed, (unsigned long long)requests,
           (unsigned long long)cancelled);
    EXPECT(es->generated_tokens == delivered, "%llu tokens generated, %llu delivered",
           (unsigned long long)es->generated_tokens, (unsigned long long)delivered);
    EXPECT(es->ttft.n == with_tokens && es->inter_token.n == delivered - with_tokens,
           "%llu first-token and %llu inter-token latencies for %llu tokens of %llu requests",
           (unsigned long long)es->ttft.n, (unsigned long long)es->inter_token.n,
           (unsigned long long)delivered, (unsigned long long)with_tokens);
    EXPECT(es->queue_depth == 0, "queue depth %d with nothing waiting", es->queue_depth);
    EXPECT(es->prefix_hits <= es->prefix_lookups, "%llu prefix hits of %llu lookups",
           (unsigned long long)es->prefix_hits, (unsigned long long)es->prefix_lookups);
    EXPECT(!batched || es->kv_blocks_used == 0, "%lld KV blocks in use with nothing running",
           (long long)es->kv_blocks_used);
    EXPECT(es->kv_bytes_used == 0 && es->kv_bytes_total > 0, "%llu KV bytes of %llu in use with "
           "nothing running", (unsigned long long)es->kv_bytes_used,
           (unsigned long long)es->kv_bytes_total);
    EXPECT(!batched || es->kv_blocks_cached <= es->kv_blocks_total, "%lld KV blocks cached of %lld",
           (long long)es->kv_blocks_cached, (long long)es->kv_blocks_total);
    EXPECT(es->state_slots_used == 0 && (uint64_t)es->state_snapshots <= es->state_snapshots_taken,
           "%lld state slots in use with nothing running, %lld snapshots held of %llu taken",
           (long long)es->state_slots_used, (long long)es->state_snapshots,
           (unsigned long long)es->state_snapshots_taken);
#undef EXPECT
    return bad;
}

/* One request alone, cancelled after its first token: when it reports the end, the pool
 * already has every block back. */
static int cancel_alone(eng_engine *e, const int32_t *prompt, int n) {
    /* as many tokens as the context allows: the cancel must come before the end, and a
     * tiny model's steps take well under a millisecond (a loaded machine may not run this
     * thread for many of them) */
    eng_stats es0;
    eng_get_stats(e, &es0);
    int most = eng_context_length(e) - n;
    if (es0.kv_blocks_total > 0 && es0.kv_blocks_total * es0.block_size - n < most) /* a small pool */
        most = (int)(es0.kv_blocks_total * es0.block_size) - n;
    eng_sampling s = {.max_tokens = most, .top_p = 1, .logprobs = -1, .ignore_eos = true};
    eng_request *r;
    char msg[256];
    if (eng_submit(e, prompt, n, &s, &r, msg, sizeof msg) != ENG_SUBMIT_OK) {
        printf("FAIL: cancel alone: submit: %s\n", msg);
        return 1;
    }
    while (eng_request_wait(r, 0, 1.0) < 1 && eng_request_finish(r, NULL) == ENG_RUNNING) {}
    eng_request_cancel(r);
    while (eng_request_finish(r, NULL) == ENG_RUNNING) eng_request_wait(r, 1 << 30, 1.0);
    eng_finish f = eng_request_finish(r, NULL);
    int got = eng_request_wait(r, 0, 0);
    eng_request_release(r);
    eng_stats es;
    eng_get_stats(e, &es);
    bool ok = f == ENG_FINISH_CANCELLED && got < most && es.kv_bytes_used == 0 &&
              es.running == 0 && (!eng_batched(e) || es.kv_blocks_used == 0);
    printf("%s cancel alone: ended %s after %d tokens, %lld KV blocks / %llu KV bytes in use and "
           "%d running when it said so\n", ok ? "ok  " : "FAIL",
           f == ENG_FINISH_CANCELLED ? "cancelled" : "otherwise", got, (long long)es.kv_blocks_used,
           (unsigned long long)es.kv_bytes_used, es.running);
    return !ok;
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: engine-check PACKAGE_DIR [--prompts N] [--shared K] [--kv-blocks B] "
                        "[--block-size S] [--max-batch M] [--step-tokens T] [--rounds R] [--per-sequence] "
                        "[--backend native|ort] [--want-per-sequence]\n");
        return 2;
    }
    int n_prompts = 16, shared = 0, kv_blocks = 0, rounds = 1, kv_fit = 0, eos_at = -1;
    double max_wasted = -1;
    const char *draft_dir = NULL;
    const char *ignore_file = NULL;
    bool oracle_engine = false, want_preempt = false, want_hits = false, cancel = false,
         want_single = false, want_batched = false, think = false, want_verify = false;
    og_model_options mo = og_model_options_default();
    eng_options o = eng_options_default();
    for (int i = 2; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : "0";
        if (!strcmp(a, "--prompts")) n_prompts = atoi(v), i++;
        else if (!strcmp(a, "--shared")) shared = atoi(v), i++;
        else if (!strcmp(a, "--kv-blocks")) kv_blocks = atoi(v), i++;
        else if (!strcmp(a, "--block-size")) o.block_size = atoi(v), i++;
        else if (!strcmp(a, "--max-batch")) o.max_batch = atoi(v), i++;
        else if (!strcmp(a, "--step-tokens")) o.step_tokens = atoi(v), i++;
        else if (!strcmp(a, "--rounds")) rounds = atoi(v), i++;
        else if (!strcmp(a, "--per-sequence")) o.per_sequence = true;
        else if (!strcmp(a, "--oracle-engine")) oracle_engine = true;
        else if (!strcmp(a, "--want-preemption")) want_preempt = true;
        else if (!strcmp(a, "--want-cache-hits")) want_hits = true;
        else if (!strcmp(a, "--cancel")) cancel = true;
        else if (!strcmp(a, "--want-per-sequence")) want_single = true;
        else if (!strcmp(a, "--want-batched")) want_batched = true;
        else if (!strcmp(a, "--kv-fit")) kv_fit = atoi(v), i++;
        else if (!strcmp(a, "--ignore-eos") && i + 1 < argc) ignore_file = v, i++;
        else if (!strcmp(a, "--guide") && i + 2 < argc) guide_type = v, guide_data = argv[i + 2], i += 2;
        else if (!strcmp(a, "--think")) think = true;
        else if (!strcmp(a, "--speculative")) o.spec_ngram = atoi(v), i++;
        else if (!strcmp(a, "--draft-tokens")) o.spec_max_draft = atoi(v), i++;
        else if (!strcmp(a, "--draft-fixed")) o.spec_fixed = true;
        else if (!strcmp(a, "--ngram-chained")) o.spec_chained = true;
        else if (!strcmp(a, "--want-verifications")) want_verify = true;
        else if (!strcmp(a, "--eos-at")) eos_at = atoi(v), i++;
        else if (!strcmp(a, "--repeat")) repeat_tail = true;
        else if (!strcmp(a, "--max-wasted")) max_wasted = atof(v), i++;
        else if (!strcmp(a, "--oracle-drafts")) o.spec_drafter = oracle_drafter;
        else if (!strcmp(a, "--draft-model") && i + 1 < argc) draft_dir = v, i++;
        else if (!strcmp(a, "--mtp")) o.spec_mtp = true;
        else if (!strcmp(a, "--sample")) sample_mode = oracle_engine = true;
        else if (!strcmp(a, "--backend") && !strcmp(v, "ort")) mo.backend = OG_BACKEND_ORT, i++;
        else if (!strcmp(a, "--backend") && !strcmp(v, "native")) mo.backend = OG_BACKEND_NATIVE, i++;
        else if (!strcmp(a, "--kv-dtype") && !strcmp(v, "int8")) mo.kv_dtype = OG_INT8, i++;
        else if (!strcmp(a, "--kv-dtype") && !strcmp(v, "fp8")) mo.kv_dtype = OG_FLOAT8E4M3FN, i++;
        else if (!strcmp(a, "--kv-dtype") && !strcmp(v, "f16")) mo.kv_dtype = OG_FLOAT16, i++;
        else {
            fprintf(stderr, "engine-check: unknown option %s\n", a);
            return 2;
        }
    }
    if (n_prompts < 1 || n_prompts > MAX_PROMPTS || rounds < 1 || (guide_type && oracle_engine) ||
        (think && !guide_type) || (sample_mode && ignore_file))
        return 2;
    char cfg[4096];
    snprintf(cfg, sizeof cfg, "%s/genai_config.json", argv[1]);
    FILE *probe = fopen(cfg, "r");
    if (!probe) {
        printf("SKIP: %s is missing (the test packages were not made)\n", cfg);
        return 77;
    }
    fclose(probe);
    og_model *m;
    og_status *st = og_model_open(argv[1], &mo, &m);
    if (st && mo.backend == OG_BACKEND_ORT && og_status_code(st) == OG_ERR_NOT_FOUND &&
        strstr(og_status_message(st), "onnxruntime is not available")) {
        printf("SKIP: %s\n", og_status_message(st));
        og_status_free(st);
        return 77;
    }
    if (st) return fail(st);
    og_model *draft = NULL;
    if (draft_dir) {
        og_model_options dmo = og_model_options_default();
        if ((st = og_model_open(draft_dir, &dmo, &draft))) return fail(st);
        o.spec_draft_model = draft;
    }
    guide_grammar *grammar = NULL;
    size_t guide_tokens = 0;
    if (guide_type) {
        guide_kind kind;
        const guide_vocab *gv;
        st = guide_kind_parse(guide_type, &kind);
        if (!st) st = gen_guidance_vocab(m, &gv);
        if (!st) st = gen_guidance_grammar(m, kind, guide_data, &grammar);
        if (st) return fail(st);
        guide_tokens = guide_vocab_size(gv);
        printf("guidance: %s %s\n", guide_type, guide_data);
    }
    if (kv_blocks > 0) { /* the layers with KV, beside a hybrid's state slots and snapshots */
        int kv_layers = 0;
        for (int i = 0; i < m->n_cache; i++)
            kv_layers += m->cache[i].kind == GEN_CACHE_KV && !strcmp(m->cache[i].what, "key");
        o.kv_memory = (size_t)kv_blocks * (size_t)o.block_size *
                      kv_pool_position_bytes(kv_layers ? kv_layers : m->n_layers, m->kv_heads,
                                             m->head_size, m->kv_dtype) +
                      eng_state_bytes(m, &o);
    }
    static int32_t prompts[MAX_PROMPTS][4096], want[MAX_PROMPTS][MAX_NEW], stop[MAX_PROMPTS][MAX_NEW];
    int plen[MAX_PROMPTS], wlen[MAX_PROMPTS], slen[MAX_PROMPTS];
    int32_t think_open[MAX_PROMPTS], think_close[MAX_PROMPTS];
    int n_eos = 0; /* EOS ids in the oracle's answers with ignore_eos */
    if (ignore_file) {
        n_prompts = read_oracle(ignore_file, prompts, plen, want, wlen, stop, slen);
        if (n_prompts < 0) {
            og_model_close(m);
            return n_prompts == -77 ? 77 : 2;
        }
        for (int i = 0; i < n_prompts; i++)
            for (int k = 0; k < wlen[i]; k++) n_eos += is_eos_id(m, want[i][k]);
        printf("oracle %s: %d prompts, %d EOS tokens in their answers with ignore_eos\n",
               ignore_file, n_prompts, n_eos);
    }
    if (eos_at >= 0 && eos_at < MAX_NEW && !ignore_file && m->n_eos > 0) {
        plen[0] = make_prompt(0, shared, m->vocab_size, prompts[0]);
        m->n_eos = 0; /* no EOS: all MAX_NEW tokens */
        st = alone(m, prompts[0], plen[0], MAX_NEW, want[0], &wlen[0]);
        m->n_eos = 1;
        if (st) return fail(st);
        if (wlen[0] <= eos_at) {
            printf("FAIL: prompt 0's answer has %d tokens (--eos-at %d)\n", wlen[0], eos_at);
            return 1;
        }
        m->eos_ids[0] = want[0][eos_at];
        printf("EOS: id %d (prompt 0's greedy token %d)\n", m->eos_ids[0], eos_at);
    }
    for (int i = 0; i < n_prompts && !ignore_file; i++) {
        plen[i] = make_prompt(i, shared, m->vocab_size, prompts[i]);
        if (oracle_engine) st = alone_engine(m, &o, i, prompts[i], plen[i], MAX_NEW, want[i], &wlen[i]);
        else if (think)
            st = alone_think(m, prompts[i], plen[i], want[i], &wlen[i], &think_open[i], &think_close[i]);
        else st = alone(m, prompts[i], plen[i], MAX_NEW, want[i], &wlen[i]);
        if (st) return fail(st);
    }
    od.n = n_prompts, od.vocab = m->vocab_size, od.prompts = prompts, od.want = want;
    od.plen = plen, od.wlen = wlen;
    if (charge_runs > 0) {
        if (charge_short <= 0)
            printf("ok   every generator gave back less than its estimate (the closest by %.0f "
                   "bytes; %d runs)\n", -charge_short, charge_runs);
        else
            printf("FAIL a generator gave back %.0f bytes more than its estimate\n", charge_short);
        if (charge_short > 0) return 1;
    } else if (!oracle_engine && !ignore_file) {
        printf("note: mallinfo2 reports nothing here (a sanitizer's allocator): the charge "
               "estimate is not checked in this build\n");
    }
    eng_engine *e;
    if (kv_fit > 0) { /* the charges as an engine with the default budget reports them */
        if ((st = eng_create(m, &o, &e))) return fail(st);
        size_t most = 0;
        for (int i = 0; i < n_prompts; i++) {
            eng_sampling s = {.max_tokens = MAX_NEW, .top_p = 1, .logprobs = -1};
            size_t b = eng_request_bytes(e, plen[i], &s);
            if (b > most) most = b;
        }
        eng_destroy(e);
        o.kv_memory = (size_t)kv_fit * most;
        printf("kv memory: %d x %zu bytes (the largest request's charge)\n", kv_fit, most);
    }
    if ((st = eng_create(m, &o, &e))) return fail(st);
    printf("mode: %s%s (backend %s)\n", eng_batched(e) ? "batched" : "per-sequence: ",
           eng_mode_note(e), og_model_backend(m));
    int bad = 0, with_tokens = 0, n_cancelled = 0, most_running = 0;
    uint64_t most_kv = 0;
    uint64_t delivered = 0;
    if (want_single && eng_batched(e)) {
        printf("FAIL: the engine batched over the paged cache (per-sequence mode expected)\n");
        bad++;
    }
    if (want_batched && !eng_batched(e)) {
        printf("FAIL: the engine chose per-sequence mode (batched expected)\n");
        bad++;
    }
    for (int round = 0; round < rounds; round++) {
        eng_request *req[MAX_PROMPTS];
        for (int i = 0; i < n_prompts; i++) {
            eng_sampling s = sampling_of(i, ignore_file ? wlen[i] : MAX_NEW);
            s.ignore_eos = ignore_file != NULL;
            s.guide = grammar;
            s.guide_tokens = guide_tokens;
            s.think = think;
            s.think_open = think ? think_open[i] : -1;
            s.think_close = think ? think_close[i] : -1;
            char msg[256];
            if (eng_submit(e, prompts[i], plen[i], &s, &req[i], msg, sizeof msg) != ENG_SUBMIT_OK) {
                fprintf(stderr, "engine-check: submit %d: %s\n", i, msg);
                return 2;
            }
        }
        /* the odd ones: cancelled once they have two tokens (unless they ended first) */
        for (int i = 1; cancel && i < n_prompts; i += 2) {
            while (eng_request_wait(req[i], 1, 1.0) < 2 && eng_request_finish(req[i], NULL) == ENG_RUNNING) {}
            eng_request_cancel(req[i]);
        }
        for (int i = 0; i < n_prompts; i++) {
            while (eng_request_finish(req[i], NULL) == ENG_RUNNING) {
                eng_request_wait(req[i], 1 << 30, 0.002);
                eng_stats now; /* the gauges while requests run */
                eng_get_stats(e, &now);
                if (now.running > most_running) most_running = now.running;
                if (now.kv_bytes_used > most_kv) most_kv = now.kv_bytes_used;
                if (now.kv_bytes_used > now.kv_bytes_total) {
                    printf("FAIL: %llu KV bytes in use, more than the %llu of the budget\n",
                           (unsigned long long)now.kv_bytes_used,
                           (unsigned long long)now.kv_bytes_total);
                    bad++;
                }
            }
            const char *err;
            eng_finish f = eng_request_finish(req[i], &err);
            int n = eng_request_wait(req[i], 0, 0);
            eng_token got[MAX_NEW];
            eng_request_tokens(req[i], 0, n, got);
            bool cut = f == ENG_FINISH_CANCELLED;
            /* a cancelled request has a prefix of its tokens; only one asked to stop is */
            bool same = (cut ? cancel && i % 2 == 1 && n >= 2 && n <= wlen[i] : n == wlen[i]) &&
                        f != ENG_FINISH_ERROR && (!ignore_file || f == ENG_FINISH_LENGTH) &&
                        /* a guided answer shorter than max_tokens ended complete */
                        (!grammar || cut || n == MAX_NEW || f == ENG_FINISH_STOP);
            for (int k = 0; same && k < n; k++) same = got[k].id == want[i][k];
            n_cancelled += cut;
            with_tokens += n > 0;
            delivered += (uint64_t)n;
            printf("%s round %d prompt %d (%d tokens, %d cached): %d new tokens%s%s%s\n",
                   same ? "ok  " : "FAIL", round, i, plen[i], eng_request_cached_tokens(req[i]), n,
                   cut ? " (cancelled)" : "", f == ENG_FINISH_ERROR ? ": " : "",
                   f == ENG_FINISH_ERROR ? err : "");
            if (!same) {
                bad++;
                for (int k = 0; k < n || k < wlen[i]; k++)
                    if (k >= n || k >= wlen[i] || got[k].id != want[i][k]) {
                        fprintf(stderr, "    first difference at new token %d: %d vs %d alone\n", k,
                                k < n ? got[k].id : -1, k < wlen[i] ? want[i][k] : -1);
                        break;
                    }
            }
            eng_request_release(req[i]);
        }
    }
    eng_stats es;
    eng_get_stats(e, &es);
    if (es.state_slots_total > 0)
        printf("state slots %lld, snapshots taken %llu (held %lld)\n",
               (long long)es.state_slots_total, (unsigned long long)es.state_snapshots_taken,
               (long long)es.state_snapshots);
    printf("steps %llu, preempted %llu, cached prompt tokens %llu (%llu of %llu lookups hit), "
           "kv blocks %lld (in use %lld, cached %lld)\n", (unsigned long long)es.steps,
           (unsigned long long)es.preempted, (unsigned long long)es.cached_prompt_tokens,
           (unsigned long long)es.prefix_hits, (unsigned long long)es.prefix_lookups,
           (long long)es.kv_blocks_total, (long long)es.kv_blocks_used,
           (long long)es.kv_blocks_cached);
    bad += check_stats(&es, (uint64_t)(n_prompts * rounds), (uint64_t)n_cancelled, delivered,
                       (uint64_t)with_tokens, eng_batched(e));
    if (o.spec_ngram > 0 || o.spec_drafter || draft || o.spec_mtp)
        printf("speculative: %llu verifications, %llu tokens drafted, %llu kept\n",
               (unsigned long long)es.spec_verifications, (unsigned long long)es.spec_drafted,
               (unsigned long long)es.spec_accepted);
    double wasted = (double)(es.spec_drafted - es.spec_accepted);
    if (max_wasted >= 0 && wasted > max_wasted / 100 * (double)delivered) {
        printf("FAIL: %.0f drafted tokens were run and not kept, %.1f %% of the %llu delivered "
               "(at most %g %%)\n", wasted, 100 * wasted / (double)delivered,
               (unsigned long long)delivered, max_wasted);
        bad++;
    } else if (max_wasted >= 0) {
        printf("ok   %.0f drafted tokens run and not kept: %.1f %% of the %llu delivered\n", wasted,
               delivered ? 100 * wasted / (double)delivered : 0.0, (unsigned long long)delivered);
    }
    int ended_early = 0;
    for (int i = 0; i < n_prompts; i++) ended_early += wlen[i] < MAX_NEW;
    if (eos_at >= 0) printf("%d of %d answers end on EOS\n", ended_early, n_prompts);
    if (eos_at >= 0 && ended_early == 0) {
        printf("FAIL: no answer ends on the EOS (--eos-at)\n");
        bad++;
    }
    if (want_verify && !(es.spec_verifications > 0 && es.spec_accepted > 0)) {
        printf("FAIL: no drafted token was verified and kept\n");
        bad++;
    }
    if (cancel) bad += cancel_alone(e, prompts[0], plen[0]);
    if (ignore_file) {
        bad += stops_on_eos(e, n_prompts, prompts, plen, stop, slen, wlen);
        if (n_eos == 0) {
            printf("FAIL: the oracle's answers hold no EOS id: ignore_eos is not tested\n");
            bad++;
        }
    }
    bool has_state = m->has_state;
    eng_destroy(e);
    guide_grammar_unref(grammar);
    og_model_close(m);
    if (draft) og_model_close(draft);
    if (want_preempt && es.preempted == 0) {
        printf("FAIL: no sequence was preempted (the case needs a smaller pool)\n");
        bad++;
    }
    printf("while running: at most %d sequences and %llu KV bytes of %llu seen\n", most_running,
           (unsigned long long)most_kv, (unsigned long long)es.kv_bytes_total);
    if (kv_fit > 0 && !(most_running >= 1 && most_running < n_prompts && most_kv > 0)) {
        printf("FAIL: with room for %d of the largest requests, %d of %d ran at once\n", kv_fit,
               most_running, n_prompts);
        bad++;
    }
    if (want_hits && es.cached_prompt_tokens == 0) {
        printf("FAIL: no prompt token came from the prefix cache\n");
        bad++;
    }
    if (want_batched && has_state && !(es.state_slots_total > 0 &&
                                       (!want_hits || es.state_snapshots_taken > 0))) {
        printf("FAIL: a hybrid batched with %lld state slots, %llu snapshots taken\n",
               (long long)es.state_slots_total, (unsigned long long)es.state_snapshots_taken);
        bad++;
    }
    printf("%s: %d of %d requests differ from their run alone\n", bad ? "FAIL" : "ok", bad,
           n_prompts * rounds);
    return bad ? 1 : 0;
}
