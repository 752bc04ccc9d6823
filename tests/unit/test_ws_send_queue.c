/* Tests of native/ws_send_queue.c (native only): thousands of messages come
 * out in the order they went in, each with its bytes, length and text or
 * binary kind, none dropped or replaced; the count and byte totals follow
 * every push and pop; a message too large for memory is refused with
 * SDFED_ERR_NOMEM and leaves the queue as it was; clear says how many it
 * discarded. (A huge malloc is expected to fail: under AddressSanitizer the
 * test runs with allocator_may_return_null=1.) */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "native/ws_send_queue.h"

#define N_MESSAGES 5000

/* Message i: i % 7 is binary; its bytes spell i, its length varies. */
static size_t message(int i, unsigned char *buf) {
    size_t len = (size_t)snprintf((char *)buf, 64, "message %d", i);
    size_t extra = (size_t)(i % 37);
    for (size_t j = 0; j < extra; j++) buf[len + j] = (unsigned char)(i + j);
    return len + extra;
}

static void test_order_and_kinds(void) {
    native_ws_send_queue q = {0};
    unsigned char buf[128];
    size_t total = 0;
    int pushed = 0;
    for (int i = 0; i < N_MESSAGES; i++) {
        size_t len = message(i, buf);
        pushed += native_ws_send_queue_push(&q, buf, len, i % 7 == 0, NULL) == SDFED_OK;
        total += len;
    }
    CHECK(pushed == N_MESSAGES, "%d of %d pushed", pushed, N_MESSAGES);
    CHECK(q.count == N_MESSAGES && q.bytes == total, "count %zu bytes %zu, want %d and %zu", q.count, q.bytes,
          N_MESSAGES, total);
    int in_order = 0, kinds = 0;
    for (int i = 0; i < N_MESSAGES; i++) {
        const native_ws_outgoing *m = native_ws_send_queue_peek(&q);
        if (!m) break;
        size_t len = message(i, buf);
        in_order += m->len == len && memcmp(m->payload, buf, len) == 0;
        kinds += m->binary == (i % 7 == 0);
        memset(m->payload - LWS_PRE, 0xa5, LWS_PRE); /* lws_write's headroom: AddressSanitizer checks it is there */
        total -= len;
        native_ws_send_queue_pop(&q);
        if (q.count != (size_t)(N_MESSAGES - 1 - i) || q.bytes != total) break;
    }
    CHECK(in_order == N_MESSAGES, "%d of %d messages came out in order with their bytes", in_order, N_MESSAGES);
    CHECK(kinds == N_MESSAGES, "%d of %d kept their text/binary kind", kinds, N_MESSAGES);
    CHECK(q.count == 0 && q.bytes == 0 && !q.head && !q.tail, "count %zu bytes %zu after popping all", q.count,
          q.bytes);
    CHECK(native_ws_send_queue_peek(&q) == NULL, "an empty queue has nothing to peek");
}

/* Pushes between pops keep first in, first out. */
static void test_interleaved(void) {
    native_ws_send_queue q = {0};
    int next_in = 0, next_out = 0, wrong = 0;
    for (int step = 0; step < 3000; step++) {
        for (int k = 0; k < step % 3; k++, next_in++) native_ws_send_queue_push(&q, &next_in, sizeof next_in, 1, NULL);
        if (step % 2 && q.count) {
            int got;
            memcpy(&got, native_ws_send_queue_peek(&q)->payload, sizeof got);
            wrong += got != next_out++;
            native_ws_send_queue_pop(&q);
        }
    }
    for (; q.count; next_out++) {
        int got;
        memcpy(&got, native_ws_send_queue_peek(&q)->payload, sizeof got);
        wrong += got != next_out;
        native_ws_send_queue_pop(&q);
    }
    CHECK(wrong == 0 && next_out == next_in, "%d out of order, %d of %d came out", wrong, next_out, next_in);
}

static void test_out_of_memory(void) {
    native_ws_send_queue q = {0};
    native_ws_send_queue_push(&q, "a", 1, 0, NULL);
    native_ws_send_queue_push(&q, "", 0, 1, NULL);
    sdfed_error err = {0};
    size_t sizes[] = {SIZE_MAX, SIZE_MAX - LWS_PRE, SIZE_MAX / 2};
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        int status = native_ws_send_queue_push(&q, "x", sizes[i], 0, &err);
        CHECK(status == SDFED_ERR_NOMEM, "a message of %zu bytes: status %d", sizes[i], status);
        CHECK(strstr(err.message, "out of memory") != NULL, "the message says why: %s", err.message);
    }
    CHECK(q.count == 2 && q.bytes == 1, "a refused message changes nothing: count %zu bytes %zu", q.count, q.bytes);
    const native_ws_outgoing *m = native_ws_send_queue_peek(&q);
    CHECK(m && m->len == 1 && m->payload[0] == 'a' && !m->binary, "the first message is still first");
    CHECK(m && m->next && m->next->len == 0 && m->next->binary, "the empty binary message is still second");
    CHECK(q.tail == (m ? m->next : NULL), "the tail is still the second message");
    size_t discarded = native_ws_send_queue_clear(&q);
    CHECK(discarded == 2 && q.count == 0 && q.bytes == 0 && !q.head && !q.tail, "clear discarded %zu", discarded);
    CHECK(native_ws_send_queue_clear(&q) == 0, "clearing an empty queue discards nothing");
}

int main(void) {
    test_order_and_kinds();
    test_interleaved();
    test_out_of_memory();
    return check_report("test_ws_send_queue");
}
