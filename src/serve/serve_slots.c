/* GET /props and GET /slots as llama-server has them, the slot table /slots reads, and
 * POST /slots/{id}?action=save|restore|erase.
 * A model's engine runs --max-batch sequences at once (a hybrid batched with state slots:
 * as many as it has, which may be fewer); llama-server calls such places slots. Here each
 * choice of a request takes a slot of its model when it is submitted and gives it back
 * when the request is freed (one beyond them waits in the engine's queue, in no slot),
 * and records how many tokens it has taken so far.
 *
 * Save and restore. llama-server keeps a slot's KV after its request and writes it to a
 * file on save. Here KV lives in the engine's shared prefix cache, so a slot keeps the
 * tokens its last sequence ran (prompt and answer), and save writes the positions of them
 * the prefix cache still holds (whole blocks; a hybrid's up to its last state snapshot:
 * eng_prefix_save). Restore puts a file's blocks back into the prefix cache, so any
 * request starting with its tokens finds them (in any slot, as llama-server's requests
 * find a slot's cache by prompt similarity), and the slot takes the file's tokens; erase
 * takes the slot's blocks out of the cache and forgets its tokens. The slot's request, if
 * one runs there, finishes first (llama-server defers the action likewise). */
#include "serve/serve_internal.h"

#include "chat/chat.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* og_version.c, which the build writes (cmake/Version.cmake). */
extern const char og_cli_version[], og_cli_commit[];

typedef struct srv_slot {
    bool busy;
    char task[48];  /* the request's id */
    int choice;     /* which of its choices */
    int n_prompt, n_decoded, max_tokens;
    int32_t *cache;  /* the tokens its last sequence ran (or a restored file's) */
    int n_cache;
} srv_slot;

bool srv_slots_init(srv_server *s) {
    s->n_slots = s->o.eng.max_batch > 0 ? s->o.eng.max_batch : 1;
    s->slots = calloc((size_t)s->n_models * (size_t)s->n_slots, sizeof *s->slots);
    return s->slots != NULL;
}

void srv_slots_free(srv_server *s) {
    for (int i = 0; s->slots && i < s->n_models * s->n_slots; i++) free(s->slots[i].cache);
    free(s->slots);
    s->slots = NULL;
}

static srv_slot *slots_of(srv_server *s, const srv_model *m) {
    return s->slots + (m - s->models) * s->n_slots;
}

int srv_slot_count(const srv_server *s, const srv_model *m) {
    return m->slots > 0 && m->slots < s->n_slots ? m->slots : s->n_slots;
}

/* Waits (under mu) until slot t has no running choice; false when the server stops. */
static bool wait_idle(srv_server *s, srv_slot *t) {
    while (t->busy && !atomic_load(&s->stopping)) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_sec += 1;
        pthread_cond_timedwait(&s->slot_cv, &s->mu, &ts);
    }
    return !t->busy;
}

int srv_slot_take(srv_server *s, const srv_job *j, int choice, int n_prompt) {
    if (!s->slots) return 0;
    srv_slot *t = slots_of(s, j->m);
    int got = 0, first = 0, end = srv_slot_count(s, j->m), want = j->p->id_slot;
    pthread_mutex_lock(&s->mu);
    if (want >= 0) /* id_slot: that one, once its request has finished (none when stopping) */
        first = want, end = want < end && wait_idle(s, &t[want]) ? want + 1 : want;
    for (int k = first; k < end && !got; k++)
        if (!t[k].busy) {
            t[k].busy = true, t[k].choice = choice, t[k].n_prompt = n_prompt;
            t[k].n_decoded = 0, t[k].max_tokens = j->p->max_tokens;
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

/* Sets slot t's tokens to a[0..na) then b[0..nb) (under mu). */
static void set_cache(srv_slot *t, const int32_t *a, int na, const int32_t *b, int nb) {
    int32_t *c = na + nb > 0 ? malloc(sizeof *c * (size_t)(na + nb)) : NULL;
    if (c) {
        if (na) memcpy(c, a, sizeof *c * (size_t)na);
        if (nb) memcpy(c + na, b, sizeof *c * (size_t)nb);
    }
    free(t->cache);
    t->cache = c;
    t->n_cache = c ? na + nb : 0;
}

void srv_slot_give(srv_server *s, const srv_model *m, int slot, const int32_t *prompt,
                   int n_prompt, const int32_t *out, int n_out) {
    if (!slot || !s->slots) return;
    pthread_mutex_lock(&s->mu);
    srv_slot *t = &slots_of(s, m)[slot - 1];
    t->busy = false;
    set_cache(t, prompt, n_prompt, out, n_out);
    pthread_cond_broadcast(&s->slot_cv);
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
    cJSON_AddNumberToObject(o, "total_slots", srv_slot_count(s, m));
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
    int n = srv_slot_count(s, m);
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

/* ---- POST /slots/{id}?action=save|restore|erase --------------------------------------- */

/* A name for a file directly under --slot-save-path: no path, no control characters. */
static bool good_filename(const char *f) {
    size_t n = strlen(f);
    if (!n || n > 255 || !strcmp(f, ".") || !strcmp(f, "..") || f[0] == ' ' || f[n - 1] == ' ')
        return false;
    for (const unsigned char *p = (const unsigned char *)f; *p; p++)
        if (*p < 0x20 || *p == 0x7f || *p == '/' || *p == '\\' || *p == ':') return false;
    return true;
}

static double ms_since(const struct timespec *t0) {
    struct timespec t1;
    clock_gettime(CLOCK_MONOTONIC, &t1);
    return (double)(t1.tv_sec - t0->tv_sec) * 1e3 + (double)(t1.tv_nsec - t0->tv_nsec) * 1e-6;
}

static void status_error(srv_error *err, og_status *st) {
    og_code code = og_status_code(st);
    int status = code == OG_ERR_UNSUPPORTED ? 501
               : code == OG_ERR_INVALID_ARGUMENT || code == OG_ERR_NOT_FOUND ? 400 : 500;
    srv_fail(err, status, "", "%s", og_status_message(st));
    if (status == 501) err->type = "not_supported_error";
    og_status_free(st);
}

void srv_handle_slot_action(srv_server *s, struct MHD_Connection *c, const char *url,
                            const char *body, size_t len, srv_reply *r) {
    srv_error err = {0};
    cJSON *q = NULL;
    srv_model *m = NULL;
    if (!s->o.slot_save_path) {
        srv_fail(&err, 501, "", "This server does not support slots action. Start it with `--slot-save-path`");
        err.type = "not_supported_error";
        goto fail;
    }
    const char *id = url + 7; /* "/slots/" */
    char *end;
    long slot = strtol(id, &end, 10);
    if (!*id || *end || id[0] == '-' || id[0] == '+' || id[0] == ' ' || slot > 1 << 20) {
        srv_fail(&err, 400, "id_slot", "Invalid slot ID");
        goto fail;
    }
    const char *action = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "action");
    bool save = action && !strcmp(action, "save"), restore = action && !strcmp(action, "restore");
    if (!save && !restore && !(action && !strcmp(action, "erase"))) {
        srv_fail(&err, 400, "action", "Invalid action");
        goto fail;
    }
    const char *filename = NULL;
    if (len) {
        q = cJSON_ParseWithLength(body, len);
        if (!q || !cJSON_IsObject(q)) {
            srv_fail(&err, 400, "", "the request body is not a JSON object");
            goto fail;
        }
    }
    if (save || restore) {
        const cJSON *f = q ? cJSON_GetObjectItemCaseSensitive(q, "filename") : NULL;
        if (!cJSON_IsString(f)) {
            srv_fail(&err, 400, "filename", "'filename' (a string) is required to %s a slot", action);
            goto fail;
        }
        filename = f->valuestring;
        if (!good_filename(filename)) {
            srv_fail(&err, 400, "filename", "Invalid filename");
            goto fail;
        }
    }
    if (!(m = named_model(s, c, r))) goto out;
    if (slot >= srv_slot_count(s, m)) {
        srv_fail(&err, 400, "id_slot", "Invalid slot ID: %ld (this model has %d slots)", slot,
                 srv_slot_count(s, m));
        goto fail;
    }
    if (!m->eng) {
        srv_fail(&err, 501, "", "the model '%s' has no generation engine (embeddings only)", m->name);
        err.type = "not_supported_error";
        goto fail;
    }
    char path[4096];
    if (filename) {
        int np = snprintf(path, sizeof path, "%s/%s", s->o.slot_save_path, filename);
        if (np < 0 || (size_t)np >= sizeof path) {
            srv_fail(&err, 400, "filename", "Invalid filename");
            goto fail;
        }
    }
    /* the slot's request finishes first; then its tokens, taken under the lock */
    srv_slot *t = &slots_of(s, m)[slot];
    pthread_mutex_lock(&s->mu);
    bool idle = wait_idle(s, t);
    int n = idle ? t->n_cache : 0;
    int32_t *tokens = n ? malloc(sizeof *tokens * (size_t)n) : NULL;
    if (tokens) memcpy(tokens, t->cache, sizeof *tokens * (size_t)n);
    else n = 0;
    pthread_mutex_unlock(&s->mu);
    if (!idle) {
        free(tokens);
        srv_fail(&err, 503, "", "the server is stopping");
        goto fail;
    }
    struct timespec t0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    cJSON *o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "id_slot", (double)slot);
    if (save) {
        int saved = 0;
        size_t bytes = 0;
        og_status *st = eng_prefix_save(m->eng, tokens, n, path, &saved, &bytes);
        free(tokens);
        if (st) {
            cJSON_Delete(o);
            status_error(&err, st);
            goto fail;
        }
        cJSON_AddStringToObject(o, "filename", filename);
        cJSON_AddNumberToObject(o, "n_saved", saved);
        cJSON_AddNumberToObject(o, "n_written", (double)bytes);
        cJSON_AddNumberToObject(cJSON_AddObjectToObject(o, "timings"), "save_ms", ms_since(&t0));
    } else if (restore) {
        free(tokens);
        int32_t *got = NULL;
        int n_got = 0, restored = 0;
        size_t bytes = 0;
        og_status *st = eng_prefix_restore(m->eng, path, &got, &n_got, &restored, &bytes);
        if (st) {
            cJSON_Delete(o);
            status_error(&err, st);
            goto fail;
        }
        pthread_mutex_lock(&s->mu); /* the slot now stands for the file's tokens */
        if (!t->busy) set_cache(t, got, n_got, NULL, 0);
        pthread_mutex_unlock(&s->mu);
        free(got);
        cJSON_AddStringToObject(o, "filename", filename);
        cJSON_AddNumberToObject(o, "n_restored", restored);
        cJSON_AddNumberToObject(o, "n_read", (double)bytes);
        cJSON_AddNumberToObject(cJSON_AddObjectToObject(o, "timings"), "restore_ms", ms_since(&t0));
    } else {
        /* llama-server answers the slot's token count, which is what the slot forgets;
         * the positions the prefix cache frees may be fewer (blocks a running request
         * shares stay) */
        int freed = 0;
        og_status *st = eng_prefix_erase(m->eng, tokens, n, &freed);
        free(tokens);
        if (st) { /* no prefix cache: 501 as save and restore answer */
            cJSON_Delete(o);
            status_error(&err, st);
            goto fail;
        }
        pthread_mutex_lock(&s->mu);
        if (!t->busy) set_cache(t, NULL, 0, NULL, 0);
        pthread_mutex_unlock(&s->mu);
        cJSON_AddNumberToObject(o, "n_erased", n);
    }
    srv_release(s, m);
    cJSON_Delete(q);
    srv_reply_json(r, 200, o);
    return;
fail:
    srv_reply_error(r, &err);
out:
    if (m) srv_release(s, m);
    cJSON_Delete(q);
}
