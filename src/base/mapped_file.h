/* Read-only memory maps of model and external-data files. Weights are used in place
 * from the mapping, so a mapping lives as long as the model that points into it. */
#ifndef OG_BASE_MAPPED_FILE_H
#define OG_BASE_MAPPED_FILE_H

#include "base/status.h"

#include <stddef.h>

typedef struct mapped_file {
    const unsigned char *data; /* NULL for an empty file */
    size_t size;
    char *path; /* owned copy, for error messages */
} mapped_file;

/* Maps the whole file read-only. On failure the message names the path and the reason. */
og_status *mapped_file_open(const char *path, mapped_file *out);
void mapped_file_close(mapped_file *f);

#endif
