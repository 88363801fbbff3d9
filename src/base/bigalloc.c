/* See bigalloc.h. */
#include "base/bigalloc.h"

#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

enum { HUGE_PAGE = 2 << 20 };

/* Zeroed and 64-byte aligned, from the allocator (free with free). */
static void *zeroed_aligned(size_t size) {
    void *p = NULL;
    size_t n = (size + 63) & ~(size_t)63;
    if (posix_memalign(&p, 64, n ? n : 64) != 0) return NULL;
    memset(p, 0, n ? n : 64);
    return p;
}

void *big_alloc(size_t size) {
    if (size < HUGE_PAGE) return zeroed_aligned(size);
    /* round the start up to a huge page boundary so that the whole run can be huge */
    size_t span = size + HUGE_PAGE;
    char *raw = mmap(NULL, span, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (raw == MAP_FAILED) return NULL;
    char *p = (char *)(((size_t)raw + HUGE_PAGE - 1) & ~(size_t)(HUGE_PAGE - 1));
    if (p > raw) munmap(raw, (size_t)(p - raw));
    size_t tail = (size_t)(raw + span - (p + size));
    if (tail) munmap(p + size, tail);
#ifdef MADV_HUGEPAGE
    madvise(p, size, MADV_HUGEPAGE); /* a hint: without THP the pages are just small */
#endif
    return p;
}

void big_free(void *p, size_t size) {
    if (!p) return;
    if (size < HUGE_PAGE) free(p);
    else munmap(p, size);
}

/* Under AddressSanitizer the buffer comes from the allocator, so that reads and writes
 * past its end are caught (mmap'ed memory has no red zones). */
#if defined(__SANITIZE_ADDRESS__)
#define OG_LAZY_FROM_MALLOC 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define OG_LAZY_FROM_MALLOC 1
#endif
#endif

void *big_alloc_lazy(size_t size) {
#ifdef OG_LAZY_FROM_MALLOC
    return zeroed_aligned(size);
#else
    void *p = mmap(NULL, size ? size : 1, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) return NULL;
#ifdef MADV_NOHUGEPAGE
    madvise(p, size ? size : 1, MADV_NOHUGEPAGE); /* where THP is "always" */
#endif
    return p;
#endif
}

void big_free_lazy(void *p, size_t size) {
#ifdef OG_LAZY_FROM_MALLOC
    (void)size;
    free(p);
#else
    if (p) munmap(p, size ? size : 1);
#endif
}
