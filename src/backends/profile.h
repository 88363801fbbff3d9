/* Per-node timing for `--profile` and `bench --per-op`.
 *
 * A profiler is attached to sessions (backend_ops.set_profiler); while attached, every node
 * run is timed and recorded with its op, node name, input and output shapes and the
 * thread that ran it, and every og_session_run is one enclosing slice. The records
 * become a Chrome/Perfetto trace (JSON "traceEvents", one complete "X" slice each) or a
 * table of ops by total time. Without a profiler the executor's cost is one pointer test
 * per node; with one, two clock reads and a copy of the shapes, nothing is formatted
 * until the trace is written.
 *
 * Records point at the graphs' nodes: write the trace before the sessions are closed.
 * One profiler may serve several sessions (a model's stages); recording takes a lock,
 * so sessions run on different threads may share it. */
#ifndef OG_BACKENDS_PROFILE_H
#define OG_BACKENDS_PROFILE_H

#include "base/status.h"
#include "base/tensor.h"
#include "graph/graph.h"

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

typedef struct og_profiler og_profiler;

og_status *profiler_create(og_profiler **out);
void profiler_free(og_profiler *p);

/* Monotonic nanoseconds (the clock the records use). */
int64_t profiler_now_ns(void);

/* One node run: [t0, t1) on the calling thread, which handed `jobs` parallel_for calls
 * to the pool's workers meanwhile (0: the node ran on this thread alone). `label` names
 * the graph ("model.onnx", or a subgraph's label) and must outlive the profiler's use,
 * like the node. */
void profiler_node(og_profiler *p, const char *label, const graph_node *node, int64_t t0,
                   int64_t t1, int jobs, int threads, int n_in, const tensor *const *in,
                   int n_out, const tensor *const *out);
/* One og_session_run of the graph `label`. */
void profiler_run(og_profiler *p, const char *label, int64_t t0, int64_t t1);

/* Records made from now on carry `tag` (0 at first), so that a caller can single out
 * the runs it times (bench: the timed repetitions of one test). */
void profiler_set_tag(og_profiler *p, int tag);
/* Node slices recorded and dropped (past the memory cap; per-op totals still count them). */
size_t profiler_node_count(const og_profiler *p);
size_t profiler_dropped(const og_profiler *p);

/* The trace as JSON, Chrome's trace-event format (loads in Perfetto and
 * chrome://tracing): {"traceEvents": [...], "displayTimeUnit": "ms", "otherData": {...}}. */
og_status *profiler_write_trace(const og_profiler *p, const char *path);

/* A markdown table of ops by total time over the node records tagged `tag`: op, calls,
 * time, share of all node time, mean µs per call, and the slowest node of that op. `per`
 * divides calls and times (e.g. the tokens run, to show them per token) and `unit` names
 * the time column ("total ms", "ms/token"). Returns the total node time in nanoseconds. */
int64_t profiler_print_ops(const og_profiler *p, int tag, double per, const char *unit,
                           FILE *f);

#endif
