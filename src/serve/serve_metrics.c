/* GET /metrics: Prometheus' text format (version 0.0.4). The engine's counters, gauges
 * and histograms (eng_get_stats) and the server's responses by route and status. */
#include "serve/serve_internal.h"

#include <stdlib.h>
#include <string.h>

static void counter(srv_buf *b, const char *name, const char *help, double v) {
    srv_buf_printf(b, "# HELP %s %s\n# TYPE %s counter\n%s %.17g\n", name, help, name, name, v);
}

static void gauge(srv_buf *b, const char *name, const char *help, double v) {
    srv_buf_printf(b, "# HELP %s %s\n# TYPE %s gauge\n%s %.17g\n", name, help, name, name, v);
}

static void histogram(srv_buf *b, const char *name, const char *help, const eng_hist *h) {
    srv_buf_printf(b, "# HELP %s %s\n# TYPE %s histogram\n", name, help, name);
    uint64_t cum = 0;
    for (int i = 0; i < ENG_HIST_BUCKETS; i++) {
        cum += h->count[i];
        srv_buf_printf(b, "%s_bucket{le=\"%g\"} %llu\n", name, eng_hist_bounds[i], (unsigned long long)cum);
    }
    cum += h->count[ENG_HIST_BUCKETS];
    srv_buf_printf(b, "%s_bucket{le=\"+Inf\"} %llu\n%s_sum %.17g\n%s_count %llu\n", name,
                   (unsigned long long)cum, name, h->sum, name, (unsigned long long)cum);
}

void srv_handle_metrics(srv_server *s, srv_reply *r) {
    srv_buf b = {0};
    gauge(&b, "og_model_loaded", "1 once the model is loaded and requests are served",
          atomic_load(&s->state) == SRV_READY);
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
    counter(&b, "og_stream_disconnects_total", "streams whose client left before the end",
            (double)disconnects);
    gauge(&b, "og_requests_in_flight", "generation requests being answered",
          (double)atomic_load(&s->in_flight));
    if (atomic_load(&s->state) == SRV_READY) {
        eng_stats st;
        eng_get_stats(s->m.eng, &st);
        counter(&b, "og_requests_total", "requests the engine accepted (one per choice)", (double)st.requests);
        counter(&b, "og_requests_finished_total", "requests that ended (stop or length)", (double)st.finished);
        counter(&b, "og_requests_cancelled_total", "requests cancelled (stop string, client gone)", (double)st.cancelled);
        counter(&b, "og_requests_failed_total", "requests that ended in an error", (double)st.failed);
        counter(&b, "og_preemptions_total", "sequences preempted for KV blocks and recomputed", (double)st.preempted);
        counter(&b, "og_prompt_tokens_total", "prompt tokens submitted", (double)st.prompt_tokens);
        counter(&b, "og_generation_tokens_total", "tokens generated", (double)st.generated_tokens);
        counter(&b, "og_prefix_cache_hit_tokens_total", "prompt tokens served from the prefix cache",
                (double)st.cached_prompt_tokens);
        counter(&b, "og_engine_steps_total", "engine steps (model runs)", (double)st.steps);
        gauge(&b, "og_queue_depth", "requests waiting to start", st.queue_depth);
        gauge(&b, "og_running", "sequences running", st.running);
        gauge(&b, "og_batch_size", "sequences in the last step", st.last_batch);
        gauge(&b, "og_kv_blocks_total", "KV blocks in the pool", (double)st.kv_blocks_total);
        gauge(&b, "og_kv_blocks_used", "KV blocks held by sequences", (double)st.kv_blocks_used);
        gauge(&b, "og_kv_blocks_cached", "KV blocks kept for the prefix cache", (double)st.kv_blocks_cached);
        gauge(&b, "og_kv_usage_ratio", "used share of the KV pool",
              st.kv_blocks_total ? (double)st.kv_blocks_used / (double)st.kv_blocks_total : 0);
        histogram(&b, "og_time_to_first_token_seconds", "submission to first token", &st.ttft);
        histogram(&b, "og_inter_token_latency_seconds", "between a request's tokens", &st.inter_token);
        histogram(&b, "og_step_seconds", "one engine step", &st.step_time);
    }
    size_t n = 0;
    r->body = srv_buf_take(&b, &n);
    r->len = n;
    r->status = r->body ? 200 : 500;
    r->type = "text/plain; version=0.0.4; charset=utf-8";
}
