/* One sdfed.v1 WebSocket connection: its state (the client it speaks for,
 * how it wants tensors, its refusals), its incoming message assembled from
 * fragments, its send queue (written in order when lws says the socket is
 * writable, never dropped), the per-second message limit, and a closing
 * that lingers until what was queued is written and the peer is quiet.
 * It knows nothing of rounds or messages' meaning (handlers.h). */
#ifndef SDFED_AGGREGATOR_SESSION_H
#define SDFED_AGGREGATOR_SESSION_H

#include <stddef.h>
#include <stdint.h>

#include <libwebsockets.h>

typedef struct session_queued session_queued;

typedef struct session {
    struct lws *wsi;
    int64_t client;  /* -1 until hello */
    int binary;      /* tensors as binary frames (1) or JSON (0) */
    char token[128]; /* its token, once it said hello */
    int refusals;
    unsigned char *rx;
    size_t rx_len, rx_cap;
    int rx_binary, rx_overflow;
    session_queued *head, *tail;
    int64_t window_start;
    int window_count;
    int closing;                    /* 0, or the WebSocket close status to leave with once the queue is written */
    int64_t closing_since, last_rx; /* ms, for the lingering close */
} session;

void session_open(session *ss, struct lws *wsi);
/* Collects a fragment of at most max_bytes in all; 1 when a message is
 * complete (rx, rx_len, rx_binary; rx_overflow when it was too large).
 * A closing session reads nothing more. */
int session_receive(session *ss, const void *in, size_t len, size_t max_bytes, int64_t now_ms);
/* At most max_per_second messages in each second. */
int session_rate_ok(session *ss, int max_per_second, int64_t now_ms);
/* Queues a message; SDFED_ERR_NOMEM (nothing queued) when memory ran out. */
int session_send(session *ss, const void *data, size_t len, int binary);
/* Leaves with a close status once what is queued has been written. */
void session_close_after(session *ss, int status, int64_t now_ms);
/* lws says the socket is writable: the next message, or the close; -1 to
 * hang up now. */
int session_writable(session *ss, int64_t now_ms);
/* The connection is gone: what it held is freed. */
void session_free(session *ss);

#endif
