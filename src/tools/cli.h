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
int cli_serve(int argc, char **argv);
/* generate --chat: one turn of `run` (cli_run.c). */
int cli_chat_generate(int argc, char **argv);
/* The chat template part of `show` for a package folder (cli_run.c). */
void cli_show_chat(const char *dir);

/* What kernels prepared when sessions opened (cli_prep.c). */
#include <stddef.h>
typedef struct og_session og_session;
typedef struct og_model og_model;
typedef struct cli_prep {
    size_t bytes;    /* held by prepared states */
    size_t released; /* mapped weight pages given back (a prepared copy replaced them) */
    int nodes;
    double secs;     /* spent preparing (wall) */
    double cpu_secs; /* CPU time of all threads meanwhile */
} cli_prep;
void cli_prep_add(const og_session *s, cli_prep *acc);
void cli_prep_of_model(const og_model *m, cli_prep *out);
/* The instruction set the GEMM kernels use, and why when OG_ISA changed it. */
const char *cli_isa_summary(char *buf, size_t size);
/* Resident memory now, in bytes (0 when /proc is not there). */
size_t cli_rss_now(void);
/* The most this process has had resident since it started or exec'd (VmHWM, per address
 * space; getrusage's ru_maxrss survives exec, so under a launcher it reports the parent's
 * size). 0 when /proc is not there. */
size_t cli_rss_peak(void);

/* The whole of a file ('-': standard input), NUL-terminated, or NULL. Free with free(). */
char *cli_read_all(const char *path);

/* Prints "onnx-genai: <message>" to stderr; returns the exit status to use. */
int cli_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
