/* The constraint engine's front ends: each turns one kind of guidance text into lexemes
 * (in `lex`) and rules (in `cfg`). Errors name the place: a JSON pointer into the schema,
 * a line and column of the grammar, a column of the regular expression. An unsupported
 * keyword or construct is refused by name, never ignored. */
#ifndef OG_GUIDE_FRONT_H
#define OG_GUIDE_FRONT_H

#include "guide/cfg.h"
#include "guide/lexer.h"
#include "guide/vocab.h"

#include <cjson/cJSON.h>

/* A regular expression: the output is one string of its language. */
og_status *guide_front_regex(const char *re, size_t len, glex *lex, gcfg *cfg);
/* A Lark grammar (llguidance's subset): sets the start symbol to `start`. Special tokens
 * (<|name|>, <[ids]>) are looked up in `vocab` (NULL: refused). */
og_status *guide_front_lark(const char *src, size_t len, const guide_vocab *vocab, glex *lex,
                           gcfg *cfg);
/* A JSON Schema document (text): sets the start symbol. An empty object schema `{}` or
 * `true` is any JSON value. */
og_status *guide_front_json_schema(const char *src, size_t len, glex *lex, gcfg *cfg);
/* The same for a parsed schema, returning its start nonterminal without setting the
 * grammar's start (Lark's %json embeds a schema). `where` prefixes messages. */
og_status *guide_front_json_value(const cJSON *schema, const char *where, glex *lex,
                                  gcfg *cfg, gsym *out);

#endif
