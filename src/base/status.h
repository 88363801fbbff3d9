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

/* The status returned when an allocation fails. */
#define og_oom() og_errorf(OG_ERR_OUT_OF_MEMORY, "out of memory")

/* Propagate a failed status. */
#define OG_TRY(expr)                                                                     \
    do {                                                                                 \
        og_status *og_try_status_ = (expr);                                              \
        if (og_try_status_) return og_try_status_;                                       \
    } while (0)

#endif
