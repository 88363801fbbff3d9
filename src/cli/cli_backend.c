/* The backend options every command that runs a model takes: --backend, --ort-lib,
 * --ep, --ort-opt-level, and how the KV cache is stored, --kv-dtype. */
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
    "                             onnxruntime's graph optimizations (default: all)\n"
    "  --kv-dtype auto|f32|f16|bf16|int8|fp8\n"
    "                             how the KV cache is stored (default auto: as the package\n"
    "                             declares); int8 and fp8 quantize each position's keys\n"
    "                             and values per head when written (about a quarter of\n"
    "                             float32's memory; native backend)\n";

void cli_backend_init(cli_backend *b) {
    memset(b, 0, sizeof *b);
    b->backend = OG_BACKEND_AUTO;
    b->opt_level = -1;
}

int cli_backend_arg(int argc, char **argv, int *i, cli_backend *b) {
    const char *a = argv[*i];
    bool backend = !strcmp(a, "--backend"), lib = !strcmp(a, "--ort-lib"),
         ep = !strcmp(a, "--ep"), level = !strcmp(a, "--ort-opt-level"),
         kv = !strcmp(a, "--kv-dtype");
    if (!backend && !lib && !ep && !level && !kv) return 0;
    if (*i + 1 >= argc) return -cli_fail("%s needs a value", a);
    const char *v = argv[++*i];
    if (kv) {
        if (cli_kv_dtype(v, &b->kv_dtype)) return -1;
    } else if (backend) {
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

int cli_kv_dtype(const char *v, og_dtype *out) {
    static const struct { const char *name; og_dtype dt; } names[] = {
        {"auto", OG_UNDEFINED}, {"f32", OG_FLOAT32}, {"float32", OG_FLOAT32},
        {"f16", OG_FLOAT16}, {"float16", OG_FLOAT16}, {"bf16", OG_BFLOAT16},
        {"bfloat16", OG_BFLOAT16}, {"int8", OG_INT8}, {"q8", OG_INT8},
        {"fp8", OG_FLOAT8E4M3FN}, {"float8", OG_FLOAT8E4M3FN}};
    for (size_t k = 0; k < sizeof names / sizeof names[0]; k++)
        if (!strcmp(v, names[k].name)) {
            *out = names[k].dt;
            return 0;
        }
    return cli_fail("--kv-dtype: '%s' is not one of auto, f32, f16, bf16, int8, fp8", v);
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
    o->kv_dtype = b->kv_dtype;
    o->ort_library = b->ort_lib;
    o->ort_provider = b->ep;
    o->graph_optimization_level = b->opt_level;
}

void cli_backend_model(const cli_backend *b, og_model_options *o) {
    o->backend = cli_backend_choice(b);
    o->kv_dtype = b->kv_dtype;
    o->ort_library = b->ort_lib;
    o->ort_provider = b->ep;
    o->graph_optimization_level = b->opt_level;
}
