#include "backends/native/kernels/registry.h"

#include <stdio.h>
#include <string.h>

/* One table per op family (see registry.h); a lookup scans them in order. */
static const kernel_def *const tables[] = {
    cpu_elementwise_kernels, cpu_cast_kernels,      cpu_matmul_kernels,    cpu_reduce_kernels,
    cpu_norm_kernels,        cpu_layout_kernels,    cpu_attention_kernels, cpu_quant_kernels,
    cpu_spatial_kernels,     cpu_recurrent_kernels, cpu_control_kernels,   cpu_moe_kernels};

const kernel_def *kernel_find(const char *domain, const char *op_type, int64_t version,
                              bool *known_op) {
    bool known = false;
    for (size_t t = 0; t < sizeof tables / sizeof tables[0]; t++)
        for (const kernel_def *d = tables[t]; d->op_type; d++) {
            if (strcmp(d->op_type, op_type) != 0 || strcmp(d->domain, domain) != 0) continue;
            known = true;
            if (version >= d->since && version <= d->until) {
                if (known_op) *known_op = true;
                return d;
            }
        }
    if (known_op) *known_op = known;
    return NULL;
}

void kernel_each(void (*visit)(const kernel_def *def, void *arg), void *arg) {
    for (size_t t = 0; t < sizeof tables / sizeof tables[0]; t++)
        for (const kernel_def *d = tables[t]; d->op_type; d++) visit(d, arg);
}
