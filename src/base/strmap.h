/* An open-addressing map from NUL-terminated strings to ints (value indices by name).
 * Keys are borrowed: they must outlive the map. */
#ifndef OG_BASE_STRMAP_H
#define OG_BASE_STRMAP_H

#include <stdbool.h>
#include <stddef.h>

typedef struct strmap {
    const char **keys;
    int *vals;
    size_t cap, len;
} strmap;

void strmap_init(strmap *m);
void strmap_free(strmap *m);
/* Inserts or replaces. Returns false when out of memory. */
bool strmap_put(strmap *m, const char *key, int val);
/* Returns the value, or `missing` when the key is absent. */
int strmap_get(const strmap *m, const char *key, int missing);

#endif
