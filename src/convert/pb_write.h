/* Protobuf wire-format writing into growable buffers: the inverse of src/onnx/wire.h,
 * for the ONNX messages `convert` writes. A nested message is written into its own
 * buffer and appended as a length-delimited field. Allocation failure is sticky: the
 * buffer records it and pb_ok reports it once at the end, so callers need not check
 * every field. */
#ifndef OG_CONVERT_PB_WRITE_H
#define OG_CONVERT_PB_WRITE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct pbuf {
    uint8_t *data;
    size_t len, cap;
    bool failed; /* an allocation failed: the contents are incomplete */
} pbuf;

void pb_free(pbuf *b);
bool pb_ok(const pbuf *b);
void pb_raw(pbuf *b, const void *data, size_t len);
void pb_varint(pbuf *b, uint32_t field, uint64_t v);      /* int32/int64/enum/bool */
void pb_bytes(pbuf *b, uint32_t field, const void *data, size_t len);
void pb_str(pbuf *b, uint32_t field, const char *s);       /* NUL-terminated */
/* The key and length of a length-delimited field whose len payload bytes follow. */
void pb_len_key(pbuf *b, uint32_t field, uint64_t len);
void pb_msg(pbuf *b, uint32_t field, const pbuf *child);  /* child's bytes as a field */
void pb_f32(pbuf *b, uint32_t field, float v);             /* fixed32 */
/* A packed repeated int64 field. */
void pb_packed_i64(pbuf *b, uint32_t field, const int64_t *v, size_t n);

#endif
