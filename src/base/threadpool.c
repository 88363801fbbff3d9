#include "base/threadpool.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <unistd.h>

/* One job at a time: the caller publishes (fn, arg, n, chunk), then bumps `generation`;
 * workers claim chunk indices from an atomic counter until none are left.
 *
 * Waking a sleeping thread costs about as much as a small kernel (~10 us), and a decode
 * step runs hundreds of kernels back to back, so both sides spin briefly on the atomics
 * before falling back to the condition variables: workers stay hot within a step and
 * sleep between steps. */
enum { SPIN_ROUNDS = 4000 };

struct threadpool {
    int n_workers;
    pthread_t *threads;
    pthread_mutex_t mu;
    pthread_cond_t wake, done;
    atomic_uint_fast64_t generation;
    atomic_bool stop;
    int sleeping; /* workers waiting on `wake` (under mu) */
    /* current job */
    parallel_fn fn;
    void *arg;
    int64_t n, chunk, n_chunks;
    atomic_llong next_chunk;
    atomic_int busy; /* workers still inside the current job */
    atomic_bool in_job;
};

static inline void cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
}

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
    uint_fast64_t seen = 0;
    for (;;) {
        for (int i = 0; i < SPIN_ROUNDS && atomic_load(&p->generation) == seen &&
                        !atomic_load(&p->stop); i++)
            cpu_relax();
        if (atomic_load(&p->generation) == seen && !atomic_load(&p->stop)) {
            pthread_mutex_lock(&p->mu);
            p->sleeping++;
            while (!atomic_load(&p->stop) && atomic_load(&p->generation) == seen)
                pthread_cond_wait(&p->wake, &p->mu);
            p->sleeping--;
            pthread_mutex_unlock(&p->mu);
        }
        if (atomic_load(&p->stop)) break;
        seen = atomic_load(&p->generation);
        run_chunks(p);
        if (atomic_fetch_sub(&p->busy, 1) == 1) {
            pthread_mutex_lock(&p->mu);
            pthread_cond_signal(&p->done);
            pthread_mutex_unlock(&p->mu);
        }
    }
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
    atomic_store(&p->stop, true);
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
    p->fn = fn;
    p->arg = arg;
    p->n = n;
    p->chunk = chunk;
    p->n_chunks = (n + chunk - 1) / chunk;
    atomic_store(&p->next_chunk, 0);
    atomic_store(&p->busy, p->n_workers);
    atomic_fetch_add(&p->generation, 1); /* publishes the job (seq_cst) */
    pthread_mutex_lock(&p->mu);
    if (p->sleeping) pthread_cond_broadcast(&p->wake);
    pthread_mutex_unlock(&p->mu);
    run_chunks(p);
    for (int i = 0; i < SPIN_ROUNDS && atomic_load(&p->busy) > 0; i++) cpu_relax();
    if (atomic_load(&p->busy) > 0) {
        pthread_mutex_lock(&p->mu);
        while (atomic_load(&p->busy) > 0) pthread_cond_wait(&p->done, &p->mu);
        pthread_mutex_unlock(&p->mu);
    }
    atomic_store(&p->in_job, false);
}
