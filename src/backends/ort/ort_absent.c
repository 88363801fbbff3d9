/* The onnxruntime backend of a build made without onnxruntime's C API header
 * (CMakeLists.txt compiles this file instead of ort_lib.c and ort_backend.c): asking
 * for it says how to get it. */
#include "backends/backend.h"

static og_status *ort_absent_open(const backend_open_args *a, void **ctx) {
    (void)ctx;
    /* NOT_FOUND, as for a library that cannot be found: either way there is none to use */
    return og_errorf(OG_ERR_NOT_FOUND, "%s: onnxruntime is not available: this build of "
                     "onnx-genai was made without onnxruntime's C API header "
                     "(onnxruntime_c_api.h; tools/install_deps.sh installs it, then rebuild)",
                     a->label);
}

static og_status *ort_absent_run(void *ctx, const char *const *input_names,
                                 og_tensor *const *inputs, size_t n_inputs,
                                 const char *const *output_names, og_tensor **outputs,
                                 size_t n_outputs) {
    return og_errorf(OG_ERR_UNSUPPORTED, "onnxruntime is not available in this build");
}

static void ort_absent_free(void *ctx) { (void)ctx; }

const backend_ops backend_ort = {
    .name = "onnxruntime",
    .open = ort_absent_open,
    .run = ort_absent_run,
    .free = ort_absent_free,
};
