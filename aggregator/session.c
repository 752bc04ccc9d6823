/* A WebSocket connection's state, assembly and send queue (see session.h). */
#include "session.h"

#include <stdlib.h>
#include <string.h>

#include "base/status.h"

struct session_queued {
    session_queued *next;
    size_t len;
    int binary;
    unsigned char *data; /* LWS_PRE bytes of headroom, then the message */
};

/* A closing session waits for QUIET_MS without input, LINGER_MS at most. */
#define QUIET_MS 200
#define LINGER_MS 2000

void session_open(session *ss, struct lws *wsi) {
    memset(ss, 0, sizeof *ss);
    ss->wsi = wsi, ss->client = -1, ss->binary = 1;
}

int session_receive(session *ss, const void *in, size_t len, size_t max_bytes, int64_t now_ms) {
    ss->last_rx = now_ms;
    if (ss->closing) return 0; /* a session on its way out reads nothing more */
    if (lws_is_first_fragment(ss->wsi)) {
        ss->rx_len = 0;
        ss->rx_overflow = 0;
        ss->rx_binary = lws_frame_is_binary(ss->wsi);
    }
    if (ss->rx_overflow || ss->rx_len + len > max_bytes) {
        ss->rx_overflow = 1;
    } else {
        if (ss->rx_len + len > ss->rx_cap) {
            size_t cap = ss->rx_cap ? ss->rx_cap : 4096;
            while (cap < ss->rx_len + len) cap *= 2;
            unsigned char *grown = realloc(ss->rx, cap);
            if (!grown) {
                ss->rx_overflow = 1;
                return lws_is_final_fragment(ss->wsi);
            }
            ss->rx = grown, ss->rx_cap = cap;
        }
        memcpy(ss->rx + ss->rx_len, in, len);
        ss->rx_len += len;
    }
    return lws_is_final_fragment(ss->wsi) && !lws_remaining_packet_payload(ss->wsi);
}

int session_rate_ok(session *ss, int max_per_second, int64_t now_ms) {
    if (now_ms - ss->window_start >= 1000) ss->window_start = now_ms, ss->window_count = 0;
    return ++ss->window_count <= max_per_second;
}

int session_send(session *ss, const void *data, size_t len, int binary) {
    session_queued *q = malloc(sizeof *q);
    unsigned char *buf = q ? malloc(LWS_PRE + len) : NULL;
    if (!q || !buf) {
        free(q);
        return SDFED_ERR_NOMEM;
    }
    memcpy(buf + LWS_PRE, data, len);
    *q = (session_queued){NULL, len, binary, buf};
    if (ss->tail)
        ss->tail->next = q;
    else
        ss->head = q;
    ss->tail = q;
    lws_callback_on_writable(ss->wsi);
    return SDFED_OK;
}

void session_close_after(session *ss, int status, int64_t now_ms) {
    if (ss->closing) return;
    ss->closing = status;
    ss->closing_since = now_ms;
    lws_callback_on_writable(ss->wsi);
}

int session_writable(session *ss, int64_t now_ms) {
    session_queued *q = ss->head;
    if (!q && ss->closing) {
        /* Linger while the peer is still sending (up to LINGER_MS): a
         * socket closed with unread input is reset, and a reset makes the
         * peer drop what we sent it last, the error included. */
        if (now_ms - ss->last_rx < QUIET_MS && now_ms - ss->closing_since < LINGER_MS) {
            lws_set_timer_usecs(ss->wsi, QUIET_MS * LWS_US_PER_MS);
            return 0;
        }
        lws_close_reason(ss->wsi, (enum lws_close_status)ss->closing, NULL, 0);
        return -1;
    }
    if (!q) return 0;
    if (lws_write(ss->wsi, q->data + LWS_PRE, q->len, q->binary ? LWS_WRITE_BINARY : LWS_WRITE_TEXT) < (int)q->len)
        return -1;
    ss->head = q->next;
    if (!ss->head) ss->tail = NULL;
    free(q->data);
    free(q);
    if (ss->head || ss->closing) lws_callback_on_writable(ss->wsi);
    return 0;
}

void session_free(session *ss) {
    while (ss->head) {
        session_queued *q = ss->head;
        ss->head = q->next;
        free(q->data);
        free(q);
    }
    ss->tail = NULL;
    free(ss->rx);
    ss->rx = NULL;
}
