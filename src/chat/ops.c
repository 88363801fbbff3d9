/* Python's operators on values, and jinja2's sandboxed attribute and item access.
 * Integers are 64-bit here where Python's are unbounded: an overflow is an error, never
 * a wrapped value. */
#include "chat/eval.h"

#include "chat/ustr.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

static bool is_intlike(cv v) { return v.kind == CV_INT || v.kind == CV_BOOL; }
static int64_t ival(cv v) { return v.kind == CV_BOOL ? (int64_t)v.b : v.i; }

static og_status *overflow(crt *rt) {
    return crt_err(rt, OG_ERR_UNSUPPORTED, "OverflowError: the result does not fit in 64 bits "
                   "(Python's integers are unbounded; this engine's are not)");
}

static const char *op_sym(ast_op op) {
    static const char *const s[] = {"+", "-", "*", "/", "//", "%", "**"};
    return op <= OP_POW ? s[op] : "?";
}

static og_status *unsupported(crt *rt, ast_op op, cv a, cv b) {
    return chat_type_err(rt, "unsupported operand type(s) for %s: '%s' and '%s'", op_sym(op),
                         cv_type_name(a), cv_type_name(b));
}

/* Python's float divmod: floor division and a modulo with the divisor's sign. */
static void float_divmod(double vx, double wx, double *div_out, double *mod_out) {
    double mod = fmod(vx, wx);
    double div = (vx - mod) / wx;
    if (mod != 0) {
        if ((wx < 0) != (mod < 0)) {
            mod += wx;
            div -= 1.0;
        }
    } else {
        mod = copysign(0.0, wx);
    }
    double floordiv;
    if (div != 0) {
        floordiv = floor(div);
        if (div - floordiv > 0.5) floordiv += 1.0;
    } else {
        floordiv = copysign(0.0, vx / wx);
    }
    *div_out = floordiv;
    *mod_out = mod;
}

static og_status *repeat(crt *rt, cv seq, int64_t times, cv *out) {
    if (times < 0) times = 0;
    if (seq.kind == CV_STR) {
        size_t len = seq.s->len;
        if (len && (uint64_t)times > rt->lim.max_output / len)
            return crt_err(rt, OG_ERR_RUNTIME, "LimitError: repeating a string %lld times passes "
                           "the output limit (%zu bytes)", (long long)times, rt->lim.max_output);
        cv_str *r = cv_str_alloc(rt, len * (size_t)times);
        if (!r) return crt_mem_err(rt);
        for (int64_t i = 0; i < times; i++) memcpy(r->s + (size_t)i * len, seq.s->s, len);
        cv_str_done(r);
        *out = cv_of_str(r);
        out->flags = seq.flags;
        return NULL;
    }
    size_t n = seq.l->n;
    if (n && (uint64_t)times > rt->lim.max_memory / sizeof(cv) / n) return crt_mem_err(rt);
    cv_list *l = cv_list_new(rt, n * (size_t)times, (cv_seq)seq.l->seq);
    if (!l) return crt_mem_err(rt);
    for (int64_t i = 0; i < times; i++)
        for (size_t k = 0; k < n; k++) l->v[l->n++] = seq.l->v[k];
    *out = cv_of_list(l);
    return NULL;
}

static bool plain_seq(cv v) {
    return v.kind == CV_LIST && (v.l->seq == CV_SEQ_LIST || v.l->seq == CV_SEQ_TUPLE);
}

static og_status *concat_str(crt *rt, cv a, cv b, cv *out) {
    /* Markup + str escapes the str (and str + Markup the left one), as markupsafe does */
    bool ma = a.flags & CVF_MARKUP, mb = b.flags & CVF_MARKUP;
    if (ma != mb) {
        if (ma) OG_TRY(chat_escape(rt, b, &b));
        else OG_TRY(chat_escape(rt, a, &a));
    }
    cv_str *r = cv_str_alloc(rt, a.s->len + b.s->len);
    if (!r) {
        if (a.s->len + b.s->len > rt->lim.max_output)
            return crt_err(rt, OG_ERR_RUNTIME, "LimitError: a string passed the output limit "
                           "(%zu bytes)", rt->lim.max_output);
        return crt_mem_err(rt);
    }
    memcpy(r->s, a.s->s, a.s->len);
    memcpy(r->s + a.s->len, b.s->s, b.s->len);
    r->s[r->len] = 0;
    r->ncp = a.s->ncp + b.s->ncp;
    *out = cv_of_str(r);
    if (ma || mb) out->flags = CVF_MARKUP;
    return NULL;
}

og_status *chat_binop(crt *rt, ast_op op, cv a, cv b, cv *out) {
    /* str % x formats whatever x is (str.__mod__ never defers to an undefined's __rmod__) */
    if (op == OP_MOD && a.kind == CV_STR) return chat_percent_format(rt, a, b, out);
    if (a.kind == CV_UNDEF) return cv_undef_error(rt, a);
    if (b.kind == CV_UNDEF) return cv_undef_error(rt, b);
    bool num = cv_is_number(a) && cv_is_number(b);
    bool flt = num && (a.kind == CV_FLOAT || b.kind == CV_FLOAT);
    int64_t r;
    switch (op) {
    case OP_ADD:
        if (num && !flt) {
            if (__builtin_add_overflow(ival(a), ival(b), &r)) return overflow(rt);
            *out = cv_int(r);
            return NULL;
        }
        if (num) {
            *out = cv_float(cv_as_double(a) + cv_as_double(b));
            return NULL;
        }
        if (a.kind == CV_STR && b.kind == CV_STR) return concat_str(rt, a, b, out);
        if (a.kind == CV_STR)
            return chat_type_err(rt, "can only concatenate str (not \"%s\") to str", cv_type_name(b));
        if (plain_seq(a) && plain_seq(b) && a.l->seq == b.l->seq) {
            cv_list *l = cv_list_new(rt, a.l->n + b.l->n, (cv_seq)a.l->seq);
            if (!l) return crt_mem_err(rt);
            for (size_t i = 0; i < a.l->n; i++) l->v[l->n++] = a.l->v[i];
            for (size_t i = 0; i < b.l->n; i++) l->v[l->n++] = b.l->v[i];
            *out = cv_of_list(l);
            return NULL;
        }
        if (plain_seq(a))
            return chat_type_err(rt, "can only concatenate %s (not \"%s\") to %s", cv_type_name(a),
                                 cv_type_name(b), cv_type_name(a));
        return unsupported(rt, op, a, b);
    case OP_SUB:
        if (!num) return unsupported(rt, op, a, b);
        if (!flt) {
            if (__builtin_sub_overflow(ival(a), ival(b), &r)) return overflow(rt);
            *out = cv_int(r);
        } else {
            *out = cv_float(cv_as_double(a) - cv_as_double(b));
        }
        return NULL;
    case OP_MUL:
        if (num && !flt) {
            if (__builtin_mul_overflow(ival(a), ival(b), &r)) return overflow(rt);
            *out = cv_int(r);
            return NULL;
        }
        if (num) {
            *out = cv_float(cv_as_double(a) * cv_as_double(b));
            return NULL;
        }
        if ((a.kind == CV_STR || plain_seq(a)) && is_intlike(b)) return repeat(rt, a, ival(b), out);
        if ((b.kind == CV_STR || plain_seq(b)) && is_intlike(a)) return repeat(rt, b, ival(a), out);
        if (a.kind == CV_STR || b.kind == CV_STR || plain_seq(a) || plain_seq(b))
            return chat_type_err(rt, "can't multiply sequence by non-int of type '%s'",
                                 cv_type_name(a.kind == CV_STR || plain_seq(a) ? b : a));
        return unsupported(rt, op, a, b);
    case OP_DIV:
        if (!num) return unsupported(rt, op, a, b);
        if (cv_as_double(b) == 0)
            return crt_err(rt, OG_ERR_RUNTIME, "ZeroDivisionError: %s", flt ? "float division by zero"
                                                                            : "division by zero");
        *out = cv_float(cv_as_double(a) / cv_as_double(b));
        return NULL;
    case OP_FLOORDIV:
    case OP_MOD:
        if (op == OP_MOD && a.kind == CV_STR) return chat_percent_format(rt, a, b, out);
        if (!num) return unsupported(rt, op, a, b);
        if (!flt) {
            int64_t x = ival(a), y = ival(b);
            if (y == 0)
                return crt_err(rt, OG_ERR_RUNTIME, "ZeroDivisionError: integer %s by zero",
                               op == OP_MOD ? "modulo" : "division or modulo");
            if (x == INT64_MIN && y == -1) {
                if (op == OP_MOD) {
                    *out = cv_int(0);
                    return NULL;
                }
                return overflow(rt);
            }
            int64_t q = x / y, m = x % y;
            if (m != 0 && ((m < 0) != (y < 0))) {
                q -= 1;
                m += y;
            }
            *out = cv_int(op == OP_MOD ? m : q);
            return NULL;
        }
        if (cv_as_double(b) == 0)
            return crt_err(rt, OG_ERR_RUNTIME, "ZeroDivisionError: float %s by zero",
                           op == OP_MOD ? "modulo" : "floor division");
        double dq, dm;
        float_divmod(cv_as_double(a), cv_as_double(b), &dq, &dm);
        *out = cv_float(op == OP_MOD ? dm : dq);
        return NULL;
    case OP_POW:
        if (!num) return unsupported(rt, op, a, b);
        if (!flt && ival(b) >= 0) {
            int64_t base = ival(a), e = ival(b), acc = 1;
            while (e > 0) {
                if (e & 1)
                    if (__builtin_mul_overflow(acc, base, &acc)) return overflow(rt);
                e >>= 1;
                if (e && __builtin_mul_overflow(base, base, &base)) return overflow(rt);
            }
            *out = cv_int(acc);
            return NULL;
        }
        {
            double x = cv_as_double(a), y = cv_as_double(b);
            if (x == 0 && y < 0)
                return crt_err(rt, OG_ERR_RUNTIME, "ZeroDivisionError: 0.0 cannot be raised to a "
                               "negative power");
            if (x < 0 && y != floor(y))
                return crt_err(rt, OG_ERR_UNSUPPORTED, "a negative number to a fractional power "
                               "is a complex number, which is not implemented");
            *out = cv_float(pow(x, y));
            return NULL;
        }
    default:
        return crt_err(rt, OG_ERR_RUNTIME, "internal error: bad operator");
    }
}

og_status *chat_neg(crt *rt, cv a, bool minus, cv *out) {
    if (a.kind == CV_UNDEF) return cv_undef_error(rt, a);
    if (a.kind == CV_FLOAT) {
        *out = cv_float(minus ? -a.f : a.f);
        return NULL;
    }
    if (is_intlike(a)) {
        int64_t v = ival(a);
        if (minus && v == INT64_MIN) return overflow(rt);
        *out = cv_int(minus ? -v : v);
        return NULL;
    }
    return chat_type_err(rt, "bad operand type for unary %c: '%s'", minus ? '-' : '+',
                         cv_type_name(a));
}

og_status *chat_contains(crt *rt, cv container, cv item, bool *out) {
    switch ((cv_kind)container.kind) {
    case CV_UNDEF: *out = false; return NULL; /* Undefined iterates as empty */
    case CV_STR:
        if (item.kind != CV_STR)
            return chat_type_err(rt, "'in <string>' requires string as left operand, not %s",
                                 cv_type_name(item));
        *out = item.s->len == 0 ||
               memmem(container.s->s, container.s->len, item.s->s, item.s->len) != NULL;
        return NULL;
    case CV_DICT:
        if (!cv_hashable(item)) return chat_type_err(rt, "unhashable type: '%s'", cv_type_name(item));
        *out = cv_dict_find(container.d, item) != NULL;
        return NULL;
    case CV_LIST: {
        cv_list *l;
        OG_TRY(cv_iterate(rt, container, &l));
        *out = false;
        for (size_t i = 0; i < l->n; i++)
            if (cv_eq(l->v[i], item)) {
                *out = true;
                break;
            }
        return NULL;
    }
    default:
        return chat_type_err(rt, "argument of type '%s' is not iterable", cv_type_name(container));
    }
}

/* ---- attribute and item access ------------------------------------------------------ */

static og_status *bound_method(crt *rt, cv self, const char *name, cv *out) {
    cv_func *fn = crt_alloc(rt, sizeof *fn);
    if (!fn) return crt_mem_err(rt);
    fn->type = CF_METHOD;
    fn->self = self;
    fn->name = name;
    *out = cv_of_func(fn);
    return NULL;
}

/* Attributes of Python ints and floats (none is implemented; asking is an error). */
static bool number_attr(const char *name) {
    static const char *const names[] = {"real", "imag", "conjugate", "bit_length", "bit_count",
                                        "to_bytes", "from_bytes", "as_integer_ratio",
                                        "numerator", "denominator", "is_integer", "hex",
                                        "fromhex", NULL};
    for (int i = 0; names[i]; i++)
        if (!strcmp(names[i], name)) return true;
    return false;
}

/* The attribute lookup of the object itself (no item fallback); *found false if none. */
static og_status *own_attr(crt *rt, cv obj, const char *name, cv *out, bool *found) {
    *found = false;
    if (name[0] == '_') return NULL; /* the sandbox hides every underscore attribute */
    switch ((cv_kind)obj.kind) {
    case CV_STR:
    case CV_DICT:
    case CV_LIST: {
        int k = chat_method_kind(obj, name);
        if (k == 0) return NULL;
        *found = true;
        if (k == 2) {
            *out = cv_undef_unsafe(rt, obj, name);
            return NULL;
        }
        if (k == 3)
            return crt_err(rt, OG_ERR_UNSUPPORTED, "the %s method '%s' is not implemented",
                           cv_type_name(obj), name);
        return bound_method(rt, obj, name, out);
    }
    case CV_NS: {
        cv_entry *e = cv_dict_find_str(obj.d, name, strlen(name));
        if (e) {
            *found = true;
            *out = e->val;
        }
        return NULL;
    }
    case CV_INT:
    case CV_FLOAT:
    case CV_BOOL:
        if (number_attr(name))
            return crt_err(rt, OG_ERR_UNSUPPORTED, "the %s attribute '%s' is not implemented",
                           cv_type_name(obj), name);
        return NULL;
    case CV_FUNC:
        if (obj.fn->type == CF_BUILTIN && obj.fn->id == CB_DICT && !strcmp(name, "fromkeys")) {
            cv_func *fn = crt_alloc(rt, sizeof *fn);
            if (!fn) return crt_mem_err(rt);
            fn->type = CF_BUILTIN;
            fn->id = CB_DICT_FROMKEYS;
            *out = cv_of_func(fn);
            *found = true;
            return NULL;
        }
        if (obj.fn->type == CF_CYCLER && (!strcmp(name, "next") || !strcmp(name, "reset"))) {
            cv_func *fn = crt_alloc(rt, sizeof *fn);
            if (!fn) return crt_mem_err(rt);
            *fn = *obj.fn;
            fn->type = CF_METHOD;
            fn->self = obj;
            fn->name = name;
            *out = cv_of_func(fn);
            *found = true;
            return NULL;
        }
        if (obj.fn->type == CF_CYCLER && !strcmp(name, "current")) {
            cv_list *l = obj.fn->items;
            *out = l->n ? l->v[obj.fn->pos % l->n] : cv_none();
            *found = true;
            return NULL;
        }
        if (obj.fn->type == CF_MACRO && !strcmp(name, "name")) {
            *found = true;
            return cv_make_str(rt, obj.fn->name, strlen(obj.fn->name), out);
        }
        return NULL;
    default:
        return NULL;
    }
}

og_status *chat_getattr(crt *rt, cv obj, const char *name, cv *out) {
    if (obj.kind == CV_UNDEF) return cv_undef_error(rt, obj);
    bool found;
    OG_TRY(own_attr(rt, obj, name, out, &found));
    if (found) return NULL;
    if (obj.kind == CV_DICT) {
        cv_entry *e = cv_dict_find_str(obj.d, name, strlen(name));
        if (e) {
            *out = e->val;
            return NULL;
        }
    }
    *out = cv_undef_attr(rt, obj, name);
    return NULL;
}

/* Python's index normalisation for one position; false when out of range. */
static bool norm_index(cv key, size_t n, size_t *out) {
    int64_t i = ival(key);
    if (i < 0) i += (int64_t)n;
    if (i < 0 || (uint64_t)i >= n) return false;
    *out = (size_t)i;
    return true;
}

og_status *chat_getitem(crt *rt, cv obj, cv key, cv *out) {
    if (obj.kind == CV_UNDEF) return cv_undef_error(rt, obj);
    size_t idx;
    switch ((cv_kind)obj.kind) {
    case CV_DICT:
        if (cv_hashable(key)) {
            cv_entry *e = cv_dict_find(obj.d, key);
            if (e) {
                *out = e->val;
                return NULL;
            }
        }
        break;
    case CV_LIST:
        if (is_intlike(key) && (obj.l->seq == CV_SEQ_LIST || obj.l->seq == CV_SEQ_TUPLE ||
                                obj.l->seq == CV_SEQ_RANGE)) {
            if (norm_index(key, obj.l->n, &idx)) {
                *out = obj.l->v[idx];
                return NULL;
            }
            *out = cv_undef_item(rt, obj, key);
            return NULL;
        }
        break;
    case CV_STR:
        if (is_intlike(key)) {
            if (!norm_index(key, obj.s->ncp, &idx)) {
                *out = cv_undef_item(rt, obj, key);
                return NULL;
            }
            bool ascii = obj.s->len == obj.s->ncp;
            size_t from = u8_offset(obj.s->s, obj.s->len, ascii, idx);
            size_t to = u8_offset(obj.s->s, obj.s->len, ascii, idx + 1);
            OG_TRY(cv_make_str(rt, obj.s->s + from, to - from, out));
            out->flags = obj.flags; /* Markup's items are Markup */
            return NULL;
        }
        break;
    default:
        break;
    }
    if (key.kind == CV_STR) {
        bool found;
        OG_TRY(own_attr(rt, obj, key.s->s, out, &found));
        if (found) return NULL;
        *out = cv_undef_attr(rt, obj, key.s->s);
        return NULL;
    }
    *out = cv_undef_item(rt, obj, key);
    return NULL;
}

/* PySlice_AdjustIndices: start, stop and count of a slice over n items. */
static void adjust_slice(int64_t n, bool has_start, int64_t start, bool has_stop, int64_t stop,
                         int64_t step, int64_t *s0, int64_t *count) {
    if (!has_start) start = step < 0 ? n - 1 : 0;
    else if (start < 0) {
        start += n;
        if (start < 0) start = step < 0 ? -1 : 0;
    } else if (start >= n) start = step < 0 ? n - 1 : n;
    if (!has_stop) stop = step < 0 ? -1 : n;
    else if (stop < 0) {
        stop += n;
        if (stop < 0) stop = step < 0 ? -1 : 0;
    } else if (stop >= n) stop = step < 0 ? n - 1 : n;
    if (step < 0) *count = stop < start ? (start - stop - 1) / (-step) + 1 : 0;
    else *count = start < stop ? (stop - start - 1) / step + 1 : 0;
    *s0 = start;
}

og_status *chat_slice(crt *rt, cv obj, cv start, cv stop, cv step, cv *out) {
    if (obj.kind == CV_UNDEF) return cv_undef_error(rt, obj);
    bool seq = obj.kind == CV_LIST && (obj.l->seq == CV_SEQ_LIST || obj.l->seq == CV_SEQ_TUPLE ||
                                       obj.l->seq == CV_SEQ_RANGE);
    bool bounds_ok = (start.kind == CV_NONE || is_intlike(start)) &&
                     (stop.kind == CV_NONE || is_intlike(stop)) &&
                     (step.kind == CV_NONE || is_intlike(step));
    if ((!seq && obj.kind != CV_STR) || !bounds_ok) {
        /* Python raises TypeError, which jinja2's getitem turns into undefined */
        *out = cv_undef_hint(rt, "the object cannot be sliced that way");
        return NULL;
    }
    int64_t st = step.kind == CV_NONE ? 1 : ival(step);
    if (st == 0) return crt_err(rt, OG_ERR_RUNTIME, "ValueError: slice step cannot be zero");
    int64_t n = obj.kind == CV_STR ? (int64_t)obj.s->ncp : (int64_t)obj.l->n;
    int64_t s0, count;
    adjust_slice(n, start.kind != CV_NONE, start.kind == CV_NONE ? 0 : ival(start),
                 stop.kind != CV_NONE, stop.kind == CV_NONE ? 0 : ival(stop), st, &s0, &count);
    if (obj.kind == CV_LIST) {
        cv_list *l = cv_list_new(rt, (size_t)count,
                                 obj.l->seq == CV_SEQ_TUPLE ? CV_SEQ_TUPLE : CV_SEQ_LIST);
        if (!l) return crt_mem_err(rt);
        for (int64_t i = 0; i < count; i++) l->v[l->n++] = obj.l->v[s0 + i * st];
        *out = cv_of_list(l);
        return NULL;
    }
    const cv_str *s = obj.s;
    bool ascii = s->len == s->ncp;
    if (st == 1) {
        size_t from = u8_offset(s->s, s->len, ascii, (size_t)s0);
        size_t to = u8_offset(s->s, s->len, ascii, (size_t)(s0 + count));
        OG_TRY(cv_make_str(rt, s->s + from, to - from, out));
        out->flags = obj.flags;
        return NULL;
    }
    sbuf b;
    sbuf_init(&b, rt->lim.max_output);
    og_status *err = NULL;
    for (int64_t i = 0; i < count && !err; i++) {
        size_t from = u8_offset(s->s, s->len, ascii, (size_t)(s0 + i * st));
        size_t to = u8_offset(s->s, s->len, ascii, (size_t)(s0 + i * st) + 1);
        if (!sbuf_add(&b, s->s + from, to - from)) err = sbuf_err(rt, &b);
    }
    if (!err) err = cv_make_str(rt, b.p ? b.p : "", b.n, out);
    if (!err) out->flags = obj.flags;
    sbuf_free(&b);
    return err;
}

og_status *chat_attr_only(crt *rt, cv obj, const char *name, cv *out) {
    if (obj.kind == CV_UNDEF) return cv_undef_error(rt, obj);
    bool found;
    OG_TRY(own_attr(rt, obj, name, out, &found));
    if (!found) *out = cv_undef_attr(rt, obj, name);
    return NULL;
}
