/* Internals of the tokenizer layer: shared by tok_*.c only. */
#ifndef OG_TOKENIZER_TOK_INTERNAL_H
#define OG_TOKENIZER_TOK_INTERNAL_H

#include "base/status.h"
#include "tokenizer/tokenizer.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <cjson/cJSON.h>
#include <pcre2.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* ---- growable byte buffer ---- */
typedef struct tok_buf {
    char *p;
    size_t n, cap;
} tok_buf;
bool tok_buf_reserve(tok_buf *b, size_t extra);
bool tok_buf_put(tok_buf *b, const void *s, size_t n);
void tok_buf_free(tok_buf *b);

/* ---- list of pieces: byte ranges of a tok_buf, each optionally an already-decided id.
 * Pre-tokenizers and decoders pass these between stages; `id` also serves as the
 * is-match flag in match lists. at_start: the piece begins the original input (what
 * Metaspace's prepend_scheme "first" asks for). */
typedef struct tok_piece {
    size_t off, len;
    int32_t id;
    int32_t at_start;
} tok_piece;
typedef struct tok_plist {
    tok_piece *v;
    size_t n, cap;
} tok_plist;
bool tok_plist_push(tok_plist *l, size_t off, size_t len, int32_t id, bool at_start);
void tok_plist_free(tok_plist *l);

/* ---- string -> int32 map; owns copies of its keys ---- */
typedef struct tok_smap_ent {
    size_t off;
    uint32_t len, hash;
    int32_t val;
} tok_smap_ent;
typedef struct tok_smap {
    uint32_t *slots; /* entry index + 1; 0 = empty */
    size_t cap;
    tok_smap_ent *ents;
    size_t n, ecap;
    tok_buf pool;
} tok_smap;
uint32_t tok_hash(const void *s, size_t n);
/* Inserts or replaces; false when out of memory. */
bool tok_smap_put(tok_smap *m, const char *key, size_t len, int32_t val);
int32_t tok_smap_get(const tok_smap *m, const char *key, size_t len, int32_t missing);
void tok_smap_free(tok_smap *m);

/* ---- UTF-8 ---- */
/* Decodes the character at s[0..n) of known-valid UTF-8; returns its byte length. */
size_t tok_utf8_next(const char *s, size_t n, int32_t *cp);
size_t tok_utf8_put(int32_t cp, char out[4]);
/* Length of the valid prefix of s, or n if all valid. */
size_t tok_utf8_valid_prefix(const char *s, size_t n);
/* Appends s to out with every maximal invalid subsequence replaced by U+FFFD. */
bool tok_utf8_sanitize(const char *s, size_t n, tok_buf *out);
bool tok_is_whitespace(int32_t cp);   /* Unicode White_Space */
bool tok_is_word_char(int32_t cp);    /* what a Unicode \w matches */
bool tok_is_numeric(int32_t cp);      /* general category N* */
bool tok_is_punctuation(int32_t cp);  /* ASCII punctuation or category P* */

/* ---- patterns: a literal string or a PCRE2 regex (UTF, UCP, JIT) ---- */
typedef struct tok_pattern {
    char *lit; /* literal bytes when code is NULL */
    size_t lit_len;
    pcre2_code *code;
} tok_pattern;
/* Reads {"String": s} or {"Regex": r}; `where` names the JSON path for errors. */
og_status *tok_pattern_parse(tok_pattern *p, const cJSON *j, const char *file,
                             const char *where);
og_status *tok_pattern_regex(tok_pattern *p, const char *re, const char *file,
                             const char *where);
void tok_pattern_free(tok_pattern *p);
/* Appends to `out` (ranges relative to s) the matches and gaps covering s[0..n) in
 * order, id = 1 for a match, 0 for a gap; n == 0 gives one empty gap. */
og_status *tok_pattern_find(const tok_pattern *p, const char *s, size_t n, tok_plist *out);

/* ---- normalizers ---- */
typedef enum tok_norm_kind {
    TOK_NORM_SEQUENCE,
    TOK_NORM_NFC,
    TOK_NORM_NFD,
    TOK_NORM_NFKC,
    TOK_NORM_NFKD,
    TOK_NORM_LOWERCASE,
    TOK_NORM_STRIP,
    TOK_NORM_STRIP_ACCENTS,
    TOK_NORM_PREPEND,
    TOK_NORM_REPLACE,
} tok_norm_kind;
typedef struct tok_norm {
    tok_norm_kind kind;
    struct tok_norm *kids;
    size_t n_kids;
    bool left, right;    /* Strip */
    char *str;           /* Prepend text / Replace content */
    size_t str_len;
    tok_pattern pat;     /* Replace */
} tok_norm;
og_status *tok_norm_parse(tok_norm *nm, const cJSON *j, const char *file, const char *path);
void tok_norm_free(tok_norm *nm);
/* Normalizes s[0..n) into out (cleared first). */
og_status *tok_norm_apply(const tok_norm *nm, const char *s, size_t n, tok_buf *out);

/* ---- pre-tokenizers ---- */
typedef enum tok_split_behavior {
    TOK_SPLIT_REMOVED,
    TOK_SPLIT_ISOLATED,
    TOK_SPLIT_MERGED_WITH_PREVIOUS,
    TOK_SPLIT_MERGED_WITH_NEXT,
    TOK_SPLIT_CONTIGUOUS,
} tok_split_behavior;
typedef enum tok_pre_kind {
    TOK_PRE_SEQUENCE,
    TOK_PRE_BYTELEVEL,
    TOK_PRE_SPLIT,
    TOK_PRE_METASPACE,
    TOK_PRE_DIGITS,
    TOK_PRE_WHITESPACE,
    TOK_PRE_WHITESPACE_SPLIT,
    TOK_PRE_PUNCTUATION,
    TOK_PRE_CHAR_DELIMITER,
    TOK_PRE_BERT,
} tok_pre_kind;
typedef enum tok_prepend_scheme { TOK_PREPEND_ALWAYS, TOK_PREPEND_FIRST, TOK_PREPEND_NEVER } tok_prepend_scheme;
typedef struct tok_pretok {
    tok_pre_kind kind;
    struct tok_pretok *kids;
    size_t n_kids;
    bool add_prefix_space, use_regex; /* ByteLevel */
    tok_pattern pat;                  /* Split, ByteLevel's regex, Whitespace */
    tok_split_behavior behavior;      /* Split, Punctuation */
    bool invert;                      /* Split */
    int32_t ch;                       /* Metaspace replacement, CharDelimiterSplit */
    tok_prepend_scheme prepend;       /* Metaspace */
    bool split;                       /* Metaspace */
    bool individual_digits;           /* Digits */
} tok_pretok;
og_status *tok_pretok_parse(tok_pretok *pt, const cJSON *j, const char *file, const char *path);
void tok_pretok_free(tok_pretok *pt);
/* Splits / rewrites the pieces of `in` (text in `text`, to which new text may be
 * appended) into `out` (cleared first). Pieces with id >= 0 pass through. */
og_status *tok_pretok_apply(const tok_pretok *pt, tok_buf *text, const tok_plist *in,
                            tok_plist *out);
/* Byte <-> character maps of the byte-level alphabet. */
extern const uint16_t tok_byte_to_cp[256];
int tok_cp_to_byte(int32_t cp); /* -1 when cp is not in the alphabet */

/* ---- BPE model ---- */
typedef struct tok_cache tok_cache;
typedef struct tok_bpe {
    tok_smap vocab;
    size_t vocab_max; /* one past the largest id */
    uint64_t *mkeys;  /* merges: (left id << 32 | right id) + 1; 0 = empty */
    uint32_t *mrank;
    int32_t *mnew;
    size_t mcap;
    int32_t unk_id; /* -1 when there is no unk token */
    bool fuse_unk, byte_fallback, ignore_merges;
    char *prefix, *suffix; /* continuing_subword_prefix, end_of_word_suffix, or NULL */
    size_t prefix_len, suffix_len;
    int32_t byte_ids[256]; /* ids of <0xNN>, -1 if absent */
    int32_t *char_ids;     /* id of each single character below U+0800, -1 if none */
    tok_cache *cache;
} tok_bpe;
og_status *tok_bpe_parse(tok_bpe *m, const cJSON *j, const char *file);
void tok_bpe_free(tok_bpe *m);
/* Appends the ids of one pre-tokenized word. */
og_status *tok_bpe_tokenize(const tok_bpe *m, const char *w, size_t n, int32_t **ids,
                            size_t *n_ids, size_t *cap_ids);

/* ---- decoders ---- */
typedef enum tok_dec_kind {
    TOK_DEC_SEQUENCE,
    TOK_DEC_BYTELEVEL,
    TOK_DEC_METASPACE,
    TOK_DEC_BYTE_FALLBACK,
    TOK_DEC_FUSE,
    TOK_DEC_STRIP,
    TOK_DEC_REPLACE,
} tok_dec_kind;
typedef struct tok_dec {
    tok_dec_kind kind;
    struct tok_dec *kids;
    size_t n_kids;
    int32_t ch;                 /* Metaspace replacement, Strip content */
    tok_prepend_scheme prepend; /* Metaspace */
    size_t start, stop;         /* Strip */
    tok_pattern pat;            /* Replace */
    char *content;
    size_t content_len;
} tok_dec;
og_status *tok_dec_parse(tok_dec *d, const cJSON *j, const char *file, const char *path);
void tok_dec_free(tok_dec *d);
/* Runs the decoder chain over the tokens in `l` (text in `text`), leaving the result
 * tokens in `l`. */
og_status *tok_dec_apply(const tok_dec *d, tok_buf *text, tok_plist *l);
/* The byte of a ByteFallback token "<0xNN>" (n bytes at s), or -1. */
int tok_byte_token(const char *s, size_t n);

/* ---- added tokens ---- */
typedef struct tok_added {
    char *content; /* as written */
    size_t len;
    char *match; /* what is searched for: content, normalized when `normalized` */
    size_t match_len;
    int32_t id;
    bool single_word, lstrip, rstrip, normalized, special;
} tok_added;
/* Leftmost-longest matcher over one subset of the added tokens. */
typedef struct tok_matcher {
    const tok_added **by_byte[256]; /* candidates by first byte, longest first */
    size_t n_by_byte[256];
    /* Per first byte: which second bytes any candidate has, and whether a one-byte
     * candidate exists -- rejects most positions without a string compare. */
    uint64_t second[256][4];
    bool single[256];
} tok_matcher;

/* ---- post-processor, compiled to the single-sequence template ---- */
typedef struct tok_post {
    int32_t *before, *after;
    size_t n_before, n_after;
} tok_post;

struct tok_tokenizer {
    char *file;
    tok_bpe bpe;
    tok_norm *norm;
    tok_pretok *pre;
    tok_dec *dec;
    bool has_post;
    tok_post post;
    tok_added *added;
    size_t n_added;
    tok_matcher raw_matcher, norm_matcher;
    tok_smap added_map;
    char **id_tok; /* id -> token text (NUL-terminated), NULL if none */
    uint8_t *special;  /* [vocab_size] an added token marked special */
    uint8_t *is_added; /* [vocab_size] an added token, special or not */
    size_t vocab_size;
    int32_t bos_id, eos_id;
};

/* ---- JSON helpers ---- */
#define TOK_PATH_MAX 256
/* The "type" string of a component object, or NULL. */
const char *tok_json_type(const cJSON *j);
/* bool member, `dflt` when absent or null. */
bool tok_json_bool(const cJSON *j, const char *key, bool dflt);
/* Token ids are integers in [0, TOK_MAX_ID]: the id table is sized by the largest one,
 * so a bound keeps a hostile file from sizing it (real vocabularies are below 300K). */
#define TOK_MAX_ID ((1 << 24) - 1)
/* A JSON number that is an integer in [0, max] into *out; false otherwise (never a
 * float-to-int conversion out of range). */
bool tok_json_index(const cJSON *v, double max, int64_t *out);
/* string member, or NULL when absent / not a string. */
const char *tok_json_str(const cJSON *j, const char *key);
/* "<file>: <path>.type 'T' is not supported" (or "... has no type"). */
og_status *tok_unsupported(const char *file, const char *path, const char *type);

#endif
