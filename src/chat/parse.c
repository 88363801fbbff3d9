/* The parser: tokens -> AST, following jinja2's grammar (jinja2/parser.py) so that the
 * same templates parse and the same ones fail:
 *   expression := or ('if' or ('else' expression)?)*
 *   or := and ('or' and)*          and := not ('and' not)*      not := 'not' not | compare
 *   compare := math1 (('=='|'!='|'<'|'<='|'>'|'>='|'in'|'not in') math1)*
 *   math1 := concat (('+'|'-') concat)*      concat := math2 ('~' math2)*
 *   math2 := pow (('*'|'/'|'//'|'%') pow)*   pow := unary ('**' unary)*   (left-assoc)
 *   unary := ('-'|'+') unary-without-filters | primary postfix, then filters and tests
 * A name that is neither a filter nor a test jinja2 knows is an error when the template
 * is compiled, except inside an `if` (or an inline if) of the same scope, where jinja2
 * defers it to run time: check_names() walks the tree with the same scope rules. */
#include "chat/ast.h"
#include "chat/lex.h"
#include "chat/chat.h"
#include "chat/eval.h"
#include "chat/ustr.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { MAX_NESTING = 200 }; /* jinja2 would hit Python's recursion limit about here */

typedef struct parser {
    tok *t;
    size_t n, pos;
    struct chat_template *tpl;
    arena *a;
    int depth;
    int loops; /* enclosing for loops in the current function body (break/continue) */
    /* open blocks, for the message when one is not closed */
    const char *open_name[MAX_NESTING];
    int open_line[MAX_NESTING];
    int nopen;
} parser;

static og_status *perr(parser *p, int line, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static og_status *perr(parser *p, int line, const char *fmt, ...) {
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return og_errorf(OG_ERR_INVALID_MODEL, "%s:%d: TemplateSyntaxError: %s", p->tpl->origin, line, msg);
}

static tok *cur(parser *p) { return &p->t[p->pos]; }
static tok *look(parser *p) { return &p->t[p->pos + 1 < p->n ? p->pos + 1 : p->pos]; }
static tok *next_tok(parser *p) {
    tok *t = &p->t[p->pos];
    if (p->pos + 1 < p->n) p->pos++;
    return t;
}

static bool is_name(const tok *t, const char *name) {
    return t->type == TK_NAME && strcmp(t->s, name) == 0;
}
static bool is_op(const tok *t, tok_op op) { return t->type == TK_OP && t->op == op; }

static const char *describe(const tok *t, char *buf, size_t size) {
    switch ((tok_type)t->type) {
    case TK_EOF: return "end of template";
    case TK_TEXT: return "template data";
    case TK_VAR_BEGIN: return "begin of print statement";
    case TK_VAR_END: return "end of print statement";
    case TK_BLOCK_BEGIN: return "begin of statement block";
    case TK_BLOCK_END: return "end of statement block";
    case TK_NAME: snprintf(buf, size, "%s", t->s); return buf;
    case TK_STRING: return "string";
    case TK_INT: return "integer";
    case TK_FLOAT: return "float";
    case TK_OP: return chat_op_text((tok_op)t->op);
    }
    return "?";
}

static og_status *unexpected(parser *p, const char *wanted) {
    char b[128];
    tok *t = cur(p);
    if (wanted) return perr(p, t->line, "expected %s, got '%s'", wanted, describe(t, b, sizeof b));
    return perr(p, t->line, "unexpected '%s'", describe(t, b, sizeof b));
}

static og_status *expect_op(parser *p, tok_op op) {
    if (!is_op(cur(p), op)) {
        char w[16];
        snprintf(w, sizeof w, "'%s'", chat_op_text(op));
        return unexpected(p, w);
    }
    next_tok(p);
    return NULL;
}

static og_status *expect_type(parser *p, tok_type type, const char *what) {
    if (cur(p)->type != type) return unexpected(p, what);
    next_tok(p);
    return NULL;
}

static ast *node(parser *p, ast_kind kind, int line) {
    ast *x = arena_alloc(p->a, sizeof *x);
    if (!x) return NULL;
    x->kind = (uint8_t)kind;
    x->line = line;
    x->id = -1;
    x->sym = -1;
    return x;
}

/* A growable array of nodes in the arena. */
typedef struct nodes {
    ast **v;
    int n, cap;
} nodes;

static og_status *add(parser *p, nodes *ns, ast *x) {
    if (ns->n == ns->cap) {
        int cap = ns->cap ? ns->cap * 2 : 4;
        ast **v = arena_alloc(p->a, (size_t)cap * sizeof *v);
        if (!v) return og_oom();
        if (ns->n) memcpy(v, ns->v, (size_t)ns->n * sizeof *v);
        ns->v = v;
        ns->cap = cap;
    }
    ns->v[ns->n++] = x;
    return NULL;
}

#define NEW(var, kind, line)                                                             \
    ast *var = node(p, (kind), (line));                                                  \
    if (!var) return og_oom()

static og_status *enter(parser *p) {
    if (++p->depth > MAX_NESTING)
        return perr(p, cur(p)->line, "expressions or blocks nested too deeply (more than %d "
                    "levels)", MAX_NESTING);
    return NULL;
}

/* ---- expressions ------------------------------------------------------------------- */

static og_status *parse_expression(parser *p, bool with_condexpr, ast **out);
static og_status *parse_tuple(parser *p, int mode, const char *end_name, bool explicit_parens,
                              ast **out);
static og_status *parse_unary(parser *p, bool with_filter, ast **out);
static og_status *parse_primary(parser *p, ast **out);
static og_status *parse_postfix(parser *p, ast *x, ast **out);
static og_status *parse_filter(parser *p, ast *x, bool start_inline, ast **out);

enum { TUPLE_EXPR, TUPLE_NOCOND, TUPLE_SIMPLE };

/* Call arguments "(a, b, k=v, *args, **kwargs)" into x. */
static og_status *parse_call_args(parser *p, ast *x) {
    int line = cur(p)->line;
    OG_TRY(expect_op(p, K_LPAREN));
    nodes args = {0}, kws = {0};
    const char **names = NULL;
    int cap_names = 0;
    bool require_comma = false;
    while (!is_op(cur(p), K_RPAREN)) {
        if (require_comma) {
            OG_TRY(expect_op(p, K_COMMA));
            if (is_op(cur(p), K_RPAREN)) break;
        }
        if (is_op(cur(p), K_MUL)) {
            if (x->star || x->dstar) return perr(p, line, "invalid syntax for function call expression");
            next_tok(p);
            OG_TRY(parse_expression(p, true, &x->star));
        } else if (is_op(cur(p), K_POW)) {
            if (x->dstar) return perr(p, line, "invalid syntax for function call expression");
            next_tok(p);
            OG_TRY(parse_expression(p, true, &x->dstar));
        } else if (cur(p)->type == TK_NAME && is_op(look(p), K_ASSIGN)) {
            if (x->dstar) return perr(p, line, "invalid syntax for function call expression");
            const char *key = cur(p)->s;
            next_tok(p);
            next_tok(p);
            ast *v = NULL;
            OG_TRY(parse_expression(p, true, &v));
            if (kws.n == cap_names) {
                int cap = cap_names ? cap_names * 2 : 4;
                const char **nn = arena_alloc(p->a, (size_t)cap * sizeof *nn);
                if (!nn) return og_oom();
                if (kws.n) memcpy(nn, names, (size_t)kws.n * sizeof *nn);
                names = nn;
                cap_names = cap;
            }
            names[kws.n] = key;
            OG_TRY(add(p, &kws, v));
        } else {
            if (x->star || x->dstar || kws.n)
                return perr(p, line, "invalid syntax for function call expression");
            ast *v = NULL;
            OG_TRY(parse_expression(p, true, &v));
            OG_TRY(add(p, &args, v));
        }
        require_comma = true;
    }
    OG_TRY(expect_op(p, K_RPAREN));
    x->items = args.v;
    x->n = args.n;
    x->kw = kws.v;
    x->kwnames = names;
    x->nkw = kws.n;
    return NULL;
}

static og_status *parse_list(parser *p, ast **out) {
    NEW(x, AX_LIST, cur(p)->line);
    OG_TRY(expect_op(p, K_LBRACKET));
    nodes items = {0};
    while (!is_op(cur(p), K_RBRACKET)) {
        if (items.n) OG_TRY(expect_op(p, K_COMMA));
        if (is_op(cur(p), K_RBRACKET)) break;
        ast *v = NULL;
        OG_TRY(parse_expression(p, true, &v));
        OG_TRY(add(p, &items, v));
    }
    OG_TRY(expect_op(p, K_RBRACKET));
    x->items = items.v;
    x->n = items.n;
    *out = x;
    return NULL;
}

static og_status *parse_dict(parser *p, ast **out) {
    NEW(x, AX_DICT, cur(p)->line);
    OG_TRY(expect_op(p, K_LBRACE));
    nodes keys = {0}, vals = {0};
    while (!is_op(cur(p), K_RBRACE)) {
        if (keys.n) OG_TRY(expect_op(p, K_COMMA));
        if (is_op(cur(p), K_RBRACE)) break;
        ast *k = NULL, *v = NULL;
        OG_TRY(parse_expression(p, true, &k));
        OG_TRY(expect_op(p, K_COLON));
        OG_TRY(parse_expression(p, true, &v));
        OG_TRY(add(p, &keys, k));
        OG_TRY(add(p, &vals, v));
    }
    OG_TRY(expect_op(p, K_RBRACE));
    x->items = keys.v;
    x->n = keys.n;
    x->kw = vals.v;
    x->nkw = vals.n;
    *out = x;
    return NULL;
}

static og_status *parse_primary(parser *p, ast **out) {
    OG_TRY(enter(p));
    tok *t = cur(p);
    og_status *st = NULL;
    if (t->type == TK_NAME) {
        ast *x = NULL;
        if (!strcmp(t->s, "true") || !strcmp(t->s, "True") || !strcmp(t->s, "false") ||
            !strcmp(t->s, "False")) {
            x = node(p, AX_CONST, t->line);
            if (!x) return og_oom();
            x->val = cv_bool(t->s[0] == 't' || t->s[0] == 'T');
        } else if (!strcmp(t->s, "none") || !strcmp(t->s, "None")) {
            x = node(p, AX_CONST, t->line);
            if (!x) return og_oom();
            x->val = cv_none();
        } else {
            x = node(p, AX_NAME, t->line);
            if (!x) return og_oom();
            x->name = t->s;
            x->sym = chat_sym(p->tpl, t->s, t->len);
            if (x->sym < 0) return og_oom();
        }
        next_tok(p);
        *out = x;
    } else if (t->type == TK_STRING) {
        NEW(x, AX_CONST, t->line);
        /* adjacent literals concatenate: 'a' "b" is "ab" */
        size_t total = 0;
        size_t k = p->pos;
        while (k < p->n && p->t[k].type == TK_STRING) total += p->t[k++].len;
        char *buf = arena_alloc(p->a, total + 1);
        if (!buf) return og_oom();
        size_t o = 0;
        while (cur(p)->type == TK_STRING) {
            memcpy(buf + o, cur(p)->s, cur(p)->len);
            o += cur(p)->len;
            next_tok(p);
        }
        cv_str *s = cv_str_in(p->a, buf, o);
        if (!s) return og_oom();
        x->val = cv_of_str(s);
        *out = x;
    } else if (t->type == TK_INT || t->type == TK_FLOAT) {
        NEW(x, AX_CONST, t->line);
        x->val = t->type == TK_INT ? cv_int(t->i) : cv_float(t->f);
        next_tok(p);
        *out = x;
    } else if (is_op(t, K_LPAREN)) {
        next_tok(p);
        st = parse_tuple(p, TUPLE_EXPR, NULL, true, out);
        if (!st) st = expect_op(p, K_RPAREN);
    } else if (is_op(t, K_LBRACKET)) {
        st = parse_list(p, out);
    } else if (is_op(t, K_LBRACE)) {
        st = parse_dict(p, out);
    } else {
        st = unexpected(p, NULL);
    }
    p->depth--;
    return st;
}

/* x[...] contents: an expression or a slice a:b:c. */
static og_status *parse_subscribed(parser *p, ast *obj, ast **out) {
    int line = cur(p)->line;
    ast *start = NULL, *stop = NULL, *step = NULL;
    if (is_op(cur(p), K_COLON)) {
        next_tok(p);
    } else {
        ast *e = NULL;
        OG_TRY(parse_expression(p, true, &e));
        if (!is_op(cur(p), K_COLON)) {
            NEW(x, AX_ITEM, line);
            x->a = obj;
            x->b = e;
            *out = x;
            return NULL;
        }
        next_tok(p);
        start = e;
    }
    if (!is_op(cur(p), K_COLON) && !is_op(cur(p), K_RBRACKET) && !is_op(cur(p), K_COMMA))
        OG_TRY(parse_expression(p, true, &stop));
    if (is_op(cur(p), K_COLON)) {
        next_tok(p);
        if (!is_op(cur(p), K_RBRACKET) && !is_op(cur(p), K_COMMA))
            OG_TRY(parse_expression(p, true, &step));
    }
    NEW(x, AX_SLICE, line);
    x->a = obj;
    x->b = start;
    x->c = stop;
    x->d = step;
    *out = x;
    return NULL;
}

static og_status *parse_subscript(parser *p, ast *obj, ast **out) {
    tok *t = next_tok(p);
    if (is_op(t, K_DOT)) {
        tok *a = next_tok(p);
        if (a->type == TK_NAME) {
            NEW(x, AX_ATTR, t->line);
            x->a = obj;
            x->name = a->s;
            x->name_len = a->len;
            x->id = chat_method_mask(a->s);
            *out = x;
            return NULL;
        }
        if (a->type != TK_INT) return perr(p, a->line, "expected name or number");
        NEW(k, AX_CONST, a->line);
        k->val = cv_int(a->i);
        NEW(x, AX_ITEM, t->line);
        x->a = obj;
        x->b = k;
        *out = x;
        return NULL;
    }
    /* '[' */
    nodes parts = {0};
    while (!is_op(cur(p), K_RBRACKET)) {
        if (parts.n) OG_TRY(expect_op(p, K_COMMA));
        ast *e = NULL;
        OG_TRY(parse_subscribed(p, obj, &e));
        OG_TRY(add(p, &parts, e));
    }
    OG_TRY(expect_op(p, K_RBRACKET));
    if (parts.n == 1) {
        *out = parts.v[0];
        return NULL;
    }
    if (parts.n == 0) return perr(p, t->line, "expected an expression in '[]'");
    /* x[a, b]: the key is the tuple (a, b) */
    NEW(tup, AX_TUPLE, t->line);
    nodes keys = {0};
    for (int i = 0; i < parts.n; i++) {
        if (parts.v[i]->kind == AX_SLICE)
            return og_errorf(OG_ERR_UNSUPPORTED, "%s:%d: a slice inside a tuple subscript is not "
                             "implemented", p->tpl->origin, t->line);
        OG_TRY(add(p, &keys, parts.v[i]->b));
    }
    tup->items = keys.v;
    tup->n = keys.n;
    NEW(x, AX_ITEM, t->line);
    x->a = obj;
    x->b = tup;
    *out = x;
    return NULL;
}

static og_status *parse_call(parser *p, ast *callee, ast **out) {
    NEW(c, AX_CALL, cur(p)->line);
    c->a = callee;
    OG_TRY(parse_call_args(p, c));
    *out = c;
    return NULL;
}

static og_status *parse_postfix(parser *p, ast *x, ast **out) {
    for (;;) {
        tok *t = cur(p);
        if (is_op(t, K_DOT) || is_op(t, K_LBRACKET)) {
            OG_TRY(parse_subscript(p, x, &x));
        } else if (is_op(t, K_LPAREN)) {
            OG_TRY(parse_call(p, x, &x));
        } else {
            break;
        }
    }
    *out = x;
    return NULL;
}

static og_status *dotted_name(parser *p, const char **out) {
    tok *t = cur(p);
    if (t->type != TK_NAME) return unexpected(p, "a name");
    next_tok(p);
    const char *name = t->s;
    while (is_op(cur(p), K_DOT)) {
        next_tok(p);
        tok *u = cur(p);
        if (u->type != TK_NAME) return unexpected(p, "a name");
        next_tok(p);
        size_t la = strlen(name), lb = u->len;
        char *joined = arena_alloc(p->a, la + lb + 2);
        if (!joined) return og_oom();
        memcpy(joined, name, la);
        joined[la] = '.';
        memcpy(joined + la + 1, u->s, lb + 1);
        name = joined;
    }
    *out = name;
    return NULL;
}

/* x|f|g(args): x may be NULL (the body of a filter block or a set block). */
static og_status *parse_filter(parser *p, ast *x, bool start_inline, ast **out) {
    while (is_op(cur(p), K_PIPE) || start_inline) {
        if (!start_inline) next_tok(p);
        int line = cur(p)->line;
        NEW(f, AX_FILTER, line);
        OG_TRY(dotted_name(p, &f->name));
        f->id = chat_filter_find(f->name);
        f->a = x;
        if (is_op(cur(p), K_LPAREN)) OG_TRY(parse_call_args(p, f));
        x = f;
        start_inline = false;
    }
    *out = x;
    return NULL;
}

static og_status *parse_test(parser *p, ast *x, ast **out) {
    int line = next_tok(p)->line; /* 'is' */
    bool negated = false;
    if (is_name(cur(p), "not")) {
        next_tok(p);
        negated = true;
    }
    NEW(t, AX_TEST, line);
    OG_TRY(dotted_name(p, &t->name));
    t->id = chat_test_find(t->name);
    t->a = x;
    t->flag = negated;
    tok *c = cur(p);
    if (is_op(c, K_LPAREN)) {
        OG_TRY(parse_call_args(p, t));
    } else if ((c->type == TK_NAME || c->type == TK_STRING || c->type == TK_INT ||
                c->type == TK_FLOAT || is_op(c, K_LBRACKET) || is_op(c, K_LBRACE)) &&
               !is_name(c, "else") && !is_name(c, "or") && !is_name(c, "and")) {
        if (is_name(c, "is")) return perr(p, c->line, "You cannot chain multiple tests with is");
        ast *arg = NULL;
        OG_TRY(parse_primary(p, &arg));
        OG_TRY(parse_postfix(p, arg, &arg));
        t->items = arena_alloc(p->a, sizeof *t->items);
        if (!t->items) return og_oom();
        t->items[0] = arg;
        t->n = 1;
    }
    *out = t;
    return NULL;
}

static og_status *parse_filter_expr(parser *p, ast *x, ast **out) {
    for (;;) {
        tok *t = cur(p);
        if (is_op(t, K_PIPE)) {
            OG_TRY(parse_filter(p, x, false, &x));
        } else if (is_name(t, "is")) {
            OG_TRY(parse_test(p, x, &x));
        } else if (is_op(t, K_LPAREN)) {
            OG_TRY(parse_call(p, x, &x));
        } else {
            break;
        }
    }
    *out = x;
    return NULL;
}

static og_status *parse_unary(parser *p, bool with_filter, ast **out) {
    OG_TRY(enter(p));
    tok *t = cur(p);
    ast *x = NULL;
    if (is_op(t, K_SUB) || is_op(t, K_ADD)) {
        next_tok(p);
        x = node(p, is_op(t, K_SUB) ? AX_NEG : AX_POS, t->line);
        if (!x) return og_oom();
        OG_TRY(parse_unary(p, false, &x->a));
    } else {
        OG_TRY(parse_primary(p, &x));
    }
    OG_TRY(parse_postfix(p, x, &x));
    if (with_filter) OG_TRY(parse_filter_expr(p, x, &x));
    p->depth--;
    *out = x;
    return NULL;
}

static og_status *binary(parser *p, ast_kind kind, ast_op op, int line, ast *l, ast *r, ast **out) {
    NEW(x, kind, line);
    x->op = (uint8_t)op;
    x->a = l;
    x->b = r;
    *out = x;
    return NULL;
}

static og_status *parse_pow(parser *p, ast **out) {
    ast *l = NULL;
    OG_TRY(parse_unary(p, true, &l));
    while (is_op(cur(p), K_POW)) {
        int line = next_tok(p)->line;
        ast *r = NULL;
        OG_TRY(parse_unary(p, true, &r));
        OG_TRY(binary(p, AX_BIN, OP_POW, line, l, r, &l));
    }
    *out = l;
    return NULL;
}

static og_status *parse_math2(parser *p, ast **out) {
    ast *l = NULL;
    OG_TRY(parse_pow(p, &l));
    for (;;) {
        tok *t = cur(p);
        ast_op op;
        if (is_op(t, K_MUL)) op = OP_MUL;
        else if (is_op(t, K_DIV)) op = OP_DIV;
        else if (is_op(t, K_FLOORDIV)) op = OP_FLOORDIV;
        else if (is_op(t, K_MOD)) op = OP_MOD;
        else break;
        next_tok(p);
        ast *r = NULL;
        OG_TRY(parse_pow(p, &r));
        OG_TRY(binary(p, AX_BIN, op, t->line, l, r, &l));
    }
    *out = l;
    return NULL;
}

static og_status *parse_concat(parser *p, ast **out) {
    ast *first = NULL;
    int line = cur(p)->line;
    OG_TRY(parse_math2(p, &first));
    if (!is_op(cur(p), K_TILDE)) {
        *out = first;
        return NULL;
    }
    nodes parts = {0};
    OG_TRY(add(p, &parts, first));
    while (is_op(cur(p), K_TILDE)) {
        next_tok(p);
        ast *r = NULL;
        OG_TRY(parse_math2(p, &r));
        OG_TRY(add(p, &parts, r));
    }
    NEW(x, AX_CONCAT, line);
    x->items = parts.v;
    x->n = parts.n;
    *out = x;
    return NULL;
}

static og_status *parse_math1(parser *p, ast **out) {
    ast *l = NULL;
    OG_TRY(parse_concat(p, &l));
    while (is_op(cur(p), K_ADD) || is_op(cur(p), K_SUB)) {
        tok *t = next_tok(p);
        ast *r = NULL;
        OG_TRY(parse_concat(p, &r));
        OG_TRY(binary(p, AX_BIN, t->op == K_ADD ? OP_ADD : OP_SUB, t->line, l, r, &l));
    }
    *out = l;
    return NULL;
}

static og_status *parse_compare(parser *p, ast **out) {
    int line = cur(p)->line;
    ast *first = NULL;
    OG_TRY(parse_math1(p, &first));
    nodes rest = {0};
    uint8_t ops[64];
    for (;;) {
        tok *t = cur(p);
        ast_op op;
        if (is_op(t, K_EQ)) op = OP_EQ;
        else if (is_op(t, K_NE)) op = OP_NE;
        else if (is_op(t, K_LT)) op = OP_LT;
        else if (is_op(t, K_LE)) op = OP_LE;
        else if (is_op(t, K_GT)) op = OP_GT;
        else if (is_op(t, K_GE)) op = OP_GE;
        else if (is_name(t, "in")) op = OP_IN;
        else if (is_name(t, "not") && is_name(look(p), "in")) {
            op = OP_NOTIN;
            next_tok(p);
        } else break;
        next_tok(p);
        if (rest.n == (int)sizeof ops) return perr(p, t->line, "too many chained comparisons");
        ast *r = NULL;
        OG_TRY(parse_math1(p, &r));
        ops[rest.n] = (uint8_t)op;
        OG_TRY(add(p, &rest, r));
    }
    if (!rest.n) {
        *out = first;
        return NULL;
    }
    NEW(x, AX_CMP, line);
    x->a = first;
    x->items = rest.v;
    x->n = rest.n;
    x->ops = arena_alloc(p->a, (size_t)rest.n);
    if (!x->ops) return og_oom();
    memcpy(x->ops, ops, (size_t)rest.n);
    *out = x;
    return NULL;
}

static og_status *parse_not(parser *p, ast **out) {
    if (is_name(cur(p), "not")) {
        OG_TRY(enter(p));
        int line = next_tok(p)->line;
        NEW(x, AX_NOT, line);
        OG_TRY(parse_not(p, &x->a));
        p->depth--;
        *out = x;
        return NULL;
    }
    return parse_compare(p, out);
}

/* left-associative chains of "and" / "or" over the next tighter level */
static og_status *parse_logic(parser *p, const char *word, ast_kind kind,
                              og_status *(*sub)(parser *, ast **), ast **out) {
    ast *l = NULL;
    OG_TRY(sub(p, &l));
    while (is_name(cur(p), word)) {
        int line = next_tok(p)->line;
        ast *r = NULL;
        OG_TRY(sub(p, &r));
        OG_TRY(binary(p, kind, 0, line, l, r, &l));
    }
    *out = l;
    return NULL;
}

static og_status *parse_and(parser *p, ast **out) { return parse_logic(p, "and", AX_AND, parse_not, out); }
static og_status *parse_or(parser *p, ast **out) { return parse_logic(p, "or", AX_OR, parse_and, out); }

static og_status *parse_condexpr(parser *p, ast **out) {
    OG_TRY(enter(p));
    int line = cur(p)->line;
    ast *x = NULL;
    OG_TRY(parse_or(p, &x));
    while (is_name(cur(p), "if")) {
        next_tok(p);
        NEW(c, AX_COND, line);
        c->b = x;
        OG_TRY(parse_or(p, &c->a));
        if (is_name(cur(p), "else")) {
            next_tok(p);
            OG_TRY(parse_condexpr(p, &c->c));
        }
        x = c;
        line = cur(p)->line;
    }
    p->depth--;
    *out = x;
    return NULL;
}

static og_status *parse_expression(parser *p, bool with_condexpr, ast **out) {
    return with_condexpr ? parse_condexpr(p, out) : parse_or(p, out);
}

static bool tuple_end(parser *p, const char *end_name) {
    tok *t = cur(p);
    if (t->type == TK_VAR_END || t->type == TK_BLOCK_END || is_op(t, K_RPAREN)) return true;
    return end_name && is_name(t, end_name);
}

static og_status *parse_tuple(parser *p, int mode, const char *end_name, bool explicit_parens,
                              ast **out) {
    int line = cur(p)->line;
    nodes items = {0};
    bool is_tuple = false;
    for (;;) {
        if (items.n) OG_TRY(expect_op(p, K_COMMA));
        if (tuple_end(p, end_name)) break;
        ast *e = NULL;
        if (mode == TUPLE_SIMPLE) OG_TRY(parse_primary(p, &e));
        else OG_TRY(parse_expression(p, mode == TUPLE_EXPR, &e));
        OG_TRY(add(p, &items, e));
        if (is_op(cur(p), K_COMMA)) is_tuple = true;
        else break;
    }
    if (!is_tuple) {
        if (items.n) {
            *out = items.v[0];
            return NULL;
        }
        if (!explicit_parens) return unexpected(p, "an expression");
    }
    NEW(x, AX_TUPLE, line);
    x->items = items.v;
    x->n = items.n;
    *out = x;
    return NULL;
}

/* ---- statements -------------------------------------------------------------------- */

static og_status *subparse(parser *p, const char *const *ends, ast **body);

/* After a statement's header: an optional ':' then '%}', then the body up to one of
 * ends (the end tag's name is left as the current token). */
static og_status *parse_statements(parser *p, const char *const *ends, bool drop_needle,
                                   ast **body) {
    if (is_op(cur(p), K_COLON)) next_tok(p);
    OG_TRY(expect_type(p, TK_BLOCK_END, "end of statement block"));
    OG_TRY(subparse(p, ends, body));
    if (drop_needle) next_tok(p);
    return NULL;
}

static og_status *open_block(parser *p, const char *name, int line) {
    if (p->nopen == MAX_NESTING)
        return perr(p, line, "blocks nested more than %d deep", MAX_NESTING);
    p->open_name[p->nopen] = name;
    p->open_line[p->nopen] = line;
    p->nopen++;
    return NULL;
}

static og_status *assign_target(parser *p, bool with_namespace, const char *end_name, ast **out) {
    tok *t = cur(p);
    if (with_namespace && t->type == TK_NAME && is_op(look(p), K_DOT)) {
        next_tok(p);
        next_tok(p);
        tok *attr = cur(p);
        if (attr->type != TK_NAME) return unexpected(p, "an attribute name");
        next_tok(p);
        NEW(x, AX_ATTR, t->line);
        NEW(base, AX_NAME, t->line);
        base->name = t->s;
        base->sym = chat_sym(p->tpl, t->s, t->len);
        if (base->sym < 0) return og_oom();
        x->a = base;
        x->name = attr->s;
        *out = x;
        return NULL;
    }
    ast *x = NULL;
    OG_TRY(parse_tuple(p, TUPLE_SIMPLE, end_name, false, &x));
    /* only names, and tuples of names, can be assigned */
    if (x->kind == AX_TUPLE) {
        for (int i = 0; i < x->n; i++)
            if (x->items[i]->kind != AX_NAME && x->items[i]->kind != AX_TUPLE)
                return perr(p, t->line, "can't assign to %s", "this expression");
    } else if (x->kind != AX_NAME) {
        return perr(p, t->line, "can't assign to %s",
                    x->kind == AX_CONST ? "a constant" : "this expression");
    }
    *out = x;
    return NULL;
}

static og_status *name_only(parser *p, ast **out) {
    tok *t = cur(p);
    if (t->type != TK_NAME) return unexpected(p, "a name");
    if (!strcmp(t->s, "true") || !strcmp(t->s, "false") || !strcmp(t->s, "none") ||
        !strcmp(t->s, "True") || !strcmp(t->s, "False") || !strcmp(t->s, "None"))
        return perr(p, t->line, "can't assign to '%s'", t->s);
    next_tok(p);
    NEW(x, AX_NAME, t->line);
    x->name = t->s;
    x->sym = chat_sym(p->tpl, t->s, t->len);
    if (x->sym < 0) return og_oom();
    *out = x;
    return NULL;
}

/* "(a, b=1, c=2)" of a macro or call block. */
static og_status *parse_signature(parser *p, ast *x) {
    OG_TRY(expect_op(p, K_LPAREN));
    nodes args = {0}, defs = {0};
    bool any_default = false;
    while (!is_op(cur(p), K_RPAREN)) {
        if (args.n) OG_TRY(expect_op(p, K_COMMA));
        ast *arg = NULL;
        OG_TRY(name_only(p, &arg));
        ast *def = NULL;
        if (is_op(cur(p), K_ASSIGN)) {
            next_tok(p);
            OG_TRY(parse_expression(p, true, &def));
            any_default = true;
        } else if (any_default) {
            return perr(p, arg->line, "non-default argument follows default argument");
        }
        OG_TRY(add(p, &args, arg));
        OG_TRY(add(p, &defs, def));
    }
    OG_TRY(expect_op(p, K_RPAREN));
    x->items = args.v;
    x->n = args.n;
    x->kw = defs.v;
    x->nkw = defs.n;
    return NULL;
}

/* Which of caller/varargs/kwargs a macro body reads (and does not declare itself). */
static void scan_specials(const struct chat_template *tpl, const ast *x, int *bits) {
    if (!x) return;
    if (x->kind == AX_NAME) {
        if (x->sym == tpl->sym_varargs) *bits |= MACRO_VARARGS;
        else if (x->sym == tpl->sym_kwargs) *bits |= MACRO_KWARGS;
        else if (x->sym == tpl->sym_caller) *bits |= MACRO_CALLER;
        return;
    }
    const ast *kids[] = {x->a, x->b, x->c, x->d, x->e, x->star, x->dstar};
    for (size_t i = 0; i < sizeof kids / sizeof kids[0]; i++) scan_specials(tpl, kids[i], bits);
    for (int i = 0; i < x->n; i++) scan_specials(tpl, x->items[i], bits);
    for (int i = 0; i < x->nkw; i++) scan_specials(tpl, x->kw[i], bits);
}

static og_status *macro_bits(parser *p, ast *x) {
    int bits = 0;
    scan_specials(p->tpl, x->b, &bits);
    for (int i = 0; i < x->nkw; i++) scan_specials(p->tpl, x->kw[i], &bits);
    for (int i = 0; i < x->n; i++) { /* a parameter of that name is declared, not special */
        if (x->items[i]->sym == p->tpl->sym_varargs) bits &= ~MACRO_VARARGS;
        if (x->items[i]->sym == p->tpl->sym_kwargs) bits &= ~MACRO_KWARGS;
        if (x->items[i]->sym == p->tpl->sym_caller) bits &= ~MACRO_CALLER;
    }
    x->id = bits;
    return NULL;
}

/* The body of a macro or call block: a function of its own in jinja2's compiled code,
 * so break/continue do not reach loops outside it. Closes the open block. */
static og_status *function_body(parser *p, const char *end, ast *x) {
    const char *const ends[] = {end, NULL};
    int loops = p->loops;
    p->loops = 0;
    OG_TRY(parse_statements(p, ends, true, &x->b));
    p->loops = loops;
    OG_TRY(macro_bits(p, x));
    p->nopen--;
    return NULL;
}

static og_status *parse_statement(parser *p, ast **out) {
    tok *t = cur(p);
    if (t->type != TK_NAME) return unexpected(p, "a statement name");
    const char *name = t->s;
    int line = t->line;
    og_status *st = enter(p);
    if (st) return st;
    next_tok(p);
    if (!strcmp(name, "if")) {
        OG_TRY(open_block(p, "if", line));
        NEW(x, AS_IF, line);
        ast *result = x;
        static const char *const ends[] = {"elif", "else", "endif", NULL};
        static const char *const endif[] = {"endif", NULL};
        for (;;) {
            OG_TRY(parse_tuple(p, TUPLE_NOCOND, NULL, false, &x->a));
            OG_TRY(parse_statements(p, ends, false, &x->b));
            tok *e = next_tok(p);
            if (is_name(e, "elif")) {
                NEW(y, AS_IF, cur(p)->line);
                x->c = y;
                x = y;
                continue;
            }
            if (is_name(e, "else")) OG_TRY(parse_statements(p, endif, true, &x->c));
            break;
        }
        p->nopen--;
        *out = result;
    } else if (!strcmp(name, "for")) {
        OG_TRY(open_block(p, "for", line));
        NEW(x, AS_FOR, line);
        static const char *const ends[] = {"endfor", "else", NULL};
        static const char *const endfor[] = {"endfor", NULL};
        OG_TRY(assign_target(p, false, "in", &x->a));
        if (!is_name(cur(p), "in")) return unexpected(p, "'in'");
        next_tok(p);
        OG_TRY(parse_tuple(p, TUPLE_NOCOND, "recursive", false, &x->b));
        if (is_name(cur(p), "if")) {
            next_tok(p);
            OG_TRY(parse_expression(p, true, &x->c));
        }
        if (is_name(cur(p), "recursive")) {
            next_tok(p);
            x->flag = true;
        }
        p->loops++;
        OG_TRY(parse_statements(p, ends, false, &x->d));
        p->loops--;
        if (is_name(next_tok(p), "else")) OG_TRY(parse_statements(p, endfor, true, &x->e));
        p->nopen--;
        *out = x;
    } else if (!strcmp(name, "set")) {
        ast *target = NULL;
        OG_TRY(assign_target(p, true, NULL, &target));
        if (is_op(cur(p), K_ASSIGN)) {
            next_tok(p);
            NEW(x, AS_SET, line);
            x->a = target;
            OG_TRY(parse_tuple(p, TUPLE_EXPR, NULL, false, &x->b));
            *out = x;
        } else {
            OG_TRY(open_block(p, "set", line));
            NEW(x, AS_SET_BLOCK, line);
            static const char *const ends[] = {"endset", NULL};
            x->a = target;
            OG_TRY(parse_filter(p, NULL, false, &x->c));
            OG_TRY(parse_statements(p, ends, true, &x->b));
            p->nopen--;
            *out = x;
        }
    } else if (!strcmp(name, "macro")) {
        OG_TRY(open_block(p, "macro", line));
        NEW(x, AS_MACRO, line);
        ast *nm = NULL;
        OG_TRY(name_only(p, &nm));
        x->sym = nm->sym;
        x->name = nm->name;
        OG_TRY(parse_signature(p, x));
        OG_TRY(function_body(p, "endmacro", x));
        *out = x;
    } else if (!strcmp(name, "call")) {
        OG_TRY(open_block(p, "call", line));
        NEW(x, AS_CALL_BLOCK, line);
        if (is_op(cur(p), K_LPAREN)) OG_TRY(parse_signature(p, x));
        OG_TRY(parse_expression(p, true, &x->a));
        if (x->a->kind != AX_CALL) return perr(p, line, "expected call");
        OG_TRY(function_body(p, "endcall", x));
        *out = x;
    } else if (!strcmp(name, "filter")) {
        OG_TRY(open_block(p, "filter", line));
        NEW(x, AS_FILTER_BLOCK, line);
        OG_TRY(parse_filter(p, NULL, true, &x->a));
        static const char *const ends[] = {"endfilter", NULL};
        OG_TRY(parse_statements(p, ends, true, &x->b));
        p->nopen--;
        *out = x;
    } else if (!strcmp(name, "with")) {
        OG_TRY(open_block(p, "with", line));
        NEW(x, AS_WITH, line);
        nodes targets = {0}, values = {0};
        while (cur(p)->type != TK_BLOCK_END) {
            if (targets.n) OG_TRY(expect_op(p, K_COMMA));
            ast *tg = NULL, *v = NULL;
            OG_TRY(assign_target(p, false, NULL, &tg));
            OG_TRY(expect_op(p, K_ASSIGN));
            OG_TRY(parse_expression(p, true, &v));
            OG_TRY(add(p, &targets, tg));
            OG_TRY(add(p, &values, v));
        }
        x->items = targets.v;
        x->n = targets.n;
        x->kw = values.v;
        x->nkw = values.n;
        static const char *const ends[] = {"endwith", NULL};
        OG_TRY(parse_statements(p, ends, true, &x->b));
        p->nopen--;
        *out = x;
    } else if (!strcmp(name, "generation")) {
        /* transformers' tag: renders its body (it only marks assistant text for masks) */
        OG_TRY(open_block(p, "generation", line));
        NEW(x, AS_SCOPE, line);
        static const char *const ends[] = {"endgeneration", NULL};
        OG_TRY(parse_statements(p, ends, true, &x->b));
        p->nopen--;
        *out = x;
    } else if (!strcmp(name, "print")) {
        NEW(x, AS_BODY, line);
        nodes prints = {0};
        while (cur(p)->type != TK_BLOCK_END) {
            if (prints.n) OG_TRY(expect_op(p, K_COMMA));
            NEW(pr, AS_PRINT, cur(p)->line);
            OG_TRY(parse_expression(p, true, &pr->a));
            OG_TRY(add(p, &prints, pr));
        }
        x->items = prints.v;
        x->n = prints.n;
        *out = x;
    } else if (!strcmp(name, "break") || !strcmp(name, "continue")) {
        if (!p->loops) return perr(p, line, "'%s' outside of a loop", name);
        NEW(x, name[0] == 'b' ? AS_BREAK : AS_CONTINUE, line);
        *out = x;
    } else if (!strcmp(name, "extends") || !strcmp(name, "include") || !strcmp(name, "import") ||
               !strcmp(name, "from")) {
        /* they load other templates; transformers' environment has no loader, so jinja2
         * fails with a TypeError when one runs: so does this node */
        NEW(x, AS_UNSUPPORTED, line);
        x->name = name;
        while (cur(p)->type != TK_BLOCK_END && cur(p)->type != TK_EOF) next_tok(p);
        *out = x;
    } else if (!strcmp(name, "block") || !strcmp(name, "autoescape")) {
        /* jinja2 statements a chat template has no use for (there is no loader to include
         * from); refused when parsed, naming the construct */
        return og_errorf(OG_ERR_UNSUPPORTED, "%s:%d: the '{%% %s %%}' statement is not "
                         "implemented", p->tpl->origin, line, name);
    } else {
        for (int i = p->nopen - 1; i >= 0; i--) {
            char want[32];
            snprintf(want, sizeof want, "end%s", p->open_name[i]);
            if (!strcmp(name, want) || (!strcmp(name, "else") || !strcmp(name, "elif")))
                return perr(p, line, "unexpected '%s': the innermost open block is '%s' (line %d), "
                            "which needs 'end%s'", name, p->open_name[p->nopen - 1],
                            p->open_line[p->nopen - 1], p->open_name[p->nopen - 1]);
        }
        if (!strncmp(name, "end", 3) || !strcmp(name, "else") || !strcmp(name, "elif"))
            return perr(p, line, "unexpected '%s': no block is open", name);
        return perr(p, line, "unknown tag '%s'", name);
    }
    p->depth--;
    return NULL;
}

static og_status *subparse(parser *p, const char *const *ends, ast **body) {
    NEW(b, AS_BODY, cur(p)->line);
    nodes items = {0};
    for (;;) {
        tok *t = cur(p);
        if (t->type == TK_EOF) {
            if (!ends) break;
            char want[128] = "";
            for (int i = 0; ends[i]; i++) {
                size_t l = strlen(want);
                snprintf(want + l, sizeof want - l, "%s'%s'", i ? " or " : "", ends[i]);
            }
            return perr(p, p->nopen ? p->open_line[p->nopen - 1] : t->line,
                        "unclosed '%s' block: the template ended while looking for %s",
                        p->nopen ? p->open_name[p->nopen - 1] : "?", want);
        }
        if (t->type == TK_TEXT) {
            NEW(x, AS_TEXT, t->line);
            cv_str *s = cv_str_in(p->a, t->s, t->len);
            if (!s) return og_oom();
            x->val = cv_of_str(s);
            OG_TRY(add(p, &items, x));
            next_tok(p);
        } else if (t->type == TK_VAR_BEGIN) {
            next_tok(p);
            NEW(x, AS_PRINT, t->line);
            OG_TRY(parse_tuple(p, TUPLE_EXPR, NULL, false, &x->a));
            OG_TRY(expect_type(p, TK_VAR_END, "end of print statement"));
            OG_TRY(add(p, &items, x));
        } else if (t->type == TK_BLOCK_BEGIN) {
            next_tok(p);
            if (ends)
                for (int i = 0; ends[i]; i++)
                    if (is_name(cur(p), ends[i])) goto done;
            ast *x = NULL;
            OG_TRY(parse_statement(p, &x));
            OG_TRY(expect_type(p, TK_BLOCK_END, "end of statement block"));
            OG_TRY(add(p, &items, x));
        } else {
            return unexpected(p, NULL);
        }
    }
done:
    b->items = items.v;
    b->n = items.n;
    *body = b;
    return NULL;
}

/* ---- names of filters and tests, with jinja2's compile-time rule ------------------- */

static og_status *check_names(parser *p, const ast *x, bool soft);

static og_status *check_list(parser *p, ast *const *v, int n, bool soft) {
    for (int i = 0; i < n; i++) OG_TRY(check_names(p, v[i], soft));
    return NULL;
}

static og_status *check_names(parser *p, const ast *x, bool soft) {
    if (!x) return NULL;
    switch ((ast_kind)x->kind) {
    case AS_IF:
    case AX_COND:
        soft = true;
        break;
    case AS_FOR:
        OG_TRY(check_names(p, x->a, soft));
        OG_TRY(check_names(p, x->b, soft));
        OG_TRY(check_names(p, x->c, false));
        OG_TRY(check_names(p, x->d, false));
        return check_names(p, x->e, false);
    case AS_SET_BLOCK:
    case AS_MACRO:
    case AS_FILTER_BLOCK:
    case AS_SCOPE:
        soft = false;
        break;
    case AS_CALL_BLOCK:
    case AS_WITH:
        OG_TRY(check_names(p, x->a, soft));
        OG_TRY(check_list(p, x->kw, x->nkw, x->kind == AS_WITH ? soft : false));
        OG_TRY(check_list(p, x->items, x->n, false));
        return check_names(p, x->b, false);
    case AX_FILTER:
    case AX_TEST:
        if (x->id < 0 && !soft)
            return og_errorf(OG_ERR_INVALID_MODEL, "%s:%d: TemplateAssertionError: No %s named "
                             "'%s'.", p->tpl->origin, x->line,
                             x->kind == AX_FILTER ? "filter" : "test", x->name);
        break;
    default:
        break;
    }
    const ast *kids[] = {x->a, x->b, x->c, x->d, x->e, x->star, x->dstar};
    for (size_t i = 0; i < sizeof kids / sizeof kids[0]; i++) OG_TRY(check_names(p, kids[i], soft));
    OG_TRY(check_list(p, x->items, x->n, soft));
    return check_list(p, x->kw, x->nkw, soft);
}

/* ---- the template object ------------------------------------------------------------- */

int chat_sym(struct chat_template *t, const char *name, size_t len) {
    for (int i = 0; i < t->nsym; i++)
        if (strlen(t->syms[i]) == len && memcmp(t->syms[i], name, len) == 0) return i;
    if (t->nsym == t->capsym) {
        int cap = t->capsym ? t->capsym * 2 : 32;
        char **s = arena_alloc(&t->mem, (size_t)cap * sizeof *s);
        int *g = arena_alloc(&t->mem, (size_t)cap * sizeof *g);
        if (!s || !g) return -1;
        if (t->nsym) {
            memcpy(s, t->syms, (size_t)t->nsym * sizeof *s);
            memcpy(g, t->sym_global, (size_t)t->nsym * sizeof *g);
        }
        t->syms = s;
        t->sym_global = g;
        t->capsym = cap;
    }
    t->syms[t->nsym] = arena_strndup(&t->mem, name, len);
    if (!t->syms[t->nsym]) return -1;
    t->sym_global[t->nsym] = chat_global_find(t->syms[t->nsym]);
    return t->nsym++;
}

int chat_sym_find(const struct chat_template *t, const char *name) {
    for (int i = 0; i < t->nsym; i++)
        if (!strcmp(t->syms[i], name)) return i;
    return -1;
}

og_status *chat_template_parse(const char *src, size_t len, const char *origin,
                               chat_template **out) {
    if (!src || !out) return og_errorf(OG_ERR_INVALID_ARGUMENT, "chat_template_parse: NULL");
    chat_template *t = calloc(1, sizeof *t);
    if (!t) return og_oom();
    arena_init(&t->mem);
    og_status *st = NULL;
    t->origin = arena_strdup(&t->mem, origin ? origin : "chat template");
    if (!t->origin) {
        st = og_oom();
        goto fail;
    }
    if (!u8_valid(src, len)) {
        st = og_errorf(OG_ERR_INVALID_MODEL, "%s: the template is not valid UTF-8", t->origin);
        goto fail;
    }
    t->sym_loop = chat_sym(t, "loop", 4);
    t->sym_varargs = chat_sym(t, "varargs", 7);
    t->sym_kwargs = chat_sym(t, "kwargs", 6);
    t->sym_caller = chat_sym(t, "caller", 6);
    if (t->sym_loop < 0 || t->sym_varargs < 0 || t->sym_kwargs < 0 || t->sym_caller < 0) {
        st = og_oom();
        goto fail;
    }
    parser p;
    memset(&p, 0, sizeof p);
    p.tpl = t;
    p.a = &t->mem;
    if ((st = chat_lex(src, len, &t->mem, t->origin, &p.t, &p.n))) goto fail;
    if ((st = subparse(&p, NULL, &t->root))) goto fail;
    if ((st = check_names(&p, t->root, false))) goto fail;
    *out = t;
    return NULL;
fail:
    chat_template_free(t);
    return st;
}

void chat_template_free(chat_template *t) {
    if (!t) return;
    arena_free(&t->mem);
    free(t);
}

const char *chat_template_origin(const chat_template *t) { return t->origin; }
