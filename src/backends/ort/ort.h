/* The onnxruntime backend: onnxruntime's C API, loaded at run time.
 *
 * The build needs only the C API header (Debian's libonnxruntime-dev); the library,
 * libonnxruntime.so, is dlopen'ed when a session asks for this backend, so the rest of
 * the library builds, links and runs without any onnxruntime. */
#ifndef OG_BACKENDS_ORT_ORT_H
#define OG_BACKENDS_ORT_ORT_H

#include "base/status.h"

#include <onnxruntime_c_api.h>

/* A loaded libonnxruntime: the API table of the version our header declares
 * (ORT_API_VERSION) and the process's OrtEnv for it. Loaded once per library file and
 * kept for the life of the process (onnxruntime is not made to be unloaded). */
typedef struct ort_lib {
    const OrtApi *api;
    OrtEnv *env;
    const char *version; /* the library's own version string ("1.31.1") */
    char path[4096];     /* the file that was loaded */
} ort_lib;

/* The library to use: `explicit_path` when given (og_session_options.ort_library, the
 * CLI's --ort-lib), else $OG_ORT_LIB, else the libonnxruntime.so* in the onnxruntime
 * Python package's capi/ folder (asked of python3 on PATH, once per process). Each
 * failure says which source was tried and what to do. */
og_status *ort_lib_get(const char *explicit_path, const ort_lib **out);

/* An og_status from an OrtStatus (which it releases), "<label>: onnxruntime: <msg>". */
og_status *ort_error(const OrtApi *api, OrtStatus *os, const char *label);

#endif
