/* The public og_chat_template_* functions: finding a package's chat template(s) the way
 * transformers does, and rendering conversations with them.
 *
 * Where a template comes from (in this order):
 *   1. chat_template.jinja in the folder (transformers writes the template there since
 *      4.4x; it wins over tokenizer_config.json), plus the .jinja files in additional_chat_templates
 *      as named templates;
 *   2. tokenizer_config.json "chat_template": a string, or a list of
 *      {"name": ..., "template": ...} named templates;
 *   3. chat_template.json {"chat_template": ...} (processor packages).
 * A single template is named "default". The special tokens transformers passes
 * (bos_token, eos_token, unk_token, sep_token, pad_token, cls_token, mask_token,
 * additional_special_tokens) come from tokenizer_config.json; an AddedToken object
 * gives its "content". */
#include "onnx_genai.h"

#include "base/mapped_file.h"
#include "base/status.h"
#include "chat/chat.h"

#include <cjson/cJSON.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

typedef struct named_template {
    char *name;
    char *origin;        /* "DIR/tokenizer_config.json chat_template['tool_use']", ... */
    char *source;        /* its text (serve's /props shows it) */
    chat_template *tpl;  /* NULL when it failed to parse: then parse_error says why */
    og_status *parse_error;
} named_template;

typedef struct token_var {
    char *name;
    char *value;      /* a string token */
    char *list_json;  /* additional_special_tokens: a JSON array of strings */
} token_var;

struct og_chat_template {
    named_template *t;
    size_t n;
    token_var *tokens;
    size_t ntok;
};

static const char *const token_keys[] = {"bos_token", "eos_token", "unk_token", "sep_token",
                                         "pad_token", "cls_token", "mask_token", NULL};

og_chat_options og_chat_options_default(void) {
    og_chat_options o;
    memset(&o, 0, sizeof o);
    o.struct_size = sizeof o;
    return o;
}

void og_chat_template_free(og_chat_template *t) {
    if (!t) return;
    for (size_t i = 0; i < t->n; i++) {
        free(t->t[i].name);
        free(t->t[i].origin);
        free(t->t[i].source);
        chat_template_free(t->t[i].tpl);
        og_status_free(t->t[i].parse_error);
    }
    free(t->t);
    for (size_t i = 0; i < t->ntok; i++) {
        free(t->tokens[i].name);
        free(t->tokens[i].value);
        free(t->tokens[i].list_json);
    }
    free(t->tokens);
    free(t);
}

static char *dupn(const char *s, size_t n) {
    char *p = malloc(n + 1);
    if (p) {
        memcpy(p, s, n);
        p[n] = 0;
    }
    return p;
}

static og_status *add_template(og_chat_template *t, const char *name, const char *src, size_t len,
                               const char *origin) {
    for (size_t i = 0; i < t->n; i++)
        if (!strcmp(t->t[i].name, name)) return NULL; /* the first source of a name wins */
    named_template *nt = realloc(t->t, (t->n + 1) * sizeof *nt);
    if (!nt) return og_oom();
    t->t = nt;
    named_template *e = &t->t[t->n];
    memset(e, 0, sizeof *e);
    e->name = dupn(name, strlen(name));
    e->origin = dupn(origin, strlen(origin));
    e->source = dupn(src, len);
    if (!e->name || !e->origin || !e->source) {
        free(e->name);
        free(e->origin);
        free(e->source);
        return og_oom();
    }
    t->n++;
    og_status *st = chat_template_parse(src, len, origin, &e->tpl);
    if (st && og_status_code(st) == OG_ERR_OUT_OF_MEMORY) return st;
    e->parse_error = st; /* reported when this template is used */
    return NULL;
}

static og_status *read_file(const char *path, char **text, size_t *len) {
    mapped_file f;
    OG_TRY(mapped_file_open(path, &f));
    *text = dupn(f.data ? (const char *)f.data : "", f.size);
    *len = f.size;
    mapped_file_close(&f);
    return *text ? NULL : og_oom();
}

static bool is_file(const char *path) {
    struct stat sb;
    return stat(path, &sb) == 0 && S_ISREG(sb.st_mode);
}

static og_status *set_token(og_chat_template *t, const char *name, const char *value,
                            const char *list_json) {
    size_t i = 0;
    while (i < t->ntok && strcmp(t->tokens[i].name, name)) i++;
    if (i == t->ntok) {
        if (!value && !list_json) return NULL;
        token_var *nt = realloc(t->tokens, (t->ntok + 1) * sizeof *nt);
        if (!nt) return og_oom();
        t->tokens = nt;
        memset(&t->tokens[i], 0, sizeof t->tokens[i]);
        t->tokens[i].name = dupn(name, strlen(name));
        if (!t->tokens[i].name) return og_oom();
        t->ntok++;
    }
    token_var *v = &t->tokens[i];
    free(v->value);
    free(v->list_json);
    v->value = value ? dupn(value, strlen(value)) : NULL;
    v->list_json = list_json ? dupn(list_json, strlen(list_json)) : NULL;
    if ((value && !v->value) || (list_json && !v->list_json)) return og_oom();
    if (!value && !list_json) { /* removed */
        free(v->name);
        memmove(&t->tokens[i], &t->tokens[i + 1], (t->ntok - i - 1) * sizeof *t->tokens);
        t->ntok--;
    }
    return NULL;
}

/* A token in tokenizer_config.json: "text" or {"content": "text", ...}; NULL otherwise. */
static const char *token_text(const cJSON *v) {
    if (cJSON_IsString(v)) return v->valuestring;
    const cJSON *c = cJSON_IsObject(v) ? cJSON_GetObjectItemCaseSensitive(v, "content") : NULL;
    return cJSON_IsString(c) ? c->valuestring : NULL;
}

static og_status *read_tokens(og_chat_template *t, const cJSON *cfg) {
    for (int i = 0; token_keys[i]; i++) {
        const char *s = token_text(cJSON_GetObjectItemCaseSensitive(cfg, token_keys[i]));
        if (s) OG_TRY(set_token(t, token_keys[i], s, NULL));
    }
    const cJSON *extra = cJSON_GetObjectItemCaseSensitive(cfg, "additional_special_tokens");
    if (cJSON_IsArray(extra)) {
        cJSON *list = cJSON_CreateArray();
        if (!list) return og_oom();
        const cJSON *e;
        cJSON_ArrayForEach(e, extra) {
            const char *s = token_text(e);
            if (s) cJSON_AddItemToArray(list, cJSON_CreateString(s));
        }
        char *json = cJSON_PrintUnformatted(list);
        cJSON_Delete(list);
        if (!json) return og_oom();
        og_status *st = set_token(t, "additional_special_tokens", NULL, json);
        free(json);
        OG_TRY(st);
    }
    return NULL;
}

/* tokenizer_config.json (or chat_template.json): the tokens, and templates unless
 * templates_too is false. */
static og_status *read_config(og_chat_template *t, const char *path, bool templates_too,
                              bool tokens_too) {
    char *text;
    size_t len;
    OG_TRY(read_file(path, &text, &len));
    cJSON *cfg = cJSON_ParseWithLength(text, len);
    free(text);
    if (!cJSON_IsObject(cfg)) {
        cJSON_Delete(cfg);
        return og_errorf(OG_ERR_INVALID_MODEL, "%s: not a JSON object", path);
    }
    og_status *st = tokens_too ? read_tokens(t, cfg) : NULL;
    const cJSON *ct = cJSON_GetObjectItemCaseSensitive(cfg, "chat_template");
    char origin[4200];
    if (!st && templates_too && cJSON_IsString(ct)) {
        snprintf(origin, sizeof origin, "%s chat_template", path);
        st = add_template(t, "default", ct->valuestring, strlen(ct->valuestring), origin);
    } else if (!st && templates_too && cJSON_IsArray(ct)) {
        const cJSON *e;
        int i = 0;
        cJSON_ArrayForEach(e, ct) {
            const cJSON *name = cJSON_GetObjectItemCaseSensitive(e, "name");
            const cJSON *src = cJSON_GetObjectItemCaseSensitive(e, "template");
            if (!cJSON_IsString(name) || !cJSON_IsString(src)) {
                st = og_errorf(OG_ERR_INVALID_MODEL, "%s: chat_template[%d] needs a \"name\" and a "
                               "\"template\" string", path, i);
                break;
            }
            snprintf(origin, sizeof origin, "%s chat_template['%s']", path, name->valuestring);
            if ((st = add_template(t, name->valuestring, src->valuestring,
                                   strlen(src->valuestring), origin)))
                break;
            i++;
        }
    } else if (!st && templates_too && ct && !cJSON_IsNull(ct)) {
        st = og_errorf(OG_ERR_INVALID_MODEL, "%s: chat_template is neither a string nor a list of "
                       "named templates", path);
    }
    cJSON_Delete(cfg);
    return st;
}

static og_status *add_template_file(og_chat_template *t, const char *name, const char *path) {
    char *text;
    size_t len;
    OG_TRY(read_file(path, &text, &len));
    og_status *st = add_template(t, name, text, len, path);
    free(text);
    return st;
}

/* additional_chat_templates/NAME.jinja */
static og_status *add_named_dir(og_chat_template *t, const char *dir) {
    char path[4200];
    snprintf(path, sizeof path, "%s/additional_chat_templates", dir);
    DIR *d = opendir(path);
    if (!d) return NULL;
    og_status *st = NULL;
    struct dirent *ent;
    while (!st && (ent = readdir(d)) != NULL) {
        size_t l = strlen(ent->d_name);
        if (l <= 6 || strcmp(ent->d_name + l - 6, ".jinja") != 0) continue;
        char name[256], file[4500];
        snprintf(name, sizeof name, "%.*s", (int)(l - 6), ent->d_name);
        snprintf(file, sizeof file, "%s/%s", path, ent->d_name);
        st = add_template_file(t, name, file);
    }
    closedir(d);
    return st;
}

og_status *og_chat_template_open(const char *path, og_chat_template **out) {
    if (!path || !out) return og_errorf(OG_ERR_INVALID_ARGUMENT, "og_chat_template_open: NULL argument");
    struct stat sb;
    if (stat(path, &sb) != 0)
        return og_errorf(OG_ERR_NOT_FOUND, "%s: no such file or folder", path);
    og_chat_template *t = calloc(1, sizeof *t);
    if (!t) return og_oom();
    og_status *st = NULL;
    char p[4200];
    if (S_ISDIR(sb.st_mode)) {
        snprintf(p, sizeof p, "%s/tokenizer_config.json", path);
        bool have_cfg = is_file(p);
        char jinja[4200];
        snprintf(jinja, sizeof jinja, "%s/chat_template.jinja", path);
        if (is_file(jinja)) st = add_template_file(t, "default", jinja);
        if (!st && have_cfg) st = read_config(t, p, t->n == 0, true);
        if (!st) st = add_named_dir(t, path);
        snprintf(p, sizeof p, "%s/chat_template.json", path);
        if (!st && t->n == 0 && is_file(p)) st = read_config(t, p, true, false);
        if (!st && t->n == 0)
            st = og_errorf(OG_ERR_NOT_FOUND, "%s: no chat template (looked for chat_template.jinja, "
                           "tokenizer_config.json \"chat_template\" and chat_template.json)", path);
    } else {
        size_t l = strlen(path);
        bool json = l > 5 && !strcmp(path + l - 5, ".json");
        if (json) {
            st = read_config(t, path, true, true);
            if (!st && t->n == 0)
                st = og_errorf(OG_ERR_NOT_FOUND, "%s: no \"chat_template\" in it", path);
        } else {
            st = add_template_file(t, "default", path);
            /* the special tokens of a tokenizer_config.json beside the file */
            const char *slash = strrchr(path, '/');
            snprintf(p, sizeof p, "%.*s/tokenizer_config.json", slash ? (int)(slash - path) : 1,
                     slash ? path : ".");
            if (!st && is_file(p)) st = read_config(t, p, false, true);
        }
    }
    if (st) {
        og_chat_template_free(t);
        return st;
    }
    *out = t;
    return NULL;
}

og_status *og_chat_template_from_string(const char *source, size_t len, og_chat_template **out) {
    if (!source || !out) return og_errorf(OG_ERR_INVALID_ARGUMENT, "og_chat_template_from_string: NULL argument");
    og_chat_template *t = calloc(1, sizeof *t);
    if (!t) return og_oom();
    og_status *st = add_template(t, "default", source, len, "chat template");
    if (!st && t->t[0].parse_error) {
        st = t->t[0].parse_error;
        t->t[0].parse_error = NULL;
    }
    if (st) {
        og_chat_template_free(t);
        return st;
    }
    *out = t;
    return NULL;
}

og_status *og_chat_template_set_token(og_chat_template *t, const char *name, const char *value) {
    if (!t || !name) return og_errorf(OG_ERR_INVALID_ARGUMENT, "og_chat_template_set_token: NULL argument");
    return set_token(t, name, value, NULL);
}

og_status *og_chat_template_load_tokens(og_chat_template *t, const char *path) {
    if (!t || !path) return og_errorf(OG_ERR_INVALID_ARGUMENT, "og_chat_template_load_tokens: NULL argument");
    struct stat sb;
    if (stat(path, &sb) != 0) return og_errorf(OG_ERR_NOT_FOUND, "%s: no such file or folder", path);
    char p[4200];
    snprintf(p, sizeof p, S_ISDIR(sb.st_mode) ? "%s/tokenizer_config.json" : "%s", path);
    if (S_ISDIR(sb.st_mode) && !is_file(p)) return NULL; /* no tokens to set */
    return read_config(t, p, false, true);
}

size_t og_chat_template_count(const og_chat_template *t) { return t ? t->n : 0; }

const char *og_chat_template_name(const og_chat_template *t, size_t index) {
    return t && index < t->n ? t->t[index].name : NULL;
}

const char *og_chat_template_origin(const og_chat_template *t, size_t index) {
    return t && index < t->n ? t->t[index].origin : NULL;
}

const char *og_chat_template_token(const og_chat_template *t, const char *name) {
    for (size_t i = 0; t && name && i < t->ntok; i++)
        if (!strcmp(t->tokens[i].name, name)) return t->tokens[i].value;
    return NULL;
}

/* transformers' choice: the name asked for; else "tool_use" when tools are given and the
 * package has it; else "default"; a lone template is the default whatever its name. */
static og_status *pick_template(const og_chat_template *t, const char *name, bool tools,
                         const named_template **out) {
    const named_template *pick = NULL;
    if (name) {
        for (size_t i = 0; i < t->n && !pick; i++)
            if (!strcmp(t->t[i].name, name)) pick = &t->t[i];
        if (!pick) {
            char names[512] = "";
            for (size_t i = 0; i < t->n; i++) {
                size_t l = strlen(names);
                snprintf(names + l, sizeof names - l, "%s'%s'", i ? ", " : "", t->t[i].name);
            }
            return og_errorf(OG_ERR_NOT_FOUND, "no chat template named '%s' (the package has %s)",
                             name, names);
        }
    } else if (t->n == 1) {
        pick = &t->t[0];
    } else {
        for (size_t i = 0; i < t->n && !pick && tools; i++)
            if (!strcmp(t->t[i].name, "tool_use")) pick = &t->t[i];
        for (size_t i = 0; i < t->n && !pick; i++)
            if (!strcmp(t->t[i].name, "default")) pick = &t->t[i];
        if (!pick)
            return og_errorf(OG_ERR_NOT_FOUND, "the package has several chat templates and none "
                             "is named 'default': choose one by name");
    }
    if (pick->parse_error)
        return og_errorf(og_status_code(pick->parse_error), "%s", og_status_message(pick->parse_error));
    *out = pick;
    return NULL;
}

static og_status *build_vars(const og_chat_template *t, const char *messages,
                             const og_chat_options *o, bool keep_null, chat_vars *v) {
    OG_TRY(keep_null ? chat_vars_set_messages_json_nulls(v, messages, strlen(messages))
                     : chat_vars_set_messages_json(v, messages, strlen(messages)));
    if (o->tools_json) OG_TRY(chat_vars_set_json(v, "tools", o->tools_json, strlen(o->tools_json)));
    else OG_TRY(chat_vars_set_none(v, "tools"));
    if (o->documents_json)
        OG_TRY(chat_vars_set_json(v, "documents", o->documents_json, strlen(o->documents_json)));
    else OG_TRY(chat_vars_set_none(v, "documents"));
    OG_TRY(chat_vars_set_bool(v, "add_generation_prompt", o->add_generation_prompt != 0));
    for (size_t i = 0; i < t->ntok; i++) {
        const token_var *tv = &t->tokens[i];
        if (tv->value) OG_TRY(chat_vars_set_string(v, tv->name, tv->value, strlen(tv->value)));
        else OG_TRY(chat_vars_set_json(v, tv->name, tv->list_json, strlen(tv->list_json)));
    }
    if (o->extra_json) {
        /* extra keyword arguments may not repeat the named ones (Python's TypeError) */
        chat_vars *probe;
        OG_TRY(chat_vars_new(&probe));
        og_status *st = chat_vars_update_json(probe, o->extra_json, strlen(o->extra_json));
        static const char *const reserved[] = {"messages", "tools", "documents",
                                               "add_generation_prompt", NULL};
        for (int i = 0; !st && reserved[i]; i++)
            if (chat_vars_has(probe, reserved[i]))
                st = og_errorf(OG_ERR_INVALID_ARGUMENT, "extra arguments: '%s' is set by its own "
                               "parameter, not as an extra argument", reserved[i]);
        chat_vars_free(probe);
        OG_TRY(st);
        OG_TRY(chat_vars_update_json(v, o->extra_json, strlen(o->extra_json)));
    }
    return NULL;
}

static og_status *apply(const og_chat_template *t, const char *messages_json,
                        const og_chat_options *options, bool keep_null, char **text) {
    if (!t || !messages_json || !text)
        return og_errorf(OG_ERR_INVALID_ARGUMENT, "og_chat_template_apply: NULL argument");
    og_chat_options o = og_chat_options_default();
    if (options) {
        if (options->struct_size < sizeof(size_t) || options->struct_size > sizeof o)
            return og_errorf(OG_ERR_INVALID_ARGUMENT, "og_chat_template_apply: options.struct_size "
                             "is %zu, expected %zu (fill options with og_chat_options_default)",
                             options->struct_size, sizeof o);
        memcpy(&o, options, options->struct_size);
    }
    const named_template *nt = NULL;
    OG_TRY(pick_template(t, o.template_name, o.tools_json != NULL, &nt));
    chat_vars *v;
    OG_TRY(chat_vars_new(&v));
    og_status *st = build_vars(t, messages_json, &o, keep_null, v);
    size_t len;
    if (!st) st = chat_render(nt->tpl, v, NULL, text, &len);
    chat_vars_free(v);
    return st;
}

og_status *og_chat_template_apply(const og_chat_template *t, const char *messages_json,
                                  const og_chat_options *options, char **text) {
    return apply(t, messages_json, options, false, text);
}

og_status *chat_template_apply_nulls(const og_chat_template *t, const char *messages_json,
                                     const og_chat_options *options, char **text) {
    return apply(t, messages_json, options, true, text);
}

const char *chat_template_source(const og_chat_template *t) {
    const named_template *pick = NULL;
    og_status *st = pick_template(t, NULL, false, &pick);
    bool ok = !st;
    og_status_free(st);
    return ok ? pick->source : NULL;
}
