/* Python's str semantics over UTF-8: code points, the character classes of str.isspace
 * and friends, and full case mapping (Python's upper() turns "ß" into "SS"). Character
 * properties come from utf8proc; the few multi-character case mappings Python applies
 * (SpecialCasing) are tabled here. */
#ifndef OG_CHAT_USTR_H
#define OG_CHAT_USTR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Decodes the code point at s[i] (i < len); returns its byte length (1 for a broken
 * sequence, with *cp the byte itself). */
size_t u8_next(const char *s, size_t len, size_t i, int32_t *cp);
/* Encodes cp into out (up to 4 bytes); returns the byte count. */
int u8_put(int32_t cp, char *out);
size_t u8_count(const char *s, size_t len);
bool u8_valid(const char *s, size_t len);
/* Byte offset of code point `index` in s (index <= count); ascii: s is all ASCII. */
size_t u8_offset(const char *s, size_t len, bool ascii, size_t index);

bool py_isspace(int32_t cp);
bool py_isalpha(int32_t cp);
bool py_isdecimal(int32_t cp);
bool py_isdigit(int32_t cp);
bool py_isnumeric(int32_t cp);
bool py_isalnum(int32_t cp);
bool py_islower(int32_t cp);
bool py_isupper(int32_t cp);
bool py_istitle(int32_t cp); /* category Lt */
bool py_iscased(int32_t cp);
bool py_isprintable(int32_t cp);
bool py_islinebreak(int32_t cp); /* what str.splitlines splits on */
/* \w of Python's re: alphanumeric or '_' */
bool py_isword(int32_t cp);

/* Full case mappings: writes 1..3 code points to out, returns how many. */
int py_upper(int32_t cp, int32_t out[3]);
int py_lower(int32_t cp, int32_t out[3]);
int py_title(int32_t cp, int32_t out[3]);

#endif
