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
    uint8_t in_slice; /* bit k: every token in this subtree is in slice k (below) */
    uint16_t below;   /* the deepest token end in this subtree (its byte length) */
} gtrie_node;

/* Slices: sets of tokens fixed per vocabulary by a regular expression each (vocab.c's
 * guide_slice_re): 0, tokens of whole UTF-8 characters none of which is a control
 * character, '"' or '\\' (what sits inside a JSON string or free text); 1, ASCII letters,
 * digits and '_' (names, an e-mail address's local part); 2, ASCII letters and digits
 * (host names, where '_' is not allowed). Where every string of a slice's
 * language up to some length (and every prefix of one) keeps the lexer alive from a
 * state, all its tokens up to that length are allowed there at once (slice_bits,
 * slice_upto), and a mask's trie walk skips the subtrees that hold nothing else
 * (in_slice, below): most of a large vocabulary in the states of a string's body. The
 * same expressions are compiled by the vocabulary (which tokens are in each) and by each
 * grammar (the check from a state), so both read one language. */
#define GUIDE_N_SLICES 3
#define GUIDE_SLICE_LENS 16
extern const char *const guide_slice_re[GUIDE_N_SLICES];

struct guide_vocab {
    size_t n;
    uint8_t *blob;     /* the tokens' bytes, one after another */
    size_t *off;       /* token i's bytes: blob[off[i] .. off[i + 1]) */
    bool *excluded;
    gtrie_node *nodes; /* n_nodes + 1: the last is a sentinel whose tok ends the list */
    size_t n_nodes;
    uint32_t *toks;    /* token ids in trie preorder */
    uint32_t max_len;  /* the longest token in the trie (its depth) */
    uint32_t *slice_bits[GUIDE_N_SLICES]; /* slice k's tokens (guide_mask_words(n)) */
    /* slice_upto[k][l]: slice k's tokens of at most l bytes, l = 1..GUIDE_SLICE_LENS (a
     * string with a maximum length takes only the shorter ones); [k][0] unused */
    uint32_t *slice_upto[GUIDE_N_SLICES][GUIDE_SLICE_LENS + 1];
    /* The same by characters (UTF-8 code points; a slice's tokens are whole ones):
     * slice_chars[k][c], slice k's tokens of at most c characters, c = 1..GUIDE_SLICE_LENS;
     * the longer ones listed by their count (slice_long[k][0 .. n_long[k]), ascending
     * slice_long_chars), and the most characters of any token of the slice. A lexer state
     * whose fate along a slice's strings is a count of characters (a string with a
     * maximum length) takes its tokens from these (matcher.c, slice_cut). */
    uint32_t *slice_chars[GUIDE_N_SLICES][GUIDE_SLICE_LENS + 1];
    uint32_t *slice_long[GUIDE_N_SLICES];
    uint32_t *slice_long_chars[GUIDE_N_SLICES];
    size_t n_long[GUIDE_N_SLICES];
    uint32_t max_chars[GUIDE_N_SLICES];
    /* The skeleton: the trie nodes outside slice 0's subtrees (in_slice bit 0 clear; the
     * other slices are inside slice 0), in preorder; skel_skip[j] is the skeleton index
     * past skel_node[j]'s subtree. A walk that has decided every token of slice 0 reads
     * these alone (a few thousand of a large vocabulary's hundreds of thousands). */
    uint32_t *skel_node, *skel_skip;
    size_t n_skel;
    guide_tokenize_fn tokenize; /* optional (guide_vocab_set_tokenize) */
    void *tokenize_ctx;
};

/* Longest token the trie takes, in bytes (depth is 16-bit). */
#define GUIDE_VOCAB_MAX_TOKEN 65535u

#endif
