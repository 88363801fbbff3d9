/* onnx-genai infer FILE.onnx --input NAME=PATH.pb ... --output-dir DIR: one graph run on
 * TensorProto files, through the public C API only. */
#include "onnx/loader.h"
#include "cli/cli.h"

#include "onnx_genai.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* Output names may hold '/' or ':'; keep file names flat and portable. */
static void file_name_for(const char *name, char *out, size_t size) {
    size_t o = 0;
    for (const char *p = name; *p && o + 1 < size; p++)
        out[o++] = (*p == '/' || *p == '\\' || *p == ':' || *p == ' ') ? '_' : *p;
    out[o] = 0;
}

/* File names for outputs 0..n: flattened names, made distinct where two flatten alike
 * ('a/b' and 'a_b'): a later one gets "-<output index>" appended, so no output
 * overwrites another. fnames is [n][256]. */
static void distinct_file_names(const char *const *names, size_t n, char (*fnames)[256]) {
    for (size_t i = 0; i < n; i++) {
        file_name_for(names[i], fnames[i], 200);
        for (int round = 0;; round++) {
            bool clash = false;
            for (size_t k = 0; k < i && !clash; k++) clash = !strcmp(fnames[k], fnames[i]);
            if (!clash) break;
            char base[256];
            file_name_for(names[i], base, 200);
            if (round == 0) snprintf(fnames[i], 256, "%s-%zu", base, i);
            else snprintf(fnames[i], 256, "%s-%zu-%d", base, i, round); /* i names: ends */
        }
    }
}

#define INFER_USAGE                                                                              \
    "usage: onnx-genai infer FILE.onnx --input NAME=PATH.pb ... [--output-dir DIR] [--threads N]" \
    " [--backend native|ort|auto] [--ort-lib PATH] [--ep cpu|cuda] [--ort-opt-level LEVEL]"

int cli_infer(int argc, char **argv) {
    const char *path = NULL, *out_dir = ".";
    int threads = 0, rc = 1;
    int n_in = 0;
    const char **names = calloc((size_t)argc, sizeof *names);
    const char **files = calloc((size_t)argc, sizeof *files);
    og_tensor **inputs = calloc((size_t)argc, sizeof *inputs);
    og_tensor **outputs = NULL;
    const char **out_names = NULL;
    char (*fnames)[256] = NULL;
    og_session *s = NULL;
    og_status *st = NULL;
    if (!names || !files || !inputs) {
        rc = cli_fail("infer: out of memory for %d arguments", argc);
        goto done;
    }
    cli_backend be;
    cli_backend_init(&be);
    for (int i = 1; i < argc; i++) {
        int took = cli_backend_arg(argc, argv, &i, &be);
        if (took < 0) {
            rc = -took;
            goto done;
        }
        if (took) continue;
        if ((strcmp(argv[i], "--input") == 0 || strcmp(argv[i], "-i") == 0) && i + 1 < argc) {
            char *eq = strchr(argv[++i], '=');
            if (!eq || eq == argv[i]) {
                rc = cli_fail("--input expects NAME=PATH.pb, got '%s'", argv[i]);
                goto done;
            }
            *eq = 0;
            for (int k = 0; k < n_in; k++)
                if (!strcmp(names[k], argv[i])) {
                    rc = cli_fail("--input %s= is given twice ('%s' and '%s')", argv[i], files[k],
                                  eq + 1);
                    goto done;
                }
            names[n_in] = argv[i];
            files[n_in++] = eq + 1;
        } else if ((strcmp(argv[i], "--output-dir") == 0 || strcmp(argv[i], "-o") == 0) && i + 1 < argc) {
            out_dir = argv[++i];
        } else if (strcmp(argv[i], "--threads") == 0 && i + 1 < argc) {
            if ((rc = cli_int_option("--threads", argv[++i], 0, 4096, &threads))) goto done;
            rc = 1;
        } else if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
            printf(INFER_USAGE "\n"
                   "  --input, -i NAME=PATH.pb   a graph input from a TensorProto file (once per name)\n"
                   "  --output-dir, -o DIR       where each output is written as NAME.pb (default .)\n"
                   "  --threads N                worker threads (0: one per core)\n%s",
                   cli_backend_usage);
            rc = 0;
            goto done;
        } else if (argv[i][0] == '-' || path) {
            rc = cli_fail("infer: unexpected argument '%s'\n" INFER_USAGE, argv[i]);
            goto done;
        } else {
            path = argv[i];
        }
    }
    if (!path) {
        rc = cli_fail("usage: onnx-genai infer FILE.onnx --input NAME=PATH.pb ... [--output-dir DIR]");
        goto done;
    }
    if ((rc = cli_backend_check(&be))) goto done;
    rc = 1;
    og_session_options opts = og_session_options_default();
    opts.num_threads = threads;
    cli_backend_session(&be, &opts);
    if ((st = og_session_open(path, &opts, &s))) goto done;
    if (og_session_warning(s)[0]) fprintf(stderr, "onnx-genai: warning: %s\n", og_session_warning(s));
    for (int i = 0; i < n_in; i++) {
        og_tensor *t = calloc(1, sizeof *t);
        if (!t) {
            rc = cli_fail("infer: out of memory for input %d (%s)", i, names[i]);
            goto done;
        }
        inputs[i] = t;
        if ((st = onnx_read_tensor_file(files[i], t, NULL))) goto done;
    }
    size_t no = og_session_output_count(s);
    outputs = calloc(no + 1, sizeof *outputs);
    out_names = calloc(no + 1, sizeof *out_names);
    if (!outputs || !out_names) {
        rc = cli_fail("infer: out of memory for %zu outputs", no);
        goto done;
    }
    for (size_t i = 0; i < no; i++) {
        og_value_info info;
        if ((st = og_session_output_info(s, i, &info))) goto done;
        out_names[i] = info.name;
    }
    if ((st = og_session_run(s, names, inputs, (size_t)n_in, out_names, outputs, no))) goto done;
    if (mkdir(out_dir, 0777) != 0 && errno != EEXIST) {
        rc = cli_fail("%s: cannot create the output folder: %s", out_dir, strerror(errno));
        goto done;
    }
    fnames = calloc(no + 1, sizeof *fnames);
    if (!fnames) {
        rc = cli_fail("infer: out of memory for %zu output file names", no);
        goto done;
    }
    distinct_file_names(out_names, no, fnames);
    for (size_t i = 0; i < no; i++) {
        char p[4096];
        snprintf(p, sizeof p, "%s/%s.pb", out_dir, fnames[i]);
        if ((st = onnx_write_tensor_file(p, outputs[i], out_names[i]))) goto done;
        char shp[160] = "[";
        size_t o = 1;
        for (int d = 0; d < og_tensor_rank(outputs[i]) && o < sizeof shp; d++)
            o += (size_t)snprintf(shp + o, sizeof shp - o, d ? ",%lld" : "%lld",
                                  (long long)og_tensor_dims(outputs[i])[d]);
        snprintf(shp + o, sizeof shp - o, "]");
        printf("%s: %s %s -> %s\n", out_names[i], og_dtype_name(og_tensor_dtype(outputs[i])), shp, p);
    }
    rc = 0;
done:
    if (st) {
        rc = cli_fail("%s", og_status_message(st));
        og_status_free(st);
    }
    for (int i = 0; inputs && i < n_in; i++) og_tensor_free(inputs[i]);
    if (outputs)
        for (size_t i = 0; i < og_session_output_count(s); i++) og_tensor_free(outputs[i]);
    og_session_close(s);
    free(outputs);
    free(out_names);
    free(fnames);
    free(names);
    free(files);
    free(inputs);
    return rc;
}
