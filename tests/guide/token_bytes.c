/* guide-token-bytes: the vocabulary as guidance sees it (genai/guidance.h's token table),
 * for tests/guide/check_token_bytes.py to compare with llguidance.
 *
 *   guide-token-bytes <tokenizer.json or package folder>
 *
 * One line per id: "<id> <excluded 0|1> <hex bytes>"; the stop id is the tokenizer's
 * EOS (tokenizer_config.json), as a model's would be. */
#include "genai/guidance.h"

#include <stdio.h>

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: guide-token-bytes <tokenizer.json or folder>\n");
        return 2;
    }
    tok_tokenizer *tok;
    og_status *st = tok_tokenizer_load(argv[1], &tok);
    gen_token_table t = {0};
    if (!st) {
        int32_t eos = tok_eos_id(tok);
        st = gen_token_table_build(tok, tok_vocab_size(tok), &eos, eos >= 0 ? 1 : 0, &t);
    }
    if (st) {
        fprintf(stderr, "guide-token-bytes: %s\n", og_status_message(st));
        og_status_free(st);
        return 1;
    }
    for (size_t id = 0; id < t.n; id++) {
        printf("%zu %d ", id, t.excluded[id] ? 1 : 0);
        for (uint32_t k = 0; k < t.lens[id]; k++) printf("%02x", t.bytes[id][k]);
        putchar('\n');
    }
    gen_token_table_free(&t);
    tok_tokenizer_free(tok);
    return 0;
}
