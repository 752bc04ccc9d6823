/* The PROXY protocol (HAProxy's doc/proxy-protocol.txt), version 2: the
 * binary header a load balancer sends first on every connection it opens
 * to a node, naming the client whose connection it relays. A node reads it
 * only on connections from the balancers the host named
 * (--proxy-protocol-from: HAProxy with send-proxy-v2 on its server lines),
 * so that the limits per address (peers.h) count each client by its own
 * address, not every client together by the balancer's; from anywhere else
 * such a header is not looked for, and cannot lend a client another
 * address. No sockets here: bytes in, the header's length and the client's
 * address out. */
#ifndef SDFED_AGGREGATOR_PROXY_PROTOCOL_H
#define SDFED_AGGREGATOR_PROXY_PROTOCOL_H

#include <stddef.h>
#include <sys/socket.h>

#include "base/status.h"

/* The balancers a node takes headers from: exact addresses (IPv4 or IPv6). */
enum { PROXY_BALANCERS_MAX = 16 };
typedef struct agg_proxy_balancers {
    int n;
    unsigned char addresses[PROXY_BALANCERS_MAX][16]; /* IPv4 as ::ffff:a.b.c.d */
} agg_proxy_balancers;

/* Adds an address given with `option` (named in the message when it is not
 * an IPv4 or IPv6 address, or one too many). */
int agg_proxy_balancers_add(agg_proxy_balancers *b, const char *address, const char *option, sdfed_error *err);
/* Whether a connection's peer (getpeername's) is one of them. */
int agg_proxy_balancers_hold(const agg_proxy_balancers *b, const struct sockaddr *peer);

/* The longest header read: its 16 bytes and 1,024 of addresses and TLVs
 * (HAProxy's are 28 bytes for IPv4, 52 for IPv6, with no TLVs unless its
 * configuration adds some). */
enum { PROXY_HEADER_MAX = 16 + 1024 };

typedef struct agg_proxy_header {
    size_t length; /* the header's bytes, once known (PROXY_MORE: the least to peek for) */
    int relayed;   /* 1: a client's connection, its address in client; 0: the balancer's own
                    * (LOCAL, as its health checks are, or an address family other than TCP
                    * over IPv4 or IPv6): the connection's own address stands */
    struct sockaddr_storage client;
} agg_proxy_header;

enum { PROXY_MORE = -1 };
/* The header at the start of the n bytes: 0 when it is whole and valid
 * (out filled), PROXY_MORE while bytes are missing (out->length says how
 * many it takes at least), SDFED_ERR_FORMAT when the bytes are not a
 * version 2 header (why, in words, into err). */
int agg_proxy_header_read(const unsigned char *bytes, size_t n, agg_proxy_header *out, sdfed_error *err);

#endif
