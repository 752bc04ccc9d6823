/* The client side of sdfed.v1 for native programs: connections from this
 * process to one server (ws:// or wss://) in one lws context, each with its
 * send queue (native/ws_send_queue.h) and its incoming message
 * (native/ws_reassembly.h). The program hears through its handlers that a
 * connection opened, that a message arrived, that a connection failed or
 * closed; when to connect (again) is the program's choice. */
#ifndef SDFED_NATIVE_WS_CLIENT_H
#define SDFED_NATIVE_WS_CLIENT_H

#include <stdint.h>

#include <libwebsockets.h>

#include "base/status.h"
#include "native/ws_reassembly.h"
#include "native/ws_send_queue.h"

typedef struct native_ws_url {
    char address[256], path[256]; /* path starts with '/' */
    int port, tls;
} native_ws_url;

typedef struct native_ws_conn native_ws_conn;

typedef struct native_ws_client_handlers {
    /* the handshake is done: say hello with native_ws_conn_send */
    void (*connected)(native_ws_conn *conn);
    /* a message ended: rx is WS_RX_MESSAGE (conn->in.data, .len, .binary)
     * or says why it was discarded; returns 0, or -1 to close the connection
     * (with a close frame, 1001 going away: the server sees it leave on
     * purpose) */
    int (*message)(native_ws_conn *conn, native_ws_rx rx);
    /* the connection could not be made (was_open 0, why from lws) or it
     * closed (was_open 1). What is queued stays for the next connection;
     * native_ws_send_queue_clear(&conn->out) if it was for this one. */
    void (*closed)(native_ws_conn *conn, int was_open, const char *why);
} native_ws_client_handlers;

typedef struct native_ws_client {
    native_ws_url server;
    native_ws_client_handlers on;
    size_t max_message_bytes;
    struct lws_context *context; /* for the program's own timers (lws_sul_schedule) */
    int stopping;                /* no handler is called while the context is destroyed */
} native_ws_client;

typedef enum native_ws_conn_state { WS_CONN_IDLE, WS_CONN_CONNECTING, WS_CONN_OPEN } native_ws_conn_state;

struct native_ws_conn {
    native_ws_client *client;
    void *user; /* the program's */
    struct lws *wsi;
    native_ws_conn_state state;
    int closing; /* native_ws_conn_close: a close frame once what is queued is written */
    native_ws_send_queue out;
    native_ws_reassembly in;
    lws_sorted_usec_list_t connect_timer;
};

/* ws://HOST[:PORT][/PATH] or wss://...; the path is /ws when none is given. */
int native_ws_url_parse(native_ws_url *u, const char *url, sdfed_error *err);

/* A context for up to max_connections connections to server, lws logging
 * errors only. */
int native_ws_client_start(native_ws_client *c, const native_ws_url *server, int max_connections,
                           size_t max_message_bytes, const native_ws_client_handlers *on, sdfed_error *err);
/* Waits for and handles the next events; < 0 once the context is unusable. */
int native_ws_client_service(native_ws_client *c);
/* Closes every connection (no handler is called) and the context. */
void native_ws_client_stop(native_ws_client *c);

void native_ws_conn_init(native_ws_conn *conn, native_ws_client *client, void *user);
/* Connects after delay_us microseconds (the connection must be idle); a
 * failure is reported to the closed handler. */
void native_ws_conn_connect(native_ws_conn *conn, int64_t delay_us);
/* Queues a message, written as soon as the connection is open and writable. */
int native_ws_conn_send(native_ws_conn *conn, const void *data, size_t len, int binary, sdfed_error *err);
/* Closes an open connection from outside the handlers, with a close frame
 * (1001 going away) once what is queued is written; no message is handed to
 * the program after it, and the closed handler hears of it as of any close. */
void native_ws_conn_close(native_ws_conn *conn);
/* What a program that quits does first: closes an open connection with a
 * close frame and services the context until it has ended, for at most
 * timeout_ms. The server sees it leave on purpose (a connection lost without
 * a close frame keeps its place in a round for the server's rejoin grace). */
void native_ws_conn_leave(native_ws_conn *conn, int timeout_ms);
/* Frees the queue and the message buffer (after native_ws_client_stop). */
void native_ws_conn_free(native_ws_conn *conn);

#endif
