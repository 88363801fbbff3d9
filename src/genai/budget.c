#include "genai/budget.h"
#include "genai/speculative.h"

#include "genai/model_internal.h"

#include "runtime/og_session.h"
#include "genai/config.h"
#include "genai/generator.h"
#include "genai/search.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

const char *gen_human_bytes(double bytes, char *buf, size_t size) {
    static const char *const units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
    int u = 0;
    while (bytes >= 1024 && u < 6) {
        bytes /= 1024;
        u++;
    }
    snprintf(buf, size, u ? "%.2f %s" : "%.0f %s", bytes, units[u]);
    return buf;
}

static const char *human_seconds(double s, char *buf, size_t size) {
    if (s < 120) snprintf(buf, size, "%.0f s", s);
    else if (s < 7200) snprintf(buf, size, "%.0f min", s / 60);
    else if (s < 2 * 86400) snprintf(buf, size, "%.0f h", s / 3600);
    else snprintf(buf, size, "%.0f days", s / 86400);
    return buf;
}

/* Weights of the model's sessions: every initializer element is one multiply-add per
 * position. A uint8 initializer is taken as two 4-bit weights (MatMulNBits' blocks). */
static double weight_count(const og_model *m) {
    double w = 0;
    for (int s = 0; s < m->n_stages; s++) {
        const graph *g = runtime_session_graph(m->stages[s].s);
        for (int i = 0; i < g->n_initializers; i++) {
            const tensor *t = g->values[g->initializers[i]].initializer;
            if (!t) continue;
            double n = (double)tensor_count(t);
            w += t->dtype == OG_UINT8 ? 2 * n : n;
        }
    }
    return w;
}

/* Mirrors generator_cache.c: a KV entry holds rows x heads x max_length x head_size
 * (twice for gpt2's pair) in one buffer when past and present share it, else two; a
 * fixed-size entry (a state, a window-sized KV cache) holds rows x row_bytes, twice. */
static void cache_estimate(const og_model *m, double rows, double L, bool share_kv,
                           bool beams, gen_budget *b, double *copied_per_pos) {
    double q_heads = m->cfg->model.decoder.num_attention_heads;
    for (int i = 0; i < m->n_cache; i++) {
        const gen_cache *c = &m->cache[i];
        if (c->fixed) {
            b->kv_bytes += 2 * rows * (double)c->row_bytes;
            if (beams) b->copy_bytes += L * rows * (double)c->row_bytes;
            if (c->window && strcmp(c->what, "value") != 0) /* scores over the window */
                b->attn_flops += rows * 4.0 * (q_heads > 0 ? q_heads : c->heads) * c->head_size *
                                 L * (double)c->window;
            continue;
        }
        bool pair = !strcmp(c->what, "kv");
        double per_pos = (pair ? 2 : 1) * (double)c->heads * c->head_size *
                         (double)dtype_size(c->dtype); /* one row, one position */
        bool one_buffer = share_kv && c->shareable;
        b->kv_bytes += (one_buffer ? 1 : 2) * rows * L * per_pos;
        double all_steps = rows * per_pos * L * (L + 1) / 2;
        if (beams) b->copy_bytes += all_steps; /* each step gathers the surviving beams' rows */
        if (!one_buffer) {
            b->model_copy_bytes += all_steps; /* attention: past -> present */
            *copied_per_pos += 2 * rows * per_pos; /* read from one buffer, written to another */
        }
        if (strcmp(c->what, "value") != 0) /* scores and weighted values, once per layer */
            b->attn_flops += rows * 4.0 * (q_heads > 0 ? q_heads : c->heads) * c->head_size *
                             L * (L + 1) / 2;
    }
}

/* Seconds to copy `bytes` that grow with the step as KV caches do (step s copies
 * bytes/(L(L+1)/2) x s), where step s's copies touch footprint_per_pos x s bytes: at the
 * cache's rate while that fits in GEN_COPY_CACHE_BYTES, at memory's beyond. */
static double copy_seconds(double bytes, double footprint_per_pos, double L) {
    double fit = footprint_per_pos > 0 ? GEN_COPY_CACHE_BYTES / footprint_per_pos : L;
    if (fit > L) fit = L;
    double fast = bytes * (fit * (fit + 1)) / (L * (L + 1));
    return fast / GEN_RATE_COPY_BYTES + (bytes - fast) / GEN_RATE_COPY_MEM_BYTES;
}

void gen_budget_estimate(const og_model *m, const og_generator_params *p, bool share_kv,
                         gen_budget *b) {
    memset(b, 0, sizeof *b);
    double B = p->batch_size, K = p->num_beams, rows = B * K, L = p->max_length;
    double V = m->vocab_size;
    b->rows = rows;
    double footprint = 0; /* bytes a step's cache copies touch, per position */
    cache_estimate(m, rows, L, share_kv, K > 1, b, &footprint);
    /* generator.c: tokens (4), int64 and int32 ids, masks and positions (x3 for mRoPE)
     * per position; logits, step logits and sampling scratch per row; beam: candidates
     * (8 bytes each), hypotheses and final sequences. */
    b->state_bytes = rows * L * (4 + 12 + 12 + 36 + 1) + rows * V * 8 + (2 * V + 16) * 4;
    if (K > 1) {
        b->state_bytes += K * V * 8 + B * (K + 1) * L * 4 + B * p->num_return_sequences * L * 4 +
                          rows * L * 4;
        b->copy_bytes += L * rows * L * 4; /* sequences reordered per step */
    }
    b->model_flops = rows * 2.0 * weight_count(m) * L + b->attn_flops;

    /* per step and row: float copy, penalties, argmax or log-softmax (a few passes) */
    double per_step = rows * V * 5;
    bool sampling = K == 1 && p->do_sample && p->top_k != 1 && p->temperature != 0;
    if (sampling) per_step += rows * V * (2 * log2(V > 2 ? V : 2) + 1); /* sort of the row */
    if (K > 1) per_step += B * gen_beam_step_ops(p->num_beams, m->vocab_size);
    b->search_ops = per_step * L;

    /* With beams, past and present cannot share one buffer, so the attention's copy of
     * the past into present exists only because of the beams: it is search overhead,
     * like the reordering. Without beams (gpt2's Attention) it is the model's own. */
    if (K > 1) {
        b->copy_bytes += b->model_copy_bytes;
        b->model_copy_bytes = 0;
    }
    b->model_s = (b->model_flops - b->attn_flops) / GEN_RATE_MODEL_FLOPS +
                 b->attn_flops / GEN_RATE_ATTN_FLOPS + copy_seconds(b->model_copy_bytes, footprint, L);
    b->search_s = b->search_ops / GEN_RATE_SEARCH_OPS + copy_seconds(b->copy_bytes, footprint, L);
}

/* The config's past_present_share_buffer is how onnxruntime-genai binds the caches. Our
 * own GroupQueryAttention appends in place whatever it says, with the same bits (its
 * tiles read keys by position, not by the buffer's length), so on the native backend a
 * package that says false shares too: otherwise every decode step copies the whole past
 * into a new present, O(context) bytes a step. onnxruntime is bound as the config says. */
bool gen_shares_kv(const og_model *m, const og_generator_params *p) {
    if (p->num_beams != 1 || m->kv != GEN_KV_SEPARATE) return false;
    return m->cfg->search.past_present_share_buffer || !strcmp(og_model_backend(m), "native");
}

double gen_generator_bytes(const og_model *m, const og_generator_params *p, int snapshots) {
    gen_budget b;
    gen_budget_estimate(m, p, gen_shares_kv(m, p), &b);
    double snap = 0, rows = (double)p->batch_size * p->num_beams;
    for (int i = 0; m->snapshots && i < m->n_cache; i++)
        if (m->cache[i].fixed) snap += rows * (double)m->cache[i].row_bytes;
    if (snapshots > GEN_MAX_SNAPSHOTS) snapshots = GEN_MAX_SNAPSHOTS;
    /* the generator's own bookkeeping: its struct, tensor headers and name tables per
     * cache entry (2.4 to 5.9 KB measured on tiny lfm2, qwen3_5_text and qwen2 packages:
     * tests/serve/engine_check.c checks this bound with mallinfo2) */
    double books = 4096.0 + 1024.0 * m->n_cache;
    return b.kv_bytes + b.state_bytes + snap * (snapshots > 0 ? snapshots : 0) + books;
}

og_status *gen_check_search_options(const og_generator_params *p) {
    /* onnxruntime-genai refuses more sequences than beams too ("must be in [1, 1]"):
     * without beams a prompt yields exactly one sequence. */
    if (p->num_return_sequences < 1 || p->num_return_sequences > p->num_beams)
        return og_errorf(OG_ERR_INVALID_ARGUMENT, "generator: num_return_sequences %d must be in "
                         "[1, num_beams %d]%s", p->num_return_sequences, p->num_beams,
                         p->num_beams == 1 ? ": more than one sequence per prompt needs beam "
                                             "search (num_beams > 1)" : "");
    if (p->num_beams > 1 && p->do_sample)
        return og_errorf(OG_ERR_INVALID_ARGUMENT, "generator: sampling cannot be combined with "
                         "beam search (num_beams %d)", p->num_beams);
    /* Numbers are checked whether or not their option is in use (top_p without
     * do_sample included): a NaN or out-of-range value is a mistake either way, and would
     * otherwise surface only once someone turns sampling on. */
    if (!isfinite(p->temperature) || p->temperature < 0)
        return og_errorf(OG_ERR_INVALID_ARGUMENT, "generator: temperature is %g, expected a "
                         "finite number >= 0 (0 means greedy)", p->temperature);
    if (!(p->top_p >= 0 && p->top_p <= 1))
        return og_errorf(OG_ERR_INVALID_ARGUMENT, "generator: top_p is %g, expected a number in "
                         "[0, 1] (0 or 1: no top-p filtering)", p->top_p);
    if (p->top_k < 0)
        return og_errorf(OG_ERR_INVALID_ARGUMENT, "generator: top_k is %d, expected an integer "
                         ">= 0 (0: no top-k filtering)", p->top_k);
    if (!isfinite(p->repetition_penalty) || p->repetition_penalty <= 0)
        return og_errorf(OG_ERR_INVALID_ARGUMENT, "generator: repetition_penalty is %g, expected "
                         "a finite number > 0 (1: none)", p->repetition_penalty);
    if (!isfinite(p->length_penalty))
        return og_errorf(OG_ERR_INVALID_ARGUMENT, "generator: length_penalty is %g, expected a "
                         "finite number", p->length_penalty);
    if (p->min_length < 0 || p->no_repeat_ngram_size < 0)
        return og_errorf(OG_ERR_INVALID_ARGUMENT, "generator: min_length %d and "
                         "no_repeat_ngram_size %d must be >= 0", p->min_length,
                         p->no_repeat_ngram_size);
    if (p->speculative_ngram_size != 0 &&
        (p->speculative_ngram_size < 2 || p->speculative_ngram_size > GEN_SPEC_MAX_DRAFT))
        return og_errorf(OG_ERR_INVALID_ARGUMENT, "generator: speculative ngram_size is %d, "
                         "expected 0 (off) or 2..%d", p->speculative_ngram_size,
                         GEN_SPEC_MAX_DRAFT);
    if (p->speculative_max_draft_tokens < 1 || p->speculative_max_draft_tokens > GEN_SPEC_MAX_DRAFT)
        return og_errorf(OG_ERR_INVALID_ARGUMENT, "generator: speculative max_draft_tokens is %d, "
                         "expected 1..%d", p->speculative_max_draft_tokens, GEN_SPEC_MAX_DRAFT);
    if (p->speculative_min_adaptive_k < 0 || p->speculative_min_adaptive_k > GEN_SPEC_MAX_DRAFT)
        return og_errorf(OG_ERR_INVALID_ARGUMENT, "generator: speculative min_adaptive_k is %d, "
                         "expected 0..%d", p->speculative_min_adaptive_k, GEN_SPEC_MAX_DRAFT);
    if (p->speculative_ngram_chained_lookup && !p->speculative_ngram_size)
        return og_errorf(OG_ERR_INVALID_ARGUMENT, "generator: speculative ngram_chained_lookup "
                         "needs ngram_size (2..%d)", GEN_SPEC_MAX_DRAFT);
    /* onnxruntime-genai accepts it and runs to max_length with EOS never allowed, a
     * length limit that contradicts itself; config.c refuses the same in search. */
    if (p->max_length > 0 && p->min_length > p->max_length)
        return og_errorf(OG_ERR_INVALID_ARGUMENT, "generator: min_length %d is greater than "
                         "max_length %d; EOS could never end the sequence, so expected "
                         "min_length <= max_length", p->min_length, p->max_length);
    return NULL;
}

/* A number (in bytes) from the first line of a file, or -1 ("max" or unreadable). */
static double read_number_file(const char *path) {
    FILE *f = fopen(path, "r");
    if (!f) return -1;
    char line[64] = "";
    bool ok = fgets(line, sizeof line, f) != NULL;
    fclose(f);
    char *end;
    double v = ok ? strtod(line, &end) : -1;
    return ok && end != line ? v : -1;
}

double gen_available_memory(void) {
    double avail = -1;
    FILE *f = fopen("/proc/meminfo", "r");
    if (f) {
        char line[256];
        while (fgets(line, sizeof line, f)) {
            unsigned long long kb;
            if (sscanf(line, "MemAvailable: %llu kB", &kb) == 1) {
                avail = (double)kb * 1024;
                break;
            }
        }
        fclose(f);
    }
    if (avail < 0) {
        long pages = sysconf(_SC_AVPHYS_PAGES), page = sysconf(_SC_PAGESIZE);
        if (pages > 0 && page > 0) avail = (double)pages * (double)page;
    }
    /* a container's own limit (cgroup v2) */
    double cg_max = read_number_file("/sys/fs/cgroup/memory.max");
    double cg_cur = read_number_file("/sys/fs/cgroup/memory.current");
    if (cg_max >= 0 && cg_cur >= 0 && (avail < 0 || cg_max - cg_cur < avail))
        avail = cg_max > cg_cur ? cg_max - cg_cur : 0;
    /* an address-space limit (ulimit -v) counts against what is mapped already */
    struct rlimit rl;
    if (getrlimit(RLIMIT_AS, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY) {
        double mapped = 0;
        FILE *sm = fopen("/proc/self/statm", "r");
        unsigned long long vm_pages = 0;
        if (sm) {
            if (fscanf(sm, "%llu", &vm_pages) == 1)
                mapped = (double)vm_pages * (double)sysconf(_SC_PAGESIZE);
            fclose(sm);
        }
        double left = (double)rl.rlim_cur > mapped ? (double)rl.rlim_cur - mapped : 0;
        if (avail < 0 || left < avail) avail = left;
    }
    return avail < 0 ? (double)SIZE_MAX : avail;
}

og_status *gen_budget_check(const og_model *m, const og_generator_params *p, bool share_kv) {
    double rows = (double)p->batch_size * p->num_beams;
    if (rows > GEN_MAX_ROWS)
        return og_errorf(OG_ERR_INVALID_ARGUMENT, "generator: batch_size %d x num_beams %d is "
                         "%.0f rows; at most %d are supported", p->batch_size, p->num_beams,
                         rows, GEN_MAX_ROWS);
    gen_budget b;
    gen_budget_estimate(m, p, share_kv, &b);
    double need = b.kv_bytes + b.state_bytes, avail = gen_available_memory();
    char a[32], c[32], d[32], e[32];
    if (need > avail)
        return og_errorf(OG_ERR_INVALID_ARGUMENT,
                         "generator: batch_size %d x num_beams %d x max_length %d needs an "
                         "estimated %s (KV cache %s, sequences and logits %s), more than the "
                         "%s of memory available; lower max_length, num_beams or the batch",
                         p->batch_size, p->num_beams, p->max_length,
                         gen_human_bytes(need, a, sizeof a),
                         gen_human_bytes(b.kv_bytes, c, sizeof c),
                         gen_human_bytes(b.state_bytes, d, sizeof d),
                         gen_human_bytes(avail, e, sizeof e));
    if (b.search_s > GEN_SEARCH_ALLOWANCE_S && b.search_s > b.model_s)
        return og_errorf(OG_ERR_INVALID_ARGUMENT,
                         "generator: num_beams %d x max_length %d x vocab %d (batch_size %d): "
                         "the search would take an estimated %.2g operations and %s of cache "
                         "copying, about %s, more than the model's own work (about %s) and "
                         "more than the %.0f s a search may add; lower num_beams or max_length",
                         p->num_beams, p->max_length, m->vocab_size, p->batch_size,
                         b.search_ops, gen_human_bytes(b.copy_bytes, a, sizeof a),
                         human_seconds(b.search_s, c, sizeof c),
                         human_seconds(b.model_s, d, sizeof d), GEN_SEARCH_ALLOWANCE_S);
    return NULL;
}
