/* libFuzzer target: any byte string given as an .onnx_adapter file (onnxruntime's LoRA
 * adapter flatbuffer) must parse into parameters that lie inside it, or fail with a
 * message; never crash, leak or read out of bounds. Every parsed parameter's bytes are
 * read, so a size or offset the reader got wrong shows up as an overread. Seeds in
 * corpus/adapter (files onnxruntime.AdapterFormat wrote). */
#include "genai/adapter_file.h"

#include <stddef.h>
#include <stdint.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    gen_adapter_file a;
    og_status *st = gen_adapter_parse(data, size, "fuzz.onnx_adapter", &a);
    if (st) {
        (void)og_status_message(st);
        og_status_free(st);
        return 0;
    }
    volatile uint8_t sink = 0;
    for (int i = 0; i < a.n_params; i++) {
        const uint8_t *p = a.params[i].data;
        for (size_t k = 0; k < a.params[i].nbytes; k++) sink ^= p[k];
        for (const char *c = a.names[i]; *c; c++) sink ^= (uint8_t)*c;
    }
    (void)sink;
    gen_adapter_file_free(&a);
    return 0;
}
