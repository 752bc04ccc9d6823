/* The aggregator's network layer on libwebsockets: one port serving HTTP
 * (http.c) and the sdfed.v1 WebSocket protocol (sessions below). It turns
 * frames into federation events and federation messages into frames; it
 * knows nothing of rounds. Limits are explicit options, checked on input:
 * the largest message, messages per second per connection, refusals before
 * a connection is closed, and lws's header timeout against slow clients.
 * Each plain-HTTP connection's request line is checked first (gate.h). A
 * store fault is logged once when it begins and once when it is over. */
#ifndef SDFED_AGGREGATOR_SERVER_H
#define SDFED_AGGREGATOR_SERVER_H

#include <stddef.h>
#include <stdint.h>

#include "federation.h"
#include "http.h"
#include "store.h"

typedef struct server_options {
    const char *host;               /* bind address, NULL for all */
    int port;                       /* 0: one the kernel chooses */
    const char *web_dir, *wasm_dir; /* static files: /, /wasm/ */
    const char *model_path, *model_sha256;
    size_t model_size;
    const char *join_key;   /* NULL: none */
    const char *cert, *key; /* TLS when both set */
    size_t max_message_bytes;
    int max_messages_per_second;
    int max_refusals; /* before the connection is closed */
    int header_timeout_s;
    demo *demo; /* NULL: no demo shards */
} server_options;

typedef struct server server;

/* Listens at once; port 0 takes one the kernel chooses (server_port). */
int server_create(server **out, const server_options *opt, store *st, sdfed_error *err);
/* The port it listens on. */
int server_port(const server *s);
/* The federation the server feeds; set after server_create because the
 * federation sends through the server. */
void server_attach(server *s, federation *f);
/* The callbacks the federation sends through. */
federation_net server_net(server *s);
/* Serves until server_stop (from a signal handler) is called. */
int server_run(server *s);
void server_stop(server *s);
void server_destroy(server *s);

/* What the HTTP side serves (http.c reaches it through the lws context). */
http_site *server_site(server *s);

/* The monotonic clock in milliseconds. */
int64_t server_now_ms(void);

/* One structured log line on stderr: {"ts": ..., "event": ..., fields}. */
void server_log(const char *event, const char *fields);

#endif
