/* The server's private state, shared by its files:
 *   serve_gate.c     the front door: accepts, waits for whole request headers, limits
 *                    connections per address, answers /health, hands the rest over
 *   serve_http.c     libmicrohttpd: access checks, bodies, routing, responses, shutdown
 *   serve_params.c   OpenAI request bodies -> srv_params (every parameter checked)
 *   serve_job.c      one request's choices on the engine: tokens -> text, stop strings
 *   tool_calls.c     tool calls in an answer: the template's format, parsed as it streams
 *   serve_openai.c   the routes: chat/completions (JSON and SSE), models, tokenize
 *   serve_dialect.c  other APIs' generation routes run as chat requests
 *   serve_messages.c Anthropic's /v1/messages
 *   serve_responses.c OpenAI's /v1/responses
 *   serve_slots.c    /props and /slots (llama-server's), the slot table
 *   serve_embed.c    /v1/embeddings: the decoder graph's hidden states, pooled
 *   serve_log.c      --log-format: a line per request
 *   serve_metrics.c  Prometheus text
 *   page.html        the chat page at / (compiled in as serve_page.c by the build)
 *   serve_buf.c      a growable byte buffer
 *
 * Threads: the gate's thread owns connections until their first request header is
 * whole; libmicrohttpd then runs one thread per connection; a handler parses, submits to
 * the engine (whose own thread runs the steps) and waits on its requests, or, for a
 * stream, returns a response whose reader callback waits and writes events as they come.
 * A handler that sees its client gone cancels its engine requests. */
#ifndef OG_SERVE_SERVE_INTERNAL_H
#define OG_SERVE_SERVE_INTERNAL_H

#include "serve/serve.h"
#include "serve/serve_buf.h"
#include "serve/tool_calls.h"
#include "chat/chat_stream.h"

#include "onnx_genai.h"
#include "guide/guide.h"

#include <cjson/cJSON.h>
#include <microhttpd.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>

/* ---- errors ------------------------------------------------------------------------ */

/* An error answer in OpenAI's shape: {"error": {"message", "type", "param", "code"}}. */
typedef struct srv_error {
    int status;       /* 0: no error */
    const char *type; /* invalid_request_error, not_found_error, server_error, ... */
    const char *code; /* NULL or e.g. "context_length_exceeded" */
    char param[64];   /* "" when no single parameter is at fault */
    char msg[768];
    int retry_after;  /* seconds, for 429 and 503 (0: no header) */
} srv_error;

void srv_fail(srv_error *e, int status, const char *param, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* A status from the library as an answer ("what: message"): bad input is the client's (400,
 * naming param), out of memory and run-time failures ours (500). Frees st. */
void srv_fail_status(srv_error *e, og_status *st, const char *param, const char *what);

/* ---- models ------------------------------------------------------------------------- */

/* A model's life (under srv_server.models_mu): with -m it loads at start (requests get
 * 503 meanwhile); with --models-dir each loads on its first request (others for it wait)
 * and the least recently used idle ones are unloaded while the loaded ones' memory is
 * above --models-memory. */
enum { SRV_UNLOADED = 0, SRV_LOADING, SRV_READY, SRV_FAILED, SRV_UNLOADING };

typedef struct srv_embedder srv_embedder;

typedef struct srv_model {
    char *name, *dir;
    int state;
    char error[512];         /* why the last load failed */
    int users;               /* requests holding it (it is not unloaded meanwhile) */
    uint64_t last_used;
    size_t bytes;            /* memory it took: resident growth while loading, at least its files */
    og_model *model;
    og_tokenizer *tok;
    og_chat_template *tpl;   /* NULL when the package has none (tpl_error says why) */
    char tpl_error[256];
    eng_engine *eng;
    int slots;               /* sequences its engine runs at once: --max-batch, or a hybrid's
                                state slots where fewer fit (0: no engine) */
    int32_t bor, eor;        /* reasoning start/end tokens (-1: none) */
    const char *think_open, *think_close; /* without them: the reasoning markers its chat
                                template writes ("<think>", "</think>"), else NULL */
    tc_format tools_fmt;     /* the tool-call format its chat template teaches (tc_detect) */
    bool tool_args_object;   /* its template takes a call's arguments as an object */
    int32_t tool_marker_ids[TC_MAX_MARKERS]; /* tokens of the format's markers (-1: none), whose text the
                                   detokenizer drops when they are special */
    int context, vocab;
    og_generator_params defaults; /* the package's search block */
    long created;
    og_adapters *adapters;   /* serve_options.adapters loaded over it (NULL: none) */
    /* /v1/embeddings (serve_embed.c): its session, opened on the first request (at load for
     * an embeddings-only package: no logits, then model and eng are NULL); emb_error says
     * why the package gives none */
    pthread_mutex_t emb_mu;
    bool emb_mu_live;        /* emb_mu is initialised */
    srv_embedder *emb;
    char emb_error[512];
    /* /v1/embeddings answered, inputs, tokens, session runs (under emb_mu; /metrics) */
    uint64_t emb_requests, emb_inputs, emb_tokens, emb_runs;
} srv_model;

/* ---- the server --------------------------------------------------------------------- */

typedef enum srv_route {
    SRV_CHAT, SRV_COMPLETIONS, SRV_MODELS, SRV_HEALTH, SRV_METRICS, SRV_TOKENIZE,
    SRV_DETOKENIZE, SRV_PAGE, SRV_MESSAGES, SRV_RESPONSES, SRV_PROPS, SRV_SLOTS, SRV_EMBEDDINGS,
    SRV_SLOT_ACTION, SRV_OTHER,
    SRV_ROUTES
} srv_route;

extern const char *const srv_route_names[SRV_ROUTES];

typedef struct srv_gate srv_gate;

typedef struct srv_server {
    serve_options o;
    struct MHD_Daemon *daemon;
    srv_gate *gate;
    srv_model *models;
    int n_models;
    bool multi;              /* --models-dir */
    char *adapter_names[SERVE_MAX_ADAPTERS]; /* the NAMEs of serve_options.adapters */
    pthread_mutex_t models_mu;
    pthread_cond_t models_cv;
    uint64_t tick;
    atomic_bool stopping;
    atomic_bool draining;    /* SIGTERM came: generation requests are refused (503) while
                                those being answered finish */
    atomic_ullong next_id;
    atomic_llong in_flight;
    pthread_mutex_t mu; /* the counters below */
    uint64_t responses[SRV_ROUTES][600]; /* by route and status */
    uint64_t stream_disconnects;
    struct srv_slot *slots;  /* (under mu) --max-batch per model, model by model (serve_slots.c;
                                a model uses the first srv_model.slots of its own) */
    int n_slots;             /* per model */
    pthread_cond_t slot_cv;  /* (with mu) a slot was given back */
} srv_server;

/* The models: one (-m) or every package folder under --models-dir. */
bool srv_models_init(srv_server *s);
void srv_models_free(srv_server *s);
/* Loads m now (the -m model at start). */
og_status *srv_model_load(srv_server *s, srv_model *m);
/* The model a request names in its "model" field (or the only one), loaded and held
 * until srv_release; NULL with err set (400, 404, 503 while the -m model loads, 500 when
 * it cannot be loaded). "MODEL:ADAPTER" names the model with one of its --adapter ones. */
srv_model *srv_acquire(srv_server *s, const cJSON *body, srv_error *err);
/* The adapter a request's "model" names ("MODEL:ADAPTER": one of s->adapter_names), or
 * NULL. */
const char *srv_adapter_of(const srv_server *s, const cJSON *body);
/* models[i] held when it is loaded now, else NULL (nothing is loaded for it). */
srv_model *srv_try_use(srv_server *s, int i);
void srv_release(srv_server *s, srv_model *m);
int srv_model_state(srv_server *s, srv_model *m);

void srv_count(srv_server *s, srv_route r, int status);
/* serve_addr.c: the address --host names (a number, or a name getaddrinfo resolves: the
 * first IPv4 address, else the first IPv6 one) with port; false with msg saying why. */
bool srv_host_address(const char *host, int port, struct sockaddr_storage *out, socklen_t *len,
                      char *msg, size_t msg_size);
/* Whether a is a loopback address (127.0.0.0/8, ::1, IPv4-mapped 127.x). */
bool srv_address_loopback(const struct sockaddr *a);
/* A number no other call in this process returns, and random across processes (getrandom
 * seeds it): ids of responses and tool calls, the seed of a request that gives none. */
uint64_t srv_unique64(srv_server *s);

/* ---- the front door (serve_gate.c) ----------------------------------------------------- */

/* Listens on addr (the socket is open when this returns; NULL with errno set when it
 * cannot be). Nothing is accepted before srv_gate_start, which needs s->daemon. */
srv_gate *srv_gate_open(srv_server *s, const struct sockaddr *addr, socklen_t addr_len);
int srv_gate_port(const srv_gate *g); /* the port bound (the one chosen for port 0) */
bool srv_gate_start(srv_gate *g);
/* Stops accepting and closes the connections still waiting for their headers (before
 * libmicrohttpd stops: no connection is handed to a stopping daemon). */
void srv_gate_stop(srv_gate *g);
void srv_gate_free(srv_gate *g); /* stops it first; NULL: nothing */
/* libmicrohttpd's connection notifications and a connection's requests, for the gate's
 * counts and its watch on kept-alive connections: started (fd: the connection's socket)
 * returns the connection's socket context, which the others take. */
void *srv_gate_started(srv_gate *g, int fd);
void srv_gate_request(srv_gate *g, void *held);  /* a request's header is in */
void srv_gate_answered(srv_gate *g, void *held); /* its answer is done: the next one is due */
void srv_gate_released(srv_gate *g, void *held); /* closed */

/* ---- requests ------------------------------------------------------------------------ */

enum { SRV_MAX_STOPS = 4 };

/* A chat or completions request, checked. */
/* Images and audio of a chat request (serve_media.c): the parts' bytes in order, then
 * what the processor made of them for the engine (inputs[0..count), owned by nt /
 * features). */
enum { SRV_MAX_MEDIA = 16 };
typedef struct srv_media {
    int n, n_images, n_audio;
    bool audio[SRV_MAX_MEDIA];
    unsigned char *data[SRV_MAX_MEDIA];
    size_t size[SRV_MAX_MEDIA];
    char names[SRV_MAX_MEDIA][48]; /* the parts' parameter names */
    int count;
    const char *input_names[ENG_MAX_INPUTS];
    og_tensor *inputs[ENG_MAX_INPUTS];
    og_named_tensors *nt;
    og_tensor *features;
} srv_media;

bool srv_model_takes_images(const srv_model *m);
bool srv_model_takes_audio(const srv_model *m);
/* A message's content part named `name`: an image or audio part is decoded into md and
 * replaced in place by {"type": "image"} / {"type": "audio"} (1); another part is left (0);
 * a part the model cannot take, a URL to fetch, bad base64 or too many parts: 400 (-1). */
int srv_media_part(const srv_model *m, cJSON *part, const char *name, srv_media *md,
                   srv_error *err);
/* The ids of a rendered chat with md's images: the template's placeholders checked
 * against the images and expanded by the processor's grids; md's inputs set. */
bool srv_media_images_prompt(srv_model *m, srv_media *md, const char *text, int32_t **ids,
                             size_t *n, srv_error *err);
/* A Whisper chat: md's one audio part as audio_features, the decoder prompt from the
 * messages' text (or the default) as ids. */
bool srv_media_audio_prompt(srv_model *m, srv_media *md, const char *messages_json,
                            int32_t **ids, size_t *n, srv_error *err);
void srv_media_free(srv_media *md);

typedef struct srv_params {
    bool chat;
    char *messages_json;   /* chat: the messages as the template gets them */
    srv_media media;       /* chat: their images and audio */
    char *tools_json;      /* chat: tools, or NULL (also with tool_choice "none") */
    bool parse_tools;      /* chat: tools given and the template has a format: parse calls */
    bool parallel_tool_calls; /* false: only the first call of an answer is returned */
    char *extra_json;      /* chat: chat_template_kwargs, or NULL */
    cJSON *prompts;        /* completions: array of prompts (strings or id arrays), owned */
    int max_tokens;        /* -1: up to the context */
    eng_sampling s;
    int n;
    bool stream, include_usage;
    char *stops[SRV_MAX_STOPS];
    int n_stops;
    int logprobs;          /* -1: none */
    int id_slot;           /* llama-server's id_slot: the slot the one choice takes (-1: any) */
    /* constrained decoding (serve_guide.c): a guide_kind and its text, or -1 */
    int guide_kind;
    char *guide_text;
    char guide_param[48];  /* the request field an invalid guidance came from */
    char guide_name[65];   /* response_format.json_schema.name ("": none), echoed by /v1/responses */
} srv_params;

/* Reads body as a chat (chat true) or completions request for model m; on failure fills
 * err (400 naming the parameter) and returns false. */
bool srv_parse_params(srv_server *s, srv_model *m, const cJSON *body, bool chat, srv_params *p,
                      srv_error *err);
void srv_params_free(srv_params *p);
/* serve_guide.c: response_format (chat and completions): {"type": "text"} (no
 * constraint), "json_object" or "json_schema" (its json_schema.schema) into p's guidance. */
bool srv_read_response_format(const cJSON *body, srv_params *p, srv_error *err);
/* tool_choice "required" (choice a string) or naming a function (an object): the guidance
 * that forces one call (or with p->parallel_tool_calls one or more) of `tools` in model
 * m's tool-call format, the arguments following the function's parameters schema. */
bool srv_forced_tools(const srv_model *m, const cJSON *tools, const cJSON *choice, srv_params *p,
                      srv_error *err);
/* p's guidance compiled for m (through the model's cache), *g NULL when it has none; an
 * invalid one is a 400 naming p->guide_param. *n_tokens: the grammar's vocabulary size. */
bool srv_guide_compile(srv_model *m, const srv_params *p, guide_grammar **g, size_t *n_tokens,
                       srv_error *err);
/* Checks a chat request's messages and gives them as model m's template wants them (an
 * assistant's tool call arguments as an object when the template takes objects), as JSON
 * text in *out (free with cJSON_free); image and audio parts into *media
 * (srv_media_part). */
bool srv_messages_json(const srv_model *m, const cJSON *msgs, char **out, srv_media *media,
                       srv_error *err);
/* Parses a JSON object body; on failure err says why (400). */
cJSON *srv_parse_object(const char *body, size_t len, srv_error *err);
/* Every field of body is among keys (NULL-terminated); else err names the first that is not. */
bool srv_known_keys(const cJSON *body, const char *const *keys, srv_error *err);

/* Ids of context a token's text in logprobs is decoded in: enough for a character of
 * byte tokens and for the decoders that treat the start of a text apart. */
enum { SRV_LP_CONTEXT = 8 };

/* One choice: an engine request and its text so far. */
typedef struct srv_choice {
    int index;
    int prompt;             /* which prompt (completions with several) */
    eng_request *req;
    int have;               /* tokens taken from the request */
    og_tokenizer_stream *ts;
    chat_stream cs;
    srv_buf delta[2];       /* answer / reasoning text not yet streamed */
    eng_token *toks;        /* when logprobs: tokens not yet reported */
    size_t *tok_chars;      /* ... and the characters of the answer's text before each */
    int n_toks, cap_toks;
    size_t chars;           /* characters of text the detokenizer has given so far */
    int32_t lp_ctx[SRV_LP_CONTEXT]; /* the last ids before toks (prompt, then answer): the
                               context each token's text is decoded in */
    int n_lp_ctx;
    const char *finish;     /* NULL while running: "stop", "length", "tool_calls" */
    bool cs_live;
    tc_parser tc;           /* when p->parse_tools: the answer goes through it */
    bool tc_live;
    int n_calls;            /* tool calls returned (tc.calls[0..n_calls)) */
    char (*call_ids)[32];   /* their ids (made as a stream begins a call, or at the end) */
    int n_call_ids;
    int calls_begun;        /* a stream: calls whose first chunk (id, name) is sent */
    size_t *args_sent;      /* ... and the bytes of each one's arguments sent */
    int calls_ended;        /* ... and of those, the calls known whole (srv_call_deltas) */
    int slot;               /* 1 + its place in its model's slot table (0: none) */
    int32_t *script;        /* test builds only (OG_SERVE_TEST_SCRIPT): the tokens that
                               replace the model's */
    int n_script;
} srv_choice;

typedef struct srv_job {
    srv_server *srv;
    srv_model *m;
    srv_params *p;
    int n_prompts;
    int32_t **ids;          /* per prompt */
    int *n_ids;
    int n_choices;
    srv_choice *c;
    int prompt_tokens, cached_tokens, completion_tokens;
    char id[48];
    long created;
    int fd;                 /* the client's socket (to notice it closing), -1 unknown */
    bool failed;
    srv_error err;          /* when failed */
    guide_grammar *grammar; /* the request's guidance, compiled (NULL: none) */
    size_t guide_tokens;
    double t_first;         /* srv_now() when its first token was taken (0: none yet) */
    bool think_in;          /* chat: the rendered prompt ends inside a think_open block */
} srv_job;

/* Tokenizes the prompts (the chat template for chat), submits every choice. On failure
 * (err set) nothing is left running. */
bool srv_job_start(srv_job *j, srv_server *s, srv_model *m, srv_params *p, int fd, srv_error *err);
/* Takes what the engine produced, waiting up to timeout_s when nothing is new. Returns
 * true once every choice has finished (or the job failed). */
bool srv_job_pump(srv_job *j, double timeout_s);
/* True when the client has closed its connection (or the server is stopping). */
bool srv_client_gone(srv_job *j);
/* Cancels what still runs and frees everything. */
void srv_job_free(srv_job *j);
/* The id of choice c's tool call k, made when first asked for (calls 0..k-1 first); NULL
 * when out of memory. */
const char *srv_call_id(srv_job *j, srv_choice *c, int k);
/* A stream's view of chat choice c's tool calls, as far as the parser has read them (what
 * is sent is a prefix of the calls the answer ends with, tool_calls.h), one call after the
 * other as OpenAI's and Anthropic's streams send them: call k BEGINs once its name is whole
 * (s: the name), its ARGS come a piece at a time as they are written, and it ENDs (s: all
 * its arguments) when call k+1 begins or the answer ends; call k+1 waits until k's
 * arguments are whole. At the end (c->finish set) the rest of each call comes. Calls of
 * text that turns out malformed at the end have begun and not ended (c->calls_ended <
 * c->calls_begun, c->n_calls 0): the text then comes as content. False when out of
 * memory. */
enum { SRV_CALL_BEGIN, SRV_CALL_ARGS, SRV_CALL_END };
typedef void (*srv_call_fn)(void *ctx, srv_choice *c, int k, int what, const char *s, size_t n);
bool srv_call_deltas(srv_job *j, srv_choice *c, srv_call_fn fn, void *ctx);

/* ---- routes ------------------------------------------------------------------------- */

/* ---- the request log (serve_log.c) ---------------------------------------------------------- */

/* A request's line of the --log-format log, NULL when there is none: begun when its header
 * is in, given its model and token counts by the handler (srv_log_job), its status when
 * answered, and written when the last holder lets go (srv_log_end): the connection's
 * request, and a stream that outlives its handler (srv_log_hold). */
typedef struct srv_reqlog srv_reqlog;
srv_reqlog *srv_log_begin(srv_server *s, struct MHD_Connection *c, const char *method, const char *url);
void srv_log_job(srv_reqlog *l, const srv_job *j);
void srv_log_status(srv_reqlog *l, int status);
srv_reqlog *srv_log_hold(srv_reqlog *l);
void srv_log_end(srv_reqlog *l);
/* CLOCK_MONOTONIC in seconds. */
double srv_now(void);

/* A response to queue: status, body (malloc'd), content type, headers. */
typedef struct srv_reply {
    int status;
    char *body;
    size_t len;
    const char *type;
    int retry_after;
    struct MHD_Response *stream; /* set instead of body for a stream */
    srv_reqlog *log;             /* the request's log line (borrowed; NULL: none): a handler
                                    gives it its job (a stream holds it to its end) */
} srv_reply;

/* The headers an answer carries besides its status line, length and body, the same
 * whether libmicrohttpd or the gate writes it: Content-Type, Retry-After (its value in
 * retry), the CORS headers with --cors-origin. Returns how many it wrote to h. */
enum { SRV_MAX_HEADERS = 8 };
typedef struct srv_header {
    const char *name, *value;
} srv_header;
int srv_reply_headers(const srv_server *s, const srv_reply *r, srv_header h[SRV_MAX_HEADERS],
                      char retry[16]);
/* GET /health's answer. */
void srv_health(srv_server *s, srv_reply *r);
/* The probes of an orchestrator: GET /health/live answers 200 while the process serves
 * (liveness); GET /health/ready 200 only when the model is loaded and the server is not
 * draining, else 503 (readiness); /health is srv_health. Answered by the gate. */
typedef enum srv_probe { SRV_PROBE_NONE, SRV_PROBE_HEALTH, SRV_PROBE_LIVE, SRV_PROBE_READY } srv_probe;
srv_probe srv_probe_of(const char *path, size_t len);
void srv_answer_probe(srv_server *s, srv_probe p, srv_reply *r);

void srv_reply_error(srv_reply *r, const srv_error *e);
void srv_reply_json(srv_reply *r, int status, cJSON *j); /* takes j */

void srv_handle_generate(srv_server *s, bool chat, const char *body, size_t len, int fd,
                         srv_reply *r);
void srv_handle_models(srv_server *s, const char *url, srv_reply *r);
void srv_handle_tokenize(srv_server *s, const char *body, size_t len, srv_reply *r);
void srv_handle_detokenize(srv_server *s, const char *body, size_t len, srv_reply *r);
void srv_handle_metrics(srv_server *s, srv_reply *r);

/* ---- other APIs on the chat path (serve_dialect.c) ---------------------------------------- */

/* A request of another API run as an OpenAI chat request: the job, and for a stream the
 * events not yet sent. */
typedef struct srv_dstream srv_dstream;
struct srv_dstream {
    srv_server *srv;
    srv_model *m; /* held until the stream is freed */
    srv_params p;
    srv_job job;
    char id[64];  /* the answer's id: the dialect's prefix and a random number */
    srv_buf out;
    size_t sent;
    bool done;
    srv_reqlog *log; /* held until the stream ends */
    srv_buf text; /* the answer's text streamed so far (the choice's delta is emptied as
                     it is sent), for events that repeat it whole */
    /* the dialect's progress through its event sequence */
    bool (*events)(srv_dstream *st, bool finished);
    int seq;      /* events written */
    int blocks;   /* content blocks / output items opened */
    bool started, text_open;
    srv_buf args;     /* the arguments of the call being streamed, sent so far */
    char *call_name;  /* ... its name (the Responses API repeats it when the call is done) */
    cJSON *items;     /* the Responses API: the output items done, for the final response */
};

typedef struct srv_dialect {
    const char *id_prefix; /* "msg_", "resp_" */
    /* The API's request as an OpenAI chat request (*stream: whether it asks for a
     * stream); NULL with err set (a 400 naming the field). */
    cJSON *(*request)(const cJSON *body, bool *stream, srv_error *err);
    /* Writes the events for what the job produced since the last call into st->out;
     * finished: every choice has ended (or the job failed). Returns true once the last
     * event is written. */
    bool (*events)(srv_dstream *st, bool finished);
    cJSON *(*whole)(srv_dstream *st); /* the answer of a finished job */
    /* chat's field names as this API's, in the param and message of an error: {chat's
     * prefix, the API's} pairs, longest chat prefix first, up to {NULL} (NULL: none) */
    const char *const (*renamed)[2];
} srv_dialect;

/* serve_messages.c: Anthropic's Messages API; serve_responses.c: OpenAI's Responses API
 * (text and function tools). */
extern const srv_dialect srv_messages_api, srv_responses_api;
/* A request of API d: its body as a chat request, run as one answer or a stream of d's
 * events, into r (errors in OpenAI's shape). */
void srv_handle_dialect(srv_server *s, const srv_dialect *d, const char *body, size_t len, int fd,
                        srv_reply *r);
/* A stream's reader (libmicrohttpd's content reader): what out holds from *sent on, and
 * when all is sent more(ctx) to write the next events (out emptied first); the end once
 * *done, an error when the client is gone (the stream's free callback cancels). */
ssize_t srv_sse_read(srv_server *s, srv_job *j, srv_buf *out, size_t *sent, const bool *done,
                     char *buf, size_t max, void (*more)(void *), void *ctx);
/* v added to the object `to` as key (to an array when key is NULL); false (500, v freed)
 * when out of memory. */
bool srv_dialect_put(cJSON *to, const char *key, cJSON *v, srv_error *err);
/* A chat request begun from body: its fields `same` (NULL-terminated: the same name and
 * meaning in chat, checked by the chat parser) copied, those of renamed ({name, chat's
 * name} pairs up to {NULL}) under chat's names; *stream from "stream". NULL with err set. */
cJSON *srv_dialect_chat(const cJSON *body, const char *const *same, const char *const (*renamed)[2],
                        bool *stream, srv_error *err);
/* body's "tools" as chat's function tools: each {"type": type (optional where type is not
 * "function"), "name", "description"?, params_key: its JSON schema}; a 400 naming the one
 * that is not. */
bool srv_dialect_tools(const cJSON *body, const char *type, const char *params_key, cJSON *chat,
                       srv_error *err);
/* "event: EVENT\ndata: JSON\n\n" (takes data). */
void srv_sse_event(srv_buf *b, const char *event, cJSON *data);
/* A message's text content: a string, or an array of text parts whose "type" is one of
 * types (NULL-terminated), joined; NULL with a 400 naming `name` otherwise. */
cJSON *srv_dialect_text(const cJSON *content, const char *const *types, const char *name,
                        srv_error *err);
/* ---- slots (serve_slots.c) ------------------------------------------------------------ */

/* The slot table: --max-batch places per model, which the choices being generated take. */
bool srv_slots_init(srv_server *s);
void srv_slots_free(srv_server *s);
/* The slots of model m (its engine's srv_model.slots, at most the table's width). */
int srv_slot_count(const srv_server *s, const srv_model *m);
/* A free slot of j's model for its choice `choice` (n_prompt prompt tokens): 1 + its index,
 * or 0 when all are taken (the choice waits in the engine's queue, in no slot). A request
 * with an id_slot takes that slot, waiting until its request has finished (as llama-server
 * defers a task to a busy slot); 0 only when the server stops meanwhile. */
int srv_slot_take(srv_server *s, const srv_job *j, int choice, int n_prompt);
/* The tokens the choice in slot (1 + index; 0: none) has taken so far. */
void srv_slot_progress(srv_server *s, const srv_model *m, int slot, int n_decoded);
/* The choice leaves the slot; the slot keeps its tokens (prompt[0..n_prompt), then the
 * ids of out[0..n_out)), what /slots/{id}?action=save saves the cached KV of. */
void srv_slot_give(srv_server *s, const srv_model *m, int slot, const int32_t *prompt,
                   int n_prompt, const int32_t *out, int n_out);
/* GET /props (the model's defaults, slots, path, chat template, build) and GET /slots (each
 * slot: its request's id, prompt and generated tokens) as llama-server answers them; the
 * model by ?model=NAME or the only one. */
void srv_handle_props(srv_server *s, struct MHD_Connection *c, srv_reply *r);
void srv_handle_slots(srv_server *s, struct MHD_Connection *c, srv_reply *r);
/* POST /slots/{id}?action=save|restore|erase as llama-server answers it (--slot-save-path):
 * a slot's tokens' cached KV to a file / a file's into the prefix cache / out of it. */
void srv_handle_slot_action(srv_server *s, struct MHD_Connection *c, const char *url,
                            const char *body, size_t len, srv_reply *r);

/* ---- embeddings (serve_embed.c) --------------------------------------------------------- */

enum { SRV_EMBED_MAX_INPUTS = 2048 }; /* inputs in one request */

/* The hidden states of the package in dir, pooled (o's --pooling and normalising, else the
 * package's sentence-transformers files): a session on its decoder graph, which must have
 * an output "hidden_states" or "last_hidden_state" (or the one genai_config names). Free
 * with srv_embedder_free (NULL: nothing). */
og_status *srv_embedder_open(const serve_options *o, const char *dir, srv_embedder **out);
void srv_embedder_free(srv_embedder *e);
/* Whether the graph also has the config's logits output (else it serves embeddings only). */
bool srv_embedder_has_logits(const srv_embedder *e);
int srv_embedder_context(const srv_embedder *e); /* genai_config's context_length */
int srv_embedder_vocab(const srv_embedder *e);   /* genai_config's vocab_size */
const char *srv_embedder_how(const srv_embedder *e); /* "mean pooling, normalised (modules.json, ...)" */
/* POST /v1/embeddings. */
void srv_handle_embeddings(srv_server *s, const char *body, size_t len, srv_reply *r);

/* An error answer in OpenAI's shape made Anthropic's (serve_messages.c): every answer on
 * /v1/messages passes here. */
void srv_messages_error_shape(srv_reply *r);

extern const char srv_page_html[];

#endif
