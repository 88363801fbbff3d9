/* The vocabulary (guide.h) and its token trie (vocab.h). */
#include "guide/vocab.h"

#include "guide/lexer.h"

#include <stdlib.h>
#include <string.h>

typedef struct tok_ref {
    const uint8_t *b;
    uint32_t len, id;
} tok_ref;

static int cmp_tok(const void *x, const void *y) {
    const tok_ref *a = x, *b = y;
    uint32_t n = a->len < b->len ? a->len : b->len;
    int c = memcmp(a->b, b->b, n);
    if (c) return c;
    if (a->len != b->len) return a->len < b->len ? -1 : 1;
    return a->id < b->id ? -1 : a->id > b->id;
}

/* Builds the preorder trie from the tokens sorted by their bytes: each token shares the
 * path of its longest common prefix with the one before it and adds nodes for the rest;
 * nodes whose subtree is over (deeper than that prefix) get their skip then. */
static og_status *build_trie(guide_vocab *v) {
    size_t n_ref = 0, total = 0;
    for (size_t i = 0; i < v->n; i++)
        if (!v->excluded[i] && v->off[i + 1] > v->off[i]) {
            n_ref++;
            total += v->off[i + 1] - v->off[i];
        }
    tok_ref *refs = malloc((n_ref ? n_ref : 1) * sizeof *refs);
    v->nodes = malloc((total + 2) * sizeof *v->nodes);
    v->toks = malloc((n_ref ? n_ref : 1) * sizeof *v->toks);
    uint32_t *path = malloc(((size_t)GUIDE_VOCAB_MAX_TOKEN + 1) * sizeof *path);
    if (!refs || !v->nodes || !v->toks || !path) {
        free(refs);
        free(path);
        return og_oom_for((total + 2) * sizeof *v->nodes, "the token trie");
    }
    n_ref = 0;
    for (size_t i = 0; i < v->n; i++)
        if (!v->excluded[i] && v->off[i + 1] > v->off[i])
            refs[n_ref++] = (tok_ref){v->blob + v->off[i], (uint32_t)(v->off[i + 1] - v->off[i]),
                                      (uint32_t)i};
    qsort(refs, n_ref, sizeof *refs, cmp_tok);
    size_t nn = 1, nt = 0, depth = 0; /* path[0..depth] are the open nodes */
    v->nodes[0] = (gtrie_node){0, 0, 0, 0, 0, 0};
    path[0] = 0;
    for (size_t r = 0; r < n_ref; r++) {
        const tok_ref *t = &refs[r];
        size_t lcp = 0;
        if (r) {
            const tok_ref *p = &refs[r - 1];
            while (lcp < p->len && lcp < t->len && p->b[lcp] == t->b[lcp]) lcp++;
        }
        for (; depth > lcp; depth--) v->nodes[path[depth]].skip = (uint32_t)nn;
        for (; depth < t->len; depth++) {
            v->nodes[nn] = (gtrie_node){0, (uint32_t)nt, (uint16_t)(depth + 1), t->b[depth], 0, 0};
            path[depth + 1] = (uint32_t)nn++;
        }
        v->toks[nt++] = t->id;
        if (t->len > v->max_len) v->max_len = t->len;
    }
    for (; depth > 0; depth--) v->nodes[path[depth]].skip = (uint32_t)nn;
    v->nodes[0].skip = (uint32_t)nn;
    v->nodes[nn] = (gtrie_node){(uint32_t)nn, (uint32_t)nt, 0, 0, 0, 0};
    v->n_nodes = nn;
    free(refs);
    free(path);
    return NULL;
}

const char *const guide_slice_re[GUIDE_N_SLICES] = {
    "[^\"\\\\\\x00-\\x1F\\x7F]+",
    "[a-zA-Z0-9_]+",
    "[a-zA-Z0-9]+",
};

/* Token t of slice k by its count of characters (vocab.h's slice_chars, slice_long). */
static og_status *add_chars(guide_vocab *v, int k, uint32_t t, size_t *cap) {
    uint32_t chars = 0;
    for (size_t o = v->off[t]; o < v->off[t + 1]; o++) chars += (v->blob[o] & 0xC0) != 0x80;
    if (chars > v->max_chars[k]) v->max_chars[k] = chars;
    if (chars <= GUIDE_SLICE_LENS) {
        for (uint32_t c = chars; c <= GUIDE_SLICE_LENS; c++)
            v->slice_chars[k][c][t >> 5] |= 1u << (t & 31);
        return NULL;
    }
    if (v->n_long[k] == *cap) {
        size_t c = *cap ? *cap * 2 : 256;
        uint32_t *ids = realloc(v->slice_long[k], c * sizeof *ids);
        if (ids) v->slice_long[k] = ids;
        uint32_t *ch = ids ? realloc(v->slice_long_chars[k], c * sizeof *ch) : NULL;
        if (ch) v->slice_long_chars[k] = ch;
        if (!ids || !ch) return og_oom_for(c * 8, "the token slices' long tokens");
        *cap = c;
    }
    v->slice_long[k][v->n_long[k]] = t;
    v->slice_long_chars[k][v->n_long[k]++] = chars;
    return NULL;
}

/* Sorts slice k's long tokens by their count of characters (a shell sort of the two
 * parallel arrays; they are a few thousand at most). */
static void sort_long(guide_vocab *v, int k) {
    size_t n = v->n_long[k];
    uint32_t *ids = v->slice_long[k], *ch = v->slice_long_chars[k];
    for (size_t gap = n / 2; gap; gap /= 2)
        for (size_t i = gap; i < n; i++) {
            uint32_t t = ids[i], c = ch[i];
            size_t j = i;
            for (; j >= gap && ch[j - gap] > c; j -= gap) {
                ids[j] = ids[j - gap];
                ch[j] = ch[j - gap];
            }
            ids[j] = t;
            ch[j] = c;
        }
}

/* Which tokens are in slice k (vocab.h), read by the slice's own DFA down the trie, and
 * which subtrees hold nothing else (bottom up: a node is in the slice when its own tokens
 * are and all its children are). `own` is scratch of n_nodes bytes. */
static og_status *classify_slice(guide_vocab *v, int k, uint8_t *own, uint32_t *lv) {
    glex *lex = NULL;
    int id = 0;
    const char *re = guide_slice_re[k];
    og_status *st = glex_new(&lex);
    if (!st) st = glex_add_regex(lex, re, strlen(re), "slice", &id);
    size_t words = guide_mask_words(v->n);
    bool room = (v->slice_bits[k] = calloc(words ? words : 1, sizeof(uint32_t))) != NULL;
    for (int l = 1; l <= GUIDE_SLICE_LENS; l++) {
        room = room && (v->slice_upto[k][l] = calloc(words ? words : 1, sizeof(uint32_t)));
        room = room && (v->slice_chars[k][l] = calloc(words ? words : 1, sizeof(uint32_t)));
    }
    size_t cap_long = 0;
    if (!st && !room)
        st = og_oom_for(words * 4 * (2 * GUIDE_SLICE_LENS + 1), "the token slices");
    memset(own, 0, v->n_nodes + 1);
    uint64_t all = 1;
    if (!st) lv[0] = glex_start(lex, &all);
    for (uint32_t i = 1; !st && i < v->n_nodes;) {
        const gtrie_node *nd = &v->nodes[i];
        uint32_t nx = glex_next(lex, lv[nd->depth - 1], nd->byte);
        if (nx == GLEX_FAILED) {
            st = glex_error(lex);
            break;
        }
        if (nx == GLEX_DEAD) { /* no token below is in the slice */
            i = nd->skip;
            continue;
        }
        lv[nd->depth] = nx;
        bool has = nd->tok < v->nodes[i + 1].tok;
        own[i] = !has || glex_accepts(lex, nx) != NULL;
        if (has && own[i])
            for (uint32_t j = nd->tok; j < v->nodes[i + 1].tok && !st; j++) {
                uint32_t t = v->toks[j];
                v->slice_bits[k][t >> 5] |= 1u << (t & 31);
                for (int l = nd->depth; l <= GUIDE_SLICE_LENS; l++)
                    v->slice_upto[k][l][t >> 5] |= 1u << (t & 31);
                st = add_chars(v, k, t, &cap_long);
            }
        i++;
    }
    if (!st && v->n_long[k]) sort_long(v, k);
    for (size_t i = v->n_nodes; !st && i-- > 1;) {
        gtrie_node *nd = &v->nodes[i];
        bool pure = own[i];
        for (uint32_t c = (uint32_t)i + 1; pure && c < nd->skip; c = v->nodes[c].skip)
            pure = v->nodes[c].in_slice >> k & 1;
        nd->in_slice |= (uint8_t)(pure << k);
    }
    glex_free(lex);
    return st;
}

/* The deepest token end below each node (bottom up). */
static void mark_below(guide_vocab *v) {
    for (size_t i = v->n_nodes; i-- > 1;) {
        gtrie_node *nd = &v->nodes[i];
        uint16_t below = nd->tok < v->nodes[i + 1].tok ? nd->depth : 0;
        for (uint32_t c = (uint32_t)i + 1; c < nd->skip; c = v->nodes[c].skip)
            if (v->nodes[c].below > below) below = v->nodes[c].below;
        nd->below = below;
    }
}

/* The skeleton (vocab.h): slice 0's in_slice bits must be set. */
static og_status *build_skeleton(guide_vocab *v) {
    size_t n = 0;
    for (size_t i = 1; i < v->n_nodes; i++) n += !(v->nodes[i].in_slice & 1);
    v->skel_node = malloc((n ? n : 1) * sizeof *v->skel_node);
    v->skel_skip = malloc((n ? n : 1) * sizeof *v->skel_skip);
    if (!v->skel_node || !v->skel_skip) return og_oom_for(n * 8, "the token trie's skeleton");
    v->n_skel = n;
    n = 0;
    for (size_t i = 1; i < v->n_nodes; i++)
        if (!(v->nodes[i].in_slice & 1)) v->skel_node[n++] = (uint32_t)i;
    for (size_t j = 0; j < n; j++) { /* the first skeleton node past the subtree */
        uint32_t past = v->nodes[v->skel_node[j]].skip;
        size_t lo = j + 1, hi = n;
        while (lo < hi) {
            size_t mid = lo + (hi - lo) / 2;
            if (v->skel_node[mid] < past) lo = mid + 1;
            else hi = mid;
        }
        v->skel_skip[j] = (uint32_t)lo;
    }
    return NULL;
}

static og_status *classify_slices(guide_vocab *v) {
    mark_below(v);
    uint8_t *own = malloc(v->n_nodes + 1); /* alive, and its tokens are in the slice */
    uint32_t *lv = malloc(((size_t)v->max_len + 1) * sizeof *lv);
    og_status *st = own && lv ? NULL : og_oom_for(v->n_nodes, "the token slices");
    for (int k = 0; k < GUIDE_N_SLICES && !st; k++) st = classify_slice(v, k, own, lv);
    if (!st) st = build_skeleton(v);
    free(own);
    free(lv);
    return st;
}

og_status *guide_vocab_new(size_t n_tokens, const uint8_t *const *bytes, const uint32_t *lens,
                           const bool *excluded, guide_vocab **out) {
    if (n_tokens >= UINT32_MAX)
        return og_errorf(OG_ERR_INVALID_ARGUMENT, "guide: a vocabulary of %zu tokens", n_tokens);
    size_t total = 0;
    for (size_t i = 0; i < n_tokens; i++) {
        if (lens[i] > GUIDE_VOCAB_MAX_TOKEN)
            return og_errorf(OG_ERR_INVALID_ARGUMENT,
                             "guide: token %zu has %u bytes (at most %u)", i, lens[i],
                             GUIDE_VOCAB_MAX_TOKEN);
        total += lens[i];
    }
    guide_vocab *v = calloc(1, sizeof *v);
    if (!v) return og_oom();
    v->n = n_tokens;
    v->blob = malloc(total ? total : 1);
    v->off = malloc((n_tokens + 1) * sizeof *v->off);
    v->excluded = malloc(n_tokens ? n_tokens : 1);
    if (!v->blob || !v->off || !v->excluded) {
        guide_vocab_free(v);
        return og_oom_for(total, "the vocabulary's bytes");
    }
    size_t o = 0;
    for (size_t i = 0; i < n_tokens; i++) {
        v->off[i] = o;
        if (lens[i]) memcpy(v->blob + o, bytes[i], lens[i]);
        o += lens[i];
        v->excluded[i] = excluded && excluded[i];
    }
    v->off[n_tokens] = o;
    og_status *st = build_trie(v);
    if (!st) st = classify_slices(v);
    if (st) {
        guide_vocab_free(v);
        return st;
    }
    *out = v;
    return NULL;
}

void guide_vocab_free(guide_vocab *v) {
    if (!v) return;
    free(v->blob);
    free(v->off);
    free(v->excluded);
    free(v->nodes);
    free(v->toks);
    for (int k = 0; k < GUIDE_N_SLICES; k++) {
        free(v->slice_bits[k]);
        for (int l = 1; l <= GUIDE_SLICE_LENS; l++) {
            free(v->slice_upto[k][l]);
            free(v->slice_chars[k][l]);
        }
        free(v->slice_long[k]);
        free(v->slice_long_chars[k]);
    }
    free(v->skel_node);
    free(v->skel_skip);
    free(v);
}

size_t guide_vocab_size(const guide_vocab *v) { return v ? v->n : 0; }

long guide_vocab_first_difference(const guide_vocab *a, const guide_vocab *b) {
    size_t n = a->n < b->n ? a->n : b->n;
    for (size_t i = 0; i < n; i++) {
        size_t la = a->off[i + 1] - a->off[i], lb = b->off[i + 1] - b->off[i];
        if (la != lb || a->excluded[i] != b->excluded[i] ||
            memcmp(a->blob + a->off[i], b->blob + b->off[i], la))
            return (long)i;
    }
    return a->n == b->n ? -1 : (long)n;
}

void guide_vocab_set_tokenize(guide_vocab *v, guide_tokenize_fn fn, void *ctx) {
    v->tokenize = fn;
    v->tokenize_ctx = ctx;
}
