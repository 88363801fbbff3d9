/* onnx-genai pull REPO[/SUBFOLDER][:TAG][@REV] [--revision R]: a package from the Hugging
 * Face hub into the cache huggingface_hub shares (src/hub); a GGUF repository's file is
 * converted into a package beside it (cli_gguf.c). The package folder goes to stdout, so
 * that `onnx-genai generate -m "$(onnx-genai pull ...)"` works as well as -m REPO. */
#include "cli/cli.h"

#include "base/status.h"
#include "hub/hub.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static const char pull_usage[] =
    "usage: onnx-genai pull ORG/NAME[/SUBFOLDER][:TAG][@REV] [--revision REV] [--file F]\n"
    "                       [--no-convert] [--quiet]\n"
    "\n"
    "Downloads the repository's files (only those under SUBFOLDER when given, or the one\n"
    "file it names) into the Hugging Face cache, as huggingface_hub does, and prints the\n"
    "snapshot folder (or file). A second pull downloads nothing; a cut download resumes;\n"
    "LFS files are checked against their sha256. generate, run, serve, bench and parity\n"
    "take -m ORG/NAME[/SUBFOLDER][:TAG][@REV] for it.\n"
    "\n"
    "A GGUF repository (GGUF files, no genai_config.json): only one file is downloaded,\n"
    "the one TAG names (ORG/NAME:Q4_K_M, as Ollama and llama.cpp take it: the tag is a\n"
    "whole part of the file name, any case), or --file, or the only one; it is then\n"
    "converted (see convert --help) into\n"
    "$HF_HUB_CACHE/models--ORG--NAME/onnx-genai/SHA256 (the file's sha256), printed. The\n"
    "next pull or -m ORG/NAME[:TAG] reuses that package: nothing is converted again.\n"
    "\n"
    "  --revision REV   a branch, tag or commit (default main; same as @REV)\n"
    "  --file F         the repository's file F (same as ORG/NAME/F)\n"
    "  --no-convert     a GGUF file is downloaded only; its path is printed\n"
    "  --quiet          no lines about the conversion\n"
    "\n"
    "environment (as huggingface_hub reads it):\n"
    "  HF_ENDPOINT      the hub (default https://huggingface.co)\n"
    "  HF_HOME          default ~/.cache/huggingface; the cache is $HF_HOME/hub\n"
    "  HF_HUB_CACHE     the cache folder itself\n"
    "  HF_TOKEN         an access token for gated or private repositories (else the\n"
    "                   $HF_HOME/token that `hf auth login` saves)\n"
    "  HF_HUB_OFFLINE=1 no network: only what the cache holds\n";

int cli_pull(int argc, char **argv) {
    const char *spec = NULL, *revision = NULL, *file = NULL;
    bool convert = true, quiet = false;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            fputs(pull_usage, stdout);
            return 0;
        } else if (!strcmp(a, "--revision")) {
            if (i + 1 >= argc) return cli_fail("pull: --revision needs a value");
            revision = argv[++i];
        } else if (!strcmp(a, "--file")) {
            if (i + 1 >= argc) return cli_fail("pull: --file needs a value");
            file = argv[++i];
        } else if (!strcmp(a, "--no-convert")) {
            convert = false;
        } else if (!strcmp(a, "--quiet")) {
            quiet = true;
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
    if (!st && revision && ref.revision && strcmp(revision, ref.revision))
        st = og_errorf(OG_ERR_INVALID_ARGUMENT, "%s: @%s and --revision %s differ", spec,
                       ref.revision, revision);
    if (!st && file) {
        if (ref.subfolder[0])
            st = og_errorf(OG_ERR_INVALID_ARGUMENT, "%s: --file with a SUBFOLDER: give one", spec);
        else if (!(free(ref.subfolder), ref.subfolder = strdup(file)))
            st = og_oom();
    }
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
        if (convert && hub_is_gguf(dir)) {
            char *repo_dir = hub_repo_dir(&env, ref.repo);
            char *pkg = repo_dir ? cli_gguf_package(repo_dir, dir, quiet) : NULL;
            free(repo_dir);
            free(dir);
            dir = pkg;
            if (!pkg) rc = 1;
        }
        if (dir) printf("%s\n", dir);
    }
    og_status_free(st);
    free(dir);
    hub_ref_free(&ref);
    hub_env_free(&env);
    return rc;
}
