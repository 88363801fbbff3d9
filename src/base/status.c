#include "base/status.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct og_status {
    og_code code;
    char message[]; /* NUL-terminated */
};

/* A status that could not be allocated: returned as a constant, never freed. */
static const struct {
    og_code code;
    char message[32];
} oom_status = {OG_ERR_OUT_OF_MEMORY, "out of memory"};

static og_status *static_oom(void) { return (og_status *)(void *)&oom_status; }

og_status *og_status_makev(og_code code, const char *file, int line, const char *fmt,
                           va_list ap) {
    va_list ap2;
    va_copy(ap2, ap);
    int n = vsnprintf(NULL, 0, fmt, ap2);
    va_end(ap2);
    if (n < 0) n = 0;
    size_t extra = 0;
    char where[96] = "";
#ifdef OG_DEBUG_ERROR_SOURCE
    snprintf(where, sizeof where, " [%s:%d]", file, line);
    extra = strlen(where);
#else
    (void)file;
    (void)line;
#endif
    og_status *s = malloc(sizeof *s + (size_t)n + extra + 1);
    if (!s) return static_oom();
    s->code = code;
    vsnprintf(s->message, (size_t)n + 1, fmt, ap);
    memcpy(s->message + n, where, extra + 1);
    return s;
}

og_status *og_status_make(og_code code, const char *file, int line, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    og_status *s = og_status_makev(code, file, line, fmt, ap);
    va_end(ap);
    return s;
}

og_status *og_status_wrap(og_status *inner, const char *fmt, ...) {
    if (!inner) return NULL;
    char prefix[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(prefix, sizeof prefix, fmt, ap);
    va_end(ap);
    og_status *s = og_status_make(og_status_code(inner), NULL, 0, "%s: %s", prefix,
                                  og_status_message(inner));
    og_status_free(inner);
    return s;
}

og_status *og_oom_for(size_t bytes, const char *fmt, ...) {
    static const char *const units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
    double v = (double)bytes;
    int u = 0;
    while (v >= 1024 && u < 6) {
        v /= 1024;
        u++;
    }
    char what[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    if (u == 0)
        return og_status_make(OG_ERR_OUT_OF_MEMORY, NULL, 0, "out of memory: %zu bytes for %s",
                              bytes, what);
    return og_status_make(OG_ERR_OUT_OF_MEMORY, NULL, 0, "out of memory: %.2f %s (%zu bytes) "
                          "for %s", v, units[u], bytes, what);
}

og_status *og_oom_context(og_status *st, const char *fmt, ...) {
    if (!st || og_status_code(st) != OG_ERR_OUT_OF_MEMORY ||
        strncmp(og_status_message(st), "out of memory", 13) != 0)
        return st;
    char prefix[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(prefix, sizeof prefix, fmt, ap);
    va_end(ap);
    return og_status_wrap(st, "%s", prefix);
}

og_code og_status_code(const og_status *status) { return status ? status->code : OG_OK; }

const char *og_status_message(const og_status *status) {
    return status ? status->message : "";
}

void og_status_free(og_status *status) {
    if (status && status != static_oom()) free(status);
}

const char *og_code_name(og_code code) {
    switch (code) {
    case OG_OK: return "ok";
    case OG_ERR_INVALID_ARGUMENT: return "invalid argument";
    case OG_ERR_INVALID_MODEL: return "invalid model";
    case OG_ERR_NOT_FOUND: return "not found";
    case OG_ERR_IO: return "i/o error";
    case OG_ERR_UNSUPPORTED: return "unsupported";
    case OG_ERR_OUT_OF_MEMORY: return "out of memory";
    case OG_ERR_RUNTIME: return "runtime error";
    case OG_ERR_INCOMPLETE_MODEL: return "incomplete model";
    }
    return "unknown error";
}
