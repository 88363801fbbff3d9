/* onnx-genai: command dispatch. Commands follow the names users know from Ollama-style
 * CLIs; `run` stays free for the interactive chat. */
#include "cli/cli.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static const char usage[] =
    "usage: onnx-genai COMMAND [ARGS]\n"
    "\n"
    "commands:\n"
    "  generate [-m] DIR [-p TEXT | --ids 1,2,3] [options]\n"
    "                                 generate text with a model package (see generate --help)\n"
    "  show FILE.onnx                 IR version, opsets, inputs/outputs, op histogram,\n"
    "                                 initializer bytes, external-data files\n"
    "  infer FILE.onnx --input NAME=PATH.pb ... [--output-dir DIR] [--threads N]\n"
    "        [--backend native|ort|auto] [--ort-lib PATH] [--ep cpu|cuda]\n"
    "                                 run one graph on TensorProto files; write each output\n"
    "                                 as DIR/<output name>.pb\n"
    "  bench [-m] DIR [-p 512] [-n 128] [-d 0] [-r 5] [--threads N] [--json]\n"
    "                                 generation speed: pp/tg tokens/s, TTFT, peak RSS, and\n"
    "                                 decode against a bandwidth roofline (see bench --help)\n"
    "  parity [-m] DIR [--ids 1,2,3] [--max-length N] [--json]\n"
    "                                 run a package on the native backend and on\n"
    "                                 onnxruntime side by side: first diverging token, max\n"
    "                                 logit difference per step, and in which output\n"
    "  bench-load FILE.onnx           load time and RSS growth of opening a model\n"
    "  run [-m] DIR [--system TEXT] [--stop TEXT] [--max-new-tokens N] [--verbose]\n"
    "                                 chat in the terminal with the model's chat template\n"
    "                                 (a turn per line of stdin when not a terminal)\n"
    "  template DIR|FILE --messages FILE.json [--tools FILE.json] [--add-generation-prompt]\n"
    "           [--extra JSON] [--bos TEXT --eos TEXT]\n"
    "                                 print a conversation rendered with the chat template\n"
    "  serve [-m] DIR [--host 127.0.0.1] [--port 8080] [options]\n"
    "                                 an OpenAI-compatible HTTP server with continuous\n"
    "                                 batching (see serve --help)\n"
    "  pull ORG/NAME[/SUBFOLDER][:TAG][@REV]\n"
    "                                 download a package from the Hugging Face hub into its\n"
    "                                 cache (HF_HOME; shared with huggingface_hub), or a\n"
    "                                 GGUF file (TAG: Q4_K_M...) converted once; then\n"
    "                                 -m ORG/NAME[...] names it (see pull --help)\n"
    "  convert FILE.gguf OUT_DIR      a llama.cpp GGUF model (llama/mistral, qwen2/3,\n"
    "                                 qwen3moe, phi3, gemma2/3; F32/F16/BF16, Q4_0..Q8_0,\n"
    "                                 Q2_K..Q6_K)\n"
    "                                 into a package (see convert --help)\n"
    "  transcribe [-m] DIR FILE.wav [--language en] [--task transcribe|translate] [--ids]\n"
    "                                 a WAV through a Whisper package, greedy, by 30 s\n"
    "                                 windows (see transcribe --help)\n"
    "  help                           this text (--version: the version and git commit)\n"
    "\n"
    "generate, bench, run, infer and serve take --backend native|ort|auto (default auto:\n"
    "native when it has every op, else onnxruntime with a warning), --ort-lib PATH,\n"
    "--ep cpu|cuda and --ort-opt-level none|basic|extended|all.\n";

int cli_fail(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fputs("onnx-genai: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    return 1;
}

/* og_version.c, which the build writes (cmake/Version.cmake). */
extern const char og_cli_version[], og_cli_commit[];

int main(int argc, char **argv) {
    if (argc >= 2 && (!strcmp(argv[1], "--version") || !strcmp(argv[1], "version"))) {
        printf("onnx-genai %s", og_cli_version);
        if (og_cli_commit[0]) printf(" (git %s)", og_cli_commit);
        printf("\n");
        return 0;
    }
    if (argc < 2 || strcmp(argv[1], "help") == 0 || strcmp(argv[1], "--help") == 0 ||
        strcmp(argv[1], "-h") == 0) {
        fputs(usage, argc < 2 ? stderr : stdout);
        return argc < 2 ? 2 : 0;
    }
    /* -m ORG/NAME[/SUBFOLDER] becomes the cached snapshot folder, for every command. */
    if (cli_models_from_hub(&argc, &argv)) return 1;
    const char *cmd = argv[1];
    if (strcmp(cmd, "generate") == 0) return cli_generate(argc - 1, argv + 1);
    if (strcmp(cmd, "show") == 0) return cli_show(argc - 1, argv + 1);
    if (strcmp(cmd, "infer") == 0) return cli_infer(argc - 1, argv + 1);
    if (strcmp(cmd, "bench") == 0) return cli_bench(argc - 1, argv + 1);
    if (strcmp(cmd, "bench-load") == 0) return cli_bench_load(argc - 1, argv + 1);
    if (strcmp(cmd, "template") == 0) return cli_template(argc - 1, argv + 1);
    if (strcmp(cmd, "run") == 0) return cli_run(argc - 1, argv + 1);
    if (strcmp(cmd, "serve") == 0) return cli_serve(argc - 1, argv + 1);
    if (strcmp(cmd, "parity") == 0) return cli_parity(argc - 1, argv + 1);
    if (strcmp(cmd, "convert") == 0) return cli_convert(argc - 1, argv + 1);
    if (strcmp(cmd, "pull") == 0) return cli_pull(argc - 1, argv + 1);
    if (strcmp(cmd, "transcribe") == 0) return cli_transcribe(argc - 1, argv + 1);
    fprintf(stderr, "onnx-genai: unknown command '%s'\n%s", cmd, usage);
    return 2;
}
