/* The models a server serves: the one of -m (loaded at start), or every package folder
 * under --models-dir (a folder with genai_config.json, served under its folder name),
 * each loaded on its first request while the least recently used idle ones are unloaded
 * to make room for it within --models-memory (the one loaded last stays, even alone
 * over the budget). A request holds its model (users) for its whole life, so a model is
 * never unloaded under one; when every other is in use the budget is exceeded until a
 * later load finds them idle. */
#include "serve/serve_internal.h"

#include "base/status.h"
#include "base/proc_mem.h"
#include "chat/chat.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

static char *name_of(const char *dir) {
    size_t n = strlen(dir);
    while (n > 1 && dir[n - 1] == '/') n--;
    size_t b = n;
    while (b > 0 && dir[b - 1] != '/') b--;
    return strndup(dir + b, n - b);
}

static char *join(const char *a, const char *b) {
    size_t n = strlen(a) + strlen(b) + 2;
    char *p = malloc(n);
    if (p) snprintf(p, n, "%s/%s", a, b);
    return p;
}

static bool is_package(const char *dir) {
    char *cfg = join(dir, "genai_config.json");
    struct stat st;
    bool ok = cfg && stat(cfg, &st) == 0 && S_ISREG(st.st_mode);
    free(cfg);
    return ok;
}

/* The bytes of the package's files (its weights, mostly): the least a load costs. */
static size_t package_bytes(const char *dir) {
    DIR *d = opendir(dir);
    if (!d) return 0;
    size_t total = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        char *p = join(dir, e->d_name);
        struct stat st;
        if (p && stat(p, &st) == 0 && S_ISREG(st.st_mode)) total += (size_t)st.st_size;
        free(p);
    }
    closedir(d);
    return total;
}

/* A name that can stand in JSON and Prometheus labels without escaping. */
static bool plain_name(const char *n) {
    if (!*n) return false;
    for (const unsigned char *p = (const unsigned char *)n; *p; p++)
        if (*p < 0x20 || *p == '"' || *p == '\\' || *p == 0x7f) return false;
    return true;
}

static int by_name(const void *a, const void *b) {
    return strcmp(((const srv_model *)a)->name, ((const srv_model *)b)->name);
}

bool srv_models_init(srv_server *s) {
    pthread_mutex_init(&s->models_mu, NULL);
    pthread_cond_init(&s->models_cv, NULL);
    const serve_options *o = &s->o;
    if (!o->models_dir) {
        s->models = calloc(1, sizeof *s->models);
        if (!s->models) return false;
        s->n_models = 1;
        pthread_mutex_init(&s->models[0].emb_mu, NULL);
        s->models[0].emb_mu_live = true;
        s->models[0].dir = strdup(o->model_dir);
        s->models[0].name = o->model_name ? strdup(o->model_name) : name_of(o->model_dir);
        s->models[0].state = SRV_LOADING;
        if (!s->models[0].dir || !s->models[0].name) return false;
        if (!plain_name(s->models[0].name)) {
            fprintf(stderr, "onnx-genai serve: the model name '%s' has a quote, backslash or control "
                    "character: give --model-name\n", s->models[0].name);
            return false;
        }
        for (int i = 0; i < o->n_adapters; i++) { /* NAME=FILE, checked by the CLI */
            const char *eq = strchr(o->adapters[i], '=');
            size_t n = eq ? (size_t)(eq - o->adapters[i]) : strlen(o->adapters[i]);
            if (!(s->adapter_names[i] = strndup(o->adapters[i], n))) return false;
        }
        return true;
    }
    s->multi = true;
    DIR *d = opendir(o->models_dir);
    if (!d) {
        fprintf(stderr, "onnx-genai serve: --models-dir %s: cannot open the folder\n", o->models_dir);
        return false;
    }
    struct dirent *e;
    bool ok = true;
    while (ok && (e = readdir(d))) {
        if (e->d_name[0] == '.' || !plain_name(e->d_name)) continue;
        char *dir = join(o->models_dir, e->d_name);
        if (dir && !is_package(dir)) {
            free(dir);
            continue;
        }
        srv_model *grown = dir ? realloc(s->models, sizeof *grown * (size_t)(s->n_models + 1)) : NULL;
        if (!grown) {
            free(dir);
            ok = false;
            break;
        }
        s->models = grown;
        srv_model *m = &s->models[s->n_models++];
        memset(m, 0, sizeof *m);
        m->dir = dir;
        m->name = strdup(e->d_name);
        ok = m->name != NULL;
    }
    closedir(d);
    if (!ok) {
        fprintf(stderr, "onnx-genai serve: out of memory\n");
        return false;
    }
    if (s->n_models == 0) {
        fprintf(stderr, "onnx-genai serve: --models-dir %s has no package folder (a folder with "
                "genai_config.json)\n", o->models_dir);
        return false;
    }
    qsort(s->models, (size_t)s->n_models, sizeof *s->models, by_name);
    for (int i = 0; i < s->n_models; i++) { /* in their places: a mutex is not moved */
        pthread_mutex_init(&s->models[i].emb_mu, NULL);
        s->models[i].emb_mu_live = true;
    }
    return true;
}

static void unload(srv_model *m) {
    if (m->eng) eng_destroy(m->eng);
    srv_embedder_free(m->emb);
    m->emb = NULL;
    m->emb_error[0] = 0;
    og_adapters_free(m->adapters); /* after the engine: its generators used them */
    m->adapters = NULL;
    og_chat_template_free(m->tpl);
    og_tokenizer_free(m->tok);
    if (m->model) og_model_close(m->model);
    m->eng = NULL;
    m->tpl = NULL;
    m->tok = NULL;
    m->model = NULL;
}

/* --adapter NAME=FILE over m: any that does not fit the model fails the load. */
static og_status *load_adapters(srv_server *s, srv_model *m) {
    OG_TRY(og_adapters_create(m->model, &m->adapters));
    for (int i = 0; i < s->o.n_adapters; i++) {
        const char *file = s->o.adapters[i] + strlen(s->adapter_names[i]) + 1;
        OG_TRY(og_status_wrap(og_adapters_load(m->adapters, file, s->adapter_names[i]),
                              "--adapter %s", s->o.adapters[i]));
    }
    return NULL;
}

const char *srv_adapter_of(const srv_server *s, const cJSON *body) {
    const cJSON *f = cJSON_GetObjectItemCaseSensitive(body, "model");
    const char *colon = cJSON_IsString(f) ? strrchr(f->valuestring, ':') : NULL;
    if (!colon || s->n_models != 1) return NULL;
    size_t n = (size_t)(colon - f->valuestring);
    if (strlen(s->models[0].name) != n || strncmp(f->valuestring, s->models[0].name, n))
        return NULL;
    for (int i = 0; i < s->o.n_adapters; i++)
        if (!strcmp(colon + 1, s->adapter_names[i])) return s->adapter_names[i];
    return NULL;
}

/* A package whose decoder graph has hidden states and no logits (the builder's
 * exclude_lm_head, an embedding model's export): it serves /v1/embeddings only, without a
 * model or an engine. Returns why_not (taken) when it is not one. */
static og_status *load_embeddings_only(srv_server *s, srv_model *m, og_status *why_not) {
    srv_embedder *e = NULL;
    og_status *st = srv_embedder_open(&s->o, m->dir, &e);
    if (st || srv_embedder_has_logits(e)) {
        og_status_free(st);
        srv_embedder_free(e);
        return why_not;
    }
    og_status_free(why_not);
    m->emb = e;
    if ((st = og_tokenizer_open(m->dir, &m->tok))) return st;
    for (int i = 0; i < TC_MAX_MARKERS; i++) m->tool_marker_ids[i] = -1;
    m->bor = m->eor = -1;
    snprintf(m->tpl_error, sizeof m->tpl_error, "an embeddings-only package (its decoder has no "
             "logits output)");
    m->context = srv_embedder_context(e);
    m->vocab = srv_embedder_vocab(e);
    m->created = (long)time(NULL);
    return NULL;
}

og_status *srv_model_load(srv_server *s, srv_model *m) {
    size_t rss0 = proc_rss_now();
    og_status *st = og_model_open(m->dir, &s->o.model, &m->model);
    if (st) { /* perhaps an embeddings-only package */
        if (!(st = load_embeddings_only(s, m, st))) {
            m->bytes = package_bytes(m->dir);
            size_t rss1 = proc_rss_now();
            if (rss1 > rss0 && rss1 - rss0 > m->bytes) m->bytes = rss1 - rss0;
            return NULL;
        }
        unload(m);
        return st;
    }
    for (size_t i = 0; !st && i < og_model_warning_count(m->model); i++) /* auto's fallback */
        fprintf(stderr, "onnx-genai serve: %s: warning: %s\n", m->dir,
                og_model_warning(m->model, i));
    if (!st) st = og_tokenizer_create(m->model, &m->tok);
    if (!st && s->o.n_adapters) st = load_adapters(s, m);
    if (!st && s->o.template_file) {
        /* given explicitly: one that cannot be read or parsed fails the start */
        st = og_chat_template_open(s->o.template_file, &m->tpl);
    } else if (!st) {
        og_status *ts = og_chat_template_create(m->model, &m->tpl);
        if (ts) { /* completions still work; chat says why not */
            snprintf(m->tpl_error, sizeof m->tpl_error, "%s", og_status_message(ts));
            og_status_free(ts);
            m->tpl = NULL;
        }
    }
    if (!st) {
        m->tools_fmt = m->tpl ? tc_detect(m->tpl, tc_tokenizer_has, m->tok, &m->tool_args_object) : TC_NONE;
        const char *const *mk = tc_format_markers(m->tools_fmt);
        for (int i = 0; i < TC_MAX_MARKERS; i++) m->tool_marker_ids[i] = -1;
        for (int i = 0; i < TC_MAX_MARKERS && mk[i]; i++)
            m->tool_marker_ids[i] = og_tokenizer_token_to_id(m->tok, mk[i]);
        m->defaults = og_generator_params_default(m->model);
        m->bor = og_model_token_id(m->model, "bor_token_id");
        m->eor = og_model_token_id(m->model, "eor_token_id");
        /* no reasoning tokens in genai_config, but a template that writes <think> blocks
         * (Qwen3, QwQ, DeepSeek-R1): the blocks are split from the answer's text */
        m->think_open = chat_think_markers(m->tpl ? chat_template_source(m->tpl) : NULL,
                                           m->bor >= 0 && m->eor >= 0, &m->think_close);
        m->vocab = og_model_vocab_size(m->model);
        m->created = (long)time(NULL);
        /* images and audio go to a request's own generator (og_generator_set_inputs): a
         * package that takes them is served per sequence (serve_media.c) */
        eng_options eo = s->o.eng;
        if (srv_model_takes_images(m) || srv_model_takes_audio(m)) eo.per_sequence = true;
        st = eng_create(m->model, &eo, &m->eng);
    }
    if (st) {
        unload(m);
        return st;
    }
    m->context = eng_context_length(m->eng);
    eng_stats es; /* a hybrid batched with fewer state slots than --max-batch runs that many */
    eng_get_stats(m->eng, &es);
    m->slots = s->o.eng.max_batch > 0 ? s->o.eng.max_batch : 1;
    if (es.state_slots_total > 0 && es.state_slots_total < m->slots) m->slots = (int)es.state_slots_total;
    size_t rss1 = proc_rss_now(), files = package_bytes(m->dir);
    m->bytes = rss1 > rss0 && rss1 - rss0 > files ? rss1 - rss0 : files;
    return NULL;
}

static size_t loaded_bytes(srv_server *s) {
    size_t total = 0;
    for (int i = 0; i < s->n_models; i++)
        if (s->models[i].state == SRV_READY || s->models[i].state == SRV_LOADING) total += s->models[i].bytes;
    return total;
}

/* Unloads idle models but keep, least recently used first, while the loaded (and
 * loading) ones exceed the budget. Called and returns with models_mu held. */
static void make_room(srv_server *s, const srv_model *keep) {
    if (!s->o.models_memory) return;
    while (loaded_bytes(s) > s->o.models_memory) {
        srv_model *victim = NULL;
        for (int i = 0; i < s->n_models; i++) {
            srv_model *m = &s->models[i];
            if (m != keep && m->state == SRV_READY && m->users == 0 &&
                (!victim || m->last_used < victim->last_used))
                victim = m;
        }
        if (!victim) return; /* everything else is in use: over budget until it is not */
        victim->state = SRV_UNLOADING;
        pthread_mutex_unlock(&s->models_mu);
        unload(victim);
        printf("unloaded model '%s' (%.1f MiB; --models-memory %.1f MiB)\n", victim->name,
               (double)victim->bytes / 1048576.0, (double)s->o.models_memory / 1048576.0);
        fflush(stdout);
        pthread_mutex_lock(&s->models_mu);
        victim->state = SRV_UNLOADED;
        pthread_cond_broadcast(&s->models_cv);
    }
}

/* Loads m on behalf of a request (models_mu held on entry and exit). */
static bool load_now(srv_server *s, srv_model *m, srv_error *err) {
    m->state = SRV_LOADING;
    if (!m->bytes) m->bytes = package_bytes(m->dir);
    make_room(s, m);
    pthread_mutex_unlock(&s->models_mu);
    og_status *st = srv_model_load(s, m);
    if (!st) {
        printf("loaded model '%s' (%.1f MiB, context %d, %s)\n", m->name, (double)m->bytes / 1048576.0, m->context,
               !m->eng ? "embeddings only" : eng_batched(m->eng) ? "continuous batching" : "per-sequence mode");
        fflush(stdout);
    }
    pthread_mutex_lock(&s->models_mu);
    if (st) {
        snprintf(m->error, sizeof m->error, "%s", og_status_message(st));
        og_status_free(st);
        m->state = SRV_FAILED;
        srv_fail(err, 500, "model", "the model '%.100s' could not be loaded: %s", m->name, m->error);
    } else {
        m->state = SRV_READY;
        make_room(s, m);
    }
    pthread_cond_broadcast(&s->models_cv);
    return st == NULL;
}

srv_model *srv_acquire(srv_server *s, const cJSON *body, srv_error *err) {
    const cJSON *f = cJSON_GetObjectItemCaseSensitive(body, "model");
    srv_model *m = NULL;
    if (f && !cJSON_IsNull(f)) {
        if (!cJSON_IsString(f)) {
            srv_fail(err, 400, "model", "'model' must be a string");
            return NULL;
        }
        for (int i = 0; i < s->n_models && !m; i++)
            if (!strcmp(f->valuestring, s->models[i].name)) m = &s->models[i];
        if (!m && srv_adapter_of(s, body)) m = &s->models[0];
        if (!m) {
            srv_fail(err, 404, "model", "The model '%.200s' does not exist (GET /v1/models lists them)",
                     f->valuestring);
            err->code = "model_not_found";
            return NULL;
        }
    } else if (s->n_models == 1) {
        m = &s->models[0];
    } else {
        srv_fail(err, 400, "model", "'model' is required: this server serves %d models "
                 "(GET /v1/models lists them)", s->n_models);
        return NULL;
    }
    pthread_mutex_lock(&s->models_mu);
    srv_model *got = NULL;
    while (!got) {
        if (atomic_load(&s->stopping)) {
            srv_fail(err, 503, "", "the server is shutting down");
            break;
        }
        if (m->state == SRV_READY) {
            m->users++;
            m->last_used = ++s->tick;
            got = m;
        } else if (!s->multi) { /* -m: loading at start, or failed (the server then exits) */
            srv_fail(err, 503, "", "the model is loading: retry shortly");
            err->retry_after = 5;
            break;
        } else if (m->state == SRV_UNLOADED || m->state == SRV_FAILED) {
            if (!load_now(s, m, err)) break;
        } else { /* another request is loading or unloading it */
            struct timespec ts;
            clock_gettime(CLOCK_REALTIME, &ts);
            ts.tv_sec += 1;
            pthread_cond_timedwait(&s->models_cv, &s->models_mu, &ts);
        }
    }
    pthread_mutex_unlock(&s->models_mu);
    return got;
}

srv_model *srv_try_use(srv_server *s, int i) {
    srv_model *m = &s->models[i];
    pthread_mutex_lock(&s->models_mu);
    bool ready = m->state == SRV_READY;
    if (ready) m->users++;
    pthread_mutex_unlock(&s->models_mu);
    return ready ? m : NULL;
}

void srv_release(srv_server *s, srv_model *m) {
    pthread_mutex_lock(&s->models_mu);
    m->users--;
    m->last_used = ++s->tick;
    pthread_mutex_unlock(&s->models_mu);
}

int srv_model_state(srv_server *s, srv_model *m) {
    pthread_mutex_lock(&s->models_mu);
    int st = m->state;
    pthread_mutex_unlock(&s->models_mu);
    return st;
}

void srv_models_free(srv_server *s) {
    for (int i = 0; i < s->n_models; i++) {
        unload(&s->models[i]);
        if (s->models[i].emb_mu_live) pthread_mutex_destroy(&s->models[i].emb_mu);
        free(s->models[i].name);
        free(s->models[i].dir);
    }
    free(s->models);
    s->models = NULL;
    s->n_models = 0;
    for (int i = 0; i < SERVE_MAX_ADAPTERS; i++) {
        free(s->adapter_names[i]);
        s->adapter_names[i] = NULL;
    }
    pthread_cond_destroy(&s->models_cv);
    pthread_mutex_destroy(&s->models_mu);
}
