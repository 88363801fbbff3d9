/* A file of prepared weights (prepacked MatMulNBits panels) kept between runs, so that
 * opening a model again maps what the first open computed instead of computing it into
 * fresh memory (docs/PERFORMANCE.md, "Opening": on a VM the kernel's zeroing of fresh
 * pages was half of open time).
 *
 * One cache file per model, named by a hash of its key: the identity of the model's
 * files (path, device, inode, size, modification and change times: any write to a file
 * changes its ctime) and a tag naming the kernels' layout. The file holds entries, one
 * per prepared node (an id the caller chooses, a size, a checksum), each at a 2 MiB
 * boundary so that the page cache's huge folios map whole (ext4 on Linux >= 6.16).
 *
 * Opening validates everything before any entry is used: magic, version, key, header
 * and index checksums, the file's size, and every entry's checksum (read once over the
 * pool; ~0.04 s of CPU per GB). A file that fails any check is reported on stderr,
 * removed and written again by this open. Writing goes to a temporary file beside it,
 * renamed into place only when complete, so a reader never sees half a file.
 *
 * Environment: for now opt-in: OG_PACK_CACHE=on (or 1) uses $XDG_CACHE_HOME/onnx-genai/
 * packs, else ~/.cache/onnx-genai/packs; OG_PACK_CACHE=DIR uses DIR; unset, off or 0:
 * no cache;
 * OG_PACK_CACHE_MAX_MB bounds the folder (default 16384: the least recently used files
 * are removed to make room; a model larger than the bound is not cached, nor one that
 * would leave under 2 GiB free on the disk); OG_PACK_CACHE_MIN_MB is the smallest
 * prepared size worth a file (default 64: small models prepare fast anyway). */
#ifndef OG_BASE_PACK_CACHE_H
#define OG_BASE_PACK_CACHE_H

#include "base/threadpool.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct pack_cache pack_cache;
typedef struct pack_writer pack_writer;

enum {
    PACK_CACHE_ALIGN = 2 << 20,          /* entries start at this file offset multiple */
    PACK_WRITER_MAX_RESERVE = 1 << 20,   /* the most one pack_writer_reserve may ask */
};

typedef enum pack_cache_mode {
    PACK_CACHE_OFF,      /* disabled, or nothing to cache */
    PACK_CACHE_READING,  /* a valid file is mapped: pack_cache_find answers */
    PACK_CACHE_WRITING,  /* no valid file: entries go to a new one */
    PACK_CACHE_FAILED,   /* writing failed (disk full...): everything is computed */
} pack_cache_mode;

/* For a model whose weights are in files paths[0..n) and prepared state of about
 * `bytes` bytes in the layout `tag`: a mapped valid file (READING), a new file to write
 * (WRITING), or NULL (disabled by the environment, below the minimum, a path that cannot
 * be identified, no writable folder). Problems are reported on stderr, never errors.
 * The pool (may be NULL) checks the entries. Free with pack_cache_close. */
pack_cache *pack_cache_open(const char *const *paths, int n, const char *tag, size_t bytes,
                            threadpool *pool);
/* Unmaps the file (after every user of pack_cache_find's memory is done) and removes an
 * unfinished temporary file. NULL is fine. */
void pack_cache_close(pack_cache *c);

pack_cache_mode pack_cache_get_mode(const pack_cache *c);
/* What this open did: "off", "hit" (mapped), "written" (a new file), "rebuilt" (an
 * invalid file replaced), "failed". */
const char *pack_cache_outcome(const pack_cache *c);
/* The file's path (NULL when none). */
const char *pack_cache_path(const pack_cache *c);

/* READING: the entry with this id and exactly this size, 64-byte aligned and read-only,
 * valid until pack_cache_close; NULL otherwise (other modes, absent id, other size). */
const void *pack_cache_find(pack_cache *c, uint64_t id, size_t size);

/* WRITING: starts the entry `id` of `size` bytes (NULL in other modes or when out of
 * memory). Thread-safe: entries may be written at once from several threads. */
pack_writer *pack_writer_begin(pack_cache *c, uint64_t id, size_t size);
/* The next len (<= PACK_WRITER_MAX_RESERVE) bytes of the entry to fill, in order; NULL
 * when writing failed (the cache is then FAILED). */
uint8_t *pack_writer_reserve(pack_writer *w, size_t len);
/* Ends the entry (exactly `size` bytes must have been reserved); false when it could
 * not be written (the cache is then FAILED). Frees w. */
bool pack_writer_end(pack_writer *w);

/* WRITING: writes the index and header, renames the file into place and maps it: the
 * cache is then READING. On failure FAILED. */
void pack_cache_finish(pack_cache *c);

/* The entry checksum (exposed for tests): over len bytes, len a multiple of 64. */
uint64_t pack_cache_checksum(const void *p, size_t len);
/* 64-bit FNV-1a of bytes, continuing from h (start with PACK_HASH_SEED). */
#define PACK_HASH_SEED 0xcbf29ce484222325ull
uint64_t pack_cache_hash(uint64_t h, const void *p, size_t len);

#endif
