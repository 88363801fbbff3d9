#include "base/pkg_file.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static bool is_sep(char c) { return c == '/' || c == '\\'; }

const char *pkg_path_problem(const char *rel) {
    if (!rel || !rel[0]) return "the path is empty";
    if (is_sep(rel[0])) return "the path is absolute";
    for (const char *p = rel; *p;) {
        const char *e = p;
        while (*e && !is_sep(*e)) e++;
        if (e - p == 2 && p[0] == '.' && p[1] == '.')
            return "the path goes up with '..'";
        p = *e ? e + 1 : e;
    }
    return NULL;
}

og_status *pkg_path_check(const char *file, const char *key, const char *rel) {
    const char *why = pkg_path_problem(rel);
    if (!why) return NULL;
    return og_errorf(OG_ERR_INVALID_MODEL, "%s: %s is '%s': %s; a package may only name files "
                     "inside its own folder (a relative path without '..')", file, key,
                     rel ? rel : "", why);
}

og_status *pkg_path_join(const char *dir, const char *rel, const char *file, const char *key,
                         char **out) {
    *out = NULL;
    OG_TRY(pkg_path_check(file, key, rel));
    size_t n = strlen(dir) + strlen(rel) + 2;
    char *p = malloc(n);
    if (!p) return og_errorf(OG_ERR_OUT_OF_MEMORY, "out of memory: %zu bytes for the path of "
                             "%s", n, key);
    snprintf(p, n, "%s%s%s", dir, dir[0] && dir[strlen(dir) - 1] == '/' ? "" : "/", rel);
    *out = p;
    return NULL;
}

static const char *kind_of(mode_t m) {
    if (S_ISDIR(m)) return "a folder";
    if (S_ISFIFO(m)) return "a FIFO";
    if (S_ISCHR(m)) return "a character device";
    if (S_ISBLK(m)) return "a block device";
    if (S_ISSOCK(m)) return "a socket";
    return "not a plain file";
}

og_status *pkg_open_regular(const char *path, int *fd, size_t *size) {
    *fd = -1;
    *size = 0;
    /* O_NONBLOCK: opening a FIFO for reading would otherwise wait for a writer. */
    int f = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
    if (f < 0) {
        int e = errno;
        return og_errorf(e == ENOENT || e == ENOTDIR ? OG_ERR_NOT_FOUND : OG_ERR_IO,
                         "%s: cannot open: %s", path, strerror(e));
    }
    struct stat st;
    if (fstat(f, &st) != 0) {
        og_status *s = og_errorf(OG_ERR_IO, "%s: cannot stat: %s", path, strerror(errno));
        close(f);
        return s;
    }
    if (!S_ISREG(st.st_mode)) {
        close(f);
        return og_errorf(OG_ERR_IO, "%s: not a regular file (%s)", path, kind_of(st.st_mode));
    }
    /* Reads of a regular file never block; clear the flag so they behave as usual. */
    int fl = fcntl(f, F_GETFL);
    if (fl >= 0) (void)fcntl(f, F_SETFL, fl & ~O_NONBLOCK);
    *fd = f;
    *size = (size_t)st.st_size;
    return NULL;
}

og_status *pkg_read_file(const char *path, size_t max_bytes, char **data, size_t *len) {
    *data = NULL;
    *len = 0;
    int fd;
    size_t size;
    OG_TRY(pkg_open_regular(path, &fd, &size));
    if (size > max_bytes) {
        close(fd);
        return og_errorf(OG_ERR_INVALID_MODEL, "%s: %zu bytes, more than the %zu this file may "
                         "have", path, size, max_bytes);
    }
    char *buf = malloc(size + 1);
    if (!buf) {
        close(fd);
        return og_errorf(OG_ERR_OUT_OF_MEMORY, "%s: out of memory: %zu bytes to read the file",
                         path, size + 1);
    }
    size_t got = 0;
    while (got < size) { /* the size is from fstat: a file that shrinks meanwhile ends early */
        ssize_t r = read(fd, buf + got, size - got);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) {
            og_status *s = og_errorf(OG_ERR_IO, "%s: read failed: %s", path, strerror(errno));
            close(fd);
            free(buf);
            return s;
        }
        if (r == 0) break;
        got += (size_t)r;
    }
    close(fd);
    buf[got] = '\0';
    *data = buf;
    *len = got;
    return NULL;
}
