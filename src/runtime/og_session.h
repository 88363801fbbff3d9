/* og_session as the layers above the backends see it: the public og_session_*
 * functions dispatch through the seam (backends/backend.h); these internal accessors
 * serve the generation layer, the CLI's benchmarks and the tests. */
#ifndef OG_RUNTIME_OG_SESSION_H
#define OG_RUNTIME_OG_SESSION_H

#include "backends/backend.h"

/* og_session_open with the values `names` (made by nodes of the graph) also graph outputs,
 * after those the file lists: a run can ask for an inner value (the final norm's output of
 * a decoder that outputs only logits). The native backend only (onnxruntime would read the
 * file as it is); a value whose type the file does not declare is described so
 * (og_value_info's dtype OG_UNDEFINED, rank -1). */
og_status *runtime_session_open_exposing(const char *path, const og_session_options *options,
                                         const char *const *names, int n_names, og_session **out);

/* Our IR of the session's graph (every backend has one). */
const model *runtime_session_model(const og_session *s);
const graph *runtime_session_graph(const og_session *s);
/* The value graph input `index` takes when a run feeds none (an overridable
 * initializer: a LoRA weight an adapter may replace), or NULL when it must be fed. */
const og_tensor *runtime_session_input_default(const og_session *s, size_t index);
/* The backend's table. */
const backend_ops *runtime_session_ops(const og_session *s);
/* The backend's own context (a native_session for backend_native), for tests that look
 * inside a backend they know. */
void *runtime_session_context(const og_session *s);
/* The counters of the last run (zeros where the backend keeps none). */
void runtime_session_stats(const og_session *s, backend_run_stats *out);

/* Writes the fields of *full that fit in out->struct_size (og_plan_stats' versioning). */
void plan_stats_copy_out(const og_plan_stats *full, og_plan_stats *out);
/* Compute threads the backend uses (0: unknown). */
int runtime_session_threads(const og_session *s);
/* What the session prepared when it opened (zeros where the backend prepares nothing). */
void runtime_session_prep_stats(const og_session *s, backend_prep_stats *out);
/* Attaches a per-node profiler (NULL detaches); OG_ERR_UNSUPPORTED for a backend that
 * cannot time its nodes. */
og_status *runtime_session_set_profiler(og_session *s, struct og_profiler *p);
/* Lends a paged KV cache to the kernels of the following runs (NULL: takes it back);
 * OG_ERR_UNSUPPORTED for a backend that cannot read one. */
og_status *runtime_session_set_paged_kv(og_session *s, const struct paged_kv *kv);
/* Row forms for the kernels of the following runs (backend_ops.set_row_forms; NULL
 * takes them back). A backend without them ignores them. */
void runtime_session_set_row_forms(og_session *s, const uint8_t *forms, int64_t n);

/* The ops of g (and its subgraphs) that `ops` cannot run, as "Op1, com.microsoft.Op2"
 * (each named once) in buf; returns how many distinct ops that is (0: it runs them all). */
int runtime_unsupported_ops(const backend_ops *ops, const graph *g, char *buf, size_t size);

#endif
