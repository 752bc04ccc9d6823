/* Secure aggregation's messages as bytes: the seven a round exchanges,
 * written and read (every length and count checked against the message's
 * size and the caller's limits), so that the server stores them and puts
 * them on the wire as they are, and the native client, the page's wasm and
 * the simulator build and read the same bytes. The wire's framing around
 * them is the protocol's (docs/protocol.md).
 *
 * Integers are big-endian (as fed/secagg_layout.h's), client places u32;
 * the masked input's ring elements are packed at B bits each: element j
 * holds bits jB .. jB + B - 1 of the packed bytes, bit m being bit m mod 8
 * of byte m / 8 (little-endian bits and bytes), the last byte's spare high
 * bits zeros. Every message starts with
 *   kind (1) || round (8, two's complement)
 * and then, by kind:
 *   1 advertise        client -> server: mask public key (32) || share
 *                      public key (32)
 *   2 share_request    server -> client i: n (4) || i (4) || k (4) || t (4)
 *                      || min_inputs (4) || session id (32) || for each of
 *                      its k + 1 holders in slot order: the client (4) ||
 *                      its mask public key (32) || share public key (32),
 *                      both all zeros for a holder that did not advertise
 *   3 shares           client -> server: count (4) || count x (recipient (4)
 *                      || sealed pair (64)): one for each holder, itself
 *                      left out, that advertised
 *   4 masked_request   server -> client: count (4) || count x (sender (4) ||
 *                      sealed pair (64)): the pairs its neighbours that
 *                      shared sealed for it, relayed
 *   5 masked           client -> server: count (4) = P + 1 || the masked
 *                      input's ring elements, packed at B bits
 *   6 unmask_request   server -> client: inputs (4, the masked inputs the
 *                      server holds) || count (4) || alive clients (4 each)
 *                      || count (4) || dropped clients (4 each)
 *   7 unmask           client -> server: count (4) || count x (owner (4) ||
 *                      which (1: the share of its self-mask seed b, 2: of
 *                      its mask seed) || the share's y values (24))
 * Sizes: advertise 73; share_request 61 + 68 (k + 1); shares and
 * masked_request 13 + 68 count; masked 13 + ceil(B (P + 1) / 8); unmask_request
 * 21 + 4 (alive + dropped); unmask 13 + 29 count. */
#ifndef SDFED_SECAGG_MESSAGE_H
#define SDFED_SECAGG_MESSAGE_H

#include <stddef.h>
#include <stdint.h>

#include "base/io.h"
#include "base/status.h"

typedef enum sdfed_secagg_msg_kind {
    SDFED_SECAGG_MSG_ADVERTISE = 1,
    SDFED_SECAGG_MSG_SHARE_REQUEST,
    SDFED_SECAGG_MSG_SHARES,
    SDFED_SECAGG_MSG_MASKED_REQUEST,
    SDFED_SECAGG_MSG_MASKED,
    SDFED_SECAGG_MSG_UNMASK_REQUEST,
    SDFED_SECAGG_MSG_UNMASK,
    SDFED_SECAGG_MSG_KIND_END
} sdfed_secagg_msg_kind;

#define SDFED_SECAGG_MSG_HEADER 9
#define SDFED_SECAGG_HOLDER_BYTES 68  /* a holder in a share_request */
#define SDFED_SECAGG_RELAYED_BYTES 68 /* a client and a sealed pair */
#define SDFED_SECAGG_ANSWER_BYTES 29  /* an unmask answer's share */

/* "advertise", ...; NULL for an unknown kind. */
const char *sdfed_secagg_msg_name(int kind);
/* The kind of a message (0 when it is shorter than a header). */
int sdfed_secagg_msg_kind_of(const unsigned char *msg, size_t len);

/* A big-endian u32 read, and written. */
uint32_t sdfed_secagg_be32(const unsigned char *p);
void sdfed_secagg_put_be32(unsigned char *p, uint32_t v);

/* ---- writing: out is emptied, then holds the whole message ------------- */

int sdfed_secagg_write_advertise(sdfed_buffer *out, int64_t round, const unsigned char mask_key[32],
                                 const unsigned char share_key[32], sdfed_error *err);
/* keys: (k + 1) x 64 bytes, a holder's mask key then share key. */
int sdfed_secagg_write_share_request(sdfed_buffer *out, int64_t round, int n, int self, int k, int t, int min_inputs,
                                     const unsigned char session[32], const int *holders, const unsigned char *keys,
                                     sdfed_error *err);
/* kind SHARES or MASKED_REQUEST; clients (count), sealed (count x 64). */
int sdfed_secagg_write_relayed(sdfed_buffer *out, int kind, int64_t round, int count, const int *clients,
                               const unsigned char *sealed, sdfed_error *err);
/* The packed bytes of len ring elements at ring_bits each: ceil(B len / 8). */
size_t sdfed_secagg_masked_bytes(int ring_bits, size_t len);
/* v (len, each below 2^B) packed at B bits each. */
int sdfed_secagg_write_masked(sdfed_buffer *out, int64_t round, int ring_bits, const uint64_t *v, size_t len,
                              sdfed_error *err);
int sdfed_secagg_write_unmask_request(sdfed_buffer *out, int64_t round, int inputs, const int *alive, int n_alive,
                                      const int *dropped, int n_dropped, sdfed_error *err);
/* owners and which (count each), shares (count x 24). */
int sdfed_secagg_write_unmask(sdfed_buffer *out, int64_t round, int count, const int *owners,
                              const unsigned char *which, const unsigned char *shares, sdfed_error *err);

/* ---- reading: views into the message, which must outlive them ---------- */

/* Refuses (SDFED_ERR_FORMAT, naming the message) another kind or round. */
int sdfed_secagg_read_header(const unsigned char *msg, size_t len, int kind, int64_t round, sdfed_error *err);

int sdfed_secagg_read_advertise(const unsigned char *msg, size_t len, int64_t round, const unsigned char **mask_key,
                                const unsigned char **share_key, sdfed_error *err);

typedef struct sdfed_secagg_share_request {
    int n, self, k, t, min_inputs;
    const unsigned char *session; /* 32 bytes */
    const unsigned char *holders; /* (k + 1) x 68: client (4) || mask key (32) || share key (32) */
} sdfed_secagg_share_request;

/* A request for at most max_clients clients (k + 1 <= n, every client
 * below n, self among the holders). */
int sdfed_secagg_read_share_request(const unsigned char *msg, size_t len, int64_t round, int max_clients,
                                    sdfed_secagg_share_request *out, sdfed_error *err);

/* A list of fixed-size entries: count, and where they start. */
typedef struct sdfed_secagg_list {
    int count;
    const unsigned char *entries;
} sdfed_secagg_list;

/* SHARES or MASKED_REQUEST with at most max_count entries of 68 bytes. */
int sdfed_secagg_read_relayed(const unsigned char *msg, size_t len, int kind, int64_t round, int max_count,
                              sdfed_secagg_list *out, sdfed_error *err);
/* v (len) from a masked input of exactly len elements packed at B bits
 * (its spare bits zeros). */
int sdfed_secagg_read_masked(const unsigned char *msg, size_t len, int64_t round, int ring_bits, uint64_t *v,
                             size_t count, sdfed_error *err);

typedef struct sdfed_secagg_unmask_request {
    int inputs;
    sdfed_secagg_list alive, dropped; /* entries of 4 bytes */
} sdfed_secagg_unmask_request;

/* A request naming at most max_count clients in each set. */
int sdfed_secagg_read_unmask_request(const unsigned char *msg, size_t len, int64_t round, int max_count,
                                     sdfed_secagg_unmask_request *out, sdfed_error *err);
/* UNMASK with at most max_count entries of 29 bytes. */
int sdfed_secagg_read_unmask(const unsigned char *msg, size_t len, int64_t round, int max_count, sdfed_secagg_list *out,
                             sdfed_error *err);

#endif
