/* Tests of aggregator/proxy_protocol.c: the PROXY protocol's version 2
 * header as HAProxy sends it (IPv4 and IPv6 clients, TLVs after the
 * addresses, LOCAL for its health checks, families whose addresses are not
 * read), read whole or asked for more byte by byte; every malformed header
 * refused with words (no signature, version 1's text header, another
 * version or command, addresses too short for their family, a header too
 * long); and the balancers a node takes headers from: exact addresses,
 * IPv4 and IPv6, bad ones refused naming the option. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <string.h>

#include "check.h"
#include "proxy_protocol.h"

static const unsigned char signature[12] = {0x0d, 0x0a, 0x0d, 0x0a, 0x00, 0x0d, 0x0a, 0x51, 0x55, 0x49, 0x54, 0x0a};

/* A header into out: the signature, command, family, then `rest` bytes of
 * addresses and TLVs; its length. */
static size_t header(unsigned char *out, int command, int family, const unsigned char *rest, size_t n) {
    memcpy(out, signature, sizeof signature);
    out[12] = (unsigned char)command;
    out[13] = (unsigned char)family;
    out[14] = (unsigned char)(n >> 8);
    out[15] = (unsigned char)n;
    if (n) memcpy(out + 16, rest, n);
    return 16 + n;
}

/* 203.0.113.7:50000 to 10.0.0.11:8080, then a TLV (type 0x04, NOOP, of 3 bytes) */
static const unsigned char ipv4_addresses[] = {203,  0,    113,  7,    10, 0, 0, 11, 0xc3,
                                               0x50, 0x1f, 0x90, 0x04, 0,  3, 1, 2,  3};

static void ipv4_client(void) {
    unsigned char bytes[64];
    size_t n = header(bytes, 0x21, 0x11, ipv4_addresses, sizeof ipv4_addresses);
    agg_proxy_header h;
    sdfed_error err = {0};
    for (size_t have = 0; have < n; have++) {
        int rc = agg_proxy_header_read(bytes, have, &h, &err);
        CHECK(rc == PROXY_MORE && h.length > have && h.length <= n, "%zu of %zu bytes: more (%d, %zu)", have, n, rc,
              h.length);
    }
    unsigned char after[80];
    memcpy(after, bytes, n);
    memcpy(after + n, "GET / HTTP/1.1\r\n", 16); /* the request after it stays */
    CHECK(agg_proxy_header_read(after, n + 16, &h, &err) == SDFED_OK && h.length == n && h.relayed,
          "an IPv4 client, a TLV after its addresses: %s", err.message);
    const struct sockaddr_in *v4 = (const struct sockaddr_in *)&h.client;
    char text[INET_ADDRSTRLEN] = "";
    inet_ntop(AF_INET, &v4->sin_addr, text, sizeof text);
    CHECK(v4->sin_family == AF_INET && !strcmp(text, "203.0.113.7") && ntohs(v4->sin_port) == 50000,
          "the client 203.0.113.7:50000, not %s:%d", text, ntohs(v4->sin_port));
}

static void ipv6_client(void) {
    unsigned char addresses[36] = {0};
    inet_pton(AF_INET6, "2001:db8:1:2::99", addresses);
    inet_pton(AF_INET6, "2001:db8::11", addresses + 16);
    addresses[32] = 0x12;
    addresses[33] = 0x34;
    unsigned char bytes[64];
    size_t n = header(bytes, 0x21, 0x21, addresses, sizeof addresses);
    agg_proxy_header h;
    sdfed_error err = {0};
    CHECK(agg_proxy_header_read(bytes, n, &h, &err) == SDFED_OK && h.length == 52 && h.relayed, "an IPv6 client: %s",
          err.message);
    const struct sockaddr_in6 *v6 = (const struct sockaddr_in6 *)&h.client;
    char text[INET6_ADDRSTRLEN] = "";
    inet_ntop(AF_INET6, &v6->sin6_addr, text, sizeof text);
    CHECK(v6->sin6_family == AF_INET6 && !strcmp(text, "2001:db8:1:2::99") && ntohs(v6->sin6_port) == 0x1234,
          "the client 2001:db8:1:2::99, not %s", text);
}

/* LOCAL (a health check), UNSPEC and UNIX families: the connection's own address stands */
static void not_relayed(void) {
    unsigned char bytes[160], unix_addresses[108] = {0};
    agg_proxy_header h;
    sdfed_error err = {0};
    size_t n = header(bytes, 0x20, 0x00, NULL, 0);
    CHECK(agg_proxy_header_read(bytes, n, &h, &err) == SDFED_OK && h.length == 16 && !h.relayed, "LOCAL: %s",
          err.message);
    n = header(bytes, 0x20, 0x11, ipv4_addresses, 12); /* LOCAL with addresses: read past, not used */
    CHECK(agg_proxy_header_read(bytes, n, &h, &err) == SDFED_OK && h.length == 28 && !h.relayed,
          "LOCAL with addresses: %s", err.message);
    n = header(bytes, 0x21, 0x31, unix_addresses, sizeof unix_addresses);
    CHECK(agg_proxy_header_read(bytes, n, &h, &err) == SDFED_OK && h.length == n && !h.relayed,
          "PROXY over a Unix socket: %s", err.message);
    n = header(bytes, 0x21, 0x12, ipv4_addresses, 12); /* UDP over IPv4 */
    CHECK(agg_proxy_header_read(bytes, n, &h, &err) == SDFED_OK && !h.relayed, "PROXY of a datagram: %s", err.message);
}

static void refused(const unsigned char *bytes, size_t n, const char *words, const char *what) {
    agg_proxy_header h;
    sdfed_error err = {0};
    CHECK(agg_proxy_header_read(bytes, n, &h, &err) == SDFED_ERR_FORMAT && strstr(err.message, words),
          "%s: refused saying '%s' (%s)", what, words, err.message);
}

static void malformed(void) {
    const char *request = "GET /status HTTP/1.1\r\nHost: x\r\n\r\n";
    refused((const unsigned char *)request, strlen(request), "--proxy-protocol-from", "a request without a header");
    refused((const unsigned char *)request, 1, "send-proxy-v2", "its first byte alone");
    const char *v1 = "PROXY TCP4 203.0.113.7 10.0.0.11 50000 8080\r\n";
    refused((const unsigned char *)v1, strlen(v1), "version 1", "version 1's text header");
    unsigned char bytes[1200] = {0};
    size_t n = header(bytes, 0x11, 0x11, ipv4_addresses, 12);
    refused(bytes, n, "version 1, command 1", "a binary header of version 1");
    n = header(bytes, 0x22, 0x11, ipv4_addresses, 12);
    refused(bytes, n, "command 2", "command 2");
    n = header(bytes, 0x21, 0x11, ipv4_addresses, 8);
    refused(bytes, n, "hold no IPv4 address", "8 bytes of IPv4 addresses");
    n = header(bytes, 0x21, 0x21, ipv4_addresses, 12);
    refused(bytes, n, "hold no IPv6 address", "12 bytes of IPv6 addresses");
    unsigned char tlvs[1100] = {0};
    memcpy(tlvs, ipv4_addresses, 12);
    n = header(bytes, 0x21, 0x11, tlvs, 1025);
    refused(bytes, 16, "1041 bytes", "a header longer than 1,040 bytes, known from its first 16");
    n = header(bytes, 0x21, 0x11, tlvs, 1024);
    agg_proxy_header h;
    sdfed_error err = {0};
    CHECK(agg_proxy_header_read(bytes, n, &h, &err) == SDFED_OK && h.length == PROXY_HEADER_MAX,
          "a header of 1,040 bytes: %s", err.message);
}

static void balancers(void) {
    agg_proxy_balancers b = {0};
    sdfed_error err = {0};
    CHECK(agg_proxy_balancers_add(&b, "127.0.0.1", "--proxy-protocol-from", &err) == SDFED_OK &&
              agg_proxy_balancers_add(&b, "2001:db8::5", "--proxy-protocol-from", &err) == SDFED_OK,
          "two balancers: %s", err.message);
    struct sockaddr_in v4 = {.sin_family = AF_INET};
    struct sockaddr_in6 v6 = {.sin6_family = AF_INET6};
    inet_pton(AF_INET, "127.0.0.1", &v4.sin_addr);
    CHECK(agg_proxy_balancers_hold(&b, (const struct sockaddr *)&v4), "127.0.0.1 is a balancer");
    inet_pton(AF_INET, "127.0.0.2", &v4.sin_addr);
    CHECK(!agg_proxy_balancers_hold(&b, (const struct sockaddr *)&v4), "127.0.0.2 is not");
    inet_pton(AF_INET6, "::ffff:127.0.0.1", &v6.sin6_addr);
    CHECK(agg_proxy_balancers_hold(&b, (const struct sockaddr *)&v6), "127.0.0.1 written in IPv6 is");
    inet_pton(AF_INET6, "2001:db8::5", &v6.sin6_addr);
    CHECK(agg_proxy_balancers_hold(&b, (const struct sockaddr *)&v6), "2001:db8::5 is");
    inet_pton(AF_INET6, "2001:db8::6", &v6.sin6_addr);
    CHECK(!agg_proxy_balancers_hold(&b, (const struct sockaddr *)&v6), "2001:db8::6, in its /64, is not");
    CHECK(agg_proxy_balancers_add(&b, "haproxy.local", "--proxy-protocol-from", &err) == SDFED_ERR_ARG &&
              strstr(err.message, "--proxy-protocol-from haproxy.local: not an IPv4 or IPv6 address"),
          "a name: %s", err.message);
    for (int i = b.n; i < PROXY_BALANCERS_MAX; i++)
        agg_proxy_balancers_add(&b, "10.0.0.1", "--proxy-protocol-from", &err);
    CHECK(agg_proxy_balancers_add(&b, "10.0.0.2", "--proxy-protocol-from", &err) == SDFED_ERR_ARG &&
              strstr(err.message, "at most 16"),
          "one too many: %s", err.message);
}

int main(void) {
    if (check_case("ipv4_client")) ipv4_client();
    if (check_case("ipv6_client")) ipv6_client();
    if (check_case("not_relayed")) not_relayed();
    if (check_case("malformed")) malformed();
    if (check_case("balancers")) balancers();
    return check_report("test_proxy_protocol");
}
