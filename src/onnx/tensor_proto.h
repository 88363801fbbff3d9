/* TensorProto -> tensor, shared by the model loader and the .pb tensor-file reader. */
#ifndef OG_ONNX_TENSOR_PROTO_H
#define OG_ONNX_TENSOR_PROTO_H

#include "graph/graph.h"
#include "onnx/wire.h"

/* Decodes the TensorProto in [data, data+len) (a range inside parent's file) into *out.
 * Element data points into the file when raw_data is element-aligned, otherwise it is
 * decoded or copied into m->arena (counted in m->copied_bytes). External data is
 * resolved against m->base_dir and mapped once per file into m->mappings.
 * `what` prefixes the tensor's name in messages ("initializer" -> "initializer 'w'").
 * *name_out (may be NULL) receives the tensor's name from m->arena. */
og_status *tensor_proto_decode(model *m, const wire_reader *parent, const uint8_t *data,
                               size_t len, const char *what, tensor *out,
                               const char **name_out);

#endif
