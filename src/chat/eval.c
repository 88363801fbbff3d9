/* The evaluator: walks the AST with jinja2's scoping rules.
 *
 * Scopes: a frame maps symbols to values and points at its parent. The template body
 * runs in the top frame (the render's variables plus top-level `set`s). Each iteration
 * of a for loop gets a fresh frame (so a `set` inside a loop never changes the variable
 * outside it, and each iteration starts from the outer value, as in jinja2); macro calls,
 * caller bodies, set blocks, filter blocks, `with` and {% generation %} get one too;
 * `if` does not. A macro sees the frame it was defined in, live (jinja2 resolves its free
 * names when it is called). Namespaces are the one value a template can change.
 *
 * Limits: every loop iteration counts toward max_iterations, every macro/caller/
 * recursive-loop call toward max_depth, every output byte toward max_output and every
 * value toward max_memory; each is an error naming the limit. */
#include "chat/eval.h"

#include "chat/chat.h"
#include "chat/ustr.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct frame {
    struct frame *parent;
    size_t n, cap;
    int *sym;
    cv *val;
} frame;

enum { FLOW_NORMAL, FLOW_BREAK, FLOW_CONTINUE };

/* Nested evaluation frames (expressions inside blocks inside macro calls ...) allowed
 * before an error: it keeps the C stack bounded whatever a template does (each level is
 * a few hundred bytes; jinja2 itself would hit Python's recursion limit long before). */
enum { MAX_NEST = 2000 };

typedef struct ev {
    crt rt;
    const chat_template *t;
    sbuf *out;
    int flow;
    int nest;
    cv hole;          /* the value a filter chain of a set/filter block applies to */
    cv_func *globals[CB_COUNT];
} ev;

chat_limits chat_limits_default(void) {
    chat_limits l;
    l.max_output = (size_t)32 << 20;
    l.max_memory = (size_t)256 << 20;
    l.max_depth = 128;
    l.max_iterations = 10000000;
    return l;
}

/* ---- frames ------------------------------------------------------------------------- */

static frame *frame_new(ev *e, frame *parent) {
    frame *f = crt_alloc(&e->rt, sizeof *f);
    if (f) f->parent = parent;
    return f;
}

static og_status *frame_set(ev *e, frame *f, int sym, cv v) {
    for (size_t i = 0; i < f->n; i++)
        if (f->sym[i] == sym) {
            f->val[i] = v;
            return NULL;
        }
    if (f->n == f->cap) {
        size_t cap = f->cap;
        int *s = crt_grow(&e->rt, f->sym, f->n, &cap, sizeof *s);
        cv *v2 = crt_grow(&e->rt, f->val, f->n, &f->cap, sizeof *v2);
        if (!s || !v2) return crt_mem_err(&e->rt);
        f->sym = s;
        f->val = v2;
    }
    f->sym[f->n] = sym;
    f->val[f->n] = v;
    f->n++;
    return NULL;
}

static bool frame_get(const frame *f, int sym, cv *out) {
    for (; f; f = f->parent)
        for (size_t i = f->n; i-- > 0;)
            if (f->sym[i] == sym) {
                *out = f->val[i];
                return true;
            }
    return false;
}

/* ---- helpers ------------------------------------------------------------------------ */

og_status *chat_type_err(crt *rt, const char *fmt, ...) {
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return crt_err(rt, OG_ERR_RUNTIME, "TypeError: %s", msg);
}

static og_status *out_add(ev *e, const char *s, size_t len) {
    if (!sbuf_add(e->out, s, len)) return sbuf_err(&e->rt, e->out);
    return NULL;
}

static og_status *count_iteration(ev *e) {
    if (++e->rt.iterations > e->rt.lim.max_iterations)
        return crt_err(&e->rt, OG_ERR_RUNTIME, "LimitError: more than %llu loop iterations in "
                       "one render", (unsigned long long)e->rt.lim.max_iterations);
    return NULL;
}

static og_status *enter_call(ev *e) {
    if (++e->rt.depth > e->rt.lim.max_depth)
        return crt_err(&e->rt, OG_ERR_RUNTIME, "RecursionError: more than %d nested macro calls",
                       e->rt.lim.max_depth);
    return NULL;
}

og_status *chat_bind(crt *rt, const char *fname, const cargs *a, const char *const *names,
                     int nnames, int nreq, cv *vals, bool *given) {
    for (int i = 0; i < nnames; i++) {
        given[i] = false;
        vals[i] = cv_undef();
    }
    if (a->npos > nnames)
        return chat_type_err(rt, "%s() takes at most %d argument%s (%d given)", fname, nnames,
                             nnames == 1 ? "" : "s", a->npos);
    for (int i = 0; i < a->npos; i++) {
        vals[i] = a->pos[i];
        given[i] = true;
    }
    for (int k = 0; k < a->nkw; k++) {
        int i = 0;
        while (i < nnames && strcmp(names[i], a->kwn[k]) != 0) i++;
        if (i == nnames)
            return chat_type_err(rt, "%s() got an unexpected keyword argument '%s'", fname,
                                 a->kwn[k]);
        if (given[i])
            return chat_type_err(rt, "%s() got multiple values for argument '%s'", fname,
                                 a->kwn[k]);
        vals[i] = a->kw[k];
        given[i] = true;
    }
    for (int i = 0; i < nreq; i++)
        if (!given[i])
            return chat_type_err(rt, "%s() missing required argument '%s'", fname, names[i]);
    return NULL;
}

static og_status *eval(ev *e, const ast *x, frame *f, cv *out);
static og_status *exec_body(ev *e, const ast *body, frame *f);
static og_status *call_value(ev *e, cv callee, const cargs *a, cv *out);

/* Evaluates the arguments of a call, filter or test node. */
static og_status *eval_args(ev *e, const ast *x, frame *f, cargs *a) {
    memset(a, 0, sizeof *a);
    size_t npos = (size_t)x->n, nkw = (size_t)x->nkw;
    cv star = cv_undef(), dstar = cv_undef();
    cv_list *sl = NULL;
    if (x->star) {
        OG_TRY(eval(e, x->star, f, &star));
        OG_TRY(cv_iterate(&e->rt, star, &sl));
        npos += sl->n;
    }
    if (x->dstar) {
        OG_TRY(eval(e, x->dstar, f, &dstar));
        if (dstar.kind != CV_DICT)
            return chat_type_err(&e->rt, "argument after ** must be a mapping, not %s",
                                 cv_type_name(dstar));
        nkw += dstar.d->n;
    }
    if (npos) {
        a->pos = crt_alloc(&e->rt, npos * sizeof(cv));
        if (!a->pos) return crt_mem_err(&e->rt);
    }
    if (nkw) {
        a->kw = crt_alloc(&e->rt, nkw * sizeof(cv));
        a->kwn = crt_alloc(&e->rt, nkw * sizeof(char *));
        if (!a->kw || !a->kwn) return crt_mem_err(&e->rt);
    }
    for (int i = 0; i < x->n; i++) OG_TRY(eval(e, x->items[i], f, &a->pos[a->npos++]));
    if (sl)
        for (size_t i = 0; i < sl->n; i++) a->pos[a->npos++] = sl->v[i];
    for (int i = 0; i < x->nkw; i++) {
        a->kwn[a->nkw] = x->kwnames[i];
        OG_TRY(eval(e, x->kw[i], f, &a->kw[a->nkw++]));
    }
    if (x->dstar)
        for (size_t i = 0; i < dstar.d->n; i++) {
            cv k = dstar.d->e[i].key;
            if (k.kind != CV_STR) return chat_type_err(&e->rt, "keywords must be strings");
            a->kwn[a->nkw] = k.s->s;
            a->kw[a->nkw++] = dstar.d->e[i].val;
        }
    return NULL;
}

/* Renders body into a string, in frame f. */
static og_status *capture(ev *e, const ast *body, frame *f, cv *out) {
    sbuf buf;
    sbuf_init(&buf, e->rt.lim.max_output);
    sbuf *saved = e->out;
    e->out = &buf;
    og_status *st = exec_body(e, body, f);
    e->out = saved;
    if (!st) st = cv_make_str(&e->rt, buf.p ? buf.p : "", buf.n, out);
    sbuf_free(&buf);
    return st;
}

/* ---- assignment --------------------------------------------------------------------- */

static og_status *assign(ev *e, const ast *target, cv v, frame *f) {
    if (target->kind == AX_NAME) return frame_set(e, f, target->sym, v);
    if (target->kind == AX_TUPLE) {
        cv_list *items;
        OG_TRY(cv_iterate(&e->rt, v, &items));
        if (items->n != (size_t)target->n) {
            if (items->n > (size_t)target->n)
                return crt_err(&e->rt, OG_ERR_RUNTIME, "ValueError: too many values to unpack "
                               "(expected %d)", target->n);
            return crt_err(&e->rt, OG_ERR_RUNTIME, "ValueError: not enough values to unpack "
                           "(expected %d, got %zu)", target->n, items->n);
        }
        for (int i = 0; i < target->n; i++) OG_TRY(assign(e, target->items[i], items->v[i], f));
        return NULL;
    }
    /* ns.attr = v */
    cv ns;
    if (!frame_get(f, target->a->sym, &ns) || ns.kind != CV_NS)
        return crt_err(&e->rt, OG_ERR_RUNTIME, "TemplateRuntimeError: cannot assign attribute on "
                       "non-namespace object");
    if (target->name[0] == '_')
        return crt_err(&e->rt, OG_ERR_RUNTIME, "SecurityError: Chat templates cannot store "
                       "underscore-prefixed attributes on a namespace, but got '%s'. Please "
                       "rename the attribute.", target->name);
    return cv_dict_set_str(&e->rt, ns.d, target->name, v);
}

/* ---- calls -------------------------------------------------------------------------- */

static cv_func *global_func(ev *e, int id) {
    if (!e->globals[id]) {
        cv_func *fn = crt_alloc(&e->rt, sizeof *fn);
        if (!fn) return NULL;
        fn->type = CF_BUILTIN;
        fn->id = id;
        e->globals[id] = fn;
    }
    return e->globals[id];
}

/* A macro (or a call block's caller) called with arguments: jinja2's Macro.__call__. */
static og_status *call_macro(ev *e, cv_func *fn, const cargs *a, cv *out) {
    const ast *m = fn->macro;
    const char *mname = m->kind == AS_MACRO ? m->name : "caller";
    int nparams = m->n;
    int bits = m->id;
    frame *f = frame_new(e, fn->closure);
    if (!f) return crt_mem_err(&e->rt);
    bool *used_kw = NULL;
    if (a->nkw) {
        used_kw = crt_alloc(&e->rt, (size_t)a->nkw);
        if (!used_kw) return crt_mem_err(&e->rt);
    }
    bool found_caller = false;
    for (int i = 0; i < nparams; i++) {
        const ast *p = m->items[i];
        cv v;
        bool have = false;
        if (i < a->npos) {
            v = a->pos[i];
            have = true;
        } else if (a->npos < nparams) {
            for (int k = 0; k < a->nkw; k++)
                if (!used_kw[k] && !strcmp(a->kwn[k], p->name)) {
                    v = a->kw[k];
                    used_kw[k] = true;
                    have = true;
                    break;
                }
            if (p->sym == e->t->sym_caller) found_caller = true;
        }
        if (!have) {
            if (m->kw && m->kw[i]) {
                int line = e->rt.line;
                OG_TRY(eval(e, m->kw[i], f, &v));
                e->rt.line = line;
            } else {
                char *msg = crt_alloc(&e->rt, strlen(p->name) + 40);
                if (!msg) return crt_mem_err(&e->rt);
                sprintf(msg, "parameter '%s' was not provided", p->name);
                v = cv_undef_hint(&e->rt, msg);
            }
        }
        OG_TRY(frame_set(e, f, p->sym, v));
    }
    if ((bits & MACRO_CALLER) && !found_caller) {
        cv c = cv_undef_hint(&e->rt, "No caller defined");
        for (int k = 0; k < a->nkw; k++)
            if (!used_kw[k] && !strcmp(a->kwn[k], "caller")) {
                c = a->kw[k];
                used_kw[k] = true;
            }
        OG_TRY(frame_set(e, f, e->t->sym_caller, c));
    }
    if (bits & MACRO_KWARGS) {
        cv_dict *d = cv_dict_new(&e->rt, 0);
        if (!d) return crt_mem_err(&e->rt);
        for (int k = 0; k < a->nkw; k++)
            if (!used_kw[k]) OG_TRY(cv_dict_set_str(&e->rt, d, a->kwn[k], a->kw[k]));
        OG_TRY(frame_set(e, f, e->t->sym_kwargs, cv_of_dict(d)));
    } else {
        for (int k = 0; k < a->nkw; k++)
            if (!used_kw[k]) {
                if (!strcmp(a->kwn[k], "caller"))
                    return chat_type_err(&e->rt, "macro '%s' was invoked with two values for the "
                                         "special caller argument. This is most likely a bug.",
                                         mname);
                return chat_type_err(&e->rt, "macro '%s' takes no keyword argument '%s'", mname,
                                     a->kwn[k]);
            }
    }
    if (bits & MACRO_VARARGS) {
        int extra = a->npos > nparams ? a->npos - nparams : 0;
        cv_list *l = cv_list_new(&e->rt, (size_t)extra, CV_SEQ_TUPLE);
        if (!l) return crt_mem_err(&e->rt);
        for (int i = 0; i < extra; i++) l->v[l->n++] = a->pos[nparams + i];
        OG_TRY(frame_set(e, f, e->t->sym_varargs, cv_of_list(l)));
    } else if (a->npos > nparams) {
        return chat_type_err(&e->rt, "macro '%s' takes not more than %d argument(s)", mname,
                             nparams);
    }
    OG_TRY(enter_call(e));
    int line = e->rt.line, flow = e->flow;
    e->flow = FLOW_NORMAL;
    og_status *st = capture(e, m->b, f, out);
    e->flow = flow;
    e->rt.line = line;
    e->rt.depth--;
    return st;
}

static og_status *run_for(ev *e, const ast *s, frame *f, cv iterable, int depth0);

static og_status *call_value(ev *e, cv callee, const cargs *a, cv *out) {
    if (callee.kind == CV_UNDEF) return cv_undef_error(&e->rt, callee);
    if (callee.kind != CV_FUNC)
        return chat_type_err(&e->rt, "'%s' object is not callable", cv_type_name(callee));
    cv_func *fn = callee.fn;
    switch ((cv_func_type)fn->type) {
    case CF_MACRO: return call_macro(e, fn, a, out);
    case CF_METHOD: return chat_method_call(&e->rt, fn->self, fn->name, a, out);
    case CF_BUILTIN:
    case CF_JOINER:
    case CF_CYCLER: return chat_global_call(&e->rt, fn, a, out);
    case CF_LOOP: {
        cv_loop *L = fn->self.loop;
        if (fn->id == 0) { /* loop(items): recurse */
            if (a->npos != 1 || a->nkw)
                return chat_type_err(&e->rt, "loop() takes exactly one argument");
            OG_TRY(enter_call(e));
            sbuf buf;
            sbuf_init(&buf, e->rt.lim.max_output);
            sbuf *saved = e->out;
            e->out = &buf;
            int flow = e->flow;
            og_status *st = run_for(e, L->node, L->frame, a->pos[0], L->depth0 + 1);
            e->flow = flow;
            e->out = saved;
            if (!st) st = cv_make_str(&e->rt, buf.p ? buf.p : "", buf.n, out);
            sbuf_free(&buf);
            e->rt.depth--;
            return st;
        }
        if (fn->id == 1) { /* loop.cycle(a, b, ...) */
            if (a->npos == 0) return chat_type_err(&e->rt, "no items for cycling given");
            *out = a->pos[L->index0 % (size_t)a->npos];
            return NULL;
        }
        /* loop.changed(*values) */
        cv_list *vals = cv_list_new(&e->rt, (size_t)a->npos, CV_SEQ_TUPLE);
        if (!vals) return crt_mem_err(&e->rt);
        for (int i = 0; i < a->npos; i++) vals->v[vals->n++] = a->pos[i];
        cv now = cv_of_list(vals);
        bool changed = !L->changed_set || !cv_eq(L->changed_last, now);
        L->changed_set = true;
        L->changed_last = now;
        *out = cv_bool(changed);
        return NULL;
    }
    }
    return chat_type_err(&e->rt, "object is not callable");
}

/* ---- loops -------------------------------------------------------------------------- */

/* The value of loop.<name>; false when there is no such attribute. */
static og_status *loop_attr(ev *e, cv_loop *L, const char *name, cv *out, bool *found) {
    size_t n = L->items->n, i = L->index0;
    *found = true;
    if (!strcmp(name, "index")) *out = cv_int((int64_t)i + 1);
    else if (!strcmp(name, "index0")) *out = cv_int((int64_t)i);
    else if (!strcmp(name, "revindex")) *out = cv_int((int64_t)(n - i));
    else if (!strcmp(name, "revindex0")) *out = cv_int((int64_t)(n - i - 1));
    else if (!strcmp(name, "first")) *out = cv_bool(i == 0);
    else if (!strcmp(name, "last")) *out = cv_bool(i + 1 == n);
    else if (!strcmp(name, "length")) *out = cv_int((int64_t)n);
    else if (!strcmp(name, "depth")) *out = cv_int(L->depth0 + 1);
    else if (!strcmp(name, "depth0")) *out = cv_int(L->depth0);
    else if (!strcmp(name, "previtem"))
        *out = i > 0 ? L->items->v[i - 1] : cv_undef_hint(&e->rt, "there is no previous item");
    else if (!strcmp(name, "nextitem"))
        *out = i + 1 < n ? L->items->v[i + 1] : cv_undef_hint(&e->rt, "there is no next item");
    else if (!strcmp(name, "cycle") || !strcmp(name, "changed") ||
             (!strcmp(name, "__call__") && L->node->flag)) {
        cv_func *fn = crt_alloc(&e->rt, sizeof *fn);
        if (!fn) return crt_mem_err(&e->rt);
        fn->type = CF_LOOP;
        fn->id = name[0] == 'c' ? (name[1] == 'y' ? 1 : 2) : 0;
        fn->self.kind = CV_LOOP;
        fn->self.loop = L;
        *out = cv_of_func(fn);
    } else *found = false;
    return NULL;
}

static og_status *run_for(ev *e, const ast *s, frame *f, cv iterable, int depth0) {
    cv_list *items;
    OG_TRY(cv_iterate(&e->rt, iterable, &items));
    if (s->c) { /* {% for x in xs if cond %}: the loop sees only the items that pass */
        cv_list *kept = cv_list_new(&e->rt, items->n, CV_SEQ_LIST);
        if (!kept) return crt_mem_err(&e->rt);
        frame *tf = frame_new(e, f);
        if (!tf) return crt_mem_err(&e->rt);
        for (size_t i = 0; i < items->n; i++) {
            OG_TRY(count_iteration(e));
            tf->n = 0;
            OG_TRY(assign(e, s->a, items->v[i], tf));
            cv ok;
            OG_TRY(eval(e, s->c, tf, &ok));
            if (cv_truthy(ok)) kept->v[kept->n++] = items->v[i];
        }
        items = kept;
    }
    if (items->n == 0) {
        if (!s->e) return NULL;
        frame *ef = frame_new(e, f);
        if (!ef) return crt_mem_err(&e->rt);
        return exec_body(e, s->e, ef);
    }
    cv_loop *L = crt_alloc(&e->rt, sizeof *L);
    frame *lf = frame_new(e, f);
    if (!L || !lf) return crt_mem_err(&e->rt);
    L->items = items;
    L->depth0 = depth0;
    L->node = s;
    L->frame = f;
    cv loopv = {.kind = CV_LOOP};
    loopv.loop = L;
    for (size_t i = 0; i < items->n; i++) {
        OG_TRY(count_iteration(e));
        L->index0 = i;
        lf->n = 0; /* a fresh scope for each iteration */
        OG_TRY(frame_set(e, lf, e->t->sym_loop, loopv));
        OG_TRY(assign(e, s->a, items->v[i], lf));
        OG_TRY(exec_body(e, s->d, lf));
        if (e->flow == FLOW_BREAK) {
            e->flow = FLOW_NORMAL;
            break;
        }
        e->flow = FLOW_NORMAL;
    }
    return NULL;
}

/* ---- expressions -------------------------------------------------------------------- */

static og_status *apply_filter(ev *e, const ast *x, frame *f, cv in, cv *out) {
    cargs a;
    OG_TRY(eval_args(e, x, f, &a));
    e->rt.line = x->line;
    if (x->id < 0)
        return crt_err(&e->rt, OG_ERR_RUNTIME, "TemplateRuntimeError: No filter named '%s'.",
                       x->name);
    return chat_filter_apply(&e->rt, x->id, in, &a, out);
}

static og_status *eval_compare(ev *e, const ast *x, frame *f, cv *out) {
    cv left;
    OG_TRY(eval(e, x->a, f, &left));
    for (int i = 0; i < x->n; i++) {
        cv right;
        OG_TRY(eval(e, x->items[i], f, &right));
        e->rt.line = x->line;
        bool r = false;
        int c;
        switch ((ast_op)x->ops[i]) {
        case OP_EQ: r = cv_eq(left, right); break;
        case OP_NE: r = !cv_eq(left, right); break;
        case OP_LT: OG_TRY(cv_cmp(&e->rt, left, right, "<", &c)); r = c < 0; break;
        case OP_LE: OG_TRY(cv_cmp(&e->rt, left, right, "<=", &c)); r = c <= 0; break;
        case OP_GT: OG_TRY(cv_cmp(&e->rt, left, right, ">", &c)); r = c > 0; break;
        case OP_GE: OG_TRY(cv_cmp(&e->rt, left, right, ">=", &c)); r = c >= 0; break;
        case OP_IN: OG_TRY(chat_contains(&e->rt, right, left, &r)); break;
        case OP_NOTIN: OG_TRY(chat_contains(&e->rt, right, left, &r)); r = !r; break;
        default: break;
        }
        if (!r) {
            *out = cv_bool(false);
            return NULL;
        }
        left = right;
    }
    *out = cv_bool(true);
    return NULL;
}

static og_status *nest_err(ev *e) {
    return crt_err(&e->rt, OG_ERR_RUNTIME, "RecursionError: the template nests evaluation more "
                   "than %d levels deep", MAX_NEST);
}

static og_status *eval_node(ev *e, const ast *x, frame *f, cv *out);

static og_status *eval(ev *e, const ast *x, frame *f, cv *out) {
    if (++e->nest > MAX_NEST) {
        e->nest--;
        return nest_err(e);
    }
    og_status *st = eval_node(e, x, f, out);
    e->nest--;
    return st;
}

static og_status *eval_node(ev *e, const ast *x, frame *f, cv *out) {
    switch ((ast_kind)x->kind) {
    case AX_CONST:
        *out = x->val;
        return NULL;
    case AX_NAME:
        if (frame_get(f, x->sym, out)) return NULL;
        if (e->t->sym_global[x->sym] >= 0) {
            cv_func *fn = global_func(e, e->t->sym_global[x->sym]);
            if (!fn) return crt_mem_err(&e->rt);
            *out = cv_of_func(fn);
            return NULL;
        }
        *out = cv_undef_name(&e->rt, x->name);
        return NULL;
    case AX_LIST:
    case AX_TUPLE: {
        cv_list *l = cv_list_new(&e->rt, (size_t)x->n, x->kind == AX_LIST ? CV_SEQ_LIST : CV_SEQ_TUPLE);
        if (!l) return crt_mem_err(&e->rt);
        for (int i = 0; i < x->n; i++) OG_TRY(eval(e, x->items[i], f, &l->v[l->n++]));
        *out = cv_of_list(l);
        return NULL;
    }
    case AX_DICT: {
        cv_dict *d = cv_dict_new(&e->rt, (size_t)x->n);
        if (!d) return crt_mem_err(&e->rt);
        for (int i = 0; i < x->n; i++) {
            cv k, v;
            OG_TRY(eval(e, x->items[i], f, &k));
            OG_TRY(eval(e, x->kw[i], f, &v));
            if (!cv_hashable(k)) {
                e->rt.line = x->line;
                return chat_type_err(&e->rt, "unhashable type: '%s'", cv_type_name(k));
            }
            OG_TRY(cv_dict_set(&e->rt, d, k, v));
        }
        *out = cv_of_dict(d);
        return NULL;
    }
    case AX_ATTR: {
        cv obj;
        OG_TRY(eval(e, x->a, f, &obj));
        e->rt.line = x->line;
        if (obj.kind == CV_DICT && !(x->id & CHAT_M_DICT)) { /* no dict method: the key */
            const cv_entry *en = cv_dict_find_str(obj.d, x->name, x->name_len);
            *out = en ? en->val : cv_undef_attr(&e->rt, obj, x->name);
            return NULL;
        }
        if (obj.kind == CV_LOOP) {
            bool found;
            OG_TRY(loop_attr(e, obj.loop, x->name, out, &found));
            if (!found) *out = cv_undef_attr(&e->rt, obj, x->name);
            return NULL;
        }
        return chat_getattr(&e->rt, obj, x->name, out);
    }
    case AX_ITEM: {
        cv obj, key;
        OG_TRY(eval(e, x->a, f, &obj));
        OG_TRY(eval(e, x->b, f, &key));
        e->rt.line = x->line;
        if (obj.kind == CV_LOOP && key.kind == CV_STR) {
            bool found;
            OG_TRY(loop_attr(e, obj.loop, key.s->s, out, &found));
            if (!found) *out = cv_undef_attr(&e->rt, obj, key.s->s);
            return NULL;
        }
        return chat_getitem(&e->rt, obj, key, out);
    }
    case AX_SLICE: {
        cv obj, b = cv_none(), c = cv_none(), d = cv_none();
        OG_TRY(eval(e, x->a, f, &obj));
        if (x->b) OG_TRY(eval(e, x->b, f, &b));
        if (x->c) OG_TRY(eval(e, x->c, f, &c));
        if (x->d) OG_TRY(eval(e, x->d, f, &d));
        e->rt.line = x->line;
        return chat_slice(&e->rt, obj, b, c, d, out);
    }
    case AX_CALL: {
        cv callee;
        OG_TRY(eval(e, x->a, f, &callee));
        if (callee.kind == CV_LOOP) { /* loop(...) in a recursive loop */
            bool found;
            OG_TRY(loop_attr(e, callee.loop, "__call__", &callee, &found));
            if (!found) return chat_type_err(&e->rt, "'LoopContext' object is not callable "
                                             "(the loop is not recursive)");
        }
        cargs a;
        OG_TRY(eval_args(e, x, f, &a));
        e->rt.line = x->line;
        return call_value(e, callee, &a, out);
    }
    case AX_FILTER: {
        cv in = e->hole;
        if (x->a) OG_TRY(eval(e, x->a, f, &in));
        return apply_filter(e, x, f, in, out);
    }
    case AX_TEST: {
        cv in;
        OG_TRY(eval(e, x->a, f, &in));
        cargs a;
        OG_TRY(eval_args(e, x, f, &a));
        e->rt.line = x->line;
        if (x->id < 0)
            return crt_err(&e->rt, OG_ERR_RUNTIME, "TemplateRuntimeError: No test named '%s' "
                           "found.", x->name);
        bool r;
        OG_TRY(chat_test_apply(&e->rt, x->id, in, &a, &r));
        *out = cv_bool(x->flag ? !r : r);
        return NULL;
    }
    case AX_NEG:
    case AX_POS: {
        cv v;
        OG_TRY(eval(e, x->a, f, &v));
        e->rt.line = x->line;
        return chat_neg(&e->rt, v, x->kind == AX_NEG, out);
    }
    case AX_NOT: {
        cv v;
        OG_TRY(eval(e, x->a, f, &v));
        *out = cv_bool(!cv_truthy(v));
        return NULL;
    }
    case AX_BIN: {
        cv a, b;
        OG_TRY(eval(e, x->a, f, &a));
        OG_TRY(eval(e, x->b, f, &b));
        e->rt.line = x->line;
        return chat_binop(&e->rt, (ast_op)x->op, a, b, out);
    }
    case AX_CMP: return eval_compare(e, x, f, out);
    case AX_AND:
        OG_TRY(eval(e, x->a, f, out));
        if (!cv_truthy(*out)) return NULL;
        return eval(e, x->b, f, out);
    case AX_OR:
        OG_TRY(eval(e, x->a, f, out));
        if (cv_truthy(*out)) return NULL;
        return eval(e, x->b, f, out);
    case AX_CONCAT: {
        /* str() of every part, then one allocation for the result */
        cv *parts = crt_alloc(&e->rt, (size_t)x->n * sizeof *parts);
        if (!parts) return crt_mem_err(&e->rt);
        size_t total = 0, ncp = 0;
        for (int i = 0; i < x->n; i++) {
            OG_TRY(eval(e, x->items[i], f, &parts[i]));
            if (parts[i].kind != CV_STR) OG_TRY(cv_to_str(&e->rt, parts[i], &parts[i]));
            total += parts[i].s->len;
            ncp += parts[i].s->ncp;
        }
        cv_str *r = cv_str_alloc(&e->rt, total);
        if (!r) return total > e->rt.lim.max_output ? sbuf_err(&e->rt, e->out) : crt_mem_err(&e->rt);
        size_t o = 0;
        for (int i = 0; i < x->n; i++) {
            memcpy(r->s + o, parts[i].s->s, parts[i].s->len);
            o += parts[i].s->len;
        }
        r->s[total] = 0;
        r->ncp = ncp;
        *out = cv_of_str(r);
        return NULL;
    }
    case AX_COND: {
        cv t;
        OG_TRY(eval(e, x->a, f, &t));
        if (cv_truthy(t)) return eval(e, x->b, f, out);
        if (x->c) return eval(e, x->c, f, out);
        char *msg = crt_alloc(&e->rt, 120);
        if (!msg) return crt_mem_err(&e->rt);
        sprintf(msg, "the inline if-expression on line %d evaluated to false and no else "
                "section was defined.", x->line);
        *out = cv_undef_hint(&e->rt, msg);
        return NULL;
    }
    default:
        return crt_err(&e->rt, OG_ERR_RUNTIME, "internal error: not an expression");
    }
}

/* ---- statements --------------------------------------------------------------------- */

static og_status *apply_chain(ev *e, const ast *chain, frame *f, cv in, cv *out) {
    cv saved = e->hole;
    e->hole = in;
    og_status *st = eval(e, chain, f, out);
    e->hole = saved;
    return st;
}

static og_status *make_macro(ev *e, const ast *s, frame *f, cv *out) {
    cv_func *fn = crt_alloc(&e->rt, sizeof *fn);
    if (!fn) return crt_mem_err(&e->rt);
    fn->type = CF_MACRO;
    fn->macro = s;
    fn->closure = f;
    fn->name = s->kind == AS_MACRO ? s->name : "caller";
    *out = cv_of_func(fn);
    return NULL;
}

static og_status *exec_node(ev *e, const ast *s, frame *f);

static og_status *exec(ev *e, const ast *s, frame *f) {
    if (++e->nest > MAX_NEST) {
        e->nest--;
        return nest_err(e);
    }
    og_status *st = exec_node(e, s, f);
    e->nest--;
    return st;
}

static og_status *exec_node(ev *e, const ast *s, frame *f) {
    e->rt.line = s->line;
    switch ((ast_kind)s->kind) {
    case AS_TEXT: return out_add(e, s->val.s->s, s->val.s->len);
    case AS_PRINT: {
        cv v;
        OG_TRY(eval(e, s->a, f, &v));
        if (v.kind == CV_STR) return out_add(e, v.s->s, v.s->len);
        return cv_write_str(&e->rt, e->out, v);
    }
    case AS_BODY: return exec_body(e, s, f);
    case AS_IF:
        for (;;) {
            cv t;
            e->rt.line = s->line;
            OG_TRY(eval(e, s->a, f, &t));
            if (cv_truthy(t)) return exec_body(e, s->b, f);
            if (!s->c) return NULL;
            if (s->c->kind != AS_IF) return exec_body(e, s->c, f);
            s = s->c;
        }
    case AS_FOR: {
        cv it;
        OG_TRY(eval(e, s->b, f, &it));
        e->rt.line = s->line;
        return run_for(e, s, f, it, 0);
    }
    case AS_SET: {
        cv v;
        OG_TRY(eval(e, s->b, f, &v));
        e->rt.line = s->line;
        return assign(e, s->a, v, f);
    }
    case AS_SET_BLOCK: {
        frame *bf = frame_new(e, f);
        if (!bf) return crt_mem_err(&e->rt);
        cv v;
        OG_TRY(capture(e, s->b, bf, &v));
        if (s->c) OG_TRY(apply_chain(e, s->c, bf, v, &v));
        e->rt.line = s->line;
        return assign(e, s->a, v, f);
    }
    case AS_MACRO: {
        cv m;
        OG_TRY(make_macro(e, s, f, &m));
        return frame_set(e, f, s->sym, m);
    }
    case AS_CALL_BLOCK: {
        const ast *call = s->a;
        cv callee, caller;
        OG_TRY(eval(e, call->a, f, &callee));
        OG_TRY(make_macro(e, s, f, &caller));
        cargs a;
        OG_TRY(eval_args(e, call, f, &a));
        /* the call gets caller= as one more keyword argument */
        const char **kwn = crt_alloc(&e->rt, (size_t)(a.nkw + 1) * sizeof *kwn);
        cv *kw = crt_alloc(&e->rt, (size_t)(a.nkw + 1) * sizeof *kw);
        if (!kwn || !kw) return crt_mem_err(&e->rt);
        if (a.nkw) {
            memcpy(kwn, a.kwn, (size_t)a.nkw * sizeof *kwn);
            memcpy(kw, a.kw, (size_t)a.nkw * sizeof *kw);
        }
        kwn[a.nkw] = "caller";
        kw[a.nkw] = caller;
        a.kwn = kwn;
        a.kw = kw;
        a.nkw++;
        e->rt.line = s->line;
        cv r;
        OG_TRY(call_value(e, callee, &a, &r));
        return cv_write_str(&e->rt, e->out, r);
    }
    case AS_FILTER_BLOCK: {
        frame *bf = frame_new(e, f);
        if (!bf) return crt_mem_err(&e->rt);
        cv v;
        OG_TRY(capture(e, s->b, bf, &v));
        OG_TRY(apply_chain(e, s->a, bf, v, &v));
        return cv_write_str(&e->rt, e->out, v);
    }
    case AS_WITH: {
        frame *wf = frame_new(e, f);
        if (!wf) return crt_mem_err(&e->rt);
        for (int i = 0; i < s->n; i++) {
            cv v;
            OG_TRY(eval(e, s->kw[i], f, &v));
            OG_TRY(assign(e, s->items[i], v, wf));
        }
        return exec_body(e, s->b, wf);
    }
    case AS_SCOPE: {
        frame *sf = frame_new(e, f);
        if (!sf) return crt_mem_err(&e->rt);
        return exec_body(e, s->b, sf);
    }
    case AS_BREAK: e->flow = FLOW_BREAK; return NULL;
    case AS_CONTINUE: e->flow = FLOW_CONTINUE; return NULL;
    case AS_UNSUPPORTED:
        return crt_err(&e->rt, OG_ERR_RUNTIME, "TypeError: no loader for this environment "
                       "specified ({%% %s %%} needs one; chat templates have none)", s->name);
    default:
        return crt_err(&e->rt, OG_ERR_UNSUPPORTED, "the '%s' statement is not implemented",
                       s->name ? s->name : "?");
    }
}

static og_status *exec_body(ev *e, const ast *body, frame *f) {
    if (!body) return NULL;
    for (int i = 0; i < body->n; i++) {
        OG_TRY(exec(e, body->items[i], f));
        if (e->flow != FLOW_NORMAL) return NULL;
    }
    return NULL;
}

/* ---- entry -------------------------------------------------------------------------- */

static og_status *bind_top(void *ctx, int sym, cv val) {
    void **c = ctx;
    return frame_set(c[0], c[1], sym, val);
}

og_status *chat_render(const chat_template *t, const chat_vars *vars, const chat_limits *lim,
                       char **out, size_t *len) {
    if (!t || !out || !len) return og_errorf(OG_ERR_INVALID_ARGUMENT, "chat_render: NULL argument");
    ev e;
    memset(&e, 0, sizeof e);
    e.t = t;
    e.rt.lim = lim ? *lim : chat_limits_default();
    e.rt.origin = t->origin;
    e.rt.tpl = t;
    e.rt.line = 1;
    e.rt.now = getenv("CHAT_TEMPLATE_NOW");
    arena_init(&e.rt.mem);
    sbuf buf;
    sbuf_init(&buf, e.rt.lim.max_output);
    e.out = &buf;
    og_status *st = NULL;
    frame *top = frame_new(&e, NULL);
    if (!top) st = crt_mem_err(&e.rt);
    if (!st && vars) {
        void *ctx[2] = {&e, top};
        st = chat_vars_bind(vars, t, bind_top, ctx);
    }
    if (!st) st = exec_body(&e, t->root, top);
    if (!st) {
        *out = buf.p ? buf.p : calloc(1, 1);
        *len = buf.n;
        if (!*out) st = og_oom();
        buf.p = NULL;
    }
    sbuf_free(&buf);
    arena_free(&e.rt.mem);
    return st;
}
