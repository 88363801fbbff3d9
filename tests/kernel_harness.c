#include "kernel_harness.h"

#include <stdlib.h>
#include <string.h>

threadpool *kh_pool;
const uint8_t *kh_row_forms;
int64_t kh_n_row_forms;

static og_status *kh_output(kernel_ctx *c, int i, og_dtype dt, int rank, const int64_t *dims,
                            tensor **o) {
    kh_run *r = c->exec;
    if (i < 0 || i >= 4) return og_errorf(OG_ERR_RUNTIME, "harness: output %d", i);
    tensor_release(&r->out[i]);
    OG_TRY(tensor_set_shape(&r->out[i], dt, rank, dims));
    OG_TRY(tensor_alloc_data(&r->out[i]));
    *o = &r->out[i];
    return NULL;
}

static og_status *kh_scratch(kernel_ctx *c, size_t n, void **p) {
    kh_run *r = c->exec;
    if (r->ns == 64 || !(*p = aligned_alloc(64, (n + 63) / 64 * 64 + 64))) return og_oom();
    r->scratch[r->ns++] = *p;
    return NULL;
}

og_status *kh_call_ex(kh_run *r, kernel_fn fn, int64_t opset, graph_attr *attrs, int na,
                      const tensor *const *in, int nin, int nout, const graph *g,
                      int *input_values, const struct paged_kv *paged_kv) {
    memset(r, 0, sizeof *r);
    r->node = (graph_node){.name = "t", .op_type = "T", .domain = "", .opset = opset,
                           .n_inputs = nin, .n_outputs = nout, .outputs = r->out_idx,
                           .n_attrs = na, .attrs = attrs, .inputs = input_values};
    r->ctx = (kernel_ctx){.node = &r->node, .opset = opset, .n_inputs = nin, .inputs = in,
                          .n_outputs = nout, .pool = kh_pool, .output = kh_output,
                          .scratch = kh_scratch, .exec = r, .where = "test",
                          .hold = kh_scratch /* both live until kh_free */,
                          .graph = g, .paged_kv = paged_kv, .row_forms = kh_row_forms,
                          .n_row_forms = kh_n_row_forms};
    return fn(&r->ctx);
}

og_status *kh_call(kh_run *r, kernel_fn fn, int64_t opset, graph_attr *attrs, int na,
                   const tensor *const *in, int nin, int nout) {
    return kh_call_ex(r, fn, opset, attrs, na, in, nin, nout, NULL, NULL, NULL);
}

void kh_free(kh_run *r) {
    for (int i = 0; i < 4; i++) tensor_release(&r->out[i]);
    for (int i = 0; i < r->ns; i++) free(r->scratch[i]);
    r->ns = 0;
}

tensor kh_tensor(og_dtype dt, int rank, const int64_t *dims, void *data) {
    tensor t = {0};
    og_status_free(tensor_set_shape(&t, dt, rank, dims));
    t.data = data;
    return t;
}
