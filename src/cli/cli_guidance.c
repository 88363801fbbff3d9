/* --json-schema FILE, --json-object, --regex RE, --lark FILE: guidance (constrained
 * decoding) for generate and run, handed to og_generator_params_set_guidance. */
#include "cli/cli.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

const char cli_guidance_usage[] =
    "  --json-schema FILE         the output is JSON valid against the JSON Schema in FILE\n"
    "  --json-object              the output is a JSON object\n"
    "  --regex RE                 the output is a whole match of the regular expression RE\n"
    "  --lark FILE                the output is a string of the Lark grammar in FILE\n"
    "                             (one of these four; FILE '-' is standard input)\n";

int cli_guidance_arg(int argc, char **argv, int *i, cli_guidance *g) {
    static const struct {
        const char *flag, *type;
        bool file, value;
    } opts[] = {{"--json-schema", "json_schema", true, true},
                {"--json-object", "json_object", false, false},
                {"--regex", "regex", false, true},
                {"--lark", "lark_grammar", true, true}};
    const char *a = argv[*i];
    size_t k = 0;
    while (k < sizeof opts / sizeof opts[0] && strcmp(a, opts[k].flag)) k++;
    if (k == sizeof opts / sizeof opts[0]) return 0;
    if (g->type)
        return -cli_fail("%s: guidance is already given by %s (use one of --json-schema, "
                         "--json-object, --regex, --lark)", a, g->flag);
    if (opts[k].value && *i + 1 >= argc) return -cli_fail("%s needs a value", a);
    const char *v = opts[k].value ? argv[++*i] : NULL;
    if (opts[k].file) {
        g->data = cli_read_all(v);
        if (!g->data) return -cli_fail("%s: cannot read '%s': %s", a, v, strerror(errno));
    } else if (v && !(g->data = strdup(v))) {
        return -cli_fail("%s: out of memory", a);
    }
    g->type = opts[k].type;
    g->flag = opts[k].flag;
    return 1;
}

og_status *cli_guidance_set(const cli_guidance *g, og_generator_params *p) {
    return g->type ? og_generator_params_set_guidance(p, g->type, g->data) : NULL;
}

void cli_guidance_free(cli_guidance *g) {
    free(g->data);
    memset(g, 0, sizeof *g);
}
