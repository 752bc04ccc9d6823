/* One sdfed.v1 WebSocket connection: its state (the client it speaks for,
 * how it wants tensors, its refusals), its incoming message assembled from
 * fragments, its send queue (written in order when lws says the socket is
 * writable, never dropped), the per-second message limit, and a closing
 * that lingers until what was queued is written and the peer is quiet. A
 * message begun before hello is at most SESSION_HELLO_MAX_BYTES. The
 * queue and the assembly are native/'s, shared with the clients.
 * It knows nothing of rounds or messages' meaning (handlers.h). */
#ifndef SDFED_AGGREGATOR_SESSION_H
#define SDFED_AGGREGATOR_SESSION_H

#include <stddef.h>
#include <stdint.h>

#include <libwebsockets.h>

#include "base/status.h"
#include "native/ws_reassembly.h"
#include "native/ws_send_queue.h"
#include "peers.h"

typedef struct agg_session {
    struct lws *wsi;
    agg_peer_address address; /* where it comes from, as the edge's limits count it */
    int64_t client;           /* -1 until hello */
    int welcomed;             /* its welcome was written: other messages may follow */
    int binary;               /* tensors as binary frames (1) or JSON (0) */
    char token[128];          /* its token, once it said hello */
    int refusals;
    size_t max_message_bytes; /* once it said hello; before, SESSION_HELLO_MAX_BYTES at most */
    native_ws_reassembly in;  /* the incoming message (native/ws_reassembly.h) */
    native_ws_send_queue out;
    int64_t window_start;
    int window_count;
    int closing;            /* 0, or the WebSocket close status to leave with once the queue is written */
    int peer_closed;        /* the peer sent a close frame: it left on purpose, unless going_away */
    int going_away;         /* with status 1001: a browser's close of a page's sockets (reload, tab closed) */
    char close_reason[124]; /* and its reason, sent in the close frame (at most 123 bytes) */
    int64_t opened_ms;
    int64_t closing_since, last_rx; /* ms, for the lingering close and the keepalive */
    int64_t pinged_at;              /* ms, the last keepalive PING (0: none) */
    int ping_due;                   /* a PING waits for the socket to be writable */
} agg_session;

/* When a silent peer is asked whether it is there, and when it is given up. */
typedef struct agg_session_keepalive {
    int64_t ping_after_ms, hangup_after_ms;
} agg_session_keepalive;

/* The most a message begun before hello may hold: a hello with every field
 * at its longest is under 1 KiB (docs/protocol.md, "Limits"). */
#define SESSION_HELLO_MAX_BYTES 4096

/* from: its connection's address (NULL: unknown, all zeros). */
void agg_session_open(agg_session *ss, struct lws *wsi, const agg_peer_address *from, size_t max_message_bytes,
                      int64_t now_ms);
/* Adds a fragment: WS_RX_MESSAGE when ss->in holds a whole message,
 * WS_RX_TOO_LARGE or WS_RX_NO_MEMORY when one ended that could not be
 * kept (over ss->in.limit: max_message_bytes, or before hello
 * SESSION_HELLO_MAX_BYTES), WS_RX_MORE otherwise. A closing session reads
 * nothing more. */
native_ws_rx agg_session_receive(agg_session *ss, const void *in, size_t len, int64_t now_ms);
/* The message in ss->in was handled: a large buffer is not kept. */
void agg_session_message_read(agg_session *ss);
/* Whether it said hello: welcomed, or its registration waits. */
int agg_session_said_hello(const agg_session *ss);
/* Input other than a message (a PONG) that shows the peer is there. */
void agg_session_heard(agg_session *ss, int64_t now_ms);
/* The peer sent a close frame (payload: its status and reason, len bytes):
 * it closes on purpose, but for status 1001 (going away), which a browser
 * sends for every socket of a page it reloads, leaves or closes. */
void agg_session_heard_close(agg_session *ss, const unsigned char *payload, size_t len, int64_t now_ms);
/* The keepalive sweep's visit: a PING once the peer has been silent for
 * ping_after_ms (one per silence); once it has been silent for
 * hangup_after_ms, a close (1001 going away, with the silence as its
 * reason: the peer or its network is gone); and 1 when a close could not
 * be written within SESSION_CLOSE_GIVE_UP_MS (the caller drops the
 * connection). */
#define SESSION_CLOSE_GIVE_UP_MS 5000
int agg_session_sweep(agg_session *ss, const agg_session_keepalive *k, int64_t now_ms);
/* At most limit messages in each window of window_ms (a window starts at
 * the first message after the last one ended). */
int agg_session_rate_ok(agg_session *ss, int limit, int64_t window_ms, int64_t now_ms);
/* Queues a message; an error (nothing queued) when memory ran out. */
int agg_session_send(agg_session *ss, const void *data, size_t len, int binary, sdfed_error *err);
/* Leaves with a close frame once what is queued has been written: its
 * status and a reason (cut to 123 bytes) for the peer. */
void agg_session_close_after(agg_session *ss, int status, const char *reason, int64_t now_ms);
/* Whether a connection open for timeout_ms has not said hello yet (no
 * client, no registration waiting). */
int agg_session_hello_overdue(const agg_session *ss, int64_t timeout_ms, int64_t now_ms);
/* lws says the socket is writable: a due PING, the next message, or the
 * close; -1 to hang up now. */
int agg_session_writable(agg_session *ss, int64_t now_ms);
/* The connection is gone: what it held is freed. */
void agg_session_free(agg_session *ss);

#endif
