/* A WebSocket endpoint's incoming message, put together from the fragments
 * lws delivers (a message may come in several frames, a frame in several
 * callbacks), up to a maximum size. A message over the maximum, or one
 * memory cannot hold, is never cut short: its bytes are discarded and, when
 * its last fragment arrives, it is reported as WS_RX_TOO_LARGE or
 * WS_RX_NO_MEMORY instead of WS_RX_MESSAGE. */
#ifndef SDFED_NATIVE_WS_REASSEMBLY_H
#define SDFED_NATIVE_WS_REASSEMBLY_H

#include <stddef.h>

#include <libwebsockets.h>

typedef enum ws_rx {
    WS_RX_MORE,      /* the message goes on in later fragments */
    WS_RX_MESSAGE,   /* data[0..len) is the whole message */
    WS_RX_TOO_LARGE, /* the message ended; it was over max_bytes */
    WS_RX_NO_MEMORY, /* the message ended; memory could not hold it */
} ws_rx;

/* One piece of a message as lws hands it to a RECEIVE callback. */
typedef struct ws_fragment {
    const void *data;
    size_t len;
    int first, last, binary; /* first and last piece of their message; its kind */
} ws_fragment;

typedef struct ws_reassembly {
    size_t max_bytes;
    unsigned char *data; /* the message so far */
    size_t len, cap;
    int binary;
    ws_rx discarding; /* WS_RX_MORE while the message is kept, else why it is being discarded */
} ws_reassembly;

/* The fragment a RECEIVE callback of wsi is holding (in, len). */
ws_fragment ws_fragment_of(struct lws *wsi, const void *in, size_t len);

void ws_reassembly_init(ws_reassembly *r, size_t max_bytes);
/* Adds a fragment; returns WS_RX_MORE until the message's last one. */
ws_rx ws_reassembly_add(ws_reassembly *r, ws_fragment f);
void ws_reassembly_free(ws_reassembly *r);

#endif
