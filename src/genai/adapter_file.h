/* onnxruntime's LoRA adapter files (`.onnx_adapter`): a flatbuffer (file identifier
 * "TORT") whose root table Adapter holds format_version, adapter_version, model_version
 * and a vector of Parameter tables, each a name, int64 dims, an ONNX data type and the
 * raw element bytes (8-byte aligned). onnxruntime.AdapterFormat writes them; Olive and
 * onnxruntime-genai's tools make them for og.Adapters. Read by hand: the schema is four
 * fields deep, and every offset is checked against the file before it is followed. */
#ifndef OG_GENAI_ADAPTER_FILE_H
#define OG_GENAI_ADAPTER_FILE_H

#include "base/mapped_file.h"
#include "base/tensor.h"

#include <stddef.h>
#include <stdint.h>

/* The format_version onnxruntime writes and reads. */
enum { GEN_ADAPTER_FORMAT_VERSION = 1 };

typedef struct gen_adapter_file {
    mapped_file file;    /* the mapping the parameters' data points into (empty for bytes) */
    int32_t format_version, adapter_version, model_version;
    int n_params;
    char **names;        /* [n_params] */
    og_tensor *params;   /* [n_params] data in the mapping (or the caller's bytes) */
} gen_adapter_file;

/* Parses an adapter held in memory; the parameters point into `data`, which must outlive
 * *out. `label` names the file in messages. On failure nothing is left to free. */
og_status *gen_adapter_parse(const uint8_t *data, size_t size, const char *label,
                             gen_adapter_file *out);
/* Maps and parses an adapter file. */
og_status *gen_adapter_file_read(const char *path, gen_adapter_file *out);
void gen_adapter_file_free(gen_adapter_file *a);

#endif
