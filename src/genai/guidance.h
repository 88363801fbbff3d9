/* Guidance (constrained decoding) at the genai layer: a model's vocabulary as the
 * constraint engine sees it (src/guide: bytes per token, special tokens excluded), built
 * from the package's tokenizer once per model, and compiled grammars cached per
 * (kind, text) per model, so that the generator and the serving engine compile a
 * schema once however many sequences or requests use it.
 *
 * Thread safety: every function here may run concurrently on one model. */
#ifndef OG_GENAI_GUIDANCE_H
#define OG_GENAI_GUIDANCE_H

#include "genai/model.h"
#include "guide/guide.h"
#include "tokenizer/tokenizer.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Every token's bytes (tok_token_bytes) and whether guidance may never choose it, for
 * ids [0, n): n is the model's logits width, which may differ from the tokenizer's
 * vocabulary (ids past the tokenizer's have no bytes). */
typedef struct gen_token_table {
    size_t n;
    uint8_t *pool;         /* every token's bytes, back to back */
    const uint8_t **bytes; /* [n] token id's bytes, in pool */
    uint32_t *lens;        /* [n] */
    bool *excluded;        /* [n] */
} gen_token_table;

/* Excluded: the stop ids (a matcher allows those itself, where the output is complete),
 * added tokens marked special, added tokens written as a control token "<...>" (the
 * SentencePiece conversions' "</s>" is often not marked special), and tokens with no
 * bytes. Free with gen_token_table_free (freeing a zeroed table is a no-op). */
og_status *gen_token_table_build(const tok_tokenizer *tok, size_t n, const int32_t *stop_ids,
                                 size_t n_stop, gen_token_table *out);
void gen_token_table_free(gen_token_table *t);

/* The tokenizer's plain encoding of bytes (no special tokens added; added tokens written
 * in the text are matched, as Hugging Face's tokenizers match them), as the guide layer
 * takes it (guide_tokenize_fn; ctx is a tok_tokenizer): where the grammar forces bytes,
 * the mask narrows to the first token of their encoding mid-text, as llguidance's. */
og_status *gen_guidance_encode(void *ctx, const uint8_t *bytes, size_t len, int32_t **ids,
                               size_t *n);

/* The model's vocabulary for guidance, built on first use from the package's tokenizer
 * (OG_ERR_NOT_FOUND or the tokenizer's error when the package has none that loads).
 * Owned by the model, valid until og_model_close. */
og_status *gen_guidance_vocab(og_model *m, const guide_vocab **out);

/* The grammar of guidance text against the model's vocabulary: from the model's cache,
 * or compiled now (then cached; a compile error is returned, not cached). *out is a new
 * reference: release it with guide_grammar_unref. */
og_status *gen_guidance_grammar(og_model *m, guide_kind kind, const char *text,
                                guide_grammar **out);

/* og_model_close: frees the vocabulary and drops the cache's references. NULL is a
 * no-op. */
void gen_guidance_free(struct gen_guidance *g);

#endif
