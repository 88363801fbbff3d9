/* -m ORG/NAME[/SUBFOLDER][:TAG][@REV] for every command that opens a package (and the
 * folder given first without -m: `run ORG/NAME/FOLDER`, `show ORG/NAME/FOLDER`): the
 * value becomes the cached snapshot folder before the command parses its arguments, so
 * no command has its own copy of this. A repository not yet cached is pulled first (as
 * `ollama run` does), unless HF_HUB_OFFLINE is set; a cached one is used without asking
 * the hub (run `pull` to update it). A GGUF repository's file becomes the package
 * converted from it (cli_gguf.c). `--revision REV` anywhere on the line applies to every
 * repository without its own @REV and is taken out before the command sees it. A value
 * that exists on disk is always a folder, never a repository. */
#include "cli/cli.h"

#include "hub/hub.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The rewritten argv and the folders it points to live until exit; kept here so that
 * leak checkers see them reachable. */
static struct {
    char **argv;
    char *dirs[8];
    int n_dirs;
} kept;

static bool takes_model(const char *cmd) {
    static const char *const cmds[] = {"generate", "run", "serve", "bench", "parity", "show", NULL};
    for (int i = 0; cmds[i]; i++)
        if (!strcmp(cmd, cmds[i])) return true;
    return false;
}

/* The folder a command may also take first, without -m ("generate DIR", "show DIR"):
 * argv[2] when it is no option. show's FILE.onnx is a file, never a repository. */
static bool positional_model(const char *cmd, const char *arg) {
    size_t n = strlen(arg);
    if (arg[0] == '-') return false;
    return strcmp(cmd, "show") || n < 5 || strcmp(arg + n - 5, ".onnx");
}

/* The snapshot folder for spec: cached, or pulled now; for a GGUF repository the
 * package converted from its file. NULL after printing why not. */
static char *resolve(const char *spec, const char *revision) {
    hub_env env;
    hub_ref ref = {0};
    char *dir = NULL;
    og_status *st = hub_env_read(&env);
    if (!st) st = hub_ref_parse(spec, &ref);
    if (!st && ref.revision) revision = NULL; /* its own @REV wins */
    if (!st && !(dir = hub_cached_package(&env, &ref, revision))) {
        if (!env.offline)
            fprintf(stderr, "onnx-genai: %s is not in the cache (%s): pulling it from %s\n", spec,
                    env.cache, env.endpoint);
        hub_pull_stats stats;
        st = hub_pull(&env, &ref, revision, &dir, &stats);
    }
    if (st) cli_fail("-m %s: no such folder; as a hub repository: %s", spec, og_status_message(st));
    if (!st && hub_is_gguf(dir)) {
        char *repo_dir = hub_repo_dir(&env, ref.repo);
        char *pkg = repo_dir ? cli_gguf_package(repo_dir, dir, false) : NULL;
        free(repo_dir);
        free(dir);
        dir = pkg;
    }
    og_status_free(st);
    hub_ref_free(&ref);
    hub_env_free(&env);
    return dir;
}

/* Takes `--revision REV` out of the argument list (into *revision). Returns 0 or the exit
 * status after printing what is wrong. */
static int take_revision(int *argc, char ***argv, const char **revision) {
    for (int i = 2; i < *argc; i++) {
        if (strcmp((*argv)[i], "--revision")) continue;
        if (i + 1 >= *argc) return cli_fail("%s: --revision needs a value", (*argv)[1]);
        *revision = (*argv)[i + 1];
        kept.argv = calloc((size_t)*argc + 3, sizeof *kept.argv);
        if (!kept.argv) return cli_fail("out of memory");
        int k = 0;
        for (int j = 0; j < *argc; j++)
            if (j != i && j != i + 1) kept.argv[k++] = (*argv)[j];
        *argc = k;
        *argv = kept.argv;
        return 0;
    }
    return 0;
}

int cli_models_from_hub(int *argc, char ***argv) {
    const char *cmd = (*argv)[1];
    if (*argc < 3 || !takes_model(cmd)) return 0;
    const char *revision = NULL;
    int rc = take_revision(argc, argv, &revision);
    if (rc) return rc;
    const char *repo_for_name = NULL;
    bool named = false;
    for (int i = 1; i + 1 < *argc; i++) {
        const char *a = (*argv)[i];
        if (!strcmp(a, "--model-name") || !strcmp(a, "--models-dir")) named = true;
        /* i == 1: the command itself, whose next argument may be the folder. */
        bool model_flag = i > 1 && (!strcmp(a, "-m") || !strcmp(a, "--model"));
        const char *v = (*argv)[i + 1];
        if (!(model_flag || (i == 1 && positional_model(cmd, v))) || !hub_looks_like_repo(v))
            continue;
        if (kept.n_dirs == 8) return cli_fail("%s: at most 8 -m repositories", cmd);
        char *dir = resolve(v, revision);
        if (!dir) return 1;
        if (!kept.argv) {
            /* Room for serve's --model-name NAME. */
            kept.argv = calloc((size_t)*argc + 3, sizeof *kept.argv);
            if (!kept.argv) return cli_fail("out of memory");
            memcpy(kept.argv, *argv, (size_t)*argc * sizeof *kept.argv);
            *argv = kept.argv;
        }
        kept.dirs[kept.n_dirs++] = dir;
        if (!repo_for_name) repo_for_name = v;
        kept.argv[i + 1] = dir;
    }
    if (revision && !kept.n_dirs)
        return cli_fail("%s: --revision %s needs a hub repository (-m ORG/NAME)", cmd, revision);
    /* The server answers to the repository's name, not to a commit hash's folder. */
    if (!strcmp(cmd, "serve") && repo_for_name && !named) {
        kept.argv[(*argc)++] = "--model-name";
        kept.argv[(*argc)++] = (char *)repo_for_name;
        kept.argv[*argc] = NULL;
    }
    return 0;
}
