/* If: runs then_branch or else_branch (no inputs; they read enclosing values) and copies
 * the branch's outputs to the node's. Both branches are prepared when the session opens;
 * each keeps its own plans. */
#include "backends/native/kernels/control/control.h"

og_status *cpu_if(kernel_ctx *ctx) {
    OG_TRY(kernel_require_inputs(ctx, 1));
    bool cond;
    OG_TRY(cf_read_bool(ctx, 0, "cond", &cond));
    const graph *branch;
    OG_TRY(cf_graph_attr(ctx, cond ? "then_branch" : "else_branch", &branch));
    if (branch->n_outputs != ctx->n_outputs)
        return kernel_errorf(ctx, OG_ERR_INVALID_MODEL, "%s has %d outputs, the node %d",
                             cond ? "then_branch" : "else_branch", branch->n_outputs,
                             ctx->n_outputs);
    if (branch->n_inputs != 0)
        return kernel_errorf(ctx, OG_ERR_INVALID_MODEL, "%s declares %d inputs, expected none",
                             cond ? "then_branch" : "else_branch", branch->n_inputs);
    const tensor *outs[16];
    if (branch->n_outputs > 16)
        return kernel_errorf(ctx, OG_ERR_UNSUPPORTED, "%d outputs (at most 16)",
                             branch->n_outputs);
    OG_TRY(ctx->subgraph(ctx, branch, 0, NULL, outs));
    for (int k = 0; k < branch->n_outputs; k++) OG_TRY(cf_emit(ctx, k, outs[k]));
    return NULL;
}
