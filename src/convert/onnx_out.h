/* Writing one ONNX model as the model builder saves it: the graph in FILE, every
 * initializer external in FILE.data at 64-byte aligned offsets (written as produced, so
 * weights never gather in memory), small shape constants as Constant nodes named
 * /model/constants/<TYPE>/<value>. Names passed in are copied. */
#ifndef OG_CONVERT_ONNX_OUT_H
#define OG_CONVERT_ONNX_OUT_H

#include "base/arena.h"
#include "base/status.h"
#include "convert/pb_write.h"

#include <stdint.h>
#include <stdio.h>

/* ONNX TensorProto data types used here. */
enum { OX_FLOAT = 1, OX_UINT8 = 2, OX_INT32 = 6, OX_INT64 = 7, OX_FLOAT16 = 10 };

typedef struct onnx_out {
    char *path, *data_path;
    const char *data_name; /* FILE.data's base name, as external_data location */
    FILE *data;
    char *data_buf;        /* its stdio buffer (glibc sizes a buffer it allocates itself
                            * by the file's block size, 4 KiB, whatever setvbuf asks) */
    uint64_t offset;       /* bytes written to FILE.data */
    pbuf nodes, inits, io; /* GraphProto fields, appended in order */
    arena names;           /* strings of this graph (onnx_fmt) */
    /* the open initializer (onnx_init_begin .. onnx_init_end) */
    const char *init_name;
    int init_type;
    int64_t init_dims[4];
    int init_ndims;
    uint64_t init_start;
    char **consts; /* names of Constant nodes written, to write each once */
    size_t n_consts, cap_consts;
    og_status *err; /* first error (I/O, memory): reported by onnx_out_finish */
} onnx_out;

og_status *onnx_out_open(onnx_out *o, const char *dir, const char *filename);
/* Writes the model file (after all nodes and initializers) and closes everything. */
og_status *onnx_out_finish(onnx_out *o, const char *producer);
void onnx_out_abort(onnx_out *o); /* frees without writing */

/* A string owned by the writer. */
const char *onnx_fmt(onnx_out *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Node attributes. */
enum { OA_INT, OA_FLOAT, OA_STRING };
typedef struct onnx_attr {
    const char *name;
    int kind;
    int64_t i;
    float f;
    const char *s;
} onnx_attr;
#define ATTR_I(n, v) ((onnx_attr){.name = (n), .kind = OA_INT, .i = (v)})
#define ATTR_F(n, v) ((onnx_attr){.name = (n), .kind = OA_FLOAT, .f = (float)(v)})
#define ATTR_S(n, v) ((onnx_attr){.name = (n), .kind = OA_STRING, .s = (v)})

/* A node; ins/outs may hold "" for absent optional inputs. Returns outs[0]. */
const char *onnx_node(onnx_out *o, const char *op, const char *domain, const char *name,
                      const char *const *ins, int n_in, const char *const *outs, int n_out,
                      const onnx_attr *attrs, int n_attrs);

/* Graph inputs/outputs: dims are numbers, or names where dim_names[i] is not NULL. */
void onnx_io(onnx_out *o, bool output, const char *name, int elem_type, int ndims,
             const int64_t *dims, const char *const *dim_names);

/* Int64 / float Constant nodes, once per value; returns the output name. A float's name
 * spells it as `text` says (the builder's spelling). */
const char *onnx_const_i64(onnx_out *o, const int64_t *v, int n, bool scalar);
const char *onnx_const_f32(onnx_out *o, float v, const char *text);

/* An external initializer: begin, write its bytes (any number of calls), end. */
void onnx_init_begin(onnx_out *o, const char *name, int elem_type, const int64_t *dims,
                     int ndims);
void onnx_init_write(onnx_out *o, const void *data, size_t n);
const char *onnx_init_end(onnx_out *o);
/* All at once. */
const char *onnx_init(onnx_out *o, const char *name, int elem_type, const int64_t *dims,
                      int ndims, const void *data, size_t n);

#endif
