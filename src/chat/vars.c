/* The variables of a render (messages, tools, add_generation_prompt, special tokens,
 * extra keyword arguments), held as values in their own arena. A render reads them and
 * never changes them. */
#include "chat/chat.h"
#include "chat/eval.h"

#include <stdlib.h>
#include <string.h>

struct chat_vars {
    crt rt; /* the arena and limits the values were made with */
    char **names;
    cv *vals;
    int n, cap;
};

og_status *chat_vars_new(chat_vars **out) {
    if (!out) return og_errorf(OG_ERR_INVALID_ARGUMENT, "chat_vars_new: NULL");
    chat_vars *v = calloc(1, sizeof *v);
    if (!v) return og_oom();
    arena_init(&v->rt.mem);
    v->rt.lim = chat_limits_default();
    v->rt.origin = "chat variables";
    *out = v;
    return NULL;
}

void chat_vars_free(chat_vars *v) {
    if (!v) return;
    free(v->names);
    free(v->vals);
    arena_free(&v->rt.mem);
    free(v);
}

static og_status *set_var(chat_vars *v, const char *name, cv val) {
    for (int i = 0; i < v->n; i++)
        if (!strcmp(v->names[i], name)) {
            v->vals[i] = val;
            return NULL;
        }
    if (v->n == v->cap) {
        int cap = v->cap ? v->cap * 2 : 8;
        char **nn = realloc(v->names, (size_t)cap * sizeof *nn);
        if (!nn) return og_oom();
        v->names = nn;
        cv *nv = realloc(v->vals, (size_t)cap * sizeof *nv);
        if (!nv) return og_oom();
        v->vals = nv;
        v->cap = cap;
    }
    char *copy = arena_strdup(&v->rt.mem, name);
    if (!copy) return og_oom();
    v->names[v->n] = copy;
    v->vals[v->n] = val;
    v->n++;
    return NULL;
}

og_status *chat_vars_set_json(chat_vars *v, const char *name, const char *json, size_t len) {
    if (!v || !name || !json) return og_errorf(OG_ERR_INVALID_ARGUMENT, "chat_vars_set_json: NULL");
    cv val;
    OG_TRY(chat_json_parse(&v->rt, json, len, name, &val));
    return set_var(v, name, val);
}

og_status *chat_vars_set_string(chat_vars *v, const char *name, const char *s, size_t len) {
    if (!v || !name || !s) return og_errorf(OG_ERR_INVALID_ARGUMENT, "chat_vars_set_string: NULL");
    cv val;
    OG_TRY(cv_make_str(&v->rt, s, len, &val));
    return set_var(v, name, val);
}

og_status *chat_vars_set_bool(chat_vars *v, const char *name, bool b) {
    if (!v || !name) return og_errorf(OG_ERR_INVALID_ARGUMENT, "chat_vars_set_bool: NULL");
    return set_var(v, name, cv_bool(b));
}

og_status *chat_vars_set_none(chat_vars *v, const char *name) {
    if (!v || !name) return og_errorf(OG_ERR_INVALID_ARGUMENT, "chat_vars_set_none: NULL");
    return set_var(v, name, cv_none());
}

bool chat_vars_has(const chat_vars *v, const char *name) {
    for (int i = 0; v && i < v->n; i++)
        if (!strcmp(v->names[i], name)) return true;
    return false;
}

og_status *chat_vars_update_json(chat_vars *v, const char *json, size_t len) {
    if (!v || !json) return og_errorf(OG_ERR_INVALID_ARGUMENT, "chat_vars_update_json: NULL");
    cv obj;
    OG_TRY(chat_json_parse(&v->rt, json, len, "extra arguments", &obj));
    if (obj.kind != CV_DICT)
        return og_errorf(OG_ERR_INVALID_ARGUMENT, "extra arguments: expected a JSON object, got %s",
                         cv_type_name(obj));
    for (size_t i = 0; i < obj.d->n; i++) OG_TRY(set_var(v, obj.d->e[i].key.s->s, obj.d->e[i].val));
    return NULL;
}

static og_status *set_messages(chat_vars *v, const char *json, size_t len, bool keep_null) {
    if (!v || !json) return og_errorf(OG_ERR_INVALID_ARGUMENT, "chat_vars_set_messages_json: NULL");
    cv msgs;
    OG_TRY(chat_json_parse(&v->rt, json, len, "messages", &msgs));
    if (msgs.kind != CV_LIST)
        return og_errorf(OG_ERR_INVALID_ARGUMENT, "messages: expected a JSON array of messages, "
                         "got %s", cv_type_name(msgs));
    crt *rt = &v->rt;
    static const char *const reasoning_keys[] = {"reasoning_content", "thinking", "reasoning"};
    for (size_t i = 0; i < msgs.l->n; i++) {
        cv m = msgs.l->v[i];
        if (m.kind != CV_DICT)
            return og_errorf(OG_ERR_INVALID_ARGUMENT, "messages[%zu]: expected an object, got %s",
                             i, cv_type_name(m));
        /* keys whose value is null are dropped */
        cv_dict *d = cv_dict_new(rt, m.d->n + 2);
        if (!d) return crt_mem_err(rt);
        for (size_t k = 0; k < m.d->n; k++)
            if (keep_null || m.d->e[k].val.kind != CV_NONE) d->e[d->n++] = m.d->e[k];
        cv reasoning = cv_undef();
        for (size_t r = 0; r < 3 && reasoning.kind == CV_UNDEF; r++) {
            cv_entry *e = cv_dict_find_str(d, reasoning_keys[r], strlen(reasoning_keys[r]));
            if (e) reasoning = e->val;
        }
        if (reasoning.kind != CV_UNDEF) {
            /* {"thinking": reasoning, **m, "reasoning_content": reasoning} */
            cv_dict *a = cv_dict_new(rt, d->n + 2);
            if (!a) return crt_mem_err(rt);
            OG_TRY(cv_dict_set_str(rt, a, "thinking", reasoning));
            for (size_t k = 0; k < d->n; k++) OG_TRY(cv_dict_set(rt, a, d->e[k].key, d->e[k].val));
            OG_TRY(cv_dict_set_str(rt, a, "reasoning_content", reasoning));
            d = a;
        }
        msgs.l->v[i] = cv_of_dict(d);
    }
    return set_var(v, "messages", msgs);
}

og_status *chat_vars_set_messages_json(chat_vars *v, const char *json, size_t len) {
    return set_messages(v, json, len, false);
}

og_status *chat_vars_set_messages_json_nulls(chat_vars *v, const char *json, size_t len) {
    return set_messages(v, json, len, true);
}

og_status *chat_vars_bind(const chat_vars *v, const chat_template *t,
                          og_status *(*set)(void *ctx, int sym, cv val), void *ctx) {
    for (int i = 0; i < v->n; i++) {
        int sym = chat_sym_find(t, v->names[i]);
        if (sym >= 0) OG_TRY(set(ctx, sym, v->vals[i]));
    }
    return NULL;
}
