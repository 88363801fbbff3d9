/* onnx-genai serve -m DIR [--host 127.0.0.1] [--port 8080] [options]: the OpenAI-compatible
 * HTTP server (src/serve) over the serving engine (src/engine). */
#include "cli/cli.h"

#include "serve/serve.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static const char serve_usage[] =
    "usage: onnx-genai serve [-m] DIR [options]\n"
    "       onnx-genai serve --models-dir DIR [--models-memory SIZE] [options]\n"
    "  --models-dir DIR      serve every package folder in DIR under its folder name (the\n"
    "                        request's \"model\"), each loaded on its first request\n"
    "  --models-memory SIZE  unload the least recently used idle models while the loaded\n"
    "                        ones take more than SIZE (e.g. 4G; default: no limit)\n"
    "  --host ADDR           address or host name to listen on (default 127.0.0.1)\n"
    "  --port N              port (default 8080; 0: any free port, printed)\n"
    "  --model-name NAME     the model's id in the API (default: the folder's name)\n"
    "  --kv-memory SIZE      bytes for the paged KV pool, e.g. 512M, 2G (default: enough\n"
    "                        for --max-batch full contexts, at most a quarter of memory);\n"
    "                        per sequence: what the running generators may hold\n"
    "  --plan-memory SIZE    bytes of execution plans each session keeps between steps\n"
    "                        (default 64M; 0: none)\n"
    "  --block-size N        positions per KV block (16)\n"
    "  --max-batch N         sequences running at once (32)\n"
    "  --max-queue N         requests waiting to start; more are answered 429 (256)\n"
    "  --step-tokens N       tokens per engine step, decode and prefill together (256)\n"
    "  --threads N           compute threads (default: all cores)\n"
    "  --no-prefix-cache     do not reuse cached prompt blocks\n"
    "  --per-sequence        one generator per sequence instead of one shared batch\n"
    "  --speculative ngram   speculative decoding by prompt lookup for every request (the\n"
    "                        answers are unchanged; --ngram N, --draft-tokens K,\n"
    "                        --ngram-chained, --draft-fixed as for generate): each step\n"
    "                        verifies the drafts of its sequences beside the others' rows\n"
    "  --speculative draft --draft-model DIR  the same with drafts from a package with the\n"
    "                        same tokenizer (each sequence's own generator of it; -m only)\n"
    "  --speculative mtp     drafts from the package's MTP head (each sequence's own\n"
    "                        generator of it, fed the rows the batched steps return)\n"
    "  --max-body SIZE       larger request bodies are answered 413, on their Content-Length\n"
    "                        before any of the body is read (8M)\n"
    "  --max-n N             largest n a request may ask for (16)\n"
    "  --max-connections N   requests at once: connections in a handler, one thread each;\n"
    "                        more are answered 503 (512)\n"
    "  --max-per-address N   open connections from one client address (an IPv6 client: its\n"
    "                        /64); more are answered 503 (256)\n"
    "  --read-timeout SECS   a request's header must arrive whole within SECS of the\n"
    "                        connection (else 408) or of the previous answer on a kept-alive\n"
    "                        one (else it is closed), its body with no pause longer (10)\n"
    "  --api-key KEY         every route but /health needs 'Authorization: Bearer KEY'\n"
    "                        or 'x-api-key: KEY' (else 401); the key is visible to other\n"
    "                        users in the process list: prefer --api-key-file\n"
    "  --api-key-file FILE   the same, the key being FILE's first line\n"
    "  --cors-origin ORIGIN  let pages from ORIGIN (e.g. https://app.example.com) call the\n"
    "                        server: preflights answered, Access-Control-Allow-Origin sent;\n"
    "                        without it browsers keep other origins' pages out\n"
    "  --template-file FILE  a chat template file instead of the package's (with -m)\n"
    "  --adapter NAME=FILE   a LoRA adapter (.onnx_adapter) over the model (with -m; repeat\n"
    "                        for more): a request's model \"MODEL:NAME\" uses it; each step\n"
    "                        batches the requests of one adapter, the adapters taking turns\n"
    "  --drain-timeout SECS  on SIGTERM, new generation requests get 503 (and\n"
    "                        /health/ready fails) while those being answered get this long\n"
    "                        to finish (30; 0: stop at once); a second signal stops at once\n"
    "  --log-format FMT      a line per request on stderr (time, client, method, path,\n"
    "                        status, model, prompt and completion tokens, time to the\n"
    "                        first token, duration): text, json (one object a line) or\n"
    "                        none (the default)\n"
    "  --slot-save-path DIR  POST /slots/{id}?action=save|restore|erase (llama-server's)\n"
    "                        save a slot's cached prefix (KV, a hybrid's state) to a file\n"
    "                        in DIR and restore it into the prefix cache (without: 501)\n"
    "  --pooling MODE        /v1/embeddings: one vector of an input's hidden states by\n"
    "                        last (the last token's), mean or cls (the first token's);\n"
    "                        default: the package's sentence-transformers files\n"
    "                        (modules.json, 1_Pooling/config.json), else last\n"
    "  --embeddings-normalize yes|no  unit-length vectors (default: yes when the package's\n"
    "                        modules.json has a Normalize module or there is none)\n"
    "  --matryoshka          a request's \"dimensions\" may cut the vectors (a model trained\n"
    "                        for it); otherwise a width below the model's is refused\n";
/* after cli_backend_usage */
static const char serve_usage_tail[] =
    "The engine batches over its paged KV cache on the native backend; a model on\n"
    "onnxruntime is served per sequence.\n"
    "Routes: POST /v1/chat/completions, POST /v1/completions, GET /v1/models, GET /health,\n"
    "GET /metrics, POST /tokenize, POST /detokenize, POST /v1/messages (Anthropic's\n"
    "Messages API), POST /v1/responses (OpenAI's Responses API), GET /props and GET /slots\n"
    "(llama-server's; POST /slots/{id}?action=save|restore|erase with --slot-save-path),\n"
    "POST /v1/embeddings, and a chat page at /. POST bodies\n"
    "are JSON (Content-Type: application/json, else 415) in UTF-8 (else 400).\n"
    "Listening on an address other than loopback without an API key prints a warning.\n"
    "SIGINT stops the server; SIGTERM drains it first (--drain-timeout). GET /health/live\n"
    "answers while it runs, GET /health/ready only while it is loaded and not draining.\n";

/* A whole number in [lo, hi], with an optional K/M/G suffix (powers of 1024) when sized. */
static int number(const char *flag, const char *v, long long lo, long long hi, bool sized,
                  long long *out) {
    char *end;
    errno = 0;
    long long x = strtoll(v, &end, 10);
    long long mul = 1;
    if (sized && *end && !end[1]) {
        switch (*end) {
        case 'K': case 'k': mul = 1LL << 10; end++; break;
        case 'M': case 'm': mul = 1LL << 20; end++; break;
        case 'G': case 'g': mul = 1LL << 30; end++; break;
        default: break;
        }
    }
    if (errno || end == v || *end)
        return cli_fail("serve: %s: '%s' is not a whole number%s", flag, v, sized ? " (with an optional K, M or G)" : "");
    if (x > hi / mul || x * mul < lo || x * mul > hi)
        return cli_fail("serve: %s: %s is out of range [%lld, %lld]", flag, v, lo, hi);
    *out = x * mul;
    return 0;
}

/* The key in path's first line (white space around it dropped), malloc'd, or NULL after
 * saying why. */
static char *read_key(const char *path) {
    FILE *f = fopen(path, "r");
    if (!f) {
        cli_fail("serve: --api-key-file %s: %s", path, strerror(errno));
        return NULL;
    }
    char line[4096];
    bool got = fgets(line, sizeof line, f) != NULL;
    fclose(f);
    char *a = line, *z = got ? line + strlen(line) : line;
    while (a < z && strchr(" \t\r\n", *a)) a++;
    while (z > a && strchr(" \t\r\n", z[-1])) z--;
    if (z == a) {
        cli_fail("serve: --api-key-file %s: its first line holds no key", path);
        return NULL;
    }
    char *key = strndup(a, (size_t)(z - a));
    if (!key) cli_fail("serve: out of memory");
    return key;
}

/* A value that goes into an HTTP header as it is: printable, no white space. */
static int header_safe(const char *flag, const char *v) {
    if (!*v) return cli_fail("serve: %s: empty", flag);
    for (const char *p = v; *p; p++)
        if ((unsigned char)*p <= ' ' || (unsigned char)*p >= 0x7f)
            return cli_fail("serve: %s: the value holds a space or a character that is not "
                            "printable ASCII", flag);
    return 0;
}

/* --adapter NAME=FILE: NAME becomes part of a model id ("MODEL:NAME"), so it is plain. */
static int adapter_option(serve_options *o, const char *v) {
    const char *eq = strchr(v, '=');
    if (!eq || eq == v || !eq[1])
        return cli_fail("serve: --adapter takes NAME=FILE (a name for requests, an "
                        ".onnx_adapter file), not '%s'", v);
    for (const char *c = v; c < eq; c++)
        if (*c == ':' || *c == '"' || *c == '\\' || *c == '/' || (unsigned char)*c < 0x20)
            return cli_fail("serve: --adapter %s: the name may not hold ':', '/', quotes, "
                            "backslashes or control characters", v);
    for (int i = 0; i < o->n_adapters; i++)
        if (!strncmp(o->adapters[i], v, (size_t)(eq - v) + 1))
            return cli_fail("serve: --adapter %s: the name is given twice", v);
    if (o->n_adapters == SERVE_MAX_ADAPTERS)
        return cli_fail("serve: at most %d --adapter options", SERVE_MAX_ADAPTERS);
    o->adapters[o->n_adapters++] = v;
    return 0;
}

int cli_serve(int argc, char **argv) {
    serve_options o = serve_options_default();
    const char *key_file = NULL;
    cli_backend be;
    cli_backend_init(&be);
    cli_speculative spec;
    cli_speculative_init(&spec);
    for (int i = 1; i < argc; i++) {
        int took = cli_backend_arg(argc, argv, &i, &be);
        if (!took) took = cli_speculative_arg(argc, argv, &i, &spec);
        if (took) {
            if (took < 0) return -took;
            continue;
        }
        const char *a = argv[i];
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            printf("%s%s%s", serve_usage, cli_backend_usage, serve_usage_tail);
            return 0;
        }
        if (!strcmp(a, "--no-prefix-cache")) {
            o.eng.prefix_cache = false;
            continue;
        }
        if (!strcmp(a, "--per-sequence")) {
            o.eng.per_sequence = true;
            continue;
        }
        if (!strcmp(a, "--matryoshka")) {
            o.matryoshka = true;
            continue;
        }
        if (a[0] != '-') {
            if (o.model_dir) return cli_fail("serve: one model folder only ('%s' and '%s')", o.model_dir, a);
            o.model_dir = a;
            continue;
        }
        static const char *const valued[] = {"-m", "--model", "--host", "--port", "--model-name",
                                             "--models-dir", "--models-memory", "--kv-memory", "--plan-memory",
                                             "--block-size", "--max-batch", "--max-queue",
                                             "--step-tokens", "--threads", "--max-body", "--max-n",
                                             "--max-connections", "--max-per-address",
                                             "--read-timeout", "--api-key", "--api-key-file",
                                             "--cors-origin", "--template-file", "--drain-timeout",
                                             "--adapter", "--log-format", "--pooling", "--slot-save-path",
                                             "--embeddings-normalize", NULL};
        bool known = false;
        for (int k = 0; valued[k] && !known; k++) known = !strcmp(a, valued[k]);
        if (!known) return cli_fail("serve: unknown option '%s' (see serve --help)", a);
        if (i + 1 >= argc) return cli_fail("serve: %s needs a value (see serve --help)", a);
        const char *v = argv[++i];
        long long x = 0;
        int rc = 0;
        if (!strcmp(a, "-m") || !strcmp(a, "--model")) o.model_dir = v;
        else if (!strcmp(a, "--host")) o.host = v;
        else if (!strcmp(a, "--models-dir")) o.models_dir = v;
        else if (!strcmp(a, "--models-memory")) { if (!(rc = number(a, v, 1, 1LL << 50, true, &x))) o.models_memory = (size_t)x; }
        else if (!strcmp(a, "--model-name")) o.model_name = v;
        else if (!strcmp(a, "--port")) { if (!(rc = number(a, v, 0, 65535, false, &x))) o.port = (int)x; }
        else if (!strcmp(a, "--kv-memory")) { if (!(rc = number(a, v, 1, 1LL << 50, true, &x))) o.eng.kv_memory = (size_t)x; }
        else if (!strcmp(a, "--plan-memory")) { if (!(rc = number(a, v, 0, 1LL << 50, true, &x))) o.model.plan_memory = (size_t)x; }
        else if (!strcmp(a, "--block-size")) { if (!(rc = number(a, v, 1, 4096, false, &x))) o.eng.block_size = (int)x; }
        else if (!strcmp(a, "--max-batch")) { if (!(rc = number(a, v, 1, 4096, false, &x))) o.eng.max_batch = (int)x; }
        else if (!strcmp(a, "--max-queue")) { if (!(rc = number(a, v, 1, 1 << 20, false, &x))) o.eng.max_queue = (int)x; }
        else if (!strcmp(a, "--step-tokens")) { if (!(rc = number(a, v, 1, 1 << 20, false, &x))) o.eng.step_tokens = (int)x; }
        else if (!strcmp(a, "--threads")) { if (!(rc = number(a, v, 1, 4096, false, &x))) o.eng.threads = (int)x; }
        else if (!strcmp(a, "--max-body")) { if (!(rc = number(a, v, 1, 1LL << 40, true, &x))) o.max_body = (size_t)x; }
        else if (!strcmp(a, "--max-n")) { if (!(rc = number(a, v, 1, 128, false, &x))) o.max_n = (int)x; }
        else if (!strcmp(a, "--max-connections")) { if (!(rc = number(a, v, 1, 65536, false, &x))) o.max_connections = (int)x; }
        else if (!strcmp(a, "--max-per-address")) { if (!(rc = number(a, v, 1, 1 << 20, false, &x))) o.max_per_address = (int)x; }
        else if (!strcmp(a, "--read-timeout")) { if (!(rc = number(a, v, 1, 3600, false, &x))) o.read_timeout = (int)x; }
        else if (!strcmp(a, "--drain-timeout")) { if (!(rc = number(a, v, 0, 86400, false, &x))) o.drain_timeout = (int)x; }
        else if (!strcmp(a, "--api-key")) { if (!(rc = header_safe(a, v))) o.api_key = v; }
        else if (!strcmp(a, "--api-key-file")) key_file = v;
        else if (!strcmp(a, "--cors-origin")) { if (!(rc = header_safe(a, v))) o.cors_origin = v; }
        else if (!strcmp(a, "--template-file")) o.template_file = v;
        else if (!strcmp(a, "--slot-save-path")) {
            struct stat sp;
            if (stat(v, &sp) != 0 || !S_ISDIR(sp.st_mode))
                rc = cli_fail("serve: --slot-save-path: '%s' is not a folder", v);
            else
                o.slot_save_path = v;
        }
        else if (!strcmp(a, "--adapter")) rc = adapter_option(&o, v);
        else if (!strcmp(a, "--log-format")) {
            if (!strcmp(v, "text")) o.log_format = SERVE_LOG_TEXT;
            else if (!strcmp(v, "json")) o.log_format = SERVE_LOG_JSON;
            else if (!strcmp(v, "none")) o.log_format = SERVE_LOG_NONE;
            else rc = cli_fail("serve: --log-format takes text, json or none, not '%s'", v);
        } else if (!strcmp(a, "--pooling")) {
            if (!strcmp(v, "last")) o.pooling = SERVE_POOL_LAST;
            else if (!strcmp(v, "mean")) o.pooling = SERVE_POOL_MEAN;
            else if (!strcmp(v, "cls")) o.pooling = SERVE_POOL_CLS;
            else rc = cli_fail("serve: --pooling takes last, mean or cls, not '%s'", v);
        } else if (!strcmp(a, "--embeddings-normalize")) {
            if (!strcmp(v, "yes")) o.embed_normalize = 1;
            else if (!strcmp(v, "no")) o.embed_normalize = 0;
            else rc = cli_fail("serve: --embeddings-normalize takes yes or no, not '%s'", v);
        }
        if (rc) return rc;
    }
    if (key_file && o.api_key) return cli_fail("serve: give one of --api-key and --api-key-file");
    if (!o.model_dir == !o.models_dir)
        return cli_fail("serve: give one of -m DIR and --models-dir DIR (see serve --help)");
    if (o.models_dir && o.model_name) return cli_fail("serve: --model-name goes with -m (with --models-dir the folder names are the names)");
    if (o.models_dir && o.template_file) return cli_fail("serve: --template-file goes with -m (with --models-dir each package has its own)");
    if (o.models_dir && o.n_adapters) return cli_fail("serve: --adapter goes with -m (an adapter is made for one base model)");
    int rc = cli_backend_check(&be);
    if (rc) return rc;
    if (spec.method == CLI_SPEC_DRAFT && o.models_dir)
        return cli_fail("serve: --speculative draft goes with -m (a draft model shares one "
                        "model's tokenizer)");
    if (spec.method != CLI_SPEC_OFF) {
        o.eng.spec_mtp = spec.method == CLI_SPEC_MTP;
        o.eng.spec_ngram = spec.method == CLI_SPEC_NGRAM ? spec.ngram : 0;
        o.eng.spec_max_draft = spec.draft_tokens;
        o.eng.spec_chained = spec.chained;
        o.eng.spec_fixed = spec.fixed;
    }
    cli_backend_model(&be, &o.model);
    o.model.num_threads = o.eng.threads; /* the sessions' compute threads */
    char *key = NULL;
    if (key_file) {
        if (!(key = read_key(key_file))) return 1;
        if ((rc = header_safe("--api-key-file", key))) {
            free(key);
            return rc;
        }
        o.api_key = key;
    }
    og_status *dst = cli_speculative_open(&spec, &o.model); /* --speculative draft */
    if (dst) {
        rc = cli_fail("serve: %s", og_status_message(dst));
        og_status_free(dst);
        free(key);
        return rc;
    }
    o.eng.spec_draft_model = spec.draft;
    rc = serve_main(&o);
    free(key);
    cli_speculative_close(&spec);
    return rc;
}
