/* The .onnx_adapter reader (src/genai/adapter_file.c) on a file onnxruntime wrote, and on
 * every truncation and every one-byte change of it: each either parses into parameters
 * that lie inside the buffer or fails with a message, never reads outside it (the
 * sanitizer build runs this too). */
#include "testing.h"

#include "genai/adapter_file.h"

#include <stdlib.h>
#include <string.h>

/* Written by onnxruntime 1.31's Python AdapterFormat: adapter_version 3, model_version 5,
 * parameters {"x.lora_A": float32 [2, 3] = 0..5, "b": float16 [1, 0]}. */
static const uint8_t ORT_ADAPTER[] __attribute__((aligned(16))) = {
    0x0c, 0x00, 0x00, 0x00, 0x54, 0x4f, 0x52, 0x54, 0x00, 0x00, 0x00, 0x00,
    0xac, 0xff, 0xff, 0xff, 0x01, 0x00, 0x00, 0x00, 0x03, 0x00, 0x00, 0x00,
    0x05, 0x00, 0x00, 0x00, 0x04, 0x00, 0x00, 0x00, 0x02, 0x00, 0x00, 0x00,
    0x48, 0x00, 0x00, 0x00, 0x04, 0x00, 0x00, 0x00, 0xcc, 0xff, 0xff, 0xff,
    0x28, 0x00, 0x00, 0x00, 0x10, 0x00, 0x00, 0x00, 0x0a, 0x00, 0x00, 0x00,
    0x04, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x02, 0x00, 0x00, 0x00,
    0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x62, 0x00, 0x00, 0x00,
    0x0c, 0x00, 0x14, 0x00, 0x04, 0x00, 0x08, 0x00, 0x0c, 0x00, 0x10, 0x00,
    0x0c, 0x00, 0x00, 0x00, 0x40, 0x00, 0x00, 0x00, 0x28, 0x00, 0x00, 0x00,
    0x01, 0x00, 0x00, 0x00, 0x04, 0x00, 0x00, 0x00, 0x18, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x80, 0x3f, 0x00, 0x00, 0x00, 0x40,
    0x00, 0x00, 0x40, 0x40, 0x00, 0x00, 0x80, 0x40, 0x00, 0x00, 0xa0, 0x40,
    0x02, 0x00, 0x00, 0x00, 0x02, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x03, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x08, 0x00, 0x00, 0x00,
    0x78, 0x2e, 0x6c, 0x6f, 0x72, 0x61, 0x5f, 0x41, 0x00, 0x00, 0x00, 0x00,
};

static int find(const gen_adapter_file *a, const char *name) {
    for (int i = 0; i < a->n_params; i++)
        if (!strcmp(a->names[i], name)) return i;
    return -1;
}

TEST(adapter_file_reads_onnxruntime_output) {
    gen_adapter_file a;
    CHECK_OK(gen_adapter_parse(ORT_ADAPTER, sizeof ORT_ADAPTER, "t.onnx_adapter", &a));
    CHECK_EQ_INT(a.format_version, 1);
    CHECK_EQ_INT(a.adapter_version, 3);
    CHECK_EQ_INT(a.model_version, 5);
    CHECK_EQ_INT(a.n_params, 2);
    int x = find(&a, "x.lora_A"), b = find(&a, "b");
    CHECK(x >= 0 && b >= 0);
    const og_tensor *t = &a.params[x];
    CHECK(t->dtype == OG_FLOAT32 && t->rank == 2 && t->dims[0] == 2 && t->dims[1] == 3);
    for (int i = 0; i < 6; i++) CHECK_NEAR(((const float *)t->data)[i], i, 0);
    t = &a.params[b];
    CHECK(t->dtype == OG_FLOAT16 && t->rank == 2 && t->dims[0] == 1 && t->dims[1] == 0);
    CHECK_EQ_INT(t->nbytes, 0);
    gen_adapter_file_free(&a);
}

TEST(adapter_file_refuses_damage) {
    gen_adapter_file a;
    size_t n = sizeof ORT_ADAPTER;
    uint8_t *buf = aligned_alloc(16, 256);
    CHECK(buf);
    memcpy(buf, ORT_ADAPTER, n);
    memcpy(buf + 4, "XORT", 4);
    CHECK_ERR(gen_adapter_parse(buf, n, "id.onnx_adapter", &a), OG_ERR_INVALID_MODEL,
              "id.onnx_adapter: not an onnxruntime adapter file");
    memcpy(buf, ORT_ADAPTER, n);
    buf[16] = 2; /* format_version */
    CHECK_ERR(gen_adapter_parse(buf, n, "v.onnx_adapter", &a), OG_ERR_UNSUPPORTED,
              "adapter format version 2");
    memcpy(buf, ORT_ADAPTER, n);
    buf[0x38] = 0x08; /* "b"'s data_type: 8 (string) is no parameter type */
    CHECK_ERR(gen_adapter_parse(buf, n, "s.onnx_adapter", &a), OG_ERR_UNSUPPORTED,
              "parameter 'b': data type 8");
    memcpy(buf, ORT_ADAPTER, n);
    buf[0xa0] = 0x03; /* x.lora_A's dims [2, 3] -> [3, 3]: 36 bytes expected, 24 held */
    CHECK_ERR(gen_adapter_parse(buf, n, "d.onnx_adapter", &a), OG_ERR_INVALID_MODEL,
              "parameter 'x.lora_A' (float32 [3,3]) holds 24 bytes of data, 36 expected");
    /* every truncation into the data fails (the file's last 3 bytes pad after the last
     * string's NUL); every one-byte change parses or fails, inside the buffer */
    for (size_t len = 0; len < n - 3; len++) {
        uint8_t *cut = malloc(len ? len : 1); /* exactly len bytes: ASan sees overreads */
        CHECK(cut);
        memcpy(cut, ORT_ADAPTER, len);
        og_status *st = gen_adapter_parse(cut, len, "cut", &a);
        free(cut);
        if (!st) {
            gen_adapter_file_free(&a);
            test_fail(__FILE__, __LINE__, "a file cut to %zu of %zu bytes parsed", len, n);
            free(buf);
            return;
        }
        og_status_free(st);
    }
    for (size_t i = 0; i < n; i++)
        for (int v = 0; v < 256; v += 51) {
            memcpy(buf, ORT_ADAPTER, n);
            buf[i] = (uint8_t)(buf[i] ^ (v | 1));
            og_status *st = gen_adapter_parse(buf, n, "flip", &a);
            if (st) {
                og_status_free(st);
                continue;
            }
            for (int k = 0; k < a.n_params; k++) {
                const uint8_t *d = a.params[k].data;
                bool inside = a.params[k].nbytes == 0 || a.params[k].owns_data ||
                              (d >= buf && d + a.params[k].nbytes <= buf + n);
                if (!inside) {
                    test_fail(__FILE__, __LINE__, "byte %zu changed: parameter '%s' lies outside "
                              "the file", i, a.names[k]);
                    gen_adapter_file_free(&a);
                    free(buf);
                    return;
                }
            }
            gen_adapter_file_free(&a);
        }
    free(buf);
}
