/* onnx-genai convert FILE.gguf OUT_DIR: a llama.cpp model file becomes a package. */
#include "cli/cli.h"

#include "convert/convert.h"

#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static const char help[] =
    "usage: onnx-genai convert FILE.gguf OUT_DIR [--context N] [--quiet]\n"
    "\n"
    "Writes OUT_DIR/model.onnx (+ model.onnx.data), genai_config.json, tokenizer.json and\n"
    "tokenizer_config.json (with the file's chat template) in onnxruntime-genai's model\n"
    "builder layout. Architectures: llama (Llama, Mistral), qwen2, qwen3, qwen3moe (its\n"
    "experts as com.microsoft MoE, or QMoE for Q4_0; model type qwen3), phi3 (not its\n"
    "LongRoPE), gemma2, gemma3 (text). Weights are not re-quantised: Q4_0, Q5_0, Q8_0,\n"
    "Q3_K and Q6_K become MatMulNBits (4 or 8 bits, the file's blocks and scales:\n"
    "llama.cpp's values exactly); Q4_1 and Q4_K 4-bit, Q2_K 2-bit MatMulNBits with float\n"
    "zero points (-offset/scale: one rounding from the file's values); Q5_1, Q5_K, F32,\n"
    "F16 and BF16 float32 MatMul (onnxruntime runs no 8-bit MatMulNBits with float zero\n"
    "points). The IQ types are refused, naming the tensor.\n"
    "\n"
    "  --context N   the package's context length (rotary caches, max_length); default:\n"
    "                the file's\n"
    "  --quiet       no progress line\n";

int cli_convert(int argc, char **argv) {
    const char *pos[2] = {NULL, NULL};
    int n_pos = 0, context = 0;
    bool quiet = false;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            fputs(help, stdout);
            return 0;
        } else if (!strcmp(argv[i], "--quiet")) {
            quiet = true;
        } else if (!strcmp(argv[i], "--context")) {
            if (i + 1 >= argc) return cli_fail("convert: --context needs a value");
            int rc = cli_int_option("--context", argv[++i], 1, 1 << 22, &context);
            if (rc) return rc;
        } else if (argv[i][0] == '-' && argv[i][1]) {
            return cli_fail("convert: unknown option '%s' (see convert --help)", argv[i]);
        } else if (n_pos < 2) {
            pos[n_pos++] = argv[i];
        } else {
            return cli_fail("convert: one FILE.gguf and one OUT_DIR (see convert --help)");
        }
    }
    if (n_pos != 2) {
        fputs(help, stderr);
        return 2;
    }
    convert_options opt = {.context = context, .progress = !quiet && isatty(2)};
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    og_status *st = convert_gguf(pos[0], pos[1], &opt);
    if (st) {
        int rc = cli_fail("convert: %s", og_status_message(st));
        og_status_free(st);
        return rc;
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    if (!quiet)
        fprintf(stderr, "converted %s into %s in %.2f s\n", pos[0], pos[1],
                (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) * 1e-9);
    return 0;
}
