/* LoRA adapters over one model (onnxruntime-genai's og.Adapters): named .onnx_adapter
 * files whose parameters replace graph inputs that carry a default (overridable
 * initializers: the LoRA A/B weights an adapter-ready package declares as inputs, whose
 * defaults make the model the base model). A generator feeds the parameters of the
 * adapters active in it (og_generator_set_active_adapter) and the defaults for the rest.
 *
 * The container is reference-counted: its owner holds one reference (og_adapters_free
 * drops it) and every generator with an adapter of it active holds one, so generators and
 * the container may be freed in any order. An adapter in use by a generator cannot be
 * unloaded. The counts are atomic, so generators may be destroyed on any thread (Python's
 * collector, a server's workers); loading, unloading and activating are made from one
 * thread at a time. */
#ifndef OG_GENAI_ADAPTERS_H
#define OG_GENAI_ADAPTERS_H

#include "base/strmap.h"
#include "genai/adapter_file.h"

#include <stdatomic.h>

typedef struct gen_adapter {
    char *name;
    gen_adapter_file file;
    strmap by_name; /* parameter name -> index into file.params */
    atomic_int users; /* generators it is active in */
} gen_adapter;

struct og_adapters {
    og_model *model;
    gen_adapter **items;
    int n, cap;
    atomic_int refs; /* the owner's, plus one per active adapter of a generator */
};

/* The most adapters active in one generator at once. */
enum { GEN_MAX_ACTIVE_ADAPTERS = 8 };

/* The adapter loaded under `name`, or NULL. */
gen_adapter *gen_adapters_find(const og_adapters *set, const char *name);

/* The tensor of parameter `name` in one of the n active adapters, or NULL. */
const og_tensor *gen_adapters_param(gen_adapter *const *active, int n, const char *name);

/* Drops a generator's use of `a` (and of its container's reference). */
void gen_adapter_release(og_adapters *set, gen_adapter *a);

#endif
