/* The backend options every command that runs a model takes: --backend, --ort-lib,
 * --ep, --ort-opt-level. */
#include "cli/cli.h"

#include <stdio.h>
#include <string.h>

const char cli_backend_usage[] =
    "  --backend native|ort|auto  what runs the graphs (default auto: native when it has a\n"
    "                             kernel for every op, else onnxruntime, with a warning)\n"
    "  --ort-lib PATH             the libonnxruntime.so to load (default: $OG_ORT_LIB, else\n"
    "                             the onnxruntime Python package's)\n"
    "  --ep cpu|cuda              onnxruntime's execution provider (cuda selects onnxruntime\n"
    "                             unless --backend says otherwise)\n"
    "  --ort-opt-level none|basic|extended|all\n"
    "                             onnxruntime's graph optimizations (default: all)\n";

void cli_backend_init(cli_backend *b) {
    memset(b, 0, sizeof *b);
    b->backend = OG_BACKEND_AUTO;
    b->opt_level = -1;
}

int cli_backend_arg(int argc, char **argv, int *i, cli_backend *b) {
    const char *a = argv[*i];
    bool backend = !strcmp(a, "--backend"), lib = !strcmp(a, "--ort-lib"),
         ep = !strcmp(a, "--ep"), level = !strcmp(a, "--ort-opt-level");
    if (!backend && !lib && !ep && !level) return 0;
    if (*i + 1 >= argc) return -cli_fail("%s needs a value", a);
    const char *v = argv[++*i];
    if (backend) {
        if (!strcmp(v, "native")) b->backend = OG_BACKEND_NATIVE;
        else if (!strcmp(v, "ort") || !strcmp(v, "onnxruntime")) b->backend = OG_BACKEND_ORT;
        else if (!strcmp(v, "auto")) b->backend = OG_BACKEND_AUTO;
        else return -cli_fail("--backend: '%s' is not one of native, ort, auto", v);
        b->backend_given = true;
    } else if (lib) {
        b->ort_lib = v;
    } else if (ep) {
        b->ep = v; /* checked against the loaded library, which knows what it has */
    } else {
        static const char *const names[] = {"none", "basic", "extended", "all"};
        static const int values[] = {0, 1, 2, 99};
        int k = 0;
        while (k < 4 && strcmp(v, names[k])) k++;
        if (k == 4) return -cli_fail("--ort-opt-level: '%s' is not one of none, basic, "
                                     "extended, all", v);
        b->opt_level = values[k];
    }
    return 1;
}

og_backend cli_backend_choice(const cli_backend *b) {
    bool device_ep = b->ep && strcmp(b->ep, "cpu") != 0;
    return device_ep && !b->backend_given ? OG_BACKEND_ORT : b->backend;
}

int cli_backend_check(const cli_backend *b) {
    if (b->ep && strcmp(b->ep, "cpu") != 0 && b->backend == OG_BACKEND_NATIVE)
        return cli_fail("--ep %s: the native backend runs on the CPU only (use --backend ort)",
                        b->ep);
    return 0;
}

void cli_backend_session(const cli_backend *b, og_session_options *o) {
    o->backend = cli_backend_choice(b);
    o->ort_library = b->ort_lib;
    o->ort_provider = b->ep;
    o->graph_optimization_level = b->opt_level;
}

void cli_backend_model(const cli_backend *b, og_model_options *o) {
    o->backend = cli_backend_choice(b);
    o->ort_library = b->ort_lib;
    o->ort_provider = b->ep;
    o->graph_optimization_level = b->opt_level;
}
