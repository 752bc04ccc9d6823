/* Tests of native/ws_reassembly.c (native only): a message split into any
 * number of fragments comes out whole with its kind; a message over the
 * maximum is reported as too large once, as soon as its bytes or its
 * frame's header say so (a frame announcing more than the maximum is
 * refused with its first piece, before its payload), never handed over cut
 * short, and the next message is whole again; a message of exactly the
 * maximum and an empty one are messages; between messages no more than
 * NATIVE_WS_KEPT_BYTES is kept (a large buffer released once its message
 * was read or refused); a maximum changed mid-message holds from the next. */
#include <string.h>

#include "check.h"
#include "native/ws_reassembly.h"

#define MAX_BYTES 10000

/* Feeds data[0..len) as one frame in pieces of `piece` bytes (each saying
 * how much of the frame is left); returns the first answer other than
 * WS_RX_MORE (WS_RX_MORE if none), with in *at how many bytes had been fed
 * then, and counts in *answers every answer other than WS_RX_MORE. */
static native_ws_rx feed(native_ws_reassembly *r, const unsigned char *data, size_t len, size_t piece, int binary,
                         size_t *at_answer, int *answers) {
    native_ws_rx first = WS_RX_MORE;
    size_t at = 0;
    do {
        size_t n = len - at < piece ? len - at : piece;
        native_ws_fragment f = {.data = data + at,
                                .len = n,
                                .frame_left = len - at - n,
                                .first = at == 0,
                                .last = at + n == len,
                                .binary = binary};
        native_ws_rx rx = native_ws_reassembly_add(r, f);
        at += n;
        if (rx == WS_RX_MORE) continue;
        ++*answers;
        if (first == WS_RX_MORE) {
            first = rx;
            *at_answer = at;
        }
    } while (at < len);
    return first;
}

int main(void) {
    static unsigned char data[3 * MAX_BYTES];
    for (size_t i = 0; i < sizeof data; i++) data[i] = (unsigned char)(i * 31 + 7);
    native_ws_reassembly r;
    native_ws_reassembly_init(&r, MAX_BYTES);
    size_t pieces[] = {1, 7, 4096, 4097, MAX_BYTES}, at = 0;
    for (size_t p = 0; p < sizeof pieces / sizeof pieces[0]; p++) {
        for (int binary = 0; binary < 2; binary++) {
            size_t len = 1234 + p * 1000;
            int answers = 0;
            native_ws_rx rx = feed(&r, data + p, len, pieces[p], binary, &at, &answers);
            CHECK(rx == WS_RX_MESSAGE && answers == 1 && at == len && r.len == len &&
                      memcmp(r.data, data + p, len) == 0 && r.binary == binary,
                  "%zu bytes in pieces of %zu: rx %d after %zu bytes, %d answers, %zu bytes", len, pieces[p], rx, at,
                  answers, r.len);
        }
    }
    int answers = 0;
    native_ws_rx rx = feed(&r, data, MAX_BYTES, 3000, 1, &at, &answers);
    CHECK(rx == WS_RX_MESSAGE && answers == 1 && r.len == MAX_BYTES && memcmp(r.data, data, MAX_BYTES) == 0,
          "exactly the maximum is a message: rx %d, %zu bytes", rx, r.len);
    /* one frame over the maximum: its header says so, and its first piece is refused */
    answers = 0;
    rx = feed(&r, data, MAX_BYTES + 1, 3000, 1, &at, &answers);
    CHECK(rx == WS_RX_TOO_LARGE && answers == 1 && at == 3000 && r.len == 0,
          "one byte over the maximum: rx %d after %zu bytes, %d answers, %zu bytes kept", rx, at, answers, r.len);
    answers = 0;
    rx = feed(&r, data, sizeof data, 999, 0, &at, &answers);
    CHECK(rx == WS_RX_TOO_LARGE && answers == 1 && at == 999 && r.len == 0,
          "three times the maximum: rx %d after %zu bytes, %d answers, %zu bytes kept", rx, at, answers, r.len);
    /* a message in frames that each fit: refused with the piece that passes the maximum */
    answers = 0;
    rx = WS_RX_MORE;
    for (size_t sent = 0; sent < sizeof data; sent += 1000) {
        native_ws_fragment f = {
            .data = data + sent, .len = 1000, .first = sent == 0, .last = sent + 1000 == sizeof data};
        native_ws_rx got = native_ws_reassembly_add(&r, f);
        if (got == WS_RX_MORE) continue;
        if (++answers == 1) {
            rx = got;
            at = sent + 1000;
        }
    }
    CHECK(rx == WS_RX_TOO_LARGE && answers == 1 && at == MAX_BYTES + 1000,
          "frames of 1000 bytes: rx %d after %zu bytes, %d answers", rx, at, answers);
    answers = 0;
    rx = feed(&r, data + 5, 77, 10, 0, &at, &answers);
    CHECK(rx == WS_RX_MESSAGE && answers == 1 && r.len == 77 && memcmp(r.data, data + 5, 77) == 0 && !r.binary,
          "the message after a too large one is whole: rx %d, %zu bytes", rx, r.len);
    answers = 0;
    rx = feed(&r, data, 0, 1, 1, &at, &answers);
    CHECK(rx == WS_RX_MESSAGE && r.len == 0 && r.binary, "an empty message: rx %d, %zu bytes", rx, r.len);
    CHECK(r.cap <= MAX_BYTES, "the buffer (%zu bytes) stays within the maximum", r.cap);

    /* between messages at most NATIVE_WS_KEPT_BYTES is kept: a large
     * message's buffer goes once it was read, a refused one's at once */
    answers = 0;
    rx = feed(&r, data, MAX_BYTES, 1000, 1, &at, &answers);
    CHECK(rx == WS_RX_MESSAGE && r.cap >= MAX_BYTES, "a message of the maximum is held whole (%zu bytes)", r.cap);
    native_ws_reassembly_done(&r);
    CHECK(r.cap <= NATIVE_WS_KEPT_BYTES && r.len == 0, "read, its buffer is released: %zu bytes kept", r.cap);
    answers = 0;
    for (size_t sent = 0; sent < MAX_BYTES + 1000; sent += 1000) {
        native_ws_fragment f = {.data = data + sent, .len = 1000, .first = sent == 0, .binary = 1};
        answers += native_ws_reassembly_add(&r, f) == WS_RX_TOO_LARGE;
    }
    CHECK(answers == 1 && r.cap <= NATIVE_WS_KEPT_BYTES,
          "refused past %d bytes, its buffer is released at once: %zu bytes kept", MAX_BYTES, r.cap);
    answers = 0;
    rx = feed(&r, data, 100, 100, 0, &at, &answers);
    const unsigned char *small = r.data;
    native_ws_reassembly_done(&r);
    CHECK(rx == WS_RX_MESSAGE && r.data == small && r.cap == NATIVE_WS_KEPT_BYTES,
          "a small message's buffer is kept for the next (%zu bytes)", r.cap);

    /* a maximum set while a message is under way holds from the next one */
    native_ws_fragment head = {.data = data, .len = 100, .frame_left = 200, .first = 1, .binary = 1};
    CHECK(native_ws_reassembly_add(&r, head) == WS_RX_MORE, "a message of 300 bytes begins");
    r.max_bytes = 50;
    native_ws_fragment tail = {.data = data + 100, .len = 200, .last = 1, .binary = 1};
    CHECK(native_ws_reassembly_add(&r, tail) == WS_RX_MESSAGE && r.len == 300,
          "it ends whole under the maximum it began with (%zu bytes)", r.len);
    answers = 0;
    rx = feed(&r, data, 51, 51, 0, &at, &answers);
    CHECK(rx == WS_RX_TOO_LARGE && r.limit == 50, "the next message is held to the new maximum: rx %d", rx);
    r.max_bytes = MAX_BYTES;
    native_ws_reassembly_free(&r);
    CHECK(r.data == NULL && r.len == 0 && r.max_bytes == MAX_BYTES, "freed, ready for reuse");
    return check_report("test_ws_reassembly");
}
