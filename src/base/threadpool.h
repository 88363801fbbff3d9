/* A persistent pool of worker threads shared by every kernel of a session. Work is a
 * range [0, n) split into contiguous chunks; the calling thread takes part. */
#ifndef OG_BASE_THREADPOOL_H
#define OG_BASE_THREADPOOL_H

#include "base/status.h"

#include <stdbool.h>
#include <stdint.h>

typedef struct threadpool threadpool;

/* fn(arg, begin, end) processes items [begin, end). */
typedef void (*parallel_fn)(void *arg, int64_t begin, int64_t end);

/* n_threads <= 0: one per online core. n_threads == 1 starts no worker. */
og_status *threadpool_create(int n_threads, threadpool **out);
void threadpool_free(threadpool *pool);
int threadpool_size(const threadpool *pool); /* threads including the caller; 1 if pool is NULL */

/* Runs fn over [0, n) and returns when all of it is done. `grain` is the smallest
 * chunk worth handing to another thread (>= 1). A NULL pool runs inline. Calls from
 * inside a running parallel_for run inline too. */
void threadpool_parallel_for(threadpool *pool, int64_t n, int64_t grain, parallel_fn fn,
                             void *arg);

/* threadpool_parallel_for with the grain taken from a cost estimate: item_ns is about
 * how long one item takes on one core, in nanoseconds. Waking a worker and waiting for
 * it costs microseconds (far more on a machine whose cores are busy with other work),
 * so work below the pool's inline threshold in total runs on the caller, and no chunk
 * handed out is smaller than half of it: small kernels never pay for threads, and two
 * threads are not slower than one. */
void threadpool_parallel_for_cost(threadpool *pool, int64_t n, double item_ns, parallel_fn fn,
                                  void *arg);

/* The cost model the kernels share for threadpool_parallel_for_cost, so that one rule
 * (work below the inline threshold stays on its caller) holds whatever the kernel: about
 * how long one core takes for work that streams `bytes` through memory or the caches and
 * does `ops` arithmetic operations in vector code (a multiply-add counts two). The rates
 * are one modest core's on data in its caches (where work near the threshold, a few
 * hundred kilobytes at most, lives): 16 bytes and 32 operations per nanosecond. They
 * overestimate a fast core's time, so that work is split a little early rather than
 * late, and they decide nothing for work well above the threshold, split anyway. */
enum { THREADPOOL_BYTES_PER_NS = 16, THREADPOOL_OPS_PER_NS = 32 };
static inline double threadpool_work_ns(double bytes, double ops) {
    return bytes / THREADPOOL_BYTES_PER_NS + ops / THREADPOOL_OPS_PER_NS;
}

/* The threshold of threadpool_parallel_for_cost, in nanoseconds: THREADPOOL_INLINE_NS,
 * or the environment variable OG_INLINE_NS when a pool is created (the tests set 0 so
 * that every parallel path runs split, whatever the size of their cases). */
enum { THREADPOOL_INLINE_NS = 20000 };
void threadpool_set_inline_ns(threadpool *pool, double ns);
double threadpool_inline_ns(const threadpool *pool); /* 0 for a NULL pool */

/* While set, every parallel_for and parallel_for_cost on this pool runs inline on its
 * caller and no worker is woken (the workers go to sleep after their spin). One flag
 * for the pool, not per thread: a pool belongs to one session, whose runs never
 * overlap. The executor sets it for a whole step that it measured to be faster on one
 * thread (executor.c). The work is split into the same items as with the workers, so
 * results are the same bits. */
void threadpool_set_serial(threadpool *pool, bool serial);

/* parallel_for calls that were handed to the workers so far (not run inline); for the
 * profiler. */
uint64_t threadpool_jobs(const threadpool *pool);

#endif
