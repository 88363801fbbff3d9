/* The constraint engine (structured output): guidance text — a JSON Schema, a regular
 * expression or a Lark grammar — compiled once into a grammar, and per sequence a
 * matcher that gives, at each step, the vocabulary tokens whose bytes keep the output a
 * valid prefix of the language, and advances by the token chosen.
 *
 * Layers inside: lexer.h (lexemes as a lazily built byte DFA), cfg.h (a grammar over
 * lexemes), front.h (the three kinds of guidance text), an Earley parser, and the token
 * trie walked once per mask. This header is what the layers above (genai, engine, serve)
 * use. Nothing here knows tokenizers: a vocabulary is given as bytes per token. */
#ifndef OG_GUIDE_GUIDE_H
#define OG_GUIDE_GUIDE_H

#include "base/status.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* ---- vocabulary ---------------------------------------------------------------------
 * Each token's bytes (what it adds to the output: byte-level BPE's bytes, SentencePiece
 * with U+2581 as a space and <0xHH> as byte HH) and whether it may never be chosen under
 * guidance (special tokens: control tokens, the stop ids, and tokens with no bytes). Built
 * once per tokenizer and shared, read-only, by every grammar and matcher. */
typedef struct guide_vocab guide_vocab;

og_status *guide_vocab_new(size_t n_tokens, const uint8_t *const *bytes, const uint32_t *lens,
                           const bool *excluded, guide_vocab **out);
void guide_vocab_free(guide_vocab *v);
size_t guide_vocab_size(const guide_vocab *v);
/* The first token id whose bytes (or exclusion) differ between a and b, the shorter's
 * size when one is a prefix of the other, -1 when they are the same vocabulary. */
long guide_vocab_first_difference(const guide_vocab *a, const guide_vocab *b);
/* The tokenizer's own encoding of bytes (tok_encode, no special tokens added): *ids
 * malloc'ed, *n of them, freed by the caller. A tokenizer that adds a space at the start
 * of a text (SentencePiece) is fine: the matcher encodes forced bytes after a marker byte
 * where the plain encoding does not spell them. */
typedef og_status *(*guide_tokenize_fn)(void *ctx, const uint8_t *bytes, size_t len,
                                        int32_t **ids, size_t *n);
/* Optional, as llguidance does: where the grammar forces the next bytes (one way on),
 * a mask allows only the first token of the tokenizer's encoding of them (the last token
 * of that encoding left out unless the output must end there, since it could still merge
 * with what follows); without it, every token the language allows. `ctx` must outlive
 * the vocabulary. Call before the first grammar is compiled against it. */
void guide_vocab_set_tokenize(guide_vocab *v, guide_tokenize_fn fn, void *ctx);
/* Words of a token mask: bit (id % 32) of word (id / 32) is token id. */
static inline size_t guide_mask_words(size_t n_tokens) { return (n_tokens + 31) / 32; }

/* ---- grammar -----------------------------------------------------------------------
 * Compiled guidance, immutable to its users, shared by reference count between the
 * sequences of a batch and cached by the layer above per (kind, text, vocabulary). Its
 * lazily built tables are guarded by its own lock, so matchers of one grammar may run on
 * different threads. */
typedef enum guide_kind {
    GUIDE_JSON_SCHEMA = 0, /* text is a JSON Schema */
    GUIDE_JSON_OBJECT = 1, /* any JSON object (text ignored) */
    GUIDE_REGEX = 2,       /* text is a regular expression */
    GUIDE_LARK = 3,        /* text is a Lark grammar */
} guide_kind;

/* The kind of onnxruntime-genai's guidance type name ("json_schema", "json_object",
 * "regex", "lark_grammar"); OG_ERR_INVALID_ARGUMENT listing the known names otherwise. */
og_status *guide_kind_parse(const char *name, guide_kind *out);
const char *guide_kind_name(guide_kind kind);

typedef struct guide_grammar guide_grammar;

/* Compiles guidance text against a vocabulary (which must outlive the grammar). Invalid
 * or unsupported guidance is OG_ERR_INVALID_ARGUMENT naming the place. Bounded: a
 * grammar past the limits (lexemes, rules, DFA states, memory) is refused with which one,
 * never a hang. */
og_status *guide_grammar_compile(guide_kind kind, const char *text, size_t len,
                                 const guide_vocab *vocab, guide_grammar **out);
guide_grammar *guide_grammar_ref(guide_grammar *g);
void guide_grammar_unref(guide_grammar *g);

/* ---- matcher -----------------------------------------------------------------------
 * One sequence's place in the language. `stop_ids` (the model's EOS and other stop ids)
 * are allowed exactly where the output is complete. */
typedef struct guide_matcher guide_matcher;

og_status *guide_matcher_new(guide_grammar *g, const int32_t *stop_ids, size_t n_stop,
                             guide_matcher **out);
void guide_matcher_free(guide_matcher *m);
/* Writes the allowed tokens into mask (guide_mask_words(vocab size) words; bits past the
 * vocabulary are cleared). Once the output is complete and nothing can follow, only the
 * stop ids are allowed. */
og_status *guide_matcher_mask(guide_matcher *m, uint32_t *mask);
/* Applies a mask to a row of n logits in place: a token the mask does not allow gets
 * -inf (a word of 32 allowed tokens is skipped whole). Returns how many of the n are
 * allowed. */
size_t guide_mask_apply(const uint32_t *mask, float *row, size_t n);
/* Advances by one token: a stop id where the output is complete ends the matcher (then
 * guide_matcher_stopped); a token the mask would not allow is OG_ERR_INVALID_ARGUMENT and
 * leaves the matcher as it was. */
og_status *guide_matcher_consume(guide_matcher *m, int32_t token);
/* Undoes the last n consumed tokens (n <= guide_matcher_consumed). */
og_status *guide_matcher_rollback(guide_matcher *m, size_t n);
size_t guide_matcher_consumed(const guide_matcher *m);
/* The output so far is a complete string of the language. */
bool guide_matcher_accepting(guide_matcher *m);
/* A stop id was consumed, or nothing but a stop id can follow. */
bool guide_matcher_stopped(guide_matcher *m);

#endif
