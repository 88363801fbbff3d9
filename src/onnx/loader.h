/* ONNX files -> graph IR. The file is memory-mapped and read by our own protobuf wire
 * reader (wire.h); initializers point into the mapping. Every read is bounds-checked:
 * a malformed or hostile file yields an error that names the file and what was being
 * read, never a read outside the mapping. */
#ifndef OG_ONNX_LOADER_H
#define OG_ONNX_LOADER_H

#include "base/status.h"
#include "base/tensor.h"
#include "graph/graph.h"

/* Loads a .onnx file; external data is resolved relative to its folder. */
og_status *onnx_load_file(const char *path, model **out);

/* Loads a model from memory. `data` must outlive the model (it is not copied).
 * `base_dir` (may be NULL: then external data is an error) locates external data;
 * `label` names the model in messages (e.g. "<memory>"). */
og_status *onnx_load_bytes(const void *data, size_t size, const char *base_dir,
                           const char *label, model **out);

/* Drops the whole pages of [p, p + n) from this process when they lie in one of m's
 * (private, read-only) file mappings: for data a copy replaced. The pages stay in the
 * page cache, and reading them again maps them back. Returns the bytes released (0 for
 * memory that is not a mapping, e.g. og_session_open_bytes' caller buffer). */
size_t model_release_pages(const model *m, const void *p, size_t n);

/* Reads a serialized TensorProto file (the ONNX test-data .pb format) into *out with
 * heap-owned data (release with tensor_release). *name_out (may be NULL) receives a
 * malloc'd copy of the tensor's name. */
og_status *onnx_read_tensor_file(const char *path, tensor *out, char **name_out);

/* Writes t as a serialized TensorProto (dims, data_type, name, raw_data). */
og_status *onnx_write_tensor_file(const char *path, const tensor *t, const char *name);

#endif
