/* The aggregator's HTTP side, on the same port as the WebSocket:
 *   /               the volunteer page (web/index.html)
 *   /<file>         the page's other files from web/
 *   /wasm/<file>    the browser build of the core
 *   /model/<sha256>.gguf  the model, immutable: ETag = its sha256,
 *                   If-None-Match answered 304
 *   /status         JSON: round, clients, global_prompt_sha256, ...
 *   /task           JSON: the federation as the welcome describes it
 *   /metrics        Prometheus text: clients, rounds, updates accepted and
 *                   refused by reason, store failures, aggregation time
 *   /status.html    a page with the accuracy-per-round chart clients report
 *   /demo/shard     a free demo shard of the task's data (demo.h); with
 *                   ?k=K that shard again (a page that kept its number)
 * Every response carries Cross-Origin-Opener-Policy: same-origin and
 * Cross-Origin-Embedder-Policy: require-corp (so the page may use
 * threads), Cross-Origin-Resource-Policy and nosniff; over plain HTTP it
 * closes its connection. Malformed requests are answered 400 before they
 * get here (gate.h); file paths with ".." or other oddities are not found. */
#ifndef SDFED_AGGREGATOR_HTTP_H
#define SDFED_AGGREGATOR_HTTP_H

#include <libwebsockets.h>

#include "demo.h"
#include "federation.h"
#include "store.h"

typedef struct http_site {
    const char *web_dir, *wasm_dir;
    const char *model_path, *model_sha256;
    size_t model_size;
    federation *fed;
    store *st;
    demo *demo; /* NULL: no demo shards */
    /* the accuracy per round the clients reported, for /status and
     * /status.html: read from the store again only when new metrics came in,
     * and at most once a second (every open page polls /status) */
    struct {
        int64_t *rounds, *clients;
        double *accuracy;
        int n, valid;
        int64_t metrics_seen, read_at_ms;
    } history;
} http_site;

void http_site_free(http_site *site);

/* A whole response with a one-line text/plain body (text and a line
 * break) and the headers every response carries, for a socket lws does not
 * own (the gate's); status 400 or 405. Its length, or -1 when it does not
 * fit in cap. */
int http_text_response(char *out, size_t cap, int status, const char *text);

/* The lws callback of the "http" protocol; the site is the vhost's user. */
int http_callback(struct lws *wsi, enum lws_callback_reasons reason, void *user, void *in, size_t len);

#endif
