/* The second group of contrib kernels (see cpu_kernels.h). SimplifiedLayerNormalization
 * lives in the default domain at version 1, where onnxruntime registers it and where
 * onnxruntime-genai's builder emits it. */
#include "kernels/cpu/contrib2.h"
#include "kernels/cpu/cpu_kernels.h"

const kernel_def cpu_contrib2_kernels[] = {
    {"com.microsoft", "GroupQueryAttention", 1, 1, cpu_contrib_gqa},
    {0},
};
