/* The PROXY protocol's version 2 header, and the balancers that may send it
 * (proxy_protocol.h). */
#include "proxy_protocol.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <string.h>

#include "address.h"

static const unsigned char signature[12] = {0x0d, 0x0a, 0x0d, 0x0a, 0x00, 0x0d, 0x0a, 0x51, 0x55, 0x49, 0x54, 0x0a};

enum {
    COMMAND_LOCAL = 0x20, /* version 2, LOCAL */
    COMMAND_PROXY = 0x21, /* version 2, PROXY */
    TCP_OVER_IPV4 = 0x11,
    TCP_OVER_IPV6 = 0x21,
    IPV4_ADDRESSES = 12, /* source and destination addresses, then ports */
    IPV6_ADDRESSES = 36,
};

int agg_proxy_balancers_add(agg_proxy_balancers *b, const char *address, const char *option, sdfed_error *err) {
    struct sockaddr_in v4 = {.sin_family = AF_INET};
    struct sockaddr_in6 v6 = {.sin6_family = AF_INET6};
    const struct sockaddr *sa = NULL;
    if (inet_pton(AF_INET, address, &v4.sin_addr) == 1)
        sa = (const struct sockaddr *)&v4;
    else if (inet_pton(AF_INET6, address, &v6.sin6_addr) == 1)
        sa = (const struct sockaddr *)&v6;
    if (!sa)
        return sdfed_fail(err, SDFED_ERR_ARG,
                          "%s %s: not an IPv4 or IPv6 address (the balancer's, as the node sees it)", option, address);
    if (b->n == PROXY_BALANCERS_MAX)
        return sdfed_fail(err, SDFED_ERR_ARG, "%s: at most %d balancers", option, PROXY_BALANCERS_MAX);
    agg_address_bytes(sa, b->addresses[b->n++]);
    return SDFED_OK;
}

int agg_proxy_balancers_hold(const agg_proxy_balancers *b, const struct sockaddr *peer) {
    unsigned char bytes[16];
    if (!agg_address_bytes(peer, bytes)) return 0;
    for (int i = 0; i < b->n; i++)
        if (memcmp(b->addresses[i], bytes, sizeof bytes) == 0) return 1;
    return 0;
}

/* The bytes of a family's addresses (0: a family whose addresses are not read). */
static size_t addresses_size(int family) {
    if (family == TCP_OVER_IPV4) return IPV4_ADDRESSES;
    if (family == TCP_OVER_IPV6) return IPV6_ADDRESSES;
    return 0;
}

/* The client's address and port from a PROXY command's addresses. */
static void client_of(const unsigned char *addresses, int family, struct sockaddr_storage *out) {
    memset(out, 0, sizeof *out);
    if (family == TCP_OVER_IPV4) {
        struct sockaddr_in *v4 = (struct sockaddr_in *)out;
        v4->sin_family = AF_INET;
        memcpy(&v4->sin_addr, addresses, 4);
        memcpy(&v4->sin_port, addresses + 8, 2);
    } else {
        struct sockaddr_in6 *v6 = (struct sockaddr_in6 *)out;
        v6->sin6_family = AF_INET6;
        memcpy(&v6->sin6_addr, addresses, 16);
        memcpy(&v6->sin6_port, addresses + 32, 2);
    }
}

int agg_proxy_header_read(const unsigned char *bytes, size_t n, agg_proxy_header *out, sdfed_error *err) {
    *out = (agg_proxy_header){.length = sizeof signature + 4};
    if (n >= 6 && memcmp(bytes, "PROXY ", 6) == 0)
        return sdfed_fail(err, SDFED_ERR_FORMAT,
                          "a PROXY protocol version 1 (text) header: this node reads version 2 (HAProxy: send-proxy-v2 "
                          "on the server line, not send-proxy)");
    if (memcmp(bytes, signature, n < sizeof signature ? n : sizeof signature))
        return sdfed_fail(err, SDFED_ERR_FORMAT,
                          "no PROXY protocol version 2 header: a connection from a balancer named by "
                          "--proxy-protocol-from starts with one (HAProxy: send-proxy-v2 on the server line, and "
                          "check-send-proxy for its health checks)");
    if (n < out->length) return PROXY_MORE;
    int command = bytes[12], family = bytes[13];
    size_t rest = (size_t)bytes[14] << 8 | bytes[15];
    if (command != COMMAND_LOCAL && command != COMMAND_PROXY)
        return sdfed_fail(err, SDFED_ERR_FORMAT, "a PROXY protocol header of version %d, command %d: version 2 is read",
                          command >> 4, command & 15);
    if (sizeof signature + 4 + rest > PROXY_HEADER_MAX)
        return sdfed_fail(err, SDFED_ERR_FORMAT, "a PROXY protocol header of %zu bytes: at most %d are read",
                          sizeof signature + 4 + rest, PROXY_HEADER_MAX);
    size_t need = addresses_size(family);
    if (command == COMMAND_PROXY && rest < need)
        return sdfed_fail(err, SDFED_ERR_FORMAT,
                          "a PROXY protocol header whose %zu bytes of addresses hold no %s address", rest,
                          family == TCP_OVER_IPV4 ? "IPv4" : "IPv6");
    out->length += rest;
    if (n < out->length) return PROXY_MORE;
    out->relayed = command == COMMAND_PROXY && need > 0;
    if (out->relayed) client_of(bytes + sizeof signature + 4, family, &out->client);
    return SDFED_OK;
}
