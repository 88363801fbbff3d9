/* The template lexer: source text -> tokens, with jinja2's whitespace rules as
 * transformers configures them (trim_blocks, lstrip_blocks, `-`/`+` markers, newlines
 * normalised to "\n", one trailing newline dropped). Comments produce no tokens; the
 * text of {% raw %} blocks comes out as a text token. */
#ifndef OG_CHAT_LEX_H
#define OG_CHAT_LEX_H

#include "base/arena.h"
#include "base/status.h"

#include <stdint.h>

typedef enum tok_type {
    TK_EOF,
    TK_TEXT,        /* s, len: template data */
    TK_VAR_BEGIN,   /* {{ */
    TK_VAR_END,     /* }} */
    TK_BLOCK_BEGIN, /* {% */
    TK_BLOCK_END,   /* %} */
    TK_NAME,        /* s, len */
    TK_STRING,      /* s, len: the decoded literal (NUL-terminated) */
    TK_INT,         /* i */
    TK_FLOAT,       /* f */
    TK_OP           /* op */
} tok_type;

typedef enum tok_op {
    K_NONE, K_ADD, K_SUB, K_DIV, K_FLOORDIV, K_MUL, K_MOD, K_POW, K_TILDE, K_LBRACKET,
    K_RBRACKET, K_LPAREN, K_RPAREN, K_LBRACE, K_RBRACE, K_EQ, K_NE, K_GT, K_GE, K_LT, K_LE,
    K_ASSIGN, K_DOT, K_COLON, K_PIPE, K_COMMA, K_SEMI
} tok_op;

typedef struct tok {
    uint8_t type, op;
    int line;
    const char *s; /* in the arena */
    size_t len;
    int64_t i;
    double f;
} tok;

/* Tokens of src[0..len) (valid UTF-8) into the arena, ending with TK_EOF. Errors name
 * origin and line. */
og_status *chat_lex(const char *src, size_t len, arena *a, const char *origin, tok **out,
                    size_t *n);
/* How an operator is written ("+", "//", ...). */
const char *chat_op_text(tok_op op);

#endif
