/* The tokenizer layer: Hugging Face tokenizer.json (BPE models) in C.
 *
 * It stands apart from graphs and sessions. Supported: BPE in both flavours that LLM
 * packages use (byte-level as in GPT-2 / Qwen / Llama-3, SentencePiece-style as in
 * Llama-2 / Phi-3 with Metaspace and <0xNN> byte fallback), the common normalizers,
 * pre-tokenizers, decoders and post-processors, added and special tokens. Anything
 * else in tokenizer.json is refused at load time with OG_ERR_UNSUPPORTED naming the
 * JSON path, so a tokenizer either loads and matches HF `tokenizers`, or does not load.
 *
 * Text is UTF-8. Input that is not valid UTF-8 is encoded as if every maximal invalid
 * subsequence had been replaced by U+FFFD (what Python's bytes.decode("utf-8",
 * "replace") produces before handing a str to HF tokenizers). Decoded text is always
 * valid UTF-8.
 *
 * Thread safety: a loaded tokenizer is immutable apart from an internal, locked word
 * cache, so tok_encode / tok_decode may run concurrently on one tokenizer. A stream is
 * for one thread at a time.
 *
 * Supported tokenizer.json constructs:
 *   model          BPE (vocab; merges as "a b" strings or [a, b] pairs; unk_token,
 *                  fuse_unk, byte_fallback, ignore_merges, continuing_subword_prefix,
 *                  end_of_word_suffix; dropout null or 0)
 *   normalizer     NFC NFD NFKC NFKD Lowercase Strip StripAccents Prepend
 *                  Replace (String or Regex pattern) Sequence
 *   pre_tokenizer  ByteLevel (add_prefix_space, use_regex) Split (String/Regex, all five
 *                  behaviors, invert) Metaspace (prepend_scheme always/first/never,
 *                  split, legacy add_prefix_space) Digits Whitespace WhitespaceSplit
 *                  Punctuation CharDelimiterSplit BertPreTokenizer Sequence
 *   decoder        ByteLevel Metaspace ByteFallback Fuse Strip Replace Sequence
 *   post_processor TemplateProcessing (single: one $A) ByteLevel RobertaProcessing
 *                  BertProcessing Sequence
 *   added_tokens   single_word, lstrip, rstrip, normalized, special
 * Not supported (load fails with OG_ERR_UNSUPPORTED naming the path): other model
 * types (WordPiece, Unigram, WordLevel), BPE dropout, the Precompiled / NMT / Bert /
 * ByteLevel normalizers, the UnicodeScripts / FixedLength pre-tokenizers, the
 * WordPiece / CTC / BPEDecoder decoders, templates without exactly one $A.
 * Ignored: "truncation" and "padding" (a generation runtime wants the whole prompt),
 * the pair template. Regexes are Oniguruma patterns run by PCRE2 (same syntax for what
 * tokenizers use: \p{..} classes, lookahead, (?i:)). Character classes (whitespace,
 * punctuation, \w, combining marks) and normal forms use utf8proc's Unicode 15 tables;
 * HF's come from older crates, so characters assigned in Unicode 10 and later may be
 * classed differently (never seen on real text; the parity test's random cases keep
 * to long-assigned characters).
 *
 * bos/eos: from tokenizer_config.json. Its add_bos_token / add_eos_token are applied
 * only when tokenizer.json has no post_processor (HF tokenizers follows the
 * post_processor, and conversions write the flags into it). */
#ifndef OG_TOKENIZER_TOKENIZER_H
#define OG_TOKENIZER_TOKENIZER_H

#include "onnx_genai.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct tok_tokenizer tok_tokenizer;
typedef struct tok_stream tok_stream;

/* Loads a tokenizer. `path` is a package folder holding tokenizer.json (and optionally
 * tokenizer_config.json, read for bos/eos tokens and add_bos_token/add_eos_token), or
 * the path of a tokenizer.json file itself (tokenizer_config.json is then looked for
 * beside it). On success *out owns the tokenizer: free it with tok_tokenizer_free.
 * Errors: OG_ERR_NOT_FOUND / OG_ERR_IO (file), OG_ERR_INVALID_MODEL (malformed JSON or
 * inconsistent vocabulary, naming the file), OG_ERR_UNSUPPORTED (a construct we do not
 * implement, naming its JSON path). */
og_status *tok_tokenizer_load(const char *path, tok_tokenizer **out);
/* The same from tokenizer.json text in memory (`label` names it in messages; no
 * tokenizer_config.json is read). For tests and the fuzzer. */
og_status *tok_tokenizer_parse(const char *json, size_t len, const char *label,
                               tok_tokenizer **out);
void tok_tokenizer_free(tok_tokenizer *tok);

/* Encodes `len` bytes of `text` (need not be NUL-terminated, may contain NUL). When
 * add_special_tokens is true the post-processor (e.g. a BOS template) is applied.
 * On success *ids is a malloc'ed array of *n ids that the caller frees with free();
 * for an empty result *ids may be NULL with *n == 0. */
og_status *tok_encode(const tok_tokenizer *tok, const char *text, size_t len,
                      bool add_special_tokens, int32_t **ids, size_t *n);

/* Decodes ids to text. skip_special_tokens drops ids of added tokens marked special.
 * Ids that name no token are dropped (as HF tokenizers does). On success *text is a
 * malloc'ed NUL-terminated UTF-8 string that the caller frees with free(); *text_len
 * (may be NULL) receives its length without the NUL. */
og_status *tok_decode(const tok_tokenizer *tok, const int32_t *ids, size_t n,
                      bool skip_special_tokens, char **text, size_t *text_len);

/* Streaming decoder for generation: feed ids one at a time, get back only text that is
 * complete (never a partial UTF-8 character, never text that a later id could still
 * change). The concatenation of every piece plus the flush equals tok_decode of all
 * ids. The stream borrows `tok`, which must outlive it. */
og_status *tok_stream_new(const tok_tokenizer *tok, bool skip_special_tokens,
                          tok_stream **out);
/* Sets the ids the next ones continue (a prompt; n may be 0 for none), dropping
 * anything held back: the pieces that follow are then what they add to the decode of
 * these ids, as HF tokenizers' decode(context + new) has it beyond decode(context). A
 * SentencePiece-style first piece keeps its leading space ("Tom" + " and"), where a
 * fresh stream decodes it as the start of a text ("and"). Only the tail of ids that the
 * decoders need is kept. */
og_status *tok_stream_set_context(tok_stream *s, const int32_t *ids, size_t n);
/* Feeds one id. *piece points at the new text (NUL-terminated, possibly ""), owned by
 * the stream and valid until the next call on it; *piece_len (may be NULL) gets its
 * length. */
og_status *tok_stream_feed(tok_stream *s, int32_t id, const char **piece, size_t *piece_len);
/* Emits whatever is still held back (e.g. an incomplete UTF-8 tail, as U+FFFD) and
 * resets the stream (no context). Same ownership as tok_stream_feed. */
og_status *tok_stream_flush(tok_stream *s, const char **piece, size_t *piece_len);
void tok_stream_free(tok_stream *s);

/* The id of a token string (added tokens first, then the model's vocabulary), or -1. */
int32_t tok_token_to_id(const tok_tokenizer *tok, const char *token, size_t len);
/* The token string of an id (NUL-terminated, owned by the tokenizer), or NULL. */
const char *tok_id_to_token(const tok_tokenizer *tok, int32_t id);
/* One past the largest id (the model's vocabulary plus added tokens). */
size_t tok_vocab_size(const tok_tokenizer *tok);
/* BOS / EOS ids from tokenizer_config.json (bos_token / eos_token), or -1 if unknown. */
int32_t tok_bos_id(const tok_tokenizer *tok);
int32_t tok_eos_id(const tok_tokenizer *tok);
/* Whether id is an added token marked special. */
bool tok_is_special(const tok_tokenizer *tok, int32_t id);
/* Whether id is an added token (tokenizer.json's added_tokens), special or not. */
bool tok_is_added(const tok_tokenizer *tok, int32_t id);

/* The bytes token `id` adds to decoded text wherever it stands among other tokens (what
 * constrained decoding matches against a grammar): every decoder stage applied to the
 * token alone, leaving out what depends on its place in the text -- so byte-level BPE
 * gives the token's raw bytes through the byte-to-character map (no U+FFFD for a partial
 * UTF-8 character), SentencePiece gives U+2581 as a space (also at the start: dropping
 * the first space is a start-of-text rule) and <0xHH> as byte HH, and a Strip after Fuse
 * (which strips the whole text's ends) is left out. Added tokens, special ones included,
 * give their content as decoding does. Writes min(cap, *len) bytes to buf and sets *len
 * to the full length (call again with a larger buf when it exceeds cap); an id that names
 * no token has no bytes. */
og_status *tok_token_bytes(const tok_tokenizer *tok, int32_t id, uint8_t *buf, size_t cap,
                           size_t *len);

#endif
