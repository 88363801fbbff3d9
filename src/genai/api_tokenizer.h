/* What the layers above need of an og_tokenizer beyond the public API. */
#ifndef OG_GENAI_API_TOKENIZER_H
#define OG_GENAI_API_TOKENIZER_H

#include "onnx_genai.h"

#include <stddef.h>
#include <stdint.h>

/* The bytes token `id` adds to a text wherever it stands (tok_token_bytes: byte-level
 * BPE's raw bytes, also a part of a UTF-8 character): min(cap, *len) bytes into buf,
 * *len the full length. */
og_status *gen_tokenizer_token_bytes(const og_tokenizer *tok, int32_t id, uint8_t *buf,
                                     size_t cap, size_t *len);

#endif
