/* libFuzzer target: any byte string given as a GGUF file must parse or fail with a
 * message naming what is wrong, never crash, leak or read out of bounds; a file that
 * parses is then read as `convert` reads it (typed getters on every key, every string of
 * every array, every byte of every tensor's data). */
#include "convert/gguf.h"

#include <stddef.h>
#include <stdint.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    gguf_file g;
    og_status *st = gguf_parse(data, size, "fuzz.gguf", &g);
    if (st) {
        (void)og_status_message(st);
        og_status_free(st);
        return 0;
    }
    volatile uint64_t sink = 0;
    for (size_t i = 0; i < g.n_kv; i++) {
        const gguf_kv *kv = &g.kv[i];
        int64_t v;
        double f;
        const char *s;
        size_t len;
        og_status_free(gguf_get_i64_or(&g, kv->key, 0, &v));
        og_status_free(gguf_get_f64_or(&g, kv->key, 0, &f));
        st = gguf_get_str(&g, kv->key, &s, &len);
        if (!st && len) sink += (uint8_t)s[len - 1];
        og_status_free(st);
        if (kv->type != GGUF_ARRAY) continue;
        /* the checks convert makes before reading items, then the items themselves */
        uint32_t want = kv->elem_type == GGUF_STRING ? GGUF_STRING
                        : kv->elem_type == GGUF_F32 || kv->elem_type == GGUF_F64 ? GGUF_F32
                                                                                 : GGUF_I32;
        st = gguf_expect_array(kv, want, 0);
        if (st) {
            og_status_free(st);
            continue;
        }
        for (uint64_t j = 0; j < kv->n && j < 4096; j++) {
            if (want == GGUF_STRING) {
                gguf_arr_str(kv, j, &s, &len);
                if (len) sink += (uint8_t)s[len - 1];
            } else if (want == GGUF_F32) {
                sink += (uint64_t)(gguf_arr_f32(kv, j) != 0.0f);
            } else {
                sink += (uint64_t)gguf_arr_int(kv, j);
            }
        }
    }
    for (size_t i = 0; i < g.n_tensors; i++) {
        const gguf_tensor *t = &g.tensors[i];
        if (t->nbytes) sink += t->data[0] + t->data[t->nbytes - 1];
        (void)gguf_tensor_find(&g, t->name);
    }
    (void)sink;
    gguf_close(&g);
    return 0;
}
