/* What the server keeps per client address, for the limits that must hold
 * across connections (a client that reconnects is the same address): the
 * connections it holds, the wrong join keys it sent and the lock-out they
 * earned, the new clients it registered in the current minute. Also the
 * server's counts of connections and of files being sent (descriptors
 * both), and the counts of what the edge's limits refused (for /metrics),
 * here or where they are decided (agg_peers_refused).
 *
 * Memory is bounded: a table of at most max_addresses addresses, made at
 * start. An address that holds nothing any more (no connection, no
 * lock-out, no registration window, no wrong key in the last day) is
 * forgotten by agg_peers_expire; when the table is full, the address heard from
 * least recently among those without a connection makes room (and so
 * loses what it held). An IPv4 address is one address; an IPv6 address is
 * counted by its /64, the block one subscriber gets. No sockets here, and
 * no lws: the loop says who connects and leaves. */
#ifndef SDFED_AGGREGATOR_PEERS_H
#define SDFED_AGGREGATOR_PEERS_H

#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "base/status.h"

/* An address as counted: IPv4 as ::ffff:a.b.c.d, IPv6 with its last 64
 * bits zero. */
typedef struct agg_peer_address {
    unsigned char bytes[16];
} agg_peer_address;

/* A connection as the edge knows it: where it comes from, whether it is
 * counted there (a balancer's is once its PROXY header names its client:
 * proxy_protocol.h), and whether it came in past max_connections (in the
 * reserve: for the status only). */
typedef struct agg_peer_conn {
    agg_peer_address address;
    int counted;
    int in_reserve;
    int files; /* files being sent on it (agg_peers_file_begin), given back when they end or it does */
} agg_peer_conn;

typedef struct agg_peers_limits {
    int max_addresses;               /* the table's size: at least max_connections + reserve, so that
                                      * every connection has room */
    int max_connections;             /* connections held at once, every address's */
    int reserve;                     /* more of them, for a few requests only (loop.c) */
    int max_connections_per_address; /* connections one address holds at once */
    int max_file_sends;              /* files being sent at once (each holds a descriptor as its connection does) */
    int key_failures;                /* wrong join keys before a lock-out */
    int64_t key_lockout_ms;          /* the first lock-out; each next one lasts twice as long, at most a day */
    int registrations_per_minute;    /* new clients one address registers in a minute */
} agg_peers_limits;

/* A connection's admission (agg_peers_connect). */
typedef enum agg_peers_admission {
    PEERS_ADMITTED,
    PEERS_IN_RESERVE,   /* past max_connections, within the reserve */
    PEERS_ADDRESS_FULL, /* refused: the address holds max_connections_per_address */
    PEERS_SERVER_FULL,  /* refused: the reserve is full too */
} agg_peers_admission;

/* What the edge refused, counted for /metrics. */
typedef enum agg_peers_refusal {
    PEERS_REFUSED_ADDRESS_CONNECTIONS, /* a connection over its address's limit */
    PEERS_REFUSED_SERVER_CONNECTIONS,  /* a connection over the server's limit and reserve */
    PEERS_REFUSED_RESERVE,             /* a request of a reserve connection that is not for the status */
    PEERS_REFUSED_FILE_SENDS,          /* a file over max_file_sends */
    PEERS_REFUSED_KEY_MISSING,         /* a request or hello without the join key */
    PEERS_REFUSED_KEY_WRONG,           /* a wrong join key (or metrics token) */
    PEERS_REFUSED_KEY_LOCKED,          /* any key from an address locked out */
    PEERS_REFUSED_REGISTRATIONS,       /* a new client over its address's registrations a minute */
    PEERS_REFUSED_DEMO_LEASES,         /* a demo shard over its address's leases */
    PEERS_REFUSED_ORIGIN,              /* a WebSocket upgrade from another origin's page */
    PEERS_REFUSED_NO_HELLO,            /* a connection closed for saying no hello in time */
    PEERS_REFUSAL_COUNT,
} agg_peers_refusal;

typedef struct agg_peers_stats {
    int64_t connections, file_sends, addresses, locked; /* now */
    int64_t refused[PEERS_REFUSAL_COUNT];               /* since the start */
} agg_peers_stats;

typedef struct agg_peers agg_peers;

int agg_peers_open(agg_peers **out, const agg_peers_limits *limits, sdfed_error *err);
void agg_peers_close(agg_peers *p);

/* The address a socket's peer is counted by (getpeername's). */
agg_peer_address agg_peers_address(const struct sockaddr *sa);
/* As people read it: "192.0.2.7", or "2001:db8:1:2::/64". */
void agg_peers_address_text(const agg_peer_address *a, char *out, size_t cap);

/* A new connection from a: admitted and counted, or refused (and counted
 * as refused). */
agg_peers_admission agg_peers_connect(agg_peers *p, const agg_peer_address *a, int64_t now_ms);
/* An admitted connection from a is gone. */
void agg_peers_disconnect(agg_peers *p, const agg_peer_address *a, int64_t now_ms);

/* A file is to be sent: 1 when fewer than max_file_sends are (counted),
 * else 0 (refused, counted as such). */
int agg_peers_file_begin(agg_peers *p);
/* n files sent, or given up. */
void agg_peers_files_end(agg_peers *p, int n);

/* How long a is still locked out of presenting keys (ms; 0: it is not). */
int64_t agg_peers_key_locked_ms(agg_peers *p, const agg_peer_address *a, int64_t now_ms);
/* a presented a wrong key: the lock-out this earned it (ms; 0: none yet). */
int64_t agg_peers_key_failed(agg_peers *p, const agg_peer_address *a, int64_t now_ms);
/* a presented the right key: its wrong keys so far are forgiven (not its
 * lock-outs, which still double). */
void agg_peers_key_succeeded(agg_peers *p, const agg_peer_address *a);

/* a registers a new client: 0 when it may (counted), else how long until
 * it may (ms). */
int64_t agg_peers_register(agg_peers *p, const agg_peer_address *a, int64_t now_ms);

/* Counts a refusal decided elsewhere. */
void agg_peers_refused(agg_peers *p, agg_peers_refusal why);
/* Forgets the addresses that hold nothing any more (at most once a second). */
void agg_peers_expire(agg_peers *p, int64_t now_ms);
void agg_peers_get_stats(const agg_peers *p, int64_t now_ms, agg_peers_stats *out);
/* "address_connections", "server_connections", ... for /metrics. */
const char *agg_peers_refusal_name(agg_peers_refusal why);

#endif
