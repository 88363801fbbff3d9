/* onnx-genai pull REPO[/SUBFOLDER] [--revision R]: a package from the Hugging Face hub
 * into the cache huggingface_hub shares (src/hub). The snapshot folder goes to stdout, so
 * that `onnx-genai generate -m "$(onnx-genai pull ...)"` works as well as -m REPO. */
#include "cli/cli.h"

#include "hub/hub.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static const char pull_usage[] =
    "usage: onnx-genai pull ORG/NAME[/SUBFOLDER] [--revision REV]\n"
    "\n"
    "Downloads the repository's files (only those under SUBFOLDER when given, or the one\n"
    "file it names, e.g. a .gguf for `convert`) into the Hugging Face cache, as\n"
    "huggingface_hub does, and prints the snapshot folder (or file). A second\n"
    "pull downloads nothing; a cut download resumes; LFS files are checked against their\n"
    "sha256. generate, run, serve, bench and parity take -m ORG/NAME[/SUBFOLDER] for it.\n"
    "\n"
    "  --revision REV   a branch, tag or commit (default main)\n"
    "\n"
    "environment (as huggingface_hub reads it):\n"
    "  HF_ENDPOINT      the hub (default https://huggingface.co)\n"
    "  HF_HOME          default ~/.cache/huggingface; the cache is $HF_HOME/hub\n"
    "  HF_HUB_CACHE     the cache folder itself\n"
    "  HF_TOKEN         an access token for gated or private repositories (else the\n"
    "                   $HF_HOME/token that `hf auth login` saves)\n"
    "  HF_HUB_OFFLINE=1 no network: only what the cache holds\n";

int cli_pull(int argc, char **argv) {
    const char *spec = NULL, *revision = NULL;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            fputs(pull_usage, stdout);
            return 0;
        } else if (!strcmp(a, "--revision")) {
            if (i + 1 >= argc) return cli_fail("pull: --revision needs a value");
            revision = argv[++i];
        } else if (a[0] != '-' && !spec) {
            spec = a;
        } else {
            return cli_fail("pull: unknown argument '%s' (see 'onnx-genai pull --help')", a);
        }
    }
    if (!spec) return cli_fail("pull: no repository given (see 'onnx-genai pull --help')");
    hub_env env;
    hub_ref ref = {0};
    char *dir = NULL;
    hub_pull_stats stats;
    og_status *st = hub_env_read(&env);
    if (!st) st = hub_ref_parse(spec, &ref);
    if (!st) st = hub_pull(&env, &ref, revision, &dir, &stats);
    int rc = 0;
    if (st) {
        rc = cli_fail("pull: %s", og_status_message(st));
    } else {
        if (!env.offline)
            fprintf(stderr, "%s: %d file%s, %d downloaded (%.1f MB)\n", spec, stats.files,
                    stats.files == 1 ? "" : "s", stats.downloaded, (double)stats.bytes / 1e6);
        size_t n = strlen(dir) + 32;
        char *cfg = malloc(n);
        struct stat sb;
        if (cfg) snprintf(cfg, n, "%s/genai_config.json", dir);
        if (cfg && stat(dir, &sb) == 0 && S_ISDIR(sb.st_mode) && stat(cfg, &sb) != 0)
            fprintf(stderr, "note: %s has no genai_config.json: not a package generate can run\n",
                    spec);
        free(cfg);
        printf("%s\n", dir);
    }
    og_status_free(st);
    free(dir);
    hub_ref_free(&ref);
    hub_env_free(&env);
    return rc;
}
