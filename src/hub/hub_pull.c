/* `pull`: a repository's files (or those under one folder of it) into the cache, as
 * huggingface_hub's snapshot_download lays them out. The file list comes from
 * /api/models/{repo}/revision/{rev} (its commit: every file is fetched at that commit,
 * so a push meanwhile cannot mix two versions), each file's metadata from a HEAD on
 * /{repo}/resolve/{commit}/{file} (X-Linked-Etag / ETag name the blob, X-Linked-Size its
 * size), its bytes from where that answer points. */
#include "hub/hub.h"

#include "base/status.h"

#include <cjson/cJSON.h>
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

/* Percent-encoding of a URL path part; '/' kept where keep_slash (file paths). */
static char *quote(const char *s, bool keep_slash) {
    char *out = malloc(strlen(s) * 3 + 1), *o = out;
    if (!out) return NULL;
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (isalnum(*p) || strchr("-._~", *p) || (keep_slash && *p == '/')) {
            *o++ = (char)*p;
        } else {
            sprintf(o, "%%%02X", *p);
            o += 3;
        }
    }
    *o = 0;
    return out;
}

static char *strcat_alloc(const char *a, const char *b, const char *c, const char *d) {
    size_t n = strlen(a) + strlen(b) + strlen(c) + strlen(d) + 1;
    char *p = malloc(n);
    if (p) snprintf(p, n, "%s%s%s%s", a, b, c, d);
    return p;
}

static bool exists(const char *path) {
    struct stat st;
    return stat(path, &st) == 0; /* through the symlink: the blob is there */
}

static bool is_sha256(const char *etag) {
    int n = 0;
    for (; etag[n]; n++)
        if (!isxdigit((unsigned char)etag[n])) return false;
    return n == 64;
}

/* The error for a request that got no HTTP answer. */
static og_status *network_error(const hub_env *e, const hub_response *r) {
    return og_errorf(OG_ERR_IO,
                     "cannot reach the hub at %s: %s. Check the network connection (or "
                     "HTTPS_PROXY); to use only what is already cached, set HF_HUB_OFFLINE=1",
                     e->endpoint, r->curl_error);
}

/* The error for an HTTP error status; what names the thing asked for. */
static og_status *http_error(const hub_env *e, const char *repo, const char *revision,
                             const char *file, const hub_response *r) {
    const char *code = r->error_code;
    if (!strcmp(code, "GatedRepo") || r->status == 403)
        return og_errorf(OG_ERR_NOT_FOUND,
                         "%s: access refused (HTTP %ld): the repository is gated or private%s. "
                         "Accept its terms on %s/%s if it is gated, and set HF_TOKEN to an access "
                         "token of an account allowed to read it",
                         repo, r->status, e->token ? " and the token sent has no access to it" : "",
                         e->endpoint, repo);
    if (r->status == 401)
        return og_errorf(OG_ERR_NOT_FOUND,
                         "%s: not authorized (HTTP 401): the repository is private or gated, or "
                         "does not exist%s. Set HF_TOKEN to an access token of an account "
                         "allowed to read it (%s/settings/tokens)",
                         repo, e->token ? " (the token sent was refused or has no access)" : "",
                         e->endpoint);
    if (r->status == 404) {
        if (!strcmp(code, "RevisionNotFound"))
            return og_errorf(OG_ERR_NOT_FOUND, "%s: revision '%s' not found (HTTP 404)", repo, revision);
        if (file && strcmp(code, "RepoNotFound"))
            return og_errorf(OG_ERR_NOT_FOUND, "%s: file not found at revision %s: %s (HTTP 404)",
                             repo, revision, file);
        return og_errorf(OG_ERR_NOT_FOUND,
                         "repository or file not found: %s (HTTP 404 from %s); check the "
                         "name, and for a private repository set HF_TOKEN",
                         repo, e->endpoint);
    }
    return og_errorf(OG_ERR_IO, "%s: the hub answered HTTP %ld for %s%s%s", repo, r->status,
                     file ? file : "the file list", code[0] ? ": " : "", code);
}

/* A relative path with no empty, "." or ".." part. */
static bool safe_path(const char *f) {
    if (!*f || *f == '/') return false;
    for (const char *p = f; *p;) {
        size_t n = strcspn(p, "/");
        if (!n || (n == 1 && p[0] == '.') || (n == 2 && p[0] == '.' && p[1] == '.')) return false;
        p += n;
        if (*p) p++;
    }
    return f[strlen(f) - 1] != '/';
}

typedef struct file_list {
    char **names;
    int n;
} file_list;

static void file_list_free(file_list *l) {
    for (int i = 0; i < l->n; i++) free(l->names[i]);
    free(l->names);
}

/* A file of the folder sub, or the file sub itself (one GGUF file of a repository that
 * holds several). */
static bool under(const char *file, const char *sub) {
    size_t n = strlen(sub);
    return !n || (!strncmp(file, sub, n) && (file[n] == '/' || !file[n]));
}

static bool is_config(const char *file) {
    const char *slash = strrchr(file, '/');
    return !strcmp(slash ? slash + 1 : file, "genai_config.json");
}

/* Configs last: a snapshot folder that has genai_config.json then has all the rest. */
static int config_last(const void *a, const void *b) {
    const char *x = *(char *const *)a, *y = *(char *const *)b;
    if (is_config(x) != is_config(y)) return is_config(x) ? 1 : -1;
    return strcmp(x, y);
}

/* The folders holding a genai_config.json, for a subfolder that is not there. */
static void packages_hint(cJSON *siblings, char *out, size_t cap) {
    out[0] = 0;
    int shown = 0;
    cJSON *s;
    cJSON_ArrayForEach(s, siblings) {
        const char *f = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(s, "rfilename"));
        if (!f || !is_config(f) || shown == 8) continue;
        size_t len = strlen(out);
        int dir = (int)(strrchr(f, '/') ? strrchr(f, '/') - f : 0);
        snprintf(out + len, cap - len, "%s%.*s", shown ? ", " : "", dir ? dir : 1, dir ? f : ".");
        shown++;
    }
}

/* Of a listing with no genai_config.json but GGUF files (or with a tag asked for): the
 * one GGUF file to fetch, alone in files; *gguf says so. */
static og_status *keep_gguf(const hub_ref *ref, file_list *files, bool *gguf) {
    *gguf = false;
    bool config = false;
    for (int i = 0; i < files->n; i++) config |= is_config(files->names[i]);
    if (files->n == 1 && !strcmp(files->names[0], ref->subfolder) && hub_is_gguf(ref->subfolder)) {
        *gguf = true; /* ORG/NAME/FILE.gguf */
        return NULL;
    }
    if (config && !ref->tag) return NULL;
    int pick;
    OG_TRY(hub_choose_gguf(ref->repo, ref->tag, files->names, files->n, &pick));
    if (pick < 0) return NULL;
    char *keep = files->names[pick];
    for (int i = 0; i < files->n; i++)
        if (i != pick) free(files->names[i]);
    files->names[0] = keep;
    files->n = 1;
    *gguf = true;
    return NULL;
}

/* The file list at revision: *commit and the files under ref's subfolder (or the one
 * GGUF file keep_gguf picks). */
static og_status *list_files(const hub_env *e, const hub_ref *ref, const char *revision,
                             char **commit, file_list *files, bool *gguf) {
    char *qrev = quote(revision, false);
    char *url = qrev ? strcat_alloc(e->endpoint, "/api/models/", ref->repo, "/revision/") : NULL;
    char *full = url ? strcat_alloc(url, qrev, "", "") : NULL;
    free(qrev);
    free(url);
    if (!full) return og_oom();
    hub_response r;
    hub_http_get(e, full, &r);
    free(full);
    og_status *st = NULL;
    cJSON *j = NULL;
    if (r.curl_code) {
        st = network_error(e, &r);
        goto done;
    }
    if (r.status != 200) {
        st = http_error(e, ref->repo, revision, NULL, &r);
        goto done;
    }
    j = cJSON_ParseWithLength(r.body, r.body_len);
    const char *sha = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(j, "sha"));
    cJSON *siblings = cJSON_GetObjectItemCaseSensitive(j, "siblings");
    if (!sha || !hub_is_commit(sha) || !cJSON_IsArray(siblings)) {
        st = og_errorf(OG_ERR_IO, "%s: the hub's answer for revision %s has no commit 'sha' and "
                       "'siblings' list (not a hub at %s?)", ref->repo, revision, e->endpoint);
        goto done;
    }
    files->names = calloc((size_t)cJSON_GetArraySize(siblings) + 1, sizeof *files->names);
    *commit = strdup(sha);
    if (!files->names || !*commit) {
        st = og_oom();
        goto done;
    }
    cJSON *s;
    cJSON_ArrayForEach(s, siblings) {
        const char *f = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(s, "rfilename"));
        /* A name that would leave the snapshot folder is not a file of this repository. */
        if (!f || !safe_path(f) || !under(f, ref->subfolder)) continue;
        if (!(files->names[files->n] = strdup(f))) {
            st = og_oom();
            goto done;
        }
        files->n++;
    }
    if (!files->n) {
        char hint[512];
        packages_hint(siblings, hint, sizeof hint);
        st = og_errorf(OG_ERR_NOT_FOUND,
                       "%s has no folder or file '%s' at revision %s (repository or file not "
                       "found)%s%s",
                       ref->repo, ref->subfolder, revision,
                       hint[0] ? "; folders with a genai_config.json: " : "", hint);
        goto done;
    }
    qsort(files->names, (size_t)files->n, sizeof *files->names, config_last);
    st = keep_gguf(ref, files, gguf);
done:
    cJSON_Delete(j);
    hub_response_free(&r);
    return st;
}

/* Downloads url into blob (via blob.incomplete, resumed if one is there), checking its
 * size and, for a sha256 etag, its hash. */
static og_status *fetch_blob(const hub_env *e, const char *repo, const char *commit,
                             const char *file, const char *url, const char *blob, const char *etag,
                             long long size, hub_pull_stats *stats) {
    char *part = strcat_alloc(blob, ".incomplete", "", "");
    if (!part) return og_oom();
    og_status *st = NULL;
    FILE *f = fopen(part, "a+b");
    if (!f) {
        st = og_errorf(OG_ERR_IO, "cannot write %s: %s", part, strerror(errno));
        free(part);
        return st;
    }
    /* What an earlier, cut download left: hashed again, then asked for from there on. */
    hub_sha256 sha = {0};
    long long have = 0;
    if (!hub_sha256_init(&sha)) {
        st = og_oom();
        goto done;
    }
    char buf[1 << 16];
    size_t got;
    fseeko(f, 0, SEEK_SET);
    while ((got = fread(buf, 1, sizeof buf, f)) > 0) {
        hub_sha256_update(&sha, buf, got);
        have += (long long)got;
    }
    if (size >= 0 && have > size) { /* not a prefix of this file */
        if (ftruncate(fileno(f), 0) != 0) {
            st = og_errorf(OG_ERR_IO, "cannot truncate %s: %s", part, strerror(errno));
            goto done;
        }
        have = 0;
        hub_sha256_init(&sha);
    }
    long long resumed = have;
    hub_bar *bar = hub_bar_start(file, size, have);
    hub_response r = {0};
    /* A connection cut mid-file is resumed from where it stopped: up to 5 tries in all,
     * while each one brings bytes. */
    for (int attempt = 0; attempt < 5; attempt++) {
        long long before = have;
        hub_response_free(&r);
        hub_http_download(e, url, f, &have, &sha, bar, &r);
        if (!r.curl_code && r.status == 416 && have > 0) { /* the range is past the end */
            if (fflush(f) != 0 || ftruncate(fileno(f), 0) != 0) break;
            have = 0;
            hub_sha256_init(&sha);
            continue;
        }
        if (r.curl_code == 0 || have == before) break;
    }
    hub_bar_end(bar);
    if (fflush(f) != 0) {
        st = og_errorf(OG_ERR_IO, "cannot write %s: %s", part, strerror(errno));
    } else if (!r.curl_code && r.status != 200 && r.status != 206) {
        st = http_error(e, repo, commit, file, &r);
    } else if (r.curl_code) {
        if (have > 0)
            st = og_errorf(OG_ERR_IO,
                           "%s: the download stopped at %lld of %lld bytes (%s); %s keeps them: "
                           "run pull again to resume",
                           file, have, size, r.curl_error, part);
        else
            st = network_error(e, &r);
    } else if (size >= 0 && have != size) {
        st = og_errorf(OG_ERR_IO, "%s: got %lld bytes, the hub says %lld; run pull again", file,
                       have, size);
        unlink(part);
    }
    if (!st && is_sha256(etag)) {
        char hex[65];
        hub_sha256_hex(&sha, hex);
        if (strcasecmp(hex, etag)) {
            st = og_errorf(OG_ERR_IO,
                           "%s: checksum mismatch: the download's sha256 is %s, the hub says %s; "
                           "refused (the partial file %s is removed, run pull again)",
                           file, hex, etag, part);
            unlink(part);
        }
    }
    if (!st) {
        stats->downloaded++;
        stats->bytes += have - resumed;
        if (rename(part, blob) != 0)
            st = og_errorf(OG_ERR_IO, "cannot move %s to %s: %s", part, blob, strerror(errno));
        else
            chmod(blob, 0644);
    }
    hub_response_free(&r);
done:
    hub_sha256_free(&sha);
    fclose(f);
    free(part);
    return st;
}

/* One file of the snapshot: metadata, the blob unless another snapshot shares it, the
 * link. */
static og_status *pull_file(const hub_env *e, const char *repo, const char *repo_dir,
                            const char *commit, const char *file, hub_pull_stats *stats) {
    char *qfile = quote(file, true);
    char *url = qfile ? strcat_alloc(e->endpoint, "/", repo, "/resolve/") : NULL;
    char *full = url ? strcat_alloc(url, commit, "/", qfile) : NULL;
    free(url);
    free(qfile);
    if (!full) return og_oom();
    hub_response r;
    hub_http_head(e, full, &r);
    og_status *st = NULL;
    char *blob = NULL, *lock = NULL;
    int lock_fd = -1;
    if (r.curl_code) {
        st = network_error(e, &r);
        goto done;
    }
    if (r.status >= 400 || r.status < 200) {
        st = http_error(e, repo, commit, file, &r);
        goto done;
    }
    /* An etag becomes a file name: nothing that could leave the blobs folder. */
    if (!r.etag[0] || strchr(r.etag, '/') || r.etag[0] == '.') {
        st = og_errorf(OG_ERR_IO, "%s: the hub's answer for %s has no usable ETag ('%s')", repo,
                       file, r.etag);
        goto done;
    }
    if (r.commit[0] && strcmp(r.commit, commit)) {
        st = og_errorf(OG_ERR_IO, "%s: %s came from commit %s, not %s as listed", repo, file,
                       r.commit, commit);
        goto done;
    }
    blob = strcat_alloc(repo_dir, "/blobs/", r.etag, "");
    size_t ln = strlen(e->cache) + strlen(repo_dir) + strlen(r.etag) + 32;
    lock = malloc(ln);
    if (!blob || !lock) {
        st = og_oom();
        goto done;
    }
    /* huggingface_hub's lock for the same blob: two tools filling one cache take turns. */
    const char *folder = strrchr(repo_dir, '/') + 1;
    snprintf(lock, ln, "%s/.locks/%s/%s.lock", e->cache, folder, r.etag);
    if ((st = hub_mkdirs_for(lock)) || (st = hub_mkdirs_for(blob))) goto done;
    lock_fd = open(lock, O_RDWR | O_CREAT, 0666);
    if (lock_fd < 0 || flock(lock_fd, LOCK_EX) != 0) {
        st = og_errorf(OG_ERR_IO, "cannot lock %s: %s", lock, strerror(errno));
        goto done;
    }
    if (!exists(blob)) {
        bool redirect = r.status >= 300 && r.status < 400 && r.location;
        st = fetch_blob(e, repo, commit, file, redirect ? r.location : full, blob, r.etag, r.size, stats);
        if (st) goto done;
    }
    st = hub_link_snapshot(repo_dir, commit, file, r.etag);
done:
    if (lock_fd >= 0) close(lock_fd); /* the lock file stays, as huggingface_hub leaves it */
    free(lock);
    free(blob);
    free(full);
    hub_response_free(&r);
    return st;
}

static char *snapshot_dir(const hub_env *e, const hub_ref *ref, const char *commit) {
    char *dir = hub_repo_dir(e, ref->repo);
    char *s = dir ? strcat_alloc(dir, "/snapshots/", commit, ref->subfolder[0] ? "/" : "") : NULL;
    char *full = s ? strcat_alloc(s, ref->subfolder, "", "") : NULL;
    free(dir);
    free(s);
    return full;
}

static const char *revision_of(const hub_ref *ref, const char *revision) {
    return revision ? revision : ref->revision ? ref->revision : "main";
}

/* The GGUF file hub_choose_gguf picks among those the snapshot folder dir holds
 * (malloc'd), or NULL. dir itself when it is one (ORG/NAME/FILE.gguf). */
static char *cached_gguf(const hub_ref *ref, const char *dir) {
    struct stat st;
    if (stat(dir, &st) != 0) return NULL;
    if (S_ISREG(st.st_mode)) return hub_is_gguf(dir) ? strdup(dir) : NULL;
    DIR *d = opendir(dir);
    if (!d) return NULL;
    file_list l = {0};
    int cap = 0;
    struct dirent *ent;
    bool ok = true;
    while (ok && (ent = readdir(d))) {
        if (!hub_is_gguf(ent->d_name)) continue;
        if (l.n == cap) {
            cap = cap ? 2 * cap : 8;
            char **grown = realloc(l.names, (size_t)cap * sizeof *grown);
            if (!(ok = grown != NULL)) break;
            l.names = grown;
        }
        if ((ok = (l.names[l.n] = strdup(ent->d_name)) != NULL)) l.n++;
    }
    closedir(d);
    int pick = -1;
    og_status *err = ok ? hub_choose_gguf(ref->repo, ref->tag, l.names, l.n, &pick) : NULL;
    og_status_free(err); /* not the cached choice: the hub is asked */
    char *path = pick >= 0 ? strcat_alloc(dir, "/", l.names[pick], "") : NULL;
    file_list_free(&l);
    return path;
}

char *hub_cached_package(const hub_env *e, const hub_ref *ref, const char *revision) {
    char *commit = hub_cached_commit(e, ref->repo, revision_of(ref, revision));
    char *dir = commit ? snapshot_dir(e, ref, commit) : NULL;
    free(commit);
    char *cfg = dir ? strcat_alloc(dir, "/genai_config.json", "", "") : NULL;
    bool ok = cfg && exists(cfg) && !ref->tag;
    free(cfg);
    if (!ok) {
        char *gguf = dir ? cached_gguf(ref, dir) : NULL;
        free(dir);
        return gguf;
    }
    return dir;
}

og_status *hub_pull(const hub_env *e, const hub_ref *ref, const char *revision, char **dir,
                    hub_pull_stats *stats) {
    const char *rev = revision_of(ref, revision);
    memset(stats, 0, sizeof *stats);
    *dir = NULL;
    if (e->offline) {
        char *commit = hub_cached_commit(e, ref->repo, rev);
        char *d = commit ? snapshot_dir(e, ref, commit) : NULL;
        free(commit);
        char *pkg = hub_cached_package(e, ref, revision); /* a package, or the GGUF file */
        if (pkg) {
            free(d);
            d = pkg;
        } else if (ref->tag) { /* the folder is there, not the tagged file */
            free(d);
            d = NULL;
        }
        if (!d || !exists(d)) {
            free(d);
            return og_errorf(OG_ERR_NOT_FOUND,
                             "HF_HUB_OFFLINE is set and %s%s%s%s%s (revision %s) is not in "
                             "the cache %s: unset HF_HUB_OFFLINE and run 'onnx-genai pull "
                             "%s%s%s%s%s'",
                             ref->repo, ref->subfolder[0] ? "/" : "", ref->subfolder,
                             ref->tag ? ":" : "", ref->tag ? ref->tag : "", rev, e->cache,
                             ref->repo, ref->subfolder[0] ? "/" : "", ref->subfolder,
                             ref->tag ? ":" : "", ref->tag ? ref->tag : "");
        }
        *dir = d;
        return NULL;
    }
    char *commit = NULL, *repo_dir = NULL;
    file_list files = {0};
    bool gguf = false;
    og_status *st = list_files(e, ref, rev, &commit, &files, &gguf);
    if (st) goto done;
    stats->files = files.n;
    if (!(repo_dir = hub_repo_dir(e, ref->repo))) {
        st = og_oom();
        goto done;
    }
    if ((st = hub_write_ref(e, ref->repo, rev, commit))) goto done;
    for (int i = 0; i < files.n && !st; i++) {
        char *snap = strcat_alloc(repo_dir, "/snapshots/", commit, "/");
        char *path = snap ? strcat_alloc(snap, files.names[i], "", "") : NULL;
        free(snap);
        if (!path) {
            st = og_oom();
            break;
        }
        /* In this snapshot already: huggingface_hub asks nothing either. */
        if (!exists(path)) st = pull_file(e, ref->repo, repo_dir, commit, files.names[i], stats);
        free(path);
    }
    if (!st && gguf) {
        char *snap = repo_dir ? strcat_alloc(repo_dir, "/snapshots/", commit, "/") : NULL;
        if (!snap || !(*dir = strcat_alloc(snap, files.names[0], "", ""))) st = og_oom();
        free(snap);
    } else if (!st && !(*dir = snapshot_dir(e, ref, commit))) {
        st = og_oom();
    }
done:
    free(commit);
    free(repo_dir);
    file_list_free(&files);
    return st;
}
