/* The aggregator's event loop on libwebsockets: one port serving HTTP
 * (http.h) and the sdfed.v1 WebSocket protocol, whose connections are
 * sessions (session.h) and whose messages go to the handlers (handlers.h).
 * It owns the lws context and its callbacks, nothing else. Limits are
 * explicit options, checked on input (handlers.h), plus lws's header
 * timeout against slow clients; each plain-HTTP connection's request line
 * is checked first (gate.h), and a WebSocket upgrade's subprotocol and
 * Origin (origin.h). Behind load balancers, their connections' PROXY
 * headers name the clients the limits count (proxy_protocol.h). */
#ifndef SDFED_AGGREGATOR_LOOP_H
#define SDFED_AGGREGATOR_LOOP_H

#include <stddef.h>

#include "handlers.h"
#include "http.h"
#include "origin.h"
#include "peers.h"
#include "proxy_protocol.h"
#include "session.h"

typedef struct agg_loop_options {
    const char *host;       /* bind address (agg_loop_resolve_host), NULL for all */
    int port;               /* 0: one the kernel chooses */
    const char *cert, *key; /* TLS when both set */
    size_t max_message_bytes;
    size_t max_header_bytes; /* a request's line and headers (gate.h) */
    int header_timeout_s;
    agg_session_keepalive keepalive; /* a PING to a silent connection, then a hang-up */
    int64_t hello_timeout_ms;        /* a WebSocket that says no hello for so long is closed (1008) */
    const agg_origins *origins;      /* the pages that may open the WebSocket besides the server's own */
    agg_peers *peers;                /* connections are counted there by address, and refused past its limits */
    agg_proxy_balancers balancers;   /* load balancers whose connections start with a PROXY header (proxy_protocol.h) */
} agg_loop_options;

typedef struct agg_loop agg_loop;

/* The address to bind for --host: an IPv4 or IPv6 address or a network
 * interface's name as given, a host name resolved to its first address,
 * "*" for NULL (every address); an error for anything else. */
int agg_loop_resolve_host(const char *host, char *address, size_t cap, sdfed_error *err);

/* Listens at once; port 0 takes one the kernel chooses (agg_loop_port). The
 * site and the handlers are the caller's and outlive the loop. */
int agg_loop_create(agg_loop **out, const agg_loop_options *opt, agg_http_site *site, agg_handlers *h,
                    sdfed_error *err);
/* The port it listens on. */
int agg_loop_port(const agg_loop *l);
/* Serves until agg_loop_stop (from a signal handler) is called. */
int agg_loop_run(agg_loop *l);
void agg_loop_stop(agg_loop *l);
void agg_loop_destroy(agg_loop *l);

#endif
