/* The native executor behind the seam (backends/backend.h): thin wrappers over
 * native_session.c and executor.c. */
#include "backends/native/native_session.h"
#include "backends/native/kernels/matmul/gemm_f32.h"
#include "backends/native/kernels/matmul/matmul_nbits_pack.h"

static og_status *native_open(const backend_open_args *a, void **ctx) {
    native_session *s;
    OG_TRY(native_session_create(a->model, a->options, &s));
    *ctx = s;
    return NULL;
}

static og_status *native_run(void *ctx, const char *const *input_names,
                             og_tensor *const *inputs, size_t n_inputs,
                             const char *const *output_names, og_tensor **outputs,
                             size_t n_outputs) {
    return native_session_run_rows(ctx, input_names, inputs, n_inputs, output_names, outputs,
                                   n_outputs, NULL);
}

static og_status *native_run_rows(void *ctx, const char *const *input_names,
                                  og_tensor *const *inputs, size_t n_inputs,
                                  const char *const *output_names, og_tensor **outputs,
                                  size_t n_outputs, const og_output_rows *rows) {
    return native_session_run_rows(ctx, input_names, inputs, n_inputs, output_names, outputs,
                                   n_outputs, rows);
}

static void native_free(void *ctx) { native_session_close(ctx); }

/* A node runs when the registry has a kernel for its op at the opset the model imports
 * (the node's subgraphs are checked on their own). */
static bool native_supports_node(const graph_node *n) {
    return n->opset != 0 && kernel_find(n->domain, n->op_type, n->opset, NULL) != NULL;
}

static backend_op_support native_op_support(const char *domain, const char *op_type,
                                            int64_t opset) {
    bool known = false;
    if (kernel_find(domain, op_type, opset, &known)) return BACKEND_OP_RUNS;
    return known ? BACKEND_OP_OTHER_OPSET : BACKEND_OP_UNKNOWN;
}

static void native_stats(const void *ctx, backend_run_stats *out) {
    native_session_last_stats(ctx, out);
}

static void native_set_profiler(void *ctx, struct og_profiler *p) {
    native_session_set_profiler(ctx, p);
}

static void native_set_paged_kv(void *ctx, const struct paged_kv *kv) {
    native_session_set_paged_kv(ctx, kv);
}

static void native_set_row_forms(void *ctx, const uint8_t *forms, int64_t n) {
    native_session_set_row_forms(ctx, forms, n);
}

static void native_prep_stats(const void *ctx, backend_prep_stats *out) {
    const native_session *s = ctx;
    out->bytes = s->prepared_bytes;
    out->released = s->released_bytes;
    out->nodes = s->prepared_nodes;
    out->secs = s->prepare_s;
    out->cpu_secs = s->prepare_cpu_s;
    out->cache = s->pack_cache_outcome ? s->pack_cache_outcome : "off";
}

static int native_threads(const void *ctx) {
    return threadpool_size(((const native_session *)ctx)->pool);
}

static void native_kernel_names(backend_kernel_names *out) {
    out->matmulnbits_short = mnb_pack_kernel_name(1);
    out->matmulnbits_long = mnb_pack_kernel_name(512);
    out->gemm_f32 = gemm_f32_isa();
}

const backend_ops backend_native = {
    .name = "native",
    .open = native_open,
    .run = native_run,
    .free = native_free,
    .run_rows = native_run_rows,
    .supports_node = native_supports_node,
    .op_support = native_op_support,
    .stats = native_stats,
    .threads = native_threads,
    .set_profiler = native_set_profiler,
    .prep_stats = native_prep_stats,
    .set_paged_kv = native_set_paged_kv,
    .set_row_forms = native_set_row_forms,
    .kernel_names = native_kernel_names,
};
