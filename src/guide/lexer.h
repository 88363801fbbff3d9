/* The constraint engine's lexer: every lexeme of a grammar (a regular expression or a
 * literal) as one byte-level NFA, and a DFA over it built lazily, one state at a time,
 * as matching reaches it. A DFA state is the set of NFA states alive after the bytes read
 * since the lexeme began; its start state depends on which lexemes the parser allows
 * there, so the same lexer serves every parser state. Greedy lexing (longest match) is
 * the matcher's rule, not the lexer's: the lexer only says which lexemes are complete in
 * a state and whether a byte can extend any of them.
 *
 * Not thread-safe: a grammar shared between sequences is used under its lock
 * (guide_grammar). */
#ifndef OG_GUIDE_LEXER_H
#define OG_GUIDE_LEXER_H

#include "base/status.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct glex glex;

/* The dead state: no lexeme of the start set matches any extension of the bytes read. */
#define GLEX_DEAD 0u
/* Returned by glex_next when building the state went past the limits: glex_error says
 * why. */
#define GLEX_FAILED UINT32_MAX

og_status *glex_new(glex **out);
void glex_free(glex *lex);

/* Adds a lexeme that matches exactly the strings of the regular expression `re` (the
 * syntax of llguidance and of onnxruntime-genai's `regex` guidance: Rust's regex crate —
 * literals, `.`, classes `[...]` with ranges, negation and escapes, `\d \w \s \D \W \S`,
 * `\p{..}` Unicode classes, `\xHH \u{H..} \n \t \r` escapes, groups `(..)` `(?:..)`,
 * alternation, `* + ? {n} {n,} {n,m}` and their lazy forms (same language), `(?i)`,
 * `(?s)`; the whole expression is matched, so `^` at its start and `$` at its end are
 * accepted and mean nothing more). Matching is over UTF-8 bytes: `.` and classes match
 * whole UTF-8 encoded code points. The same expression added twice gives the same id.
 * An invalid expression is refused with the column (1-based, in bytes) and the reason;
 * `what` names the expression in that message ("regex", "terminal NUMBER", "pattern at
 * /properties/a"). */
og_status *glex_add_regex(glex *lex, const char *re, size_t len, const char *what, int *id);
/* As glex_add_regex, with llguidance's Lark terminal operators written as groups that
 * plain expressions cannot hold: (?&A&&B) intersection, (?~A) complement (byte strings,
 * invalid UTF-8 included), (?*A&&B&&C) the concatenations of consecutive parts
 * (%regex substring_*). */
og_status *glex_add_regex_ext(glex *lex, const char *re, size_t len, const char *what, int *id);
/* As glex_add_regex with options: GLEX_EXT as glex_add_regex_ext; GLEX_LAZY a lazy
 * lexeme (Lark's [lazy]): where it is complete the lexeme ends, no byte extends it nor
 * any other lexeme read with it, and only the lazy lexemes complete there count as
 * complete, as llguidance's lexer cuts there. A lazy lexeme is not
 * the same lexeme as a greedy one of the same text. */
enum { GLEX_EXT = 1, GLEX_LAZY = 2 };
og_status *glex_add_regex_opts(glex *lex, const char *re, size_t len, const char *what,
                               unsigned opts, int *id);
/* Lark's gen attributes, as llguidance gives them to a lexeme. hidden (with GLEX_LAZY
 * only): the lexeme's regex ends with these bytes (stop="..."), which end it and are
 * then handed to what follows: where every lexeme the parser allows next begins with
 * them they start that lexeme, else they end the token (no byte of it may follow) and
 * the grammar goes on as if they were not there (llguidance backtracks them). max_tokens
 * (0: none): the lexeme may span at most that many tokens (the matcher's rule). A lexeme
 * with attributes is not the same lexeme as one of the same text without. */
typedef struct glex_attrs {
    const uint8_t *hidden;
    size_t n_hidden;
    uint32_t max_tokens;
    bool eos_ends; /* stop="": where it is complete a stop id may end it (and the output
                    * goes on after it, as llguidance's matcher does) */
} glex_attrs;
og_status *glex_add_regex_attrs(glex *lex, const char *re, size_t len, const char *what,
                                unsigned opts, const glex_attrs *attrs, int *id);
/* The strings of the regular expression re (ext: glex_add_regex_ext's syntax) where it
 * has at most max_n, each at most max_len bytes: *n of them, string i the (*lens)[i]
 * bytes at *strs + i * max_len (both to free). Otherwise refused (UNSUPPORTED: `what`
 * has too many strings, or strings too long or endless); an invalid expression as
 * glex_add_regex refuses it. */
og_status *glex_regex_strings(const char *re, size_t len, bool ext, const char *what,
                              size_t max_n, size_t max_len, uint8_t **strs, size_t **lens,
                              size_t *n);
/* The lazy lexeme with hidden bytes that cut the lexeme in `state` (where the first
 * lazy lexeme complete there has them), else -1; its hidden bytes; its max_tokens (0:
 * none), and whether any lexeme has one. */
int glex_hidden_lexeme(const glex *lex, uint32_t state);
const uint8_t *glex_hidden(const glex *lex, int id, size_t *len);
uint32_t glex_max_tokens(const glex *lex, int id);
bool glex_any_max_tokens(const glex *lex);
/* Whether `state` completes a lexeme that a stop id may end (glex_attrs.eos_ends). */
bool glex_eos_ends(const glex *lex, uint32_t state);
/* The lexemes that have an NFA state in `state` (glex_words words into out): those it
 * may still match. False when out of memory. */
bool glex_possible(glex *lex, uint32_t state, uint64_t *out);
/* `state` with only the NFA states of the lexemes in `allowed`: GLEX_DEAD when none is
 * left; GLEX_FAILED past the limits. */
uint32_t glex_limit(glex *lex, uint32_t state, const uint64_t *allowed);
/* *out: every string of lexeme `id` begins with bytes[0..len) (one way on at each of
 * them, and no proper prefix of them complete). False when the lexer failed. */
bool glex_forced_prefix(glex *lex, int id, const uint8_t *bytes, size_t len, bool *out);
/* Adds a lexeme that matches exactly these bytes. The same bytes twice give the same id
 * (and the same id as a regex whose language is only these bytes need not). */
og_status *glex_add_literal(glex *lex, const uint8_t *bytes, size_t len, int *id);
/* Adds a lexeme that no bytes match: a set of token ids (n_pairs inclusive ranges
 * [ranges[2i], ranges[2i+1]], sorted and disjoint), matched by the matcher when one of
 * them is the token consumed (Lark's special tokens <|name|> and <[ids]>). The same set
 * twice gives the same id. */
og_status *glex_add_tokens(glex *lex, const uint32_t *ranges, size_t n_pairs, int *id);
/* The number of ranges of lexeme `id` when it is a token set, else 0; range i's low or
 * high bound. */
size_t glex_token_pairs(const glex *lex, int id);
uint32_t glex_token_range_at(const glex *lex, int id, size_t i, bool hi);
/* One part of an intersection lexeme: a regular expression (re, len), or with re NULL
 * the decimal numbers llguidance's multipleOf takes for coef * 10^-exp (an optional '-',
 * digits, with exp > 0 a '.' and fraction digits, no exponent; see regex_and.c). */
typedef struct glex_part {
    const char *re;
    size_t len;
    uint32_t coef, exp;
} glex_part;
/* Adds a lexeme that matches exactly the strings every part matches (a product
 * automaton of the parts, refused past the NFA limits). The same parts give the same id. */
og_status *glex_add_and(glex *lex, const glex_part *parts, size_t n, const char *what, int *id);
/* From now on lexeme `id` does not match these exact bytes (all other strings of its
 * language still match): a JSON object's extra keys are strings other than the named
 * properties. Call before the first glex_start. */
og_status *glex_exclude(glex *lex, int id, const uint8_t *bytes, size_t len);
/* As glex_exclude, for every string of the regular expression `re` (a JSON object's
 * extra keys are neither named keys nor keys of its patternProperties). Errors as
 * glex_add_regex's, naming `what`. */
og_status *glex_exclude_regex(glex *lex, int id, const char *re, size_t len, const char *what);
/* Writes `re`-syntax text that matches exactly `bytes` into buf (escaping what needs
 * it); returns the length it needs (like snprintf). */
size_t glex_escape(const uint8_t *bytes, size_t len, char *buf, size_t cap);

/* Whether lexeme `id` matches no string at all (its states were pruned to nothing: an
 * intersection of languages that do not meet, a class with nothing in it). */
bool glex_lexeme_empty(const glex *lex, int id);
/* Lexemes so far, and the number of 64-bit words of a lexeme set (a bitset over ids). */
int glex_count(const glex *lex);
size_t glex_words(const glex *lex);
/* A short printable description of lexeme `id` for messages ("/[0-9]+/", "\"true\""). */
const char *glex_describe(const glex *lex, int id);

/* Limits on the lazily built DFA: past `max_states` states (default 200000) or
 * `max_bytes` of tables (default 256 MiB) glex_next fails with GLEX_FAILED. */
void glex_set_limits(glex *lex, size_t max_states, size_t max_bytes);

/* The DFA state before any byte, when the lexemes in `allowed` (glex_words words) may
 * start here. GLEX_DEAD when the set is empty; GLEX_FAILED past the limits. */
uint32_t glex_start(glex *lex, const uint64_t *allowed);
/* The state after `byte`; GLEX_DEAD when no lexeme can go on; GLEX_FAILED past the
 * limits. Cheap once the transition has been seen (a table read). */
uint32_t glex_next(glex *lex, uint32_t state, uint8_t byte);
/* The lexemes complete in `state` (glex_words words), or NULL when none is. */
const uint64_t *glex_accepts(const glex *lex, uint32_t state);
/* True when some byte leads from `state` to a live state. */
bool glex_can_extend(glex *lex, uint32_t state);
/* Why the last GLEX_FAILED happened (a new status each call; NULL when none did). */
og_status *glex_error(const glex *lex);
/* DFA states built so far (for limits and statistics). */
size_t glex_states(const glex *lex);
/* NFA states visited building DFA states, in all: the work done, for callers that bound
 * theirs. */
size_t glex_work(const glex *lex);

#endif
