/* Errors as values: every fallible internal function returns og_status * (NULL = ok).
 * Make errors through og_errorf so that messages carry context, and the debug build
 * records where the error was made. */
#ifndef OG_BASE_STATUS_H
#define OG_BASE_STATUS_H

#include "onnx_genai.h"

#include <stdarg.h>

og_status *og_status_make(og_code code, const char *file, int line, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
og_status *og_status_makev(og_code code, const char *file, int line, const char *fmt,
                           va_list ap);

/* og_errorf(OG_ERR_INVALID_MODEL, "%s: node '%s': ...", ...) */
#define og_errorf(code, ...) og_status_make((code), __FILE__, __LINE__, __VA_ARGS__)

/* Returns a new status whose message is "<prefix>: <old message>", freeing `inner`.
 * Used to add the outer context (file, node) as an error travels up. NULL passes. */
og_status *og_status_wrap(og_status *inner, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* The status returned when a small allocation fails. Its message has no context yet:
 * the layer that knows the file, node or key adds it with og_oom_context. */
#define og_oom() og_errorf(OG_ERR_OUT_OF_MEMORY, "out of memory")

/* The status for a failed allocation sized by data (a tensor, a cache, a file's
 * contents): "out of memory: 1.50 GiB (1610612736 bytes) for <what>". */
og_status *og_oom_for(size_t bytes, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Adds context ("<prefix>: out of memory ...") to an out-of-memory status that has none
 * yet (its message starts with "out of memory"); any other status passes unchanged. */
og_status *og_oom_context(og_status *st, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Propagate a failed status. */
#define OG_TRY(expr)                                                                     \
    do {                                                                                 \
        og_status *og_try_status_ = (expr);                                              \
        if (og_try_status_) return og_try_status_;                                       \
    } while (0)

#endif
