/* libFuzzer target for the gate's check of a plain-HTTP request
 * (aggregator/request_check.h), the first thing the public edge reads of
 * anyone's connection: whatever the bytes, the request is let through, is
 * refused with one of its statuses and a reason in words, or more is
 * waited for only while the peer has not ended and the bytes are within
 * the limits (the request line's 2,048 bytes and its line break, the
 * headers'); never a crash. The first byte chooses the header limit (256
 * to 8,160 bytes) and whether the peer has ended; the rest is the request. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "request_check.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 1) return 0;
    const size_t max_header_bytes = 256 + 32 * (size_t)(data[0] & 0x7f);
    const int ended = data[0] >> 7;
    char why[160] = "";
    int status = agg_request_check((const char *)data + 1, size - 1, max_header_bytes, ended, why, sizeof why);
    if (status == REQUEST_INCOMPLETE) {
        if (ended || size - 1 > (max_header_bytes > 2049 ? max_header_bytes : 2049)) abort(); /* 2049: a line, its \n */
    } else if (status != 0) {
        if ((status != 400 && status != 405 && status != 431) || !why[0] || !memchr(why, '\0', sizeof why)) abort();
    }
    return 0;
}
