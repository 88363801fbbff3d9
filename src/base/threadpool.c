#include "base/threadpool.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <unistd.h>

/* One job at a time: the caller publishes (fn, arg, n, chunk) and bumps `generation`;
 * workers claim chunk indices from an atomic counter until none are left. */
struct threadpool {
    int n_workers;
    pthread_t *threads;
    pthread_mutex_t mu;
    pthread_cond_t wake, done;
    uint64_t generation;
    bool stop;
    /* current job */
    parallel_fn fn;
    void *arg;
    int64_t n, chunk, n_chunks;
    atomic_llong next_chunk;
    int busy; /* workers still inside the current job */
    atomic_bool in_job;
};

static void run_chunks(threadpool *p) {
    for (;;) {
        int64_t c = atomic_fetch_add(&p->next_chunk, 1);
        if (c >= p->n_chunks) break;
        int64_t b = c * p->chunk, e = b + p->chunk;
        if (e > p->n) e = p->n;
        p->fn(p->arg, b, e);
    }
}

static void *worker(void *vp) {
    threadpool *p = vp;
    uint64_t seen = 0;
    pthread_mutex_lock(&p->mu);
    for (;;) {
        while (!p->stop && p->generation == seen) pthread_cond_wait(&p->wake, &p->mu);
        if (p->stop) break;
        seen = p->generation;
        pthread_mutex_unlock(&p->mu);
        run_chunks(p);
        pthread_mutex_lock(&p->mu);
        if (--p->busy == 0) pthread_cond_signal(&p->done);
    }
    pthread_mutex_unlock(&p->mu);
    return NULL;
}

og_status *threadpool_create(int n_threads, threadpool **out) {
    if (n_threads <= 0) {
        long n = sysconf(_SC_NPROCESSORS_ONLN);
        n_threads = n > 0 ? (int)n : 1;
    }
    threadpool *p = calloc(1, sizeof *p);
    if (!p) return og_oom();
    p->n_workers = n_threads - 1;
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->wake, NULL);
    pthread_cond_init(&p->done, NULL);
    if (p->n_workers > 0) {
        p->threads = calloc((size_t)p->n_workers, sizeof *p->threads);
        if (!p->threads) {
            threadpool_free(p);
            return og_oom();
        }
        for (int i = 0; i < p->n_workers; i++) {
            if (pthread_create(&p->threads[i], NULL, worker, p) != 0) {
                p->n_workers = i;
                threadpool_free(p);
                return og_errorf(OG_ERR_RUNTIME, "cannot start worker thread %d", i);
            }
        }
    }
    *out = p;
    return NULL;
}

void threadpool_free(threadpool *p) {
    if (!p) return;
    pthread_mutex_lock(&p->mu);
    p->stop = true;
    pthread_cond_broadcast(&p->wake);
    pthread_mutex_unlock(&p->mu);
    for (int i = 0; i < p->n_workers; i++) pthread_join(p->threads[i], NULL);
    free(p->threads);
    pthread_mutex_destroy(&p->mu);
    pthread_cond_destroy(&p->wake);
    pthread_cond_destroy(&p->done);
    free(p);
}

int threadpool_size(const threadpool *p) { return p ? p->n_workers + 1 : 1; }

void threadpool_parallel_for(threadpool *p, int64_t n, int64_t grain, parallel_fn fn,
                             void *arg) {
    if (n <= 0) return;
    if (grain < 1) grain = 1;
    int threads = threadpool_size(p);
    if (!p || threads == 1 || n <= grain || atomic_load(&p->in_job)) {
        fn(arg, 0, n);
        return;
    }
    /* A few chunks per thread balance uneven work without much claiming overhead. */
    int64_t chunks = (int64_t)threads * 4;
    if (chunks > n / grain) chunks = n / grain;
    if (chunks < 1) chunks = 1;
    int64_t chunk = (n + chunks - 1) / chunks;
    atomic_store(&p->in_job, true);
    pthread_mutex_lock(&p->mu);
    p->fn = fn;
    p->arg = arg;
    p->n = n;
    p->chunk = chunk;
    p->n_chunks = (n + chunk - 1) / chunk;
    atomic_store(&p->next_chunk, 0);
    p->busy = p->n_workers;
    p->generation++;
    pthread_cond_broadcast(&p->wake);
    pthread_mutex_unlock(&p->mu);
    run_chunks(p);
    pthread_mutex_lock(&p->mu);
    while (p->busy > 0) pthread_cond_wait(&p->done, &p->mu);
    pthread_mutex_unlock(&p->mu);
    atomic_store(&p->in_job, false);
}
