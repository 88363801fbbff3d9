/* Runs ONNX's backend node tests (written to a folder by tools/onnx_node_tests.py).
 *
 *   node-tests DIR [--op OP] [--case SUBSTR] [--threads N] [--strict] [-v]
 *
 * Sessions run on one thread unless --threads asks for a pool (suites of larger cases
 * use it to cover the kernels' parallel paths against the same oracle). --strict counts
 * a skipped case as a failure, for suites written for ops we claim in full.
 * A case runs when every op in its model has a kernel. Each output is compared with
 * ONNX's expected output at the case's tolerances (|got - want| <= atol + rtol*|want|;
 * an expected NaN or ±inf must be matched exactly; integers, bools and strings
 * exactly). Cases that need an op or dtype we do not implement are skipped with the
 * reason; every skip is listed. Prints a per-op table and ends with "N passed, M failed, K skipped"; exits
 * 1 if anything failed.
 *
 * One tolerance rule of our own: for float16/bfloat16 outputs of multi-node cases
 * (ONNX's "_expanded" function bodies) the allowed relative error is at least four
 * units in the last place of the output dtype. ONNX's reference rounds every
 * intermediate of those chains (up to 69 ops) to the narrow type in its own order,
 * while our kernels compute each op in float32 and round once, so the two drift apart
 * by a few ulps. Measured on test_attention_4d_causal_fp16_expanded: our output is
 * 3.96e-4 from a float64 evaluation of the same attention, ONNX's expected output
 * 4.91e-4, and the two differ by 2 ulps; ONNX's rtol there (1e-3) is below 2 ulps.
 * Single-op cases keep ONNX's tolerances unchanged. */
#include "onnx_genai.h"

#include "base/tensor.h"
#include "onnx/loader.h"
#include "runtime/og_session.h"

#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

typedef enum { R_PASS, R_FAIL, R_SKIP } result;

typedef struct op_row {
    char op[64];
    int pass, fail, skip;
} op_row;

static op_row rows[512];
static int n_rows;
static bool verbose;

static op_row *row_for(const char *op) {
    for (int i = 0; i < n_rows; i++)
        if (strcmp(rows[i].op, op) == 0) return &rows[i];
    if (n_rows == 512) return &rows[511];
    snprintf(rows[n_rows].op, sizeof rows[n_rows].op, "%s", op);
    return &rows[n_rows++];
}

static bool file_exists(const char *p) {
    struct stat st;
    return stat(p, &st) == 0;
}

static char *read_small(const char *p) {
    FILE *f = fopen(p, "r");
    if (!f) return NULL;
    static char buf[1024];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = 0;
    char *nl = strchr(buf, '\n');
    if (nl) *nl = 0;
    return buf;
}

static bool is_float(og_dtype d) {
    return d == OG_FLOAT32 || d == OG_FLOAT64 || d == OG_FLOAT16 || d == OG_BFLOAT16;
}

/* Compares got with want; on mismatch writes a reason into msg. */
static bool compare(const tensor *got, const tensor *want, double rtol, double atol,
                    bool ulp_floor, char *msg, size_t size) {
    char a[160], b[160];
    if (got->dtype != want->dtype) {
        snprintf(msg, size, "dtype %s, expected %s", og_dtype_name(got->dtype),
                 og_dtype_name(want->dtype));
        return false;
    }
    if (got->rank != want->rank ||
        memcmp(got->dims, want->dims, sizeof(int64_t) * (size_t)got->rank) != 0) {
        snprintf(msg, size, "shape %s, expected %s", shape_str(got->dims, got->rank, a, sizeof a),
                 shape_str(want->dims, want->rank, b, sizeof b));
        return false;
    }
    int64_t n = tensor_count(want);
    if (want->dtype == OG_STRING) {
        const og_string *g = got->data, *w = want->data;
        for (int64_t i = 0; i < n; i++)
            if (!og_string_eq(g[i], w[i])) {
                snprintf(msg, size, "element %lld is \"%.*s\" (%zu bytes), expected \"%.*s\" "
                         "(%zu bytes)", (long long)i, (int)(g[i].size > 60 ? 60 : g[i].size),
                         g[i].data ? g[i].data : "", g[i].size,
                         (int)(w[i].size > 60 ? 60 : w[i].size), w[i].data ? w[i].data : "",
                         w[i].size);
                return false;
            }
        return true;
    }
    if (!is_float(want->dtype)) {
        if (og_dtype_bits(want->dtype) == 4 || dtype_size(want->dtype) == 0) {
            if (memcmp(got->data, want->data, want->nbytes) != 0) {
                snprintf(msg, size, "bytes differ");
                return false;
            }
            return true;
        }
        for (int64_t i = 0; i < n; i++) {
            int64_t g = tensor_get_i64(got, i), w = tensor_get_i64(want, i);
            if (g != w) {
                snprintf(msg, size, "element %lld is %lld, expected %lld", (long long)i,
                         (long long)g, (long long)w);
                return false;
            }
        }
        return true;
    }
    if (ulp_floor && want->dtype == OG_FLOAT16 && rtol < 4 * 0x1p-10) rtol = 4 * 0x1p-10;
    if (ulp_floor && want->dtype == OG_BFLOAT16 && rtol < 4 * 0x1p-7) rtol = 4 * 0x1p-7;
    for (int64_t i = 0; i < n; i++) {
        double g = tensor_get_f64(got, i), w = tensor_get_f64(want, i);
        /* A non-finite expectation is matched exactly: with w = ±inf the tolerance
         * atol + rtol*|w| is itself infinite and would accept any finite g. */
        bool ok = isnan(w) ? isnan(g) : isinf(w) ? g == w : fabs(g - w) <= atol + rtol * fabs(w);
        if (!ok) {
            snprintf(msg, size, "element %lld is %.9g, expected %.9g (rtol %g, atol %g)",
                     (long long)i, g, w, rtol, atol);
            return false;
        }
    }
    return true;
}

/* Runs one data set of a case. */
static result run_set(og_session *s, const char *setdir, double rtol, double atol, char *msg,
                      size_t size) {
    size_t ni = og_session_input_count(s), no = og_session_output_count(s);
    tensor *in = calloc(ni + 1, sizeof *in), *want = calloc(no + 1, sizeof *want);
    og_tensor **inp = calloc(ni + 1, sizeof *inp), **out = calloc(no + 1, sizeof *out);
    const char **in_names = calloc(ni + 1, sizeof *in_names), **out_names = calloc(no + 1, sizeof *out_names);
    result r = R_FAIL;
    og_status *st = NULL;
    size_t n_in = 0;
    char p[4096];
    for (size_t i = 0; i < ni; i++) {
        snprintf(p, sizeof p, "%s/input_%zu.pb", setdir, i);
        og_value_info info;
        st = og_session_input_info(s, i, &info);
        if (st) goto out;
        if (!file_exists(p)) continue; /* an optional input the case leaves out */
        if ((st = onnx_read_tensor_file(p, &in[n_in], NULL))) goto out;
        inp[n_in] = &in[n_in];
        in_names[n_in] = info.name;
        n_in++;
    }
    for (size_t i = 0; i < no; i++) {
        og_value_info info;
        if ((st = og_session_output_info(s, i, &info))) goto out;
        out_names[i] = info.name;
        snprintf(p, sizeof p, "%s/output_%zu.pb", setdir, i);
        if ((st = onnx_read_tensor_file(p, &want[i], NULL))) goto out;
    }
    if ((st = og_session_run(s, in_names, inp, n_in, out_names, out, no))) goto out;
    r = R_PASS;
    for (size_t i = 0; i < no; i++) {
        char m[512];
        if (!compare(out[i], &want[i], rtol, atol, runtime_session_graph(s)->n_nodes > 1, m, sizeof m)) {
            snprintf(msg, size, "output '%s': %s", out_names[i], m);
            r = R_FAIL;
            break;
        }
    }
out:
    if (st) {
        r = og_status_code(st) == OG_ERR_UNSUPPORTED ? R_SKIP : R_FAIL;
        snprintf(msg, size, "%s", og_status_message(st));
        og_status_free(st);
    }
    for (size_t i = 0; i < ni; i++) tensor_release(&in[i]);
    for (size_t i = 0; i < no; i++) {
        tensor_release(&want[i]);
        og_tensor_free(out[i]);
    }
    free(in);
    free(want);
    free(inp);
    free(out);
    free(in_names);
    free(out_names);
    return r;
}

/* The op a case is filed under: its single node's op, or "(multi-node)" groups. */
static void case_op(const og_session *s, char *op, size_t size, bool *has_op, const char *want_op) {
    const graph *g = runtime_session_graph(s);
    *has_op = want_op == NULL;
    const char *first = NULL;
    int real = 0;
    for (int i = 0; i < g->n_nodes; i++) {
        const char *t = g->nodes[i].op_type;
        if (want_op && strcmp(t, want_op) == 0) *has_op = true;
        if (strcmp(t, "Constant") == 0) continue;
        if (!first) first = t;
        real++;
    }
    if (real <= 1) snprintf(op, size, "%s", first ? first : "(no nodes)");
    else snprintf(op, size, "%s+ (%d nodes)", first, real);
}

static int cmp_str(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

int main(int argc, char **argv) {
    const char *dir = NULL, *want_op = NULL, *want_case = NULL;
    int threads = 1;
    bool strict = false;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--op") == 0 && i + 1 < argc) want_op = argv[++i];
        else if (strcmp(argv[i], "--case") == 0 && i + 1 < argc) want_case = argv[++i];
        else if (strcmp(argv[i], "--threads") == 0 && i + 1 < argc) threads = atoi(argv[++i]);
        else if (strcmp(argv[i], "--strict") == 0) strict = true;
        else if (strcmp(argv[i], "-v") == 0) verbose = true;
        else dir = argv[i];
    }
    if (!dir) {
        fprintf(stderr, "usage: node-tests DIR [--op OP] [--case SUBSTR] [--threads N] [--strict] "
                        "[-v]\n");
        return 2;
    }
    DIR *d = opendir(dir);
    if (!d) {
        fprintf(stderr, "node-tests: cannot open %s: no node test data. Write it with "
                        "`python3 tools/onnx_node_tests.py %s`\n", dir, dir);
        return 2;
    }
    char **names = NULL;
    size_t n_names = 0, cap = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (strncmp(e->d_name, "test_", 5) != 0) continue;
        if (want_case && !strstr(e->d_name, want_case)) continue;
        if (n_names == cap) {
            cap = cap ? cap * 2 : 1024;
            names = realloc(names, cap * sizeof *names);
        }
        names[n_names++] = strdup(e->d_name);
    }
    closedir(d);
    qsort(names, n_names, sizeof *names, cmp_str);
    int passed = 0, failed = 0, skipped = 0;
    og_session_options opts = og_session_options_default();
    opts.num_threads = threads > 0 ? threads : 1;
    opts.backend = OG_BACKEND_NATIVE; /* these test our kernels: a missing one is a skip */
    for (size_t c = 0; c < n_names; c++) {
        char p[4096], msg[1024] = "", op[96] = "?";
        snprintf(p, sizeof p, "%s/%s/skip.txt", dir, names[c]);
        result r;
        if (file_exists(p)) {
            if (want_op) continue;
            r = R_SKIP;
            snprintf(msg, sizeof msg, "%s", read_small(p));
            snprintf(op, sizeof op, "(data)");
        } else {
            double rtol = 1e-3, atol = 1e-7;
            snprintf(p, sizeof p, "%s/%s/tolerance.txt", dir, names[c]);
            char *tol = read_small(p);
            if (tol) sscanf(tol, "%lf %lf", &rtol, &atol);
            snprintf(p, sizeof p, "%s/%s/model.onnx", dir, names[c]);
            og_session *s = NULL;
            og_status *st = og_session_open(p, &opts, &s);
            if (st) {
                if (want_op) { /* file it by op only when we can tell it matches */
                    og_status_free(st);
                    continue;
                }
                r = og_status_code(st) == OG_ERR_UNSUPPORTED ? R_SKIP : R_FAIL;
                snprintf(msg, sizeof msg, "%s", og_status_message(st));
                og_status_free(st);
                snprintf(op, sizeof op, "(unsupported)");
                if (r == R_FAIL) snprintf(op, sizeof op, "(load)");
            } else {
                bool has_op;
                case_op(s, op, sizeof op, &has_op, want_op);
                if (!has_op) {
                    og_session_close(s);
                    continue;
                }
                r = R_PASS;
                for (int k = 0; r == R_PASS; k++) {
                    snprintf(p, sizeof p, "%s/%s/test_data_set_%d", dir, names[c], k);
                    if (!file_exists(p)) break;
                    r = run_set(s, p, rtol, atol, msg, sizeof msg);
                }
                og_session_close(s);
            }
        }
        op_row *row = row_for(op);
        if (r == R_PASS) {
            passed++;
            row->pass++;
            if (verbose) printf("ok   %s\n", names[c]);
        } else if (r == R_FAIL) {
            failed++;
            row->fail++;
            printf("FAIL %s: %s\n", names[c], msg);
        } else {
            skipped++;
            row->skip++;
            printf("SKIP %s: %s\n", names[c], msg);
        }
        fflush(stdout);
    }
    printf("\n%-40s %6s %6s %6s\n", "op", "pass", "fail", "skip");
    for (int i = 0; i < n_rows; i++)
        printf("%-40s %6d %6d %6d\n", rows[i].op, rows[i].pass, rows[i].fail, rows[i].skip);
    printf("\n%d passed, %d failed, %d skipped\n", passed, failed, skipped);
    for (size_t c = 0; c < n_names; c++) free(names[c]);
    free(names);
    return failed || (strict && skipped) ? 1 : 0;
}
