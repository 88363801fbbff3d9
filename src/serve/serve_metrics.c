/* GET /metrics: Prometheus' text format (version 0.0.4). Per model (label `model`): the
 * engine's counters, gauges and histograms (eng_get_stats) of each loaded model, and the
 * embeddings route's counters; for the server: responses by route and status, streams
 * whose client left, requests in flight. */
#include "serve/serve_internal.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

typedef struct loaded {
    const char *name;
    eng_stats st;
} loaded;

typedef enum kind { COUNTER, GAUGE } kind;

/* One family: its header, then a sample per loaded model. */
static void family(srv_buf *b, kind k, const char *name, const char *help, const loaded *l, int n,
                   double (*get)(const eng_stats *)) {
    srv_buf_printf(b, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, k == COUNTER ? "counter" : "gauge");
    for (int i = 0; i < n; i++) srv_buf_printf(b, "%s{model=\"%s\"} %.17g\n", name, l[i].name, get(&l[i].st));
}

static void histogram(srv_buf *b, const char *name, const char *help, const loaded *l, int n,
                      size_t offset) {
    srv_buf_printf(b, "# HELP %s %s\n# TYPE %s histogram\n", name, help, name);
    for (int m = 0; m < n; m++) {
        const eng_hist *h = (const eng_hist *)((const char *)&l[m].st + offset);
        uint64_t cum = 0;
        for (int i = 0; i < ENG_HIST_BUCKETS; i++) {
            cum += h->count[i];
            srv_buf_printf(b, "%s_bucket{model=\"%s\",le=\"%g\"} %llu\n", name, l[m].name, eng_hist_bounds[i],
                           (unsigned long long)cum);
        }
        cum += h->count[ENG_HIST_BUCKETS];
        srv_buf_printf(b, "%s_bucket{model=\"%s\",le=\"+Inf\"} %llu\n%s_sum{model=\"%s\"} %.17g\n"
                       "%s_count{model=\"%s\"} %llu\n", name, l[m].name, (unsigned long long)cum, name,
                       l[m].name, h->sum, name, l[m].name, (unsigned long long)cum);
    }
}

#define GET(field) static double get_##field(const eng_stats *s) { return (double)s->field; }
GET(requests) GET(finished) GET(cancelled) GET(failed) GET(preempted) GET(prompt_tokens)
GET(generated_tokens) GET(cached_prompt_tokens) GET(steps) GET(queue_depth) GET(running)
GET(last_batch) GET(kv_blocks_total) GET(kv_blocks_used) GET(kv_blocks_cached)
GET(prefix_lookups) GET(prefix_hits) GET(last_step_tokens) GET(plan_bytes) GET(plans_evicted)
GET(kv_bytes_total) GET(kv_bytes_used) GET(state_slots_total) GET(state_slots_used)
GET(state_snapshots) GET(state_snapshots_taken)
GET(spec_verifications) GET(spec_drafted) GET(spec_accepted)
#undef GET
static double get_kv_ratio(const eng_stats *s) { /* blocks in batched mode, generators per sequence */
    return s->kv_bytes_total ? (double)s->kv_bytes_used / (double)s->kv_bytes_total : 0;
}

/* /v1/embeddings per model that has answered one: requests, inputs, tokens and the
 * session runs they took (inputs of one length run as one batch). */
static void embedding_metrics(srv_buf *b, srv_server *s) {
    static const struct {
        const char *name, *help;
        size_t at;
    } fam[] = {
        {"og_embedding_requests_total", "/v1/embeddings requests answered", offsetof(srv_model, emb_requests)},
        {"og_embedding_inputs_total", "inputs embedded", offsetof(srv_model, emb_inputs)},
        {"og_embedding_tokens_total", "tokens of the inputs embedded", offsetof(srv_model, emb_tokens)},
        {"og_embedding_runs_total", "model runs for embeddings (inputs of one length run as one batch)",
         offsetof(srv_model, emb_runs)},
    };
    uint64_t (*v)[4] = calloc((size_t)s->n_models, sizeof *v);
    if (!v) {
        b->oom = true;
        return;
    }
    for (int i = 0; i < s->n_models; i++) {
        srv_model *m = &s->models[i];
        if (!m->emb_mu_live) continue;
        pthread_mutex_lock(&m->emb_mu);
        for (int f = 0; f < 4; f++) v[i][f] = *(const uint64_t *)((const char *)m + fam[f].at);
        pthread_mutex_unlock(&m->emb_mu);
    }
    for (int f = 0; f < 4; f++) {
        srv_buf_printf(b, "# HELP %s %s\n# TYPE %s counter\n", fam[f].name, fam[f].help, fam[f].name);
        for (int i = 0; i < s->n_models; i++)
            if (v[i][0])
                srv_buf_printf(b, "%s{model=\"%s\"} %llu\n", fam[f].name, s->models[i].name,
                               (unsigned long long)v[i][f]);
    }
    free(v);
}

void srv_handle_metrics(srv_server *s, srv_reply *r) {
    srv_buf b = {0};
    loaded *l = calloc((size_t)s->n_models, sizeof *l);
    srv_model **held = calloc((size_t)s->n_models, sizeof *held);
    if (!l || !held) {
        free(l);
        free(held);
        r->status = 500;
        return;
    }
    int n = 0;
    srv_buf_str(&b, "# HELP og_model_loaded 1 while the model is loaded and serving\n"
                    "# TYPE og_model_loaded gauge\n");
    for (int i = 0; i < s->n_models; i++) {
        srv_model *m = srv_try_use(s, i);
        srv_buf_printf(&b, "og_model_loaded{model=\"%s\"} %d\n", s->models[i].name, m != NULL);
        if (m && !m->eng) srv_release(s, m); /* embeddings only: no engine counters */
        if (!m || !m->eng) continue;
        held[n] = m;
        l[n].name = m->name;
        eng_get_stats(m->eng, &l[n].st);
        n++;
    }
    srv_buf_str(&b, "# HELP og_http_responses_total HTTP responses by route and status\n"
                    "# TYPE og_http_responses_total counter\n");
    pthread_mutex_lock(&s->mu);
    for (int rt = 0; rt < SRV_ROUTES; rt++)
        for (int code = 100; code < 600; code++)
            if (s->responses[rt][code])
                srv_buf_printf(&b, "og_http_responses_total{route=\"%s\",status=\"%d\"} %llu\n",
                               srv_route_names[rt], code, (unsigned long long)s->responses[rt][code]);
    uint64_t disconnects = s->stream_disconnects;
    pthread_mutex_unlock(&s->mu);
    srv_buf_printf(&b, "# HELP og_stream_disconnects_total streams whose client left before the end\n"
                       "# TYPE og_stream_disconnects_total counter\nog_stream_disconnects_total %llu\n",
                   (unsigned long long)disconnects);
    srv_buf_printf(&b, "# HELP og_requests_in_flight generation requests being answered\n"
                       "# TYPE og_requests_in_flight gauge\nog_requests_in_flight %lld\n",
                   (long long)atomic_load(&s->in_flight));
    family(&b, COUNTER, "og_requests_total", "requests the engine accepted (one per choice)", l, n, get_requests);
    family(&b, COUNTER, "og_requests_finished_total", "requests that ended (stop or length)", l, n, get_finished);
    family(&b, COUNTER, "og_requests_cancelled_total", "requests cancelled (stop string, client gone)", l, n,
           get_cancelled);
    family(&b, COUNTER, "og_requests_failed_total", "requests that ended in an error", l, n, get_failed);
    family(&b, COUNTER, "og_preemptions_total", "sequences preempted for KV blocks and recomputed", l, n,
           get_preempted);
    family(&b, COUNTER, "og_prompt_tokens_total", "prompt tokens submitted", l, n, get_prompt_tokens);
    family(&b, COUNTER, "og_generation_tokens_total", "tokens generated", l, n, get_generated_tokens);
    family(&b, COUNTER, "og_prefix_cache_hit_tokens_total", "prompt tokens served from the prefix cache", l, n,
           get_cached_prompt_tokens);
    family(&b, COUNTER, "og_prefix_cache_lookups_total", "admissions that looked their prompt up in the "
           "prefix cache", l, n, get_prefix_lookups);
    family(&b, COUNTER, "og_prefix_cache_hits_total", "admissions that found cached blocks", l, n,
           get_prefix_hits);
    family(&b, COUNTER, "og_engine_steps_total", "engine steps (model runs)", l, n, get_steps);
    family(&b, GAUGE, "og_queue_depth", "requests waiting to start", l, n, get_queue_depth);
    family(&b, GAUGE, "og_running", "sequences running", l, n, get_running);
    family(&b, GAUGE, "og_batch_size", "sequences in the last step", l, n, get_last_batch);
    family(&b, GAUGE, "og_step_tokens", "tokens run in the last step (decode and prefill chunks)", l, n,
           get_last_step_tokens);
    family(&b, GAUGE, "og_kv_blocks_total", "KV blocks in the pool", l, n, get_kv_blocks_total);
    family(&b, GAUGE, "og_kv_blocks_used", "KV blocks held by sequences", l, n, get_kv_blocks_used);
    family(&b, GAUGE, "og_kv_blocks_cached", "KV blocks kept for the prefix cache", l, n, get_kv_blocks_cached);
    family(&b, GAUGE, "og_kv_bytes_total", "the KV memory budget (--kv-memory): the paged pool, or "
           "in per-sequence mode what the running generators may hold", l, n, get_kv_bytes_total);
    family(&b, GAUGE, "og_kv_bytes_used", "KV memory in use: blocks (and a hybrid's state slots) "
           "held by sequences, or the running generators' estimated bytes in per-sequence mode", l, n,
           get_kv_bytes_used);
    family(&b, GAUGE, "og_kv_usage_ratio", "used share of the KV memory budget", l, n, get_kv_ratio);
    family(&b, GAUGE, "og_state_slots_total", "a hybrid model's state slots (sequences that can "
           "run at once; 0 without states or in per-sequence mode)", l, n, get_state_slots_total);
    family(&b, GAUGE, "og_state_slots_used", "state slots held by sequences", l, n,
           get_state_slots_used);
    family(&b, GAUGE, "og_state_snapshots", "state snapshots the prefix cache holds (a hybrid's "
           "cached prefix is usable up to one)", l, n, get_state_snapshots);
    family(&b, COUNTER, "og_state_snapshots_taken_total", "state snapshots taken at block "
           "boundaries", l, n, get_state_snapshots_taken);
    family(&b, COUNTER, "og_spec_verifications_total", "speculative verifications (--speculative; "
           "in per-sequence mode counted as each request ends)", l, n, get_spec_verifications);
    family(&b, COUNTER, "og_spec_draft_tokens_total", "tokens drafted to those verifications", l,
           n, get_spec_drafted);
    family(&b, COUNTER, "og_spec_accepted_tokens_total", "drafted tokens kept (equal to the "
           "tokens chosen)", l, n, get_spec_accepted);
    family(&b, GAUGE, "og_plan_bytes", "bytes of the execution plans the model's sessions cache "
           "(bounded by the plan memory budget)", l, n, get_plan_bytes);
    family(&b, COUNTER, "og_plan_evictions_total", "cached execution plans evicted for the plan "
           "memory budget", l, n, get_plans_evicted);
    embedding_metrics(&b, s);
    histogram(&b, "og_time_to_first_token_seconds", "submission to first token", l, n, offsetof(eng_stats, ttft));
    histogram(&b, "og_inter_token_latency_seconds", "between a request's tokens", l, n,
              offsetof(eng_stats, inter_token));
    histogram(&b, "og_step_seconds", "one engine step", l, n, offsetof(eng_stats, step_time));
    for (int i = 0; i < n; i++) srv_release(s, held[i]);
    free(l);
    free(held);
    size_t len = 0;
    r->body = srv_buf_take(&b, &len);
    r->len = len;
    r->status = r->body ? 200 : 500;
    r->type = "text/plain; version=0.0.4; charset=utf-8";
}
