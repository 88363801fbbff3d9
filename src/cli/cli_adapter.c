/* --adapter FILE (generate, run): LoRA adapters (.onnx_adapter) loaded over the model and
 * made active in its generators, as onnxruntime-genai's og.Adapters does. Each file is
 * loaded under its own path as its name; several may be given when their parameters do
 * not overlap. */
#include "cli/cli.h"

#include "base/status.h"

#include <string.h>

const char cli_adapter_usage[] =
    "  --adapter FILE             a LoRA adapter (.onnx_adapter, onnxruntime's format) over\n"
    "                             the model, active in the generation (repeat for more);\n"
    "                             the package must take the adapter's weights as inputs\n";

int cli_adapter_arg(int argc, char **argv, int *i, cli_adapter *a) {
    if (strcmp(argv[*i], "--adapter")) return 0;
    if (*i + 1 >= argc) return -cli_fail("--adapter needs a file (.onnx_adapter)");
    if (a->n == CLI_MAX_ADAPTERS)
        return -cli_fail("--adapter: at most %d adapters", CLI_MAX_ADAPTERS);
    a->files[a->n++] = argv[++*i];
    return 1;
}

og_status *cli_adapter_open(cli_adapter *a, og_model *m) {
    if (!a->n) return NULL;
    OG_TRY(og_adapters_create(m, &a->set));
    for (int k = 0; k < a->n; k++)
        OG_TRY(og_status_wrap(og_adapters_load(a->set, a->files[k], a->files[k]), "--adapter"));
    return NULL;
}

og_status *cli_adapter_activate(const cli_adapter *a, og_generator *g) {
    for (int k = 0; k < a->n; k++)
        OG_TRY(og_status_wrap(og_generator_set_active_adapter(g, a->set, a->files[k]),
                              "--adapter"));
    return NULL;
}

void cli_adapter_close(cli_adapter *a) {
    og_adapters_free(a->set);
    a->set = NULL;
}
