/* What the evaluator shares with the builtins (filters, tests, methods, globals):
 * call arguments, Python's operators and jinja2's sandboxed attribute access. */
#ifndef OG_CHAT_EVAL_H
#define OG_CHAT_EVAL_H

#include "chat/ast.h"
#include "chat/cv.h"

/* Arguments of a call: positional, then keyword (names are NUL-terminated). */
typedef struct cargs {
    cv *pos;
    int npos;
    const char **kwn;
    cv *kw;
    int nkw;
} cargs;

/* Binds a call's arguments to a builtin's parameters as Python would: positional first,
 * then by keyword; vals[i] is set for given parameters (given[i] true). More positional
 * arguments than names, an unknown keyword, a parameter given twice or fewer than nreq
 * arguments is a TypeError naming fname. */
og_status *chat_bind(crt *rt, const char *fname, const cargs *a, const char *const *names,
                     int nnames, int nreq, cv *vals, bool *given);

/* Python's binary operators (+ - * / // % **), unary minus/plus, `in`. */
og_status *chat_binop(crt *rt, ast_op op, cv a, cv b, cv *out);
og_status *chat_neg(crt *rt, cv a, bool minus, cv *out);
og_status *chat_contains(crt *rt, cv container, cv item, bool *out);

/* jinja2's sandboxed access: getattr tries the attribute (methods) first, then the item;
 * getitem the item first, then the attribute. What is missing is an undefined value;
 * what the immutable sandbox forbids (list.append, dict.update, ...) an undefined that
 * raises SecurityError when called. */
og_status *chat_getattr(crt *rt, cv obj, const char *name, cv *out);
og_status *chat_getitem(crt *rt, cv obj, cv key, cv *out);
og_status *chat_slice(crt *rt, cv obj, cv start, cv stop, cv step, cv *out);
/* The |attr filter: the attribute only, never the item. */
og_status *chat_attr_only(crt *rt, cv obj, const char *name, cv *out);

/* Methods of str, dict and list: 0 none of that name, 1 a method, 2 one the immutable
 * sandbox forbids, 3 a method of Python's that this engine does not implement. */
int chat_method_kind(cv self, const char *name);
/* Which types have a method of that name (the parser notes it on attribute nodes, so
 * that message.role on a dict goes straight to the key). */
enum { CHAT_M_STR = 1, CHAT_M_DICT = 2, CHAT_M_LIST = 4 };
int chat_method_mask(const char *name);
og_status *chat_method_call(crt *rt, cv self, const char *name, const cargs *a, cv *out);

/* Builtins by index (ast.h's chat_filter_find / chat_test_find / chat_global_find). */
og_status *chat_filter_apply(crt *rt, int id, cv in, const cargs *a, cv *out);
og_status *chat_test_apply(crt *rt, int id, cv in, const cargs *a, bool *out);
og_status *chat_global_call(crt *rt, cv_func *fn, const cargs *a, cv *out);
const char *chat_filter_name(int id);
const char *chat_test_name(int id);

/* printf-style "fmt % args" and str.format, with Python's rules. */
og_status *chat_percent_format(crt *rt, cv fmt, cv args, cv *out);
og_status *chat_str_format(crt *rt, const cv_str *fmt, const cargs *a, cv *out);
/* format(value, spec) of one value. */
og_status *chat_format_value(crt *rt, sbuf *b, cv v, const char *spec, size_t spec_len);

/* JSON: text -> value (objects keep key order, ints stay ints), value -> text as
 * json.dumps(v, ensure_ascii, indent, separators, sort_keys) writes it. indent NULL: no
 * newlines; item_sep / key_sep NULL: Python's defaults for the indent. */
og_status *chat_json_parse(crt *rt, const char *json, size_t len, const char *what, cv *out);
og_status *chat_json_dump(crt *rt, sbuf *b, cv v, bool ensure_ascii, const char *indent,
                          const char *item_sep, const char *key_sep, bool sort_keys);

/* Python str helpers over cv_str (code point aware). */
og_status *chat_str_strip(crt *rt, cv s, cv chars, int which, cv *out); /* 1 l, 2 r, 3 both */
og_status *chat_str_case(crt *rt, cv s, int how, cv *out); /* 0 lower, 1 upper, 2 capitalize,
                                                             3 str.title, 4 swapcase, 5 |title */
og_status *chat_str_replace(crt *rt, cv s, cv old, cv rep, int64_t count, cv *out);
og_status *chat_str_split(crt *rt, cv s, cv sep, int64_t maxsplit, bool right, cv *out);
og_status *chat_str_splitlines(crt *rt, cv s, bool keepends, cv *out);
og_status *chat_str_join(crt *rt, cv sep, cv items, cv *out);
og_status *chat_str_slice_cp(crt *rt, const cv_str *s, size_t from, size_t to, cv *out);
/* Pads s to width code points: align '<', '>' or '^' (Python's center rounding). */
og_status *chat_str_pad(crt *rt, sbuf *b, const char *s, size_t len, size_t ncp, int64_t width,
                        char align, const char *fill, size_t fill_len);
/* HTML-escapes (markupsafe.escape) str(v); marks the result safe. */
og_status *chat_escape(crt *rt, cv v, cv *out);

/* strftime_now(format) with CHAT_TEMPLATE_NOW or the local clock. */
og_status *chat_strftime_now(crt *rt, const cv_str *fmt, cv *out);

/* Calls set(ctx, symbol, value) for each variable the template uses (vars.c). */
og_status *chat_vars_bind(const struct chat_vars *v, const struct chat_template *t,
                          og_status *(*set)(void *ctx, int sym, cv val), void *ctx);

/* Type error helpers. */
og_status *chat_type_err(crt *rt, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
