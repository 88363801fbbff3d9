/* A session's KV cache stored narrower than its graph declares (og_session_options
 * .kv_dtype, onnx-genai's --kv-dtype): the graph inputs and outputs that carry
 * GroupQueryAttention's past and present caches are retyped before the backend opens
 * the graph, so that the layers above allocate and feed the cache as the session now
 * describes it, and the native kernel reads it as stored
 * (backends/kv_format.h). */
#ifndef OG_RUNTIME_KV_STORAGE_H
#define OG_RUNTIME_KV_STORAGE_H

#include "graph/graph.h"

/* Retypes every GroupQueryAttention cache of g to dtype (float32, float16, bfloat16,
 * int8, float8e4m3fn; int8 and float8 rows carry their scale, so the last dimension
 * grows by 4). `file` names the graph in messages. A cache the rewrite cannot take (a
 * past read by other nodes, a present that is not a graph output, a package whose caches
 * are quantized already, a symbolic head size) is an error naming it. *n_caches counts
 * the inputs retyped (0: the graph has no such cache). */
og_status *kv_storage_retype(graph *g, const char *file, og_dtype dtype, int *n_caches);

#endif
