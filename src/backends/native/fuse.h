/* Graph rewrites the native executor applies when a session opens: nodes that one kernel
 * computes in one pass, to the same bits, become that one node.
 *
 * One pattern so far, a gated MLP's SiLU as the model builder and the exporters write it:
 *
 *     s = Sigmoid(x);  g = Mul(x, s);  y = Mul(g, u)        (either operand order)
 *
 * becomes y = SiluMul(x, u) (domain KERNEL_FUSED_DOMAIN, kernels/elementwise/silu_mul.c) where s and
 * g are read by nothing else (no other node, no subgraph) and are not graph outputs. At
 * prefill this saves writing and reading back two tensors of prompt x intermediate size
 * per layer.
 *
 * The rewritten graph copies the node and value arrays and keeps the value indices, so
 * names, graph inputs and outputs are the model's; strings, attributes, subgraphs and
 * initializers are shared with the model, which must outlive it. OG_FUSE=0 in the
 * environment turns the rewrites off (tests compare both ways). */
#ifndef OG_NATIVE_FUSE_H
#define OG_NATIVE_FUSE_H

#include "graph/graph.h"

/* *out: the rewritten graph, or NULL when nothing matched or OG_FUSE=0 (run g as is);
 * *n_fused: how many nodes the rewrites made. */
og_status *fuse_graph(const graph *g, graph **out, int *n_fused);
void fuse_graph_free(graph *fused);

#endif
