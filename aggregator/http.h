/* The aggregator's HTTP side, on the same port as the WebSocket:
 *   /               the volunteer page (web/index.html)
 *   /<file>         the page's other files from web/
 *   /wasm/<file>    the browser build of the core
 *   /model/<sha256>.gguf  the model, immutable: ETag = its sha256,
 *                   If-None-Match answered 304
 *   /task           JSON: the federation as the welcome describes it
 *   /demo/shard     a free demo shard of the task's data (demo.h); with
 *                   ?k=K that shard again (a page that kept its number)
 *   /status, /status.html, /metrics   status.h
 * Responses carry the headers of response.h. With a join key, every path
 * but the page's own files (/, /<file>, /wasm/<file>, /status.css) needs
 * it, presented as Authorization: Bearer KEY (the page's fetches) or as
 * the query argument key=KEY (an address the host hands out, status.html):
 * 401 without it or with another (WWW-Authenticate: Bearer), 429 with
 * Retry-After while the address is locked out (join_key.h); /metrics needs
 * the metrics token instead when there is one. A connection that came in
 * the server's reserve (peers.h) is answered only the status routes,
 * anything else 503; past the files the server may send at once (a
 * descriptor each), a file is answered 503. Malformed requests are
 * answered 400 before they get here (gate.h); file paths with ".." or
 * other oddities are not found. */
#ifndef SDFED_AGGREGATOR_HTTP_H
#define SDFED_AGGREGATOR_HTTP_H

#include <stddef.h>

#include <libwebsockets.h>

#include "demo.h"
#include "federation.h"
#include "join_key.h"
#include "peers.h"
#include "status.h"

typedef struct agg_http_site {
    const char *web_dir, *wasm_dir;
    const char *model_path, *model_sha256;
    const char *description; /* description.h */
    agg_federation *fed;
    agg_demo *demo;              /* NULL: no demo shards */
    int demo_leases_per_address; /* demo shards one address holds at a time (demo.h) */
    agg_status_board status;
    agg_peers *peers; /* what the edge refuses is counted there, and the addresses' lock-outs kept */
    const agg_join_key *join_key, *metrics_token; /* join_key.h; one not set is not needed */
} agg_http_site;

/* What a connection that came in the reserve (the server is full) is
 * answered (503) when it asks for anything but the status, and the seconds
 * of its Retry-After. */
extern const char agg_http_reserve_refusal[], agg_http_reserve_retry_s[];

/* The lws HTTP callback's work for the site; from: the connection's record
 * (NULL: none), whose files being sent it counts. */
int agg_http_serve(agg_http_site *site, struct lws *wsi, agg_peer_conn *from, enum lws_callback_reasons reason,
                   void *user, void *in, size_t len);

#endif
