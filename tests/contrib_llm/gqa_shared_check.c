/* Runs GroupQueryAttention decode loops whose past and present caches are one buffer, the
 * way the generator drives a model with past_present_share_buffer: every data set of a
 * case is one step, the caches persist across steps and are bound both as the past input
 * and as the present output of the run. Expected values come from onnxruntime run the same
 * way (make_cases.py); shared.txt lists "input_index output_index" pairs. A case with a
 * file nan_matches_any leaves the elements whose expected value is NaN uncompared (rows of
 * a cache that its contract leaves unspecified).
 *
 * usage: gqa-shared-check [--backend native|ort] DIR (a folder of cases); exit 0 when
 *        every step matches (--backend ort: the same binding through onnxruntime's C API,
 *        which must also write present into past's buffer; exit 77 when no onnxruntime
 *        library can be loaded). --except SUBSTR leaves out the cases whose name has it.
 *        gqa-shared-check --bench ITERS [--threads N] DIR: also times ITERS runs of each
 *        case's first step (rerunning a step rewrites the same cache rows). */
#include "onnx_genai.h"

#include "base/half.h"
#include "base/tensor.h"
#include "onnx/loader.h"

#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

enum { MAXIO = 16, MAXPAIR = 4 };

static int bench_iters, n_threads;
static og_backend backend = OG_BACKEND_NATIVE;
static const char *except; /* --except SUBSTR: cases whose name has it are skipped, loudly */
static bool nan_matches_any; /* of the case being run */

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static double elem(const tensor *t, int64_t i) {
    switch (t->dtype) {
    case OG_FLOAT32: return ((const float *)t->data)[i];
    case OG_FLOAT16: return f16_to_f32(((const uint16_t *)t->data)[i]);
    case OG_BFLOAT16: return bf16_to_f32(((const uint16_t *)t->data)[i]);
    default: return NAN;
    }
}

static int compare(const char *what, og_dtype dt, const int64_t *dims, int rank, const void *data,
                   const tensor *want, double rtol, double atol) {
    tensor got = {0};
    if (dt != want->dtype || rank != want->rank ||
        memcmp(dims, want->dims, sizeof(int64_t) * (size_t)rank) != 0) {
        printf("  %s: dtype or shape differs from the expected\n", what);
        return 1;
    }
    got.dtype = dt;
    got.data = (void *)data;
    int64_t n = tensor_count(want);
    for (int64_t i = 0; i < n; i++) {
        double g = elem(&got, i), w = elem(want, i);
        if (nan_matches_any && isnan(w)) continue;
        if (!(fabs(g - w) <= atol + rtol * fabs(w))) {
            printf("  %s: element %lld is %.9g, expected %.9g\n", what, (long long)i, g, w);
            return 1;
        }
    }
    return 0;
}

static int run_case(const char *dir) {
    char p[4096];
    int pairs[MAXPAIR][2], np = 0, fails = 0;
    double rtol = 1e-4, atol = 1e-5;
    snprintf(p, sizeof p, "%s/shared.txt", dir);
    FILE *f = fopen(p, "r");
    if (!f) return 0; /* not a shared-buffer case */
    while (np < MAXPAIR && fscanf(f, "%d %d", &pairs[np][0], &pairs[np][1]) == 2) np++;
    fclose(f);
    snprintf(p, sizeof p, "%s/nan_matches_any", dir);
    struct stat marker;
    nan_matches_any = stat(p, &marker) == 0;
    snprintf(p, sizeof p, "%s/tolerance.txt", dir);
    if ((f = fopen(p, "r"))) {
        if (fscanf(f, "%lf %lf", &rtol, &atol) != 2) rtol = 1e-4, atol = 1e-5;
        fclose(f);
    }
    og_session *s = NULL;
    snprintf(p, sizeof p, "%s/model.onnx", dir);
    og_session_options opt = og_session_options_default();
    opt.num_threads = n_threads;
    opt.backend = backend;
    og_status *st = og_session_open(p, &opt, &s);
    if (st && backend == OG_BACKEND_ORT && strstr(og_status_message(st), "is not available")) {
        printf("SKIP: %s\n", og_status_message(st));
        og_status_free(st);
        return -1;
    }
    tensor buf[MAXPAIR] = {{0}};
    size_t ni = s ? og_session_input_count(s) : 0, no = s ? og_session_output_count(s) : 0;
    if (!st && (ni > MAXIO || no > MAXIO)) st = og_errorf(OG_ERR_UNSUPPORTED, "too many inputs");
    for (int step = 0; !st; step++) {
        char set[4096];
        snprintf(set, sizeof set, "%s/test_data_set_%d", dir, step);
        struct stat sb;
        if (stat(set, &sb) != 0) break;
        tensor in[MAXIO] = {{0}}, want[MAXIO] = {{0}};
        og_tensor *inp[MAXIO] = {0}, *out[MAXIO] = {0}, *wrapped[MAXIO] = {0};
        const char *in_names[MAXIO], *out_names[MAXIO];
        size_t n_in = 0;
        for (size_t i = 0; i < ni && !st; i++) {
            og_value_info info;
            if ((st = og_session_input_info(s, i, &info))) break;
            snprintf(p, sizeof p, "%s/input_%zu.pb", set, i);
            if ((st = onnx_read_tensor_file(p, &in[i], NULL))) break;
            int pi = -1;
            for (int k = 0; k < np; k++)
                if (pairs[k][0] == (int)i) pi = k;
            if (pi >= 0 && step == 0) {
                /* the persistent cache, seeded from the first step's past */
                buf[pi] = in[i];
                in[i] = (tensor){0};
            }
            if (pi >= 0) {
                st = og_tensor_wrap(buf[pi].dtype, buf[pi].dims, buf[pi].rank, buf[pi].data,
                                    buf[pi].nbytes, &wrapped[i]);
                inp[n_in] = wrapped[i];
            } else {
                inp[n_in] = &in[i];
            }
            in_names[n_in++] = info.name;
        }
        for (size_t o = 0; o < no && !st; o++) {
            og_value_info info;
            if ((st = og_session_output_info(s, o, &info))) break;
            out_names[o] = info.name;
            snprintf(p, sizeof p, "%s/output_%zu.pb", set, o);
            if ((st = onnx_read_tensor_file(p, &want[o], NULL))) break;
            for (int k = 0; k < np && !st; k++)
                if (pairs[k][1] == (int)o)
                    st = og_tensor_wrap(buf[k].dtype, buf[k].dims, buf[k].rank, buf[k].data,
                                        buf[k].nbytes, &out[o]);
        }
        if (!st && bench_iters > 0 && step == 0) {
            og_tensor *tmp[MAXIO] = {0};
            for (size_t o = 0; o < no; o++) tmp[o] = out[o];
            st = og_session_run(s, in_names, inp, n_in, out_names, tmp, no); /* warm-up */
            double t0 = now_s();
            for (int it = 0; it < bench_iters && !st; it++) {
                for (size_t o = 0; o < no; o++)
                    if (tmp[o] != out[o]) og_tensor_free(tmp[o]), tmp[o] = out[o];
                st = og_session_run(s, in_names, inp, n_in, out_names, tmp, no);
            }
            double dt = (now_s() - t0) / bench_iters;
            for (size_t o = 0; o < no; o++)
                if (tmp[o] != out[o]) og_tensor_free(tmp[o]);
            printf("BENCH %s: %.1f us per run\n", dir, dt * 1e6);
        }
        if (!st) st = og_session_run(s, in_names, inp, n_in, out_names, out, no);
        for (size_t o = 0; o < no && !st; o++) {
            char what[256];
            snprintf(what, sizeof what, "%s step %d output '%s'", dir, step, out_names[o]);
            fails += compare(what, og_tensor_dtype(out[o]), og_tensor_dims(out[o]),
                             og_tensor_rank(out[o]), og_tensor_data(out[o]), &want[o], rtol, atol);
        }
        for (size_t i = 0; i < MAXIO; i++) {
            tensor_release(&in[i]);
            tensor_release(&want[i]);
            og_tensor_free(out[i]);
            og_tensor_free(wrapped[i]);
        }
        printf("%s %s step %d\n", fails ? "FAIL" : "PASS", dir, step);
        if (fails) break;
    }
    if (st) {
        printf("FAIL %s: %s\n", dir, og_status_message(st));
        og_status_free(st);
        fails++;
    }
    for (int k = 0; k < np; k++) tensor_release(&buf[k]);
    og_session_close(s);
    return fails;
}

int main(int argc, char **argv) {
    const char *dir = NULL;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--bench") == 0 && i + 1 < argc) bench_iters = atoi(argv[++i]);
        else if (strcmp(argv[i], "--threads") == 0 && i + 1 < argc) n_threads = atoi(argv[++i]);
        else if (strcmp(argv[i], "--except") == 0 && i + 1 < argc) except = argv[++i];
        else if (strcmp(argv[i], "--backend") == 0 && i + 1 < argc)
            backend = strcmp(argv[++i], "ort") == 0 ? OG_BACKEND_ORT : OG_BACKEND_NATIVE;
        else dir = argv[i];
    }
    if (!dir) {
        fprintf(stderr, "usage: gqa-shared-check [--bench ITERS] [--threads N] "
                        "[--backend native|ort] DIR\n");
        return 2;
    }
    DIR *d = opendir(dir);
    if (!d) {
        fprintf(stderr, "gqa-shared-check: cannot open %s\n", dir);
        return 2;
    }
    int fails = 0, cases = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.') continue;
        if (except && strstr(e->d_name, except)) {
            printf("SKIP %s/%s: excluded by --except %s\n", dir, e->d_name, except);
            continue;
        }
        char p[4096];
        snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
        int r = run_case(p);
        if (r < 0) { /* no onnxruntime to load */
            closedir(d);
            return 77;
        }
        fails += r;
        cases++;
    }
    closedir(d);
    printf("gqa-shared-check: %d cases, %d failed\n", cases, fails);
    return fails || cases == 0 ? 1 : 0;
}
