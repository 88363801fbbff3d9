/* Which GGUF file of a repository a pull takes. GGUF repositories on the hub hold one
 * file per quantization ("Llama-3.2-1B-Instruct-Q4_K_M.gguf", "model.Q8_0.gguf"), which
 * Ollama and llama.cpp users pick by tag: `ollama run hf.co/ORG/NAME:Q4_K_M`,
 * `llama-cli -hf ORG/NAME:Q4_K_M`. */
#include "hub/hub.h"

#include "base/status.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

bool hub_is_gguf(const char *name) {
    size_t n = strlen(name);
    return n > 5 && !strcasecmp(name + n - 5, ".gguf");
}

static const char *base_name(const char *path) {
    const char *slash = strrchr(path, '/');
    return slash ? slash + 1 : path;
}

/* A multimodal projector (llama.cpp's mmproj-*.gguf): not a model to convert. */
static bool is_projector(const char *name) {
    return !strncasecmp(base_name(name), "mmproj", 6);
}

/* "-00002-of-00003.gguf": part 2 of a file llama-gguf-split cut; 0 for a whole file. */
static int split_part(const char *name) {
    size_t n = strlen(name);
    if (n < 5 + 15) return 0;
    const char *p = name + n - 5 - 15; /* "-NNNNN-of-NNNNN" */
    if (p[0] != '-' || strncmp(p + 6, "-of-", 4)) return 0;
    for (int i = 0; i < 5; i++)
        if (!isdigit((unsigned char)p[1 + i]) || !isdigit((unsigned char)p[10 + i])) return 0;
    return atoi(p + 1) > 0 ? atoi(p + 1) : 1;
}

/* Whether tag occurs in name's base name as a whole part. */
static bool has_tag(const char *name, const char *tag) {
    const char *b = base_name(name);
    size_t n = strlen(b) - 5, t = strlen(tag); /* without ".gguf" */
    for (size_t i = 0; i + t <= n; i++) {
        if (strncasecmp(b + i, tag, t)) continue;
        bool start = i == 0 || strchr("-._", b[i - 1]);
        bool end = i + t == n || b[i + t] == '-' || b[i + t] == '.';
        if (start && end) return true;
    }
    return false;
}

/* The candidates' names, ", "-separated, into out. */
static void list_names(char *const *names, const int *idx, int n, char *out, size_t cap) {
    out[0] = 0;
    for (int i = 0; i < n; i++) {
        size_t len = strlen(out);
        if (i == 12) {
            snprintf(out + len, cap - len, ", ... (%d in all)", n);
            break;
        }
        snprintf(out + len, cap - len, "%s%s", i ? ", " : "", names[idx[i]]);
    }
}

og_status *hub_choose_gguf(const char *repo, const char *tag, char *const *names, int n,
                           int *index) {
    *index = -1;
    int *cand = malloc(((size_t)n + 1) * sizeof *cand), *hit = malloc(((size_t)n + 1) * sizeof *hit);
    og_status *st = NULL;
    if (!cand || !hit) {
        st = og_oom();
        goto done;
    }
    int n_cand = 0, n_hit = 0;
    /* a split file stands as its first part */
    for (int i = 0; i < n; i++)
        if (hub_is_gguf(names[i]) && !is_projector(names[i]) && split_part(names[i]) <= 1)
            cand[n_cand++] = i;
    for (int i = 0; i < n_cand; i++)
        if (tag && has_tag(names[cand[i]], tag)) hit[n_hit++] = cand[i];
    char list[2048];
    if (!n_cand) {
        if (tag)
            st = og_errorf(OG_ERR_NOT_FOUND,
                           "%s: ':%s' picks a GGUF file, and the repository (or folder) has none",
                           repo, tag);
        goto done;
    }
    if (tag && n_hit != 1) {
        list_names(names, n_hit ? hit : cand, n_hit ? n_hit : n_cand, list, sizeof list);
        st = og_errorf(OG_ERR_NOT_FOUND, "%s: %s GGUF file has the tag '%s' (%s: %s)%s", repo,
                       n_hit ? "more than one" : "no", tag, n_hit ? "they are" : "its GGUF files",
                       list, n_hit ? "; name the file: ORG/NAME/FILE.gguf" : "");
        goto done;
    }
    if (!tag && n_cand > 1) {
        list_names(names, cand, n_cand, list, sizeof list);
        st = og_errorf(OG_ERR_INVALID_ARGUMENT,
                       "%s holds %d GGUF files: pick one with a tag, e.g. %s:Q4_K_M, or name "
                       "it, ORG/NAME/FILE.gguf (%s)",
                       repo, n_cand, repo, list);
        goto done;
    }
    int pick = tag ? hit[0] : cand[0];
    if (split_part(names[pick])) {
        st = og_errorf(OG_ERR_UNSUPPORTED,
                       "%s: %s is one part of a split GGUF file, which convert does not read; "
                       "merge the parts (llama-gguf-split --merge) and convert the file",
                       repo, names[pick]);
        goto done;
    }
    *index = pick;
done:
    free(cand);
    free(hit);
    return st;
}
