/* The cache's layout on disk: folder names, refs and snapshot links, written the way
 * huggingface_hub reads them (file_download.py's repo_folder_name, refs, relative
 * symlinks), so that a file either tool fetched serves both. */
#include "hub/hub.h"

#include "base/status.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

char *hub_repo_dir(const hub_env *e, const char *repo) {
    /* "models--" then the repository with every '/' as "--". */
    size_t n = strlen(e->cache) + strlen("/models--") + 2 * strlen(repo) + 1;
    char *p = malloc(n);
    if (!p) return NULL;
    int k = snprintf(p, n, "%s/models--", e->cache);
    for (const char *c = repo; *c; c++) {
        if (*c == '/') {
            p[k++] = '-';
            p[k++] = '-';
        } else {
            p[k++] = *c;
        }
    }
    p[k] = 0;
    return p;
}

bool hub_is_commit(const char *rev) {
    int n = 0;
    for (; rev[n]; n++)
        if (!isxdigit((unsigned char)rev[n]) || isupper((unsigned char)rev[n])) return false;
    return n == 40;
}

char *hub_cached_commit(const hub_env *e, const char *repo, const char *revision) {
    if (hub_is_commit(revision)) return strdup(revision);
    char *dir = hub_repo_dir(e, repo);
    if (!dir) return NULL;
    size_t n = strlen(dir) + strlen(revision) + 8;
    char *path = malloc(n);
    char *commit = NULL;
    if (path) {
        snprintf(path, n, "%s/refs/%s", dir, revision);
        FILE *f = fopen(path, "r");
        if (f) {
            char buf[128] = {0};
            size_t got = fread(buf, 1, sizeof buf - 1, f);
            fclose(f);
            while (got && isspace((unsigned char)buf[got - 1])) buf[--got] = 0;
            if (hub_is_commit(buf)) commit = strdup(buf);
        }
    }
    free(path);
    free(dir);
    return commit;
}

og_status *hub_mkdirs_for(const char *path) {
    char *p = strdup(path);
    if (!p) return og_oom();
    for (char *s = strchr(p + 1, '/'); s; s = strchr(s + 1, '/')) {
        *s = 0;
        if (mkdir(p, 0777) != 0 && errno != EEXIST) {
            og_status *st = og_errorf(OG_ERR_IO, "cannot create folder %s: %s", p, strerror(errno));
            free(p);
            return st;
        }
        *s = '/';
    }
    free(p);
    return NULL;
}

og_status *hub_write_ref(const hub_env *e, const char *repo, const char *revision,
                         const char *commit) {
    if (hub_is_commit(revision)) return NULL;
    char *cur = hub_cached_commit(e, repo, revision);
    bool same = cur && !strcmp(cur, commit);
    free(cur);
    if (same) return NULL; /* a read-only cache that is up to date stays usable */
    char *dir = hub_repo_dir(e, repo);
    if (!dir) return og_oom();
    size_t n = strlen(dir) + strlen(revision) + 32;
    char *path = malloc(n), *tmp = malloc(n);
    og_status *st = NULL;
    if (!path || !tmp) {
        st = og_oom();
        goto done;
    }
    snprintf(path, n, "%s/refs/%s", dir, revision);
    snprintf(tmp, n, "%s.%ld.tmp", path, (long)getpid());
    if ((st = hub_mkdirs_for(path))) goto done;
    /* Written aside and renamed: a reader never sees half a hash. */
    FILE *f = fopen(tmp, "w");
    if (!f || fputs(commit, f) < 0 || fclose(f) != 0 || rename(tmp, path) != 0) {
        st = og_errorf(OG_ERR_IO, "cannot write %s: %s", path, strerror(errno));
        unlink(tmp);
    }
done:
    free(path);
    free(tmp);
    free(dir);
    return st;
}

og_status *hub_link_snapshot(const char *repo_dir, const char *commit, const char *file,
                             const char *etag) {
    size_t n = strlen(repo_dir) + strlen(commit) + strlen(file) + 16;
    char *link = malloc(n);
    /* One "../" per folder between the link and the repository folder: snapshots,
     * the commit, and each folder of the file's path. */
    int depth = 2;
    for (const char *c = file; *c; c++) depth += *c == '/';
    size_t tn = (size_t)depth * 3 + strlen("blobs/") + strlen(etag) + 1;
    char *target = malloc(tn);
    og_status *st = NULL;
    if (!link || !target) {
        st = og_oom();
        goto done;
    }
    snprintf(link, n, "%s/snapshots/%s/%s", repo_dir, commit, file);
    target[0] = 0;
    for (int i = 0; i < depth; i++) strcat(target, "../");
    strcat(target, "blobs/");
    strcat(target, etag);
    if ((st = hub_mkdirs_for(link))) goto done;
    unlink(link);
    if (symlink(target, link) != 0)
        st = og_errorf(OG_ERR_IO, "cannot link %s -> %s: %s", link, target, strerror(errno));
done:
    free(link);
    free(target);
    return st;
}
