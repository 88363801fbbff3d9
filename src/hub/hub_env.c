/* Where the hub is and where its cache lives, from the environment variables
 * huggingface_hub reads (so that both tools agree), and repository names as users type
 * them. */
#include "hub/hub.h"

#include "base/status.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

static char *path_join(const char *a, const char *b) {
    size_t n = strlen(a) + strlen(b) + 2;
    char *p = malloc(n);
    if (p) snprintf(p, n, "%s/%s", a, b);
    return p;
}

/* A set, non-empty variable, or NULL. */
static const char *env(const char *name) {
    const char *v = getenv(name);
    return v && *v ? v : NULL;
}

/* huggingface_hub's expanduser for a leading '~'. */
static char *expand_home(const char *p) {
    const char *home = env("HOME");
    if (p[0] == '~' && (p[1] == '/' || !p[1]) && home) return path_join(home, p[1] ? p + 2 : "");
    return strdup(p);
}

/* The first line of a token file, without trailing whitespace; NULL when absent. */
static char *read_token_file(const char *path) {
    FILE *f = fopen(path, "r");
    if (!f) return NULL;
    char line[4096];
    char *tok = NULL;
    if (fgets(line, sizeof line, f)) {
        size_t n = strlen(line);
        while (n && isspace((unsigned char)line[n - 1])) line[--n] = 0;
        if (n) tok = strdup(line);
    }
    fclose(f);
    return tok;
}

og_status *hub_env_read(hub_env *e) {
    memset(e, 0, sizeof *e);
    const char *ep = env("HF_ENDPOINT");
    e->endpoint = strdup(ep ? ep : "https://huggingface.co");
    if (!e->endpoint) return og_oom();
    size_t n = strlen(e->endpoint);
    while (n && e->endpoint[n - 1] == '/') e->endpoint[--n] = 0;

    char *home;
    if (env("HF_HOME")) {
        home = expand_home(env("HF_HOME"));
    } else {
        char *xdg = env("XDG_CACHE_HOME") ? expand_home(env("XDG_CACHE_HOME"))
                    : env("HOME")         ? path_join(env("HOME"), ".cache")
                                          : NULL;
        if (!xdg)
            return og_errorf(OG_ERR_INVALID_ARGUMENT,
                             "no cache folder: set HF_HOME or HF_HUB_CACHE (HOME is not set)");
        home = path_join(xdg, "huggingface");
        free(xdg);
    }
    if (!home) return og_oom();
    const char *cache = env("HF_HUB_CACHE") ? env("HF_HUB_CACHE") : env("HUGGINGFACE_HUB_CACHE");
    e->cache = cache ? expand_home(cache) : path_join(home, "hub");

    const char *off = env("HF_HUB_OFFLINE") ? env("HF_HUB_OFFLINE") : env("TRANSFORMERS_OFFLINE");
    e->offline = off && (!strcmp(off, "1") || !strcasecmp(off, "on") || !strcasecmp(off, "yes") ||
                         !strcasecmp(off, "true"));

    if (env("HF_TOKEN")) {
        e->token = strdup(env("HF_TOKEN"));
    } else {
        char *tp = env("HF_TOKEN_PATH") ? expand_home(env("HF_TOKEN_PATH")) : path_join(home, "token");
        if (tp) e->token = read_token_file(tp);
        free(tp);
    }
    free(home);
    return e->cache ? NULL : og_oom();
}

void hub_env_free(hub_env *e) {
    free(e->endpoint);
    free(e->cache);
    free(e->token);
    memset(e, 0, sizeof *e);
}

static bool name_char(char c) {
    return isalnum((unsigned char)c) || c == '-' || c == '_' || c == '.';
}

/* Parts of a repository spec: '/'-separated, each of name characters, none empty, none
 * "." or "..", none starting with '.' for the org and name. Returns the count, 0 if
 * the spec is not one. */
static int spec_parts(const char *s) {
    if (!*s || *s == '/' || *s == '.') return 0;
    int parts = 0;
    const char *p = s;
    while (*p) {
        const char *b = p;
        while (*p && *p != '/') {
            if (!name_char(*p)) return 0;
            p++;
        }
        size_t len = (size_t)(p - b);
        if (!len || (len == 1 && b[0] == '.') || (len == 2 && b[0] == '.' && b[1] == '.'))
            return 0;
        if (parts < 2 && b[0] == '.') return 0;
        parts++;
        if (*p == '/') {
            p++;
            if (!*p) break; /* a trailing '/' is allowed */
        }
    }
    return parts;
}

/* The parts of "ORG/NAME[/SUB][:TAG][@REV]": the length of the path before them, and
 * where the tag and revision start (NULL: absent). False when a tag or revision is empty
 * or holds other characters (a tag: letters, digits, '_', '-', '.'; a revision: those
 * and '/'). */
static bool split_spec(const char *s, size_t *path_len, const char **tag, size_t *tag_len,
                       const char **rev) {
    const char *at = strchr(s, '@');
    size_t before_at = at ? (size_t)(at - s) : strlen(s);
    const char *colon = memchr(s, ':', before_at);
    *path_len = colon ? (size_t)(colon - s) : before_at;
    *tag = colon ? colon + 1 : NULL;
    *tag_len = colon ? before_at - *path_len - 1 : 0;
    *rev = at ? at + 1 : NULL;
    if (*tag) {
        if (!*tag_len) return false;
        for (size_t i = 0; i < *tag_len; i++)
            if (!name_char((*tag)[i])) return false;
    }
    if (*rev) {
        if (!**rev || **rev == '/') return false;
        for (const char *c = *rev; *c; c++)
            if (!name_char(*c) && *c != '/') return false;
    }
    return *path_len > 0;
}

/* spec_parts of the path part of a spec with a tag or revision; 0 if it is not one. */
static int spec_path_parts(const char *spec) {
    size_t len, tag_len;
    const char *tag, *rev;
    if (!split_spec(spec, &len, &tag, &tag_len, &rev)) return 0;
    char *path = strndup(spec, len);
    int parts = path ? spec_parts(path) : 0;
    free(path);
    return parts;
}

bool hub_looks_like_repo(const char *spec) {
    struct stat st;
    return spec_path_parts(spec) >= 2 && stat(spec, &st) != 0;
}

og_status *hub_ref_parse(const char *spec, hub_ref *out) {
    memset(out, 0, sizeof *out);
    size_t path_len, tag_len;
    const char *tag, *rev;
    if (spec_path_parts(spec) < 2 || !split_spec(spec, &path_len, &tag, &tag_len, &rev))
        return og_errorf(OG_ERR_INVALID_ARGUMENT,
                         "'%s' is not a repository: expected ORG/NAME[/SUBFOLDER][:TAG][@REVISION] "
                         "(letters, digits, '-', '_', '.')", spec);
    const char *slash = strchr(spec, '/');
    const char *end = memchr(slash + 1, '/', path_len - (size_t)(slash + 1 - spec));
    size_t repo_len = end ? (size_t)(end - spec) : path_len;
    out->repo = strndup(spec, repo_len);
    const char *sub = end ? end + 1 : spec + path_len;
    size_t sub_len = (size_t)(spec + path_len - sub);
    while (sub_len && sub[sub_len - 1] == '/') sub_len--;
    out->subfolder = strndup(sub, sub_len);
    bool ok = out->repo && out->subfolder;
    if (ok && tag) ok = (out->tag = strndup(tag, tag_len)) != NULL;
    if (ok && rev) ok = (out->revision = strdup(rev)) != NULL;
    if (!ok) {
        hub_ref_free(out);
        return og_oom();
    }
    return NULL;
}

void hub_ref_free(hub_ref *r) {
    free(r->repo);
    free(r->subfolder);
    free(r->tag);
    free(r->revision);
    memset(r, 0, sizeof *r);
}
