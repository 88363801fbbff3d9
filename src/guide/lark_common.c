/* The terminals of `%import common`: the names llguidance's Lark front end offers, each
 * written here as one regular expression of the lexer's syntax (lark's common.lark
 * defines them in pieces and with lazy repetition; these are the same languages without
 * either). */
#include "guide/lark_common.h"

#include <string.h>

/* Fragments shared by the number terminals. */
#define INT_RE "[0-9]+"
#define EXP_RE "[eE][+-]?[0-9]+"
#define DECIMAL_RE "(?:[0-9]+\\.[0-9]*|\\.[0-9]+)"
#define FLOAT_RE "(?:[0-9]+" EXP_RE "|" DECIMAL_RE "(?:" EXP_RE ")?)"
/* FLOAT | INT: digits with an optional fraction and exponent, or a fraction alone. */
#define NUMBER_RE "(?:[0-9]+(?:\\.[0-9]*)?(?:" EXP_RE ")?|\\.[0-9]+(?:" EXP_RE ")?)"

static const lark_common_term terms[] = {
    {"DIGIT", "[0-9]"},
    {"HEXDIGIT", "[0-9a-fA-F]"},
    {"INT", INT_RE},
    {"SIGNED_INT", "[+-]?" INT_RE},
    {"DECIMAL", DECIMAL_RE},
    {"_EXP", EXP_RE},
    {"FLOAT", FLOAT_RE},
    {"SIGNED_FLOAT", "[+-]?" FLOAT_RE},
    {"NUMBER", NUMBER_RE},
    {"SIGNED_NUMBER", "[+-]?" NUMBER_RE},
    /* A quoted string whose backslashes each escape the next character but a newline:
     * the string ends at the first quote not escaped. */
    {"ESCAPED_STRING", "\"(?:[^\"\\\\]|\\\\.)*\""},
    {"LCASE_LETTER", "[a-z]"},
    {"UCASE_LETTER", "[A-Z]"},
    {"LETTER", "[a-zA-Z]"},
    {"WORD", "[a-zA-Z]+"},
    {"CNAME", "[_a-zA-Z][_a-zA-Z0-9]*"},
    {"WS_INLINE", "[ \\t]+"},
    {"WS", "[ \\t\\x0C\\r\\n]+"},
    {"CR", "\\r"},
    {"LF", "\\n"},
    {"NEWLINE", "(?:\\r?\\n)+"},
    {"SH_COMMENT", "#[^\\n]*"},
    {"CPP_COMMENT", "//[^\\n]*"},
    /* Up to the first star-slash: stars not followed by a slash may appear inside. */
    {"C_COMMENT", "/\\*(?:[^*]|\\*+[^*/])*\\*+/"},
    {"SQL_COMMENT", "--[^\\n]*"},
};

const lark_common_term *lark_common_find(const char *name, size_t len) {
    for (size_t i = 0; i < sizeof terms / sizeof terms[0]; i++)
        if (strlen(terms[i].name) == len && !memcmp(terms[i].name, name, len)) return &terms[i];
    return NULL;
}

size_t lark_common_count(void) { return sizeof terms / sizeof terms[0]; }

const lark_common_term *lark_common_at(size_t i) { return &terms[i]; }
