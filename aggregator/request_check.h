/* The gate's check of a plain-HTTP request (gate.h says why it comes
 * before lws): the first bytes of a connection, as peeked, against what lws
 * can take whole and answer properly. A request line must be
 *     METHOD SP /path[?query] SP HTTP/1.0 or HTTP/1.1
 * at most 2048 bytes, printable ASCII with no fragment, every '%' followed
 * by two hex digits that do not encode a control character, and no "." or
 * ".." path segment, encoded or not, and at most 16 query arguments; the
 * request line and the headers up to the empty line that ends them at most
 * max_header_bytes, and at most 64 header lines; GET only. Pure: no
 * sockets, so a fuzzer drives it (tests/fuzz/fuzz_request.c). */
#ifndef SDFED_AGGREGATOR_REQUEST_CHECK_H
#define SDFED_AGGREGATOR_REQUEST_CHECK_H

#include <stddef.h>

enum { REQUEST_INCOMPLETE = -1 };

/* 0 when the n bytes hold a request line and headers lws may have whole;
 * else the status to answer with (400; 405 for a method other than GET;
 * 431 for headers over the limits) and why, in words, into why (cap
 * bytes); REQUEST_INCOMPLETE while more is to come (ended: the peer has
 * closed its sending side, so nothing more will: the request is then
 * refused as it stands). */
int agg_request_check(const char *request, size_t n, size_t max_header_bytes, int ended, char *why, size_t cap);

#endif
