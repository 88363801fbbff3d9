/* The chat layer's value model: what a Jinja chat template computes with. Python's
 * types as jinja2 sees them inside transformers' ImmutableSandboxedEnvironment:
 * Undefined, None, bool, int, float, str, list/tuple (and the one-shot generators and
 * views that filters return), dict (insertion ordered), Namespace, callables and the
 * `loop` object.
 *
 * Values are small structs passed by value; everything they point to lives in the
 * render's arena (or the template's, for constants) and is freed with it, so there is
 * no reference counting. Lists and dicts are never changed once a template can see
 * them (the sandbox forbids it), except Namespace attributes, which `set ns.x = ...`
 * writes in place as jinja2 does.
 *
 * Strings are UTF-8 with their byte length and code point count; Python's operations
 * (len, slicing, padding) count code points. */
#ifndef OG_CHAT_CV_H
#define OG_CHAT_CV_H

#include "base/arena.h"
#include "base/status.h"
#include "chat/chat.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef enum cv_kind {
    CV_UNDEF, /* jinja2's Undefined: renders empty, fails when used */
    CV_NONE,
    CV_BOOL,
    CV_INT,   /* Python int, here 64-bit; overflow is an error, never a wrong value */
    CV_FLOAT,
    CV_STR,
    CV_LIST,  /* list, tuple, generator, range, dict views: see cv_seq */
    CV_DICT,
    CV_NS,    /* namespace(): a dict whose entries are attributes */
    CV_FUNC,  /* macros, builtins, bound methods */
    CV_LOOP   /* the `loop` variable of a for loop */
} cv_kind;

/* What a CV_LIST is in Python terms (it decides repr, len, truthiness, indexing). */
typedef enum cv_seq {
    CV_SEQ_LIST,
    CV_SEQ_TUPLE,
    CV_SEQ_GEN,     /* a generator (select, map, unique, items filter): one-shot, no len */
    CV_SEQ_REVITER, /* reversed(list): one-shot, no len */
    CV_SEQ_RANGE,   /* range(a, b, c): indexable, has len, repr "range(a, b)" */
    CV_SEQ_KEYS,    /* dict.keys() / values() / items(): len, no indexing */
    CV_SEQ_VALUES,
    CV_SEQ_ITEMS
} cv_seq;

enum { CVF_MARKUP = 1 }; /* a string marked safe (|safe, |escape): jinja2's Markup */

typedef struct cv_str {
    size_t len;  /* bytes, without the terminating NUL */
    size_t ncp;  /* code points */
    char s[];    /* NUL-terminated */
} cv_str;

struct cv_list;
struct cv_dict;
struct cv_func;
struct cv_loop;
struct cv_undefined;

typedef struct cv {
    uint8_t kind;  /* cv_kind */
    uint8_t flags; /* CVF_MARKUP for strings */
    union {
        bool b;
        int64_t i;
        double f;
        cv_str *s;
        struct cv_list *l;
        struct cv_dict *d; /* CV_DICT and CV_NS */
        struct cv_func *fn;
        struct cv_loop *loop;
        struct cv_undefined *u; /* NULL: plain undefined without a name */
    };
} cv;

typedef struct cv_list {
    size_t n, cap;
    uint8_t seq;      /* cv_seq */
    bool consumed;    /* a generator that has been iterated */
    int64_t r_start, r_stop, r_step; /* CV_SEQ_RANGE, for repr */
    cv *v;
} cv_list;

typedef struct cv_entry {
    cv key, val;
} cv_entry;

typedef struct cv_dict {
    size_t n, cap;
    cv_entry *e;
} cv_dict;

/* Why a value is undefined, for the error raised when it is used. */
typedef enum cv_undef_why {
    CV_UNDEF_NAME,   /* 'x' is undefined */
    CV_UNDEF_ATTR,   /* 'dict object' has no attribute 'x' */
    CV_UNDEF_ITEM,   /* 'list object' has no element 5 */
    CV_UNDEF_HINT,   /* a message of its own */
    CV_UNDEF_UNSAFE  /* access to attribute 'append' of 'list' object is unsafe. */
} cv_undef_why;

typedef struct cv_undefined {
    uint8_t why;
    const char *name;   /* NAME, ATTR, UNSAFE: the name; HINT: the message */
    const char *owner;  /* ATTR, ITEM, UNSAFE: the object's type name */
    cv key;             /* ITEM */
} cv_undefined;

/* Builtin callables (globals, and the objects some of them return). */
typedef enum cv_builtin {
    CB_RANGE, CB_NAMESPACE, CB_DICT, CB_DICT_FROMKEYS, CB_RAISE, CB_STRFTIME, CB_CYCLER,
    CB_JOINER, CB_LIPSUM, CB_COUNT
} cv_builtin;

typedef enum cv_func_type {
    CF_BUILTIN,  /* id: cv_builtin */
    CF_METHOD,   /* self.name(...) on a str, dict, list */
    CF_MACRO,    /* a {% macro %} or the caller of a {% call %} block */
    CF_LOOP,     /* loop(...) of a recursive loop, loop.cycle, loop.changed */
    CF_JOINER,   /* the object joiner() returns */
    CF_CYCLER    /* the object cycler() returns (next/reset/current) */
} cv_func_type;

struct ast;
struct frame;

typedef struct cv_func {
    uint8_t type; /* cv_func_type */
    int id;       /* CF_BUILTIN: cv_builtin; CF_LOOP: 0 call, 1 cycle, 2 changed */
    cv self;      /* CF_METHOD: the receiver; CF_LOOP: the loop */
    const char *name;           /* method name, macro name */
    const struct ast *macro;    /* CF_MACRO: the macro or call-block node */
    struct frame *closure;      /* CF_MACRO: the frame the body sees */
    const struct cv_func *caller; /* CF_MACRO from {% call %}: passed as `caller` */
    /* CF_JOINER / CF_CYCLER state */
    cv_list *items;
    size_t pos;
    bool used;
    const char *sep;
} cv_func;

typedef struct cv_loop {
    cv_list *items;    /* the (filtered) items of this loop */
    size_t index0;
    int depth0;
    bool changed_set;
    cv changed_last;
    const struct ast *node;  /* the for statement (recursive loops call it again) */
    struct frame *frame;     /* the frame the for statement runs in */
} cv_loop;

/* ---- limits and the render state ------------------------------------------------- */


/* One render: the arena its values live in, the limits and counters, the current
 * line (for messages) and the template's origin (its file or config key). */
typedef struct crt {
    arena mem;
    size_t mem_used;
    bool mem_limit_hit;
    chat_limits lim;
    const char *origin;
    int line;
    int depth;
    uint64_t iterations;
    const struct chat_template *tpl;
    const char *now; /* CHAT_TEMPLATE_NOW, or NULL for the clock */
} crt;

/* An error at the current line: "<origin>:<line>: <Kind>: <message>". */
og_status *crt_err(crt *rt, og_code code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* Arena memory counted against max_memory (zeroed). NULL when over the limit or out of
 * memory: then crt_mem_err says which. */
void *crt_alloc(crt *rt, size_t size);
og_status *crt_mem_err(crt *rt);
/* A copy of the n elements of old in an array of twice *cap (at least 4) elements;
 * updates *cap. NULL as crt_alloc. */
void *crt_grow(crt *rt, void *old, size_t n, size_t *cap, size_t elem);

/* ---- construction ------------------------------------------------------------------ */

static inline cv cv_undef(void) { cv v = {.kind = CV_UNDEF}; v.u = NULL; return v; }
static inline cv cv_none(void) { cv v = {.kind = CV_NONE}; v.i = 0; return v; }
static inline cv cv_bool(bool b) { cv v = {.kind = CV_BOOL}; v.b = b; return v; }
static inline cv cv_int(int64_t i) { cv v = {.kind = CV_INT}; v.i = i; return v; }
static inline cv cv_float(double f) { cv v = {.kind = CV_FLOAT}; v.f = f; return v; }
static inline cv cv_of_str(cv_str *s) { cv v = {.kind = CV_STR}; v.s = s; return v; }
static inline cv cv_of_list(cv_list *l) { cv v = {.kind = CV_LIST}; v.l = l; return v; }
static inline cv cv_of_dict(cv_dict *d) { cv v = {.kind = CV_DICT}; v.d = d; return v; }
static inline cv cv_of_func(cv_func *f) { cv v = {.kind = CV_FUNC}; v.fn = f; return v; }

/* A string copied from s[0..len) into the arena (NULL on failure: see crt_mem_err). The
 * code point count is computed; s must be valid UTF-8. */
cv_str *cv_str_new(crt *rt, const char *s, size_t len);
/* Same, in any arena (template constants); no limit. */
cv_str *cv_str_in(arena *a, const char *s, size_t len);
/* An uninitialised string of len bytes to fill; call cv_str_done afterwards. */
cv_str *cv_str_alloc(crt *rt, size_t len);
void cv_str_done(cv_str *s);
og_status *cv_make_str(crt *rt, const char *s, size_t len, cv *out);

cv_list *cv_list_new(crt *rt, size_t cap, cv_seq seq);
og_status *cv_list_push(crt *rt, cv_list *l, cv v);
cv_dict *cv_dict_new(crt *rt, size_t cap);
/* Sets key to val: replaces the value in place when the key exists (Python keeps the
 * first position), else appends. */
og_status *cv_dict_set(crt *rt, cv_dict *d, cv key, cv val);
og_status *cv_dict_set_str(crt *rt, cv_dict *d, const char *key, cv val);
/* The entry for key, or NULL. */
cv_entry *cv_dict_find(const cv_dict *d, cv key);
cv_entry *cv_dict_find_str(const cv_dict *d, const char *key, size_t len);

/* Undefined values that remember why, for the error when they are used. */
cv cv_undef_name(crt *rt, const char *name);
cv cv_undef_attr(crt *rt, cv owner, const char *name);
cv cv_undef_item(crt *rt, cv owner, cv key);
cv cv_undef_hint(crt *rt, const char *msg);
cv cv_undef_unsafe(crt *rt, cv owner, const char *name);
/* The error a use of an undefined value raises (UndefinedError / SecurityError). */
og_status *cv_undef_error(crt *rt, cv u);

/* ---- Python semantics -------------------------------------------------------------- */

/* Python's type name: "NoneType", "int", "str", "list", "dict", "generator", ... */
const char *cv_type_name(cv v);
bool cv_truthy(cv v);
bool cv_is_number(cv v); /* bool, int, float */
double cv_as_double(cv v);
/* a == b as Python compares (1 == 1.0 == True; lists by items; dicts by content). */
bool cv_eq(cv a, cv b);
/* Ordering for <, sort, min/max: *res <0, 0, >0; a TypeError when Python has none. */
og_status *cv_cmp(crt *rt, cv a, cv b, const char *op, int *res);
/* Whether Python could hash it (a dict key, `in` a dict). */
bool cv_hashable(cv v);
/* Iterates as Python's iter(): lists (generators are consumed), dict keys, a string's
 * characters; an undefined value is empty. *out holds the items (may alias the list). */
og_status *cv_iterate(crt *rt, cv v, cv_list **out);
/* len(v) or a TypeError (generators have no len). */
og_status *cv_len(crt *rt, cv v, int64_t *out);

/* ---- text -------------------------------------------------------------------------- */

/* A growable byte buffer on the heap, bounded by a limit. */
typedef struct sbuf {
    char *p;
    size_t n, cap, limit;
    bool oom; /* a failed add ran out of memory (else it hit the limit) */
} sbuf;

void sbuf_init(sbuf *b, size_t limit);
void sbuf_free(sbuf *b);
/* false when the limit would be passed or memory ran out (b->p NULL then). */
bool sbuf_add(sbuf *b, const char *s, size_t len);
bool sbuf_addc(sbuf *b, char c);
bool sbuf_adds(sbuf *b, const char *s);
bool sbuf_printf(sbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* The error for a failed sbuf_add: output limit or out of memory. */
og_status *sbuf_err(crt *rt, const sbuf *b);

/* Appends str(v) / repr(v) as Python writes them. Undefined: "" / "Undefined". */
og_status *cv_write_str(crt *rt, sbuf *b, cv v);
og_status *cv_write_repr(crt *rt, sbuf *b, cv v);
/* str(v) as a value (a string stays itself). */
og_status *cv_to_str(crt *rt, cv v, cv *out);
/* Python's repr of a float: shortest round-trip digits ("0.1", "1e+16", "inf"). */
void cv_float_repr(double f, char buf[32]);

#endif
