/* Secure aggregation's messages as bytes (fed/secagg_message.h): each of
 * the seven written and read back to the same values, at its documented
 * size; a message of another kind or round, cut short, one byte too long,
 * with a count above the caller's limit, a masked value not below 2^B, or
 * a share_request whose numbers do not hold together (a holder beyond n,
 * the client not among its holders, t above k + 1) refused with
 * SDFED_ERR_FORMAT naming the message; a truncation of every message at
 * every length refused, never read past its end. Every build. */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "fed/secagg_layout.h"
#include "fed/secagg_message.h"

static const int64_t ROUND = -3; /* negative rounds travel too (two's complement) */

/* the readers as one shape: 1 when the message is refused as malformed */
typedef int (*reader_fn)(const unsigned char *msg, size_t len);
static int read_unmask(const unsigned char *msg, size_t len) {
    sdfed_secagg_list l;
    return sdfed_secagg_read_unmask(msg, len, ROUND, 2, &l, NULL) == SDFED_ERR_FORMAT;
}
static int read_unmask_request(const unsigned char *msg, size_t len) {
    sdfed_secagg_unmask_request r;
    return sdfed_secagg_read_unmask_request(msg, len, ROUND, 5, &r, NULL) == SDFED_ERR_FORMAT;
}
static int read_share_request(const unsigned char *msg, size_t len) {
    sdfed_secagg_share_request q;
    return sdfed_secagg_read_share_request(msg, len, ROUND, 10, &q, NULL) == SDFED_ERR_FORMAT;
}
static int read_shares(const unsigned char *msg, size_t len) {
    sdfed_secagg_list l;
    return sdfed_secagg_read_relayed(msg, len, SDFED_SECAGG_MSG_SHARES, ROUND, 3, &l, NULL) == SDFED_ERR_FORMAT;
}

/* whether the message in b is refused when cut at every length, and with a byte more (each copy exactly its
 * length, so that a read past its end is the sanitizers' to see) */
static int refused_cut(const sdfed_buffer *b, reader_fn read) {
    int refused = 1;
    for (size_t len = 0; len <= b->size + 1; len++) {
        if (len == b->size) continue;
        unsigned char *copy = malloc(len ? len : 1);
        memcpy(copy, b->data, len < b->size ? len : b->size);
        if (len > b->size) copy[b->size] = 0;
        refused &= read(copy, len);
        free(copy);
    }
    return refused;
}

static void test_round_trips(void) {
    sdfed_error err = {0};
    sdfed_buffer b = {0};
    unsigned char mask[32], share[32], session[32], keys[5 * 64], sealed[3 * SDFED_SECAGG_SEALED_BYTES];
    for (int i = 0; i < 32; i++) {
        mask[i] = (unsigned char)i;
        share[i] = (unsigned char)(100 + i);
        session[i] = (unsigned char)(200 + i);
    }
    for (size_t i = 0; i < sizeof keys; i++) keys[i] = (unsigned char)(i * 7);
    for (size_t i = 0; i < sizeof sealed; i++) sealed[i] = (unsigned char)(i * 13);

    CHECK(sdfed_secagg_write_advertise(&b, ROUND, mask, share, &err) == SDFED_OK && b.size == 73 &&
              sdfed_secagg_msg_kind_of(b.data, b.size) == SDFED_SECAGG_MSG_ADVERTISE,
          "advertise: 73 bytes");
    const unsigned char *m, *s;
    CHECK(sdfed_secagg_read_advertise(b.data, b.size, ROUND, &m, &s, &err) == SDFED_OK && !memcmp(m, mask, 32) &&
              !memcmp(s, share, 32),
          "advertise read back: %s", err.message);
    CHECK(sdfed_secagg_read_advertise(b.data, b.size, ROUND + 1, &m, &s, &err) == SDFED_ERR_FORMAT &&
              strstr(err.message, "round -3, not -2"),
          "another round refused: %s", err.message);
    CHECK(sdfed_secagg_read_advertise(b.data, b.size - 1, ROUND, &m, &s, &err) == SDFED_ERR_FORMAT, "cut short: %s",
          err.message);

    const int holders[5] = {7, 2, 9, 4, 0};
    CHECK(sdfed_secagg_write_share_request(&b, ROUND, 10, 9, 4, 3, 7, session, holders, keys, &err) == SDFED_OK &&
              b.size == 61 + 68 * 5,
          "share_request: 61 + 68 (k + 1) bytes");
    sdfed_secagg_share_request q;
    CHECK(sdfed_secagg_read_share_request(b.data, b.size, ROUND, 10, &q, &err) == SDFED_OK && q.n == 10 &&
              q.self == 9 && q.k == 4 && q.t == 3 && q.min_inputs == 7 && !memcmp(q.session, session, 32) &&
              sdfed_secagg_be32(q.holders + 68 * 2) == 9 && !memcmp(q.holders + 68 * 3 + 4, keys + 64 * 3, 64),
          "share_request read back: %s", err.message);
    CHECK(sdfed_secagg_read_share_request(b.data, b.size, ROUND, 9, &q, &err) == SDFED_ERR_FORMAT,
          "more clients than the caller allows: %s", err.message);
    const int stray[5] = {7, 2, 10, 4, 0}, without[5] = {7, 2, 8, 4, 0};
    sdfed_secagg_write_share_request(&b, ROUND, 10, 9, 4, 3, 7, session, stray, keys, &err);
    CHECK(sdfed_secagg_read_share_request(b.data, b.size, ROUND, 10, &q, &err) == SDFED_ERR_FORMAT &&
              strstr(err.message, "holder 10 of 10"),
          "a holder beyond n: %s", err.message);
    sdfed_secagg_write_share_request(&b, ROUND, 10, 9, 4, 3, 7, session, without, keys, &err);
    CHECK(sdfed_secagg_read_share_request(b.data, b.size, ROUND, 10, &q, &err) == SDFED_ERR_FORMAT &&
              strstr(err.message, "not among its own holders"),
          "the client not among its holders: %s", err.message);
    sdfed_secagg_write_share_request(&b, ROUND, 10, 9, 4, 6, 7, session, holders, keys, &err);
    CHECK(sdfed_secagg_read_share_request(b.data, b.size, ROUND, 10, &q, &err) == SDFED_ERR_FORMAT, "t above k + 1: %s",
          err.message);

    const int to[3] = {4, 1, 8};
    for (int kind = SDFED_SECAGG_MSG_SHARES; kind <= SDFED_SECAGG_MSG_MASKED_REQUEST; kind++) {
        sdfed_secagg_list l;
        CHECK(sdfed_secagg_write_relayed(&b, kind, ROUND, 3, to, sealed, &err) == SDFED_OK && b.size == 13 + 68 * 3 &&
                  sdfed_secagg_read_relayed(b.data, b.size, kind, ROUND, 3, &l, &err) == 0 && l.count == 3 &&
                  sdfed_secagg_be32(l.entries + 68) == 1 && !memcmp(l.entries + 68 * 2 + 4, sealed + 64 * 2, 64),
              "%s: 13 + 68 count bytes (a sealed pair of 64), read back", sdfed_secagg_msg_name(kind));
        CHECK(sdfed_secagg_read_relayed(b.data, b.size, kind, ROUND, 2, &l, &err) == SDFED_ERR_FORMAT &&
                  strstr(err.message, "3 entries, at most 2"),
              "%s: more entries than allowed: %s", sdfed_secagg_msg_name(kind), err.message);
    }
    sdfed_secagg_list l;
    CHECK(sdfed_secagg_read_relayed(b.data, b.size, SDFED_SECAGG_MSG_SHARES, ROUND, 3, &l, &err) == SDFED_ERR_FORMAT &&
              strstr(err.message, "not a shares message (masked_request"),
          "a masked_request read as shares: %s", err.message);
    /* shares in the layout before this one (entries of 4 + 108 bytes): said so, not only "its counts say" */
    sdfed_secagg_write_relayed(&b, SDFED_SECAGG_MSG_SHARES, ROUND, 3, to, sealed, &err);
    unsigned char v1[13 + 112 * 3] = {0};
    memcpy(v1, b.data, 13);
    CHECK(sdfed_secagg_read_relayed(v1, sizeof v1, SDFED_SECAGG_MSG_SHARES, ROUND, 3, &l, &err) == SDFED_ERR_FORMAT &&
              strstr(err.message, "3 sealed pairs of 112 bytes, the layout before this one (sdfed/secagg/v1)") &&
              strstr(err.message, "reload"),
          "shares of the v1 layout: %s", err.message);
    CHECK(sdfed_secagg_read_relayed(v1, sizeof v1 - 1, SDFED_SECAGG_MSG_SHARES, ROUND, 3, &l, &err) ==
                  SDFED_ERR_FORMAT &&
              strstr(err.message, "its counts say"),
          "shares of neither layout: %s", err.message);

    uint64_t v[5] = {5, 2, 7, 1, 6}, back[5];
    CHECK(sdfed_secagg_write_masked(&b, ROUND, 3, v, 5, &err) == SDFED_OK && b.size == 13 + 2 && b.data[13] == 0xD5 &&
              b.data[14] == 0x63 && sdfed_secagg_read_masked(b.data, b.size, ROUND, 3, back, 5, &err) == SDFED_OK &&
              !memcmp(v, back, sizeof v),
          "masked, 3 bits: 5 values in 15 bits, little-endian (101 010 111 100 011 from bit 0), read back");
    b.data[14] |= 0x80;
    CHECK(sdfed_secagg_read_masked(b.data, b.size, ROUND, 3, back, 5, &err) == SDFED_ERR_FORMAT &&
              strstr(err.message, "bits past the last value are not zeros"),
          "a spare bit set: %s", err.message);
    const uint64_t wide[5] = {0, 1, 0xFFFFFFFF, 12345, 7};
    memcpy(v, wide, sizeof v);
    CHECK(sdfed_secagg_write_masked(&b, ROUND, 32, v, 5, &err) == SDFED_OK && b.size == 13 + 4 * 5 &&
              b.data[13 + 8] == 0xFF && b.data[13 + 12] == 0x39 && b.data[13 + 13] == 0x30 &&
              sdfed_secagg_read_masked(b.data, b.size, ROUND, 32, back, 5, &err) == SDFED_OK &&
              !memcmp(v, back, sizeof v),
          "masked, 32 bits: 4 bytes a value, little-endian");
    CHECK(sdfed_secagg_read_masked(b.data, b.size, ROUND, 30, back, 5, &err) == SDFED_ERR_FORMAT &&
              strstr(err.message, "33 bytes, its counts say 32"),
          "a masked input packed for another ring: %s", err.message);
    CHECK(sdfed_secagg_read_masked(b.data, b.size, ROUND, 32, back, 4, &err) == SDFED_ERR_FORMAT,
          "another length than the round's: %s", err.message);
    v[2] = (uint64_t)1 << 46;
    v[4] = ((uint64_t)1 << 47) - 1;
    CHECK(sdfed_secagg_write_masked(&b, ROUND, 47, v, 5, &err) == SDFED_OK && b.size == 13 + 30 &&
              sdfed_secagg_read_masked(b.data, b.size, ROUND, 47, back, 5, &err) == SDFED_OK &&
              !memcmp(v, back, sizeof v),
          "masked, 47 bits: 5 values in 30 bytes, read back");
    v[4] = UINT64_MAX;
    CHECK(sdfed_secagg_write_masked(&b, ROUND, 64, v, 5, &err) == SDFED_OK && b.size == 13 + 8 * 5 &&
              sdfed_secagg_read_masked(b.data, b.size, ROUND, 64, back, 5, &err) == SDFED_OK &&
              !memcmp(v, back, sizeof v),
          "masked, 64 bits: 8 bytes a value, read back");

    const int alive[3] = {0, 3, 5}, dropped[1] = {2};
    sdfed_secagg_unmask_request r;
    CHECK(sdfed_secagg_write_unmask_request(&b, ROUND, 8, alive, 3, dropped, 1, &err) == SDFED_OK &&
              b.size == 21 + 4 * 4 && sdfed_secagg_read_unmask_request(b.data, b.size, ROUND, 5, &r, &err) == 0 &&
              r.inputs == 8 && r.alive.count == 3 && r.dropped.count == 1 &&
              sdfed_secagg_be32(r.alive.entries + 8) == 5 && sdfed_secagg_be32(r.dropped.entries) == 2,
          "unmask_request read back: %s", err.message);

    const int owners[2] = {3, 6};
    const unsigned char which[2] = {1, 2};
    unsigned char shares[48];
    for (int i = 0; i < 48; i++) shares[i] = (unsigned char)(3 * i);
    CHECK(sdfed_secagg_write_unmask(&b, ROUND, 2, owners, which, shares, &err) == SDFED_OK && b.size == 13 + 29 * 2 &&
              sdfed_secagg_read_unmask(b.data, b.size, ROUND, 2, &l, &err) == SDFED_OK && l.count == 2 &&
              sdfed_secagg_be32(l.entries + 29) == 6 && l.entries[29 + 4] == 2 &&
              !memcmp(l.entries + 29 + 5, shares + 24, 24),
          "unmask: 13 + 29 count bytes (a share of 24), read back: %s", err.message);

    /* every message cut at every length, and one byte too long */
    CHECK(refused_cut(&b, read_unmask), "unmask cut at every length or one byte long: refused");
    sdfed_secagg_write_unmask_request(&b, ROUND, 8, alive, 3, dropped, 1, &err);
    CHECK(refused_cut(&b, read_unmask_request), "unmask_request cut at every length or one byte long: refused");
    sdfed_secagg_write_share_request(&b, ROUND, 10, 9, 4, 3, 7, session, holders, keys, &err);
    CHECK(refused_cut(&b, read_share_request), "share_request cut at every length or one byte long: refused");
    sdfed_secagg_write_relayed(&b, SDFED_SECAGG_MSG_SHARES, ROUND, 3, to, sealed, &err);
    CHECK(refused_cut(&b, read_shares), "shares cut at every length or one byte long: refused");
    CHECK(sdfed_secagg_msg_name(0) == NULL && sdfed_secagg_msg_name(8) == NULL &&
              !strcmp(sdfed_secagg_msg_name(SDFED_SECAGG_MSG_UNMASK), "unmask") &&
              sdfed_secagg_msg_kind_of(b.data, 8) == 0,
          "names and kinds");
    sdfed_buffer_free(&b);
}

int main(void) {
    test_round_trips();
    return check_report("test_secagg_message");
}
