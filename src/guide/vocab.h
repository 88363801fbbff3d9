/* The vocabulary's token trie (inside the guide layer; guide.h has the public side).
 * Nodes are stored in preorder, so a subtree is a contiguous run [i, skip) and a
 * depth-first walk is a loop over the array that jumps to `skip` to prune. The root is
 * node 0 (no byte); a token ends at the node its last byte reaches. Excluded tokens and
 * tokens with no bytes are not in the trie, so no walk can allow them. */
#ifndef OG_GUIDE_VOCAB_H
#define OG_GUIDE_VOCAB_H

#include "guide/guide.h"

typedef struct gtrie_node {
    uint32_t skip;  /* the index after this node's subtree */
    uint32_t tok;   /* this node's tokens: toks[tok .. next node's tok) */
    uint16_t depth; /* bytes from the root (the root: 0) */
    uint8_t byte;   /* the byte of the edge into this node */
} gtrie_node;

struct guide_vocab {
    size_t n;
    uint8_t *blob;     /* the tokens' bytes, one after another */
    size_t *off;       /* token i's bytes: blob[off[i] .. off[i + 1]) */
    bool *excluded;
    gtrie_node *nodes; /* n_nodes + 1: the last is a sentinel whose tok ends the list */
    size_t n_nodes;
    uint32_t *toks;    /* token ids in trie preorder */
    uint32_t max_len;  /* the longest token in the trie (its depth) */
    guide_tokenize_fn tokenize; /* optional (guide_vocab_set_tokenize) */
    void *tokenize_ctx;
};

/* Longest token the trie takes, in bytes (depth is 16-bit). */
#define GUIDE_VOCAB_MAX_TOKEN 65535u

#endif
