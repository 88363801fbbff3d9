/* libFuzzer target: any byte string given as genai_config.json must parse into a config
 * or fail with a message, never crash, leak or read out of bounds; a config that parses
 * is then read the way model.c and show read it (name templates formatted for a few
 * layers, path keys joined). */
#include "base/pkg_file.h"
#include "genai/config.h"

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void use_names(const gen_kvs *t) {
    for (int i = 0; i < t->n; i++) {
        char buf[256];
        for (int layer = 0; layer < 3; layer++)
            og_status_free(gen_config_format_name(t->items[i].value, layer, buf, sizeof buf));
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    gen_config *cfg = NULL;
    og_status *st = gen_config_parse((const char *)data, size, "fuzz/genai_config.json", &cfg);
    if (st) {
        (void)og_status_message(st);
        og_status_free(st);
        return 0;
    }
    const gen_decoder *d = &cfg->model.decoder;
    use_names(&d->c.inputs);
    use_names(&d->c.outputs);
    for (int i = 0; i < d->n_pipeline; i++) {
        char *path = NULL;
        og_status_free(pkg_path_join(cfg->dir, d->pipeline[i].filename, cfg->path, "stage", &path));
        free(path);
    }
    if (d->c.filename) {
        char *path = NULL;
        og_status_free(pkg_path_join(cfg->dir, d->c.filename, cfg->path, "decoder", &path));
        free(path);
    }
    for (int i = 0; i < cfg->n_warnings; i++) (void)cfg->warnings[i][0];
    gen_config_free(cfg);
    return 0;
}
