/* GET /props and GET /slots as llama-server has them, and the slot table /slots reads.
 * A model's engine runs --max-batch sequences at once (a hybrid batched with state slots:
 * as many as it has, which may be fewer); llama-server calls such places slots. Here each choice of a request takes a slot of its model when it is submitted
 * and gives it back when the request is freed (one beyond them waits in the engine's
 * queue, in no slot), and records how many tokens it has taken so far. */
#include "serve/serve_internal.h"

#include "chat/chat.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* og_version.c, which the build writes (cmake/Version.cmake). */
extern const char og_cli_version[], og_cli_commit[];

typedef struct srv_slot {
    bool busy;
    char task[48];  /* the request's id */
    int choice;     /* which of its choices */
    int n_prompt, n_decoded, max_tokens;
} srv_slot;

bool srv_slots_init(srv_server *s) {
    s->n_slots = s->o.eng.max_batch > 0 ? s->o.eng.max_batch : 1;
    s->slots = calloc((size_t)s->n_models * (size_t)s->n_slots, sizeof *s->slots);
    return s->slots != NULL;
}

void srv_slots_free(srv_server *s) {
    free(s->slots);
    s->slots = NULL;
}

static srv_slot *slots_of(srv_server *s, const srv_model *m) {
    return s->slots + (m - s->models) * s->n_slots;
}

/* The places of model m's table it uses: its engine's (srv_model.slots), at most the
 * table's width. */
static int slot_count(const srv_server *s, const srv_model *m) {
    return m->slots > 0 && m->slots < s->n_slots ? m->slots : s->n_slots;
}

int srv_slot_take(srv_server *s, const srv_job *j, int choice, int n_prompt) {
    if (!s->slots) return 0;
    srv_slot *t = slots_of(s, j->m);
    int got = 0, n = slot_count(s, j->m);
    pthread_mutex_lock(&s->mu);
    for (int k = 0; k < n && !got; k++)
        if (!t[k].busy) {
            t[k] = (srv_slot){.busy = true, .choice = choice, .n_prompt = n_prompt,
                              .max_tokens = j->p->max_tokens};
            snprintf(t[k].task, sizeof t[k].task, "%s", j->id);
            got = k + 1;
        }
    pthread_mutex_unlock(&s->mu);
    return got;
}

void srv_slot_progress(srv_server *s, const srv_model *m, int slot, int n_decoded) {
    if (!slot || !s->slots) return;
    pthread_mutex_lock(&s->mu);
    slots_of(s, m)[slot - 1].n_decoded = n_decoded;
    pthread_mutex_unlock(&s->mu);
}

void srv_slot_give(srv_server *s, const srv_model *m, int slot) {
    if (!slot || !s->slots) return;
    pthread_mutex_lock(&s->mu);
    slots_of(s, m)[slot - 1].busy = false;
    pthread_mutex_unlock(&s->mu);
}

/* The model a GET names by ?model=NAME (or the only one), held: NULL with r set. */
static srv_model *named_model(srv_server *s, struct MHD_Connection *c, srv_reply *r) {
    const char *name = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "model");
    cJSON *q = cJSON_CreateObject();
    if (q && name) cJSON_AddStringToObject(q, "model", name);
    srv_error err = {0};
    srv_model *m = q ? srv_acquire(s, q, &err) : NULL;
    cJSON_Delete(q);
    if (!m) {
        if (!err.status) srv_fail(&err, 500, "", "out of memory");
        srv_reply_error(r, &err);
    }
    return m;
}

/* The sampling a request gets when it sets none: the package's search block. */
static cJSON *default_params(const srv_model *m) {
    const og_generator_params *d = &m->defaults;
    cJSON *p = cJSON_CreateObject();
    bool sample = d->do_sample && d->temperature >= 1e-5f;
    cJSON_AddNumberToObject(p, "temperature", sample ? d->temperature : 0);
    cJSON_AddNumberToObject(p, "top_k", d->top_k);
    cJSON_AddNumberToObject(p, "top_p", d->top_p);
    cJSON_AddNumberToObject(p, "max_tokens", -1); /* up to the context */
    cJSON_AddNumberToObject(p, "repeat_penalty", d->repetition_penalty);
    return p;
}

void srv_handle_props(srv_server *s, struct MHD_Connection *c, srv_reply *r) {
    srv_model *m = named_model(s, c, r);
    if (!m) return;
    cJSON *o = cJSON_CreateObject();
    cJSON *g = cJSON_AddObjectToObject(o, "default_generation_settings");
    cJSON_AddNumberToObject(g, "n_ctx", m->context);
    cJSON_AddItemToObject(g, "params", default_params(m));
    cJSON_AddNumberToObject(o, "total_slots", slot_count(s, m));
    cJSON_AddStringToObject(o, "model_path", m->dir);
    cJSON_AddStringToObject(o, "model_alias", m->name);
    const char *tpl = m->tpl ? chat_template_source(m->tpl) : NULL;
    if (tpl) cJSON_AddStringToObject(o, "chat_template", tpl);
    else cJSON_AddNullToObject(o, "chat_template");
    cJSON *mod = cJSON_AddObjectToObject(o, "modalities");
    cJSON_AddFalseToObject(mod, "vision");
    cJSON_AddFalseToObject(mod, "audio");
    char build[160];
    snprintf(build, sizeof build, "onnx-genai %s (%s)", og_cli_version, og_cli_commit);
    cJSON_AddStringToObject(o, "build_info", build);
    cJSON_AddStringToObject(o, "mode", !m->eng ? "embeddings" : eng_batched(m->eng) ? "batched" : "per-sequence");
    srv_release(s, m);
    srv_reply_json(r, 200, o);
}

void srv_handle_slots(srv_server *s, struct MHD_Connection *c, srv_reply *r) {
    srv_model *m = named_model(s, c, r);
    if (!m) return;
    int n = slot_count(s, m);
    srv_slot *t = slots_of(s, m), *copy = malloc(sizeof *copy * (size_t)n);
    if (!copy) {
        srv_release(s, m);
        srv_error err;
        srv_fail(&err, 500, "", "out of memory");
        srv_reply_error(r, &err);
        return;
    }
    pthread_mutex_lock(&s->mu); /* a consistent picture, then JSON outside the lock */
    memcpy(copy, t, sizeof *copy * (size_t)n);
    pthread_mutex_unlock(&s->mu);
    cJSON *a = cJSON_CreateArray();
    for (int k = 0; k < n; k++) {
        cJSON *e = cJSON_CreateObject();
        cJSON_AddNumberToObject(e, "id", k);
        cJSON_AddNumberToObject(e, "n_ctx", m->context);
        cJSON_AddBoolToObject(e, "is_processing", copy[k].busy);
        if (copy[k].busy) {
            cJSON_AddStringToObject(e, "id_task", copy[k].task);
            cJSON_AddNumberToObject(e, "choice", copy[k].choice);
            cJSON_AddNumberToObject(e, "n_prompt_tokens", copy[k].n_prompt);
            cJSON *nt = cJSON_AddObjectToObject(e, "next_token");
            cJSON_AddNumberToObject(nt, "n_decoded", copy[k].n_decoded);
            if (copy[k].max_tokens >= 0)
                cJSON_AddNumberToObject(nt, "n_remain", copy[k].max_tokens - copy[k].n_decoded);
            else
                cJSON_AddNumberToObject(nt, "n_remain", -1);
        }
        cJSON_AddItemToArray(a, e);
    }
    free(copy);
    srv_release(s, m);
    srv_reply_json(r, 200, a);
}
