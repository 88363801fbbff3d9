/* The files a model package may make us read, and how every model file is opened.
 *
 * A package is a folder. Its genai_config.json names graph files, processor configs and
 * a tokenizer folder; a graph names external-data files. All of these are paths the
 * package's author wrote, so they go through one policy: a path named by a package must
 * be relative, non-empty and free of '..' components ('/' and '\' both count as
 * separators for that test), so that it stays lexically inside the folder it is
 * relative to. Symbolic links are followed: the Hugging Face cache lays a snapshot out
 * as links into a blob folder, and a link is made by whoever laid out the folder, not
 * by the config file.
 *
 * Opening: every model, config, tokenizer and tensor file is opened with O_NONBLOCK and
 * checked with fstat before any read, so a FIFO, a device or a folder is refused at once
 * instead of blocking (open(2) on a FIFO waits for a writer) or being read forever
 * (/dev/zero). */
#ifndef OG_BASE_PKG_FILE_H
#define OG_BASE_PKG_FILE_H

#include "base/status.h"

#include <stddef.h>

/* The largest JSON file (genai_config.json, tokenizer.json, ...) we read: real
 * tokenizer.json files are below 40 MiB. */
#define PKG_MAX_JSON_BYTES ((size_t)256 << 20)

/* NULL when a package may name `rel`; otherwise why not (a static string). */
const char *pkg_path_problem(const char *rel);

/* pkg_path_problem as a status: "<file>: <key> is '<rel>': <why>" (OG_ERR_INVALID_MODEL),
 * or NULL when the path is acceptable. `file` is the file that names the path (the
 * config, the graph), `key` where in it (a config key path, "initializer 'w'"). */
og_status *pkg_path_check(const char *file, const char *key, const char *rel);

/* "<dir>/<rel>" after pkg_path_check(file, key, rel); *out is malloc'd. */
og_status *pkg_path_join(const char *dir, const char *rel, const char *file, const char *key,
                         char **out);

/* Opens path read-only without blocking and refuses anything but a regular file
 * ("<path>: not a regular file (a FIFO)"). On success *fd is open (close it) and *size
 * is the file's size. */
og_status *pkg_open_regular(const char *path, int *fd, size_t *size);

/* Reads a whole regular file of at most max_bytes into a malloc'd, NUL-terminated
 * buffer. A missing file is OG_ERR_NOT_FOUND. */
og_status *pkg_read_file(const char *path, size_t max_bytes, char **data, size_t *len);

#endif
