/* Einsum, general form: every label gets a size and, per operand, a stride (a label
 * repeated within one term adds its strides, which walks the diagonal; a broadcast size-1
 * dimension gets stride 0). Output labels index the result; the remaining labels are
 * summed by an odometer whose innermost label runs as a plain strided loop. Operands are
 * read as double, so one path serves every dtype. Ellipsis dimensions become labels
 * numbered after the 52 letters.
 *
 * Two float operands without diagonals, broadcasting or one-sided sums are contractions:
 * they are permuted into [batch, M, K] and [batch, K, N], multiplied with gemm_f32 and
 * the [batch, M, N] result permuted into the output order. */
#include "backends/native/kernels/matmul/matmul.h"
#include "backends/native/kernels/kernel_util.h"
#include "backends/native/kernels/matmul/gemm_f32.h"

#include <string.h>

enum { EIN_MAX_IN = 8, EIN_LETTERS = 52, EIN_MAX_LABELS = EIN_LETTERS + OG_MAX_RANK };

typedef struct ein_job {
    int nin, no, ns;
    const double *in[EIN_MAX_IN];
    int64_t odims[OG_MAX_RANK], sdims[EIN_MAX_LABELS];
    int64_t ostr[EIN_MAX_IN][OG_MAX_RANK], sstr[EIN_MAX_IN][EIN_MAX_LABELS];
    double *y;
} ein_job;

static void ein_outputs(void *arg, int64_t b, int64_t e) {
    const ein_job *j = arg;
    int ns = j->ns, last = ns - 1;
    int64_t inner = ns ? j->sdims[last] : 1;
    for (int64_t o = b; o < e; o++) {
        int64_t off[EIN_MAX_IN], idx[EIN_MAX_LABELS] = {0};
        for (int k = 0; k < j->nin; k++) off[k] = cpu_offset_of(o, j->no, j->odims, j->ostr[k]);
        double acc = 0;
        for (;;) {
            for (int64_t t = 0; t < inner; t++) {
                double p = 1;
                for (int k = 0; k < j->nin; k++)
                    p *= j->in[k][off[k] + (ns ? t * j->sstr[k][last] : 0)];
                acc += p;
            }
            int d = last - 1; /* advance the outer summed labels */
            for (; d >= 0; d--) {
                for (int k = 0; k < j->nin; k++) off[k] += j->sstr[k][d];
                if (++idx[d] < j->sdims[d]) break;
                for (int k = 0; k < j->nin; k++) off[k] -= j->sstr[k][d] * j->sdims[d];
                idx[d] = 0;
            }
            if (d < 0) break;
        }
        j->y[o] = acc;
    }
}

static int ein_letter(char c) {
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return 26 + c - 'a';
    return -1;
}

/* Parses one term into labels; "..." expands to the ell_rank labels that end at
 * EIN_LETTERS + max_ell (ellipses align at the right, like broadcasting). */
static og_status *ein_term(const kernel_ctx *ctx, const char *s, size_t len, int rank,
                           bool is_out, int max_ell, int *labels, int *n, int *ell) {
    int letters = 0, dots = 0;
    for (size_t i = 0; i < len; i++) {
        if (s[i] == '.') dots++;
        else if (ein_letter(s[i]) >= 0) letters++;
        else
            return kernel_errorf(ctx, OG_ERR_INVALID_MODEL, "equation has an invalid "
                                 "character '%c'", s[i]);
    }
    if (dots != 0 && dots != 3)
        return kernel_error(ctx, OG_ERR_INVALID_MODEL, "equation has a broken ellipsis");
    int e = dots ? (is_out ? max_ell : rank - letters) : 0;
    if (e < 0 || (!is_out && letters + e != rank) || letters + e > OG_MAX_RANK)
        return kernel_errorf(ctx, OG_ERR_INVALID_ARGUMENT, "term '%.*s' does not match an "
                             "operand of rank %d", (int)len, s, rank);
    *n = 0;
    *ell = e;
    for (size_t i = 0; i < len; i++) {
        if (s[i] == '.') {
            if (s[i + 1] == '.') continue;
            for (int k = 0; k < e; k++) labels[(*n)++] = EIN_LETTERS + max_ell - e + k;
        } else {
            labels[(*n)++] = ein_letter(s[i]);
        }
    }
    return NULL;
}

/* dst (contiguous, dims[0..n)) = src read with strides str. */
static void ein_gather(float *dst, const float *src, int n, const int64_t *dims,
                       const int64_t *str) {
    int64_t total = cpu_dims_prod(dims, 0, n), inner = n ? dims[n - 1] : 1;
    int64_t is = n ? str[n - 1] : 0;
    for (int64_t o = 0; o < total; o += inner) {
        const float *p = src + cpu_offset_of(o / inner, n - 1, dims, str);
        for (int64_t i = 0; i < inner; i++) *dst++ = p[i * is];
    }
}

/* The gemm path; *done stays false when the equation is not a plain contraction. */
static og_status *ein_matmul(kernel_ctx *ctx, int (*lab)[OG_MAX_RANK], const int *nl,
                             const int *olab, int no, const int64_t *size, bool *done) {
    int64_t lstr[2][EIN_MAX_LABELS] = {{0}};
    bool in[3][EIN_MAX_LABELS] = {{0}};
    for (int k = 0; k < 2; k++) {
        const tensor *t = ctx->inputs[k];
        if (t->dtype != OG_FLOAT32 && t->dtype != OG_FLOAT16 && t->dtype != OG_BFLOAT16)
            return NULL;
        int64_t st = 1;
        for (int d = nl[k] - 1; d >= 0; d--) {
            int l = lab[k][d];
            if (in[k][l] || t->dims[d] != size[l]) return NULL;
            in[k][l] = true, lstr[k][l] = st, st *= t->dims[d];
        }
    }
    for (int d = 0; d < no; d++) in[2][olab[d]] = true;
    /* label lists per role: 0 batch, 1 M, 2 N, 3 K */
    int role[4][EIN_MAX_LABELS], nr[4] = {0};
    int64_t ext[4] = {1, 1, 1, 1};
    for (int l = 0; l < EIN_MAX_LABELS; l++) {
        bool a = in[0][l], b = in[1][l], o = in[2][l];
        if (!a && !b) continue;
        int r = a && b ? (o ? 0 : 3) : !o ? -1 : a ? 1 : 2;
        if (r < 0) return NULL;
        role[r][nr[r]++] = l, ext[r] *= size[l];
    }
    const int order[2][3] = {{0, 1, 3}, {0, 3, 2}}; /* A as [B,M,K], B as [B,K,N] */
    float *op[2];
    for (int k = 0; k < 2; k++) {
        const float *src;
        OG_TRY(cpu_in_f32(ctx, k, &src));
        int64_t dims[EIN_MAX_LABELS], str[EIN_MAX_LABELS];
        int n = 0;
        for (int q = 0; q < 3; q++)
            for (int i = 0; i < nr[order[k][q]]; i++) {
                int l = role[order[k][q]][i];
                dims[n] = size[l], str[n++] = lstr[k][l];
            }
        int64_t cnt = cpu_dims_prod(dims, 0, n);
        OG_TRY(kernel_scratch(ctx, (size_t)cnt * sizeof(float) + 1, (void **)&op[k]));
        ein_gather(op[k], src, n, dims, str);
    }
    int64_t nb = ext[0], M = ext[1], N = ext[2], K = ext[3];
    float *c;
    OG_TRY(kernel_scratch(ctx, (size_t)(nb * M * N) * sizeof(float) + 1, (void **)&c));
    gemm_f32_args g = {.M = M, .N = N, .K = K, .alpha = 1, .lda = K, .ldb = N, .ldc = N};
    void *work = NULL;
    size_t need = gemm_f32_work_size(&g);
    if (need && nb * M * N * K != 0) OG_TRY(kernel_scratch(ctx, need, &work));
    for (int64_t b = 0; b < nb && M * N != 0; b++) {
        g.A = op[0] + b * M * K, g.B = op[1] + b * K * N, g.C = c + b * M * N;
        if (K) OG_TRY(gemm_f32(ctx->pool, &g, work));
        else memset(g.C, 0, (size_t)(M * N) * sizeof(float));
    }
    /* strides of each label in c = [batch..., M..., N...] */
    int64_t cstr[EIN_MAX_LABELS], st = 1, od[OG_MAX_RANK], ostr[OG_MAX_RANK];
    const int corder[3] = {2, 1, 0};
    for (int q = 0; q < 3; q++)
        for (int i = nr[corder[q]] - 1; i >= 0; i--) {
            int l = role[corder[q]][i];
            cstr[l] = st, st *= size[l];
        }
    for (int d = 0; d < no; d++) od[d] = size[olab[d]], ostr[d] = cstr[olab[d]];
    tensor *y;
    float *yf;
    OG_TRY(kernel_output(ctx, 0, ctx->inputs[0]->dtype, no, od, &y));
    OG_TRY(cpu_out_f32(ctx, y, &yf));
    if (tensor_count(y)) ein_gather(yf, c, no, od, ostr);
    cpu_out_f32_done(y, yf);
    *done = true;
    return NULL;
}

og_status *cpu_einsum(kernel_ctx *ctx) {
    const char *eq = graph_attr_string(ctx->node, "equation", NULL);
    if (!eq) return kernel_error(ctx, OG_ERR_INVALID_MODEL, "attribute 'equation' is missing");
    int nin = ctx->n_inputs;
    if (nin < 1 || nin > EIN_MAX_IN)
        return kernel_errorf(ctx, OG_ERR_UNSUPPORTED, "has %d inputs; 1 to %d are supported",
                             nin, EIN_MAX_IN);
    OG_TRY(kernel_require_inputs(ctx, nin));
    char buf[256];
    size_t bl = 0;
    for (const char *p = eq; *p; p++)
        if (*p != ' ' && bl + 1 < sizeof buf) buf[bl++] = *p;
    buf[bl] = 0;
    char *arrow = strstr(buf, "->");
    size_t lhs_len = arrow ? (size_t)(arrow - buf) : bl;
    /* Split the left side into terms and find the widest ellipsis. */
    const char *ts[EIN_MAX_IN];
    size_t tl[EIN_MAX_IN];
    int nt = 0, max_ell = 0;
    for (size_t b = 0, i = 0; i <= lhs_len; i++)
        if (i == lhs_len || buf[i] == ',') {
            if (nt == EIN_MAX_IN) nt++;
            if (nt > EIN_MAX_IN) break;
            ts[nt] = buf + b, tl[nt++] = i - b, b = i + 1;
        }
    if (nt != nin)
        return kernel_errorf(ctx, OG_ERR_INVALID_MODEL, "equation '%s' has %d terms for %d "
                             "inputs", eq, nt, nin);
    for (int k = 0; k < nin; k++)
        if (memchr(ts[k], '.', tl[k])) {
            int letters = 0;
            for (size_t i = 0; i < tl[k]; i++) letters += ein_letter(ts[k][i]) >= 0;
            int e = ctx->inputs[k]->rank - letters;
            if (e > max_ell) max_ell = e;
        }
    int lab[EIN_MAX_IN][OG_MAX_RANK], nl[EIN_MAX_IN], ell, count[EIN_MAX_LABELS] = {0};
    int64_t size[EIN_MAX_LABELS];
    for (int l = 0; l < EIN_MAX_LABELS; l++) size[l] = 1;
    for (int k = 0; k < nin; k++) {
        const tensor *t = ctx->inputs[k];
        OG_TRY(ein_term(ctx, ts[k], tl[k], t->rank, false, max_ell, lab[k], &nl[k], &ell));
        for (int d = 0; d < nl[k]; d++) {
            int l = lab[k][d];
            count[l]++;
            if (size[l] != t->dims[d] && size[l] != 1 && t->dims[d] != 1)
                return kernel_errorf(ctx, OG_ERR_INVALID_ARGUMENT, "input %d dimension %d is "
                                     "%lld, but that label has size %lld elsewhere", k, d,
                                     (long long)t->dims[d], (long long)size[l]);
            if (t->dims[d] != 1) size[l] = t->dims[d];
        }
    }
    int olab[OG_MAX_RANK], no = 0;
    if (arrow) {
        const char *rhs = arrow + 2;
        OG_TRY(ein_term(ctx, rhs, strlen(rhs), 0, true, max_ell, olab, &no, &ell));
        for (int d = 0; d < no; d++)
            for (int d2 = 0; d2 < d; d2++)
                if (olab[d] == olab[d2] || !count[olab[d]])
                    return kernel_errorf(ctx, OG_ERR_INVALID_MODEL, "equation '%s' has a bad "
                                         "output term", eq);
    } else { /* implicit: ellipsis dims, then labels seen once, in ASCII order */
        for (int l = EIN_LETTERS; l < EIN_LETTERS + max_ell; l++) olab[no++] = l;
        for (int l = 0; l < EIN_LETTERS; l++)
            if (count[l] == 1) {
                if (no == OG_MAX_RANK)
                    return kernel_error(ctx, OG_ERR_UNSUPPORTED, "output rank is above 8");
                olab[no++] = l;
            }
    }
    if (nin == 2 && ctx->inputs[0]->dtype == ctx->inputs[1]->dtype) {
        bool done = false;
        OG_TRY(ein_matmul(ctx, lab, nl, olab, no, size, &done));
        if (done) return NULL;
    }
    ein_job *j;
    OG_TRY(kernel_scratch(ctx, sizeof *j, (void **)&j));
    memset(j, 0, sizeof *j);
    j->nin = nin, j->no = no;
    bool is_out[EIN_MAX_LABELS] = {0};
    int64_t od[OG_MAX_RANK];
    for (int d = 0; d < no; d++) is_out[olab[d]] = true, od[d] = j->odims[d] = size[olab[d]];
    int slab[EIN_MAX_LABELS];
    for (int l = 0; l < EIN_MAX_LABELS; l++)
        if (count[l] && !is_out[l]) slab[j->ns] = l, j->sdims[j->ns++] = size[l];
    for (int k = 0; k < nin; k++) {
        const tensor *t = ctx->inputs[k];
        OG_TRY(cpu_in_f64(ctx, t, k, (double **)&j->in[k]));
        int64_t st = 1;
        for (int d = t->rank - 1; d >= 0; d--) {
            int64_t s = t->dims[d] == 1 ? 0 : st;
            st *= t->dims[d];
            for (int o = 0; o < no; o++) j->ostr[k][o] += olab[o] == lab[k][d] ? s : 0;
            for (int o = 0; o < j->ns; o++) j->sstr[k][o] += slab[o] == lab[k][d] ? s : 0;
        }
    }
    tensor *y;
    OG_TRY(kernel_output(ctx, 0, ctx->inputs[0]->dtype, no, od, &y));
    int64_t n = tensor_count(y), work = cpu_dims_prod(j->sdims, 0, j->ns);
    if (n == 0) return NULL;
    OG_TRY(kernel_scratch(ctx, (size_t)n * sizeof(double), (void **)&j->y));
    if (work == 0) memset(j->y, 0, (size_t)n * sizeof(double));
    else threadpool_parallel_for(ctx->pool, n, 1 + 16384 / work, ein_outputs, j);
    cpu_store_f64(y, j->y);
    return NULL;
}
