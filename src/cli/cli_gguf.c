/* A GGUF file pulled from the hub becomes a package once: `convert` writes it into
 *
 *   $HF_HUB_CACHE/models--{org}--{name}/onnx-genai/{sha256}/
 *
 * beside the repository's blobs, keyed by the GGUF blob's sha256 (its name in blobs/),
 * so every snapshot and tag that points at the same file shares one conversion, and a
 * later `pull` or `-m ORG/NAME[:TAG]` converts nothing. huggingface_hub's cache tools
 * read only blobs/, refs/ and snapshots/ and leave the folder alone; deleting the
 * repository's folder deletes it too. The conversion is written aside
 * ({sha256}.incomplete) and renamed into place under a lock ({sha256}.lock), so a cut
 * or concurrent run never leaves half a package under the final name. Its file
 * .onnx-genai-convert holds the converter's CONVERT_FORMAT: a package an older converter
 * wrote is converted again. */
#include "cli/cli.h"

#include "convert/convert.h"
#include "hub/hub.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static bool is_hex64(const char *s) {
    int n = 0;
    for (; s[n]; n++)
        if (!isxdigit((unsigned char)s[n])) return false;
    return n == 64;
}

/* The sha256 of the blob the snapshot path links to: the link's target names it; a
 * file that is no link (a cache copied without links) is hashed. */
static bool blob_sha256(const char *path, char out[65]) {
    char target[PATH_MAX];
    ssize_t n = readlink(path, target, sizeof target - 1);
    if (n > 0) {
        target[n] = 0;
        const char *b = strrchr(target, '/');
        b = b ? b + 1 : target;
        if (is_hex64(b)) {
            for (int i = 0; i < 65; i++) out[i] = (char)tolower((unsigned char)b[i]);
            return true;
        }
    }
    FILE *f = fopen(path, "rb");
    hub_sha256 sha = {0};
    if (!f || !hub_sha256_init(&sha)) {
        if (f) fclose(f);
        return false;
    }
    static char buf[1 << 20];
    size_t got;
    while ((got = fread(buf, 1, sizeof buf, f)) > 0) hub_sha256_update(&sha, buf, got);
    bool ok = !ferror(f);
    fclose(f);
    hub_sha256_hex(&sha, out);
    hub_sha256_free(&sha);
    return ok && out[0];
}

static int remove_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw) {
    (void)sb, (void)flag, (void)ftw;
    return remove(path);
}

/* rm -rf path (nothing there: fine). */
static void remove_tree(const char *path) {
    struct stat sb;
    if (lstat(path, &sb) == 0) nftw(path, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
}

static const char stamp_name[] = ".onnx-genai-convert";

/* Whether dir holds a whole package this converter's format wrote. */
static bool converted(const char *dir) {
    char p[PATH_MAX];
    struct stat sb;
    snprintf(p, sizeof p, "%s/genai_config.json", dir);
    if (stat(p, &sb) != 0) return false;
    snprintf(p, sizeof p, "%s/%s", dir, stamp_name);
    FILE *f = fopen(p, "r");
    int format = 0;
    if (f) {
        if (fscanf(f, "%d", &format) != 1) format = 0;
        fclose(f);
    }
    return format == CONVERT_FORMAT;
}

static bool write_stamp(const char *dir) {
    char p[PATH_MAX];
    snprintf(p, sizeof p, "%s/%s", dir, stamp_name);
    FILE *f = fopen(p, "w");
    bool ok = f && fprintf(f, "%d\n", CONVERT_FORMAT) > 0;
    if (f && fclose(f) != 0) ok = false;
    return ok;
}

char *cli_gguf_package(const char *repo_dir, const char *gguf, bool quiet) {
    char sha[65];
    if (!blob_sha256(gguf, sha)) {
        cli_fail("%s: cannot read: %s", gguf, strerror(errno));
        return NULL;
    }
    size_t n = strlen(repo_dir) + 128;
    char *dir = malloc(n), *part = malloc(n), *lock = malloc(n);
    char *result = NULL;
    int fd = -1;
    if (!dir || !part || !lock) {
        cli_fail("out of memory");
        goto done;
    }
    snprintf(dir, n, "%s/onnx-genai/%s", repo_dir, sha);
    snprintf(part, n, "%s.incomplete", dir);
    snprintf(lock, n, "%s.lock", dir);
    if (converted(dir)) { /* converted before: no lock needed to read it */
        result = dir;
        goto done;
    }
    og_status *st = hub_mkdirs_for(lock);
    if (st) {
        cli_fail("%s", og_status_message(st));
        og_status_free(st);
        goto done;
    }
    fd = open(lock, O_RDWR | O_CREAT, 0666);
    if (fd < 0 || flock(fd, LOCK_EX) != 0) {
        cli_fail("cannot lock %s: %s", lock, strerror(errno));
        goto done;
    }
    if (converted(dir)) { /* another run converted it meanwhile */
        result = dir;
        goto done;
    }
    remove_tree(part);
    remove_tree(dir);
    if (!quiet) fprintf(stderr, "onnx-genai: converting %s into %s\n", gguf, dir);
    convert_options opt = {.context = 0, .progress = !quiet && isatty(2)};
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    st = convert_gguf(gguf, part, &opt);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    if (st) {
        cli_fail("convert %s: %s", gguf, og_status_message(st));
        og_status_free(st);
        remove_tree(part);
        goto done;
    }
    if (!write_stamp(part)) {
        cli_fail("cannot write %s/%s: %s", part, stamp_name, strerror(errno));
        remove_tree(part);
        goto done;
    }
    if (rename(part, dir) != 0) {
        cli_fail("cannot move %s to %s: %s", part, dir, strerror(errno));
        remove_tree(part);
        goto done;
    }
    if (!quiet)
        fprintf(stderr, "onnx-genai: converted in %.2f s\n",
                (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) * 1e-9);
    result = dir;
done:
    if (fd >= 0) close(fd);
    if (result != dir) free(dir);
    free(part);
    free(lock);
    return result;
}
