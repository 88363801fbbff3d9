#include "base/mapped_file.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

og_status *mapped_file_open(const char *path, mapped_file *out) {
    memset(out, 0, sizeof *out);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return og_errorf(errno == ENOENT ? OG_ERR_NOT_FOUND : OG_ERR_IO,
                                 "%s: cannot open: %s", path, strerror(errno));
    struct stat st;
    if (fstat(fd, &st) != 0) {
        og_status *s = og_errorf(OG_ERR_IO, "%s: cannot stat: %s", path, strerror(errno));
        close(fd);
        return s;
    }
    if (!S_ISREG(st.st_mode)) {
        close(fd);
        return og_errorf(OG_ERR_IO, "%s: not a regular file", path);
    }
    out->path = strdup(path);
    if (!out->path) {
        close(fd);
        return og_oom();
    }
    out->size = (size_t)st.st_size;
    if (out->size > 0) {
        void *p = mmap(NULL, out->size, PROT_READ, MAP_PRIVATE, fd, 0);
        if (p == MAP_FAILED) {
            og_status *s = og_errorf(OG_ERR_IO, "%s: cannot map %zu bytes: %s", path,
                                     out->size, strerror(errno));
            close(fd);
            free(out->path);
            memset(out, 0, sizeof *out);
            return s;
        }
        out->data = p;
    }
    close(fd);
    return NULL;
}

void mapped_file_close(mapped_file *f) {
    if (f->data) munmap((void *)f->data, f->size);
    free(f->path);
    memset(f, 0, sizeof *f);
}
