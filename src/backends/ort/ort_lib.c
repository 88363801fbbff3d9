/* Finding and loading libonnxruntime.so at run time (see ort.h). */
#include "backends/ort/ort.h"

#include <dirent.h>
#include <dlfcn.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

enum { ORT_MAX_LIBS = 8 };

/* Every library loaded by this process, by the path it was asked under. */
static pthread_mutex_t lib_lock = PTHREAD_MUTEX_INITIALIZER;
static ort_lib *libs[ORT_MAX_LIBS];
static int n_libs;

og_status *ort_error(const OrtApi *api, OrtStatus *os, const char *label) {
    og_code code = OG_ERR_RUNTIME;
    switch (api->GetErrorCode(os)) {
    case ORT_INVALID_ARGUMENT: code = OG_ERR_INVALID_ARGUMENT; break;
    case ORT_NO_SUCHFILE: code = OG_ERR_NOT_FOUND; break;
    case ORT_NO_MODEL: code = OG_ERR_NOT_FOUND; break;
    case ORT_NOT_IMPLEMENTED: code = OG_ERR_UNSUPPORTED; break;
    case ORT_INVALID_PROTOBUF:
    case ORT_INVALID_GRAPH:
    case ORT_MODEL_LOADED: code = OG_ERR_INVALID_MODEL; break;
    default: break;
    }
    const char *msg = api->GetErrorMessage(os);
    int len = (int)strlen(msg);
    while (len > 0 && (msg[len - 1] == '\n' || msg[len - 1] == ' ')) len--; /* its own newline */
    og_status *st = og_errorf(code, "%s: onnxruntime: %.*s", label, len, msg);
    api->ReleaseStatus(os);
    return st;
}

/* The onnxruntime Python package's capi/ folder, found without importing the package
 * (importlib's find_spec only locates it), into dir; an explanation into why on failure. */
static bool python_capi_dir(char *dir, size_t size, char *why, size_t why_size) {
    static const char cmd[] =
        "python3 -c 'import importlib.util as u, os; s = u.find_spec(\"onnxruntime\"); "
        "print(os.path.join(list(s.submodule_search_locations)[0], \"capi\") if s else \"\")' "
        "2>/dev/null";
    FILE *p = popen(cmd, "r");
    if (!p) {
        snprintf(why, why_size, "python3 could not be started");
        return false;
    }
    bool got = fgets(dir, (int)size, p) != NULL;
    int rc = pclose(p);
    if (got) dir[strcspn(dir, "\n")] = 0;
    if (rc != 0 || !got || !dir[0]) {
        /* the shell says 127 when it found no python3 to run */
        bool no_python = rc != -1 && WIFEXITED(rc) && WEXITSTATUS(rc) == 127;
        snprintf(why, why_size, no_python ? "no python3 on PATH could be run"
                                          : "python3 has no onnxruntime package");
        return false;
    }
    return true;
}

/* python3 is asked once per process: a model opens many sessions, and auto may ask for
 * onnxruntime for each, which would otherwise start a python3 every time. */
static pthread_once_t python_once = PTHREAD_ONCE_INIT;
static bool python_found;
static char python_dir[PATH_MAX], python_why[128];

static void ask_python(void) {
    python_found = python_capi_dir(python_dir, sizeof python_dir, python_why, sizeof python_why);
}

/* The libonnxruntime.so* file in dir (the versioned name the wheel ships). */
static bool find_lib_in(const char *dir, char *path, size_t size) {
    DIR *d = opendir(dir);
    if (!d) return false;
    struct dirent *e;
    bool found = false;
    while (!found && (e = readdir(d))) {
        if (strncmp(e->d_name, "libonnxruntime.so", 17) != 0) continue;
        snprintf(path, size, "%s/%s", dir, e->d_name);
        found = true;
    }
    closedir(d);
    return found;
}

/* The path to load and where it came from (for messages). */
static og_status *resolve_path(const char *explicit_path, char *path, size_t size,
                               const char **source) {
    const char *env = getenv("OG_ORT_LIB");
    if (explicit_path && explicit_path[0]) {
        snprintf(path, size, "%s", explicit_path);
        *source = "--ort-lib (og_session_options.ort_library)";
        return NULL;
    }
    if (env && env[0]) {
        snprintf(path, size, "%s", env);
        *source = "OG_ORT_LIB";
        return NULL;
    }
    pthread_once(&python_once, ask_python);
    const char *dir = python_dir, *why = python_why;
    if (!python_found)
        return og_errorf(OG_ERR_NOT_FOUND,
                         "onnxruntime is not available: no library given (--ort-lib PATH, "
                         "og_session_options.ort_library or OG_ORT_LIB), and %s (install it "
                         "with 'python3 -m pip install onnxruntime', or point OG_ORT_LIB at a "
                         "libonnxruntime.so)", why);
    if (!find_lib_in(dir, path, size))
        return og_errorf(OG_ERR_NOT_FOUND, "onnxruntime is not available: the onnxruntime "
                         "Python package's folder %s holds no libonnxruntime.so* (give one "
                         "with --ort-lib PATH or OG_ORT_LIB)", dir);
    *source = "the onnxruntime Python package";
    return NULL;
}

static og_status *load(const char *path, const char *source, ort_lib **out) {
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!h)
        return og_errorf(OG_ERR_NOT_FOUND, "onnxruntime is not available: cannot load '%s' "
                         "(from %s): %s", path, source, dlerror());
    typedef const OrtApiBase *(*get_base_fn)(void);
    get_base_fn get_base;
    *(void **)&get_base = dlsym(h, "OrtGetApiBase"); /* (POSIX's way to get a function) */
    if (!get_base)
        return og_errorf(OG_ERR_INVALID_ARGUMENT, "'%s' (from %s) is not an onnxruntime "
                         "library: it has no OrtGetApiBase", path, source);
    const OrtApiBase *base = get_base();
    const char *version = base && base->GetVersionString ? base->GetVersionString() : NULL;
    const OrtApi *api = base && base->GetApi ? base->GetApi(ORT_API_VERSION) : NULL;
    if (!api)
        return og_errorf(OG_ERR_UNSUPPORTED, "onnxruntime '%s' (from %s) is version %s, too "
                         "old: this build uses its C API version %d (onnxruntime 1.%d or "
                         "newer is needed)", path, source, version ? version : "unknown",
                         ORT_API_VERSION, ORT_API_VERSION);
    ort_lib *lib = calloc(1, sizeof *lib);
    if (!lib) return og_oom();
    lib->api = api;
    lib->version = version ? version : "unknown";
    snprintf(lib->path, sizeof lib->path, "%s", path);
    /* onnxruntime's own log stays quiet: every error it reports comes back as a status,
     * which we return with the graph's name */
    OrtStatus *os = api->CreateEnv(ORT_LOGGING_LEVEL_FATAL, "onnx-genai", &lib->env);
    if (os) {
        free(lib);
        return ort_error(api, os, path);
    }
    *out = lib;
    return NULL;
}

og_status *ort_lib_get(const char *explicit_path, const ort_lib **out) {
    char path[4096];
    const char *source = "";
    OG_TRY(resolve_path(explicit_path, path, sizeof path, &source));
    pthread_mutex_lock(&lib_lock);
    og_status *st = NULL;
    int i = 0;
    for (; i < n_libs; i++)
        if (strcmp(libs[i]->path, path) == 0) break;
    if (i == n_libs) {
        if (n_libs == ORT_MAX_LIBS)
            st = og_errorf(OG_ERR_UNSUPPORTED, "onnxruntime: more than %d different libraries "
                           "loaded in one process", ORT_MAX_LIBS);
        else if (!(st = load(path, source, &libs[n_libs])))
            n_libs++;
    }
    if (!st) *out = libs[i];
    pthread_mutex_unlock(&lib_lock);
    return st;
}
