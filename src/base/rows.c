/* Row selections and broadcast-aware row gathers (see rows.h). */
#include "base/rows.h"

#include <string.h>

og_status *rows_sel_set_dims(rows_sel *r, int lrank, const int64_t *L, const char *what) {
    char a[160];
    if (lrank < 1 || lrank >= OG_MAX_RANK)
        return og_errorf(OG_ERR_INVALID_ARGUMENT, "%s: rows of a rank-%d tensor: a row "
                         "selection needs rank 2 or more", what, lrank + 1);
    r->lrank = lrank;
    memcpy(r->L, L, sizeof *L * (size_t)lrank);
    int64_t rows = shape_count(L, lrank);
    if (rows < 0)
        return og_errorf(OG_ERR_INVALID_ARGUMENT, "%s: leading dims %s are not known", what,
                         shape_str(L, lrank, a, sizeof a));
    if (r->last) {
        int64_t S = L[lrank - 1];
        if (S < 1)
            return og_errorf(OG_ERR_INVALID_ARGUMENT, "%s: no last position in %s", what,
                             shape_str(L, lrank, a, sizeof a));
        r->n_sel = rows / S;
        return NULL;
    }
    if (r->n_list < 1 || !r->list)
        return og_errorf(OG_ERR_INVALID_ARGUMENT, "%s: a list of rows needs at least one",
                         what);
    for (int64_t i = 0; i < r->n_list; i++)
        if (r->list[i] < 0 || r->list[i] >= rows)
            return og_errorf(OG_ERR_INVALID_ARGUMENT, "%s: row %lld (entry %lld of the list) "
                             "is outside the %lld rows of %s", what, (long long)r->list[i],
                             (long long)i, (long long)rows, shape_str(L, lrank, a, sizeof a));
    r->n_sel = r->n_list;
    return NULL;
}

bool rows_sel_identity(const rows_sel *r) {
    if (r->last) return r->L[r->lrank - 1] == 1;
    if (r->n_list != shape_count(r->L, r->lrank)) return false;
    for (int64_t i = 0; i < r->n_list; i++)
        if (r->list[i] != i) return false;
    return true;
}

int64_t rows_sel_row(const rows_sel *r, int64_t i) {
    if (!r->last) return r->list[i];
    int64_t S = r->L[r->lrank - 1];
    return i * S + S - 1;
}

int rows_sel_inner_dims(const rows_sel *r, int64_t X, int64_t *dims) {
    for (int d = 0; d < r->lrank; d++) dims[d] = r->last ? r->L[d] : 1;
    dims[r->lrank - 1] = r->last ? 1 : r->n_sel;
    dims[r->lrank] = X;
    return r->lrank + 1;
}

int rows_sel_api_dims(const rows_sel *r, int64_t X, int64_t *dims) {
    if (r->last) return rows_sel_inner_dims(r, X, dims);
    dims[0] = r->n_sel;
    dims[1] = X;
    return 2;
}

og_status *rows_gather_shape(const rows_sel *r, const tensor *full, const char *what,
                             bool *pass, int64_t *dims, int *rank) {
    char a[160], b[160];
    *pass = full->rank < 2 || shape_count(full->dims, full->rank - 1) == 1;
    if (*pass) return NULL;
    int lu = full->rank - 1, off = r->lrank - lu;
    bool fits = off >= 0;
    for (int j = 0; j < lu && fits; j++)
        fits = full->dims[j] == 1 || full->dims[j] == r->L[off + j];
    if (!fits)
        return og_errorf(OG_ERR_INVALID_MODEL, "%s: %s does not broadcast against the rows %s "
                         "of the selected output", what,
                         shape_str(full->dims, full->rank, a, sizeof a),
                         shape_str(r->L, r->lrank, b, sizeof b));
    int64_t X = full->dims[lu];
    size_t bits = full->dtype == OG_STRING ? 8 * sizeof(og_string) : (size_t)og_dtype_bits(full->dtype);
    if (bits == 0 || ((size_t)X * bits) % 8)
        return og_errorf(OG_ERR_UNSUPPORTED, "%s: rows of %lld %s elements are not whole bytes",
                         what, (long long)X, og_dtype_name(full->dtype));
    *rank = rows_sel_inner_dims(r, X, dims);
    return NULL;
}

void rows_gather_copy(const rows_sel *r, const tensor *full, void *dst) {
    int lu = full->rank - 1, off = r->lrank - lu;
    size_t bits = full->dtype == OG_STRING ? 8 * sizeof(og_string) : (size_t)og_dtype_bits(full->dtype);
    size_t row_bytes = (size_t)full->dims[lu] * bits / 8;
    int64_t ustride[OG_MAX_RANK]; /* full's row stride per leading dim of L (0: broadcast) */
    int64_t s = 1;
    for (int d = r->lrank - 1; d >= 0; d--) {
        int j = d - off;
        ustride[d] = j >= 0 && full->dims[j] != 1 ? s : 0;
        if (j >= 0) s *= full->dims[j];
    }
    for (int64_t i = 0; i < r->n_sel; i++) {
        int64_t f = rows_sel_row(r, i), src = 0;
        for (int d = r->lrank - 1; d >= 0; d--) {
            src += (f % r->L[d]) * ustride[d];
            f /= r->L[d];
        }
        memcpy((char *)dst + (size_t)i * row_bytes, (const char *)full->data + (size_t)src * row_bytes,
               row_bytes);
    }
}

og_status *rows_sel_take(rows_sel *r, bool known, const tensor *full, const char *what,
                         tensor **dst) {
    char a[160], b[160];
    if (full->rank < 2 || full->dtype == OG_STRING)
        return og_errorf(OG_ERR_INVALID_ARGUMENT, "%s is %s %s: rows are selected from numeric "
                         "tensors of rank 2 or more", what, og_dtype_name(full->dtype),
                         shape_str(full->dims, full->rank, a, sizeof a));
    if (!known) {
        OG_TRY(rows_sel_set_dims(r, full->rank - 1, full->dims, what));
    } else if (full->rank - 1 != r->lrank ||
               memcmp(full->dims, r->L, sizeof(int64_t) * (size_t)r->lrank)) {
        return og_errorf(OG_ERR_INVALID_MODEL, "%s came out as %s, not with the rows %s it "
                         "declares", what, shape_str(full->dims, full->rank, a, sizeof a),
                         shape_str(r->L, r->lrank, b, sizeof b));
    }
    bool pass;
    int64_t dims[OG_MAX_RANK], api[OG_MAX_RANK];
    int rank;
    OG_TRY(rows_gather_shape(r, full, what, &pass, dims, &rank));
    int arank = rows_sel_api_dims(r, full->dims[full->rank - 1], api);
    tensor *t = *dst;
    if (t && (t->dtype != full->dtype || t->rank != arank ||
              memcmp(t->dims, api, sizeof(int64_t) * (size_t)arank)))
        return og_errorf(OG_ERR_INVALID_ARGUMENT, "%s: the selected rows are %s %s, but the "
                         "caller's tensor is %s %s", what, og_dtype_name(full->dtype),
                         shape_str(api, arank, a, sizeof a), og_dtype_name(t->dtype),
                         shape_str(t->dims, t->rank, b, sizeof b));
    if (!t) OG_TRY(og_tensor_create(full->dtype, api, arank, &t));
    if (pass) /* one row, broadcast to every selected row */
        for (int64_t i = 0; i < r->n_sel; i++)
            memcpy((char *)t->data + (size_t)i * full->nbytes, full->data, full->nbytes);
    else
        rows_gather_copy(r, full, t->data);
    *dst = t;
    return NULL;
}
