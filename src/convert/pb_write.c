/* Protobuf fields appended to a buffer that grows by doubling. */
#include "convert/pb_write.h"

#include <stdlib.h>
#include <string.h>

void pb_free(pbuf *b) {
    free(b->data);
    memset(b, 0, sizeof *b);
}

bool pb_ok(const pbuf *b) { return !b->failed; }

static bool grow(pbuf *b, size_t extra) {
    if (b->failed) return false;
    if (b->cap - b->len >= extra) return true;
    size_t cap = b->cap ? b->cap : 256;
    while (cap - b->len < extra) {
        if (cap > SIZE_MAX / 2) {
            b->failed = true;
            return false;
        }
        cap *= 2;
    }
    uint8_t *p = realloc(b->data, cap);
    if (!p) {
        b->failed = true;
        return false;
    }
    b->data = p;
    b->cap = cap;
    return true;
}

void pb_raw(pbuf *b, const void *data, size_t len) {
    if (!len || !grow(b, len)) return;
    memcpy(b->data + b->len, data, len);
    b->len += len;
}

static void raw_varint(pbuf *b, uint64_t v) {
    uint8_t tmp[10];
    size_t n = 0;
    do {
        tmp[n] = (uint8_t)(v & 0x7f);
        v >>= 7;
        if (v) tmp[n] |= 0x80;
        n++;
    } while (v);
    pb_raw(b, tmp, n);
}

static void key(pbuf *b, uint32_t field, int wire) { raw_varint(b, (uint64_t)field << 3 | wire); }

void pb_varint(pbuf *b, uint32_t field, uint64_t v) {
    key(b, field, 0);
    raw_varint(b, v);
}

void pb_bytes(pbuf *b, uint32_t field, const void *data, size_t len) {
    key(b, field, 2);
    raw_varint(b, len);
    pb_raw(b, data, len);
}

void pb_len_key(pbuf *b, uint32_t field, uint64_t len) {
    key(b, field, 2);
    raw_varint(b, len);
}

void pb_str(pbuf *b, uint32_t field, const char *s) { pb_bytes(b, field, s, strlen(s)); }

void pb_msg(pbuf *b, uint32_t field, const pbuf *child) {
    if (child->failed) b->failed = true;
    pb_bytes(b, field, child->data, child->len);
}

void pb_f32(pbuf *b, uint32_t field, float v) {
    key(b, field, 5);
    pb_raw(b, &v, 4); /* little-endian host, as the wire format */
}

void pb_packed_i64(pbuf *b, uint32_t field, const int64_t *v, size_t n) {
    pbuf tmp = {0};
    for (size_t i = 0; i < n; i++) raw_varint(&tmp, (uint64_t)v[i]);
    pb_msg(b, field, &tmp);
    pb_free(&tmp);
}
