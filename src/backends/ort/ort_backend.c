/* onnxruntime behind the seam (backends/backend.h).
 *
 * Binding: input tensors are wrapped as OrtValues over our memory (no copy; strings are
 * the exception: onnxruntime keeps its own std::string elements, so they are copied).
 * A caller-given output tensor is wrapped the same way and passed to Run pre-allocated,
 * so onnxruntime writes the result into the caller's memory; past and present given as
 * one buffer reach it as one buffer (its GroupQueryAttention then appends in place, as
 * onnxruntime-genai binds it). An output the caller leaves NULL is allocated by
 * onnxruntime and copied into a new og_tensor: that copy is the explicit one, counted in
 * backend_run_stats.copied_bytes. */
#include "backends/backend.h"
#include "backends/ort/ort.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

typedef struct ort_ctx {
    const ort_lib *lib;
    const OrtApi *api;
    OrtSession *session;
    OrtMemoryInfo *cpu;
    OrtAllocator *alloc; /* onnxruntime's default CPU allocator (not ours to release) */
    char *label;
    int threads;
    size_t copied_bytes, copies; /* of the last run */
} ort_ctx;

#define ORT_TRY(ctx, call)                                                               \
    do {                                                                                 \
        OrtStatus *os_ = (call);                                                         \
        if (os_) return ort_error((ctx)->api, os_, (ctx)->label);                        \
    } while (0)

static void ort_free(void *p) {
    ort_ctx *c = p;
    if (!c) return;
    if (c->session) c->api->ReleaseSession(c->session);
    if (c->cpu) c->api->ReleaseMemoryInfo(c->cpu);
    free(c->label);
    free(c);
}

/* --ep: the CPU provider is always there; another must be in the loaded library. */
static og_status *add_provider(ort_ctx *c, OrtSessionOptions *so, const char *ep) {
    if (!ep || !ep[0] || strcasecmp(ep, "cpu") == 0) return NULL;
    const char *want = strcasecmp(ep, "cuda") == 0 ? "CUDAExecutionProvider" : NULL;
    char **names = NULL;
    int n = 0;
    ORT_TRY(c, c->api->GetAvailableProviders(&names, &n));
    char have[512] = "";
    bool found = false;
    for (int i = 0; i < n; i++) {
        size_t len = strlen(have);
        snprintf(have + len, sizeof have - len, "%s%s", i ? ", " : "", names[i]);
        found |= want && strcmp(names[i], want) == 0;
    }
    OrtStatus *rel = c->api->ReleaseAvailableProviders(names, n); /* never fails */
    if (rel) c->api->ReleaseStatus(rel);
    if (!want)
        return og_errorf(OG_ERR_INVALID_ARGUMENT, "%s: unknown execution provider '%s' (cpu or "
                         "cuda; the onnxruntime in %s has %s)", c->label, ep, c->lib->path, have);
    if (!found)
        return og_errorf(OG_ERR_UNSUPPORTED, "%s: execution provider '%s' (%s) is not in the "
                         "onnxruntime loaded from %s (version %s), which has %s", c->label, ep,
                         want, c->lib->path, c->lib->version, have);
    OrtCUDAProviderOptionsV2 *cuda = NULL;
    ORT_TRY(c, c->api->CreateCUDAProviderOptions(&cuda));
    OrtStatus *os = c->api->SessionOptionsAppendExecutionProvider_CUDA_V2(so, cuda);
    c->api->ReleaseCUDAProviderOptions(cuda);
    if (os) return ort_error(c->api, os, c->label);
    return NULL;
}

static og_status *configure(ort_ctx *c, OrtSessionOptions *so, const backend_open_args *a) {
    const og_session_options *o = a->options;
    if (o->num_threads > 0) ORT_TRY(c, c->api->SetIntraOpNumThreads(so, o->num_threads));
    int level = o->graph_optimization_level;
    if (level != -1 && level != ORT_DISABLE_ALL && level != ORT_ENABLE_BASIC &&
        level != ORT_ENABLE_EXTENDED && level != ORT_ENABLE_ALL)
        return og_errorf(OG_ERR_INVALID_ARGUMENT, "%s: graph optimization level %d (expected "
                         "-1 for onnxruntime's default, 0, 1, 2 or 99)", c->label, level);
    if (level != -1)
        ORT_TRY(c, c->api->SetSessionGraphOptimizationLevel(so, (GraphOptimizationLevel)level));
    if (!a->path && a->base_dir)
        ORT_TRY(c, c->api->AddSessionConfigEntry(
                       so, "session.model_external_initializers_file_folder_path", a->base_dir));
    return add_provider(c, so, o->ort_provider);
}

static og_status *ort_open(const backend_open_args *a, void **out) {
    const ort_lib *lib;
    og_status *st = ort_lib_get(a->options->ort_library, &lib);
    if (st) return og_status_wrap(st, "%s", a->label);
    ort_ctx *c = calloc(1, sizeof *c);
    if (!c) return og_oom();
    c->lib = lib;
    c->api = lib->api;
    c->threads = a->options->num_threads;
    OrtSessionOptions *so = NULL;
    if (!(c->label = strdup(a->label))) {
        st = og_oom();
        goto fail;
    }
    OrtStatus *os = c->api->CreateSessionOptions(&so);
    if (!os) st = configure(c, so, a);
    if (!os && !st)
        os = a->path ? c->api->CreateSession(lib->env, a->path, so, &c->session)
                     : c->api->CreateSessionFromArray(lib->env, a->bytes, a->n_bytes, so,
                                                      &c->session);
    if (!os && !st) os = c->api->CreateCpuMemoryInfo(OrtDeviceAllocator, OrtMemTypeDefault, &c->cpu);
    if (!os && !st) os = c->api->GetAllocatorWithDefaultOptions(&c->alloc);
    if (os) st = ort_error(c->api, os, c->label);
    if (so) c->api->ReleaseSessionOptions(so);
    if (st) goto fail;
    *out = c;
    return NULL;
fail:
    ort_free(c);
    return st;
}

/* ---- binding ---------------------------------------------------------------------------- */

/* An OrtValue over t's memory; string tensors are copied element by element. */
static og_status *wrap_value(ort_ctx *c, const og_tensor *t, OrtValue **out) {
    if (t->dtype != OG_STRING) {
        ORT_TRY(c, c->api->CreateTensorWithDataAsOrtValue(
                       c->cpu, t->data, t->nbytes, t->dims, (size_t)t->rank,
                       (ONNXTensorElementDataType)t->dtype, out));
        return NULL;
    }
    ORT_TRY(c, c->api->CreateTensorAsOrtValue(c->alloc, t->dims, (size_t)t->rank,
                                              ONNX_TENSOR_ELEMENT_DATA_TYPE_STRING, out));
    const og_string *s = t->data;
    int64_t n = shape_count(t->dims, t->rank);
    for (int64_t i = 0; i < n; i++) {
        char *buf = NULL;
        OrtStatus *os = c->api->GetResizedStringTensorElementBuffer(*out, (size_t)i, s[i].size,
                                                                    &buf);
        if (os) {
            c->api->ReleaseValue(*out);
            *out = NULL;
            return ort_error(c->api, os, c->label);
        }
        if (s[i].size) memcpy(buf, s[i].data, s[i].size);
        c->copied_bytes += s[i].size;
    }
    c->copies++;
    return NULL;
}

/* A string output: onnxruntime's bytes and offsets -> a tensor that owns its strings. */
static og_status *take_strings(ort_ctx *c, const OrtValue *v, const int64_t *dims, int rank,
                               og_tensor *out) {
    int64_t n = shape_count(dims, rank);
    size_t len = 0;
    ORT_TRY(c, c->api->GetStringTensorDataLength(v, &len));
    char *bytes = malloc(len + 1);
    size_t *offs = malloc(((size_t)n + 1) * sizeof *offs);
    tensor view = {0};
    og_status *st = tensor_set_shape(&view, OG_STRING, rank, dims);
    if (!st && (!bytes || !offs)) st = og_oom();
    if (!st) st = tensor_alloc_data(&view);
    OrtStatus *os = st ? NULL : c->api->GetStringTensorContent(v, bytes, len, offs, (size_t)n);
    if (os) st = ort_error(c->api, os, c->label);
    if (!st) {
        og_string *s = view.data;
        for (int64_t i = 0; i < n; i++) {
            size_t end = i + 1 < n ? offs[i + 1] : len;
            s[i].data = bytes + offs[i];
            s[i].size = end - offs[i];
        }
        st = tensor_own_strings(&view, out);
        c->copied_bytes += len;
        c->copies++;
    }
    tensor_release(&view);
    free(bytes);
    free(offs);
    return st;
}

/* An output onnxruntime allocated -> a new og_tensor the caller owns (the counted copy). */
static og_status *take_output(ort_ctx *c, const OrtValue *v, const char *name, og_tensor **out) {
    OrtTensorTypeAndShapeInfo *info = NULL;
    ORT_TRY(c, c->api->GetTensorTypeAndShape(v, &info));
    ONNXTensorElementDataType type = ONNX_TENSOR_ELEMENT_DATA_TYPE_UNDEFINED;
    size_t rank = 0;
    int64_t dims[OG_MAX_RANK];
    OrtStatus *os = c->api->GetTensorElementType(info, &type);
    if (!os) os = c->api->GetDimensionsCount(info, &rank);
    if (!os && rank <= OG_MAX_RANK) os = c->api->GetDimensions(info, dims, rank);
    c->api->ReleaseTensorTypeAndShapeInfo(info);
    if (os) return ort_error(c->api, os, c->label);
    og_dtype dt = (og_dtype)type;
    if (rank > OG_MAX_RANK || (int)type <= 0 || (int)type >= (int)OG_DTYPE_COUNT ||
        (og_dtype_bits(dt) == 0 && dt != OG_STRING))
        return og_errorf(OG_ERR_UNSUPPORTED, "%s: output '%s' is onnxruntime element type %d, "
                         "rank %zu: not representable as an og_tensor", c->label, name,
                         (int)type, rank);
    og_tensor *t = calloc(1, sizeof *t);
    if (!t) return og_oom();
    og_status *st = NULL;
    if (dt == OG_STRING) {
        st = take_strings(c, v, dims, (int)rank, t);
        if (st) free(t);
    } else {
        free(t);
        t = NULL;
        st = og_tensor_create(dt, dims, (int)rank, &t);
        void *src = NULL;
        if (!st && t->nbytes) {
            os = c->api->GetTensorMutableData((OrtValue *)v, &src);
            if (os) st = ort_error(c->api, os, c->label);
            else memcpy(t->data, src, t->nbytes);
            c->copied_bytes += t->nbytes;
            c->copies++;
        }
        if (st) og_tensor_free(t);
    }
    if (st) return st;
    *out = t;
    return NULL;
}

static og_status *ort_run(void *p, const char *const *input_names, og_tensor *const *inputs,
                          size_t n_inputs, const char *const *output_names, og_tensor **outputs,
                          size_t n_outputs) {
    ort_ctx *c = p;
    c->copied_bytes = c->copies = 0;
    OrtValue **in = calloc(n_inputs + 1, sizeof *in);
    OrtValue **out = calloc(n_outputs + 1, sizeof *out);
    og_tensor **fresh = calloc(n_outputs + 1, sizeof *fresh);
    og_status *st = NULL;
    if (!in || !out || !fresh) st = og_oom();
    for (size_t i = 0; i < n_inputs && !st; i++) {
        if (!inputs[i])
            st = og_errorf(OG_ERR_INVALID_ARGUMENT, "%s: input '%s' is NULL", c->label,
                           input_names[i] ? input_names[i] : "(null)");
        else st = wrap_value(c, inputs[i], &in[i]);
    }
    for (size_t i = 0; i < n_outputs && !st; i++) {
        if (!outputs[i]) continue;
        if (outputs[i]->dtype == OG_STRING)
            st = og_errorf(OG_ERR_INVALID_ARGUMENT, "%s: output '%s' is a string tensor: pass "
                           "NULL for it and take the new tensor (it owns its bytes)", c->label,
                           output_names[i]);
        else st = wrap_value(c, outputs[i], &out[i]);
    }
    if (!st) {
        OrtStatus *os = c->api->Run(c->session, NULL, (const char *const *)input_names,
                                    (const OrtValue *const *)in, n_inputs,
                                    (const char *const *)output_names, n_outputs, out);
        if (os) st = ort_error(c->api, os, c->label);
    }
    for (size_t i = 0; i < n_outputs && !st; i++)
        if (!outputs[i]) st = take_output(c, out[i], output_names[i], &fresh[i]);
    for (size_t i = 0; i < n_outputs && !st; i++)
        if (!outputs[i]) outputs[i] = fresh[i];
    if (st)
        for (size_t i = 0; fresh && i < n_outputs; i++) og_tensor_free(fresh[i]);
    for (size_t i = 0; in && i < n_inputs; i++)
        if (in[i]) c->api->ReleaseValue(in[i]);
    for (size_t i = 0; out && i < n_outputs; i++)
        if (out[i]) c->api->ReleaseValue(out[i]);
    free(in);
    free(out);
    free(fresh);
    return st;
}

static void ort_stats(const void *p, backend_run_stats *out) {
    const ort_ctx *c = p;
    out->copied_bytes = c->copied_bytes;
    out->copies = c->copies;
}

static int ort_threads(const void *p) { return ((const ort_ctx *)p)->threads; }

const backend_ops backend_ort = {
    .name = "onnxruntime",
    .open = ort_open,
    .run = ort_run,
    .free = ort_free,
    .stats = ort_stats,
    .threads = ort_threads,
};
