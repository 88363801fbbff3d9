#include "base/threadpool.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

/* One job at a time. The caller writes the job into one of two slots (by generation
 * parity), then publishes it through `claim`, a word holding the job's generation (high
 * 32 bits) and the next chunk to hand out (low 32 bits). Anyone, the caller included,
 * takes a chunk by compare-and-swap on `claim`, which succeeds only while the word still
 * names the generation it saw, so a worker that wakes late can never run a chunk of a
 * job it did not read. The caller returns once every chunk is done, not once every
 * worker has checked in: a worker the OS has not scheduled costs nothing.
 *
 * Waking a sleeping thread costs about as much as a small kernel (~10 us), and a decode
 * step runs hundreds of kernels back to back, so workers spin briefly on `generation`
 * before sleeping on the condition variable: they stay hot within a step and sleep
 * between steps. The spin is bounded by time, not by rounds (a pause takes from ~10 to
 * ~150 cycles depending on the core), and is short: on a machine whose cores are taken
 * by other processes a spinning worker only delays the thread it waits for. */
enum { SPIN_NS = 50000, SPIN_CHECK = 64 };

typedef struct job_slot {
    _Atomic(parallel_fn) fn;
    _Atomic(void *) arg;
    atomic_llong n, chunk, n_chunks;
} job_slot;

struct threadpool {
    int n_workers;
    pthread_t *threads;
    pthread_mutex_t mu;
    pthread_cond_t wake, done_cv;
    atomic_uint_fast64_t generation;
    atomic_bool stop;
    int sleeping; /* workers waiting on `wake` (under mu) */
    job_slot slots[2];
    atomic_uint_fast64_t claim; /* (generation << 32) | next chunk */
    atomic_llong done;          /* chunks finished in the current job */
    atomic_bool in_job;
    atomic_bool serial;         /* threadpool_set_serial */
    double inline_ns;           /* threadpool_parallel_for_cost's threshold */
    atomic_uint_fast64_t jobs;  /* jobs handed to the workers */
};

static inline void cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
}

static int64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* Spins for up to SPIN_NS while cond(p, v) holds; the clock is read every SPIN_CHECK
 * pauses. Returns whether cond still holds. */
static bool spin_while(threadpool *p, uint64_t v, bool (*cond)(threadpool *, uint64_t)) {
    int64_t until = 0;
    for (int i = 1;; i++) {
        if (!cond(p, v)) return false;
        cpu_relax();
        if (i % SPIN_CHECK == 0) {
            int64_t t = now_ns();
            if (!until) until = t + SPIN_NS;
            else if (t >= until) return cond(p, v);
        }
    }
}

static bool no_new_job(threadpool *p, uint64_t seen) {
    return atomic_load(&p->generation) == seen && !atomic_load(&p->stop);
}

static bool chunks_pending(threadpool *p, uint64_t n_chunks) {
    return (uint64_t)atomic_load(&p->done) < n_chunks;
}

/* Runs chunks of job `gen` until none are left; returns true if it finished the last. */
static bool run_chunks(threadpool *p, uint64_t gen) {
    job_slot *s = &p->slots[gen & 1];
    uint64_t tag = (gen & 0xffffffffu) << 32;
    bool last = false;
    for (;;) {
        uint64_t c = atomic_load(&p->claim);
        if ((c & ~(uint64_t)0xffffffffu) != tag) break; /* another job by now */
        int64_t idx = (int64_t)(c & 0xffffffffu);
        int64_t n_chunks = atomic_load_explicit(&s->n_chunks, memory_order_relaxed);
        if (idx >= n_chunks) break;
        if (!atomic_compare_exchange_weak(&p->claim, &c, c + 1)) continue;
        int64_t chunk = atomic_load_explicit(&s->chunk, memory_order_relaxed);
        int64_t n = atomic_load_explicit(&s->n, memory_order_relaxed);
        int64_t b = idx * chunk, e = b + chunk < n ? b + chunk : n;
        parallel_fn fn = atomic_load_explicit(&s->fn, memory_order_relaxed);
        fn(atomic_load_explicit(&s->arg, memory_order_relaxed), b, e);
        if (atomic_fetch_add(&p->done, 1) + 1 == n_chunks) last = true;
    }
    return last;
}

static void *worker(void *vp) {
    threadpool *p = vp;
    uint64_t seen = 0;
    for (;;) {
        if (spin_while(p, seen, no_new_job)) {
            pthread_mutex_lock(&p->mu);
            p->sleeping++;
            while (!atomic_load(&p->stop) && atomic_load(&p->generation) == seen)
                pthread_cond_wait(&p->wake, &p->mu);
            p->sleeping--;
            pthread_mutex_unlock(&p->mu);
        }
        if (atomic_load(&p->stop)) break;
        seen = atomic_load(&p->generation);
        if (run_chunks(p, seen)) { /* the caller may be asleep waiting for the last chunk */
            pthread_mutex_lock(&p->mu);
            pthread_cond_signal(&p->done_cv);
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
    p->inline_ns = THREADPOOL_INLINE_NS;
    const char *env = getenv("OG_INLINE_NS");
    if (env && *env) {
        char *end;
        double v = strtod(env, &end);
        if (!*end && v >= 0) p->inline_ns = v;
    }
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->wake, NULL);
    pthread_cond_init(&p->done_cv, NULL);
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
    pthread_cond_destroy(&p->done_cv);
    free(p);
}

int threadpool_size(const threadpool *p) { return p ? p->n_workers + 1 : 1; }

void threadpool_parallel_for(threadpool *p, int64_t n, int64_t grain, parallel_fn fn,
                             void *arg) {
    if (n <= 0) return;
    if (grain < 1) grain = 1;
    int threads = threadpool_size(p);
    if (!p || threads == 1 || n <= grain || atomic_load_explicit(&p->serial, memory_order_relaxed) ||
        atomic_load(&p->in_job)) {
        fn(arg, 0, n);
        return;
    }
    /* A few chunks per thread balance uneven work without much claiming overhead. */
    int64_t chunks = (int64_t)threads * 4;
    if (chunks > n / grain) chunks = n / grain;
    if (chunks < 1) chunks = 1;
    int64_t chunk = (n + chunks - 1) / chunks;
    atomic_store(&p->in_job, true);
    uint64_t gen = atomic_load(&p->generation) + 1;
    job_slot *s = &p->slots[gen & 1];
    atomic_store_explicit(&s->fn, fn, memory_order_relaxed);
    atomic_store_explicit(&s->arg, arg, memory_order_relaxed);
    atomic_store_explicit(&s->n, n, memory_order_relaxed);
    atomic_store_explicit(&s->chunk, chunk, memory_order_relaxed);
    atomic_store_explicit(&s->n_chunks, (n + chunk - 1) / chunk, memory_order_relaxed);
    int64_t n_chunks = (n + chunk - 1) / chunk;
    atomic_store(&p->done, 0);
    atomic_store(&p->claim, (gen & 0xffffffffu) << 32); /* publishes the slot (seq_cst) */
    atomic_store(&p->generation, gen);
    pthread_mutex_lock(&p->mu);
    if (p->sleeping) pthread_cond_broadcast(&p->wake);
    pthread_mutex_unlock(&p->mu);
    atomic_fetch_add_explicit(&p->jobs, 1, memory_order_relaxed);
    run_chunks(p, gen);
    if (spin_while(p, (uint64_t)n_chunks, chunks_pending)) {
        pthread_mutex_lock(&p->mu);
        while (atomic_load(&p->done) < n_chunks) pthread_cond_wait(&p->done_cv, &p->mu);
        pthread_mutex_unlock(&p->mu);
    }
    atomic_store(&p->in_job, false);
}

void threadpool_parallel_for_cost(threadpool *p, int64_t n, double item_ns, parallel_fn fn,
                                  void *arg) {
    if (n <= 0) return;
    double limit = p ? p->inline_ns : 0;
    if (!p || p->n_workers == 0 || item_ns * (double)n < limit) {
        fn(arg, 0, n);
        return;
    }
    double per = item_ns > 0 ? 0.5 * limit / item_ns : 1;
    int64_t grain = per >= (double)n ? n : per < 1 ? 1 : (int64_t)per;
    threadpool_parallel_for(p, n, grain, fn, arg);
}

void threadpool_set_serial(threadpool *p, bool serial) {
    if (p) atomic_store_explicit(&p->serial, serial, memory_order_relaxed);
}

void threadpool_set_inline_ns(threadpool *p, double ns) {
    if (p) p->inline_ns = ns > 0 ? ns : 0;
}

double threadpool_inline_ns(const threadpool *p) { return p ? p->inline_ns : 0; }

uint64_t threadpool_jobs(const threadpool *p) {
    return p ? atomic_load_explicit(&((threadpool *)p)->jobs, memory_order_relaxed) : 0;
}
