/* The FIFO of outgoing WebSocket messages (see ws_send_queue.h): one
 * allocation per message, the node followed by the headroom and the payload. */
#include "native/ws_send_queue.h"

#include <assert.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int native_ws_send_queue_push(native_ws_send_queue *q, const void *data, size_t len, int binary, sdfed_error *err) {
    size_t overhead = sizeof(native_ws_outgoing) + LWS_PRE;
    native_ws_outgoing *m = len <= SIZE_MAX - overhead ? malloc(overhead + len) : NULL;
    if (!m) return sdfed_fail(err, SDFED_ERR_NOMEM, "out of memory queueing a message of %zu bytes", len);
    m->next = NULL;
    m->len = len;
    m->binary = binary;
    m->payload = (unsigned char *)(m + 1) + LWS_PRE;
    if (len) memcpy(m->payload, data, len);
    if (q->tail)
        q->tail->next = m;
    else
        q->head = m;
    q->tail = m;
    q->count++;
    q->bytes += len;
    return SDFED_OK;
}

const native_ws_outgoing *native_ws_send_queue_peek(const native_ws_send_queue *q) { return q->head; }

void native_ws_send_queue_pop(native_ws_send_queue *q) {
    native_ws_outgoing *m = q->head;
    assert(m);
    q->head = m->next;
    if (!q->head) q->tail = NULL;
    q->count--;
    q->bytes -= m->len;
    free(m);
}

int native_ws_send_queue_write_next(native_ws_send_queue *q, struct lws *wsi) {
    const native_ws_outgoing *m = q->head;
    if (!m) return 0;
    if (lws_write(wsi, m->payload, m->len, m->binary ? LWS_WRITE_BINARY : LWS_WRITE_TEXT) < (int)m->len) return -1;
    native_ws_send_queue_pop(q);
    return 0;
}

size_t native_ws_send_queue_clear(native_ws_send_queue *q) {
    size_t discarded = q->count;
    while (q->head) native_ws_send_queue_pop(q);
    return discarded;
}
