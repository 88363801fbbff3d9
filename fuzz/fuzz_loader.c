/* libFuzzer target: any byte string must load or fail cleanly, never crash or leak. */
#include "onnx/loader.h"

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    model *m = NULL;
    og_status *st = onnx_load_bytes(data, size, NULL, "<fuzz>", &m);
    if (st) {
        /* the message must always be a readable string */
        (void)og_status_message(st);
        og_status_free(st);
        return 0;
    }
    int *order = NULL;
    if (m->graph && m->graph->n_nodes >= 0) {
        order = malloc(sizeof(int) * ((size_t)m->graph->n_nodes + 1));
        if (order) og_status_free(graph_topo_order(m->graph, "<fuzz>", order));
    }
    free(order);
    model_free(m);
    return 0;
}
