/* Row selections: some rows of a tensor along its leading axes (og_output_rows).
 *
 * A row is one position of every axis but the last: a tensor [d0, .., dk, X] has
 * d0 * .. * dk rows of X elements, numbered row-major. A selection is either the last
 * position of every sequence (the second-to-last axis is the sequence: the result is
 * [d0, .., dk-1, 1, X]) or a list of flat row indices (the result is [n, X]; while a
 * graph computes it, it is [1, .., 1, n, X] so that every tensor keeps its rank).
 *
 * Gathering is broadcast-aware: a tensor that broadcasts against the full leading dims
 * (right-aligned, a dim equal or 1) gives the rows that the broadcast would give, and a
 * tensor whose leading dims are all 1 is returned as it is (it broadcasts against the
 * selection too). That is what lets a graph compute only the selected rows from the
 * point where its values stop mixing rows (backends/native/rows_plan.c). */
#ifndef OG_BASE_ROWS_H
#define OG_BASE_ROWS_H

#include "base/status.h"
#include "base/tensor.h"

#include <stdbool.h>
#include <stdint.h>

typedef struct rows_sel {
    bool last;            /* the last position of every sequence, else `list` */
    const int64_t *list;  /* flat row indices over L (borrowed) */
    int64_t n_list;
    int lrank;            /* rank of the leading dims: the full tensor's rank - 1 (>= 1) */
    int64_t L[OG_MAX_RANK]; /* the full tensor's leading dims */
    int64_t n_sel;        /* selected rows */
} rows_sel;

/* Sets L (lrank dims) and n_sel, and checks the list's indices against L. `what` names
 * the tensor in messages. */
og_status *rows_sel_set_dims(rows_sel *r, int lrank, const int64_t *L, const char *what);
/* Whether the selection is every row in order (nothing to gather). */
bool rows_sel_identity(const rows_sel *r);
/* The full flat row of selected row i. */
int64_t rows_sel_row(const rows_sel *r, int64_t i);
/* The shape the selection has while a graph computes it: [L' .., X] with L' = L but the
 * last dim 1 (last) or [1, .., 1, n] (list). Returns the rank (lrank + 1). */
int rows_sel_inner_dims(const rows_sel *r, int64_t X, int64_t *dims);
/* The shape the caller gets: the inner shape (last), or [n, X] (list). */
int rows_sel_api_dims(const rows_sel *r, int64_t X, int64_t *dims);

/* How `full` gathers: *pass = true when its leading dims are all 1 (it is used as it is);
 * otherwise dims/rank receive the gathered (inner) shape. An error names `what` when
 * `full` does not broadcast against L or has no whole-byte rows. */
og_status *rows_gather_shape(const rows_sel *r, const tensor *full, const char *what,
                             bool *pass, int64_t *dims, int *rank);
/* Copies the selected rows of `full` (not a pass-through) to dst, which holds the
 * gathered shape's bytes. */
void rows_gather_copy(const rows_sel *r, const tensor *full, void *dst);

/* The selected rows of a whole tensor `full` into *dst: a caller tensor of the selection's
 * (API) shape, or NULL for a new tensor. With `known`, r's dims must be full's leading
 * dims; without, they are set from full (and the list checked). For any executor that
 * computed the whole output (the fallback of a selection). */
og_status *rows_sel_take(rows_sel *r, bool known, const tensor *full, const char *what,
                         tensor **dst);

#endif
