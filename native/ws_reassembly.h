/* A WebSocket endpoint's incoming message, put together from the fragments
 * lws delivers (a message may come in several frames, a frame in several
 * callbacks), up to a maximum size (each message the one set when it
 * began). A message over the maximum, or one memory cannot hold, is never
 * handed over cut short: it is reported as WS_RX_TOO_LARGE or
 * WS_RX_NO_MEMORY as soon as that is known, once, and the rest of it is
 * discarded. A message is known to be too large as soon as a frame's
 * header announces more than the maximum holds: its first piece reports
 * it, before the frame's payload is read. Between messages an endpoint
 * keeps at most NATIVE_WS_KEPT_BYTES: the buffer of a larger one is
 * released once it was refused, or read (native_ws_reassembly_done). */
#ifndef SDFED_NATIVE_WS_REASSEMBLY_H
#define SDFED_NATIVE_WS_REASSEMBLY_H

#include <stddef.h>

#include <libwebsockets.h>

typedef enum native_ws_rx {
    WS_RX_MORE,      /* the message goes on in later fragments */
    WS_RX_MESSAGE,   /* data[0..len) is the whole message */
    WS_RX_TOO_LARGE, /* the message is over max_bytes (its frames say so, or its bytes) */
    WS_RX_NO_MEMORY, /* memory cannot hold the message */
} native_ws_rx;

/* One piece of a message as lws hands it to a RECEIVE callback. */
typedef struct native_ws_fragment {
    const void *data;
    size_t len;
    size_t frame_left;       /* the bytes of this piece's frame still to come after it (its header says) */
    int first, last, binary; /* first and last piece of their message; its kind */
} native_ws_fragment;

/* the buffer a message starts in, and the most kept between messages */
#define NATIVE_WS_KEPT_BYTES 4096

typedef struct native_ws_reassembly {
    size_t max_bytes;    /* what a message that begins now may hold (its owner may change it between calls) */
    size_t limit;        /* what the message under way may hold: max_bytes when it began */
    unsigned char *data; /* the message so far */
    size_t len, cap;
    int binary;
    int discarding; /* the message was reported too large or without memory: the rest of it is dropped */
} native_ws_reassembly;

/* The fragment a RECEIVE callback of wsi is holding (in, len). */
native_ws_fragment native_ws_fragment_of(struct lws *wsi, const void *in, size_t len);

void native_ws_reassembly_init(native_ws_reassembly *r, size_t max_bytes);
/* Adds a fragment: WS_RX_MESSAGE with the message's last one, WS_RX_TOO_LARGE
 * or WS_RX_NO_MEMORY once for a message that cannot be kept, else WS_RX_MORE. */
native_ws_rx native_ws_reassembly_add(native_ws_reassembly *r, native_ws_fragment f);
/* The message handed over was read: its buffer, when larger than
 * NATIVE_WS_KEPT_BYTES, is released. */
void native_ws_reassembly_done(native_ws_reassembly *r);
void native_ws_reassembly_free(native_ws_reassembly *r);

#endif
