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
 * Responses carry the headers of response.h. Malformed requests are
 * answered 400 before they get here (gate.h); file paths with ".." or
 * other oddities are not found. */
#ifndef SDFED_AGGREGATOR_HTTP_H
#define SDFED_AGGREGATOR_HTTP_H

#include <stddef.h>

#include <libwebsockets.h>

#include "demo.h"
#include "federation.h"
#include "status.h"

typedef struct http_site {
    const char *web_dir, *wasm_dir;
    const char *model_path, *model_sha256;
    const char *description; /* description.h */
    federation *fed;
    demo *demo; /* NULL: no demo shards */
    status_board status;
} http_site;

/* The lws HTTP callback's work for the site. */
int http_serve(http_site *site, struct lws *wsi, enum lws_callback_reasons reason, void *user, void *in, size_t len);

#endif
