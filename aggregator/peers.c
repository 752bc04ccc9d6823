/* Per-address bookkeeping for the edge's limits (see peers.h). The table
 * is a pool of entries made at start, found through buckets of chains by a
 * hash seeded at random (no one can pick addresses that all fall in one
 * chain); the entries without a connection are also in a list, least
 * recently heard from first, which is what makes room when the pool is
 * used up. */
#include "peers.h"

#include <arpa/inet.h>
#include <assert.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "address.h"

#define DAY_MS (24 * 3600 * (int64_t)1000)
#define MINUTE_MS 60000

typedef struct peer {
    agg_peer_address address;
    int32_t chain;        /* the next entry of its bucket, or of the unused ones; -1 ends */
    int32_t older, newer; /* in the idle list (no connection); -1 ends */
    int used, connections;
    int key_failures, lockouts; /* wrong keys since the last lock-out or right key; lock-outs earned */
    int64_t locked_until_ms, last_failure_ms;
    int registrations; /* in the minute from registered_since_ms */
    int64_t registered_since_ms;
    int64_t heard_ms;
} peer;

struct agg_peers {
    agg_peers_limits limits;
    peer *entries;
    int32_t *buckets; /* -1: empty */
    uint32_t bucket_mask;
    uint64_t seed;
    int32_t unused; /* the first unused entry */
    int32_t idle_oldest, idle_newest;
    int64_t addresses, connections, file_sends;
    int64_t refused[PEERS_REFUSAL_COUNT];
    int64_t expired_ms;
};

static const char *const refusal_names[] = {
    [PEERS_REFUSED_ADDRESS_CONNECTIONS] = "address_connections",
    [PEERS_REFUSED_SERVER_CONNECTIONS] = "server_connections",
    [PEERS_REFUSED_RESERVE] = "reserve",
    [PEERS_REFUSED_FILE_SENDS] = "file_sends",
    [PEERS_REFUSED_KEY_MISSING] = "key_missing",
    [PEERS_REFUSED_KEY_WRONG] = "key_wrong",
    [PEERS_REFUSED_KEY_LOCKED] = "key_locked",
    [PEERS_REFUSED_REGISTRATIONS] = "registrations",
    [PEERS_REFUSED_DEMO_LEASES] = "demo_leases",
    [PEERS_REFUSED_ORIGIN] = "origin",
    [PEERS_REFUSED_NO_HELLO] = "no_hello",
};
static_assert(sizeof refusal_names / sizeof refusal_names[0] == PEERS_REFUSAL_COUNT, "a name for every refusal");

const char *agg_peers_refusal_name(agg_peers_refusal why) { return refusal_names[why]; }

/* ------------------------------------------------------------ addresses */

agg_peer_address agg_peers_address(const struct sockaddr *sa) {
    agg_peer_address a;
    agg_address_bytes(sa, a.bytes);
    if (!agg_address_is_ipv4(a.bytes)) memset(a.bytes + 8, 0, 8); /* the /64 of an IPv6 address */
    return a;
}

void agg_peers_address_text(const agg_peer_address *a, char *out, size_t cap) {
    char text[INET6_ADDRSTRLEN];
    if (agg_address_is_ipv4(a->bytes)) {
        inet_ntop(AF_INET, a->bytes + 12, text, sizeof text);
        snprintf(out, cap, "%s", text);
    } else {
        inet_ntop(AF_INET6, a->bytes, text, sizeof text);
        snprintf(out, cap, "%s/64", text);
    }
}

/* ---------------------------------------------------------------- table */

static uint64_t mix(uint64_t x) { /* splitmix64's finaliser */
    x ^= x >> 30;
    x *= 0xbf58476d1ce4e5b9u;
    x ^= x >> 27;
    x *= 0x94d049bb133111ebu;
    return x ^ (x >> 31);
}

static uint32_t bucket_of(const agg_peers *p, const agg_peer_address *a) {
    uint64_t high, low;
    memcpy(&high, a->bytes, 8);
    memcpy(&low, a->bytes + 8, 8);
    return (uint32_t)mix(mix(high ^ p->seed) ^ low) & p->bucket_mask;
}

static void idle_remove(agg_peers *p, int32_t i) {
    peer *e = &p->entries[i];
    if (e->older >= 0)
        p->entries[e->older].newer = e->newer;
    else
        p->idle_oldest = e->newer;
    if (e->newer >= 0)
        p->entries[e->newer].older = e->older;
    else
        p->idle_newest = e->older;
    e->older = e->newer = -1;
}

static void idle_append(agg_peers *p, int32_t i) {
    peer *e = &p->entries[i];
    e->older = p->idle_newest;
    e->newer = -1;
    if (p->idle_newest >= 0)
        p->entries[p->idle_newest].newer = i;
    else
        p->idle_oldest = i;
    p->idle_newest = i;
}

static int32_t find(const agg_peers *p, const agg_peer_address *a) {
    for (int32_t i = p->buckets[bucket_of(p, a)]; i >= 0; i = p->entries[i].chain)
        if (memcmp(p->entries[i].address.bytes, a->bytes, 16) == 0) return i;
    return -1;
}

/* Forgets entry i (idle): out of its chain and the idle list, unused. */
static void forget(agg_peers *p, int32_t i) {
    peer *e = &p->entries[i];
    int32_t *link = &p->buckets[bucket_of(p, &e->address)];
    while (*link != i) link = &p->entries[*link].chain;
    *link = e->chain;
    idle_remove(p, i);
    *e = (peer){.chain = p->unused, .older = -1, .newer = -1};
    p->unused = i;
    p->addresses--;
}

/* a's entry, made (idle, holding nothing) when it has none; -1 when the
 * table is full of addresses that hold connections. */
static int32_t entry(agg_peers *p, const agg_peer_address *a, int64_t now_ms) {
    int32_t i = find(p, a);
    if (i < 0) {
        if (p->unused < 0 && p->idle_oldest >= 0) forget(p, p->idle_oldest);
        if (p->unused < 0) return -1;
        i = p->unused;
        peer *e = &p->entries[i];
        p->unused = e->chain;
        uint32_t b = bucket_of(p, a);
        *e = (peer){.address = *a, .chain = p->buckets[b], .older = -1, .newer = -1, .used = 1};
        p->buckets[b] = i;
        idle_append(p, i);
        p->addresses++;
    } else if (p->entries[i].connections == 0) { /* heard from: the newest idle one */
        idle_remove(p, i);
        idle_append(p, i);
    }
    p->entries[i].heard_ms = now_ms;
    return i;
}

/* Whether an idle entry holds nothing any more. */
static int holds_nothing(const peer *e, int64_t now_ms) {
    return e->connections == 0 && e->locked_until_ms <= now_ms &&
           (e->registrations == 0 || now_ms - e->registered_since_ms >= MINUTE_MS) &&
           ((e->key_failures == 0 && e->lockouts == 0) || now_ms - e->last_failure_ms >= DAY_MS);
}

int agg_peers_open(agg_peers **out, const agg_peers_limits *limits, sdfed_error *err) {
    *out = NULL;
    if (limits->max_addresses < limits->max_connections + limits->reserve)
        return sdfed_fail(err, SDFED_ERR_ARG, "peers: room for %d addresses, fewer than the %d connections it may hold",
                          limits->max_addresses, limits->max_connections + limits->reserve);
    uint32_t n_buckets = 1;
    while (n_buckets < 2 * (uint32_t)limits->max_addresses) n_buckets *= 2;
    agg_peers *p = calloc(1, sizeof *p);
    peer *entries = p ? calloc((size_t)limits->max_addresses, sizeof *entries) : NULL;
    int32_t *buckets = entries ? malloc(sizeof *buckets * n_buckets) : NULL;
    if (!buckets) {
        free(entries);
        free(p);
        return sdfed_fail(err, SDFED_ERR_NOMEM, "peers: out of memory for %d addresses", limits->max_addresses);
    }
    *p = (agg_peers){.limits = *limits,
                     .entries = entries,
                     .buckets = buckets,
                     .bucket_mask = n_buckets - 1,
                     .unused = 0,
                     .idle_oldest = -1,
                     .idle_newest = -1};
    if (getrandom(&p->seed, sizeof p->seed, 0) != (ssize_t)sizeof p->seed) {
        agg_peers_close(p);
        return sdfed_fail(err, SDFED_ERR_IO, "peers: no random seed for the address table (getrandom)");
    }
    for (uint32_t b = 0; b < n_buckets; b++) buckets[b] = -1;
    for (int32_t i = 0; i < limits->max_addresses; i++)
        entries[i] = (peer){.chain = i + 1 < limits->max_addresses ? i + 1 : -1, .older = -1, .newer = -1};
    *out = p;
    return SDFED_OK;
}

void agg_peers_close(agg_peers *p) {
    if (!p) return;
    free(p->entries);
    free(p->buckets);
    free(p);
}

/* ---------------------------------------------------------- connections */

agg_peers_admission agg_peers_connect(agg_peers *p, const agg_peer_address *a, int64_t now_ms) {
    const agg_peers_limits *lim = &p->limits;
    int32_t i = entry(p, a, now_ms); /* found, or room made: the table has room for every connection */
    if (i >= 0 && p->entries[i].connections >= lim->max_connections_per_address) {
        p->refused[PEERS_REFUSED_ADDRESS_CONNECTIONS]++;
        return PEERS_ADDRESS_FULL;
    }
    if (i < 0 || p->connections >= (int64_t)lim->max_connections + lim->reserve) {
        p->refused[PEERS_REFUSED_SERVER_CONNECTIONS]++;
        return PEERS_SERVER_FULL;
    }
    peer *e = &p->entries[i];
    if (e->connections++ == 0) idle_remove(p, i);
    return p->connections++ < lim->max_connections ? PEERS_ADMITTED : PEERS_IN_RESERVE;
}

void agg_peers_disconnect(agg_peers *p, const agg_peer_address *a, int64_t now_ms) {
    int32_t i = find(p, a);
    if (i < 0 || p->entries[i].connections == 0) return; /* not admitted: nothing to give back */
    peer *e = &p->entries[i];
    p->connections--;
    e->heard_ms = now_ms;
    if (--e->connections == 0) idle_append(p, i);
}

int agg_peers_file_begin(agg_peers *p) {
    if (p->file_sends >= p->limits.max_file_sends) {
        p->refused[PEERS_REFUSED_FILE_SENDS]++;
        return 0;
    }
    p->file_sends++;
    return 1;
}

void agg_peers_files_end(agg_peers *p, int n) { p->file_sends -= n; }

/* ------------------------------------------------------------ join keys */

int64_t agg_peers_key_locked_ms(agg_peers *p, const agg_peer_address *a, int64_t now_ms) {
    int32_t i = find(p, a);
    return i >= 0 && p->entries[i].locked_until_ms > now_ms ? p->entries[i].locked_until_ms - now_ms : 0;
}

int64_t agg_peers_key_failed(agg_peers *p, const agg_peer_address *a, int64_t now_ms) {
    int32_t i = entry(p, a, now_ms);
    if (i < 0) return 0;
    peer *e = &p->entries[i];
    e->last_failure_ms = now_ms;
    if (++e->key_failures < p->limits.key_failures) return 0;
    int64_t lockout = p->limits.key_lockout_ms;
    for (int k = 0; k < e->lockouts && lockout < DAY_MS; k++) lockout *= 2;
    if (lockout > DAY_MS) lockout = DAY_MS;
    e->lockouts++;
    e->key_failures = 0;
    e->locked_until_ms = now_ms + lockout;
    return lockout;
}

void agg_peers_key_succeeded(agg_peers *p, const agg_peer_address *a) {
    int32_t i = find(p, a);
    if (i >= 0) p->entries[i].key_failures = 0;
}

/* -------------------------------------------------------- registrations */

int64_t agg_peers_register(agg_peers *p, const agg_peer_address *a, int64_t now_ms) {
    int32_t i = entry(p, a, now_ms);
    if (i < 0) return 0;
    peer *e = &p->entries[i];
    if (now_ms - e->registered_since_ms >= MINUTE_MS || e->registrations == 0) {
        e->registered_since_ms = now_ms;
        e->registrations = 0;
    }
    if (e->registrations >= p->limits.registrations_per_minute) {
        p->refused[PEERS_REFUSED_REGISTRATIONS]++;
        return e->registered_since_ms + MINUTE_MS - now_ms;
    }
    e->registrations++;
    return 0;
}

/* ---------------------------------------------------------------- upkeep */

void agg_peers_refused(agg_peers *p, agg_peers_refusal why) { p->refused[why]++; }

void agg_peers_expire(agg_peers *p, int64_t now_ms) {
    if (now_ms - p->expired_ms < 1000) return;
    p->expired_ms = now_ms;
    for (int32_t i = p->idle_oldest, next; i >= 0; i = next) {
        next = p->entries[i].newer;
        if (holds_nothing(&p->entries[i], now_ms)) forget(p, i);
    }
}

void agg_peers_get_stats(const agg_peers *p, int64_t now_ms, agg_peers_stats *out) {
    *out = (agg_peers_stats){.connections = p->connections, .file_sends = p->file_sends, .addresses = p->addresses};
    for (int32_t i = 0; i < p->limits.max_addresses; i++)
        if (p->entries[i].used && p->entries[i].locked_until_ms > now_ms) out->locked++;
    memcpy(out->refused, p->refused, sizeof out->refused);
}
