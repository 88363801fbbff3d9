/* The spatial table (see registry.h). Each kernel reads the attributes its newest version
 * defines; older versions simply lack some of them (AveragePool gained
 * count_include_pad in 7, ceil_mode in 10 and dilations in 19; MaxPool its Indices
 * output in 8 and ceil_mode and dilations in 10; LpPool's p was a float in 1). */
#include "backends/native/kernels/spatial/spatial.h"
#include "backends/native/kernels/registry.h"

const kernel_def cpu_spatial_kernels[] = {
    {"", "Conv", 1, 28, cpu_conv},
    {"", "ConvTranspose", 1, 28, cpu_conv_transpose},
    {"", "MaxPool", 1, 28, cpu_max_pool},
    {"", "AveragePool", 1, 28, cpu_average_pool},
    {"", "LpPool", 1, 28, cpu_lp_pool},
    {"", "GlobalMaxPool", 1, 28, cpu_global_max_pool},
    {"", "GlobalAveragePool", 1, 28, cpu_global_average_pool},
    {"", "GlobalLpPool", 1, 28, cpu_global_lp_pool},
    /* Resize 11 added roi, sizes and the coordinate/nearest/cubic attributes, 13 made
     * roi and scales optional, 18 added antialias, axes and keep_aspect_ratio_policy,
     * 19 half_pixel_symmetric. Upsample 9 moved scales from attribute to input. */
    {"", "Resize", 10, 28, cpu_resize},
    {"", "Upsample", 7, 9, cpu_upsample},
    /* GridSample 16: 4-D, modes bilinear/bicubic; 20: N-D, modes linear/cubic. */
    {"", "GridSample", 16, 28, cpu_grid_sample},
    {"", "AffineGrid", 20, 28, cpu_affine_grid},
    /* MaxUnpool 9 and 11 differ only in accepted types. */
    {"", "MaxUnpool", 9, 28, cpu_max_unpool},
    {0},
};
