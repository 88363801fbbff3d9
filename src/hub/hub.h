/* Packages from the Hugging Face hub, kept in huggingface_hub's own cache layout so that
 * both tools share one copy of every file:
 *
 *   $HF_HUB_CACHE/models--{org}--{name}/
 *     blobs/{etag}                  the file's bytes (etag: the sha256 for LFS files)
 *     blobs/{etag}.incomplete       a download in progress, resumed with a Range request
 *     snapshots/{commit}/{path}     -> ../../blobs/{etag} (relative symlinks)
 *     refs/{revision}               the commit hash a branch or tag pointed at
 *   $HF_HUB_CACHE/.locks/models--{org}--{name}/{etag}.lock   flock'd while writing a blob
 *
 * Part of the command-line tool (libcurl), not of the library. */
#ifndef OG_HUB_HUB_H
#define OG_HUB_HUB_H

#include "onnx_genai.h"

#include <stdbool.h>
#include <stdio.h>

/* What the environment says, read as huggingface_hub reads it: HF_ENDPOINT (default
 * https://huggingface.co, trailing '/' dropped), HF_HUB_CACHE (default $HF_HOME/hub;
 * HF_HOME defaults to $XDG_CACHE_HOME/huggingface, then ~/.cache/huggingface),
 * HF_HUB_OFFLINE (1/ON/YES/TRUE), HF_TOKEN (else the file HF_TOKEN_PATH, default
 * $HF_HOME/token, that `hf auth login` writes). */
typedef struct hub_env {
    char *endpoint;
    char *cache;  /* the hub cache folder */
    char *token;  /* NULL: anonymous */
    bool offline;
} hub_env;
og_status *hub_env_read(hub_env *e); /* free with hub_env_free, also after a failure */
void hub_env_free(hub_env *e);

/* "org/name[/sub/folder][:TAG][@REV]": the repository, the folder (or file) inside it,
 * the GGUF file's tag (Ollama's and llama.cpp's `-hf ORG/NAME:Q4_K_M`) and the
 * revision. */
typedef struct hub_ref {
    char *repo;      /* "org/name" */
    char *subfolder; /* "" for the whole repository, else without leading/trailing '/' */
    char *tag;       /* NULL, or the quantization tag that picks one .gguf file */
    char *revision;  /* NULL, or the branch, tag or commit after '@' */
} hub_ref;
og_status *hub_ref_parse(const char *spec, hub_ref *out); /* free with hub_ref_free */
void hub_ref_free(hub_ref *r);
/* Whether a -m value names a repository rather than a folder: two or more '/'-separated
 * parts of letters, digits, '-', '_', '.', not starting with '/' or '.' (then an optional
 * :TAG and @REV), and no such path exists on disk. */
bool hub_looks_like_repo(const char *spec);

/* --- which GGUF file of a repository (hub_gguf.c) --- */

/* Whether name is a GGUF file (ends in ".gguf"). */
bool hub_is_gguf(const char *name);
/* Of names (repository paths), the GGUF file a pull takes: the one whose base name holds
 * tag as a whole part (after the start or '-', '.', '_'; before ".gguf", '-' or '.';
 * any case), else the only one. Multimodal projectors (mmproj*) are never taken; a part
 * of a split file (-00001-of-00003) is refused. *index: -1 when names hold no GGUF file
 * (and no tag was asked for); an error says which files there are to choose from. A split
 * file's parts count as one file (its first part). */
og_status *hub_choose_gguf(const char *repo, const char *tag, char *const *names, int n,
                           int *index);

/* --- the cache (hub_cache.c) --- */

/* $cache/models--org--name (malloc'd). */
char *hub_repo_dir(const hub_env *e, const char *repo);
/* True for a full 40-hex commit hash. */
bool hub_is_commit(const char *rev);
/* The commit a revision stands for in the cache: a commit hash as it is, else the
 * content of refs/{revision}. NULL when the cache has none (malloc'd). */
char *hub_cached_commit(const hub_env *e, const char *repo, const char *revision);
/* refs/{revision} := commit (atomically; nothing for a commit hash). */
og_status *hub_write_ref(const hub_env *e, const char *repo, const char *revision,
                         const char *commit);
/* mkdir -p of path's parent folders (path itself excluded). */
og_status *hub_mkdirs_for(const char *path);
/* snapshots/{commit}/{file} -> ../../blobs/{etag}, relative over any depth of file. */
og_status *hub_link_snapshot(const char *repo_dir, const char *commit, const char *file,
                             const char *etag);

/* --- SHA-256 (hub_sha256.c, libcrypto), for checking LFS blobs against their etag --- */

typedef struct hub_sha256 {
    void *ctx; /* OpenSSL's EVP_MD_CTX; NULL before the first init */
} hub_sha256;
/* Starts s, or starts it over; false when out of memory. Free with hub_sha256_free. */
bool hub_sha256_init(hub_sha256 *s);
void hub_sha256_update(hub_sha256 *s, const void *data, size_t n);
void hub_sha256_hex(hub_sha256 *s, char out[65]); /* finishes s ("" if that fails) */
void hub_sha256_free(hub_sha256 *s);              /* NULL ctx: a no-op */

/* --- HTTP (hub_http.c, libcurl) --- */

typedef struct hub_response {
    long status;        /* the last response's HTTP status (0: none came) */
    char commit[64];    /* X-Repo-Commit */
    char etag[160];     /* X-Linked-Etag, else ETag, quotes and W/ removed */
    char error_code[64];/* X-Error-Code (RepoNotFound, GatedRepo, EntryNotFound, ...) */
    char *location;     /* Location of a redirect (malloc'd) */
    long long size;     /* X-Linked-Size, else Content-Length; -1 unknown */
    char *body;         /* hub_http_get's body, NUL-terminated (malloc'd) */
    size_t body_len;
    char curl_error[256]; /* set when no HTTP answer came (network), with curl_code */
    int curl_code;
} hub_response;
void hub_response_free(hub_response *r);

/* GET url into r->body (JSON answers), following redirects. A network failure is not a
 * status: r->curl_code says it; HTTP errors are r->status. */
void hub_http_get(const hub_env *e, const char *url, hub_response *r);
/* HEAD url without following redirects to another host (a file's metadata: a redirect
 * to the CDN still carries X-Linked-Etag), following those within the endpoint. */
void hub_http_head(const hub_env *e, const char *url, hub_response *r);

/* A download into f from byte *have on (Range when *have > 0): the hash of what f holds
 * goes on in sha; *have grows as bytes come. A server that ignores the Range gets f and
 * sha restarted. The bar draws on stderr when it is a terminal. */
typedef struct hub_bar hub_bar;
void hub_http_download(const hub_env *e, const char *url, FILE *f, long long *have,
                       hub_sha256 *sha, hub_bar *bar, hub_response *r);

/* --- progress (hub_progress.c) --- */

/* NULL when stderr is not a terminal (nothing drawn), else a bar for one file of
 * `total` bytes (-1 unknown), starting at `done`. */
hub_bar *hub_bar_start(const char *name, long long total, long long done);
void hub_bar_update(hub_bar *b, long long done);
void hub_bar_end(hub_bar *b); /* the final line; frees b; NULL is a no-op */

/* --- pull (hub_pull.c) --- */

typedef struct hub_pull_stats {
    int files;              /* files the package has (under the subfolder) */
    int downloaded;         /* of which fetched now */
    long long bytes;        /* bytes fetched now */
} hub_pull_stats;

/* Makes the cache hold every file of ref (under its subfolder, or the one file the
 * "subfolder" names) at revision (NULL: ref->revision, else "main"), then *dir :=
 * snapshots/{commit}[/subfolder] (malloc'd). Files already in the
 * snapshot are not asked for again; genai_config.json comes last, so a snapshot folder
 * that has it holds the whole package. A folder with no genai_config.json but GGUF files
 * (or a tag given) is a GGUF repository: only the file hub_choose_gguf picks is fetched,
 * and *dir is that file's path in the snapshot. Offline (e->offline) it only looks in
 * the cache. */
og_status *hub_pull(const hub_env *e, const hub_ref *ref, const char *revision, char **dir,
                    hub_pull_stats *stats);
/* The cached snapshot folder of ref at revision (NULL: ref->revision, else "main") when
 * it holds genai_config.json; else the GGUF file hub_choose_gguf picks among those the
 * snapshot folder holds; else NULL (malloc'd). */
char *hub_cached_package(const hub_env *e, const hub_ref *ref, const char *revision);

#endif
