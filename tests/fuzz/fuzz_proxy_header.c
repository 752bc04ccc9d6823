/* libFuzzer target for the PROXY protocol v2 header (aggregator/
 * proxy_protocol.h) a load balancer puts before each connection: whatever
 * the bytes, the header is whole and valid (its length within them and
 * the limit, the client's address a family the server knows), more bytes
 * are asked for (never fewer than it has, never past the limit), or it is
 * refused with a message; never a crash. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/socket.h>

#include "proxy_protocol.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    agg_proxy_header header;
    sdfed_error err = {0};
    int rc = agg_proxy_header_read(data, size, &header, &err);
    if (rc == SDFED_OK) {
        if (header.length < 16 || header.length > size || header.length > PROXY_HEADER_MAX) abort();
        if (header.relayed && header.client.ss_family != AF_INET && header.client.ss_family != AF_INET6) abort();
    } else if (rc == PROXY_MORE) {
        if (header.length <= size || header.length > PROXY_HEADER_MAX) abort();
    } else if (rc != SDFED_ERR_FORMAT || !err.message[0]) {
        abort();
    }
    return 0;
}
