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
    uint8_t in_slice; /* every token in this subtree is in the slice (below) */
    uint16_t below;   /* the deepest token end in this subtree (its byte length) */
} gtrie_node;

/* The slice: tokens made of whole UTF-8 characters none of which is a control character,
 * '"' or '\' — the tokens that can sit inside a JSON string or most free text. Where
 * every string of this language (and every prefix of one) keeps the lexer alive from a
 * state, all of them are allowed there at once (guide_vocab.slice_bits), and a mask's
 * trie walk skips the subtrees that hold nothing else (in_slice): most of a large
 * vocabulary, in the states of a string's body. The same expression is compiled by the
 * vocabulary (which tokens are in it) and by each grammar (the check from a state), so
 * both read one language. */
#define GUIDE_SLICE_LENS 16
#define GUIDE_SLICE_RE "[^\"\\\\\\x00-\\x1F\\x7F]+"

struct guide_vocab {
    size_t n;
    uint8_t *blob;     /* the tokens' bytes, one after another */
    size_t *off;       /* token i's bytes: blob[off[i] .. off[i + 1]) */
    bool *excluded;
    gtrie_node *nodes; /* n_nodes + 1: the last is a sentinel whose tok ends the list */
    size_t n_nodes;
    uint32_t *toks;    /* token ids in trie preorder */
    uint32_t max_len;  /* the longest token in the trie (its depth) */
    uint32_t *slice_bits; /* the slice's tokens (guide_mask_words(n) words) */
    /* slice_upto[l]: the slice's tokens of at most l bytes, l = 1..GUIDE_SLICE_LENS (a
     * string with a maximum length takes only the shorter ones); [0] unused */
    uint32_t *slice_upto[GUIDE_SLICE_LENS + 1];
    guide_tokenize_fn tokenize; /* optional (guide_vocab_set_tokenize) */
    void *tokenize_ctx;
};

/* Longest token the trie takes, in bytes (depth is 16-bit). */
#define GUIDE_VOCAB_MAX_TOKEN 65535u

#endif
