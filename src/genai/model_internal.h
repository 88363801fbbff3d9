/* What model.c and model_cache.c share while a package is opened. */
#ifndef OG_GENAI_MODEL_INTERNAL_H
#define OG_GENAI_MODEL_INTERNAL_H

#include "genai/model.h"
#include "runtime/og_session.h"

/* Finds the loop-carried inputs of every stage (m->stages are open). */
og_status *gen_model_find_caches(og_model *m);

#endif
