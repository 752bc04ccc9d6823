/* The first look at each plain-HTTP connection, before lws parses it.
 * lws drops a connection whose request target decodes to a NUL, answers a
 * bad percent escape with its own HTML 403, quietly resolves "..", and
 * drops a request whose headers overflow its buffer, so such a request
 * could not be answered properly once lws has it. The gate gets every
 * connection lws's listener accepts (loop.c), waits without reading until
 * the request's headers are in, checks them, and then gives the connection
 * to its owner (loop.c) untouched, or answers 400 (405 for a method other than GET,
 * with Allow: GET; 431 for headers over the limit) with a one-line
 * text/plain body saying what is wrong, and closes. What a request must be
 * is request_check.h's (lws is given room for the most it lets through).
 * Responses close a plain-HTTP connection (response.h), so
 * every request is the first on its connection and passes here. TLS
 * connections are not looked at (lws decrypts them).
 * A connection from a load balancer (proxy_protocol.h) first has its PROXY
 * protocol header read, and taken off the connection: the owner hears
 * whose connection it relays and may refuse it (closed unanswered); a
 * connection without a valid header is answered 400 saying why. Then its
 * request is checked as any other (over TLS it is handed over at once). */
#ifndef SDFED_AGGREGATOR_GATE_H
#define SDFED_AGGREGATOR_GATE_H

#include <stddef.h>
#include <stdint.h>

#include <libwebsockets.h>

#include "proxy_protocol.h"
#include "base/status.h"

typedef struct agg_gate agg_gate;

/* Who gets the connections the gate is done with: each came with a tag
 * (agg_gate_take), handed back with it. */
typedef struct agg_gate_owner {
    void *ctx;
    /* the request passed: fd is the owner's, every byte of it unread */
    void (*pass)(void *ctx, int fd, void *tag);
    /* the gate closed the connection (refused, gone, or too slow) */
    void (*closed)(void *ctx, void *tag);
    /* a balancer's connection's PROXY header, read: non-zero refuses the connection */
    int (*relayed)(void *ctx, void *tag, const agg_proxy_header *header);
} agg_gate_owner;

/* A gate in front of vhost vh; a connection whose request's headers are
 * not in after timeout_s is dropped. With tls, requests are not looked
 * at: only balancers' connections come here, for their PROXY headers. */
int agg_gate_open(agg_gate **out, struct lws_vhost *vh, const agg_gate_owner *owner, int timeout_s,
                  size_t max_header_bytes, int tls, sdfed_error *err);
/* Closes the connections still waiting (call after the lws context is
 * destroyed: lws closes the descriptor it watches for the gate). */
void agg_gate_close(agg_gate *g);

/* A connection lws's listener accepted (LWS_CALLBACK_FILTER_NETWORK_
 * CONNECTION), with the owner's tag: the gate keeps a copy of fd, for lws
 * to close its own and forget the connection. relayed: a balancer's, which
 * starts with a PROXY header. */
void agg_gate_take(agg_gate *g, int fd, void *tag, int relayed, int64_t now_ms);
/* The gate's descriptor is readable (LWS_CALLBACK_RAW_RX_FILE): the
 * connections whose bytes came in are served. */
void agg_gate_service(agg_gate *g);
/* Drops the connections that waited past their deadline. */
void agg_gate_expire(agg_gate *g, int64_t now_ms);

#endif
