/* Tests of native/ws_reassembly.c (native only): a message split into any
 * number of fragments comes out whole with its kind; a message over the
 * maximum is reported as too large once it ends, never handed over cut
 * short, and the next message is whole again; a message of exactly the
 * maximum and an empty one are messages. */
#include <string.h>

#include "check.h"
#include "native/ws_reassembly.h"

#define MAX_BYTES 10000

/* Feeds data[0..len) in pieces of `piece` bytes; returns what the last one
 * got back and counts how many answered anything but WS_RX_MORE. */
static ws_rx feed(ws_reassembly *r, const unsigned char *data, size_t len, size_t piece, int binary, int *early) {
    ws_rx rx = WS_RX_MORE;
    size_t at = 0;
    do {
        size_t n = len - at < piece ? len - at : piece;
        ws_fragment f = {.data = data + at, .len = n, .first = at == 0, .last = at + n == len, .binary = binary};
        rx = ws_reassembly_add(r, f);
        at += n;
        if (at < len && rx != WS_RX_MORE) ++*early;
    } while (at < len);
    return rx;
}

int main(void) {
    static unsigned char data[3 * MAX_BYTES];
    for (size_t i = 0; i < sizeof data; i++) data[i] = (unsigned char)(i * 31 + 7);
    ws_reassembly r;
    ws_reassembly_init(&r, MAX_BYTES);
    int early = 0;
    size_t pieces[] = {1, 7, 4096, 4097, MAX_BYTES};
    for (size_t p = 0; p < sizeof pieces / sizeof pieces[0]; p++) {
        for (int binary = 0; binary < 2; binary++) {
            size_t len = 1234 + p * 1000;
            ws_rx rx = feed(&r, data + p, len, pieces[p], binary, &early);
            CHECK(rx == WS_RX_MESSAGE && r.len == len && memcmp(r.data, data + p, len) == 0 && r.binary == binary,
                  "%zu bytes in pieces of %zu: rx %d, %zu bytes", len, pieces[p], rx, r.len);
        }
    }
    ws_rx rx = feed(&r, data, MAX_BYTES, 3000, 1, &early);
    CHECK(rx == WS_RX_MESSAGE && r.len == MAX_BYTES && memcmp(r.data, data, MAX_BYTES) == 0,
          "exactly the maximum is a message: rx %d, %zu bytes", rx, r.len);
    rx = feed(&r, data, MAX_BYTES + 1, 3000, 1, &early);
    CHECK(rx == WS_RX_TOO_LARGE && r.len == 0, "one byte over the maximum: rx %d, %zu bytes kept", rx, r.len);
    rx = feed(&r, data, sizeof data, 999, 0, &early);
    CHECK(rx == WS_RX_TOO_LARGE && r.len == 0, "three times the maximum: rx %d, %zu bytes kept", rx, r.len);
    rx = feed(&r, data + 5, 77, 10, 0, &early);
    CHECK(rx == WS_RX_MESSAGE && r.len == 77 && memcmp(r.data, data + 5, 77) == 0 && !r.binary,
          "the message after a too large one is whole: rx %d, %zu bytes", rx, r.len);
    rx = feed(&r, data, 0, 1, 1, &early);
    CHECK(rx == WS_RX_MESSAGE && r.len == 0 && r.binary, "an empty message: rx %d, %zu bytes", rx, r.len);
    CHECK(early == 0, "%d fragments before a message's last one answered something", early);
    CHECK(r.cap <= MAX_BYTES, "the buffer (%zu bytes) stays within the maximum", r.cap);
    ws_reassembly_free(&r);
    CHECK(r.data == NULL && r.len == 0 && r.max_bytes == MAX_BYTES, "freed, ready for reuse");
    return check_report("test_ws_reassembly");
}
