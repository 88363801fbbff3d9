/* A stand-in executor for calling one kernel directly in unit tests: outputs and
 * scratch on the heap, attributes and inputs given by the test. */
#ifndef OG_TESTS_KERNEL_HARNESS_H
#define OG_TESTS_KERNEL_HARNESS_H

#include "base/threadpool.h"
#include "backends/native/kernels/kernel.h"

typedef struct kh_run {
    kernel_ctx ctx;
    graph_node node;
    int out_idx[4];
    tensor out[4]; /* outputs, owned by the run until kh_free */
    void *scratch[64];
    int ns;
} kh_run;

/* The pool kernels get (NULL: inline); tests of parallel paths set it. */
extern threadpool *kh_pool;
/* The row forms kernels get (kernel_ctx.row_forms; NULL: none), as the generator and the
 * engine give them: tests of a token computed in other runs than its own set them. */
extern const uint8_t *kh_row_forms;
extern int64_t kh_n_row_forms;

/* Calls fn as a node of the given opset with these attributes and inputs. */
og_status *kh_call(kh_run *r, kernel_fn fn, int64_t opset, graph_attr *attrs, int na,
                   const tensor *const *in, int nin, int nout);
/* kh_call with the node's input value indices in graph g (for kernels that look up
 * input names) and a paged KV cache lent to the run (either may be NULL). */
og_status *kh_call_ex(kh_run *r, kernel_fn fn, int64_t opset, graph_attr *attrs, int na,
                      const tensor *const *in, int nin, int nout, const graph *g,
                      int *input_values, const struct paged_kv *paged_kv);
/* Frees the outputs and scratch of a run. */
void kh_free(kh_run *r);
/* A tensor over test memory (not owned). */
tensor kh_tensor(og_dtype dt, int rank, const int64_t *dims, void *data);

#endif
