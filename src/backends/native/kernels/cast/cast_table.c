/* The cast table (see registry.h). One implementation serves every version: the later
 * ones widened the type lists and added the float8 `saturate` attribute, which
 * cpu_cast reads. */
#include "backends/native/kernels/cast/cast.h"
#include "backends/native/kernels/registry.h"

#define IN0 KERNEL_INPLACE(0)

const kernel_def cpu_cast_kernels[] = {
    {"", "Cast", 6, 28, cpu_cast, .inplace = IN0},
    {"", "CastLike", 15, 28, cpu_castlike, .inplace = IN0},
    {0},
};
