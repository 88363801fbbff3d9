/* The terminals a Lark grammar may take with `%import common.NAME`, as regular
 * expressions of the lexer's syntax (lexer.h). */
#ifndef OG_GUIDE_LARK_COMMON_H
#define OG_GUIDE_LARK_COMMON_H

#include <stddef.h>

typedef struct lark_common_term {
    const char *name;
    const char *regex;
} lark_common_term;

/* The terminal called `name` (len bytes), or NULL when common has none. */
const lark_common_term *lark_common_find(const char *name, size_t len);
/* All of them, for messages that list the names. */
size_t lark_common_count(void);
const lark_common_term *lark_common_at(size_t i);

#endif
