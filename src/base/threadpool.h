/* A persistent pool of worker threads shared by every kernel of a session. Work is a
 * range [0, n) split into contiguous chunks; the calling thread takes part. */
#ifndef OG_BASE_THREADPOOL_H
#define OG_BASE_THREADPOOL_H

#include "base/status.h"

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

#endif
