/* The model builder's LongRoPE choice (Phi-3 128k, Phi-3.5, Phi-4-mini): an If on
 * Greater(width of the attention mask, original_max_position_embeddings) between the
 * short- and long-factor cos/sin caches. The width of the mask a run is fed decides which
 * rotary angles all its rows get, so the generator (a batch's prompts) and the serving
 * engine (its flat steps) must feed widths that choose as onnxruntime-genai's runs do. */
#ifndef OG_GENAI_MASK_WIDTH_H
#define OG_GENAI_MASK_WIDTH_H

#include "graph/graph.h"

#include <stdbool.h>
#include <stdint.h>

/* Whether value cond is Greater(Gather(Shape(mask), 1), C) (a Cast allowed before the
 * Greater); *c gets C. */
bool gen_mask_width_test(const graph *g, int cond, int mask, int64_t *c);

/* C of the first If in g whose condition is that test of the value named mask, or -1. */
int64_t gen_mask_width_threshold(const graph *g, const char *mask);

#endif
