/* The layout kernel table (see registry.h): ops that move, index or generate data.
 * Each op is covered from opset 11 (or its first version) to LAYOUT_MAX_OPSET; the
 * kernels branch on ctx->opset where semantics changed (Squeeze/Unsqueeze/Split take
 * inputs from 13, Reshape allowzero from 14, Shape start/end from 15, Scatter
 * reductions from 16/18, Pad axes from 18 and wrap from 19, Split num_outputs from 18). */
#include "backends/native/kernels/registry.h"
#include "backends/native/kernels/layout/layout.h"
#include "backends/native/kernels/layout/layout_util.h"

#define ALL(op, since, fn) {"", op, since, LAYOUT_MAX_OPSET, fn}
/* Ops that copy their input unchanged under a new shape: in place (kernel_def.inplace)
 * or over an initializer's own bytes (kernel_def.same_bytes) the copy is skipped
 * (layout_copy_as does nothing for dst == src). Dropout is in place only: in training
 * mode its output differs from its input. */
#define SAME_BYTES(op, since, fn)                                                        \
    {"", op, since, LAYOUT_MAX_OPSET, fn, .inplace = KERNEL_INPLACE(0), .same_bytes = true}

const kernel_def cpu_layout_kernels[] = {
    SAME_BYTES("Reshape", 5, cpu_reshape),
    SAME_BYTES("Squeeze", 11, cpu_squeeze),
    SAME_BYTES("Unsqueeze", 11, cpu_unsqueeze),
    SAME_BYTES("Flatten", 9, cpu_flatten),
    ALL("Shape", 1, cpu_shape),
    ALL("Size", 1, cpu_size),
    SAME_BYTES("Identity", 1, cpu_identity),
    {"", "Dropout", 10, LAYOUT_MAX_OPSET, cpu_dropout, .inplace = KERNEL_INPLACE(0)},
    ALL("Transpose", 1, cpu_transpose),
    ALL("Concat", 4, cpu_concat),
    ALL("Split", 11, cpu_split),
    ALL("Slice", 10, cpu_slice),
    ALL("Pad", 11, cpu_pad),
    ALL("Expand", 8, cpu_expand),
    ALL("Tile", 6, cpu_tile),
    ALL("Gather", 1, cpu_gather),
    ALL("GatherElements", 11, cpu_gather_elements),
    ALL("GatherND", 11, cpu_gather_nd),
    ALL("ScatterND", 11, cpu_scatter_nd),
    ALL("ScatterElements", 11, cpu_scatter_elements),
    {"", "Scatter", 9, 10, cpu_scatter_elements},
    ALL("ConstantOfShape", 9, cpu_constant_of_shape),
    ALL("Constant", 9, cpu_constant),
    ALL("Range", 11, cpu_range),
    ALL("Trilu", 14, cpu_trilu),
    ALL("NonZero", 9, cpu_nonzero),
    ALL("DepthToSpace", 1, cpu_depth_to_space),
    ALL("SpaceToDepth", 1, cpu_space_to_depth),
    ALL("Compress", 9, cpu_compress),
    ALL("Unique", 11, cpu_unique),
    {0},
};
