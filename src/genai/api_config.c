/* The public og_config functions: a package's genai_config.json held as a JSON document
 * that overlays change, parsed again (gen_config_parse) after every change so that a bad
 * overlay fails where it is made, and once more when a model opens from it. */
#include "genai/config.h"

#include "base/pkg_file.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

struct og_config {
    char *path;       /* the genai_config.json read; messages name it */
    cJSON *doc;       /* the document with every overlay merged in */
    gen_config *cfg;  /* doc parsed: what a model opened now would see */
    char provider[8]; /* the device provider appended ("cuda"), or "" for the CPU */
};

/* Parses doc as if it were the file at path. */
static og_status *parse_doc(const cJSON *doc, const char *path, gen_config **out) {
    char *text = cJSON_PrintUnformatted(doc);
    if (!text) return og_oom_context(og_oom(), "%s: printing the overlaid config", path);
    og_status *st = gen_config_parse(text, strlen(text), path, out);
    cJSON_free(text);
    return st;
}

og_status *og_config_open(const char *dir, og_config **out) {
    if (!dir || !out) return og_errorf(OG_ERR_INVALID_ARGUMENT, "og_config_open: NULL argument");
    struct stat sb;
    if (stat(dir, &sb) != 0)
        return og_errorf(OG_ERR_NOT_FOUND, "%s: no such model folder (expected a package with "
                         "genai_config.json)", dir);
    og_config *c = calloc(1, sizeof *c);
    if (!c) return og_oom();
    og_status *st = NULL;
    char *buf = NULL;
    size_t n = strlen(dir), len = 0;
    if (S_ISDIR(sb.st_mode)) {
        size_t size = n + sizeof "/genai_config.json";
        if ((c->path = malloc(size)))
            snprintf(c->path, size, "%s%sgenai_config.json", dir, n && dir[n - 1] == '/' ? "" : "/");
    } else {
        c->path = strdup(dir);
    }
    if (!c->path) {
        st = og_oom();
        goto fail;
    }
    if ((st = pkg_read_file(c->path, PKG_MAX_JSON_BYTES, &buf, &len))) goto fail;
    /* gen_config_parse gives the message for malformed JSON (line and column) */
    if ((st = gen_config_parse(buf, len, c->path, &c->cfg))) goto fail;
    if (!(c->doc = cJSON_ParseWithLength(buf, len))) {
        st = og_oom_context(og_oom(), "%s", c->path);
        goto fail;
    }
    free(buf);
    *out = c;
    return NULL;
fail:
    free(buf);
    og_config_free(c);
    return st;
}

void og_config_free(og_config *c) {
    if (!c) return;
    cJSON_Delete(c->doc);
    gen_config_free(c->cfg);
    free(c->path);
    free(c);
}

/* Merges src into dst: objects key by key, recursively; any other value replaces. src is
 * consumed (its items move into dst). Returns false when out of memory. */
static bool merge(cJSON *dst, cJSON *src) {
    while (src->child) {
        cJSON *item = cJSON_DetachItemViaPointer(src, src->child);
        cJSON *have = cJSON_GetObjectItemCaseSensitive(dst, item->string);
        if (have && cJSON_IsObject(have) && cJSON_IsObject(item)) {
            bool ok = merge(have, item);
            cJSON_Delete(item);
            if (!ok) return false;
        } else if (have) {
            if (!cJSON_ReplaceItemViaPointer(dst, have, item)) {
                cJSON_Delete(item);
                return false;
            }
        } else {
            if (!cJSON_AddItemToObject(dst, item->string, item)) {
                cJSON_Delete(item);
                return false;
            }
        }
    }
    return true;
}

og_status *og_config_overlay(og_config *c, const char *json) {
    if (!c || !json) return og_errorf(OG_ERR_INVALID_ARGUMENT, "og_config_overlay: NULL argument");
    const char *end = NULL;
    cJSON *over = cJSON_ParseWithOpts(json, &end, 1);
    if (!over)
        return og_errorf(OG_ERR_INVALID_ARGUMENT, "%s: overlay: malformed JSON at byte %zu",
                         c->path, end && end >= json ? (size_t)(end - json) : 0);
    if (!cJSON_IsObject(over)) {
        cJSON_Delete(over);
        return og_errorf(OG_ERR_INVALID_ARGUMENT, "%s: overlay: expected a JSON object, e.g. "
                         "{\"search\": {\"max_length\": 64}}", c->path);
    }
    cJSON *doc = cJSON_Duplicate(c->doc, 1);
    if (!doc || !merge(doc, over)) {
        cJSON_Delete(doc);
        cJSON_Delete(over);
        return og_oom_context(og_oom(), "%s: overlay", c->path);
    }
    cJSON_Delete(over);
    gen_config *cfg;
    og_status *st = parse_doc(doc, c->path, &cfg);
    if (st) {
        cJSON_Delete(doc);
        return og_oom_context(st, "overlay");
    }
    cJSON_Delete(c->doc);
    gen_config_free(c->cfg);
    c->doc = doc;
    c->cfg = cfg;
    return NULL;
}

static bool is_cpu(const char *provider) { return !strcasecmp(provider, "cpu"); }

og_status *og_config_clear_providers(og_config *c) {
    if (!c) return og_errorf(OG_ERR_INVALID_ARGUMENT, "og_config_clear_providers: NULL");
    c->provider[0] = 0;
    return NULL;
}

/* "cpu" changes nothing (onnxruntime falls back to its CPU provider anyway); "cuda" is
 * onnxruntime's CUDA provider, which og_model_open_config passes to the sessions (it
 * selects the onnxruntime backend under OG_BACKEND_AUTO). */
og_status *og_config_append_provider(og_config *c, const char *provider) {
    if (!c || !provider)
        return og_errorf(OG_ERR_INVALID_ARGUMENT, "og_config_append_provider: NULL argument");
    if (is_cpu(provider)) return NULL;
    if (strcasecmp(provider, "cuda") != 0)
        return og_errorf(OG_ERR_UNSUPPORTED, "execution provider '%s' is not available: "
                         "onnx-genai runs on the CPU with its own kernels, or on onnxruntime "
                         "with \"cpu\" or \"cuda\"", provider);
    if (c->provider[0] && strcmp(c->provider, "cuda") != 0)
        return og_errorf(OG_ERR_UNSUPPORTED, "execution provider '%s': '%s' was appended "
                         "already (one device provider per model)", provider, c->provider);
    snprintf(c->provider, sizeof c->provider, "cuda");
    return NULL;
}

const char *gen_config_provider(const og_config *c) {
    return c && c->provider[0] ? c->provider : NULL;
}

og_status *og_config_set_provider_option(og_config *c, const char *provider, const char *key,
                                         const char *value) {
    if (!c || !provider || !key || !value)
        return og_errorf(OG_ERR_INVALID_ARGUMENT, "og_config_set_provider_option: NULL argument");
    if (is_cpu(provider))
        return og_errorf(OG_ERR_UNSUPPORTED, "provider option '%s' of 'cpu': onnx-genai's CPU "
                         "kernels take no provider options", key);
    return og_errorf(OG_ERR_UNSUPPORTED, "provider option '%s' of '%s': onnx-genai passes no "
                     "provider options to onnxruntime (its defaults are used)", key, provider);
}

og_status *gen_config_of(const og_config *c, gen_config **out) {
    if (!c || !out) return og_errorf(OG_ERR_INVALID_ARGUMENT, "og_model_open_config: NULL argument");
    return parse_doc(c->doc, c->path, out);
}

int32_t gen_config_token_id(const gen_config *cfg, const char *key) {
    if (!cfg || !key) return -1;
    const gen_model *gm = &cfg->model;
    if (!strcmp(key, "bos_token_id")) return gm->bos_token_id;
    if (!strcmp(key, "pad_token_id")) return gm->pad_token_id;
    if (!strcmp(key, "eos_token_id")) return gm->n_eos_token_ids ? gm->eos_token_ids[0] : -1;
    /* model-level keys this runtime keeps as raw JSON (bot/eot/bor/eor_token_id, ...) */
    const char *raw = gen_kvs_get(&gm->extra, key);
    if (!raw) return -1;
    char *end;
    long v = strtol(raw, &end, 10);
    return (*end || end == raw || v < 0 || v > INT32_MAX) ? -1 : (int32_t)v;
}

int32_t og_config_token_id(const og_config *c, const char *key) {
    return c ? gen_config_token_id(c->cfg, key) : -1;
}

size_t og_config_eos_token_ids(const og_config *c, const int32_t **ids) {
    if (ids) *ids = c ? c->cfg->model.eos_token_ids : NULL;
    return c ? (size_t)c->cfg->model.n_eos_token_ids : 0;
}
