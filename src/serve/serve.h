/* onnx-genai serve: an OpenAI-compatible HTTP server over the serving engine
 * (engine/engine.h). The CLI parses options into serve_options and calls serve_main. */
#ifndef OG_SERVE_SERVE_H
#define OG_SERVE_SERVE_H

#include "engine/engine.h"

#include <stdbool.h>
#include <stddef.h>

enum { SERVE_MAX_ADAPTERS = 32 };

/* --log-format: a line per request on stderr, or none */
enum { SERVE_LOG_NONE = 0, SERVE_LOG_TEXT, SERVE_LOG_JSON };

/* --pooling: how /v1/embeddings makes one vector of an input's hidden states */
enum { SERVE_POOL_UNSET = 0, SERVE_POOL_LAST, SERVE_POOL_MEAN, SERVE_POOL_CLS };

typedef struct serve_options {
    const char *model_dir;  /* the package served (-m), or NULL with models_dir */
    const char *models_dir; /* --models-dir: every package folder in it, by folder name */
    size_t models_memory;   /* --models-memory: unload idle models beyond this (0: never) */
    const char *model_name; /* its id in the API (NULL: the folder's name) */
    const char *host;       /* address or host name to listen on (127.0.0.1) */
    int port;               /* 0: any free port (the one chosen is printed) */
    size_t max_body;        /* request bodies above this are refused with 413 */
    int max_connections;    /* requests at once: connections handed to a thread each */
    int max_per_address;    /* open connections from one client address (more get 503) */
    int read_timeout;       /* seconds for a request's header to arrive whole (then 408),
                               and at most between two reads of its body */
    const char *api_key;    /* requests but /health need "Authorization: Bearer KEY" (NULL: none) */
    const char *cors_origin; /* the one browser origin allowed to call (NULL: CORS off) */
    const char *template_file; /* a chat template file instead of the package's (-m only) */
    int max_n;              /* largest `n` a request may ask for */
    int drain_timeout;      /* SIGTERM: seconds the requests being answered get to finish
                               while new ones are refused with 503 (0: stop at once) */
    int log_format;         /* SERVE_LOG_*: a line per request on stderr (none by default) */
    const char *slot_save_path; /* --slot-save-path: the folder POST /slots/{id}?action=save
                               and restore use (NULL: those answer 501) */
    /* --adapter NAME=FILE (-m only): LoRA adapters over the model, loaded with it; a request
     * names one as model "MODEL:NAME" (eng_sampling.adapter) */
    const char *adapters[SERVE_MAX_ADAPTERS];
    int n_adapters;
    /* /v1/embeddings: SERVE_POOL_* (UNSET: the package's sentence-transformers files, else
     * last), unit vectors (-1: as the package says, else yes), and whether `dimensions`
     * may cut the vectors (a Matryoshka-trained model) */
    int pooling;
    int embed_normalize;
    bool matryoshka;
    eng_options eng;
    og_model_options model; /* every model opens with these: backend, threads */
} serve_options;

serve_options serve_options_default(void);

/* Listens, loads the model (requests get 503 meanwhile), serves until SIGINT or SIGTERM
 * (SIGTERM drains first: drain_timeout), then shuts down cleanly. Prints "listening on http://HOST:PORT" on stdout once the
 * socket is open. Returns the process exit status. */
int serve_main(const serve_options *o);

#endif
