/* The parsed template: an AST of statements and expressions, and the symbol table of
 * the names it uses (variables are looked up by symbol number, not by string). Built by
 * parse.c, walked by eval.c; lives in the template's arena. */
#ifndef OG_CHAT_AST_H
#define OG_CHAT_AST_H

#include "chat/cv.h"

typedef enum ast_kind {
    /* expressions */
    AX_CONST,  /* val */
    AX_NAME,   /* sym */
    AX_LIST,   /* items */
    AX_TUPLE,  /* items */
    AX_DICT,   /* items: keys, kw: values (nkw == n) */
    AX_ATTR,   /* a.name */
    AX_ITEM,   /* a[b] */
    AX_SLICE,  /* a[b:c:d], each of b, c, d may be NULL */
    AX_CALL,   /* a(items..., kwnames=kw..., *star, **dstar) */
    AX_FILTER, /* a|name(args): id; a NULL in a filter block's chain (the captured text) */
    AX_TEST,   /* a is [not] name(args): id, flag = negated */
    AX_NEG,    /* -a */
    AX_POS,    /* +a */
    AX_NOT,    /* not a */
    AX_BIN,    /* a op b */
    AX_CMP,    /* a ops[0] items[0] ops[1] items[1] ... */
    AX_AND,    /* a and b */
    AX_OR,     /* a or b */
    AX_CONCAT, /* items joined by ~ */
    AX_COND,   /* b if a else c (c NULL: undefined) */
    /* statements */
    AS_BODY,        /* items */
    AS_TEXT,        /* val (a string) */
    AS_PRINT,       /* {{ a }} */
    AS_IF,          /* if a: b else c (c: a body or an elif AS_IF) */
    AS_FOR,         /* for a in b if c: d else e; flag = recursive */
    AS_SET,         /* a = b */
    AS_SET_BLOCK,   /* a = rendered b, through filter chain c (or NULL) */
    AS_MACRO,       /* sym, name; items = params (AX_NAME), kw = defaults; b = body */
    AS_CALL_BLOCK,  /* a = the call; items/kw = caller params/defaults; b = caller body */
    AS_FILTER_BLOCK,/* b rendered, through filter chain a */
    AS_WITH,        /* items = targets, kw = values; b = body */
    AS_SCOPE,       /* b in a scope of its own ({% generation %}) */
    AS_BREAK,
    AS_CONTINUE,
    AS_UNSUPPORTED  /* include/extends/import/from: name; fails when reached, as in jinja2
                       without a loader */
} ast_kind;

typedef enum ast_op {
    OP_ADD, OP_SUB, OP_MUL, OP_DIV, OP_FLOORDIV, OP_MOD, OP_POW,
    OP_EQ, OP_NE, OP_LT, OP_LE, OP_GT, OP_GE, OP_IN, OP_NOTIN
} ast_op;

/* AS_MACRO / AS_CALL_BLOCK: which special names the body reads (jinja2 decides from
 * them which extra arguments a macro accepts). */
enum { MACRO_VARARGS = 1, MACRO_KWARGS = 2, MACRO_CALLER = 4 };

typedef struct ast {
    uint8_t kind, op;
    bool flag;
    int line;
    int sym;              /* AX_NAME, AS_MACRO */
    int id;               /* AX_FILTER / AX_TEST: builtin index (-1: unknown name);
                             AS_MACRO / AS_CALL_BLOCK: MACRO_* bits;
                             AX_ATTR: chat_method_mask of the name */
    const char *name;     /* attribute, filter, test, macro or statement name */
    size_t name_len;      /* AX_ATTR */
    cv val;               /* AX_CONST, AS_TEXT */
    struct ast *a, *b, *c, *d, *e;
    struct ast **items;
    int n;
    struct ast **kw;
    const char **kwnames;
    int nkw;
    struct ast *star, *dstar;
    uint8_t *ops;         /* AX_CMP: n operators */
} ast;

struct chat_template {
    arena mem;
    char *origin;      /* what messages call the template: a file name or config key */
    ast *root;         /* AS_BODY */
    char **syms;       /* symbol names */
    int nsym, capsym;
    int *sym_global;   /* per symbol: its cv_builtin when it names a global, else -1 */
    int sym_loop, sym_varargs, sym_kwargs, sym_caller;
};

/* Symbol of name (added when new); -1 when out of memory. */
int chat_sym(struct chat_template *t, const char *name, size_t len);
/* The symbol of name if the template uses it, else -1. */
int chat_sym_find(const struct chat_template *t, const char *name);

/* Filters and tests by name: the index into their tables, or -1 when jinja2 has no
 * such filter/test (tables in filters.c and tests.c). */
int chat_filter_find(const char *name);
int chat_test_find(const char *name);
/* Global builtins (range, namespace, ...) by name: a cv_builtin, or -1. */
int chat_global_find(const char *name);

#endif
