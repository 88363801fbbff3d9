/* A GGUF reader (llama.cpp's model file: a header, typed key/value metadata, tensor
 * descriptions, then aligned tensor data). The file is memory-mapped; parsing checks
 * every count, length and offset against the file before use, so any byte string gives
 * either a model or an error naming the key or tensor and what was expected. Versions 2
 * and 3 (64-bit counts) are read; keys and tensor names are copied, values stay in the
 * mapping. */
#ifndef OG_CONVERT_GGUF_H
#define OG_CONVERT_GGUF_H

#include "base/mapped_file.h"
#include "base/status.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Metadata value types, as GGUF numbers them. */
enum {
    GGUF_U8 = 0, GGUF_I8 = 1, GGUF_U16 = 2, GGUF_I16 = 3, GGUF_U32 = 4, GGUF_I32 = 5,
    GGUF_F32 = 6, GGUF_BOOL = 7, GGUF_STRING = 8, GGUF_ARRAY = 9, GGUF_U64 = 10,
    GGUF_I64 = 11, GGUF_F64 = 12, GGUF_NTYPES
};

/* Tensor element types (ggml_type numbers) that have a known block layout. */
enum {
    GGML_F32 = 0, GGML_F16 = 1, GGML_Q4_0 = 2, GGML_Q4_1 = 3, GGML_Q5_0 = 6, GGML_Q5_1 = 7,
    GGML_Q8_0 = 8, GGML_Q8_1 = 9, GGML_Q2_K = 10, GGML_Q3_K = 11, GGML_Q4_K = 12,
    GGML_Q5_K = 13, GGML_Q6_K = 14, GGML_Q8_K = 15, GGML_I8 = 24, GGML_I16 = 25,
    GGML_I32 = 26, GGML_I64 = 27, GGML_F64 = 28, GGML_BF16 = 30
};

typedef struct gguf_kv {
    char *key;           /* owned, NUL-terminated */
    uint32_t type;       /* GGUF_* */
    uint32_t elem_type;  /* arrays: the items' type */
    uint64_t n;          /* arrays: item count; strings: byte length; else 1 */
    const uint8_t *data; /* scalar or array items / string bytes, in the mapping */
    uint64_t *str_off;   /* arrays of strings: offset of each item's length field from data */
} gguf_kv;

typedef struct gguf_tensor {
    char *name;          /* owned */
    uint32_t n_dims;     /* 1..4 */
    uint64_t ne[4];      /* ne[0] is the innermost (contiguous) dimension; unused = 1 */
    uint32_t type;       /* GGML_* */
    const uint8_t *data; /* in the mapping, checked to lie inside the file */
    uint64_t nbytes;
} gguf_tensor;

typedef struct gguf_file {
    mapped_file map;
    uint32_t version;
    uint64_t alignment;
    gguf_kv *kv;
    size_t n_kv;
    gguf_tensor *tensors;
    size_t n_tensors;
} gguf_file;

/* Parses the whole bytes (label names them in errors); `g` keeps pointers into `data`,
 * which must outlive it. Used by gguf_open and the fuzz target. */
og_status *gguf_parse(const uint8_t *data, size_t size, const char *label, gguf_file *g);
og_status *gguf_open(const char *path, gguf_file *g);
void gguf_close(gguf_file *g);

const char *gguf_type_name(uint32_t ggml_type); /* "Q4_0", or "type 99" style for unknown */
/* Elements per block and bytes per block of a tensor type; false if unknown. */
bool gguf_block(uint32_t ggml_type, uint32_t *elems, uint32_t *bytes);

const gguf_kv *gguf_find(const gguf_file *g, const char *key);
const gguf_tensor *gguf_tensor_find(const gguf_file *g, const char *name);

/* Typed getters: error naming the key when it is absent (unless `dflt` applies: the
 * *_or variants) or of an unconvertible type. Integers accept any integer type in range,
 * floats accept F32 and F64. */
og_status *gguf_get_i64(const gguf_file *g, const char *key, int64_t *out);
og_status *gguf_get_i64_or(const gguf_file *g, const char *key, int64_t dflt, int64_t *out);
og_status *gguf_get_f64_or(const gguf_file *g, const char *key, double dflt, double *out);
/* A string value as a pointer into the mapping and its length (not NUL-terminated). */
og_status *gguf_get_str(const gguf_file *g, const char *key, const char **s, size_t *len);
/* An array's item i: a string, a float (F32 items), an integer (any integer items). */
void gguf_arr_str(const gguf_kv *kv, uint64_t i, const char **s, size_t *len);
float gguf_arr_f32(const gguf_kv *kv, uint64_t i);
int64_t gguf_arr_int(const gguf_kv *kv, uint64_t i);
/* Error unless kv is an array of `count` items of elem_type (any integer type when
 * elem_type is GGUF_I32, F32/F64... exactly otherwise). count 0: any length. */
og_status *gguf_expect_array(const gguf_kv *kv, uint32_t elem_type, uint64_t count);

#endif
