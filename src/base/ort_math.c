/* See ort_math.h. */
#include "base/ort_math.h"

#include <math.h>

float ort_silu_div(float x) { return x / (1.0f + expf(-x)); }

float ort_softplus(float x) { return x > 0.0f ? x + logf(expf(-x) + 1.0f) : logf(expf(x) + 1.0f); }
