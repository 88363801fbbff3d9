/* A bump allocator for data that lives exactly as long as its owner (a loaded graph's
 * names, attributes and node arrays): one free releases everything. */
#ifndef OG_BASE_ARENA_H
#define OG_BASE_ARENA_H

#include <stddef.h>

typedef struct arena_block arena_block;

typedef struct arena {
    arena_block *head;
    size_t total; /* bytes handed out, for statistics */
} arena;

void arena_init(arena *a);
void arena_free(arena *a);
/* Zeroed memory aligned to 16 bytes, or NULL when out of memory. */
void *arena_alloc(arena *a, size_t size);
/* A NUL-terminated copy of s[0..len), or NULL when out of memory. */
char *arena_strndup(arena *a, const char *s, size_t len);
char *arena_strdup(arena *a, const char *s);

#endif
