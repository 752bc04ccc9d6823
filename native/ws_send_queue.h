/* A WebSocket endpoint's outgoing messages, in the order they were queued,
 * until lws says the socket is writable. Each message is copied whole, text
 * or binary, behind LWS_PRE bytes of headroom so that lws_write sends it in
 * place. The queue is unbounded and never drops or replaces a message: a
 * push either queues it or returns SDFED_ERR_NOMEM for the caller to act on;
 * only native_ws_send_queue_clear discards, and it returns how many it discarded. */
#ifndef SDFED_NATIVE_WS_SEND_QUEUE_H
#define SDFED_NATIVE_WS_SEND_QUEUE_H

#include <stddef.h>

#include <libwebsockets.h>

#include "base/status.h"

typedef struct native_ws_outgoing {
    struct native_ws_outgoing *next;
    size_t len;
    int binary;
    unsigned char *payload; /* len bytes, with LWS_PRE writable bytes before them */
} native_ws_outgoing;

typedef struct native_ws_send_queue {
    native_ws_outgoing *head, *tail; /* oldest, newest */
    size_t count, bytes;             /* messages queued and their payload bytes */
} native_ws_send_queue;              /* zero-initialised is empty */

/* Queues a copy of data[0..len) as a text (binary 0) or binary message. */
int native_ws_send_queue_push(native_ws_send_queue *q, const void *data, size_t len, int binary, sdfed_error *err);
/* The oldest message, or NULL when the queue is empty. */
const native_ws_outgoing *native_ws_send_queue_peek(const native_ws_send_queue *q);
/* Frees the oldest message (once it is written); the queue must not be empty. */
void native_ws_send_queue_pop(native_ws_send_queue *q);
/* For the WRITEABLE callback: writes the oldest message, if any, and pops it.
 * Returns -1 when lws could not write it (the caller closes the connection),
 * else 0; the caller asks for another callback while count > 0. */
int native_ws_send_queue_write_next(native_ws_send_queue *q, struct lws *wsi);
/* Frees every message; returns how many there were. */
size_t native_ws_send_queue_clear(native_ws_send_queue *q);

#endif
