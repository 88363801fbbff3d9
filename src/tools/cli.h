/* The onnx-genai command-line tool: one file per command. */
#ifndef OG_TOOLS_CLI_H
#define OG_TOOLS_CLI_H

int cli_show(int argc, char **argv);
int cli_infer(int argc, char **argv);
int cli_bench_load(int argc, char **argv);
int cli_bench(int argc, char **argv);
int cli_generate(int argc, char **argv);
int cli_template(int argc, char **argv);
int cli_run(int argc, char **argv);
/* generate --chat: one turn of `run` (cli_run.c). */
int cli_chat_generate(int argc, char **argv);
/* The chat template part of `show` for a package folder (cli_run.c). */
void cli_show_chat(const char *dir);

/* The whole of a file ('-': standard input), NUL-terminated, or NULL. Free with free(). */
char *cli_read_all(const char *path);

/* Prints "onnx-genai: <message>" to stderr; returns the exit status to use. */
int cli_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
