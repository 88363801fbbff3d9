/* A stand-in for an onnxruntime library older than our C API header: it exports
 * OrtGetApiBase, as every onnxruntime does, whose GetApi knows no API version above 2
 * (onnxruntime 1.2), so the version our header asks for gets NULL, as a real old
 * library answers. Built as a loadable module for tests/backends only. */
#include <stddef.h>
#include <stdint.h>

/* The two members of onnxruntime's OrtApiBase, in its order (the C API's stable part). */
typedef struct stub_api_base {
    const void *(*get_api)(uint32_t version);
    const char *(*get_version_string)(void);
} stub_api_base;

static const char stub_table[64]; /* what a version this old would hand out */

static const void *stub_get_api(uint32_t version) { return version <= 2 ? stub_table : NULL; }
static const char *stub_version(void) { return "1.2.0"; }

static const stub_api_base stub_base = {stub_get_api, stub_version};

const stub_api_base *OrtGetApiBase(void);
const stub_api_base *OrtGetApiBase(void) { return &stub_base; }
