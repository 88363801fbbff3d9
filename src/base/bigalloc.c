/* See bigalloc.h. */
#include "base/bigalloc.h"

#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

enum { HUGE_PAGE = 2 << 20 };

void *big_alloc(size_t size) {
    if (size < HUGE_PAGE) {
        void *p = NULL;
        size_t n = (size + 63) & ~(size_t)63;
        if (posix_memalign(&p, 64, n ? n : 64) != 0) return NULL;
        memset(p, 0, n);
        return p;
    }
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
