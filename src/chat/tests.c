/* jinja2's builtin tests (jinja2/tests.py): `x is defined`, `x is string`, ...
 * Python's type model decides the answers: bool is a number, an undefined value is
 * iterable, callable and a sequence, a dict is a sequence too. */
#include "chat/eval.h"

#include <string.h>

typedef og_status *(*test_fn)(crt *rt, cv in, const cargs *a, bool *out);

#define TEST_FN(name) static og_status *t_##name(crt *rt, cv in, const cargs *a, bool *out)

static og_status *no_args(crt *rt, const cargs *a, const char *name) {
    if (a->npos || a->nkw) return chat_type_err(rt, "test '%s' takes no arguments", name);
    return NULL;
}

static og_status *one_arg(crt *rt, const cargs *a, const char *name, cv *arg) {
    static const char *const names[] = {"other"};
    bool given;
    OG_TRY(chat_bind(rt, name, a, names, 1, 1, arg, &given));
    return NULL;
}

#define SIMPLE(name, expr)                                                               \
    TEST_FN(name) {                                                                      \
        OG_TRY(no_args(rt, a, #name));                                                   \
        *out = (expr);                                                                   \
        return NULL;                                                                     \
    }

SIMPLE(defined, in.kind != CV_UNDEF)
SIMPLE(undefined, in.kind == CV_UNDEF)
SIMPLE(none, in.kind == CV_NONE)
SIMPLE(boolean, in.kind == CV_BOOL)
SIMPLE(is_false, in.kind == CV_BOOL && !in.b)
SIMPLE(is_true, in.kind == CV_BOOL && in.b)
SIMPLE(integer, in.kind == CV_INT)
SIMPLE(float, in.kind == CV_FLOAT)
SIMPLE(number, cv_is_number(in))
SIMPLE(string, in.kind == CV_STR)
SIMPLE(mapping, in.kind == CV_DICT)
SIMPLE(escaped, in.kind == CV_STR && (in.flags & CVF_MARKUP))
SIMPLE(callable, in.kind == CV_UNDEF || in.kind == CV_LOOP ||
                     (in.kind == CV_FUNC && in.fn->type != CF_CYCLER))
SIMPLE(iterable, in.kind == CV_UNDEF || in.kind == CV_STR || in.kind == CV_LIST ||
                     in.kind == CV_DICT)
/* len() works and there is __getitem__ */
SIMPLE(sequence, in.kind == CV_UNDEF || in.kind == CV_STR || in.kind == CV_DICT ||
                     (in.kind == CV_LIST && (in.l->seq == CV_SEQ_LIST || in.l->seq == CV_SEQ_TUPLE ||
                                             in.l->seq == CV_SEQ_RANGE)))

static og_status *mod_is(crt *rt, cv in, cv by, int64_t want, bool *out) {
    cv r;
    OG_TRY(chat_binop(rt, OP_MOD, in, by, &r));
    *out = cv_eq(r, cv_int(want));
    return NULL;
}

TEST_FN(odd) {
    OG_TRY(no_args(rt, a, "odd"));
    return mod_is(rt, in, cv_int(2), 1, out);
}

TEST_FN(even) {
    OG_TRY(no_args(rt, a, "even"));
    return mod_is(rt, in, cv_int(2), 0, out);
}

TEST_FN(divisibleby) {
    static const char *const names[] = {"num"};
    cv num;
    bool given;
    OG_TRY(chat_bind(rt, "divisibleby", a, names, 1, 1, &num, &given));
    return mod_is(rt, in, num, 0, out);
}

static og_status *case_is(crt *rt, cv in, const char *method, bool *out) {
    cv s, r;
    OG_TRY(cv_to_str(rt, in, &s));
    cargs none = {0};
    OG_TRY(chat_method_call(rt, s, method, &none, &r));
    *out = r.b;
    return NULL;
}

TEST_FN(lower) {
    OG_TRY(no_args(rt, a, "lower"));
    return case_is(rt, in, "islower", out);
}

TEST_FN(upper) {
    OG_TRY(no_args(rt, a, "upper"));
    return case_is(rt, in, "isupper", out);
}

TEST_FN(sameas) {
    cv o;
    OG_TRY(one_arg(rt, a, "sameas", &o));
    if (in.kind != o.kind) {
        *out = false;
        return NULL;
    }
    switch ((cv_kind)in.kind) {
    case CV_NONE: *out = true; break;
    case CV_BOOL: *out = in.b == o.b; break;
    case CV_INT: *out = in.i == o.i && in.i >= -5 && in.i <= 256; break; /* CPython's small ints */
    case CV_STR: *out = in.s == o.s; break;
    case CV_LIST: *out = in.l == o.l; break;
    case CV_DICT:
    case CV_NS: *out = in.d == o.d; break;
    case CV_FUNC: *out = in.fn == o.fn; break;
    case CV_LOOP: *out = in.loop == o.loop; break;
    default: *out = false;
    }
    return NULL;
}

TEST_FN(in) {
    cv seq;
    OG_TRY(one_arg(rt, a, "in", &seq));
    return chat_contains(rt, seq, in, out);
}

static og_status *compare(crt *rt, cv in, const cargs *a, const char *name, int op, bool *out) {
    cv o;
    OG_TRY(one_arg(rt, a, name, &o));
    if (op == 0) {
        *out = cv_eq(in, o);
        return NULL;
    }
    if (op == 1) {
        *out = !cv_eq(in, o);
        return NULL;
    }
    static const char *const syms[] = {"", "", "<", "<=", ">", ">="};
    int c;
    OG_TRY(cv_cmp(rt, in, o, syms[op], &c));
    *out = op == 2 ? c < 0 : op == 3 ? c <= 0 : op == 4 ? c > 0 : c >= 0;
    return NULL;
}

TEST_FN(eq) { return compare(rt, in, a, "eq", 0, out); }
TEST_FN(ne) { return compare(rt, in, a, "ne", 1, out); }
TEST_FN(lt) { return compare(rt, in, a, "lt", 2, out); }
TEST_FN(le) { return compare(rt, in, a, "le", 3, out); }
TEST_FN(gt) { return compare(rt, in, a, "gt", 4, out); }
TEST_FN(ge) { return compare(rt, in, a, "ge", 5, out); }

TEST_FN(filter) {
    OG_TRY(no_args(rt, a, "filter"));
    *out = in.kind == CV_STR && chat_filter_find(in.s->s) >= 0;
    return NULL;
}

TEST_FN(test) {
    OG_TRY(no_args(rt, a, "test"));
    *out = in.kind == CV_STR && chat_test_find(in.s->s) >= 0;
    return NULL;
}

static const struct {
    const char *name;
    test_fn fn;
} tests[] = {
    {"odd", t_odd}, {"even", t_even}, {"divisibleby", t_divisibleby}, {"defined", t_defined},
    {"undefined", t_undefined}, {"filter", t_filter}, {"test", t_test}, {"none", t_none},
    {"boolean", t_boolean}, {"false", t_is_false}, {"true", t_is_true}, {"integer", t_integer},
    {"float", t_float}, {"lower", t_lower}, {"upper", t_upper}, {"string", t_string},
    {"mapping", t_mapping}, {"number", t_number}, {"sequence", t_sequence},
    {"iterable", t_iterable}, {"callable", t_callable}, {"sameas", t_sameas},
    {"escaped", t_escaped}, {"in", t_in}, {"==", t_eq}, {"eq", t_eq}, {"equalto", t_eq},
    {"!=", t_ne}, {"ne", t_ne}, {">", t_gt}, {"gt", t_gt}, {"greaterthan", t_gt},
    {">=", t_ge}, {"ge", t_ge}, {"<", t_lt}, {"lt", t_lt}, {"lessthan", t_lt},
    {"<=", t_le}, {"le", t_le},
};

int chat_test_find(const char *name) {
    for (size_t i = 0; i < sizeof tests / sizeof tests[0]; i++)
        if (!strcmp(tests[i].name, name)) return (int)i;
    return -1;
}

const char *chat_test_name(int id) { return tests[id].name; }

og_status *chat_test_apply(crt *rt, int id, cv in, const cargs *a, bool *out) {
    return tests[id].fn(rt, in, a, out);
}
