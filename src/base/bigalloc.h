/* Large, long-lived buffers (prepacked weights): straight from mmap, zeroed, 64-byte
 * aligned, and on transparent huge pages where the kernel gives them (madvise), which
 * cuts the page faults of filling them ~500-fold and the TLB misses of streaming them. */
#ifndef OG_BASE_BIGALLOC_H
#define OG_BASE_BIGALLOC_H

#include <stddef.h>

/* NULL when out of memory. Small sizes come from malloc (still zeroed and aligned). */
void *big_alloc(size_t size);
/* `size` as given to big_alloc. NULL is fine. */
void big_free(void *p, size_t size);

/* A large buffer of which only a part may ever be written (a KV cache sized for
 * max_length): zero pages from mmap, 64-byte aligned, on small pages, so that memory is
 * charged only for the pages written (a huge page would charge 2 MiB for each head's
 * first row). NULL when out of memory; free with big_free_lazy(p, size). */
void *big_alloc_lazy(size_t size);
void big_free_lazy(void *p, size_t size);

#endif
