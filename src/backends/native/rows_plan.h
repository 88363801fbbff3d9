/* Which nodes of a run compute only the selected rows of an output (og_output_rows).
 *
 * From the selected output backward, a node joins the pruned set when its op keeps rows
 * independent (output row r depends only on row r of its row inputs: see rows_plan.c
 * for the ops and their conditions) and every output it has that anything reads is read
 * only by pruned nodes, as a row input (and is not another requested output). A pruned
 * node's row inputs are either pruned values (already the selected rows) or full values
 * gathered to the selected rows right before it runs (base/rows.h: broadcast-aware, so a
 * bias or a scalar passes as it is); its other inputs (weights, norm scales) are read
 * whole. Everything not provably row-wise stops the walk: state outputs, attention and
 * anything a subgraph reads keep all positions. */
#ifndef OG_BACKENDS_NATIVE_ROWS_PLAN_H
#define OG_BACKENDS_NATIVE_ROWS_PLAN_H

#include "backends/native/native_session.h"

/* Marks eg->rnode (nodes) and eg->rval (values computed as the selected rows) for a run
 * that selects rows of value `target`, with eg->cur bound to the run's inputs and
 * initializers only, want_out[v] for the requested outputs. Allocates the graph's
 * consumer lists on first use. */
og_status *rows_plan_mark(exec_graph *eg, int target, const bool *want_out);
/* Whether input k of node n (marked in the last rows_plan_mark) is a row input. */
bool rows_plan_row_input(const exec_graph *eg, const graph_node *n, int k);
void rows_plan_free(exec_graph *eg);

#endif
