/* Incoming WebSocket messages from their fragments (see ws_reassembly.h). */
#include "native/ws_reassembly.h"

#include <stdlib.h>
#include <string.h>

native_ws_fragment native_ws_fragment_of(struct lws *wsi, const void *in, size_t len) {
    return (native_ws_fragment){.data = in,
                                .len = len,
                                .frame_left = lws_remaining_packet_payload(wsi),
                                .first = lws_is_first_fragment(wsi),
                                .last = lws_is_final_fragment(wsi) && !lws_remaining_packet_payload(wsi),
                                .binary = lws_frame_is_binary(wsi)};
}

void native_ws_reassembly_init(native_ws_reassembly *r, size_t max_bytes) {
    *r = (native_ws_reassembly){.max_bytes = max_bytes, .limit = max_bytes};
}

/* Room for need bytes (need <= limit); 0, or -1 when memory is short. */
static int reserve(native_ws_reassembly *r, size_t need) {
    if (need <= r->cap) return 0;
    size_t cap = r->cap ? r->cap : NATIVE_WS_KEPT_BYTES;
    while (cap < need) cap = cap <= r->limit / 2 ? cap * 2 : r->limit;
    unsigned char *grown = realloc(r->data, cap);
    if (!grown) return -1;
    r->data = grown;
    r->cap = cap;
    return 0;
}

native_ws_rx native_ws_reassembly_add(native_ws_reassembly *r, native_ws_fragment f) {
    if (f.first) {
        r->len = 0;
        r->limit = r->max_bytes;
        r->binary = f.binary;
        r->discarding = 0;
    }
    if (r->discarding) return WS_RX_MORE;
    native_ws_rx rx = f.last ? WS_RX_MESSAGE : WS_RX_MORE;
    size_t room = r->limit - r->len;
    if (f.len > room || f.frame_left > room - f.len)
        rx = WS_RX_TOO_LARGE;
    else if (reserve(r, r->len + f.len))
        rx = WS_RX_NO_MEMORY;
    else if (f.len) {
        memcpy(r->data + r->len, f.data, f.len);
        r->len += f.len;
    }
    if (rx == WS_RX_TOO_LARGE || rx == WS_RX_NO_MEMORY) {
        r->discarding = 1;
        native_ws_reassembly_done(r);
    }
    return rx;
}

void native_ws_reassembly_done(native_ws_reassembly *r) {
    r->len = 0;
    if (r->cap <= NATIVE_WS_KEPT_BYTES) return;
    free(r->data);
    r->data = NULL;
    r->cap = 0;
}

void native_ws_reassembly_free(native_ws_reassembly *r) {
    free(r->data);
    *r = (native_ws_reassembly){.max_bytes = r->max_bytes, .limit = r->max_bytes};
}
