#include "onnx_genai.h"

#include <stdio.h>

int main(int argc, char **argv) {
    (void)argc;
    (void)argv;
    fprintf(stderr, "onnx-genai: not yet\n");
    return 2;
}
