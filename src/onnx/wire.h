/* A protobuf wire-format reader over one byte range. It never reads outside
 * [start, end): every length is checked against what remains, varints longer than
 * 10 bytes or overflowing 64 bits are errors, and groups (wire types 3/4) and the
 * undefined wire types 6/7 are rejected. Errors name the file label, the message being
 * read, the field number and the absolute offset in the file. */
#ifndef OG_ONNX_WIRE_H
#define OG_ONNX_WIRE_H

#include "base/status.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum { WIRE_VARINT = 0, WIRE_I64 = 1, WIRE_LEN = 2, WIRE_I32 = 5 };

typedef struct wire_reader {
    const uint8_t *p, *end;
    const uint8_t *base; /* start of the whole file, for offsets in messages */
    const char *label;   /* file name for messages */
    const char *msg;     /* message type being read, e.g. "GraphProto" */
} wire_reader;

typedef struct wire_field {
    uint32_t number;
    int type;
    uint64_t v;          /* VARINT, I64, I32 payload */
    const uint8_t *data; /* LEN payload */
    size_t len;
    size_t offset;       /* file offset of the field's key */
} wire_field;

/* Reader over [data, data+len) which lies inside a file starting at base. */
wire_reader wire_sub(const wire_reader *parent, const uint8_t *data, size_t len,
                     const char *msg);
wire_reader wire_init(const uint8_t *base, size_t size, const char *label, const char *msg);

/* Reads the next field. *has is false at the end of the range. Unknown fields are
 * returned like any other; callers ignore numbers they do not know. */
og_status *wire_next(wire_reader *r, wire_field *f, bool *has);

/* Error unless f has wire type `type`; `name` is the field's name in messages. */
og_status *wire_expect(const wire_reader *r, const wire_field *f, int type, const char *name);

/* Decodes one varint from [*p, end): false on truncation or overflow. */
bool wire_varint(const uint8_t **p, const uint8_t *end, uint64_t *out);

/* Repeated scalar fields may come packed (one LEN field) or one per field. These count
 * and decode the elements of one occurrence. `elem` is WIRE_VARINT, WIRE_I32 or WIRE_I64.
 * count: error on a malformed packed payload. */
og_status *wire_repeated_count(const wire_reader *r, const wire_field *f, int elem,
                               const char *name, size_t *count);
/* Calls fn(arg, value, index) for each element; index starts at *pos and advances. */
typedef void (*wire_elem_fn)(void *arg, uint64_t v, size_t i);
void wire_repeated_each(const wire_field *f, int elem, wire_elem_fn fn, void *arg, size_t *pos);

#endif
