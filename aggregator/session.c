/* A WebSocket connection's state, assembly and send queue (see session.h). */
#include "session.h"

#include <stdio.h>
#include <string.h>

/* A closing session waits for QUIET_MS without input, LINGER_MS at most. */
#define QUIET_MS 200
#define LINGER_MS 2000

void agg_session_open(agg_session *ss, struct lws *wsi, const agg_peer_address *from, size_t max_message_bytes,
                      int64_t now_ms) {
    memset(ss, 0, sizeof *ss);
    ss->wsi = wsi;
    ss->client = -1;
    ss->binary = 1;
    ss->last_rx = now_ms;
    ss->opened_ms = now_ms;
    if (from) ss->address = *from;
    ss->max_message_bytes = max_message_bytes;
    native_ws_reassembly_init(&ss->in, max_message_bytes);
}

int agg_session_said_hello(const agg_session *ss) { return ss->client >= 0 || ss->token[0]; }

native_ws_rx agg_session_receive(agg_session *ss, const void *in, size_t len, int64_t now_ms) {
    ss->last_rx = now_ms;
    if (ss->closing) return WS_RX_MORE; /* a session on its way out reads nothing more */
    /* for a message that begins now: a connection that said no hello holds no more than a hello */
    size_t before_hello =
        SESSION_HELLO_MAX_BYTES < ss->max_message_bytes ? SESSION_HELLO_MAX_BYTES : ss->max_message_bytes;
    ss->in.max_bytes = agg_session_said_hello(ss) ? ss->max_message_bytes : before_hello;
    return native_ws_reassembly_add(&ss->in, native_ws_fragment_of(ss->wsi, in, len));
}

void agg_session_message_read(agg_session *ss) { native_ws_reassembly_done(&ss->in); }

void agg_session_heard(agg_session *ss, int64_t now_ms) { ss->last_rx = now_ms; }

void agg_session_heard_close(agg_session *ss, const unsigned char *payload, size_t len, int64_t now_ms) {
    ss->peer_closed = 1;
    ss->going_away = len >= 2 && (payload[0] << 8 | payload[1]) == LWS_CLOSE_STATUS_GOINGAWAY;
    ss->last_rx = now_ms;
}

int agg_session_sweep(agg_session *ss, const agg_session_keepalive *k, int64_t now_ms) {
    if (ss->closing) return now_ms - ss->closing_since >= SESSION_CLOSE_GIVE_UP_MS; /* its close was never written */
    int64_t silent_ms = now_ms - ss->last_rx;
    if (silent_ms >= k->hangup_after_ms) {
        char reason[64];
        snprintf(reason, sizeof reason, "nothing heard for %lld s; hanging up", (long long)(silent_ms / 1000));
        agg_session_close_after(ss, LWS_CLOSE_STATUS_GOINGAWAY, reason, now_ms);
        return 0;
    }
    if (silent_ms >= k->ping_after_ms && ss->pinged_at <= ss->last_rx) {
        ss->pinged_at = now_ms;
        ss->ping_due = 1;
        lws_callback_on_writable(ss->wsi);
    }
    return 0;
}

int agg_session_rate_ok(agg_session *ss, int limit, int64_t window_ms, int64_t now_ms) {
    if (now_ms - ss->window_start >= window_ms) {
        ss->window_start = now_ms;
        ss->window_count = 0;
    }
    return ++ss->window_count <= limit;
}

int agg_session_send(agg_session *ss, const void *data, size_t len, int binary, sdfed_error *err) {
    int rc = native_ws_send_queue_push(&ss->out, data, len, binary, err);
    if (rc == SDFED_OK) lws_callback_on_writable(ss->wsi);
    return rc;
}

void agg_session_close_after(agg_session *ss, int status, const char *reason, int64_t now_ms) {
    if (ss->closing) return;
    ss->closing = status;
    snprintf(ss->close_reason, sizeof ss->close_reason, "%s", reason);
    ss->closing_since = now_ms;
    lws_callback_on_writable(ss->wsi);
}

int agg_session_hello_overdue(const agg_session *ss, int64_t timeout_ms, int64_t now_ms) {
    return !agg_session_said_hello(ss) && !ss->closing && now_ms - ss->opened_ms >= timeout_ms;
}

int agg_session_writable(agg_session *ss, int64_t now_ms) {
    if (ss->ping_due) { /* between two messages: each is written whole */
        /* not empty: lws does not report an empty PONG (LWS_CALLBACK_RECEIVE_PONG) */
        unsigned char ping[LWS_PRE + 4] = {[LWS_PRE] = 'p', 'i', 'n', 'g'};
        ss->ping_due = 0;
        if (lws_write(ss->wsi, ping + LWS_PRE, 4, LWS_WRITE_PING) < 0) return -1;
        if (ss->out.count || ss->closing) lws_callback_on_writable(ss->wsi);
        return 0;
    }
    if (!ss->out.count && ss->closing) {
        /* Linger while the peer is still sending (up to LINGER_MS): a
         * socket closed with unread input is reset, and a reset makes the
         * peer drop what we sent it last, the error included. */
        if (now_ms - ss->last_rx < QUIET_MS && now_ms - ss->closing_since < LINGER_MS) {
            lws_set_timer_usecs(ss->wsi, QUIET_MS * LWS_US_PER_MS);
            return 0;
        }
        lws_close_reason(ss->wsi, (enum lws_close_status)ss->closing, (unsigned char *)ss->close_reason,
                         strlen(ss->close_reason));
        return -1;
    }
    if (!ss->out.count) return 0;
    if (native_ws_send_queue_write_next(&ss->out, ss->wsi)) return -1;
    if (ss->out.count || ss->closing) lws_callback_on_writable(ss->wsi);
    return 0;
}

void agg_session_free(agg_session *ss) {
    native_ws_send_queue_clear(&ss->out);
    native_ws_reassembly_free(&ss->in);
}
