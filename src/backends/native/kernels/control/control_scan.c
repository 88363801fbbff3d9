/* Scan: N state values and M scan inputs; the body takes (N states, one slice of each
 * scan input) and returns (N states, K scan-output slices). From opset 9 every scan
 * input is sliced along its scan_input_axes entry (forward, or backward per
 * scan_input_directions) and every scan output stacks its slices along its
 * scan_output_axes entry (scan_output_directions reverses them). Opset 8 has a leading
 * batch axis on every input and output, scans axis 1, takes an optional sequence_lens
 * input first (each batch row runs its own length; the scan outputs' rows are zero
 * past it) and has only input directions.
 *
 * Slices along axis 0 are views into the input; other axes are gathered into one buffer
 * per input, reused every iteration. Output slices are written straight into the node's
 * outputs, which are allocated once the first iteration shows the slice shapes. */
#include "backends/native/kernels/control/control.h"

#include <string.h>

enum { SCAN_MAX = 32 };

typedef struct scan_job {
    kernel_ctx *ctx;
    const graph *body;
    bool batched;                 /* opset 8 */
    int n_state, n_in, n_out;
    const tensor *in[SCAN_MAX];   /* the scan inputs (whole) */
    int in_axis[SCAN_MAX], in_dir[SCAN_MAX];
    int out_axis[SCAN_MAX], out_dir[SCAN_MAX];
    int64_t batch, len;           /* batch rows (1 from opset 9), the scan axis length */
    tensor slice[SCAN_MAX];       /* this iteration's slice of each scan input */
    void *gather[SCAN_MAX];       /* the buffer of a slice that is not a view */
    tensor *out[SCAN_MAX * 2];    /* the node's outputs: states then scan outputs */
    bool have_out;
} scan_job;

/* Bytes of one position along `axis` of t, and the number of blocks before it. */
static void axis_split(const tensor *t, int axis, int64_t *outer, size_t *inner) {
    *outer = shape_count(t->dims, axis);
    *inner = dtype_nbytes(t->dtype, shape_count(t->dims + axis + 1, t->rank - axis - 1));
}

/* Slice `pos` of scan input j (of batch row b) into j->slice[j]. */
static og_status *take_slice(scan_job *jb, int j, int64_t b, int64_t pos) {
    const tensor *x = jb->in[j];
    int axis = jb->in_axis[j];
    tensor *s = &jb->slice[j];
    s->dtype = x->dtype;
    s->rank = x->rank - 1 - jb->batched;
    int k = 0;
    for (int d = jb->batched; d < x->rank; d++)
        if (d != axis) s->dims[k++] = x->dims[d];
    int64_t outer;
    size_t inner;
    axis_split(x, axis, &outer, &inner);
    s->nbytes = inner * (size_t)(outer / jb->batch);
    const char *base = (const char *)x->data + (size_t)b * s->nbytes * (size_t)x->dims[axis];
    if (outer == jb->batch) { /* the scan axis is outermost in the row: a view */
        s->data = (void *)(base + (size_t)pos * inner);
        return NULL;
    }
    if (!jb->gather[j]) OG_TRY(kernel_scratch(jb->ctx, s->nbytes ? s->nbytes : 1, &jb->gather[j]));
    s->data = jb->gather[j];
    int64_t blocks = outer / jb->batch;
    for (int64_t o = 0; o < blocks; o++)
        memcpy((char *)s->data + (size_t)o * inner,
               base + ((size_t)o * (size_t)x->dims[axis] + (size_t)pos) * inner, inner);
    return NULL;
}

/* The node's outputs, from the first iteration's state and slice shapes (or the body's
 * declarations when no iteration runs). */
static og_status *make_outputs(scan_job *jb, const tensor *const *outs) {
    kernel_ctx *ctx = jb->ctx;
    for (int k = 0; k < jb->n_state + jb->n_out; k++) {
        og_dtype dt;
        int rank;
        int64_t d[OG_MAX_RANK + 1];
        int64_t *slice_dims = d + jb->batched;
        const tensor *state0 = k < jb->n_state ? ctx->inputs[jb->batched + k] : NULL;
        if (outs) {
            dt = outs[k]->dtype;
            rank = outs[k]->rank;
            memcpy(slice_dims, outs[k]->dims, sizeof(int64_t) * (size_t)rank);
        } else if (state0) { /* no iteration: the state keeps its initial shape */
            dt = state0->dtype;
            rank = state0->rank - jb->batched;
            memcpy(slice_dims, state0->dims + jb->batched, sizeof(int64_t) * (size_t)rank);
        } else {
            OG_TRY(cf_declared_slice(ctx, jb->body, k, &dt, &rank, slice_dims));
        }
        if (jb->batched) d[0] = jb->batch;
        rank += jb->batched;
        if (k >= jb->n_state) { /* insert the scan axis */
            int a = jb->out_axis[k - jb->n_state] + jb->batched;
            if (a < 0) a += rank + 1;
            if (a < jb->batched || a > rank)
                return kernel_errorf(ctx, OG_ERR_INVALID_MODEL, "scan_output_axes entry %d is "
                                     "%d, outside the output's rank %d", k - jb->n_state,
                                     jb->out_axis[k - jb->n_state], rank + 1 - jb->batched);
            jb->out_axis[k - jb->n_state] = a;
            memmove(d + a + 1, d + a, sizeof(int64_t) * (size_t)(rank - a));
            d[a] = jb->len;
            rank++;
        }
        if (rank > OG_MAX_RANK)
            return kernel_errorf(ctx, OG_ERR_UNSUPPORTED, "output %d has rank %d", k, rank);
        OG_TRY(kernel_output(ctx, k, dt, rank, d, &jb->out[k]));
        /* rows shorter than the scan length (opset 8 sequence_lens) stay zero */
        if (jb->batched && k >= jb->n_state && jb->out[k]->nbytes)
            memset(jb->out[k]->data, 0, jb->out[k]->nbytes);
    }
    jb->have_out = true;
    return NULL;
}

/* Writes one iteration's slice v of scan output k at position pos of batch row b. */
static og_status *put_slice(scan_job *jb, int k, int64_t b, int64_t pos, const tensor *v) {
    tensor *y = jb->out[jb->n_state + k];
    int a = jb->out_axis[k];
    char s1[160], s2[160];
    bool fits = v->dtype == y->dtype && v->rank == y->rank - 1 - jb->batched;
    for (int d = jb->batched, i = 0; fits && d < y->rank; d++)
        if (d != a) fits = v->dims[i++] == y->dims[d];
    if (!fits)
        return kernel_errorf(jb->ctx, OG_ERR_INVALID_MODEL, "scan output %d is %s %s at "
                             "position %lld; its first slice made the output %s %s", k,
                             og_dtype_name(v->dtype), shape_str(v->dims, v->rank, s1, sizeof s1),
                             (long long)pos, og_dtype_name(y->dtype),
                             shape_str(y->dims, y->rank, s2, sizeof s2));
    int64_t outer;
    size_t inner;
    axis_split(y, a, &outer, &inner);
    int64_t blocks = outer / jb->batch;
    char *base = (char *)y->data + (size_t)b * (y->nbytes / (size_t)jb->batch);
    for (int64_t o = 0; o < blocks; o++)
        memcpy(base + ((size_t)o * (size_t)y->dims[a] + (size_t)pos) * inner,
               (const char *)v->data + (size_t)o * inner, inner);
    return NULL;
}

/* One batch row: len iterations from the states' initial values (row b of them). */
static og_status *scan_row(scan_job *jb, int64_t b, int64_t len) {
    kernel_ctx *ctx = jb->ctx;
    int first_state = jb->batched; /* opset 8: input 0 is sequence_lens */
    cf_state st[SCAN_MAX];
    for (int k = 0; k < jb->n_state; k++) {
        const tensor *x = ctx->inputs[first_state + k];
        if (!x)
            return kernel_errorf(ctx, OG_ERR_INVALID_MODEL, "state input %d is missing", k);
        tensor row = *x;
        if (jb->batched) { /* row b of the state */
            if (x->rank < 1 || x->dims[0] != jb->batch)
                return kernel_errorf(ctx, OG_ERR_INVALID_ARGUMENT, "state input %d does not "
                                     "have the batch size %lld first", k, (long long)jb->batch);
            row.rank = x->rank - 1;
            memmove(row.dims, x->dims + 1, sizeof(int64_t) * (size_t)row.rank);
            row.nbytes = x->nbytes / (size_t)jb->batch;
            row.data = (char *)x->data + (size_t)b * row.nbytes;
        }
        cf_state_init(&st[k], &row);
    }
    const tensor *ins[SCAN_MAX * 2], *outs[SCAN_MAX * 2];
    for (int64_t t = 0; t < len; t++) {
        for (int k = 0; k < jb->n_state; k++) ins[k] = &st[k].cur;
        for (int j = 0; j < jb->n_in; j++) {
            OG_TRY(take_slice(jb, j, b, jb->in_dir[j] ? len - 1 - t : t));
            ins[jb->n_state + j] = &jb->slice[j];
        }
        OG_TRY(ctx->subgraph(ctx, jb->body, jb->n_state + jb->n_in, ins, outs));
        if (!jb->have_out) OG_TRY(make_outputs(jb, outs));
        for (int k = 0; k < jb->n_out; k++)
            OG_TRY(put_slice(jb, k, b, jb->out_dir[k] ? len - 1 - t : t, outs[jb->n_state + k]));
        OG_TRY(cf_state_update(ctx, st, jb->n_state, outs, "state"));
    }
    if (!jb->have_out) OG_TRY(make_outputs(jb, NULL));
    for (int k = 0; k < jb->n_state; k++) {
        tensor *y = jb->out[k];
        const tensor *v = &st[k].cur;
        size_t row = y->nbytes / (size_t)(jb->batch ? jb->batch : 1);
        if (v->dtype != y->dtype || v->nbytes != row)
            return kernel_errorf(ctx, OG_ERR_INVALID_MODEL, "state %d changed its shape during "
                                 "the scan", k);
        if (row) memcpy((char *)y->data + (size_t)b * row, v->data, row);
    }
    return NULL;
}

static og_status *read_axes_attr(kernel_ctx *ctx, const char *name, int n, int *vals,
                                 int dflt) {
    const int64_t *v;
    int64_t c = graph_attr_ints(ctx->node, name, &v);
    for (int i = 0; i < n; i++) vals[i] = dflt;
    if (c < 0) return NULL;
    if (c != n)
        return kernel_errorf(ctx, OG_ERR_INVALID_MODEL, "%s has %lld entries, expected %d", name,
                             (long long)c, n);
    for (int i = 0; i < n; i++) {
        if (v[i] < -OG_MAX_RANK - 1 || v[i] > OG_MAX_RANK)
            return kernel_errorf(ctx, OG_ERR_INVALID_MODEL, "%s entry %d is %lld", name, i,
                                 (long long)v[i]);
        vals[i] = (int)v[i];
    }
    return NULL;
}

og_status *cpu_scan(kernel_ctx *ctx) {
    scan_job jb;
    memset(&jb, 0, sizeof jb);
    jb.ctx = ctx;
    jb.batched = ctx->opset < 9;
    OG_TRY(cf_graph_attr(ctx, "body", &jb.body));
    int64_t m = graph_attr_int(ctx->node, "num_scan_inputs", -1);
    int n_vals = ctx->n_inputs - jb.batched;
    if (m < 1 || m > n_vals || m > SCAN_MAX)
        return kernel_errorf(ctx, OG_ERR_INVALID_MODEL, "num_scan_inputs is %lld, with %d "
                             "state and scan inputs", (long long)m, n_vals);
    jb.n_in = (int)m;
    jb.n_state = n_vals - jb.n_in;
    jb.n_out = ctx->n_outputs - jb.n_state;
    if (jb.n_state > SCAN_MAX || jb.n_out < 0 || jb.n_out > SCAN_MAX)
        return kernel_errorf(ctx, OG_ERR_UNSUPPORTED, "%d states and %d scan outputs (at most "
                             "%d each)", jb.n_state, jb.n_out, SCAN_MAX);
    if (jb.body->n_inputs != jb.n_state + jb.n_in || jb.body->n_outputs != ctx->n_outputs)
        return kernel_errorf(ctx, OG_ERR_INVALID_MODEL, "the body takes %d inputs and returns "
                             "%d; the node has %d states, %d scan inputs and %d outputs",
                             jb.body->n_inputs, jb.body->n_outputs, jb.n_state, jb.n_in,
                             ctx->n_outputs);
    if (jb.batched) {
        OG_TRY(read_axes_attr(ctx, "directions", jb.n_in, jb.in_dir, 0));
        for (int j = 0; j < jb.n_in; j++) jb.in_axis[j] = 1;
    } else {
        OG_TRY(read_axes_attr(ctx, "scan_input_axes", jb.n_in, jb.in_axis, 0));
        OG_TRY(read_axes_attr(ctx, "scan_input_directions", jb.n_in, jb.in_dir, 0));
        OG_TRY(read_axes_attr(ctx, "scan_output_axes", jb.n_out, jb.out_axis, 0));
        OG_TRY(read_axes_attr(ctx, "scan_output_directions", jb.n_out, jb.out_dir, 0));
    }
    /* Scan inputs: every one has the same length along its scan axis. */
    jb.batch = 1;
    for (int j = 0; j < jb.n_in; j++) {
        const tensor *x = ctx->inputs[jb.batched + jb.n_state + j];
        if (!x) return kernel_errorf(ctx, OG_ERR_INVALID_MODEL, "scan input %d is missing", j);
        int a = jb.in_axis[j] < 0 ? jb.in_axis[j] + x->rank : jb.in_axis[j];
        if (a < jb.batched || a >= x->rank)
            return kernel_errorf(ctx, OG_ERR_INVALID_ARGUMENT, "scan input %d has rank %d, "
                                 "no axis %d to scan", j, x->rank, jb.in_axis[j]);
        jb.in_axis[j] = a;
        jb.in[j] = x;
        if (j == 0) {
            jb.len = x->dims[a];
            if (jb.batched) jb.batch = x->dims[0];
        } else if (x->dims[a] != jb.len || (jb.batched && x->dims[0] != jb.batch)) {
            return kernel_errorf(ctx, OG_ERR_INVALID_ARGUMENT, "scan input %d has length %lld "
                                 "along its scan axis, input 0 %lld (or batch sizes differ)",
                                 j, (long long)x->dims[a], (long long)jb.len);
        }
    }
    const tensor *lens = jb.batched ? ctx->inputs[0] : NULL;
    if (lens && (lens->dtype != OG_INT64 || tensor_count(lens) != jb.batch))
        return kernel_errorf(ctx, OG_ERR_INVALID_ARGUMENT, "sequence_lens is %s with %lld "
                             "elements, expected int64 with one per batch row (%lld)",
                             og_dtype_name(lens->dtype), (long long)tensor_count(lens),
                             (long long)jb.batch);
    /* A row that iterates goes first: its first iteration shapes the outputs. */
    int64_t first = 0;
    for (int64_t b = 0; b < jb.batch; b++) {
        int64_t len = lens ? ((const int64_t *)lens->data)[b] : jb.len;
        if (len < 0 || len > jb.len)
            return kernel_errorf(ctx, OG_ERR_INVALID_ARGUMENT, "sequence_lens[%lld] is %lld, "
                                 "outside [0, %lld]", (long long)b, (long long)len,
                                 (long long)jb.len);
        if (len == 0 && first == b) first = b + 1;
    }
    if (first >= jb.batch) first = 0;
    for (int64_t i = 0; i < jb.batch; i++) {
        int64_t b = i == 0 ? first : i <= first ? i - 1 : i;
        OG_TRY(scan_row(&jb, b, lens ? ((const int64_t *)lens->data)[b] : jb.len));
    }
    if (!jb.have_out) OG_TRY(make_outputs(&jb, NULL)); /* a batch of zero rows */
    return NULL;
}
