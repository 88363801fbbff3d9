#include "base/mapped_file.h"

#include "base/pkg_file.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

og_status *mapped_file_open(const char *path, mapped_file *out) {
    memset(out, 0, sizeof *out);
    int fd;
    size_t size;
    OG_TRY(pkg_open_regular(path, &fd, &size)); /* never blocks; regular files only */
    out->path = strdup(path);
    if (!out->path) {
        close(fd);
        return og_errorf(OG_ERR_OUT_OF_MEMORY, "%s: out of memory", path);
    }
    out->size = size;
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
