/* `onnx-genai convert`: a GGUF file (llama.cpp's format) becomes an onnxruntime-genai
 * package in the model builder's layout: model.onnx + model.onnx.data, genai_config.json,
 * tokenizer.json and tokenizer_config.json (with the chat template). */
#ifndef OG_CONVERT_CONVERT_H
#define OG_CONVERT_CONVERT_H

#include "base/status.h"

#include <stdbool.h>
#include <stdint.h>

/* The converter's output format: raised whenever what convert writes for a given GGUF file
 * changes (a fix, another layout), so that packages converted before and kept in a cache
 * (`pull`) are converted again rather than reused. */
enum { CONVERT_FORMAT = 1 };

typedef struct convert_options {
    int64_t context; /* 0: the file's context length; else the package's (rotary caches) */
    bool progress;   /* a progress line on stderr */
} convert_options;

og_status *convert_gguf(const char *gguf_path, const char *out_dir, const convert_options *opt);

#endif
