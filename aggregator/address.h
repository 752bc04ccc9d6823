/* A socket's IP address as 16 bytes, the one form the aggregator compares
 * and counts addresses in (peers.c, proxy_protocol.c): IPv6's own bytes,
 * IPv4 mapped into IPv6 (::ffff:a.b.c.d). */
#ifndef SDFED_AGG_ADDRESS_H
#define SDFED_AGG_ADDRESS_H

#include <sys/socket.h>

/* sa's address into out; 0 (out all zeros) when sa is neither family. */
int agg_address_bytes(const struct sockaddr *sa, unsigned char out[16]);
/* 1 when bytes hold an IPv4 address (mapped). */
int agg_address_is_ipv4(const unsigned char bytes[16]);

#endif
