/* onnx-genai template DIR|FILE --messages FILE.json [--tools FILE.json]
 *                    [--add-generation-prompt] [--extra JSON] [--bos TEXT] [--eos TEXT]
 *                    [--name NAME] [--documents FILE.json]
 *
 * Prints the rendered prompt exactly (no newline added), for scripts and for checking a
 * template against transformers. An error prints one line and exits 1. */
#include "cli/cli.h"

#include "onnx_genai.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char template_usage[] =
    "usage: onnx-genai template DIR|FILE --messages FILE.json [options]\n"
    "  DIR                        a package folder (chat_template.jinja, tokenizer_config.json)\n"
    "  FILE                       a template file (.jinja) or a tokenizer_config.json\n"
    "  --messages FILE.json       the conversation: a JSON array of messages ('-': stdin)\n"
    "  --tools FILE.json          tool schemas: a JSON array\n"
    "  --documents FILE.json      documents: a JSON array\n"
    "  --add-generation-prompt    end with the assistant's turn header\n"
    "  --extra JSON               more template variables, e.g. '{\"enable_thinking\": false}'\n"
    "  --bos TEXT, --eos TEXT     bos_token / eos_token (override tokenizer_config.json)\n"
    "  --name NAME                which of the package's named templates (default, tool_use)\n";

/* The whole of a file ('-': standard input), NUL-terminated; NULL with errno on failure. */
char *cli_read_all(const char *path) {
    FILE *f = strcmp(path, "-") ? fopen(path, "rb") : stdin;
    if (!f) return NULL;
    size_t cap = 4096, n = 0;
    char *buf = malloc(cap);
    while (buf) {
        size_t got = fread(buf + n, 1, cap - n - 1, f);
        n += got;
        if (got == 0) break;
        if (cap - n < 2) {
            char *b = realloc(buf, cap *= 2);
            if (!b) free(buf);
            buf = b;
        }
    }
    if (buf) buf[n] = 0;
    if (f != stdin) fclose(f);
    return buf;
}

int cli_template(int argc, char **argv) {
    const char *path = NULL, *messages = NULL, *tools = NULL, *docs = NULL, *bos = NULL,
               *eos = NULL;
    og_chat_options o = og_chat_options_default();
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        bool has = i + 1 < argc;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            fputs(template_usage, stdout);
            return 0;
        } else if (!strcmp(a, "--add-generation-prompt")) {
            o.add_generation_prompt = 1;
        } else if (!strcmp(a, "--messages") || !strcmp(a, "--tools") || !strcmp(a, "--documents") ||
                   !strcmp(a, "--extra") || !strcmp(a, "--bos") || !strcmp(a, "--eos") ||
                   !strcmp(a, "--name")) {
            if (!has) return cli_fail("%s needs a value (see 'onnx-genai template --help')", a);
            const char *v = argv[++i];
            if (!strcmp(a, "--messages")) messages = v;
            else if (!strcmp(a, "--tools")) tools = v;
            else if (!strcmp(a, "--documents")) docs = v;
            else if (!strcmp(a, "--extra")) o.extra_json = v;
            else if (!strcmp(a, "--bos")) bos = v;
            else if (!strcmp(a, "--eos")) eos = v;
            else o.template_name = v;
        } else if (a[0] != '-' && !path) {
            path = a;
        } else {
            return cli_fail("template: unknown argument '%s' (see 'onnx-genai template --help')", a);
        }
    }
    if (!path) return cli_fail("template: no template or package given (see 'onnx-genai template --help')");
    if (!messages) return cli_fail("template: --messages FILE.json is required");
    og_chat_template *ct = NULL;
    char *msgs = NULL, *tools_text = NULL, *docs_text = NULL, *out = NULL;
    og_status *st = NULL;
    int rc = 1;
    if (!(msgs = cli_read_all(messages))) {
        rc = cli_fail("%s: cannot read", messages);
        goto done;
    }
    if (tools && !(tools_text = cli_read_all(tools))) {
        rc = cli_fail("%s: cannot read", tools);
        goto done;
    }
    if (docs && !(docs_text = cli_read_all(docs))) {
        rc = cli_fail("%s: cannot read", docs);
        goto done;
    }
    o.tools_json = tools_text;
    o.documents_json = docs_text;
    if ((st = og_chat_template_open(path, &ct))) goto done;
    if (bos && (st = og_chat_template_set_token(ct, "bos_token", bos))) goto done;
    if (eos && (st = og_chat_template_set_token(ct, "eos_token", eos))) goto done;
    if ((st = og_chat_template_apply(ct, msgs, &o, &out))) goto done;
    fwrite(out, 1, strlen(out), stdout);
    rc = fflush(stdout) == 0 ? 0 : cli_fail("cannot write the output");
done:
    if (st) {
        rc = cli_fail("%s", og_status_message(st));
        og_status_free(st);
    }
    og_free(out);
    og_chat_template_free(ct);
    free(msgs);
    free(tools_text);
    free(docs_text);
    return rc;
}
