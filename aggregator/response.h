/* HTTP responses of the aggregator, on lws or (for the gate) as raw bytes.
 * Every response carries Cross-Origin-Opener-Policy: same-origin and
 * Cross-Origin-Embedder-Policy: require-corp (so the page may use
 * threads), Cross-Origin-Resource-Policy, nosniff, a strict
 * Content-Security-Policy (this origin's scripts, styles and workers, and
 * WebAssembly compiled from them; nothing inline; frame-ancestors 'none')
 * and Referrer-Policy: no-referrer. A plain-HTTP
 * connection carries one request and says Connection: close: the next
 * comes on a new connection, whose request line the gate checks before lws
 * parses it (gate.h); TLS connections keep lws's keep-alive. */
#ifndef SDFED_AGGREGATOR_RESPONSE_H
#define SDFED_AGGREGATOR_RESPONSE_H

#include <stddef.h>

#include <libwebsockets.h>

/* Room for a response's status line and headers, every one's included
 * (and for a refusal's one-line body). */
enum { RESPONSE_HEAD_MAX = 2048 };

/* Statuses lws has no name for. */
enum { RESPONSE_TOO_MANY_REQUESTS = 429, RESPONSE_HEADERS_TOO_LARGE = 431 };

/* A whole response from memory; cache is the Cache-Control value or NULL.
 * Returns what the lws HTTP callback returns. */
int agg_response_send(struct lws *wsi, int status, const char *type, const char *body, size_t len, const char *cache);
/* 404 with a one-line text body. */
int agg_response_not_found(struct lws *wsi);
/* A file, streamed by lws; with an etag (the content's hash) it is cached
 * for a year, and a request whose If-None-Match lists its entity tag (weak
 * or strong, RFC 9110 13.1.2) or is "*" is answered 304. *sending: 1 when
 * the file is on its way (LWS_CALLBACK_HTTP_FILE_COMPLETION follows, unless
 * the connection ends first), 0 when the answer is whole already. */
int agg_response_file(struct lws *wsi, const char *file, const char *etag, int *sending);
/* Whether the connection closes after its response (plain HTTP). */
int agg_response_closes(struct lws *wsi);

/* A refusal: status (400, 401, 403, 405, 429, 431 or 503) with a
 * one-line text/plain body (text and a line break), not to be cached, and
 * one header more when header is set ("allow" with 405, "retry-after" with
 * 429 and 503, "www-authenticate" with 401). Returns what the lws HTTP
 * callback returns. */
int agg_response_refuse(struct lws *wsi, int status, const char *text, const char *header, const char *value);
/* The same refusal as raw bytes, with the headers every response carries:
 * for a socket lws does not own (the gate's), and for a WebSocket upgrade
 * refused before lws answers it. Its length, or -1 when it does not fit in
 * cap. */
int agg_response_text_bytes(char *out, size_t cap, int status, const char *text, const char *header, const char *value);

#endif
