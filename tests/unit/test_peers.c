/* Tests of aggregator/peers.c: addresses as the limits count them (IPv4
 * alone, IPv6 by its /64, IPv4 written in IPv6 as IPv4), connections per
 * address and for the server with its reserve, files being sent, the
 * join-key lock-out that
 * doubles and forgives, registrations per address and minute, and a table
 * that stays within its size: the least recently heard idle address makes
 * room, an address with a connection never does, and addresses that hold
 * nothing are forgotten. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <string.h>

#include "check.h"
#include "peers.h"

#define T0 1000000000 /* ms: a monotonic clock's time */
#define DAY (24 * 3600 * (int64_t)1000)

static agg_peer_address v4(const char *text) {
    struct sockaddr_in sa = {.sin_family = AF_INET};
    inet_pton(AF_INET, text, &sa.sin_addr);
    return agg_peers_address((const struct sockaddr *)&sa);
}

static agg_peer_address v6(const char *text) {
    struct sockaddr_in6 sa = {.sin6_family = AF_INET6};
    inet_pton(AF_INET6, text, &sa.sin6_addr);
    return agg_peers_address((const struct sockaddr *)&sa);
}

static int same(agg_peer_address a, agg_peer_address b) { return memcmp(a.bytes, b.bytes, 16) == 0; }

static agg_peers *open_with(agg_peers_limits lim) {
    agg_peers *p = NULL;
    sdfed_error err = {0};
    CHECK(agg_peers_open(&p, &lim, &err) == SDFED_OK, "%s", err.message);
    return p;
}

static void addresses(void) {
    CHECK(!same(v4("127.0.0.2"), v4("127.0.0.3")), "two IPv4 addresses are two");
    CHECK(same(v4("192.0.2.7"), v6("::ffff:192.0.2.7")), "IPv4 written in IPv6 is the IPv4 address");
    CHECK(same(v6("2001:db8:1:2::1"), v6("2001:db8:1:2:ffff:1:2:3")), "one /64 is one address");
    CHECK(!same(v6("2001:db8:1:2::1"), v6("2001:db8:1:3::1")), "two /64s are two");
    char text[64];
    agg_peer_address a = v4("192.0.2.7");
    agg_peers_address_text(&a, text, sizeof text);
    CHECK(strcmp(text, "192.0.2.7") == 0, "%s", text);
    a = v6("2001:db8:1:2:3:4:5:6");
    agg_peers_address_text(&a, text, sizeof text);
    CHECK(strcmp(text, "2001:db8:1:2::/64") == 0, "%s", text);
}

static void connections(void) {
    agg_peers *p = open_with((agg_peers_limits){.max_addresses = 64,
                                                .max_connections = 5,
                                                .reserve = 2,
                                                .max_connections_per_address = 3,
                                                .max_file_sends = 2,
                                                .key_failures = 10,
                                                .key_lockout_ms = 60000,
                                                .registrations_per_minute = 20});
    agg_peer_address a = v4("127.0.0.2"), b = v6("2001:db8::1"), b_too = v6("2001:db8::2");
    for (int i = 0; i < 3; i++) CHECK(agg_peers_connect(p, &a, T0) == PEERS_ADMITTED, "a's connection %d", i);
    CHECK(agg_peers_connect(p, &a, T0) == PEERS_ADDRESS_FULL, "a's fourth connection is refused");
    CHECK(agg_peers_connect(p, &b, T0) == PEERS_ADMITTED, "another address is not");
    CHECK(agg_peers_connect(p, &b_too, T0) == PEERS_ADMITTED, "nor another address of its /64, up to the limit");
    agg_peers_disconnect(p, &a, T0);
    CHECK(agg_peers_connect(p, &a, T0) == PEERS_ADMITTED, "a connection closed makes room for a");
    /* 5 held (a 3, b 2): the next two are in the reserve, then the server is full */
    agg_peer_address c = v4("127.0.0.4"), d = v4("127.0.0.5"), e = v4("127.0.0.6");
    CHECK(agg_peers_connect(p, &c, T0) == PEERS_IN_RESERVE, "past max_connections: the reserve");
    CHECK(agg_peers_connect(p, &d, T0) == PEERS_IN_RESERVE, "the reserve's second");
    CHECK(agg_peers_connect(p, &e, T0) == PEERS_SERVER_FULL, "past the reserve: refused");
    agg_peers_stats s;
    agg_peers_get_stats(p, T0, &s);
    CHECK(s.connections == 7 && s.refused[PEERS_REFUSED_ADDRESS_CONNECTIONS] == 1 &&
              s.refused[PEERS_REFUSED_SERVER_CONNECTIONS] == 1,
          "%lld connections, refused %lld by address, %lld by the server", (long long)s.connections,
          (long long)s.refused[PEERS_REFUSED_ADDRESS_CONNECTIONS],
          (long long)s.refused[PEERS_REFUSED_SERVER_CONNECTIONS]);
    agg_peers_disconnect(p, &e, T0); /* never admitted: changes nothing */
    agg_peers_get_stats(p, T0, &s);
    CHECK(s.connections == 7, "a refused connection's end is not counted: %lld", (long long)s.connections);
    /* files being sent: at most max_file_sends */
    CHECK(agg_peers_file_begin(p) && agg_peers_file_begin(p), "two files on their way");
    CHECK(!agg_peers_file_begin(p), "a third is refused");
    agg_peers_files_end(p, 1);
    CHECK(agg_peers_file_begin(p), "one ended: another may go");
    agg_peers_files_end(p, 2);
    agg_peers_get_stats(p, T0, &s);
    CHECK(s.file_sends == 0 && s.refused[PEERS_REFUSED_FILE_SENDS] == 1, "%lld files, %lld refused",
          (long long)s.file_sends, (long long)s.refused[PEERS_REFUSED_FILE_SENDS]);
    agg_peers_close(p);
}

static void lockouts(void) {
    agg_peers *p = open_with((agg_peers_limits){.max_addresses = 64,
                                                .max_connections = 8,
                                                .max_connections_per_address = 8,
                                                .key_failures = 3,
                                                .key_lockout_ms = 1000,
                                                .registrations_per_minute = 2});
    agg_peer_address a = v4("127.0.0.2"), b = v4("127.0.0.3");
    int64_t t = T0;
    CHECK(agg_peers_key_failed(p, &a, t) == 0 && agg_peers_key_failed(p, &a, t) == 0, "two wrong keys earn nothing");
    agg_peers_key_succeeded(p, &a);
    CHECK(agg_peers_key_failed(p, &a, t) == 0 && agg_peers_key_failed(p, &a, t) == 0, "a right key forgave them");
    CHECK(agg_peers_key_failed(p, &a, t) == 1000, "the third in a row: a lock-out of 1 s");
    CHECK(agg_peers_key_locked_ms(p, &a, t + 400) == 600, "locked for the rest of it");
    CHECK(agg_peers_key_locked_ms(p, &b, t) == 0, "another address is not locked");
    t += 1000;
    CHECK(agg_peers_key_locked_ms(p, &a, t) == 0, "the lock-out ends");
    int64_t expect = 2000, got = 0;
    for (int round = 0; round < 30; round++) {
        for (int k = 0; k < 3; k++) got = agg_peers_key_failed(p, &a, t);
        if (got != expect) break;
        t += got;
        expect = expect * 2 < DAY ? expect * 2 : DAY;
    }
    CHECK(got == DAY, "each lock-out twice the one before, a day at most (the last %lld ms)", (long long)got);
    agg_peers_stats s;
    agg_peers_get_stats(p, t - 1, &s);
    CHECK(s.locked == 1, "%lld addresses locked", (long long)s.locked);
    /* registrations: 2 a minute */
    CHECK(agg_peers_register(p, &b, T0) == 0 && agg_peers_register(p, &b, T0 + 10) == 0,
          "two registrations in a minute");
    CHECK(agg_peers_register(p, &b, T0 + 20000) == 40000, "the third waits for the minute's end");
    CHECK(agg_peers_register(p, &a, T0 + 20000) == 0, "another address registers");
    CHECK(agg_peers_register(p, &b, T0 + 60000) == 0, "a minute later, again");
    agg_peers_close(p);
}

static void bounded(void) {
    enum { SIZE = 8 };
    agg_peers *p = open_with((agg_peers_limits){.max_addresses = SIZE,
                                                .max_connections = SIZE,
                                                .max_connections_per_address = 2,
                                                .key_failures = 100,
                                                .key_lockout_ms = 1000,
                                                .registrations_per_minute = 20});
    agg_peer_address held[4];
    char text[32];
    for (int i = 0; i < 4; i++) {
        snprintf(text, sizeof text, "10.0.0.%d", i + 1);
        held[i] = v4(text);
        CHECK(agg_peers_connect(p, &held[i], T0) == PEERS_ADMITTED, "%s connects", text);
    }
    /* 100 idle addresses with a wrong key each: the table keeps SIZE, the ones with connections among them */
    agg_peer_address last = {.bytes = {0}};
    for (int i = 0; i < 100; i++) {
        snprintf(text, sizeof text, "10.1.%d.%d", i / 200, i % 200);
        last = v4(text);
        agg_peers_key_failed(p, &last, T0 + i);
    }
    agg_peers_stats s;
    agg_peers_get_stats(p, T0, &s);
    CHECK(s.addresses == SIZE, "the table holds %lld addresses, its size is %d", (long long)s.addresses, SIZE);
    for (int i = 0; i < 4; i++)
        CHECK(agg_peers_connect(p, &held[i], T0) == PEERS_ADMITTED &&
                  agg_peers_connect(p, &held[i], T0) == PEERS_ADDRESS_FULL,
              "an address with a connection kept its count");
    /* expiry: an idle address with a wrong key is kept a day; one that holds nothing goes */
    for (int i = 0; i < 4; i++)
        for (int k = 0; k < 2; k++) agg_peers_disconnect(p, &held[i], T0);
    agg_peers_expire(p, T0 + 2000);
    agg_peers_get_stats(p, T0 + 2000, &s);
    CHECK(s.addresses == 4, "after the connections ended, the 4 addresses with a wrong key are kept: %lld",
          (long long)s.addresses);
    agg_peers_expire(p, T0 + 200 + DAY);
    agg_peers_get_stats(p, T0 + 200 + DAY, &s);
    CHECK(s.addresses == 0 && s.connections == 0, "a day later none: %lld", (long long)s.addresses);
    agg_peers_close(p);
    agg_peers *refused = NULL;
    sdfed_error err = {0};
    agg_peers_limits small = {.max_addresses = 4, .max_connections = 4, .reserve = 1, .max_connections_per_address = 1};
    CHECK(agg_peers_open(&refused, &small, &err) == SDFED_ERR_ARG &&
              strstr(err.message, "fewer than the 5 connections"),
          "a table smaller than the connections is refused: %s", err.message);
}

int main(void) {
    addresses();
    connections();
    lockouts();
    bounded();
    return check_report("test_peers");
}
